//! Where a container keeps what: its droppings (in `meta/`, or in the container directory itself
//! in a one-directory container, format 3), the directories that hold its writers' logs (the
//! container itself, its hostdirs, and hostdirs on shadow backends), and the directory a writer
//! of this process makes its logs in (format.md §1, §5, §7).

use super::dirs::{mkdir_exact, Expect};
use super::{container_dir_mode, Container, SHADOW_ROOT_MODE};
use crate::error::Result;
use crate::format::{self, MetaDropping};
use crate::sys::{self, Dir};
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::Arc;

/// What [`Container::listing_stamp`] read of the container directory before a listing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListingStamp {
    /// Its mtime (ns), ctime (s, ns) and inode.
    pub id: sys::DirStamp,
    /// Whether a listing taken now could miss an entry made later that leaves the stamp as it is.
    pub recent: bool,
}

impl ListingStamp {
    /// Whether a listing taken with `self` is still whole when the directory's stamp is `now`.
    pub fn vouches_at(&self, now: &ListingStamp) -> bool {
        !self.recent && self.id == now.id
    }
}

/// A directory holding logs of a container, with its listing where one is at hand.
pub type Hostdir = (Arc<Dir>, Option<Vec<OsString>>);

impl Container {
    /// Whether this is a one-directory container (format 3): no `meta/`, its droppings and the
    /// logs of its writers on this backend in the container directory.
    pub fn is_flat(&self) -> bool {
        self.flat
    }

    /// Whether this process's writers on this backend keep their logs in the container directory
    /// itself: in a one-directory container, unless `num_hostdirs` asks for hostdirs.
    fn logs_at_top(&self) -> bool {
        self.flat && self.mount.global.num_hostdirs <= 1
    }

    /// The container directory again, for `*at` calls on its logs: `O_PATH`, on an open file
    /// description of its own. A duplicate of [`Container::dir`] would share its flock(2) lock,
    /// and a reader or writer keeping it would hold the container open after its last close (an
    /// unlinked file would never be deleted). Made once and shared: the index and every writer
    /// of this process on the container use the same one (three system calls each, before).
    fn own_path_handle(&self) -> Result<Arc<Dir>> {
        if let Some(d) = self.own.get() {
            return Ok(d.clone());
        }
        let d = Arc::new(self.dir.reopen_path()?.kept());
        Ok(self.own.get_or_init(|| d).clone())
    }

    /// Display path of the directory holding the droppings (`meta/`, or the container itself).
    pub fn meta_path(&self) -> PathBuf {
        if self.flat {
            self.dir.path().to_path_buf()
        } else {
            self.dir.sub(format::META_DIR)
        }
    }

    /// The directory holding the droppings: the container itself in a one-directory container,
    /// else `meta/` (opened once, `O_PATH`: for making and removing droppings in it).
    fn meta(&self) -> Result<&Dir> {
        if self.flat {
            return Ok(&self.dir);
        }
        if let Some(d) = self.meta.get() {
            return Ok(d);
        }
        let d = match self.dir.open_dir_path(format::META_DIR) {
            Ok(d) => d,
            Err(e) if sys::is_missing(&e) => {
                // Created by fsck or by an earlier version without `meta/`: make it now.
                self.dir.mkdir_ok(format::META_DIR, 0o755)?;
                self.dir.open_dir_path(format::META_DIR)?
            }
            Err(e) => return Err(e),
        };
        Ok(self.meta.get_or_init(|| d.kept()))
    }

    /// The stamp of a one-directory container's directory on a local file system, read before a
    /// listing of it: `None` for any other container, or on any other file system (where a stat
    /// can lag behind another client's change, as an attribute cache lets it). Every change a
    /// merged index depends on makes, removes or renames an entry of that directory: a dropping
    /// (every writer's open dropping comes before its first log, wherever its logs are), a log,
    /// a truncate's dropping or a wipe, a compaction's journal and logs, a flattened index. An
    /// unchanged stamp therefore vouches for a listing taken with it, unless the listing was
    /// taken so soon after the directory's mtime that a later change could have left it as it
    /// was ([`ListingStamp::recent`], `Dir::listing_may_miss`; design.md, "Noticing a new log").
    pub fn listing_stamp(&self) -> Result<Option<ListingStamp>> {
        if !self.flat || !self.dir.has_local_clock() {
            return Ok(None);
        }
        let now = i128::from(crate::clock::now_ns());
        let coarse = crate::clock::coarse_now_ns();
        let id = sys::dir_stamp(&self.dir.fstat()?);
        Ok(Some(ListingStamp {
            id,
            recent: self.dir.listing_may_miss(id.0, now, coarse),
        }))
    }

    /// Lists and parses the droppings (of `meta/`, or of the container itself). Unknown names are
    /// skipped (fsck reports them).
    pub fn list_meta(&self) -> Result<Vec<MetaDropping>> {
        if self.flat {
            let names = super::listing::list_whole(
                &self.dir,
                self.shadows_in_use(),
                super::listing::Marker::Old(&self.marker),
            )?;
            let d = format::parse_droppings(&names);
            *self.listing.lock().unwrap_or_else(|e| e.into_inner()) = Some(names);
            return Ok(d);
        }
        let names: Vec<OsString> = match self.meta.get() {
            Some(d) => d.list()?,
            None => match self.dir.open_dir_opt(format::META_DIR)? {
                Some(d) => d.list()?,
                None => Vec::new(),
            },
        };
        Ok(format::parse_droppings(&names))
    }

    /// Whether the listing the last [`Container::list_meta`] took holds `name` (`true` where no
    /// listing of the container itself is at hand: a version 2 container's).
    pub(crate) fn listing_has(&self, name: &str) -> bool {
        let g = self.listing.lock().unwrap_or_else(|e| e.into_inner());
        match g.as_ref() {
            Some(names) if self.flat => names.iter().any(|n| n.as_bytes() == name.as_bytes()),
            _ => true,
        }
    }

    /// The writers of the index logs in the listing the last [`Container::list_meta`] took,
    /// where that listing holds every index log of the container: a one-directory container
    /// without hostdirs whose mount has no shadow backends. `None` elsewhere (logs in
    /// directories it did not list), or where no listing is at hand.
    ///
    /// A listing of a directory that changes while it is read may miss an entry renamed during
    /// it, both its old name and its new one: a writer's open dropping becoming its close
    /// dropping. A log is never renamed and is made before its writer's first write, so a
    /// listing taken after that write holds it: where every log in it is of a writer the reader
    /// knows, no writer was missed ([`crate::index`]'s refresh asks this before it trusts a
    /// signature of droppings to say nothing changed).
    pub(crate) fn listed_index_writers(&self) -> Option<Vec<u64>> {
        if !self.flat || self.shadows_in_use() {
            return None;
        }
        let g = self.listing.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = Vec::new();
        for n in g.as_ref()? {
            if n.as_bytes().starts_with(format::HOSTDIR_PREFIX.as_bytes()) {
                return None;
            }
            if let Some((true, w)) = n.to_str().and_then(format::log_writer_of) {
                out.push(w);
            }
        }
        Some(out)
    }

    /// Size and mtime of the closed file from its droppings, `None` where the index must decide
    /// ([`format::fast_size_of_listing`]).
    /// The size is held to the index log of the writer whose close dropping gives it
    /// ([`Container::fast_size_proven`]).
    pub fn fast_size(&self) -> Result<Option<(u64, u64)>> {
        let (fast, droppings, names) = if self.flat {
            let names = super::listing::list_whole(
                &self.dir,
                self.shadows_in_use(),
                super::listing::Marker::Old(&self.marker),
            )?;
            (
                format::fast_size_of_listing(&names),
                format::parse_droppings(&names),
                names,
            )
        } else {
            let d = self.list_meta()?;
            (format::fast_size(&d), d, Vec::new())
        };
        let Some((size, mtime)) = fast else { return Ok(None) };
        Ok(self
            .fast_size_proven(&droppings, &names, size)?
            .then_some((size, mtime)))
    }

    /// Whether the index log of a closed writer whose dropping gives fast size `size` ends there
    /// ([`super::sizes::proven_by_logs`]): looked for in the container's listing `names` (a
    /// one-directory container's; empty for others), then in the container's hostdirs. A size
    /// no close dropping gives (a truncate's), or whose writer's log is not in the container
    /// (on a shadow backend: finding it would read the marker for the container id, which a
    /// stat must not do, since that read moves the file's atime), stands.
    pub fn fast_size_proven(&self, droppings: &[MetaDropping], names: &[OsString], size: u64) -> Result<bool> {
        if self.flat {
            if let Some(ok) = super::sizes::proven_by_logs(&[(&self.dir, names)], droppings, size)? {
                return Ok(ok);
            }
        }
        let own;
        let names = if self.flat {
            names
        } else {
            own = self.dir.list()?;
            &own[..]
        };
        let mut dirs = Vec::new();
        for n in names
            .iter()
            .filter(|n| n.as_bytes().starts_with(format::HOSTDIR_PREFIX.as_bytes()))
        {
            if let Some(d) = self.dir.open_dir_opt(n)? {
                let l = d.list()?;
                dirs.push((d, l));
            }
        }
        let both: Vec<(&Dir, &[OsString])> = dirs.iter().map(|(d, l)| (d, &l[..])).collect();
        Ok(super::sizes::proven_by_logs(&both, droppings, size)?.unwrap_or(true))
    }

    /// Creates a zero-length dropping in `meta/`.
    pub fn add_meta(&self, d: &MetaDropping) -> Result<()> {
        self.meta()?.touch(d.name(), 0o644).map(drop)
    }

    /// Removes a dropping from `meta/` (missing is fine).
    pub fn remove_meta(&self, d: &MetaDropping) -> Result<()> {
        self.meta()?.unlink_opt(d.name()).map(drop)
    }

    /// Replaces dropping `from` by `to` (an open record becoming a close record): `to` is made
    /// first, then `from` removed, so a look-up by name finds one, or both (an open record sends
    /// stat to the merged index, which is right either way), never neither. A listing taken
    /// while this runs may hold neither (it read the new name's place before the first step and
    /// the old one's after the second); one taken after it ended holds `to`: the index's refresh
    /// relies on this order ([`Container::listed_index_writers`]). Not a rename: on a
    /// distributed file system that hashes names to servers, renaming to a name that lives
    /// elsewhere costs a link file and its locks (19 brick operations on the GlusterFS volume,
    /// against 5 for a create and an unlink; docs/performance.md). Both left behind by a crash
    /// between the two steps is what fsck reports as an open and closed writer, and repairs.
    pub fn replace_meta(&self, from: &MetaDropping, to: &MetaDropping) -> Result<()> {
        self.add_meta(to)?;
        self.remove_meta(from)
    }

    /// The directory where a writer on `host` keeps its logs, and whether it is inside the
    /// container. Created if `create`. Writers whose shadow backend is this container's canonical
    /// backend use the container itself; others use `<shadow>/.plfs_shadow/<cid>/`.
    pub fn writer_dir(&self, host: &str, create: bool) -> Result<(Arc<Dir>, bool)> {
        let hd = self.mount.hostdir_for(host);
        let shadow = self.mount.shadow_for(host);
        let (m, g) = (container_dir_mode(self.marker.st_mode), Some(self.marker.st_gid));
        // A container this process made a moment ago has no hostdir yet; any other most likely
        // has the one this host's writers share.
        let expect = if self.made_here { Expect::New } else { Expect::There };
        if Arc::ptr_eq(shadow, &self.mount.canonical[self.backend]) {
            if self.logs_at_top() {
                return Ok((self.own_path_handle()?, true));
            }
            if create {
                return Ok((Arc::new(mkdir_exact(&self.dir, &hd, m, g, expect)?.kept()), true));
            }
            return Ok((Arc::new(self.dir.open_dir_kept(&hd)?), true));
        }
        let d = if create {
            let root = shadow.root()?;
            let sroot = mkdir_exact(root, format::SHADOW_ROOT, SHADOW_ROOT_MODE, None, Expect::There)?;
            let cdir = mkdir_exact(&sroot, &format!("{:032x}", self.cid()?), m, g, expect)?;
            mkdir_exact(&cdir, &hd, m, g, expect)?
        } else {
            shadow.dir(&self.shadow_rel()?.join(&hd))?
        };
        Ok((Arc::new(d.kept()), false))
    }

    /// fsync of the directory holding a writer's hostdir: the container, or its shadow directory
    /// on the writer's shadow backend.
    pub fn sync_hostdir_parent(&self, host: &str, in_container: bool) -> Result<()> {
        if in_container && self.logs_at_top() {
            return Ok(()); // the logs' directory is the container, synced by the caller
        }
        if in_container {
            return self.dir.fsync();
        }
        self.mount.shadow_for(host).dir(&self.shadow_rel()?)?.fsync()
    }

    /// Whether writers may keep this container's logs on shadow backends
    /// ([`Mount::shadows_in_use`](crate::mount::Mount::shadows_in_use) of its mount).
    pub(super) fn shadows_in_use(&self) -> bool {
        self.mount.shadows_in_use()
    }

    /// `.plfs_shadow/<cid>`, relative to a shadow backend's root.
    pub fn shadow_rel(&self) -> Result<PathBuf> {
        Ok(super::shadow_rel(self.cid()?))
    }

    /// Every directory holding logs of the container: its hostdirs, inside it and on shadow
    /// backends, and in a one-directory container the container itself (first).
    pub fn hostdirs(&self) -> Result<Vec<Arc<Dir>>> {
        Ok(self.hostdirs_with(None, true)?.into_iter().map(|(d, _)| d).collect())
    }

    /// [`Container::hostdirs`], each with its listing where one is at hand: in a one-directory
    /// container, the container's listing that [`Container::list_meta`] took just before (a
    /// refresh lists the directory once for its droppings and its logs). The others are `None`.
    pub fn hostdirs_listed(&self) -> Result<Vec<Hostdir>> {
        let cached = self.listing.lock().unwrap_or_else(|e| e.into_inner()).take();
        self.hostdirs_with(cached, true)
    }

    /// The hostdirs of [`Container::hostdirs`], from `listing` (the container's, where the
    /// caller took one), without the container itself unless `with_top`.
    pub(super) fn hostdirs_with(&self, listing: Option<Vec<OsString>>, with_top: bool) -> Result<Vec<Hostdir>> {
        let mut out = Vec::new();
        let names = match listing {
            Some(n) if self.flat => n,
            _ if self.flat => super::listing::list_whole(
                &self.dir,
                self.shadows_in_use(),
                super::listing::Marker::Old(&self.marker),
            )?,
            _ => self.dir.list()?,
        };
        for name in &names {
            if name.as_bytes().starts_with(format::HOSTDIR_PREFIX.as_bytes()) {
                if let Some(d) = self.dir.open_dir_opt(name)? {
                    out.push((Arc::new(d.kept()), None));
                }
            }
        }
        if self.flat && with_top {
            out.insert(0, (self.own_path_handle()?, Some(names)));
        }
        // Every shadow backend, the container's own included (a rename may have moved the
        // container onto the backend that holds its shadow logs).
        if !self.shadows_in_use() {
            return Ok(out);
        }
        let rel = self.shadow_rel()?;
        for shadow in &self.mount.shadows {
            // An unreachable shadow backend is an error: its logs may hold the file's data.
            let Some(sdir) = shadow.dir_opt(&rel)? else { continue };
            for name in sdir.list()? {
                if name.as_bytes().starts_with(format::HOSTDIR_PREFIX.as_bytes()) {
                    if let Some(d) = sdir.open_dir_opt(&name)? {
                        out.push((Arc::new(d.kept()), None));
                    }
                }
            }
        }
        Ok(out)
    }
}
