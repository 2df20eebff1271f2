//! Cookie streams: real glibc streams built with fopencookie whose callbacks go through the
//! library (fopen and friends on PLFS files return them), and the standard streams.
//!
//! Standard streams: glibc's stdio writes fd 0/1/2 with internal calls we cannot intercept, so
//! when one of them becomes a PLFS placeholder (`cmd > /plfs/f` adopted at start-up, dup2 onto
//! 1, freopen) the `stdin`/`stdout`/`stderr` variable is pointed at a cookie stream on that
//! descriptor number. The cookie checks on every call whether the number is (still) ours, so it
//! behaves like the original stream once the descriptor is restored.

use crate::fd::table::{self, ours};
use crate::file::close::close_plfs;
use crate::file::io;
use crate::rt::errno::{set_errno, Errno, Res};
use crate::rt::guard::enter;
use crate::rt::real::sys;
use crate::rt::sync::ForkMutex;
use libc::{c_char, c_int, c_void, off64_t, size_t, ssize_t, FILE};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Our cookie streams: FILE address -> descriptor.
static STREAMS: ForkMutex<BTreeMap<usize, c_int>> = ForkMutex::new(30, BTreeMap::new());
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
            set_errno(e);
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
            Some(e) => io::read_at(&e, fd, b, None),
            // SAFETY: a raw read into the caller's buffer.
            None => match unsafe { crate::raw_syscall!(libc::SYS_read, fd, buf, n) } {
                r if r < 0 => Err(Errno(crate::rt::errno::errno())),
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
                    done += io::write_at(&e, fd, &b[done..], None)?;
                }
                Ok(done)
            }
            None => {
                let mut done = 0;
                while done < n {
                    // SAFETY: a raw write of the caller's bytes.
                    let r = unsafe { crate::raw_syscall!(libc::SYS_write, fd, buf.add(done), n - done) };
                    if r < 0 {
                        if crate::rt::errno::errno() == libc::EINTR {
                            continue;
                        }
                        return if done > 0 {
                            Ok(done)
                        } else {
                            Err(Errno(crate::rt::errno::errno()))
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
        Some(e) => io::seek(&e, fd, o, whence),
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
            set_errno(e);
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
        if table::maybe_ours(fd) {
            close_plfs(fd)
        } else {
            sys::close(fd)
        }
    })
    .unwrap_or(Err(Errno(libc::EIO)));
    match r {
        Ok(()) => 0,
        Err(Errno(e)) => {
            set_errno(e);
            -1
        }
    }
}

/// A glibc stream on descriptor `fd` (ours or not) built with fopencookie, registered.
pub fn make_stream(fd: c_int, mode: *const c_char, big: bool) -> Res<*mut FILE> {
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
        return Err(Errno(crate::rt::errno::errno()));
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

pub fn stream_fd(fp: *mut FILE) -> Option<c_int> {
    if fp.is_null() || NSTREAMS.load(Ordering::Relaxed) == 0 {
        return None;
    }
    STREAMS.lock().get(&(fp as usize)).copied()
}

/// The `stdin`/`stdout`/`stderr` variable for descriptor 0/1/2.
pub fn std_var(fd: c_int) -> *mut *mut FILE {
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

/// Forgets a cookie stream that is being closed (fclose; glibc then calls its close callback).
pub fn unregister(fp: *mut FILE) {
    if stream_fd(fp).is_some() {
        let mut m = STREAMS.lock();
        m.remove(&(fp as usize));
        NSTREAMS.store(m.len(), Ordering::Relaxed);
    }
}
