//! The lock that lets one compaction at a time work on a container, and keeps a truncate to
//! zero from wiping a container under a compaction (which would publish the old data again
//! after the wipe): an exclusive flock(2) taken by a compaction (and by a last close or fsck
//! finishing a compaction's journal), a shared one by a wipe. In a version 2 container it is
//! taken on `meta/`; a one-directory container has no `meta/`, and takes it on the file
//! `compact.lock` in the container, which the first compaction or wipe makes (never a
//! rename or a write: a zero-length file that stays, like `meta/`).

use super::Container;
use crate::error::Result;
use crate::format;
use crate::sys::{Access, Create, Dir, File};

/// A container's compaction lock, open (not yet taken).
#[derive(Debug)]
pub(crate) enum CompactionLock {
    /// `meta/` of a version 2 container.
    Meta(Dir),
    /// `compact.lock` of a one-directory container.
    File(File),
}

impl CompactionLock {
    /// Tries to take the lock exclusively without waiting: `Ok(true)` if nobody else holds it
    /// (always, on a backend without flock).
    pub(crate) fn try_exclusive(&self) -> Result<bool> {
        match self {
            CompactionLock::Meta(d) => d.try_lock_exclusive(),
            CompactionLock::File(f) => Ok(f.try_lock_exclusive()?.unwrap_or(true)),
        }
    }

    /// [`CompactionLock::try_exclusive`], tried again every 10 ms for up to `patience`.
    pub(crate) fn try_exclusive_within(&self, patience: std::time::Duration) -> Result<bool> {
        crate::sys::locks::try_within(patience, || self.try_exclusive())
    }

    /// Takes the lock shared, waiting while a compaction holds it.
    pub(crate) fn shared(&self) -> Result<()> {
        match self {
            CompactionLock::Meta(d) => d.lock_shared(),
            CompactionLock::File(f) => f.lock_shared().map(drop),
        }
    }

    /// Whether the backend honours the lock (flock(2) works on it).
    pub(crate) fn works(&self) -> Result<bool> {
        match self {
            CompactionLock::Meta(d) => Ok(d.caps().locks()),
            // A lock just taken exclusively is taken again without waiting; `None` is no flock.
            CompactionLock::File(f) => Ok(f.try_lock_exclusive()?.is_some()),
        }
    }
}

impl Container {
    /// The container's compaction lock (module doc), made where it is missing if `make`;
    /// `Ok(None)` where it is missing and not made (no compaction has run on a one-directory
    /// container, or a version 2 container lost its `meta/`).
    pub(crate) fn compaction_lock(&self, make: bool) -> Result<Option<CompactionLock>> {
        if !self.is_flat() {
            return Ok(self.dir.open_dir_opt(format::META_DIR)?.map(CompactionLock::Meta));
        }
        let name = format::compact::LOCK_NAME;
        let opened = if make {
            self.dir.create_file(name, 0o644, Create::MayExist).map(Some)
        } else {
            match self.dir.open_file(name, Access::Read) {
                Ok(f) => Ok(Some(f)),
                Err(e) if crate::sys::is_missing(&e) => Ok(None),
                Err(e) => Err(e),
            }
        };
        Ok(opened?.map(CompactionLock::File))
    }
}
