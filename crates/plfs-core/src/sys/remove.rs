//! Removing what is in a backend directory: a file, an empty directory, a whole tree (every
//! directory listed and emptied, one name given to go last).

use super::dir::{component, is_missing, Dir};
use super::failpoint::hit;
use crate::error::{Error, Result};
use rustix::fs::{self, AtFlags};
use rustix::io::Errno;
use std::ffi::OsStr;

impl Dir {
    /// Unlinks the file or symlink `name`.
    pub fn unlink(&self, name: impl AsRef<OsStr>) -> Result<()> {
        let name = name.as_ref();
        component(&self.path, name)?;
        let p = self.sub(name);
        hit("sys::unlink", "unlink", &p)?;
        fs::unlinkat(&self.fd, name, AtFlags::empty()).map_err(|e| Error::io(&p, "unlink", e))
    }

    /// Unlinks `name`; `Ok(false)` if it was already gone.
    pub fn unlink_opt(&self, name: impl AsRef<OsStr>) -> Result<bool> {
        match self.unlink(name) {
            Ok(()) => Ok(true),
            Err(Error::Io {
                errno: Errno::NOENT, ..
            }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Removes the empty directory `name`.
    pub fn rmdir(&self, name: impl AsRef<OsStr>) -> Result<()> {
        let name = name.as_ref();
        component(&self.path, name)?;
        let p = self.sub(name);
        hit("sys::unlink", "rmdir", &p)?;
        fs::unlinkat(&self.fd, name, AtFlags::REMOVEDIR).map_err(|e| Error::io(&p, "rmdir", e))
    }

    /// Removes `name` and everything beneath it (files, links, directories; links are removed,
    /// never followed). Missing is success. In every directory, an entry named `last` goes after
    /// the others (the container layer passes its marker, so that a directory is recognisably a
    /// container until it is empty; this layer knows no names in containers).
    pub fn remove_tree_with(&self, name: impl AsRef<OsStr>, last: &OsStr) -> Result<()> {
        let name = name.as_ref();
        // Most entries of a container are files: unlink first (a link is removed, never
        // followed); a directory answers EISDIR (Linux, whatever the file system).
        match self.unlink(name) {
            Ok(()) => return Ok(()),
            Err(e) if is_missing(&e) => return Ok(()),
            Err(Error::Io {
                errno: Errno::ISDIR, ..
            }) => {}
            Err(e) => return Err(e),
        }
        if let Some(sub) = self.open_dir_opt(name)? {
            sub.remove_entries(last)?;
        }
        self.rmdir_gone(name)
    }

    /// [`Dir::remove_tree_with`] of the directory `name`, which the caller holds open as `sub`
    /// (a container being deleted by the process that holds it): its entries are listed through
    /// that descriptor, not a new open of the name.
    pub fn remove_tree_through_with(&self, name: impl AsRef<OsStr>, sub: &Dir, last: &OsStr) -> Result<()> {
        sub.remove_entries(last)?;
        self.rmdir_gone(name.as_ref())
    }

    /// Removes every entry of this directory, `last` last.
    fn remove_entries(&self, last: &OsStr) -> Result<()> {
        let mut names = self.list()?;
        names.sort_by_key(|n| n.as_os_str() == last);
        for n in names {
            self.remove_tree_with(&n, last)?;
        }
        Ok(())
    }

    /// rmdir, missing being success.
    fn rmdir_gone(&self, name: &OsStr) -> Result<()> {
        match self.rmdir(name) {
            Ok(())
            | Err(Error::Io {
                errno: Errno::NOENT, ..
            }) => Ok(()),
            Err(e) => Err(e),
        }
    }
}
