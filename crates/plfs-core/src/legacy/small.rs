//! PLFS 2.x 1-N ("small file") directories, read-only: every writer's name log replayed in
//! timestamp order, each file's index records applied in timestamp order (a write replaces what
//! it covers, a truncate drops everything at or beyond its offset and sets the size). The record
//! formats are in [`crate::format::legacy::small`]. Every record is checked; damage is an error
//! naming the file.

use super::container::{not_followed, read_reg};
use crate::error::{Error, Result};
use crate::extent::{ExtentMap, Key, Segment};
use crate::format::legacy::small::{
    decode_name_log, decode_small_index, ops, ts_ns, NameRecord, SmallIndexRecord, NAME_PREFIX, SMALL_CONTAINER,
    STAT_FILE,
};
use crate::format::legacy::{Dropping, DATA_PREFIX, INDEX_PREFIX};
use crate::mount::Mount;
use crate::sys::{self, Access, Dir, File, RawStat};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

#[derive(Debug)]
struct Writer {
    dir: Arc<Dir>,
    /// `<sec>.<usec>.<host>.<pid>` after the log prefixes.
    suffix: String,
}

impl Writer {
    fn name(&self, prefix: &str) -> String {
        format!("{prefix}{}", self.suffix)
    }
}

#[derive(Debug, Default)]
struct FileState {
    mtime_ns: i64,
    /// (writer, fid) pairs bound by OPEN records.
    opens: Vec<(usize, u64)>,
}

/// One file of a legacy 1-N directory.
#[derive(Debug)]
struct SmallEntry {
    mtime_ns: i64,
    map: ExtentMap,
    bytes: u64,
}

/// Attributes of a legacy 1-N file.
#[derive(Debug, Clone, Copy)]
pub struct SmallStat {
    /// lstat of the directory's stat file (mode, owner).
    pub access: RawStat,
    /// Size.
    pub size: u64,
    /// Bytes written (for blocks).
    pub bytes: u64,
    /// Last name operation on the file, ns.
    pub mtime_ns: i64,
}

/// A legacy 1-N directory, loaded whole (names, indexes; data read on demand).
#[derive(Debug)]
pub struct LegacySmallDir {
    /// The `SMALLFILECONTAINER` directories found, with their canonical backend.
    pub stores: Vec<(usize, Arc<Dir>)>,
    /// (st_dev, st_ino) of each store when loaded.
    idents: Vec<(u64, u64)>,
    writers: Vec<Writer>,
    files: BTreeMap<String, SmallEntry>,
    stat: RawStat,
    fds: Mutex<HashMap<usize, Arc<File>>>,
}

/// Every store of directory `rel`: `(backend, store)`.
fn stores(mount: &Mount, rel: &Path) -> Result<Vec<(usize, Dir)>> {
    let srel = rel.join(SMALL_CONTAINER);
    let mut out = Vec::new();
    for (i, b) in mount.canonical.iter().enumerate() {
        if let Some(d) = b.dir_opt(&srel).map_err(|e| not_followed(e, "a directory"))? {
            out.push((i, d.kept()));
        }
    }
    Ok(out)
}

impl LegacySmallDir {
    /// Loads the legacy 1-N directory at `rel` of `mount` (its `SMALLFILECONTAINER` on every
    /// canonical backend); `Ok(None)` if no backend has one.
    pub fn open(mount: &Mount, rel: &Path) -> Result<Option<LegacySmallDir>> {
        let found = stores(mount, rel)?;
        if found.is_empty() {
            return Ok(None);
        }
        let mut writers = Vec::new();
        let mut stat = None;
        let mut idents = Vec::new();
        let mut stores_out = Vec::new();
        for (b, d) in found {
            let st = d.fstat()?;
            idents.push((st.st_dev, st.st_ino));
            let d = Arc::new(d);
            if stat.is_none() {
                stat = d.stat_opt(STAT_FILE)?.filter(sys::is_file);
            }
            let mut suffixes: Vec<String> = d
                .list()?
                .into_iter()
                .filter_map(|n| n.to_str().and_then(|s| s.strip_prefix(NAME_PREFIX)).map(str::to_string))
                .filter(|s| Dropping::parse(&format!("{DATA_PREFIX}{s}")).is_some())
                .collect();
            suffixes.sort();
            for suffix in suffixes {
                writers.push(Writer { dir: d.clone(), suffix });
            }
            stores_out.push((b, d));
        }
        let first = &stores_out[0].1;
        let stat = stat.ok_or_else(|| Error::corrupt(first.sub(STAT_FILE), "the PLFS 2.x 1-N stat file is missing"))?;
        let live = replay_names(&writers)?;
        let files = load_files(&writers, live)?;
        Ok(Some(LegacySmallDir {
            stores: stores_out,
            idents,
            writers,
            files,
            stat,
            fds: Mutex::new(HashMap::new()),
        }))
    }

    /// Whether every store it was loaded from is still there (an upgrade removes them).
    pub fn still_there(&self, mount: &Mount, rel: &Path) -> Result<bool> {
        let srel = rel.join(SMALL_CONTAINER);
        for ((b, _), ident) in self.stores.iter().zip(&self.idents) {
            match mount.canonical[*b].root()?.stat_beneath_opt(&srel)? {
                Some(st) if (st.st_dev, st.st_ino) == *ident => {}
                _ => return Ok(false),
            }
        }
        Ok(true)
    }

    /// The names of its files.
    pub fn names(&self) -> impl Iterator<Item = &String> {
        self.files.keys()
    }

    /// Attributes of file `name`, if it exists.
    pub fn stat(&self, name: &str) -> Option<SmallStat> {
        self.files.get(name).map(|f| SmallStat {
            access: self.stat,
            size: f.map.size(),
            bytes: f.bytes,
            mtime_ns: f.mtime_ns,
        })
    }

    fn fd(&self, w: usize) -> Result<Arc<File>> {
        let mut t = self.fds.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(f) = t.get(&w) {
            return Ok(f.clone());
        }
        let wr = &self.writers[w];
        let f = wr
            .dir
            .open_file(wr.name(DATA_PREFIX), Access::Read)
            .map_err(|e| not_followed(e, "a data log"))?;
        let f = Arc::new(f.kept());
        t.insert(w, f.clone());
        Ok(f)
    }

    /// Reads file `name` at `off` (holes read as zeros; short only at the end).
    pub fn read(&self, name: &str, buf: &mut [u8], off: u64) -> Result<usize> {
        let f = self
            .files
            .get(name)
            .ok_or_else(|| Error::NotFound(PathBuf::from(name)))?;
        let mut pos = 0usize;
        for seg in f.map.lookup(off, buf.len() as u64) {
            match seg {
                Segment::Hole { len } => buf[pos..pos + len as usize].fill(0),
                Segment::Data { len, chunk, phys } => {
                    let dst = &mut buf[pos..pos + len as usize];
                    let file = self.fd(chunk as usize)?;
                    if file.pread_full(dst, phys)? < dst.len() {
                        return Err(Error::corrupt(
                            file.path(),
                            format!("data log ends before {}", phys + len),
                        ));
                    }
                }
            }
            pos += match seg {
                Segment::Hole { len } | Segment::Data { len, .. } => len as usize,
            };
        }
        Ok(pos)
    }
}

/// Replays every name log in timestamp order: the live files, each with the (writer, fid) pairs
/// its OPEN records bound.
fn replay_names(writers: &[Writer]) -> Result<BTreeMap<String, FileState>> {
    let mut recs: Vec<(u64, usize, NameRecord)> = Vec::new();
    for (w, wr) in writers.iter().enumerate() {
        let name = wr.name(NAME_PREFIX);
        let path = wr.dir.sub(&name);
        let (records, torn) = decode_name_log(&path, &read_reg(&wr.dir, &name)?)?;
        if let Some(off) = torn {
            crate::warn!("{}: ignoring a torn name record at offset {off}", path.display());
        }
        for r in records {
            recs.push((r.ts, w, r));
        }
    }
    recs.sort_by_key(|a| (a.0, a.1, a.2.offset));
    let mut live: BTreeMap<String, FileState> = BTreeMap::new();
    for (ts, w, r) in recs {
        let t = ts_ns(ts);
        match r.op {
            ops::CREATE => {
                live.entry(r.name).or_insert_with(|| FileState {
                    mtime_ns: t,
                    opens: Vec::new(),
                });
            }
            ops::DELETE => {
                live.remove(&r.name);
            }
            ops::OPEN => {
                if let Some(f) = live.get_mut(&r.name) {
                    f.mtime_ns = t;
                    f.opens.push((w, r.offset));
                }
            }
            ops::UTIME => {
                if let Some(f) = live.get_mut(&r.name) {
                    f.mtime_ns = t;
                }
            }
            _ => {
                if let (Some(mut f), Some(to)) = (live.remove(&r.name), r.to) {
                    f.mtime_ns = t;
                    live.insert(to, f);
                }
            }
        }
    }
    Ok(live)
}

/// Every writer's index records, dispatched to the live files that opened them, applied in
/// timestamp order; every data log they point into is checked to hold their bytes.
fn load_files(writers: &[Writer], live: BTreeMap<String, FileState>) -> Result<BTreeMap<String, SmallEntry>> {
    let mut owner: HashMap<(usize, u64), String> = HashMap::new();
    for (name, f) in &live {
        for &o in &f.opens {
            owner.insert(o, name.clone());
        }
    }
    let mut per_file: HashMap<String, Vec<(u64, usize, usize, SmallIndexRecord)>> = HashMap::new();
    let mut need = vec![0u64; writers.len()];
    for (w, wr) in writers.iter().enumerate() {
        let name = wr.name(INDEX_PREFIX);
        let bytes = match read_reg(&wr.dir, &name) {
            Ok(b) => b,
            Err(e) if e.is_not_found() => Vec::new(),
            Err(e) => return Err(e),
        };
        for (i, r) in decode_small_index(&wr.dir.sub(&name), &bytes)?.into_iter().enumerate() {
            if let Some(file) = owner.get(&(w, r.fid)) {
                if let Some(ph) = r.physical {
                    need[w] = need[w].max(ph + r.length);
                }
                per_file.entry(file.clone()).or_default().push((r.ts, w, i, r));
            }
        }
    }
    for (w, wr) in writers.iter().enumerate() {
        if need[w] == 0 {
            continue;
        }
        let name = wr.name(DATA_PREFIX);
        let p = wr.dir.sub(&name);
        match wr.dir.stat_opt(&name)? {
            Some(st) if sys::is_file(&st) && st.st_size as u64 >= need[w] => {}
            Some(st) if sys::is_file(&st) => {
                return Err(Error::corrupt(
                    p,
                    format!("data log has {} bytes but index records need {}", st.st_size, need[w]),
                ))
            }
            Some(_) => return Err(Error::corrupt(p, "data log is not a regular file")),
            None => return Err(Error::corrupt(p, "missing, but index records point into it")),
        }
    }
    let mut files = BTreeMap::new();
    for (name, f) in live {
        let mut recs = per_file.remove(&name).unwrap_or_default();
        recs.sort_by_key(|a| (a.0, a.1, a.2));
        let mut map = ExtentMap::new();
        let mut bytes = 0u64;
        for (rank, (_, w, _, r)) in recs.into_iter().enumerate() {
            let key = Key {
                ts: rank as u64,
                writer: 0,
            };
            match r.physical {
                None => map.insert_trunc(r.offset, key),
                Some(ph) => {
                    bytes += r.length;
                    map.insert_write(r.offset, r.length, w as u32, ph, key);
                }
            }
        }
        files.insert(
            name,
            SmallEntry {
                mtime_ns: f.mtime_ns,
                map,
                bytes,
            },
        );
    }
    Ok(files)
}
