//! The open family (every alias name), creat, openat2 and `syscall(SYS_openat2)`.
//!
//! The variadic entry points (open, openat, fcntl, ioctl) are defined with their optional
//! argument as a named one: on x86_64 and aarch64 Linux an integer or pointer variadic argument
//! travels in exactly the register a named one would (stable Rust cannot define C-variadic
//! functions, and a cdylib does not export symbols of linked C objects).

use crate::fd::conf::{enabled, plfs};
use crate::fd::paths::{self, classify_c, fd_link_c, Target};
use crate::fd::table::{self, ours};
use crate::file::close;
use crate::file::init::enter;
use crate::file::open::{open_entry, open_plfs};
use crate::rt::errno::{set_errno, Errno, Res};
use crate::rt::guard::run;
use crate::rt::real::sys;
use libc::{c_char, c_int, c_uint, mode_t};
use plfs_core::FileKind;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

#[cfg(not(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64"))))]
compile_error!("ldplfs reads variadic arguments as named ones: supported on x86_64 and aarch64 Linux only");

unsafe fn openat_impl(dirfd: c_int, path: *const c_char, flags: c_int, mode: c_uint) -> c_int {
    if let Some(_busy) = enter() {
        if flags & libc::O_NOFOLLOW == 0 {
            // SAFETY: `path` is the caller's C string.
            if let Some(e) = unsafe { fd_link_c(path) } {
                return run(|| open_entry(&e, flags, mode));
            }
        }
        // SAFETY: `path` is the caller's C string.
        match unsafe { classify_c(dirfd, path) } {
            Target::Plfs(p) => return run(|| open_plfs(p, flags, mode)),
            Target::Real(c) => {
                let fd = crate::real!(open(c.as_ptr(), flags, mode): fn(*const c_char, c_int, c_uint) -> c_int);
                return opened(fd);
            }
            Target::Pass => {}
        }
    }
    let fd = if dirfd == libc::AT_FDCWD {
        crate::real!(open(path, flags, mode): fn(*const c_char, c_int, c_uint) -> c_int)
    } else {
        crate::real!(openat(dirfd, path, flags, mode): fn(c_int, *const c_char, c_int, c_uint) -> c_int)
    };
    opened(fd)
}

/// A real file was opened as `fd`: if the table holds that number, it is stale
/// ([`close::kernel_gave`]). One bit test in the common case.
pub fn opened(fd: c_int) -> c_int {
    if fd >= 0 && table::maybe_ours(fd) {
        if let Some(_busy) = enter() {
            close::kernel_gave(fd);
        }
    }
    fd
}

macro_rules! open_alias {
    ($($(#[$m:meta])* $name:ident),*) => {$(
        $(#[$m])*
        #[no_mangle]
        pub unsafe extern "C" fn $name(path: *const c_char, flags: c_int, mode: c_uint) -> c_int {
            // SAFETY: forwarded caller arguments.
            unsafe { openat_impl(libc::AT_FDCWD, path, flags, mode) }
        }
    )*};
}
open_alias!(/// open(2).
    open, /// open64.
    open64, /// glibc alias.
    __open, /// glibc alias.
    __open64);

macro_rules! openat_alias {
    ($($(#[$m:meta])* $name:ident),*) => {$(
        $(#[$m])*
        #[no_mangle]
        pub unsafe extern "C" fn $name(dirfd: c_int, path: *const c_char, flags: c_int, mode: c_uint) -> c_int {
            // SAFETY: forwarded caller arguments.
            unsafe { openat_impl(dirfd, path, flags, mode) }
        }
    )*};
}
openat_alias!(/// openat(2).
    openat, /// openat64.
    openat64);

/// _FORTIFY_SOURCE open without a mode.
#[no_mangle]
pub unsafe extern "C" fn __open_2(path: *const c_char, flags: c_int) -> c_int {
    // SAFETY: forwarded caller arguments.
    unsafe { openat_impl(libc::AT_FDCWD, path, flags, 0) }
}
/// _FORTIFY_SOURCE open64 without a mode.
#[no_mangle]
pub unsafe extern "C" fn __open64_2(path: *const c_char, flags: c_int) -> c_int {
    // SAFETY: forwarded caller arguments.
    unsafe { openat_impl(libc::AT_FDCWD, path, flags, 0) }
}
/// _FORTIFY_SOURCE openat without a mode.
#[no_mangle]
pub unsafe extern "C" fn __openat_2(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int {
    // SAFETY: forwarded caller arguments.
    unsafe { openat_impl(dirfd, path, flags, 0) }
}
/// _FORTIFY_SOURCE openat64 without a mode.
#[no_mangle]
pub unsafe extern "C" fn __openat64_2(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int {
    // SAFETY: forwarded caller arguments.
    unsafe { openat_impl(dirfd, path, flags, 0) }
}
/// creat(2).
#[no_mangle]
pub unsafe extern "C" fn creat(path: *const c_char, mode: mode_t) -> c_int {
    // SAFETY: forwarded caller arguments.
    unsafe {
        openat_impl(
            libc::AT_FDCWD,
            path,
            libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC,
            mode,
        )
    }
}
/// creat64.
#[no_mangle]
pub unsafe extern "C" fn creat64(path: *const c_char, mode: mode_t) -> c_int {
    // SAFETY: forwarded caller arguments.
    unsafe {
        openat_impl(
            libc::AT_FDCWD,
            path,
            libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC,
            mode,
        )
    }
}

// ---------------------------------------------------------------- openat2

const RESOLVE_KNOWN: u64 = libc::RESOLVE_NO_XDEV
    | libc::RESOLVE_NO_MAGICLINKS
    | libc::RESOLVE_NO_SYMLINKS
    | libc::RESOLVE_BENEATH
    | libc::RESOLVE_IN_ROOT
    | libc::RESOLVE_CACHED;

/// The directory `dirfd` stands for, as a path (logical inside a mount).
fn base_of(dirfd: c_int) -> Option<PathBuf> {
    if dirfd == libc::AT_FDCWD {
        return paths::logical_cwd().or_else(|| {
            rustix::process::getcwd(Vec::new())
                .ok()
                .map(|c| PathBuf::from(std::ffi::OsStr::from_bytes(c.as_bytes())))
        });
    }
    if let Some(e) = ours(dirfd) {
        return Some(e.path.clone());
    }
    let link = rustix::fs::readlinkat(rustix::fs::CWD, format!("/proc/self/fd/{dirfd}").as_str(), Vec::new()).ok()?;
    link.as_bytes()
        .starts_with(b"/")
        .then(|| PathBuf::from(std::ffi::OsStr::from_bytes(link.as_bytes())))
}

/// `rel` resolved below `base` as RESOLVE_IN_ROOT does: `/` and `..` never leave `base`.
fn in_root(base: &std::path::Path, rel: &[u8]) -> PathBuf {
    let mut out = base.to_path_buf();
    let mut depth = 0usize;
    for comp in rel.split(|&b| b == b'/') {
        match comp {
            b"" | b"." => {}
            b".." => {
                if depth > 0 {
                    out.pop();
                    depth -= 1;
                }
            }
            c => {
                out.push(std::ffi::OsStr::from_bytes(c));
                depth += 1;
            }
        }
    }
    out
}

/// True if the relative path `rel` goes above its starting directory (`..` too often).
fn escapes(rel: &[u8]) -> bool {
    let mut depth = 0i64;
    for comp in rel.split(|&b| b == b'/') {
        match comp {
            b"" | b"." => {}
            b".." => {
                depth -= 1;
                if depth < 0 {
                    return true;
                }
            }
            _ => depth += 1,
        }
    }
    false
}

/// openat2 on PLFS: None when the call is not ours (the kernel gets it unchanged).
unsafe fn openat2_plfs(
    dirfd: c_int,
    path: *const c_char,
    how: *const libc::open_how,
    size: usize,
) -> Option<Res<c_int>> {
    let ohs = std::mem::size_of::<libc::open_how>();
    if path.is_null() || how.is_null() || size < ohs {
        return None;
    }
    // SAFETY: the caller's C string.
    let rel = unsafe { std::ffi::CStr::from_ptr(path) }.to_bytes();
    // SAFETY: the caller's open_how of at least `size` >= sizeof(open_how) bytes.
    let h = unsafe { std::ptr::read_unaligned(how) };
    let target = if h.resolve & libc::RESOLVE_IN_ROOT != 0 && !rel.is_empty() {
        match base_of(dirfd) {
            Some(b) => paths::classify_at(libc::AT_FDCWD, in_root(&b, rel).as_os_str().as_bytes()),
            None => return None,
        }
    } else {
        // SAFETY: as above.
        unsafe { classify_c(dirfd, path) }
    };
    let from_plfs =
        dirfd != libc::AT_FDCWD && ours(dirfd).is_some() || dirfd == libc::AT_FDCWD && paths::logical_cwd().is_some();
    let p = match target {
        Target::Pass => return None,
        Target::Real(_) if h.resolve & libc::RESOLVE_BENEATH != 0 => return Some(Err(Errno(libc::EXDEV))),
        Target::Real(c) => {
            let mut h2 = h;
            h2.resolve &= !libc::RESOLVE_IN_ROOT;
            // SAFETY: a valid C string and open_how; the kernel checks the rest.
            let r = unsafe {
                sys::raw6(
                    libc::SYS_openat2,
                    [
                        libc::AT_FDCWD as _,
                        c.as_ptr() as _,
                        &h2 as *const libc::open_how as _,
                        ohs as _,
                        0,
                        0,
                    ],
                )
            };
            if r < 0 {
                return Some(Err(Errno(-r as i32)));
            }
            close::kernel_gave(r as c_int);
            return Some(Ok(r as c_int));
        }
        Target::Plfs(p) => p,
    };
    Some((|| {
        if size > ohs {
            // SAFETY: the caller's structure is `size` bytes long.
            let extra = unsafe { std::slice::from_raw_parts(how.cast::<u8>().add(ohs), size - ohs) };
            if extra.iter().any(|&b| b != 0) {
                return Err(Errno(libc::E2BIG));
            }
        }
        let flags = c_int::try_from(h.flags).map_err(|_| Errno(libc::EINVAL))?;
        let creating = flags & libc::O_CREAT != 0 || flags & libc::O_TMPFILE == libc::O_TMPFILE;
        if h.resolve & !RESOLVE_KNOWN != 0 || h.mode & !0o7777 != 0 || (!creating && h.mode != 0) {
            return Err(Errno(libc::EINVAL));
        }
        if h.resolve & libc::RESOLVE_BENEATH != 0 && (rel.starts_with(b"/") || escapes(rel)) {
            return Err(Errno(libc::EXDEV));
        }
        if h.resolve & libc::RESOLVE_NO_XDEV != 0 && !from_plfs {
            // The walk crosses from the real file system into the mount.
            return Err(Errno(libc::EXDEV));
        }
        let mut flags = flags;
        if h.resolve & libc::RESOLVE_NO_SYMLINKS != 0 {
            match plfs()?.stat(&p) {
                Ok(st) if st.kind == FileKind::Symlink => return Err(Errno(libc::ELOOP)),
                _ => flags |= libc::O_NOFOLLOW,
            }
        }
        open_plfs(p, flags, h.mode as c_uint)
    })())
}

/// openat2(2) (the name of glibc's wrapper where it has one).
#[no_mangle]
pub unsafe extern "C" fn openat2(
    dirfd: c_int,
    path: *const c_char,
    how: *mut libc::open_how,
    size: libc::size_t,
) -> c_int {
    if let Some(_busy) = enter() {
        // SAFETY: forwarded caller arguments.
        if let Some(r) = unsafe { openat2_plfs(dirfd, path, how, size) } {
            return run(|| r);
        }
    }
    // SAFETY: forwarded caller arguments.
    let r = unsafe { sys::raw6(libc::SYS_openat2, [dirfd as _, path as _, how as _, size as _, 0, 0]) };
    if r < 0 {
        set_errno(-r as i32);
        -1
    } else {
        opened(r as c_int)
    }
}

/// System calls that replace descriptors: made through `syscall`, they bypass our dup2/dup3, so
/// the table must doubt itself after them. (`SYS_close` and `SYS_close_range` are served as
/// close and close_range: [`syscall`].)
#[cfg(target_arch = "x86_64")]
const FD_CHANGING: [libc::c_long; 2] = [libc::SYS_dup2, libc::SYS_dup3];
#[cfg(target_arch = "aarch64")]
const FD_CHANGING: [libc::c_long; 1] = [libc::SYS_dup3];

/// System calls that make a process sharing our open file descriptions without the fork
/// handlers running: the positions kept in this process go to the kernel offsets first.
#[cfg(target_arch = "x86_64")]
const PROCESS_MAKING: [libc::c_long; 4] = [libc::SYS_fork, libc::SYS_vfork, libc::SYS_clone, libc::SYS_clone3];
#[cfg(target_arch = "aarch64")]
const PROCESS_MAKING: [libc::c_long; 2] = [libc::SYS_clone, libc::SYS_clone3];

/// Raw system calls that name a path: (number, the dirfd argument if any, the path argument, name).
/// With `LDPLFS_REPORT`, one of these naming a path under a mount point is counted as gone around
/// ldplfs (the kernel cannot see the logical path).
const PATH_CALLS: &[(libc::c_long, Option<usize>, usize, &str)] = &[
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_open, None, 0, "open"),
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_stat, None, 0, "stat"),
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_lstat, None, 0, "lstat"),
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_unlink, None, 0, "unlink"),
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_mkdir, None, 0, "mkdir"),
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_rename, None, 0, "rename"),
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_access, None, 0, "access"),
    (libc::SYS_openat, Some(0), 1, "openat"),
    (libc::SYS_newfstatat, Some(0), 1, "newfstatat"),
    (libc::SYS_statx, Some(0), 1, "statx"),
    (libc::SYS_unlinkat, Some(0), 1, "unlinkat"),
    (libc::SYS_mkdirat, Some(0), 1, "mkdirat"),
    (libc::SYS_renameat2, Some(0), 1, "renameat2"),
    (libc::SYS_faccessat, Some(0), 1, "faccessat"),
    (libc::SYS_fchmodat, Some(0), 1, "fchmodat"),
    (libc::SYS_execve, None, 0, "execve"),
];

/// With `LDPLFS_REPORT`: counts raw system call `n` if it names a path under a mount point.
fn note_around(n: libc::c_long, a: [libc::c_long; 6]) {
    if !crate::rt::report::wanted() {
        return;
    }
    let Some(&(_, dirfd, p, name)) = PATH_CALLS.iter().find(|c| c.0 == n) else {
        return;
    };
    let Some(_busy) = enter() else { return };
    let path = a[p] as *const c_char;
    if path.is_null() {
        return;
    }
    let dirfd = dirfd.map_or(libc::AT_FDCWD, |i| a[i] as c_int);
    // SAFETY: the caller's path argument, a C string for these calls.
    if let Target::Plfs(_) = unsafe { classify_c(dirfd, path) } {
        // SAFETY: as above.
        crate::rt::report::went_around(name, unsafe { std::ffi::CStr::from_ptr(path) }.to_bytes());
    }
}

/// syscall(2): glibc 2.36 has no openat2 wrapper, so programs call `syscall(SYS_openat2, ...)`;
/// that one is served like openat2, and `SYS_close`/`SYS_close_range` like close and close_range.
/// Every other number goes to the kernel unchanged, with the
/// instruction itself (errno set as glibc's syscall does). The six arguments are read as named
/// ones (see the variadic note above).
#[no_mangle]
pub unsafe extern "C" fn syscall(
    n: libc::c_long,
    a1: libc::c_long,
    a2: libc::c_long,
    a3: libc::c_long,
    a4: libc::c_long,
    a5: libc::c_long,
    a6: libc::c_long,
) -> libc::c_long {
    if n == libc::SYS_openat2 {
        if let Some(_busy) = enter() {
            // SAFETY: the caller's openat2 arguments.
            if let Some(r) = unsafe {
                openat2_plfs(
                    a1 as c_int,
                    a2 as *const c_char,
                    a3 as *const libc::open_how,
                    a4 as usize,
                )
            } {
                return run(|| r).into();
            }
        }
    }
    // A raw close of every descriptor (`syscall(SYS_close_range, 3, ~0U, 0)`, or SYS_close in a
    // loop) closed the library's own too, and every later PLFS call failed with EBADF, even the
    // open of a new file (issue 50): made through syscall(3), they are served as the interposed
    // close and close_range, which leave the core's descriptors alone (or first close the open
    // PLFS files so that the core holds none).
    if n == libc::SYS_close {
        return crate::calls::fds::close(a1 as c_int).into();
    }
    if n == libc::SYS_close_range {
        return crate::calls::fds::close_range(a1 as libc::c_uint, a2 as libc::c_uint, a3 as c_int).into();
    }
    note_around(n, [a1, a2, a3, a4, a5, a6]);
    if PROCESS_MAKING.contains(&n) {
        if let Some(_busy) = enter() {
            if enabled() {
                table::share_positions();
            }
        }
    }
    // SAFETY: forwarded caller arguments.
    let r = unsafe { sys::raw6(n, [a1, a2, a3, a4, a5, a6]) };
    if (-4095..0).contains(&r) {
        set_errno(-r as i32);
        -1
    } else {
        if FD_CHANGING.contains(&n) {
            table::doubt();
        } else if n == libc::SYS_openat || n == libc::SYS_openat2 {
            opened(r as c_int);
        }
        r
    }
}
