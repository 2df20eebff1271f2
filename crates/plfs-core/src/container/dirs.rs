//! The directories of a container and what it adds to a backend directory: the modes its
//! directories and logs get from the logical file's mode, making one of its directories with
//! exactly that mode, and the operations on a [`Dir`] that must know names in containers (its
//! marker, its temporary names), which the I/O seam does not.

use crate::error::{Error, Result};
use crate::format;
use crate::sys::Dir;
use rustix::io::Errno;

/// What the container layer adds to a backend directory ([`Dir`]): the operations that must
/// know names in containers, which the I/O seam does not.
pub(crate) trait DirExt {
    /// Removes `name` and everything beneath it, a container's marker last in every directory
    /// (so that a directory is recognisably a container until it is empty). Missing is success.
    fn remove_tree(&self, name: impl AsRef<std::ffi::OsStr>) -> Result<()>;
    /// [`DirExt::remove_tree`] of `name`, held open by the caller as `sub`.
    fn remove_tree_through(&self, name: impl AsRef<std::ffi::OsStr>, sub: &Dir) -> Result<()>;
    /// Writes `data` to `name` atomically through a temporary sibling that fsck knows as debris
    /// ([`format::TMP_PREFIX`]).
    fn write_atomic(&self, name: impl AsRef<std::ffi::OsStr>, data: &[u8], mode: u32) -> Result<()>;
}

impl DirExt for Dir {
    fn remove_tree(&self, name: impl AsRef<std::ffi::OsStr>) -> Result<()> {
        self.remove_tree_with(name, std::ffi::OsStr::new(format::MARKER_NAME))
    }
    fn remove_tree_through(&self, name: impl AsRef<std::ffi::OsStr>, sub: &Dir) -> Result<()> {
        self.remove_tree_through_with(name, sub, std::ffi::OsStr::new(format::MARKER_NAME))
    }
    fn write_atomic(&self, name: impl AsRef<std::ffi::OsStr>, data: &[u8], mode: u32) -> Result<()> {
        self.write_atomic_via(format::TMP_PREFIX, name, data, mode)
    }
}

/// Mode of a container directory for a logical file of mode `mode`: the owner has `rwx`; group
/// and other may always search it (stat of a file needs no permission on the file itself, as in
/// POSIX, only a way to its marker and `meta/`), may list it where the logical mode lets them
/// read or write, and may create their logs in it where it lets them write. A 0600 file's
/// container is 0711: nobody else can list it or read its logs (the logs have their own modes).
pub fn container_dir_mode(mode: u32) -> u32 {
    let mut m = 0o711;
    for (r, w, shift) in [(0o040, 0o020, 3), (0o004, 0o002, 0)] {
        if mode & (r | w) != 0 {
            m |= 0o4 << shift;
        }
        if mode & w != 0 {
            m |= 0o2 << shift;
        }
    }
    m
}

/// Mode of a data or index log: readable by those who may read the logical file, always owner rw.
pub fn log_mode(mode: u32) -> u32 {
    (mode & 0o666) | 0o600
}

/// Mode of `.plfs_shadow` at a shadow backend's root: every user's writers make their
/// containers' shadow directories in it, and nobody may rename or remove another's (sticky).
pub const SHADOW_ROOT_MODE: u32 = 0o1777;

/// Whether a directory [`mkdir_exact`] is asked for is new (made by this process's container
/// creation, moments ago) or most likely there already (another writer's, a shadow root).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Expect {
    New,
    There,
}

/// Makes directory `name` in `parent` (if missing) and opens it; a directory this call made gets
/// exactly `mode`, whatever the process umask, and group `gid` where given and not the process's
/// own (the file's group: its group reaches what another member made; a maker not in that group
/// keeps its own). Costs no system call beyond mkdir and open when the umask and group already
/// give that. The directory is opened `O_PATH` ([`Dir::open_dir_path`]). One expected `There` is opened first, and made only if missing: a `mkdir` that
/// fails with `EEXIST` is not free on a parallel file system (on the GlusterFS volume it takes
/// the directory's locks on the bricks), and every writer after the first of a file asks for a
/// hostdir the first one made.
pub(super) fn mkdir_exact(parent: &Dir, name: &str, mode: u32, gid: Option<u32>, expect: Expect) -> Result<Dir> {
    // Opened for `*at` calls only (`O_PATH`): what a container's directories are used for
    // through this handle (creating logs and droppings in them); on a FUSE backend that is a
    // look-up instead of an open and a release of the directory.
    if expect == Expect::There {
        match parent.open_dir_path(name) {
            Ok(d) => return Ok(d),
            Err(e) if crate::sys::is_missing(&e) => {}
            Err(e) => return Err(e),
        }
    }
    let made = parent.mkdir_ok(name, mode)?;
    let d = parent.open_dir_path(name)?;
    if made {
        if let Some(g) = gid.filter(|g| *g != crate::sys::egid()) {
            follow(d.chown_self(u32::MAX, g))?;
        }
        if mode & crate::sys::umask() != 0 || mode & 0o7000 != 0 {
            d.chmod_self(mode)?;
        }
    }
    Ok(d)
}

/// A change to an object of the container other than its marker and directory: objects another
/// user made (another writer's logs) may refuse it (`EPERM`), and are skipped.
pub(super) fn follow(r: Result<()>) -> Result<()> {
    match r {
        Err(Error::Io {
            errno: Errno::PERM | Errno::ACCESS,
            ..
        }) => Ok(()),
        r => r,
    }
}
