//! fsck of one container: its marker, `meta/` droppings, every writer's logs (in the container
//! and on shadow backends), and the consistency between what the droppings say and what the
//! index logs hold. Repairs follow the invariant in the parent module.

use super::compaction;
use super::debris;
use super::droppings::check_droppings;
use super::index_log::{append_records, fix_index_log, scan_index, IndexScan};
use super::liveness::{writer_liveness, Liveness};
use super::marker::{rewrite_marker, salvage_id};
use super::report::{repair_step, Kind, Options, Repair, Report};
use super::writer::{LogFile, WriterCheck, WriterState};
use crate::container::Container;
use crate::error::Result;
use crate::format::{self, LogHeader, MetaDropping};
use crate::mount::Mount;
use crate::sys::{self, Access, Dir};
use std::collections::BTreeMap;
use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;

/// What [`check`] returns for a container whose id this user may not read.
pub(super) const UNREADABLE: u128 = u128::MAX;

/// Checks the container in directory `dir` without requiring a `cid` dropping (which fsck may
/// have to restore).
pub(super) fn check(mount: &Arc<Mount>, backend: usize, dir: Dir, opts: &Options, rep: &mut Report) -> Result<u128> {
    let path = dir.path().to_path_buf();
    rep.containers += 1;
    // A compaction's state first: finishing one changes the logs and droppings checked below.
    let skip = match crate::container::cid_of(&dir) {
        Ok(cid) => compaction::check(&Container::for_fsck(mount, backend, dir.try_clone()?, cid)?, opts, rep)?,
        Err(_) => Default::default(),
    };
    let marker_path = dir.sub(format::MARKER_NAME);
    let marker = crate::container::read_marker(&dir);
    if let Err(e) = &marker {
        if is_denied(e) {
            // Not damage: this user may not read the container. Nothing in it can be checked,
            // and rewriting its marker would be wrong.
            rep.push(
                Kind::Unreadable,
                true,
                &marker_path,
                e.to_string(),
                Repair::Manual("check permissions (run fsck as the file's owner or root)".into()),
            );
            return Ok(UNREADABLE);
        }
    }
    let (flat, cids, droppings) = list_droppings(&dir, rep)?;
    let cid = if flat {
        marker.as_ref().ok().map(|m| m.container_id)
    } else {
        resolve_cid(&dir, &marker, &cids, opts, rep)
    };
    if let Err(e) = &marker {
        // A one-directory container keeps its id only in its marker; the id names its shadow
        // directories, so a new one will do where there are none.
        let fresh = || {
            let r = crate::clock::random_u64s::<2>();
            (u128::from(r[0]) << 64) | u128::from(r[1])
        };
        // Only in the layout what the container holds proves: a marker of the wrong version
        // would send readers to the wrong place for the droppings and logs (issue 50).
        let proven = crate::container::proven_layout(&dir)? == Some(flat);
        let salvaged = if flat { salvage_id(&dir) } else { None };
        let repair = match (cid, salvaged) {
            _ if !proven => Repair::Manual(format!(
                "what the container holds does not prove its version ({}); restore the marker by hand",
                if flat {
                    "no meta/ but hostdirs"
                } else {
                    "meta/ and logs or droppings beside it"
                }
            )),
            (Some(cid), _) => repair_step(opts, "rewrote the marker from the cid dropping", || {
                rewrite_marker(&dir, cid, flat)
            }),
            (None, Some(cid)) => repair_step(
                opts,
                "rewrote the marker with the container id its first 48 bytes still hold (checksum right)",
                || rewrite_marker(&dir, cid, flat),
            ),
            (None, None) if flat && single_backend(mount) => repair_step(
                opts,
                "rewrote the marker with a new container id (no shadow backend)",
                || rewrite_marker(&dir, fresh(), flat),
            ),
            (None, None) => Repair::Manual("no cid is known either; the container id cannot be restored".into()),
        };
        rep.push(Kind::BadMarker, true, &marker_path, e.to_string(), repair);
    }
    let _ = path;
    let c = Container::for_fsck(mount, backend, dir, cid.unwrap_or(0))?;
    // Where reads depend on the flattened index, nothing that would make readers ignore it.
    let keep = super::flat_index::reads_need_it(&c, opts, rep)?;
    let opts = &keep.unwrap_or_else(|| opts.clone());
    check_root_entries(&c, &skip.names, opts, rep)?;
    let writers = collect_writers(&c, cid.is_some(), &skip.names, opts, rep)?;
    let truncs: Vec<u64> = droppings
        .iter()
        .filter_map(|d| match d {
            MetaDropping::Trunc { ts, .. } => Some(*ts),
            _ => None,
        })
        .collect();
    let mut by_writer: BTreeMap<u64, WriterState> = writers;
    for d in droppings {
        match &d {
            MetaDropping::Open { writer_id, pid, host } => {
                let w = by_writer.entry(*writer_id).or_default();
                w.pid = *pid;
                w.host.clone_from(host);
                w.opens.push(d);
            }
            MetaDropping::Close { writer_id, .. } => by_writer.entry(*writer_id).or_default().closes.push(d),
            MetaDropping::Trunc { .. } => {}
        }
    }
    for (id, w) in &by_writer {
        if skip.writers.contains(id) {
            continue; // a compaction's, checked by the compaction check
        }
        rep.writers += 1;
        check_writer(&c, *id, w, &truncs, opts, rep);
    }
    Ok(cid.unwrap_or(0))
}

/// Whether the container in `dir` is one directory (format 3), and its cid droppings (version 2
/// only) and other droppings, listed from `meta/` or the container itself. Unknown names in
/// `meta/` are reported here; a one-directory container's other entries by `check_root_entries`.
fn list_droppings(dir: &Dir, rep: &mut Report) -> Result<(bool, Vec<u128>, Vec<MetaDropping>)> {
    // A one-directory container (format 3) says so by its marker; one whose marker cannot say
    // by what it holds (`layout_by_sight`).
    let flat = crate::container::layout_by_sight(dir)?;
    let meta_dir = if flat {
        dir.path().to_path_buf()
    } else {
        dir.sub(format::META_DIR)
    };
    let listed = if flat {
        dir.list()
    } else {
        dir.open_dir_opt(format::META_DIR)
            .and_then(|m| m.map_or(Ok(Vec::new()), |m| m.list()))
    };
    let meta_names = match listed {
        Ok(n) => n,
        Err(e) => {
            rep.push(
                Kind::Unreadable,
                true,
                &meta_dir,
                e.to_string(),
                Repair::Manual("check permissions".into()),
            );
            Vec::new()
        }
    };
    let holder = if flat {
        Some(dir.try_clone()?)
    } else {
        dir.open_dir_opt(format::META_DIR)?
    };
    if let Some(h) = &holder {
        super::droppings::check_empty(h, &meta_names, rep)?;
    }
    let mut cids = Vec::new();
    let mut droppings = Vec::new();
    for n in &meta_names {
        let name = n.to_string_lossy();
        if flat {
            // The container's other entries are checked by `check_root_entries`.
            droppings.extend(MetaDropping::parse(&name));
            continue;
        }
        if let Some(v) = format::parse_cid_dropping(&name) {
            cids.push(v);
            continue;
        }
        match MetaDropping::parse(&name) {
            Some(d) => droppings.push(d),
            None => rep.push(
                Kind::UnknownFile,
                false,
                meta_dir.join(n),
                "not a metadata dropping; ignored by readers".into(),
                Repair::None,
            ),
        }
    }
    Ok((flat, cids, droppings))
}

fn resolve_cid(
    dir: &Dir,
    marker: &Result<format::Marker>,
    cids: &[u128],
    opts: &Options,
    rep: &mut Report,
) -> Option<u128> {
    let meta = dir.sub(format::META_DIR);
    let mcid = marker.as_ref().ok().map(|m| m.container_id);
    match (cids, mcid) {
        ([c], Some(m)) if *c != m => {
            rep.push(
                Kind::CidMismatch,
                true,
                &meta,
                format!("cid dropping says {c:032x}, the marker says {m:032x}; readers use the dropping"),
                Repair::Manual("find which shadow directories hold this container's logs".into()),
            );
            Some(*c)
        }
        ([c], _) => Some(*c),
        ([], Some(m)) => {
            let repair = repair_step(opts, format!("created meta/cid.{m:032x} from the marker"), || {
                dir.mkdir_ok(format::META_DIR, 0o755)?;
                dir.open_dir(format::META_DIR)?
                    .touch(format!("cid.{m:032x}"), 0o644)
                    .map(drop)
            });
            rep.push(
                Kind::MissingCid,
                true,
                &meta,
                "no cid dropping: only the marker still holds the container id".into(),
                repair,
            );
            Some(m)
        }
        ([], None) => {
            rep.push(
                Kind::MissingCid,
                true,
                &meta,
                "no cid dropping and no readable marker".into(),
                Repair::Manual("shadow logs of this container cannot be located".into()),
            );
            None
        }
        (many, m) => {
            let keep = m.filter(|m| many.contains(m));
            let repair = match keep {
                Some(k) => repair_step(
                    opts,
                    format!("kept cid.{k:032x} (the marker's), removed the others"),
                    || {
                        let md = dir.open_dir(format::META_DIR)?;
                        for c in many.iter().filter(|c| **c != k) {
                            md.unlink_opt(format!("cid.{c:032x}"))?;
                        }
                        Ok(())
                    },
                ),
                None => Repair::Manual("no readable marker says which one is right".into()),
            };
            rep.push(
                Kind::CidMismatch,
                true,
                &meta,
                format!("{} cid droppings; readers pick one at random", many.len()),
                repair,
            );
            keep.or(many.first().copied())
        }
    }
}

/// Whether every writer of `mount` logs inside its containers (one backend in all).
fn single_backend(mount: &Arc<Mount>) -> bool {
    mount.canonical.len() == 1 && mount.shadows.len() == 1 && Arc::ptr_eq(&mount.canonical[0], &mount.shadows[0])
}

/// Entries at the container's top level: debris and unknown files, and the flattened index (not
/// the names in `skip`, a running compaction's).
fn check_root_entries(
    c: &Container,
    skip: &std::collections::HashSet<String>,
    opts: &Options,
    rep: &mut Report,
) -> Result<()> {
    for n in c.dir.list()? {
        if n.to_str().is_some_and(|s| skip.contains(s)) {
            continue; // a compaction's, checked by the compaction check
        }
        let b = n.as_bytes();
        let p = c.dir.sub(&n);
        if b == format::MARKER_NAME.as_bytes()
            || b == format::META_DIR.as_bytes()
            || b == format::compact::JOURNAL_NAME.as_bytes()
            || format::xattr::is_xattr_dir(b)
        {
            continue;
        }
        // A one-directory container's droppings and logs are checked with its writers.
        let s = n.to_str();
        if c.is_flat()
            && (b == format::compact::LOCK_NAME.as_bytes()
                || s.and_then(MetaDropping::parse).is_some()
                || s.and_then(format::parse_log_name).is_some())
        {
            continue;
        }
        if b.starts_with(format::HOSTDIR_PREFIX.as_bytes()) {
            let is_dir = c.dir.stat_opt(&n)?.is_some_and(|s| sys::is_dir(&s));
            if !is_dir {
                rep.push(
                    Kind::UnknownFile,
                    false,
                    &p,
                    "named like a hostdir but not a directory".into(),
                    Repair::None,
                );
            }
        } else if b == format::FLAT_NAME.as_bytes() {
            let r = c
                .dir
                .open_file(&n, Access::Read)
                .and_then(|f| f.read_from(0))
                .and_then(|bytes| Ok(format::flat::Flat::decode(&p, &bytes).map(drop)?));
            if let Err(e) = r {
                let repair = repair_step(opts, "removed it (a cache: readers rebuild from the logs)", || {
                    c.dir.unlink_opt(&n).map(drop)
                });
                rep.push(Kind::BadFlatIndex, true, &p, e.to_string(), repair);
            }
        } else if b.starts_with(format::TMP_PREFIX.as_bytes()) {
            debris::tmp_debris(&c.dir, &n, opts, rep)?;
        } else {
            rep.push(
                Kind::UnknownFile,
                false,
                &p,
                "not created by PLFS; ignored".into(),
                Repair::None,
            );
        }
    }
    Ok(())
}

/// Lists every hostdir (in the container and on shadows) and groups the logs by writer.
fn collect_writers(
    c: &Container,
    have_cid: bool,
    skip: &std::collections::HashSet<String>,
    opts: &Options,
    rep: &mut Report,
) -> Result<BTreeMap<u64, WriterState>> {
    let mut out: BTreeMap<u64, WriterState> = BTreeMap::new();
    let in_container = || -> Result<Vec<Arc<Dir>>> {
        // Without a cid only the hostdirs inside the container can be found.
        let mut v = Vec::new();
        if c.is_flat() {
            v.push(Arc::new(c.dir.try_clone()?));
        }
        for n in c.dir.list()? {
            if n.as_bytes().starts_with(format::HOSTDIR_PREFIX.as_bytes()) {
                if let Ok(Some(d)) = c.dir.open_dir_opt(&n) {
                    v.push(Arc::new(d));
                }
            }
        }
        Ok(v)
    };
    let mut dirs: Vec<Arc<Dir>> = if have_cid { c.hostdirs()? } else { in_container()? };
    if have_cid {
        debris::stranded_shadow(c, &dirs, opts, rep)?;
        if opts.repair {
            dirs = c.hostdirs()?;
        }
    }
    for d in dirs {
        // The container itself, in a one-directory container: its other entries are checked by
        // `check_root_entries`.
        let top = c.is_flat() && d.path() == c.dir.path();
        let names = match d.list() {
            Ok(n) => n,
            Err(e) => {
                rep.push(
                    Kind::Unreadable,
                    true,
                    d.path(),
                    e.to_string(),
                    Repair::Manual("check permissions".into()),
                );
                continue;
            }
        };
        for n in names {
            let p = d.sub(&n);
            let name = n.to_string_lossy();
            if skip.contains(name.as_ref()) {
                continue; // a compaction's, checked by the compaction check
            }
            if let Some(info) = format::parse_log_name(&name) {
                let st = match d.stat(&n) {
                    Ok(st) => st,
                    Err(e) => {
                        rep.push(
                            Kind::Unreadable,
                            true,
                            &p,
                            e.to_string(),
                            Repair::Manual("check the backend".into()),
                        );
                        continue;
                    }
                };
                let w = out.entry(info.writer_id).or_default();
                w.pid = info.pid;
                w.host = info.host;
                let lf = Some(LogFile {
                    dir: d.clone(),
                    name: n.clone(),
                    path: p,
                    size: st.st_size.max(0) as u64,
                    ident: (st.st_dev, st.st_ino),
                    mtime_ns: sys::mtime_ns(&st),
                });
                if info.is_index {
                    w.index = lf;
                } else {
                    w.data = lf;
                }
            } else if top {
                continue;
            } else if name.starts_with(format::TMP_PREFIX) {
                debris::tmp_debris(&d, &n, opts, rep)?;
            } else {
                rep.push(
                    Kind::UnknownFile,
                    false,
                    &p,
                    "not a log; ignored by readers".into(),
                    Repair::None,
                );
            }
        }
    }
    Ok(out)
}

fn check_writer(c: &Container, id: u64, w: &WriterState, truncs: &[u64], opts: &Options, rep: &mut Report) {
    let wname = format!("writer {id:016x} (pid {} on {})", w.pid, w.host);
    let meta = c.meta_path();
    let scan = match w.index.as_ref().map(scan_index) {
        Some(Ok(s)) => Some(s),
        Some(Err(e)) => {
            let p = w.index.as_ref().map(|l| l.path.clone()).unwrap_or_default();
            rep.push(
                Kind::Unreadable,
                true,
                p,
                e.to_string(),
                Repair::Manual("check the backend".into()),
            );
            return;
        }
        None => None,
    };
    let data_size = w.data.as_ref().map(|d| d.size);
    let data_header = w.data.as_ref().and_then(|d| {
        let mut b = [0u8; format::DATA_HEADER_LEN];
        let f = d.dir.open_file(&d.name, Access::Read).ok()?;
        let n = f.pread_full(&mut b, 0).ok()?;
        LogHeader::decode(&d.path, &b[..n], format::DATA_MAGIC).ok()
    });
    let opened_ns = scan
        .as_ref()
        .and_then(|s| s.header.as_ref().and_then(|h| h.as_ref().ok()).map(|h| h.open_ns))
        .or(data_header.map(|h| h.open_ns));
    // Liveness decides whether anything of this writer may be touched.
    let live = if w.opens.is_empty() {
        None
    } else {
        let logs: Vec<(u64, u64)> = w.index.iter().chain(w.data.iter()).map(|l| l.ident).collect();
        Some(writer_liveness(w.pid, &w.host, opened_ns, &logs))
    };
    let may_touch = match &live {
        None | Some(Liveness::Dead(_)) => true,
        Some(Liveness::Unknown(_)) => opts.force_stale,
        Some(Liveness::Live(_)) => false,
    };
    if let Some(Liveness::Live(why)) = &live {
        rep.push(
            Kind::LiveWriter,
            false,
            &meta,
            format!("{wname} is writing: {why}"),
            Repair::None,
        );
        return;
    }
    let ck = WriterCheck {
        c,
        id,
        w,
        wname,
        data_header,
        opened_ns,
        truncs,
        live,
        may_touch,
        opts,
    };
    let mut scan = scan;
    // 1. The index log itself.
    if let (Some(ix), Some(s)) = (&w.index, scan.as_mut()) {
        if fix_index_log(c, id, w, ix, s, data_header, may_touch, opts, rep) {
            scan = None; // the logs held nothing and were removed
        }
    }
    // 2. Logs against each other.
    let records = scan.as_ref().map_or(0, |s| s.records.len());
    rep.records += records as u64;
    check_log_pair(&ck, records, rep);
    if let Some(ds) = data_size {
        check_data_end(&ck, ds, &mut scan, rep);
    }
    if let (Some(s), false) = (scan.as_ref(), w.closes.is_empty() || !w.opens.is_empty()) {
        super::frames::check_frames(&ck, s, rep);
    }
    // 3. Droppings against the index.
    check_droppings(&ck, scan.as_ref(), rep);
}

/// A data log without an index log, or an index log with records but no data log.
fn check_log_pair(ck: &WriterCheck, records: usize, rep: &mut Report) {
    let (w, wname, opts) = (ck.w, &ck.wname, ck.opts);
    match (&w.index, &w.data) {
        (None, Some(d)) => {
            let empty = d.empty_past(format::DATA_HEADER_LEN as u64);
            let repair = if empty && ck.may_touch {
                repair_step(opts, "removed the empty data log", || {
                    d.dir.unlink_opt(&d.name).map(drop)
                })
            } else if empty {
                Repair::Manual("its writer may still be running".into())
            } else {
                Repair::Manual("kept: it holds data that no index refers to".into())
            };
            let msg = format!("{wname}: data log of {} bytes without an index log", d.size);
            rep.push(Kind::OrphanDataLog, true, &d.path, msg, repair);
        }
        (Some(ix), None) if records > 0 => {
            rep.push(
                Kind::OrphanIndexLog,
                true,
                &ix.path,
                format!("{wname}: {records} records but no data log; readers skip them"),
                Repair::Manual("restore the data log".into()),
            );
        }
        _ => {}
    }
}

/// The data log of `ds` bytes against the records of `scan`: records pointing past its end,
/// writes of a framed log not indexed yet ([`recover_frames`]), bytes never indexed.
fn check_data_end(ck: &WriterCheck, ds: u64, scan: &mut Option<IndexScan>, rep: &mut Report) {
    let (w, wname) = (ck.w, &ck.wname);
    let Some(s) = scan.as_ref() else { return };
    // A size that lags (a network file system's cached attributes) is checked against the data
    // itself before records past it are called damage, as readers do.
    let records_end = s
        .records
        .iter()
        .map(|r| r.physical_off.saturating_add(r.length))
        .max()
        .unwrap_or(0);
    let holds = |off: u64| w.data.as_ref().is_some_and(|d| d.holds_byte(off).unwrap_or(false));
    let mut ds = if records_end > ds && holds(records_end - 1) {
        records_end
    } else {
        ds
    };
    let past = s
        .records
        .iter()
        .filter(|r| r.physical_off.saturating_add(r.length) > ds)
        .count();
    if past > 0 {
        let p = w.data.as_ref().map(|d| d.path.clone()).unwrap_or_default();
        let msg = format!("{wname}: {past} records point past the end of the {ds}-byte data log; readers skip them");
        rep.push(
            Kind::RecordPastDataEnd,
            true,
            p,
            msg,
            Repair::Manual("restore the data log".into()),
        );
    }
    let mut used = records_end.max(format::DATA_HEADER_LEN as u64);
    // A framed log is scanned even when its size says that nothing follows the last record:
    // the scan reads past a size that lags, as readers do ([`crate::index::scan_frames`]).
    let framed = ck.data_header.is_some_and(|h| h.flags & format::LOG_FLAG_FRAMED != 0);
    if framed && ds >= used {
        used = recover_frames(ck, ds, used, scan, rep);
        ds = ds.max(used);
    }
    if ds > used && ck.live.as_ref().is_none_or(|l| matches!(l, Liveness::Dead(_))) {
        let p = w.data.as_ref().map(|d| d.path.clone()).unwrap_or_default();
        let msg = format!("{wname}: last {} bytes of the data log were never indexed (writes lost in a crash); readers never see them", ds - used);
        rep.push(Kind::UnindexedData, false, p, msg, Repair::None);
    }
}

/// The writes a framed data log describes past the last one its index log lists (its writer was
/// killed before appending their records, or is still writing): readers already recover them;
/// the repair appends their records to the index log, so that the writer's close record can say
/// what it wrote. Returns where the data log's last whole write ends.
fn recover_frames(ck: &WriterCheck, ds: u64, used: u64, scan: &mut Option<IndexScan>, rep: &mut Report) -> u64 {
    let (w, wname, opts) = (ck.w, &ck.wname, ck.opts);
    let (Some(d), Some(ix), Some(s)) = (&w.data, &w.index, scan.as_mut()) else {
        return used;
    };
    let flags = ck.data_header.map_or(0, |h| h.flags);
    let mut recs = Vec::new();
    let end = match d
        .dir
        .open_file(&d.name, Access::Read)
        .and_then(|f| crate::index::scan_frames(&f, used, ds, flags, &mut recs))
    {
        Ok(end) => end,
        Err(e) => {
            let msg = format!("{wname}: reading the data log's frames: {e}");
            rep.push(
                Kind::Unreadable,
                true,
                &d.path,
                msg,
                Repair::Manual("check the backend".into()),
            );
            return used;
        }
    };
    if recs.is_empty() {
        return used;
    }
    let bytes: u64 = recs.iter().map(|r| r.length).sum();
    let what = format!("appended their {} records to the index log", recs.len());
    let repair = if ck.may_touch {
        repair_step(opts, what, || append_records(ix, s.valid_end, &recs))
    } else {
        Repair::Manual("its writer may still be running (use --force-stale if it is not)".into())
    };
    // What the log holds, whether or not its records are appended yet: the close record
    // the droppings check may write counts these writes too.
    if matches!(repair, Repair::Done(_) | Repair::Possible(_)) {
        s.records.extend(recs.iter().copied());
        rep.records += recs.len() as u64;
    }
    let msg = format!(
        "{wname}: {} writes ({bytes} bytes) in the data log are not in its index log yet (a writer killed before appending their records); readers recover them from the data log",
        recs.len()
    );
    rep.push(Kind::UnindexedData, true, &d.path, msg, repair);
    end
}

/// A permission error (EACCES, EPERM): the reader may not look, which is not damage.
fn is_denied(e: &crate::error::Error) -> bool {
    use rustix::io::Errno;
    [Errno::ACCESS, Errno::PERM]
        .iter()
        .any(|x| x.raw_os_error() == e.raw_errno())
}
