//! The per-process state of one N-1 container, shared by every handle on it: the writers opened
//! through this process and the merged index, so a process always reads its own writes. The
//! write path (data log append, buffered index record), sync, close and truncate, and the read
//! path through the merged index.

use super::writer::Writer;
use crate::clock;
use crate::container::Container;
use crate::container::DirExt;
use crate::error::{Error, Result};
use crate::extent::{Key, Segment};
use crate::format::{self, MetaDropping, WriteRecord};
use crate::index::{IndexState, SumCheck};
use crate::sys::{File, TimeSpec};
use rustix::io::Errno;
use smallvec::SmallVec;
use std::collections::HashMap;
use std::path::PathBuf;
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
    /// Set when the file was unlinked while open here: its shadow directories and the name its
    /// container was renamed aside to, deleted at the last close.
    doomed: Mutex<Option<Doomed>>,
    /// Automatic compaction of this container by this process.
    pub(super) auto: crate::layout::compaction::AutoState,
    /// The container's marker, opened at the first append: appends of every process take an
    /// exclusive flock on it (the mutex serializes this process's threads, which share it).
    append_lock: Mutex<Option<File>>,
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
        // The exclusive lock is tried on a new open file description of the container, after
        // letting go of this process's own: a forked child, or an image this process hands the
        // file to (exec), may share that description and with it the shared lock, which a
        // conversion of it to an exclusive lock would not see (design.md, "Unlink").
        match self.c.dir.reopen() {
            Ok(d) => drop(std::mem::replace(&mut self.c.dir, d)),
            Err(e) => {
                crate::warn!("{e}: could not remove an unlinked file's data");
                return;
            }
        }
        // Take the lock first, then look at the name: an unlink renames first, then tries the
        // lock, so one of the two sees the other (design.md, "Unlink").
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
            doomed: Mutex::new(None),
            auto: Default::default(),
            append_lock: Mutex::new(None),
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
        let ws: Vec<_> = lock(&self.writers).values().cloned().collect();
        for w in ws {
            lock(&w).flush_index()?;
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
                // A refresh that finds damage reloads from scratch, which checks it again.
                Some(s) if !stale => match s.refresh(&self.c) {
                    Ok(()) => {}
                    Err(e @ Error::Corruption { .. }) => {
                        crate::debug!("{e}: reloading the index to check");
                        *g = Some(IndexState::load(&self.c, &self.logical)?);
                    }
                    Err(e) => return Err(e),
                },
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

    /// Defers deleting the container until the last handle in this process is closed (unlink
    /// of an open file: its handles keep working, as POSIX requires).
    pub(crate) fn doom(&self, d: Doomed) {
        *lock(&self.doomed) = Some(d);
    }

    /// Drops the merged index (after a wipe); the next read reloads it.
    pub(crate) fn reset_index(&self) {
        *lock(&self.index) = None;
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
        let (phys, dir, buf) = {
            let l = wg.logs.as_mut().expect("logs created");
            let at = l.data_off;
            let mut head = [0u8; format::DATA_HEADER_LEN + format::FRAME_LEN];
            let (head, head_at) = match l.data_header {
                Some(h) => {
                    head[..format::DATA_HEADER_LEN].copy_from_slice(&h);
                    head[format::DATA_HEADER_LEN..].copy_from_slice(&frame(buf.len(), data_crc));
                    (&head[..], 0)
                }
                None => {
                    head[..format::FRAME_LEN].copy_from_slice(&frame(buf.len(), data_crc));
                    (&head[..format::FRAME_LEN], at)
                }
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
            (phys, l.dir.clone(), &buf[..n])
        };
        wg.pending.push(WriteRecord {
            logical_off: off,
            length: buf.len() as u64,
            physical_off: phys,
            ts,
            data_crc,
        });
        wg.eof = wg.eof.max(off + buf.len() as u64);
        wg.bytes += buf.len() as u64;
        // The write's timestamp is the clock's time (or a nanosecond past the last one).
        wg.mtime_ns = ts;
        if wg.pending.len() >= self.c.mount.global.index_buffer_records as usize {
            wg.flush_index()?;
        }
        let (id, pid, host) = (wg.id, wg.pid, wg.host.clone());
        drop(wg);
        // Keep this process's merged index current (insertion order does not matter).
        if let Some(s) = lock(&self.index).as_mut() {
            let d = s.add_dir(dir);
            let chunk = s.chunk_for(d, id, pid, &host);
            s.map
                .insert_write(off, buf.len() as u64, chunk, phys, Key { ts, writer: id });
            if self.data_crc() {
                // The writer's logs were created with checksums too.
                s.sums.enable(chunk);
                s.sums.add(chunk, phys, buf.len() as u64, off, data_crc);
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
            .with_index(true, |s| Ok(s.map.size()))
            .and_then(|off| Ok((off, self.write(w, buf, off)?)));
        if locked {
            let _ = marker.unlock();
        }
        r
    }

    /// The file's mtime was set (utimens): this process's writers forget the time of their
    /// last write, so that their closes leave the mtime as set.
    pub(crate) fn mtime_was_set(&self) {
        for w in lock(&self.writers).values() {
            lock(w).mtime_ns = 0;
        }
    }

    pub(crate) fn sync(&self, w: &Arc<Mutex<Writer>>) -> Result<()> {
        let mut wg = lock(w);
        if let Some(l) = &wg.logs {
            // Data must be durable before the records that point at it.
            l.data.fsync()?;
        }
        wg.flush_index()?;
        if let Some(l) = wg.logs.as_mut() {
            l.index.fsync()?;
            if !l.dirs_synced {
                // The first sync also makes the new logs' names durable: their hostdir, and the
                // hostdir's own entry in its parent (the container or its shadow directory).
                l.dir.fsync()?;
                let in_container = l.in_container;
                self.c.sync_hostdir_parent(&wg.host, in_container)?;
                if let Some(l) = wg.logs.as_mut() {
                    l.dirs_synced = true;
                }
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
        self.with_index(true, |s| Ok(s.map.size()))
    }

    /// Reads through the merged index. Data from logs written with checksums
    /// (`data_checksums: true`) is checked: each write it belongs to is read whole, once per
    /// process, and one that does not match its checksum is damage (EIO), not data.
    pub(crate) fn read(&self, buf: &mut [u8], off: u64) -> Result<usize> {
        let (mut checks, mut sums) = (Vec::new(), Vec::new());
        let plan = self.with_index(false, |s| {
            let segs = s.map.lookup(off, buf.len() as u64);
            let mut plan = Plan::with_capacity(segs.len());
            for seg in &segs {
                match *seg {
                    Segment::Hole { len } => plan.push((len, None)),
                    Segment::Data { len, chunk, phys } => {
                        let f = s.data_fd(chunk)?;
                        sums.clear();
                        s.sums.to_check(chunk, phys, len, &mut sums);
                        let writer = s.chunks[chunk as usize].writer_id;
                        checks.extend(sums.drain(..).map(|sum| Check {
                            sum,
                            writer,
                            seg: plan.len(),
                            file: f.clone(),
                        }));
                        plan.push((len, Some((f, phys))))
                    }
                }
            }
            Ok(plan)
        })?;
        let (at, pos) = read_plan(&plan, buf)?;
        if !checks.is_empty() {
            for Check {
                sum: c, seg, file: f, ..
            } in &checks
            {
                let (len, src) = &plan[*seg];
                let seg_phys = src.as_ref().map_or(0, |s| s.1);
                // Read whole by this read: checked from the buffer; else from the log.
                let inside = c.phys >= seg_phys && c.phys + c.len <= seg_phys + len;
                let got = if inside {
                    let s = at[*seg] + (c.phys - seg_phys) as usize;
                    Some(crc32c::crc32c(&buf[s..s + c.len as usize]))
                } else {
                    crc_of(f, c)?
                };
                if got != Some(c.crc) {
                    return Err(Error::corrupt(
                        f.path(),
                        format!(
                            "{}: the write of {} bytes at logical offset {} (bytes {}..{} of this data log) {}, the index says crc32c {:08x}",
                            self.logical.display(),
                            c.len,
                            c.logical,
                            c.phys,
                            c.phys + c.len,
                            got.map_or("is cut short".to_string(), |g| format!("has crc32c {g:08x}")),
                            c.crc
                        ),
                    ));
                }
            }
            // Into the same merged index only: a reloaded one numbers its chunks anew.
            let mut g = lock(&self.index);
            if let Some(s) = g.as_mut() {
                for c in &checks {
                    if s.chunks.get(c.sum.chunk as usize).map(|ch| ch.writer_id) == Some(c.writer) {
                        s.sums.checked(c.sum.chunk, c.sum.phys);
                    }
                }
            }
        }
        Ok(pos)
    }
}

/// A write a read returns part of, to check: in plan segment `seg`, from `file`, the data log
/// of `writer`.
struct Check {
    sum: SumCheck,
    writer: u64,
    seg: usize,
    file: Arc<File>,
}

/// The crc32c of a write's data read from its data log, or `None` when the log ends before it.
fn crc_of(f: &File, c: &SumCheck) -> Result<Option<u32>> {
    let mut b = vec![0u8; c.len.min(1 << 20) as usize];
    let (mut crc, mut done) = (0u32, 0u64);
    while done < c.len {
        let want = (c.len - done).min(b.len() as u64) as usize;
        let n = f.pread_full(&mut b[..want], c.phys + done)?;
        if n < want {
            return Ok(None);
        }
        crc = crc32c::crc32c_append(crc, &b[..n]);
        done += n as u64;
    }
    Ok(Some(crc))
}

/// A read's plan: for each stretch of the buffer, its length and where it comes from (a data
/// log and offset; none for a hole).
/// Inline for the usual read of one or two stretches: a read allocates nothing for its plan.
type Plan = SmallVec<[(u64, Option<(Arc<File>, u64)>); 4]>;

/// Stretches of one data log at most this far apart are read by one `preadv`, the bytes between
/// them (a framed log's frames) into a scratch buffer.
const MAX_GAP: u64 = format::FRAME_LEN as u64;

/// The most stretches one `preadv` reads (two vectors each, within IOV_MAX).
const MAX_RUN: usize = 256;

/// Fills `buf` from the plan; returns where each stretch starts in `buf`, and the bytes filled.
/// The stretches of one data log that lie at most a frame apart in it are read by one `preadv`,
/// wherever they land in `buf`: one writer's consecutive writes (back to back in its log, as an
/// unframed log's were read by one `pread`), also when other writers' records lie between them
/// in the file (N-1 strided: a read of 16 records of 4 writers costs 4 calls, not 16).
fn read_plan(plan: &Plan, buf: &mut [u8]) -> Result<(SmallVec<[usize; 4]>, usize)> {
    let mut at = SmallVec::with_capacity(plan.len());
    let mut pos = 0usize;
    for (len, _) in plan {
        at.push(pos);
        pos += *len as usize;
    }
    if let [(len, src)] = plan.as_slice() {
        let b = &mut buf[..*len as usize];
        match src {
            None => b.fill(0),
            Some((f, phys)) => {
                let got = f.pread_full(b, *phys)?;
                short_log(f, *phys, got, phys + len)?;
            }
        }
        return Ok((at, pos));
    }
    // Each stretch's part of `buf`, taken when it is read; holes are zeros.
    let mut parts: Vec<Option<&mut [u8]>> = Vec::with_capacity(plan.len());
    let mut rest = &mut buf[..pos];
    for (len, src) in plan {
        let (part, r) = std::mem::take(&mut rest).split_at_mut(*len as usize);
        rest = r;
        if src.is_none() {
            part.fill(0);
        }
        parts.push(Some(part));
    }
    // The data stretches by data log, then by offset in it.
    let mut order: Vec<(usize, &Arc<File>, u64)> = plan
        .iter()
        .enumerate()
        .filter_map(|(k, (_, src))| src.as_ref().map(|(f, p)| (k, f, *p)))
        .collect();
    order.sort_by_key(|&(_, f, p)| (Arc::as_ptr(f) as usize, p));
    let mut i = 0;
    while i < order.len() {
        let (first, f, phys) = order[i];
        // The run of stretches [i, j) that follow each other in this data log.
        let mut j = i + 1;
        let mut end = phys + plan[first].0;
        while j < order.len() && j - i < MAX_RUN {
            let (k, g, p) = order[j];
            if !(Arc::ptr_eq(f, g) && p >= end && p - end <= MAX_GAP) {
                break;
            }
            end = p + plan[k].0;
            j += 1;
        }
        let got = if j == i + 1 {
            f.pread_full(parts[first].take().expect("each stretch is read once"), phys)?
        } else {
            // The bytes between the stretches (frames) land in a scratch buffer.
            let data: u64 = order[i..j].iter().map(|&(k, ..)| plan[k].0).sum();
            let mut scratch = vec![0u8; (end - phys - data) as usize];
            let mut sc = &mut scratch[..];
            let mut iov: Vec<std::io::IoSliceMut<'_>> = Vec::with_capacity(2 * (j - i));
            let mut prev_end = phys;
            for &(k, _, p) in &order[i..j] {
                if p > prev_end {
                    let (g, r) = std::mem::take(&mut sc).split_at_mut((p - prev_end) as usize);
                    sc = r;
                    iov.push(std::io::IoSliceMut::new(g));
                }
                iov.push(std::io::IoSliceMut::new(
                    parts[k].take().expect("each stretch is read once"),
                ));
                prev_end = p + plan[k].0;
            }
            f.preadv_full(&mut iov, phys)?
        };
        short_log(f, phys, got, end)?;
        i = j;
    }
    Ok((at, pos))
}

/// The error for a data log that ended (`got` bytes from `phys`) before `end`, where the index
/// points.
fn short_log(f: &File, phys: u64, got: usize, end: u64) -> Result<()> {
    if phys + (got as u64) < end {
        return Err(Error::corrupt(
            f.path(),
            format!("data log ends at {} but the index points to {}", phys + got as u64, end),
        ));
    }
    Ok(())
}
