//! Namespace calls on PLFS paths: unlink/remove/rename/mkdir/rmdir/link/symlink/readlink,
//! access, chmod/chown/utimes, truncate, realpath, the working directory (chdir, fchdir,
//! getcwd) and extended attributes (ENOTSUP).

use crate::guard::{enter, run, Errno, Res};
use crate::io::ours;
use crate::paths::{self, classify_c, follow, Followed, Target};
use crate::state::{self, Kind};
use libc::{c_char, c_int, c_uint, c_void, gid_t, mode_t, size_t, ssize_t, uid_t};
use plfs_core::sys::TimeSpec;
use plfs_core::FileKind;
use std::ffi::CStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

fn plfs() -> Res<&'static plfs_core::Plfs> {
    state::plfs()
}

/// Calls `$plfs` for a PLFS path, the real function (with a substituted absolute path) for a
/// path `..` led out of the mount, else the real function unchanged.
macro_rules! path_call {
    ($(#[$m:meta])* fn $name:ident(dirfd = $dirfd:expr; $path:ident: *const c_char $(, $a:ident: $t:ty)*) -> $r:ty,
     real = |$rp:ident| $real:expr, plfs = |$p:ident| $body:expr) => {
        $(#[$m])*
        #[no_mangle]
        pub unsafe extern "C" fn $name($path: *const c_char $(, $a: $t)*) -> $r {
            if let Some(_busy) = enter() {
                // SAFETY: the caller's C string.
                match unsafe { classify_c($dirfd, $path) } {
                    Target::Plfs($p) => return run(|| $body),
                    Target::Real(c) => {
                        let $rp = c.as_ptr();
                        return $real;
                    }
                    Target::Pass => {}
                }
            }
            let $rp = $path;
            $real
        }
    };
}

/// Reads the process umask without changing it.
fn umask() -> u32 {
    let Ok(b) = plfs_core::sys::read_file(Path::new("/proc/self/status")) else { return 0o022 };
    let s = String::from_utf8_lossy(&b);
    s.lines().find_map(|l| l.strip_prefix("Umask:").and_then(|v| u32::from_str_radix(v.trim(), 8).ok())).unwrap_or(0o022)
}

fn unlink_p(p: &Path) -> Res<c_int> {
    plfs()?.unlink(p)?;
    Ok(0)
}

fn rmdir_p(p: &Path) -> Res<c_int> {
    plfs()?.rmdir(p)?;
    Ok(0)
}

fn mkdir_p(p: &Path, mode: mode_t) -> Res<c_int> {
    plfs()?.mkdir(p, mode & !umask() & 0o7777)?;
    Ok(0)
}

path_call!(/// unlink(2).
    fn unlink(dirfd = libc::AT_FDCWD; path: *const c_char) -> c_int,
    real = |rp| crate::real!(unlink(rp): fn(*const c_char) -> c_int), plfs = |p| unlink_p(&p));
path_call!(/// rmdir(2).
    fn rmdir(dirfd = libc::AT_FDCWD; path: *const c_char) -> c_int,
    real = |rp| crate::real!(rmdir(rp): fn(*const c_char) -> c_int), plfs = |p| rmdir_p(&p));
path_call!(/// remove(3).
    fn remove(dirfd = libc::AT_FDCWD; path: *const c_char) -> c_int,
    real = |rp| crate::real!(remove(rp): fn(*const c_char) -> c_int),
    plfs = |p| if plfs()?.stat(&p)?.kind == FileKind::Dir { rmdir_p(&p) } else { unlink_p(&p) });
path_call!(/// mkdir(2).
    fn mkdir(dirfd = libc::AT_FDCWD; path: *const c_char, mode: mode_t) -> c_int,
    real = |rp| crate::real!(mkdir(rp, mode): fn(*const c_char, mode_t) -> c_int), plfs = |p| mkdir_p(&p, mode));

/// unlinkat(2).
#[no_mangle]
pub unsafe extern "C" fn unlinkat(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int {
    if let Some(_busy) = enter() {
        // SAFETY: the caller's C string.
        match unsafe { classify_c(dirfd, path) } {
            Target::Plfs(p) => return run(|| if flags & libc::AT_REMOVEDIR != 0 { rmdir_p(&p) } else { unlink_p(&p) }),
            Target::Real(c) => return crate::real!(unlinkat(libc::AT_FDCWD, c.as_ptr(), flags): fn(c_int, *const c_char, c_int) -> c_int),
            Target::Pass => {}
        }
    }
    crate::real!(unlinkat(dirfd, path, flags): fn(c_int, *const c_char, c_int) -> c_int)
}

/// mkdirat(2).
#[no_mangle]
pub unsafe extern "C" fn mkdirat(dirfd: c_int, path: *const c_char, mode: mode_t) -> c_int {
    if let Some(_busy) = enter() {
        // SAFETY: the caller's C string.
        match unsafe { classify_c(dirfd, path) } {
            Target::Plfs(p) => return run(|| mkdir_p(&p, mode)),
            Target::Real(c) => return crate::real!(mkdir(c.as_ptr(), mode): fn(*const c_char, mode_t) -> c_int),
            Target::Pass => {}
        }
    }
    crate::real!(mkdirat(dirfd, path, mode): fn(c_int, *const c_char, mode_t) -> c_int)
}

/// The two-path calls (rename, link): both PLFS, both not, or mixed (EXDEV).
enum Two {
    Plfs(PathBuf, PathBuf),
    Real(std::ffi::CString, std::ffi::CString),
    Mixed,
    Pass,
}

unsafe fn classify_two(d1: c_int, p1: *const c_char, d2: c_int, p2: *const c_char) -> Two {
    // SAFETY: the caller's C strings.
    let (a, b) = unsafe { (classify_c(d1, p1), classify_c(d2, p2)) };
    let own = |t: &Target, d: c_int, p: *const c_char| -> Option<std::ffi::CString> {
        match t {
            Target::Real(c) => Some(c.clone()),
            Target::Pass if d == libc::AT_FDCWD && !p.is_null() => {
                // SAFETY: the caller's C string.
                Some(unsafe { CStr::from_ptr(p) }.to_owned())
            }
            _ => None,
        }
    };
    match (&a, &b) {
        (Target::Plfs(x), Target::Plfs(y)) => Two::Plfs(x.clone(), y.clone()),
        (Target::Plfs(_), _) | (_, Target::Plfs(_)) => Two::Mixed,
        (Target::Pass, Target::Pass) => Two::Pass,
        _ => match (own(&a, d1, p1), own(&b, d2, p2)) {
            (Some(x), Some(y)) => Two::Real(x, y),
            _ => Two::Pass,
        },
    }
}

fn rename_p(a: &Path, b: &Path, flags: c_uint) -> Res<c_int> {
    let plfs = plfs()?;
    if flags & libc::RENAME_EXCHANGE != 0 || flags & !(libc::RENAME_NOREPLACE) != 0 {
        return Err(Errno(libc::EINVAL));
    }
    if flags & libc::RENAME_NOREPLACE != 0 {
        match plfs.stat(b) {
            Ok(_) => return Err(Errno(libc::EEXIST)),
            Err(e) if e.is_not_found() => {}
            Err(e) => return Err(e.into()),
        }
    }
    plfs.rename(a, b)?;
    Ok(0)
}

unsafe fn renameat2_impl(d1: c_int, p1: *const c_char, d2: c_int, p2: *const c_char, flags: c_uint) -> c_int {
    if let Some(_busy) = enter() {
        // SAFETY: the caller's C strings.
        match unsafe { classify_two(d1, p1, d2, p2) } {
            Two::Plfs(a, b) => return run(|| rename_p(&a, &b, flags)),
            Two::Mixed => return run(|| Err::<c_int, _>(Errno(libc::EXDEV))),
            Two::Real(a, b) => {
                return crate::real!(renameat2(libc::AT_FDCWD, a.as_ptr(), libc::AT_FDCWD, b.as_ptr(), flags): fn(c_int, *const c_char, c_int, *const c_char, c_uint) -> c_int)
            }
            Two::Pass => {}
        }
    }
    if flags == 0 {
        crate::real!(renameat(d1, p1, d2, p2): fn(c_int, *const c_char, c_int, *const c_char) -> c_int)
    } else {
        crate::real!(renameat2(d1, p1, d2, p2, flags): fn(c_int, *const c_char, c_int, *const c_char, c_uint) -> c_int)
    }
}

/// rename(2).
#[no_mangle]
pub unsafe extern "C" fn rename(a: *const c_char, b: *const c_char) -> c_int {
    // SAFETY: forwarded caller arguments.
    unsafe { renameat2_impl(libc::AT_FDCWD, a, libc::AT_FDCWD, b, 0) }
}
/// renameat(2).
#[no_mangle]
pub unsafe extern "C" fn renameat(d1: c_int, a: *const c_char, d2: c_int, b: *const c_char) -> c_int {
    // SAFETY: forwarded caller arguments.
    unsafe { renameat2_impl(d1, a, d2, b, 0) }
}
/// renameat2(2).
#[no_mangle]
pub unsafe extern "C" fn renameat2(d1: c_int, a: *const c_char, d2: c_int, b: *const c_char, flags: c_uint) -> c_int {
    // SAFETY: forwarded caller arguments.
    unsafe { renameat2_impl(d1, a, d2, b, flags) }
}

unsafe fn linkat_impl(d1: c_int, p1: *const c_char, d2: c_int, p2: *const c_char, flags: c_int) -> c_int {
    if let Some(_busy) = enter() {
        // SAFETY: the caller's C strings.
        match unsafe { classify_two(d1, p1, d2, p2) } {
            // PLFS has no hard links.
            Two::Plfs(..) => return run(|| Err::<c_int, _>(Errno(libc::EPERM))),
            Two::Mixed => return run(|| Err::<c_int, _>(Errno(libc::EXDEV))),
            Two::Real(a, b) => {
                return crate::real!(linkat(libc::AT_FDCWD, a.as_ptr(), libc::AT_FDCWD, b.as_ptr(), flags): fn(c_int, *const c_char, c_int, *const c_char, c_int) -> c_int)
            }
            Two::Pass => {}
        }
    }
    crate::real!(linkat(d1, p1, d2, p2, flags): fn(c_int, *const c_char, c_int, *const c_char, c_int) -> c_int)
}

/// link(2).
#[no_mangle]
pub unsafe extern "C" fn link(a: *const c_char, b: *const c_char) -> c_int {
    // SAFETY: forwarded caller arguments.
    unsafe { linkat_impl(libc::AT_FDCWD, a, libc::AT_FDCWD, b, 0) }
}
/// linkat(2).
#[no_mangle]
pub unsafe extern "C" fn linkat(d1: c_int, a: *const c_char, d2: c_int, b: *const c_char, flags: c_int) -> c_int {
    // SAFETY: forwarded caller arguments.
    unsafe { linkat_impl(d1, a, d2, b, flags) }
}

unsafe fn symlinkat_impl(target: *const c_char, dirfd: c_int, link: *const c_char) -> c_int {
    if let Some(_busy) = enter() {
        // SAFETY: the caller's C string.
        match unsafe { classify_c(dirfd, link) } {
            Target::Plfs(p) => {
                return run(|| {
                    if target.is_null() {
                        return Err(Errno(libc::EFAULT));
                    }
                    // SAFETY: the caller's C string.
                    let t = unsafe { CStr::from_ptr(target) };
                    plfs()?.symlink(Path::new(std::ffi::OsStr::from_bytes(t.to_bytes())), &p)?;
                    Ok(0)
                })
            }
            Target::Real(c) => return crate::real!(symlink(target, c.as_ptr()): fn(*const c_char, *const c_char) -> c_int),
            Target::Pass => {}
        }
    }
    crate::real!(symlinkat(target, dirfd, link): fn(*const c_char, c_int, *const c_char) -> c_int)
}

/// symlink(2).
#[no_mangle]
pub unsafe extern "C" fn symlink(target: *const c_char, link: *const c_char) -> c_int {
    // SAFETY: forwarded caller arguments.
    unsafe { symlinkat_impl(target, libc::AT_FDCWD, link) }
}
/// symlinkat(2).
#[no_mangle]
pub unsafe extern "C" fn symlinkat(target: *const c_char, dirfd: c_int, link: *const c_char) -> c_int {
    // SAFETY: forwarded caller arguments.
    unsafe { symlinkat_impl(target, dirfd, link) }
}

fn readlink_p(p: &Path, buf: *mut c_char, size: size_t) -> Res<ssize_t> {
    let t = plfs()?.readlink(p)?;
    let b = t.as_bytes();
    let n = b.len().min(size);
    if n > 0 {
        // SAFETY: the caller's buffer holds `size` >= n bytes.
        unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), buf.cast::<u8>(), n) };
    }
    Ok(n as ssize_t)
}

/// readlink(2).
#[no_mangle]
pub unsafe extern "C" fn readlink(path: *const c_char, buf: *mut c_char, size: size_t) -> ssize_t {
    // SAFETY: forwarded caller arguments.
    unsafe { readlinkat(libc::AT_FDCWD, path, buf, size) }
}

/// readlinkat(2).
#[no_mangle]
pub unsafe extern "C" fn readlinkat(dirfd: c_int, path: *const c_char, buf: *mut c_char, size: size_t) -> ssize_t {
    if let Some(_busy) = enter() {
        // SAFETY: the caller's C string.
        match unsafe { classify_c(dirfd, path) } {
            Target::Plfs(p) => return run(|| readlink_p(&p, buf, size)),
            Target::Real(c) => {
                return crate::real!(readlinkat(libc::AT_FDCWD, c.as_ptr(), buf, size): fn(c_int, *const c_char, *mut c_char, size_t) -> ssize_t)
            }
            Target::Pass => {}
        }
    }
    crate::real!(readlinkat(dirfd, path, buf, size): fn(c_int, *const c_char, *mut c_char, size_t) -> ssize_t)
}

fn access_p(p: PathBuf, mode: c_int, nofollow: bool) -> Res<c_int> {
    let p = if nofollow {
        p
    } else {
        match follow(p)? {
            Followed::Plfs(p, _) => p,
            Followed::Real(c) => {
                // SAFETY: a valid C string.
                return match unsafe { libc::syscall(libc::SYS_access, c.as_ptr(), mode) } {
                    0 => Ok(0),
                    _ => Err(Errno(crate::guard::errno())),
                };
            }
        }
    };
    plfs()?.access(&p, mode as u32)?;
    Ok(0)
}

unsafe fn faccessat_impl(dirfd: c_int, path: *const c_char, mode: c_int, flags: c_int) -> c_int {
    if let Some(_busy) = enter() {
        // SAFETY: the caller's C string.
        match unsafe { classify_c(dirfd, path) } {
            Target::Plfs(p) => return run(|| access_p(p, mode, flags & libc::AT_SYMLINK_NOFOLLOW != 0)),
            Target::Real(c) => return crate::real!(faccessat(libc::AT_FDCWD, c.as_ptr(), mode, flags): fn(c_int, *const c_char, c_int, c_int) -> c_int),
            Target::Pass => {}
        }
    }
    crate::real!(faccessat(dirfd, path, mode, flags): fn(c_int, *const c_char, c_int, c_int) -> c_int)
}

/// access(2).
#[no_mangle]
pub unsafe extern "C" fn access(path: *const c_char, mode: c_int) -> c_int {
    if let Some(_busy) = enter() {
        // SAFETY: the caller's C string.
        match unsafe { classify_c(libc::AT_FDCWD, path) } {
            Target::Plfs(p) => return run(|| access_p(p, mode, false)),
            Target::Real(c) => return crate::real!(access(c.as_ptr(), mode): fn(*const c_char, c_int) -> c_int),
            Target::Pass => {}
        }
    }
    crate::real!(access(path, mode): fn(*const c_char, c_int) -> c_int)
}
/// faccessat(2).
#[no_mangle]
pub unsafe extern "C" fn faccessat(dirfd: c_int, path: *const c_char, mode: c_int, flags: c_int) -> c_int {
    // SAFETY: forwarded caller arguments.
    unsafe { faccessat_impl(dirfd, path, mode, flags) }
}
/// euidaccess(3).
#[no_mangle]
pub unsafe extern "C" fn euidaccess(path: *const c_char, mode: c_int) -> c_int {
    if let Some(_busy) = enter() {
        // SAFETY: the caller's C string.
        if let Target::Plfs(p) = unsafe { classify_c(libc::AT_FDCWD, path) } {
            return run(|| access_p(p, mode, false));
        }
    }
    crate::real!(euidaccess(path, mode): fn(*const c_char, c_int) -> c_int)
}
/// eaccess(3).
#[no_mangle]
pub unsafe extern "C" fn eaccess(path: *const c_char, mode: c_int) -> c_int {
    // SAFETY: forwarded caller arguments.
    unsafe { euidaccess(path, mode) }
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
            Target::Real(c) => return crate::real!(fchmodat(libc::AT_FDCWD, c.as_ptr(), mode, flags): fn(c_int, *const c_char, mode_t, c_int) -> c_int),
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
                return run(|| chown_p(e.path.clone(), uid, gid, true));
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
    if let Some(_busy) = enter() {
        if let Some(e) = ours(fd) {
            return run(|| chmod_p(e.path.clone(), mode, true));
        }
    }
    crate::real!(fchmod(fd, mode): fn(c_int, mode_t) -> c_int)
}

/// fchown(2).
#[no_mangle]
pub extern "C" fn fchown(fd: c_int, uid: uid_t, gid: gid_t) -> c_int {
    if let Some(_busy) = enter() {
        if let Some(e) = ours(fd) {
            return run(|| chown_p(e.path.clone(), uid, gid, true));
        }
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

/// utimensat(2).
#[no_mangle]
pub unsafe extern "C" fn utimensat(dirfd: c_int, path: *const c_char, t: *const libc::timespec, flags: c_int) -> c_int {
    if let Some(_busy) = enter() {
        if path.is_null() {
            if let Some(e) = ours(dirfd) {
                return run(|| utimens_p(e.path.clone(), t, true));
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
    if let Some(_busy) = enter() {
        if let Some(e) = ours(fd) {
            return run(|| utimens_p(e.path.clone(), t, true));
        }
    }
    crate::real!(futimens(fd, t): fn(c_int, *const libc::timespec) -> c_int)
}

fn tv_to_ts(tv: *const libc::timeval) -> Option<[libc::timespec; 2]> {
    if tv.is_null() {
        return None;
    }
    // SAFETY: the caller passed two timevals.
    let (a, m) = unsafe { (*tv, *tv.add(1)) };
    Some([libc::timespec { tv_sec: a.tv_sec, tv_nsec: a.tv_usec * 1000 }, libc::timespec { tv_sec: m.tv_sec, tv_nsec: m.tv_usec * 1000 }])
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
    if let Some(_busy) = enter() {
        if let Some(e) = ours(fd) {
            return run(|| {
                let ts = tv_to_ts(tv);
                utimens_p(e.path.clone(), ts.as_ref().map_or(std::ptr::null(), |t| t.as_ptr()), true)
            });
        }
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

/// Copies `s` into `buf` (or a malloc'd buffer when `buf` is NULL).
fn out_string(s: &[u8], buf: *mut c_char, size: Option<usize>) -> Res<*mut c_char> {
    let need = s.len() + 1;
    let dst = if buf.is_null() {
        // SAFETY: malloc of a positive size.
        let p = unsafe { libc::malloc(need.max(size.unwrap_or(0))) }.cast::<c_char>();
        if p.is_null() {
            return Err(Errno(libc::ENOMEM));
        }
        p
    } else {
        if size.is_some_and(|n| n < need) {
            return Err(Errno(libc::ERANGE));
        }
        buf
    };
    // SAFETY: `dst` holds at least `need` bytes.
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr(), dst.cast::<u8>(), s.len());
        *dst.add(s.len()) = 0;
    }
    Ok(dst)
}

fn realpath_p(p: PathBuf, buf: *mut c_char) -> Res<*mut c_char> {
    match follow(p)? {
        Followed::Plfs(p, Some(_)) => out_string(p.as_os_str().as_bytes(), buf, None),
        Followed::Plfs(_, None) => Err(Errno(libc::ENOENT)),
        Followed::Real(c) => {
            let r = crate::real!(realpath(c.as_ptr(), buf): fn(*const c_char, *mut c_char) -> *mut c_char);
            if r.is_null() {
                Err(Errno(crate::guard::errno()))
            } else {
                Ok(r)
            }
        }
    }
}

/// realpath(3) (links inside the mount are followed in the final component; the rest is lexical).
#[no_mangle]
pub unsafe extern "C" fn realpath(path: *const c_char, buf: *mut c_char) -> *mut c_char {
    if let Some(_busy) = enter() {
        // SAFETY: the caller's C string.
        match unsafe { classify_c(libc::AT_FDCWD, path) } {
            Target::Plfs(p) => return run(|| realpath_p(p, buf)),
            Target::Real(c) => return crate::real!(realpath(c.as_ptr(), buf): fn(*const c_char, *mut c_char) -> *mut c_char),
            Target::Pass => {}
        }
    }
    crate::real!(realpath(path, buf): fn(*const c_char, *mut c_char) -> *mut c_char)
}

/// _FORTIFY_SOURCE realpath.
#[no_mangle]
pub unsafe extern "C" fn __realpath_chk(path: *const c_char, buf: *mut c_char, _len: size_t) -> *mut c_char {
    // SAFETY: forwarded caller arguments.
    unsafe { realpath(path, buf) }
}

/// canonicalize_file_name(3).
#[no_mangle]
pub unsafe extern "C" fn canonicalize_file_name(path: *const c_char) -> *mut c_char {
    // SAFETY: forwarded caller arguments.
    unsafe { realpath(path, std::ptr::null_mut()) }
}

/// chdir into PLFS directory `p`: the kernel cwd becomes its backend directory.
fn chdir_p(p: PathBuf) -> Res<c_int> {
    let p = match follow(p)? {
        Followed::Plfs(p, Some(s)) if s.kind == FileKind::Dir => p,
        Followed::Plfs(_, Some(_)) => return Err(Errno(libc::ENOTDIR)),
        Followed::Plfs(_, None) => return Err(Errno(libc::ENOENT)),
        Followed::Real(c) => {
            return match crate::real!(chdir(c.as_ptr()): fn(*const c_char) -> c_int) {
                0 => {
                    paths::set_real_cwd();
                    Ok(0)
                }
                _ => Err(Errno(crate::guard::errno())),
            }
        }
    };
    let loc = plfs()?.resolve(&p)?;
    for i in 0..loc.mount.canonical.len() {
        let dir = paths::cstring(&loc.on(i))?;
        // SAFETY: a valid C string.
        if unsafe { libc::syscall(libc::SYS_chdir, dir.as_ptr()) } == 0 {
            paths::set_logical_cwd(p);
            return Ok(0);
        }
    }
    Err(Errno(libc::ENOENT))
}

/// chdir(2).
#[no_mangle]
pub unsafe extern "C" fn chdir(path: *const c_char) -> c_int {
    if let Some(_busy) = enter() {
        // SAFETY: the caller's C string.
        let t = unsafe { classify_c(libc::AT_FDCWD, path) };
        let r = match t {
            Target::Plfs(p) => return run(|| chdir_p(p)),
            Target::Real(c) => crate::real!(chdir(c.as_ptr()): fn(*const c_char) -> c_int),
            Target::Pass => crate::real!(chdir(path): fn(*const c_char) -> c_int),
        };
        if r == 0 && state::enabled() {
            paths::set_real_cwd();
        }
        return r;
    }
    crate::real!(chdir(path): fn(*const c_char) -> c_int)
}

/// fchdir(2).
#[no_mangle]
pub extern "C" fn fchdir(fd: c_int) -> c_int {
    if let Some(_busy) = enter() {
        if let Some(e) = ours(fd) {
            if e.kind == Kind::File {
                return run(|| Err::<c_int, _>(Errno(libc::ENOTDIR)));
            }
            return run(|| chdir_p(e.path.clone()));
        }
        let r = crate::real!(fchdir(fd): fn(c_int) -> c_int);
        if r == 0 && state::enabled() {
            paths::set_real_cwd();
        }
        return r;
    }
    crate::real!(fchdir(fd): fn(c_int) -> c_int)
}

/// getcwd(3): the logical directory when inside a mount.
#[no_mangle]
pub unsafe extern "C" fn getcwd(buf: *mut c_char, size: size_t) -> *mut c_char {
    if let Some(_busy) = enter() {
        if let Some(l) = paths::logical_cwd() {
            return run(|| {
                if !buf.is_null() && size == 0 {
                    return Err(Errno(libc::EINVAL));
                }
                out_string(l.as_os_str().as_bytes(), buf, Some(size))
            });
        }
    }
    crate::real!(getcwd(buf, size): fn(*mut c_char, size_t) -> *mut c_char)
}

/// _FORTIFY_SOURCE getcwd.
#[no_mangle]
pub unsafe extern "C" fn __getcwd_chk(buf: *mut c_char, size: size_t, _buflen: size_t) -> *mut c_char {
    // SAFETY: forwarded caller arguments.
    unsafe { getcwd(buf, size) }
}

/// get_current_dir_name(3).
#[no_mangle]
pub unsafe extern "C" fn get_current_dir_name() -> *mut c_char {
    if let Some(_busy) = enter() {
        if let Some(l) = paths::logical_cwd() {
            return run(|| out_string(l.as_os_str().as_bytes(), std::ptr::null_mut(), None));
        }
    }
    crate::real!(get_current_dir_name(): fn() -> *mut c_char)
}

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

