//! Support for the `plfs` tools: the merged index as a table (`map`), the physical files behind a
//! logical file and the reverse (`query`), writing a flattened index (`flatten`) and the format
//! version of a file.

use crate::container::{list_fd, Container};
use crate::error::{Error, Result};
use crate::flat;
use crate::format;
use crate::fs::Plfs;
use crate::index::{IndexState, FLAT_NAME};
use crate::sys;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// One extent of the merged index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapEntry {
    /// Logical offset.
    pub logical: u64,
    /// Length.
    pub length: u64,
    /// The data log holding the bytes.
    pub data_log: PathBuf,
    /// Offset in the data log.
    pub physical: u64,
    /// Writer id.
    pub writer_id: u64,
    /// Writer pid.
    pub pid: u32,
    /// Writer host.
    pub host: String,
    /// Timestamp of the write.
    pub ts: u64,
}

/// The merged index of a logical file, in logical order (holes are absent).
pub fn map(plfs: &Plfs, path: &Path) -> Result<Vec<MapEntry>> {
    // The map reveals where every byte lives and needs every index log: only for a user who may
    // read the file (an unreadable index log is otherwise skipped, and the map comes out empty).
    plfs.access(path, 4)?;
    let loc = plfs.resolve(path)?;
    let c = plfs.container(path)?;
    let s = IndexState::load(&c, &loc.logical)?;
    Ok(s.map
        .pieces()
        .into_iter()
        .map(|(o, p)| {
            let ch = &s.chunks[p.chunk as usize];
            MapEntry {
                logical: o,
                length: p.len,
                data_log: s.chunk_path(p.chunk),
                physical: p.phys,
                writer_id: ch.writer_id,
                pid: ch.pid,
                host: ch.host.clone(),
                ts: p.key.ts,
            }
        })
        .collect())
}

/// A physical file or directory behind a logical file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Physical {
    /// Backend path.
    pub path: PathBuf,
    /// What it is: "container", "marker", "meta", "dropping", "hostdir", "index log", "data log",
    /// "flat index", "shadow dir" or "unknown".
    pub kind: String,
    /// Size in bytes (0 for directories).
    pub size: u64,
}

fn entry(path: PathBuf, kind: &str) -> Physical {
    let size = sys::lstat_opt(&path)
        .ok()
        .flatten()
        .filter(|s| sys::FileType::from_raw_mode(s.st_mode) != sys::FileType::Directory)
        .map_or(0, |s| s.st_size as u64);
    Physical {
        path,
        kind: kind.to_string(),
        size,
    }
}

fn list_hostdir(dir: &Path, out: &mut Vec<Physical>) -> Result<()> {
    out.push(entry(dir.to_path_buf(), "hostdir"));
    let mut names = sys::read_dir_opt(dir)?;
    names.sort();
    for n in names {
        let kind = match n.to_str().and_then(format::parse_log_name) {
            Some(l) if l.is_index => "index log",
            Some(_) => "data log",
            None => "unknown",
        };
        out.push(entry(dir.join(n), kind));
    }
    Ok(())
}

/// Every physical file behind a logical file: the container, its marker, meta droppings,
/// hostdirs and logs (including those on shadow backends) and the flattened index.
pub fn query(plfs: &Plfs, path: &Path) -> Result<Vec<Physical>> {
    let c = plfs.container(path)?;
    let root = c.current_path();
    let mut out = vec![entry(root.clone(), "container")];
    let mut names = list_fd(&c.dir, &root)?;
    names.sort();
    for n in names {
        let p = root.join(&n);
        let b = n.as_bytes();
        if b == format::MARKER_NAME.as_bytes() {
            out.push(entry(p, "marker"));
        } else if b == format::META_DIR.as_bytes() {
            out.push(entry(p.clone(), "meta"));
            let mut ds = sys::read_dir_opt(&p)?;
            ds.sort();
            out.extend(ds.into_iter().map(|d| entry(p.join(d), "dropping")));
        } else if b.starts_with(format::HOSTDIR_PREFIX.as_bytes()) {
            list_hostdir(&p, &mut out)?;
        } else if b == FLAT_NAME.as_bytes() {
            out.push(entry(p, "flat index"));
        } else {
            out.push(entry(p, "unknown"));
        }
    }
    for s in &c.mount.shadows {
        let sd = c.shadow_dir(s);
        if sys::lstat_opt(&sd)?.is_none() {
            continue;
        }
        out.push(entry(sd.clone(), "shadow dir"));
        let mut hs = sys::read_dir_opt(&sd)?;
        hs.sort();
        for h in hs {
            list_hostdir(&sd.join(h), &mut out)?;
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
        for (i, root) in m.canonical.iter().enumerate() {
            let Ok(rel) = norm.strip_prefix(root) else { continue };
            // Walk up from the path to the first directory that is a container.
            let mut cur = rel.to_path_buf();
            loop {
                if !cur.as_os_str().is_empty() && sys::lstat_opt(&root.join(&cur).join(format::MARKER_NAME))?.is_some()
                {
                    let _ = i;
                    return Ok(m.cfg.mount_point.join(&cur));
                }
                if !cur.pop() {
                    break;
                }
            }
        }
        for sroot in &m.shadows {
            let Ok(rel) = norm.strip_prefix(sroot.join(format::SHADOW_ROOT)) else {
                continue;
            };
            let cid = rel
                .components()
                .next()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .unwrap_or_default();
            for root in &m.canonical {
                if let Some(found) = find_cid(root, &format!("cid.{cid}"))? {
                    let rel = found.strip_prefix(root).unwrap_or(&found);
                    return Ok(m.cfg.mount_point.join(rel));
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

/// Searches a backend tree for the container whose `meta/` holds `cid_name`.
fn find_cid(dir: &Path, cid_name: &str) -> Result<Option<PathBuf>> {
    for n in sys::read_dir_opt(dir)? {
        let p = dir.join(&n);
        if n.as_bytes() == format::SHADOW_ROOT.as_bytes() {
            continue;
        }
        match sys::lstat_opt(&p)? {
            Some(st) if sys::FileType::from_raw_mode(st.st_mode) == sys::FileType::Directory => {
                if sys::lstat_opt(&p.join(format::MARKER_NAME))?.is_some() {
                    if sys::lstat_opt(&p.join(format::META_DIR).join(cid_name))?.is_some() {
                        return Ok(Some(p));
                    }
                } else if let Some(f) = find_cid(&p, cid_name)? {
                    return Ok(Some(f));
                }
            }
            _ => {}
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
    let sig = flat::signature(&c.list_meta()?).ok_or_else(|| {
        Error::errno(
            rustix::io::Errno::BUSY,
            format!(
                "{}: open for writing; flatten it after the writers close",
                loc.logical.display()
            ),
        )
    })?;
    let mut s = IndexState::empty(1);
    s.refresh(&c)?;
    if flat::signature(&c.list_meta()?) != Some(sig) {
        return Err(Error::errno(
            rustix::io::Errno::BUSY,
            format!("{}: changed while flattening; try again", loc.logical.display()),
        ));
    }
    let f = s.to_flat(&c, &loc.logical, sig);
    let out = c.current_path().join(FLAT_NAME);
    sys::write_atomic(&out, &f.encode(), 0o644)?;
    Ok(FlattenReport {
        extents: f.pieces.len() + f.patterns.len(),
        chunks: f.chunks.len(),
        path: out,
    })
}

/// The format version a file was written with (from its marker).
pub fn file_version(plfs: &Plfs, path: &Path) -> Result<u32> {
    let c: Container = plfs.container(path)?;
    c.read_marker().map(|m| m.version)
}
