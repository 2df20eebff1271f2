//! Deleting the container an unlink or a replacing rename took the name of: renamed aside to a
//! trash name (so the name changes atomically), then deleted, or left to the last close of a
//! process that has it open (design.md, "Unlink").
//!
//! Another process may change the name between the look-up that opened the container and the
//! rename that takes it aside (issue 50: one process creating and unlinking `t` in a loop,
//! another renaming `s` over it). What the rename took aside is whatever had the name at that
//! instant, as with rename(2) on a plain file system, so that is what is deleted: it is told
//! from the container opened before by its directory's identity, and a different file, or one
//! being created, is deleted in its place. The container opened before has gone elsewhere (the
//! process that moved it deletes it); deleting it through its descriptor instead would empty
//! one directory and fail to remove the other, leaving a whole container under a trash name.

use super::{ContainerNode, Doomed};
use crate::container::{Container, DirExt};
use crate::error::Result;
use crate::format;
use crate::sys;
use rustix::io::Errno;
use std::ffi::OsStr;

/// A fresh name to rename a container aside to before it is deleted.
fn trash_name() -> String {
    format::tmp_name(format::TRASH_PREFIX, crate::clock::random_u64())
}

/// What [`ContainerNode::discard`] found under the trash name it renamed a container to.
enum Taken {
    /// The container it opened.
    It,
    /// Another file or directory, made at the name since the container was opened.
    Other,
    /// Nothing (removed meanwhile).
    Nothing,
}

/// What is at `trash` in `parent`, against the container directory `dir` that was expected
/// there. Told by the directory's identity: the container is held open, so no other file can
/// have its inode number meanwhile. Its marker's could: the container may have been deleted by
/// another process since it was opened, and ext4 gave its marker's inode number to the marker
/// of the next file made (so a discard took a new file for the one it opened, deleted nothing
/// through the old one's descriptor, and left the new one whole under a trash name).
fn taken(parent: &sys::Dir, trash: &str, dir: &sys::Dir) -> Result<Taken> {
    let Some(st) = parent.stat_opt(trash)? else {
        return Ok(Taken::Nothing);
    };
    let me = dir.fstat()?;
    Ok(match (st.st_dev, st.st_ino) == (me.st_dev, me.st_ino) {
        true => Taken::It,
        false => Taken::Other,
    })
}

impl ContainerNode {
    /// Deletes container `c`, now named `name` in `parent`: renamed aside first (unless it
    /// already has a trash name) so it vanishes atomically, then deleted with its shadow
    /// directories, or left to the last close if this process has it open. Once the name is
    /// gone, failing to reclaim the space is a warning, not an error (a retry would get ENOENT).
    /// What the rename took aside is deleted even if it is not `c` (see the module's comment);
    /// if it is no file at all, `undo` puts it back (given its trash name) and the answer is
    /// `EISDIR`.
    pub(super) fn discard(
        &self,
        mut c: Container,
        parent: &sys::Dir,
        name: &OsStr,
        undo: &dyn Fn(&str) -> Result<()>,
    ) -> Result<()> {
        // Opened for real (for the lock, and to list it for the deletion) before the rename: a
        // FUSE backend looks a renamed directory up again when it is opened through its old
        // descriptor.
        c.dir.make_real()?;
        // Open in this process: its last close deletes it, through a descriptor of its own on
        // the parent, taken before anything changes. (A thread of this process that opens it
        // between this look and the rename holds it as another process would: the lock below
        // finds it held, and that thread's last close deletes it.)
        let kept = match self.reg.get(c.ident) {
            Some(shared) => Some((shared, parent.try_clone()?)),
            None => None,
        };
        let trash = match name.to_str() {
            Some(n) if n.starts_with(format::TMP_PREFIX) => n.to_string(),
            _ => {
                let t = trash_name();
                parent.rename(name, parent, &t)?;
                t
            }
        };
        match taken(parent, &trash, &c.dir)? {
            Taken::It => {}
            Taken::Nothing => return Ok(()),
            Taken::Other => return self.discard_other(parent, &trash, undo),
        }
        if let Some((shared, parent)) = kept {
            shared.doom(Doomed { parent, trash });
            return Ok(());
        }
        // Another process may have it open (it holds a shared flock): it deletes it at its last
        // close. A holder that is closing takes the lock exclusively for an instant to see
        // whether it is the last one; retrying for a while tells that instant from a holder that
        // keeps the file open, so that one of the two always deletes (design.md, "Unlink").
        let mut last = false;
        for i in 0..20 {
            if c.dir.try_lock_exclusive()? {
                last = true;
                break;
            }
            std::thread::sleep(std::time::Duration::from_micros(500 * (i + 1)));
        }
        if !last {
            return Ok(());
        }
        // Listed through the descriptor the lock is on: no second open of the container.
        let r = c
            .remove_shadows()
            .and_then(|()| parent.remove_tree_through(&trash, &c.dir));
        match r {
            // Deleted meanwhile by the last close of a process that had it open (its removal
            // and this one each hold the lock exclusively: that one took it first, and deleted
            // the whole directory, whose listing now says `ENOENT`).
            Err(e) if sys::is_missing(&e) && c.dir.fstat().is_ok_and(|st| st.st_nlink == 0) => {}
            Err(e) => crate::warn!("{e}: unlinked, but its data could not be removed (plfs fsck reports it)"),
            Ok(()) => {}
        }
        Ok(())
    }

    /// [`ContainerNode::discard`] of what is at `trash` in `parent`, which is not the container
    /// the caller opened: another published container is discarded as that one would have
    /// been; a file being created (a directory in the build mode without a published marker)
    /// is left to its creator, who holds a shared lock on it while it builds and while it has
    /// it open, and deletes it at its last close since it has a trash name, or removed now if
    /// nobody holds it; anything else is put back by `undo`.
    fn discard_other(&self, parent: &sys::Dir, trash: &str, undo: &dyn Fn(&str) -> Result<()>) -> Result<()> {
        let Some(d) = parent.open_dir_opt(trash)? else {
            return Ok(());
        };
        let mode = d.fstat()?.st_mode;
        let marker = d.stat_opt(format::MARKER_NAME)?;
        if marker.is_some_and(|m| format::is_published(m.st_size as u64, mode)) {
            let c = Container::from_dir(&self.loc.mount, self.b, d)?;
            return self.discard(c, parent, OsStr::new(trash), undo);
        }
        if format::is_build_mode(mode) {
            if d.try_lock_exclusive()? {
                if let Err(e) = parent.remove_tree_through(trash, &d) {
                    crate::warn!("{e}: replaced while it was created, but could not be removed (plfs fsck reports it)");
                }
            }
            return Ok(());
        }
        drop(d);
        undo(trash)?;
        Err(self.loc.err(Errno::ISDIR, "is a directory"))
    }
}
