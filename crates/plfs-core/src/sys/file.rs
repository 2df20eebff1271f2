//! [`File`]: an open backend file (a data or index log, a marker, a plain N-N file), with
//! positional I/O that retries short transfers and names the file in every error.

use super::failpoint::{armed, hit};
use super::fd::{self, Fd};
use super::{high, RawStat};
use crate::error::{Error, Result};
use rustix::fs;
use rustix::io::Errno;
use std::path::{Path, PathBuf};

/// An open backend file and its display path.
#[derive(Debug)]
pub struct File {
    fd: Fd,
    path: PathBuf,
    /// Opened `O_DIRECT` (reads past a page cache that can be stale, `super::coherence`).
    pub(super) direct: bool,
}

impl File {
    pub(super) fn new(fd: Fd, path: PathBuf) -> File {
        File {
            fd,
            path,
            direct: false,
        }
    }

    /// Whether reads go past the page cache (`O_DIRECT`): each one is a round trip to the file
    /// system, with no readahead of the kernel's.
    pub fn is_direct(&self) -> bool {
        self.direct
    }

    /// Opens a plain file by absolute backend path without following a final link, with the
    /// access mode given (N-N files, files fsck is pointed at).
    pub fn open_path(path: &Path, read: bool, write: bool) -> Result<File> {
        use rustix::fs::{Mode, OFlags};
        hit("sys::open", "open", path)?;
        let acc = match (read, write) {
            (_, false) => OFlags::RDONLY,
            (false, true) => OFlags::WRONLY,
            (true, true) => OFlags::RDWR,
        };
        let fd = fd::open(path, acc | OFlags::NOFOLLOW | OFlags::CLOEXEC, Mode::empty())
            .map_err(|e| Error::io(path, "open", e))?;
        Ok(File::new(fd, path.to_path_buf()))
    }

    /// Moves the descriptor to the high range (for descriptors kept open for long).
    pub fn kept(mut self) -> File {
        self.fd = high(self.fd);
        self
    }

    /// The display path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Positional read that fills as much of `buf` as the file has; returns the bytes read.
    #[inline(always)]
    pub fn pread_full(&self, buf: &mut [u8], off: u64) -> Result<usize> {
        // Every read through the merged index comes here: the common case, one pread that fills
        // `buf` (or finds the end), is inlined into the caller (no call, no registers saved of
        // its own); everything else (the failpoint, an error, a short read) is out of line, given
        // what the first pread answered.
        let first = if armed() {
            None
        } else {
            let r = rustix::io::pread(&self.fd, &mut *buf, off);
            if let Ok(n) = r {
                if n == buf.len() || n == 0 {
                    return Ok(n);
                }
            }
            Some(r)
        };
        self.pread_slow(buf, off, first)
    }

    /// [`File::pread_full`] past its fast path: `first` is what its pread answered (`None`: a
    /// failpoint is armed and none was made).
    #[cold]
    #[inline(never)]
    fn pread_slow(&self, buf: &mut [u8], off: u64, first: Option<rustix::io::Result<usize>>) -> Result<usize> {
        match first {
            Some(Ok(n)) => return self.pread_from(buf, off, n),
            Some(Err(Errno::INTR)) | None => {}
            Some(Err(e)) => return Err(self.io_error("pread", e)),
        }
        hit("sys::pread", "pread", &self.path)?;
        self.pread_from(buf, off, 0)
    }

    /// [`File::pread_full`] after `done` bytes.
    #[inline(never)]
    fn pread_from(&self, buf: &mut [u8], off: u64, mut done: usize) -> Result<usize> {
        while done < buf.len() {
            match rustix::io::pread(&self.fd, &mut buf[done..], off + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(Errno::INTR) => continue,
                Err(e) => return Err(Error::io(&self.path, "pread", e)),
            }
        }
        Ok(done)
    }

    /// Positional scatter read (one `preadv` where the kernel fills it whole) that fills as much
    /// of `bufs` as the file has; returns the bytes read.
    pub fn preadv_full(&self, mut bufs: &mut [std::io::IoSliceMut<'_>], off: u64) -> Result<usize> {
        hit("sys::pread", "pread", &self.path)?;
        let mut done = 0;
        while bufs.iter().any(|b| !b.is_empty()) {
            match rustix::io::preadv(&self.fd, bufs, off + done as u64) {
                Ok(0) => break,
                Ok(n) => {
                    done += n;
                    std::io::IoSliceMut::advance_slices(&mut bufs, n);
                }
                Err(Errno::INTR) => continue,
                Err(e) => return Err(Error::io(&self.path, "pread", e)),
            }
        }
        Ok(done)
    }

    /// Reads from `off` until `pread` reports the end of the file (`hint`: the bytes expected,
    /// from a size that may be stale).
    pub fn read_to_end_from(&self, off: u64, hint: u64) -> Result<Vec<u8>> {
        let mut b = vec![0u8; (hint as usize).max(4096)];
        let mut len = 0usize;
        loop {
            let n = self.pread_full(&mut b[len..], off + len as u64)?;
            len += n;
            if len < b.len() {
                b.truncate(len);
                return Ok(b);
            }
            b.resize(b.len() * 2, 0);
        }
    }

    /// Reads the whole file from offset `off` to its current end: to where a read finds the end,
    /// not only to the size fstat gives, which can lag behind the bytes on a network file system
    /// (a log read short would lose records to a repair or a compaction that rewrites it). The
    /// buffer is one byte longer than the size says: a file that long takes one `pread`, and the
    /// next one finds its end.
    pub fn read_from(&self, off: u64) -> Result<Vec<u8>> {
        let len = self.size()?;
        self.read_to_end_from(off, len.saturating_sub(off).saturating_add(1))
    }

    /// Positional write of all of `data`; an error if any of it could not be written (callers
    /// that must report the bytes that did land use [`File::pwrite_some`]).
    pub fn pwrite_all(&self, data: &[u8], off: u64) -> Result<()> {
        match self.pwrite_some(data, off) {
            (n, None) if n == data.len() => Ok(()),
            (_, Some(e)) => Err(e),
            (_, None) => Err(Error::io(&self.path, "pwrite", Errno::NOSPC)),
        }
    }

    /// Positional write of as much of `data` as the backend takes: returns the bytes written and
    /// the error that stopped it, if any (so a write that hit `ENOSPC` part-way can report the
    /// bytes that did land).
    pub fn pwrite_some(&self, data: &[u8], off: u64) -> (usize, Option<Error>) {
        if let Err(e) = hit("sys::pwrite_all", "pwrite", &self.path) {
            return (0, Some(e));
        }
        let mut done = 0;
        while done < data.len() {
            match rustix::io::pwrite(&self.fd, &data[done..], off + done as u64) {
                Ok(0) => return (done, Some(Error::io(&self.path, "pwrite", Errno::NOSPC))),
                Ok(n) => done += n,
                Err(Errno::INTR) => continue,
                Err(e) => return (done, Some(Error::io(&self.path, "pwrite", e))),
            }
        }
        (done, None)
    }

    /// Positional write of `head` followed by `body` in one system call where the kernel takes
    /// them whole (`pwritev`). Returns how much of `body` was written and the error that stopped
    /// it, as [`File::pwrite_some`] does (no byte of `body` counts unless all of `head` landed).
    #[inline]
    pub fn pwrite_two(&self, head: &[u8], body: &[u8], off: u64) -> (usize, Option<Error>) {
        // Every write comes here: the common case, one pwritev that takes both whole, stays
        // inline; the rest is out of line (as in `pread_full`).
        if !armed() {
            let iov = [std::io::IoSlice::new(head), std::io::IoSlice::new(body)];
            match rustix::io::pwritev(&self.fd, &iov, off) {
                Ok(n) if n == head.len() + body.len() => return (body.len(), None),
                Ok(n) => return self.pwrite_two_after(head, body, off, n),
                Err(Errno::INTR) => {}
                Err(e) => return (0, Some(self.io_error("pwrite", e))),
            }
        }
        self.pwrite_two_slow(head, body, off)
    }

    /// [`File::pwrite_two`] past its fast path: the failpoint, then the whole loop.
    #[inline(never)]
    fn pwrite_two_slow(&self, head: &[u8], body: &[u8], off: u64) -> (usize, Option<Error>) {
        if let Err(e) = hit("sys::pwrite_all", "pwrite", &self.path) {
            return (0, Some(e));
        }
        let n = loop {
            let iov = [std::io::IoSlice::new(head), std::io::IoSlice::new(body)];
            match rustix::io::pwritev(&self.fd, &iov, off) {
                Err(Errno::INTR) => continue,
                Err(e) => return (0, Some(Error::io(&self.path, "pwrite", e))),
                Ok(n) => break n,
            }
        };
        self.pwrite_two_after(head, body, off, n)
    }

    /// [`File::pwrite_two`] after its pwritev wrote `n` bytes, not all of them.
    #[inline(never)]
    fn pwrite_two_after(&self, head: &[u8], body: &[u8], off: u64, n: usize) -> (usize, Option<Error>) {
        if n < head.len() {
            if let Err(e) = self.pwrite_all(&head[n..], off + n as u64) {
                return (0, Some(e));
            }
            return self.pwrite_some(body, off + head.len() as u64);
        }
        let done = n - head.len();
        if done == body.len() {
            return (done, None);
        }
        let (more, e) = self.pwrite_some(&body[done..], off + n as u64);
        (done + more, e)
    }

    /// The error of call `op` on this file (out of line: the fast paths above only branch to it).
    #[cold]
    #[inline(never)]
    fn io_error(&self, op: &'static str, e: Errno) -> Error {
        Error::io(&self.path, op, e)
    }

    /// Takes a shared flock(2) on the file, waiting while someone holds it exclusively (a 1-N
    /// writer holds one on its own log, so that a compaction never retires a log still being
    /// appended to). `Ok(false)` when the backend has no flock.
    pub fn lock_shared(&self) -> Result<bool> {
        self.flock_wait(fs::FlockOperation::LockShared)
    }

    /// Takes an exclusive flock(2) on the file, waiting while anyone else holds one. `Ok(false)`
    /// when the backend has no flock.
    pub fn lock_exclusive(&self) -> Result<bool> {
        self.flock_wait(fs::FlockOperation::LockExclusive)
    }

    fn flock_wait(&self, op: fs::FlockOperation) -> Result<bool> {
        loop {
            match fs::flock(&self.fd, op) {
                Ok(()) => return Ok(true),
                Err(Errno::INTR) => continue,
                Err(e) if super::unsupported(e) || e == Errno::NOLCK || e == Errno::BADF => return Ok(false),
                Err(e) => return Err(Error::io(&self.path, "flock", e)),
            }
        }
    }

    /// Lets go of this description's flock(2).
    pub fn unlock(&self) -> Result<()> {
        fs::flock(&self.fd, fs::FlockOperation::Unlock).map_err(|e| Error::io(&self.path, "flock", e))
    }

    /// Appends `buf` at the end of the file as one atomic step of the kernel (`pwritev2` with
    /// `RWF_APPEND`: writes of other processes never land in between, as with `O_APPEND`);
    /// returns where it landed and how many bytes did. Backends that refuse the flag get a
    /// size then a write, which is not atomic.
    pub fn append(&self, buf: &[u8]) -> Result<(u64, usize)> {
        hit("sys::pwrite_all", "pwrite", &self.path)?;
        let iov = [std::io::IoSlice::new(buf)];
        loop {
            match rustix::io::pwritev2(&self.fd, &iov, u64::MAX, rustix::io::ReadWriteFlags::APPEND) {
                Ok(n) => {
                    // The description's position is just past what this call appended.
                    let end =
                        fs::seek(&self.fd, fs::SeekFrom::Current(0)).map_err(|e| Error::io(&self.path, "lseek", e))?;
                    return Ok((end - n as u64, n));
                }
                Err(Errno::INTR) => continue,
                Err(Errno::OPNOTSUPP) | Err(Errno::INVAL) | Err(Errno::NOSYS) => break,
                Err(e) => return Err(Error::io(&self.path, "pwrite", e)),
            }
        }
        let off = self.size()?;
        self.pwrite_all(buf, off)?;
        Ok((off, buf.len()))
    }

    /// Tries to take an exclusive flock(2) on the file without waiting: `Some(true)` if nobody
    /// else holds a lock on it, `Some(false)` if someone does, `None` when the backend has no
    /// flock.
    pub fn try_lock_exclusive(&self) -> Result<Option<bool>> {
        match fs::flock(&self.fd, fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => Ok(Some(true)),
            Err(Errno::WOULDBLOCK) | Err(Errno::INTR) => Ok(Some(false)),
            Err(e) if super::unsupported(e) || e == Errno::NOLCK || e == Errno::BADF => Ok(None),
            Err(e) => Err(Error::io(&self.path, "flock", e)),
        }
    }

    /// Closes the file and reports what close(2) answers. On a network file system a write that
    /// returned can still fail afterwards, in the client's write-behind (GlusterFS) or
    /// write-back (NFS): the error comes with the close, as it comes to a program closing a
    /// plain file, and a writer that let its descriptors go without looking would publish
    /// bytes its backend never kept (design.md, "Crash semantics", `close`). The descriptor is
    /// released whatever the answer; an interrupted close (`EINTR`) released it too and is no
    /// error. Failpoint `sys::close` reports its errno after the descriptor is closed.
    pub fn close(self) -> Result<()> {
        let fired = hit("sys::close", "close", &self.path);
        let r = self.fd.close();
        fired?;
        match r {
            Ok(()) | Err(Errno::INTR) => Ok(()),
            Err(e) => Err(Error::io(&self.path, "close", e)),
        }
    }

    /// What closing the file would report now, without closing it: a duplicate of the
    /// descriptor is closed instead. A close of any descriptor of an open file makes the client
    /// of a network file system send what it holds back (FUSE's FLUSH, NFS's write-back) and
    /// answer with the errors of writes that had returned, as [`File::close`] does. For a
    /// descriptor that stays open after the logical file's close (an N-N file's, whose handle
    /// closes it when it is dropped). Two system calls; the caller skips it on a local file
    /// system, whose close(2) never reports a write's error.
    pub fn close_errors(&self) -> Result<()> {
        let dup = fd::dupfd_cloexec(&self.fd, 0).map_err(|e| Error::io(&self.path, "dup", e))?;
        File::new(dup, self.path.clone()).close()
    }

    /// fsync.
    pub fn fsync(&self) -> Result<()> {
        hit("sys::fsync", "fsync", &self.path)?;
        fs::fsync(&self.fd).map_err(|e| Error::io(&self.path, "fsync", e))
    }

    /// fstat.
    pub fn stat(&self) -> Result<RawStat> {
        if !self.fd.trusted() {
            // Its number was closed behind the core's back (`fd::lost`): what fstat of the
            // descriptor standing in for it says is not this file's.
            return Err(Error::io(&self.path, "fstat", Errno::BADF));
        }
        fs::fstat(&self.fd).map_err(|e| Error::io(&self.path, "fstat", e))
    }

    /// Current size in bytes.
    pub fn size(&self) -> Result<u64> {
        Ok(self.stat()?.st_size.max(0) as u64)
    }

    /// ftruncate.
    pub fn truncate(&self, len: u64) -> Result<()> {
        hit("sys::ftruncate", "ftruncate", &self.path)?;
        fs::ftruncate(&self.fd, len).map_err(|e| Error::io(&self.path, "ftruncate", e))
    }

    /// fchmod.
    pub fn chmod(&self, mode: u32) -> Result<()> {
        hit("sys::setattr", "chmod", &self.path)?;
        fs::fchmod(&self.fd, fs::Mode::from_raw_mode(mode)).map_err(|e| Error::io(&self.path, "chmod", e))
    }

    /// futimens.
    pub fn set_times(&self, atime: super::TimeSpec, mtime: super::TimeSpec) -> Result<()> {
        hit("sys::setattr", "utimensat", &self.path)?;
        fs::futimens(&self.fd, &super::timestamps(atime, mtime)).map_err(|e| Error::io(&self.path, "utimensat", e))
    }

    /// fchown (`u32::MAX` leaves an id unchanged).
    pub fn chown(&self, uid: u32, gid: u32) -> Result<()> {
        hit("sys::setattr", "chown", &self.path)?;
        let u = (uid != u32::MAX).then(|| fs::Uid::from_raw(uid));
        let g = (gid != u32::MAX).then(|| fs::Gid::from_raw(gid));
        fs::fchown(&self.fd, u, g).map_err(|e| Error::io(&self.path, "chown", e))
    }
}
