//! A store's reserve (docs/format.md §11): 64 KiB set aside when the store is made, so that on a
//! full backend a process can still write the log header and the records of a delete, a rename,
//! a truncate or an attribute change. Whoever meets `ENOSPC` there deletes the reserve and tries
//! once more; the space a delete frees is reclaimed by retiring dead logs
//! (`compact::retire_dead`), after which the reserve is made again.

use crate::error::Result;
use crate::format::small::{RESERVE_BYTES, RESERVE_NAME};
use crate::format::{self, LogHeader};
use crate::sys::{Create, Dir, File};

/// Makes the reserve of `store` if it has none, as far as the space allows: a reserve that
/// cannot be written whole is not left behind. Returns whether the store now has one.
pub(super) fn make(store: &Dir) -> bool {
    let f = match store.create_file(RESERVE_NAME, 0o644, Create::Excl) {
        Ok(f) => f,
        Err(e) if e.raw_errno() == rustix::io::Errno::EXIST.raw_os_error() => return true,
        Err(e) => {
            crate::debug!("{e}: no reserve in this store");
            return false;
        }
    };
    match f.pwrite_all(&vec![0u8; RESERVE_BYTES], 0) {
        Ok(()) => true,
        Err(e) => {
            crate::debug!("{e}: no reserve in this store");
            let _ = store.unlink_opt(RESERVE_NAME);
            false
        }
    }
}

/// Creates log `name` in `store` and writes its header; a log that could not be made whole is
/// removed (a full backend used to keep an empty log for every failed attempt). With `reserved`,
/// `ENOSPC` spends the store's reserve and tries once more. Returns the log and whether the
/// reserve was spent.
pub(super) fn create_log(store: &Dir, name: &str, h: &LogHeader, reserved: bool) -> Result<(File, bool)> {
    let attempt = || -> Result<File> {
        let f = store.create_file(name, 0o644, Create::Excl)?;
        // Held while this process appends to the log: a compaction never retires a log in use.
        let r = f.lock_shared().and_then(|_| f.pwrite_all(&h.encode(), 0));
        match r {
            Ok(()) => Ok(f),
            Err(e) => {
                drop(f);
                let _ = store.unlink_opt(name);
                Err(e)
            }
        }
    };
    match attempt() {
        Err(e) if reserved && super::state::is_nospace(&e) && store.unlink_opt(RESERVE_NAME)? => {
            attempt().map(|f| (f, true))
        }
        r => r.map(|f| (f, false)),
    }
}

/// The size of a log header (what [`create_log`] writes first).
pub(super) const HEADER_LEN: u64 = format::INDEX_HEADER_LEN as u64;
