//! Namespace calls on PLFS paths: unlink/remove/rename/mkdir/rmdir/link/symlink/readlink and
//! access. Attributes are in [`crate::calls::attrs`], the working directory in
//! [`crate::calls::cwd`].
//!

use crate::fd::conf;
use crate::fd::paths::{classify_c, follow, Followed, Target};
use crate::file::init::enter;
use crate::rt::errno::{Errno, Res};
use crate::rt::guard::run;
use libc::{c_char, c_int, c_uint, mode_t, size_t, ssize_t};
use plfs_core::FileKind;
use std::ffi::CStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

fn plfs() -> Res<&'static plfs_core::Plfs> {
    conf::plfs()
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
    plfs_core::umask_now()
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

pub(crate) use path_call;

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
            Target::Plfs(p) => {
                return run(|| {
                    if flags & libc::AT_REMOVEDIR != 0 {
                        rmdir_p(&p)
                    } else {
                        unlink_p(&p)
                    }
                })
            }
            Target::Real(c) => {
                return crate::real!(unlinkat(libc::AT_FDCWD, c.as_ptr(), flags): fn(c_int, *const c_char, c_int) -> c_int)
            }
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
        plfs.rename_noreplace(a, b)?;
    } else {
        plfs.rename(a, b)?;
    }
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
                });
            }
            Target::Real(c) => {
                return crate::real!(symlink(target, c.as_ptr()): fn(*const c_char, *const c_char) -> c_int)
            }
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
                return match unsafe { crate::raw_syscall!(libc::SYS_access, c.as_ptr(), mode) } {
                    0 => Ok(0),
                    _ => Err(Errno(crate::rt::errno::errno())),
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
            Target::Real(c) => {
                return crate::real!(faccessat(libc::AT_FDCWD, c.as_ptr(), mode, flags): fn(c_int, *const c_char, c_int, c_int) -> c_int)
            }
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

/// _FORTIFY_SOURCE readlink.
#[no_mangle]
pub unsafe extern "C" fn __readlink_chk(path: *const c_char, buf: *mut c_char, size: size_t, _l: size_t) -> ssize_t {
    // SAFETY: forwarded caller arguments.
    unsafe { readlinkat(libc::AT_FDCWD, path, buf, size) }
}

/// _FORTIFY_SOURCE readlinkat.
#[no_mangle]
pub unsafe extern "C" fn __readlinkat_chk(
    dirfd: c_int,
    path: *const c_char,
    buf: *mut c_char,
    size: size_t,
    _l: size_t,
) -> ssize_t {
    // SAFETY: forwarded caller arguments.
    unsafe { readlinkat(dirfd, path, buf, size) }
}
