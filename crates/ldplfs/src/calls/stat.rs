//! The stat family (every glibc generation: stat/fstat/lstat/fstatat and their 64 forms, the
//! __xstat versioned names, statx) and statfs/statvfs, which report a plain ext2-type file
//! system so ROMIO picks its generic UFS driver.

use crate::fd::conf::plfs;
use crate::fd::entry::{file_of, Entry, Kind};
use crate::fd::paths::{classify_c, fd_link_c, follow, Followed, Target};
use crate::fd::table::ours;
use crate::file::init::{enter, serve_fd};
use crate::rt::errno::{Errno, Res};
use crate::rt::guard::run;
use libc::{c_char, c_int, c_uint};
use plfs_core::types::CTime;
use plfs_core::{FileKind, Stat};
use std::path::Path;

/// EXT2_SUPER_MAGIC: a type ROMIO treats as a generic UFS file system.
const FS_MAGIC: libc::c_long = 0xEF53;

/// Fills a `struct stat` (== `struct stat64` on the supported targets) as the C API does: from
/// the core's [`Stat::c_stat`] through [`plfs_core::fill_c_stat`] (values that do not fit are
/// saturated there).
pub fn fill_stat(s: &Stat, out: *mut libc::stat) -> Res<()> {
    if out.is_null() {
        return Err(Errno(libc::EFAULT));
    }
    // SAFETY: an all-zero struct stat is valid.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    plfs_core::fill_c_stat!(st, s.c_stat());
    // SAFETY: `out` is the caller's non-null stat buffer.
    unsafe { *out = st };
    Ok(())
}

/// Fills a `struct statx` with the values [`fill_stat`] gives (the core's [`Stat::c_stat`]), so
/// that stat and statx agree: a size beyond `i64::MAX` is `i64::MAX` here too (a kernel's
/// `stx_size` never exceeds it either), and a link count or block size is saturated, not cut.
fn fill_statx(s: &Stat, out: *mut libc::statx) -> Res<()> {
    if out.is_null() {
        return Err(Errno(libc::EFAULT));
    }
    let c = s.c_stat();
    // SAFETY: an all-zero struct statx is valid.
    let mut x: libc::statx = unsafe { std::mem::zeroed() };
    x.stx_mask = libc::STATX_BASIC_STATS;
    // The signed values of `c` are never negative: their unsigned_abs is the value.
    x.stx_blksize = c.blksize.unsigned_abs();
    x.stx_nlink = c.nlink;
    x.stx_uid = c.uid;
    x.stx_gid = c.gid;
    // The file type and permission bits, all within 16 bits.
    x.stx_mode = c.mode as u16;
    x.stx_ino = c.ino;
    x.stx_size = c.size.unsigned_abs();
    x.stx_blocks = c.blocks.unsigned_abs();
    let ts = |t: CTime| {
        // SAFETY: an all-zero statx_timestamp is valid.
        let mut x: libc::statx_timestamp = unsafe { std::mem::zeroed() };
        x.tv_sec = t.sec;
        // In 0..1_000_000_000.
        x.tv_nsec = t.nsec as u32;
        x
    };
    x.stx_atime = ts(c.atime);
    x.stx_mtime = ts(c.mtime);
    x.stx_ctime = ts(c.ctime);
    x.stx_dev_major = libc::major(s.dev);
    x.stx_dev_minor = libc::minor(s.dev);
    // SAFETY: `out` is the caller's non-null statx buffer.
    unsafe { *out = x };
    Ok(())
}

/// Attributes of an open PLFS descriptor.
pub fn stat_entry(e: &Entry) -> Res<Stat> {
    let plfs = plfs()?;
    match e.kind {
        Kind::File => {
            let mut st = e.lock();
            let f = file_of(e, &mut st)?;
            // Plfs::stat and Plfs::fstat report the same inode (the container directory's), so
            // tools that compare stat with fstat (cp) see one file.
            Ok(plfs.fstat(f)?)
        }
        Kind::Dir | Kind::Path => Ok(plfs.stat(&e.path)?),
    }
}

/// Result of a path stat: PLFS attributes, or a path libc must handle.
enum PathStat {
    Plfs(Stat),
    Real(std::ffi::CString),
}

fn stat_path(p: &Path, nofollow: bool) -> Res<PathStat> {
    if nofollow {
        return Ok(PathStat::Plfs(plfs()?.stat(p)?));
    }
    match follow(p.to_path_buf())? {
        Followed::Plfs(_, Some(st)) => Ok(PathStat::Plfs(st)),
        Followed::Plfs(_, None) => Err(Errno(libc::ENOENT)),
        Followed::Real(c) => Ok(PathStat::Real(c)),
    }
}

fn real_fstatat(dirfd: c_int, path: *const c_char, buf: *mut libc::stat, flags: c_int) -> c_int {
    crate::real!(fstatat(dirfd, path, buf, flags): fn(c_int, *const c_char, *mut libc::stat, c_int) -> c_int)
}

/// The common fstatat: PLFS paths, PLFS descriptors (AT_EMPTY_PATH), else libc.
unsafe fn fstatat_impl(dirfd: c_int, path: *const c_char, buf: *mut libc::stat, flags: c_int) -> c_int {
    if let Some(_busy) = enter() {
        // SAFETY: `path` is NULL or the caller's C string.
        let empty = !path.is_null() && unsafe { *path } == 0;
        if empty && flags & libc::AT_EMPTY_PATH != 0 {
            if let Some(e) = ours(dirfd) {
                return run(|| stat_entry(&e).and_then(|s| fill_stat(&s, buf)).map(|()| 0));
            }
        } else if let Some(e) = (flags & libc::AT_SYMLINK_NOFOLLOW == 0)
            .then(|| {
                // SAFETY: as above.
                unsafe { fd_link_c(path) }
            })
            .flatten()
        {
            // `/dev/fd/N` of a PLFS descriptor, followed: the PLFS file (an unlinked one too).
            return run(|| stat_entry(&e).and_then(|s| fill_stat(&s, buf)).map(|()| 0));
        } else {
            // SAFETY: as above.
            match unsafe { classify_c(dirfd, path) } {
                Target::Plfs(p) => {
                    return run(|| match stat_path(&p, flags & libc::AT_SYMLINK_NOFOLLOW != 0)? {
                        PathStat::Plfs(s) => fill_stat(&s, buf).map(|()| 0),
                        PathStat::Real(c) => match real_fstatat(libc::AT_FDCWD, c.as_ptr(), buf, flags) {
                            0 => Ok(0),
                            _ => Err(Errno(crate::rt::errno::errno())),
                        },
                    })
                }
                Target::Real(c) => return real_fstatat(libc::AT_FDCWD, c.as_ptr(), buf, flags),
                Target::Pass => {}
            }
        }
    }
    real_fstatat(dirfd, path, buf, flags)
}

unsafe fn fstat_impl(fd: c_int, buf: *mut libc::stat) -> c_int {
    if let Some(r) = serve_fd(fd, |e| stat_entry(&e).and_then(|s| fill_stat(&s, buf)).map(|()| 0)) {
        return r;
    }
    crate::real!(fstat(fd, buf): fn(c_int, *mut libc::stat) -> c_int)
}

macro_rules! stat_names {
    ($($(#[$m:meta])* $name:ident($($a:ident: $t:ty),*) => $call:expr;)*) => {$(
        $(#[$m])*
        #[no_mangle]
        pub unsafe extern "C" fn $name($($a: $t),*) -> c_int {
            // SAFETY: forwarded caller arguments.
            unsafe { $call }
        }
    )*};
}

stat_names! {
    /// stat(2) (glibc 2.33+ symbol).
    stat(p: *const c_char, b: *mut libc::stat) => fstatat_impl(libc::AT_FDCWD, p, b, 0);
    /// stat64.
    stat64(p: *const c_char, b: *mut libc::stat) => fstatat_impl(libc::AT_FDCWD, p, b, 0);
    /// lstat(2).
    lstat(p: *const c_char, b: *mut libc::stat) => fstatat_impl(libc::AT_FDCWD, p, b, libc::AT_SYMLINK_NOFOLLOW);
    /// lstat64.
    lstat64(p: *const c_char, b: *mut libc::stat) => fstatat_impl(libc::AT_FDCWD, p, b, libc::AT_SYMLINK_NOFOLLOW);
    /// fstat(2).
    fstat(fd: c_int, b: *mut libc::stat) => fstat_impl(fd, b);
    /// fstat64.
    fstat64(fd: c_int, b: *mut libc::stat) => fstat_impl(fd, b);
    /// fstatat(2).
    fstatat(d: c_int, p: *const c_char, b: *mut libc::stat, f: c_int) => fstatat_impl(d, p, b, f);
    /// fstatat64.
    fstatat64(d: c_int, p: *const c_char, b: *mut libc::stat, f: c_int) => fstatat_impl(d, p, b, f);
    /// Old versioned stat (binaries built against glibc < 2.33).
    __xstat(_v: c_int, p: *const c_char, b: *mut libc::stat) => fstatat_impl(libc::AT_FDCWD, p, b, 0);
    /// Old versioned stat64.
    __xstat64(_v: c_int, p: *const c_char, b: *mut libc::stat) => fstatat_impl(libc::AT_FDCWD, p, b, 0);
    /// Old versioned lstat.
    __lxstat(_v: c_int, p: *const c_char, b: *mut libc::stat) => fstatat_impl(libc::AT_FDCWD, p, b, libc::AT_SYMLINK_NOFOLLOW);
    /// Old versioned lstat64.
    __lxstat64(_v: c_int, p: *const c_char, b: *mut libc::stat) => fstatat_impl(libc::AT_FDCWD, p, b, libc::AT_SYMLINK_NOFOLLOW);
    /// Old versioned fstat.
    __fxstat(_v: c_int, fd: c_int, b: *mut libc::stat) => fstat_impl(fd, b);
    /// Old versioned fstat64.
    __fxstat64(_v: c_int, fd: c_int, b: *mut libc::stat) => fstat_impl(fd, b);
    /// Old versioned fstatat.
    __fxstatat(_v: c_int, d: c_int, p: *const c_char, b: *mut libc::stat, f: c_int) => fstatat_impl(d, p, b, f);
    /// Old versioned fstatat64.
    __fxstatat64(_v: c_int, d: c_int, p: *const c_char, b: *mut libc::stat, f: c_int) => fstatat_impl(d, p, b, f);
}

/// statx(2).
#[no_mangle]
pub unsafe extern "C" fn statx(
    dirfd: c_int,
    path: *const c_char,
    flags: c_int,
    mask: c_uint,
    buf: *mut libc::statx,
) -> c_int {
    if let Some(_busy) = enter() {
        // SAFETY: `path` is NULL or the caller's C string.
        let empty = !path.is_null() && unsafe { *path } == 0;
        if empty && flags & libc::AT_EMPTY_PATH != 0 {
            if let Some(e) = ours(dirfd) {
                return run(|| stat_entry(&e).and_then(|s| fill_statx(&s, buf)).map(|()| 0));
            }
        } else if let Some(e) = (flags & libc::AT_SYMLINK_NOFOLLOW == 0)
            .then(|| {
                // SAFETY: as above.
                unsafe { fd_link_c(path) }
            })
            .flatten()
        {
            // `/dev/fd/N` of a PLFS descriptor, followed: the PLFS file (an unlinked one too).
            return run(|| stat_entry(&e).and_then(|s| fill_statx(&s, buf)).map(|()| 0));
        } else {
            // SAFETY: as above.
            match unsafe { classify_c(dirfd, path) } {
                Target::Plfs(p) => {
                    return run(|| match stat_path(&p, flags & libc::AT_SYMLINK_NOFOLLOW != 0)? {
                        PathStat::Plfs(s) => fill_statx(&s, buf).map(|()| 0),
                        PathStat::Real(c) => {
                            match crate::real!(statx(libc::AT_FDCWD, c.as_ptr(), flags, mask, buf): fn(c_int, *const c_char, c_int, c_uint, *mut libc::statx) -> c_int)
                            {
                                0 => Ok(0),
                                _ => Err(Errno(crate::rt::errno::errno())),
                            }
                        }
                    })
                }
                Target::Real(c) => {
                    return crate::real!(statx(libc::AT_FDCWD, c.as_ptr(), flags, mask, buf): fn(c_int, *const c_char, c_int, c_uint, *mut libc::statx) -> c_int)
                }
                Target::Pass => {}
            }
        }
    }
    crate::real!(statx(dirfd, path, flags, mask, buf): fn(c_int, *const c_char, c_int, c_uint, *mut libc::statx) -> c_int)
}

fn vfs_of(p: &Path) -> Res<rustix::fs::StatVfs> {
    Ok(plfs()?.statvfs(p)?)
}

fn fill_statfs(v: &rustix::fs::StatVfs, out: *mut libc::statfs) -> Res<c_int> {
    if out.is_null() {
        return Err(Errno(libc::EFAULT));
    }
    // SAFETY: an all-zero statfs is valid.
    let mut s: libc::statfs = unsafe { std::mem::zeroed() };
    s.f_type = FS_MAGIC;
    s.f_bsize = v.f_bsize as _;
    s.f_frsize = v.f_frsize as _;
    s.f_blocks = v.f_blocks;
    s.f_bfree = v.f_bfree;
    s.f_bavail = v.f_bavail;
    s.f_files = v.f_files;
    s.f_ffree = v.f_ffree;
    s.f_namelen = v.f_namemax as _;
    // SAFETY: `out` is the caller's non-null buffer.
    unsafe { *out = s };
    Ok(0)
}

fn fill_statvfs(v: &rustix::fs::StatVfs, out: *mut libc::statvfs) -> Res<c_int> {
    if out.is_null() {
        return Err(Errno(libc::EFAULT));
    }
    // SAFETY: an all-zero statvfs is valid.
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    s.f_bsize = v.f_bsize as _;
    s.f_frsize = v.f_frsize as _;
    s.f_blocks = v.f_blocks;
    s.f_bfree = v.f_bfree;
    s.f_bavail = v.f_bavail;
    s.f_files = v.f_files;
    s.f_ffree = v.f_ffree;
    s.f_favail = v.f_favail;
    s.f_fsid = v.f_fsid as _;
    s.f_namemax = v.f_namemax as _;
    // SAFETY: `out` is the caller's non-null buffer.
    unsafe { *out = s };
    Ok(0)
}

macro_rules! fs_wrappers {
    ($($(#[$m:meta])* $name:ident, $fname:ident, $ty:ty, $fill:ident;)*) => {$(
        $(#[$m])*
        #[no_mangle]
        pub unsafe extern "C" fn $name(path: *const c_char, buf: *mut $ty) -> c_int {
            if let Some(_busy) = enter() {
                // SAFETY: the caller's C string.
                match unsafe { classify_c(libc::AT_FDCWD, path) } {
                    Target::Plfs(p) => return run(|| $fill(&vfs_of(&p)?, buf)),
                    Target::Real(c) => return crate::real!($name(c.as_ptr(), buf): fn(*const c_char, *mut $ty) -> c_int),
                    Target::Pass => {}
                }
            }
            crate::real!($name(path, buf): fn(*const c_char, *mut $ty) -> c_int)
        }
        /// The descriptor form.
        #[no_mangle]
        pub unsafe extern "C" fn $fname(fd: c_int, buf: *mut $ty) -> c_int {
            if let Some(r) = serve_fd(fd, |e| $fill(&vfs_of(&e.path)?, buf)) {
                return r;
            }
            crate::real!($fname(fd, buf): fn(c_int, *mut $ty) -> c_int)
        }
    )*};
}

fs_wrappers! {
    /// statfs(2): PLFS reports an ext2-type file system.
    statfs, fstatfs, libc::statfs, fill_statfs;
    /// statfs64.
    statfs64, fstatfs64, libc::statfs, fill_statfs;
    /// statvfs(3).
    statvfs, fstatvfs, libc::statvfs, fill_statvfs;
    /// statvfs64.
    statvfs64, fstatvfs64, libc::statvfs, fill_statvfs;
}

/// True if `p` names an existing PLFS directory (after following links).
pub fn is_dir(p: &Path) -> Res<bool> {
    Ok(matches!(follow(p.to_path_buf())?, Followed::Plfs(_, Some(s)) if s.kind == FileKind::Dir))
}

#[cfg(test)]
mod tests {
    use super::*;
    use plfs_core::FileKind;

    /// What a damaged container could claim: a size, block count and link count beyond what a
    /// `struct stat` holds.
    fn damaged() -> Stat {
        Stat {
            kind: FileKind::File,
            mode: 0o100640,
            uid: 7,
            gid: 8,
            size: u64::MAX,
            blocks: u64::MAX,
            blksize: 1 << 20,
            atime_ns: 1_500_000_000_123_456_789,
            mtime_ns: -1,
            ctime_ns: 0,
            ino: 99,
            dev: 3,
            nlink: (1 << 32) + 1,
        }
    }

    /// A size beyond `i64::MAX` (only a damaged container claims one) is clamped, as the C API
    /// does, never wrapped to a negative `st_size` (issue 25, item 15).
    #[test]
    fn sizes_beyond_off_t_are_clamped() {
        let s = damaged();
        // SAFETY: an all-zero struct stat is valid.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        fill_stat(&s, &mut st).unwrap();
        assert_eq!((st.st_size, st.st_blocks), (i64::MAX, i64::MAX));
    }

    /// statx gives what stat gives: a size beyond `i64::MAX` clamped (it was passed on whole), a
    /// link count beyond `u32::MAX` saturated (it was cut to its low 32 bits), times split alike.
    #[test]
    fn statx_agrees_with_stat_on_what_does_not_fit() {
        let s = damaged();
        // SAFETY: all-zero struct stat and statx are valid.
        let (mut st, mut x): (libc::stat, libc::statx) = unsafe { (std::mem::zeroed(), std::mem::zeroed()) };
        fill_stat(&s, &mut st).unwrap();
        fill_statx(&s, &mut x).unwrap();
        assert_eq!((x.stx_size, x.stx_blocks), (i64::MAX as u64, i64::MAX as u64));
        assert_eq!((x.stx_nlink, x.stx_blksize, x.stx_mode), (u32::MAX, 1 << 20, 0o100640));
        assert_eq!((x.stx_uid, x.stx_gid, x.stx_ino), (7, 8, 99));
        assert_eq!((x.stx_atime.tv_sec, x.stx_atime.tv_nsec), (1_500_000_000, 123_456_789));
        assert_eq!((x.stx_mtime.tv_sec, x.stx_mtime.tv_nsec), (-1, 999_999_999));
        assert_eq!((st.st_size as u64, st.st_blocks as u64), (x.stx_size, x.stx_blocks));
    }
}
