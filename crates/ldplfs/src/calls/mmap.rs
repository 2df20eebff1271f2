//! Mappings: mmap of a PLFS file gives a private copy filled by read (MAP_PRIVATE) or the
//! node's shared copy of the file (MAP_SHARED, see [`crate::file::shm`]); munmap and msync write
//! shared mappings back.

use crate::fd::entry::{file_of, Entry, Kind};
use crate::fd::table::ours;
use crate::file::init::enter;
use crate::file::io::check_read;
use crate::rt::errno::{Errno, Res};
use libc::{c_int, c_void, off64_t, off_t, size_t};
use std::sync::Arc;

fn map_plfs(e: &Arc<Entry>, addr: *mut c_void, len: size_t, prot: c_int, flags: c_int, o: i64) -> Res<*mut c_void> {
    if e.kind != Kind::File || o < 0 || len == 0 {
        return Err(Errno(if e.kind == Kind::File {
            libc::EINVAL
        } else {
            libc::ENODEV
        }));
    }
    if flags & libc::MAP_SHARED != 0 {
        // MAP_SHARED and MAP_SHARED_VALIDATE: the node's shared copy of the file.
        return crate::file::shm::map_shared(e, addr, len, prot, flags, o);
    }
    check_read(e)?;
    let anon = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | (flags & libc::MAP_FIXED);
    // SAFETY: an anonymous private mapping; `addr` is honoured only with MAP_FIXED as the caller asked.
    let p = unsafe { libc::mmap(addr, len, libc::PROT_READ | libc::PROT_WRITE, anon, -1, 0) };
    if p == libc::MAP_FAILED {
        return Err(Errno(crate::rt::errno::errno()));
    }
    // SAFETY: `p` is a fresh writable mapping of `len` bytes.
    let buf = unsafe { std::slice::from_raw_parts_mut(p.cast::<u8>(), len) };
    let mut st = e.lock();
    let f = file_of(e, &mut st)?;
    f.read(buf, o as u64)?;
    // SAFETY: changes the protection of the mapping created above.
    unsafe { libc::mprotect(p, len, prot) };
    Ok(p)
}

/// mmap(2): a PLFS file maps as a private copy filled by read (MAP_PRIVATE), or as the node's
/// shared copy of the file (MAP_SHARED, see [`crate::file::shm`]).
#[no_mangle]
pub unsafe extern "C" fn mmap(
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    o: off_t,
) -> *mut c_void {
    if fd >= 0 {
        if let Some(_busy) = enter() {
            if let Some(e) = ours(fd) {
                return match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    map_plfs(&e, addr, len, prot, flags, o)
                })) {
                    Ok(Ok(p)) => p,
                    Ok(Err(Errno(x))) => {
                        crate::rt::errno::set_errno(x);
                        libc::MAP_FAILED
                    }
                    Err(_) => {
                        crate::rt::errno::set_errno(libc::EIO);
                        libc::MAP_FAILED
                    }
                };
            }
        }
    }
    crate::real!(mmap(addr, len, prot, flags, fd, o): fn(*mut c_void, size_t, c_int, c_int, c_int, off_t) -> *mut c_void)
}

/// mmap64.
#[no_mangle]
pub unsafe extern "C" fn mmap64(
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    o: off64_t,
) -> *mut c_void {
    // SAFETY: same contract as mmap (off_t is 64-bit on the supported targets).
    unsafe { mmap(addr, len, prot, flags, fd, o) }
}

/// munmap(2): shared mappings of PLFS files are written back first.
#[no_mangle]
pub unsafe extern "C" fn munmap(addr: *mut c_void, len: size_t) -> c_int {
    if crate::file::shm::active() {
        if let Some(_busy) = enter() {
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| crate::file::shm::unmap(addr, len))) {
                Ok(Some(r)) => return r,
                Ok(None) => {}
                Err(_) => crate::rt::log::warn(format_args!("internal error (panic) in munmap")),
            }
        }
    }
    crate::real!(munmap(addr, len): fn(*mut c_void, size_t) -> c_int)
}

/// msync(2): shared mappings of PLFS files are written back to PLFS.
#[no_mangle]
pub unsafe extern "C" fn msync(addr: *mut c_void, len: size_t, flags: c_int) -> c_int {
    if crate::file::shm::active() {
        if let Some(_busy) = enter() {
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| crate::file::shm::sync(addr, len))) {
                Ok(Some(Err(Errno(x)))) => {
                    crate::rt::errno::set_errno(x);
                    return -1;
                }
                Ok(_) => {}
                Err(_) => {
                    crate::rt::errno::set_errno(libc::EIO);
                    return -1;
                }
            }
        }
    }
    crate::real!(msync(addr, len, flags): fn(*mut c_void, size_t, c_int) -> c_int)
}
