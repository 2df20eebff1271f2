//! [`Dir`]: an open backend directory. Everything inside it is reached with `*at` calls relative
//! to its descriptor, one path component at a time, never following a symbolic link, so a
//! renamed directory never strands its users and a planted link is never read through.

use super::caps::Caps;
use super::failpoint::hit;
use super::fd::{self, Fd};
use super::file::File;
use super::{high, is_dir, is_file, RawStat, StatVfs, NOFOLLOW};
use crate::error::{Error, Result};
use rustix::fd::{AsFd, BorrowedFd};
use rustix::fs::{self, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Arc;

/// An open directory on a backend, with its display path and its backend's capabilities.
#[derive(Debug)]
pub struct Dir {
    pub(super) fd: Fd,
    pub(super) path: PathBuf,
    pub(super) caps: Arc<Caps>,
    /// The descriptor is an open file description of its own that no listing has read yet (its
    /// position is at the start): the first [`Dir::list`] reads it without opening another.
    pub(super) unread: AtomicBool,
    /// The descriptor is an `O_PATH` one ([`Dir::open_dir_path`]): good for `*at` calls and
    /// `fstat`, not for listing, fsync, fchmod/fchown or flock, which open the directory for
    /// real first.
    pub(super) path_only: bool,
}

/// How [`Dir::create_file`] treats an existing file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Create {
    /// Fail with `EEXIST` if the name exists.
    Excl,
    /// Open it as it is (never following a link).
    MayExist,
}

/// Access mode for [`Dir::open_file`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Read only.
    Read,
    /// Write only.
    Write,
    /// Read and write.
    ReadWrite,
}

impl Access {
    fn flags(self) -> OFlags {
        match self {
            Access::Read => OFlags::RDONLY,
            Access::Write => OFlags::WRONLY,
            Access::ReadWrite => OFlags::RDWR,
        }
    }
}

/// Checks that `name` is one path component (not empty, no `/`, not `.` or `..`).
pub(super) fn component(dir: &Path, name: &OsStr) -> Result<()> {
    let b = name.as_bytes();
    if b.is_empty() || b == b"." || b == b".." || b.contains(&b'/') || b.contains(&0) {
        return Err(Error::errno(
            Errno::INVAL,
            format!("{}: {:?} is not a single file name", dir.display(), name),
        ));
    }
    Ok(())
}

/// Checks that `rel` is a relative path of normal components (no `..`, not absolute).
fn beneath(dir: &Path, rel: &Path) -> Result<()> {
    use std::path::Component;
    if rel.components().all(|c| matches!(c, Component::Normal(_))) {
        Ok(())
    } else {
        Err(Error::errno(
            Errno::INVAL,
            format!("{}: {} does not stay beneath it", dir.display(), rel.display()),
        ))
    }
}

/// Runs a lookup-based call again when a network file system answers `ESTALE` (GlusterFS does,
/// for a handle that another client's change made stale, e.g. to the loser of a mkdir race).
pub(super) fn fresh<T>(mut f: impl FnMut() -> rustix::io::Result<T>) -> rustix::io::Result<T> {
    for _ in 0..3 {
        match f() {
            Err(Errno::STALE) => continue,
            r => return r,
        }
    }
    f()
}

/// The longest path the kernel takes in one call, its NUL included (`PATH_MAX`). A longer
/// relative path beneath a directory (a logical path near the limit, plus a container's own
/// names) is resolved one component at a time (pjdfstest */03.t: ext4 takes such paths from a
/// cwd, and so must a mount).
const PATH_MAX: usize = 4096;

/// Whether the kernel has `openat2` (0 unknown, 1 yes, 2 no).
static OPENAT2: AtomicU8 = AtomicU8::new(0);

/// Flags of a look-up only descriptor of a directory ([`Dir::open_dir_path`]).
const PATH_FLAGS: OFlags = OFlags::PATH
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

pub(super) const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

impl Dir {
    /// Opens a backend root (or any directory named by the administrator, such as a shadow
    /// backend): a symbolic link at the root itself is followed, as in the configuration.
    pub fn open_root(path: &Path) -> Result<Dir> {
        hit("sys::open", "open", path)?;
        let fd = fd::open(
            path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| Error::io(path, "open", e))?;
        Ok(Dir {
            fd: high(fd),
            path: path.to_path_buf(),
            caps: Arc::new(Caps::default()),
            unread: AtomicBool::new(true),
            path_only: false,
        })
    }

    /// Opens a directory by absolute path without following a final symbolic link (paths fsck and
    /// the tools are given, `/proc`).
    pub fn open(path: &Path) -> Result<Dir> {
        hit("sys::open", "open", path)?;
        let fd = fd::open(path, DIR_FLAGS, Mode::empty()).map_err(|e| Error::io(path, "open", e))?;
        Ok(Dir {
            fd,
            path: path.to_path_buf(),
            caps: Arc::new(Caps::default()),
            unread: AtomicBool::new(true),
            path_only: false,
        })
    }

    /// [`Dir::open`], `Ok(None)` when nothing is there.
    pub fn open_opt(path: &Path) -> Result<Option<Dir>> {
        match Dir::open(path) {
            Ok(d) => Ok(Some(d)),
            Err(e) if is_missing(&e) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The display path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The display path of an entry.
    pub fn sub(&self, name: impl AsRef<OsStr>) -> PathBuf {
        self.path.join(name.as_ref())
    }

    /// This backend's capability cache.
    pub fn caps(&self) -> &Arc<Caps> {
        &self.caps
    }

    pub(super) fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    fn child(&self, fd: Fd, path: PathBuf) -> Dir {
        Dir {
            fd,
            path,
            caps: self.caps.clone(),
            unread: AtomicBool::new(true),
            path_only: false,
        }
    }

    /// [`Dir::child`] for an `O_PATH` descriptor (see [`Dir::open_dir_path`]).
    fn path_child(&self, fd: Fd, path: PathBuf) -> Dir {
        Dir {
            unread: AtomicBool::new(false),
            path_only: true,
            ..self.child(fd, path)
        }
    }

    /// Opens the subdirectory `name` for `*at` calls only (`O_PATH`; a link is refused with
    /// `ENOTDIR`, as is a non-directory): the kernel resolves the name and opens nothing, so a
    /// FUSE backend sees a look-up, not an open and a release of the directory (on the
    /// GlusterFS volume, 6 brick operations fewer). Listing it, fsync, fchmod, fchown open it
    /// for real first; flock on it fails (`EBADF`).
    pub fn open_dir_path(&self, name: impl AsRef<OsStr>) -> Result<Dir> {
        let name = name.as_ref();
        component(&self.path, name)?;
        let p = self.sub(name);
        hit("sys::lookup", "open", &p)?;
        let fd =
            fresh(|| fd::openat(&self.fd, name, PATH_FLAGS, Mode::empty())).map_err(|e| Error::io(&p, "open", e))?;
        Ok(self.path_child(fd, p))
    }

    /// This directory opened for real when its descriptor is an `O_PATH` one (see
    /// [`Dir::open_dir_path`]); `None` when it is real already.
    pub(super) fn opened(&self) -> Result<Option<Dir>> {
        if !self.path_only {
            return Ok(None);
        }
        self.reopen().map(Some)
    }

    /// Makes an `O_PATH` descriptor (see [`Dir::open_dir_path`]) a real one, in place: for a
    /// directory looked up for `*at` calls that turns out to need a flock (a container a stat
    /// found and an open or an unlink then holds). Nothing happens to a real one.
    pub fn make_real(&mut self) -> Result<()> {
        if let Some(d) = self.opened()? {
            *self = d;
        }
        Ok(())
    }

    /// Opens the subdirectory `name` (one component; a link is refused with `ELOOP`, a
    /// non-directory with `ENOTDIR`).
    pub fn open_dir(&self, name: impl AsRef<OsStr>) -> Result<Dir> {
        let name = name.as_ref();
        component(&self.path, name)?;
        let p = self.sub(name);
        hit("sys::open", "open", &p)?;
        let fd =
            fresh(|| fd::openat(&self.fd, name, DIR_FLAGS, Mode::empty())).map_err(|e| Error::io(&p, "open", e))?;
        Ok(self.child(fd, p))
    }

    /// The directory's parent, through its own `..` entry (wherever it was renamed to).
    pub fn parent(&self) -> Result<Dir> {
        let p = self
            .path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| self.path.clone());
        let fd =
            fresh(|| fd::openat(&self.fd, "..", DIR_FLAGS, Mode::empty())).map_err(|e| Error::io(&p, "open", e))?;
        Ok(self.child(fd, p))
    }

    /// This directory opened again: a new open file description, with flock(2) locks of its own.
    pub fn reopen(&self) -> Result<Dir> {
        hit("sys::open", "open", &self.path)?;
        let fd = fresh(|| fd::openat(&self.fd, ".", DIR_FLAGS, Mode::empty()))
            .map_err(|e| Error::io(&self.path, "open", e))?;
        Ok(self.child(fd, self.path.clone()))
    }

    /// This directory again, `O_PATH` (see [`Dir::open_dir_path`]): a descriptor without the
    /// flock(2) locks of this one's open file description, which costs a FUSE backend nothing.
    pub fn reopen_path(&self) -> Result<Dir> {
        hit("sys::lookup", "open", &self.path)?;
        let fd = fresh(|| fd::openat(&self.fd, ".", PATH_FLAGS, Mode::empty()))
            .map_err(|e| Error::io(&self.path, "open", e))?;
        Ok(self.path_child(fd, self.path.clone()))
    }

    /// The descriptor number (a container's lock, handed on by `Plfs::container_locks`).
    pub fn raw_fd(&self) -> i32 {
        use rustix::fd::AsRawFd;
        self.fd.as_raw_fd()
    }

    /// [`Dir::open_dir`], `Ok(None)` when nothing is there.
    pub fn open_dir_opt(&self, name: impl AsRef<OsStr>) -> Result<Option<Dir>> {
        match self.open_dir(name) {
            Ok(d) => Ok(Some(d)),
            Err(e) if is_missing(&e) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// [`Dir::open_dir`] with the descriptor moved to the high range (kept for long).
    pub fn open_dir_kept(&self, name: impl AsRef<OsStr>) -> Result<Dir> {
        Ok(self.open_dir(name)?.kept())
    }

    /// The same directory under another display path (after it was renamed).
    pub fn with_path(mut self, path: PathBuf) -> Dir {
        self.path = path;
        self
    }

    /// The same directory, its descriptor moved to the high range ([`super::HIGH_FD`]).
    pub fn kept(mut self) -> Dir {
        self.keep();
        self
    }

    /// [`Dir::kept`] in place: for a directory found by a look-up and kept once a file is opened.
    pub fn keep(&mut self) {
        if let Some(fd) = super::high_dup(&self.fd) {
            self.fd = fd;
        }
    }

    /// Opens the directory at relative path `rel` beneath this one, refusing a symbolic link at
    /// any component: `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` where the kernel has it,
    /// else one `O_NOFOLLOW` open per component. An empty `rel` reopens this directory.
    pub fn open_dir_beneath(&self, rel: &Path) -> Result<Dir> {
        self.beneath_with(rel, false)
    }

    /// [`Dir::open_dir_beneath`] for `*at` calls only (`O_PATH`, as [`Dir::open_dir_path`]): a
    /// FUSE backend sees look-ups, not an open and a release of the directory.
    pub fn open_dir_path_beneath(&self, rel: &Path) -> Result<Dir> {
        self.beneath_with(rel, true)
    }

    fn beneath_with(&self, rel: &Path, path_only: bool) -> Result<Dir> {
        let flags = if path_only { PATH_FLAGS } else { DIR_FLAGS };
        let done = |fd: Fd, p: PathBuf| {
            if path_only {
                self.path_child(fd, p)
            } else {
                self.child(fd, p)
            }
        };
        beneath(&self.path, rel)?;
        let p = self.path.join(rel);
        // A look-up only descriptor is counted apart from real opens (a test counts those).
        hit(if path_only { "sys::lookup" } else { "sys::open" }, "open", &p)?;
        if rel.as_os_str().is_empty() {
            let fd = fd::openat(&self.fd, ".", flags, Mode::empty()).map_err(|e| Error::io(&p, "open", e))?;
            return Ok(done(fd, p));
        }
        if OPENAT2.load(Ordering::Relaxed) != 2 && rel.as_os_str().len() < PATH_MAX {
            let how = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
            let kernel = super::failpoint::answer("sys::openat2", &p).map(Err);
            match kernel.unwrap_or_else(|| fresh(|| fd::openat2(&self.fd, rel, flags, Mode::empty(), how))) {
                Ok(fd) => {
                    OPENAT2.store(1, Ordering::Relaxed);
                    return Ok(done(fd, p));
                }
                Err(Errno::NOSYS) | Err(Errno::PERM) if OPENAT2.load(Ordering::Relaxed) == 0 => {
                    OPENAT2.store(2, Ordering::Relaxed);
                }
                // A rename beneath during the lookup (EXDEV: the final "still beneath" check): walk.
                Err(Errno::AGAIN) | Err(Errno::XDEV) => {}
                Err(e) => return Err(Error::io(&p, "open", e)),
            }
        }
        let mut cur: Option<Fd> = None;
        for c in rel.components() {
            let at = cur.as_ref().map_or(self.fd.as_fd(), |f| f.as_fd());
            let fd = fd::openat(at, c.as_os_str(), flags, Mode::empty()).map_err(|e| Error::io(&p, "open", e))?;
            cur = Some(fd);
        }
        Ok(done(cur.expect("rel has components"), p))
    }

    /// [`Dir::open_dir_beneath`], `Ok(None)` when a component is missing.
    pub fn open_dir_beneath_opt(&self, rel: &Path) -> Result<Option<Dir>> {
        match self.open_dir_beneath(rel) {
            Ok(d) => Ok(Some(d)),
            Err(e) if is_missing_beneath(&e) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Opens the regular file `name` (one component). A link is refused (`ELOOP`); anything but
    /// a regular file is corruption (`EIO`), so a FIFO or device planted in a container is never
    /// read. Returns the file with the stat taken at open.
    pub fn open_file(&self, name: impl AsRef<OsStr>, access: Access) -> Result<File> {
        self.open_file_sized(name, access).map(|(f, _)| f)
    }

    /// [`Dir::open_file`], with the file's size from the fstat that checks its type.
    pub fn open_file_sized(&self, name: impl AsRef<OsStr>, access: Access) -> Result<(File, u64)> {
        let name = name.as_ref();
        component(&self.path, name)?;
        let p = self.sub(name);
        hit("sys::open", "open", &p)?;
        let mut flags = access.flags() | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY;
        // A file only read is read past the page cache where that cache can be stale
        // (`super::coherence`); a backend that refuses `O_DIRECT` is learned once.
        let mut direct = access == Access::Read
            && self
                .caps
                .direct_reads(|| super::coherence::stale_page_cache(self.fd(), self.fs_type()));
        if direct {
            flags |= OFlags::DIRECT;
        }
        let fd = match fresh(|| fd::openat(&self.fd, name, flags, Mode::empty())) {
            Err(Errno::INVAL) if direct => {
                self.caps.refuse_direct_reads();
                direct = false;
                fresh(|| fd::openat(&self.fd, name, flags - OFlags::DIRECT, Mode::empty()))
            }
            r => r,
        }
        .map_err(|e| Error::io(&p, "open", e))?;
        let st = fs::fstat(&fd).map_err(|e| Error::io(&p, "fstat", e))?;
        if !is_file(&st) {
            return Err(Error::corrupt(&p, "not a regular file"));
        }
        let size = if super::failpoint::stale_size(&p) {
            0
        } else {
            st.st_size.max(0) as u64
        };
        let mut f = File::new(fd, p);
        f.direct = direct;
        Ok((f, size))
    }

    /// [`Dir::open_file`], `Ok(None)` when nothing is there.
    pub fn open_file_opt(&self, name: impl AsRef<OsStr>, access: Access) -> Result<Option<File>> {
        match self.open_file(name, access) {
            Ok(f) => Ok(Some(f)),
            Err(e) if is_missing(&e) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Creates (or with [`Create::MayExist`] opens) the regular file `name` for reading and
    /// writing, with permission bits `mode` (the umask applies).
    pub fn create_file(&self, name: impl AsRef<OsStr>, mode: u32, how: Create) -> Result<File> {
        let name = name.as_ref();
        component(&self.path, name)?;
        let p = self.sub(name);
        hit("sys::create", "create", &p)?;
        let mut flags = OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        if how == Create::Excl {
            flags |= OFlags::EXCL;
        }
        let fd = fresh(|| fd::openat(&self.fd, name, flags, Mode::from_raw_mode(mode)))
            .map_err(|e| Error::io(&p, "create", e))?;
        Ok(File::new(fd, p))
    }

    /// Creates an empty file if nothing is there (a zero-length dropping); `Ok(false)` if the
    /// name existed. One mknod, not an open and a close: on a network file system the open
    /// file's flush and release are server round trips too (GlusterFS: 2.3 brick operations
    /// against 4). A file system that refuses mknod of a regular file gets the create.
    pub fn touch(&self, name: impl AsRef<OsStr>, mode: u32) -> Result<bool> {
        let name = name.as_ref();
        component(&self.path, name)?;
        let p = self.sub(name);
        hit("sys::create", "create", &p)?;
        let made = fresh(|| fs::mknodat(&self.fd, name, fs::FileType::RegularFile, Mode::from_raw_mode(mode), 0));
        let r = match made {
            Err(Errno::PERM | Errno::INVAL | Errno::OPNOTSUPP | Errno::NOSYS) => {
                self.create_file(name, mode, Create::Excl).map(drop)
            }
            r => r.map_err(|e| Error::io(&p, "create", e)),
        };
        match r {
            Ok(()) => Ok(true),
            Err(Error::Io {
                errno: Errno::EXIST, ..
            }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// mkdir of `name`; `EEXIST` is an error (callers decide).
    pub fn mkdir(&self, name: impl AsRef<OsStr>, mode: u32) -> Result<()> {
        let name = name.as_ref();
        component(&self.path, name)?;
        let p = self.sub(name);
        hit("sys::mkdir", "mkdir", &p)?;
        fresh(|| fs::mkdirat(&self.fd, name, Mode::from_raw_mode(mode))).map_err(|e| Error::io(&p, "mkdir", e))
    }

    /// mkdir of `name`, an existing directory being success; `Ok(true)` if this call made it.
    /// Something else than a directory at the name is `EEXIST`.
    pub fn mkdir_ok(&self, name: impl AsRef<OsStr>, mode: u32) -> Result<bool> {
        let name = name.as_ref();
        match self.mkdir(name, mode) {
            Ok(()) => Ok(true),
            Err(Error::Io {
                errno: Errno::EXIST, ..
            }) => match self.stat_opt(name)? {
                Some(st) if is_dir(&st) => Ok(false),
                _ => Err(Error::io(self.sub(name), "mkdir", Errno::EXIST)),
            },
            Err(e) => Err(e),
        }
    }

    /// mkdir of the relative path `rel` beneath this directory and of its missing parents, with
    /// the mode of each new directory; no component may be a symbolic link.
    pub fn mkdir_beneath(&self, rel: &Path, mode: u32) -> Result<Dir> {
        beneath(&self.path, rel)?;
        let mut cur: Option<Dir> = None;
        for c in rel.components() {
            let at = cur.as_ref().unwrap_or(self);
            at.mkdir_ok(c.as_os_str(), mode)?;
            cur = Some(at.open_dir(c.as_os_str())?);
        }
        match cur {
            Some(d) => Ok(d),
            None => self.open_dir_beneath(rel),
        }
    }

    /// lstat of `name` (one component; a link is reported as a link).
    pub fn stat(&self, name: impl AsRef<OsStr>) -> Result<RawStat> {
        let name = name.as_ref();
        component(&self.path, name)?;
        let p = self.sub(name);
        hit("sys::stat", "stat", &p)?;
        let mut st = fresh(|| fs::statat(&self.fd, name, NOFOLLOW)).map_err(|e| Error::io(&p, "stat", e))?;
        if super::failpoint::stale_size(&p) {
            st.st_size = 0;
        }
        Ok(st)
    }

    /// [`Dir::stat`], `Ok(None)` when nothing is there.
    pub fn stat_opt(&self, name: impl AsRef<OsStr>) -> Result<Option<RawStat>> {
        match self.stat(name) {
            Ok(s) => Ok(Some(s)),
            Err(e) if is_missing(&e) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// lstat of the relative path `rel` beneath this directory (a final link is reported as a
    /// link). `Ok(None)` when nothing is there.
    pub fn stat_beneath_opt(&self, rel: &Path) -> Result<Option<RawStat>> {
        beneath(&self.path, rel)?;
        if rel.as_os_str().len() >= PATH_MAX {
            // Too long for one call: the parent directory first, then the name.
            let (Some(parent), Some(name)) = (rel.parent(), rel.file_name()) else {
                return Ok(None);
            };
            return match self.open_dir_beneath_opt(parent)? {
                Some(d) => d.stat_opt(name),
                None => Ok(None),
            };
        }
        // The display path is built only for a failpoint or an error (a look-up's hot path).
        let p = || self.path.join(rel);
        if super::failpoint::armed() {
            match hit("sys::stat", "stat", &p()) {
                // Answered as the kernel's would be.
                Err(e) if e.raw_errno() == Errno::NOENT.raw_os_error() => return Ok(None),
                r => r?,
            }
        }
        let r = if rel.as_os_str().is_empty() {
            fs::fstat(&self.fd)
        } else {
            fresh(|| fs::statat(&self.fd, rel, NOFOLLOW))
        };
        match r {
            Ok(s) => Ok(Some(s)),
            Err(Errno::NOENT) | Err(Errno::NOTDIR) => Ok(None),
            Err(e) => Err(Error::io(p(), "stat", e)),
        }
    }

    /// fstat of the directory itself.
    pub fn fstat(&self) -> Result<RawStat> {
        if !self.fd.trusted() {
            // Its number was closed behind the core's back (`fd::lost`): what fstat of the
            // descriptor standing in for it says is not this file's.
            return Err(Error::io(&self.path, "fstat", Errno::BADF));
        }
        fs::fstat(&self.fd).map_err(|e| Error::io(&self.path, "fstat", e))
    }

    /// Creates the symbolic link `name` with contents `target` (stored verbatim, never followed).
    pub fn symlink(&self, target: &Path, name: impl AsRef<OsStr>) -> Result<()> {
        let name = name.as_ref();
        component(&self.path, name)?;
        let p = self.sub(name);
        hit("sys::create", "symlink", &p)?;
        fs::symlinkat(target, &self.fd, name).map_err(|e| Error::io(&p, "symlink", e))
    }

    /// The contents of the symbolic link `name`.
    pub fn readlink(&self, name: impl AsRef<OsStr>) -> Result<OsString> {
        let name = name.as_ref();
        component(&self.path, name)?;
        let p = self.sub(name);
        fs::readlinkat(&self.fd, name, Vec::new())
            .map(|c| OsString::from_vec(c.into_bytes()))
            .map_err(|e| Error::io(&p, "readlink", e))
    }

    /// fsync of the directory (makes creates and renames in it durable). Where the backend
    /// refuses to fsync a directory (`EINVAL`, `EOPNOTSUPP`), that is learned once and the call
    /// succeeds: such file systems commit namespace operations themselves.
    pub fn fsync(&self) -> Result<()> {
        if let Some(d) = self.opened()? {
            return d.fsync();
        }
        hit("sys::fsync", "fsync", &self.path)?;
        if !self.caps.fsync_dir() {
            return Ok(());
        }
        match fs::fsync(&self.fd) {
            Ok(()) => Ok(()),
            Err(e) if (super::unsupported(e) || e == Errno::BADF) && self.caps.learn_fsync_dir(false) => Ok(()),
            Err(e) => Err(Error::io(&self.path, "fsync", e)),
        }
    }

    /// statvfs of the file system holding this directory.
    pub fn statvfs(&self) -> Result<StatVfs> {
        fs::fstatvfs(&self.fd).map_err(|e| Error::io(&self.path, "statvfs", e))
    }

    /// A second handle on the same directory (dup), sharing the capability cache.
    pub fn try_clone(&self) -> Result<Dir> {
        let fd = fd::dupfd_cloexec(&self.fd, 0).map_err(|e| Error::io(&self.path, "dup", e))?;
        // Both share one description now: neither may list it in place.
        self.unread.store(false, Ordering::Relaxed);
        let d = self.child(fd, self.path.clone());
        d.unread.store(false, Ordering::Relaxed);
        Ok(d)
    }

    /// The directory's current path, read back from `/proc/self/fd` (it follows renames);
    /// `None` if it was deleted or /proc is not mounted.
    pub fn current_path(&self) -> Option<PathBuf> {
        use rustix::fd::AsRawFd;
        let link = format!("/proc/self/fd/{}", self.fd.as_raw_fd());
        match fs::readlink(link.as_str(), Vec::new()) {
            Ok(p) if !p.as_bytes().ends_with(b" (deleted)") => Some(PathBuf::from(OsString::from_vec(p.into_bytes()))),
            _ => None,
        }
    }

    /// Writes `data` to `name` atomically: a temporary sibling (`tmp_prefix`, `name`, a random
    /// number: the caller's prefix tells its debris from its files), fsync, rename over `name`.
    pub fn write_atomic_via(&self, tmp_prefix: &str, name: impl AsRef<OsStr>, data: &[u8], mode: u32) -> Result<()> {
        let name = name.as_ref();
        let tmp = format!("{tmp_prefix}{}.{}", name.to_string_lossy(), crate::clock::random_u64());
        let f = self.create_file(&tmp, mode, Create::Excl)?;
        let r = f
            .pwrite_all(data, 0)
            .and_then(|()| f.fsync())
            .and_then(|()| self.rename(&tmp, self, name));
        if r.is_err() {
            let _ = self.unlink_opt(&tmp);
        }
        r
    }
}

/// True for an error meaning "nothing is there" (`ENOENT`).
pub fn is_missing(e: &Error) -> bool {
    matches!(
        e,
        Error::Io {
            errno: Errno::NOENT,
            ..
        }
    )
}

/// [`is_missing`], or `ENOTDIR` (a path through a file: nothing can be there).
fn is_missing_beneath(e: &Error) -> bool {
    is_missing(e)
        || matches!(
            e,
            Error::Io {
                errno: Errno::NOTDIR,
                ..
            }
        )
}
