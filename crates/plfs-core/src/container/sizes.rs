//! A closed file's size from its droppings, held to the index log of the writer whose close
//! dropping gives it (format.md §5, "Fast stat"). Sizes in names are not trusted: a close
//! dropping renamed to another eof made stat report 1,600,000 B for a 600,000 B file (issue 50),
//! where reads, which merge the index, were right. The writer's index log is read (one log, not
//! the merge of every log the slow path makes): its records must reach the eof its dropping
//! claims (and end there, unless a truncate may have cut the writer's last writes), else the
//! index decides.

use crate::error::Result;
use crate::format::{self, MetaDropping};
use crate::sys::{Access, Dir};
use std::ffi::OsString;

/// What the logs in `dirs` (each with its listing) say of fast size `size` computed from
/// `droppings`: `Some(true)` where the index log of a closed writer whose dropping gives `size`
/// ends exactly there (reaches it at least, where a trunc dropping exists), `Some(false)` where
/// the logs of every such writer that were found end elsewhere, `None` where none of those logs
/// is in `dirs` (the caller looks further). A size no close dropping gives (a truncate's, or 0)
/// stands: `Some(true)`.
pub(crate) fn proven_by_logs(
    dirs: &[(&Dir, &[OsString])],
    droppings: &[MetaDropping],
    size: u64,
) -> Result<Option<bool>> {
    let truncs = droppings.iter().any(|d| matches!(d, MetaDropping::Trunc { .. }));
    let mut found = false;
    let mut candidate = false;
    for d in droppings {
        let MetaDropping::Close { writer_id, eof, .. } = *d else {
            continue;
        };
        if eof != size || size == 0 {
            continue;
        }
        candidate = true;
        for (dir, names) in dirs {
            let Some(name) = names.iter().find(|n| {
                n.to_str()
                    .and_then(format::parse_log_name)
                    .is_some_and(|l| l.is_index && l.writer_id == writer_id)
            }) else {
                continue;
            };
            found = true;
            match records_end(dir, name, writer_id)? {
                Some(end) if end == eof || (truncs && end > eof) => return Ok(Some(true)),
                _ => {}
            }
        }
    }
    Ok(if candidate { found.then_some(false) } else { Some(true) })
}

/// The end of the highest write the index log `name` in `dir` of writer `writer_id` records, if
/// its header is whole and names that writer (a damaged record ends the records read: the
/// index, which the caller then asks, reports it).
fn records_end(dir: &Dir, name: &OsString, writer_id: u64) -> Result<Option<u64>> {
    // The size its open's fstat gave, read in one pread: a stat pays an open, an fstat, a pread
    // and a close for this proof (a read to the end, with its second pread, and its own fstat,
    // cost two more).
    let (f, len) = match dir.open_file_sized(name, Access::Read) {
        Ok(v) => v,
        Err(e) if crate::sys::is_missing(&e) => return Ok(None),
        Err(e) => return Err(e),
    };
    let hlen = format::INDEX_HEADER_LEN;
    let Ok(len) = usize::try_from(len) else {
        return Ok(None);
    };
    if len < hlen {
        return Ok(None);
    }
    let mut b = vec![0u8; len];
    let n = f.pread_full(&mut b, 0)?;
    b.truncate(n);
    if b.len() < hlen {
        return Ok(None);
    }
    match format::LogHeader::decode(f.path(), &b[..hlen], format::INDEX_MAGIC) {
        Ok(h) if h.writer_id == writer_id => {}
        _ => return Ok(None),
    }
    let dec = format::decode_records(&b[hlen..]);
    let writes = dec.records.iter().map(|r| r.logical_off.saturating_add(r.length));
    let patterns = dec.patterns.iter().map(|p| {
        let last = (p.ts.len() as u64).saturating_sub(1).saturating_mul(p.stride);
        p.logical_start.saturating_add(last).saturating_add(p.length)
    });
    Ok(writes.chain(patterns).max())
}
