//! A container on its backend: creating one atomically, opening one, its `meta/` droppings, its
//! marker and its hostdirs (inside it and on shadow backends). The byte-level grammar is in
//! [`crate::format`] and docs/format.md.
//!
//! A container is opened through a directory descriptor, and everything inside it is reached with
//! `*at` calls relative to that descriptor, one component at a time, so renaming a container never
//! strands an open handle and nothing inside it is ever followed as a link.

use crate::error::{Error, Result};
use crate::format::{self, MetaDropping};
use crate::mount::{Backend, Mount};
use crate::sys::{self, Access, Create, Dir, TimeSpec};
use rustix::io::Errno;
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

mod building;
mod dirs;
mod layout;
mod listing;
mod lock;
mod places;
mod sizes;
pub(crate) use building::{examine as examine_build, remove_if_abandoned, Build};
pub(crate) use dirs::DirExt;
pub use dirs::{container_dir_mode, log_mode, SHADOW_ROOT_MODE};
use dirs::{follow, mkdir_exact, Expect};
pub(crate) use layout::{layout_by_sight, proven_layout};
pub(crate) use listing::{list_whole, Marker};
pub(crate) use lock::CompactionLock;
pub use places::ListingStamp;
pub(crate) use sizes::proven_by_logs;

/// An open container.
#[derive(Debug)]
pub struct Container {
    /// The mount point it belongs to.
    pub mount: Arc<Mount>,
    /// Index of its canonical backend in `mount.canonical`.
    pub backend: usize,
    /// Directory of the container (its display path is the path it was opened at; the
    /// descriptor stays valid across renames).
    pub dir: Dir,
    /// (st_dev, st_ino) of the marker: the logical file's process-wide identity and inode number.
    pub ident: (u64, u64),
    /// The marker's stat when the container was opened (its mode gives the logs' mode).
    pub marker: sys::RawStat,
    /// Whether this descriptor holds a shared flock on the container (see [`Container::lock`]).
    pub locked: bool,
    /// This process made the container (this handle is its creator's).
    made_here: bool,
    /// A one-directory container (format 3, a marker of [`format::MARKER_LEN_V3`] bytes): its
    /// droppings, and the logs of its writers on its own backend, are in the container
    /// directory itself; there is no `meta/` and no cid dropping.
    flat: bool,
    /// The container directory's last listing by [`Container::list_meta`] in a one-directory
    /// container, taken by the next [`Container::hostdirs_listed`]: a refresh lists the
    /// directory once for its droppings and its logs.
    listing: std::sync::Mutex<Option<Vec<OsString>>>,
    cid: OnceLock<u128>,
    meta: OnceLock<Dir>,
    /// The container directory opened `O_PATH` on a description of its own, made at the first
    /// need and shared by the index and the writers of this process
    /// ([`Container::own_path_handle`]).
    own: OnceLock<Arc<Dir>>,
}

/// How long a creator waits for another creator's container to be published before it takes
/// it for abandoned (its creator died between the `mkdir` and the marker) and finishes it.
pub const BUILD_PATIENCE: std::time::Duration = std::time::Duration::from_secs(10);

impl Container {
    /// Opens the container at `rel` on canonical backend `backend`; an error if something that
    /// is not a container is there (`ENOENT` if nothing is).
    ///
    /// The directory is opened `O_PATH`: a stat reads the marker and lists `meta/` through it,
    /// and on a FUSE backend that saves an open and a release of the container (6 brick
    /// operations on the GlusterFS volume). [`Container::lock`] and an unlink make it real.
    pub fn open(mount: &Arc<Mount>, backend: usize, rel: &Path) -> Result<Container> {
        Self::open_as(mount, backend, rel, false)
    }

    /// [`Container::open`] with the directory opened for listing and locking at once (an unlink
    /// does both), instead of `O_PATH` and a second open when it gets there.
    pub fn open_real(mount: &Arc<Mount>, backend: usize, rel: &Path) -> Result<Container> {
        Self::open_as(mount, backend, rel, true)
    }

    fn open_as(mount: &Arc<Mount>, backend: usize, rel: &Path, real: bool) -> Result<Container> {
        let b = &mount.canonical[backend];
        let dir = match if real { b.dir(rel) } else { b.dir_path(rel) } {
            Ok(d) => d,
            Err(e) if e.raw_errno() == Errno::NOTDIR.raw_os_error() || e.raw_errno() == Errno::LOOP.raw_os_error() => {
                let p = mount.canonical[backend].path.join(rel);
                return Err(Error::errno(Errno::NOTDIR, format!("{}: not a PLFS file", p.display())));
            }
            Err(e) => return Err(e),
        };
        Container::from_dir(mount, backend, dir)
    }

    /// A container from its open directory.
    pub fn from_dir(mount: &Arc<Mount>, backend: usize, dir: Dir) -> Result<Container> {
        let st = published_marker(&dir)?;
        let flat = layout_of(&dir, &st)?;
        Ok(Container {
            mount: mount.clone(),
            backend,
            // Moved to the high range by `lock`, when a file is opened: a look-up for a stat or
            // an unlink keeps it for the length of one call.
            dir,
            ident: (st.st_dev, st.st_ino),
            marker: st,
            locked: false,
            made_here: false,
            flat,
            listing: Default::default(),
            cid: OnceLock::new(),
            meta: OnceLock::new(),
            own: OnceLock::new(),
        })
    }

    /// Takes a shared flock on the container (held while this process has it open: an unlink
    /// elsewhere then leaves its data in place, design.md "Unlink") and checks it still exists:
    /// `Ok(false)` if it was deleted before the lock was taken.
    pub fn lock(&mut self) -> Result<bool> {
        if self.locked {
            return Ok(true);
        }
        self.dir.make_real()?;
        self.dir.keep();
        self.dir.lock_shared()?;
        self.locked = true;
        match self.dir.stat_opt(format::MARKER_NAME)? {
            Some(st) => {
                self.marker = st;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// A container for fsck, which may have to repair its marker or cid dropping: nothing is
    /// required of the directory, and the id is given.
    pub fn for_fsck(mount: &Arc<Mount>, backend: usize, dir: Dir, cid: u128) -> Result<Container> {
        let marker = dir.stat_opt(format::MARKER_NAME)?;
        let flat = layout_by_sight(&dir)?;
        let st = marker.unwrap_or(dir.fstat()?);
        let c = Container {
            mount: mount.clone(),
            backend,
            dir: dir.kept(),
            ident: (st.st_dev, st.st_ino),
            marker: st,
            locked: false,
            made_here: false,
            flat,
            listing: Default::default(),
            cid: OnceLock::new(),
            meta: OnceLock::new(),
            own: OnceLock::new(),
        };
        let _ = c.cid.set(cid);
        Ok(c)
    }

    /// Its backend path when it was opened (for messages).
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Display path of an entry inside the container.
    pub fn sub(&self, rel: &str) -> PathBuf {
        self.dir.sub(rel)
    }

    /// The container id (names its shadow directories): see [`cid_of`].
    pub fn cid(&self) -> Result<u128> {
        if let Some(c) = self.cid.get() {
            return Ok(*c);
        }
        let cid = if self.flat {
            read_marker(&self.dir)?.container_id
        } else {
            cid_of(&self.dir)?
        };
        Ok(*self.cid.get_or_init(|| cid))
    }

    /// Creates a container named `name` in `parent` (on canonical backend `backend`): `mkdir`
    /// of the name in the build mode claims it (of concurrent creators exactly one makes the
    /// directory), then `meta/`, its cid dropping and last the marker, which publishes it, and
    /// the directory gets its container mode (format.md §1). Until the marker exists readers take
    /// the name for absent and other creators wait ([`Container::open`] says `EINPROGRESS`).
    /// Returns the new container, open and locked, or `Ok(None)` if something already exists at
    /// `name`. Before issue 22 the container was built under a temporary name and renamed into
    /// place: on GlusterFS the rename of a directory costs 21 brick operations, and every creator
    /// that lost the race built a whole container and removed it again.
    pub fn create(
        mount: &Arc<Mount>,
        backend: usize,
        parent: &Dir,
        name: &std::ffi::OsStr,
        mode: u32,
        owner: Option<(u32, u32)>,
    ) -> Result<Option<Container>> {
        match parent.mkdir(name, format::BUILD_DIR_MODE) {
            Ok(()) => {}
            Err(Error::Io {
                errno: Errno::EXIST, ..
            }) => return Ok(None),
            Err(e) => return Err(e),
        }
        let mut claim = None;
        let made = (|| {
            // A umask that takes the owner's bits would leave a directory this process cannot
            // build in (or that does not look like one being built).
            if crate::sys::umask() & 0o700 != 0 {
                parent.chmod(name, format::BUILD_DIR_MODE)?;
            }
            let t = parent.open_dir(name)?.kept();
            claim = Some(t.fstat()?);
            let r = crate::clock::random_u64s::<2>();
            let cid = (u128::from(r[0]) << 64) | u128::from(r[1]);
            let flat = mount.global.container_format >= 3;
            Self::finish(mount, backend, t, cid, mode, owner, flat)
        })();
        // `Ok(None)`: only an adopter (after BUILD_PATIENCE) could have published it, and it is
        // theirs. On an error nothing was published (a failed publication removes its marker):
        // the claim is removed, so that the name is free again, if the name is still the claim.
        // Another process may have taken it from this one meanwhile: a rename over the name
        // exchanged it for its own file, or removed it as a file being created that it replaced
        // (issue 50). That other file is left alone, and the name is the other's: `Ok(None)`,
        // as when the `mkdir` finds the name taken.
        match made {
            Err(e) => {
                let now = parent.stat_opt(name);
                match (&claim, &now) {
                    (Some(c), Ok(Some(n))) if (c.st_dev, c.st_ino) != (n.st_dev, n.st_ino) => Ok(None),
                    (Some(_), Ok(None)) if sys::is_missing(&e) => Ok(None),
                    (None, _) if sys::is_missing(&e) => Ok(None),
                    _ => {
                        let _ = parent.remove_tree(name);
                        Err(e)
                    }
                }
            }
            r => r,
        }
    }

    /// Finishes a container whose creator died while building it (a directory in the build mode
    /// without a marker, or with one never written, older than [`BUILD_PATIENCE`] for the
    /// caller): with the container id of its cid dropping if it made one. `Ok(None)` if someone
    /// else published it meanwhile, or its marker is too young to be taken for abandoned.
    pub fn adopt(mount: &Arc<Mount>, backend: usize, rel: &Path, mode: u32) -> Result<Option<Container>> {
        let t = mount.canonical[backend].dir(rel)?.kept();
        let dmode = t.fstat()?.st_mode;
        if !format::is_build_mode(dmode) {
            return Ok(None);
        }
        if let Some(m) = t.stat_opt(format::MARKER_NAME)? {
            // A marker not yet written: its creator made it and died before writing it, unless
            // it is younger than the patience (a live creator writes it right after making it).
            let age = crate::clock::age_ns(sys::mtime_ns(&m));
            if format::is_published(m.st_size as u64, dmode) || u128::from(age) < BUILD_PATIENCE.as_nanos() {
                return Ok(None);
            }
            t.unlink_opt(format::MARKER_NAME)?;
        }
        let cid = match cid_of(&t) {
            Ok(c) => c,
            Err(_) => {
                let r = crate::clock::random_u64s::<2>();
                (u128::from(r[0]) << 64) | u128::from(r[1])
            }
        };
        crate::warn!(
            "{}: finishing a file whose creator stopped while making it",
            t.path().display()
        );
        // In the layout its creator chose: a creator of a version 2 container makes `meta/` first.
        let flat = t.stat_opt(format::META_DIR)?.is_none() && mount.global.container_format >= 3;
        Self::finish(mount, backend, t, cid, mode, None, flat)
    }

    /// Builds a claimed container in `t`: in a version 2 container (`flat` false) `meta/` and
    /// the cid dropping first; then the marker (the publication), then the directory's own mode.
    /// `Ok(None)` if another process published it first. A failure after the marker was made
    /// removes the marker again.
    fn finish(
        mount: &Arc<Mount>,
        backend: usize,
        t: Dir,
        cid: u128,
        mode: u32,
        owner: Option<(u32, u32)>,
        flat: bool,
    ) -> Result<Option<Container>> {
        t.lock_shared()?;
        // Every directory of the container has the container's mode exactly, whatever the umask
        // (the file's group is the marker's: both are made by this process).
        let dmode = container_dir_mode(mode);
        let meta = if flat {
            None
        } else {
            let meta = mkdir_exact(&t, format::META_DIR, dmode, None, Expect::New)?.kept();
            meta.touch(format::cid_dropping_name(cid), 0o644)?;
            Some(meta)
        };
        let marker = format::Marker {
            version: if flat { format::FORMAT_VERSION } else { 2 },
            container_id: cid,
            created_ns: crate::clock::now_ns(),
        };
        let m = match t.create_file(format::MARKER_NAME, mode & 0o7777, Create::Excl) {
            Ok(m) => m,
            Err(Error::Io {
                errno: Errno::EXIST, ..
            }) => return Ok(None),
            Err(e) => return Err(e),
        };
        let publish = || -> Result<sys::RawStat> {
            m.pwrite_all(&marker.encode(), 0)?;
            if let Some((u, g)) = owner {
                m.chown(u, g)?;
                t.chown_self(u, g)?;
            }
            // The marker's mode is the logical mode, exactly: creation applied the umask (and may
            // have dropped the set-group-ID bit), a chown may drop the set-ID bits. Looked at
            // first, so that the common create, whose mode came out right, makes no chmod.
            let mut st = m.stat()?;
            if st.st_mode & 0o7777 != mode & 0o7777 {
                m.chmod(mode & 0o7777)?;
                st = m.stat()?;
            }
            t.chmod_self(dmode)?;
            Ok(st)
        };
        // The marker's close is looked at too: on a network file system its bytes may fail in
        // the client after the write returned, and a container whose marker never got them
        // would read as damage ([`crate::sys::File::close`]).
        let st = match publish().and_then(|st| m.close().map(|()| st)) {
            Ok(st) => st,
            Err(e) => {
                let _ = t.unlink_opt(format::MARKER_NAME);
                return Err(e);
            }
        };
        let c = Container {
            mount: mount.clone(),
            backend,
            dir: t,
            ident: (st.st_dev, st.st_ino),
            marker: st,
            locked: true,
            made_here: true,
            flat,
            listing: Default::default(),
            cid: OnceLock::new(),
            meta: OnceLock::new(),
            own: OnceLock::new(),
        };
        let _ = c.cid.set(cid);
        if let Some(meta) = meta {
            let _ = c.meta.set(meta);
        }
        Ok(Some(c))
    }

    /// stat of the marker: the logical file's mode, owner and times.
    pub fn marker_stat(&self) -> Result<sys::RawStat> {
        self.dir.stat(format::MARKER_NAME)
    }

    /// Reads and checks the marker's contents.
    pub fn read_marker(&self) -> Result<format::Marker> {
        read_marker(&self.dir)
    }

    /// Sets the marker's mtime to `ns` if that is newer than its current mtime.
    pub fn bump_mtime(&self, ns: u64) -> Result<()> {
        let cur = sys::mtime_ns(&self.marker_stat()?).max(0) as u64;
        if ns > cur {
            self.set_times(
                TimeSpec::Omit,
                TimeSpec::At((ns / 1_000_000_000) as i64, (ns % 1_000_000_000) as i64),
            )?;
        }
        Ok(())
    }

    /// utimensat on the marker.
    pub fn set_times(&self, atime: TimeSpec, mtime: TimeSpec) -> Result<()> {
        self.dir.set_times(format::MARKER_NAME, atime, mtime)
    }

    /// chmod of the logical file: the marker holds its mode; the container, its directories and
    /// logs follow it ([`Container::follow_mode`]).
    pub fn set_mode(&self, mode: u32) -> Result<()> {
        self.dir.chmod(format::MARKER_NAME, mode & 0o7777)?;
        self.dir.chmod_self(container_dir_mode(mode))?;
        self.follow_mode(mode)
    }

    /// chown of the logical file (`u32::MAX` leaves an id unchanged): the marker, what follows
    /// its owner ([`Container::follow_owner`]), and last the container directory, whose owner
    /// therefore says that the last chown finished. A chown to the ids the directory has already
    /// (sqlite's of every journal it makes, as root) changes the marker alone: the logs have
    /// them, unless a chown was cut short, which leaves the directory's old ids and is done again
    /// whole by the next.
    pub fn set_owner(&self, uid: u32, gid: u32) -> Result<()> {
        let d = self.dir.fstat()?;
        let done = (uid == u32::MAX || uid == d.st_uid) && (gid == u32::MAX || gid == d.st_gid);
        self.dir.chown(format::MARKER_NAME, uid, gid)?;
        if !done {
            self.follow_owner(uid, gid)?;
        }
        self.dir.chown_self(uid, gid)
    }

    /// Gives every directory of the container below its own (`meta/`, hostdirs, shadow
    /// directories) the container's mode and every log the mode that follows from the logical
    /// mode `mode`, after a chmod of the marker and the container: readers the new mode admits
    /// can then read every log. Objects made by another user are skipped (see [`follow`]).
    pub fn follow_mode(&self, mode: u32) -> Result<()> {
        let (dmode, lmode) = (container_dir_mode(mode), log_mode(mode));
        self.on_inner(&|d: &Dir| d.chmod_self(dmode), &|d: &Dir, name| d.chmod(name, lmode))
    }

    /// Gives every object of the container below its own directory the owner `uid`/`gid`
    /// (`u32::MAX` leaves an id unchanged), after a chown of the marker and the container.
    pub fn follow_owner(&self, uid: u32, gid: u32) -> Result<()> {
        self.on_inner(&|d: &Dir| d.chown_self(uid, gid), &|d: &Dir, name| {
            d.chown(name, uid, gid)
        })
    }

    /// Runs `on_dir` on `meta/`, every hostdir and every shadow directory, and `on_file` on every
    /// file in a hostdir (in a one-directory container: on every log in it too, not on the
    /// directory itself, which the caller changed).
    fn on_inner(
        &self,
        on_dir: &dyn Fn(&Dir) -> Result<()>,
        on_file: &dyn Fn(&Dir, &OsString) -> Result<()>,
    ) -> Result<()> {
        // One listing of a one-directory container gives its logs and its hostdirs.
        let mut listed = None;
        if self.flat {
            let names = self.dir.list()?;
            for name in &names {
                if name.to_str().and_then(format::parse_log_name).is_some() {
                    follow(on_file(&self.dir, name))?;
                }
            }
            listed = Some(names);
        } else if let Some(m) = self.dir.open_dir_opt(format::META_DIR)? {
            follow(on_dir(&m))?;
        }
        if self.shadows_in_use() {
            let rel = self.shadow_rel()?;
            for shadow in &self.mount.shadows {
                if let Some(d) = shadow.dir_opt(&rel)? {
                    follow(on_dir(&d))?;
                }
            }
        }
        // The container itself is done above.
        for (h, _) in self.hostdirs_with(listed, false)? {
            follow(on_dir(&h))?;
            for name in h.list()? {
                follow(on_file(&h, &name))?;
            }
        }
        Ok(())
    }

    /// Deletes every writer's logs (in the container, in all hostdirs, here and on shadows) and the close/trunc
    /// droppings, flattened index and compaction journal. Used by truncate-to-zero when no writer
    /// has the file open. Waits for a running compaction (it holds the compaction lock), which could
    /// otherwise publish a copy of the data after the wipe.
    pub fn wipe_data(&self) -> Result<()> {
        let lock = self.compaction_lock(true)?;
        if let Some(l) = &lock {
            l.shared()?;
        }
        for name in self.dir.list()? {
            let b = name.as_bytes();
            if b.starts_with(format::HOSTDIR_PREFIX.as_bytes()) {
                // Emptied, not removed: see `clear_shadows`.
                self.dir.clear_tree(&name)?;
            } else if b == format::FLAT_NAME.as_bytes() || b == format::compact::JOURNAL_NAME.as_bytes() {
                self.dir.remove_tree(&name)?;
            } else if self.flat
                && (name.to_str().and_then(format::parse_log_name).is_some()
                    || b.starts_with(format::compact::CMP_TMP_PREFIX.as_bytes()))
            {
                // A one-directory container's logs, and what an interrupted compaction left of
                // its new ones (a version 2 container's go with their hostdirs).
                self.dir.unlink_opt(&name)?;
            }
        }
        self.clear_shadows()?;
        for d in self.list_meta()? {
            if !matches!(d, MetaDropping::Open { .. }) {
                self.remove_meta(&d)?;
            }
        }
        Ok(())
    }

    /// Whether the container was unlinked (renamed aside to a trash name): its directory's
    /// current name, read back from /proc, says so.
    pub fn in_trash(&self) -> bool {
        self.dir.current_path().is_some_and(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(format::TRASH_PREFIX) || n.starts_with(format::RENAME_TRASH_PREFIX))
        })
    }

    /// Deletes this container, which sits under a trash name (see [`Container::in_trash`]), and
    /// its shadow directories.
    pub fn remove_trashed(&self) -> Result<()> {
        let Some(cur) = self.dir.current_path() else {
            return Ok(());
        };
        let (Some(parent), Some(name)) = (cur.parent(), cur.file_name()) else {
            return Ok(());
        };
        let _ = parent;
        // The directory's own `..` (no path is followed), and only if the name there is still
        // this directory.
        let up = self.dir.parent()?;
        let me = self.dir.fstat()?;
        match up.stat_opt(name)? {
            Some(st) if (st.st_dev, st.st_ino) == (me.st_dev, me.st_ino) => {}
            _ => return Ok(()),
        }
        self.remove_shadows()?;
        up.remove_tree(name)
    }

    /// Removes the container's shadow directories on every shadow backend (its own canonical
    /// backend included: a rename may have moved the container onto the backend that holds
    /// its shadow logs).
    pub fn remove_shadows(&self) -> Result<()> {
        self.each_shadow(|sroot, name| sroot.remove_tree(name))
    }

    /// Removes every log of this container on its shadow backends, keeping their directories
    /// (a truncate to zero). A directory removed and made again under the same name, as the next
    /// writer would, can stay bound to the removed one for a while in another client's caches,
    /// and that client then lists nothing there: on MooseFS a reader on another client, right
    /// after a truncating rewrite, found the new writer's close dropping but none of its logs in
    /// its shadow directory, for about a second, and failed with `EIO`
    /// (`backends::another_client_sees_a_closed_file_whole_at_once`).
    pub fn clear_shadows(&self) -> Result<()> {
        self.each_shadow(|sroot, name| sroot.clear_tree(name))
    }

    /// Runs `f` on each shadow backend's `.plfs_shadow` directory with the name of this
    /// container's directory there.
    fn each_shadow(&self, f: impl Fn(&sys::Dir, &std::ffi::OsStr) -> Result<()>) -> Result<()> {
        let m = &self.mount;
        if m.canonical.len() == 1 && m.shadows.len() == 1 && Arc::ptr_eq(&m.canonical[0], &m.shadows[0]) {
            return Ok(()); // every writer logs inside the container (see `hostdirs_with`)
        }
        // Each shadow's `.plfs_shadow` first: the container's id (a listing of `meta/`) is only
        // needed where one exists (none on a mount that never spread a writer to a shadow).
        let mut rel = None;
        for shadow in &self.mount.shadows {
            let Some(sroot) = shadow.dir_opt(Path::new(format::SHADOW_ROOT))? else {
                continue;
            };
            let rel = match &mut rel {
                Some(r) => r,
                None => rel.insert(self.shadow_rel()?),
            };
            f(&sroot, rel.file_name().unwrap_or_default())?;
        }
        Ok(())
    }
}

/// The id of the container in directory `d`: from its `meta/cid.*` dropping where there is one
/// (containers of earlier versions, and fsck's authority when the two disagree), else from the
/// marker.
pub fn cid_of(d: &Dir) -> Result<u128> {
    if let Some(m) = d.open_dir_opt(format::META_DIR)? {
        let found = m
            .list()?
            .iter()
            .find_map(|n| n.to_str().and_then(format::parse_cid_dropping));
        if let Some(c) = found {
            return Ok(c);
        }
    }
    read_marker(d).map(|m| m.container_id)
}

/// The stat of the marker of the container in `dir`, if it is published (format.md §1): else
/// `EINPROGRESS` for a file being created, `EISDIR` for a directory.
fn published_marker(dir: &Dir) -> Result<sys::RawStat> {
    let in_progress = || {
        Error::errno(
            Errno::INPROGRESS,
            format!("{}: being created by another process", dir.path().display()),
        )
    };
    let not_regular = || Error::corrupt(dir.sub(format::MARKER_NAME), "marker is not a regular file");
    match dir.stat_opt(format::MARKER_NAME)? {
        // A marker not yet written costs a stat of the directory; a whole one is published
        // whatever the directory's mode.
        Some(st) if sys::is_file(&st) && (st.st_size as u64) < format::MARKER_LEN as u64 => {
            if format::is_published(st.st_size as u64, dir.fstat()?.st_mode) {
                // Damage, or written and published since the first stat: its stat now.
                dir.stat(format::MARKER_NAME)
            } else {
                Err(in_progress())
            }
        }
        Some(st) if sys::is_file(&st) => Ok(st),
        Some(_) => Err(not_regular()),
        None if format::is_build_mode(dir.fstat()?.st_mode) => Err(in_progress()),
        // Not in the build mode: a directory, unless its creator made the marker and left the
        // build mode between the two stats (it makes the marker first): look once more.
        None => match dir.stat_opt(format::MARKER_NAME)? {
            Some(st) if sys::is_file(&st) => Ok(st),
            Some(_) => Err(not_regular()),
            None => Err(Error::errno(
                Errno::ISDIR,
                format!("{}: is a directory", dir.path().display()),
            )),
        },
    }
}

/// Whether the container in `dir`, whose published marker has stat `st`, is one directory
/// (format 3): its marker's size says so where it is a whole marker's (48 or 64 bytes). A marker
/// of any other size is read instead: a network file system's size can lag behind the bytes
/// (the marker's 64 bytes were written by one call), and a marker cut to 48-63 bytes or grown
/// past 64 is damage (`EIO` naming it), which the read reports: taken by its size for a version
/// 2 container, a version 3 one would show none of its droppings and logs, an empty file with
/// success (issue 50). A 48-byte marker of a container without `meta/` is read too (a version 3
/// marker cut to exactly 48 bytes; every version 2 container makes `meta/` before its marker):
/// one `lstat` more for version 2 containers only.
fn layout_of(dir: &Dir, st: &sys::RawStat) -> Result<bool> {
    let size = st.st_size as u64;
    if format::is_flat_marker(size) || (size == format::MARKER_LEN as u64 && dir.stat_opt(format::META_DIR)?.is_some())
    {
        return Ok(format::is_flat_marker(size));
    }
    Ok(read_marker(dir)?.version >= 3)
}

/// Reads and checks the marker of the container in directory `d`.
pub fn read_marker(d: &Dir) -> Result<format::Marker> {
    let f = d.open_file(format::MARKER_NAME, Access::Read)?;
    let mut b = [0u8; format::MARKER_LEN_V3 + 1];
    let n = f.pread_full(&mut b, 0)?;
    Ok(format::Marker::decode(f.path(), &b[..n])?)
}

/// `.plfs_shadow/<cid>` relative to a shadow backend's root.
pub fn shadow_rel(cid: u128) -> PathBuf {
    Path::new(format::SHADOW_ROOT).join(format!("{cid:032x}"))
}

/// Removes `<shadow>/.plfs_shadow/<cid>` (missing is fine).
pub fn remove_shadow_dir(shadow: &Backend, rel: &Path) -> Result<()> {
    let Some(sroot) = shadow.dir_opt(Path::new(format::SHADOW_ROOT))? else {
        return Ok(());
    };
    sroot.remove_tree(rel.file_name().unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes() {
        assert_eq!(container_dir_mode(0o644), 0o755);
        assert_eq!(container_dir_mode(0o600), 0o711);
        assert_eq!(container_dir_mode(0o620), 0o771);
        assert_eq!(container_dir_mode(0o640), 0o751);
        assert_eq!(container_dir_mode(0o602), 0o717);
        assert_eq!(log_mode(0o444), 0o644);
    }
}
