//! Attributes of PLFS paths and descriptors: chmod/chown/utimes families, truncate, and
//! extended attributes (ENOTSUP: PLFS has none; listxattr reports an empty list).

use crate::calls::ns::path_call;
use crate::fd::conf;
use crate::fd::entry::{file_of, Entry, Kind};
use crate::fd::paths::{classify_c, follow, Followed, Target};
use crate::fd::table::ours;
use crate::file::init::{enter, serve_fd};
use crate::rt::errno::{Errno, Res};
use crate::rt::guard::run;
use libc::{c_char, c_int, c_void, gid_t, mode_t, size_t, ssize_t, uid_t};
use plfs_core::TimeSpec;
use std::path::PathBuf;

fn plfs() -> Res<&'static plfs_core::Plfs> {
    conf::plfs()
}

/// Follows links unless `nofollow`; a link out of the mount is an error here (rare).
fn target(p: PathBuf, nofollow: bool) -> Res<PathBuf> {
    if nofollow {
        return Ok(p);
    }
    match follow(p)? {
        Followed::Plfs(p, _) => Ok(p),
        Followed::Real(_) => Err(Errno(libc::EXDEV)),
    }
}

/// An attribute change of descriptor `e`: a regular file's through the file it has open (a
/// rename or an unlink since does not matter, as on a local file system; no look-up), a
/// directory's by its path.
fn on_fd(
    e: &Entry,
    file: impl FnOnce(&plfs_core::Plfs, &plfs_core::OpenFile) -> plfs_core::Result<()>,
    path: impl FnOnce(PathBuf) -> Res<c_int>,
) -> Res<c_int> {
    if e.kind != Kind::File {
        return path(e.path.clone());
    }
    let plfs = plfs()?;
    let mut st = e.lock();
    file(plfs, file_of(e, &mut st)?)?;
    Ok(0)
}

fn chmod_p(p: PathBuf, mode: mode_t, nofollow: bool) -> Res<c_int> {
    plfs()?.chmod(&target(p, nofollow)?, mode)?;
    Ok(0)
}

fn chown_p(p: PathBuf, uid: uid_t, gid: gid_t, nofollow: bool) -> Res<c_int> {
    plfs()?.chown(&target(p, nofollow)?, uid, gid)?;
    Ok(0)
}

path_call!(/// chmod(2).
    fn chmod(dirfd = libc::AT_FDCWD; path: *const c_char, mode: mode_t) -> c_int,
    real = |rp| crate::real!(chmod(rp, mode): fn(*const c_char, mode_t) -> c_int), plfs = |p| chmod_p(p, mode, false));
path_call!(/// chown(2).
    fn chown(dirfd = libc::AT_FDCWD; path: *const c_char, uid: uid_t, gid: gid_t) -> c_int,
    real = |rp| crate::real!(chown(rp, uid, gid): fn(*const c_char, uid_t, gid_t) -> c_int), plfs = |p| chown_p(p, uid, gid, false));
path_call!(/// lchown(2).
    fn lchown(dirfd = libc::AT_FDCWD; path: *const c_char, uid: uid_t, gid: gid_t) -> c_int,
    real = |rp| crate::real!(lchown(rp, uid, gid): fn(*const c_char, uid_t, gid_t) -> c_int), plfs = |p| chown_p(p, uid, gid, true));

/// fchmodat(2).
#[no_mangle]
pub unsafe extern "C" fn fchmodat(dirfd: c_int, path: *const c_char, mode: mode_t, flags: c_int) -> c_int {
    if let Some(_busy) = enter() {
        // SAFETY: the caller's C string.
        match unsafe { classify_c(dirfd, path) } {
            Target::Plfs(p) => return run(|| chmod_p(p, mode, flags & libc::AT_SYMLINK_NOFOLLOW != 0)),
            Target::Real(c) => {
                return crate::real!(fchmodat(libc::AT_FDCWD, c.as_ptr(), mode, flags): fn(c_int, *const c_char, mode_t, c_int) -> c_int)
            }
            Target::Pass => {}
        }
    }
    crate::real!(fchmodat(dirfd, path, mode, flags): fn(c_int, *const c_char, mode_t, c_int) -> c_int)
}

/// fchownat(2).
#[no_mangle]
pub unsafe extern "C" fn fchownat(dirfd: c_int, path: *const c_char, uid: uid_t, gid: gid_t, flags: c_int) -> c_int {
    if let Some(_busy) = enter() {
        // SAFETY: the caller's C string.
        let empty = !path.is_null() && unsafe { *path } == 0;
        if empty && flags & libc::AT_EMPTY_PATH != 0 {
            if let Some(e) = ours(dirfd) {
                return run(|| on_fd(&e, |p, f| p.fchown(f, uid, gid), |p| chown_p(p, uid, gid, true)));
            }
        }
        // SAFETY: the caller's C string.
        match unsafe { classify_c(dirfd, path) } {
            Target::Plfs(p) => return run(|| chown_p(p, uid, gid, flags & libc::AT_SYMLINK_NOFOLLOW != 0)),
            Target::Real(c) => {
                return crate::real!(fchownat(libc::AT_FDCWD, c.as_ptr(), uid, gid, flags): fn(c_int, *const c_char, uid_t, gid_t, c_int) -> c_int)
            }
            Target::Pass => {}
        }
    }
    crate::real!(fchownat(dirfd, path, uid, gid, flags): fn(c_int, *const c_char, uid_t, gid_t, c_int) -> c_int)
}

/// fchmod(2).
#[no_mangle]
pub extern "C" fn fchmod(fd: c_int, mode: mode_t) -> c_int {
    if let Some(r) = serve_fd(fd, |e| on_fd(&e, |p, f| p.fchmod(f, mode), |p| chmod_p(p, mode, true))) {
        return r;
    }
    crate::real!(fchmod(fd, mode): fn(c_int, mode_t) -> c_int)
}

/// fchown(2).
#[no_mangle]
pub extern "C" fn fchown(fd: c_int, uid: uid_t, gid: gid_t) -> c_int {
    if let Some(r) = serve_fd(fd, |e| {
        on_fd(&e, |p, f| p.fchown(f, uid, gid), |p| chown_p(p, uid, gid, true))
    }) {
        return r;
    }
    crate::real!(fchown(fd, uid, gid): fn(c_int, uid_t, gid_t) -> c_int)
}

fn ts_of(t: *const libc::timespec, i: usize) -> TimeSpec {
    if t.is_null() {
        return TimeSpec::Now;
    }
    // SAFETY: the caller passed two timespecs.
    let x = unsafe { *t.add(i) };
    match x.tv_nsec {
        libc::UTIME_NOW => TimeSpec::Now,
        libc::UTIME_OMIT => TimeSpec::Omit,
        _ => TimeSpec::At(x.tv_sec, x.tv_nsec),
    }
}

fn utimens_p(p: PathBuf, t: *const libc::timespec, nofollow: bool) -> Res<c_int> {
    plfs()?.utimens(&target(p, nofollow)?, ts_of(t, 0), ts_of(t, 1))?;
    Ok(0)
}

fn utimens_fd(e: &Entry, t: *const libc::timespec) -> Res<c_int> {
    let (a, m) = (ts_of(t, 0), ts_of(t, 1));
    on_fd(e, |p, f| p.futimens(f, a, m), |p| utimens_p(p, t, true))
}

/// utimensat(2).
#[no_mangle]
pub unsafe extern "C" fn utimensat(dirfd: c_int, path: *const c_char, t: *const libc::timespec, flags: c_int) -> c_int {
    if let Some(_busy) = enter() {
        if path.is_null() {
            if let Some(e) = ours(dirfd) {
                return run(|| utimens_fd(&e, t));
            }
        } else {
            // SAFETY: the caller's C string.
            match unsafe { classify_c(dirfd, path) } {
                Target::Plfs(p) => return run(|| utimens_p(p, t, flags & libc::AT_SYMLINK_NOFOLLOW != 0)),
                Target::Real(c) => {
                    return crate::real!(utimensat(libc::AT_FDCWD, c.as_ptr(), t, flags): fn(c_int, *const c_char, *const libc::timespec, c_int) -> c_int)
                }
                Target::Pass => {}
            }
        }
    }
    crate::real!(utimensat(dirfd, path, t, flags): fn(c_int, *const c_char, *const libc::timespec, c_int) -> c_int)
}

/// futimens(3).
#[no_mangle]
pub extern "C" fn futimens(fd: c_int, t: *const libc::timespec) -> c_int {
    if let Some(r) = serve_fd(fd, |e| utimens_fd(&e, t)) {
        return r;
    }
    crate::real!(futimens(fd, t): fn(c_int, *const libc::timespec) -> c_int)
}

fn tv_to_ts(tv: *const libc::timeval) -> Option<[libc::timespec; 2]> {
    if tv.is_null() {
        return None;
    }
    // SAFETY: the caller passed two timevals.
    let (a, m) = unsafe { (*tv, *tv.add(1)) };
    Some([
        libc::timespec {
            tv_sec: a.tv_sec,
            tv_nsec: a.tv_usec * 1000,
        },
        libc::timespec {
            tv_sec: m.tv_sec,
            tv_nsec: m.tv_usec * 1000,
        },
    ])
}

path_call!(/// utimes(2).
    fn utimes(dirfd = libc::AT_FDCWD; path: *const c_char, tv: *const libc::timeval) -> c_int,
    real = |rp| crate::real!(utimes(rp, tv): fn(*const c_char, *const libc::timeval) -> c_int),
    plfs = |p| { let ts = tv_to_ts(tv); utimens_p(p, ts.as_ref().map_or(std::ptr::null(), |t| t.as_ptr()), false) });
path_call!(/// lutimes(3).
    fn lutimes(dirfd = libc::AT_FDCWD; path: *const c_char, tv: *const libc::timeval) -> c_int,
    real = |rp| crate::real!(lutimes(rp, tv): fn(*const c_char, *const libc::timeval) -> c_int),
    plfs = |p| { let ts = tv_to_ts(tv); utimens_p(p, ts.as_ref().map_or(std::ptr::null(), |t| t.as_ptr()), true) });
path_call!(/// utime(2).
fn utime(dirfd = libc::AT_FDCWD; path: *const c_char, ut: *const libc::utimbuf) -> c_int,
real = |rp| crate::real!(utime(rp, ut): fn(*const c_char, *const libc::utimbuf) -> c_int),
plfs = |p| {
    if ut.is_null() {
        utimens_p(p, std::ptr::null(), false)
    } else {
        // SAFETY: the caller's utimbuf.
        let u = unsafe { *ut };
        let ts = [libc::timespec { tv_sec: u.actime, tv_nsec: 0 }, libc::timespec { tv_sec: u.modtime, tv_nsec: 0 }];
        utimens_p(p, ts.as_ptr(), false)
    }
});

/// futimes(3).
#[no_mangle]
pub extern "C" fn futimes(fd: c_int, tv: *const libc::timeval) -> c_int {
    if let Some(r) = serve_fd(fd, |e| {
        let ts = tv_to_ts(tv);
        utimens_fd(&e, ts.as_ref().map_or(std::ptr::null(), |t| t.as_ptr()))
    }) {
        return r;
    }
    crate::real!(futimes(fd, tv): fn(c_int, *const libc::timeval) -> c_int)
}

fn truncate_p(p: PathBuf, len: i64) -> Res<c_int> {
    if len < 0 {
        return Err(Errno(libc::EINVAL));
    }
    plfs()?.truncate(&target(p, false)?, len as u64)?;
    Ok(0)
}

path_call!(/// truncate(2).
    fn truncate(dirfd = libc::AT_FDCWD; path: *const c_char, len: libc::off_t) -> c_int,
    real = |rp| crate::real!(truncate(rp, len): fn(*const c_char, libc::off_t) -> c_int), plfs = |p| truncate_p(p, len));
path_call!(/// truncate64.
    fn truncate64(dirfd = libc::AT_FDCWD; path: *const c_char, len: libc::off64_t) -> c_int,
    real = |rp| crate::real!(truncate64(rp, len): fn(*const c_char, libc::off64_t) -> c_int), plfs = |p| truncate_p(p, len));

macro_rules! xattr_path {
    ($($(#[$m:meta])* fn $name:ident($($a:ident: $t:ty),*) -> $r:ty = $v:expr;)*) => {$(
        $(#[$m])*
        #[no_mangle]
        pub unsafe extern "C" fn $name(path: *const c_char $(, $a: $t)*) -> $r {
            if let Some(_busy) = enter() {
                // SAFETY: the caller's C string.
                if let Target::Plfs(_) = unsafe { classify_c(libc::AT_FDCWD, path) } {
                    return run(|| $v);
                }
            }
            crate::real!($name(path $(, $a)*): fn(*const c_char $(, $t)*) -> $r)
        }
    )*};
}

xattr_path! {
    /// getxattr(2): PLFS has no extended attributes.
    fn getxattr(n: *const c_char, v: *mut c_void, s: size_t) -> ssize_t = Err(Errno(libc::ENOTSUP));
    /// lgetxattr(2).
    fn lgetxattr(n: *const c_char, v: *mut c_void, s: size_t) -> ssize_t = Err(Errno(libc::ENOTSUP));
    /// setxattr(2).
    fn setxattr(n: *const c_char, v: *const c_void, s: size_t, f: c_int) -> c_int = Err(Errno(libc::ENOTSUP));
    /// lsetxattr(2).
    fn lsetxattr(n: *const c_char, v: *const c_void, s: size_t, f: c_int) -> c_int = Err(Errno(libc::ENOTSUP));
    /// listxattr(2): an empty list.
    fn listxattr(l: *mut c_char, s: size_t) -> ssize_t = Ok(0);
    /// llistxattr(2).
    fn llistxattr(l: *mut c_char, s: size_t) -> ssize_t = Ok(0);
    /// removexattr(2).
    fn removexattr(n: *const c_char) -> c_int = Err(Errno(libc::ENOTSUP));
    /// lremovexattr(2).
    fn lremovexattr(n: *const c_char) -> c_int = Err(Errno(libc::ENOTSUP));
}

macro_rules! xattr_fd {
    ($($(#[$m:meta])* fn $name:ident($($a:ident: $t:ty),*) -> $r:ty = $v:expr;)*) => {$(
        $(#[$m])*
        #[no_mangle]
        pub unsafe extern "C" fn $name(fd: c_int $(, $a: $t)*) -> $r {
            if let Some(_busy) = enter() {
                if ours(fd).is_some() {
                    return run(|| $v);
                }
            }
            crate::real!($name(fd $(, $a)*): fn(c_int $(, $t)*) -> $r)
        }
    )*};
}

xattr_fd! {
    /// fgetxattr(2).
    fn fgetxattr(n: *const c_char, v: *mut c_void, s: size_t) -> ssize_t = Err(Errno(libc::ENOTSUP));
    /// fsetxattr(2).
    fn fsetxattr(n: *const c_char, v: *const c_void, s: size_t, f: c_int) -> c_int = Err(Errno(libc::ENOTSUP));
    /// flistxattr(2).
    fn flistxattr(l: *mut c_char, s: size_t) -> ssize_t = Ok(0);
    /// fremovexattr(2).
    fn fremovexattr(n: *const c_char) -> c_int = Err(Errno(libc::ENOTSUP));
}
