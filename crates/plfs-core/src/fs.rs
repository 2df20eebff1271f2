//! The logical namespace: resolving logical paths to backends, and every metadata operation
//! (open, stat, truncate, unlink, rename, directories, permissions, links, statvfs).
//!
//! Placement: a file's container lives on canonical backend `hash(basename) % n` (so renaming a
//! directory never moves its files); directories exist on every canonical backend; readdir
//! merges them. A container lists as a regular file.

use crate::config::{Config, GlobalParams, MountConfig, Workload};
use crate::container::{self, Container, Probe};
use crate::error::{Error, Result};
use crate::file::{OpenFile, OpenFlags, Shared};
use crate::format;
use crate::nn::PlainFile;
use crate::smallfile::{self, SmallDir};
use crate::sys;
use rustix::io::Errno;
use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

/// A mount point with its backends resolved.
#[derive(Debug)]
pub struct Mount {
    /// Its configuration.
    pub cfg: MountConfig,
    /// Global parameters.
    pub global: GlobalParams,
    /// Canonical backends (hold containers and directories).
    pub canonical: Vec<PathBuf>,
    /// Shadow backends (hold writers' logs).
    pub shadows: Vec<PathBuf>,
}

/// Kind of a logical file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A regular file (a container).
    File,
    /// A directory.
    Dir,
    /// A symbolic link.
    Symlink,
}

/// Attributes of a logical file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    /// Kind.
    pub kind: FileKind,
    /// Full `st_mode` (type and permission bits).
    pub mode: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Logical size in bytes.
    pub size: u64,
    /// 512-byte blocks.
    pub blocks: u64,
    /// Preferred I/O size.
    pub blksize: u64,
    /// Access time, ns since the epoch.
    pub atime_ns: i64,
    /// Modification time, ns.
    pub mtime_ns: i64,
    /// Status change time, ns.
    pub ctime_ns: i64,
    /// Inode number (of the container directory for files).
    pub ino: u64,
    /// Device of the backend.
    pub dev: u64,
    /// Link count.
    pub nlink: u64,
}

/// A directory entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    /// Name.
    pub name: OsString,
    /// Kind.
    pub kind: FileKind,
}

/// Preferred I/O size reported by stat: large, so tools read and write in big chunks.
pub const BLKSIZE: u64 = 1 << 20;

/// A resolved logical path.
#[derive(Debug, Clone)]
pub struct Loc {
    /// Its mount.
    pub mount: Arc<Mount>,
    /// Path relative to the mount point ("" for the mount point itself).
    pub rel: PathBuf,
    /// The normalised logical path.
    pub logical: PathBuf,
}

impl Loc {
    /// The backend path of this logical path on canonical backend `i`.
    pub fn on(&self, i: usize) -> PathBuf {
        if self.rel.as_os_str().is_empty() {
            self.mount.canonical[i].clone()
        } else {
            self.mount.canonical[i].join(&self.rel)
        }
    }

    /// The canonical backend that holds this name's container.
    pub fn home(&self) -> usize {
        let base = self.rel.file_name().map(|n| n.as_bytes()).unwrap_or(b"");
        (format::hash_str(&String::from_utf8_lossy(base)) % self.mount.canonical.len() as u64) as usize
    }

    /// Where this name exists: its home backend first, then any other (after a backend list
    /// change). Returns (backend index, what is there).
    pub fn find(&self) -> Result<(usize, Probe)> {
        let (b, p) = self.find_raw()?;
        if self.inside_container(b)? {
            return Err(Error::errno(
                Errno::NOTDIR,
                format!("{}: a path component is a file", self.logical.display()),
            ));
        }
        Ok((b, p))
    }

    fn find_raw(&self) -> Result<(usize, Probe)> {
        let h = self.home();
        let p = container::probe(&self.on(h))?;
        if p != Probe::Missing || self.mount.canonical.len() == 1 {
            return Ok((h, p));
        }
        for i in 0..self.mount.canonical.len() {
            if i != h {
                let p = container::probe(&self.on(i))?;
                if p != Probe::Missing {
                    return Ok((i, p));
                }
            }
        }
        Ok((h, Probe::Missing))
    }

    /// True if this path on backend `b` goes through a file: its parent or grandparent is a
    /// container (nothing inside a container is deeper than two levels).
    fn inside_container(&self, b: usize) -> Result<bool> {
        let depth = self.rel.components().count();
        let mut p = self.on(b);
        for _ in 1..depth.min(3) {
            if !p.pop() {
                break;
            }
            if sys::lstat_opt(&p.join(format::MARKER_NAME))?.is_some() {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The parent directory's location ("" = the mount point).
    pub fn parent(&self) -> Loc {
        Loc {
            mount: self.mount.clone(),
            rel: self.rel.parent().unwrap_or(Path::new("")).to_path_buf(),
            logical: self.logical.parent().unwrap_or(Path::new("/")).to_path_buf(),
        }
    }
}

/// A PLFS instance: configuration plus the per-process table of open containers.
#[derive(Debug)]
pub struct Plfs {
    config: Config,
    mounts: Vec<Arc<Mount>>,
    open: Mutex<HashMap<(u64, u64), Weak<Shared>>>,
    /// 1-N directory views, by logical directory path.
    small: Mutex<HashMap<PathBuf, Arc<SmallDir>>>,
    umask: u32,
}

/// 1-N views kept cached beyond those in use.
const SMALL_CACHE: usize = 256;

fn stat_times(st: &sys::RawStat) -> (i64, i64, i64) {
    let ns = |s: i64, n: u64| s.saturating_mul(1_000_000_000).saturating_add(n as i64);
    (
        ns(st.st_atime, st.st_atime_nsec),
        ns(st.st_mtime, st.st_mtime_nsec),
        ns(st.st_ctime, st.st_ctime_nsec),
    )
}

pub(crate) fn raw_to_stat(st: &sys::RawStat, kind: FileKind) -> Stat {
    let (a, m, c) = stat_times(st);
    Stat {
        kind,
        mode: st.st_mode,
        uid: st.st_uid,
        gid: st.st_gid,
        size: st.st_size as u64,
        blocks: st.st_blocks as u64,
        blksize: st.st_blksize as u64,
        atime_ns: a,
        mtime_ns: m,
        ctime_ns: c,
        ino: st.st_ino,
        dev: st.st_dev,
        nlink: st.st_nlink,
    }
}

/// Permission check of `want` (R=4, W=2, X=1) against a stat, for files whose permissions the
/// kernel cannot check (packed 1-N files). Uses the real ids, like access(2); root passes except
/// for execute on a file with no x bit.
fn check_mode(st: &Stat, want: u32) -> std::result::Result<(), ()> {
    let uid = rustix::process::getuid().as_raw();
    if uid == 0 {
        return if want & 1 != 0 && st.mode & 0o111 == 0 {
            Err(())
        } else {
            Ok(())
        };
    }
    let bits = if uid == st.uid {
        (st.mode >> 6) & 7
    } else if rustix::process::getgid().as_raw() == st.gid {
        (st.mode >> 3) & 7
    } else {
        st.mode & 7
    };
    if bits & want == want {
        Ok(())
    } else {
        Err(())
    }
}

/// Names PLFS uses inside backends, which logical paths may not contain.
pub fn is_reserved_name(n: &[u8]) -> bool {
    n == format::MARKER_NAME.as_bytes()
        || n == format::SHADOW_ROOT.as_bytes()
        || n == smallfile::SMALL_DIR.as_bytes()
        || n.starts_with(format::TMP_PREFIX.as_bytes())
}

/// Reads the process umask from /proc/self/status without changing it (0o022 if unknown).
fn read_umask() -> u32 {
    sys::read_file(Path::new("/proc/self/status"))
        .ok()
        .and_then(|b| {
            let s = String::from_utf8_lossy(&b).into_owned();
            s.lines().find_map(|l| {
                l.strip_prefix("Umask:")
                    .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
            })
        })
        .unwrap_or(0o022)
}

impl Plfs {
    /// Builds an instance from a configuration. Backends of the zero-config default are created;
    /// configured backends must exist (`plfs check-config --mkdir` creates them).
    pub fn new(config: Config) -> Result<Plfs> {
        let mut mounts = Vec::new();
        for m in &config.mounts {
            let canonical: Vec<PathBuf> = m.canonical().into_iter().map(Path::to_path_buf).collect();
            let shadows: Vec<PathBuf> = m.shadows().into_iter().map(Path::to_path_buf).collect();
            if canonical.is_empty() || shadows.is_empty() {
                return Err(Error::Config(format!(
                    "mount point {}: needs at least one canonical and one shadow backend",
                    m.mount_point.display()
                )));
            }
            for b in &m.backends {
                if config.files.is_empty() {
                    sys::mkdir_all(&b.location, 0o700)?;
                } else if sys::lstat_opt(&b.location)?.is_none() {
                    return Err(Error::Config(format!(
                        "mount point {}: backend {} does not exist (create it, or run `plfs check-config --mkdir`)",
                        m.mount_point.display(),
                        b.location.display()
                    )));
                }
            }
            mounts.push(Arc::new(Mount {
                cfg: m.clone(),
                global: config.global.clone(),
                canonical,
                shadows,
            }));
        }
        Ok(Plfs {
            config,
            mounts,
            open: Mutex::new(HashMap::new()),
            small: Mutex::new(HashMap::new()),
            umask: read_umask(),
        })
    }

    /// Loads the configuration from the environment ([`Config::load`]) and builds an instance.
    pub fn from_env() -> Result<Plfs> {
        Plfs::new(Config::load()?)
    }

    /// The configuration in use.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The resolved mounts.
    pub fn mounts(&self) -> &[Arc<Mount>] {
        &self.mounts
    }

    /// Resolves a logical path (absolute; `.`/`..` resolved lexically) to its mount.
    pub fn resolve(&self, path: &Path) -> Result<Loc> {
        let (m, rel) = self
            .config
            .mount_for(path)
            .ok_or_else(|| Error::errno(Errno::XDEV, format!("{}: not under a PLFS mount point", path.display())))?;
        if let Some(bad) = rel.components().find(|c| is_reserved_name(c.as_os_str().as_bytes())) {
            return Err(Error::InvalidArgument(format!(
                "{}: {:?} is a name reserved by PLFS",
                path.display(),
                bad.as_os_str()
            )));
        }
        let mount = self
            .mounts
            .iter()
            .find(|x| x.cfg.mount_point == m.mount_point)
            .cloned()
            .expect("mount resolved from this config");
        let logical = if rel.as_os_str().is_empty() {
            mount.cfg.mount_point.clone()
        } else {
            mount.cfg.mount_point.join(&rel)
        };
        Ok(Loc { mount, rel, logical })
    }

    /// True if `path` is under a PLFS mount point.
    pub fn is_plfs_path(&self, path: &Path) -> bool {
        self.config.mount_for(path).is_some()
    }

    /// The 1-N view of directory `rel` of `mount`.
    fn small_dir(&self, mount: &Arc<Mount>, rel: &Path) -> Arc<SmallDir> {
        let key = mount.cfg.mount_point.join(rel);
        let mut t = self.small.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(d) = t.get(&key) {
            return d.clone();
        }
        if t.len() >= SMALL_CACHE {
            t.retain(|_, d| Arc::strong_count(d) > 1);
        }
        let d = Arc::new(SmallDir::new(mount.clone(), rel.to_path_buf(), self.umask));
        t.insert(key, d.clone());
        d
    }

    /// The 1-N view holding a file path, and the file's name.
    fn small_parts(&self, loc: &Loc) -> Result<(Arc<SmallDir>, String)> {
        let name = loc
            .rel
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| Error::InvalidArgument(format!("{}: not a valid packed file name", loc.logical.display())))?
            .to_string();
        let parent = loc.rel.parent().unwrap_or(Path::new(""));
        Ok((self.small_dir(&loc.mount, parent), name))
    }

    /// For a 1-N mount, the packed file at `loc` if the backend has nothing there.
    fn small_lookup(&self, loc: &Loc, p: Probe) -> Result<Option<(Arc<SmallDir>, String, Stat)>> {
        if loc.mount.cfg.workload != Workload::SmallFile || p != Probe::Missing || loc.rel.as_os_str().is_empty() {
            return Ok(None);
        }
        let (d, name) = self.small_parts(loc)?;
        Ok(d.entry(&name)?.map(|(_, st)| (d, name, st)))
    }

    /// Forgets cached 1-N views at or under a logical directory (after rename or rmdir).
    fn forget_small(&self, logical: &Path) {
        let mut t = self.small.lock().unwrap_or_else(|p| p.into_inner());
        t.retain(|k, _| !k.starts_with(logical));
    }

    pub(crate) fn shared(&self, c: Container, logical: &Path) -> Arc<Shared> {
        let mut t = self.open.lock().unwrap_or_else(|p| p.into_inner());
        t.retain(|_, w| w.strong_count() > 0);
        if let Some(s) = t.get(&c.ident).and_then(Weak::upgrade) {
            return s;
        }
        let ident = c.ident;
        let s = Arc::new(Shared::new(c, logical.to_path_buf()));
        t.insert(ident, Arc::downgrade(&s));
        s
    }

    fn open_container(&self, loc: &Loc) -> Result<Arc<Shared>> {
        let (b, p) = loc.find()?;
        match p {
            Probe::Missing => Err(Error::NotFound(loc.logical.clone())),
            Probe::Dir => Err(Error::errno(
                Errno::ISDIR,
                format!("{}: is a directory", loc.logical.display()),
            )),
            Probe::Symlink | Probe::Other => Err(Error::errno(
                Errno::INVAL,
                format!("{}: not a PLFS file", loc.logical.display()),
            )),
            Probe::Container => match Container::open(&loc.mount, b, &loc.on(b))? {
                Some(c) => Ok(self.shared(c, &loc.logical)),
                None => Err(Error::NotFound(loc.logical.clone())),
            },
        }
    }

    /// Checks that the parent of `loc` is a logical directory, and that it exists on the backend
    /// where `loc` will be created (directories are replicated; a missing replica is recreated).
    fn check_parent(&self, loc: &Loc) -> Result<()> {
        let parent = loc.parent();
        if parent.rel.as_os_str().is_empty() {
            return Ok(());
        }
        let notdir = || {
            Error::errno(
                Errno::NOTDIR,
                format!("{}: a path component is not a directory", loc.logical.display()),
            )
        };
        match parent.find()? {
            (b, Probe::Dir) => {
                let here = parent.on(loc.home());
                if loc.home() != b && sys::lstat_opt(&here)?.is_none() {
                    let mode = sys::lstat(&parent.on(b))?.st_mode & 0o7777;
                    sys::mkdir_all(&here, mode)?;
                }
                Ok(())
            }
            (_, Probe::Missing) if self.small_lookup(&parent, Probe::Missing)?.is_some() => Err(notdir()),
            (_, Probe::Missing) => Err(Error::NotFound(parent.logical)),
            _ => Err(notdir()),
        }
    }

    /// Creates a file if it does not exist. Returns true if this call created it.
    pub fn create(&self, path: &Path, mode: u32, excl: bool) -> Result<bool> {
        let loc = self.resolve(path)?;
        if loc.rel.as_os_str().is_empty() {
            return Err(Error::errno(
                Errno::ISDIR,
                format!("{}: is a directory", loc.logical.display()),
            ));
        }
        let (_, p) = loc.find()?;
        match loc.mount.cfg.workload {
            Workload::SharedFile => {}
            Workload::FilePerProc => return self.create_plain(&loc, p, mode, excl),
            Workload::SmallFile => {
                match p {
                    Probe::Missing => {}
                    Probe::Dir => {
                        return Err(Error::errno(
                            Errno::ISDIR,
                            format!("{}: is a directory", loc.logical.display()),
                        ))
                    }
                    _ => return Err(Error::Exists(loc.logical.clone())),
                }
                self.check_parent(&loc)?;
                let (d, name) = self.small_parts(&loc)?;
                return Ok(d.create(&name, mode, excl)?.1);
            }
        }
        match p {
            Probe::Missing => {}
            Probe::Container if !excl => return Ok(false),
            Probe::Dir => {
                return Err(Error::errno(
                    Errno::ISDIR,
                    format!("{}: is a directory", loc.logical.display()),
                ))
            }
            _ => return Err(Error::Exists(loc.logical.clone())),
        }
        self.check_parent(&loc)?;
        let created = Container::create(&loc.on(loc.home()), mode & !self.umask & 0o7777, None)?;
        if !created {
            if excl {
                return Err(Error::Exists(loc.logical.clone()));
            }
            // Lost a race: make sure what won is a file.
            if container::probe(&loc.on(loc.home()))? != Probe::Container {
                return Err(Error::errno(
                    Errno::ISDIR,
                    format!("{}: is a directory", loc.logical.display()),
                ));
            }
        }
        Ok(created)
    }

    fn create_plain(&self, loc: &Loc, p: Probe, mode: u32, excl: bool) -> Result<bool> {
        match p {
            Probe::Missing => {}
            Probe::Dir => {
                return Err(Error::errno(
                    Errno::ISDIR,
                    format!("{}: is a directory", loc.logical.display()),
                ))
            }
            _ if excl => return Err(Error::Exists(loc.logical.clone())),
            _ => return Ok(false),
        }
        self.check_parent(loc)?;
        use rustix::fs::OFlags;
        match sys::open(
            &loc.on(loc.home()),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL,
            mode & 0o7777,
        ) {
            Ok(_) => Ok(true),
            Err(Error::Io {
                errno: Errno::EXIST, ..
            }) if !excl => Ok(false),
            Err(Error::Io {
                errno: Errno::EXIST, ..
            }) => Err(Error::Exists(loc.logical.clone())),
            Err(e) => Err(e),
        }
    }

    fn open_plain(&self, loc: &Loc, flags: OpenFlags) -> Result<OpenFile> {
        let (b, p) = loc.find()?;
        match p {
            Probe::Missing => return Err(Error::NotFound(loc.logical.clone())),
            Probe::Dir => {
                return Err(Error::errno(
                    Errno::ISDIR,
                    format!("{}: is a directory", loc.logical.display()),
                ))
            }
            _ => {}
        }
        let f = PlainFile::open(loc.on(b), flags.read, flags.write).map_err(|e| match e {
            Error::Io { errno, .. } => Error::errno(errno, format!("{}: {errno}", loc.logical.display())),
            e => e,
        })?;
        if flags.trunc && flags.write {
            f.truncate(0)?;
        }
        Ok(OpenFile::plain(f, loc.logical.clone(), flags))
    }

    /// Opens (and with `flags.create`, creates) a packed 1-N file: one probe of the backend
    /// path, one look-up in the directory's view.
    fn open_small(&self, loc: &Loc, flags: OpenFlags, mode: u32) -> Result<OpenFile> {
        match loc.find()?.1 {
            Probe::Missing => {}
            Probe::Dir => {
                return Err(Error::errno(
                    Errno::ISDIR,
                    format!("{}: is a directory", loc.logical.display()),
                ))
            }
            _ if flags.create && flags.excl => return Err(Error::Exists(loc.logical.clone())),
            _ => {
                return Err(Error::errno(
                    Errno::INVAL,
                    format!("{}: not a packed file", loc.logical.display()),
                ))
            }
        }
        if loc.rel.as_os_str().is_empty() {
            return Err(Error::errno(
                Errno::ISDIR,
                format!("{}: is a directory", loc.logical.display()),
            ));
        }
        let (d, name) = self.small_parts(loc)?;
        let h = match d.entry(&name)? {
            Some(_) if flags.create && flags.excl => return Err(Error::Exists(loc.logical.clone())),
            Some((id, st)) => {
                let want = if flags.read { 4 } else { 0 } | if flags.write { 2 } else { 0 };
                check_mode(&st, want).map_err(|_| {
                    Error::errno(Errno::ACCESS, format!("{}: permission denied", loc.logical.display()))
                })?;
                let h = d.handle(id);
                if flags.trunc && flags.write {
                    h.truncate(0)?;
                }
                h
            }
            None if !flags.create => return Err(Error::NotFound(loc.logical.clone())),
            None => {
                self.check_parent(loc)?;
                d.handle(d.create(&name, mode, flags.excl)?.0)
            }
        };
        Ok(OpenFile::small(h, loc.logical.clone(), flags))
    }

    /// Opens a logical file. `pid` names this handle's writer (an MPI rank or the process id).
    pub fn open(&self, path: &Path, flags: OpenFlags, mode: u32, pid: u32) -> Result<OpenFile> {
        let loc = self.resolve(path)?;
        match loc.mount.cfg.workload {
            Workload::SharedFile => {}
            Workload::FilePerProc => {
                if flags.create {
                    self.create(path, mode, flags.excl)?;
                }
                return self.open_plain(&loc, flags);
            }
            Workload::SmallFile => return self.open_small(&loc, flags, mode),
        }
        let mut created = false;
        if flags.create {
            created = self.create(path, mode, flags.excl)?;
        }
        let shared = self.open_container(&loc)?;
        if !created {
            let want = if flags.read { 4 } else { 0 } | if flags.write { 2 } else { 0 };
            if want != 0 && rustix::process::geteuid().as_raw() != 0 {
                let marker = shared.c.current_path().join(format::MARKER_NAME);
                sys::access(&marker, want).map_err(|_| {
                    Error::errno(Errno::ACCESS, format!("{}: permission denied", loc.logical.display()))
                })?;
            }
        }
        if flags.trunc && flags.write && !created {
            shared.truncate(0)?;
        }
        OpenFile::new(shared, loc.logical, flags, pid)
    }

    /// stat without following a final symlink.
    pub fn stat(&self, path: &Path) -> Result<Stat> {
        let loc = self.resolve(path)?;
        let (b, p) = loc.find()?;
        let bp = loc.on(b);
        if let Some((_, _, st)) = self.small_lookup(&loc, p)? {
            return Ok(st);
        }
        match p {
            Probe::Missing => Err(Error::NotFound(loc.logical.clone())),
            Probe::Dir => Ok(raw_to_stat(&sys::lstat(&bp)?, FileKind::Dir)),
            Probe::Symlink => Ok(raw_to_stat(&sys::lstat(&bp)?, FileKind::Symlink)),
            Probe::Other => {
                let st = sys::lstat(&bp)?;
                let kind = if sys::FileType::from_raw_mode(st.st_mode) == sys::FileType::Symlink {
                    FileKind::Symlink
                } else {
                    FileKind::File
                };
                Ok(raw_to_stat(&st, kind))
            }
            Probe::Container => {
                let c = Container::open(&loc.mount, b, &bp)?.ok_or_else(|| Error::NotFound(loc.logical.clone()))?;
                self.stat_container(c, &loc.logical)
            }
        }
    }

    fn stat_container(&self, c: Container, logical: &Path) -> Result<Stat> {
        let mst = c.marker_stat()?;
        let ino = c.ident.1;
        let in_process = {
            let t = self.open.lock().unwrap_or_else(|p| p.into_inner());
            t.get(&c.ident).and_then(Weak::upgrade)
        };
        let meta = c.list_meta()?;
        let size = match (&in_process, container::fast_size(&meta)) {
            (None, Some((size, _))) => size,
            (Some(s), _) => s.size()?,
            (None, None) => self.shared(c, logical).size()?,
        };
        let mut st = raw_to_stat(&mst, FileKind::File);
        st.mode = (mst.st_mode & 0o7777) | 0o100000;
        st.size = size;
        st.blocks = size.div_ceil(512);
        st.blksize = BLKSIZE;
        st.nlink = 1;
        // The container directory's inode: the same number fstat reports, and stable across renames.
        st.ino = ino;
        Ok(st)
    }

    /// stat of an open file (sees this process's unflushed writes).
    pub fn fstat(&self, f: &OpenFile) -> Result<Stat> {
        if let Some(st) = f.stat_other() {
            return st;
        }
        let c = &f.shared().expect("container-backed").c;
        let mst = c.marker_stat()?;
        let mut st = raw_to_stat(&mst, FileKind::File);
        st.mode = (mst.st_mode & 0o7777) | 0o100000;
        st.size = f.size()?;
        st.blocks = st.size.div_ceil(512);
        st.blksize = BLKSIZE;
        st.nlink = 1;
        st.ino = c.ident.1;
        Ok(st)
    }

    /// Truncates a file by path.
    pub fn truncate(&self, path: &Path, size: u64) -> Result<()> {
        let loc = self.resolve(path)?;
        match loc.mount.cfg.workload {
            Workload::SharedFile => {}
            Workload::FilePerProc => {
                return self
                    .open_plain(
                        &loc,
                        OpenFlags {
                            write: true,
                            ..Default::default()
                        },
                    )?
                    .truncate(size)
            }
            Workload::SmallFile => {
                let h = self.open_small(
                    &loc,
                    OpenFlags {
                        write: true,
                        ..Default::default()
                    },
                    0,
                )?;
                h.truncate(size)?;
                return h.close();
            }
        }
        let shared = self.open_container(&loc)?;
        shared.truncate(size)
    }

    /// Removes a file or symlink.
    pub fn unlink(&self, path: &Path) -> Result<()> {
        let loc = self.resolve(path)?;
        let (b, p) = loc.find()?;
        let bp = loc.on(b);
        if let Some((d, name, _)) = self.small_lookup(&loc, p)? {
            return d.unlink(&name);
        }
        match p {
            Probe::Missing => Err(Error::NotFound(loc.logical.clone())),
            Probe::Dir => Err(Error::errno(
                Errno::ISDIR,
                format!("{}: is a directory", loc.logical.display()),
            )),
            Probe::Symlink | Probe::Other => sys::unlink(&bp),
            Probe::Container => self.remove_container(&loc.mount, b, &bp),
        }
    }

    /// Removes a container: first renamed aside (so it disappears atomically), then deleted with
    /// its shadow directories.
    fn remove_container(&self, mount: &Arc<Mount>, b: usize, bp: &Path) -> Result<()> {
        let c = Container::open(mount, b, bp)?.ok_or_else(|| Error::NotFound(bp.to_path_buf()))?;
        let trash = bp.with_file_name(format!("{}rm.{:016x}", format::TMP_PREFIX, crate::clock::random_u64()));
        sys::rename(bp, &trash)?;
        let mut doomed: Vec<PathBuf> = mount.shadows.iter().map(|s| c.shadow_dir(s)).collect();
        doomed.push(trash);
        let open_here = {
            let t = self.open.lock().unwrap_or_else(|p| p.into_inner());
            t.get(&c.ident).and_then(Weak::upgrade)
        };
        match open_here {
            Some(shared) => {
                shared.doom(doomed);
                Ok(())
            }
            None => {
                // The name is gone already; failing to reclaim the space must not report the
                // unlink as failed (a retry would get ENOENT).
                for p in &doomed {
                    if let Err(e) = sys::remove_tree(p) {
                        crate::warn!("{e}: unlinked, but its data could not be removed (plfs fsck reports it)");
                    }
                }
                Ok(())
            }
        }
    }

    /// Renames a file, symlink or directory within one mount point.
    pub fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        let lf = self.resolve(from)?;
        let lt = self.resolve(to)?;
        if !Arc::ptr_eq(&lf.mount, &lt.mount) {
            return Err(Error::errno(
                Errno::XDEV,
                format!("{} and {} are on different mount points", from.display(), to.display()),
            ));
        }
        if lf.logical == lt.logical {
            return Ok(());
        }
        if lf.rel.as_os_str().is_empty() || lt.rel.as_os_str().is_empty() {
            return Err(Error::errno(
                Errno::BUSY,
                format!("{}: cannot rename a mount point", lf.logical.display()),
            ));
        }
        if lt.logical.starts_with(&lf.logical) {
            return Err(Error::errno(
                Errno::INVAL,
                format!("cannot move {} into itself", lf.logical.display()),
            ));
        }
        let (bf, pf) = lf.find()?;
        let (bt_found, pt) = lt.find()?;
        if let Some((d, name, _)) = self.small_lookup(&lf, pf)? {
            return self.rename_small(&d, &name, &lt, pt);
        }
        if pf == Probe::Dir {
            self.forget_small(&lf.logical);
        }
        match pf {
            Probe::Missing => Err(Error::NotFound(lf.logical.clone())),
            Probe::Dir => {
                match pt {
                    Probe::Container | Probe::Symlink | Probe::Other => {
                        return Err(Error::errno(
                            Errno::NOTDIR,
                            format!("{}: not a directory", lt.logical.display()),
                        ))
                    }
                    _ => {}
                }
                self.check_parent(&lt)?;
                for i in 0..lf.mount.canonical.len() {
                    match sys::rename(&lf.on(i), &lt.on(i)) {
                        Err(Error::Io {
                            errno: Errno::NOENT, ..
                        }) if i > 0 => {}
                        r => r?,
                    }
                }
                Ok(())
            }
            Probe::Container | Probe::Symlink | Probe::Other => {
                if pt == Probe::Dir {
                    return Err(Error::errno(
                        Errno::ISDIR,
                        format!("{}: is a directory", lt.logical.display()),
                    ));
                }
                self.check_parent(&lt)?;
                let src = lf.on(bf);
                let dst = lt.on(lt.home());
                match pt {
                    Probe::Container => {
                        let old = lt.on(bt_found);
                        // Atomically swap, then delete what used to be the target.
                        match rustix::fs::renameat_with(
                            rustix::fs::CWD,
                            &src,
                            rustix::fs::CWD,
                            &old,
                            rustix::fs::RenameFlags::EXCHANGE,
                        ) {
                            Ok(()) if pf == Probe::Container => self.remove_container(&lf.mount, bf, &src),
                            Ok(()) => sys::unlink(&src),
                            Err(_) => {
                                self.remove_container(&lt.mount, bt_found, &old)?;
                                sys::rename(&src, &dst)
                            }
                        }
                    }
                    Probe::Symlink | Probe::Other => {
                        if pf == Probe::Container {
                            sys::unlink(&lt.on(bt_found))?;
                        }
                        sys::rename(&src, &dst)
                    }
                    _ => sys::rename(&src, &dst),
                }
            }
        }
    }

    fn rename_small(&self, d: &Arc<SmallDir>, name: &str, lt: &Loc, pt: Probe) -> Result<()> {
        if pt == Probe::Dir {
            return Err(Error::errno(
                Errno::ISDIR,
                format!("{}: is a directory", lt.logical.display()),
            ));
        }
        self.check_parent(lt)?;
        let (td, tname) = self.small_parts(lt)?;
        if Arc::ptr_eq(d, &td) {
            return d.rename(name, &tname);
        }
        // Across directories: copy into the target directory's logs, then unlink the source.
        let src = d.handle(d.id(name)?);
        let st = src.stat()?;
        let (tid, _) = td.create(&tname, st.mode & 0o7777, false)?;
        let dst = td.handle(tid);
        dst.truncate(0)?;
        let mut buf = vec![0u8; 1 << 20];
        let mut off = 0u64;
        loop {
            let n = src.read(&mut buf, off)?;
            if n == 0 {
                break;
            }
            dst.write(&buf[..n], off)?;
            off += n as u64;
        }
        if st.size > off {
            dst.truncate(st.size)?;
        }
        dst.close()?;
        td.setattr(
            &tname,
            smallfile::SET_MODE | smallfile::SET_MTIME,
            st.mode,
            0,
            0,
            0,
            st.mtime_ns,
        )?;
        d.unlink(name)
    }

    /// Creates a directory on every canonical backend.
    pub fn mkdir(&self, path: &Path, mode: u32) -> Result<()> {
        let loc = self.resolve(path)?;
        if loc.rel.as_os_str().is_empty() {
            return Err(Error::Exists(loc.logical.clone()));
        }
        let p0 = loc.find()?.1;
        if p0 != Probe::Missing || self.small_lookup(&loc, p0)?.is_some() {
            return Err(Error::Exists(loc.logical.clone()));
        }
        for i in 0..loc.mount.canonical.len() {
            let p = loc.on(i);
            match sys::mkdir(&p, mode & 0o7777) {
                Ok(()) => {}
                Err(Error::Io {
                    errno: Errno::EXIST, ..
                }) if i > 0 => {}
                Err(Error::Io {
                    errno: Errno::EXIST, ..
                }) => return Err(Error::Exists(loc.logical.clone())),
                Err(Error::Io {
                    errno: Errno::NOENT, ..
                }) => {
                    return Err(Error::NotFound(
                        loc.logical.parent().unwrap_or(Path::new("/")).to_path_buf(),
                    ))
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Removes an empty directory from every canonical backend.
    pub fn rmdir(&self, path: &Path) -> Result<()> {
        let loc = self.resolve(path)?;
        if loc.rel.as_os_str().is_empty() {
            return Err(Error::errno(
                Errno::BUSY,
                format!("{}: is a mount point", loc.logical.display()),
            ));
        }
        let p0 = loc.find()?.1;
        if self.small_lookup(&loc, p0)?.is_some() {
            return Err(Error::errno(
                Errno::NOTDIR,
                format!("{}: not a directory", loc.logical.display()),
            ));
        }
        match p0 {
            Probe::Missing => return Err(Error::NotFound(loc.logical.clone())),
            Probe::Dir => {}
            _ => {
                return Err(Error::errno(
                    Errno::NOTDIR,
                    format!("{}: not a directory", loc.logical.display()),
                ))
            }
        }
        if !self.readdir(path)?.is_empty() {
            return Err(Error::errno(
                Errno::NOTEMPTY,
                format!("{}: directory not empty", loc.logical.display()),
            ));
        }
        if loc.mount.cfg.workload == Workload::SmallFile {
            self.small_dir(&loc.mount, &loc.rel).remove_store()?;
            self.forget_small(&loc.logical);
        }
        for i in 0..loc.mount.canonical.len() {
            let p = loc.on(i);
            // Debris of interrupted creates is not a logical entry: clear it first.
            for n in sys::read_dir_opt(&p)? {
                if n.as_bytes().starts_with(format::TMP_PREFIX.as_bytes()) {
                    sys::remove_tree(&p.join(n))?;
                }
            }
            match sys::rmdir(&p) {
                Ok(()) => {}
                Err(Error::Io {
                    errno: Errno::NOENT, ..
                }) if i > 0 => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Lists a logical directory: the union over canonical backends, sorted by name, without
    /// `.`/`..`. Containers list as files.
    pub fn readdir(&self, path: &Path) -> Result<Vec<DirEntry>> {
        let loc = self.resolve(path)?;
        if !loc.rel.as_os_str().is_empty() {
            loc.find()?; // ENOTDIR for a path through a file
        }
        let mut seen: BTreeMap<OsString, FileKind> = BTreeMap::new();
        let mut any = false;
        for i in 0..loc.mount.canonical.len() {
            let dir = loc.on(i);
            let names = match sys::read_dir(&dir) {
                Ok(n) => n,
                Err(Error::Io {
                    errno: Errno::NOENT, ..
                }) => continue,
                Err(Error::Io {
                    errno: Errno::NOTDIR, ..
                }) => {
                    return Err(Error::errno(
                        Errno::NOTDIR,
                        format!("{}: not a directory", loc.logical.display()),
                    ))
                }
                Err(e) => return Err(e),
            };
            if !any && container::probe(&dir)? == Probe::Container {
                return Err(Error::errno(
                    Errno::NOTDIR,
                    format!("{}: not a directory", loc.logical.display()),
                ));
            }
            any = true;
            for n in names {
                let b = n.as_bytes();
                if b.starts_with(format::TMP_PREFIX.as_bytes())
                    || b == format::SHADOW_ROOT.as_bytes()
                    || b == smallfile::SMALL_DIR.as_bytes()
                    || seen.contains_key(&n)
                {
                    continue;
                }
                let kind = match container::probe(&dir.join(&n))? {
                    Probe::Missing => continue,
                    Probe::Dir => FileKind::Dir,
                    Probe::Symlink => FileKind::Symlink,
                    Probe::Container | Probe::Other => FileKind::File,
                };
                seen.insert(n, kind);
            }
        }
        if !any {
            if let Some((..)) = self.small_lookup(&loc, loc.find()?.1)? {
                return Err(Error::errno(
                    Errno::NOTDIR,
                    format!("{}: not a directory", loc.logical.display()),
                ));
            }
            return Err(Error::NotFound(loc.logical.clone()));
        }
        if loc.mount.cfg.workload == Workload::SmallFile {
            for name in self.small_dir(&loc.mount, &loc.rel).names()? {
                seen.entry(OsString::from(name)).or_insert(FileKind::File);
            }
        }
        Ok(seen.into_iter().map(|(name, kind)| DirEntry { name, kind }).collect())
    }

    fn on_every_dir_backend(&self, loc: &Loc, f: impl Fn(&Path) -> Result<()>) -> Result<()> {
        for i in 0..loc.mount.canonical.len() {
            match f(&loc.on(i)) {
                Err(Error::Io {
                    errno: Errno::NOENT, ..
                }) if i > 0 => {}
                r => r?,
            }
        }
        Ok(())
    }

    /// chmod.
    pub fn chmod(&self, path: &Path, mode: u32) -> Result<()> {
        let loc = self.resolve(path)?;
        let (b, p) = loc.find()?;
        if let Some((d, name, _)) = self.small_lookup(&loc, p)? {
            return d.setattr(&name, smallfile::SET_MODE, mode, 0, 0, 0, 0);
        }
        match p {
            Probe::Missing => Err(Error::NotFound(loc.logical.clone())),
            Probe::Container => {
                let bp = loc.on(b);
                sys::chmod(&bp.join(format::MARKER_NAME), mode & 0o7777)?;
                sys::chmod(&bp, container::container_dir_mode(mode))
            }
            Probe::Dir => self.on_every_dir_backend(&loc, |p| sys::chmod(p, mode & 0o7777)),
            Probe::Symlink | Probe::Other => sys::chmod(&loc.on(b), mode & 0o7777),
        }
    }

    /// chown (`u32::MAX` leaves an id unchanged); does not follow a final symlink.
    pub fn chown(&self, path: &Path, uid: u32, gid: u32) -> Result<()> {
        let loc = self.resolve(path)?;
        let (b, p) = loc.find()?;
        if let Some((d, name, _)) = self.small_lookup(&loc, p)? {
            let mask = if uid != u32::MAX { smallfile::SET_UID } else { 0 }
                | if gid != u32::MAX { smallfile::SET_GID } else { 0 };
            return d.setattr(&name, mask, 0, uid, gid, 0, 0);
        }
        match p {
            Probe::Missing => Err(Error::NotFound(loc.logical.clone())),
            Probe::Container => {
                let bp = loc.on(b);
                sys::lchown(&bp.join(format::MARKER_NAME), uid, gid)?;
                sys::lchown(&bp, uid, gid)
            }
            Probe::Dir => self.on_every_dir_backend(&loc, |p| sys::lchown(p, uid, gid)),
            Probe::Symlink | Probe::Other => sys::lchown(&loc.on(b), uid, gid),
        }
    }

    /// Sets access and modification times (does not follow a final symlink).
    pub fn utimens(&self, path: &Path, atime: sys::TimeSpec, mtime: sys::TimeSpec) -> Result<()> {
        let loc = self.resolve(path)?;
        let (b, p) = loc.find()?;
        if let Some((d, name, _)) = self.small_lookup(&loc, p)? {
            let now = crate::clock::now_ns() as i64;
            let conv = |t: sys::TimeSpec, bit: u32| match t {
                sys::TimeSpec::Omit => (0, 0),
                sys::TimeSpec::Now => (bit, now),
                sys::TimeSpec::At(s, n) => (bit, s.saturating_mul(1_000_000_000).saturating_add(n)),
            };
            let (ma, a) = conv(atime, smallfile::SET_ATIME);
            let (mm, m) = conv(mtime, smallfile::SET_MTIME);
            return d.setattr(&name, ma | mm, 0, 0, 0, a, m);
        }
        match p {
            Probe::Missing => Err(Error::NotFound(loc.logical.clone())),
            Probe::Container => sys::utimens(&loc.on(b).join(format::MARKER_NAME), atime, mtime, true),
            Probe::Dir => self.on_every_dir_backend(&loc, |p| sys::utimens(p, atime, mtime, true)),
            Probe::Symlink | Probe::Other => sys::utimens(&loc.on(b), atime, mtime, true),
        }
    }

    /// access(2): `mode` is a mask of R_OK=4, W_OK=2, X_OK=1 (0 = existence).
    pub fn access(&self, path: &Path, mode: u32) -> Result<()> {
        let loc = self.resolve(path)?;
        let (b, p) = loc.find()?;
        if let Some((_, _, st)) = self.small_lookup(&loc, p)? {
            return check_mode(&st, mode)
                .map_err(|_| Error::errno(Errno::ACCESS, format!("{}: permission denied", loc.logical.display())));
        }
        let target = match p {
            Probe::Missing => return Err(Error::NotFound(loc.logical.clone())),
            Probe::Container => loc.on(b).join(format::MARKER_NAME),
            _ => loc.on(b),
        };
        sys::access(&target, mode).map_err(|e| match e {
            Error::Io { errno, .. } => Error::errno(errno, format!("{}: {}", loc.logical.display(), errno)),
            e => e,
        })
    }

    /// Creates a symbolic link `link` whose contents are `target` (stored verbatim).
    pub fn symlink(&self, target: &Path, link: &Path) -> Result<()> {
        let loc = self.resolve(link)?;
        let p0 = if loc.rel.as_os_str().is_empty() {
            Probe::Dir
        } else {
            loc.find()?.1
        };
        if p0 != Probe::Missing || self.small_lookup(&loc, p0)?.is_some() {
            return Err(Error::Exists(loc.logical.clone()));
        }
        self.check_parent(&loc)?;
        sys::symlink(target, &loc.on(loc.home()))
    }

    /// Reads a symbolic link.
    pub fn readlink(&self, path: &Path) -> Result<OsString> {
        let loc = self.resolve(path)?;
        let (b, p) = loc.find()?;
        match p {
            Probe::Missing => Err(Error::NotFound(loc.logical.clone())),
            Probe::Symlink => sys::readlink(&loc.on(b)),
            _ => Err(Error::errno(
                Errno::INVAL,
                format!("{}: not a symbolic link", loc.logical.display()),
            )),
        }
    }

    /// File system statistics of the first canonical backend.
    pub fn statvfs(&self, path: &Path) -> Result<rustix::fs::StatVfs> {
        let loc = self.resolve(path)?;
        sys::statvfs(&loc.mount.canonical[0])
    }

    /// Space accounting of the packed (1-N) files of a logical directory, for `plfs du`; `None`
    /// on a mount whose workload is not 1-N.
    pub fn small_usage(&self, dir: &Path) -> Result<Option<smallfile::SmallUsage>> {
        let loc = self.resolve(dir)?;
        if loc.mount.cfg.workload != Workload::SmallFile {
            return Ok(None);
        }
        self.small_dir(&loc.mount, &loc.rel).usage().map(Some)
    }

    /// Opens the container behind a logical file for the tools (map, query, flatten, fsck).
    pub fn container(&self, path: &Path) -> Result<Container> {
        let loc = self.resolve(path)?;
        let (b, p) = loc.find()?;
        match p {
            Probe::Container => {}
            Probe::Missing if self.small_lookup(&loc, p)?.is_none() => {
                return Err(Error::NotFound(loc.logical.clone()))
            }
            Probe::Dir => {
                return Err(Error::errno(
                    Errno::ISDIR,
                    format!("{}: is a directory", loc.logical.display()),
                ))
            }
            _ => {
                return Err(Error::errno(
                    Errno::INVAL,
                    format!(
                        "{}: not a PLFS container (it is stored as a plain or packed file)",
                        loc.logical.display()
                    ),
                ))
            }
        }
        Container::open(&loc.mount, b, &loc.on(b))?.ok_or_else(|| Error::NotFound(loc.logical.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{BackendRole, BackendSpec, Workload};

    fn plfs_at(dir: &Path, backends: usize) -> Plfs {
        plfs_mode(dir, backends, Workload::SharedFile)
    }

    fn plfs_mode(dir: &Path, backends: usize, workload: Workload) -> Plfs {
        let mut specs = Vec::new();
        for i in 0..backends {
            let b = dir.join(format!("b{i}"));
            std::fs::create_dir_all(&b).unwrap();
            specs.push(BackendSpec {
                location: b,
                role: BackendRole::Both,
            });
        }
        let cfg = Config {
            files: vec![dir.join("plfsrc")],
            global: GlobalParams {
                index_buffer_records: 3,
                ..GlobalParams::default()
            },
            mounts: vec![MountConfig {
                mount_point: "/mnt/plfs".into(),
                workload,
                backends: specs,
            }],
            warnings: Vec::new(),
        };
        Plfs::new(cfg).unwrap()
    }

    fn tmpdir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "plfs-fs-{tag}-{}-{}",
            std::process::id(),
            crate::clock::random_u64()
        ));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn write_read_stat_roundtrip() {
        let d = tmpdir("rt");
        let p = plfs_at(&d, 2);
        let f = Path::new("/mnt/plfs/f");
        let w = p
            .open(
                f,
                OpenFlags {
                    write: true,
                    create: true,
                    ..Default::default()
                },
                0o644,
                1,
            )
            .unwrap();
        w.write(b"hello", 0).unwrap();
        w.write_as(b"WORLD", 10, 2).unwrap();
        w.write(b"xy", 1).unwrap();
        assert_eq!(p.stat(f).unwrap().size, 15);
        let r = p
            .open(
                f,
                OpenFlags {
                    read: true,
                    ..Default::default()
                },
                0,
                3,
            )
            .unwrap();
        let mut buf = [9u8; 20];
        assert_eq!(r.read(&mut buf, 0).unwrap(), 15);
        assert_eq!(&buf[..15], b"hxylo\0\0\0\0\0WORLD");
        w.close().unwrap();
        r.close().unwrap();
        // Another "process": a fresh instance, fast stat path.
        let p2 = plfs_at(&d, 2);
        assert_eq!(p2.stat(f).unwrap().size, 15);
        assert_eq!(p2.stat(f).unwrap().kind, FileKind::File);
        let r = p2
            .open(
                f,
                OpenFlags {
                    read: true,
                    ..Default::default()
                },
                0,
                3,
            )
            .unwrap();
        let mut buf = [0u8; 15];
        r.read(&mut buf, 0).unwrap();
        assert_eq!(&buf, b"hxylo\0\0\0\0\0WORLD");
        drop(r);
        p2.truncate(f, 3).unwrap();
        assert_eq!(p2.stat(f).unwrap().size, 3);
        assert_eq!(plfs_at(&d, 2).stat(f).unwrap().size, 3);
        p2.rename(f, Path::new("/mnt/plfs/g")).unwrap();
        assert!(p2.stat(f).unwrap_err().is_not_found());
        let names: Vec<_> = p2
            .readdir(Path::new("/mnt/plfs"))
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(names, vec![OsString::from("g")]);
        p2.unlink(Path::new("/mnt/plfs/g")).unwrap();
        assert!(p2.readdir(Path::new("/mnt/plfs")).unwrap().is_empty());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn flatten_is_invalidated_by_later_writes() {
        let d = tmpdir("flat");
        let p = plfs_at(&d, 1);
        let f = Path::new("/mnt/plfs/f");
        let w = p
            .open(
                f,
                OpenFlags {
                    write: true,
                    create: true,
                    ..Default::default()
                },
                0o644,
                1,
            )
            .unwrap();
        w.write(&[1u8; 30], 0).unwrap();
        w.close().unwrap();
        let rep = crate::tools::flatten(&p, f).unwrap();
        assert_eq!(rep.extents, 1);
        let w = plfs_at(&d, 1)
            .open(
                f,
                OpenFlags {
                    write: true,
                    ..Default::default()
                },
                0,
                2,
            )
            .unwrap();
        w.write(&[2u8; 10], 30).unwrap();
        w.write(&[3u8; 3], 0).unwrap();
        w.close().unwrap();
        let p2 = plfs_at(&d, 1);
        assert_eq!(p2.stat(f).unwrap().size, 40);
        let r = p2
            .open(
                f,
                OpenFlags {
                    read: true,
                    ..Default::default()
                },
                0,
                3,
            )
            .unwrap();
        let mut buf = [0u8; 40];
        assert_eq!(r.read(&mut buf, 0).unwrap(), 40);
        assert_eq!(&buf[..3], &[3, 3, 3]);
        assert_eq!(&buf[3..30], &[1u8; 27][..]);
        assert_eq!(&buf[30..], &[2u8; 10]);
        std::fs::remove_dir_all(&d).unwrap();
    }

    fn rw() -> OpenFlags {
        OpenFlags {
            read: true,
            write: true,
            create: true,
            ..Default::default()
        }
    }

    fn read_all(p: &Plfs, f: &Path) -> Vec<u8> {
        let h = p
            .open(
                f,
                OpenFlags {
                    read: true,
                    ..Default::default()
                },
                0,
                1,
            )
            .unwrap();
        let mut v = vec![0u8; p.stat(f).unwrap().size as usize];
        assert_eq!(h.read(&mut v, 0).unwrap(), v.len());
        v
    }

    #[test]
    fn n_n_mode_spreads_plain_files() {
        let d = tmpdir("nn");
        let p = plfs_mode(&d, 3, Workload::FilePerProc);
        p.mkdir(Path::new("/mnt/plfs/dir"), 0o755).unwrap();
        for i in 0..12 {
            let f = PathBuf::from(format!("/mnt/plfs/dir/rank{i}"));
            let h = p.open(&f, rw(), 0o644, i).unwrap();
            h.write(format!("data of rank {i}").as_bytes(), 0).unwrap();
            h.close().unwrap();
        }
        // Files are plain files spread over more than one backend.
        let used = (0..3)
            .filter(|b| std::fs::read_dir(d.join(format!("b{b}/dir"))).unwrap().count() > 0)
            .count();
        assert!(used > 1, "files on {used} backend(s)");
        let names = p.readdir(Path::new("/mnt/plfs/dir")).unwrap();
        assert_eq!(names.len(), 12);
        assert!(names.iter().all(|e| e.kind == FileKind::File));
        assert_eq!(read_all(&p, Path::new("/mnt/plfs/dir/rank7")), b"data of rank 7");
        p.rename(Path::new("/mnt/plfs/dir/rank7"), Path::new("/mnt/plfs/dir/seven"))
            .unwrap();
        assert_eq!(read_all(&p, Path::new("/mnt/plfs/dir/seven")), b"data of rank 7");
        p.truncate(Path::new("/mnt/plfs/dir/seven"), 4).unwrap();
        assert_eq!(p.stat(Path::new("/mnt/plfs/dir/seven")).unwrap().size, 4);
        p.unlink(Path::new("/mnt/plfs/dir/seven")).unwrap();
        assert_eq!(p.readdir(Path::new("/mnt/plfs/dir")).unwrap().len(), 11);
        assert_eq!(
            p.rmdir(Path::new("/mnt/plfs/dir")).unwrap_err().raw_errno(),
            Errno::NOTEMPTY.raw_os_error()
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn one_n_mode_packs_small_files() {
        let d = tmpdir("1n");
        let p = plfs_mode(&d, 2, Workload::SmallFile);
        p.mkdir(Path::new("/mnt/plfs/d"), 0o755).unwrap();
        for i in 0..200u32 {
            let f = PathBuf::from(format!("/mnt/plfs/d/f{i}"));
            let h = p.open(&f, rw(), 0o640, 1).unwrap();
            h.write(&vec![i as u8; 1000 + i as usize], 0).unwrap();
            h.close().unwrap();
        }
        // One log per writer, not one file per logical file.
        let logs: usize = (0..2)
            .map(|b| std::fs::read_dir(d.join(format!("b{b}/d/.plfs_small"))).map_or(0, |r| r.count()))
            .sum();
        assert_eq!(logs, 1);
        // Another process sees every file after close, with no explicit flush.
        let q = plfs_mode(&d, 2, Workload::SmallFile);
        let names = q.readdir(Path::new("/mnt/plfs/d")).unwrap();
        assert_eq!(names.len(), 200);
        assert_eq!(read_all(&q, Path::new("/mnt/plfs/d/f17")), vec![17u8; 1017]);
        let st = q.stat(Path::new("/mnt/plfs/d/f17")).unwrap();
        assert_eq!(
            (st.size, st.mode & 0o777, st.kind),
            (1017, 0o640 & !read_umask(), FileKind::File)
        );
        // Both processes write into the same directory at once.
        let hq = q.open(Path::new("/mnt/plfs/d/from_q"), rw(), 0o644, 2).unwrap();
        hq.write(b"qq", 0).unwrap();
        let hp = p.open(Path::new("/mnt/plfs/d/from_p"), rw(), 0o644, 1).unwrap();
        hp.write(b"pp", 0).unwrap();
        hq.close().unwrap();
        hp.close().unwrap();
        assert_eq!(read_all(&p, Path::new("/mnt/plfs/d/from_q")), b"qq");
        assert_eq!(read_all(&q, Path::new("/mnt/plfs/d/from_p")), b"pp");
        // Overwrite, truncate, rename (same and other directory), unlink.
        let h = p
            .open(
                Path::new("/mnt/plfs/d/f1"),
                OpenFlags {
                    read: true,
                    write: true,
                    ..Default::default()
                },
                0,
                1,
            )
            .unwrap();
        h.write(b"XY", 500).unwrap();
        h.truncate(600).unwrap();
        h.close().unwrap();
        let mut want = vec![1u8; 600];
        want[500..502].copy_from_slice(b"XY");
        assert_eq!(read_all(&q, Path::new("/mnt/plfs/d/f1")), want);
        p.rename(Path::new("/mnt/plfs/d/f1"), Path::new("/mnt/plfs/d/g1"))
            .unwrap();
        p.mkdir(Path::new("/mnt/plfs/e"), 0o755).unwrap();
        p.rename(Path::new("/mnt/plfs/d/f2"), Path::new("/mnt/plfs/e/h2"))
            .unwrap();
        p.unlink(Path::new("/mnt/plfs/d/f3")).unwrap();
        let q2 = plfs_mode(&d, 2, Workload::SmallFile);
        assert_eq!(read_all(&q2, Path::new("/mnt/plfs/d/g1")), want);
        assert_eq!(read_all(&q2, Path::new("/mnt/plfs/e/h2")), vec![2u8; 1002]);
        assert!(q2.stat(Path::new("/mnt/plfs/d/f1")).unwrap_err().is_not_found());
        assert!(q2.stat(Path::new("/mnt/plfs/d/f2")).unwrap_err().is_not_found());
        assert!(q2.stat(Path::new("/mnt/plfs/d/f3")).unwrap_err().is_not_found());
        assert_eq!(q2.readdir(Path::new("/mnt/plfs/d")).unwrap().len(), 200);
        // Names cannot escape the directory; rmdir needs an empty directory.
        assert!(q2.create(Path::new("/mnt/plfs/d/.plfs_small"), 0o644, false).is_err());
        assert_eq!(
            q2.rmdir(Path::new("/mnt/plfs/e")).unwrap_err().raw_errno(),
            Errno::NOTEMPTY.raw_os_error()
        );
        q2.unlink(Path::new("/mnt/plfs/e/h2")).unwrap();
        q2.rmdir(Path::new("/mnt/plfs/e")).unwrap();
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn strided_writers_load_compressed_and_overwrites_stay_exact() {
        let d = tmpdir("pat");
        std::fs::create_dir_all(d.join("b0")).unwrap();
        let cfg = || Config {
            files: vec![d.join("plfsrc")],
            global: GlobalParams::default(),
            mounts: vec![MountConfig {
                mount_point: "/mnt/plfs".into(),
                workload: Workload::SharedFile,
                backends: vec![BackendSpec {
                    location: d.join("b0"),
                    role: BackendRole::Both,
                }],
            }],
            warnings: Vec::new(),
        };
        let f = Path::new("/mnt/plfs/ckpt");
        let (n, rec, per) = (4u64, 100usize, 500u64);
        let p = Plfs::new(cfg()).unwrap();
        let hs: Vec<OpenFile> = (0..n)
            .map(|w| {
                p.open(
                    f,
                    OpenFlags {
                        write: true,
                        create: true,
                        ..Default::default()
                    },
                    0o644,
                    w as u32,
                )
                .unwrap()
            })
            .collect();
        let mut want = vec![0u8; (n * per) as usize * rec];
        for i in 0..per {
            for (w, h) in hs.iter().enumerate() {
                let off = ((i * n + w as u64) as usize) * rec;
                let data: Vec<u8> = (0..rec).map(|k| (off + k) as u8 ^ w as u8).collect();
                h.write(&data, off as u64).unwrap();
                want[off..off + rec].copy_from_slice(&data);
            }
        }
        for h in hs {
            h.close().unwrap();
        }
        let check = |p: &Plfs, want: &[u8]| {
            let r = p
                .open(
                    f,
                    OpenFlags {
                        read: true,
                        ..Default::default()
                    },
                    0,
                    99,
                )
                .unwrap();
            let mut got = vec![0u8; want.len()];
            assert_eq!(r.read(&mut got, 0).unwrap(), want.len());
            assert!(got == want, "content differs");
            r
        };
        let p2 = Plfs::new(cfg()).unwrap();
        let r = check(&p2, &want);
        let (patterns, pieces, mem) = r
            .shared()
            .unwrap()
            .with_index(false, |s| {
                Ok((s.map.pattern_count(), s.map.raw_pieces().count(), s.map.mem_bytes()))
            })
            .unwrap();
        assert_eq!(pieces, 0);
        assert!((4..=8).contains(&patterns), "{patterns} patterns");
        assert!(mem < 4096, "{mem} bytes");
        drop(r);
        assert_eq!(crate::tools::flatten(&p2, f).unwrap().extents, patterns);
        check(&Plfs::new(cfg()).unwrap(), &want);
        // Overwrite across writers' records after flattening: the flattened index is ignored and
        // the compressed patterns expand exactly where the new write lands.
        let p3 = Plfs::new(cfg()).unwrap();
        let h = p3
            .open(
                f,
                OpenFlags {
                    read: true,
                    write: true,
                    ..Default::default()
                },
                0,
                7,
            )
            .unwrap();
        let mut got = vec![0u8; 10];
        h.read(&mut got, 0).unwrap();
        h.write(&[0xEE; 250], 150).unwrap();
        want[150..400].fill(0xEE);
        let mut got = vec![0u8; 1000];
        h.read(&mut got, 0).unwrap();
        assert!(got[..] == want[..1000]);
        h.close().unwrap();
        check(&Plfs::new(cfg()).unwrap(), &want);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
