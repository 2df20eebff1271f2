//! rename(2) of files, symlinks and directories within one mount point.

use super::Logical;
use super::{Entry, Plfs};
use crate::error::{Error, Result};
use crate::format;
use crate::mount::Loc;
use crate::sys::Dir;
use rustix::io::Errno;
use std::sync::Arc;

impl Plfs {
    /// Renames a file, symlink or directory within one mount point, replacing the target (a
    /// file over a file, a directory over an empty directory).
    pub fn rename(&self, from: &(impl Logical + ?Sized), to: &(impl Logical + ?Sized)) -> Result<()> {
        self.rename_as(from, to, Replace::Yes)
    }

    /// [`Plfs::rename`] that fails with `EEXIST` if anything is at `to` (renameat2(2)'s
    /// `RENAME_NOREPLACE`): a copy publishing a finished file under a name it must not take
    /// over. A file or symlink is moved by the backend's own no-replace rename (atomic where
    /// the backend has `RENAME_NOREPLACE`; "Backends" in design.md for the fallbacks); a
    /// directory, moved on every backend, after the look-up finds the name free.
    pub fn rename_noreplace(&self, from: &(impl Logical + ?Sized), to: &(impl Logical + ?Sized)) -> Result<()> {
        self.rename_as(from, to, Replace::No)
    }

    fn rename_as(&self, from: &(impl Logical + ?Sized), to: &(impl Logical + ?Sized), replace: Replace) -> Result<()> {
        let lf = from.locate(self)?;
        let lt = to.locate(self)?;
        if !Arc::ptr_eq(&lf.mount, &lt.mount) {
            return Err(Error::errno(
                Errno::XDEV,
                format!(
                    "{} and {} are on different mount points",
                    lf.logical.display(),
                    lt.logical.display()
                ),
            ));
        }
        if lf.logical == lt.logical {
            // Onto itself: nothing to do, unless the target must not exist (renameat2(2) says
            // `EEXIST` then, as for any existing target).
            return match replace {
                Replace::Yes => Ok(()),
                Replace::No => match self.lookup(&lf)? {
                    Entry::Missing => Err(lf.not_found()),
                    _ => Err(Error::Exists(lt.logical.clone())),
                },
            };
        }
        if lf.is_root() || lt.is_root() {
            return Err(lf.err(Errno::BUSY, "cannot rename a mount point"));
        }
        if lt.logical.starts_with(&lf.logical) {
            return Err(Error::errno(
                Errno::INVAL,
                format!("cannot move {} into itself", lf.logical.display()),
            ));
        }
        // The source's look-up says on which backend it is: found once, used for the move.
        let found = lf.find()?;
        let bf = found.backend;
        let src = match self.stored_entry(&lf, found) {
            Some(e) => e,
            None => self.lookup_kept(&lf)?,
        };
        let to = lt.find_raw()?;
        let dst = match self.stored_entry(&lt, to) {
            Some(e) => e,
            None => self.lookup_kept(&lt)?,
        };
        // A free target name: `check_parent` below looks at every ancestor `check_through`
        // would, so the path is checked once (a missing source is told first, as before).
        if !matches!(dst, Entry::Missing) || matches!(src, Entry::Missing) {
            lt.check_through(&to)?;
        }
        if replace == Replace::No && !matches!(src, Entry::Missing) && !matches!(dst, Entry::Missing) {
            return Err(Error::Exists(lt.logical.clone()));
        }
        match src {
            Entry::Missing => Err(lf.not_found()),
            Entry::Dir(..) => {
                self.layout(&lf).forget(&lf.logical);
                if matches!(dst, Entry::File(_) | Entry::Symlink(..)) {
                    return Err(lt.err(Errno::NOTDIR, "not a directory"));
                }
                self.check_parent(&lt)?;
                move_dir(&lf, &lt)
            }
            Entry::File(_) | Entry::Symlink(..) => {
                if matches!(dst, Entry::Dir(..)) {
                    return Err(lt.err(Errno::ISDIR, "is a directory"));
                }
                self.check_parent(&lt)?;
                if let Entry::File(target) = &dst {
                    target.check_writable()?;
                }
                if let Entry::File(n) = &src {
                    if let Some(r) = n.rename_within(&lt) {
                        return r;
                    }
                }
                let from_parent = lf.parent_dir(bf)?;
                match dst {
                    Entry::File(target) => target.replace_by(&from_parent, lf.name()),
                    Entry::Symlink(bt, _) => over_symlink(&from_parent, &lf, &lt, bt),
                    _ => to_free_name(&from_parent, bf, &lf, &lt, replace),
                }
            }
        }
    }
}

/// Moves a directory on every canonical backend (one that lacks it is skipped).
fn move_dir(lf: &Loc, lt: &Loc) -> Result<()> {
    for i in 0..lf.mount.canonical.len() {
        let fp = match lf.parent_dir(i) {
            Ok(p) => p,
            Err(e) if i > 0 && e.is_not_found() => continue,
            Err(e) => return Err(e),
        };
        match fp.rename(lf.name(), &*lt.parent_dir(i)?, lt.name()) {
            Err(e) if i > 0 && crate::sys::is_missing(&e) => {}
            r => r?,
        }
    }
    Ok(())
}

/// Moves a file or symlink (`lf`, in `from_parent`) over the symbolic link at `lt` (on backend
/// `bt`). rename(2) replaces a symlink by a file atomically; a container (a directory) cannot
/// replace it that way. The link is moved aside to a temporary name (hidden, and cleared as
/// debris) and back if the move fails (it can: moving a directory to another parent needs write
/// permission on it), so a refused rename leaves the link in place.
fn over_symlink(from_parent: &Dir, lf: &Loc, lt: &Loc, bt: usize) -> Result<()> {
    let tp = lt.parent_dir(bt)?;
    match from_parent.rename(lf.name(), &tp, lt.name()) {
        Err(e) if crate::layout::is_type_clash(&e) => {
            let aside = format::tmp_name(format::TMP_PREFIX, crate::clock::random_u64());
            tp.rename(lt.name(), &tp, &aside)?;
            match from_parent.rename(lf.name(), &tp, lt.name()) {
                Ok(()) => tp.unlink(&aside),
                Err(e) => {
                    if let Err(back) = tp.rename(&aside, &tp, lt.name()) {
                        crate::warn!("{back}: a symbolic link moved aside for a rename stays there");
                    }
                    Err(e)
                }
            }
        }
        r => r,
    }
}

/// Moves a file or symlink (`lf`, in `from_parent` on backend `bf`) to the free name `lt`.
fn to_free_name(from_parent: &Dir, bf: usize, lf: &Loc, lt: &Loc, replace: Replace) -> Result<()> {
    // Within one directory of one backend (a copy's temporary to its name), the directory
    // opened for the source is the target's too.
    let home = lt.home();
    let other = match home == bf && lf.parent_rel() == lt.parent_rel() {
        true => None,
        false => Some(lt.parent_dir(home)?),
    };
    let tp = other.as_deref().unwrap_or(from_parent);
    match replace {
        Replace::Yes => from_parent.rename(lf.name(), tp, lt.name()),
        Replace::No => from_parent
            .rename_noreplace(lf.name(), tp, lt.name())
            .map_err(|e| match e.raw_errno() {
                n if n == Errno::EXIST.raw_os_error() => Error::Exists(lt.logical.clone()),
                _ => e,
            }),
    }
}

/// Whether a rename may take over what is at its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Replace {
    Yes,
    No,
}
