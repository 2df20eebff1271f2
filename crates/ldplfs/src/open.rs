//! Descriptor lifetime: the open family (every alias name), close/close_range/closefrom, the dup
//! family, fcntl (flags, dups, locks) and ioctl.
//!
//! The variadic entry points (open, openat, fcntl, ioctl) are defined with their optional
//! argument as a named one: on x86_64 and aarch64 Linux an integer or pointer variadic argument
//! travels in exactly the register a named one would (stable Rust cannot define C-variadic
//! functions, and a cdylib does not export symbols of linked C objects).

use crate::guard::{enter, run, Errno, Res};
use crate::io::ours;
use crate::paths::{classify_c, follow, Followed, Target};
use crate::placeholder;
use crate::real::sys;
use crate::state::{self, Entry, Kind};
use libc::{c_char, c_int, c_uint, c_ulong, mode_t};
use plfs_core::{FileKind, OpenFlags};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::Arc;

#[cfg(not(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64"))))]
compile_error!("ldplfs reads variadic arguments as named ones: supported on x86_64 and aarch64 Linux only");

/// Opens a logical path (already classified as PLFS). Returns the placeholder descriptor.
pub fn open_plfs(p: PathBuf, flags: c_int, mode: c_uint) -> Res<c_int> {
    if flags & libc::O_TMPFILE == libc::O_TMPFILE {
        return Err(Errno(libc::EOPNOTSUPP));
    }
    let plfs = state::plfs()?;
    let (p, st) = if flags & libc::O_NOFOLLOW != 0 {
        match plfs.stat(&p) {
            Ok(st) if st.kind == FileKind::Symlink && flags & libc::O_PATH == 0 => return Err(Errno(libc::ELOOP)),
            Ok(st) => (p, Some(st)),
            Err(e) if e.is_not_found() => (p, None),
            Err(e) => return Err(e.into()),
        }
    } else {
        match follow(p)? {
            Followed::Plfs(p, st) => (p, st),
            Followed::Real(c) => {
                let fd = crate::real!(open(c.as_ptr(), flags, mode): fn(*const c_char, c_int, c_uint) -> c_int);
                return if fd < 0 {
                    Err(Errno(crate::guard::errno()))
                } else {
                    Ok(fd)
                };
            }
        }
    };
    let acc = flags & libc::O_ACCMODE;
    let excl = flags & libc::O_CREAT != 0 && flags & libc::O_EXCL != 0;
    let kind = match st.map(|s| s.kind) {
        None if flags & libc::O_CREAT == 0 => return Err(Errno(libc::ENOENT)),
        None if flags & libc::O_DIRECTORY != 0 => return Err(Errno(libc::EINVAL)),
        None => Kind::File,
        Some(_) if excl => return Err(Errno(libc::EEXIST)),
        Some(FileKind::Dir) => {
            if acc != libc::O_RDONLY && flags & libc::O_PATH == 0 {
                return Err(Errno(libc::EISDIR));
            }
            Kind::Dir
        }
        Some(_) if flags & libc::O_DIRECTORY != 0 => return Err(Errno(libc::ENOTDIR)),
        Some(_) if flags & libc::O_PATH != 0 => Kind::Path,
        Some(FileKind::Symlink) => return Err(Errno(libc::ELOOP)),
        Some(FileKind::File) => Kind::File,
    };
    let file = if kind == Kind::File {
        let of = OpenFlags::from_posix(flags)?;
        Some(plfs.open(&p, of, mode & 0o7777, state::my_pid())?)
    } else {
        None
    };
    let (fd, entry) = placeholder::create(kind, flags, &p)?;
    if let Some(f) = file {
        let mut st = entry.lock();
        st.file = Some(f);
        st.pid = state::my_pid();
    }
    if fd <= 2 {
        crate::stdio::std_stream_is_plfs(fd);
    }
    crate::log::debug(format_args!("open {} flags {flags:#o} -> fd {fd}", p.display()));
    Ok(fd)
}

unsafe fn openat_impl(dirfd: c_int, path: *const c_char, flags: c_int, mode: c_uint) -> c_int {
    if let Some(_busy) = enter() {
        // SAFETY: `path` is the caller's C string.
        match unsafe { classify_c(dirfd, path) } {
            Target::Plfs(p) => return run(|| open_plfs(p, flags, mode)),
            Target::Real(c) => {
                return crate::real!(open(c.as_ptr(), flags, mode): fn(*const c_char, c_int, c_uint) -> c_int)
            }
            Target::Pass => {}
        }
    }
    if dirfd == libc::AT_FDCWD {
        crate::real!(open(path, flags, mode): fn(*const c_char, c_int, c_uint) -> c_int)
    } else {
        crate::real!(openat(dirfd, path, flags, mode): fn(c_int, *const c_char, c_int, c_uint) -> c_int)
    }
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

/// Closes the file of an entry that lost its last descriptor.
pub fn release(e: Arc<Entry>) -> Res<()> {
    // Mappings outlive descriptors; what they hold must be in the file when it is closed.
    crate::shm::write_back_all(Some(e.key));
    let mut st = e.lock();
    if st.lock_fd >= 0 {
        let _ = sys::close(st.lock_fd);
        st.lock_fd = -1;
    }
    state::close_file(&mut st)
}

/// Drops `fd` from the table after the kernel closed it.
fn forget(fd: c_int) -> Res<()> {
    match state::remove_fd(fd) {
        Some(e) => release(e),
        None => Ok(()),
    }
}

/// Closes a PLFS descriptor from inside the library (the caller holds the guard).
pub fn close_plfs(fd: c_int) -> Res<()> {
    let r = sys::close(fd);
    forget(fd)?;
    r
}

fn close_impl(fd: c_int) -> c_int {
    if let Some(_busy) = enter() {
        if state::maybe_ours(fd) && !state::foreign_child() {
            let r = sys::close(fd);
            return run(|| {
                forget(fd)?;
                r.map(|()| 0)
            });
        }
        if state::core_fd(fd) && !state::foreign_child() {
            // Not the program's descriptor (it never opened this number): leave it to the core.
            crate::log::debug(format_args!("close({fd}) of a core descriptor ignored"));
            return 0;
        }
    }
    crate::real!(close(fd): fn(c_int) -> c_int)
}

/// close(2).
#[no_mangle]
pub extern "C" fn close(fd: c_int) -> c_int {
    close_impl(fd)
}
/// glibc alias of close.
#[no_mangle]
pub extern "C" fn __close(fd: c_int) -> c_int {
    close_impl(fd)
}

/// close_range(2).
#[no_mangle]
pub extern "C" fn close_range(lo: c_uint, hi: c_uint, flags: c_int) -> c_int {
    if flags & (libc::CLOSE_RANGE_CLOEXEC as c_int) == 0 {
        release_core_fds();
    }
    let r = crate::real!(close_range(lo, hi, flags): fn(c_uint, c_uint, c_int) -> c_int);
    if r == 0 && flags & (libc::CLOSE_RANGE_CLOEXEC as c_int) == 0 {
        if let Some(_busy) = enter() {
            if !state::foreign_child() {
                for e in state::remove_range(lo, hi) {
                    let _ = release(e);
                }
            }
        }
    }
    r
}

/// closefrom(3).
#[no_mangle]
pub extern "C" fn closefrom(lo: c_int) {
    release_core_fds();
    crate::real!(closefrom(lo): fn(c_int) -> ());
    if let Some(_busy) = enter() {
        if !state::foreign_child() && lo >= 0 {
            for e in state::remove_range(lo as u32, u32::MAX) {
                let _ = release(e);
            }
        }
    }
}

/// Bookkeeping after the kernel made `new` a copy of `old`.
pub fn dup_done(old: c_int, new: c_int) {
    if state::foreign_child() {
        return;
    }
    if state::maybe_ours(new) {
        let _ = forget(new);
    }
    if let Some(e) = ours(old) {
        if let Some(orphan) = state::insert_fd(new, &e) {
            let _ = release(orphan);
        }
        if new <= 2 {
            crate::stdio::std_stream_is_plfs(new);
        }
    }
}

/// dup(2).
#[no_mangle]
pub extern "C" fn dup(old: c_int) -> c_int {
    let r = crate::real!(dup(old): fn(c_int) -> c_int);
    if r >= 0 {
        if let Some(_busy) = enter() {
            dup_done(old, r);
        }
    }
    r
}

/// Before a program closes descriptors wholesale, or dup2s onto a number the core holds: close
/// every open PLFS file of this process so the core holds no descriptors (files reopen lazily).
fn release_core_fds() {
    if let Some(_busy) = enter() {
        if state::plfs_active() && !state::foreign_child() {
            state::close_all();
        }
    }
}

fn dup3_impl(old: c_int, new: c_int, flags: c_int, two: bool) -> c_int {
    let clash = match enter() {
        Some(_busy) => old != new && state::core_fd(new) && !state::foreign_child(),
        None => false,
    };
    if clash {
        crate::log::debug(format_args!(
            "dup2 onto core descriptor {new}: closing open files first"
        ));
        release_core_fds();
    }
    let r = if two {
        crate::real!(dup2(old, new): fn(c_int, c_int) -> c_int)
    } else {
        crate::real!(dup3(old, new, flags): fn(c_int, c_int, c_int) -> c_int)
    };
    if r >= 0 && old != new {
        if let Some(_busy) = enter() {
            dup_done(old, new);
        }
    }
    r
}

/// dup2(2).
#[no_mangle]
pub extern "C" fn dup2(old: c_int, new: c_int) -> c_int {
    dup3_impl(old, new, 0, true)
}
/// glibc alias of dup2.
#[no_mangle]
pub extern "C" fn __dup2(old: c_int, new: c_int) -> c_int {
    dup3_impl(old, new, 0, true)
}
/// dup3(2).
#[no_mangle]
pub extern "C" fn dup3(old: c_int, new: c_int, flags: c_int) -> c_int {
    dup3_impl(old, new, flags, false)
}

const O_LARGEFILE: c_int = 0o100000;

fn fcntl_plfs(e: &Entry, fd: c_int, cmd: c_int, arg: c_ulong) -> Res<c_int> {
    match cmd {
        libc::F_GETFL => Ok(e.flags() | O_LARGEFILE | if e.kind == Kind::Dir { libc::O_DIRECTORY } else { 0 }),
        libc::F_SETFL => {
            let keep = libc::O_APPEND | libc::O_NONBLOCK | libc::O_ASYNC | libc::O_DIRECT | libc::O_NOATIME;
            let new = (e.flags() & !keep) | (arg as c_int & keep);
            e.flags.store(new, std::sync::atomic::Ordering::Relaxed);
            Ok(0)
        }
        libc::F_DUPFD | libc::F_DUPFD_CLOEXEC => {
            let r = sys::fcntl_int(fd, cmd, arg as libc::c_long)?;
            dup_done(fd, r);
            Ok(r)
        }
        libc::F_GETLK | libc::F_SETLK | libc::F_SETLKW | libc::F_OFD_GETLK | libc::F_OFD_SETLK | libc::F_OFD_SETLKW => {
            crate::locks::fcntl_lock(e, fd, cmd, arg as *mut libc::flock)
        }
        libc::F_ADD_SEALS | libc::F_GET_SEALS => Err(Errno(libc::EINVAL)),
        libc::F_GETFD | libc::F_SETFD => sys::fcntl_int(fd, cmd, arg as libc::c_long),
        _ => Err(Errno(libc::EINVAL)),
    }
}

fn fcntl_impl(fd: c_int, cmd: c_int, arg: c_ulong) -> c_int {
    if let Some(_busy) = enter() {
        if let Some(e) = ours(fd) {
            return run(|| fcntl_plfs(&e, fd, cmd, arg));
        }
    }
    let r = crate::real!(fcntl(fd, cmd, arg): fn(c_int, c_int, c_ulong) -> c_int);
    if r >= 0 && (cmd == libc::F_DUPFD || cmd == libc::F_DUPFD_CLOEXEC) {
        if let Some(_busy) = enter() {
            dup_done(fd, r);
        }
    }
    r
}

/// fcntl(2).
#[no_mangle]
pub extern "C" fn fcntl(fd: c_int, cmd: c_int, arg: c_ulong) -> c_int {
    fcntl_impl(fd, cmd, arg)
}
/// fcntl64 (glibc 2.28+).
#[no_mangle]
pub extern "C" fn fcntl64(fd: c_int, cmd: c_int, arg: c_ulong) -> c_int {
    fcntl_impl(fd, cmd, arg)
}
/// glibc alias of fcntl.
#[no_mangle]
pub extern "C" fn __fcntl(fd: c_int, cmd: c_int, arg: c_ulong) -> c_int {
    fcntl_impl(fd, cmd, arg)
}

const FICLONE: c_ulong = 0x4004_9409;
const FICLONERANGE: c_ulong = 0x4020_940d;
const FIDEDUPERANGE: c_ulong = 0xc018_9436;

/// ioctl(2): on a PLFS descriptor cloning is EOPNOTSUPP (cp falls back), close-on-exec requests
/// reach the kernel, anything else is ENOTTY.
#[no_mangle]
pub extern "C" fn ioctl(fd: c_int, req: c_ulong, arg: c_ulong) -> c_int {
    if let Some(_busy) = enter() {
        if ours(fd).is_some() {
            return run(|| match req {
                FICLONE | FICLONERANGE | FIDEDUPERANGE => Err(Errno(libc::EOPNOTSUPP)),
                libc::FIOCLEX => sys::fcntl_int(fd, libc::F_SETFD, libc::FD_CLOEXEC as libc::c_long),
                libc::FIONCLEX => sys::fcntl_int(fd, libc::F_SETFD, 0),
                _ => Err(Errno(libc::ENOTTY)),
            });
        }
    }
    crate::real!(ioctl(fd, req, arg): fn(c_int, c_ulong, c_ulong) -> c_int)
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
        return crate::paths::logical_cwd().or_else(|| {
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
            Some(b) => crate::paths::classify_at(libc::AT_FDCWD, in_root(&b, rel).as_os_str().as_bytes()),
            None => return None,
        }
    } else {
        // SAFETY: as above.
        unsafe { classify_c(dirfd, path) }
    };
    let from_plfs = dirfd != libc::AT_FDCWD && ours(dirfd).is_some()
        || dirfd == libc::AT_FDCWD && crate::paths::logical_cwd().is_some();
    let p = match target {
        Target::Pass => return None,
        Target::Real(_) if h.resolve & libc::RESOLVE_BENEATH != 0 => return Some(Err(Errno(libc::EXDEV))),
        Target::Real(c) => {
            let mut h2 = h;
            h2.resolve &= !libc::RESOLVE_IN_ROOT;
            // SAFETY: a valid C string and open_how; the kernel checks the rest.
            let r = unsafe {
                crate::real::sys::raw6(
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
            return Some(if r < 0 { Err(Errno(-r as i32)) } else { Ok(r as c_int) });
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
            match state::plfs()?.stat(&p) {
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
    let r = unsafe { crate::real::sys::raw6(libc::SYS_openat2, [dirfd as _, path as _, how as _, size as _, 0, 0]) };
    if r < 0 {
        crate::guard::set_errno(-r as i32);
        -1
    } else {
        r as c_int
    }
}

/// syscall(2): glibc 2.36 has no openat2 wrapper, so programs call `syscall(SYS_openat2, ...)`;
/// that one is served like openat2. Every other number goes to the kernel unchanged, with the
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
    // SAFETY: forwarded caller arguments.
    let r = unsafe { crate::real::sys::raw6(n, [a1, a2, a3, a4, a5, a6]) };
    if (-4095..0).contains(&r) {
        crate::guard::set_errno(-r as i32);
        -1
    } else {
        r
    }
}
