//! The last close of an N-1 file that several writers wrote writes its flattened index
//! (format.md §6, `index::flatten`), so that a restart read by N fresh processes costs each of
//! them one index file, not one index log per writer (N² reads for the job, the "N² index read
//! problem" of PLFS 1.1.9's changelog; PLFS 2.x's MPI-IO driver did the same at close,
//! `flatten_close`). The closer that finds no writer open any more is the last: every closer
//! publishes its close dropping before it looks, so of two that close at once at least the later
//! one sees both closed. Several may: a job's writers close together, and at 64 writers on this
//! machine a dozen closers found none open and each merged every log (16 index reads a writer,
//! against 2 at 4 writers). So a closer flattens under a non-blocking exclusive flock of the
//! marker, and one that finds it taken leaves the flattening to its holder, or, once it holds it,
//! to the flattening that covered every close it saw ([`flattening_turn`]). A close the
//! flattener's listing missed is read from its log beside the flattened index, as any writer's
//! after a flattening. A writer killed without closing leaves its open dropping, and readers merge
//! the logs as before.

use super::shared::Shared;
use crate::format::{MetaDropping, FLAT_NAME, MARKER_NAME};
use crate::index::{flatten, Flattened};
use crate::sys::{Access, File};

/// Writers (close droppings) from which the last close flattens: below, a reader's few index
/// logs cost about what one flattened index costs, and the closer's merge would be extra work.
pub(crate) const FLATTEN_MIN_WRITERS: usize = 4;

/// After this process's last writer on the file closed (`wrote`: it wrote or truncated).
pub(super) fn after_last_close(sh: &Shared, wrote: bool) {
    let g = &sh.c.mount.global;
    // A reader that checks data checksums never reads a flattened index (it has none).
    if !wrote || g.data_checksums || sh.is_unlinked() {
        return;
    }
    let meta = match sh.c.list_meta() {
        Ok(m) => m,
        Err(e) => {
            crate::warn!("{}: flattening the index at close: {e}", sh.logical.display());
            return;
        }
    };
    if meta.iter().any(|d| matches!(d, MetaDropping::Open { .. })) {
        return;
    }
    if !worth_flattening(sh, &meta) {
        return;
    }
    let Some(_turn) = flattening_turn(sh, &meta) else {
        return;
    };
    // The merge reads the logs of this listing: one listing before them, one after.
    match flatten(&sh.c, &sh.logical, Some(meta)) {
        Ok(Flattened::Written(f)) => crate::debug!(
            "{}: flattened at close: {} extents of {} data logs",
            sh.logical.display(),
            f.pieces.len() + f.patterns.len(),
            f.chunks.len()
        ),
        Ok(Flattened::Open | Flattened::Changed) => {}
        // The file reads the same without it: readers merge the logs.
        Err(e) => crate::warn!("{}: flattening the index at close: {e}", sh.logical.display()),
    }
}

/// Whether this last close flattens: at least [`FLATTEN_MIN_WRITERS`] writers closed since the
/// last flattening (their close droppings' times after the flattened index's mtime, which the
/// flattening set to the newest close it covered), all of them where there is none. A
/// checkpoint's writers all close after the last flattening; a log that short processes append
/// to one after another (`echo ... >> log`, each one writer) is flattened at every 4th close,
/// from the last flattened index and the 4 new logs (`index::flatten`), so that neither an
/// append nor a reader reads more than a few index logs besides it. (While a flattening read
/// every index log, it came at the 4th, 8th, 16th ... close, so as not to cost N writers N²
/// reads, and a reader after the 1,000th append still read 488 logs.) The clocks of writers and
/// backend only move this choice, never what is read.
fn worth_flattening(sh: &Shared, meta: &[MetaDropping]) -> bool {
    let closes: Vec<u64> = meta
        .iter()
        .filter_map(|d| match *d {
            MetaDropping::Close { close_ts, .. } => Some(close_ts),
            _ => None,
        })
        .collect();
    if closes.len() < FLATTEN_MIN_WRITERS {
        return false;
    }
    let flat_mtime = match sh.c.listing_has(FLAT_NAME) {
        false => None,
        true => match sh.c.dir.stat_opt(FLAT_NAME) {
            Ok(st) => st.map(|st| crate::sys::mtime_ns(&st).max(0) as u64),
            Err(_) => None,
        },
    };
    let Some(flat_mtime) = flat_mtime else {
        return true;
    };
    closes.iter().filter(|&&ts| ts > flat_mtime).count() >= FLATTEN_MIN_WRITERS
}

/// Whether this closer flattens now, and the lock that says so while it does (`Some(None)`:
/// without one, where the marker cannot be opened or the backend has no flock): `None` when
/// another closer holds the marker's flock (it is flattening), or when a flattening finished
/// since this closer listed covered every close it saw (the flattened index's mtime is that of
/// the newest close it covered). The flock is never waited for: closers are not serialised.
fn flattening_turn(sh: &Shared, meta: &[MetaDropping]) -> Option<Option<File>> {
    let marker = [Access::Read, Access::Write]
        .into_iter()
        .find_map(|a| sh.c.dir.open_file(MARKER_NAME, a).ok());
    let Some(marker) = marker else {
        return Some(None);
    };
    match marker.try_lock_exclusive() {
        Ok(Some(true)) => {}
        Ok(Some(false)) => return None,
        Ok(None) | Err(_) => return Some(None),
    }
    let newest = meta
        .iter()
        .filter_map(|d| match *d {
            MetaDropping::Close { close_ts, .. } => Some(close_ts),
            _ => None,
        })
        .max();
    let covered = match (sh.c.dir.stat_opt(FLAT_NAME), newest) {
        (Ok(Some(st)), Some(newest)) => crate::sys::mtime_ns(&st).max(0) as u64 >= newest,
        _ => false,
    };
    if covered {
        return None;
    }
    Some(Some(marker))
}
