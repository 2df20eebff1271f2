//! Compaction of an N-1 container (docs/design.md, "Compaction"): the live extents of every
//! closed writer's logs are copied into one new log pair with the **same timestamps** they had,
//! the trunc droppings they were clipped by are folded, and the old logs are retired through the
//! journal ([`super::journal`]).
//!
//! Keeping each extent's timestamp is what makes every step safe: the new log describes exactly
//! the bytes the retired logs showed, with the same ordering keys, so a reader that merges the
//! new log with any subset of the old ones, or with the logs of writers still open, reads the
//! same bytes as before; and a later write, truncate or late-arriving record of an open writer
//! is ordered against the copied extents exactly as it was against the originals.
//!
//! This process's automatic compaction is in [`super::auto`].

use super::journal;
use super::rewrite;
use super::shared::{lock, Shared};
use super::writer::Writer;
use crate::clock;
use crate::container::{CompactionLock, Container};
use crate::error::{Error, Result};
use crate::extent::{ExtentMap, Key, Pattern};
use crate::format::compact::{self as cf, Journal};
use crate::format::{self, LogHeader, MetaDropping};
use crate::layout::compaction::{patience, worth_it, CompactOptions, CompactReport, CompactStatus, Usage};
use crate::sys::{Access, Dir};
use rustix::io::Errno;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

/// A closed writer's logs, to be retired.
struct Old {
    dir: Arc<Dir>,
    id: u64,
    data_name: String,
    index_name: String,
    data_len: u64,
}

/// Space used by the container: every backend file behind it (live bytes not filled in).
pub(crate) fn footprint(c: &Container) -> Result<Usage> {
    let mut u = Usage::default();
    for n in c.dir.list()? {
        let b = n.as_encoded_bytes();
        if b.starts_with(format::HOSTDIR_PREFIX.as_bytes()) {
            continue; // counted below, with the shadow backends' hostdirs
        }
        if c.is_flat() {
            // A one-directory container: its logs are counted below (it is its first hostdir),
            // its droppings here.
            if n.to_str().and_then(format::parse_log_name).is_some() {
                continue;
            }
            if let Some(d) = n.to_str().and_then(MetaDropping::parse) {
                u.meta_files += 1;
                u.writers += u64::from(matches!(d, MetaDropping::Open { .. }));
                continue;
            }
        }
        let Some(st) = c.dir.stat_opt(&n)? else { continue };
        if b == format::META_DIR.as_bytes() {
            for d in c.dir.open_dir(&n)?.list()? {
                u.meta_files += 1;
                if d.to_str().is_some_and(|s| s.starts_with("open.")) {
                    u.writers += 1;
                }
            }
        } else if crate::sys::is_file(&st) {
            u.physical += st.st_size.max(0) as u64;
        }
    }
    for hd in c.hostdirs()? {
        // A one-directory container is its own first hostdir: only its logs are counted here.
        let top = c.is_flat() && hd.path() == c.dir.path();
        for n in hd.list()? {
            if top && n.to_str().and_then(format::parse_log_name).is_none() {
                continue;
            }
            let Some(st) = hd.stat_opt(&n)? else { continue };
            let size = st.st_size.max(0) as u64;
            u.physical += size;
            if let Some(l) = n.to_str().and_then(format::parse_log_name) {
                u.logs += 1;
                if !l.is_index {
                    u.data += size.saturating_sub(format::DATA_HEADER_LEN as u64);
                }
            }
        }
    }
    if let Some(j) = journal::read(c)? {
        let p: Vec<String> = j.names(cf::E_PENDING).map(str::to_string).collect();
        u.pending = journal::pending_bytes(c, &p)?;
    }
    Ok(u)
}

/// The file's usage, with its logical size and live bytes from the merged index.
pub(crate) fn usage(sh: &Shared) -> Result<Usage> {
    let mut u = footprint(&sh.c)?;
    let (size, live, frames) = sh.with_index(true, |s| Ok((s.size(), s.live_bytes(), s.framed_writes())))?;
    u.logical = size;
    u.live = live;
    // The frames of framed data logs are counted in their size, but are not data.
    u.data = u.data.saturating_sub(frames * format::FRAME_LEN as u64);
    Ok(u)
}

/// Moves every writer of this process that has written to fresh logs under a new writer id: its
/// old identity is closed as a real close closes it ([`Writer::close_records`]), so its logs can
/// be compacted; its next write starts new logs. Returns the ids the writers have now.
fn rotate(sh: &Shared) -> Result<HashSet<u64>> {
    let ws: Vec<_> = lock(&sh.writers).values().cloned().collect();
    let mut moved = Vec::new();
    for w in ws {
        let mut wg = lock(&w);
        if wg.closed || !wg.announced {
            continue;
        }
        wg.close_records(&sh.c)?;
        let old = wg.id;
        let fresh = Writer::new(wg.pid, wg.compress);
        *wg = fresh;
        moved.push((old, wg.id, w.clone()));
    }
    let mut t = lock(&sh.writers);
    for (old, new, w) in moved {
        t.remove(&old);
        t.insert(new, w);
    }
    Ok(t.keys().copied().collect())
}

/// The closed writers' logs: every index log whose writer has a close dropping in `meta`, with
/// its data log; and whether any other index log (not one of `own`) exists.
fn closed_logs(c: &Container, closed: &HashSet<u64>, own: &HashSet<u64>) -> Result<(Vec<Old>, bool)> {
    let mut out = Vec::new();
    let mut others = false;
    for hd in c.hostdirs()? {
        for n in hd.list()? {
            let Some(l) = n.to_str().and_then(format::parse_log_name) else {
                continue;
            };
            if !l.is_index {
                continue;
            }
            if !closed.contains(&l.writer_id) {
                others |= !own.contains(&l.writer_id);
                continue;
            }
            let data_name = format::data_log_name(l.writer_id, l.pid, &l.host);
            let data_len = match hd.stat_opt(&data_name)? {
                Some(st) => st.st_size.max(0) as u64,
                None => {
                    return Err(Error::corrupt(
                        hd.sub(&n),
                        "its data log is missing; run plfs fsck before compacting",
                    ))
                }
            };
            out.push(Old {
                dir: hd.clone(),
                id: l.writer_id,
                index_name: n.to_string_lossy().into_owned(),
                data_name,
                data_len,
            });
        }
    }
    Ok((out, others))
}

/// Merges the retired logs and every trunc dropping into one map (chunk = index into `olds`),
/// keeping every pattern's timestamps. Damage is an error: compaction never guesses.
fn merge(olds: &[Old], truncs: &[(u64, u64, u64)]) -> Result<ExtentMap> {
    let mut map = ExtentMap::new();
    for &(ts, size, writer) in truncs {
        map.insert_trunc(size, Key { ts, writer });
    }
    for (i, o) in olds.iter().enumerate() {
        let path = o.dir.sub(&o.index_name);
        let bytes = o.dir.open_file(&o.index_name, Access::Read)?.read_from(0)?;
        let h = LogHeader::decode(&path, &bytes, format::INDEX_MAGIC)?;
        if h.writer_id != o.id {
            return Err(Error::corrupt(&path, "header and file name name different writers"));
        }
        let dec = format::decode_records(&bytes[format::INDEX_HEADER_LEN..]);
        if let Some(e) = dec.tail_error {
            return Err(Error::corrupt(
                &path,
                format!("{e}; run plfs fsck --repair before compacting"),
            ));
        }
        let chunk = i as u32;
        let gap = format::frame_gap(h.flags);
        check_data_end(o, &dec, gap, &path)?;
        for p in dec.patterns {
            let n = p.ts.len() as u64;
            let pstride = p.pstride(gap);
            map.insert_pattern(Pattern {
                start: p.logical_start,
                len: p.length,
                stride: p.stride,
                count: n,
                chunk,
                phys: p.physical_start,
                pstride,
                writer: o.id,
                ts_first: p.ts[0],
                ts_last: p.ts[p.ts.len() - 1],
                ts: Some(p.ts.into()),
            });
        }
        for r in dec.records {
            map.insert_write(
                r.logical_off,
                r.length,
                chunk,
                r.physical_off,
                Key { ts: r.ts, writer: o.id },
            );
        }
    }
    if map.is_stale() {
        return Err(Error::InvalidArgument(
            "compaction: merged index lost timestamps".into(),
        ));
    }
    Ok(map)
}

/// A record of `dec` (the index log of `o`) that points past the end of its data log is damage.
/// The data log's size from its stat is checked against the data itself first: a network file
/// system's cached size can lag behind the bytes (`crate::index::scan_frames`).
fn check_data_end(o: &Old, dec: &format::DecodedRecords, gap: u64, path: &std::path::Path) -> Result<()> {
    let end = dec
        .patterns
        .iter()
        .map(|p| p.physical_end(gap))
        .chain(dec.records.iter().map(|r| r.physical_off.saturating_add(r.length)))
        .max()
        .unwrap_or(0);
    if end <= o.data_len {
        return Ok(());
    }
    let data = o.dir.open_file(&o.data_name, Access::Read)?;
    if crate::index::holds_byte(&data, end - 1)? {
        return Ok(());
    }
    Err(Error::corrupt(path, "a record points past the end of its data log"))
}

/// One compaction's snapshot of the container (steps 4 to 6 of docs/design.md, "Compaction"):
/// the logs it retires, their merged map, and the trunc droppings it folds.
struct Plan {
    /// The snapshot's timestamp: everything older may be folded.
    snap_ts: u64,
    /// The closed writers' logs, retired (chunk `i` of `map` is `olds[i]`).
    olds: Vec<Old>,
    /// The retired logs and every trunc dropping, merged.
    map: ExtentMap,
    /// The closed writers: writer id -> mtime of its close.
    closed: HashMap<u64, u64>,
    /// Every trunc dropping: (ts, size, writer id).
    truncs: Vec<(u64, u64, u64)>,
    /// The trunc droppings folded.
    fold: Vec<(u64, u64, u64)>,
    /// Records not retired may be older than the retired ones: nothing is folded, the new log
    /// keeps every extent's timestamp.
    unsafe_fold: bool,
    /// Live bytes of `map`.
    live: u64,
    /// Data bytes of the retired data logs.
    old_data: u64,
}

impl Plan {
    /// Takes the snapshot (`own`: the ids of this process's writers), merges the closed writers'
    /// logs and decides what is folded.
    fn make(c: &Container, own: &HashSet<u64>) -> Result<Plan> {
        // Everything older than this may be folded; writers that open later write newer records.
        let snap_ts = clock::next_ts();
        let meta = c.list_meta()?;
        let foreign_open = meta
            .iter()
            .any(|d| matches!(d, MetaDropping::Open { writer_id, .. } if !own.contains(writer_id)));
        let mut closed: HashMap<u64, u64> = HashMap::new(); // writer id -> mtime of its close
        let mut with_data: HashSet<u64> = HashSet::new();
        let mut truncs: Vec<(u64, u64, u64)> = Vec::new();
        for d in &meta {
            match *d {
                MetaDropping::Close {
                    writer_id,
                    mtime_ns,
                    bytes,
                    ..
                } => {
                    closed.insert(writer_id, mtime_ns);
                    if bytes > 0 {
                        with_data.insert(writer_id);
                    }
                }
                MetaDropping::Trunc { ts, size, writer_id } => truncs.push((ts, size, writer_id)),
                MetaDropping::Open { .. } => {}
            }
        }
        let (olds, others) = closed_logs(c, &closed.keys().copied().collect(), own)?;
        let map = merge(&olds, &truncs)?;
        // Truncs that clip nothing but the retired logs' records are folded, except the newest,
        // which keeps the file's size. A writer open elsewhere may still append records older than
        // any of them, and a log that is neither retired nor ours (a writer without droppings, a
        // closed writer whose logs were not found) may hold some: then none is folded.
        let found: HashSet<u64> = olds.iter().map(|o| o.id).collect();
        let unsafe_fold = foreign_open || others || with_data.iter().any(|w| !found.contains(w));
        let newest = truncs.iter().copied().max_by_key(|&(ts, _, id)| (ts, id));
        let fold: Vec<(u64, u64, u64)> = if unsafe_fold {
            Vec::new()
        } else {
            truncs
                .iter()
                .copied()
                .filter(|t| t.0 < snap_ts && Some(*t) != newest)
                .collect()
        };
        let live = map.live_bytes();
        let old_data: u64 = olds
            .iter()
            .map(|o| o.data_len.saturating_sub(format::DATA_HEADER_LEN as u64))
            .sum();
        Ok(Plan {
            snap_ts,
            olds,
            map,
            closed,
            truncs,
            fold,
            unsafe_fold,
            live,
            old_data,
        })
    }

    /// The usage this compaction would leave, estimated from the usage `before` it (a dry run's
    /// report).
    fn estimate(&self, before: Usage) -> Usage {
        let (olds, live) = (&self.olds, self.live);
        let mut after = before;
        after.data = after.data.saturating_sub(self.old_data) + live;
        after.meta_files =
            (after.meta_files + u64::from(live > 0)).saturating_sub(self.closed.len() as u64 + self.fold.len() as u64);
        let old_files: u64 = olds
            .iter()
            .map(|o| {
                o.data_len
                    + o.dir
                        .stat_opt(&o.index_name)
                        .ok()
                        .flatten()
                        .map_or(0, |s| s.st_size.max(0) as u64)
            })
            .sum();
        after.physical =
            after.physical.saturating_sub(old_files + after.pending) + live + 2 * format::DATA_HEADER_LEN as u64;
        after.pending = 0;
        after.logs = (after.logs + 2 * u64::from(live > 0)).saturating_sub(2 * olds.len() as u64);
        after
    }
}

/// Takes the compaction lock (one compaction at a time; `meta/`, or `compact.lock`), waiting as
/// `opts` allows: `None` if another compaction holds it, `Some(None)` for a dry run where a
/// one-directory container has no lock file yet. The lock lasts as long as the returned
/// descriptor.
fn lock_meta(sh: &Shared, opts: &CompactOptions) -> Result<Option<Option<CompactionLock>>> {
    // A dry run makes nothing, not even a missing lock file (then no compaction ever ran, and
    // one starting now makes it: the dry run reports what it saw).
    let Some(meta_lock) = sh.c.compaction_lock(!opts.dry_run)? else {
        if opts.dry_run && sh.c.is_flat() {
            return Ok(Some(None));
        }
        return Err(Error::errno(
            Errno::NOENT,
            format!(
                "{}: the container has no meta/ (plfs fsck --repair restores it)",
                sh.logical.display()
            ),
        ));
    };
    if !meta_lock.try_exclusive_within(patience(opts))? {
        return Ok(None);
    }
    if !meta_lock.works()? {
        return Err(Error::errno(
            Errno::OPNOTSUPP,
            format!(
                "{}: compaction needs flock(2) on the backend's directories, which this backend refuses",
                sh.logical.display()
            ),
        ));
    }
    Ok(Some(Some(meta_lock)))
}

/// Finishes what an earlier compaction's journal left (not in a dry run); returns the data logs
/// still pending deletion.
fn finish_earlier(c: &Container, opts: &CompactOptions) -> Result<Vec<String>> {
    // An earlier compaction's journal: finish its roll-forward first.
    let mut pending: Vec<String> = Vec::new();
    if let Some(j) = journal::read(c)? {
        pending = match j.state {
            cf::STATE_COMMITTED if !opts.dry_run => {
                let p = journal::roll_forward(c, &j)?;
                journal::settle(c, &j, p.clone())?;
                p
            }
            _ => j.names(cf::E_PENDING).map(str::to_string).collect(),
        };
    }
    Ok(pending)
}

/// Compacts the container of `sh` (docs/design.md, "Compaction"). This process's own writers
/// stay open: they are first moved to fresh logs, so what they wrote so far is compacted too.
pub(crate) fn compact(sh: &Shared, opts: &CompactOptions) -> Result<CompactReport> {
    let t0 = Instant::now();
    let c = &sh.c;
    let mut rep = CompactReport::new(sh.logical.clone());
    // Held to the end: the lock is this descriptor's.
    let Some(_meta_lock) = lock_meta(sh, opts)? else {
        rep.status = CompactStatus::Busy;
        return Ok(rep);
    };
    let pending = finish_earlier(c, opts)?;
    rep.before = footprint(c)?;
    // A dry run moves nothing: this process's open writers then count as any other's.
    let own = if opts.dry_run { HashSet::new() } else { rotate(sh)? };
    let plan = Plan::make(c, &own)?;
    rep.logs_retired = plan.olds.len() as u64;
    rep.truncs_folded = plan.fold.len() as u64;
    let nothing = plan.olds.len() <= 1 && plan.old_data == plan.live && plan.fold.is_empty();
    if nothing
        || (opts.thresholds
            && !worth_it(
                plan.old_data,
                plan.live,
                plan.truncs.len() as u64,
                c.mount.global.compaction_min_bytes,
                c.mount.global.compaction_dead_permille,
            ))
    {
        rep.status = if nothing {
            CompactStatus::NothingToDo
        } else {
            CompactStatus::BelowThreshold
        };
        if !pending.is_empty() && !opts.dry_run && journal::alone(c) {
            retire_now(sh, &pending)?;
            journal::remove(c)?;
        }
        rep.after = footprint(c)?;
        return done(sh, rep, t0);
    }
    if opts.dry_run {
        rep.after = plan.estimate(rep.before);
        rep.status = CompactStatus::DryRun;
        return done(sh, rep, t0);
    }
    rep.copied = write_and_commit(sh, &plan, pending, opts)?;
    rep.status = CompactStatus::Compacted;
    rep.after = footprint(c)?;
    done(sh, rep, t0)
}

/// Writes the new log pair of `plan` (if it has live data), commits the journal, rolls forward
/// and retires the old data logs if no other process has the file open (`pending`: those an
/// earlier compaction left). Returns the bytes copied.
fn write_and_commit(sh: &Shared, plan: &Plan, pending: Vec<String>, opts: &CompactOptions) -> Result<u64> {
    let c = &sh.c;
    // Build the new logs under temporary names; nothing visible changes until the journal commits.
    let wc = clock::random_u64();
    let host = clock::hostname();
    let mut entries = Vec::new();
    let mut new_dir: Option<Arc<Dir>> = None;
    let mut copied = 0;
    if plan.live > 0 {
        let (dir, close, bytes) = write_new_logs(c, plan, wc, host, opts)?;
        copied = bytes;
        entries.push((cf::E_NEW_LOG, format::data_log_name(wc, clock::pid(), host)));
        entries.push((cf::E_NEW_CLOSE, close.name()));
        new_dir = Some(dir);
    }
    entries.extend(plan.olds.iter().map(|o| (cf::E_RETIRED, o.data_name.clone())));
    entries.extend(
        plan.fold
            .iter()
            .map(|&(ts, size, writer_id)| (cf::E_FOLDED, MetaDropping::Trunc { ts, size, writer_id }.name())),
    );
    entries.extend(pending.iter().map(|p| (cf::E_PENDING, p.clone())));
    let j = Journal {
        state: cf::STATE_COMMITTED,
        writer_id: if plan.live > 0 { wc } else { 0 },
        created_ns: clock::now_ns(),
        entries,
    };
    if let Err(e) = journal::write(c, &j) {
        if let Some(d) = new_dir {
            remove_new_logs(&d, wc);
        }
        return Err(e);
    }
    // Committed: from here on a crash is finished by whoever finds the journal.
    let pending = journal::roll_forward(c, &j)?;
    if journal::alone(c) {
        retire_now(sh, &pending)?;
        journal::remove(c)?;
    } else {
        journal::settle(c, &j, pending)?;
        sh.reset_index();
    }
    Ok(copied)
}

/// Writes the new log pair of `plan` (writer `wc` on `host`) under its temporary names, fsynced
/// with its hostdir and the hostdir's parent. Returns the hostdir, the close dropping the new log
/// gets, and the bytes copied; on an error, nothing of the new logs is left.
fn write_new_logs(
    c: &Container,
    plan: &Plan,
    wc: u64,
    host: &str,
    opts: &CompactOptions,
) -> Result<(Arc<Dir>, MetaDropping, u64)> {
    let (dir, in_container) = c.writer_dir(host, true)?;
    let srcs: Vec<(&Dir, &str)> = plan.olds.iter().map(|o| (&*o.dir, o.data_name.as_str())).collect();
    let built = rewrite::write_logs(
        c,
        &dir,
        wc,
        plan.snap_ts,
        &plan.map,
        &srcs,
        !plan.unsafe_fold,
        opts.progress,
    )
    .and_then(|r| {
        dir.fsync()?;
        c.sync_hostdir_parent(host, in_container)?;
        Ok(r)
    });
    let (eof, bytes) = match built {
        Ok(r) => r,
        Err(e) => {
            remove_new_logs(&dir, wc);
            return Err(e);
        }
    };
    let close = MetaDropping::Close {
        writer_id: wc,
        open_ts: plan.snap_ts,
        close_ts: clock::next_ts(),
        eof,
        bytes,
        mtime_ns: plan.closed.values().copied().max().unwrap_or(0),
    };
    Ok((dir, close, bytes))
}

/// Removes the new logs of writer `wc` from their temporary names in `dir` (best effort: fsck
/// removes what is left).
fn remove_new_logs(dir: &Dir, wc: u64) {
    let _ = dir.unlink_opt(cf::tmp_data_name(wc));
    let _ = dir.unlink_opt(cf::tmp_index_name(wc));
}

/// Completes a report: the logical size and live bytes, the time taken since `t0`.
fn done(sh: &Shared, mut rep: CompactReport, t0: Instant) -> Result<CompactReport> {
    fill_live(sh, &mut rep)?;
    rep.seconds = t0.elapsed().as_secs_f64();
    Ok(rep)
}

/// The logical size and live bytes (the same before and after: a compaction changes neither),
/// from this process's merged index.
fn fill_live(sh: &Shared, rep: &mut CompactReport) -> Result<()> {
    let (size, live) = sh.with_index(true, |s| Ok((s.size(), s.live_bytes())))?;
    for u in [&mut rep.before, &mut rep.after] {
        u.logical = size;
        u.live = live;
    }
    Ok(())
}

/// Deletes retired data logs while this process is the only one with the file open: under the
/// merged index's lock, which is then dropped (it may point into them), so no read of this
/// process can be planning a read from a deleted log.
fn retire_now(sh: &Shared, pending: &[String]) -> Result<()> {
    let mut g = lock(&sh.index);
    let r = journal::delete_pending(&sh.c, pending);
    sh.forget_index(&mut g);
    r.map(drop)
}
