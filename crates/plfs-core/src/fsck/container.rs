//! fsck of one container: its marker, `meta/` droppings, every writer's logs (in the container
//! and on shadow backends), and the consistency between what the droppings say and what the
//! index logs hold. Repairs follow the invariant in the parent module.

use super::liveness::{writer_liveness, Liveness};
use super::{repair_step, Kind, Options, Repair, Report};
use crate::container::{list_fd, Container};
use crate::error::{Error, Result};
use crate::format::{self, LogHeader, MetaDropping, WriteRecord};
use crate::fs::Mount;
use crate::sys;
use rustix::fd::OwnedFd;
use rustix::fs::{AtFlags, OFlags};
use std::collections::BTreeMap;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// An index or data log found in a hostdir.
#[derive(Debug, Clone)]
pub(super) struct LogFile {
    pub path: PathBuf,
    pub size: u64,
}

/// What one writer left in the container.
#[derive(Debug, Default)]
struct WriterState {
    pid: u32,
    host: String,
    index: Option<LogFile>,
    data: Option<LogFile>,
    opens: Vec<MetaDropping>,
    closes: Vec<MetaDropping>,
}

/// A decoded index log.
#[derive(Debug)]
pub(super) struct IndexScan {
    /// The header, or why it is unusable (`None` when the file is shorter than a header).
    pub header: Option<std::result::Result<LogHeader, String>>,
    pub records: Vec<WriteRecord>,
    /// File offset just past the last valid record.
    pub valid_end: u64,
    pub tail_error: Option<String>,
    /// For a bad (not torn) tail: whether a valid record follows the bad one.
    pub resyncs: bool,
}

/// Reads and decodes a whole index log.
pub(super) fn scan_index(path: &Path) -> Result<IndexScan> {
    let bytes = sys::read_file(path)?;
    let hl = format::INDEX_HEADER_LEN;
    if bytes.len() < hl {
        return Ok(IndexScan {
            header: None,
            records: Vec::new(),
            valid_end: 0,
            tail_error: None,
            resyncs: false,
        });
    }
    let header = LogHeader::decode(path, &bytes, format::INDEX_MAGIC).map_err(|e| e.to_string());
    let mut dec = format::decode_records(&bytes[hl..]);
    // A pattern record stands for a run of writes: fsck reasons about the writes themselves.
    for p in std::mem::take(&mut dec.patterns) {
        for (i, ts) in p.ts.iter().enumerate() {
            let i = i as u64;
            dec.records.push(WriteRecord {
                logical_off: p.logical_start + i * p.stride,
                length: p.length,
                physical_off: p.physical_start + i * p.length,
                ts: *ts,
                data_crc: 0,
            });
        }
    }
    let resyncs = match &dec.tail_error {
        Some(e) if !e.starts_with("torn") => {
            let rest = &bytes[hl + dec.valid_len..];
            (1..rest.len()).any(|i| {
                let d = format::decode_records(&rest[i..]);
                !d.records.is_empty() || !d.patterns.is_empty()
            })
        }
        _ => false,
    };
    Ok(IndexScan {
        header: Some(header),
        records: dec.records,
        valid_end: (hl + dec.valid_len) as u64,
        tail_error: dec.tail_error,
        resyncs,
    })
}

/// Opens the container directory at `path` and builds a [`Container`] for it without
/// requiring a `cid` dropping (which fsck may have to restore).
pub(super) fn check(mount: &Arc<Mount>, backend: usize, path: &Path, opts: &Options, rep: &mut Report) -> Result<u128> {
    let dir = sys::open(path, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW, 0)?;
    let st = sys::fstat(&dir, path)?;
    rep.containers += 1;
    let marker_path = path.join(format::MARKER_NAME);
    let marker = sys::read_file(&marker_path).and_then(|b| format::Marker::decode(&marker_path, &b));
    let meta_dir = path.join(format::META_DIR);
    let meta_names = match sys::read_dir(&meta_dir) {
        Ok(n) => n,
        Err(Error::Io {
            errno: rustix::io::Errno::NOENT,
            ..
        }) => Vec::new(),
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
    let mut cids = Vec::new();
    let mut droppings = Vec::new();
    for n in &meta_names {
        let name = n.to_string_lossy();
        if let Some(hex) = name.strip_prefix("cid.") {
            if let Ok(v) = u128::from_str_radix(hex, 16) {
                cids.push(v);
                continue;
            }
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
    let cid = resolve_cid(path, &marker, &cids, opts, rep);
    if let Err(e) = &marker {
        let repair = match cid {
            Some(cid) => repair_step(opts, "rewrote the marker from the cid dropping", || {
                rewrite_marker(&marker_path, cid)
            }),
            None => Repair::Manual("no cid is known either; the container id cannot be restored".into()),
        };
        rep.push(Kind::BadMarker, true, &marker_path, e.to_string(), repair);
    }
    let c = Container {
        mount: mount.clone(),
        backend,
        path: path.to_path_buf(),
        dir,
        cid: cid.unwrap_or(0),
        ident: (st.st_dev, st.st_ino),
    };
    check_root_entries(&c, opts, rep)?;
    let writers = collect_writers(&c, cid.is_some(), opts, rep)?;
    let has_truncs = droppings.iter().any(|d| matches!(d, MetaDropping::Trunc { .. }));
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
        rep.writers += 1;
        check_writer(&c, *id, w, has_truncs, opts, rep);
    }
    Ok(c.cid)
}

fn resolve_cid(
    path: &Path,
    marker: &Result<format::Marker>,
    cids: &[u128],
    opts: &Options,
    rep: &mut Report,
) -> Option<u128> {
    let meta = path.join(format::META_DIR);
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
                sys::mkdir_exist_ok(&meta, 0o755)?;
                sys::touch(&meta.join(format!("cid.{m:032x}")), 0o644)
            });
            rep.push(
                Kind::MissingCid,
                true,
                &meta,
                "no cid dropping: readers cannot open the file".into(),
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
                        for c in many.iter().filter(|c| **c != k) {
                            sys::unlink_missing_ok(&meta.join(format!("cid.{c:032x}")))?;
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

/// Rewrites a marker for container id `cid`, keeping the old file's mode, owner and times.
fn rewrite_marker(path: &Path, cid: u128) -> Result<()> {
    let old = sys::lstat_opt(path)?;
    let m = format::Marker {
        version: format::FORMAT_VERSION,
        container_id: cid,
        created_ns: crate::clock::now_ns(),
    };
    let mode = old.as_ref().map_or(0o644, |s| s.st_mode & 0o7777);
    sys::write_atomic(path, &m.encode(), mode)?;
    sys::chmod(path, mode)?;
    if let Some(s) = old {
        sys::lchown(path, s.st_uid, s.st_gid)?;
        sys::utimens(
            path,
            sys::TimeSpec::At(s.st_atime, s.st_atime_nsec as i64),
            sys::TimeSpec::At(s.st_mtime, s.st_mtime_nsec as i64),
            true,
        )?;
    }
    Ok(())
}

/// Entries at the container's top level: debris and unknown files, and the flattened index.
fn check_root_entries(c: &Container, opts: &Options, rep: &mut Report) -> Result<()> {
    for n in list_fd(&c.dir, &c.path)? {
        let b = n.as_bytes();
        let p = c.path.join(&n);
        if b == format::MARKER_NAME.as_bytes() || b == format::META_DIR.as_bytes() {
            continue;
        }
        if b.starts_with(format::HOSTDIR_PREFIX.as_bytes()) {
            let is_dir = sys::lstat_opt(&p)?
                .is_some_and(|s| sys::FileType::from_raw_mode(s.st_mode) == sys::FileType::Directory);
            if !is_dir {
                rep.push(
                    Kind::UnknownFile,
                    false,
                    &p,
                    "named like a hostdir but not a directory".into(),
                    Repair::None,
                );
            }
        } else if b == crate::index::FLAT_NAME.as_bytes() {
            let r = sys::read_file(&p).and_then(|bytes| crate::flat::Flat::decode(&p, &bytes).map(drop));
            if let Err(e) = r {
                let repair = repair_step(opts, "removed it (a cache: readers rebuild from the logs)", || {
                    sys::unlink_missing_ok(&p)
                });
                rep.push(Kind::BadFlatIndex, true, &p, e.to_string(), repair);
            }
        } else if b.starts_with(format::TMP_PREFIX.as_bytes()) {
            super::walk::tmp_debris(&p, opts, rep)?;
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
    opts: &Options,
    rep: &mut Report,
) -> Result<BTreeMap<u64, WriterState>> {
    let mut out: BTreeMap<u64, WriterState> = BTreeMap::new();
    let mut dirs: Vec<(PathBuf, OwnedFd)> = if have_cid {
        c.hostdirs()?
    } else {
        // Without a cid only the hostdirs inside the container can be found.
        let mut v = Vec::new();
        for n in list_fd(&c.dir, &c.path)? {
            if n.as_bytes().starts_with(format::HOSTDIR_PREFIX.as_bytes()) {
                let p = c.path.join(&n);
                if let Ok(fd) = sys::open(&p, OFlags::RDONLY | OFlags::DIRECTORY, 0) {
                    v.push((p, fd));
                }
            }
        }
        v
    };
    if have_cid {
        super::walk::stranded_shadow(c, &dirs, opts, rep)?;
        if opts.repair {
            dirs = c.hostdirs()?;
        }
    }
    for (dpath, fd) in &dirs {
        let names = match list_fd(fd, dpath) {
            Ok(n) => n,
            Err(e) => {
                rep.push(
                    Kind::Unreadable,
                    true,
                    dpath,
                    e.to_string(),
                    Repair::Manual("check permissions".into()),
                );
                continue;
            }
        };
        for n in names {
            let p = dpath.join(&n);
            let name = n.to_string_lossy();
            if let Some(info) = format::parse_log_name(&name) {
                let size = match rustix::fs::statat(fd, n.as_os_str(), AtFlags::SYMLINK_NOFOLLOW) {
                    Ok(st) => st.st_size as u64,
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
                let lf = Some(LogFile { path: p, size });
                if info.is_index {
                    w.index = lf;
                } else {
                    w.data = lf;
                }
            } else if name.starts_with(format::TMP_PREFIX) {
                super::walk::tmp_debris(&p, opts, rep)?;
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

/// The close record a writer would have written, computed from its index log.
fn computed_close(id: u64, open_ts: u64, scan: &IndexScan, data: Option<&LogFile>) -> MetaDropping {
    let eof = scan.records.iter().map(|r| r.logical_off + r.length).max().unwrap_or(0);
    let bytes = scan.records.iter().map(|r| r.length).sum();
    let close_ts = scan.records.iter().map(|r| r.ts).max().unwrap_or(open_ts).max(open_ts);
    let mtime_ns = data
        .and_then(|d| sys::lstat_opt(&d.path).ok().flatten())
        .map_or(close_ts, |s| {
            (s.st_mtime as u64).saturating_mul(1_000_000_000) + s.st_mtime_nsec
        });
    MetaDropping::Close {
        writer_id: id,
        open_ts,
        close_ts,
        eof,
        bytes,
        mtime_ns,
    }
}

fn check_writer(c: &Container, id: u64, w: &WriterState, has_truncs: bool, opts: &Options, rep: &mut Report) {
    let wname = format!("writer {id:016x} (pid {} on {})", w.pid, w.host);
    let meta = c.path.join(format::META_DIR);
    let scan = match w.index.as_ref().map(|l| scan_index(&l.path)) {
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
        let fd = sys::open(&d.path, OFlags::RDONLY, 0).ok()?;
        let n = sys::pread_full(&fd, &d.path, &mut b, 0).ok()?;
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
        let logs: Vec<PathBuf> = w.index.iter().chain(w.data.iter()).map(|l| l.path.clone()).collect();
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
    match (&w.index, &w.data) {
        (None, Some(d)) => {
            let empty = d.size <= format::DATA_HEADER_LEN as u64;
            let repair = if empty && may_touch {
                repair_step(opts, "removed the empty data log", || sys::unlink_missing_ok(&d.path))
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
    if let (Some(s), Some(ds)) = (&scan, data_size) {
        let past = s
            .records
            .iter()
            .filter(|r| r.physical_off.saturating_add(r.length) > ds)
            .count();
        if past > 0 {
            let p = w.data.as_ref().map(|d| d.path.clone()).unwrap_or_default();
            let msg =
                format!("{wname}: {past} records point past the end of the {ds}-byte data log; readers skip them");
            rep.push(
                Kind::RecordPastDataEnd,
                true,
                p,
                msg,
                Repair::Manual("restore the data log".into()),
            );
        }
        let used = s
            .records
            .iter()
            .map(|r| r.physical_off.saturating_add(r.length))
            .max()
            .unwrap_or(0)
            .max(format::DATA_HEADER_LEN as u64);
        if ds > used && live.as_ref().is_none_or(|l| matches!(l, Liveness::Dead(_))) {
            let p = w.data.as_ref().map(|d| d.path.clone()).unwrap_or_default();
            let msg = format!("{wname}: last {} bytes of the data log were never indexed (writes lost in a crash); readers never see them", ds - used);
            rep.push(Kind::UnindexedData, false, p, msg, Repair::None);
        }
    }
    // 3. Droppings against the index.
    check_droppings(
        c,
        id,
        w,
        &wname,
        scan.as_ref(),
        opened_ns,
        has_truncs,
        &live,
        may_touch,
        opts,
        rep,
    );
}

#[allow(clippy::too_many_arguments)]
fn fix_index_log(
    c: &Container,
    id: u64,
    w: &WriterState,
    ix: &LogFile,
    s: &mut IndexScan,
    data_header: Option<LogHeader>,
    may_touch: bool,
    opts: &Options,
    rep: &mut Report,
) -> bool {
    let _ = c;
    let guard = |opts: &Options, what: &str, f: &mut dyn FnMut() -> Result<()>| {
        if may_touch {
            repair_step(opts, what, f)
        } else {
            Repair::Manual("its writer may still be running (use --force-stale if it is not)".into())
        }
    };
    match &s.header {
        None => {
            let data_empty = w.data.as_ref().is_none_or(|d| d.size <= format::DATA_HEADER_LEN as u64);
            let mut paths = vec![ix.path.clone()];
            paths.extend(w.data.iter().map(|d| d.path.clone()));
            let h = LogHeader {
                magic: format::INDEX_MAGIC,
                writer_id: id,
                open_ns: data_header.map_or(0, |h| h.open_ns),
                pid: w.pid,
                flags: data_header.map_or(0, |h| h.flags),
            };
            let repair = if data_empty {
                guard(opts, "removed the logs (they hold no data)", &mut || {
                    paths.iter().try_for_each(|p| sys::unlink_missing_ok(p))
                })
            } else {
                guard(opts, "wrote a valid header (the log has no records)", &mut || {
                    rewrite_index(&ix.path, Some(&h.encode()), format::INDEX_HEADER_LEN as u64)
                })
            };
            let done = matches!(repair, Repair::Done(_));
            let msg = format!(
                "index log of writer {id:016x} is {} bytes, shorter than its header",
                ix.size
            );
            rep.push(Kind::EmptyLogs, true, &ix.path, msg, repair);
            if done && !data_empty {
                s.header = Some(Ok(h));
            }
            return done && data_empty;
        }
        Some(Err(e)) => {
            let usable = data_header.filter(|h| h.writer_id == id);
            let repair = match usable {
                Some(dh) if !s.records.is_empty() => {
                    let h = LogHeader {
                        magic: format::INDEX_MAGIC,
                        ..dh
                    };
                    guard(opts, "rewrote the header from the data log's header", &mut || {
                        rewrite_index(&ix.path, Some(&h.encode()), ix.size)
                    })
                }
                _ => Repair::Manual("no valid data log header to rebuild it from".into()),
            };
            let msg = format!("{e}; readers skip this log ({} records behind it)", s.records.len());
            rep.push(Kind::BadIndexHeader, true, &ix.path, msg, repair);
            if !matches!(rep.findings.last().map(|f| &f.repair), Some(Repair::Done(_))) {
                return false;
            }
            s.header = Some(Ok(LogHeader {
                magic: format::INDEX_MAGIC,
                ..usable.expect("repaired from it")
            }));
        }
        Some(Ok(_)) => {}
    }
    let Some(err) = s.tail_error.clone() else { return false };
    let cut = s.valid_end;
    let (kind, repair) = if err.starts_with("torn") {
        let r = guard(opts, &format!("truncated the log to {cut} bytes"), &mut || {
            rewrite_index(&ix.path, None, cut)
        });
        (Kind::TornIndexTail, r)
    } else if !s.resyncs {
        let r = guard(opts, &format!("truncated the log to {cut} bytes"), &mut || {
            rewrite_index(&ix.path, None, cut)
        });
        (Kind::CorruptIndexTail, r)
    } else {
        (
            Kind::CorruptIndexMiddle,
            Repair::Manual("valid records follow the bad one; truncating would lose them".into()),
        )
    };
    let msg = format!("{err}: {} bytes after the last valid record", ix.size - cut);
    rep.push(kind, true, &ix.path, msg, repair);
    if matches!(rep.findings.last().map(|f| &f.repair), Some(Repair::Done(_))) {
        s.tail_error = None;
    }
    false
}

/// Writes `header` at offset 0 (if given) and truncates the index log to `len` bytes.
fn rewrite_index(path: &Path, header: Option<&[u8]>, len: u64) -> Result<()> {
    let fd = sys::open(path, OFlags::WRONLY, 0)?;
    if let Some(h) = header {
        sys::pwrite_all(&fd, path, h, 0)?;
    }
    sys::ftruncate(&fd, path, len)?;
    sys::fsync(&fd, path)
}

#[allow(clippy::too_many_arguments)]
fn check_droppings(
    c: &Container,
    id: u64,
    w: &WriterState,
    wname: &str,
    scan: Option<&IndexScan>,
    opened_ns: Option<u64>,
    has_truncs: bool,
    live: &Option<Liveness>,
    may_touch: bool,
    opts: &Options,
    rep: &mut Report,
) {
    let meta = c.path.join(format::META_DIR);
    let records = scan.map_or(0, |s| s.records.len());
    let index_ok = scan.is_some_and(|s| matches!(s.header, Some(Ok(_))) && s.tail_error.is_none());
    let open_ts = w
        .closes
        .iter()
        .find_map(|d| match d {
            MetaDropping::Close { open_ts, .. } => Some(*open_ts),
            _ => None,
        })
        .or(opened_ns)
        .unwrap_or_else(|| scan.and_then(|s| s.records.iter().map(|r| r.ts).min()).unwrap_or(1) - 1);
    let want = scan.map(|s| computed_close(id, open_ts, s, w.data.as_ref()));
    // Replaces the writer's close records by `new` (if any) and removes its open records.
    let settle = |new: Option<&MetaDropping>, drop_opens: bool| -> Result<()> {
        if let Some(d) = new {
            if !w.closes.contains(d) {
                c.add_meta(d)?;
            }
            if let MetaDropping::Close { mtime_ns, .. } = d {
                c.bump_mtime(*mtime_ns)?;
            }
        }
        for old in w.closes.iter().filter(|o| Some(*o) != new) {
            c.remove_meta(old)?;
        }
        if drop_opens {
            for o in &w.opens {
                c.remove_meta(o)?;
            }
        }
        Ok(())
    };
    let new_close = want.clone().filter(|_| records > 0);
    if !w.opens.is_empty() {
        let (kind, why) = match live {
            Some(Liveness::Dead(why)) => (
                if w.closes.is_empty() {
                    Kind::StaleOpen
                } else {
                    Kind::OpenAndClosed
                },
                why.clone(),
            ),
            Some(Liveness::Unknown(why)) => (Kind::UnverifiableOpen, why.clone()),
            _ => return,
        };
        let repair = if !may_touch {
            Repair::Manual("rerun with --force-stale if the writer is known to be dead".into())
        } else if !w.closes.is_empty() {
            repair_step(opts, "removed the open record (the writer had closed)", || {
                settle(None, true)
            })
        } else if scan.is_some() && !index_ok {
            Repair::Manual("the index log must be repaired first".into())
        } else {
            let what = match &new_close {
                Some(d) => format!("wrote {} from the index log and removed the open record", d.name()),
                None => "removed the open record (the writer wrote nothing)".into(),
            };
            repair_step(opts, what, || settle(new_close.as_ref(), true))
        };
        let msg = format!(
            "{wname} left an open record: {why}; stat takes the slow path and truncate-to-zero cannot reclaim space"
        );
        rep.push(kind, true, &meta, msg, repair);
        return;
    }
    match (w.closes.len(), &new_close) {
        (0, Some(d)) => {
            let repair = if index_ok {
                repair_step(opts, format!("wrote {}", d.name()), || settle(Some(d), false))
            } else {
                Repair::Manual("the index log must be repaired first".into())
            };
            let msg = format!("{wname}: {records} indexed writes but no open or close record; stat misses them");
            rep.push(Kind::MissingClose, true, &meta, msg, repair);
        }
        (0, None) => {}
        (n, _) if scan.is_none() => {
            let any_bytes = w
                .closes
                .iter()
                .any(|d| matches!(d, MetaDropping::Close { bytes, .. } if *bytes > 0));
            if any_bytes {
                let msg =
                    format!("{wname}: {n} close record(s) but no index log; stat reports data that reads cannot find");
                let repair = Repair::Manual("restore the logs, or remove the close record to match the data".into());
                rep.push(Kind::CloseWithoutLogs, true, &meta, msg, repair);
            }
        }
        (n, _) => {
            let Some(want) = want.as_ref() else { return };
            let agrees = |d: &MetaDropping| match (d, want) {
                (
                    MetaDropping::Close { eof, bytes, .. },
                    MetaDropping::Close {
                        eof: weof,
                        bytes: wbytes,
                        ..
                    },
                ) => bytes == wbytes && (eof == weof || (has_truncs && eof <= weof)),
                _ => false,
            };
            if n == 1 && agrees(&w.closes[0]) {
                return;
            }
            if !index_ok {
                let msg = format!("{wname}: close record(s) cannot be checked against a damaged index log");
                rep.push(
                    Kind::ContradictoryClose,
                    true,
                    &meta,
                    msg,
                    Repair::Manual("repair the index log first".into()),
                );
                return;
            }
            // Keep one that agrees if there is one, else replace with the computed record
            // (keeping the original open and close timestamps).
            let keep = w
                .closes
                .iter()
                .find(|d| agrees(d))
                .cloned()
                .or_else(|| match (&w.closes[0], want) {
                    (
                        MetaDropping::Close {
                            open_ts,
                            close_ts,
                            mtime_ns,
                            ..
                        },
                        MetaDropping::Close { eof, bytes, .. },
                    ) => Some(MetaDropping::Close {
                        writer_id: id,
                        open_ts: *open_ts,
                        close_ts: *close_ts,
                        eof: *eof,
                        bytes: *bytes,
                        mtime_ns: *mtime_ns,
                    }),
                    _ => None,
                });
            let keep = keep.filter(|_| records > 0);
            let what = match &keep {
                Some(k) => format!("kept {} only", k.name()),
                None => "removed the close records (the index holds no writes)".into(),
            };
            let repair = repair_step(opts, what, || settle(keep.as_ref(), false));
            let names: Vec<String> = w.closes.iter().map(MetaDropping::name).collect();
            let msg = format!(
                "{wname}: close record(s) {} disagree with the index log ({records} records, {} bytes)",
                names.join(", "),
                scan.map_or(0, |s| s.records.iter().map(|r| r.length).sum::<u64>())
            );
            rep.push(Kind::ContradictoryClose, true, &meta, msg, repair);
        }
    }
}

/// Reads a file's directory mode and owner for a recreated marker.
pub(super) fn dir_mode_owner(path: &Path) -> Result<(u32, u32, u32)> {
    let st = sys::lstat(path)?;
    Ok((st.st_mode & 0o7777, st.st_uid, st.st_gid))
}
