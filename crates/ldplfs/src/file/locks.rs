//! fcntl byte-range locks on PLFS files. A placeholder is private to its process, so locks are
//! taken (with the real fcntl and the same byte ranges) on a lock file that every process
//! opening the same container shares: `/dev/shm/ldplfs-<uid>/<hash of the container path>.lock`.
//! This gives real cross-process exclusion on one node (ROMIO data sieving, OMPIO); processes
//! on different nodes do not see each other's locks (see the README).

use crate::fd::entry::{bump_epoch, file_of, Entry, Kind};
use crate::fd::table::publish_all;
use crate::file::{io, shm};
use crate::rt::errno::{Errno, Res};
use libc::c_int;
use std::os::unix::ffi::OsStrExt;

fn fnv1a(b: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &x in b {
        h ^= u64::from(x);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The lock file descriptor of an entry, opened at first use.
fn lock_fd(e: &Entry) -> Res<c_int> {
    let mut st = e.lock();
    if st.lock_fd >= 0 {
        return Ok(st.lock_fd);
    }
    let cpath = file_of(e, &mut st)?.container_path().as_os_str().as_bytes().to_vec();
    let dir = shm::private_dir()?;
    let path = format!("{dir}/{:016x}.lock", fnv1a(&cpath));
    let fd = rustix::fs::open(
        path.as_str(),
        rustix::fs::OFlags::RDWR
            | rustix::fs::OFlags::CREATE
            | rustix::fs::OFlags::NOFOLLOW
            | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .map_err(|e| Errno(e.raw_os_error()))?;
    // Far from the numbers programs manage themselves (0-9, dup2 targets).
    let high = rustix::io::fcntl_dupfd_cloexec(&fd, 700).map_err(|e| Errno(e.raw_os_error()))?;
    drop(fd);
    st.lock_fd = rustix::fd::IntoRawFd::into_raw_fd(high);
    Ok(st.lock_fd)
}

/// F_GETLK/F_SETLK/F_SETLKW (and the OFD forms) on a PLFS descriptor.
pub fn fcntl_lock(e: &Entry, fd: c_int, cmd: c_int, arg: *mut libc::flock) -> Res<c_int> {
    if e.kind != Kind::File {
        return Err(Errno(libc::EBADF));
    }
    if arg.is_null() {
        return Err(Errno(libc::EFAULT));
    }
    // SAFETY: the caller passed a struct flock.
    let mut fl = unsafe { *arg };
    let base = match fl.l_whence as c_int {
        libc::SEEK_SET => 0,
        libc::SEEK_CUR => io::tell(e, fd)?,
        libc::SEEK_END => io::size_of(e)? as i64,
        _ => return Err(Errno(libc::EINVAL)),
    };
    fl.l_start = fl.l_start.checked_add(base).ok_or(Errno(libc::EOVERFLOW))?;
    fl.l_whence = libc::SEEK_SET as i16;
    let acc = e.flags() & libc::O_ACCMODE;
    if cmd != libc::F_GETLK && cmd != libc::F_OFD_GETLK {
        match fl.l_type as c_int {
            libc::F_RDLCK if acc == libc::O_WRONLY => return Err(Errno(libc::EBADF)),
            libc::F_WRLCK if acc == libc::O_RDONLY => return Err(Errno(libc::EBADF)),
            _ => {}
        }
    }
    let lfd = lock_fd(e)?;
    let unlock = fl.l_type as c_int == libc::F_UNLCK;
    if unlock && cmd != libc::F_GETLK && cmd != libc::F_OFD_GETLK {
        // Publish our writes before another process can take the range: those to every file,
        // not only this one (SQLite locks the `-shm` file while it writes the `-wal` file, whose
        // frames the next holder of the lock reads).
        publish_all()?;
    }
    let r = crate::real!(fcntl(lfd, cmd, &mut fl as *mut libc::flock): fn(c_int, c_int, *mut libc::flock) -> c_int);
    if r < 0 {
        return Err(Errno(crate::rt::errno::errno()));
    }
    if cmd == libc::F_GETLK || cmd == libc::F_OFD_GETLK {
        // SAFETY: as above.
        unsafe { *arg = fl };
    } else if !unlock {
        // We now hold the range: see what the previous holder wrote.
        bump_epoch();
    }
    Ok(r)
}
