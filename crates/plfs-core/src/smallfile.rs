//! 1-N ("small file", `workload: small_file | 1-n`) mode: the files of a directory are packed into
//! one log per writer, turning a metadata problem (one create per file) into a data problem (one
//! append per file).
//!
//! Layout: `<canonical backend>/<dir>/.plfs_small/log.<writer id hex16>.<pid>.<host>`, on the
//! backend `hash(host) % n`. A log is a 64-byte header (magic `PLFSSML\0`) followed by framed,
//! checksummed records (docs/format.md §10): CREATE, WRITE (with its data inline), TRUNC, UNLINK,
//! RENAME and SETATTR. Readers replay every log of the directory in timestamp order into a view
//! (name → file, file → attributes and extent map). A writer appends its records at every file
//! close and every namespace operation, so a file is in its log at close and visible to other
//! processes from then on, with no explicit flush.

use crate::clock;
use crate::error::{Error, Result};
use crate::extent::{ExtentMap, Key, Segment};
use crate::format::{self, LogHeader};
use crate::fs::{FileKind, Mount, Stat, BLKSIZE};
use crate::sys;
use rustix::fd::OwnedFd;
use rustix::fs::OFlags;
use rustix::io::Errno;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

/// Name of the per-directory store.
pub const SMALL_DIR: &str = ".plfs_small";
/// Small-file log magic.
pub const SMALL_MAGIC: [u8; 8] = *b"PLFSSML\0";
/// Record frame overhead: kind u16, flags u16, body_len u32, crc32c u32.
pub const SMALL_FRAME: usize = 12;
/// Largest body a record may have (a WRITE carries its data inline).
pub const SMALL_MAX_BODY: usize = 64 << 20;
/// Pending bytes after which a writer appends its buffer even before a close.
const FLUSH_BYTES: usize = 1 << 20;

const K_CREATE: u16 = 1;
const K_WRITE: u16 = 2;
const K_TRUNC: u16 = 3;
const K_UNLINK: u16 = 4;
const K_RENAME: u16 = 5;
const K_SETATTR: u16 = 6;

/// SETATTR mask bits.
pub const SET_MODE: u32 = 1;
/// SETATTR: owner.
pub const SET_UID: u32 = 2;
/// SETATTR: group.
pub const SET_GID: u32 = 4;
/// SETATTR: access time.
pub const SET_ATIME: u32 = 8;
/// SETATTR: modification time.
pub const SET_MTIME: u32 = 16;

/// A decoded record (`phys` = log offset of a WRITE's data).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Rec {
    Create {
        ts: u64,
        id: u64,
        mode: u32,
        uid: u32,
        gid: u32,
        name: String,
    },
    Write {
        ts: u64,
        id: u64,
        off: u64,
        len: u64,
        phys: u64,
    },
    Trunc {
        ts: u64,
        id: u64,
        size: u64,
    },
    Unlink {
        ts: u64,
        id: u64,
        name: String,
    },
    Rename {
        ts: u64,
        id: u64,
        from: String,
        to: String,
    },
    SetAttr {
        ts: u64,
        id: u64,
        mask: u32,
        mode: u32,
        uid: u32,
        gid: u32,
        atime: i64,
        mtime: i64,
    },
}

impl Rec {
    fn ts(&self) -> u64 {
        match self {
            Rec::Create { ts, .. }
            | Rec::Write { ts, .. }
            | Rec::Trunc { ts, .. }
            | Rec::Unlink { ts, .. }
            | Rec::Rename { ts, .. }
            | Rec::SetAttr { ts, .. } => *ts,
        }
    }
}

/// Appends one framed record. `data` (WRITE only) follows the body's fixed part.
fn encode(out: &mut Vec<u8>, kind: u16, fixed: &[u8], tail: &[u8]) {
    let start = out.len();
    out.extend_from_slice(&kind.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(&((fixed.len() + tail.len()) as u32).to_le_bytes());
    out.extend_from_slice(fixed);
    out.extend_from_slice(tail);
    let crc = crc32c::crc32c(&out[start..]);
    out.extend_from_slice(&crc.to_le_bytes());
}

fn le64(v: &[u8], at: usize) -> u64 {
    format::le_u64(&v[at..at + 8])
}
fn le32(v: &[u8], at: usize) -> u32 {
    format::le_u32(&v[at..at + 4])
}

/// Decodes the records of a log body that starts at log offset `base`. Stops at the first bad
/// record; returns (records, bytes consumed, why it stopped early).
fn decode(body: &[u8], base: u64) -> (Vec<Rec>, usize, Option<String>) {
    let mut out = Vec::new();
    let mut pos = 0usize;
    while pos < body.len() {
        let r = &body[pos..];
        if r.len() < SMALL_FRAME {
            return (out, pos, Some(format!("torn record at {}", base + pos as u64)));
        }
        let kind = u16::from_le_bytes([r[0], r[1]]);
        let blen = le32(r, 4) as usize;
        if blen > SMALL_MAX_BODY {
            return (out, pos, Some(format!("bad record length at {}", base + pos as u64)));
        }
        let total = SMALL_FRAME + blen;
        if r.len() < total {
            return (out, pos, Some(format!("torn record at {}", base + pos as u64)));
        }
        if le32(r, 8 + blen) != crc32c::crc32c(&r[..8 + blen]) {
            return (
                out,
                pos,
                Some(format!("record checksum mismatch at {}", base + pos as u64)),
            );
        }
        let b = &r[8..8 + blen];
        let need = |n: usize| b.len() >= n;
        let name = |from: usize| String::from_utf8_lossy(&b[from..]).into_owned();
        let rec = match kind {
            K_CREATE if need(28) => Rec::Create {
                ts: le64(b, 0),
                id: le64(b, 8),
                mode: le32(b, 16),
                uid: le32(b, 20),
                gid: le32(b, 24),
                name: name(28),
            },
            K_WRITE if need(24) => Rec::Write {
                ts: le64(b, 0),
                id: le64(b, 8),
                off: le64(b, 16),
                len: (b.len() - 24) as u64,
                phys: base + (pos + 8 + 24) as u64,
            },
            K_TRUNC if need(24) => Rec::Trunc {
                ts: le64(b, 0),
                id: le64(b, 8),
                size: le64(b, 16),
            },
            K_UNLINK if need(16) => Rec::Unlink {
                ts: le64(b, 0),
                id: le64(b, 8),
                name: name(16),
            },
            K_RENAME if need(18) => {
                let fl = u16::from_le_bytes([b[16], b[17]]) as usize;
                if b.len() < 18 + fl {
                    return (out, pos, Some(format!("bad rename record at {}", base + pos as u64)));
                }
                Rec::Rename {
                    ts: le64(b, 0),
                    id: le64(b, 8),
                    from: String::from_utf8_lossy(&b[18..18 + fl]).into_owned(),
                    to: name(18 + fl),
                }
            }
            K_SETATTR if need(48) => Rec::SetAttr {
                ts: le64(b, 0),
                id: le64(b, 8),
                mask: le32(b, 16),
                mode: le32(b, 20),
                uid: le32(b, 24),
                gid: le32(b, 28),
                atime: le64(b, 32) as i64,
                mtime: le64(b, 40) as i64,
            },
            _ => {
                return (
                    out,
                    pos,
                    Some(format!(
                        "unknown or short record (kind {kind}) at {}",
                        base + pos as u64
                    )),
                )
            }
        };
        out.push(rec);
        pos += total;
    }
    (out, pos, None)
}

/// This process's effective uid and gid, read once (owners of the files it creates).
static EFFECTIVE_IDS: std::sync::OnceLock<(u32, u32)> = std::sync::OnceLock::new();

/// A new file id: unique without a system call per file (a per-process random base, a counter,
/// and a bijective mix so ids of different processes do not collide in practice).
fn new_file_id() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static BASE: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let base = *BASE.get_or_init(clock::random_u64);
    let mut z = base.wrapping_add(NEXT.fetch_add(1, Ordering::Relaxed).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)).max(1)
}

/// Checks a name for a packed file: one path component, no NUL, not `.`/`..`.
pub fn check_name(name: &str) -> Result<()> {
    if name.is_empty() || name == "." || name == ".." || name.contains('/') || name.contains('\0') {
        return Err(Error::InvalidArgument(format!("{name:?}: not a valid file name")));
    }
    if name.len() > 255 {
        return Err(Error::errno(Errno::NAMETOOLONG, format!("{name}: file name too long")));
    }
    if name.starts_with(SMALL_DIR) || name.starts_with(format::TMP_PREFIX) {
        return Err(Error::InvalidArgument(format!("{name}: reserved name")));
    }
    Ok(())
}

/// A packed file's attributes and data map.
#[derive(Debug, Clone)]
struct SmallMeta {
    mode: u32,
    uid: u32,
    gid: u32,
    atime: i64,
    mtime: i64,
    ctime: i64,
    map: ExtentMap,
}

/// One log of the directory.
#[derive(Debug)]
struct LogRef {
    path: PathBuf,
    writer: u64,
    fd: Option<Arc<OwnedFd>>,
    seen: u64,
}

/// This process's writer log in the directory.
#[derive(Debug)]
struct SmallWriter {
    id: u64,
    fd: Arc<OwnedFd>,
    path: PathBuf,
    /// Log offset where `buf` will land.
    off: u64,
    buf: Vec<u8>,
    log: usize,
}

#[derive(Debug, Default)]
struct Inner {
    names: BTreeMap<String, u64>,
    files: HashMap<u64, SmallMeta>,
    logs: Vec<LogRef>,
    /// Modification stamp (mtime ns) of each backend's store directory at the last replay.
    dir_stamps: Vec<i128>,
    writer: Option<SmallWriter>,
    loaded: bool,
}

/// The small-file view of one logical directory, shared by this process.
#[derive(Debug)]
pub struct SmallDir {
    mount: Arc<Mount>,
    /// The directory's path relative to the mount.
    rel: PathBuf,
    inner: Mutex<Inner>,
    umask: u32,
}

fn lock(m: &Mutex<Inner>) -> MutexGuard<'_, Inner> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn stamp(st: &sys::RawStat) -> i128 {
    i128::from(st.st_mtime) * 1_000_000_000 + i128::from(st.st_mtime_nsec) + (i128::from(st.st_ino) << 64)
}

impl SmallDir {
    /// The view of directory `rel` of `mount`.
    pub fn new(mount: Arc<Mount>, rel: PathBuf, umask: u32) -> SmallDir {
        SmallDir {
            mount,
            rel,
            inner: Mutex::new(Inner::default()),
            umask,
        }
    }

    fn store(&self, i: usize) -> PathBuf {
        self.mount.canonical[i].join(&self.rel).join(SMALL_DIR)
    }

    /// Display path of the store on this host's backend.
    pub fn store_path(&self) -> PathBuf {
        self.store(self.writer_backend())
    }

    fn writer_backend(&self) -> usize {
        (format::hash_str(&clock::hostname()) % self.mount.canonical.len() as u64) as usize
    }

    /// Brings the view up to date: appends this process's pending records, then replays every log
    /// again if any other log grew or appeared.
    fn refresh(&self, g: &mut Inner) -> Result<()> {
        // Our own records are already applied to the view; they need to reach the log only if
        // the view is about to be replayed from the logs.
        let n = self.mount.canonical.len();
        let mut stamps = Vec::with_capacity(n);
        for i in 0..n {
            stamps.push(sys::lstat_opt(&self.store(i))?.map_or(0, |s| stamp(&s)));
        }
        let mut changed = !g.loaded || stamps != g.dir_stamps;
        if !changed {
            let own = g.writer.as_ref().map(|w| w.log);
            for (i, l) in g.logs.iter().enumerate() {
                if Some(i) == own {
                    continue;
                }
                let size = match &l.fd {
                    Some(fd) => sys::fstat(&**fd, &l.path)?.st_size as u64,
                    None => sys::lstat_opt(&l.path)?.map_or(0, |s| s.st_size as u64),
                };
                if size != l.seen {
                    changed = true;
                    break;
                }
            }
        }
        if changed {
            flush(g)?;
            self.replay(g, stamps)?;
        }
        Ok(())
    }

    fn replay(&self, g: &mut Inner, stamps: Vec<i128>) -> Result<()> {
        let own = g.writer.as_ref().map(|w| (w.id, w.fd.clone(), w.path.clone(), w.off));
        let mut logs: Vec<LogRef> = Vec::new();
        let mut recs: Vec<(u64, u64, usize, Rec)> = Vec::new();
        for i in 0..self.mount.canonical.len() {
            let dir = self.store(i);
            for name in sys::read_dir_opt(&dir)? {
                let Some(s) = name.to_str() else { continue };
                let Some(info) = s
                    .strip_prefix("log.")
                    .and_then(|r| format::parse_log_name(&format!("data.{r}")))
                else {
                    continue;
                };
                let path = dir.join(&name);
                let fd = match sys::open(&path, OFlags::RDONLY, 0) {
                    Ok(fd) => Arc::new(sys::high(fd)),
                    Err(e) => {
                        crate::warn!("{e}: skipping this small-file log");
                        continue;
                    }
                };
                let bytes = {
                    let len = sys::fstat(&*fd, &path)?.st_size as usize;
                    let mut b = vec![0u8; len];
                    let n = sys::pread_full(&*fd, &path, &mut b, 0)?;
                    b.truncate(n);
                    b
                };
                if bytes.len() < format::INDEX_HEADER_LEN {
                    logs.push(LogRef {
                        path,
                        writer: info.writer_id,
                        fd: Some(fd),
                        seen: bytes.len() as u64,
                    });
                    continue;
                }
                if let Err(e) = LogHeader::decode(&path, &bytes, SMALL_MAGIC) {
                    crate::warn!("{e}; skipping this small-file log");
                    continue;
                }
                let (rs, used, err) = decode(&bytes[format::INDEX_HEADER_LEN..], format::INDEX_HEADER_LEN as u64);
                if let Some(err) = err.filter(|e| !e.starts_with("torn")) {
                    crate::warn!("{}: {err}; ignoring the rest of this log", path.display());
                }
                let idx = logs.len();
                logs.push(LogRef {
                    path,
                    writer: info.writer_id,
                    fd: Some(fd),
                    seen: (format::INDEX_HEADER_LEN + used) as u64,
                });
                recs.extend(rs.into_iter().map(|r| (r.ts(), info.writer_id, idx, r)));
            }
        }
        recs.sort_by_key(|r| (r.0, r.1));
        g.names.clear();
        g.files.clear();
        for (_, w, idx, r) in recs {
            apply(g, &r, w, idx);
        }
        g.logs = logs;
        if let Some((id, fd, path, off)) = own {
            let log = match g.logs.iter().position(|l| l.writer == id) {
                Some(p) => p,
                None => {
                    g.logs.push(LogRef {
                        path: path.clone(),
                        writer: id,
                        fd: Some(fd.clone()),
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

    /// Appends a record to this process's log (creating the log first) and applies it.
    fn record(&self, g: &mut Inner, kind: u16, fixed: &[u8], tail: &[u8], rec: impl FnOnce(u64) -> Rec) -> Result<()> {
        if g.writer.is_none() {
            let b = self.writer_backend();
            let dir = self.store(b);
            sys::mkdir_exist_ok(&dir, 0o755).map_err(|e| match e {
                Error::Io {
                    errno: Errno::NOENT, ..
                } => Error::NotFound(self.mount.cfg.mount_point.join(&self.rel)),
                e => e,
            })?;
            let id = clock::random_u64();
            let host = clock::hostname();
            let pid = clock::pid();
            let path = dir.join(format!("log.{id:016x}.{pid}.{host}"));
            let fd = sys::open(&path, OFlags::RDWR | OFlags::CREATE | OFlags::EXCL, 0o644)?;
            let h = LogHeader {
                magic: SMALL_MAGIC,
                writer_id: id,
                open_ns: clock::now_ns(),
                pid,
                flags: 0,
            };
            sys::pwrite_all(&fd, &path, &h.encode(), 0)?;
            let fd = Arc::new(sys::high(fd));
            g.logs.push(LogRef {
                path: path.clone(),
                writer: id,
                fd: Some(fd.clone()),
                seen: format::INDEX_HEADER_LEN as u64,
            });
            let log = g.logs.len() - 1;
            g.writer = Some(SmallWriter {
                id,
                fd,
                path,
                off: format::INDEX_HEADER_LEN as u64,
                buf: Vec::new(),
                log,
            });
            // Our new log changed the directory's stamp; record it so it does not force a replay.
            if let Some(s) = g.dir_stamps.get_mut(b) {
                *s = sys::lstat_opt(&dir)?.map_or(0, |s| stamp(&s));
            }
        }
        let w = g.writer.as_mut().expect("writer created");
        let data_at = w.off + w.buf.len() as u64 + 8 + fixed.len() as u64;
        encode(&mut w.buf, kind, fixed, tail);
        let (id, log) = (w.id, w.log);
        let big = w.buf.len() >= FLUSH_BYTES;
        let r = rec(data_at);
        apply(g, &r, id, log);
        if big {
            flush(g)?;
        }
        Ok(())
    }

    /// Looks a name up: its file id and attributes.
    pub fn entry(&self, name: &str) -> Result<Option<(u64, Stat)>> {
        let mut g = lock(&self.inner);
        self.refresh(&mut g)?;
        Ok(g.names
            .get(name)
            .and_then(|&id| g.files.get(&id).map(|m| (id, stat_of(id, m)))))
    }

    /// Names in the directory, sorted.
    pub fn names(&self) -> Result<Vec<String>> {
        let mut g = lock(&self.inner);
        self.refresh(&mut g)?;
        Ok(g.names.keys().cloned().collect())
    }

    /// Creates `name` (or, unless `excl`, finds it). Returns (file id, created).
    pub fn create(&self, name: &str, mode: u32, excl: bool) -> Result<(u64, bool)> {
        check_name(name)?;
        let mut g = lock(&self.inner);
        self.refresh(&mut g)?;
        if let Some(&id) = g.names.get(name) {
            if excl {
                return Err(Error::Exists(self.mount.cfg.mount_point.join(&self.rel).join(name)));
            }
            return Ok((id, false));
        }
        let id = new_file_id();
        let ts = clock::next_ts();
        let (uid, gid) =
            *EFFECTIVE_IDS.get_or_init(|| (rustix::process::geteuid().as_raw(), rustix::process::getegid().as_raw()));
        let mode = mode & !self.umask & 0o7777;
        let mut fixed = Vec::with_capacity(28);
        for v in [ts, id] {
            fixed.extend_from_slice(&v.to_le_bytes());
        }
        for v in [mode, uid, gid] {
            fixed.extend_from_slice(&v.to_le_bytes());
        }
        let owned = name.to_string();
        self.record(&mut g, K_CREATE, &fixed, name.as_bytes(), move |_| Rec::Create {
            ts,
            id,
            mode,
            uid,
            gid,
            name: owned,
        })?;
        Ok((id, true))
    }

    fn id_of(&self, g: &Inner, name: &str) -> Result<u64> {
        g.names
            .get(name)
            .copied()
            .ok_or_else(|| Error::NotFound(self.mount.cfg.mount_point.join(&self.rel).join(name)))
    }

    /// Removes `name`.
    pub fn unlink(&self, name: &str) -> Result<()> {
        let mut g = lock(&self.inner);
        self.refresh(&mut g)?;
        let id = self.id_of(&g, name)?;
        let ts = clock::next_ts();
        let mut fixed = ts.to_le_bytes().to_vec();
        fixed.extend_from_slice(&id.to_le_bytes());
        let owned = name.to_string();
        self.record(&mut g, K_UNLINK, &fixed, name.as_bytes(), move |_| Rec::Unlink {
            ts,
            id,
            name: owned,
        })?;
        flush(&mut g)
    }

    /// Renames `from` to `to` within this directory (replacing `to`).
    pub fn rename(&self, from: &str, to: &str) -> Result<()> {
        check_name(to)?;
        let mut g = lock(&self.inner);
        self.refresh(&mut g)?;
        let id = self.id_of(&g, from)?;
        let ts = clock::next_ts();
        let mut fixed = ts.to_le_bytes().to_vec();
        fixed.extend_from_slice(&id.to_le_bytes());
        fixed.extend_from_slice(&(from.len() as u16).to_le_bytes());
        fixed.extend_from_slice(from.as_bytes());
        let (f, t) = (from.to_string(), to.to_string());
        self.record(&mut g, K_RENAME, &fixed, to.as_bytes(), move |_| Rec::Rename {
            ts,
            id,
            from: f,
            to: t,
        })?;
        flush(&mut g)
    }

    /// Changes attributes of `name` (mask of `SET_*`).
    #[allow(clippy::too_many_arguments)]
    pub fn setattr(&self, name: &str, mask: u32, mode: u32, uid: u32, gid: u32, atime: i64, mtime: i64) -> Result<()> {
        let mut g = lock(&self.inner);
        self.refresh(&mut g)?;
        let id = self.id_of(&g, name)?;
        self.setattr_id(&mut g, id, mask, mode, uid, gid, atime, mtime)?;
        flush(&mut g)
    }

    #[allow(clippy::too_many_arguments)]
    fn setattr_id(
        &self,
        g: &mut Inner,
        id: u64,
        mask: u32,
        mode: u32,
        uid: u32,
        gid: u32,
        atime: i64,
        mtime: i64,
    ) -> Result<()> {
        let ts = clock::next_ts();
        let mut fixed = Vec::with_capacity(48);
        for v in [ts, id] {
            fixed.extend_from_slice(&v.to_le_bytes());
        }
        for v in [mask, mode, uid, gid] {
            fixed.extend_from_slice(&v.to_le_bytes());
        }
        for v in [atime, mtime] {
            fixed.extend_from_slice(&v.to_le_bytes());
        }
        self.record(g, K_SETATTR, &fixed, &[], move |_| Rec::SetAttr {
            ts,
            id,
            mask,
            mode,
            uid,
            gid,
            atime,
            mtime,
        })
    }

    /// Removes the store directories once no name is left (before rmdir of the directory).
    pub fn remove_store(&self) -> Result<()> {
        let mut g = lock(&self.inner);
        self.refresh(&mut g)?;
        if !g.names.is_empty() {
            return Err(Error::errno(
                Errno::NOTEMPTY,
                format!(
                    "{}: directory not empty",
                    self.mount.cfg.mount_point.join(&self.rel).display()
                ),
            ));
        }
        g.writer = None;
        for i in 0..self.mount.canonical.len() {
            sys::remove_tree(&self.store(i))?;
        }
        *g = Inner::default();
        Ok(())
    }

    /// Opens file `id` (by name lookup done by the caller).
    pub fn handle(self: &Arc<Self>, id: u64) -> SmallHandle {
        SmallHandle { dir: self.clone(), id }
    }

    /// The file id bound to `name`.
    pub fn id(&self, name: &str) -> Result<u64> {
        let mut g = lock(&self.inner);
        self.refresh(&mut g)?;
        self.id_of(&g, name)
    }

    /// Appends pending records (used before this view is dropped from a cache).
    pub fn flush(&self) -> Result<()> {
        flush(&mut lock(&self.inner))
    }
}

/// Space accounting of one directory's packed logs (for `plfs du`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SmallUsage {
    /// Logs in the directory's store (every backend).
    pub logs: u64,
    /// Their total size in bytes.
    pub log_bytes: u64,
    /// Bytes of file data the logs hold, live or overwritten (the data of every WRITE record).
    pub data_bytes: u64,
    /// Bytes of file data a reader sees (holes excluded).
    pub live_bytes: u64,
}

impl SmallDir {
    /// Space accounting of this directory's logs, read afresh.
    pub fn usage(&self) -> Result<SmallUsage> {
        let mut g = lock(&self.inner);
        flush(&mut g)?;
        self.refresh(&mut g)?;
        let mut u = SmallUsage::default();
        for l in &g.logs {
            let bytes = sys::read_file(&l.path)?;
            u.logs += 1;
            u.log_bytes += bytes.len() as u64;
            if bytes.len() > format::INDEX_HEADER_LEN {
                let (rs, _, _) = decode(&bytes[format::INDEX_HEADER_LEN..], format::INDEX_HEADER_LEN as u64);
                u.data_bytes += rs
                    .iter()
                    .map(|r| if let Rec::Write { len, .. } = r { *len } else { 0 })
                    .sum::<u64>();
            }
        }
        u.live_bytes = g
            .files
            .values()
            .map(|m| m.map.pieces().iter().map(|(_, p)| p.len).sum::<u64>())
            .sum();
        Ok(u)
    }
}

impl Drop for SmallDir {
    fn drop(&mut self) {
        if let Err(e) = flush(&mut lock(&self.inner)) {
            crate::warn!("{e}: small-file records not written");
        }
    }
}

fn flush(g: &mut Inner) -> Result<()> {
    let Some(w) = g.writer.as_mut() else { return Ok(()) };
    if w.buf.is_empty() {
        return Ok(());
    }
    sys::pwrite_all(&*w.fd, &w.path, &w.buf, w.off)?;
    w.off += w.buf.len() as u64;
    w.buf.clear();
    let (log, off) = (w.log, w.off);
    if let Some(l) = g.logs.get_mut(log) {
        l.seen = off;
    }
    Ok(())
}

fn apply(g: &mut Inner, r: &Rec, writer: u64, log: usize) {
    let ns = |ts: u64| ts as i64;
    match r {
        Rec::Create {
            ts,
            id,
            mode,
            uid,
            gid,
            name,
        } => {
            g.names.insert(name.clone(), *id);
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
                },
            );
        }
        Rec::Write { ts, id, off, len, phys } => {
            if let Some(m) = g.files.get_mut(id) {
                m.map
                    .insert_write(*off, *len, log as u32, *phys, Key { ts: *ts, writer });
                m.mtime = m.mtime.max(ns(*ts));
                m.ctime = m.ctime.max(ns(*ts));
            }
        }
        Rec::Trunc { ts, id, size } => {
            if let Some(m) = g.files.get_mut(id) {
                m.map.insert_trunc(*size, Key { ts: *ts, writer });
                m.mtime = m.mtime.max(ns(*ts));
                m.ctime = m.ctime.max(ns(*ts));
            }
        }
        Rec::Unlink { id, name, .. } => {
            if g.names.get(name) == Some(id) {
                g.names.remove(name);
            }
        }
        Rec::Rename { ts, id, from, to } => {
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
            id,
            mask,
            mode,
            uid,
            gid,
            atime,
            mtime,
        } => {
            if let Some(m) = g.files.get_mut(id) {
                if mask & SET_MODE != 0 {
                    m.mode = *mode & 0o7777;
                }
                if mask & SET_UID != 0 {
                    m.uid = *uid;
                }
                if mask & SET_GID != 0 {
                    m.gid = *gid;
                }
                if mask & SET_ATIME != 0 {
                    m.atime = *atime;
                }
                if mask & SET_MTIME != 0 {
                    m.mtime = *mtime;
                }
                m.ctime = m.ctime.max(ns(*ts));
            }
        }
    }
}

fn stat_of(id: u64, m: &SmallMeta) -> Stat {
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

/// An open packed file.
#[derive(Debug)]
pub struct SmallHandle {
    dir: Arc<SmallDir>,
    id: u64,
}

impl SmallHandle {
    /// Display path of the store.
    pub fn store_path(&self) -> PathBuf {
        self.dir.store_path()
    }

    fn meta<R>(&self, g: &Inner, f: impl FnOnce(&SmallMeta) -> R) -> Result<R> {
        g.files
            .get(&self.id)
            .map(f)
            .ok_or_else(|| Error::errno(Errno::STALE, "packed file vanished from its directory's logs"))
    }

    /// Writes at `off`.
    pub fn write(&self, buf: &[u8], off: u64) -> Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let mut g = lock(&self.dir.inner);
        for (i, chunk) in buf.chunks(SMALL_MAX_BODY - 24).enumerate() {
            let coff = off + (i * (SMALL_MAX_BODY - 24)) as u64;
            let ts = clock::next_ts();
            let mut fixed = Vec::with_capacity(24);
            for v in [ts, self.id, coff] {
                fixed.extend_from_slice(&v.to_le_bytes());
            }
            let (id, len) = (self.id, chunk.len() as u64);
            self.dir
                .record(&mut g, K_WRITE, &fixed, chunk, move |phys| Rec::Write {
                    ts,
                    id,
                    off: coff,
                    len,
                    phys,
                })?;
        }
        Ok(buf.len())
    }

    /// Reads at `off`.
    pub fn read(&self, buf: &mut [u8], off: u64) -> Result<usize> {
        let mut g = lock(&self.dir.inner);
        flush(&mut g)?;
        let segs = self.meta(&g, |m| m.map.lookup(off, buf.len() as u64))?;
        let mut pos = 0usize;
        for s in segs {
            match s {
                Segment::Hole { len } => {
                    buf[pos..pos + len as usize].fill(0);
                    pos += len as usize;
                }
                Segment::Data { len, chunk, phys } => {
                    let l = &g.logs[chunk as usize];
                    let fd = l.fd.clone().ok_or_else(|| Error::corrupt(&l.path, "log not open"))?;
                    let dst = &mut buf[pos..pos + len as usize];
                    let n = sys::pread_full(&*fd, &l.path, dst, phys)?;
                    if n < dst.len() {
                        return Err(Error::corrupt(&l.path, "log shorter than its records"));
                    }
                    pos += len as usize;
                }
            }
        }
        Ok(pos)
    }

    /// Logical size.
    pub fn size(&self) -> Result<u64> {
        let g = lock(&self.dir.inner);
        self.meta(&g, |m| m.map.size())
    }

    /// Truncates.
    pub fn truncate(&self, size: u64) -> Result<()> {
        let mut g = lock(&self.dir.inner);
        let ts = clock::next_ts();
        let mut fixed = Vec::with_capacity(24);
        for v in [ts, self.id, size] {
            fixed.extend_from_slice(&v.to_le_bytes());
        }
        let id = self.id;
        self.dir
            .record(&mut g, K_TRUNC, &fixed, &[], move |_| Rec::Trunc { ts, id, size })
    }

    /// Appends pending records and fsyncs the log.
    pub fn sync(&self) -> Result<()> {
        let mut g = lock(&self.dir.inner);
        flush(&mut g)?;
        if let Some(w) = &g.writer {
            sys::fsync(&*w.fd, &w.path)?;
        }
        Ok(())
    }

    /// Picks up other processes' records.
    pub fn refresh(&self) -> Result<()> {
        let mut g = lock(&self.dir.inner);
        self.dir.refresh(&mut g)
    }

    /// Close: the file's records reach its log.
    pub fn close(&self) -> Result<()> {
        flush(&mut lock(&self.dir.inner))
    }

    /// stat.
    pub fn stat(&self) -> Result<Stat> {
        let g = lock(&self.dir.inner);
        self.meta(&g, |m| stat_of(self.id, m))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_roundtrip() {
        let mut b = Vec::new();
        encode(&mut b, K_TRUNC, &[1u8; 24], &[]);
        encode(&mut b, K_UNLINK, &[2u8; 16], b"name");
        let (rs, used, err) = decode(&b, 64);
        assert_eq!(rs.len(), 2);
        assert_eq!(used, b.len());
        assert!(err.is_none());
        for cut in 0..b.len() {
            let (rs, _, err) = decode(&b[..cut], 64);
            assert!(rs.len() < 2 || cut == b.len());
            assert_eq!(err.is_some(), cut != 0 && cut != SMALL_FRAME + 24);
        }
        assert!(check_name("a/b").is_err());
        assert!(check_name("..").is_err());
        assert!(check_name("a\0").is_err());
        assert!(check_name("ok.txt").is_ok());
    }
}
