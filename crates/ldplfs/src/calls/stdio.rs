//! stdio on PLFS files: fopen/fopen64/fdopen/freopen return cookie streams
//! ([`crate::file::streams`]); fileno returns the placeholder descriptor.

use crate::calls::open::opened;
use crate::fd::paths::{classify_c, fd_link_c, Target};
use crate::fd::table::{self, ours};
use crate::file::close::close_plfs;
use crate::file::init::enter;
use crate::file::open::{dup_done, open_entry, open_plfs};
use crate::file::streams::{make_stream, std_stream_is_plfs, std_var, stream_fd, unregister};
use crate::rt::errno::{Errno, Res};
use crate::rt::guard::run;
use crate::rt::real::sys;
use libc::{c_char, c_int, FILE};
use std::ffi::CStr;

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

/// fopen of `/dev/fd/N` where N is a PLFS descriptor: a new open of its file.
fn fopen_entry(e: &crate::fd::entry::Entry, mode: *const c_char) -> Res<*mut FILE> {
    let fd = open_entry(e, mode_flags(mode)?, 0o666)?;
    make_stream(fd, mode, true).inspect_err(|_| {
        let _ = close_plfs(fd);
    })
}

/// fopen(3).
#[no_mangle]
pub unsafe extern "C" fn fopen(path: *const c_char, mode: *const c_char) -> *mut FILE {
    if let Some(_busy) = enter() {
        // SAFETY: the caller's C string.
        if let Some(e) = unsafe { fd_link_c(path) } {
            return run(|| fopen_entry(&e, mode));
        }
        // SAFETY: the caller's C string.
        match unsafe { classify_c(libc::AT_FDCWD, path) } {
            Target::Plfs(p) => return run(|| fopen_p(p, mode)),
            Target::Real(c) => {
                return opened_stream(
                    crate::real!(fopen(c.as_ptr(), mode): fn(*const c_char, *const c_char) -> *mut FILE),
                )
            }
            Target::Pass => {}
        }
    }
    opened_stream(crate::real!(fopen(path, mode): fn(*const c_char, *const c_char) -> *mut FILE))
}

/// glibc opened a real file for a stream (with an internal open): check its descriptor number
/// as for an open ([`crate::calls::open::opened`]).
fn opened_stream(fp: *mut FILE) -> *mut FILE {
    if !fp.is_null() {
        opened(crate::real!(fileno(fp): fn(*mut FILE) -> c_int));
    }
    fp
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
    unregister(fp);
    crate::real!(fclose(fp): fn(*mut FILE) -> c_int)
}

/// Makes descriptor `fd` refer to what `nfd` refers to, then closes `nfd`.
fn replace_fd(nfd: c_int, fd: c_int) -> Res<()> {
    let cloexec = sys::fcntl_int(fd, libc::F_GETFD, 0)
        .map(|f| if f & libc::FD_CLOEXEC != 0 { libc::O_CLOEXEC } else { 0 })
        .unwrap_or(0);
    sys::dup3(nfd, fd, cloexec)?;
    dup_done(nfd, fd, true);
    if table::maybe_ours(nfd) {
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
                return Err(Errno(crate::rt::errno::errno()));
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
