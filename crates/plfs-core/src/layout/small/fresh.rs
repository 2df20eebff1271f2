//! What other writers appended to a 1-N directory's logs since the view last read them, applied
//! to the view without replaying every log again. A replay reads every log whole and applies
//! every record in timestamp order; in a directory that several processes create files in at
//! once, every create of each found the others' logs grown and replayed them all, so a create
//! cost a read of the whole directory (tests/mpi/mdtest_hard.c, 2 processes, 200 files each:
//! the last creates each read about 1.6 MB).
//!
//! Records arrive out of timestamp order: another process's create, buffered until its close,
//! can be older than records this view applied since. Applying a record late gives what the
//! replay would when it commutes with every record applied after its timestamp, which holds when
//! none of those touched its names or its files: for each name and file the view keeps the
//! newest timestamp of a record that touched it (`state::Touched`, names that are gone included), and
//! new records whose names and files were all last touched before them are applied in timestamp
//! order. Anything else (such a conflict, damage, a log shorter than what was read) replays the
//! directory, as before.

use super::state::{apply, Inner, Touched};
use crate::error::Result;
use crate::format::small::{self as fmt, Rec};

/// Reads what every other log of the view gained since it was read and applies it: `Ok(true)`
/// when the view is current (nothing new, or the new records applied), `Ok(false)` when the
/// directory must be replayed instead (see the module's comment).
pub(super) fn apply_new(g: &mut Inner) -> Result<bool> {
    let own = g.writer.as_ref().map(|w| w.log);
    let mut news: Vec<(u64, u64, usize, Rec)> = Vec::new();
    let mut seen: Vec<(usize, u64)> = Vec::new();
    for (i, l) in g.logs.iter().enumerate() {
        if Some(i) == own {
            continue;
        }
        // Asked of the data, not of a size a network file system may report late: one `pread`
        // that finds nothing where nothing was appended, as the look for a new byte was.
        let bytes = l.file.read_to_end_from(l.seen, 0)?;
        if bytes.is_empty() {
            continue;
        }
        let d = fmt::decode(&bytes, l.seen);
        if !d.damaged.is_empty() {
            return Ok(false);
        }
        if d.used > 0 {
            seen.push((i, l.seen + d.used as u64));
            news.extend(d.recs.into_iter().map(|r| (r.ts(), l.writer, i, r)));
        }
    }
    if news.is_empty() {
        return Ok(true);
    }
    if !g.damage.is_empty() {
        return Ok(false);
    }
    news.sort_by_key(|r| (r.0, r.1));
    // Each against the view before any of them: records of one batch are applied in order.
    if !news.iter().all(|(_, _, _, r)| Touched::commutes(g, r)) {
        return Ok(false);
    }
    for (_, w, idx, r) in news {
        apply(g, &r, w, idx);
    }
    for (i, s) in seen {
        g.logs[i].seen = s;
    }
    Ok(true)
}
