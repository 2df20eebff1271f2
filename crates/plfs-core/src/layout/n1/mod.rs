//! N-1 (`workload: shared_file | n-1`): a logical file is a container directory in which every
//! writer appends to its own data log and index log; readers merge the index logs.

mod ahead;
mod auto;
pub(crate) mod compact;
mod discard;
mod flat_close;
mod handle;
pub(crate) mod journal;
mod rewrite;
mod shared;
mod trashed;
mod writer;

use crate::container::DirExt;
use crate::container::{self, Container};
use crate::error::{Error, Result};
use crate::format;
use crate::layout::{Layout, Node, OpenFile};
use crate::mount::Loc;
use crate::sys::{self, RawStat, TimeSpec};
use crate::types::{FileFormat, OpenFlags, Stat};
use handle::ContainerHandle;
use rustix::io::Errno;
use shared::{lock, Doomed, Shared};
use std::collections::HashMap;
use std::ffi::OsStr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};

pub(crate) use trashed::open_trashed;

/// The containers this process has open, by identity, so every handle on one container shares
/// its writers and merged index.
#[derive(Debug, Default)]
pub struct Registry {
    open: Mutex<HashMap<(u64, u64), Weak<Shared>>>,
}

impl Registry {
    fn get(&self, ident: (u64, u64)) -> Option<Arc<Shared>> {
        lock(&self.open).get(&ident).and_then(Weak::upgrade)
    }

    /// The shared lock of every container this process has open: the descriptor that holds
    /// it, the file's identity and logical path.
    pub(crate) fn locks(&self) -> Vec<(i32, (u64, u64), PathBuf)> {
        let all: Vec<Arc<Shared>> = lock(&self.open).values().filter_map(Weak::upgrade).collect();
        all.iter()
            .map(|s| (s.c.dir.raw_fd(), s.c.ident, s.logical.clone()))
            .collect()
    }

    /// The containers this process has open at or under logical path `logical`.
    fn under(&self, logical: &std::path::Path) -> Vec<Arc<Shared>> {
        let all: Vec<Arc<Shared>> = lock(&self.open).values().filter_map(Weak::upgrade).collect();
        all.into_iter().filter(|s| s.logical.starts_with(logical)).collect()
    }

    /// This process's state of container `c`, created on first use. A new one takes a shared
    /// flock on the container, so that an unlink by another process leaves its data in place
    /// until this process closes it; if the container was deleted before the lock was taken,
    /// the open lost the race to the unlink: `ENOENT`.
    fn shared(&self, c: Container, logical: &std::path::Path) -> Result<Arc<Shared>> {
        let mut t = lock(&self.open);
        t.retain(|_, w| w.strong_count() > 0);
        if let Some(s) = t.get(&c.ident).and_then(Weak::upgrade) {
            return Ok(s);
        }
        let mut c = c;
        if !c.lock()? {
            return Err(Error::NotFound(logical.to_path_buf()));
        }
        let ident = c.ident;
        let s = Arc::new(Shared::new(c, logical.to_path_buf()));
        t.insert(ident, Arc::downgrade(&s));
        Ok(s)
    }
}

/// The N-1 layout: a create makes a container.
#[derive(Debug)]
pub struct N1 {
    pub(crate) reg: Arc<Registry>,
    umask: crate::sys::Umask,
}

impl N1 {
    /// The layout, sharing the process's table of open containers.
    pub fn new(reg: Arc<Registry>, umask: crate::sys::Umask) -> N1 {
        N1 { reg, umask }
    }
}

impl N1 {
    /// Opens the container another creator made at `loc` (or is making: it is waited for, up to
    /// [`container::BUILD_PATIENCE`], then finished if its creator is gone). `true` if this
    /// process made it after all (the name came free, or it finished an abandoned one).
    fn open_winner(&self, loc: &Loc, b: usize, parent: &sys::Dir, mode: u32) -> Result<(Container, bool)> {
        let start = std::time::Instant::now();
        let mut pause = std::time::Duration::from_micros(500);
        for _ in 0..10_000 {
            match Container::open(&loc.mount, b, &loc.rel) {
                Ok(c) => return Ok((c, false)),
                Err(e) if e.raw_errno() == Errno::ISDIR.raw_os_error() => {
                    return Err(loc.err(Errno::ISDIR, "is a directory"))
                }
                Err(e) if e.raw_errno() == Errno::INPROGRESS.raw_os_error() => {
                    if start.elapsed() >= container::BUILD_PATIENCE {
                        if let Some(c) = Container::adopt(&loc.mount, b, &loc.rel, mode)? {
                            return Ok((c, true));
                        }
                    }
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(std::time::Duration::from_millis(50));
                }
                // Gone again (its creator failed, or an unlink): claim the name once more.
                Err(e) if sys::is_missing(&e) => {
                    if let Some(c) = Container::create(&loc.mount, b, parent, loc.name(), mode, None)? {
                        return Ok((c, true));
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Err(loc.err(Errno::AGAIN, "kept changing while it was created"))
    }
}

impl Layout for N1 {
    fn create(&self, loc: &Loc, mode: u32, excl: bool) -> Result<(Box<dyn Node>, bool)> {
        let b = loc.home();
        let parent = loc.parent_dir(b)?;
        let mode = mode & !self.umask.get() & 0o7777;
        let (c, made) = match Container::create(&loc.mount, b, &parent, loc.name(), mode, None)? {
            Some(c) => (c, true),
            // Lost a race: what won must be a file. With O_EXCL, a file another process is
            // creating will exist: EEXIST once it does; one whose creator died is absent (stat
            // says so), so it is finished here and made by this call, as a free name would be
            // (of two such callers, the one whose marker lands wins).
            None if excl => match self.open_winner(loc, b, &parent, mode) {
                Ok((c, true)) => (c, true),
                _ => return Err(Error::Exists(loc.logical.clone())),
            },
            None => self.open_winner(loc, b, &parent, mode)?,
        };
        let st = c.marker;
        Ok((
            Box::new(ContainerNode::with(self.reg.clone(), loc.clone(), c, st)),
            made,
        ))
    }

    fn flush_under(&self, logical: &std::path::Path) -> Result<()> {
        self.reg.under(logical).iter().try_for_each(|s| s.flush_all())
    }

    fn invalidate_under(&self, logical: &std::path::Path) {
        for s in self.reg.under(logical) {
            s.reset_index();
        }
    }
}

/// A container found in the namespace.
#[derive(Debug)]
pub struct ContainerNode {
    reg: Arc<Registry>,
    loc: Loc,
    b: usize,
    /// The marker's stat from the look-up.
    st: RawStat,
    /// The container, when already opened.
    c: Mutex<Option<Container>>,
}

impl ContainerNode {
    /// The container at `loc` on backend `b`, whose marker `st` the look-up found.
    pub fn new(reg: Arc<Registry>, loc: Loc, b: usize, st: RawStat) -> ContainerNode {
        ContainerNode {
            reg,
            loc,
            b,
            st,
            c: Mutex::new(None),
        }
    }

    fn with(reg: Arc<Registry>, loc: Loc, c: Container, st: RawStat) -> ContainerNode {
        let b = c.backend;
        ContainerNode {
            reg,
            loc,
            b,
            st,
            c: Mutex::new(Some(c)),
        }
    }

    fn take_container(&self) -> Result<Container> {
        match lock(&self.c).take() {
            Some(c) => Ok(c),
            None => self.open_container(false),
        }
    }

    /// [`ContainerNode::take_container`] for a caller that lists and locks it (an unlink, a
    /// rename over it): opened for that at once where it is opened here.
    fn take_container_real(&self) -> Result<Container> {
        match lock(&self.c).take() {
            Some(c) => Ok(c),
            None => self.open_container(true),
        }
    }

    /// Opens the container by name (if it was replaced since the look-up, this is the new
    /// one, as a fresh open would find). A container deleted between the look-up and the open
    /// (replaced by a rename, or unlinked) shows as a directory without a marker for an instant:
    /// the name is looked up again.
    fn open_container(&self, real: bool) -> Result<Container> {
        let mut tries = 0;
        loop {
            let (mount, rel) = (&self.loc.mount, &self.loc.rel);
            let opened = match real {
                true => Container::open_real(mount, self.b, rel),
                false => Container::open(mount, self.b, rel),
            };
            match opened {
                Err(e) if e.raw_errno() == Errno::ISDIR.raw_os_error() && tries < 8 => {
                    tries += 1;
                    match crate::mount::probe(&self.loc.mount.canonical[self.b], &self.loc.rel)?.0 {
                        crate::mount::Probe::Container => continue,
                        crate::mount::Probe::Missing => return Err(self.loc.not_found()),
                        _ => return Err(e),
                    }
                }
                r => return r,
            }
        }
    }

    /// Runs `f` on the container, opening it once.
    fn with_c<R>(&self, f: impl FnOnce(&Container) -> Result<R>) -> Result<R> {
        let mut g = lock(&self.c);
        if g.is_none() {
            *g = Some(self.open_container(false)?);
        }
        f(g.as_ref().expect("opened"))
    }

    fn shared(&self) -> Result<Arc<Shared>> {
        if let Some(s) = self.reg.get((self.st.st_dev, self.st.st_ino)) {
            return Ok(s);
        }
        // The container opened by name may be deleted before this process holds it (it was
        // unlinked, or replaced by a rename): open the name again, which is then the new file or
        // nothing. Its marker may already be gone when it is opened (`EISDIR`): the same.
        let mut tries = 0;
        loop {
            let r = self
                .take_container()
                .and_then(|c| self.reg.shared(c, &self.loc.logical));
            match r {
                Err(e) if (e.is_not_found() || e.raw_errno() == Errno::ISDIR.raw_os_error()) && tries < 8 => tries += 1,
                r => return r,
            }
        }
    }

    /// Size and mtime from the droppings (the fast stat path, format.md §5), or `None` when
    /// they cannot decide. Where this node has no container open, `meta/` (or a one-directory
    /// container itself) is listed by its path:
    /// the look-up that made the node has just seen the marker published, and opening the
    /// container would `lstat` it again (a round trip on a network file system) and open the
    /// directory once more only to reach `meta/`. A container replaced or removed since the
    /// look-up is the race a stat has either way (the container's open would not catch a
    /// removal that starts after it either); a `meta/` that cannot be opened (a container of an
    /// earlier version without one, or one gone since) takes the container's own open, which
    /// tells those cases apart.
    fn closed_size(&self) -> Result<Option<(u64, u64)>> {
        if lock(&self.c).is_none() {
            let b = &self.loc.mount.canonical[self.b];
            // A one-directory container (the look-up's marker says so by its size) holds its
            // droppings itself.
            // A size that is no whole marker's (one that lags, or a damaged marker) cannot say:
            // the container's open reads the marker.
            let size = self.st.st_size as u64;
            let rel = if format::is_flat_marker(size) {
                Some(self.loc.rel.clone())
            } else if size == format::MARKER_LEN as u64 {
                Some(self.loc.rel.join(format::META_DIR))
            } else {
                None
            };
            if let Some(Ok(meta)) = rel.map(|r| b.dir(&r)) {
                if format::is_flat_marker(size) {
                    let names = crate::container::list_whole(
                        &meta,
                        self.loc.mount.shadows_in_use(),
                        crate::container::Marker::Fresh(&self.st),
                    )?;
                    let Some((size, mtime)) = format::fast_size_of_listing(&names) else {
                        return Ok(None);
                    };
                    // Held to the log of the writer whose close dropping gives it: where that
                    // log is not at the top, the container's open looks in its hostdirs.
                    let droppings = format::parse_droppings(&names);
                    if let Some(ok) = crate::container::proven_by_logs(&[(&meta, &names)], &droppings, size)? {
                        return Ok(ok.then_some((size, mtime)));
                    }
                } else if format::fast_size_of_listing(&meta.list()?).is_none() {
                    return Ok(None);
                }
            }
        }
        self.with_c(|c| c.fast_size())
    }

    fn marker_path(&self) -> PathBuf {
        self.loc.on(self.b).join(format::MARKER_NAME)
    }

    /// The container directory's parent on its backend.
    fn parent(&self) -> Result<crate::mount::DirRef<'_>> {
        self.loc.parent_dir(self.b)
    }
}

impl Node for ContainerNode {
    fn stat(&self) -> Result<Stat> {
        if !sys::is_file(&self.st) {
            return Err(Error::corrupt(self.marker_path(), "marker is not a regular file"));
        }
        let ident = (self.st.st_dev, self.st.st_ino);
        let size = match self.reg.get(ident) {
            Some(s) => s.size()?,
            None => {
                let fast = self.closed_size()?;
                match fast {
                    Some((size, _)) => size,
                    None => self.shared()?.size()?,
                }
            }
        };
        Ok(Stat::from_raw(&self.st, crate::types::FileKind::File).as_file(size))
    }

    fn open(&self, flags: OpenFlags, pid: u32, created: bool) -> Result<OpenFile> {
        if !created {
            let want = flags.access_mask();
            if want != 0 && rustix::process::geteuid().as_raw() != 0 {
                self.access(want)
                    .map_err(|_| self.loc.err(Errno::ACCESS, "permission denied"))?;
            }
        }
        let shared = self.shared()?;
        if flags.trunc && flags.write && !created {
            shared.truncate(0)?;
        }
        // A writer is made at its first write (`ContainerHandle::writer`): a handle opened for
        // writing that never writes (`touch`, `: > F`) draws no writer id and asks no host name.
        let h = ContainerHandle::new(shared);
        Ok(OpenFile::new(Box::new(h), self.loc.logical.clone(), flags, pid))
    }

    fn truncate(&self, size: u64) -> Result<()> {
        let s = self.shared()?;
        s.truncate(size)?;
        auto::after_truncate(&s);
        Ok(())
    }

    /// Renames the container aside (so it vanishes atomically), then deletes it and its shadow
    /// directories, or leaves that to the last close if this process has it open.
    fn unlink(&self) -> Result<()> {
        let c = self.take_container_real()?;
        let parent = self.parent()?;
        let name = self.loc.name();
        self.discard(c, &parent, name, &|trash| parent.rename_noreplace(trash, &parent, name))
    }

    fn replace_by(&self, from_parent: &sys::Dir, from_name: &OsStr) -> Result<()> {
        let c = self.take_container_real()?;
        let tp = self.parent()?;
        let name = self.loc.name();
        if from_parent.exchange(from_name, &tp, name)? {
            // The old container now has the source's name: make it vanish, then delete it. (If
            // what had the name by then is no file, the two are exchanged back.)
            let undo = |trash: &str| {
                from_parent.rename(trash, from_parent, from_name)?;
                from_parent.exchange(from_name, &tp, name).map(drop)
            };
            return self.discard(c, from_parent, from_name, &undo);
        }
        // No RENAME_EXCHANGE on this backend: record the name in the old container, move it
        // aside, move the source in (moving the old one back if that fails), then delete the old
        // one. Between the two renames the name is missing; after a crash there, fsck moves the
        // old container back under the recorded name (docs/design.md, "Backends").
        let trash = format::tmp_name(format::RENAME_TRASH_PREFIX, crate::clock::random_u64());
        c.dir
            .write_atomic(format::RENAME_NAME_FILE, name.as_encoded_bytes(), 0o600)?;
        tp.rename(name, &tp, &trash)?;
        if let Err(e) = from_parent.rename(from_name, &tp, name) {
            match tp.rename(&trash, &tp, name) {
                Ok(()) => {
                    let _ = c.dir.unlink_opt(format::RENAME_NAME_FILE);
                }
                Err(e2) => crate::warn!(
                    "{e2}: could not move {} back after a failed rename (plfs fsck does)",
                    self.loc.logical.display()
                ),
            }
            return Err(e);
        }
        // What a rename moved aside that is no file (a directory made at the name since the
        // look-up) goes back to the source's name, free now.
        self.discard(c, &tp, OsStr::new(&trash), &|t| {
            tp.rename_noreplace(t, from_parent, from_name)
        })
    }

    fn chmod(&self, mode: u32) -> Result<()> {
        self.with_c(|c| c.set_mode(mode))
    }

    fn chown(&self, uid: u32, gid: u32) -> Result<()> {
        self.with_c(|c| c.set_owner(uid, gid))
    }

    fn utimens(&self, atime: TimeSpec, mtime: TimeSpec) -> Result<()> {
        self.with_c(|c| c.set_times(atime, mtime))?;
        if let Some(sh) = self.reg.get((self.st.st_dev, self.st.st_ino)) {
            sh.times_were_set(mtime);
        }
        Ok(())
    }

    fn access(&self, mode: u32) -> Result<()> {
        self.with_c(|c| c.dir.access(format::MARKER_NAME, mode))
            .map_err(|e| match e {
                Error::Io { errno, .. } => self.loc.err(errno, &errno.to_string()),
                e => e,
            })
    }

    fn container(&self) -> Option<Container> {
        self.take_container().ok()
    }

    fn format(&self) -> Result<FileFormat> {
        let version = self.with_c(|c| c.read_marker())?.version;
        Ok(FileFormat::Container { version })
    }

    fn compact(
        &self,
        opts: &crate::layout::compaction::CompactOptions,
    ) -> Option<Result<crate::layout::compaction::CompactReport>> {
        Some(self.shared().and_then(|s| compact::compact(&s, opts)))
    }

    fn usage(&self) -> Option<Result<crate::layout::compaction::Usage>> {
        Some(self.shared().and_then(|s| compact::usage(&s)))
    }

    fn ident(&self) -> Option<(u64, u64)> {
        Some((self.st.st_dev, self.st.st_ino))
    }
}
