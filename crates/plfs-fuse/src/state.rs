//! The daemon's state: the PLFS instance, the inode table, open file and directory handles, and
//! the operations the request handlers ([`crate::handlers`]) call, each run with the identity
//! the crate README's "Permissions" table gives it ([`crate::ident`]).
//!
//! Invariants: `handles` holds one `OpenFile` per FUSE open until RELEASE (or unmount), with the
//! identity of the request that opened it; `dirs` holds the listing taken at OPENDIR until
//! RELEASEDIR; every mutex is taken briefly and never while waiting for the kernel;
//! `trunc_close` is the only lock held across core calls.

use crate::attr::{self, errno, file_attr};
use crate::ident::{self, Groups, Ident};
use crate::inodes::{Inodes, ROOT};
use fuser::{Errno, FileHandle, INodeNo, Request, TimeOrNow};
use plfs_core::DirEntry;
use plfs_core::{FileKind, InMount, MountId, OpenFile, Plfs, Stat};
use std::collections::HashMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A directory listing taken at opendir: (inode, kind, name), `.` and `..` first.
pub(crate) type Listing = Vec<(u64, FileKind, std::ffi::OsString)>;

/// An open directory: the listing readdir serves, and whether any of it was served yet (a
/// readdir at offset 0 after that is a rewinddir, which lists again).
#[derive(Debug)]
pub(crate) struct OpenDir {
    pub(crate) list: Arc<Listing>,
    pub(crate) served: bool,
}

/// One open file.
#[derive(Debug)]
pub(crate) struct Handle {
    pub(crate) file: OpenFile,
    /// Who opened it: every I/O through it runs as this identity, as the kernel binds an open
    /// file's credentials to it (a descriptor passed to another process keeps its rights).
    pub(crate) ident: Ident,
    /// Its inode (an unlinked file is still reached through its handles).
    pub(crate) ino: u64,
}

/// The file system served by the daemon.
#[derive(Debug)]
pub struct PlfsFs {
    pub(crate) plfs: Plfs,
    /// The core's id of the plfsrc mount point served (the daemon's paths are relative to it).
    pub(crate) mount: MountId,
    pub(crate) inodes: Mutex<Inodes>,
    pub(crate) handles: Mutex<HashMap<u64, Arc<Handle>>>,
    pub(crate) dirs: Mutex<HashMap<u64, OpenDir>>,
    pub(crate) next_fh: AtomicU64,
    /// Serialises truncates with closes (a truncate while a close writes its records).
    pub(crate) trunc_close: Mutex<()>,
    /// The kernel checks permissions (`default_permissions`); if not, the daemon does at open
    /// and in ACCESS, and every request runs as its caller.
    pub(crate) default_permissions: bool,
    /// Read-only handles bypass the page cache too (`--direct-io`).
    pub(crate) direct_reads: bool,
    /// Supplementary groups of calling processes.
    pub(crate) groups: Groups,
    /// Modes of the inodes whose last reported mode has bits a write must clear (set-user-ID,
    /// set-group-ID with group execute); `privileged` says whether there is any.
    privs: Mutex<HashMap<u64, u32>>,
    privileged: AtomicBool,
}

pub(crate) type R<T> = Result<T, Errno>;

/// The mode bits a write or a truncate by an unprivileged process clears: set-user-ID, and
/// set-group-ID when group execute is set (without it the bit means mandatory locking).
pub fn privs_to_kill(mode: u32) -> u32 {
    let mut k = mode & libc::S_ISUID;
    if mode & (libc::S_ISGID | libc::S_IXGRP) == libc::S_ISGID | libc::S_IXGRP {
        k |= libc::S_ISGID;
    }
    k
}

impl PlfsFs {
    /// Serves `mount_point` (a mount point of `plfs`'s configuration: `ENOENT` if it is not one);
    /// `default_permissions`: whether the kernel checks permissions; `direct_reads`: whether
    /// read-only handles bypass the page cache.
    pub fn new(plfs: Plfs, mount_point: &Path, default_permissions: bool, direct_reads: bool) -> Result<Self, Errno> {
        let mount = plfs.mount_id(mount_point).ok_or(Errno::ENOENT)?;
        Ok(PlfsFs {
            plfs,
            mount,
            inodes: Mutex::new(Inodes::new()),
            handles: Mutex::new(HashMap::new()),
            dirs: Mutex::new(HashMap::new()),
            next_fh: AtomicU64::new(1),
            trunc_close: Mutex::new(()),
            default_permissions,
            direct_reads,
            groups: Groups::default(),
            privs: Mutex::new(HashMap::new()),
            privileged: AtomicBool::new(false),
        })
    }

    /// The identity of a request's caller.
    pub(crate) fn caller(&self, req: &Request) -> Ident {
        self.groups.ident(req.pid(), req.uid(), req.gid())
    }

    /// Runs the rest of the request as its caller.
    pub(crate) fn as_caller(&self, req: &Request) -> R<Ident> {
        let id = self.caller(req);
        ident::act_as(&id)?;
        Ok(id)
    }

    /// Runs a metadata read of `rel` (lookup, getattr, readlink, the listing of a directory)
    /// after checking that the caller may make it, as the daemon: such reads need no
    /// permission on the object itself (stat of a file another user keeps private must work,
    /// though its container is not readable by that user; listing a directory looks into every
    /// subdirectory to tell files from directories), and the core does them as one step.
    /// With `default_permissions` the kernel has checked search permission along the path (and
    /// read permission before an opendir); without, the daemon checks `want` (R=4, X=1) on
    /// `rel` itself, and search permission along the path by stat-ing its parent as the caller
    /// (the backend then checks every directory above) and checking its mode.
    pub(crate) fn as_meta(&self, req: &Request, rel: &Path, want: u32) -> R<()> {
        if !self.default_permissions {
            let who = self.as_caller(req)?;
            let deny = |st: &Stat, want: u32| !who.may(st.mode, st.uid, st.gid, want);
            if let Some(parent) = rel.parent() {
                if deny(&self.stat_rel(parent)?, 1) {
                    return Err(Errno::EACCES);
                }
            }
            if want != 0 {
                ident::act_as_daemon()?;
                if deny(&self.stat_rel(rel)?, want) {
                    return Err(Errno::EACCES);
                }
            }
        }
        ident::act_as_daemon()
    }

    /// Runs the rest of the request as the identity that opened `h`.
    pub(crate) fn as_opener(&self, h: &Handle) -> R<()> {
        ident::act_as(&h.ident)
    }

    /// The core's name of `rel` (a path relative to the mount point served): the daemon holds
    /// paths relative to its mount point, and the core places them on it without a look at the
    /// mount point (no absolute path joined here for the core to take apart again).
    pub(crate) fn at<'a>(&self, rel: &'a Path) -> InMount<'a> {
        InMount { mount: self.mount, rel }
    }

    /// Relative path of an inode (ENOENT once unlinked, ESTALE if unknown).
    pub(crate) fn rel(&self, ino: INodeNo) -> R<PathBuf> {
        let t = lock(&self.inodes);
        t.path(ino.0)
            .ok_or(if t.known(ino.0) { Errno::ENOENT } else { Errno::ESTALE })
    }

    pub(crate) fn child(&self, parent: INodeNo, name: &OsStr) -> R<PathBuf> {
        if name.is_empty() || name == "." || name == ".." || name.as_encoded_bytes().contains(&b'/') {
            return Err(Errno::EINVAL);
        }
        Ok(self.rel(parent)?.join(name))
    }

    pub(crate) fn handle(&self, fh: FileHandle) -> R<Arc<Handle>> {
        lock(&self.handles).get(&fh.0).cloned().ok_or(Errno::EBADF)
    }

    /// An open handle on inode `ino`, if any (an unlinked file has no path, only handles).
    fn handle_of(&self, ino: u64) -> Option<Arc<Handle>> {
        lock(&self.handles).values().find(|h| h.ino == ino).cloned()
    }

    pub(crate) fn stat_rel(&self, rel: &Path) -> R<Stat> {
        self.plfs.stat(&self.at(rel)).map_err(|e| errno(&e))
    }

    /// FUSE attributes of `st` for inode `ino`; remembers modes a write must change.
    pub(crate) fn attr(&self, st: &Stat, ino: u64) -> fuser::FileAttr {
        let privileged = st.kind == FileKind::File && privs_to_kill(st.mode) != 0;
        if privileged || self.privileged.load(Ordering::Relaxed) {
            let mut p = lock(&self.privs);
            if privileged {
                p.insert(ino, st.mode);
            } else {
                p.remove(&ino);
            }
            self.privileged.store(!p.is_empty(), Ordering::Relaxed);
        }
        file_attr(st, ino)
    }

    /// Attributes for `ino` as seen by a request: from an open handle if the kernel gives one
    /// (sees unflushed writes) or if the file was unlinked, here or by another process (its
    /// handles report `st_nlink` 0), else by path (the fast stat path).
    pub(crate) fn getattr_inner(&self, req: &Request, ino: INodeNo, fh: Option<FileHandle>) -> R<Stat> {
        let h = match fh.and_then(|fh| self.handle(fh).ok()) {
            Some(h) => h,
            None => {
                let r = self.rel(ino).and_then(|rel| {
                    self.as_meta(req, &rel, 0)?;
                    self.stat_rel(&rel)
                });
                match r {
                    // Unlinked here, or by another process (the name is gone from the backend).
                    Err(Errno::ENOENT) => self.handle_of(ino.0).ok_or(Errno::ENOENT)?,
                    r => return r,
                }
            }
        };
        self.as_opener(&h)?;
        self.plfs.fstat(&h.file).map_err(|e| errno(&e))
    }

    /// Replies an entry for `rel` after stat-ing it, counting the lookup.
    pub(crate) fn entry_for(&self, rel: &Path) -> R<(fuser::FileAttr, u64)> {
        let st = self.stat_rel(rel)?;
        let ino = lock(&self.inodes).lookup(rel, st.kind);
        Ok((self.attr(&st, ino), ino))
    }

    /// Without `default_permissions`, the daemon checks that `who` may open `rel` with `flags`
    /// (the kernel does otherwise): this process may hold the file open for another user, and
    /// what it has loaded is served to any handle.
    fn check_open(&self, who: &Ident, rel: &Path, flags: &plfs_core::OpenFlags) -> R<()> {
        if self.default_permissions {
            return Ok(());
        }
        let st = self.stat_rel(rel)?;
        let want = if flags.read { 4 } else { 0 } | if flags.write || flags.trunc { 2 } else { 0 };
        if who.may(st.mode, st.uid, st.gid, want) {
            Ok(())
        } else {
            Err(Errno::EACCES)
        }
    }

    /// access(2) (reached only without `default_permissions`): the mode bits against the caller.
    pub(crate) fn access_inner(&self, req: &Request, ino: INodeNo, mask: u32) -> R<()> {
        let rel = self.rel(ino)?;
        self.as_meta(req, &rel, mask & 7)
    }

    pub(crate) fn new_fh(&self, file: OpenFile, ident: Ident, ino: u64) -> u64 {
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        lock(&self.handles).insert(fh, Arc::new(Handle { file, ident, ino }));
        fh
    }

    pub(crate) fn open_flags(flags: i32) -> R<plfs_core::OpenFlags> {
        plfs_core::OpenFlags::from_posix(flags).map_err(|e| errno(&e))
    }

    /// OPEN: as the caller, who gets a handle opened with its identity.
    pub(crate) fn open_inner(&self, req: &Request, ino: INodeNo, flags: i32) -> R<u64> {
        let who = self.as_caller(req)?;
        let rel = self.rel(ino)?;
        let mut of = Self::open_flags(flags)?;
        of.create = false;
        of.excl = false;
        self.check_open(&who, &rel, &of)?;
        let file = self
            .plfs
            .open(&self.at(&rel), of, 0, req.pid())
            .map_err(|e| errno(&e))?;
        Ok(self.new_fh(file, who, ino.0))
    }

    /// CREATE: as the caller, so the new file is the caller's.
    pub(crate) fn create_inner(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        flags: i32,
    ) -> R<(fuser::FileAttr, u64)> {
        let who = self.as_caller(req)?;
        let rel = self.child(parent, name)?;
        let logical = self.at(&rel);
        let mut of = Self::open_flags(flags)?;
        let created = self.plfs.create(&logical, mode, of.excl).map_err(|e| errno(&e))?;
        of.create = false;
        of.excl = false;
        of.trunc &= !created;
        if !created {
            self.check_open(&who, &rel, &of)?;
        }
        let file = {
            let _g = of.trunc.then(|| lock(&self.trunc_close));
            self.plfs.open(&logical, of, mode, req.pid()).map_err(|e| errno(&e))?
        };
        let st = self.plfs.fstat(&file).map_err(|e| errno(&e))?;
        let ino = lock(&self.inodes).lookup(&rel, FileKind::File);
        let fh = self.new_fh(file, who, ino);
        Ok((self.attr(&st, ino), fh))
    }

    /// SETATTR. Mode, owner and times change as the caller (the kernel has checked ownership
    /// with `default_permissions`; the backend checks it again). A size change through a
    /// writable handle runs as its opener (ftruncate needs no permission beyond the open), by
    /// path as the caller. A mode change that only clears set-user-ID/set-group-ID bits along
    /// with a size or owner change is the kernel clearing them for a truncate or chown (as it
    /// does for any unprivileged one): done as the daemon, since the caller may not own the file.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn setattr_inner(
        &self,
        req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        fh: Option<FileHandle>,
    ) -> R<Stat> {
        let e = |e: plfs_core::Error| errno(&e);
        let h = fh.and_then(|fh| self.handle(fh).ok());
        let (rel, h) = match self.rel(ino) {
            Ok(rel) => (Some(rel), h),
            // Unlinked: only its handles remain, and attributes change through one of them.
            Err(err) => (None, Some(h.or_else(|| self.handle_of(ino.0)).ok_or(err)?)),
        };
        let logical = rel.as_deref().map(|r| self.at(r));
        let path = || logical.ok_or(Errno::ENOENT);
        let subject = match (&logical, &h) {
            (Some(p), _) => Subject::Named(*p),
            (None, Some(h)) => Subject::Unnamed(&h.file),
            (None, None) => return Err(Errno::ENOENT),
        };
        if let Some(m) = mode {
            let kill = (size.is_some() || uid.is_some() || gid.is_some()) && self.only_kills(&subject, m)?;
            if kill {
                ident::act_as_daemon()?;
            } else {
                self.as_caller(req)?;
            }
            subject.chmod(&self.plfs, m).map_err(e)?;
        }
        if uid.is_some() || gid.is_some() {
            self.as_caller(req)?;
            subject
                .chown(&self.plfs, uid.unwrap_or(u32::MAX), gid.unwrap_or(u32::MAX))
                .map_err(e)?;
        }
        if let Some(sz) = size {
            let _g = lock(&self.trunc_close);
            match h.as_ref().filter(|h| h.file.flags().write) {
                Some(h) => {
                    self.as_opener(h)?;
                    h.file.truncate(sz).map_err(e)?
                }
                None => {
                    self.as_caller(req)?;
                    self.plfs.truncate(&path()?, sz).map_err(e)?
                }
            }
        }
        if atime.is_some() || mtime.is_some() {
            self.as_caller(req)?;
            subject
                .utimens(&self.plfs, attr::time_spec(atime), attr::time_spec(mtime))
                .map_err(e)?;
        }
        self.getattr_inner(req, ino, fh)
    }

    /// True if `new` is the current mode of the file with some set-user-ID/set-group-ID bits
    /// cleared and nothing else changed.
    fn only_kills(&self, subject: &Subject<'_>, new: u32) -> R<bool> {
        ident::act_as_daemon()?;
        let cur = subject.stat(&self.plfs).map_err(|e| errno(&e))?.mode & 0o7777;
        let diff = (new & 0o7777) ^ cur;
        Ok(diff != 0 && diff & !(libc::S_ISUID | libc::S_ISGID) == 0 && new & diff == 0)
    }

    /// A write by a process without CAP_FSETID clears the set-user-ID (and group) bits of the
    /// file, as on a local file system: the kernel leaves that to us for direct I/O. Done as
    /// the daemon (the writer need not own the file). Costs nothing unless some file served has
    /// such bits.
    pub(crate) fn kill_privs_after_write(&self, ino: u64) {
        if !self.privileged.load(Ordering::Relaxed) {
            return;
        }
        let Some(mode) = lock(&self.privs).get(&ino).copied() else {
            return;
        };
        let Ok(rel) = self.rel(INodeNo(ino)) else {
            return;
        };
        if ident::act_as_daemon().is_err() {
            return;
        }
        let new = mode & 0o7777 & !privs_to_kill(mode);
        match self.plfs.chmod(&self.at(&rel), new) {
            Ok(()) => {
                let mut p = lock(&self.privs);
                p.remove(&ino);
                self.privileged.store(!p.is_empty(), Ordering::Relaxed);
            }
            Err(e) => plfs_core::warn!("fuse: clearing set-id bits of {}: {e}", rel.display()),
        }
    }

    pub(crate) fn list_dir(&self, ino: INodeNo) -> R<Listing> {
        let rel = self.rel(ino)?;
        let entries: Vec<DirEntry> = self.plfs.readdir(&self.at(&rel)).map_err(|e| errno(&e))?;
        let mut t = lock(&self.inodes);
        let mut out = Vec::with_capacity(entries.len() + 2);
        out.push((ino.0, FileKind::Dir, ".".into()));
        let parent = match rel.parent() {
            Some(p) => t.peek(p, FileKind::Dir),
            None => ROOT,
        };
        out.push((parent, FileKind::Dir, "..".into()));
        for d in entries {
            let i = t.peek(&rel.join(&d.name), d.kind);
            out.push((i, d.kind, d.name));
        }
        Ok(out)
    }

    /// Closes every open handle (unmount), each as its opener: flushes index records and writes
    /// close droppings.
    pub fn close_all(&self) {
        let hs: Vec<(u64, Arc<Handle>)> = lock(&self.handles).drain().collect();
        for (_, h) in hs {
            let _ = self.close_handle(h); // errors are logged by close_handle
        }
        let _ = ident::act_as_daemon();
    }

    /// Closes a released handle as its opener (if no request still uses it; else the last
    /// user's drop closes it).
    pub(crate) fn close_handle(&self, h: Arc<Handle>) -> R<()> {
        self.as_opener(&h)?;
        let _g = lock(&self.trunc_close);
        match Arc::try_unwrap(h) {
            Ok(h) => {
                let path = h.file.path().to_path_buf();
                h.file.close().map_err(|e| {
                    plfs_core::warn!("fuse: close {}: {e}", path.display());
                    errno(&e)
                })
            }
            Err(_) => Ok(()),
        }
    }

    /// Number of open file handles.
    pub fn open_handles(&self) -> usize {
        lock(&self.handles).len()
    }
}

/// The file a SETATTR changes: by its name, or, once it has none (unlinked), through a handle
/// that has it open.
enum Subject<'a> {
    Named(InMount<'a>),
    Unnamed(&'a OpenFile),
}

impl Subject<'_> {
    fn stat(&self, plfs: &Plfs) -> plfs_core::Result<Stat> {
        match self {
            Subject::Named(p) => plfs.stat(p),
            Subject::Unnamed(f) => plfs.fstat(f),
        }
    }

    fn chmod(&self, plfs: &Plfs, mode: u32) -> plfs_core::Result<()> {
        match self {
            Subject::Named(p) => plfs.chmod(p, mode),
            Subject::Unnamed(f) => plfs.fchmod(f, mode),
        }
    }

    fn chown(&self, plfs: &Plfs, uid: u32, gid: u32) -> plfs_core::Result<()> {
        match self {
            Subject::Named(p) => plfs.chown(p, uid, gid),
            Subject::Unnamed(f) => plfs.fchown(f, uid, gid),
        }
    }

    fn utimens(&self, plfs: &Plfs, atime: plfs_core::TimeSpec, mtime: plfs_core::TimeSpec) -> plfs_core::Result<()> {
        match self {
            Subject::Named(p) => plfs.utimens(p, atime, mtime),
            Subject::Unnamed(f) => plfs.futimens(f, atime, mtime),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn privileges_a_write_clears() {
        assert_eq!(privs_to_kill(0o4755), libc::S_ISUID);
        assert_eq!(privs_to_kill(0o2755), libc::S_ISGID);
        assert_eq!(privs_to_kill(0o2745), 0, "set-group-ID without group execute stays");
        assert_eq!(privs_to_kill(0o6711), libc::S_ISUID | libc::S_ISGID);
        assert_eq!(privs_to_kill(0o755), 0);
    }
}
