//! Backend I/O through raw system calls (rustix, linux_raw backend). Nothing here calls an
//! interposable libc symbol, so the LD_PRELOAD library never sees the core's own I/O.
//! Every function maps failures to [`Error::Io`] naming the path and the operation.

use crate::error::{Error, Result};
use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{self, AtFlags, Mode, OFlags};
use rustix::io::Errno;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::Path;

pub use rustix::fs::Stat as RawStat;

/// Opens a file.
pub fn open(path: &Path, flags: OFlags, mode: u32) -> Result<OwnedFd> {
    if flags.contains(OFlags::CREATE) {
        crate::failpoint::hit("sys::create", "open", path)?;
    }
    fs::open(path, flags | OFlags::CLOEXEC, Mode::from_raw_mode(mode)).map_err(|e| Error::io(path, "open", e))
}

/// Lowest descriptor number the core keeps its long-lived descriptors at. Programs that take over
/// fixed numbers (a shell's `exec 3>file`, `dup2(x, 5)`) then never close ours by accident.
pub const HIGH_FD: i32 = 512;

/// Moves a descriptor to [`HIGH_FD`] or above (close-on-exec); keeps it where it is if the
/// descriptor limit is lower than that.
pub fn high(fd: OwnedFd) -> OwnedFd {
    use rustix::fd::AsRawFd;
    if fd.as_raw_fd() >= HIGH_FD {
        return fd;
    }
    rustix::io::fcntl_dupfd_cloexec(&fd, HIGH_FD).unwrap_or(fd)
}

/// Creates a new file exclusively (fails with EEXIST) and writes `data` to it.
pub fn create_file_with(path: &Path, data: &[u8], mode: u32) -> Result<()> {
    let fd = open(path, OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL, mode)?;
    pwrite_all(&fd, path, data, 0)
}

/// Creates an empty file if it does not exist (zero-length droppings).
pub fn touch(path: &Path, mode: u32) -> Result<()> {
    open(path, OFlags::WRONLY | OFlags::CREATE, mode).map(drop)
}

/// Reads a whole (small) file.
pub fn read_file(path: &Path) -> Result<Vec<u8>> {
    let fd = open(path, OFlags::RDONLY, 0)?;
    let mut out = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = rustix::io::read(&fd, &mut buf).map_err(|e| Error::io(path, "read", e))?;
        if n == 0 {
            return Ok(out);
        }
        out.extend_from_slice(&buf[..n]);
    }
}

/// Positional read that fills as much of `buf` as the file has; returns bytes read.
pub fn pread_full(fd: impl AsFd, path: &Path, buf: &mut [u8], off: u64) -> Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match rustix::io::pread(fd.as_fd(), &mut buf[done..], off + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(Errno::INTR) => continue,
            Err(e) => return Err(Error::io(path, "pread", e)),
        }
    }
    Ok(done)
}

/// Positional write of all of `data`.
pub fn pwrite_all(fd: impl AsFd, path: &Path, data: &[u8], off: u64) -> Result<()> {
    crate::failpoint::hit("sys::pwrite_all", "pwrite", path)?;
    let mut done = 0;
    while done < data.len() {
        match rustix::io::pwrite(fd.as_fd(), &data[done..], off + done as u64) {
            Ok(0) => return Err(Error::io(path, "pwrite", Errno::NOSPC)),
            Ok(n) => done += n,
            Err(Errno::INTR) => continue,
            Err(e) => return Err(Error::io(path, "pwrite", e)),
        }
    }
    Ok(())
}

/// fsync.
pub fn fsync(fd: impl AsFd, path: &Path) -> Result<()> {
    crate::failpoint::hit("sys::fsync", "fsync", path)?;
    fs::fsync(fd).map_err(|e| Error::io(path, "fsync", e))
}

/// fsync of a directory (makes creates and renames in it durable).
pub fn fsync_dir(path: &Path) -> Result<()> {
    let fd = open(path, OFlags::RDONLY | OFlags::DIRECTORY, 0)?;
    fsync(&fd, path)
}

/// lstat; `Ok(None)` when the path does not exist.
pub fn lstat_opt(path: &Path) -> Result<Option<RawStat>> {
    match fs::lstat(path) {
        Ok(s) => Ok(Some(s)),
        Err(Errno::NOENT) | Err(Errno::NOTDIR) => Ok(None),
        Err(e) => Err(Error::io(path, "lstat", e)),
    }
}

/// lstat.
pub fn lstat(path: &Path) -> Result<RawStat> {
    fs::lstat(path).map_err(|e| Error::io(path, "lstat", e))
}

/// fstat.
pub fn fstat(fd: impl AsFd, path: &Path) -> Result<RawStat> {
    fs::fstat(fd).map_err(|e| Error::io(path, "fstat", e))
}

/// mkdir; EEXIST is reported as an error (callers decide).
pub fn mkdir(path: &Path, mode: u32) -> Result<()> {
    crate::failpoint::hit("sys::mkdir", "mkdir", path)?;
    fs::mkdir(path, Mode::from_raw_mode(mode)).map_err(|e| Error::io(path, "mkdir", e))
}

/// mkdir that treats an existing directory as success.
pub fn mkdir_exist_ok(path: &Path, mode: u32) -> Result<()> {
    crate::failpoint::hit("sys::mkdir", "mkdir", path)?;
    match fs::mkdir(path, Mode::from_raw_mode(mode)) {
        Ok(()) | Err(Errno::EXIST) => Ok(()),
        Err(e) => Err(Error::io(path, "mkdir", e)),
    }
}

/// mkdir -p.
pub fn mkdir_all(path: &Path, mode: u32) -> Result<()> {
    crate::failpoint::hit("sys::mkdir", "mkdir", path)?;
    match fs::mkdir(path, Mode::from_raw_mode(mode)) {
        Ok(()) | Err(Errno::EXIST) => Ok(()),
        Err(Errno::NOENT) => {
            if let Some(parent) = path.parent() {
                mkdir_all(parent, mode)?;
            }
            mkdir_exist_ok(path, mode)
        }
        Err(e) => Err(Error::io(path, "mkdir", e)),
    }
}

/// rmdir.
pub fn rmdir(path: &Path) -> Result<()> {
    fs::rmdir(path).map_err(|e| Error::io(path, "rmdir", e))
}

/// unlink.
pub fn unlink(path: &Path) -> Result<()> {
    crate::failpoint::hit("sys::unlink", "unlink", path)?;
    fs::unlink(path).map_err(|e| Error::io(path, "unlink", e))
}

/// unlink that treats a missing file as success.
pub fn unlink_missing_ok(path: &Path) -> Result<()> {
    crate::failpoint::hit("sys::unlink", "unlink", path)?;
    match fs::unlink(path) {
        Ok(()) | Err(Errno::NOENT) => Ok(()),
        Err(e) => Err(Error::io(path, "unlink", e)),
    }
}

/// rename(2).
pub fn rename(from: &Path, to: &Path) -> Result<()> {
    crate::failpoint::hit("sys::rename", "rename", from)?;
    fs::rename(from, to).map_err(|e| Error::io(from, "rename", e))
}

/// rename without replacing an existing target (EEXIST if `to` exists).
pub fn rename_noreplace(from: &Path, to: &Path) -> Result<()> {
    crate::failpoint::hit("sys::rename", "rename", from)?;
    fs::renameat_with(fs::CWD, from, fs::CWD, to, fs::RenameFlags::NOREPLACE).map_err(|e| Error::io(from, "rename", e))
}

/// ftruncate.
pub fn ftruncate(fd: impl AsFd, path: &Path, len: u64) -> Result<()> {
    crate::failpoint::hit("sys::ftruncate", "ftruncate", path)?;
    fs::ftruncate(fd, len).map_err(|e| Error::io(path, "ftruncate", e))
}

/// Lists a directory (without `.` and `..`).
pub fn read_dir(path: &Path) -> Result<Vec<OsString>> {
    let fd = open(path, OFlags::RDONLY | OFlags::DIRECTORY, 0)?;
    let dir = fs::Dir::read_from(&fd).map_err(|e| Error::io(path, "opendir", e))?;
    let mut out = Vec::new();
    for ent in dir {
        let ent = ent.map_err(|e| Error::io(path, "readdir", e))?;
        let name = ent.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        out.push(OsString::from_vec(name.to_vec()));
    }
    Ok(out)
}

/// Lists a directory; a missing directory lists as empty.
pub fn read_dir_opt(path: &Path) -> Result<Vec<OsString>> {
    match read_dir(path) {
        Err(Error::Io {
            errno: Errno::NOENT, ..
        }) => Ok(Vec::new()),
        r => r,
    }
}

/// Removes a directory tree (files, symlinks and subdirectories). Missing is success.
pub fn remove_tree(path: &Path) -> Result<()> {
    match lstat_opt(path)? {
        None => Ok(()),
        Some(st) if FileType::from_raw_mode(st.st_mode) == FileType::Directory => {
            for name in read_dir_opt(path)? {
                remove_tree(&path.join(name))?;
            }
            match fs::rmdir(path) {
                Ok(()) | Err(Errno::NOENT) => Ok(()),
                Err(e) => Err(Error::io(path, "rmdir", e)),
            }
        }
        Some(_) => unlink_missing_ok(path),
    }
}

pub use rustix::fs::FileType;

/// chmod.
pub fn chmod(path: &Path, mode: u32) -> Result<()> {
    fs::chmod(path, Mode::from_raw_mode(mode)).map_err(|e| Error::io(path, "chmod", e))
}

/// lchown (uid/gid of `u32::MAX` leave that id unchanged).
pub fn lchown(path: &Path, uid: u32, gid: u32) -> Result<()> {
    let u = (uid != u32::MAX).then(|| rustix::fs::Uid::from_raw(uid));
    let g = (gid != u32::MAX).then(|| rustix::fs::Gid::from_raw(gid));
    fs::chownat(fs::CWD, path, u, g, AtFlags::SYMLINK_NOFOLLOW).map_err(|e| Error::io(path, "chown", e))
}

/// Timestamp argument for [`utimens`]: `None` = now, `Some((sec, nsec))`; `omit` leaves it unchanged.
#[derive(Debug, Clone, Copy)]
pub enum TimeSpec {
    /// Set to the current time.
    Now,
    /// Leave unchanged.
    Omit,
    /// Set to this time.
    At(i64, i64),
}

fn ts(t: TimeSpec) -> fs::Timespec {
    match t {
        TimeSpec::Now => fs::Timespec {
            tv_sec: 0,
            tv_nsec: fs::UTIME_NOW,
        },
        TimeSpec::Omit => fs::Timespec {
            tv_sec: 0,
            tv_nsec: fs::UTIME_OMIT,
        },
        TimeSpec::At(s, n) => fs::Timespec {
            tv_sec: s,
            tv_nsec: n as _,
        },
    }
}

/// The `utimensat` argument for an access and a modification time.
pub fn timestamps(atime: TimeSpec, mtime: TimeSpec) -> fs::Timestamps {
    fs::Timestamps {
        last_access: ts(atime),
        last_modification: ts(mtime),
    }
}

/// utimensat on a path (does not follow a final symlink when `nofollow`).
pub fn utimens(path: &Path, atime: TimeSpec, mtime: TimeSpec, nofollow: bool) -> Result<()> {
    let times = timestamps(atime, mtime);
    let flags = if nofollow {
        AtFlags::SYMLINK_NOFOLLOW
    } else {
        AtFlags::empty()
    };
    fs::utimensat(fs::CWD, path, &times, flags).map_err(|e| Error::io(path, "utimensat", e))
}

/// symlink(target, linkpath).
pub fn symlink(target: &Path, link: &Path) -> Result<()> {
    fs::symlink(target, link).map_err(|e| Error::io(link, "symlink", e))
}

/// readlink.
pub fn readlink(path: &Path) -> Result<OsString> {
    fs::readlink(path, Vec::new())
        .map(|c| OsString::from_vec(c.into_bytes()))
        .map_err(|e| Error::io(path, "readlink", e))
}

/// access(2) with the real ids, mode bits R_OK=4, W_OK=2, X_OK=1, F_OK=0.
pub fn access(path: &Path, mode: u32) -> Result<()> {
    fs::access(path, fs::Access::from_bits_truncate(mode)).map_err(|e| Error::io(path, "access", e))
}

/// statvfs of the file system holding `path`.
pub fn statvfs(path: &Path) -> Result<fs::StatVfs> {
    fs::statvfs(path).map_err(|e| Error::io(path, "statvfs", e))
}

/// Writes `data` to `path` atomically: a temporary sibling, fsync, rename.
pub fn write_atomic(path: &Path, data: &[u8], mode: u32) -> Result<()> {
    let tmp = path.with_file_name(format!(
        "{}{}.{}",
        crate::format::TMP_PREFIX,
        path.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        crate::clock::random_u64()
    ));
    let fd = open(&tmp, OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL, mode)?;
    let r = pwrite_all(&fd, &tmp, data, 0)
        .and_then(|()| fsync(&fd, &tmp))
        .and_then(|()| rename(&tmp, path));
    if r.is_err() {
        let _ = unlink_missing_ok(&tmp);
    }
    r
}
