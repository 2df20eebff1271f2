//! Support for the `plfs` tools: the merged index as a table (`map`), the physical files behind a
//! logical file and the reverse (`query`), writing a flattened index (`flatten`), the format
//! version of a file and its metadata droppings.

use crate::error::{Error, Result};
use crate::format::{self, MetaDropping, FLAT_NAME};
use crate::index::{Flattened, IndexState};
use crate::legacy::{LegacyContainer, LegacyIndex};
use crate::namespace::Plfs;
use crate::sys::{self, Dir};
use rustix::io::Errno;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

pub use crate::index::{MapEntry, Write, WriterWrites};

/// The merged index of a logical file, in logical order (holes are absent).
pub fn map(plfs: &Plfs, path: &Path) -> Result<Vec<MapEntry>> {
    // The map reveals where every byte lives and needs every index log: only for a user who may
    // read the file (an unreadable index log is otherwise skipped, and the map comes out empty).
    plfs.access(path, 4)?;
    if let Some(lc) = plfs.legacy(path)? {
        return Ok(LegacyIndex::load(&lc)?.map_entries());
    }
    let loc = plfs.resolve(path)?;
    let c = plfs.container(path)?;
    Ok(IndexState::load(&c, &loc.logical)?.entries())
}

/// A physical file or directory behind a logical file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Physical {
    /// Backend path.
    pub path: PathBuf,
    /// What it is: "container", "marker", "meta", "dropping", "hostdir", "index log", "data log",
    /// "flat index", "shadow dir", "xattrs" or "unknown"; for a file written by PLFS 2.x also
    /// "legacy container", "access file", "version tag" and "metalink".
    pub kind: String,
    /// Size in bytes (0 for directories).
    pub size: u64,
}

fn entry(dir: &Dir, name: &std::ffi::OsStr, kind: &str) -> Physical {
    let size = dir
        .stat_opt(name)
        .ok()
        .flatten()
        .filter(|s| !sys::is_dir(s))
        .map_or(0, |s| s.st_size.max(0) as u64);
    Physical {
        path: dir.sub(name),
        kind: kind.to_string(),
        size,
    }
}

fn list_hostdir(parent: &Dir, name: &std::ffi::OsStr, out: &mut Vec<Physical>) -> Result<()> {
    out.push(entry(parent, name, "hostdir"));
    let Some(d) = parent.open_dir_opt(name)? else {
        return Ok(());
    };
    let mut names = d.list()?;
    names.sort();
    for n in names {
        let kind = match n.to_str().and_then(format::parse_log_name) {
            Some(l) if l.is_index => "index log",
            Some(_) => "data log",
            None => "unknown",
        };
        out.push(entry(&d, &n, kind));
    }
    Ok(())
}

/// Every physical file behind a logical file: the container, its marker, meta droppings,
/// hostdirs and logs (including those on shadow backends) and the flattened index.
pub fn query(plfs: &Plfs, path: &Path) -> Result<Vec<Physical>> {
    if let Some(lc) = plfs.legacy(path)? {
        return query_legacy(&lc);
    }
    let c = plfs.container(path)?;
    let root = c.dir.current_path().unwrap_or_else(|| c.path().to_path_buf());
    let mut out = vec![Physical {
        path: root.clone(),
        kind: "container".into(),
        size: 0,
    }];
    let mut names = c.dir.list()?;
    names.sort();
    for n in names {
        let b = n.as_bytes();
        if b == format::MARKER_NAME.as_bytes() {
            out.push(entry(&c.dir, &n, "marker"));
        } else if b == format::META_DIR.as_bytes() {
            out.push(entry(&c.dir, &n, "meta"));
            if let Some(m) = c.dir.open_dir_opt(&n)? {
                let mut ds = m.list()?;
                ds.sort();
                out.extend(ds.iter().map(|d| entry(&m, d, "dropping")));
            }
        } else if b.starts_with(format::HOSTDIR_PREFIX.as_bytes()) {
            list_hostdir(&c.dir, &n, &mut out)?;
        } else if b == FLAT_NAME.as_bytes() {
            out.push(entry(&c.dir, &n, "flat index"));
        } else if format::xattr::is_xattr_dir(b) {
            out.push(entry(&c.dir, &n, "xattrs"));
        } else if let Some(l) = n.to_str().and_then(format::parse_log_name).filter(|_| c.is_flat()) {
            out.push(entry(&c.dir, &n, if l.is_index { "index log" } else { "data log" }));
        } else if n.to_str().and_then(format::MetaDropping::parse).is_some() && c.is_flat() {
            out.push(entry(&c.dir, &n, "dropping"));
        } else if b == format::compact::JOURNAL_NAME.as_bytes() {
            out.push(entry(&c.dir, &n, "compaction journal"));
        } else if b == format::compact::LOCK_NAME.as_bytes() && c.is_flat() {
            out.push(entry(&c.dir, &n, "compaction lock"));
        } else {
            out.push(entry(&c.dir, &n, "unknown"));
        }
    }
    let srel = c.shadow_rel()?;
    for s in &c.mount.shadows {
        let Some(sd) = s.dir_opt(&srel)? else { continue };
        out.push(Physical {
            path: sd.path().to_path_buf(),
            kind: "shadow dir".into(),
            size: 0,
        });
        let mut hs = sd.list()?;
        hs.sort();
        for h in hs {
            list_hostdir(&sd, &h, &mut out)?;
        }
    }
    Ok(out)
}

/// The physical files of a PLFS 2.x container (hostdirs reached through metalinks included).
fn query_legacy(lc: &LegacyContainer) -> Result<Vec<Physical>> {
    use format::legacy as names;
    let mut out = vec![Physical {
        path: lc.path().to_path_buf(),
        kind: "legacy container".into(),
        size: 0,
    }];
    let mut here = lc.dir.list()?;
    here.sort();
    for n in here {
        let s = n.to_string_lossy();
        let kind = if s == names::ACCESS_NAME {
            "access file"
        } else if s.starts_with(names::VERSION_TAG_PREFIX) {
            "version tag"
        } else if s == names::GLOBAL_INDEX {
            "flat index"
        } else if s == names::META_DIR {
            out.push(entry(&lc.dir, &n, "meta"));
            if let Some(m) = lc.dir.open_dir_opt(&n)? {
                let mut ds = m.list()?;
                ds.sort();
                out.extend(ds.iter().map(|d| entry(&m, d, "dropping")));
            }
            continue;
        } else if names::parse_hostdir(&s).is_some() {
            continue;
        } else if s == names::XATTRS_DIR {
            "xattrs"
        } else {
            "unknown"
        };
        out.push(entry(&lc.dir, &n, kind));
    }
    for h in lc.hostdirs()? {
        if h.metalink() {
            out.push(entry(&lc.dir, std::ffi::OsStr::new(&h.name), "metalink"));
        }
        out.push(Physical {
            path: h.dir.path().to_path_buf(),
            kind: "hostdir".into(),
            size: 0,
        });
        let mut ns = h.dir.list()?;
        ns.sort();
        for n in ns {
            let kind = match n.to_str().and_then(names::Dropping::parse) {
                Some(d) if d.is_index => "index log",
                Some(_) => "data log",
                None => "unknown",
            };
            out.push(entry(&h.dir, &n, kind));
        }
    }
    Ok(out)
}

/// The logical file that a backend path (a container, or any dropping in it, on a canonical or
/// shadow backend) belongs to.
pub fn reverse_query(plfs: &Plfs, backend_path: &Path) -> Result<PathBuf> {
    let norm = crate::config::normalize_path(backend_path)
        .ok_or_else(|| Error::InvalidArgument(format!("{}: must be an absolute path", backend_path.display())))?;
    for m in plfs.mounts() {
        for b in &m.canonical {
            let Ok(rel) = norm.strip_prefix(&b.path) else { continue };
            // Walk up from the path to the first directory that is a container.
            let root = b.root()?;
            let mut cur = rel.to_path_buf();
            loop {
                if !cur.as_os_str().is_empty() && root.stat_beneath_opt(&cur.join(format::MARKER_NAME))?.is_some() {
                    return Ok(m.cfg.mount_point.join(&cur));
                }
                if !cur.pop() {
                    break;
                }
            }
        }
        for s in &m.shadows {
            let Ok(rel) = norm.strip_prefix(s.path.join(format::SHADOW_ROOT)) else {
                continue;
            };
            let cid = rel
                .components()
                .next()
                .and_then(|c| u128::from_str_radix(&c.as_os_str().to_string_lossy(), 16).ok())
                .ok_or_else(|| Error::NotFound(backend_path.to_path_buf()))?;
            for b in &m.canonical {
                if let Some(found) = find_cid(b.root()?, Path::new(""), cid)? {
                    return Ok(m.cfg.mount_point.join(found));
                }
            }
            return Err(Error::NotFound(backend_path.to_path_buf()));
        }
    }
    Err(Error::InvalidArgument(format!(
        "{}: not inside any backend of the configuration",
        backend_path.display()
    )))
}

/// Searches a backend tree for the container whose id is `cid`; returns its path relative to
/// the backend root.
fn find_cid(root: &Dir, rel: &Path, cid: u128) -> Result<Option<PathBuf>> {
    let Some(dir) = root.open_dir_beneath_opt(rel)? else {
        return Ok(None);
    };
    for n in dir.list()? {
        if n.as_bytes() == format::SHADOW_ROOT.as_bytes() {
            continue;
        }
        let Some(st) = dir.stat_opt(&n)? else { continue };
        if !sys::is_dir(&st) {
            continue;
        }
        let sub = rel.join(&n);
        let d = dir.open_dir(&n)?;
        if d.stat_opt(format::MARKER_NAME)?.is_some() {
            if crate::container::cid_of(&d).is_ok_and(|c| c == cid) {
                return Ok(Some(sub));
            }
        } else if let Some(f) = find_cid(root, &sub, cid)? {
            return Ok(Some(f));
        }
    }
    Ok(None)
}

/// Result of [`flatten`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlattenReport {
    /// Extents in the flattened index (plain pieces plus compressed patterns).
    pub extents: usize,
    /// Data logs it refers to.
    pub chunks: usize,
    /// Where it was written.
    pub path: PathBuf,
}

/// Writes a flattened index for a closed file. Refused while a writer has the file open (the
/// index could not be complete).
pub fn flatten(plfs: &Plfs, path: &Path) -> Result<FlattenReport> {
    let loc = plfs.resolve(path)?;
    let c = plfs.container(path)?;
    let busy = |why: &str| Error::errno(Errno::BUSY, format!("{}: {why}", loc.logical.display()));
    let f = match crate::index::flatten(&c, &loc.logical, None)? {
        Flattened::Written(f) => f,
        Flattened::Open => return Err(busy("open for writing; flatten it after the writers close")),
        Flattened::Changed => return Err(busy("changed while flattening; try again")),
    };
    Ok(FlattenReport {
        extents: f.pieces.len() + f.patterns.len(),
        chunks: f.chunks.len(),
        path: c.dir.sub(FLAT_NAME),
    })
}

/// The format version a file was written with (from its marker).
pub fn file_version(plfs: &Plfs, path: &Path) -> Result<u32> {
    plfs.container(path)?.read_marker().map(|m| m.version)
}

/// The marker of a file's container (its format version, id and creation time).
pub fn marker(plfs: &Plfs, path: &Path) -> Result<format::Marker> {
    plfs.container(path)?.read_marker()
}

/// The metadata droppings of a file's container (`meta/`).
pub fn droppings(plfs: &Plfs, path: &Path) -> Result<Vec<MetaDropping>> {
    plfs.container(path)?.list_meta()
}

/// Every write of a logical file, writer by writer, as the index logs record it: overwritten
/// and truncated-away writes included (`plfs stats`). A file written by PLFS 2.x has no
/// per-write records left once merged here: its extents stand for its writes, one writer per
/// host and pid (writer id 0, no open or close times).
pub fn writes(plfs: &Plfs, path: &Path) -> Result<Vec<WriterWrites>> {
    plfs.access(path, 4)?;
    if let Some(lc) = plfs.legacy(path)? {
        let mut by: Vec<WriterWrites> = Vec::new();
        for e in LegacyIndex::load(&lc)?.map_entries() {
            let w = Write {
                logical: e.logical,
                length: e.length,
                ts: e.ts,
            };
            match by.iter_mut().find(|x| x.pid == e.pid && x.host == e.host) {
                Some(x) => x.writes.push(w),
                None => by.push(WriterWrites {
                    writer_id: 0,
                    pid: e.pid,
                    host: e.host,
                    open_ns: None,
                    close_ns: None,
                    last_end_ns: None,
                    writes: vec![w],
                }),
            }
        }
        for x in &mut by {
            x.writes.sort_by_key(|w| w.ts);
        }
        by.sort_by(|a, b| (&a.host, a.pid).cmp(&(&b.host, b.pid)));
        return Ok(by);
    }
    crate::index::writer_writes(&plfs.container(path)?)
}
