//! Compaction of a 1-N directory's packed logs (docs/design.md, "Compaction"): every log of the
//! directory is rewritten into one, holding for each file that still has a name its CREATE
//! record (same timestamp, current mode and owner), its live data and a SETATTR record restoring
//! its times; deleted and replaced files and overwritten data are dropped.
//!
//! The new log is built under a `.plfstmp.cmp.` name readers ignore and fsynced. Then the
//! store's journal (`.plfs_small/compact.journal`) commits: from then on readers replay the new
//! log (under its temporary name until the roll-forward renames it) and skip the logs it retires,
//! so their deletion one by one never shows a mix (an old log holding a file's UNLINK deleted
//! while the one holding its CREATE is still read would bring the file back). The commit comes
//! before the publication because the new log does not replay like the old history: its CREATE
//! records bind each file's current name at the file's first timestamp, so replayed beside the
//! old logs (whose renames and unlinks come later) two files swapped by renames would read alike.
//! A crash before the commit leaves the old logs and debris; after it, the next compaction, the
//! last close or `plfs fsck --repair` publishes the new log and deletes what the journal retires.
//!
//! A log is retired only if no process appends to it: each writer holds a shared flock on its
//! own log while it has it, so a compaction that cannot lock a log exclusively stops
//! ([`CompactStatus::WritersOpen`]). This process's own log is closed first (its next record
//! starts a new one).

use super::staged::NewLog;
use super::state::{flush, Inner};
use super::view::SmallDir;
use crate::clock;
use crate::container::DirExt;
use crate::error::{Error, Result};
use crate::format;
use crate::format::compact::{self as cf, Journal};
use crate::format::small::{self as fmt, SMALL_MAX_BODY};
use crate::layout::compaction::{patience, worth_it, CompactOptions, CompactReport, CompactStatus, Usage};
use crate::mount::Mount;
use crate::sys::{self, Access, Dir};
use rustix::io::Errno;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// Unlinks and renames after which a writer checks whether its directory needs compacting.
const CHECK_UNLINKS: u64 = 256;

/// Every packed log of the directory `rel`: (the store it is in, its name, its size).
fn list_logs(mount: &Mount, rel: &Path) -> Result<Vec<(Dir, String, u64)>> {
    let store = rel.join(fmt::SMALL_DIR);
    let mut out = Vec::new();
    for b in &mount.canonical {
        let Some(dir) = b.dir_opt(&store)? else { continue };
        for n in dir.list()? {
            let Some(s) = n.to_str().filter(|s| s.starts_with(fmt::LOG_PREFIX)) else {
                continue;
            };
            let size = dir.stat_opt(&n)?.map_or(0, |st| st.st_size.max(0) as u64);
            out.push((dir.try_clone()?, s.to_string(), size));
        }
    }
    Ok(out)
}

/// Runs (again) the roll-forward of a committed journal found in `store`: publishes the new log
/// (renames it from its temporary name, unless that was done), deletes the retired logs, removes
/// the journal. Idempotent.
fn roll_forward(mount: &Mount, rel: &Path, store: &Dir, j: &Journal) -> Result<()> {
    let jpath = store.sub(cf::JOURNAL_NAME);
    let fin = j
        .names(cf::E_NEW_LOG)
        .next()
        .filter(|n| n.starts_with(fmt::LOG_PREFIX))
        .ok_or_else(|| Error::corrupt(&jpath, "no new log named"))?;
    let tmp = cf::tmp_log_name(j.writer_id);
    if store.stat_opt(fin)?.is_none() {
        if store.stat_opt(&tmp)?.is_none() {
            // The new log is gone (only outside damage does that): nothing may be retired.
            crate::warn!(
                "{}: its new log is missing; the compaction is abandoned",
                jpath.display()
            );
            return store.unlink_opt(cf::JOURNAL_NAME).map(drop);
        }
        // Readers replay it under its final name already; the rename changes no view.
        store.rename(&tmp, store, fin).and_then(|()| store.fsync())?;
    }
    let retired: std::collections::HashSet<&str> = j.names(cf::E_RETIRED).collect();
    for (d, n, _) in list_logs(mount, rel)? {
        if retired.contains(n.as_str()) && n != fin {
            d.unlink_opt(&n)?;
        }
    }
    store.unlink_opt(cf::JOURNAL_NAME).map(drop)
}

/// What an interrupted compaction left in the directory's stores.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Leftover {
    /// A committed journal (the roll-forward did not finish).
    Committed(std::path::PathBuf),
    /// An unpublished new log (the compaction never committed).
    Unpublished(std::path::PathBuf),
    /// A journal that does not decode (its path, why), and whether `--repair` removes it.
    Bad(std::path::PathBuf, String, bool),
}

/// Finds (and with `repair` finishes or undoes) what interrupted compactions left in the stores
/// of directory `rel`. `Ok(None)` while a compaction of the directory is running.
pub(crate) fn leftovers(mount: &Mount, rel: &Path, repair: bool) -> Result<Option<Vec<Leftover>>> {
    let Some(lockd) = mount.canonical[0].dir_opt(rel)? else {
        return Ok(Some(Vec::new()));
    };
    if !lockd.try_lock_exclusive()? {
        return Ok(None);
    }
    let mut out = Vec::new();
    let store_rel = rel.join(fmt::SMALL_DIR);
    for b in &mount.canonical {
        let Some(store) = b.dir_opt(&store_rel)? else { continue };
        // The new log of a committed journal is part of the compaction, not debris.
        let mut committed_tmp = None;
        if let Some(f) = store.open_file_opt(cf::JOURNAL_NAME, Access::Read)? {
            let p = store.sub(cf::JOURNAL_NAME);
            match Journal::decode(&p, &f.read_from(0)?) {
                Ok(j) => {
                    out.push(Leftover::Committed(p));
                    committed_tmp = Some(cf::tmp_log_name(j.writer_id));
                    if repair {
                        roll_forward(mount, rel, &store, &j)?;
                    }
                }
                // Removed only where its compaction never published (readers ignore it then:
                // `retired::committed`); otherwise the old logs left beside the new one do not
                // read the same without it, and readers answer EIO until it is restored.
                Err(e) if super::retired::unpublished(&store.list()?) => {
                    out.push(Leftover::Bad(p, e.to_string(), true));
                    if repair {
                        store.unlink_opt(cf::JOURNAL_NAME)?;
                    }
                }
                Err(e) => out.push(Leftover::Bad(p, e.to_string(), false)),
            }
        }
        for n in store.list()? {
            let tmp = n.to_str().filter(|s| cf::parse_tmp_name(s).is_some());
            if tmp.is_none() || (!repair && tmp == committed_tmp.as_deref()) {
                continue;
            }
            out.push(Leftover::Unpublished(store.sub(&n)));
            if repair {
                store.unlink_opt(&n)?;
            }
        }
    }
    Ok(Some(out))
}

/// The directory's usage from its (current) view.
fn usage(g: &Inner, logs: &[(Dir, String, u64)]) -> Result<Usage> {
    let mut u = Usage {
        logs: logs.len() as u64,
        physical: logs.iter().map(|l| l.2).sum(),
        data: super::usage::log_totals(g)?.1,
        ..Usage::default()
    };
    for id in g.names.values() {
        if let Some(m) = g.files.get(id) {
            u.logical += m.map.size();
            u.live += m.map.live_bytes();
        }
    }
    Ok(u)
}

/// Appends the records of one file to `out`: CREATE (its original timestamp, current mode and
/// owner), TRUNC (only when its size is beyond its data), its live data in WRITE records (runs of
/// extents that follow each other in one record, with the newest timestamp of the run), SETATTR
/// at its ctime (its exact times).
fn file_records(g: &Inner, name: &str, id: u64, out: &mut Vec<u8>) -> Result<u64> {
    let Some(m) = g.files.get(&id) else { return Ok(0) };
    let le = |v: &[u64]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
    let mut fixed = le(&[m.created, id]);
    for v in [m.mode, m.uid, m.gid] {
        fixed.extend_from_slice(&v.to_le_bytes());
    }
    fmt::encode(out, fmt::K_CREATE, &fixed, name.as_bytes());
    let pieces = m.map.pieces();
    let end = pieces.last().map_or(0, |(o, p)| o + p.len);
    if let Some((k, size)) = m.map.last_trunc().filter(|_| m.map.size() > end) {
        fmt::encode(out, fmt::K_TRUNC, &le(&[k.ts, id, size]), &[]);
    }
    let max_run = (SMALL_MAX_BODY - 24) as u64;
    let mut copied = 0;
    let mut run: Option<(u64, u64, Vec<u8>)> = None; // (offset, ts, data)
    let emit = |r: (u64, u64, Vec<u8>), out: &mut Vec<u8>| {
        fmt::encode(out, fmt::K_WRITE, &le(&[r.1, id, r.0]), &r.2);
    };
    for (o, p) in pieces {
        let l = &g.logs[p.chunk as usize];
        let mut done = 0;
        while done < p.len {
            let k = (p.len - done).min(max_run);
            let mut b = vec![0u8; k as usize];
            if l.file.pread_full(&mut b, p.phys + done)? < b.len() {
                return Err(Error::corrupt(&l.path, "log shorter than its records"));
            }
            let at = o + done;
            match run.as_mut() {
                Some(r) if r.0 + r.2.len() as u64 == at && r.2.len() as u64 + k <= max_run => {
                    r.1 = r.1.max(p.key.ts);
                    r.2.extend_from_slice(&b);
                }
                _ => {
                    if let Some(r) = run.take() {
                        emit(r, out);
                    }
                    run = Some((at, p.key.ts, b));
                }
            }
            done += k;
            copied += k;
        }
    }
    if let Some(r) = run.take() {
        emit(r, out);
    }
    let mut sa = le(&[m.ctime as u64, id]);
    let mask = fmt::SET_MODE | fmt::SET_UID | fmt::SET_GID | fmt::SET_ATIME | fmt::SET_MTIME;
    for v in [mask, m.mode, m.uid, m.gid] {
        sa.extend_from_slice(&v.to_le_bytes());
    }
    sa.extend_from_slice(&le(&[m.atime as u64, m.mtime as u64]));
    fmt::encode(out, fmt::K_SETATTR, &sa, &[]);
    Ok(copied)
}

/// Takes the lock of `d`'s directory on the first backend (one compaction of the directory at a
/// time), waiting as `opts` allows: `None` if another compaction holds it. The lock lasts as long
/// as the returned descriptor.
fn lock_dir(d: &SmallDir, opts: &CompactOptions) -> Result<Option<Dir>> {
    let Some(lockd) = d.mount.canonical[0].dir_opt(&d.rel)? else {
        return Err(Error::NotFound(d.logical()));
    };
    if !lockd.try_lock_exclusive_within(patience(opts))? {
        return Ok(None);
    }
    if !lockd.caps().locks() {
        return Err(Error::errno(
            Errno::OPNOTSUPP,
            format!("{}: compaction needs flock(2) on the backend", d.logical().display()),
        ));
    }
    Ok(Some(lockd))
}

/// Finishes the roll-forward of a committed journal and removes unpublished new logs in the
/// stores of `d` (the caller holds the directory's lock).
pub(super) fn finish_leftovers(d: &SmallDir) -> Result<()> {
    let mount = &d.mount;
    // Leftovers of an interrupted compaction (we hold the lock: none is running).
    for b in &mount.canonical {
        if let Some(store) = b.dir_opt(d.store_rel())? {
            if let Some(f) = store.open_file_opt(cf::JOURNAL_NAME, Access::Read)? {
                let j = Journal::decode(&store.sub(cf::JOURNAL_NAME), &f.read_from(0)?)?;
                roll_forward(mount, &d.rel, &store, &j)?;
            }
            for n in store.list()? {
                if n.to_str().and_then(cf::parse_tmp_name).is_some() {
                    store.unlink_opt(&n)?;
                }
            }
        }
    }
    Ok(())
}

/// Whether no process appends to any of `logs` any more but this one (to `own`, which it
/// stopped doing).
fn appended_by_none(d: &SmallDir, logs: &[(Dir, String, u64)], own: Option<&Path>) -> Result<bool> {
    let others = logs.iter().filter(|(dir, n, _)| own != Some(dir.sub(n).as_path()));
    Ok(appended(d, others, true)?.is_empty())
}

/// Which of `logs` a process may still append to: each writer holds a shared flock on its log
/// while it may append. With `first`, the search stops at the first one.
fn appended<'a>(
    d: &SmallDir,
    logs: impl Iterator<Item = &'a (Dir, String, u64)>,
    first: bool,
) -> Result<std::collections::HashSet<std::path::PathBuf>> {
    let mut out = std::collections::HashSet::new();
    for (dir, n, _) in logs {
        let f = match dir.open_file(n, Access::Read) {
            Ok(f) => f,
            Err(e) if sys::is_missing(&e) => continue,
            Err(e) => return Err(e),
        };
        match f.try_lock_exclusive()? {
            Some(true) => {}
            Some(false) => {
                out.insert(dir.sub(n));
                if first {
                    break;
                }
            }
            None => {
                return Err(Error::errno(
                    Errno::OPNOTSUPP,
                    format!("{}: compaction needs flock(2) on the backend", d.logical().display()),
                ))
            }
        }
    }
    Ok(out)
}

/// Bytes of files this process unlinked or renamed over in a directory before it looks for
/// logs that hold nothing live any more (it doubles each time a look frees nothing).
pub(super) const FREE_DEAD_BYTES: u64 = 1 << 20;

/// After this process unlinked or replaced files holding `FREE_DEAD_BYTES` or more (since the
/// last look): deletes the directory's logs that hold nothing live and that no process appends
/// to, so that space comes back at the `rm`, as on a plain file system, whatever
/// `auto_compaction` says (nothing is rewritten: a log that still holds live data waits for a
/// compaction). Skipped while a compaction runs or left a journal.
fn free_dead(d: &SmallDir) -> Result<u64> {
    let a = &d.dead_bytes;
    let due = a.threshold.load(Ordering::Relaxed).max(FREE_DEAD_BYTES);
    if a.unlinked.load(Ordering::Relaxed) < due {
        return Ok(0);
    }
    a.unlinked.store(0, Ordering::Relaxed);
    let Some(lockd) = d.mount.canonical[0].dir_opt(&d.rel)? else {
        return Ok(0);
    };
    if !lockd.try_lock_exclusive()? {
        return Ok(0);
    }
    let mut g = d.inner();
    flush(&mut g)?;
    for b in &d.mount.canonical {
        if b.dir_opt(d.store_rel())?
            .is_some_and(|s| s.stat_opt(cf::JOURNAL_NAME).ok().flatten().is_some())
        {
            return Ok(0);
        }
    }
    let own = g.writer.as_ref().map(|w| w.file.path().to_path_buf());
    let logs = list_logs(&d.mount, &d.rel)?;
    let busy = appended(
        d,
        logs.iter()
            .filter(|(dir, n, _)| own.as_deref() != Some(dir.sub(n).as_path())),
        false,
    )?;
    let (n, freed) = super::dead::retire(&logs, &|p| own.as_deref() == Some(p) || busy.contains(p))?;
    if n > 0 {
        g.loaded = false;
        a.threshold.store(FREE_DEAD_BYTES, Ordering::Relaxed);
    } else {
        a.threshold.store(due.saturating_mul(2), Ordering::Relaxed);
    }
    Ok(freed)
}

/// The new log's records ([`file_records`] of every file that has a name) and the bytes of data
/// they hold; `live`: the live bytes, for the progress.
fn new_log_body(g: &Inner, opts: &CompactOptions, live: u64) -> Result<(Vec<u8>, u64)> {
    // The new log's records.
    let mut body = Vec::new();
    let mut copied = 0;
    for (name, &id) in &g.names {
        copied += file_records(g, name, id, &mut body)?;
        if let Some(p) = opts.progress {
            p(copied, live);
        }
    }
    Ok((body, copied))
}

impl NewLog {
    /// Commits the journal that replaces `logs` by the new log, then rolls it forward (publishes
    /// the log under its final name, deletes `logs`). The commit comes first: replayed together
    /// with the old logs, the new one would not read the same (its CREATE records bind each
    /// file's current name at the file's original timestamp, before the renames and unlinks of
    /// the old history), so no reader may ever see both.
    fn commit_and_publish(&self, d: &SmallDir, logs: &[(Dir, String, u64)]) -> Result<()> {
        let store = &self.store;
        let mut entries = vec![(cf::E_NEW_LOG, self.fin.clone())];
        entries.extend(logs.iter().map(|(_, n, _)| (cf::E_RETIRED, n.clone())));
        let j = Journal {
            state: cf::STATE_COMMITTED,
            writer_id: self.wc,
            created_ns: clock::now_ns(),
            entries,
        };
        if let Err(e) = store
            .write_atomic(cf::JOURNAL_NAME, &j.encode(), 0o644)
            .and_then(|()| store.fsync())
        {
            // Not committed unless the journal is there whole (`write_atomic` renames last).
            if store.stat_opt(cf::JOURNAL_NAME).ok().flatten().is_none() {
                let _ = store.unlink_opt(&self.tmp);
            }
            return Err(e);
        }
        // Committed: readers replay the new log (under either name) and skip the retired ones.
        roll_forward(&d.mount, &d.rel, store, &j)
    }
}

/// Compacts the packed logs of the directory of view `d`.
pub(crate) fn compact(d: &SmallDir, opts: &CompactOptions) -> Result<CompactReport> {
    let t0 = Instant::now();
    let mount = &d.mount;
    let mut rep = CompactReport::new(d.logical());
    // One compaction of the directory at a time: its directory on the first backend is locked.
    let Some(_lockd) = lock_dir(d, opts)? else {
        rep.status = CompactStatus::Busy;
        return Ok(rep);
    };
    if !opts.dry_run {
        finish_leftovers(d)?;
    }
    let mut g = d.inner();
    // This process stops appending to its log (its next record starts a new one).
    let own = g.writer.as_ref().map(|w| w.file.path().to_path_buf());
    if !opts.dry_run {
        flush(&mut g)?;
        g.writer = None;
    }
    let logs = list_logs(mount, &d.rel)?;
    // A log some process still appends to cannot be retired.
    if !appended_by_none(d, &logs, own.as_deref())? {
        rep.status = CompactStatus::WritersOpen;
        rep.seconds = t0.elapsed().as_secs_f64();
        return Ok(rep);
    }
    // Dead logs go first, without writing anything: on a full backend that is all there is room
    // for (docs/format.md §14).
    let (dead, _) = if opts.dry_run {
        (0, 0)
    } else {
        super::dead::retire(&logs, &|p| own.as_deref() == Some(p))?
    };
    let logs = if dead > 0 { list_logs(mount, &d.rel)? } else { logs };
    g.loaded = false;
    d.refresh(&mut g)?;
    // Damage a compaction would drop unseen stays, unless only files without a name were hit.
    if let Some(s) = g.damage.stretches.first().filter(|_| {
        !g.damage
            .only_unnamed(|id| g.names.values().any(|&n| g.canonical(n) == id))
    }) {
        return Err(Error::corrupt(
            d.logical(),
            format!(
                "not compacted: damaged records in its logs ({}); see plfs fsck",
                s.describe()
            ),
        ));
    }
    rep.before = usage(&g, &logs)?;
    rep.logs_retired = logs.len() as u64;
    rep.files_dropped = (g.files.len() - g.names.len()) as u64;
    let b = rep.before;
    if logs.is_empty() || (logs.len() == 1 && rep.files_dropped == 0 && b.data == b.live) {
        rep.status = CompactStatus::NothingToDo;
        rep.after = b;
        rep.logs_retired = 0;
        return Ok(rep);
    }
    let g_ = &mount.global;
    if opts.thresholds && !worth_it(b.data, b.live, 0, g_.compaction_min_bytes, g_.compaction_dead_permille) {
        rep.status = CompactStatus::BelowThreshold;
        rep.after = b;
        return Ok(rep);
    }
    let (body, copied) = new_log_body(&g, opts, b.live)?;
    rep.copied = copied;
    let mut after = b;
    after.logs = 1;
    after.data = b.live;
    after.physical = (format::INDEX_HEADER_LEN + body.len()) as u64;
    if opts.dry_run {
        rep.status = CompactStatus::DryRun;
        rep.after = after;
        rep.seconds = t0.elapsed().as_secs_f64();
        return Ok(rep);
    }
    let new = NewLog::new(d)?;
    if let Err(e) = new.write(&body) {
        if dead > 0 && super::state::is_nospace(&e) {
            // The dead logs are gone; the rest waits for the space a rewrite needs.
            rep.logs_retired = dead;
            rep.after = usage(&g, &list_logs(mount, &d.rel)?)?;
            rep.status = CompactStatus::Compacted;
            rep.seconds = t0.elapsed().as_secs_f64();
            return Ok(rep);
        }
        return Err(e);
    }
    new.commit_and_publish(d, &logs)?;
    g.loaded = false;
    d.refresh(&mut g)?;
    rep.after = usage(&g, &list_logs(mount, &d.rel)?)?;
    rep.status = CompactStatus::Compacted;
    rep.seconds = t0.elapsed().as_secs_f64();
    Ok(rep)
}

/// Automatic compaction of `d`'s logs, after this process closed a file in it (`unlinks`: 0) or
/// unlinked or renamed one (`unlinks`: 1): when its own log grew by half of
/// `compaction_min_bytes` since the last look, or after many unlinks, the thresholds are checked
/// against the view.
pub(crate) fn after_change(d: &SmallDir, unlinks: u64) {
    if d.reserve_spent.swap(false, Ordering::Relaxed) {
        after_reserve_spent(d);
    }
    if unlinks > 0 {
        if let Err(e) = free_dead(d) {
            crate::warn!("{}: freeing the logs of deleted files: {e}", d.logical().display());
        }
    }
    let gp = &d.mount.global;
    if !gp.auto_compaction {
        return;
    }
    let a = &d.auto;
    let grown = {
        let g = d.inner();
        let off = g.writer.as_ref().map_or(0, |w| w.off);
        let last = a.since.load(Ordering::Relaxed);
        off.saturating_sub(last) >= (gp.compaction_min_bytes / 2).max(256 << 10)
    };
    let many = a.truncs.fetch_add(unlinks, Ordering::Relaxed) + unlinks >= CHECK_UNLINKS;
    if !(grown || many) || a.running.swap(true, Ordering::Acquire) {
        return;
    }
    a.truncs.store(0, Ordering::Relaxed);
    let r = (|| -> Result<()> {
        let (data, live) = {
            let mut g = d.inner();
            d.refresh(&mut g)?;
            a.since.store(g.writer.as_ref().map_or(0, |w| w.off), Ordering::Relaxed);
            let logs = list_logs(&d.mount, &d.rel)?;
            let u = usage(&g, &logs)?;
            (u.data, u.live)
        };
        if worth_it(data, live, 0, gp.compaction_min_bytes, gp.compaction_dead_permille) {
            compact(
                d,
                &CompactOptions {
                    automatic: true,
                    ..Default::default()
                },
            )?;
            // The writer's log is new: count from its start.
            a.since.store(0, Ordering::Relaxed);
        }
        Ok(())
    })();
    a.running.store(false, Ordering::Release);
    if let Err(e) = r {
        crate::warn!("{}: automatic compaction: {e}", d.logical().display());
    }
}

/// After this process spent the store's reserve (a namespace change on a full backend, docs/
/// format.md §11): a compaction frees what the change made dead (whatever `auto_compaction`
/// says: without it a full backend stays full), then the reserve is made again if there is room.
fn after_reserve_spent(d: &SmallDir) {
    let opts = CompactOptions {
        automatic: true,
        ..Default::default()
    };
    match compact(d, &opts) {
        Ok(r) => crate::debug!("{}: after a full backend: {:?}", d.logical().display(), r.status),
        Err(e) => crate::warn!("{}: freeing space after a full backend: {e}", d.logical().display()),
    }
    let store = d.mount.canonical[d.writer_backend()]
        .dir_opt(d.store_rel())
        .ok()
        .flatten();
    if let Some(store) = store {
        super::reserve::make(&store);
    }
}
