//! N-N ("flat file", `workload: file_per_proc | n-n`) mode: each logical file is one plain file on
//! canonical backend `hash(basename) % n`, so a directory's files (and their metadata load) are
//! spread over the backends; directories exist on every backend and readdir merges them.

use crate::error::Result;
use crate::fs::{FileKind, Stat, BLKSIZE};
use crate::sys;
use rustix::fd::OwnedFd;
use std::path::PathBuf;

/// An open N-N file.
#[derive(Debug)]
pub struct PlainFile {
    /// Its backend path (for messages).
    pub path: PathBuf,
    fd: OwnedFd,
}

impl PlainFile {
    /// Opens (without creating) the backend file with the access mode of `flags`.
    pub fn open(path: PathBuf, read: bool, write: bool) -> Result<PlainFile> {
        use rustix::fs::OFlags;
        let acc = match (read, write) {
            (_, false) => OFlags::RDONLY,
            (false, true) => OFlags::WRONLY,
            (true, true) => OFlags::RDWR,
        };
        let fd = sys::open(&path, acc | OFlags::NOFOLLOW, 0)?;
        Ok(PlainFile {
            path,
            fd: sys::high(fd),
        })
    }

    /// Positional write.
    pub fn write(&self, buf: &[u8], off: u64) -> Result<usize> {
        sys::pwrite_all(&self.fd, &self.path, buf, off)?;
        Ok(buf.len())
    }

    /// Positional read (short only at end of file).
    pub fn read(&self, buf: &mut [u8], off: u64) -> Result<usize> {
        sys::pread_full(&self.fd, &self.path, buf, off)
    }

    /// Current size.
    pub fn size(&self) -> Result<u64> {
        Ok(sys::fstat(&self.fd, &self.path)?.st_size as u64)
    }

    /// fsync.
    pub fn sync(&self) -> Result<()> {
        sys::fsync(&self.fd, &self.path)
    }

    /// ftruncate.
    pub fn truncate(&self, size: u64) -> Result<()> {
        sys::ftruncate(&self.fd, &self.path, size)
    }

    /// fstat as a logical stat.
    pub fn stat(&self) -> Result<Stat> {
        let mut st = crate::fs::raw_to_stat(&sys::fstat(&self.fd, &self.path)?, FileKind::File);
        st.blksize = BLKSIZE;
        Ok(st)
    }
}
