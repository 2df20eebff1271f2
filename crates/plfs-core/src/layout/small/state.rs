//! The in-memory state of one 1-N directory's view: name → file id, file id → attributes and
//! extent map, the directory's logs, this process's writer log and its buffer; and how one record
//! of a log changes that state when the logs are replayed in timestamp order.

use crate::error::Result;
use crate::extent::{ExtentMap, Key};
use crate::format::small::{self as fmt, Rec};
use crate::sys::{Dir, File};
use crate::types::{FileKind, Stat, BLKSIZE};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

/// A packed file's attributes and data map.
#[derive(Debug, Clone)]
pub(super) struct SmallMeta {
    pub(super) mode: u32,
    pub(super) uid: u32,
    pub(super) gid: u32,
    pub(super) atime: i64,
    pub(super) mtime: i64,
    pub(super) ctime: i64,
    pub(super) map: ExtentMap,
    /// Timestamp of its CREATE record (a compaction writes it again with the same one).
    pub(super) created: u64,
}

/// One log of the directory.
#[derive(Debug)]
pub(super) struct LogRef {
    pub(super) path: PathBuf,
    pub(super) writer: u64,
    pub(super) file: Arc<File>,
    pub(super) seen: u64,
}

/// This process's writer log in the directory.
#[derive(Debug)]
pub(super) struct SmallWriter {
    pub(super) id: u64,
    pub(super) file: Arc<File>,
    /// The store the log is in (where its reserve is).
    pub(super) store: Dir,
    /// Log offset where `buf` will land.
    pub(super) off: u64,
    pub(super) buf: Vec<u8>,
    pub(super) log: usize,
    /// The log's name and its store's are durable (fsynced once, at the first sync).
    pub(super) named: bool,
    /// Whether each append is followed by a look at what a close(2) of the log would answer
    /// ([`crate::sys::Dir::close_may_fail`]): on a network file system an append that returned
    /// may fail afterwards in the client, and the close, the sync or the write that asked for
    /// the append must hear of it.
    pub(super) check_close: bool,
}

#[derive(Debug, Default)]
pub(super) struct Inner {
    pub(super) names: BTreeMap<String, u64>,
    pub(super) files: HashMap<u64, SmallMeta>,
    /// File ids of CREATE records that found their name already taken by a live file when
    /// replayed (two processes creating one name at once, neither seeing the other's record):
    /// each is the same file as the one that held the name, as two `open(O_CREAT)` of one path
    /// must be. Maps such an id to the file's (first) id.
    pub(super) alias: HashMap<u64, u64>,
    pub(super) logs: Vec<LogRef>,
    /// The stamp of each backend's store directory at the last listing (`sys::dir_stamp`; all
    /// zero where it does not exist): the ctime in it, which nobody can set, moves where a new
    /// log's mtime was set back by hand (or by a tool restoring times).
    pub(super) dir_stamps: Vec<crate::sys::DirStamp>,
    /// Whether the last listing was taken within a timestamp window of a store's mtime
    /// (`Dir::timestamp_window_ns`): a log created after it may then have left the mtime as it
    /// was, so the stamps cannot vouch for the listing and the next refresh lists again.
    pub(super) listed_recent: bool,
    /// Whether the store existed on this process's writer backend at the last refresh.
    pub(super) store_here: bool,
    pub(super) writer: Option<SmallWriter>,
    pub(super) loaded: bool,
    /// Damage the last replay found in the logs, and what it may have changed.
    pub(super) damage: super::damage::Damage,
    /// When each name and file was last touched by an applied record (`fresh.rs`).
    pub(super) touched: Touched,
}

impl Inner {
    /// The id `id` stands for: itself, or the file its CREATE record was merged into.
    pub(super) fn canonical(&self, id: u64) -> u64 {
        self.alias.get(&id).copied().unwrap_or(id)
    }

    /// File `id` (or the file it was merged into): its canonical id and attributes.
    pub(super) fn file(&self, id: u64) -> Option<(u64, &SmallMeta)> {
        let id = self.canonical(id);
        self.files.get(&id).map(|m| (id, m))
    }
}

pub(super) fn lock(m: &Mutex<Inner>) -> MutexGuard<'_, Inner> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Appends this process's buffered records to its log.
pub(super) fn flush(g: &mut Inner) -> Result<()> {
    flush_or_keep(g).inspect_err(|_| abandon(g))
}

/// [`flush`] that keeps the buffer when the append fails (for one more try).
fn flush_or_keep(g: &mut Inner) -> Result<()> {
    let Some(w) = g.writer.as_mut() else { return Ok(()) };
    if w.buf.is_empty() {
        return Ok(());
    }
    w.file.pwrite_all(&w.buf, w.off)?;
    if w.check_close {
        w.file.close_errors()?;
    }
    w.off += w.buf.len() as u64;
    w.buf.clear();
    let (log, off) = (w.log, w.off);
    if let Some(l) = g.logs.get_mut(log) {
        l.seen = off;
    }
    Ok(())
}

/// [`flush`] for records that must get through on a full backend (namespace changes: UNLINK,
/// RENAME, TRUNC, SETATTR): on `ENOSPC` the store's reserve is deleted and the append tried once
/// more (docs/format.md §11). Returns whether the reserve was spent.
pub(super) fn flush_reserved(g: &mut Inner) -> Result<bool> {
    let r = match flush_or_keep(g) {
        Err(e) if is_nospace(&e) => match g.writer.as_ref().map(|w| w.store.unlink_opt(fmt::RESERVE_NAME)) {
            Some(Ok(true)) => flush_or_keep(g).map(|()| true),
            Some(Err(u)) => Err(u),
            _ => Err(e),
        },
        r => r.map(|()| false),
    };
    if r.is_err() {
        abandon(g);
    }
    r
}

/// After a flush failed for good (a full backend, an I/O error): the records in the buffer will
/// not reach the log. Whoever asked for the flush gets the error (a write, a close, an fsync, as
/// a program learns of a failed writeback on a local file system); the buffer is dropped, the
/// log is cut back to where the buffer would have landed (a partial append must not leave whole
/// records that readers would take), and the view, which had those records applied, is
/// forgotten: the next call rebuilds it from the logs, as every other process sees them. The
/// writer log is let go too; a new one is made when needed (on a full backend a namespace change
/// spends the reserve for it). Before, a long-lived process (the FUSE daemon) kept the failed
/// records in its buffer for good, and every later change of the directory, a delete included,
/// failed with ENOSPC.
fn abandon(g: &mut Inner) {
    if let Some(w) = g.writer.take() {
        if let Err(e) = w.file.truncate(w.off) {
            crate::warn!("{e}: a failed append to a 1-N log could not be cut back");
        }
    }
    *g = Inner::default();
}

pub(super) fn is_nospace(e: &crate::error::Error) -> bool {
    e.raw_errno() == rustix::io::Errno::NOSPC.raw_os_error()
}

pub(super) fn apply(g: &mut Inner, r: &Rec, writer: u64, log: usize) {
    Touched::note(g, r);
    let ns = |ts: u64| ts as i64;
    // Every record but a CREATE names its file by id, which may be merged into another.
    let canon = match r {
        Rec::Create { .. } => None,
        Rec::Write { id, .. }
        | Rec::Trunc { id, .. }
        | Rec::Unlink { id, .. }
        | Rec::Rename { id, .. }
        | Rec::SetAttr { id, .. } => Some(g.canonical(*id)),
    };
    let id = &canon.unwrap_or(0);
    match r {
        Rec::Create {
            ts,
            id,
            mode,
            uid,
            gid,
            name,
        } => {
            // The name is held by a live file: a create that raced with it (see `Inner::alias`).
            // One search of the names for both the test and the insert.
            match g.names.entry(name.clone()) {
                std::collections::btree_map::Entry::Occupied(e) if g.files.contains_key(e.get()) => {
                    let held = *e.get();
                    if held != *id {
                        g.alias.insert(*id, held);
                    }
                    return;
                }
                std::collections::btree_map::Entry::Occupied(mut e) => {
                    e.insert(*id);
                }
                std::collections::btree_map::Entry::Vacant(e) => {
                    e.insert(*id);
                }
            }
            let t = ns(*ts);
            g.files.insert(
                *id,
                SmallMeta {
                    mode: *mode,
                    uid: *uid,
                    gid: *gid,
                    atime: t,
                    mtime: t,
                    ctime: t,
                    map: ExtentMap::new(),
                    created: *ts,
                },
            );
        }
        Rec::Write { ts, off, len, phys, .. } => {
            if let Some(m) = g.files.get_mut(id) {
                m.map
                    .insert_write(*off, *len, log as u32, *phys, Key { ts: *ts, writer });
                m.mtime = m.mtime.max(ns(*ts));
                m.ctime = m.ctime.max(ns(*ts));
            }
        }
        Rec::Trunc { ts, size, .. } => {
            if let Some(m) = g.files.get_mut(id) {
                m.map.insert_trunc(*size, Key { ts: *ts, writer });
                m.mtime = m.mtime.max(ns(*ts));
                m.ctime = m.ctime.max(ns(*ts));
            }
        }
        Rec::Unlink { name, .. } => {
            if g.names.get(name) == Some(id) {
                g.names.remove(name);
            }
        }
        Rec::Rename { ts, from, to, .. } => {
            if g.names.get(from) == Some(id) {
                g.names.remove(from);
                g.names.insert(to.clone(), *id);
                if let Some(m) = g.files.get_mut(id) {
                    m.ctime = m.ctime.max(ns(*ts));
                }
            }
        }
        Rec::SetAttr {
            ts,
            mask,
            mode,
            uid,
            gid,
            atime,
            mtime,
            ..
        } => {
            if let Some(m) = g.files.get_mut(id) {
                if mask & fmt::SET_MODE != 0 {
                    m.mode = *mode & 0o7777;
                }
                if mask & fmt::SET_UID != 0 {
                    m.uid = *uid;
                }
                if mask & fmt::SET_GID != 0 {
                    m.gid = *gid;
                }
                if mask & fmt::SET_ATIME != 0 {
                    m.atime = *atime;
                }
                if mask & fmt::SET_MTIME != 0 {
                    m.mtime = *mtime;
                }
                m.ctime = m.ctime.max(ns(*ts));
            }
        }
    }
}

/// A packed file's stat.
pub(super) fn stat_of(id: u64, m: &SmallMeta) -> Stat {
    let size = m.map.size();
    Stat {
        kind: FileKind::File,
        mode: 0o100000 | m.mode,
        uid: m.uid,
        gid: m.gid,
        size,
        blocks: size.div_ceil(512),
        blksize: BLKSIZE,
        atime_ns: m.atime,
        mtime_ns: m.mtime,
        ctime_ns: m.ctime,
        ino: id >> 1,
        dev: 0,
        nlink: 1,
    }
}

/// The newest timestamp of an applied record that touched each name and each file (canonical
/// id) of the view. Names are kept by their 64-bit FNV-1a hash, not their bytes (16 bytes an
/// entry for a directory of a million names): two names that share a hash only make a record
/// look as if it did not commute, and the directory is replayed.
#[derive(Debug, Default)]
pub(super) struct Touched {
    names: HashMap<u64, u64>,
    files: HashMap<u64, u64>,
}

/// The names a record touches and the files (canonical ids, in the view as it is before the
/// record): a CREATE its name and the file holding it, a RENAME both names, its file and the
/// file it replaces, an UNLINK its name and file, any other its file.
fn touches<'a>(g: &Inner, r: &'a Rec) -> ([Option<&'a str>; 2], [Option<u64>; 2]) {
    let held = |name: &str| g.names.get(name).map(|&id| g.canonical(id));
    match r {
        Rec::Create { id, name, .. } => ([Some(name), None], [Some(*id), held(name)]),
        Rec::Rename { id, from, to, .. } => ([Some(from), Some(to)], [Some(g.canonical(*id)), held(to)]),
        Rec::Unlink { id, name, .. } => ([Some(name), None], [Some(g.canonical(*id)), None]),
        Rec::Write { id, .. } | Rec::Trunc { id, .. } | Rec::SetAttr { id, .. } => {
            ([None, None], [Some(g.canonical(*id)), None])
        }
    }
}

impl Touched {
    /// Notes record `r`, about to be applied to `g`.
    pub(super) fn note(g: &mut Inner, r: &Rec) {
        let ts = r.ts();
        let (names, files) = touches(g, r);
        for n in names.into_iter().flatten() {
            let t = g.touched.names.entry(crate::format::hash_str(n)).or_insert(0);
            *t = (*t).max(ts);
        }
        for f in files.into_iter().flatten() {
            let t = g.touched.files.entry(f).or_insert(0);
            *t = (*t).max(ts);
        }
    }

    /// Whether `r`, older or newer than records applied already, commutes with every one of
    /// them that is newer: none of those touched its names or files.
    pub(super) fn commutes(g: &Inner, r: &Rec) -> bool {
        let ts = r.ts();
        let (names, files) = touches(g, r);
        names
            .into_iter()
            .flatten()
            .all(|n| g.touched.names.get(&crate::format::hash_str(n)).is_none_or(|&t| t < ts))
            && files
                .into_iter()
                .flatten()
                .all(|f| g.touched.files.get(&f).is_none_or(|&t| t < ts))
    }
}
