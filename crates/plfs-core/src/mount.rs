//! Placement: a mount point's backends, and where a logical path lives on them.
//!
//! A file's container (or N-N plain file) lives on canonical backend `hash(basename) % n`, so
//! renaming a directory never moves its files; directories exist on every canonical backend.
//! A writer's logs live on shadow backend `hash(host) % n`. Every backend is reached through a
//! descriptor of its root, opened once per process, and paths beneath it are relative to that
//! descriptor: a logical path as long as `PATH_MAX` still works, and links are never followed.

use crate::config::{GlobalParams, MountConfig};
use crate::error::{Error, Result};
use crate::format;
use crate::sys::{self, Dir};
use rustix::io::Errno;
use std::mem::ManuallyDrop;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// One backend directory.
#[derive(Debug)]
pub struct Backend {
    /// Its path, as configured.
    pub path: PathBuf,
    /// The mount point it belongs to (each mount point has backends of its own), for the error
    /// of a backend that is not there.
    mount_point: PathBuf,
    /// The root's descriptor: `roots[current]`. The earlier ones were closed behind the core's
    /// back (a raw close system call; [`Backend::refresh`]) and are never closed again.
    roots: [OnceLock<Root>; ROOT_OPENS],
    current: AtomicUsize,
    reopening: Mutex<()>,
}

/// How many times a backend's root is opened in a process at most (the first open, then after
/// each raw close of every descriptor that took it).
const ROOT_OPENS: usize = 16;

/// An open backend root and the identity it had when opened (`st_dev`, `st_ino`), to tell the
/// descriptor still refers to it.
#[derive(Debug)]
struct Root {
    dir: ManuallyDrop<Dir>,
    ident: (u64, u64),
}

impl Root {
    #[allow(clippy::unnecessary_cast)]
    fn open(path: &Path, mount_point: &Path) -> Result<Root> {
        let dir = Dir::open_root(path).map_err(|e| match e {
            Error::Io {
                errno: Errno::NOENT | Errno::NOTDIR,
                ..
            } => Error::Config(format!(
                "mount point {}: backend {} does not exist (create it, or run `plfs check-config --mkdir`)",
                mount_point.display(),
                path.display()
            )),
            _ => e,
        })?;
        let st = dir.fstat()?;
        Ok(Root {
            dir: ManuallyDrop::new(dir),
            ident: (st.st_dev as u64, st.st_ino as u64),
        })
    }

    /// Whether the descriptor still refers to the directory that was opened.
    #[allow(clippy::unnecessary_cast)]
    fn intact(&self) -> bool {
        self.dir
            .fstat()
            .is_ok_and(|st| (st.st_dev as u64, st.st_ino as u64) == self.ident)
    }
}

impl Backend {
    /// A backend at `path` of mount point `mount_point` (opened at first use).
    pub fn new(path: PathBuf, mount_point: PathBuf) -> Backend {
        Backend {
            path,
            mount_point,
            roots: [const { OnceLock::new() }; ROOT_OPENS],
            current: AtomicUsize::new(0),
            reopening: Mutex::new(()),
        }
    }

    /// The backend's root directory, opened on first use and kept for the process. A backend
    /// that is not there is a configuration error, found here rather than by a `stat` of every
    /// backend of every mount point when the library starts (a process pays only for the
    /// backends it uses).
    pub fn root(&self) -> Result<&Dir> {
        let slot = &self.roots[self.current.load(Ordering::Acquire)];
        if let Some(r) = slot.get() {
            return Ok(&r.dir);
        }
        let r = Root::open(&self.path, &self.mount_point)?;
        if let Err(lost_race) = slot.set(r) {
            // Another thread opened it first: this one is closed.
            drop(ManuallyDrop::into_inner(lost_race.dir));
        }
        slot.get().map(|r| &*r.dir).ok_or_else(|| self.gone())
    }

    /// After a call failed with EBADF: if the root's descriptor no longer refers to the root (a
    /// raw close system call that no front end saw closed it, issue 50), opens the root again
    /// and says so (true); the old descriptor is never used or closed again. An error once the
    /// root was reopened [`ROOT_OPENS`] times.
    pub(crate) fn refresh(&self) -> Result<bool> {
        let _one = self.reopening.lock().unwrap_or_else(|p| p.into_inner());
        let i = self.current.load(Ordering::Acquire);
        let Some(r) = self.roots[i].get() else { return Ok(false) };
        if r.intact() {
            return Ok(false);
        }
        // Before anything is opened again: no descriptor made until now is closed any more.
        sys::descriptors_lost();
        if i + 1 >= ROOT_OPENS {
            return Err(self.gone());
        }
        let new = Root::open(&self.path, &self.mount_point)?;
        let _ = self.roots[i + 1].set(new);
        self.current.store(i + 1, Ordering::Release);
        crate::warn!(
            "backend {}: its directory descriptor was closed behind PLFS's back (a raw close system call); reopened",
            self.path.display()
        );
        Ok(true)
    }

    fn gone(&self) -> Error {
        Error::errno(
            Errno::BADF,
            format!(
                "backend {}: its directory descriptor was closed behind PLFS's back {} times (raw close system calls); \
                 not reopened again",
                self.path.display(),
                ROOT_OPENS - 1
            ),
        )
    }

    /// The directory at `rel` beneath the root (the root itself for an empty `rel`).
    pub fn dir(&self, rel: &Path) -> Result<Dir> {
        self.root()?.open_dir_beneath(rel)
    }

    /// [`Backend::dir`] for `*at` calls only (`O_PATH`: a look-up, not an open, on a FUSE
    /// backend); [`sys::Dir::make_real`] before listing or locking it.
    pub fn dir_path(&self, rel: &Path) -> Result<Dir> {
        self.root()?.open_dir_path_beneath(rel)
    }

    /// [`Backend::dir`], `Ok(None)` if a component is missing.
    pub fn dir_opt(&self, rel: &Path) -> Result<Option<Dir>> {
        self.root()?.open_dir_beneath_opt(rel)
    }
}

impl Drop for Backend {
    fn drop(&mut self) {
        // The current root is closed; the earlier ones were closed behind our back already.
        let i = *self.current.get_mut();
        if let Some(r) = self.roots[i].take() {
            drop(ManuallyDrop::into_inner(r.dir));
        }
    }
}

/// A directory that is a backend's root (kept for the process, borrowed) or one opened for the
/// caller.
#[derive(Debug)]
pub enum DirRef<'a> {
    /// A backend root.
    Root(&'a Dir),
    /// A directory opened for this use.
    Owned(Dir),
}

impl std::ops::Deref for DirRef<'_> {
    type Target = Dir;
    fn deref(&self) -> &Dir {
        match self {
            DirRef::Root(d) => d,
            DirRef::Owned(d) => d,
        }
    }
}

impl DirRef<'_> {
    /// Whether this is a backend's root.
    pub fn is_root(&self) -> bool {
        matches!(self, DirRef::Root(_))
    }
}

/// A mount point with its backends.
#[derive(Debug)]
pub struct Mount {
    /// Its configuration.
    pub cfg: MountConfig,
    /// Global parameters.
    pub global: GlobalParams,
    /// Canonical backends (hold containers and directories).
    pub canonical: Vec<Arc<Backend>>,
    /// Shadow backends (hold writers' logs). A backend of both roles is the same object in both
    /// lists.
    pub shadows: Vec<Arc<Backend>>,
}

impl Mount {
    /// Builds a mount from its configuration. Backends of the zero-config default are created
    /// (`create`); configured ones must exist.
    pub fn new(cfg: &MountConfig, global: &GlobalParams, create: bool) -> Result<Mount> {
        let mut all: Vec<Arc<Backend>> = Vec::new();
        let mut get = |p: &Path| -> Arc<Backend> {
            if let Some(b) = all.iter().find(|b| b.path == p) {
                return b.clone();
            }
            let b = Arc::new(Backend::new(p.to_path_buf(), cfg.mount_point.clone()));
            all.push(b.clone());
            b
        };
        let canonical: Vec<Arc<Backend>> = cfg.canonical().into_iter().map(&mut get).collect();
        let shadows: Vec<Arc<Backend>> = cfg.shadows().into_iter().map(&mut get).collect();
        if canonical.is_empty() || shadows.is_empty() {
            return Err(Error::Config(format!(
                "mount point {}: needs at least one canonical and one shadow backend",
                cfg.mount_point.display()
            )));
        }
        // Configured backends must exist: `Backend::root` says so at the first use of one.
        if create {
            for b in &cfg.backends {
                sys::mkdir_all(&b.location, 0o700)?;
            }
        }
        Ok(Mount {
            cfg: cfg.clone(),
            global: global.clone(),
            canonical,
            shadows,
        })
    }

    /// The canonical backend index for a file named `name`.
    pub fn home_of(&self, name: &[u8]) -> usize {
        if self.canonical.len() == 1 {
            return 0; // the hash modulo 1
        }
        (format::hash_str(&String::from_utf8_lossy(name)) % self.canonical.len() as u64) as usize
    }

    /// Whether writers may keep the logs of this mount's containers on shadow backends: not
    /// with a single backend in all, where every writer logs inside the container.
    pub fn shadows_in_use(&self) -> bool {
        !(self.canonical.len() == 1 && self.shadows.len() == 1 && Arc::ptr_eq(&self.canonical[0], &self.shadows[0]))
    }

    /// The shadow backend a writer on `host` keeps its logs on.
    pub fn shadow_for(&self, host: &str) -> &Arc<Backend> {
        &self.shadows[(format::hash_str(host) % self.shadows.len() as u64) as usize]
    }

    /// The hostdir name a writer on `host` uses.
    pub fn hostdir_for(&self, host: &str) -> String {
        format!(
            "{}{}",
            format::HOSTDIR_PREFIX,
            format::hash_str(host) % u64::from(self.global.num_hostdirs.max(1))
        )
    }
}

/// What a backend path holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// Nothing.
    Missing,
    /// A container (a logical regular file).
    Container,
    /// A container written by PLFS 2.x (a read-only logical regular file; [`crate::legacy`]).
    Legacy,
    /// A logical directory.
    Dir,
    /// A symbolic link.
    Symlink,
    /// Some other file (an N-N plain file, or one not created by PLFS).
    Other,
}

/// What a look-up found: on which canonical backend, what, and its stat (the object's own
/// `lstat`; for a container, its marker's, which holds the logical file's attributes; for a
/// PLFS 2.x container, its access file's).
#[derive(Debug, Clone, Copy)]
pub struct Found {
    /// Canonical backend index.
    pub backend: usize,
    /// What is there.
    pub probe: Probe,
    /// Its stat (`None` when missing).
    pub st: Option<sys::RawStat>,
}

/// Classifies what backend `b` holds at `rel` (two `lstat`s for a container: itself and its
/// marker; three for a directory: itself, the marker, a PLFS 2.x access file, two for the
/// backend's root; one otherwise).
/// A directory in the build mode without a whole marker is a file being created: `Missing`.
/// Returns the probe and the stat described in [`Found`].
pub fn probe(b: &Backend, rel: &Path) -> Result<(Probe, Option<sys::RawStat>)> {
    let root = b.root()?;
    let Some(st) = root.stat_beneath_opt(rel)? else {
        return Ok((Probe::Missing, None));
    };
    // A directory the caller may not search is no container: every container is searchable by
    // all (`container::container_dir_mode`), so EACCES for a name inside it means a directory
    // (pjdfstest open/06: the owner of a 0600 directory changes its mode).
    let inside = |name: &str| match root.stat_beneath_opt(&rel.join(name)) {
        Err(e) if e.raw_errno() == Errno::ACCESS.raw_os_error() => Ok(None),
        r => r,
    };
    Ok(match sys::FileType::from_raw_mode(st.st_mode) {
        sys::FileType::Directory => match inside(format::MARKER_NAME)? {
            // A file being created (format.md §1) is not there yet: no marker, or one still
            // being written, in a directory in the build mode.
            Some(m) if format::is_published(m.st_size as u64, st.st_mode) || rel.as_os_str().is_empty() => {
                (Probe::Container, Some(m))
            }
            Some(_) => (Probe::Missing, None),
            None if format::is_build_mode(st.st_mode) && !rel.as_os_str().is_empty() => (Probe::Missing, None),
            // The backend's root is the mount point, never a PLFS 2.x file: no look for one.
            None if rel.as_os_str().is_empty() => (Probe::Dir, Some(st)),
            None => match inside(format::legacy::ACCESS_NAME)? {
                Some(a) => (Probe::Legacy, Some(a)),
                None => (Probe::Dir, Some(st)),
            },
        },
        sys::FileType::Symlink => (Probe::Symlink, Some(st)),
        _ => (Probe::Other, Some(st)),
    })
}

/// [`probe`], made sure of a directory: the two `lstat`s of a probe are not atomic, and a
/// container replaced by a rename between them (on a backend without `RENAME_EXCHANGE`) would
/// look like a directory without a marker. A directory is stat'ed again and the probe repeated
/// if it is no longer the same directory.
///
/// On a backend that is not a local file system, a directory changed within the last
/// [`sys::REMOTE_WINDOW_NS`] (a rename sets its ctime) has its marker looked for once more:
/// GlusterFS answers a look-up of a name inside a directory that it is renaming with `ENOENT` for
/// a moment, so a container renamed by another process looked like a directory without a marker,
/// and its open failed with `EISDIR` (18 of 29,671 opens of a file renamed back and forth,
/// 2026-11-28; docs/design.md, "Backends"). One `lstat` more, for such directories only.
pub fn probe_stable(b: &Backend, rel: &Path) -> Result<(Probe, Option<sys::RawStat>)> {
    let mut tries = 0;
    let mut looked_again = false;
    loop {
        let r = probe(b, rel)?;
        let (Probe::Dir, Some(st)) = r else { return Ok(r) };
        // The backend's root is not renamed by anyone using the mount.
        if rel.as_os_str().is_empty() {
            return Ok(r);
        }
        let root = b.root()?;
        let again = root.stat_beneath_opt(rel)?;
        let same = again.is_some_and(|a| (a.st_dev, a.st_ino) == (st.st_dev, st.st_ino));
        if same && !looked_again && changed_lately(&st) && !root.has_local_clock() {
            looked_again = true;
            if let Ok(Some(m)) = root.stat_beneath_opt(&rel.join(format::MARKER_NAME)) {
                if format::is_published(m.st_size as u64, st.st_mode) {
                    return Ok((Probe::Container, Some(m)));
                }
            }
        }
        if same || tries == 8 {
            return Ok(r);
        }
        tries += 1;
    }
}

/// Whether the ctime of `st` lies within [`sys::REMOTE_WINDOW_NS`] of this machine's clock.
fn changed_lately(st: &sys::RawStat) -> bool {
    let ctime = i128::from(st.st_ctime) * 1_000_000_000 + i128::from(st.st_ctime_nsec);
    (i128::from(crate::clock::now_ns()) - ctime).abs() < sys::REMOTE_WINDOW_NS
}

/// A logical path placed on its mount.
#[derive(Debug, Clone)]
pub struct Loc {
    /// Its mount.
    pub mount: Arc<Mount>,
    /// The mount's index in the configuration.
    pub idx: usize,
    /// Path relative to the mount point ("" for the mount point itself).
    pub rel: PathBuf,
    /// The normalised logical path.
    pub logical: PathBuf,
}

impl Loc {
    /// Display path of this logical path on canonical backend `i` (for messages).
    pub fn on(&self, i: usize) -> PathBuf {
        if self.rel.as_os_str().is_empty() {
            self.mount.canonical[i].path.clone()
        } else {
            self.mount.canonical[i].path.join(&self.rel)
        }
    }

    /// Whether this is the mount point itself.
    pub fn is_root(&self) -> bool {
        self.rel.as_os_str().is_empty()
    }

    /// The last component ("" for the mount point).
    pub fn name(&self) -> &std::ffi::OsStr {
        self.rel.file_name().unwrap_or_default()
    }

    /// The parent's path relative to the mount point.
    pub fn parent_rel(&self) -> &Path {
        self.rel.parent().unwrap_or(Path::new(""))
    }

    /// The logical path of the parent directory ("/" for a name at the root of the namespace).
    pub fn parent_logical(&self) -> &Path {
        self.logical.parent().unwrap_or(Path::new("/"))
    }

    /// The canonical backend that holds this name's container.
    pub fn home(&self) -> usize {
        self.mount.home_of(self.name().as_bytes())
    }

    /// The parent directory on canonical backend `b` (the backend's root itself, without a
    /// system call, for a name at the top of the mount).
    pub fn parent_dir(&self, b: usize) -> Result<DirRef<'_>> {
        let backend = &self.mount.canonical[b];
        let rel = self.parent_rel();
        if rel.as_os_str().is_empty() {
            return Ok(DirRef::Root(backend.root()?));
        }
        backend.dir(rel).map(DirRef::Owned).map_err(|e| self.parent_error(e))
    }

    fn parent_error(&self, e: Error) -> Error {
        match e.raw_errno() {
            n if n == Errno::NOENT.raw_os_error() => Error::NotFound(self.parent().logical),
            n if n == Errno::NOTDIR.raw_os_error() || n == Errno::LOOP.raw_os_error() => Error::errno(
                Errno::NOTDIR,
                format!("{}: a path component is not a directory", self.logical.display()),
            ),
            _ => e,
        }
    }

    /// Where this name exists: its home backend first, then any other (after a backend list
    /// change). A path through a file is `ENOTDIR`.
    pub fn find(&self) -> Result<Found> {
        let f = self.find_raw()?;
        self.check_through(&f)?;
        Ok(f)
    }

    /// `ENOTDIR` if what [`Loc::find_raw`] found lies on a path through a file: a container is
    /// never inside another one; anything else may be (one `lstat` per ancestor, up to two).
    pub fn check_through(&self, f: &Found) -> Result<()> {
        if !matches!(f.probe, Probe::Container | Probe::Legacy)
            && (self.inside_container(f.backend)? || self.inside_legacy(f.backend)?)
        {
            return Err(Error::errno(
                Errno::NOTDIR,
                format!("{}: a path component is a file", self.logical.display()),
            ));
        }
        Ok(())
    }

    /// [`Loc::find`] without [`Loc::check_through`], for a caller that knows the parent is a
    /// directory by other means.
    pub fn find_raw(&self) -> Result<Found> {
        let h = self.home();
        let (p, st) = probe_stable(&self.mount.canonical[h], &self.rel)?;
        if p == Probe::Dir && self.mount.canonical.len() > 1 && self.legacy_shadow(h, st)? {
            // The hostdirs a PLFS 2.x container left behind when a rename moved it to another
            // backend (its metalinks point here): the file is the container on that backend.
            for (i, b) in self.mount.canonical.iter().enumerate() {
                if i != h {
                    if let (Probe::Legacy, st) = probe(b, &self.rel)? {
                        return Ok(Found {
                            backend: i,
                            probe: Probe::Legacy,
                            st,
                        });
                    }
                }
            }
        }
        if p != Probe::Missing || self.mount.canonical.len() == 1 {
            return Ok(Found {
                backend: h,
                probe: p,
                st,
            });
        }
        for (i, b) in self.mount.canonical.iter().enumerate() {
            if i != h {
                let (p, st) = probe_stable(b, &self.rel)?;
                if p != Probe::Missing {
                    return Ok(Found {
                        backend: i,
                        probe: p,
                        st,
                    });
                }
            }
        }
        Ok(Found {
            backend: h,
            probe: Probe::Missing,
            st: None,
        })
    }

    /// Whether the directory at this path on backend `b` (its stat `st`) may be what PLFS 2.x
    /// left of a container on a backend that is no longer its canonical one: a directory holding
    /// `meta/`. The original placed containers by a hash of its own, so such a directory can sit
    /// on the backend this library looks at first. A leaf directory (two links) holds no
    /// `meta/` and costs nothing more; any other costs one `lstat`.
    fn legacy_shadow(&self, b: usize, st: Option<sys::RawStat>) -> Result<bool> {
        if self.is_root() || st.is_some_and(|st| st.st_nlink == 2) {
            return Ok(false);
        }
        let meta = self.mount.canonical[b]
            .root()?
            .stat_beneath_opt(&self.rel.join(format::legacy::META_DIR))?;
        Ok(meta.is_some_and(|m| sys::FileType::from_raw_mode(m.st_mode) == sys::FileType::Directory))
    }

    /// True if this path on backend `b` goes through a file: its parent or grandparent is a
    /// container (nothing inside a container is deeper than two levels).
    fn inside_container(&self, b: usize) -> Result<bool> {
        let root = self.mount.canonical[b].root()?;
        let mut p = self.rel.clone();
        for _ in 1..self.rel.components().count().min(3) {
            if !p.pop() {
                break;
            }
            if root.stat_beneath_opt(&p.join(format::MARKER_NAME))?.is_some() {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// True if this path on backend `b` goes through a PLFS 2.x container. Only names that can
    /// be inside one are checked (a PLFS 2.x container holds nothing deeper than two levels,
    /// under fixed names), so ordinary paths cost no system call.
    fn inside_legacy(&self, b: usize) -> Result<bool> {
        use format::legacy::{is_container_entry, is_container_subdir, ACCESS_NAME};
        let parts: Vec<&[u8]> = self.rel.iter().map(|c| c.as_bytes()).collect();
        let n = parts.len();
        let root = self.mount.canonical[b].root()?;
        let at = |levels: usize| -> Result<bool> {
            let mut p = self.rel.clone();
            for _ in 0..levels {
                p.pop();
            }
            Ok(root.stat_beneath_opt(&p.join(ACCESS_NAME))?.is_some())
        };
        if n >= 2 && is_container_entry(parts[n - 1]) && at(1)? {
            return Ok(true);
        }
        Ok(n >= 3 && is_container_subdir(parts[n - 2]) && at(2)?)
    }

    /// The parent directory's location ("" = the mount point).
    pub fn parent(&self) -> Loc {
        Loc {
            mount: self.mount.clone(),
            idx: self.idx,
            rel: self.parent_rel().to_path_buf(),
            logical: self.parent_logical().to_path_buf(),
        }
    }

    /// `ENOENT` naming this logical path.
    pub fn not_found(&self) -> Error {
        Error::NotFound(self.logical.clone())
    }

    /// An error with `errno` and a message naming this logical path.
    pub fn err(&self, errno: Errno, what: &str) -> Error {
        Error::errno(errno, format!("{}: {what}", self.logical.display()))
    }
}
