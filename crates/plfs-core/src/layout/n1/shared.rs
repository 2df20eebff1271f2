//! The per-process state of one N-1 container, shared by every handle on it: the writers opened
//! through this process and the merged index, so a process always reads its own writes. The
//! write path (data log append, buffered index record), sync, close and truncate, and the read
//! path through the merged index.

use super::writer::Writer;
use crate::clock;
use crate::container::Container;
use crate::container::DirExt;
use crate::error::{Error, Result};
use crate::format::{self, MetaDropping, WriteRecord};
use crate::index::{IndexState, ReadPlan};
use crate::sys::{File, TimeSpec};
use rustix::io::Errno;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Per-process state of one container.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) c: Container,
    /// Logical path it was first opened by (a flattened index is valid only for this path).
    pub(crate) logical: PathBuf,
    /// Writers opened through this process.
    pub(super) writers: Mutex<HashMap<u64, Arc<Mutex<Writer>>>>,
    /// Merged index, loaded at the first read.
    pub(super) index: Mutex<Option<IndexState>>,
    /// Set before a merged index is loaded into `index`, cleared when it is dropped: a write that
    /// finds it clear has no merged index to keep current and takes no lock for it (`write`).
    index_live: AtomicBool,
    /// Loads and refreshes of `index` begun so far, counted as each begins (before it flushes or
    /// lists anything): see [`crate::layout::file::Handle::index_loads`].
    pub(super) loads: AtomicU64,
    /// Set when the file was unlinked while open here: its shadow directories and the name its
    /// container was renamed aside to, deleted at the last close.
    doomed: Mutex<Option<Doomed>>,
    /// Automatic compaction of this container by this process.
    pub(super) auto: crate::layout::compaction::AutoState,
    /// The container's marker, opened at the first append: appends of every process take an
    /// exclusive flock on it (the mutex serializes this process's threads, which share it).
    append_lock: Mutex<Option<File>>,
    /// The read-ahead window of sequential reads of data logs read past the page cache.
    ahead: Mutex<super::ahead::Ahead>,
}

/// What an unlink of an open file leaves to the last close.
#[derive(Debug)]
pub(crate) struct Doomed {
    /// The directory the container was renamed aside in, and its trash name there.
    pub(crate) parent: crate::sys::Dir,
    pub(crate) trash: String,
}

impl Drop for Shared {
    /// The last handle of this process on the container is gone. If nobody else holds it open
    /// and it was unlinked, by this process or another, it is deleted now.
    fn drop(&mut self) {
        let doomed = self.doomed.get_mut().map(Option::take).unwrap_or_default();
        // Let go of this process's shared lock first, keeping the directory as a look-up only
        // descriptor: a forked child, or an image this process hands the file to (exec), may
        // share the open file description and with it the lock (design.md, "Unlink").
        match self.c.dir.reopen_path() {
            Ok(d) => drop(std::mem::replace(&mut self.c.dir, d)),
            Err(e) => {
                crate::warn!("{e}: could not remove an unlinked file's data");
                return;
            }
        }
        // Then look at the name and the journal: an unlink renames first and then tries the
        // lock, and a compaction writes its journal before its own close looks, so for each of
        // them either this close sees its trace or it finds this process's lock gone. With
        // neither, there is nothing for a last holder to do, and no lock to try (on a FUSE
        // backend that saves an open and a release of the directory per close).
        if doomed.is_none() && !self.c.in_trash() && !super::journal::pending(&self.c) {
            return;
        }
        // Something to do, if nobody else has it open: take it exclusively on a new open file
        // description of its own, then look at the name again.
        if let Err(e) = self.c.dir.make_real() {
            crate::warn!("{e}: could not remove an unlinked file's data");
            return;
        }
        match self.c.dir.try_lock_exclusive() {
            Ok(true) => {}
            Ok(false) => return, // another process has it open: its last close deletes it
            Err(e) => {
                crate::warn!("{e}: could not remove an unlinked file's data");
                return;
            }
        }
        if doomed.is_none() && !self.c.in_trash() {
            // Nobody else has it open: delete what a compaction left for the last close.
            super::journal::on_last_holder(&self.c);
            return;
        }
        let r = match doomed {
            Some(d) => self.c.remove_shadows().and_then(|()| d.parent.remove_tree(&d.trash)),
            None => self.c.remove_trashed(),
        };
        if let Err(e) = r {
            crate::warn!("{e}: could not remove an unlinked file's data");
        }
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    pub(crate) fn new(c: Container, logical: PathBuf) -> Self {
        Shared {
            c,
            logical,
            writers: Mutex::new(HashMap::new()),
            index: Mutex::new(None),
            index_live: AtomicBool::new(false),
            loads: AtomicU64::new(0),
            doomed: Mutex::new(None),
            auto: Default::default(),
            append_lock: Mutex::new(None),
            ahead: Mutex::default(),
        }
    }

    fn data_crc(&self) -> bool {
        self.c.mount.global.data_checksums
    }

    /// Whether the file was unlinked while open (here or by another process).
    pub(crate) fn is_unlinked(&self) -> bool {
        lock(&self.doomed).is_some() || self.c.in_trash()
    }

    /// Appends every writer's buffered index records to its index log.
    pub(crate) fn flush_all(&self) -> Result<()> {
        self.flush_own().map(drop)
    }

    /// [`Shared::flush_all`], returning the ids of the writers with logs that this process made
    /// (not a forked parent's): every write of theirs is in their index logs now.
    fn flush_own(&self) -> Result<Vec<u64>> {
        let ws: Vec<_> = lock(&self.writers).values().cloned().collect();
        let mut own = Vec::new();
        let mut me = None;
        for w in ws {
            let mut w = lock(&w);
            w.flush_index()?;
            if w.logs.is_some() && w.maker == *me.get_or_insert_with(crate::clock::pid) {
                own.push(w.id);
            }
        }
        Ok(own)
    }

    /// Runs `f` on the merged index, loading or refreshing it first (`refresh`) after flushing
    /// this process's buffered records.
    pub(crate) fn with_index<R>(&self, refresh: bool, f: impl FnOnce(&mut IndexState) -> Result<R>) -> Result<R> {
        let mut g = lock(&self.index);
        let stale = g.as_ref().is_some_and(IndexState::is_stale);
        if g.is_none() || refresh || stale {
            self.load_index(&mut g, stale)?;
        }
        f(g.as_mut().expect("index loaded"))
    }

    /// Loads or refreshes the merged index held under `g` for [`Shared::with_index`] (out of line,
    /// not in each of its instances: a reader comes here at its first read and its refreshes).
    #[inline(never)]
    fn load_index(&self, g: &mut Option<IndexState>, stale: bool) -> Result<()> {
        self.loads.fetch_add(1, Ordering::SeqCst);
        // Before the flush: a write that then finds the flag clear has its record in a
        // buffer that the flush below writes out, and the load reads (see `write`).
        self.index_live.store(true, Ordering::SeqCst);
        // This process's writers' records are all in their logs now, and its later writes
        // reach the map from the write path: their open droppings need not send every
        // refresh through every hostdir (a file written, then fstat'ed again and again).
        let own = self.flush_own()?;
        match g.as_mut() {
            // A refresh that finds damage reloads from scratch, which checks it again.
            Some(s) if !stale => match s.adopt_own(&own).refresh(&self.c) {
                Ok(()) => {}
                Err(e @ Error::Corruption { .. }) => {
                    crate::debug!("{e}: reloading the index to check");
                    *g = Some(IndexState::load(&self.c, &self.logical)?);
                }
                Err(e) => return Err(e),
            },
            _ => {
                let mut s = IndexState::load(&self.c, &self.logical)?;
                s.adopt_own(&own);
                *g = Some(s);
            }
        }
        // Drop pattern timestamps unless this process writes the file too (its own writes
        // could overlap a pattern and would then need them).
        if lock(&self.writers).is_empty() {
            g.as_mut().expect("index loaded").compact();
        }
        Ok(())
    }

    /// Defers deleting the container until the last handle in this process is closed (unlink
    /// of an open file: its handles keep working, as POSIX requires).
    pub(crate) fn doom(&self, d: Doomed) {
        *lock(&self.doomed) = Some(d);
    }

    /// Drops the merged index (after a wipe); the next read reloads it.
    pub(crate) fn reset_index(&self) {
        self.forget_index(&mut lock(&self.index));
    }

    /// Drops the merged index held under `g`, the lock of `index`.
    pub(super) fn forget_index(&self, g: &mut Option<IndexState>) {
        *g = None;
        self.index_live.store(false, Ordering::SeqCst);
    }

    pub(crate) fn new_writer(&self, pid: u32) -> Arc<Mutex<Writer>> {
        let w = Arc::new(Mutex::new(Writer::new(pid, self.c.mount.global.index_compression)));
        let id = lock(&w).id;
        lock(&self.writers).insert(id, w.clone());
        w
    }

    pub(crate) fn write(&self, w: &Arc<Mutex<Writer>>, buf: &[u8], off: u64) -> Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        off.checked_add(buf.len() as u64)
            .filter(|end| *end <= i64::MAX as u64)
            .ok_or_else(|| Error::errno(Errno::FBIG, "write beyond the largest file offset"))?;
        let mut wg = lock(w);
        if !wg.announced {
            // Stat takes the slow path (the index) while this record exists.
            self.c.add_meta(&wg.open_record())?;
            wg.announced = true;
        }
        if wg.logs.is_none() {
            wg.create_logs(&self.c, self.data_crc())?;
        }
        // One write(2) moves at most FRAME_MAX_DATA bytes, as Linux's does.
        let buf = &buf[..buf.len().min(format::FRAME_MAX_DATA)];
        let ts = clock::next_ts();
        let crc = self.data_crc();
        let mut data_crc = if crc { crc32c::crc32c(buf) } else { 0 };
        // The write's frame goes out with its bytes, in the same pwritev (after the data log's
        // header on its first write): a write that returned is described in the data log even if
        // its index record never reaches the index log (docs/design.md, "Crash semantics").
        let frame = |len: usize, data_crc: u32| {
            format::Frame {
                logical_off: off,
                length: len as u32,
                ts,
                data_crc,
            }
            .encode()
        };
        // A write that fills the backend part-way (ENOSPC, EDQUOT, EFBIG) is a short write: the
        // bytes that landed are indexed and counted, as write(2) does; the next write fails.
        let (phys, buf) = {
            let l = wg.logs.as_mut().expect("logs created");
            let at = l.data_off;
            let fr = frame(buf.len(), data_crc);
            // The first write's head is the data log's header and the frame (made only then).
            let first: [u8; format::DATA_HEADER_LEN + format::FRAME_LEN];
            let (head, head_at): (&[u8], u64) = match l.data_header {
                Some(h) => {
                    let mut b = [0u8; format::DATA_HEADER_LEN + format::FRAME_LEN];
                    b[..format::DATA_HEADER_LEN].copy_from_slice(&h);
                    b[format::DATA_HEADER_LEN..].copy_from_slice(&fr);
                    first = b;
                    (&first, 0)
                }
                None => (&fr, at),
            };
            let (n, err) = l.data.pwrite_two(head, buf, head_at);
            if n > 0 {
                l.data_header = None;
            }
            match err {
                Some(e) if n == 0 => return Err(e),
                // Part of the bytes landed: the frame must say so, or the data log would describe
                // bytes it does not hold. If it cannot be corrected, the write did not happen (the
                // next write goes to the same place).
                Some(_) => {
                    if crc {
                        data_crc = crc32c::crc32c(&buf[..n]);
                    }
                    l.data.pwrite_all(&frame(n, data_crc), at)?;
                }
                None => {}
            }
            let phys = at + format::FRAME_LEN as u64;
            l.data_off = phys + n as u64;
            (phys, &buf[..n])
        };
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
        // The write's timestamp is the clock's time (or a nanosecond past the last one).
        wg.mtime_ns = ts;
        if wg.pending.len() >= self.c.mount.global.index_buffer_records as usize {
            wg.flush_index()?;
        }
        // Keep this process's merged index current (insertion order does not matter). A writer
        // that does not read has none: one flag, no lock. The flag is read after the record was
        // buffered and before the writer's lock is let go, so a load that sets it later flushes
        // this record first (`with_index`), and one that set it earlier is waited for below.
        if self.index_live.load(Ordering::SeqCst) {
            let dir = wg.logs.as_ref().expect("logs created").dir.clone();
            let (id, pid, host) = (wg.id, wg.pid, wg.host.clone());
            drop(wg);
            if let Some(s) = lock(&self.index).as_mut() {
                // The writer's logs were created with checksums when this process writes them.
                s.note_write(dir, (id, pid, &host), &rec, self.data_crc());
            }
        }
        Ok(buf.len())
    }

    /// Appends `buf` at the end of the file as one step among every process's appends (O_APPEND):
    /// under an exclusive flock on the container's marker, the end is read from a refreshed index
    /// (other processes' appends are in their data logs' frames, which the refresh reads) and the
    /// write is made before the lock is let go. Before, the end came from this process's cached
    /// index, and appends of several processes overwrote each other (issue 25). On a backend
    /// without flock, appends of one process are still serialized.
    pub(crate) fn append(&self, w: &Arc<Mutex<Writer>>, buf: &[u8]) -> Result<(u64, usize)> {
        let mut g = lock(&self.append_lock);
        if g.is_none() {
            *g = Some(
                self.c
                    .dir
                    .open_file(format::MARKER_NAME, crate::sys::Access::Read)?
                    .kept(),
            );
        }
        let marker = g.as_ref().expect("opened");
        let locked = marker.lock_exclusive()?;
        let r = self
            .with_index(true, |s| Ok(s.size()))
            .and_then(|off| Ok((off, self.write(w, buf, off)?)));
        if locked {
            let _ = marker.unlock();
        }
        r
    }

    /// The file's times were set (utimens, by path or through a handle) to `mtime`. An mtime set
    /// while this process writes the file stays: its writers forget the time of their last
    /// write, so that their closes do not raise it back (tar x, cp -p and os.utime(fd) set times
    /// before close; issue 25, item 4). A later write moves it on, as on a plain file.
    pub(crate) fn times_were_set(&self, mtime: TimeSpec) {
        if matches!(mtime, TimeSpec::Omit) {
            return;
        }
        for w in lock(&self.writers).values() {
            lock(w).mtime_ns = 0;
        }
    }

    /// Makes every write made through `w` durable (docs/design.md, "Crash semantics"): the data
    /// log, whose frames describe each write. Only the first sync also syncs the index log (its
    /// header says the data log is framed) and the new logs' names; later ones leave the records
    /// they append unsynced, and the close syncs the index log before its close record
    /// (`Writer::end_logs`). Until then a reader after a power loss finds the writer open
    /// and reads the writes its index log lost from the frames, as after a crash.
    pub(crate) fn sync(&self, w: &Arc<Mutex<Writer>>) -> Result<()> {
        let mut wg = lock(w);
        if let Some(l) = wg.logs.as_mut() {
            // Data must be durable before the records that point at it.
            l.data.fsync()?;
            l.data_synced_off = l.data_off;
        }
        wg.flush_index()?;
        if let Some(l) = wg.logs.as_mut() {
            if l.dirs_synced {
                l.index_owed = true;
                return Ok(());
            }
            l.index.fsync()?;
            // The first sync also makes the new logs' names durable: their hostdir, and the
            // hostdir's own entry in its parent (the container or its shadow directory).
            l.dir.fsync()?;
            let in_container = l.in_container;
            self.c.sync_hostdir_parent(&wg.host, in_container)?;
            if let Some(l) = wg.logs.as_mut() {
                l.dirs_synced = true;
            }
        }
        Ok(())
    }

    pub(crate) fn close_writer(&self, w: &Arc<Mutex<Writer>>) -> Result<()> {
        let mut wg = lock(w);
        if wg.closed {
            return Ok(());
        }
        let r = wg.close_records(&self.c);
        wg.closed = true;
        wg.logs = None;
        self.auto
            .closed_bytes
            .fetch_add(wg.bytes, std::sync::atomic::Ordering::Relaxed);
        self.auto
            .closed_end
            .fetch_max(wg.eof, std::sync::atomic::Ordering::Relaxed);
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
                s.insert_trunc(ts, size, wid);
            }
        }
        // A writer who does not own the file may only set both times to now (utimensat(2)).
        match self.c.set_times(TimeSpec::Omit, TimeSpec::Now) {
            Err(Error::Io { errno: Errno::PERM, .. }) => self.c.set_times(TimeSpec::Now, TimeSpec::Now),
            r => r,
        }
    }

    /// The logical size, from the merged index (refreshed).
    pub(crate) fn size(&self) -> Result<u64> {
        self.with_index(true, |s| Ok(s.size()))
    }

    /// Reads through the merged index (`index/read.rs`): the plan under the index's lock, the
    /// preads and the data checksum checks without it. Data from logs written with checksums
    /// (`data_checksums: true`) is checked: each write it belongs to is read whole, once per
    /// process, and one that does not match its checksum is damage (EIO), not data.
    ///
    /// A read that one element of the pattern being read sequentially holds is one `pread`
    /// ([`IndexState::plan_read`]); if the data log ends before it, the read is planned again in
    /// full, which reports the damage.
    pub(crate) fn read(&self, buf: &mut [u8], off: u64) -> Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        // No plan is made (or dropped) for a read the fast path answers.
        let mut planned = None;
        let len = buf.len() as u64;
        if let Some((f, phys, end)) = self.with_index(false, |s| s.plan_read(off, len, &mut planned))? {
            let whole = if f.is_direct() {
                lock(&self.ahead).read(&f, buf, phys, end)?
            } else {
                f.pread_full(buf, phys)? == buf.len()
            };
            if whole {
                return Ok(buf.len());
            }
            let plan = planned.insert(ReadPlan::default());
            self.with_index(false, |s| s.plan_read_all(off, len, plan))?;
        }
        let plan = planned.unwrap_or_default();
        let n = plan.run(buf, &self.logical)?;
        if plan.checks_writes() {
            if let Some(s) = lock(&self.index).as_mut() {
                s.note_checked(&plan);
            }
        }
        Ok(n)
    }
}
