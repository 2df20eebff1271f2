//! The merged index of a legacy container and reads through it.
//!
//! Overlaps resolve as in the original (`ContainerEntry::older_than`): of two writes covering a
//! byte, the one with the later end timestamp wins, then the later begin timestamp, then the
//! larger pid. All records are ranked by that rule (ties beyond it by the order the logs were
//! read) and inserted into an [`ExtentMap`] with the rank as their key, so the result does not
//! depend on insertion order. The size is the largest `offset + length` of any record, zero-length
//! ones included (they mark a truncate that grew the file).

use super::container::{not_followed, read_reg, Hostdir, LegacyContainer};
use crate::error::{Error, Result};
use crate::extent::{ExtentMap, Key, Segment};
use crate::format::legacy::records::{self, HostEntry};
use crate::format::legacy::{self as names, Dropping};
use crate::index::MapEntry;
use crate::sys::{self, Access, File};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// A data log the index points into.
#[derive(Debug, Clone)]
pub struct Chunk {
    /// Index into the hostdir table.
    pub hostdir: usize,
    /// File name in the hostdir.
    pub name: String,
    /// Writer pid.
    pub pid: u32,
    /// Writer host.
    pub host: String,
    /// Full path (for messages and `plfs map`).
    pub path: PathBuf,
}

/// Upper bound on data-log descriptors kept open by one reader.
const MAX_FDS: usize = 256;

/// The merged index of a legacy file, with what is needed to read through it.
#[derive(Debug)]
pub struct LegacyIndex {
    map: ExtentMap,
    eof: u64,
    bytes: u64,
    /// Data logs.
    pub chunks: Vec<Chunk>,
    hostdirs: Vec<Hostdir>,
    /// End timestamp (ns) of each record, by rank.
    end_ns: Vec<u64>,
    /// Index records read.
    pub records: u64,
    /// True when loaded from `global.index`.
    pub from_global: bool,
    fds: Mutex<HashMap<u32, Arc<File>>>,
}

struct Rec {
    e: HostEntry,
    /// The writer pid (the tie-break).
    pid: u32,
    chunk: Option<u32>,
}

fn mtime(st: &sys::RawStat) -> i128 {
    i128::from(sys::mtime_ns(st))
}

impl LegacyIndex {
    /// Loads the index of `c`: from `global.index` if it exists, no writer is open and no index
    /// log is newer than it; otherwise by merging every index log (the original never invalidated
    /// its flattened index, so a stale one is detected here and ignored, with a warning).
    pub fn load(c: &LegacyContainer) -> Result<LegacyIndex> {
        let hostdirs = c.hostdirs()?;
        let mut logs: Vec<(usize, Dropping, String)> = Vec::new();
        let mut newest_log: i128 = i128::MIN;
        for (i, h) in hostdirs.iter().enumerate() {
            let mut found: Vec<_> = h
                .dir
                .list()?
                .into_iter()
                .filter_map(|n| n.to_str().and_then(Dropping::parse).filter(|d| d.is_index))
                .collect();
            found.sort_by(|a, b| (&a.stamp, a.pid).cmp(&(&b.stamp, b.pid)));
            for d in found {
                let name = format!("{}{}.{}", names::INDEX_PREFIX, d.stamp, d.pid);
                if let Some(st) = h.dir.stat_opt(&name)? {
                    newest_log = newest_log.max(mtime(&st));
                }
                logs.push((i, d, name));
            }
        }
        let gpath = c.dir.sub(names::GLOBAL_INDEX);
        if let Some(st) = c.dir.stat_opt(names::GLOBAL_INDEX)? {
            let open = !c.meta()?.open.is_empty();
            if !open && mtime(&st) >= newest_log {
                return Self::load_global(c, hostdirs, &gpath);
            }
            crate::warn!(
                "{}: {}; reading the index logs instead",
                gpath.display(),
                if open {
                    "a writer has the file open"
                } else {
                    "older than an index log (written after the flatten)"
                }
            );
        }
        let mut recs = Vec::new();
        let mut chunks = Vec::new();
        let mut chunk_ids: HashMap<(usize, String), u32> = HashMap::new();
        for (h, d, name) in &logs {
            let p = hostdirs[*h].dir.sub(name);
            let bytes = read_reg(&hostdirs[*h].dir, name)?;
            let (entries, torn) = records::decode_index_log(&p, &bytes)?;
            if torn != 0 {
                crate::warn!("{}: ignoring a torn record of {torn} bytes at its end", p.display());
            }
            for e in entries {
                let chunk = (e.length > 0).then(|| {
                    let data = d.data_name_for(e.id);
                    *chunk_ids.entry((*h, data.clone())).or_insert_with(|| {
                        chunks.push(Chunk {
                            hostdir: *h,
                            path: hostdirs[*h].dir.sub(&data),
                            name: data,
                            pid: e.id,
                            host: d.host.clone(),
                        });
                        (chunks.len() - 1) as u32
                    })
                });
                recs.push(Rec { e, pid: e.id, chunk });
            }
        }
        Self::build(hostdirs, chunks, recs, false)
    }

    fn load_global(c: &LegacyContainer, hostdirs: Vec<Hostdir>, gpath: &Path) -> Result<LegacyIndex> {
        let g = records::decode_global(gpath, &read_reg(&c.dir, names::GLOBAL_INDEX)?)?;
        let mut chunks = Vec::with_capacity(g.chunks.len());
        for p in &g.chunks {
            // Only the last two components count: the path was absolute on the machine that
            // flattened, and the container may have moved since. The original's tool wrote
            // `<backend>//<file>/hostdir.N//dropping.data...`: empty components are skipped.
            let mut it = p.rsplit('/').filter(|c| !c.is_empty());
            let (file, hd) = (it.next().unwrap_or(""), it.next().unwrap_or(""));
            let d = Dropping::parse(file).filter(|d| !d.is_index);
            let h = hostdirs.iter().position(|x| x.name == hd);
            let (Some(d), Some(h)) = (d, h) else {
                return Err(Error::corrupt(
                    gpath,
                    format!("chunk {p:?} is not a data log of a hostdir of this container"),
                ));
            };
            chunks.push(Chunk {
                hostdir: h,
                path: hostdirs[h].dir.sub(file),
                name: file.to_string(),
                pid: d.pid,
                host: d.host,
            });
        }
        let recs = g
            .entries
            .into_iter()
            .map(|e| Rec {
                e,
                pid: e.extra,
                chunk: (e.length > 0).then_some(e.id),
            })
            .collect();
        Self::build(hostdirs, chunks, recs, true)
    }

    fn build(hostdirs: Vec<Hostdir>, chunks: Vec<Chunk>, recs: Vec<Rec>, from_global: bool) -> Result<LegacyIndex> {
        // Every data log must exist, be a regular file and hold every byte its records name.
        let mut need = vec![0u64; chunks.len()];
        for r in &recs {
            if let Some(ch) = r.chunk {
                let end = r.e.physical + r.e.length;
                need[ch as usize] = need[ch as usize].max(end);
            }
        }
        for (ch, n) in chunks.iter().zip(&need) {
            let st = hostdirs[ch.hostdir].dir.stat_opt(&ch.name)?;
            match st {
                None => {
                    return Err(Error::corrupt(
                        &ch.path,
                        "missing, but index records of the file point into it",
                    ))
                }
                Some(st) if !sys::is_file(&st) => {
                    return Err(Error::corrupt(&ch.path, "data log is not a regular file"))
                }
                Some(st) if (st.st_size as u64) < *n => {
                    return Err(Error::corrupt(
                        &ch.path,
                        format!("data log has {} bytes but index records need {n}", st.st_size),
                    ))
                }
                Some(_) => {}
            }
        }
        let mut order: Vec<usize> = (0..recs.len()).collect();
        order.sort_by(|&a, &b| {
            let (x, y) = (&recs[a], &recs[b]);
            x.e.end_ts
                .total_cmp(&y.e.end_ts)
                .then(x.e.begin_ts.total_cmp(&y.e.begin_ts))
                .then(x.pid.cmp(&y.pid))
                .then(a.cmp(&b))
        });
        let mut map = ExtentMap::new();
        let (mut eof, mut bytes) = (0u64, 0u64);
        let mut end_ns = Vec::with_capacity(recs.len());
        for (rank, &i) in order.iter().enumerate() {
            let r = &recs[i];
            eof = eof.max(r.e.logical + r.e.length);
            bytes = bytes.saturating_add(r.e.length);
            let ns = r.e.end_ts * 1e9;
            end_ns.push(if ns.is_finite() && ns > 0.0 { ns as u64 } else { 0 });
            if let Some(ch) = r.chunk {
                let key = Key {
                    ts: rank as u64,
                    writer: 0,
                };
                map.insert_write(r.e.logical, r.e.length, ch, r.e.physical, key);
            }
        }
        Ok(LegacyIndex {
            map,
            eof,
            bytes,
            chunks,
            hostdirs,
            end_ns,
            records: recs.len() as u64,
            from_global,
            fds: Mutex::new(HashMap::new()),
        })
    }

    /// Logical size.
    pub fn size(&self) -> u64 {
        self.eof
    }

    /// Bytes written (sum of record lengths).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    fn fd(&self, chunk: u32) -> Result<Arc<File>> {
        let mut t = self.fds.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(f) = t.get(&chunk) {
            return Ok(f.clone());
        }
        let ch = &self.chunks[chunk as usize];
        let f = self.hostdirs[ch.hostdir]
            .dir
            .open_file(&ch.name, Access::Read)
            .map_err(|e| not_followed(e, "a data log"))?;
        if t.len() >= MAX_FDS {
            t.clear();
        }
        let f = Arc::new(f.kept());
        t.insert(chunk, f.clone());
        Ok(f)
    }

    /// Reads at `off`; returns the bytes read (short only at the end of the file). Holes read as
    /// zeros; a data log shorter than its records is an error naming it.
    pub fn read(&self, buf: &mut [u8], off: u64) -> Result<usize> {
        if off >= self.eof || buf.is_empty() {
            return Ok(0);
        }
        let len = (buf.len() as u64).min(self.eof - off) as usize;
        let buf = &mut buf[..len];
        let mut pos = 0usize;
        for seg in self.map.lookup(off, len as u64) {
            match seg {
                Segment::Hole { len } => {
                    buf[pos..pos + len as usize].fill(0);
                    pos += len as usize;
                }
                Segment::Data { len, chunk, phys } => {
                    let dst = &mut buf[pos..pos + len as usize];
                    let path = &self.chunks[chunk as usize].path;
                    let n = self.fd(chunk)?.pread_full(dst, phys)?;
                    if n < dst.len() {
                        return Err(Error::corrupt(
                            path,
                            format!(
                                "data log ends at {} but the index points to {}",
                                phys + n as u64,
                                phys + len
                            ),
                        ));
                    }
                    pos += len as usize;
                }
            }
        }
        // Beyond the last data byte up to the size (a truncate that grew the file): zeros.
        buf[pos..].fill(0);
        Ok(len)
    }

    /// The merged index in logical order (holes absent). Writers of PLFS 2.x have no id (0);
    /// an entry's time is the end of its write.
    pub fn map_entries(&self) -> Vec<MapEntry> {
        self.map
            .pieces()
            .into_iter()
            .map(|(o, p)| {
                let ch = &self.chunks[p.chunk as usize];
                let end_ns = self.end_ns.get(p.key.ts as usize).copied().unwrap_or(0);
                MapEntry::new(o, &p, ch.path.clone(), 0, ch.pid, ch.host.clone(), end_ns)
            })
            .collect()
    }

    /// The hostdirs read (their paths, and whether each came through a metalink).
    pub fn hostdirs(&self) -> impl Iterator<Item = &Hostdir> {
        self.hostdirs.iter()
    }
}
