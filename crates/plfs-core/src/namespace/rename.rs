//! rename(2) of files, symlinks and directories within one mount point.

use super::{Entry, Plfs};
use crate::error::{Error, Result};
use crate::format;
use rustix::io::Errno;
use std::path::Path;
use std::sync::Arc;

impl Plfs {
    /// Renames a file, symlink or directory within one mount point, replacing the target (a
    /// file over a file, a directory over an empty directory).
    pub fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        let lf = self.resolve(from)?;
        let lt = self.resolve(to)?;
        if !Arc::ptr_eq(&lf.mount, &lt.mount) {
            return Err(Error::errno(
                Errno::XDEV,
                format!("{} and {} are on different mount points", from.display(), to.display()),
            ));
        }
        if lf.logical == lt.logical {
            return Ok(());
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
        let src = self.lookup(&lf)?;
        let dst = self.lookup(&lt)?;
        match src {
            Entry::Missing => Err(lf.not_found()),
            Entry::Dir(..) => {
                self.layout(&lf).forget(&lf.logical);
                if matches!(dst, Entry::File(_) | Entry::Symlink(..)) {
                    return Err(lt.err(Errno::NOTDIR, "not a directory"));
                }
                self.check_parent(&lt)?;
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
                let bf = match &src {
                    Entry::Symlink(b, _) => *b,
                    _ => lf.find()?.backend,
                };
                let from_parent = lf.parent_dir(bf)?;
                match dst {
                    Entry::File(target) => target.replace_by(&from_parent, lf.name()),
                    Entry::Symlink(bt, _) => {
                        // rename(2) replaces a symlink by a file atomically; a container (a
                        // directory) cannot replace it that way. The link is moved aside to a
                        // temporary name (hidden, and cleared as debris) and back if the move
                        // fails (it can: moving a directory to another parent needs write
                        // permission on it), so a refused rename leaves the link in place.
                        let tp = lt.parent_dir(bt)?;
                        match from_parent.rename(lf.name(), &tp, lt.name()) {
                            Err(e) if crate::layout::is_type_clash(&e) => {
                                let aside = format::tmp_name(format::TMP_PREFIX, crate::clock::random_u64());
                                tp.rename(lt.name(), &tp, &aside)?;
                                match from_parent.rename(lf.name(), &tp, lt.name()) {
                                    Ok(()) => tp.unlink(&aside),
                                    Err(e) => {
                                        if let Err(back) = tp.rename(&aside, &tp, lt.name()) {
                                            crate::warn!(
                                                "{back}: a symbolic link moved aside for a rename stays there"
                                            );
                                        }
                                        Err(e)
                                    }
                                }
                            }
                            r => r,
                        }
                    }
                    _ => from_parent.rename(lf.name(), &*lt.parent_dir(lt.home())?, lt.name()),
                }
            }
        }
    }
}
