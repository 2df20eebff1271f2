//! Data operations on an open PLFS file, shared by the interposers that reach them (read/write
//! and their vector and positional forms, stdio cookie streams, AIO, fcntl locks, mmap).
//!
//! The file position is the placeholder's kernel offset: each read/write takes the entry's lock,
//! reads the offset, does the PLFS I/O and stores the new offset.

use crate::fd::entry::{self, file_of, Entry, Kind};
use crate::rt::errno::{Errno, Res};
use crate::rt::real::sys;
use libc::c_int;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once the exit handler has closed every file: a late write then closes its file again.
pub static AFTER_EXIT: AtomicBool = AtomicBool::new(false);

pub fn check_read(e: &Entry) -> Res<()> {
    match e.kind {
        Kind::Dir => Err(Errno(libc::EISDIR)),
        Kind::Path => Err(Errno(libc::EBADF)),
        Kind::File if e.flags() & libc::O_ACCMODE == libc::O_WRONLY => Err(Errno(libc::EBADF)),
        Kind::File => Ok(()),
    }
}

pub fn check_write(e: &Entry) -> Res<()> {
    match e.kind {
        Kind::File if e.flags() & libc::O_ACCMODE != libc::O_RDONLY => Ok(()),
        _ => Err(Errno(libc::EBADF)),
    }
}

/// Reads at `at` (None: at the file position, which advances).
pub fn read_at(e: &Entry, fd: i32, buf: &mut [u8], at: Option<u64>) -> Res<usize> {
    check_read(e)?;
    let mut st = e.lock();
    let f = file_of(e, &mut st)?;
    let epoch = entry::EPOCH.load(Ordering::Relaxed);
    if e.seen.swap(epoch, Ordering::Relaxed) != epoch {
        f.refresh()?;
    }
    let off = match at {
        Some(o) => o,
        None => sys::lseek(fd, 0, libc::SEEK_CUR)? as u64,
    };
    let mut n = f.read(buf, off)?;
    if n < buf.len() {
        // At the end as we know it: look for what other processes wrote since we loaded the index.
        f.refresh()?;
        n += f.read(&mut buf[n..], off + n as u64)?;
    }
    if at.is_none() {
        sys::lseek(fd, (off + n as u64) as i64, libc::SEEK_SET)?;
    }
    Ok(n)
}

/// Writes at `at` (None: at the file position, or the end with O_APPEND).
pub fn write_at(e: &Entry, fd: i32, buf: &[u8], at: Option<u64>) -> Res<usize> {
    check_write(e)?;
    let mut st = e.lock();
    let f = file_of(e, &mut st)?;
    let n = match at {
        Some(o) => f.write(buf, o)?,
        None if e.flags() & libc::O_APPEND != 0 => {
            let (o, n) = f.append(buf)?;
            sys::lseek(fd, (o + n as u64) as i64, libc::SEEK_SET)?;
            n
        }
        None => {
            let o = sys::lseek(fd, 0, libc::SEEK_CUR)? as u64;
            let n = f.write(buf, o)?;
            sys::lseek(fd, (o + n as u64) as i64, libc::SEEK_SET)?;
            n
        }
    };
    if AFTER_EXIT.load(Ordering::Relaxed) {
        entry::close_file(&mut st)?;
    }
    Ok(n)
}

/// Logical size of an open file.
pub fn size_of(e: &Entry) -> Res<u64> {
    let mut st = e.lock();
    Ok(file_of(e, &mut st)?.size()?)
}

/// lseek on a PLFS descriptor: SEEK_SET/SEEK_CUR move the placeholder offset; SEEK_END,
/// SEEK_DATA and SEEK_HOLE use the logical size (the whole file is data).
pub fn seek(e: &Entry, fd: i32, o: i64, whence: c_int) -> Res<i64> {
    if e.kind == Kind::Path {
        return Err(Errno(libc::EBADF));
    }
    let size = || -> Res<i64> {
        if e.kind == Kind::Dir {
            Ok(0)
        } else {
            Ok(size_of(e)? as i64)
        }
    };
    let target = match whence {
        libc::SEEK_SET | libc::SEEK_CUR => return sys::lseek(fd, o, whence),
        libc::SEEK_END => size()?.checked_add(o).ok_or(Errno(libc::EOVERFLOW))?,
        libc::SEEK_DATA | libc::SEEK_HOLE => {
            let s = size()?;
            if o < 0 {
                return Err(Errno(libc::EINVAL));
            }
            if o >= s {
                return Err(Errno(libc::ENXIO));
            }
            if whence == libc::SEEK_DATA {
                o
            } else {
                s
            }
        }
        _ => return Err(Errno(libc::EINVAL)),
    };
    if target < 0 {
        return Err(Errno(libc::EINVAL));
    }
    sys::lseek(fd, target, libc::SEEK_SET)
}

/// fsync of an open PLFS file: data, then index records, are durable.
pub fn sync_entry(e: &Entry) -> Res<c_int> {
    if e.kind != Kind::File {
        return Ok(0);
    }
    let mut st = e.lock();
    file_of(e, &mut st)?.sync()?;
    // A sync point (MPI_File_sync): later reads look for other processes' writes.
    entry::bump_epoch();
    Ok(0)
}
