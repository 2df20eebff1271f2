//! stdio on PLFS files: fopen/fopen64/fdopen/freopen return real glibc streams built with
//! fopencookie whose callbacks go through the library; fileno returns the placeholder descriptor.
//!
//! Standard streams: glibc's stdio writes fd 0/1/2 with internal calls we cannot intercept, so
//! when one of them becomes a PLFS placeholder (`cmd > /plfs/f` adopted at start-up, dup2 onto
//! 1, freopen) the `stdin`/`stdout`/`stderr` variable is pointed at a cookie stream on that
//! descriptor number. The cookie checks on every call whether the number is (still) ours, so it
//! behaves like the original stream once the descriptor is restored.

use crate::guard::{enter, run, Errno, Res};
use crate::io::ours;
use crate::open::{close_plfs, open_plfs};
use crate::paths::{classify_c, Target};
use crate::real::sys;
use crate::state::ForkMutex;
use libc::{c_char, c_int, c_void, off64_t, size_t, ssize_t, FILE};
use std::collections::BTreeMap;
use std::ffi::CStr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Our cookie streams: FILE address -> descriptor.
pub static STREAMS: ForkMutex<BTreeMap<usize, c_int>> = ForkMutex::new(BTreeMap::new());
static NSTREAMS: AtomicUsize = AtomicUsize::new(0);
static SWAPPED: [AtomicBool; 3] = [const { AtomicBool::new(false) }; 3];

#[repr(C)]
struct CookieIo {
    read: Option<extern "C" fn(*mut c_void, *mut c_char, size_t) -> ssize_t>,
    write: Option<extern "C" fn(*mut c_void, *const c_char, size_t) -> ssize_t>,
    seek: Option<extern "C" fn(*mut c_void, *mut off64_t, c_int) -> c_int>,
    close: Option<extern "C" fn(*mut c_void) -> c_int>,
}

extern "C" {
    fn fopencookie(cookie: *mut c_void, mode: *const c_char, io: CookieIo) -> *mut FILE;
}

/// Size of the stream buffer of a PLFS stream: large, so fread/fwrite of small pieces turn into
/// few PLFS calls (glibc would give a cookie stream 8 KiB).
const STREAM_BUF: usize = 1 << 20;

/// What a cookie points to: the descriptor and the stream's buffer (freed with the cookie, after
/// glibc's last use of it in fclose).
struct Cookie {
    fd: c_int,
    _buf: Vec<u8>,
}

fn cookie_fd(c: *mut c_void) -> c_int {
    // SAFETY: every cookie is a Box<Cookie> made in `make_stream`.
    unsafe { (*c.cast::<Cookie>()).fd }
}

fn ret(r: Res<usize>) -> ssize_t {
    match r {
        Ok(n) => n as ssize_t,
        Err(Errno(e)) => {
            crate::guard::set_errno(e);
            -1
        }
    }
}

extern "C" fn c_read(c: *mut c_void, buf: *mut c_char, n: size_t) -> ssize_t {
    let _busy = enter();
    let fd = cookie_fd(c);
    let r = std::panic::catch_unwind(|| -> Res<usize> {
        // SAFETY: glibc passes a buffer of n bytes.
        let b = unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), n) };
        match ours(fd) {
            Some(e) => crate::io::read_at(&e, fd, b, None),
            // SAFETY: a raw read into the caller's buffer.
            None => match unsafe { libc::syscall(libc::SYS_read, fd, buf, n) } {
                r if r < 0 => Err(Errno(crate::guard::errno())),
                r => Ok(r as usize),
            },
        }
    });
    ret(r.unwrap_or(Err(Errno(libc::EIO))))
}

extern "C" fn c_write(c: *mut c_void, buf: *const c_char, n: size_t) -> ssize_t {
    let _busy = enter();
    let fd = cookie_fd(c);
    let r = std::panic::catch_unwind(|| -> Res<usize> {
        // SAFETY: glibc passes n bytes.
        let b = unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), n) };
        match ours(fd) {
            Some(e) => {
                let mut done = 0;
                while done < b.len() {
                    done += crate::io::write_at(&e, fd, &b[done..], None)?;
                }
                Ok(done)
            }
            None => {
                let mut done = 0;
                while done < n {
                    // SAFETY: a raw write of the caller's bytes.
                    let r = unsafe { libc::syscall(libc::SYS_write, fd, buf.add(done), n - done) };
                    if r < 0 {
                        if crate::guard::errno() == libc::EINTR {
                            continue;
                        }
                        return if done > 0 {
                            Ok(done)
                        } else {
                            Err(Errno(crate::guard::errno()))
                        };
                    }
                    done += r as usize;
                }
                Ok(done)
            }
        }
    });
    ret(r.unwrap_or(Err(Errno(libc::EIO))))
}

extern "C" fn c_seek(c: *mut c_void, off: *mut off64_t, whence: c_int) -> c_int {
    let _busy = enter();
    let fd = cookie_fd(c);
    // SAFETY: glibc passes a valid offset pointer.
    let o = unsafe { *off };
    let r = std::panic::catch_unwind(|| match ours(fd) {
        Some(e) => crate::io::seek(&e, fd, o, whence),
        None => sys::lseek(fd, o, whence),
    })
    .unwrap_or(Err(Errno(libc::EIO)));
    match r {
        Ok(n) => {
            // SAFETY: as above.
            unsafe { *off = n };
            0
        }
        Err(Errno(e)) => {
            crate::guard::set_errno(e);
            -1
        }
    }
}

extern "C" fn c_close(c: *mut c_void) -> c_int {
    let _busy = enter();
    let fd = cookie_fd(c);
    // SAFETY: the cookie was made with Box::into_raw in `make_stream`; glibc closes it once.
    drop(unsafe { Box::from_raw(c.cast::<Cookie>()) });
    let r = std::panic::catch_unwind(|| {
        if crate::state::maybe_ours(fd) {
            close_plfs(fd)
        } else {
            sys::close(fd)
        }
    })
    .unwrap_or(Err(Errno(libc::EIO)));
    match r {
        Ok(()) => 0,
        Err(Errno(e)) => {
            crate::guard::set_errno(e);
            -1
        }
    }
}

/// A glibc stream on descriptor `fd` (ours or not) built with fopencookie, registered.
fn make_stream(fd: c_int, mode: *const c_char, big: bool) -> Res<*mut FILE> {
    let mut buf = if big { vec![0u8; STREAM_BUF] } else { Vec::new() };
    let bufp = buf.as_mut_ptr();
    let cookie = Box::into_raw(Box::new(Cookie { fd, _buf: buf })).cast::<c_void>();
    let io = CookieIo {
        read: Some(c_read),
        write: Some(c_write),
        seek: Some(c_seek),
        close: Some(c_close),
    };
    // SAFETY: a valid cookie and mode string; glibc copies the function table.
    let fp = unsafe { fopencookie(cookie, mode, io) };
    if fp.is_null() {
        // SAFETY: the cookie was not taken.
        drop(unsafe { Box::from_raw(cookie.cast::<Cookie>()) });
        return Err(Errno(crate::guard::errno()));
    }
    if big {
        // SAFETY: a fresh stream before any I/O; the buffer lives in the cookie until fclose's
        // close callback, after which glibc no longer touches it.
        unsafe { libc::setvbuf(fp, bufp.cast::<c_char>(), libc::_IOFBF, STREAM_BUF) };
    }
    let mut m = STREAMS.lock();
    m.insert(fp as usize, fd);
    NSTREAMS.store(m.len(), Ordering::Relaxed);
    Ok(fp)
}

fn stream_fd(fp: *mut FILE) -> Option<c_int> {
    if fp.is_null() || NSTREAMS.load(Ordering::Relaxed) == 0 {
        return None;
    }
    STREAMS.lock().get(&(fp as usize)).copied()
}

/// open(2) flags for an fopen mode string.
fn mode_flags(mode: *const c_char) -> Res<c_int> {
    if mode.is_null() {
        return Err(Errno(libc::EINVAL));
    }
    // SAFETY: the caller's C string.
    let m = unsafe { CStr::from_ptr(mode) }.to_bytes();
    let plus = m.contains(&b'+');
    let mut f = match (m.first(), plus) {
        (Some(b'r'), false) => libc::O_RDONLY,
        (Some(b'r'), true) => libc::O_RDWR,
        (Some(b'w'), false) => libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC,
        (Some(b'w'), true) => libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC,
        (Some(b'a'), false) => libc::O_WRONLY | libc::O_CREAT | libc::O_APPEND,
        (Some(b'a'), true) => libc::O_RDWR | libc::O_CREAT | libc::O_APPEND,
        _ => return Err(Errno(libc::EINVAL)),
    };
    if m.contains(&b'x') {
        f |= libc::O_EXCL;
    }
    if m.contains(&b'e') {
        f |= libc::O_CLOEXEC;
    }
    Ok(f)
}

fn fopen_p(p: std::path::PathBuf, mode: *const c_char) -> Res<*mut FILE> {
    let fd = open_plfs(p, mode_flags(mode)?, 0o666)?;
    make_stream(fd, mode, true).inspect_err(|_| {
        let _ = close_plfs(fd);
    })
}

/// fopen(3).
#[no_mangle]
pub unsafe extern "C" fn fopen(path: *const c_char, mode: *const c_char) -> *mut FILE {
    if let Some(_busy) = enter() {
        // SAFETY: the caller's C string.
        match unsafe { classify_c(libc::AT_FDCWD, path) } {
            Target::Plfs(p) => return run(|| fopen_p(p, mode)),
            Target::Real(c) => {
                return crate::real!(fopen(c.as_ptr(), mode): fn(*const c_char, *const c_char) -> *mut FILE)
            }
            Target::Pass => {}
        }
    }
    crate::real!(fopen(path, mode): fn(*const c_char, *const c_char) -> *mut FILE)
}

/// fopen64(3).
#[no_mangle]
pub unsafe extern "C" fn fopen64(path: *const c_char, mode: *const c_char) -> *mut FILE {
    // SAFETY: forwarded caller arguments.
    unsafe { fopen(path, mode) }
}

/// fdopen(3): a cookie stream on a PLFS descriptor.
#[no_mangle]
pub unsafe extern "C" fn fdopen(fd: c_int, mode: *const c_char) -> *mut FILE {
    if let Some(_busy) = enter() {
        if ours(fd).is_some() {
            return run(|| {
                mode_flags(mode)?;
                make_stream(fd, mode, true)
            });
        }
    }
    crate::real!(fdopen(fd, mode): fn(c_int, *const c_char) -> *mut FILE)
}

/// The `stdin`/`stdout`/`stderr` variable for descriptor 0/1/2.
fn std_var(fd: c_int) -> *mut *mut FILE {
    let name: &[u8] = match fd {
        0 => b"stdin\0",
        1 => b"stdout\0",
        _ => b"stderr\0",
    };
    // SAFETY: looks up a data symbol of libc (or the executable's copy of it).
    unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr().cast()) }.cast::<*mut FILE>()
}

/// Descriptor 0, 1 or 2 now refers to a PLFS file: make the standard stream a cookie stream on
/// that descriptor number (once; the cookie passes through when the number is not ours).
pub fn std_stream_is_plfs(fd: c_int) {
    if !(0..=2).contains(&fd) || SWAPPED[fd as usize].swap(true, Ordering::AcqRel) {
        return;
    }
    let var = std_var(fd);
    if var.is_null() {
        return;
    }
    let mode: &[u8] = if fd == 0 { b"r\0" } else { b"w\0" };
    // SAFETY: `var` points at libc's stream variable.
    let old = unsafe { *var };
    if !old.is_null() {
        // SAFETY: a valid stream.
        unsafe { libc::fflush(old) };
    }
    if let Ok(fp) = make_stream(fd, mode.as_ptr().cast(), false) {
        if fd == 2 {
            // SAFETY: a fresh stream, before any I/O on it.
            unsafe { libc::setvbuf(fp, std::ptr::null_mut(), libc::_IONBF, 0) };
        }
        // SAFETY: as above.
        unsafe { *var = fp };
    }
}

/// fileno(3): the placeholder descriptor of a cookie stream.
#[no_mangle]
pub extern "C" fn fileno(fp: *mut FILE) -> c_int {
    if let Some(fd) = stream_fd(fp) {
        return fd;
    }
    crate::real!(fileno(fp): fn(*mut FILE) -> c_int)
}

/// fileno_unlocked(3).
#[no_mangle]
pub extern "C" fn fileno_unlocked(fp: *mut FILE) -> c_int {
    if let Some(fd) = stream_fd(fp) {
        return fd;
    }
    crate::real!(fileno_unlocked(fp): fn(*mut FILE) -> c_int)
}

/// fclose(3): unregisters a cookie stream (glibc then calls our close callback).
#[no_mangle]
pub extern "C" fn fclose(fp: *mut FILE) -> c_int {
    if stream_fd(fp).is_some() {
        let mut m = STREAMS.lock();
        m.remove(&(fp as usize));
        NSTREAMS.store(m.len(), Ordering::Relaxed);
    }
    crate::real!(fclose(fp): fn(*mut FILE) -> c_int)
}

/// Makes descriptor `fd` refer to what `nfd` refers to, then closes `nfd`.
fn replace_fd(nfd: c_int, fd: c_int) -> Res<()> {
    let cloexec = sys::fcntl_int(fd, libc::F_GETFD, 0)
        .map(|f| if f & libc::FD_CLOEXEC != 0 { libc::O_CLOEXEC } else { 0 })
        .unwrap_or(0);
    sys::dup3(nfd, fd, cloexec)?;
    crate::open::dup_done(nfd, fd);
    if crate::state::maybe_ours(nfd) {
        close_plfs(nfd)
    } else {
        sys::close(nfd)
    }
}

fn freopen_impl(t: Target, mode: *const c_char, fp: *mut FILE) -> Res<*mut FILE> {
    let flags = mode_flags(mode)?;
    let nfd = match t {
        Target::Plfs(p) => open_plfs(p, flags, 0o666)?,
        Target::Real(c) => {
            let r = crate::real!(open(c.as_ptr(), flags, 0o666): fn(*const c_char, c_int, libc::c_uint) -> c_int);
            if r < 0 {
                return Err(Errno(crate::guard::errno()));
            }
            r
        }
        Target::Pass => unreachable!("freopen_impl is called for PLFS targets and our streams"),
    };
    // SAFETY: a valid stream.
    unsafe { libc::fflush(fp) };
    if let Some(fd) = stream_fd(fp) {
        replace_fd(nfd, fd)?;
        return Ok(fp);
    }
    for n in 0..=2 {
        let var = std_var(n);
        // SAFETY: libc's stream variable.
        if !var.is_null() && unsafe { *var } == fp {
            replace_fd(nfd, n)?;
            std_stream_is_plfs(n);
            // SAFETY: as above.
            return Ok(unsafe { *var });
        }
    }
    // Another glibc stream cannot become a cookie stream in place: close it, return a new one.
    crate::real!(fclose(fp): fn(*mut FILE) -> c_int);
    make_stream(nfd, mode, true)
}

/// freopen(3).
#[no_mangle]
pub unsafe extern "C" fn freopen(path: *const c_char, mode: *const c_char, fp: *mut FILE) -> *mut FILE {
    if let Some(_busy) = enter() {
        if !path.is_null() {
            // SAFETY: the caller's C string.
            let t = unsafe { classify_c(libc::AT_FDCWD, path) };
            match t {
                Target::Plfs(_) => return run(|| freopen_impl(t, mode, fp)),
                _ if stream_fd(fp).is_some() => {
                    let t = match t {
                        Target::Pass => {
                            // SAFETY: the caller's C string.
                            Target::Real(unsafe { CStr::from_ptr(path) }.to_owned())
                        }
                        t => t,
                    };
                    return run(|| freopen_impl(t, mode, fp));
                }
                _ => {}
            }
        }
    }
    crate::real!(freopen(path, mode, fp): fn(*const c_char, *const c_char, *mut FILE) -> *mut FILE)
}

/// freopen64(3).
#[no_mangle]
pub unsafe extern "C" fn freopen64(path: *const c_char, mode: *const c_char, fp: *mut FILE) -> *mut FILE {
    // SAFETY: forwarded caller arguments.
    unsafe { freopen(path, mode, fp) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(m: &str) -> Res<c_int> {
        let c = std::ffi::CString::new(m).unwrap();
        mode_flags(c.as_ptr())
    }

    #[test]
    fn fopen_modes_map_to_open_flags() {
        assert_eq!(flags("r"), Ok(libc::O_RDONLY));
        assert_eq!(flags("rb+"), Ok(libc::O_RDWR));
        assert_eq!(flags("w"), Ok(libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC));
        assert_eq!(
            flags("a+e"),
            Ok(libc::O_RDWR | libc::O_CREAT | libc::O_APPEND | libc::O_CLOEXEC)
        );
        assert_eq!(
            flags("wx"),
            Ok(libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_EXCL)
        );
        assert_eq!(flags("q"), Err(Errno(libc::EINVAL)));
        assert_eq!(flags(""), Err(Errno(libc::EINVAL)));
    }
}
