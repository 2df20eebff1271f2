//! Open files: the write path (per-writer data and index logs, buffered index records) and the
//! read path (a merged [`IndexState`] shared by every handle on the same container in this
//! process, so a process always reads its own writes).

use crate::clock;
use crate::container::{self, Container};
use crate::error::{Error, Result};
use crate::extent::{Key, Segment};
use crate::format::{self, LogHeader, MetaDropping, WriteRecord};
use crate::index::IndexState;
use crate::sys;
use rustix::fd::OwnedFd;
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

/// How a file is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OpenFlags {
    /// Open for reading.
    pub read: bool,
    /// Open for writing.
    pub write: bool,
    /// Create if missing.
    pub create: bool,
    /// With `create`: fail if it exists.
    pub excl: bool,
    /// Truncate to zero at open.
    pub trunc: bool,
    /// Every write goes to the end of the file.
    pub append: bool,
}

impl OpenFlags {
    /// From POSIX `open(2)` flags.
    pub fn from_posix(flags: i32) -> Result<Self> {
        let acc = flags & libc_consts::O_ACCMODE;
        let (read, write) = match acc {
            libc_consts::O_RDONLY => (true, false),
            libc_consts::O_WRONLY => (false, true),
            libc_consts::O_RDWR => (true, true),
            _ => {
                return Err(Error::InvalidArgument(format!(
                    "bad access mode in open flags {flags:#o}"
                )))
            }
        };
        Ok(OpenFlags {
            read,
            write,
            create: flags & libc_consts::O_CREAT != 0,
            excl: flags & libc_consts::O_EXCL != 0,
            trunc: flags & libc_consts::O_TRUNC != 0,
            append: flags & libc_consts::O_APPEND != 0,
        })
    }

    /// Back to POSIX flags (access mode, O_APPEND).
    pub fn to_posix(&self) -> i32 {
        let acc = match (self.read, self.write) {
            (true, true) => libc_consts::O_RDWR,
            (false, true) => libc_consts::O_WRONLY,
            _ => libc_consts::O_RDONLY,
        };
        acc | if self.append { libc_consts::O_APPEND } else { 0 }
    }
}

/// Linux open(2) flag values (asm-generic, as on x86_64 and aarch64).
pub mod libc_consts {
    #![allow(missing_docs)]
    pub const O_ACCMODE: i32 = 0o3;
    pub const O_RDONLY: i32 = 0;
    pub const O_WRONLY: i32 = 1;
    pub const O_RDWR: i32 = 2;
    pub const O_CREAT: i32 = 0o100;
    pub const O_EXCL: i32 = 0o200;
    pub const O_TRUNC: i32 = 0o1000;
    pub const O_APPEND: i32 = 0o2000;
}

/// Statistics of a merged index ([`OpenFile::index_stats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IndexStats {
    /// Uncompressed pieces.
    pub pieces: usize,
    /// Compressed patterns.
    pub patterns: usize,
    /// Approximate heap bytes of the extent map.
    pub mem_bytes: usize,
    /// Index records (pattern elements counted one by one) read from disk.
    pub records_read: u64,
}

/// One writer: a data log and an index log, created at its first write.
#[derive(Debug)]
struct Writer {
    id: u64,
    pid: u32,
    host: String,
    open_ts: u64,
    logs: Option<WriterLogs>,
    /// Encoded records not yet appended to the index log.
    /// Records not yet appended to the index log.
    pending: Vec<WriteRecord>,
    /// Whether runs are written as pattern records (`index_compression`).
    compress: bool,
    eof: u64,
    bytes: u64,
    mtime_ns: u64,
    closed: bool,
}

#[derive(Debug)]
struct WriterLogs {
    dir: Arc<OwnedFd>,
    dir_path: PathBuf,
    data: OwnedFd,
    index: OwnedFd,
    data_off: u64,
    index_off: u64,
    /// Whether the directory entries of the new logs have been made durable.
    dirs_synced: bool,
}

/// Per-process state of one container, shared by every handle on it.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) c: Container,
    /// Logical path it was first opened by (a flattened index is valid only for this path).
    pub(crate) logical: PathBuf,
    /// Writers opened through this process.
    writers: Mutex<HashMap<u64, Arc<Mutex<Writer>>>>,
    /// Merged index, loaded at the first read.
    index: Mutex<Option<IndexState>>,
    /// Set when the file was unlinked while open here: trees to delete at the last close.
    doomed: Mutex<Vec<PathBuf>>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        for p in self.doomed.get_mut().map(std::mem::take).unwrap_or_default() {
            if let Err(e) = sys::remove_tree(&p) {
                crate::warn!("{e}: could not remove an unlinked file's data");
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    pub(crate) fn new(c: Container, logical: PathBuf) -> Self {
        Shared {
            c,
            logical,
            writers: Mutex::new(HashMap::new()),
            index: Mutex::new(None),
            doomed: Mutex::new(Vec::new()),
        }
    }

    fn data_crc(&self) -> bool {
        self.c.mount.global.data_checksums
    }

    /// Appends every writer's buffered index records to its index log.
    pub(crate) fn flush_all(&self) -> Result<()> {
        let ws: Vec<_> = lock(&self.writers).values().cloned().collect();
        for w in ws {
            flush_index(&mut lock(&w))?;
        }
        Ok(())
    }

    /// Runs `f` on the merged index, loading or refreshing it first (`refresh`) after flushing
    /// this process's buffered records.
    pub(crate) fn with_index<R>(&self, refresh: bool, f: impl FnOnce(&mut IndexState) -> Result<R>) -> Result<R> {
        let mut g = lock(&self.index);
        let stale = g.as_ref().is_some_and(|s| s.map.is_stale());
        if g.is_none() || refresh || stale {
            self.flush_all()?;
            match g.as_mut() {
                Some(s) if !stale => s.refresh(&self.c)?,
                _ => *g = Some(IndexState::load(&self.c, &self.logical)?),
            }
            // Drop pattern timestamps unless this process writes the file too (its own writes
            // could overlap a pattern and would then need them).
            if lock(&self.writers).is_empty() {
                g.as_mut().expect("index loaded").map.compact();
            }
        }
        f(g.as_mut().expect("index loaded"))
    }

    /// Defers deleting `paths` until the last handle in this process is closed (unlink of an
    /// open file: its handles keep working, as POSIX requires).
    pub(crate) fn doom(&self, paths: Vec<PathBuf>) {
        self.doomed.lock().unwrap_or_else(|p| p.into_inner()).extend(paths);
    }

    /// Drops the merged index (after a wipe); the next read reloads it.
    pub(crate) fn reset_index(&self) {
        *lock(&self.index) = None;
    }

    fn new_writer(&self, pid: u32) -> Result<Arc<Mutex<Writer>>> {
        let host = clock::hostname();
        let id = clock::random_u64();
        let open_ts = clock::next_ts();
        self.c.add_meta(&MetaDropping::Open {
            writer_id: id,
            pid,
            host: host.clone(),
        })?;
        let w = Arc::new(Mutex::new(Writer {
            id,
            pid,
            host,
            open_ts,
            logs: None,
            pending: Vec::new(),
            compress: self.c.mount.global.index_compression,
            eof: 0,
            bytes: 0,
            mtime_ns: 0,
            closed: false,
        }));
        lock(&self.writers).insert(id, w.clone());
        Ok(w)
    }

    fn create_logs(&self, w: &mut Writer) -> Result<()> {
        let (dir, dir_path) = self.c.writer_dir(&w.host, true)?;
        let mode = self
            .c
            .marker_stat()
            .map(|s| container::log_mode(s.st_mode))
            .unwrap_or(0o600);
        let flags = if self.data_crc() { format::LOG_FLAG_DATA_CRC } else { 0 };
        let mk = |name: String, magic: [u8; 8]| -> Result<OwnedFd> {
            let p = dir_path.join(&name);
            let fd = rustix::fs::openat(
                &dir,
                name.as_str(),
                OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC,
                Mode::from_raw_mode(mode),
            )
            .map_err(|e| Error::io(&p, "create", e))?;
            let h = LogHeader {
                magic,
                writer_id: w.id,
                open_ns: w.open_ts,
                pid: w.pid,
                flags,
            };
            if let Err(e) = sys::pwrite_all(&fd, &p, &h.encode(), 0) {
                // Leave nothing half-made behind, so that a retry can create the log again.
                let _ = rustix::fs::unlinkat(&dir, name.as_str(), rustix::fs::AtFlags::empty());
                return Err(e);
            }
            Ok(sys::high(fd))
        };
        // Data log first: an index log never exists without its data log.
        let data_name = format::data_log_name(w.id, w.pid, &w.host);
        let data = mk(data_name.clone(), format::DATA_MAGIC)?;
        let index = match mk(format::index_log_name(w.id, w.pid, &w.host), format::INDEX_MAGIC) {
            Ok(fd) => fd,
            Err(e) => {
                let _ = rustix::fs::unlinkat(&dir, data_name.as_str(), rustix::fs::AtFlags::empty());
                return Err(e);
            }
        };
        w.logs = Some(WriterLogs {
            dir: Arc::new(dir),
            dir_path,
            data,
            index,
            data_off: format::DATA_HEADER_LEN as u64,
            index_off: format::INDEX_HEADER_LEN as u64,
            dirs_synced: false,
        });
        Ok(())
    }

    fn write(&self, w: &Arc<Mutex<Writer>>, buf: &[u8], off: u64) -> Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        off.checked_add(buf.len() as u64)
            .ok_or_else(|| Error::errno(Errno::FBIG, "write beyond the largest file offset"))?;
        let mut wg = lock(w);
        if wg.logs.is_none() {
            self.create_logs(&mut wg)?;
        }
        let name = format::data_log_name(wg.id, wg.pid, &wg.host);
        let (phys, dir, dir_path) = {
            let l = wg.logs.as_mut().expect("logs created");
            let phys = l.data_off;
            sys::pwrite_all(&l.data, &l.dir_path.join(name), buf, phys)?;
            l.data_off += buf.len() as u64;
            (phys, l.dir.clone(), l.dir_path.clone())
        };
        let ts = clock::next_ts();
        let data_crc = if self.data_crc() { crc32c::crc32c(buf) } else { 0 };
        let rec = WriteRecord {
            logical_off: off,
            length: buf.len() as u64,
            physical_off: phys,
            ts,
            data_crc,
        };
        wg.pending.push(rec);
        wg.eof = wg.eof.max(off + buf.len() as u64);
        wg.bytes += buf.len() as u64;
        wg.mtime_ns = clock::now_ns();
        if wg.pending.len() >= self.c.mount.global.index_buffer_records as usize {
            flush_index(&mut wg)?;
        }
        let (id, pid, host) = (wg.id, wg.pid, wg.host.clone());
        drop(wg);
        // Keep this process's merged index current (insertion order does not matter).
        if let Some(s) = lock(&self.index).as_mut() {
            let d = s.add_dir(dir_path, dir);
            let chunk = s.chunk_for(d, id, pid, &host);
            s.map
                .insert_write(off, buf.len() as u64, chunk, phys, Key { ts, writer: id });
        }
        Ok(buf.len())
    }

    fn sync(&self, w: Option<&Arc<Mutex<Writer>>>) -> Result<()> {
        let Some(w) = w else { return Ok(()) };
        let mut wg = lock(w);
        if let Some(l) = &wg.logs {
            // Data must be durable before the records that point at it.
            sys::fsync(&l.data, &l.dir_path)?;
        }
        flush_index(&mut wg)?;
        if let Some(l) = wg.logs.as_mut() {
            sys::fsync(&l.index, &l.dir_path)?;
            if !l.dirs_synced {
                // The first sync also makes the new logs' names durable: their hostdir, and the
                // hostdir's own entry in its parent.
                sys::fsync(&*l.dir, &l.dir_path)?;
                if let Some(parent) = l.dir_path.parent() {
                    match sys::fsync_dir(parent) {
                        // Renamed while open: the path is stale, the hostdir itself is synced.
                        Err(Error::Io {
                            errno: Errno::NOENT, ..
                        }) => {}
                        r => r?,
                    }
                }
                l.dirs_synced = true;
            }
        }
        Ok(())
    }

    fn close_writer(&self, w: &Arc<Mutex<Writer>>) -> Result<()> {
        let mut wg = lock(w);
        if wg.closed {
            return Ok(());
        }
        let flushed = flush_index(&mut wg);
        let close_ts = clock::next_ts();
        let d = MetaDropping::Close {
            writer_id: wg.id,
            open_ts: wg.open_ts,
            close_ts,
            eof: wg.eof,
            bytes: wg.bytes,
            mtime_ns: wg.mtime_ns,
        };
        let r = flushed.and_then(|()| if wg.bytes > 0 { self.c.add_meta(&d) } else { Ok(()) });
        if wg.bytes > 0 {
            let _ = self.c.bump_mtime(wg.mtime_ns);
        }
        // Remove the open record only after the close record exists, so stat never misses data.
        if r.is_ok() {
            self.c.remove_meta(&MetaDropping::Open {
                writer_id: wg.id,
                pid: wg.pid,
                host: wg.host.clone(),
            })?;
        }
        wg.closed = true;
        wg.logs = None;
        let id = wg.id;
        // Never hold a writer's lock while taking the table (truncate takes them the other way).
        drop(wg);
        lock(&self.writers).remove(&id);
        r
    }

    /// Truncates the logical file to `size`.
    pub(crate) fn truncate(&self, size: u64) -> Result<()> {
        let meta = self.c.list_meta()?;
        let any_open = meta.iter().any(|d| matches!(d, MetaDropping::Open { .. }));
        if size == 0 && !any_open {
            // Nobody is writing: reclaim everything.
            self.c.wipe_data()?;
            self.reset_index();
        } else {
            let ts = clock::next_ts();
            let wid = clock::random_u64();
            self.c.add_meta(&MetaDropping::Trunc {
                ts,
                size,
                writer_id: wid,
            })?;
            let ws: Vec<_> = lock(&self.writers).values().cloned().collect();
            for w in ws {
                let mut wg = lock(&w);
                wg.eof = wg.eof.min(size);
            }
            if let Some(s) = lock(&self.index).as_mut() {
                s.map.insert_trunc(size, Key { ts, writer: wid });
            }
        }
        self.c.set_times(sys::TimeSpec::Omit, sys::TimeSpec::Now)
    }

    /// The logical size, from the merged index (refreshed).
    pub(crate) fn size(&self) -> Result<u64> {
        self.with_index(true, |s| Ok(s.map.size()))
    }

    fn read(&self, buf: &mut [u8], off: u64) -> Result<usize> {
        let plan = self.with_index(false, |s| {
            let segs = s.map.lookup(off, buf.len() as u64);
            let mut plan = Vec::with_capacity(segs.len());
            for seg in segs {
                match seg {
                    Segment::Hole { len } => plan.push((len, None)),
                    Segment::Data { len, chunk, phys } => {
                        plan.push((len, Some((s.data_fd(chunk)?, phys, s.chunk_path(chunk)))))
                    }
                }
            }
            Ok(plan)
        })?;
        let mut pos = 0usize;
        for (len, src) in plan {
            let dst = &mut buf[pos..pos + len as usize];
            match src {
                None => dst.fill(0),
                Some((fd, phys, path)) => {
                    let n = sys::pread_full(&*fd, &path, dst, phys)?;
                    if n < dst.len() {
                        return Err(Error::corrupt(
                            path,
                            format!(
                                "data log ends at {} but the index points to {}",
                                phys + n as u64,
                                phys + len
                            ),
                        ));
                    }
                }
            }
            pos += len as usize;
        }
        Ok(pos)
    }
}

/// Appends a writer's buffered records to its index log.
fn flush_index(w: &mut Writer) -> Result<()> {
    let compress = w.compress;
    if w.pending.is_empty() {
        return Ok(());
    }
    let l = w.logs.as_mut().expect("records imply logs");
    let p = l.dir_path.join(format::index_log_name(w.id, w.pid, &w.host));
    let mut bytes = Vec::with_capacity(w.pending.len() * format::WRITE_REC_LEN);
    if compress {
        format::encode_records(&w.pending, &mut bytes);
    } else {
        w.pending.iter().for_each(|r| r.encode_into(&mut bytes));
    }
    sys::pwrite_all(&l.index, &p, &bytes, l.index_off)?;
    l.index_off += bytes.len() as u64;
    w.pending.clear();
    Ok(())
}

/// An open logical file. Dropping it closes it (errors are then only logged: call
/// [`OpenFile::close`] to see them).
#[derive(Debug)]
pub struct OpenFile {
    path: PathBuf,
    flags: OpenFlags,
    backing: Backing,
    closed: bool,
}

/// What an open file is stored as.
#[derive(Debug)]
enum Backing {
    /// An N-1 container.
    Container {
        shared: Arc<Shared>,
        /// Writers by pid (one per pid that wrote through this handle).
        writers: Mutex<HashMap<u32, Arc<Mutex<Writer>>>>,
        default_pid: u32,
    },
    /// A plain file on a backend (N-N mode).
    Plain(crate::nn::PlainFile),
    /// A file packed in a directory's small-file logs (1-N mode).
    Small(crate::smallfile::SmallHandle),
}

fn not_open(path: &Path, what: &str) -> Error {
    Error::errno(Errno::BADF, format!("{}: not open for {what}", path.display()))
}

impl OpenFile {
    pub(crate) fn new(shared: Arc<Shared>, path: PathBuf, flags: OpenFlags, pid: u32) -> Result<Self> {
        let writers = Mutex::new(HashMap::new());
        if flags.write {
            let w = shared.new_writer(pid)?;
            lock(&writers).insert(pid, w);
        }
        Ok(OpenFile {
            path,
            flags,
            backing: Backing::Container {
                shared,
                writers,
                default_pid: pid,
            },
            closed: false,
        })
    }

    pub(crate) fn plain(f: crate::nn::PlainFile, path: PathBuf, flags: OpenFlags) -> Self {
        OpenFile {
            path,
            flags,
            backing: Backing::Plain(f),
            closed: false,
        }
    }

    pub(crate) fn small(h: crate::smallfile::SmallHandle, path: PathBuf, flags: OpenFlags) -> Self {
        OpenFile {
            path,
            flags,
            backing: Backing::Small(h),
            closed: false,
        }
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
        match &self.backing {
            Backing::Container { shared, .. } => shared.c.path.clone(),
            Backing::Plain(f) => f.path.clone(),
            Backing::Small(h) => h.store_path(),
        }
    }

    fn writer(&self, pid: u32) -> Result<Arc<Mutex<Writer>>> {
        let Backing::Container { shared, writers, .. } = &self.backing else {
            unreachable!("container only")
        };
        if !self.flags.write {
            return Err(not_open(&self.path, "writing"));
        }
        let mut ws = lock(writers);
        if let Some(w) = ws.get(&pid) {
            return Ok(w.clone());
        }
        let w = shared.new_writer(pid)?;
        ws.insert(pid, w.clone());
        Ok(w)
    }

    fn default_pid(&self) -> u32 {
        match &self.backing {
            Backing::Container { default_pid, .. } => *default_pid,
            _ => 0,
        }
    }

    /// Writes `buf` at logical offset `off` as the handle's own pid.
    pub fn write(&self, buf: &[u8], off: u64) -> Result<usize> {
        self.write_as(buf, off, self.default_pid())
    }

    /// Writes `buf` at `off` as writer `pid` (each pid gets its own data log, as in PLFS).
    pub fn write_as(&self, buf: &[u8], off: u64, pid: u32) -> Result<usize> {
        if !self.flags.write {
            return Err(not_open(&self.path, "writing"));
        }
        match &self.backing {
            Backing::Container { shared, .. } => {
                let w = self.writer(pid)?;
                shared.write(&w, buf, off)
            }
            Backing::Plain(f) => f.write(buf, off),
            Backing::Small(h) => h.write(buf, off),
        }
    }

    /// Appends `buf` at the current end of file; returns (offset written at, bytes). The end is
    /// that of this process's merged index (loaded once, then kept current by its own writes), so
    /// appends cost no re-read of the index logs.
    pub fn append(&self, buf: &[u8]) -> Result<(u64, usize)> {
        if !self.flags.write {
            return Err(not_open(&self.path, "writing"));
        }
        match &self.backing {
            Backing::Container {
                shared, default_pid, ..
            } => {
                let w = self.writer(*default_pid)?;
                let off = shared.with_index(false, |s| Ok(s.map.size()))?;
                Ok((off, shared.write(&w, buf, off)?))
            }
            Backing::Plain(f) => {
                let off = f.size()?;
                Ok((off, f.write(buf, off)?))
            }
            Backing::Small(h) => {
                let off = h.size()?;
                Ok((off, h.write(buf, off)?))
            }
        }
    }

    /// Reads at `off` into `buf`; returns bytes read (0 at end of file). Sees every write made
    /// in this process and everything other processes had flushed when the index was loaded.
    pub fn read(&self, buf: &mut [u8], off: u64) -> Result<usize> {
        if !self.flags.read {
            return Err(not_open(&self.path, "reading"));
        }
        match &self.backing {
            Backing::Container { shared, .. } => shared.read(buf, off),
            Backing::Plain(f) => f.read(buf, off),
            Backing::Small(h) => h.read(buf, off),
        }
    }

    /// Re-reads index logs written by other processes since the index was loaded.
    pub fn refresh(&self) -> Result<()> {
        match &self.backing {
            Backing::Container { shared, .. } => shared.with_index(true, |_| Ok(())),
            Backing::Plain(_) => Ok(()),
            Backing::Small(h) => h.refresh(),
        }
    }

    /// Makes this handle's writes visible to other processes without making them durable: appends
    /// its buffered index records to its index logs (no fsync). Cheap when nothing is buffered.
    pub fn flush(&self) -> Result<()> {
        match &self.backing {
            Backing::Container { writers, .. } => {
                let ws: Vec<_> = lock(writers).values().cloned().collect();
                for w in ws {
                    flush_index(&mut lock(&w))?;
                }
                Ok(())
            }
            Backing::Plain(_) => Ok(()),
            Backing::Small(h) => h.close(),
        }
    }

    /// Makes every write through this handle durable (data, then index records).
    pub fn sync(&self) -> Result<()> {
        match &self.backing {
            Backing::Container { shared, writers, .. } => {
                let ws: Vec<_> = lock(writers).values().cloned().collect();
                for w in &ws {
                    shared.sync(Some(w))?;
                }
                Ok(())
            }
            Backing::Plain(f) => f.sync(),
            Backing::Small(h) => h.sync(),
        }
    }

    /// Truncates (or extends with zeros) to `size`.
    pub fn truncate(&self, size: u64) -> Result<()> {
        if !self.flags.write {
            return Err(Error::errno(
                Errno::INVAL,
                format!("{}: not open for writing", self.path.display()),
            ));
        }
        match &self.backing {
            Backing::Container { shared, .. } => shared.truncate(size),
            Backing::Plain(f) => f.truncate(size),
            Backing::Small(h) => h.truncate(size),
        }
    }

    /// Current logical size (includes this process's unflushed writes).
    pub fn size(&self) -> Result<u64> {
        match &self.backing {
            Backing::Container { shared, .. } => shared.size(),
            Backing::Plain(f) => f.size(),
            Backing::Small(h) => h.size(),
        }
    }

    /// Statistics of this process's merged index (loading it if needed): plain pieces, compressed
    /// patterns, approximate heap bytes. Zeros for N-N and 1-N files.
    pub fn index_stats(&self) -> Result<IndexStats> {
        match &self.backing {
            Backing::Container { shared, .. } => shared.with_index(false, |s| {
                Ok(IndexStats {
                    pieces: s.map.raw_pieces().count(),
                    patterns: s.map.pattern_count(),
                    mem_bytes: s.map.mem_bytes(),
                    records_read: s.records_read,
                })
            }),
            _ => Ok(IndexStats::default()),
        }
    }

    /// Index records read from disk by this process's merged index so far.
    pub fn records_read(&self) -> u64 {
        match &self.backing {
            Backing::Container { shared, .. } => shared.with_index(false, |s| Ok(s.records_read)).unwrap_or(0),
            _ => 0,
        }
    }

    /// Closes the writer of one pid (its records reach the index log and its close dropping is
    /// written, so other processes see its data), keeping the handle open for the others.
    /// A no-op for pids that never wrote and for N-N and 1-N files.
    pub fn close_writer(&self, pid: u32) -> Result<()> {
        let Backing::Container { shared, writers, .. } = &self.backing else {
            return Ok(());
        };
        let w = lock(writers).remove(&pid);
        match w {
            Some(w) => shared.close_writer(&w),
            None => Ok(()),
        }
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
        match &self.backing {
            Backing::Container { shared, writers, .. } => {
                let ws: Vec<_> = lock(writers).drain().map(|(_, w)| w).collect();
                let mut first = Ok(());
                for w in ws {
                    if let Err(e) = shared.close_writer(&w) {
                        if first.is_ok() {
                            first = Err(e);
                        }
                    }
                }
                first
            }
            Backing::Plain(_) => Ok(()),
            Backing::Small(h) => h.close(),
        }
    }

    /// The container state, for N-1 files.
    pub(crate) fn shared(&self) -> Option<&Arc<Shared>> {
        match &self.backing {
            Backing::Container { shared, .. } => Some(shared),
            _ => None,
        }
    }

    /// stat of the open file, for N-N and 1-N files.
    pub(crate) fn stat_other(&self) -> Option<Result<crate::fs::Stat>> {
        match &self.backing {
            Backing::Container { .. } => None,
            Backing::Plain(f) => Some(f.stat()),
            Backing::Small(h) => Some(h.stat()),
        }
    }
}

impl Drop for OpenFile {
    fn drop(&mut self) {
        if let Err(e) = self.close_inner() {
            crate::warn!("{}: close: {e}", self.path.display());
        }
    }
}
