//! Descriptor lifetime: close/close_range/closefrom, the dup family, fcntl (flags, dups, locks)
//! and ioctl. (fcntl and ioctl read their optional argument as a named one: see
//! [`crate::calls::open`].)

use crate::fd::conf::foreign_child;
use crate::fd::entry::{Entry, Kind};
use crate::fd::table::{self, ours};
use crate::file::close::{self, forget, release};
use crate::file::init::{enter, serve_fd};
use crate::file::open::dup_done;
use crate::rt::errno::{Errno, Res};
use crate::rt::guard::run;
use crate::rt::real::sys;
use libc::{c_int, c_uint, c_ulong};

/// [`close::release_core_fds`] from an entry point.
fn release_core_fds() {
    if let Some(_busy) = enter() {
        close::release_core_fds();
    }
}

fn close_impl(fd: c_int) -> c_int {
    if let Some(_busy) = enter() {
        if table::maybe_ours(fd) && !foreign_child() {
            // Out of the table before the kernel frees the number: a thread that gets the number
            // from a new open meanwhile must not lose its registration to our forget.
            let f = forget(fd);
            let r = sys::close(fd);
            return run(|| {
                f?;
                r.map(|()| 0)
            });
        }
        if !foreign_child() && crate::fd::held::contains(fd) {
            // A lock held for a file this process inherited (`fd::held`), not the program's.
            crate::rt::log::debug(format_args!("close({fd}) of a held lock descriptor ignored"));
            return 0;
        }
        if table::core_fd(fd) && !foreign_child() {
            // Not the program's descriptor (it never opened this number): leave it to the core.
            crate::rt::log::debug(format_args!("close({fd}) of a core descriptor ignored"));
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
            if !foreign_child() {
                crate::fd::held::forget_range(lo, hi);
                for e in table::remove_range(lo, hi) {
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
        if !foreign_child() && lo >= 0 {
            crate::fd::held::forget_range(lo as u32, u32::MAX);
            for e in table::remove_range(lo as u32, u32::MAX) {
                let _ = release(e);
            }
        }
    }
}

/// dup(2).
#[no_mangle]
pub extern "C" fn dup(old: c_int) -> c_int {
    let r = crate::real!(dup(old): fn(c_int) -> c_int);
    if r >= 0 {
        if let Some(_busy) = enter() {
            dup_done(old, r, false);
        }
    }
    r
}

fn dup3_impl(old: c_int, new: c_int, flags: c_int, two: bool) -> c_int {
    let clash = match enter() {
        Some(_busy) => old != new && table::core_fd(new) && !foreign_child(),
        None => false,
    };
    if clash {
        crate::rt::log::debug(format_args!(
            "dup2 onto core descriptor {new}: closing open files first"
        ));
        release_core_fds();
    }
    if old != new && new >= 0 {
        if let Some(_busy) = enter() {
            if !foreign_child() {
                // The kernel closes a held lock descriptor there.
                crate::fd::held::forget_range(new as u32, new as u32);
            }
        }
    }
    let r = if two {
        crate::real!(dup2(old, new): fn(c_int, c_int) -> c_int)
    } else {
        crate::real!(dup3(old, new, flags): fn(c_int, c_int, c_int) -> c_int)
    };
    if r >= 0 && old != new {
        if let Some(_busy) = enter() {
            dup_done(old, new, true);
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
            dup_done(fd, r, false);
            Ok(r)
        }
        libc::F_GETLK | libc::F_SETLK | libc::F_SETLKW | libc::F_OFD_GETLK | libc::F_OFD_SETLK | libc::F_OFD_SETLKW => {
            crate::file::locks::fcntl_lock(e, fd, cmd, arg as *mut libc::flock)
        }
        libc::F_ADD_SEALS | libc::F_GET_SEALS => Err(Errno(libc::EINVAL)),
        libc::F_GETFD | libc::F_SETFD => sys::fcntl_int(fd, cmd, arg as libc::c_long),
        _ => Err(Errno(libc::EINVAL)),
    }
}

fn fcntl_impl(fd: c_int, cmd: c_int, arg: c_ulong) -> c_int {
    if let Some(r) = serve_fd(fd, |e| fcntl_plfs(&e, fd, cmd, arg)) {
        return r;
    }
    let r = crate::real!(fcntl(fd, cmd, arg): fn(c_int, c_int, c_ulong) -> c_int);
    if r >= 0 && (cmd == libc::F_DUPFD || cmd == libc::F_DUPFD_CLOEXEC) {
        if let Some(_busy) = enter() {
            dup_done(fd, r, false);
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
