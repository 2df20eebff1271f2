//! The view of one 1-N directory: every writer's log replayed in timestamp order into name → file
//! and file → attributes and extent map, kept current, and this process's own writer log.

use super::names::{check_name, effective_ids, le, new_file_id};
use super::reserve;
use super::retired::Stores;
use super::state::{apply, flush, flush_reserved, lock, stat_of, Inner, LogRef, SmallWriter};
use crate::clock;
use crate::container::DirExt;
use crate::error::{Error, Result};
use crate::format::small::{self as fmt, Rec, SMALL_DIR, SMALL_MAGIC};
use crate::format::{self, LogHeader};
use crate::mount::Mount;
use crate::sys::{self, Access};
use crate::types::Stat;
use rustix::io::Errno;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

/// Pending bytes after which a writer appends its buffer even before a close.
const FLUSH_BYTES: usize = 1 << 20;

/// The small-file view of one logical directory, shared by this process.
#[derive(Debug)]
pub struct SmallDir {
    pub(super) mount: Arc<Mount>,
    /// The directory's path relative to the mount.
    pub(super) rel: PathBuf,
    /// Its store's path relative to the mount (asked for at every refresh).
    store: PathBuf,
    inner: Mutex<Inner>,
    umask: crate::sys::Umask,
    /// This process's automatic compaction of the directory's logs.
    pub(super) auto: crate::layout::compaction::AutoState,
    /// This process spent the store's reserve (a namespace change on a full backend).
    pub(super) reserve_spent: std::sync::atomic::AtomicBool,
    /// The directory was found to hold no PLFS 2.x 1-N store (`Small::create_packed`).
    pub(super) no_legacy: std::sync::atomic::AtomicBool,
    /// Bytes this process's unlinks and renames made dead, for `compact::free_dead`.
    pub(super) dead_bytes: DeadBytes,
}

/// Bytes of files this process unlinked or replaced in a directory since it last looked for
/// dead logs, and how many it waits for before the next look.
#[derive(Debug, Default)]
pub(super) struct DeadBytes {
    pub(super) unlinked: std::sync::atomic::AtomicU64,
    pub(super) threshold: std::sync::atomic::AtomicU64,
}

impl SmallDir {
    /// The view of directory `rel` of `mount`.
    pub fn new(mount: Arc<Mount>, rel: PathBuf, umask: crate::sys::Umask) -> SmallDir {
        SmallDir {
            mount,
            store: rel.join(SMALL_DIR),
            rel,
            inner: Mutex::new(Inner::default()),
            umask,
            auto: Default::default(),
            reserve_spent: Default::default(),
            no_legacy: Default::default(),
            dead_bytes: Default::default(),
        }
    }

    pub(super) fn inner(&self) -> MutexGuard<'_, Inner> {
        lock(&self.inner)
    }

    pub(super) fn store_rel(&self) -> &Path {
        &self.store
    }

    /// Display path of the store on this host's backend.
    pub fn store_path(&self) -> PathBuf {
        self.mount.canonical[self.writer_backend()].path.join(self.store_rel())
    }

    /// The logical directory (for messages).
    pub(super) fn logical(&self) -> PathBuf {
        self.mount.cfg.mount_point.join(&self.rel)
    }

    pub(super) fn writer_backend(&self) -> usize {
        (format::hash_str(clock::hostname()) % self.mount.canonical.len() as u64) as usize
    }

    /// The stamp of each backend's store directory (0 where it does not exist), and whether a
    /// listing taken now could miss a log created later without changing a stamp
    /// ([`sys::Dir::listing_may_miss`]: a local file system's clock has not yet left the tick of
    /// the stamp; elsewhere, a stamp within its backend's timestamp window of now).
    fn stamps(&self) -> Result<(Vec<sys::DirStamp>, bool)> {
        let rel = self.store_rel();
        let mut out = Vec::with_capacity(self.mount.canonical.len());
        let now = i128::from(clock::now_ns());
        let coarse = clock::coarse_now_ns();
        let mut recent = false;
        for b in &self.mount.canonical {
            let root = b.root()?;
            let st = root.stat_beneath_opt(rel)?;
            let stamp = st.map_or((0, 0, 0, 0), |s| sys::dir_stamp(&s));
            recent |= stamp.0 != 0 && root.listing_may_miss(stamp.0, now, coarse);
            out.push(stamp);
        }
        Ok((out, recent))
    }

    /// Brings the view up to date: applies what other logs gained since (`fresh.rs`), or appends
    /// this process's pending records and replays every log again if that cannot be done or a log
    /// appeared. A new log is noticed by listing the store, which is
    /// done when its directory's stamp changed, or when the last listing was taken so soon after
    /// the stamp it saw that a log created since may have left the stamp unchanged
    /// (`listed_recent`): visibility never depends on timestamp granularity.
    pub(super) fn refresh(&self, g: &mut Inner) -> Result<()> {
        let (stamps, recent) = self.stamps()?;
        g.store_here = stamps.get(self.writer_backend()).is_some_and(|s| s.0 != 0);
        let mut changed = !g.loaded;
        if !changed && (stamps != g.dir_stamps || g.listed_recent) {
            let known: std::collections::HashSet<&std::path::Path> = g.logs.iter().map(|l| l.path.as_path()).collect();
            let listed = self.list_logs()?;
            changed = listed.len() != known.len() || listed.iter().any(|p| !known.contains(p.as_path()));
            if !changed {
                g.dir_stamps = stamps.clone();
                g.listed_recent = recent;
            }
        }
        if !changed {
            // What other writers appended since: applied where it commutes with what the view
            // holds, else every log is replayed (`fresh.rs`).
            changed = !super::fresh::apply_new(g)?;
        }
        if changed {
            // Our own records are already applied to the view; they reach the log before the
            // view is rebuilt from the logs.
            flush(g)?;
            self.replay(g, stamps, 0)?;
            g.listed_recent = recent;
        }
        Ok(())
    }

    /// Display paths of every log in the store, on every backend.
    fn list_logs(&self) -> Result<Vec<PathBuf>> {
        let rel = self.store_rel();
        let mut out = Vec::new();
        for b in &self.mount.canonical {
            let Some(dir) = b.dir_opt(rel)? else { continue };
            for name in dir.list()? {
                if name.to_str().is_some_and(|s| s.starts_with(fmt::LOG_PREFIX)) {
                    out.push(dir.sub(&name));
                }
            }
        }
        Ok(out)
    }

    /// Each store's logs and the logs a committed compaction retired, read consistently: `None`
    /// if a listing changed while the journal was read (unless `tries` is spent), to be taken
    /// again. A journal that cannot say what it retired is damage of every file.
    fn stores(&self, damage: &mut super::damage::Damage, tries: u32) -> Result<Option<Stores>> {
        let (mut stores, mut retired) = (Vec::new(), std::collections::HashSet::new());
        for b in &self.mount.canonical {
            if let Some(dir) = b.dir_opt(self.store_rel())? {
                let names = dir.list()?;
                let mut c = super::retired::committed(&dir, &names)?;
                if dir.list()? != names && tries < 8 {
                    return Ok(None);
                }
                retired.extend(std::mem::take(&mut c.retired));
                if let Some((path, len, why)) = c.damaged.take() {
                    // Every file and name: no record of the store's logs can be trusted.
                    damage.note(&path, vec![fmt::Damaged::whole_header(len, why)], None);
                }
                stores.push((dir, names, c));
            }
        }
        Ok(Some((stores, retired)))
    }

    fn replay(&self, g: &mut Inner, stamps: Vec<sys::DirStamp>, tries: u32) -> Result<()> {
        let own = g.writer.as_ref().map(|w| (w.id, w.file.clone(), w.off));
        let mut logs: Vec<LogRef> = Vec::new();
        let mut recs: Vec<(u64, u64, usize, Rec)> = Vec::new();
        let mut damage = super::damage::Damage::default();
        let Some((stores, retired)) = self.stores(&mut damage, tries)? else {
            return self.replay(g, stamps, tries + 1);
        };
        for (dir, names, committed) in &stores {
            for name in names {
                // The new log of a committed compaction is replayed under its final name, even
                // while it still has its temporary one; the logs it retires are not.
                let Some(s) = name.to_str().and_then(|s| committed.replayed_as(s)) else {
                    continue;
                };
                if retired.contains(s) {
                    continue;
                }
                let Some(info) = fmt::parse_log_name(s) else {
                    continue;
                };
                let path = dir.sub(name);
                let file = match own.as_ref().filter(|o| o.0 == info.writer_id) {
                    Some(o) => o.1.clone(),
                    None => match dir.open_file(name, Access::Read) {
                        Ok(f) => Arc::new(f.kept()),
                        // Listed, then published or retired by a compaction's roll-forward (the
                        // journal committed before either): list again.
                        Err(e) if sys::is_missing(&e) && tries < 8 => return self.replay(g, stamps, tries + 1),
                        Err(e) => {
                            crate::warn!("{e}: skipping this small-file log");
                            continue;
                        }
                    },
                };
                let (bytes, decoded) = super::damage::read_log(&file)?;
                let Some(mut d) = decoded else {
                    // A log whose header was cut short: made by a process that died at once.
                    damage.note(&path, Vec::new(), (!bytes.is_empty()).then_some(0));
                    logs.push(LogRef {
                        path,
                        writer: info.writer_id,
                        file,
                        seen: bytes.len() as u64,
                    });
                    continue;
                };
                if let Err(e) = LogHeader::decode(&path, &bytes, SMALL_MAGIC) {
                    // Its records are read all the same; what it may hold is damage of names.
                    d.damaged
                        .insert(0, fmt::Damaged::whole_header(format::INDEX_HEADER_LEN, e.to_string()));
                }
                for s in &d.damaged {
                    crate::warn!(
                        "{}: {} damaged bytes at byte {} ({}); the records after them still count",
                        path.display(),
                        s.len,
                        s.at,
                        s.why
                    );
                }
                let torn_at = d.tail.is_some().then_some((format::INDEX_HEADER_LEN + d.used) as u64);
                damage.note(&path, d.damaged, torn_at);
                let (rs, used) = (d.recs, d.used);
                let idx = logs.len();
                logs.push(LogRef {
                    path,
                    writer: info.writer_id,
                    file,
                    seen: (format::INDEX_HEADER_LEN + used) as u64,
                });
                recs.extend(rs.into_iter().map(|r| (r.ts(), info.writer_id, idx, r)));
            }
        }
        recs.sort_by_key(|r| (r.0, r.1));
        g.names.clear();
        g.files.clear();
        g.alias.clear();
        g.touched = Default::default();
        for (_, w, idx, r) in recs {
            apply(g, &r, w, idx);
        }
        g.damage = damage;
        let files: Vec<u64> = g.files.keys().copied().collect();
        let alias = &g.alias;
        g.damage.attribute(&|id| alias.get(&id).copied().unwrap_or(id), &files);
        g.logs = logs;
        if let Some((id, file, off)) = own {
            let log = match g.logs.iter().position(|l| l.writer == id) {
                Some(p) => p,
                None => {
                    g.logs.push(LogRef {
                        path: file.path().to_path_buf(),
                        writer: id,
                        file: file.clone(),
                        seen: off,
                    });
                    g.logs.len() - 1
                }
            };
            if let Some(w) = g.writer.as_mut() {
                w.log = log;
            }
        }
        g.dir_stamps = stamps;
        g.loaded = true;
        Ok(())
    }

    /// Creates this process's log in the store on its backend (making the store, and its reserve,
    /// first if needed). With `reserved` (a namespace change), a full backend spends the reserve.
    pub(super) fn new_writer(&self, g: &mut Inner, reserved: bool) -> Result<()> {
        let b = &self.mount.canonical[self.writer_backend()];
        let dir = b.dir(&self.rel).map_err(|e| match e.raw_errno() {
            n if n == Errno::NOENT.raw_os_error() => Error::NotFound(self.logical()),
            _ => e,
        })?;
        let made = dir.mkdir_ok(SMALL_DIR, 0o755)?;
        let store = dir.open_dir(SMALL_DIR)?;
        if made {
            reserve::make(&store);
        }
        let id = clock::random_u64();
        let pid = clock::pid();
        let name = fmt::log_name(id, pid, clock::hostname());
        let h = LogHeader {
            magic: SMALL_MAGIC,
            writer_id: id,
            open_ns: clock::now_ns(),
            pid,
            flags: 0,
        };
        let (f, spent) = reserve::create_log(&store, &name, &h, reserved)?;
        if spent {
            self.reserve_spent.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        let file = Arc::new(f.kept());
        g.logs.push(LogRef {
            path: file.path().to_path_buf(),
            writer: id,
            file: file.clone(),
            seen: reserve::HEADER_LEN,
        });
        let log = g.logs.len() - 1;
        g.writer = Some(SmallWriter {
            id,
            file,
            check_close: store.close_may_fail(),
            store,
            off: reserve::HEADER_LEN,
            buf: Vec::new(),
            log,
            named: false,
        });
        Ok(())
    }

    /// Records a namespace change (`record` then a flush that may spend the store's reserve,
    /// docs/format.md §11): deleting, renaming, truncating and changing attributes work on a
    /// full backend. Spending the reserve is remembered for `compact::after_change`, which frees
    /// what it can and makes the reserve again.
    pub(super) fn record_change(
        &self,
        g: &mut Inner,
        kind: u16,
        fixed: &[u8],
        tail: &[u8],
        rec: impl FnOnce(u64) -> Rec,
    ) -> Result<()> {
        if g.writer.is_none() {
            self.new_writer(g, true)?;
        }
        self.push(g, kind, fixed, tail, rec)?;
        if flush_reserved(g)? {
            self.reserve_spent.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(())
    }

    /// Appends a record to this process's log (creating the log first) and applies it.
    pub(super) fn record(
        &self,
        g: &mut Inner,
        kind: u16,
        fixed: &[u8],
        tail: &[u8],
        rec: impl FnOnce(u64) -> Rec,
    ) -> Result<()> {
        if self.push(g, kind, fixed, tail, rec)? {
            flush(g)?;
        }
        Ok(())
    }

    /// Buffers a record and applies it to the view; returns whether the buffer is now big enough
    /// to be written out.
    fn push(&self, g: &mut Inner, kind: u16, fixed: &[u8], tail: &[u8], rec: impl FnOnce(u64) -> Rec) -> Result<bool> {
        if g.writer.is_none() {
            self.new_writer(g, false)?;
        }
        let w = g.writer.as_mut().expect("writer created");
        let data_at = w.off + w.buf.len() as u64 + 8 + fixed.len() as u64;
        fmt::encode(&mut w.buf, kind, fixed, tail);
        let (id, log) = (w.id, w.log);
        let big = w.buf.len() >= FLUSH_BYTES;
        let r = rec(data_at);
        apply(g, &r, id, log);
        Ok(big)
    }

    /// Looks a name up: its file id and attributes.
    pub fn entry(&self, name: &str) -> Result<Option<(u64, Stat)>> {
        let mut g = self.inner();
        self.refresh(&mut g)?;
        let found = g
            .names
            .get(name)
            .and_then(|&id| g.files.get(&id).map(|m| (id, stat_of(id, m))));
        if found.is_none() {
            self.undamaged(&g, name, None)?;
        }
        Ok(found)
    }

    /// `EIO` if damage in the logs may have changed file `id`, named `name` (a look-up still
    /// finds it, so that it can be removed; its stat and open answer this).
    pub(super) fn check_file(&self, name: &str, id: u64) -> Result<()> {
        let g = self.inner();
        self.undamaged(&g, name, Some(id))
    }

    /// The damage in the directory's logs, read afresh, with the current name of the file each
    /// stretch may have changed (for `plfs fsck`).
    pub(crate) fn damage(&self) -> Result<super::damage::Report> {
        let mut g = self.inner();
        g.loaded = false;
        self.refresh(&mut g)?;
        let name_of = |id: u64| {
            g.names
                .iter()
                .find(|(_, &n)| g.canonical(n) == id)
                .map(|(name, _)| name.clone())
        };
        let stretches = g
            .damage
            .stretches
            .iter()
            .map(|s| (s.clone(), s.file.and_then(name_of)))
            .collect();
        Ok((stretches, g.damage.torn.clone()))
    }

    /// `EIO` where damage in the logs may have changed what the view says of `name`: the file
    /// it holds (`id`), or, holding none, whether the name exists (`damage.rs`).
    pub(super) fn undamaged(&self, g: &Inner, name: &str, id: Option<u64>) -> Result<()> {
        if g.damage.is_empty() {
            return Ok(());
        }
        let path = self.logical().join(name);
        match id {
            Some(id) => g.damage.check_file(g.canonical(id), &path),
            None => g.damage.check_missing(&path),
        }
    }

    /// Names in the directory, sorted.
    pub fn names(&self) -> Result<Vec<String>> {
        let mut g = self.inner();
        self.refresh(&mut g)?;
        Ok(g.names.keys().cloned().collect())
    }

    /// Whether this process writes a log in the store, which existed at the last refresh.
    pub fn writes_here(&self) -> bool {
        let g = self.inner();
        g.writer.is_some() && g.store_here
    }

    /// Creates `name` (or, unless `excl`, finds it). Returns (file id, its stat, created).
    pub fn create(&self, name: &str, mode: u32, excl: bool) -> Result<(u64, Stat, bool)> {
        self.create_unless(name, mode, excl, || Ok(false))?
            .ok_or_else(|| self.stale())
    }

    /// [`SmallDir::create`], asking `elsewhere`, when the view has no file `name`, whether one
    /// exists outside it (a PLFS 2.x packed file): then nothing is created (`Ok(None)`). A
    /// directory whose store vanished under this process's log was removed: `ENOENT`.
    ///
    /// Two processes that create one name at once without `O_EXCL` each write a CREATE record;
    /// the replay merges them into one file (`Inner::alias`), so neither needs a lock. An
    /// `O_EXCL` create must fail if the name exists anywhere, so it decides and writes its record
    /// under [`SmallDir::exclusively`].
    pub fn create_unless(
        &self,
        name: &str,
        mode: u32,
        excl: bool,
        elsewhere: impl FnOnce() -> Result<bool>,
    ) -> Result<Option<(u64, Stat, bool)>> {
        check_name(name)?;
        if excl {
            return self.exclusively(|| {
                let r = self.create_in_view(name, mode, true, elsewhere)?;
                flush(&mut self.inner())?;
                Ok(r)
            });
        }
        self.create_in_view(name, mode, false, elsewhere)
    }

    fn create_in_view(
        &self,
        name: &str,
        mode: u32,
        excl: bool,
        elsewhere: impl FnOnce() -> Result<bool>,
    ) -> Result<Option<(u64, Stat, bool)>> {
        let mut g = self.inner();
        self.refresh(&mut g)?;
        if g.writer.is_some() && !g.store_here {
            return Err(Error::NotFound(self.logical()));
        }
        let held = g.names.get(name).copied();
        self.undamaged(&g, name, held)?;
        if let Some(id) = held {
            if excl {
                return Err(Error::Exists(self.logical().join(name)));
            }
            let st = g.files.get(&id).map(|m| stat_of(id, m)).ok_or_else(|| self.stale())?;
            return Ok(Some((id, st, false)));
        }
        if elsewhere()? {
            return Ok(None);
        }
        let id = new_file_id();
        let ts = clock::next_ts();
        let (uid, gid) = effective_ids();
        let mode = mode & !self.umask.get() & 0o7777;
        let mut fixed = le(&[ts, id]);
        for v in [mode, uid, gid] {
            fixed.extend_from_slice(&v.to_le_bytes());
        }
        let owned = name.to_string();
        self.record(&mut g, fmt::K_CREATE, &fixed, name.as_bytes(), move |_| Rec::Create {
            ts,
            id,
            mode,
            uid,
            gid,
            name: owned,
        })?;
        let st = g.files.get(&id).map(|m| stat_of(id, m)).ok_or_else(|| self.stale())?;
        Ok(Some((id, st, true)))
    }

    /// Runs `f` holding an exclusive flock on the directory on the first backend (the lock a
    /// compaction of the directory takes), so that every process's decision made from a fresh
    /// view (where a file ends, whether a name exists) and the record it writes take turns.
    pub(super) fn exclusively<R>(&self, f: impl FnOnce() -> Result<R>) -> Result<R> {
        let lockd = self.mount.canonical[0].dir_opt(&self.rel)?;
        let locked = match &lockd {
            Some(d) => d.lock_exclusive()?,
            None => false,
        };
        let r = f();
        if let (true, Some(d)) = (locked, &lockd) {
            let _ = d.unlock();
        }
        r
    }

    fn stale(&self) -> Error {
        Error::errno(
            Errno::STALE,
            format!(
                "{}: packed file vanished from its directory's logs",
                self.logical().display()
            ),
        )
    }

    fn id_of(&self, g: &Inner, name: &str) -> Result<u64> {
        g.names
            .get(name)
            .copied()
            .ok_or_else(|| Error::NotFound(self.logical().join(name)))
    }

    /// Counts the bytes of file `id`, about to lose its name, for `compact::free_dead`.
    fn note_dead(&self, g: &Inner, id: u64) {
        let bytes = g.file(id).map_or(0, |(_, m)| m.map.live_bytes());
        self.dead_bytes
            .unlinked
            .fetch_add(bytes, std::sync::atomic::Ordering::Relaxed);
    }

    /// Removes `name`.
    pub fn unlink(&self, name: &str) -> Result<()> {
        let mut g = self.inner();
        self.refresh(&mut g)?;
        let id = self.id_of(&g, name)?;
        self.note_dead(&g, id);
        let ts = clock::next_ts();
        let owned = name.to_string();
        self.record_change(&mut g, fmt::K_UNLINK, &le(&[ts, id]), name.as_bytes(), move |_| {
            Rec::Unlink { ts, id, name: owned }
        })?;
        Ok(())
    }

    /// Renames `from` to `to` within this directory (replacing `to`).
    pub fn rename(&self, from: &str, to: &str) -> Result<()> {
        check_name(to)?;
        let mut g = self.inner();
        self.refresh(&mut g)?;
        let id = self.id_of(&g, from)?;
        if let Some(&over) = g.names.get(to).filter(|&&o| g.canonical(o) != g.canonical(id)) {
            self.note_dead(&g, over);
        }
        let ts = clock::next_ts();
        let mut fixed = le(&[ts, id]);
        fixed.extend_from_slice(&(from.len() as u16).to_le_bytes());
        fixed.extend_from_slice(from.as_bytes());
        let (f, t) = (from.to_string(), to.to_string());
        self.record_change(&mut g, fmt::K_RENAME, &fixed, to.as_bytes(), move |_| Rec::Rename {
            ts,
            id,
            from: f,
            to: t,
        })?;
        Ok(())
    }

    /// Changes attributes of `name` (mask of `SET_*`).
    #[allow(clippy::too_many_arguments)]
    pub fn setattr(&self, name: &str, mask: u32, mode: u32, uid: u32, gid: u32, atime: i64, mtime: i64) -> Result<()> {
        let mut g = self.inner();
        self.refresh(&mut g)?;
        let id = self.id_of(&g, name)?;
        let ts = clock::next_ts();
        let mut fixed = le(&[ts, id]);
        for v in [mask, mode, uid, gid] {
            fixed.extend_from_slice(&v.to_le_bytes());
        }
        fixed.extend_from_slice(&le(&[atime as u64, mtime as u64]));
        self.record_change(&mut g, fmt::K_SETATTR, &fixed, &[], move |_| Rec::SetAttr {
            ts,
            id,
            mask,
            mode,
            uid,
            gid,
            atime,
            mtime,
        })?;
        Ok(())
    }

    /// Removes the store directories once no name is left (before rmdir of the directory).
    pub fn remove_store(&self) -> Result<()> {
        let mut g = self.inner();
        self.refresh(&mut g)?;
        if !g.names.is_empty() {
            return Err(Error::errno(
                Errno::NOTEMPTY,
                format!("{}: directory not empty", self.logical().display()),
            ));
        }
        g.writer = None;
        for b in &self.mount.canonical {
            if let Some(d) = b.dir_opt(&self.rel)? {
                d.remove_tree(SMALL_DIR)?;
            }
        }
        *g = Inner::default();
        Ok(())
    }

    /// fsyncs this process's log (after [`SmallDir::flush`]); the first time, also the store
    /// that names the log and the backend directory that names the store, so that a file
    /// synced survives a power loss with its name, as a plain file's entry does once its
    /// directory is synced (1-N keeps no entry of its own in that directory).
    pub(super) fn sync_log(&self, g: &mut Inner) -> Result<()> {
        flush(g)?;
        let Some(w) = g.writer.as_mut() else {
            return Ok(());
        };
        w.file.fsync()?;
        if !w.named {
            w.store.fsync()?;
            self.mount.canonical[self.writer_backend()].dir(&self.rel)?.fsync()?;
            w.named = true;
        }
        Ok(())
    }
}

impl Drop for SmallDir {
    fn drop(&mut self) {
        if let Err(e) = flush(&mut lock(&self.inner)) {
            crate::warn!("{e}: small-file records not written");
        }
    }
}
