//! rename(2) of files, symlinks and directories within one mount point.

use super::Logical;
use super::{Entry, Plfs};
use crate::container::BUILD_PATIENCE;
use crate::error::{Error, Result};
use crate::format;
use crate::mount::{Loc, Probe};
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

    /// [`Plfs::rename_once`], made again once if a raw close took the library's descriptors
    /// (`recover.rs`).
    fn rename_as(&self, from: &(impl Logical + ?Sized), to: &(impl Logical + ?Sized), replace: Replace) -> Result<()> {
        self.again_if_lost(|| self.rename_once(from, to, replace))
    }

    fn rename_once(
        &self,
        from: &(impl Logical + ?Sized),
        to: &(impl Logical + ?Sized),
        replace: Replace,
    ) -> Result<()> {
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
        // A container is a directory on its backend (see `to_free_name`).
        let src_dir = matches!(found.probe, Probe::Container | Probe::Legacy);
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
                self.move_file(&lf, &lt, (bf, src_dir), dst, replace)
            }
        }
    }

    /// Moves the file or symlink `lf` (on backend `bf`; `dir`: a container) to `lt`, over what the look-up found
    /// there (`dst`). Another process may change the target between that look-up and the move,
    /// as rename(2) on a plain file system does not care: a file unlinked (the exchange finds
    /// no target), one created at a free name (the move finds it taken), one being created (a
    /// directory in the build mode, absent to the look-up). The target is then looked up again
    /// and the move made anew, for as long as the source is there: a rename whose source exists
    /// never fails for what happens to its target, as on a plain file system (issue 50: 17 of
    /// 300 renames over a name another process unlinked in a loop failed with `ENOTEMPTY`, 1-3
    /// with `ENOENT`). A file being created is waited for up to [`BUILD_PATIENCE`].
    fn move_file(&self, lf: &Loc, lt: &Loc, (bf, dir): (usize, bool), mut dst: Entry, replace: Replace) -> Result<()> {
        let from_parent = lf.parent_dir(bf)?;
        let start = std::time::Instant::now();
        let mut pause = std::time::Duration::from_micros(100);
        loop {
            let r = match dst {
                Entry::File(target) => target.replace_by(&from_parent, lf.name()),
                Entry::Symlink(bt, _) => over_symlink(&from_parent, lf, lt, bt),
                _ => to_free_name(&from_parent, (bf, dir), lf, lt, replace),
            };
            let e = match r {
                Err(e) if raced(&e, replace) && start.elapsed() < BUILD_PATIENCE => e,
                r => return r,
            };
            if from_parent.stat_opt(lf.name())?.is_none() {
                return Err(e);
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(std::time::Duration::from_millis(20));
            let to = lt.find_raw()?;
            dst = match self.stored_entry(lt, to) {
                Some(e) => e,
                None => self.lookup_kept(lt)?,
            };
            match &dst {
                Entry::Dir(..) => return Err(lt.err(Errno::ISDIR, "is a directory")),
                Entry::File(target) => target.check_writable()?,
                _ => {}
            }
        }
    }
}

/// Whether a move failed for a change of its target made by another process since its look-up:
/// gone (`ENOENT`, checked against the source by the caller), taken (`EEXIST`, `ENOTEMPTY`,
/// `EISDIR`: a container made at a name that was free), being created or removed
/// (`EINPROGRESS`, or a directory whose marker is gone: `EISDIR`). A rename that must not
/// replace its target takes `EEXIST` as its answer.
fn raced(e: &Error, replace: Replace) -> bool {
    let n = e.raw_errno();
    let is = |x: Errno| n == x.raw_os_error();
    match e {
        Error::Exists(_) => false,
        _ => {
            is(Errno::NOENT)
                || is(Errno::NOTEMPTY)
                || is(Errno::ISDIR)
                || is(Errno::INPROGRESS)
                || (is(Errno::EXIST) && replace == Replace::Yes)
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

/// Moves a file or symlink (`lf`, in `from_parent` on backend `bf`; `dir`: a container) to the
/// free name `lt`.
fn to_free_name(from_parent: &Dir, (bf, dir): (usize, bool), lf: &Loc, lt: &Loc, replace: Replace) -> Result<()> {
    // Within one directory of one backend (a copy's temporary to its name), the directory
    // opened for the source is the target's too.
    let home = lt.home();
    let other = match home == bf && lf.parent_rel() == lt.parent_rel() {
        true => None,
        false => Some(lt.parent_dir(home)?),
    };
    let tp = other.as_deref().unwrap_or(from_parent);
    // A container (a directory) is moved without replacing what may have been made at the free
    // name since the look-up: rename(2) would put it in place of an empty directory there, a
    // file another process has just claimed and is about to build in (its creator would then
    // build in this one, or fail). Taken, the name is looked up again (`move_file`).
    match replace {
        Replace::Yes if !dir => from_parent.rename(lf.name(), tp, lt.name()),
        Replace::Yes => from_parent.rename_noreplace(lf.name(), tp, lt.name()),
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
