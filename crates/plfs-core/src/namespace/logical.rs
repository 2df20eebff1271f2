//! What a namespace call names ([`Logical`]): an absolute logical path, which the core places
//! on its mount point, or a path a front end already holds relative to one mount point
//! ([`InMount`]). Both become the same [`Loc`] through the same checks.
//!
//! The FUSE daemon serves one mount point and keeps each inode's path relative to it. Until
//! 2026-11-29 it joined the mount point to that path for every request, and the core took the
//! result apart again (normalised it, searched the mount points by prefix, then the mounts by
//! mount point): one resolution written twice, in opposite directions (issue 27, item 4).

use super::Plfs;
use crate::error::{Error, Result};
use crate::mount::Loc;
use rustix::io::Errno;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// A name the namespace's calls take.
pub trait Logical {
    /// Where it is: its mount, its path relative to the mount point, its logical path.
    fn locate(&self, plfs: &Plfs) -> Result<Loc>;
}

impl Logical for Path {
    fn locate(&self, plfs: &Plfs) -> Result<Loc> {
        plfs.resolve(self)
    }
}

impl Logical for PathBuf {
    fn locate(&self, plfs: &Plfs) -> Result<Loc> {
        plfs.resolve(self)
    }
}

impl<T: Logical + ?Sized> Logical for &T {
    fn locate(&self, plfs: &Plfs) -> Result<Loc> {
        (**self).locate(plfs)
    }
}

/// One of the instance's mount points ([`Plfs::mount_id`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MountId(pub(super) usize);

/// A path relative to mount point `mount` ("" for the mount point itself), in the normal form
/// of one name per component: no empty, `.` or `..` component, no leading or trailing slash.
/// Anything else is refused (`EINVAL`), not normalised: a front end that holds relative paths
/// made them from names, one at a time.
#[derive(Debug, Clone, Copy)]
pub struct InMount<'a> {
    pub mount: MountId,
    pub rel: &'a Path,
}

impl Logical for InMount<'_> {
    fn locate(&self, plfs: &Plfs) -> Result<Loc> {
        let (m, _) = plfs
            .mounts
            .get(self.mount.0)
            .ok_or_else(|| Error::errno(Errno::XDEV, "not a mount of this instance"))?;
        let logical = if self.rel.as_os_str().is_empty() {
            m.cfg.mount_point.clone()
        } else {
            m.cfg.mount_point.join(self.rel)
        };
        let b = self.rel.as_os_str().as_bytes();
        if !b.is_empty() && b.split(|&c| c == b'/').any(|c| c.is_empty() || c == b"." || c == b"..") {
            return Err(Error::InvalidArgument(format!(
                "{}: {:?} is not a path relative to the mount point",
                logical.display(),
                self.rel
            )));
        }
        plfs.loc(self.mount.0, self.rel.to_path_buf(), logical)
    }
}

impl Plfs {
    /// The mount whose mount point is `mount_point` (as the configuration names it).
    pub fn mount_id(&self, mount_point: &Path) -> Option<MountId> {
        self.mounts
            .iter()
            .position(|(m, _)| m.cfg.mount_point == mount_point)
            .map(MountId)
    }

    /// Resolves a logical path (absolute; `.`/`..` resolved lexically) to its mount.
    pub fn resolve(&self, path: &Path) -> Result<Loc> {
        let (m, logical, rel) = self
            .config
            .place(path)
            .ok_or_else(|| Error::errno(Errno::XDEV, format!("{}: not under a PLFS mount point", path.display())))?;
        let idx = self
            .mounts
            .iter()
            .position(|(x, _)| x.cfg.mount_point == m.mount_point)
            .expect("mount resolved from this config");
        self.loc(idx, rel, logical)
    }

    /// The location of `rel` (normalised) on mount `idx`, unless a component is a name PLFS
    /// reserves. Inline: one function call and the moves of two paths into it were about 50
    /// instructions of each stat through ldplfs (`bench/walks.py stat`).
    #[inline(always)]
    fn loc(&self, idx: usize, rel: PathBuf, logical: PathBuf) -> Result<Loc> {
        if let Some(bad) = rel
            .as_os_str()
            .as_bytes()
            .split(|&c| c == b'/')
            .find(|c| super::is_reserved_name(c))
        {
            return Err(Error::InvalidArgument(format!(
                "{}: {:?} is a name reserved by PLFS",
                logical.display(),
                OsStr::from_bytes(bad)
            )));
        }
        Ok(Loc {
            mount: self.mounts[idx].0.clone(),
            idx,
            rel,
            logical,
        })
    }
}
