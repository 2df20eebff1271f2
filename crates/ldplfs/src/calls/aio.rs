//! POSIX AIO on PLFS descriptors (ROMIO's nonblocking MPI_File_iwrite/iread use it). glibc runs
//! AIO in helper threads with internal pread/pwrite that would hit the placeholder, so requests
//! on PLFS descriptors are done at once, synchronously, and their results kept until
//! aio_return: aio_error never reports EINPROGRESS, aio_suspend returns at once, aio_cancel
//! reports AIO_ALLDONE. Completion notifications (aio_sigevent) are not delivered.

use crate::fd::table::ours;
use crate::file::init::enter;
use crate::file::io::{read_at, sync_entry, write_at};
use crate::rt::errno::{Errno, Res};
use crate::rt::guard::run;
use crate::rt::sync::ForkMutex;
use libc::{aiocb, c_int, ssize_t, timespec};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Results of completed PLFS requests: aiocb address -> bytes or errno.
static DONE: ForkMutex<BTreeMap<usize, Result<usize, i32>>> = ForkMutex::new(40, BTreeMap::new());
static NDONE: AtomicUsize = AtomicUsize::new(0);

fn record(cb: *mut aiocb, r: Res<usize>) {
    let mut m = DONE.lock();
    m.insert(cb as usize, r.map_err(|Errno(e)| e));
    NDONE.store(m.len(), Ordering::Relaxed);
}

fn result(cb: *const aiocb) -> Option<Result<usize, i32>> {
    if cb.is_null() || NDONE.load(Ordering::Relaxed) == 0 {
        return None;
    }
    DONE.lock().get(&(cb as usize)).copied()
}

/// Performs a read or write request on a PLFS descriptor now.
fn submit(cb: *mut aiocb, write: bool) -> Option<c_int> {
    if cb.is_null() {
        return None;
    }
    // SAFETY: the caller's aiocb.
    let c = unsafe { &*cb };
    let e = ours(c.aio_fildes)?;
    Some(run(|| {
        let r = if c.aio_offset < 0 {
            Err(Errno(libc::EINVAL))
        } else if write {
            // SAFETY: the request names a readable buffer of aio_nbytes bytes.
            let b = unsafe { std::slice::from_raw_parts(c.aio_buf.cast::<u8>(), c.aio_nbytes) };
            write_at(&e, c.aio_fildes, b, Some(c.aio_offset as u64))
        } else {
            // SAFETY: the request names a writable buffer of aio_nbytes bytes.
            let b = unsafe { std::slice::from_raw_parts_mut(c.aio_buf.cast::<u8>(), c.aio_nbytes) };
            read_at(&e, c.aio_fildes, b, Some(c.aio_offset as u64))
        };
        record(cb, r);
        Ok(0)
    }))
}

macro_rules! submit_wrapper {
    ($($(#[$m:meta])* $name:ident => $write:expr;)*) => {$(
        $(#[$m])*
        #[no_mangle]
        pub unsafe extern "C" fn $name(cb: *mut aiocb) -> c_int {
            if let Some(_busy) = enter() {
                if let Some(r) = submit(cb, $write) {
                    return r;
                }
            }
            crate::real!($name(cb): fn(*mut aiocb) -> c_int)
        }
    )*};
}

submit_wrapper! {
    /// aio_read(3).
    aio_read => false;
    /// aio_read64.
    aio_read64 => false;
    /// aio_write(3).
    aio_write => true;
    /// aio_write64.
    aio_write64 => true;
}

macro_rules! error_wrapper {
    ($($(#[$m:meta])* $name:ident;)*) => {$(
        $(#[$m])*
        #[no_mangle]
        pub unsafe extern "C" fn $name(cb: *const aiocb) -> c_int {
            match result(cb) {
                Some(Ok(_)) => 0,
                Some(Err(e)) => e,
                None => crate::real!($name(cb): fn(*const aiocb) -> c_int),
            }
        }
    )*};
}

error_wrapper! {
    /// aio_error(3).
    aio_error;
    /// aio_error64.
    aio_error64;
}

macro_rules! return_wrapper {
    ($($(#[$m:meta])* $name:ident;)*) => {$(
        $(#[$m])*
        #[no_mangle]
        pub unsafe extern "C" fn $name(cb: *mut aiocb) -> ssize_t {
            if result(cb).is_some() {
                let r = {
                    let mut m = DONE.lock();
                    let r = m.remove(&(cb as usize));
                    NDONE.store(m.len(), Ordering::Relaxed);
                    r
                };
                return match r {
                    Some(Ok(n)) => n as ssize_t,
                    Some(Err(e)) => {
                        crate::rt::errno::set_errno(e);
                        -1
                    }
                    None => -1,
                };
            }
            crate::real!($name(cb): fn(*mut aiocb) -> ssize_t)
        }
    )*};
}

return_wrapper! {
    /// aio_return(3).
    aio_return;
    /// aio_return64.
    aio_return64;
}

macro_rules! suspend_wrapper {
    ($($(#[$m:meta])* $name:ident;)*) => {$(
        $(#[$m])*
        #[no_mangle]
        pub unsafe extern "C" fn $name(list: *const *const aiocb, n: c_int, t: *const timespec) -> c_int {
            if !list.is_null() && n > 0 && NDONE.load(Ordering::Relaxed) > 0 {
                // SAFETY: the caller's array of n (possibly NULL) pointers.
                let v = unsafe { std::slice::from_raw_parts(list, n as usize) };
                // One of ours is complete: so is the wait.
                if v.iter().any(|&cb| result(cb).is_some()) {
                    return 0;
                }
            }
            crate::real!($name(list, n, t): fn(*const *const aiocb, c_int, *const timespec) -> c_int)
        }
    )*};
}

suspend_wrapper! {
    /// aio_suspend(3).
    aio_suspend;
    /// aio_suspend64.
    aio_suspend64;
}

macro_rules! cancel_wrapper {
    ($($(#[$m:meta])* $name:ident;)*) => {$(
        $(#[$m])*
        #[no_mangle]
        pub unsafe extern "C" fn $name(fd: c_int, cb: *mut aiocb) -> c_int {
            if let Some(_busy) = enter() {
                if ours(fd).is_some() {
                    return libc::AIO_ALLDONE;
                }
            }
            crate::real!($name(fd, cb): fn(c_int, *mut aiocb) -> c_int)
        }
    )*};
}

cancel_wrapper! {
    /// aio_cancel(3): PLFS requests are already done.
    aio_cancel;
    /// aio_cancel64.
    aio_cancel64;
}

macro_rules! fsync_wrapper {
    ($($(#[$m:meta])* $name:ident;)*) => {$(
        $(#[$m])*
        #[no_mangle]
        pub unsafe extern "C" fn $name(op: c_int, cb: *mut aiocb) -> c_int {
            if let Some(_busy) = enter() {
                if !cb.is_null() {
                    // SAFETY: the caller's aiocb.
                    let fd = unsafe { (*cb).aio_fildes };
                    if let Some(e) = ours(fd) {
                        let r = std::panic::catch_unwind(|| sync_entry(&e)).unwrap_or(Err(Errno(libc::EIO)));
                        record(cb, r.map(|_| 0));
                        return 0;
                    }
                }
            }
            crate::real!($name(op, cb): fn(c_int, *mut aiocb) -> c_int)
        }
    )*};
}

fsync_wrapper! {
    /// aio_fsync(3).
    aio_fsync;
    /// aio_fsync64.
    aio_fsync64;
}
