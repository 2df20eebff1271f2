//! Data operations on an open PLFS file, shared by the interposers that reach them (read/write
//! and their vector and positional forms, stdio cookie streams, AIO, fcntl locks, mmap).
//!
//! Each read or write at the file position holds the entry's lock from reading the position to
//! moving it, so threads sharing a descriptor never transfer at the same offset. The position is
//! kept in the process while no other process shares the description, else it is the
//! placeholder's kernel offset (see `fd::entry`).

use crate::fd::entry::{self, file_of, Entry, FileState, Kind};
use crate::rt::errno::{Errno, Res};
use crate::rt::real::sys;
use crate::rt::report::{self, Count};
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

/// Where a read or write at the file position starts, and how the position moves after it.
enum Cursor {
    /// The position kept in this process (see `fd::entry`).
    Local(u64),
    /// The kernel offset, already moved past `len` bytes from `off` by one lseek: the range is
    /// ours even if another process sharing the description moves the offset meanwhile.
    Reserved { off: u64, len: u64 },
    /// The kernel offset, read (a range too large to reserve).
    Kernel(u64),
}

impl Cursor {
    /// The cursor of a transfer of `len` bytes at the file position of `fd`.
    fn at_position(st: &FileState, fd: i32, len: usize) -> Res<Cursor> {
        if let Some(p) = st.pos {
            return Ok(Cursor::Local(p));
        }
        if let Ok(l) = i64::try_from(len) {
            match sys::lseek(fd, l, libc::SEEK_CUR) {
                Ok(end) => {
                    return Ok(Cursor::Reserved {
                        off: (end - l) as u64,
                        len: len as u64,
                    })
                }
                // Past the largest offset: read it, let the I/O report what is wrong.
                Err(Errno(libc::EINVAL)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(Cursor::Kernel(sys::lseek(fd, 0, libc::SEEK_CUR)? as u64))
    }

    fn off(&self) -> u64 {
        match *self {
            Cursor::Local(o) | Cursor::Reserved { off: o, .. } | Cursor::Kernel(o) => o,
        }
    }

    /// Moves the position past the `done` bytes transferred (None: the call failed, the
    /// position stays where it was). The position kept in the process is the common case, inline;
    /// the kernel's, which takes a system call, is out of line.
    #[inline]
    fn settle(self, st: &mut FileState, fd: i32, done: Option<u64>) -> Res<()> {
        match self {
            Cursor::Local(p) => {
                if let Some(n) = done {
                    st.pos = Some(p + n);
                }
                Ok(())
            }
            kernel => kernel.settle_kernel(fd, done),
        }
    }

    /// [`Cursor::settle`] of a position the kernel keeps.
    #[cold]
    #[inline(never)]
    fn settle_kernel(self, fd: i32, done: Option<u64>) -> Res<()> {
        match self {
            Cursor::Local(_) => {}
            Cursor::Reserved { len, .. } => {
                let n = done.unwrap_or(0);
                if n < len {
                    // Give back what was reserved and not transferred (a read at the end).
                    sys::lseek(fd, -((len - n) as i64), libc::SEEK_CUR)?;
                }
            }
            Cursor::Kernel(o) => {
                if let Some(n) = done {
                    sys::lseek(fd, (o + n) as i64, libc::SEEK_SET)?;
                }
            }
        }
        Ok(())
    }
}

/// Reads at `at` (None: at the file position, which advances).
pub fn read_at(e: &Entry, fd: i32, buf: &mut [u8], at: Option<u64>) -> Res<usize> {
    check_read(e)?;
    let mut st = e.lock();
    let cur = match at {
        Some(_) => None,
        None => Some(Cursor::at_position(&st, fd, buf.len())?),
    };
    let off = at.or(cur.as_ref().map(Cursor::off)).unwrap_or(0);
    let r = (|| {
        let f = file_of(e, &mut st)?;
        // A load of the index begun after this count (the first read's, or the refresh below)
        // saw every write that returned before this call: looking again would find nothing more.
        let loads = f.index_loads();
        let epoch = entry::EPOCH.load(Ordering::Relaxed);
        if e.seen.swap(epoch, Ordering::Relaxed) != epoch {
            f.refresh()?;
        }
        let mut n = f.read(buf, off)?;
        if n < buf.len() && f.index_loads() == loads {
            // At the end as we know it, from an index loaded before this call: look for what
            // other processes wrote since.
            f.refresh()?;
            n += f.read(&mut buf[n..], off + n as u64)?;
        }
        Ok(n)
    })();
    if let Some(c) = cur {
        c.settle(&mut st, fd, r.as_ref().ok().map(|&n| n as u64))?;
    }
    if let Ok(n) = r {
        report::count(Count::Read, n as u64);
    }
    r
}

/// Writes at `at` (None: at the file position, or the end with O_APPEND).
pub fn write_at(e: &Entry, fd: i32, buf: &[u8], at: Option<u64>) -> Res<usize> {
    check_write(e)?;
    let mut st = e.lock();
    let n = match at {
        Some(o) => file_of(e, &mut st)?.write(buf, o)?,
        None if e.flags() & libc::O_APPEND != 0 => {
            let (o, n) = file_of(e, &mut st)?.append(buf)?;
            // The position is the end of what was appended.
            match st.pos {
                Some(_) => st.pos = Some(o + n as u64),
                None => {
                    sys::lseek(fd, (o + n as u64) as i64, libc::SEEK_SET)?;
                }
            }
            n
        }
        None => {
            let cur = Cursor::at_position(&st, fd, buf.len())?;
            let r = file_of(e, &mut st).and_then(|f| Ok(f.write(buf, cur.off())?));
            cur.settle(&mut st, fd, r.as_ref().ok().map(|&n| n as u64))?;
            r?
        }
    };
    if AFTER_EXIT.load(Ordering::Relaxed) {
        entry::close_file(&mut st)?;
    }
    report::count(Count::Write, n as u64);
    Ok(n)
}

/// Logical size of an open file.
pub fn size_of(e: &Entry) -> Res<u64> {
    let mut st = e.lock();
    Ok(file_of(e, &mut st)?.size()?)
}

/// The file position of PLFS descriptor `fd` (fcntl locks relative to SEEK_CUR).
pub fn tell(e: &Entry, fd: i32) -> Res<i64> {
    match e.lock().pos {
        Some(p) => Ok(p as i64),
        None => sys::lseek(fd, 0, libc::SEEK_CUR),
    }
}

/// lseek on a PLFS descriptor: SEEK_SET/SEEK_CUR move the position; SEEK_END, SEEK_DATA and
/// SEEK_HOLE use the logical size (the whole file is data). Errors as the kernel's lseek on the
/// placeholder gives them (EINVAL for a negative or overflowing result).
pub fn seek(e: &Entry, fd: i32, o: i64, whence: c_int) -> Res<i64> {
    if e.kind == Kind::Path {
        return Err(Errno(libc::EBADF));
    }
    let mut st = e.lock();
    let size = |st: &mut FileState| -> Res<i64> {
        if e.kind == Kind::Dir {
            Ok(0)
        } else {
            Ok(file_of(e, st)?.size()? as i64)
        }
    };
    let target = match whence {
        libc::SEEK_SET | libc::SEEK_CUR => match st.pos {
            None => return sys::lseek(fd, o, whence),
            Some(p) if whence == libc::SEEK_CUR => (p as i64).checked_add(o).ok_or(Errno(libc::EINVAL))?,
            Some(_) => o,
        },
        libc::SEEK_END => size(&mut st)?.checked_add(o).ok_or(Errno(libc::EOVERFLOW))?,
        libc::SEEK_DATA | libc::SEEK_HOLE => {
            let s = size(&mut st)?;
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
    match st.pos {
        Some(_) => {
            st.pos = Some(target as u64);
            Ok(target)
        }
        None => sys::lseek(fd, target, libc::SEEK_SET),
    }
}

/// fsync of an open PLFS file: data, then index records, are durable. Of a directory: its
/// entries are (every backend's copy of it is synced). An `O_PATH` descriptor is EBADF, as the
/// kernel says.
pub fn sync_entry(e: &Entry) -> Res<c_int> {
    match e.kind {
        Kind::File => {}
        Kind::Dir => {
            crate::fd::conf::plfs()?.sync_dir(&e.path)?;
            return Ok(0);
        }
        Kind::Path => return Err(Errno(libc::EBADF)),
    }
    let mut st = e.lock();
    file_of(e, &mut st)?.sync()?;
    // A sync point (MPI_File_sync): later reads look for other processes' writes.
    entry::bump_epoch();
    Ok(0)
}
