//! Telling a file being created from one whose creator is gone (format.md §1, "A container is
//! created at its final name").
//!
//! A creator claims the name by `mkdir` in the build mode, then takes a shared flock on the new
//! directory before it makes anything in it ([`Container::finish`]), and holds it until it
//! publishes the marker and for as long as it keeps the file open after. So a directory in the
//! build mode whose flock can be taken exclusively has no creator building in it: its creator
//! died (a killed `cp`, a killed `plfs cp -r` leaving `.plfs-cp.<pid>.*`), or is in the
//! instant between its `mkdir` and its lock. Such a directory is removed while that exclusive
//! lock is held; a creator in that instant then finds its directory gone (its open of it, or
//! its first entry in it, fails with `ENOENT`) and claims the name again
//! ([`Container::create`]). No age is guessed, where fsck used to wait 60 s and a `rmdir` of
//! the parent failed with `ENOTEMPTY` for good (issue 50).
//!
//! On a backend without flock on directories the lock says nothing: there, a directory in the
//! build mode is taken for abandoned once it is older than [`BUILD_PATIENCE`], as a creator
//! waiting for another one's marker does.
//!
//! [`Container::finish`]: super::Container
//! [`Container::create`]: super::Container::create

use super::{DirExt, BUILD_PATIENCE};
use crate::error::Result;
use crate::format;
use crate::sys::{self, Dir};
use std::ffi::OsStr;

/// What a directory looked at by [`examine`] was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Build {
    /// Not a file being created: a published container, a logical directory, or not a
    /// directory at all (nothing was done).
    No,
    /// A file being created whose creator is still at it (left alone).
    Live,
    /// A file whose creator is gone (left in place: asked not to remove it).
    Abandoned,
    /// A file whose creator is gone: removed now (or gone already).
    Removed,
}

/// Whether a directory of mode `mode` with a marker of stat `marker` is a file being created.
fn building(mode: u32, marker: Option<&sys::RawStat>) -> bool {
    format::is_build_mode(mode) && !marker.is_some_and(|m| format::is_published(m.st_size as u64, mode))
}

/// Removes `name` in `parent` if it is a file being created whose creator is gone (see the
/// module's comment); says what it was.
pub(crate) fn remove_if_abandoned(parent: &Dir, name: &OsStr) -> Result<Build> {
    examine(parent, name, true)
}

/// Whether `name` in `parent` is a file being created, and whether its creator is gone (see
/// the module's comment); with `remove`, one whose creator is gone is removed.
pub(crate) fn examine(parent: &Dir, name: &OsStr, remove: bool) -> Result<Build> {
    let d = match parent.open_dir(name) {
        Ok(d) => d,
        Err(e) if sys::is_missing(&e) => return Ok(Build::Removed),
        // A file, a link (never followed), a directory this user may not open.
        Err(_) => return Ok(Build::No),
    };
    let st = d.fstat()?;
    if !building(st.st_mode, d.stat_opt(format::MARKER_NAME)?.as_ref()) {
        return Ok(Build::No);
    }
    if !d.caps().locks() {
        let age = crate::clock::age_ns(sys::mtime_ns(&st));
        if u128::from(age) < BUILD_PATIENCE.as_nanos() {
            return Ok(Build::Live);
        }
    } else if !d.try_lock_exclusive()? {
        return Ok(Build::Live);
    }
    // Held exclusively: no creator can make anything in it now (each takes the shared lock
    // first). Looked at once more under the lock: published meanwhile, or no longer at the name.
    let st = d.fstat()?;
    if !building(st.st_mode, d.stat_opt(format::MARKER_NAME)?.as_ref()) {
        return Ok(Build::No);
    }
    match parent.stat_opt(name)? {
        Some(now) if (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino) => {}
        Some(_) => return Ok(Build::No),
        None => return Ok(Build::Removed),
    }
    if !remove {
        return Ok(Build::Abandoned);
    }
    parent.remove_tree_through(name, &d)?;
    Ok(Build::Removed)
}
