//! Directories: they exist on every canonical backend; mkdir and rmdir act on each, readdir
//! merges them (containers list as regular files, PLFS's own entries not at all).

use super::Logical;
use super::{Entry, Plfs};
use crate::container::{Build, DirExt};
use crate::error::{Error, Result};
use crate::format;
use crate::mount::{Loc, Probe};
use crate::sys;
use crate::types::{DirEntry, FileKind};
use rustix::io::Errno;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;

impl Plfs {
    /// Checks that the parent of `loc` is a logical directory, and that it exists on the backend
    /// where `loc` will be created (directories are replicated; a missing replica is recreated).
    pub(crate) fn check_parent(&self, loc: &Loc) -> Result<()> {
        let parent = loc.parent();
        if parent.is_root() {
            return Ok(());
        }
        let notdir = || loc.err(Errno::NOTDIR, "a path component is not a directory");
        match self.lookup(&parent)? {
            Entry::Dir(b, st) => {
                let home = loc.home();
                if home != b {
                    let root = loc.mount.canonical[home].root()?;
                    if root.stat_beneath_opt(&parent.rel)?.is_none() {
                        root.mkdir_beneath(&parent.rel, st.st_mode & 0o7777)?;
                    }
                }
                Ok(())
            }
            Entry::Missing => Err(parent.not_found()),
            _ => Err(notdir()),
        }
    }

    /// Creates a directory on every canonical backend.
    pub fn mkdir(&self, path: &(impl Logical + ?Sized), mode: u32) -> Result<()> {
        self.again_if_lost(|| {
            let loc = path.locate(self)?;
            if loc.is_root() || !matches!(self.lookup(&loc)?, Entry::Missing) {
                return Err(Error::Exists(loc.logical.clone()));
            }
            super::refuse_build_mode(&loc, mode & !crate::sys::umask())?;
            for i in 0..loc.mount.canonical.len() {
                let parent = match loc.parent_dir(i) {
                    Ok(p) => p,
                    Err(e) if i > 0 && e.is_not_found() => {
                        // A replica of the parent is missing here: recreate the path.
                        let root = loc.mount.canonical[i].root()?;
                        root.mkdir_beneath(loc.parent_rel(), 0o755)?;
                        loc.parent_dir(i)?
                    }
                    Err(e) => return Err(e),
                };
                // A PLFS 2.x container is a file (the look-up finds a path through one only where
                // the name could be inside it).
                if !parent.is_root() && parent.stat_opt(format::legacy::ACCESS_NAME)?.is_some() {
                    return Err(loc.err(Errno::NOTDIR, "a path component is not a directory"));
                }
                match parent.mkdir(loc.name(), mode & 0o7777) {
                    Ok(()) => {}
                    Err(Error::Io {
                        errno: Errno::EXIST, ..
                    }) if i > 0 => {}
                    Err(Error::Io {
                        errno: Errno::EXIST, ..
                    }) => return Err(Error::Exists(loc.logical.clone())),
                    Err(e) => return Err(e),
                }
            }
            Ok(())
        })
    }

    /// Removes an empty directory from every canonical backend.
    pub fn rmdir(&self, path: &(impl Logical + ?Sized)) -> Result<()> {
        self.again_if_lost(|| {
            let loc = path.locate(self)?;
            if loc.is_root() {
                return Err(loc.err(Errno::BUSY, "is a mount point"));
            }
            match self.lookup(&loc)? {
                Entry::Dir(..) => {}
                Entry::Missing => return Err(loc.not_found()),
                _ => return Err(loc.err(Errno::NOTDIR, "not a directory")),
            }
            if !self.readdir(path)?.is_empty() {
                return Err(loc.err(Errno::NOTEMPTY, "directory not empty"));
            }
            self.layout(&loc).before_rmdir(&loc)?;
            // Debris of interrupted creates is not a logical entry: cleared on every backend
            // first, so that a file still being created somewhere stops the removal before any
            // of it.
            for i in 0..loc.mount.canonical.len() {
                match loc.mount.canonical[i].dir(&loc.rel) {
                    Ok(d) => clear_debris(&loc, &d)?,
                    Err(e) if i > 0 && sys::is_missing(&e) => {}
                    Err(e) => return Err(e),
                }
            }
            for i in 0..loc.mount.canonical.len() {
                let parent = match loc.parent_dir(i) {
                    Ok(p) => p,
                    Err(e) if i > 0 && e.is_not_found() => continue,
                    Err(e) => return Err(e),
                };
                match parent.rmdir(loc.name()) {
                    Ok(()) => {}
                    Err(e) if i > 0 && sys::is_missing(&e) => {}
                    Err(e) => return Err(e),
                }
            }
            Ok(())
        })
    }

    /// fsync of a logical directory: the files created, renamed or removed in it stay so across
    /// a power loss, as fsync(2) of a directory promises. Every backend's copy of it is synced,
    /// after what the layout keeps of it elsewhere (1-N: this process's log there). A copy that
    /// is missing has nothing to make durable (the directory was removed while open, or a
    /// backend never had it).
    pub fn sync_dir(&self, path: &(impl Logical + ?Sized)) -> Result<()> {
        let loc = path.locate(self)?;
        self.layout(&loc).sync_dir(&loc)?;
        for b in loc.mount.canonical.iter() {
            match b.dir(&loc.rel) {
                Ok(d) => d.fsync()?,
                Err(e) if sys::is_missing(&e) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Lists a logical directory: the union over canonical backends, sorted by name, without
    /// `.`/`..`. Containers list as files.
    pub fn readdir(&self, path: &(impl Logical + ?Sized)) -> Result<Vec<DirEntry>> {
        self.again_if_lost(|| {
            let loc = path.locate(self)?;
            let layout = self.layout(&loc);
            if !loc.is_root() {
                match self.lookup(&loc)? {
                    Entry::Dir(..) => {}
                    Entry::Missing => return Err(loc.not_found()),
                    _ => return Err(loc.err(Errno::NOTDIR, "not a directory")),
                }
            }
            let mut seen: BTreeMap<OsString, FileKind> = BTreeMap::new();
            for (i, b) in loc.mount.canonical.iter().enumerate() {
                let dir = match b.dir(&loc.rel) {
                    Ok(d) => d,
                    Err(e) if i > 0 && sys::is_missing(&e) => continue,
                    Err(e) if e.raw_errno() == Errno::NOTDIR.raw_os_error() => {
                        return Err(loc.err(Errno::NOTDIR, "not a directory"))
                    }
                    Err(e) if sys::is_missing(&e) => return Err(loc.not_found()),
                    Err(e) => return Err(e),
                };
                for n in dir.list()? {
                    let nb = n.as_bytes();
                    if super::is_reserved_name(nb) || seen.contains_key(&n) {
                        continue;
                    }
                    let kind = match crate::mount::probe(b, &loc.rel.join(&n))?.0 {
                        Probe::Missing => continue,
                        Probe::Dir => FileKind::Dir,
                        Probe::Symlink => FileKind::Symlink,
                        Probe::Container | Probe::Legacy | Probe::Other => FileKind::File,
                    };
                    seen.insert(n, kind);
                }
            }
            let mut out: Vec<DirEntry> = seen.into_iter().map(|(name, kind)| DirEntry { name, kind }).collect();
            let before = out.len();
            layout.list_extra(&loc, &mut out)?;
            if out.len() != before {
                out.sort_by(|a, b| a.name.cmp(&b.name));
                out.dedup_by(|a, b| a.name == b.name);
            }
            Ok(out)
        })
    }
}

/// Removes from the backend directory `d` of the logical directory `loc`, which lists empty,
/// what interrupted creates left: `.plfstmp.*` entries, and files being created whose creator
/// is gone (directories in the build mode that nobody holds: a killed `cp`, or a killed
/// `plfs cp -r`'s `.plfs-cp.<pid>.*`; `container::remove_if_abandoned`). Before, those made the
/// directory unremovable for good (`ENOTEMPTY`, issue 50). A file whose creator is still making
/// it is `ENOTEMPTY`, as on a plain file system, where it would be there already.
fn clear_debris(loc: &Loc, d: &sys::Dir) -> Result<()> {
    for n in d.list()? {
        if n.as_bytes().starts_with(format::TMP_PREFIX.as_bytes()) {
            d.remove_tree(&n)?;
        } else if crate::container::remove_if_abandoned(d, &n)? == Build::Live {
            return Err(loc.err(Errno::NOTEMPTY, "directory not empty (a file in it is being created)"));
        }
    }
    Ok(())
}
