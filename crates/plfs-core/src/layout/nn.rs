//! N-N (`workload: file_per_proc | n-n`): each logical file is one plain file on canonical backend
//! `hash(basename) % n`, so a directory's files (and their metadata load) are spread over the
//! backends; directories exist on every backend and readdir merges them. A plain backend file
//! found in a mount of another mode is served the same way.

use crate::error::{Error, Result};
use crate::layout::{Handle, Layout, Node, OpenFile};
use crate::mount::Loc;
use crate::sys::{Access, Create, Dir, File, RawStat, TimeSpec};
use crate::types::{FileFormat, FileKind, OpenFlags, Stat, BLKSIZE};
use rustix::io::Errno;
use std::ffi::OsStr;
use std::path::PathBuf;

/// The N-N layout: a create makes a plain file.
#[derive(Debug)]
pub struct NN {
    umask: crate::sys::Umask,
}

impl NN {
    /// The layout.
    pub fn new(umask: crate::sys::Umask) -> NN {
        NN { umask }
    }
}

impl Layout for NN {
    fn create(&self, loc: &Loc, mode: u32, excl: bool) -> Result<(Box<dyn Node>, bool)> {
        let b = loc.home();
        let parent = loc.parent_dir(b)?;
        let created = match parent.create_file(loc.name(), mode & !self.umask.get() & 0o7777, Create::Excl) {
            Ok(_) => true,
            Err(Error::Io {
                errno: Errno::EXIST, ..
            }) if !excl => false,
            Err(Error::Io {
                errno: Errno::EXIST, ..
            }) => return Err(Error::Exists(loc.logical.clone())),
            Err(e) => return Err(e),
        };
        let st = parent.stat(loc.name())?;
        if crate::sys::is_dir(&st) {
            return Err(loc.err(Errno::ISDIR, "is a directory"));
        }
        Ok((Box::new(PlainNode::new(loc.clone(), b, st)), created))
    }
}

/// A plain backend file found in the namespace.
#[derive(Debug)]
pub struct PlainNode {
    loc: Loc,
    b: usize,
    st: RawStat,
}

impl PlainNode {
    /// The plain file at `loc` on backend `b`, with its stat from the look-up.
    pub fn new(loc: Loc, b: usize, st: RawStat) -> PlainNode {
        PlainNode { loc, b, st }
    }

    fn io_err(&self, e: Error) -> Error {
        match e {
            Error::Io { errno, .. } => self.loc.err(errno, &errno.to_string()),
            e => e,
        }
    }

    fn file(&self, parent: &Dir, access: Access) -> Result<File> {
        parent.open_file(self.loc.name(), access).map_err(|e| self.io_err(e))
    }
}

impl Node for PlainNode {
    fn stat(&self) -> Result<Stat> {
        let mut st = Stat::from_raw(&self.st, FileKind::File);
        st.blksize = BLKSIZE;
        Ok(st)
    }

    fn open(&self, flags: OpenFlags, pid: u32, _created: bool) -> Result<OpenFile> {
        let access = match (flags.read, flags.write) {
            (_, false) => Access::Read,
            (false, true) => Access::Write,
            (true, true) => Access::ReadWrite,
        };
        let parent = self.loc.parent_dir(self.b)?;
        let f = self.file(&parent, access)?.kept();
        if flags.trunc && flags.write {
            f.truncate(0)?;
        }
        let check_close = flags.write && parent.close_may_fail();
        Ok(OpenFile::new(
            Box::new(PlainHandle { f, check_close }),
            self.loc.logical.clone(),
            flags,
            pid,
        ))
    }

    fn truncate(&self, size: u64) -> Result<()> {
        let parent = self.loc.parent_dir(self.b)?;
        self.file(&parent, Access::Write)?.truncate(size)
    }

    fn unlink(&self) -> Result<()> {
        self.loc.parent_dir(self.b)?.unlink(self.loc.name())
    }

    fn chmod(&self, mode: u32) -> Result<()> {
        self.loc.parent_dir(self.b)?.chmod(self.loc.name(), mode & 0o7777)
    }

    fn chown(&self, uid: u32, gid: u32) -> Result<()> {
        self.loc.parent_dir(self.b)?.chown(self.loc.name(), uid, gid)
    }

    fn utimens(&self, atime: TimeSpec, mtime: TimeSpec) -> Result<()> {
        self.loc.parent_dir(self.b)?.set_times(self.loc.name(), atime, mtime)
    }

    fn format(&self) -> Result<FileFormat> {
        Ok(FileFormat::Plain)
    }

    fn access(&self, mode: u32) -> Result<()> {
        self.loc
            .parent_dir(self.b)?
            .access(self.loc.name(), mode)
            .map_err(|e| self.io_err(e))
    }

    fn replace_by(&self, from_parent: &Dir, from_name: &OsStr) -> Result<()> {
        let tp = self.loc.parent_dir(self.b)?;
        let name = self.loc.name();
        match from_parent.rename(from_name, &tp, name) {
            // A container (a directory) over this plain file: swap them, then remove the file;
            // without RENAME_EXCHANGE, remove the file first.
            Err(e) if crate::layout::is_type_clash(&e) => {
                if from_parent.exchange(from_name, &tp, name)? {
                    from_parent.unlink(from_name)
                } else {
                    tp.unlink(name)?;
                    from_parent.rename(from_name, &tp, name)
                }
            }
            r => r,
        }
    }
}

/// An open plain file.
#[derive(Debug)]
struct PlainHandle {
    f: File,
    /// Whether its close looks at what a close(2) of it answers (written, on a file system
    /// whose close can report a write's error: [`crate::sys::Dir::close_may_fail`]).
    check_close: bool,
}

impl Handle for PlainHandle {
    fn write_as(&self, buf: &[u8], off: u64, _pid: u32) -> Result<usize> {
        self.f.pwrite_all(buf, off)?;
        Ok(buf.len())
    }

    fn append(&self, buf: &[u8], _pid: u32) -> Result<(u64, usize)> {
        // One atomic append of the kernel: a size then a write lost records when several
        // processes appended (issue 25).
        self.f.append(buf)
    }

    fn read(&self, buf: &mut [u8], off: u64) -> Result<usize> {
        self.f.pread_full(buf, off)
    }

    fn refresh(&self) -> Result<()> {
        Ok(())
    }

    fn flush(&self) -> Result<()> {
        Ok(())
    }

    fn sync(&self) -> Result<()> {
        self.f.fsync()
    }

    fn truncate(&self, size: u64) -> Result<()> {
        self.f.truncate(size)
    }

    fn size(&self) -> Result<u64> {
        self.f.size()
    }

    fn stat(&self) -> Result<Stat> {
        let mut st = Stat::from_raw(&self.f.stat()?, FileKind::File);
        st.blksize = BLKSIZE;
        Ok(st)
    }

    /// A close(2) through the FUSE daemon: reported as [`PlainHandle::close`] reports it.
    fn close_writer(&self, _pid: u32) -> Result<()> {
        self.close()
    }

    /// The descriptor itself is closed when the handle is dropped; a write that returned but
    /// failed in the backend's client is reported here, as a plain file's close(2) reports it.
    fn close(&self) -> Result<()> {
        if self.check_close {
            self.f.close_errors()?;
        }
        Ok(())
    }

    fn backend_path(&self) -> PathBuf {
        self.f.path().to_path_buf()
    }

    fn chmod(&self, mode: u32) -> Option<Result<()>> {
        Some(self.f.chmod(mode & 0o7777))
    }

    fn chown(&self, uid: u32, gid: u32) -> Option<Result<()>> {
        Some(self.f.chown(uid, gid))
    }

    fn utimens(&self, atime: TimeSpec, mtime: TimeSpec) -> Option<Result<()>> {
        Some(self.f.set_times(atime, mtime))
    }
}
