//! Renames within and between backend directories: plain, without replacing, and exchanging,
//! with the fallbacks of backends that refuse `renameat2` flags.

use super::dir::{component, Dir};
use super::failpoint::hit;
use super::is_dir;
use crate::error::{Error, Result};
use rustix::fs::{self, AtFlags, RenameFlags};
use rustix::io::Errno;
use std::ffi::OsStr;

impl Dir {
    /// rename(2) of `from` here to `to` in `to_dir` (replacing a file, or an empty directory).
    pub fn rename(&self, from: impl AsRef<OsStr>, to_dir: &Dir, to: impl AsRef<OsStr>) -> Result<()> {
        let (from, to) = (from.as_ref(), to.as_ref());
        component(&self.path, from)?;
        component(&to_dir.path, to)?;
        let p = self.sub(from);
        hit("sys::rename", "rename", &p)?;
        fs::renameat(&self.fd, from, &to_dir.fd, to).map_err(|e| Error::io(&p, "rename", e))
    }

    /// Renames `from` here to `to` in `to_dir` only if nothing is at `to` (`EEXIST` otherwise).
    /// `renameat2(RENAME_NOREPLACE)` where the backend has it; else, for a directory, a plain
    /// rename after checking the target is absent (a non-empty directory is never replaced by
    /// rename(2); the race with a concurrent mkdir of an empty directory is argued in
    /// docs/design.md), and for a file `link` + `unlink` (link never replaces).
    pub fn rename_noreplace(&self, from: impl AsRef<OsStr>, to_dir: &Dir, to: impl AsRef<OsStr>) -> Result<()> {
        let (from, to) = (from.as_ref(), to.as_ref());
        component(&self.path, from)?;
        component(&to_dir.path, to)?;
        let p = self.sub(from);
        hit("sys::rename", "rename", &p)?;
        if self.caps.noreplace() {
            match fs::renameat_with(&self.fd, from, &to_dir.fd, to, RenameFlags::NOREPLACE) {
                Ok(()) => return Ok(()),
                Err(e) if super::unsupported(e) && self.caps.learn_noreplace(false) => {}
                Err(e) => return Err(Error::io(&p, "rename", e)),
            }
        }
        let src = self.stat(from)?;
        if to_dir.stat_opt(to)?.is_some() {
            return Err(Error::io(&p, "rename", Errno::EXIST));
        }
        if is_dir(&src) {
            return match fs::renameat(&self.fd, from, &to_dir.fd, to) {
                Ok(()) => Ok(()),
                Err(Errno::NOTEMPTY) | Err(Errno::EXIST) | Err(Errno::NOTDIR) | Err(Errno::ISDIR) => {
                    Err(Error::io(&p, "rename", Errno::EXIST))
                }
                Err(e) => Err(Error::io(&p, "rename", e)),
            };
        }
        fs::linkat(&self.fd, from, &to_dir.fd, to, AtFlags::empty()).map_err(|e| Error::io(&p, "rename", e))?;
        fs::unlinkat(&self.fd, from, AtFlags::empty()).map_err(|e| Error::io(&p, "rename", e))
    }

    /// Atomically exchanges `a` here with `b` in `b_dir` (`renameat2(RENAME_EXCHANGE)`).
    /// `Ok(false)` if the backend does not support it (nothing was done).
    pub fn exchange(&self, a: impl AsRef<OsStr>, b_dir: &Dir, b: impl AsRef<OsStr>) -> Result<bool> {
        let (a, b) = (a.as_ref(), b.as_ref());
        component(&self.path, a)?;
        component(&b_dir.path, b)?;
        if !self.caps.exchange() {
            return Ok(false);
        }
        let p = self.sub(a);
        hit("sys::rename", "rename", &p)?;
        match fs::renameat_with(&self.fd, a, &b_dir.fd, b, RenameFlags::EXCHANGE) {
            Ok(()) => Ok(true),
            Err(e) if super::unsupported(e) && self.caps.learn_exchange(false) => Ok(false),
            Err(e) => Err(Error::io(&p, "rename", e)),
        }
    }
}
