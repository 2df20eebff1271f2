//! The attributes of a directory's entries and of the directory itself ([`Dir`]): times, mode,
//! owner and access checks, never through a symbolic link.

use super::dir::{component, Dir};
use super::failpoint::hit;
use super::{timestamps, TimeSpec, NOFOLLOW};
use crate::error::{Error, Result};
use rustix::fs::{self, AtFlags, Mode};
use rustix::io::Errno;
use std::ffi::OsStr;

impl Dir {
    /// utimensat of `name` (a link's own times, never its target's).
    pub fn set_times(&self, name: impl AsRef<OsStr>, atime: TimeSpec, mtime: TimeSpec) -> Result<()> {
        let name = name.as_ref();
        component(&self.path, name)?;
        let p = self.sub(name);
        hit("sys::setattr", "utimensat", &p)?;
        fs::utimensat(&self.fd, name, &timestamps(atime, mtime), NOFOLLOW).map_err(|e| Error::io(&p, "utimensat", e))
    }

    /// utimensat of this directory itself.
    pub fn set_own_times(&self, atime: TimeSpec, mtime: TimeSpec) -> Result<()> {
        hit("sys::setattr", "utimensat", &self.path)?;
        fs::futimens(&self.fd, &timestamps(atime, mtime)).map_err(|e| Error::io(&self.path, "utimensat", e))
    }

    /// chmod of `name`; a link is refused with `ELOOP` (Linux cannot chmod a link itself).
    pub fn chmod(&self, name: impl AsRef<OsStr>, mode: u32) -> Result<()> {
        let name = name.as_ref();
        let st = self.stat(name)?;
        let p = self.sub(name);
        if super::is_symlink(&st) {
            return Err(Error::io(&p, "chmod", Errno::LOOP));
        }
        hit("sys::setattr", "chmod", &p)?;
        fs::chmodat(&self.fd, name, Mode::from_raw_mode(mode), AtFlags::empty()).map_err(|e| Error::io(&p, "chmod", e))
    }

    /// chmod of this directory itself.
    pub fn chmod_self(&self, mode: u32) -> Result<()> {
        if let Some(d) = self.opened()? {
            return d.chmod_self(mode);
        }
        hit("sys::setattr", "chmod", &self.path)?;
        fs::fchmod(&self.fd, Mode::from_raw_mode(mode)).map_err(|e| Error::io(&self.path, "chmod", e))
    }

    /// chown of `name` without following a link (`u32::MAX` leaves an id unchanged).
    pub fn chown(&self, name: impl AsRef<OsStr>, uid: u32, gid: u32) -> Result<()> {
        let name = name.as_ref();
        component(&self.path, name)?;
        let p = self.sub(name);
        hit("sys::setattr", "chown", &p)?;
        let u = (uid != u32::MAX).then(|| fs::Uid::from_raw(uid));
        let g = (gid != u32::MAX).then(|| fs::Gid::from_raw(gid));
        fs::chownat(&self.fd, name, u, g, NOFOLLOW).map_err(|e| Error::io(&p, "chown", e))
    }

    /// chown of this directory itself.
    pub fn chown_self(&self, uid: u32, gid: u32) -> Result<()> {
        if let Some(d) = self.opened()? {
            return d.chown_self(uid, gid);
        }
        hit("sys::setattr", "chown", &self.path)?;
        let u = (uid != u32::MAX).then(|| fs::Uid::from_raw(uid));
        let g = (gid != u32::MAX).then(|| fs::Gid::from_raw(gid));
        fs::fchown(&self.fd, u, g).map_err(|e| Error::io(&self.path, "chown", e))
    }

    /// access(2) check of `name` with the real ids (`R_OK`=4, `W_OK`=2, `X_OK`=1, `F_OK`=0).
    pub fn access(&self, name: impl AsRef<OsStr>, mode: u32) -> Result<()> {
        let name = name.as_ref();
        component(&self.path, name)?;
        let p = self.sub(name);
        fs::accessat(&self.fd, name, fs::Access::from_bits_truncate(mode), AtFlags::empty())
            .map_err(|e| Error::io(&p, "access", e))
    }

    /// access(2) check of this directory itself.
    pub fn access_self(&self, mode: u32) -> Result<()> {
        fs::accessat(&self.fd, ".", fs::Access::from_bits_truncate(mode), AtFlags::empty())
            .map_err(|e| Error::io(&self.path, "access", e))
    }
}
