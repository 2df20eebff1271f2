//! The daemon's state: the PLFS instance, the inode table, open file and directory handles, and
//! the helpers the request handlers ([`crate::handlers`]) share.
//!
//! Invariants: `handles` holds one `OpenFile` per FUSE open until RELEASE (or unmount);
//! `dirs` holds the listing taken at OPENDIR until RELEASEDIR; every mutex is taken briefly and
//! never while waiting for the kernel; `trunc_close` is the only lock held across core calls.

use crate::attr::{self, errno, file_attr};
use crate::inodes::{Inodes, ROOT};
use fuser::{Errno, FileHandle, INodeNo, Request, TimeOrNow};
use plfs_core::DirEntry;
use plfs_core::{FileKind, OpenFile, Plfs, Stat};
use std::collections::HashMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A directory listing taken at opendir: (inode, kind, name), `.` and `..` first.
pub(crate) type Listing = Vec<(u64, FileKind, std::ffi::OsString)>;

/// One open file.
#[derive(Debug)]
pub(crate) struct Handle {
    pub(crate) file: OpenFile,
}

/// The file system served by the daemon.
#[derive(Debug)]
pub struct PlfsFs {
    pub(crate) plfs: Plfs,
    /// The plfsrc mount point served (logical paths are below it).
    pub(crate) mount_point: PathBuf,
    pub(crate) inodes: Mutex<Inodes>,
    pub(crate) handles: Mutex<HashMap<u64, Arc<Handle>>>,
    pub(crate) dirs: Mutex<HashMap<u64, Arc<Listing>>>,
    pub(crate) next_fh: AtomicU64,
    /// Serialises truncates with closes. Works around a lock-order inversion in plfs-core
    /// (`Shared::close_writer` holds a writer and takes the writer table; `Shared::truncate`
    /// holds the table and takes each writer), which deadlocks two daemon threads.
    pub(crate) trunc_close: Mutex<()>,
    /// Chown new files to the caller (the daemon runs as root).
    pub(crate) chown_new: bool,
    /// Write requests served (for tests and diagnostics).
    pub writes: AtomicU64,
    /// Largest write request seen, bytes.
    pub max_write_seen: AtomicU64,
}

pub(crate) type R<T> = Result<T, Errno>;

impl PlfsFs {
    /// Serves `mount_point` (a mount point of `plfs`'s configuration).
    pub fn new(plfs: Plfs, mount_point: PathBuf) -> Self {
        let chown_new = euid() == 0;
        PlfsFs {
            plfs,
            mount_point,
            inodes: Mutex::new(Inodes::new()),
            handles: Mutex::new(HashMap::new()),
            dirs: Mutex::new(HashMap::new()),
            next_fh: AtomicU64::new(1),
            trunc_close: Mutex::new(()),
            chown_new,
            writes: AtomicU64::new(0),
            max_write_seen: AtomicU64::new(0),
        }
    }

    pub(crate) fn logical(&self, rel: &Path) -> PathBuf {
        if rel.as_os_str().is_empty() {
            self.mount_point.clone()
        } else {
            self.mount_point.join(rel)
        }
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

    pub(crate) fn stat_rel(&self, rel: &Path) -> R<Stat> {
        self.plfs.stat(&self.logical(rel)).map_err(|e| errno(&e))
    }

    /// Attributes for `ino`: from the open handle if one is given (sees unflushed writes),
    /// else by path (the fast stat path).
    pub(crate) fn getattr_inner(&self, ino: INodeNo, fh: Option<FileHandle>) -> R<Stat> {
        if let Some(h) = fh.and_then(|fh| self.handle(fh).ok()) {
            return self.plfs.fstat(&h.file).map_err(|e| errno(&e));
        }
        self.stat_rel(&self.rel(ino)?)
    }

    /// Replies an entry for `rel` after stat-ing it, counting the lookup.
    pub(crate) fn entry_for(&self, rel: &Path) -> R<(fuser::FileAttr, u64)> {
        let st = self.stat_rel(rel)?;
        let ino = lock(&self.inodes).lookup(rel, st.kind);
        Ok((file_attr(&st, ino), ino))
    }

    /// New files, directories and links belong to the caller when the daemon runs as root.
    pub(crate) fn give_to_caller(&self, logical: &Path, req: &Request) -> R<()> {
        if self.chown_new && (req.uid() != 0 || req.gid() != 0) {
            self.plfs.chown(logical, req.uid(), req.gid()).map_err(|e| errno(&e))?;
        }
        Ok(())
    }

    pub(crate) fn new_fh(&self, file: OpenFile) -> u64 {
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        lock(&self.handles).insert(fh, Arc::new(Handle { file }));
        fh
    }

    pub(crate) fn open_flags(flags: i32) -> R<plfs_core::OpenFlags> {
        plfs_core::OpenFlags::from_posix(flags).map_err(|e| errno(&e))
    }

    pub(crate) fn create_inner(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        flags: i32,
    ) -> R<(fuser::FileAttr, u64)> {
        let rel = self.child(parent, name)?;
        let logical = self.logical(&rel);
        let mut of = Self::open_flags(flags)?;
        let created = self.plfs.create(&logical, mode, of.excl).map_err(|e| errno(&e))?;
        if created {
            self.give_to_caller(&logical, req)?;
        }
        of.create = false;
        of.excl = false;
        of.trunc &= !created;
        let file = {
            let _g = of.trunc.then(|| lock(&self.trunc_close));
            self.plfs.open(&logical, of, mode, req.pid()).map_err(|e| errno(&e))?
        };
        let st = self.plfs.fstat(&file).map_err(|e| errno(&e))?;
        let ino = lock(&self.inodes).lookup(&rel, FileKind::File);
        let fh = self.new_fh(file);
        Ok((file_attr(&st, ino), fh))
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn setattr_inner(
        &self,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        fh: Option<FileHandle>,
    ) -> R<Stat> {
        let logical = self.logical(&self.rel(ino)?);
        let e = |e: plfs_core::Error| errno(&e);
        if let Some(m) = mode {
            self.plfs.chmod(&logical, m).map_err(e)?;
        }
        if uid.is_some() || gid.is_some() {
            self.plfs
                .chown(&logical, uid.unwrap_or(u32::MAX), gid.unwrap_or(u32::MAX))
                .map_err(e)?;
        }
        if let Some(sz) = size {
            let _g = lock(&self.trunc_close);
            match fh.and_then(|fh| self.handle(fh).ok()).filter(|h| h.file.flags().write) {
                Some(h) => h.file.truncate(sz).map_err(e)?,
                None => self.plfs.truncate(&logical, sz).map_err(e)?,
            }
        }
        if atime.is_some() || mtime.is_some() {
            self.plfs
                .utimens(&logical, attr::time_spec(atime), attr::time_spec(mtime))
                .map_err(e)?;
        }
        self.getattr_inner(ino, fh)
    }

    pub(crate) fn list_dir(&self, ino: INodeNo) -> R<Listing> {
        let rel = self.rel(ino)?;
        let entries: Vec<DirEntry> = self.plfs.readdir(&self.logical(&rel)).map_err(|e| errno(&e))?;
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

    /// Closes every open handle (unmount): flushes index records and writes close droppings.
    pub fn close_all(&self) {
        let hs: Vec<(u64, Arc<Handle>)> = lock(&self.handles).drain().collect();
        for (_, h) in hs {
            let _ = self.close_handle(h); // errors are logged by close_handle
        }
    }

    pub(crate) fn close_handle(&self, h: Arc<Handle>) -> R<()> {
        let _g = lock(&self.trunc_close);
        match Arc::try_unwrap(h) {
            Ok(h) => {
                let path = h.file.path().to_path_buf();
                h.file.close().map_err(|e| {
                    plfs_core::warn!("fuse: close {}: {e}", path.display());
                    errno(&e)
                })
            }
            // A request still uses it: the last user's drop closes it.
            Err(_) => Ok(()),
        }
    }

    /// Number of open file handles.
    pub fn open_handles(&self) -> usize {
        lock(&self.handles).len()
    }
}

pub(crate) fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}
