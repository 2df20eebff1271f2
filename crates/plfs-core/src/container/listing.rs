//! A one-directory container's listing, taken again while it cannot be whole.
//!
//! GlusterFS's DHT lists a directory on every server and leaves out, without an error, the part
//! of a server that cannot resolve the directory for a moment, as one that is renaming it cannot:
//! of 6,806 listings of a 12-file directory that another process renamed back and forth, 822
//! missed one or two servers' part (2026-11-28, 3 bricks, `bench/partial_listing.py`). A
//! container is renamed by an unlink (aside, to its trash name), by a rename over a file and by a
//! user's rename, while readers may list it; a listing without a closed writer's logs and
//! droppings is a shorter file, silently. Format 3 made this reachable: a version 2 container's
//! droppings and logs are in subdirectories, which a rename of the container does not touch
//! (docs/design.md, "Listings that miss a server").

use crate::error::Result;
use crate::format::{self, MetaDropping};
use crate::sys::{Dir, RawStat};
use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;

/// How many times [`list_whole`] lists a container again whose listing cannot be whole: 1 + 2 +
/// 4 + 8 + 16 = 31 ms of pauses at most.
const PARTIAL_RETRIES: u32 = 5;

/// How many times [`list_whole`] lists a container again whose listing holds no log
/// ([`Verdict::Empty`]): 1 + 2 = 3 ms of pauses.
const EMPTY_RETRIES: u32 = 2;

/// What a listing of a one-directory container says of itself ([`judge`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Nothing in it says an entry is missing.
    Whole,
    /// It cannot be whole: listed again, up to [`PARTIAL_RETRIES`] times.
    Partial,
    /// No writer's index log: an empty file, or a listing that missed every entry of its only
    /// writer. Listed again [`EMPTY_RETRIES`] times, unless the marker says nobody wrote the file
    /// ([`untouched`]).
    Empty,
}

/// The listing of the one-directory container `dir`, whose writers keep every log in it unless
/// `shadows` (its mount point has shadow backends) or a hostdir is in it, and whose marker's stat
/// is `marker`. On a backend that is not a local file system (whose listings are whole), one that
/// [`judge`] does not find whole is taken again; then the last one is returned, for the index's
/// own checks to judge (a closed writer without its index log is damage, `EIO`).
///
/// `marker` is [`Marker::Fresh`] where it was taken for this look (a stat's look-up), else
/// [`Marker::Old`] (an open file's refresh: taken at its open, before writers may have written):
/// an old stat that says nobody wrote the file is taken again before an empty listing is
/// trusted on its word, else a reader that opened an empty file would take a listing that
/// missed the writer of the whole file for the file.
pub(crate) fn list_whole(dir: &Dir, shadows: bool, marker: Marker<'_>) -> Result<Vec<OsString>> {
    let mut names = dir.list()?;
    // No version 3 container has `meta/`: a version 2 one whose marker grew to 64 bytes would
    // be read without its droppings (its truncates). The marker says which (`EIO` if neither).
    if names.iter().any(|n| n.as_bytes() == format::META_DIR.as_bytes()) {
        super::read_marker(dir)?;
    }
    // A local file system's listing is returned as it is; where the kind of file system is not
    // known yet, the listing is judged first, which a whole one passes without a `statfs`.
    if dir.local_clock_if_known() == Some(true) {
        return Ok(names);
    }
    let all_at_top = !shadows;
    let (mut st, mut fresh) = match marker {
        Marker::Fresh(st) => (*st, true),
        Marker::Old(st) => (*st, false),
    };
    for i in 0..PARTIAL_RETRIES {
        let verdict = judge(&names, all_at_top);
        if verdict == Verdict::Whole || (verdict == Verdict::Empty && i >= EMPTY_RETRIES) {
            break;
        }
        // Asked last (the kind of file system costs a `statfs` the first time), except where an
        // old marker stat would let an empty listing through without it.
        if verdict == Verdict::Empty && untouched(&st) {
            if fresh || dir.has_local_clock() {
                break;
            }
            fresh = true;
            match dir.stat_opt(format::MARKER_NAME)? {
                Some(now) if !untouched(&now) => st = now,
                _ => break,
            }
        }
        if dir.has_local_clock() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(1 << i));
        names = dir.list()?;
    }
    Ok(names)
}

/// The marker's stat given to [`list_whole`], by how old it may be.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Marker<'a> {
    /// Taken for this look, after anything the listing should show.
    Fresh(&'a RawStat),
    /// Taken earlier (at the open of a file this process keeps open).
    Old(&'a RawStat),
}

/// Whether the marker `st` has the times its creation gave it (mtime and ctime equal to the
/// nanosecond): a file nobody wrote, truncated, chmod'ed or touched since, so a listing without
/// any log is its whole listing. The last close of a writer that wrote sets the marker's mtime to
/// its last write's (the ctime to the time of that change), so a file that was written never
/// passes for one: an empty listing of it is taken again. This keeps that cost off the empty
/// files mdtest makes. A file system that keeps whole seconds (MooseFS: both fractions 0) cannot
/// tell the two apart within a second, and no file passes for untouched there.
fn untouched(st: &RawStat) -> bool {
    st.st_mtime == st.st_ctime && st.st_mtime_nsec == st.st_ctime_nsec && st.st_mtime_nsec != 0
}

/// What a listing of a one-directory container says of itself. [`Verdict::Partial`] when:
/// - its marker is not in it (a published container always has one; a deletion removes it last);
/// - unless a compaction's journal says logs are being retired or published:
///   - a writer's index log is there without its data log (made first, deleted last), or data
///     logs are there without any index log (a compaction leaves its new log's);
///   - a writer that closed with data lacks its index log beside its data log, or lacks both
///     where every log must be in the container directory (`all_at_top`: no shadow backend, and
///     no hostdir in the listing).
///
/// [`Verdict::Empty`] when no log, no closed writer with data and no hostdir is in it.
///
/// What it cannot tell: a listing that lacks every entry of one writer (its droppings and index
/// log) but has the marker and another writer's. A log whose writer has no dropping in the
/// listing is not taken for a partial listing (a writer that wrote nothing removes its open
/// dropping and keeps its empty logs); the fast stat goes to the index for it instead
/// ([`format::fast_size_of_listing`]).
pub(crate) fn judge(names: &[OsString], all_at_top: bool) -> Verdict {
    if !names.iter().any(|n| n.as_bytes() == format::MARKER_NAME.as_bytes()) {
        return Verdict::Partial;
    }
    if names
        .iter()
        .any(|n| n.as_bytes() == format::compact::JOURNAL_NAME.as_bytes())
    {
        return Verdict::Whole;
    }
    // (data log, index log) of each writer with a log here.
    let mut logs: HashMap<u64, (bool, bool)> = HashMap::new();
    let mut hostdirs = false;
    for n in names {
        hostdirs |= n.as_bytes().starts_with(format::HOSTDIR_PREFIX.as_bytes());
        if let Some((is_index, writer_id)) = n.to_str().and_then(format::log_writer_of) {
            let e = logs.entry(writer_id).or_default();
            if is_index {
                e.1 = true;
            } else {
                e.0 = true;
            }
        }
    }
    if logs.values().any(|&(data, index)| index && !data) {
        return Verdict::Partial;
    }
    let all_at_top = all_at_top && !hostdirs;
    // Only close droppings matter here: the others are not parsed.
    let closed: HashSet<u64> = names
        .iter()
        .filter(|n| n.as_bytes().starts_with(format::CLOSE_PREFIX.as_bytes()))
        .filter_map(|n| n.to_str().and_then(MetaDropping::parse))
        .filter_map(|d| match d {
            MetaDropping::Close { writer_id, bytes, .. } if bytes > 0 => Some(writer_id),
            _ => None,
        })
        .collect();
    let lacking = closed.iter().any(|w| match logs.get(w) {
        Some(&(data, index)) => data && !index,
        None => all_at_top,
    });
    if lacking {
        return Verdict::Partial;
    }
    if !logs.values().any(|&(_, index)| index) {
        return match (logs.is_empty(), closed.is_empty()) {
            (true, true) if !hostdirs => Verdict::Empty,
            (true, _) => Verdict::Whole,
            (false, _) => Verdict::Partial,
        };
    }
    Verdict::Whole
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    const W: &str = "00000000000000aa";

    /// A container with one writer that closed with 4000 bytes.
    fn closed() -> Vec<OsString> {
        let close = format!("close.{W}.1.2.4000.4000.3");
        let data = format!("data.{W}.7.host");
        let index = format!("index.{W}.7.host");
        names(&[format::MARKER_NAME, &close, &data, &index])
    }

    fn without(list: Vec<OsString>, prefix: &str) -> Vec<OsString> {
        list.into_iter()
            .filter(|n| !n.as_bytes().starts_with(prefix.as_bytes()))
            .collect()
    }

    #[test]
    fn a_whole_listing_is_not_taken_again() {
        assert_eq!(judge(&closed(), true), Verdict::Whole);
        // A writer that wrote nothing: empty logs, no dropping.
        assert_eq!(judge(&without(closed(), "close."), true), Verdict::Whole);
        // A compaction's retired data log waits for its deletion without index log or
        // dropping, beside the new log.
        let mut retired = closed();
        retired.push("data.00000000000000bb.7.host".into());
        assert_eq!(judge(&retired, true), Verdict::Whole);
    }

    #[test]
    fn a_listing_without_any_index_log_is_empty_or_partial() {
        assert_eq!(judge(&names(&[format::MARKER_NAME]), true), Verdict::Empty);
        let extended = names(&[format::MARKER_NAME, "trunc.5.4096.00000000000000cc"]);
        assert_eq!(judge(&extended, true), Verdict::Empty);
        // Logs of a host in a hostdir: its listing decides.
        assert_eq!(judge(&names(&[format::MARKER_NAME, "hostdir.3"]), true), Verdict::Whole);
        // A data log without any index log: a compaction leaves its new log's.
        assert_eq!(
            judge(&without(without(closed(), "close."), "index."), true),
            Verdict::Partial
        );
    }

    #[test]
    fn a_listing_without_the_marker_or_half_a_closed_writer_is_partial() {
        assert_eq!(judge(&without(closed(), ".plfscontainer"), true), Verdict::Partial);
        assert_eq!(judge(&without(closed(), "index."), true), Verdict::Partial);
        assert_eq!(judge(&without(closed(), "data."), true), Verdict::Partial);
        // Both logs missing: partial only where they cannot be elsewhere.
        let no_logs = without(without(closed(), "index."), "data.");
        assert_eq!(judge(&no_logs, true), Verdict::Partial);
        assert_eq!(judge(&no_logs, false), Verdict::Whole);
        let mut in_hostdir = no_logs.clone();
        in_hostdir.push("hostdir.3".into());
        assert_eq!(judge(&in_hostdir, true), Verdict::Whole);
    }

    #[test]
    fn a_compaction_under_way_explains_missing_logs() {
        let mut l = without(closed(), "index.");
        l.push(format::compact::JOURNAL_NAME.into());
        assert_eq!(judge(&l, true), Verdict::Whole);
        // ...but not a missing marker.
        assert_eq!(judge(&without(l, ".plfscontainer"), true), Verdict::Partial);
    }
}
