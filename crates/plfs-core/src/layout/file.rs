//! The traits the namespace dispatches to ([`Layout`], [`Node`], [`Handle`]) and the public
//! open-file handle ([`OpenFile`]) around a [`Handle`].

use super::compaction::{CompactOptions, CompactReport, Usage};
use crate::error::{Error, Result};
use crate::mount::Loc;
use crate::sys::{Dir, TimeSpec};
use crate::types::{DirEntry, FileFormat, IndexStats, OpenFlags, PackedUsage, Stat};
use rustix::io::Errno;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// A workload mode: `shared_file` (N-1), `file_per_proc` (N-N) or `small_file` (1-N).
pub trait Layout: Send + Sync + std::fmt::Debug {
    /// Creates a regular file at `loc`, where nothing exists yet (or, unless `excl`, finds the
    /// one a concurrent creator made). Returns the file and whether this call created it.
    fn create(&self, loc: &Loc, mode: u32, excl: bool) -> Result<(Box<dyn Node>, bool)>;

    /// Creates a file at `loc` where the backend has nothing, or finds the one this layout keeps
    /// there, in one step, for a layout that can tell on its own that `loc`'s parent is a
    /// directory: `None` sends the caller the long way (`lookup_missing`, the parent check,
    /// `create`). An existing file is `Exists` with `excl`, else returned as not created.
    fn create_packed(&self, _loc: &Loc, _mode: u32, _excl: bool) -> Option<Result<(Box<dyn Node>, bool)>> {
        None
    }

    /// Whether this layout can tell on its own, without a system call, that `loc`'s parent is
    /// one of its directories, so that no component of the path is a file: a look-up of a name
    /// the backends do not hold then skips the check of the ancestors (`Loc::check_through`).
    fn vouches_for_parent(&self, _loc: &Loc) -> bool {
        false
    }

    /// A file this layout keeps at `loc` although the backend has nothing there.
    fn lookup_missing(&self, _loc: &Loc) -> Result<Option<Box<dyn Node>>> {
        Ok(None)
    }

    /// Adds the entries of directory `loc` that the backend does not list.
    fn list_extra(&self, _loc: &Loc, _out: &mut Vec<DirEntry>) -> Result<()> {
        Ok(())
    }

    /// Called before directory `loc` is removed (it is empty).
    fn before_rmdir(&self, _loc: &Loc) -> Result<()> {
        Ok(())
    }

    /// Forgets cached state at or under logical directory `logical` (after a rename or rmdir).
    fn forget(&self, _logical: &Path) {}

    /// Space accounting of the files directory `loc` packs in its own logs (1-N); `None` for
    /// layouts that pack nothing.
    fn packed_usage(&self, _loc: &Loc) -> Result<Option<PackedUsage>> {
        Ok(None)
    }

    /// Makes this process's buffered writes to files at or under logical path `logical` visible
    /// to other processes, without fsync (`plfs_flush_writes`).
    fn flush_under(&self, _logical: &Path) -> Result<()> {
        Ok(())
    }

    /// Makes durable what this process keeps of directory `loc` outside its backend copies
    /// (fsync of a directory, before those copies are synced): nothing for a layout whose files
    /// are entries of those directories.
    fn sync_dir(&self, _loc: &Loc) -> Result<()> {
        Ok(())
    }

    /// Drops this process's cached indexes and views of files at or under logical path
    /// `logical`; the next read reloads them (`plfs_invalidate_read_cache`).
    fn invalidate_under(&self, logical: &Path) {
        self.forget(logical)
    }

    /// Compacts the logs directory `loc` packs its files in (1-N); `None` for layouts that pack
    /// nothing.
    fn compact_dir(&self, _loc: &Loc, _opts: &CompactOptions) -> Option<Result<CompactReport>> {
        None
    }
}

/// A regular file found in the namespace.
pub trait Node: std::fmt::Debug {
    /// Its attributes.
    fn stat(&self) -> Result<Stat>;
    /// Opens it; `created` is true when this open created it (no permission check is due).
    fn open(&self, flags: OpenFlags, pid: u32, created: bool) -> Result<OpenFile>;
    /// Truncates it (or extends it with zeros).
    fn truncate(&self, size: u64) -> Result<()>;
    /// Removes it. Handles open in this process keep working (POSIX).
    fn unlink(&self) -> Result<()>;
    /// chmod.
    fn chmod(&self, mode: u32) -> Result<()>;
    /// chown (`u32::MAX` leaves an id unchanged).
    fn chown(&self, uid: u32, gid: u32) -> Result<()>;
    /// Sets access and modification times.
    fn utimens(&self, atime: TimeSpec, mtime: TimeSpec) -> Result<()>;
    /// access(2) with the real ids (`R_OK`=4, `W_OK`=2, `X_OK`=1).
    fn access(&self, mode: u32) -> Result<()>;
    /// Replaces this file by the backend object (a container, plain file or symlink) named
    /// `from_name` in `from_parent`, as rename(2) onto it: where the backend allows, the name
    /// never goes missing (docs/design.md, "Backends").
    fn replace_by(&self, from_parent: &Dir, from_name: &OsStr) -> Result<()>;
    /// How it is stored, and in which format.
    fn format(&self) -> Result<FileFormat>;
    /// `Ok` if it may be changed; the error every change gets otherwise (EROFS for files written
    /// by PLFS 2.x). The namespace asks before renaming onto it.
    fn check_writable(&self) -> Result<()> {
        Ok(())
    }
    /// The container behind it, for the tools (map, query, flatten, fsck).
    fn container(&self) -> Option<crate::container::Container> {
        None
    }
    /// Renames this file to `to` by its own means, if it has them (a packed 1-N file moves
    /// through its directory's logs); `None` when it is a backend object the namespace renames.
    fn rename_within(&self, _to: &Loc) -> Option<Result<()>> {
        None
    }
    /// Compacts its logs (an N-1 container); `None` for files without logs of their own.
    fn compact(&self, _opts: &CompactOptions) -> Option<Result<CompactReport>> {
        None
    }
    /// Its space usage (an N-1 container); `None` for files without logs of their own.
    fn usage(&self) -> Option<Result<Usage>> {
        None
    }
    /// The identity an open of it reports ([`OpenFile::ident`]), known from the look-up; `None`
    /// for files that have none.
    fn ident(&self) -> Option<(u64, u64)> {
        None
    }
}

/// An open file's operations.
pub trait Handle: Send + Sync + std::fmt::Debug {
    /// Writes `buf` at `off` as writer `pid`.
    fn write_as(&self, buf: &[u8], off: u64, pid: u32) -> Result<usize>;
    /// Appends `buf` at the end of file; returns (offset written at, bytes).
    fn append(&self, buf: &[u8], pid: u32) -> Result<(u64, usize)>;
    /// Reads at `off`; 0 at end of file.
    fn read(&self, buf: &mut [u8], off: u64) -> Result<usize>;
    /// Picks up what other processes made visible since the open.
    fn refresh(&self) -> Result<()>;
    /// Loads of the file's merged index from the backend so far, each counted as it begins (0
    /// for a layout without one). A caller that reads the count before a read and finds it moved
    /// after knows that a load began after it asked, and so saw every write that had returned by
    /// then: a [`Handle::refresh`] would find nothing more (ldplfs's look for more at a short read).
    fn index_loads(&self) -> u64 {
        0
    }
    /// Makes this handle's writes visible to other processes (no fsync).
    fn flush(&self) -> Result<()>;
    /// Makes this handle's writes durable.
    fn sync(&self) -> Result<()>;
    /// Truncates (or extends with zeros).
    fn truncate(&self, size: u64) -> Result<()>;
    /// Current logical size, this process's unflushed writes included.
    fn size(&self) -> Result<u64>;
    /// fstat.
    fn stat(&self) -> Result<Stat>;
    /// Closes writer `pid` (its writes become visible), keeping the handle open.
    fn close_writer(&self, _pid: u32) -> Result<()> {
        Ok(())
    }
    /// Releases the handle (called once).
    fn close(&self) -> Result<()>;
    /// The backend path behind it (the container, plain file, or packed store).
    fn backend_path(&self) -> PathBuf;
    /// The file's identity (see [`OpenFile::ident`]); `None` where there is none.
    fn ident(&self) -> Option<(u64, u64)> {
        None
    }
    /// Statistics of the merged index (zeros where there is none).
    fn index_stats(&self) -> Result<IndexStats> {
        Ok(IndexStats::default())
    }
    /// Extended attribute `key`; `None` if the file has no such attribute. Files that keep no
    /// attributes (N-N, 1-N) answer [`Error::Unsupported`].
    fn getxattr(&self, _key: &[u8]) -> Result<Option<Vec<u8>>> {
        Err(Error::Unsupported(String::new()))
    }
    /// Sets extended attribute `key` ([`Error::Unsupported`] where none are kept).
    fn setxattr(&self, _key: &[u8], _value: &[u8]) -> Result<()> {
        Err(Error::Unsupported(String::new()))
    }
    /// fchmod: the mode of the file this handle has open, wherever it was renamed or unlinked
    /// to since. `None` where the handle holds nothing to change it through (the caller goes
    /// by the path instead).
    fn chmod(&self, _mode: u32) -> Option<Result<()>> {
        None
    }
    /// fchown (`u32::MAX` leaves an id unchanged), as [`Handle::chmod`].
    fn chown(&self, _uid: u32, _gid: u32) -> Option<Result<()>> {
        None
    }
    /// futimens, as [`Handle::chmod`].
    fn utimens(&self, _atime: TimeSpec, _mtime: TimeSpec) -> Option<Result<()>> {
        None
    }
}

/// An open logical file. Dropping it closes it (errors are then only logged: call
/// [`OpenFile::close`] to see them).
#[derive(Debug)]
pub struct OpenFile {
    path: PathBuf,
    flags: OpenFlags,
    pid: u32,
    handle: Box<dyn Handle>,
    closed: bool,
}

impl OpenFile {
    pub(crate) fn new(handle: Box<dyn Handle>, path: PathBuf, flags: OpenFlags, pid: u32) -> OpenFile {
        OpenFile {
            path,
            flags,
            pid,
            handle,
            closed: false,
        }
    }

    #[inline]
    fn need(&self, write: bool) -> Result<()> {
        let ok = if write { self.flags.write } else { self.flags.read };
        if ok {
            Ok(())
        } else {
            Err(self.not_open(write))
        }
    }

    /// The error of a read or write that [`OpenFile::need`] refuses (out of line: every read and
    /// write passes the test, and callers in other crates inline it).
    #[cold]
    #[inline(never)]
    fn not_open(&self, write: bool) -> Error {
        let what = if write { "writing" } else { "reading" };
        Error::errno(Errno::BADF, format!("{}: not open for {what}", self.path.display()))
    }

    /// The logical path it was opened with.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its open flags.
    pub fn flags(&self) -> OpenFlags {
        self.flags
    }

    /// The backend path behind it: the container (N-1), the plain file (N-N) or the directory's
    /// small-file store (1-N).
    pub fn container_path(&self) -> PathBuf {
        self.handle.backend_path()
    }

    /// The identity of the file behind it, `(st_dev, st_ino)` as [`OpenFile::stat`] reports them,
    /// for an N-1 container (its marker's); `None` for N-N and 1-N files. Costs no system call.
    /// [`crate::Plfs::reopen`] opens the same file by it, even after an unlink.
    pub fn ident(&self) -> Option<(u64, u64)> {
        self.handle.ident()
    }

    /// Writes `buf` at logical offset `off` as the handle's own pid.
    #[inline]
    pub fn write(&self, buf: &[u8], off: u64) -> Result<usize> {
        self.write_as(buf, off, self.pid)
    }

    /// Writes `buf` at `off` as writer `pid` (each pid gets its own data log, as in PLFS).
    #[inline]
    pub fn write_as(&self, buf: &[u8], off: u64, pid: u32) -> Result<usize> {
        self.need(true)?;
        self.handle.write_as(buf, off, pid)
    }

    /// Appends `buf` at the current end of file; returns (offset written at, bytes). The end is
    /// that of this process's merged index (loaded once, then kept current by its own writes), so
    /// appends cost no re-read of the index logs.
    pub fn append(&self, buf: &[u8]) -> Result<(u64, usize)> {
        self.need(true)?;
        self.handle.append(buf, self.pid)
    }

    /// Reads at `off` into `buf`; returns bytes read (0 at end of file). Sees every write made
    /// in this process and everything other processes had flushed when the index was loaded.
    #[inline]
    pub fn read(&self, buf: &mut [u8], off: u64) -> Result<usize> {
        self.need(false)?;
        self.handle.read(buf, off)
    }

    /// Re-reads index logs written by other processes since the index was loaded.
    pub fn refresh(&self) -> Result<()> {
        self.handle.refresh()
    }

    /// Loads of the merged index begun so far ([`Handle::index_loads`]): a load begun after a
    /// caller read this count saw every write that had returned when it read it.
    pub fn index_loads(&self) -> u64 {
        self.handle.index_loads()
    }

    /// Makes this handle's writes visible to other processes without making them durable: appends
    /// its buffered index records to its index logs (no fsync). Cheap when nothing is buffered.
    pub fn flush(&self) -> Result<()> {
        self.handle.flush()
    }

    /// Makes every write through this handle durable (data, then index records).
    pub fn sync(&self) -> Result<()> {
        self.handle.sync()
    }

    /// Truncates (or extends with zeros) to `size`.
    pub fn truncate(&self, size: u64) -> Result<()> {
        if !self.flags.write {
            return Err(Error::errno(
                Errno::INVAL,
                format!("{}: not open for writing", self.path.display()),
            ));
        }
        self.handle.truncate(size)
    }

    /// Current logical size (includes this process's unflushed writes).
    pub fn size(&self) -> Result<u64> {
        self.handle.size()
    }

    /// stat of the open file (sees this process's unflushed writes).
    pub fn stat(&self) -> Result<Stat> {
        self.handle.stat()
    }

    /// chmod through this open file ([`Handle::chmod`]); `None` where it must go by path.
    pub(crate) fn chmod_open(&self, mode: u32) -> Option<Result<()>> {
        self.handle.chmod(mode)
    }

    /// chown through this open file ([`Handle::chown`]); `None` where it must go by path.
    pub(crate) fn chown_open(&self, uid: u32, gid: u32) -> Option<Result<()>> {
        self.handle.chown(uid, gid)
    }

    /// utimens through this open file ([`Handle::utimens`]); `None` where it must go by path.
    pub(crate) fn utimens_open(&self, atime: TimeSpec, mtime: TimeSpec) -> Option<Result<()>> {
        self.handle.utimens(atime, mtime)
    }

    /// Statistics of this process's merged index (loading it if needed): plain pieces, compressed
    /// patterns, approximate heap bytes. Zeros for N-N and 1-N files.
    pub fn index_stats(&self) -> Result<IndexStats> {
        self.handle.index_stats()
    }

    /// Index records read from disk by this process's merged index so far.
    pub fn records_read(&self) -> u64 {
        self.handle.index_stats().map_or(0, |s| s.records_read)
    }

    /// Extended attribute `key` (`plfs_getxattr`): `ENOENT` if the file has none, `ENOTSUP` for
    /// N-N and 1-N files (only N-1 files keep attributes, docs/format.md §12). Files written by
    /// PLFS 2.x answer from their own `xattrs/`.
    pub fn getxattr(&self, key: &[u8]) -> Result<Vec<u8>> {
        match self.handle.getxattr(key) {
            Ok(Some(v)) => Ok(v),
            Ok(None) => Err(Error::errno(
                Errno::NOENT,
                format!(
                    "{}: no extended attribute {:?}",
                    self.path.display(),
                    String::from_utf8_lossy(key)
                ),
            )),
            Err(e) => Err(self.xattr_error(e)),
        }
    }

    /// Sets extended attribute `key` to `value` (`plfs_setxattr`); needs write permission on the
    /// file, not that it was opened for writing (as PLFS 2.5). `EROFS` for files written by
    /// PLFS 2.x.
    pub fn setxattr(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.handle.setxattr(key, value).map_err(|e| self.xattr_error(e))
    }

    fn xattr_error(&self, e: Error) -> Error {
        match e {
            Error::Unsupported(m) if m.is_empty() => Error::Unsupported(format!(
                "{}: extended attributes are kept for N-1 files only",
                self.path.display()
            )),
            e => e,
        }
    }

    /// Closes the writer of one pid (its records reach the index log and its close dropping is
    /// written, so other processes see its data), keeping the handle open for the others (the
    /// FUSE daemon's flush, a program's close(2)). A no-op for pids that never wrote; for an N-N
    /// file it reports what a close of its descriptor would, for a 1-N file it appends the
    /// buffered records.
    pub fn close_writer(&self, pid: u32) -> Result<()> {
        self.handle.close_writer(pid)
    }

    /// Writes this handle's droppings and releases it.
    pub fn close(mut self) -> Result<()> {
        self.close_inner()
    }

    fn close_inner(&mut self) -> Result<()> {
        if self.closed {
            return Ok(());
        }
        self.closed = true;
        self.handle.close()
    }
}

impl Drop for OpenFile {
    fn drop(&mut self) {
        if let Err(e) = self.close_inner() {
            crate::warn!("{}: close: {e}", self.path.display());
        }
    }
}

/// Permission check of `want` (R=4, W=2, X=1) against a stat, for files whose permissions the
/// kernel cannot check (packed 1-N files). Uses the real ids, like access(2); root passes except
/// for execute on a file with no x bit.
/// The error rename(2) gives for a directory over a non-directory or the reverse.
pub(crate) fn is_type_clash(e: &Error) -> bool {
    matches!(
        e,
        Error::Io {
            errno: Errno::NOTDIR | Errno::ISDIR | Errno::EXIST | Errno::NOTEMPTY,
            ..
        }
    )
}

pub(crate) fn check_mode(st: &Stat, want: u32) -> bool {
    let uid = rustix::process::getuid().as_raw();
    if uid == 0 {
        return !(want & 1 != 0 && st.mode & 0o111 == 0);
    }
    let bits = if uid == st.uid {
        (st.mode >> 6) & 7
    } else if rustix::process::getgid().as_raw() == st.gid {
        (st.mode >> 3) & 7
    } else {
        st.mode & 7
    };
    bits & want == want
}
