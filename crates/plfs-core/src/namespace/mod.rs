//! The logical namespace ([`Plfs`]): a logical path is resolved to its mount and placed on its
//! backends ([`crate::mount`]), looked up once into what is there (a directory, a symlink, or a
//! regular file behind a [`Node`]), and every operation dispatches on that: directories and
//! symlinks are plain backend objects, regular files are whatever stores them.

mod dirs;
mod logical;
mod recover;
mod rename;
mod reopen;

pub use logical::{InMount, Logical, MountId};

use crate::config::{Config, Workload};
use crate::container::Container;
use crate::error::{Error, Result};
use crate::format;
use crate::layout::legacy::{LegacyNode, ReadOnly};
use crate::layout::n1::{ContainerNode, Registry, N1};
use crate::layout::nn::{PlainNode, NN};
use crate::layout::small::Small;
use crate::layout::{Layout, Node, OpenFile};
use crate::legacy::LegacyContainer;
use crate::mount::{Loc, Mount, Probe};
use crate::sys::{self, RawStat, StatVfs, TimeSpec};
use crate::types::{FileFormat, FileKind, OpenFlags, PackedUsage, Stat, Storage};
use rustix::io::Errno;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A PLFS instance: the configuration, its mounts with their layouts, and this process's table
/// of open containers.
#[derive(Debug)]
pub struct Plfs {
    config: Config,
    mounts: Vec<(Arc<Mount>, Box<dyn Layout>)>,
    reg: Arc<Registry>,
}

/// What a logical path is.
#[derive(Debug)]
pub(crate) enum Entry {
    /// Nothing.
    Missing,
    /// A directory (found on backend `.0`).
    Dir(usize, RawStat),
    /// A symbolic link (on backend `.0`).
    Symlink(usize, RawStat),
    /// A regular file.
    File(Box<dyn Node>),
}

/// Names PLFS uses inside backends, which logical paths may not contain.
pub fn is_reserved_name(n: &[u8]) -> bool {
    n == format::MARKER_NAME.as_bytes()
        || n == format::SHADOW_ROOT.as_bytes()
        || n == format::small::SMALL_DIR.as_bytes()
        || n == format::legacy::small::SMALL_CONTAINER.as_bytes()
        || n.starts_with(format::TMP_PREFIX.as_bytes())
}

/// A file a layout created or found, and whether this call created it.
type Made = (Box<dyn Node>, bool);

impl Plfs {
    /// Builds an instance from a configuration. Backends of the zero-config default are created;
    /// configured backends must exist (`plfs check-config --mkdir` creates them).
    pub fn new(config: Config) -> Result<Plfs> {
        Self::build(config, sys::Umask::OfProcess)
    }

    /// [`Plfs::new`], with the umask applied to the modes of the files and directories it
    /// creates given instead of read from the process: a FUSE daemon passes 0, since the kernel
    /// already applied the caller's umask (with the daemon's own, a umask of 022 read before the
    /// daemon cleared its umask turned a caller's 0666 under umask 002 into 0644; issue 25).
    pub fn with_umask(config: Config, umask: u32) -> Result<Plfs> {
        Self::build(config, sys::Umask::Given(umask))
    }

    fn build(config: Config, umask: sys::Umask) -> Result<Plfs> {
        let reg = Arc::new(Registry::default());
        let mut mounts = Vec::new();
        for m in &config.mounts {
            let mount = Arc::new(Mount::new(m, &config.global, config.files.is_empty())?);
            let layout: Box<dyn Layout> = match m.workload {
                Workload::SharedFile => Box::new(N1::new(reg.clone(), umask)),
                Workload::FilePerProc => Box::new(NN::new(umask)),
                Workload::SmallFile => Box::new(Small::new(umask)),
            };
            mounts.push((mount, layout));
        }
        Ok(Plfs { config, mounts, reg })
    }

    /// The descriptors holding this process's shared locks on the N-1 files it has open, with
    /// each file's identity ([`OpenFile::ident`]) and logical path. A file unlinked while open
    /// is deleted by the last process holding such a lock when it lets go (design.md,
    /// "Unlink"): a front end that hands an open file to another process image (fork, exec)
    /// passes the image one of these descriptors, a dup, so the file lasts until that image has
    /// opened it itself. The descriptors stay this instance's: never close them.
    pub fn container_locks(&self) -> Vec<(i32, (u64, u64), PathBuf)> {
        self.reg.locks()
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
    pub fn mounts(&self) -> impl Iterator<Item = &Arc<Mount>> {
        self.mounts.iter().map(|(m, _)| m)
    }

    /// True if `path` is under a PLFS mount point.
    pub fn is_plfs_path(&self, path: &Path) -> bool {
        self.config.mount_for(path).is_some()
    }

    pub(crate) fn layout(&self, loc: &Loc) -> &dyn Layout {
        &*self.mounts[loc.idx].1
    }

    /// Looks a logical path up. Where the backends hold nothing, what the layout keeps there is
    /// looked at first: its look-up refreshes what the layout knows of the parent, after which
    /// a layout that vouches for the parent spares the check of the ancestors.
    pub(crate) fn lookup(&self, loc: &Loc) -> Result<Entry> {
        let f = loc.find_raw()?;
        if f.probe == Probe::Missing {
            let kept = self.lookup_kept(loc)?;
            if !self.vouched_missing(loc, &f) {
                loc.check_through(&f)?;
            }
            return Ok(kept);
        }
        loc.check_through(&f)?;
        match self.stored_entry(loc, f) {
            Some(e) => Ok(e),
            None => self.lookup_kept(loc),
        }
    }

    /// Nothing at `loc` on the backends, in a directory its layout vouches for (asked after the
    /// layout's look-up there, which noticed a parent removed since): no ancestor can be a
    /// file, so [`Loc::check_through`] (an `lstat` of each ancestor's marker, a round trip each
    /// on a network file system) has nothing to find.
    fn vouched_missing(&self, loc: &Loc, f: &crate::mount::Found) -> bool {
        f.probe == Probe::Missing && self.layout(loc).vouches_for_parent(loc)
    }

    /// The entry for what [`Loc::find`] found at `loc`; `None` when the backends hold nothing.
    fn stored_entry(&self, loc: &Loc, f: crate::mount::Found) -> Option<Entry> {
        let b = f.backend;
        match (f.probe, f.st) {
            (Probe::Dir, Some(st)) => Some(Entry::Dir(b, st)),
            (Probe::Symlink, Some(st)) => Some(Entry::Symlink(b, st)),
            (Probe::Container, Some(st)) => Some(Entry::File(Box::new(ContainerNode::new(
                self.reg.clone(),
                loc.clone(),
                b,
                st,
            )))),
            (Probe::Other, Some(st)) => Some(Entry::File(Box::new(PlainNode::new(loc.clone(), b, st)))),
            (Probe::Legacy, Some(_)) => Some(Entry::File(Box::new(ReadOnly(LegacyNode::new(loc.clone(), b))))),
            _ => None,
        }
    }

    /// A file the layout keeps at `loc` where the backends hold nothing (1-N).
    fn lookup_kept(&self, loc: &Loc) -> Result<Entry> {
        Ok(match self.layout(loc).lookup_missing(loc)? {
            Some(n) => Entry::File(n),
            None => Entry::Missing,
        })
    }

    /// Where the backends hold nothing at `loc`: the layout's create-or-find in one step, when
    /// it can vouch for the parent itself (`Layout::create_packed`), else the look-up of what it
    /// keeps there.
    fn create_or_lookup(&self, loc: &Loc, mode: u32, excl: bool) -> Result<Result<Made, Entry>> {
        match self.layout(loc).create_packed(loc, mode, excl) {
            Some(r) => r.map(Ok),
            None => self.lookup_kept(loc).map(Err),
        }
    }

    /// The regular file at `path`.
    fn file(&self, loc: &Loc) -> Result<Box<dyn Node>> {
        match self.lookup(loc)? {
            Entry::File(n) => Ok(n),
            Entry::Missing => Err(loc.not_found()),
            Entry::Dir(..) => Err(loc.err(Errno::ISDIR, "is a directory")),
            Entry::Symlink(..) => Err(loc.err(Errno::INVAL, "a symbolic link, not a PLFS file")),
        }
    }

    /// Creates a file if it does not exist. Returns true if this call created it.
    pub fn create(&self, path: &(impl Logical + ?Sized), mode: u32, excl: bool) -> Result<bool> {
        self.again_if_lost(|| {
            let loc = path.locate(self)?;
            if loc.is_root() {
                return Err(loc.err(Errno::ISDIR, "is a directory"));
            }
            let found = loc.find_raw()?;
            let entry = match self.stored_entry(&loc, found) {
                Some(e) => e,
                None => match self.create_or_lookup(&loc, mode, excl)? {
                    Ok((_, created)) => return Ok(created),
                    Err(e) => e,
                },
            };
            // A name to create: `check_parent` below looks at every ancestor `check_through` would.
            if !matches!(entry, Entry::Missing) {
                loc.check_through(&found)?;
            }
            match entry {
                Entry::Missing => {}
                Entry::Dir(..) => return Err(loc.err(Errno::ISDIR, "is a directory")),
                Entry::File(_) if !excl => return Ok(false),
                _ => return Err(Error::Exists(loc.logical.clone())),
            }
            self.check_parent(&loc)?;
            Ok(self.layout(&loc).create(&loc, mode, excl)?.1)
        })
    }

    /// Opens (and with `flags.create`, creates) a logical file. `pid` names this handle's writer
    /// (an MPI rank or the process id).
    pub fn open(&self, path: &(impl Logical + ?Sized), flags: OpenFlags, mode: u32, pid: u32) -> Result<OpenFile> {
        self.again_if_lost(|| {
            let loc = path.locate(self)?;
            if loc.is_root() {
                return Err(loc.err(Errno::ISDIR, "is a directory"));
            }
            let found = loc.find_raw()?;
            // Nothing there: a layout that vouches for the parent (a 1-N directory whose store this
            // process writes: no file on the path) creates at once, without the check of the path's
            // ancestors (`Loc::check_through`, an `lstat` each) that anything else goes through.
            if flags.create && found.probe == Probe::Missing {
                if let Some(r) = self.layout(&loc).create_packed(&loc, mode, flags.excl) {
                    let (n, created) = r?;
                    return n.open(flags, pid, created);
                }
            }
            let entry = match self.stored_entry(&loc, found) {
                Some(e) => e,
                None => self.lookup_kept(&loc)?,
            };
            // A name to create: `check_parent` below looks at every ancestor `check_through` would
            // (the parent's probe reads its marker, and the parent's own check the ones above), so
            // the path is checked once, not twice. A file the layout keeps in a directory it
            // vouches for needs no check either.
            let to_create = flags.create && matches!(entry, Entry::Missing);
            if !(to_create || self.vouched_missing(&loc, &found)) {
                loc.check_through(&found)?;
            }
            match entry {
                Entry::File(_) if flags.create && flags.excl => Err(Error::Exists(loc.logical.clone())),
                Entry::File(n) => n.open(flags, pid, false),
                Entry::Missing if !flags.create => Err(loc.not_found()),
                Entry::Missing => {
                    self.check_parent(&loc)?;
                    let (n, created) = self.layout(&loc).create(&loc, mode, flags.excl)?;
                    n.open(flags, pid, created)
                }
                Entry::Dir(..) => Err(loc.err(Errno::ISDIR, "is a directory")),
                Entry::Symlink(..) if flags.create && flags.excl => Err(Error::Exists(loc.logical.clone())),
                Entry::Symlink(..) => Err(loc.err(Errno::INVAL, "a symbolic link, not a PLFS file")),
            }
        })
    }

    /// stat without following a final symlink.
    pub fn stat(&self, path: &(impl Logical + ?Sized)) -> Result<Stat> {
        self.again_if_lost(|| {
            let loc = path.locate(self)?;
            match self.lookup(&loc)? {
                Entry::File(n) => n.stat(),
                Entry::Dir(_, st) => Ok(Stat::from_raw(&st, FileKind::Dir)),
                Entry::Symlink(_, st) => Ok(Stat::from_raw(&st, FileKind::Symlink)),
                Entry::Missing => Err(loc.not_found()),
            }
        })
    }

    /// stat of an open file (sees this process's unflushed writes).
    pub fn fstat(&self, f: &OpenFile) -> Result<Stat> {
        f.stat()
    }

    /// chmod of an open file (fchmod): the file it has open, even if it was renamed or unlinked
    /// since (as on a local file system), at the cost of no look-up. Files whose layout keeps no
    /// handle to change them through (1-N, PLFS 2.x) go by the path they were opened with.
    pub fn fchmod(&self, f: &OpenFile, mode: u32) -> Result<()> {
        f.chmod_open(mode).unwrap_or_else(|| self.chmod(f.path(), mode))
    }

    /// chown of an open file (fchown; `u32::MAX` leaves an id unchanged), as [`Plfs::fchmod`].
    pub fn fchown(&self, f: &OpenFile, uid: u32, gid: u32) -> Result<()> {
        f.chown_open(uid, gid).unwrap_or_else(|| self.chown(f.path(), uid, gid))
    }

    /// Sets the times of an open file (futimens), as [`Plfs::fchmod`].
    pub fn futimens(&self, f: &OpenFile, atime: TimeSpec, mtime: TimeSpec) -> Result<()> {
        f.utimens_open(atime, mtime)
            .unwrap_or_else(|| self.utimens(f.path(), atime, mtime))
    }

    /// Truncates a file by path.
    pub fn truncate(&self, path: &(impl Logical + ?Sized), size: u64) -> Result<()> {
        let loc = path.locate(self)?;
        self.file(&loc)?.truncate(size)
    }

    /// Removes a file or symlink.
    pub fn unlink(&self, path: &(impl Logical + ?Sized)) -> Result<()> {
        self.again_if_lost(|| {
            let loc = path.locate(self)?;
            match self.lookup(&loc)? {
                Entry::File(n) => n.unlink(),
                Entry::Symlink(b, _) => loc.parent_dir(b)?.unlink(loc.name()),
                Entry::Dir(..) => Err(loc.err(Errno::ISDIR, "is a directory")),
                Entry::Missing => Err(loc.not_found()),
            }
        })
    }

    /// chmod (of a symlink itself: `EOPNOTSUPP`, as Linux's `lchmod`).
    pub fn chmod(&self, path: &(impl Logical + ?Sized), mode: u32) -> Result<()> {
        let loc = path.locate(self)?;
        match self.lookup(&loc)? {
            Entry::File(n) => n.chmod(mode),
            Entry::Dir(..) => {
                refuse_build_mode(&loc, mode)?;
                self.on_every_dir(&loc, |d| d.chmod_self(mode & 0o7777), |p, n| p.chmod(n, mode & 0o7777))
            }
            Entry::Symlink(..) => Err(loc.err(Errno::OPNOTSUPP, "cannot change the mode of a symbolic link")),
            Entry::Missing => Err(loc.not_found()),
        }
    }

    /// chown (`u32::MAX` leaves an id unchanged); does not follow a final symlink.
    pub fn chown(&self, path: &(impl Logical + ?Sized), uid: u32, gid: u32) -> Result<()> {
        let loc = path.locate(self)?;
        match self.lookup(&loc)? {
            Entry::File(n) => n.chown(uid, gid),
            Entry::Dir(..) => self.on_every_dir(&loc, |d| d.chown_self(uid, gid), |p, n| p.chown(n, uid, gid)),
            Entry::Symlink(b, _) => loc.parent_dir(b)?.chown(loc.name(), uid, gid),
            Entry::Missing => Err(loc.not_found()),
        }
    }

    /// Sets access and modification times (does not follow a final symlink).
    pub fn utimens(&self, path: &(impl Logical + ?Sized), atime: TimeSpec, mtime: TimeSpec) -> Result<()> {
        let loc = path.locate(self)?;
        match self.lookup(&loc)? {
            Entry::File(n) => n.utimens(atime, mtime),
            Entry::Dir(..) => self.on_every_dir(
                &loc,
                |d| d.set_own_times(atime, mtime),
                |p, n| p.set_times(n, atime, mtime),
            ),
            Entry::Symlink(b, _) => loc.parent_dir(b)?.set_times(loc.name(), atime, mtime),
            Entry::Missing => Err(loc.not_found()),
        }
    }

    /// access(2): `mode` is a mask of R_OK=4, W_OK=2, X_OK=1 (0 = existence).
    pub fn access(&self, path: &(impl Logical + ?Sized), mode: u32) -> Result<()> {
        self.again_if_lost(|| {
            let loc = path.locate(self)?;
            let r = match self.lookup(&loc)? {
                Entry::File(n) => return n.access(mode),
                Entry::Dir(b, _) => loc.mount.canonical[b].dir(&loc.rel)?.access_self(mode),
                Entry::Symlink(b, _) => loc.parent_dir(b)?.access(loc.name(), mode),
                Entry::Missing => return Err(loc.not_found()),
            };
            r.map_err(|e| match e {
                Error::Io { errno, .. } => loc.err(errno, &errno.to_string()),
                e => e,
            })
        })
    }

    /// Creates a symbolic link `link` whose contents are `target` (stored verbatim).
    pub fn symlink(&self, target: &Path, link: &(impl Logical + ?Sized)) -> Result<()> {
        let loc = link.locate(self)?;
        if loc.is_root() {
            return Err(Error::Exists(loc.logical.clone()));
        }
        if !matches!(self.lookup(&loc)?, Entry::Missing) {
            return Err(Error::Exists(loc.logical.clone()));
        }
        self.check_parent(&loc)?;
        loc.parent_dir(loc.home())?.symlink(target, loc.name())
    }

    /// Reads a symbolic link.
    pub fn readlink(&self, path: &(impl Logical + ?Sized)) -> Result<OsString> {
        let loc = path.locate(self)?;
        match self.lookup(&loc)? {
            Entry::Symlink(b, _) => loc.parent_dir(b)?.readlink(loc.name()),
            Entry::Missing => Err(loc.not_found()),
            _ => Err(loc.err(Errno::INVAL, "not a symbolic link")),
        }
    }

    /// File system statistics of the first canonical backend.
    pub fn statvfs(&self, path: &(impl Logical + ?Sized)) -> Result<StatVfs> {
        let loc = path.locate(self)?;
        loc.mount.canonical[0].root()?.statvfs()
    }

    /// What stores a logical path, for the tools (`plfs du`, `plfs ls`).
    pub fn storage(&self, path: &(impl Logical + ?Sized)) -> Result<Storage> {
        let loc = path.locate(self)?;
        let f = loc.find()?;
        let at = loc.on(f.backend);
        Ok(match f.probe {
            Probe::Dir => Storage::Directory(at),
            Probe::Symlink => Storage::Symlink(at),
            Probe::Container => Storage::Container(at),
            Probe::Legacy => Storage::Legacy(at),
            Probe::Other => Storage::Plain(at),
            Probe::Missing => match self.layout(&loc).lookup_missing(&loc)? {
                Some(n) if n.format()?.is_legacy() => Storage::LegacyPacked,
                Some(_) => Storage::Packed,
                None => Storage::Missing,
            },
        })
    }

    /// How a regular file is stored, and in which format (`plfs stat`, `plfs ls -l`); `None` for
    /// a directory or a symbolic link.
    pub fn file_format(&self, path: &(impl Logical + ?Sized)) -> Result<Option<FileFormat>> {
        let loc = path.locate(self)?;
        match self.lookup(&loc)? {
            Entry::File(n) => n.format().map(Some),
            Entry::Missing => Err(loc.not_found()),
            Entry::Dir(..) | Entry::Symlink(..) => Ok(None),
        }
    }

    /// The PLFS 2.x container behind a logical file, if it is one (for the tools and upgrade).
    pub(crate) fn legacy(&self, path: &Path) -> Result<Option<LegacyContainer>> {
        let loc = path.locate(self)?;
        let f = loc.find()?;
        match f.probe {
            Probe::Legacy => LegacyContainer::open(&loc.mount, f.backend, &loc.rel).map(Some),
            _ => Ok(None),
        }
    }

    /// `plfs_flush_writes`: makes the buffered writes of every file this process has open at or
    /// under `path` visible to other processes (index records and 1-N records appended, no
    /// fsync).
    pub fn flush_writes(&self, path: &(impl Logical + ?Sized)) -> Result<()> {
        let loc = path.locate(self)?;
        self.layout(&loc).flush_under(&loc.logical)
    }

    /// `plfs_invalidate_read_cache`: drops this process's cached indexes and 1-N views of files
    /// at or under `path`; the next read reloads them from the backends (and so sees what other
    /// processes made visible since).
    pub fn invalidate_read_cache(&self, path: &(impl Logical + ?Sized)) -> Result<()> {
        let loc = path.locate(self)?;
        self.layout(&loc).invalidate_under(&loc.logical);
        Ok(())
    }

    /// `plfs_expand_path`: the backend path of `path` (where it is, or where it would be created:
    /// its canonical backend), with the index of its mount ([`Plfs::mounts`]) and of that
    /// canonical backend in the mount.
    pub fn expand_path(&self, path: &(impl Logical + ?Sized)) -> Result<(PathBuf, usize, usize)> {
        let loc = path.locate(self)?;
        let b = loc.find()?.backend;
        Ok((loc.on(b), loc.idx, b))
    }

    /// Space accounting of the packed (1-N) files of a logical directory, for `plfs du`; `None`
    /// on a mount whose workload packs nothing.
    pub fn small_usage(&self, dir: &(impl Logical + ?Sized)) -> Result<Option<PackedUsage>> {
        let loc = dir.locate(self)?;
        self.layout(&loc).packed_usage(&loc)
    }

    /// Opens the container behind a logical file for the tools (map, query, flatten, fsck).
    pub(crate) fn container(&self, path: &Path) -> Result<Container> {
        let loc = path.locate(self)?;
        let n = self.file(&loc)?;
        n.container().ok_or_else(|| match n.check_writable() {
            // Written by PLFS 2.x: the error names `plfs upgrade`.
            Err(e) => e,
            Ok(()) => loc.err(
                Errno::INVAL,
                "not a PLFS container (it is stored as a plain or packed file)",
            ),
        })
    }

    /// The backend directories of a logical directory, one per canonical backend that has it
    /// (the LD_PRELOAD library makes one of them the kernel's working directory).
    pub fn backend_dirs(&self, path: &(impl Logical + ?Sized)) -> Result<Vec<PathBuf>> {
        let loc = path.locate(self)?;
        Ok((0..loc.mount.canonical.len()).map(|i| loc.on(i)).collect())
    }

    /// Runs `f` on the directory at `loc` on every canonical backend (a replica missing on a
    /// backend other than the first is skipped).
    /// Applies a change to the directory `loc` on every backend that has it: `own` on the
    /// directory opened (no link can be swapped in between), or, where opening it is refused
    /// (it needs read permission, which its owner need not have: pjdfstest open/06, the owner
    /// of a 0060 directory changes its mode), `named` with its parent and its name.
    fn on_every_dir(
        &self,
        loc: &Loc,
        own: impl Fn(&sys::Dir) -> Result<()>,
        named: impl Fn(&sys::Dir, &std::ffi::OsStr) -> Result<()>,
    ) -> Result<()> {
        for (i, b) in loc.mount.canonical.iter().enumerate() {
            let r = match b.dir(&loc.rel) {
                Err(e) if !loc.is_root() && e.raw_errno() == Errno::ACCESS.raw_os_error() => {
                    loc.parent_dir(i).and_then(|p| named(&p, loc.name()))
                }
                r => r.and_then(|d| own(&d)),
            };
            match r {
                Ok(()) => {}
                Err(e) if i > 0 && (sys::is_missing(&e) || e.is_not_found()) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;

/// A logical directory may not get the mode a container's directory has while it is created
/// (sticky, owner only: format.md §1): readers would take it for a file being created.
fn refuse_build_mode(loc: &crate::mount::Loc, mode: u32) -> Result<()> {
    if format::is_build_mode(mode) {
        return Err(loc.err(
            Errno::INVAL,
            &format!(
                "a directory of mode {:o} (sticky, owner only) is reserved by plfs for files being created",
                mode & 0o7777
            ),
        ));
    }
    Ok(())
}
