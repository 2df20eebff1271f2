//! The read side of the index: loading every index log of a container (on every hostdir of
//! every backend) into an [`ExtentMap`], incrementally refreshing it, and the table of data logs
//! ("chunks") the map points into.

use crate::container::Container;
use crate::error::{Error, Result};
use crate::extent::{Cursor, ExtentMap, Key};
use crate::format::{self, flat, MetaDropping};
use crate::sys::{Dir, File};
use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

mod entries;
mod flat_base;
mod flat_need;
mod flatten;
mod logs;
mod own;
mod read;
mod records;
mod sums;
pub use entries::MapEntry;
pub(crate) use flat_base::FlatBase;
pub(crate) use flatten::{flatten, Flattened};
pub(crate) use logs::{holds_byte, scan_frames};
use logs::{past_end, read_log, retired_writers, FoundLog, LogRead, Tail};
pub(crate) use read::ReadPlan;
pub(crate) use records::writer_writes;
pub use records::{Write, WriterWrites};
use sums::{SumCheck, Sums};

/// A data log the map points into.
#[derive(Debug, Clone)]
pub struct Chunk {
    /// Index into [`IndexState::dirs`].
    pub dir: usize,
    /// File name of the data log.
    pub name: OsString,
    /// Its writer.
    pub writer_id: u64,
    /// Writer pid.
    pub pid: u32,
    /// Writer host.
    pub host: String,
}

/// A merged index plus what is needed to read through it.
#[derive(Debug)]
pub struct IndexState {
    /// The extent map.
    map: ExtentMap,
    /// Data logs, indexed by `Piece::chunk`.
    chunks: Vec<Chunk>,
    /// Hostdirs.
    dirs: Vec<Arc<Dir>>,
    chunk_by_writer: HashMap<u64, u32>,
    dir_by_path: HashMap<PathBuf, usize>,
    /// The hostdir and chunk asked for last (a writer's writes ask again; no hashing then).
    last_dir: Option<(Arc<Dir>, usize)>,
    last_chunk: Option<(u64, u32)>,
    /// Index logs read so far: display path → bytes consumed (header included).
    logs: HashMap<PathBuf, u64>,
    /// What is known of each index log's data log (by the index log's display path).
    tails: HashMap<PathBuf, Tail>,
    /// Writes read from the data logs' frames that no index record described yet (statistics).
    recovered: u64,
    /// Writes read from the index logs of framed data logs: each has a frame in its data log,
    /// which is overhead, not dead data, in a usage report.
    framed_writes: u64,
    truncs: HashSet<(u64, u64, u64)>,
    /// Open data-log descriptors by chunk, with their last use (least recently used is closed
    /// first).
    fds: Vec<Option<(Arc<File>, u64)>>,
    fd_tick: u64,
    max_fds: usize,
    /// Index records read (for statistics).
    records_read: u64,
    /// Bytes of the writes read from each writer's index log (checked against close records).
    written: HashMap<u64, u64>,
    /// Set when the state was loaded from a flattened index: what it covers (`flat_base.rs`).
    flat: Option<FlatBase>,
    /// The signature of `meta/` ([`quiet_signature`]) at the end of the last refresh, when no
    /// writer of another process had the file open: a refresh that lists the same droppings has
    /// nothing to read.
    quiet_sig: Option<u64>,
    /// The container directory's stamp read before the listing that found `quiet_sig`
    /// ([`Container::listing_stamp`]): while the directory keeps it, a refresh lists nothing.
    quiet_stamp: Option<crate::container::ListingStamp>,
    /// This process's writers, whose writes reach the map from the write path (`note_write`):
    /// their open droppings do not stop a refresh from being quiet. Only in the process that
    /// noted them (`own_pid`): a forked child's copy of this state sees them as another
    /// process's.
    own: HashSet<u64>,
    own_pid: u32,
    /// The writer noted last (its next write needs no look-up in `own`).
    last_own: Option<u64>,
    /// The data checksums of the logs written with them.
    sums: Sums,
    /// A sequential reader's pattern or piece (with its place in it), with its data log and the
    /// map generation it was taken at (`index/read.rs`, [`IndexState::plan_read`]).
    run: Option<(u64, Cursor, Arc<File>)>,
    /// Where the last read ended (a read that starts there is sequential).
    next_read: u64,
    /// The element length of the run found last (`u64::MAX` before the first).
    run_elem_len: u64,
}

/// Logs read per thread of a refresh (fewer are read on the calling thread).
const LOGS_PER_THREAD: usize = 8;

impl IndexState {
    /// An empty state for a container.
    pub fn empty(max_fds: usize) -> Self {
        IndexState {
            map: ExtentMap::new(),
            chunks: Vec::new(),
            dirs: Vec::new(),
            chunk_by_writer: HashMap::new(),
            dir_by_path: HashMap::new(),
            last_dir: None,
            last_chunk: None,
            logs: HashMap::new(),
            tails: HashMap::new(),
            recovered: 0,
            framed_writes: 0,
            truncs: HashSet::new(),
            fds: Vec::new(),
            fd_tick: 0,
            max_fds: max_fds.max(1),
            records_read: 0,
            written: HashMap::new(),
            flat: None,
            quiet_sig: None,
            quiet_stamp: None,
            own: HashSet::new(),
            own_pid: 0,
            last_own: None,
            sums: Sums::default(),
            run: None,
            next_read: 0,
            run_elem_len: u64::MAX,
        }
    }

    /// Loads the whole index of `c` (logical path `logical`): from its flattened index when that
    /// is still valid, else from every index log. Damage found is checked again on a fresh
    /// load a few times before it is reported: a network file system can list a directory
    /// incompletely for an instant (GlusterFS, while an ancestor is being renamed), real damage
    /// stays.
    pub fn load(c: &Container, logical: &Path) -> Result<Self> {
        let mut delay = std::time::Duration::from_millis(10);
        for _ in 0..3 {
            match Self::load_once(c, logical) {
                Err(Error::Corruption { .. }) => {
                    std::thread::sleep(delay);
                    delay *= 5;
                }
                r => return r,
            }
        }
        Self::load_once(c, logical)
    }

    fn load_once(c: &Container, logical: &Path) -> Result<Self> {
        let mut s = IndexState::empty(c.mount.global.max_open_data_logs as usize);
        // The flattened index carries no data checksums: a reader that checks them
        // (`data_checksums: true`) reads the index logs.
        if !c.mount.global.data_checksums {
            match s.load_flat(c, logical, true, None) {
                Ok(true) => return Ok(s),
                Ok(false) => {}
                Err(e) => crate::warn!("{e}; ignoring the flattened index"),
            }
        }
        s = IndexState::empty(c.mount.global.max_open_data_logs as usize);
        s.refresh(c)?;
        Ok(s)
    }

    /// Whether the listing of droppings just taken, whose signature (`sig_of`) was `sig`, can be
    /// trusted to say that nothing changed since the listing that gave this state: a listing
    /// taken while another writer renames its open dropping to its close dropping can miss both
    /// names, and a writer whose last write an append or a reader must see would then be left
    /// out (four shell loops appending to one file lost 4-11 of 1,200 lines this way, once the
    /// last close flattened the index: the appender trusted the flattened index). A writer
    /// makes its close dropping before it removes its open dropping, so a listing that missed
    /// both began before the close dropping was made and ended after it: a second listing holds
    /// it. Where the listing holds every index log ([`Container::listed_index_writers`]) and each
    /// is of a writer this state knows, no writer can have been missed and one listing is
    /// enough (the common case); elsewhere (an unknown writer's log, which a missed writer has,
    /// or logs the listing does not hold) the droppings are listed again and must give `sig`
    /// again. An index log renamed to another writer's name, which a flattened index may be all
    /// that reads right, so passes the second listing.
    fn listing_confirms(
        &self,
        c: &Container,
        sig_of: impl Fn(&[MetaDropping]) -> Option<u64>,
        sig: Option<u64>,
    ) -> Result<bool> {
        if let Some(writers) = c.listed_index_writers() {
            if writers.iter().all(|w| self.chunk_by_writer.contains_key(w)) {
                return Ok(true);
            }
        }
        Ok(sig_of(&c.list_meta()?) == sig)
    }

    /// Applies truncate dropping (`ts`, `size`, `writer`) once, this process's own too: a known
    /// dropping that vanishes from `meta/` means a wipe, and the next refresh starts again.
    pub fn insert_trunc(&mut self, ts: u64, size: u64, writer: u64) {
        // Changed here, not only from the droppings: the next refresh must read them (a wipe can
        // bring `meta/` back to the listing it had before this truncate's dropping).
        self.quiet_sig = None;
        if self.truncs.insert((ts, size, writer)) {
            self.map.insert_trunc(size, Key { ts, writer });
        }
    }

    /// Registers a hostdir, returning its index.
    fn add_dir(&mut self, dir: Arc<Dir>) -> usize {
        if let Some((_, i)) = self.last_dir.as_ref().filter(|(d, _)| Arc::ptr_eq(d, &dir)) {
            return *i;
        }
        let i = match self.dir_by_path.get(dir.path()) {
            Some(&i) => i,
            None => {
                self.dir_by_path.insert(dir.path().to_path_buf(), self.dirs.len());
                self.dirs.push(dir.clone());
                self.dirs.len() - 1
            }
        };
        self.last_dir = Some((dir, i));
        i
    }

    /// The chunk id of a writer's data log, registering it if new.
    fn chunk_for(&mut self, dir: usize, writer_id: u64, pid: u32, host: &str) -> u32 {
        if let Some((_, c)) = self.last_chunk.filter(|&(w, _)| w == writer_id) {
            return c;
        }
        if let Some(&c) = self.chunk_by_writer.get(&writer_id) {
            self.last_chunk = Some((writer_id, c));
            return c;
        }
        self.chunks.push(Chunk {
            dir,
            name: format::data_log_name(writer_id, pid, host).into(),
            writer_id,
            pid,
            host: host.to_string(),
        });
        let id = (self.chunks.len() - 1) as u32;
        self.chunk_by_writer.insert(writer_id, id);
        self.last_chunk = Some((writer_id, id));
        id
    }

    /// Reads whatever was appended to the container's index logs and meta droppings since the
    /// last call. If a log shrank or vanished (a truncate-to-zero wiped the container), rebuilds
    /// from scratch. Safe to call concurrently with writers: a torn tail is consumed later.
    pub fn refresh(&mut self, c: &Container) -> Result<()> {
        self.refresh_n(c, 0, None)
    }

    /// [`IndexState::refresh`]; `tries` counts the rebuilds after a listed log vanished (each
    /// lists afresh); `listed`, a listing already taken (`flatten::refresh_listed`).
    fn refresh_n(&mut self, c: &Container, tries: u32, listed: Option<Vec<MetaDropping>>) -> Result<()> {
        if !self.own.is_empty() {
            self.own_writers_here();
        }
        // A quiet file whose directory has not changed since the listing that found it quiet:
        // nothing to list (one stat of the directory, not its listing: sqlite's database at
        // every stat and read of a transaction, on a local file system). A stamp taken after a
        // listing given could vouch for a change made between the two: none is kept then.
        let stamp = if listed.is_some() { None } else { c.listing_stamp()? };
        if self.quiet_sig.is_some() && listed.is_none() {
            if let (Some(was), Some(now)) = (&self.quiet_stamp, &stamp) {
                if was.vouches_at(now) {
                    return Ok(());
                }
            }
        }
        let meta = match listed {
            Some(m) => m,
            None => c.list_meta()?,
        };
        // Nothing was opened, written, closed, truncated or compacted by another process since
        // the last refresh, which found no writer of another process open: every one of those
        // leaves or changes a dropping (a writer makes its open dropping before its logs, its
        // close dropping after its last record). This process's own writes are in the map
        // already. This is what a short read's look for more, or an fstat, of a closed file (or
        // of one only this process writes, as a database does at every transaction) costs: one
        // listing of `meta/`, not every directory.
        let sig = self.quiet_signature(&meta);
        if sig.is_some() && sig == self.quiet_sig && self.listing_confirms(c, |m| self.quiet_signature(m), sig)? {
            self.quiet_stamp = stamp;
            return Ok(());
        }
        if let Some(base) = &self.flat {
            let sig = Some(base.sig);
            if flat::signature(&meta) == sig && self.listing_confirms(c, flat::signature, sig)? {
                return Ok(()); // nothing was written, truncated or opened since the flattening
            }
        }
        // Writers came after the flattening: it still answers for those it covers, unless
        // a dropping of theirs changed (`flat_base.rs`).
        if self.flat.as_ref().is_some_and(|b| !b.holds(&meta)) {
            *self = IndexState::empty(self.max_fds);
        }
        let mut found = self.find_logs(c)?;
        let others;
        let checked = match &self.flat {
            Some(base) => {
                found.retain(|f| !base.writers.contains(&f.info.writer_id));
                others = base.others(&meta);
                &others[..]
            }
            None => &meta[..],
        };
        // Whole logs are what the droppings promise: a writer that closed with data left an
        // index log (its loss is damage, not a shorter file), and wrote every record of it.
        let closed: HashSet<u64> = meta
            .iter()
            .filter_map(|d| match *d {
                MetaDropping::Close { writer_id, .. } => Some(writer_id),
                _ => None,
            })
            .collect();
        check_closed_logs(c, checked, &found)?;
        if self.wiped(&meta, &found) {
            return self.rebuild(c, tries);
        }
        self.apply_truncs(c, &meta)?;
        let results = self.read_logs(c, &found, &closed);
        for (f, r) in found.iter().zip(results) {
            let read = match r {
                Ok(v) => v,
                // Listed, then gone: a compaction retired it, after publishing the log that
                // replaces it, which a new listing finds.
                Err(e) if crate::sys::is_missing(&e) && tries < 8 => {
                    return self.rebuild(c, tries + 1);
                }
                Err(e) => return Err(e),
            };
            let old = self.logs.get(&f.path).copied().unwrap_or(0);
            if read.consumed < old {
                return self.rebuild(c, tries);
            }
            self.merge_log(f, read, closed.contains(&f.info.writer_id))?;
        }
        self.check_written(c, checked, &found)?;
        self.quiet_sig = sig;
        self.quiet_stamp = stamp;
        Ok(())
    }

    /// Starts the refresh again from an empty state (the container was wiped, or a log it
    /// listed was retired).
    fn rebuild(&mut self, c: &Container, tries: u32) -> Result<()> {
        *self = IndexState::empty(self.max_fds);
        self.refresh_n(c, tries, None)
    }

    /// Every index log in every hostdir of `c` (each hostdir registered).
    fn find_logs(&mut self, c: &Container) -> Result<Vec<FoundLog>> {
        let mut found: Vec<FoundLog> = Vec::new();
        for (hd, listed) in c.hostdirs_listed()? {
            let names = match listed {
                Some(n) => n,
                None => hd.list()?,
            };
            let path = hd.path().to_path_buf();
            let dir = self.add_dir(hd);
            for name in names {
                let Some(info) = name.to_str().and_then(format::parse_log_name) else {
                    continue;
                };
                if info.is_index {
                    found.push(FoundLog {
                        dir,
                        path: path.join(&name),
                        name,
                        info,
                    });
                }
            }
        }
        Ok(found)
    }

    /// Whether the container was wiped since the last refresh: a known log or a known truncate
    /// is gone, or a writer of this process's own left no trace.
    fn wiped(&self, meta: &[MetaDropping], found: &[FoundLog]) -> bool {
        // A known log that disappeared means the container was wiped: start again.
        let present: HashSet<&PathBuf> = found.iter().map(|f| &f.path).collect();
        if self.logs.keys().any(|p| !present.contains(p)) {
            return true;
        }
        // This process's own writes reach the map from the write path, not from a read of their
        // log, so the test above does not see their log go. A writer of its own has an open
        // dropping from before its first write until its close dropping, which stays, and its
        // index log: one with neither a dropping nor a log closed and was wiped since (another
        // process's `O_TRUNC` once nobody had the file open for writing; a process that still
        // had it open for reading went on reporting the old size).
        if !self.own.is_empty() {
            let traced: HashSet<u64> = meta
                .iter()
                .filter_map(|d| match *d {
                    MetaDropping::Open { writer_id, .. } | MetaDropping::Close { writer_id, .. } => Some(writer_id),
                    _ => None,
                })
                .chain(found.iter().map(|f| f.info.writer_id))
                .collect();
            if self.own.iter().any(|w| !traced.contains(w)) {
                return true;
            }
        }
        // A known truncate that vanished means the container was wiped: start again.
        let current: HashSet<(u64, u64, u64)> = meta
            .iter()
            .filter_map(|d| match *d {
                MetaDropping::Trunc { ts, size, writer_id } => Some((ts, size, writer_id)),
                _ => None,
            })
            .collect();
        self.truncs.iter().any(|t| !current.contains(t))
    }

    /// Applies every trunc dropping of `meta`.
    fn apply_truncs(&mut self, c: &Container, meta: &[MetaDropping]) -> Result<()> {
        for d in meta {
            if let MetaDropping::Trunc { ts, size, writer_id } = *d {
                if size > i64::MAX as u64 {
                    return Err(Error::corrupt(
                        c.meta_path().join(d.name()),
                        format!("a truncate to {size} bytes, beyond any file size"),
                    ));
                }
                self.insert_trunc(ts, size, writer_id);
            }
        }
        Ok(())
    }

    /// Reads the new part of every log in `found` (those of writers not in `closed` with their
    /// frames), in the order of `found`.
    fn read_logs(&self, c: &Container, found: &[FoundLog], closed: &HashSet<u64>) -> Vec<Result<LogRead>> {
        // Read the new parts of every log on a pool of threads, then merge in one place. A thread
        // costs more than reading a few small logs (a refresh is what every fstat of an open file
        // does): one thread per LOGS_PER_THREAD logs, up to `threadpool_size`.
        let threads = (found.len() / LOGS_PER_THREAD).clamp(1, (c.mount.global.threadpool_size as usize).max(1));
        let starts: Vec<(u64, Tail, bool)> = found
            .iter()
            .map(|f| {
                (
                    self.logs.get(&f.path).copied().unwrap_or(0),
                    self.tails.get(&f.path).copied().unwrap_or_default(),
                    !closed.contains(&f.info.writer_id),
                )
            })
            .collect();
        let dirs = &self.dirs;
        let read_all = |fs: &[FoundLog], ss: &[(u64, Tail, bool)]| -> Vec<Result<LogRead>> {
            fs.iter()
                .zip(ss)
                .map(|(f, &(s, t, open))| read_log(&dirs[f.dir], f, s, t, open))
                .collect()
        };
        // Few logs (a refresh of a file with a handful of writers) are read on this thread.
        if threads <= 1 {
            read_all(found, &starts)
        } else {
            std::thread::scope(|scope| {
                let chunk = found.len().div_ceil(threads).max(1);
                let handles: Vec<_> = found
                    .chunks(chunk)
                    .zip(starts.chunks(chunk))
                    .map(|(fs, ss)| scope.spawn(move || read_all(fs, ss)))
                    .collect();
                handles
                    .into_iter()
                    .flat_map(|h| {
                        h.join().unwrap_or_else(|_| {
                            vec![Err(Error::InvalidArgument("index reader thread panicked".into()))]
                        })
                    })
                    .collect()
            })
        }
    }

    /// Merges what was read of log `f` into the map (its writer closed: `was_closed`).
    fn merge_log(&mut self, f: &FoundLog, read: LogRead, was_closed: bool) -> Result<()> {
        let LogRead {
            consumed: new_consumed,
            mut dec,
            data_len,
            tail,
            recovered,
        } = read;
        check_log_end(f, dec.tail_error.as_deref(), new_consumed, was_closed)?;
        let chunk = self.chunk_for(f.dir, f.info.writer_id, f.info.pid, &f.info.host);
        let flags = tail.flags.unwrap_or(0);
        if flags & format::LOG_FLAG_DATA_CRC != 0 {
            self.sums.enable(chunk);
        }
        let gap = format::frame_gap(flags);
        let (patterns, records) = (std::mem::take(&mut dec.patterns), std::mem::take(&mut dec.records));
        if gap > 0 {
            let n: u64 = patterns.iter().map(|p| p.ts.len() as u64).sum();
            self.framed_writes += n + records.len() as u64;
        }
        for pr in patterns {
            let n = pr.ts.len() as u64;
            let pstride = pr.pstride(gap);
            if pr.physical_end(gap) > data_len {
                return Err(past_end(f, pr.logical_start, data_len));
            }
            self.map.insert_pattern(crate::extent::Pattern {
                start: pr.logical_start,
                len: pr.length,
                stride: pr.stride,
                count: n,
                chunk,
                phys: pr.physical_start,
                pstride,
                writer: f.info.writer_id,
                ts_first: pr.ts[0],
                ts_last: pr.ts[pr.ts.len() - 1],
                ts: Some(pr.ts.into()),
            });
            self.records_read += n;
            *self.written.entry(f.info.writer_id).or_default() += n.saturating_mul(pr.length);
        }
        self.records_read += records.len() as u64;
        *self.written.entry(f.info.writer_id).or_default() += records.iter().map(|r| r.length).sum::<u64>();
        // Then the writes only the data log describes yet (their frames): the same extents,
        // keys and checksums their index records will carry, so reading them again from
        // those records changes nothing (docs/design.md, "Crash semantics").
        for r in records.iter().chain(&recovered) {
            if r.physical_off.saturating_add(r.length) > data_len {
                return Err(past_end(f, r.logical_off, data_len));
            }
            self.map.insert_write(
                r.logical_off,
                r.length,
                chunk,
                r.physical_off,
                Key {
                    ts: r.ts,
                    writer: f.info.writer_id,
                },
            );
            self.sums
                .add(chunk, r.physical_off, r.length, r.logical_off, r.data_crc);
        }
        self.recovered += recovered.len() as u64;
        self.logs.insert(f.path.clone(), new_consumed);
        self.tails.insert(f.path.clone(), tail);
        Ok(())
    }

    /// Checks the bytes each closed writer's close dropping in `meta` counts against its index
    /// log.
    fn check_written(&self, c: &Container, meta: &[MetaDropping], found: &[FoundLog]) -> Result<()> {
        // Every write of a writer that closed must be in its index log (one without a log was
        // retired by a compaction, checked above).
        for d in meta {
            if let MetaDropping::Close { writer_id, bytes, .. } = d {
                let got = self.written.get(writer_id).copied().unwrap_or(0);
                let log = found
                    .iter()
                    .find(|f| f.info.writer_id == *writer_id)
                    .map(|f| f.path.clone());
                if got != *bytes && log.is_some() {
                    return Err(Error::corrupt(
                        log.unwrap_or_else(|| c.meta_path()),
                        format!(
                            "writer {writer_id:016x} closed having written {bytes} bytes, but its index log holds {got}"
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Display path of a chunk's data log.
    pub fn chunk_path(&self, chunk: u32) -> PathBuf {
        let c = &self.chunks[chunk as usize];
        self.dirs[c.dir].sub(&c.name)
    }
}

/// Fails unless every writer that closed with data in `meta` has an index log in `found`, or was
/// retired by a committed compaction.
fn check_closed_logs(c: &Container, meta: &[MetaDropping], found: &[FoundLog]) -> Result<()> {
    let mut retiring: Option<HashSet<u64>> = None;
    for d in meta {
        if let MetaDropping::Close { writer_id, bytes, .. } = d {
            if *bytes > 0 && !found.iter().any(|f| f.info.writer_id == *writer_id) {
                // A compaction's roll-forward deletes the index logs it retires before their
                // close droppings (docs/design.md, "Compaction"): a writer its journal
                // retires was compacted into the new log, not lost.
                let retiring = match &mut retiring {
                    Some(r) => r,
                    None => retiring.insert(retired_writers(c)?),
                };
                if retiring.contains(writer_id) {
                    continue;
                }
                return Err(Error::corrupt(
                    c.meta_path().join(d.name()),
                    format!("writer {writer_id:016x} closed with {bytes} bytes, but its index log is missing"),
                ));
            }
        }
    }
    Ok(())
}

/// Fails if the end of log `f` is damage: a decoding error other than a torn tail, a torn tail
/// or a missing header in the log of a writer that closed.
fn check_log_end(f: &FoundLog, tail_error: Option<&str>, consumed: u64, was_closed: bool) -> Result<()> {
    match tail_error {
        // The end of a log still being written (or of a writer that died mid-append).
        Some(e) if e.starts_with("torn") && !was_closed => {}
        Some(e) => {
            let why = if e.starts_with("torn") {
                format!("{e}, in the log of a writer that closed")
            } else {
                e.to_string()
            };
            return Err(Error::corrupt(&f.path, why));
        }
        None => {}
    }
    if was_closed && consumed < format::INDEX_HEADER_LEN as u64 {
        return Err(Error::corrupt(
            &f.path,
            "shorter than its header, in a writer that closed",
        ));
    }
    Ok(())
}
