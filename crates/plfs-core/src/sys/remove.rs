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
        self.remove_tree_keeping(name.as_ref(), last, Keep::Nothing)
    }

    /// Removes every file beneath the directory `name`, keeping it and every directory beneath
    /// it. Missing is success; a `name` that is no directory is removed.
    pub fn clear_tree(&self, name: impl AsRef<OsStr>) -> Result<()> {
        self.remove_tree_keeping(name.as_ref(), OsStr::new(""), Keep::Dirs)
    }

    /// [`Dir::remove_tree_with`], keeping the directories where `keep` says so.
    fn remove_tree_keeping(&self, name: &OsStr, last: &OsStr, keep: Keep) -> Result<()> {
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
            sub.remove_entries(last, keep)?;
        }
        match keep {
            Keep::Nothing => self.rmdir_gone(name),
            Keep::Dirs => Ok(()),
        }
    }

    /// [`Dir::remove_tree_with`] of the directory `name`, which the caller holds open as `sub`
    /// (a container being deleted by the process that holds it): its entries are listed through
    /// that descriptor, not a new open of the name.
    pub fn remove_tree_through_with(&self, name: impl AsRef<OsStr>, sub: &Dir, last: &OsStr) -> Result<()> {
        sub.remove_entries(last, Keep::Nothing)?;
        self.rmdir_gone(name.as_ref())
    }

    /// Removes every entry of this directory, `last` last. An entry the listing says is a
    /// directory (`d_type`, a hint) is opened and emptied without the `unlink` that would
    /// answer `EISDIR` first (a container's `meta/` and hostdirs: two system calls, and on a
    /// distributed backend the operations behind them, per deleted file).
    fn remove_entries(&self, last: &OsStr, keep: Keep) -> Result<()> {
        let mut names = self.list_hinted()?;
        names.sort_by_key(|(n, _)| n.as_os_str() == last);
        for (n, dir) in names {
            if dir {
                self.remove_dir_tree(&n, last, keep)?;
            } else {
                self.remove_tree_keeping(&n, last, keep)?;
            }
        }
        Ok(())
    }

    /// [`Dir::remove_tree_with`] of an entry listed as a directory: opened and emptied first;
    /// one that is no directory any more is removed the other way.
    fn remove_dir_tree(&self, name: &OsStr, last: &OsStr, keep: Keep) -> Result<()> {
        match self.open_dir_opt(name) {
            Ok(Some(sub)) => {
                sub.remove_entries(last, keep)?;
                // Closed before its rmdir, as `remove_tree_with` does.
                drop(sub);
                match keep {
                    Keep::Nothing => self.rmdir_gone(name),
                    Keep::Dirs => Ok(()),
                }
            }
            Ok(None) => Ok(()),
            Err(Error::Io {
                errno: Errno::NOTDIR | Errno::LOOP,
                ..
            }) => self.remove_tree_keeping(name, last, keep),
            Err(e) => Err(e),
        }
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

/// What a removal of a tree leaves in place.
#[derive(Debug, Clone, Copy)]
enum Keep {
    /// Nothing: every entry and directory goes.
    Nothing,
    /// Every directory, emptied of its files.
    Dirs,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A tree of files, nested directories and links goes whole (the listing's directory hint
    /// and the unlink-first way both), links are removed and never followed, and a tree that is
    /// gone already is success.
    #[test]
    fn a_tree_goes_whole_and_links_are_not_followed() {
        let base = std::env::temp_dir().join(format!("plfs-rmtree-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        for d in ["t/a/b/c", "t/empty", "keep/inside"] {
            std::fs::create_dir_all(base.join(d)).unwrap();
        }
        for (f, b) in [
            ("keep/inside/f", "x"),
            ("t/f", "1"),
            ("t/a/b/g", "2"),
            ("t/a/last", "3"),
            ("t/last", "4"),
        ] {
            std::fs::write(base.join(f), b).unwrap();
        }
        symlink(base.join("keep"), base.join("t/link")).unwrap();
        symlink(base.join("keep/inside"), base.join("t/a/b/c/dirlink")).unwrap();
        symlink(base.join("nowhere"), base.join("t/a/dangling")).unwrap();
        let root = Dir::open_root(&base).unwrap();
        root.remove_tree_with("t", OsStr::new("last")).unwrap();
        assert!(std::fs::symlink_metadata(base.join("t")).is_err(), "the tree is gone");
        assert_eq!(
            std::fs::read(base.join("keep/inside/f")).unwrap(),
            b"x",
            "a link's target is kept"
        );
        root.remove_tree_with("t", OsStr::new("last")).unwrap();
        std::fs::remove_dir_all(&base).unwrap();
    }
}
