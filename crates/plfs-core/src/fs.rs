//! The logical namespace: resolving logical paths to backends, and every metadata operation
//! (open, stat, truncate, unlink, rename, directories, permissions, links, statvfs).
//!
//! Placement: a file's container lives on canonical backend `hash(basename) % n` (so renaming a
//! directory never moves its files); directories exist on every canonical backend; readdir
//! merges them. A container lists as a regular file.

use crate::config::{Config, GlobalParams, MountConfig};
use crate::container::{self, Container, Probe};
use crate::error::{Error, Result};
use crate::file::{OpenFile, OpenFlags, Shared};
use crate::format;
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
}

/// A PLFS instance: configuration plus the per-process table of open containers.
#[derive(Debug)]
pub struct Plfs {
    config: Config,
    mounts: Vec<Arc<Mount>>,
    open: Mutex<HashMap<(u64, u64), Weak<Shared>>>,
    umask: u32,
}

fn stat_times(st: &sys::RawStat) -> (i64, i64, i64) {
    let ns = |s: i64, n: u64| s.saturating_mul(1_000_000_000).saturating_add(n as i64);
    (
        ns(st.st_atime, st.st_atime_nsec),
        ns(st.st_mtime, st.st_mtime_nsec),
        ns(st.st_ctime, st.st_ctime_nsec),
    )
}

fn raw_to_stat(st: &sys::RawStat, kind: FileKind) -> Stat {
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

    fn check_parent(&self, loc: &Loc) -> Result<()> {
        let parent = loc.on(loc.home());
        let parent = parent.parent().unwrap_or(Path::new("/"));
        match container::probe(parent)? {
            Probe::Dir => Ok(()),
            Probe::Missing => Err(Error::NotFound(
                loc.logical.parent().unwrap_or(Path::new("/")).to_path_buf(),
            )),
            _ => Err(Error::errno(
                Errno::NOTDIR,
                format!("{}: a path component is not a directory", loc.logical.display()),
            )),
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

    /// Opens a logical file. `pid` names this handle's writer (an MPI rank or the process id).
    pub fn open(&self, path: &Path, flags: OpenFlags, mode: u32, pid: u32) -> Result<OpenFile> {
        let loc = self.resolve(path)?;
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
        Ok(st)
    }

    /// stat of an open file (sees this process's unflushed writes).
    pub fn fstat(&self, f: &OpenFile) -> Result<Stat> {
        let c = &f.shared().c;
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
        let shared = self.open_container(&loc)?;
        shared.truncate(size)
    }

    /// Removes a file or symlink.
    pub fn unlink(&self, path: &Path) -> Result<()> {
        let loc = self.resolve(path)?;
        let (b, p) = loc.find()?;
        let bp = loc.on(b);
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
        for s in &mount.shadows {
            if *s != mount.canonical[b] {
                sys::remove_tree(&c.shadow_dir(s))?;
            }
        }
        sys::remove_tree(&trash)
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

    /// Creates a directory on every canonical backend.
    pub fn mkdir(&self, path: &Path, mode: u32) -> Result<()> {
        let loc = self.resolve(path)?;
        if loc.rel.as_os_str().is_empty() {
            return Err(Error::Exists(loc.logical.clone()));
        }
        if loc.find()?.1 != Probe::Missing {
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
        match loc.find()?.1 {
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
            return Err(Error::NotFound(loc.logical.clone()));
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
        if loc.rel.as_os_str().is_empty() || loc.find()?.1 != Probe::Missing {
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

    /// Opens the container behind a logical file for the tools (map, query, flatten, fsck).
    pub fn container(&self, path: &Path) -> Result<Container> {
        let loc = self.resolve(path)?;
        let (b, p) = loc.find()?;
        if p != Probe::Container {
            return Err(Error::errno(
                Errno::INVAL,
                format!("{}: not a PLFS file", loc.logical.display()),
            ));
        }
        Container::open(&loc.mount, b, &loc.on(b))?.ok_or_else(|| Error::NotFound(loc.logical.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{BackendRole, BackendSpec, Workload};

    fn plfs_at(dir: &Path, backends: usize) -> Plfs {
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
                workload: Workload::SharedFile,
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
}
