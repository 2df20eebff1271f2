//! The FUSE request handlers: `fuser::Filesystem` on `plfs_core::Plfs`.
//!
//! Invariants:
//! - No handler panics out: each body runs under `catch_unwind`; a panic drops the unsent reply,
//!   which fuser answers with EIO, and the daemon keeps serving.
//! - Every error reply goes through [`attr::errno`].
//! - Open files live in `handles` (one `OpenFile` per FUSE open); writes go through
//!   `OpenFile::write_as(.., req.pid())`, so each calling process writes its own data log.
//! - Every request runs with the identity the crate README's "Permissions" table gives it
//!   (`PlfsFs::as_caller`, `as_meta`, `as_opener`), switched before the first core call.
//! - `destroy` (unmount) closes every handle still open, so every writer's index records and
//!   close dropping reach the backend.
//! - Locks: the daemon does not ask for `FUSE_POSIX_LOCKS`/`FUSE_FLOCK_LOCKS`, so the kernel
//!   handles fcntl and flock locks itself, correctly for every process using this mount.

use crate::attr::{errno, file_type};
use crate::ident;
use crate::inodes::GENERATION;
pub use crate::state::PlfsFs;
use crate::state::{lock, OpenDir};
use fuser::{
    AccessFlags, Errno, FileHandle, Filesystem, FopenFlags, Generation, INodeNo, InitFlags, KernelConfig, LockOwner,
    OpenAccMode, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry,
    ReplyOpen, ReplyStatfs, ReplyWrite, Request, TimeOrNow, WriteFlags,
};
use std::ffi::OsStr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// How long the kernel may cache attributes and names. Writes through this mount keep the
/// kernel's size current; the TTL bounds staleness after changes made outside the mount.
pub const TTL: Duration = Duration::from_secs(1);
/// How long the kernel may keep `a`: [`TTL`], but nothing for a regular file with set-user-ID
/// or set-group-ID bits, since a write by another user clears them here, in the daemon, after
/// the kernel's copy was made (issue 25, item 7: `stat` showed them for up to a second).
fn ttl(a: &fuser::FileAttr) -> Duration {
    let setid = u32::from(a.perm) & (libc::S_ISUID | libc::S_ISGID) != 0;
    if setid && a.kind == fuser::FileType::RegularFile {
        Duration::ZERO
    } else {
        TTL
    }
}

/// Largest write and read request we ask the kernel for.
pub const MAX_IO: u32 = 1 << 20;
/// How handles are opened. Writable ones bypass the page cache (each write(2) reaches the
/// daemon as one request of up to [`MAX_IO`] bytes, with no page-cache copy, as the original
/// PLFS FUSE did with direct_io) and allow parallel writes: without, the kernel holds the
/// inode's lock exclusively across each write's round trip to the daemon, so the writers of an
/// N-1 file take turns; with, writes that do not extend the file proceed together (each process
/// has its own data log and the core locks per writer; two overlapping writes still resolve as
/// one after the other, by their index records' timestamps). Read-only ones use the page cache
/// and readahead, unless the mount asks for direct I/O (`--direct-io`): one copy less and no
/// page-cache churn for large reads (2-3x less CPU at 64 KiB and more), but one round trip per
/// read(2) (five times slower at 4 KiB, ten at 512 bytes). mmap works either way
/// (FUSE_DIRECT_IO_ALLOW_MMAP).
fn fopen_flags(acc_write: bool, direct_reads: bool) -> FopenFlags {
    if acc_write {
        FopenFlags::FOPEN_DIRECT_IO | FopenFlags::FOPEN_PARALLEL_DIRECT_WRITES
    } else if direct_reads {
        FopenFlags::FOPEN_DIRECT_IO
    } else {
        FopenFlags::empty()
    }
}

thread_local! {
    /// The read buffer of each request thread.
    static BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Readahead we ask the kernel for (it may offer less).
pub const READAHEAD: u32 = 4 << 20;

/// Runs a handler body; a panic is logged and turned into EIO by the dropped reply.
fn guard(op: &str, f: impl FnOnce()) {
    if let Err(p) = catch_unwind(AssertUnwindSafe(f)) {
        let msg = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        plfs_core::warn!("fuse: {op}: internal error ({msg}); replied EIO");
    }
}

impl Filesystem for PlfsFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        if let Err(max) = config.set_max_write(MAX_IO) {
            let _ = config.set_max_write(max);
        }
        if let Err(max) = config.set_max_readahead(READAHEAD) {
            let _ = config.set_max_readahead(max);
        }
        let _ = config.set_max_background(64);
        let want = InitFlags::FUSE_PARALLEL_DIROPS
            | InitFlags::FUSE_AUTO_INVAL_DATA
            | InitFlags::FUSE_ASYNC_DIO
            | InitFlags::FUSE_MAX_PAGES
            | InitFlags::FUSE_DIRECT_IO_ALLOW_MMAP;
        let _ = config.add_capabilities(want & config.capabilities());
        Ok(())
    }

    fn destroy(&mut self) {
        self.close_all();
    }

    fn lookup(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        guard("lookup", || {
            let r = self.child(parent, name);
            let r = r.and_then(|rel| self.as_meta(req, &rel, 0).map(|()| rel));
            match r.and_then(|rel| self.entry_for(&rel)) {
                Ok((a, _)) => reply.entry(&ttl(&a), &a, Generation(GENERATION)),
                Err(e) => reply.error(e),
            }
        })
    }

    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        guard("forget", || lock(&self.inodes).forget(ino.0, nlookup))
    }

    fn getattr(&self, req: &Request, ino: INodeNo, fh: Option<FileHandle>, reply: ReplyAttr) {
        guard("getattr", || match self.getattr_inner(req, ino, fh) {
            Ok(st) => {
                let a = self.attr(&st, ino.0);
                reply.attr(&ttl(&a), &a)
            }
            Err(e) => reply.error(e),
        })
    }

    fn setattr(
        &self,
        req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        guard("setattr", || {
            match self.setattr_inner(req, ino, mode, uid, gid, size, atime, mtime, fh) {
                Ok(st) => {
                    let a = self.attr(&st, ino.0);
                    reply.attr(&ttl(&a), &a)
                }
                Err(e) => reply.error(e),
            }
        })
    }

    fn readlink(&self, req: &Request, ino: INodeNo, reply: ReplyData) {
        guard("readlink", || {
            match self
                .rel(ino)
                .and_then(|r| self.as_meta(req, &r, 0).map(|()| r))
                .and_then(|r| self.plfs.readlink(&self.at(&r)).map_err(|e| errno(&e)))
            {
                Ok(t) => reply.data(t.as_encoded_bytes()),
                Err(e) => reply.error(e),
            }
        })
    }

    fn mknod(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        _rdev: u32,
        reply: ReplyEntry,
    ) {
        guard("mknod", || {
            if mode & libc::S_IFMT != libc::S_IFREG {
                return reply.error(Errno::EPERM);
            }
            let r = self
                .as_caller(req)
                .and_then(|_| self.child(parent, name))
                .and_then(|rel| {
                    self.plfs.create(&self.at(&rel), mode, true).map_err(|e| errno(&e))?;
                    // Its attributes: a metadata read (a directory made without x is still stat-able).
                    ident::act_as_daemon()?;
                    self.entry_for(&rel)
                });
            match r {
                Ok((a, _)) => reply.entry(&ttl(&a), &a, Generation(GENERATION)),
                Err(e) => reply.error(e),
            }
        })
    }

    fn mkdir(&self, req: &Request, parent: INodeNo, name: &OsStr, mode: u32, _umask: u32, reply: ReplyEntry) {
        guard("mkdir", || {
            let r = self
                .as_caller(req)
                .and_then(|_| self.child(parent, name))
                .and_then(|rel| {
                    self.plfs.mkdir(&self.at(&rel), mode).map_err(|e| errno(&e))?;
                    // Its attributes: a metadata read (a directory made without x is still stat-able).
                    ident::act_as_daemon()?;
                    self.entry_for(&rel)
                });
            match r {
                Ok((a, _)) => reply.entry(&ttl(&a), &a, Generation(GENERATION)),
                Err(e) => reply.error(e),
            }
        })
    }

    fn unlink(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        guard("unlink", || {
            let r = self
                .as_caller(req)
                .and_then(|_| self.child(parent, name))
                .and_then(|rel| {
                    self.plfs.unlink(&self.at(&rel)).map_err(|e| errno(&e))?;
                    lock(&self.inodes).detach(&rel);
                    Ok(())
                });
            match r {
                Ok(()) => reply.ok(),
                Err(e) => reply.error(e),
            }
        })
    }

    fn rmdir(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        guard("rmdir", || {
            let r = self
                .as_caller(req)
                .and_then(|_| self.child(parent, name))
                .and_then(|rel| {
                    self.plfs.rmdir(&self.at(&rel)).map_err(|e| errno(&e))?;
                    lock(&self.inodes).detach(&rel);
                    Ok(())
                });
            match r {
                Ok(()) => reply.ok(),
                Err(e) => reply.error(e),
            }
        })
    }

    fn symlink(&self, req: &Request, parent: INodeNo, link_name: &OsStr, target: &Path, reply: ReplyEntry) {
        guard("symlink", || {
            let r = self
                .as_caller(req)
                .and_then(|_| self.child(parent, link_name))
                .and_then(|rel| {
                    self.plfs.symlink(target, &self.at(&rel)).map_err(|e| errno(&e))?;
                    // Its attributes: a metadata read (a directory made without x is still stat-able).
                    ident::act_as_daemon()?;
                    self.entry_for(&rel)
                });
            match r {
                Ok((a, _)) => reply.entry(&ttl(&a), &a, Generation(GENERATION)),
                Err(e) => reply.error(e),
            }
        })
    }

    fn rename(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        guard("rename", || {
            let r = (|| {
                self.as_caller(req)?;
                let from = self.child(parent, name)?;
                let to = self.child(newparent, newname)?;
                if flags.contains(RenameFlags::RENAME_EXCHANGE) || flags.contains(RenameFlags::RENAME_WHITEOUT) {
                    return Err(Errno::EINVAL);
                }
                let (a, b) = (self.at(&from), self.at(&to));
                match flags.contains(RenameFlags::RENAME_NOREPLACE) {
                    true => self.plfs.rename_noreplace(&a, &b),
                    false => self.plfs.rename(&a, &b),
                }
                .map_err(|e| errno(&e))?;
                lock(&self.inodes).rename(&from, &to);
                Ok(())
            })();
            match r {
                Ok(()) => reply.ok(),
                Err(e) => reply.error(e),
            }
        })
    }

    fn link(&self, _req: &Request, _ino: INodeNo, _newparent: INodeNo, _newname: &OsStr, reply: ReplyEntry) {
        // PLFS has no hard links (a container has one name).
        reply.error(Errno::EPERM);
    }

    fn open(&self, req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        guard("open", || match self.open_inner(req, ino, flags.0) {
            Ok(fh) => reply.opened(
                FileHandle(fh),
                fopen_flags(flags.acc_mode() != OpenAccMode::O_RDONLY, self.direct_reads),
            ),
            Err(e) => reply.error(e),
        })
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock: Option<LockOwner>,
        reply: ReplyData,
    ) {
        guard("read", || {
            let h = match self.handle(fh) {
                Ok(h) => h,
                Err(e) => return reply.error(e),
            };
            if let Err(e) = self.as_opener(&h) {
                return reply.error(e);
            }
            // One buffer per thread, reused: no allocation, no zeroing per request.
            BUF.with_borrow_mut(|buf| {
                let size = size as usize;
                if buf.len() < size {
                    buf.resize(size, 0);
                }
                match h.file.read(&mut buf[..size], offset) {
                    Ok(n) => reply.data(&buf[..n]),
                    Err(e) => reply.error(errno(&e)),
                }
            })
        })
    }

    fn write(
        &self,
        req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        guard("write", || {
            let r = self.handle(fh).and_then(|h| {
                self.as_opener(&h)?;
                let n = h.file.write_as(data, offset, req.pid()).map_err(|e| errno(&e))?;
                // The kernel flags writes by processes without CAP_FSETID; without the flag, a
                // write by a caller other than root counts as one.
                if write_flags.contains(WriteFlags::FUSE_WRITE_KILL_SUIDGID) || req.uid() != 0 {
                    self.kill_privs_after_write(h.ino);
                }
                Ok(n)
            });
            match r {
                Ok(n) => reply.written(n as u32),
                Err(e) => reply.error(e),
            }
        })
    }

    fn flush(&self, req: &Request, _ino: INodeNo, fh: FileHandle, _lock_owner: LockOwner, reply: ReplyEmpty) {
        // close(2) of a descriptor by process `pid`: close that process's writer, as a close in
        // an unmodified PLFS process would (its index records reach the index log and its close
        // dropping is written), so readers outside this daemon see its data once close returns.
        // RELEASE arrives asynchronously later. A later write by the same process opens a new
        // writer. Durability is fsync's job, not close's.
        guard("flush", || {
            let r = self.handle(fh).and_then(|h| {
                self.as_opener(&h)?;
                let _g = lock(&self.trunc_close);
                h.file.close_writer(req.pid()).map_err(|e| errno(&e))
            });
            match r {
                Ok(()) => reply.ok(),
                Err(e) => reply.error(e),
            }
        })
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        guard("release", || {
            let h = lock(&self.handles).remove(&fh.0);
            match h.map(|h| self.close_handle(h)) {
                Some(Err(e)) => reply.error(e),
                _ => reply.ok(),
            }
        })
    }

    fn fsync(&self, _req: &Request, _ino: INodeNo, fh: FileHandle, _datasync: bool, reply: ReplyEmpty) {
        guard("fsync", || {
            let r = self.handle(fh).and_then(|h| {
                self.as_opener(&h)?;
                h.file.sync().map_err(|e| errno(&e))
            });
            match r {
                Ok(()) => reply.ok(),
                Err(e) => reply.error(e),
            }
        })
    }

    fn opendir(&self, req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        let r = || {
            self.rel(ino)
                .and_then(|r| self.as_meta(req, &r, 5))
                .and_then(|()| self.list_dir(ino))
        };
        guard("opendir", || match r() {
            Ok(list) => {
                let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
                lock(&self.dirs).insert(
                    fh,
                    OpenDir {
                        list: Arc::new(list),
                        served: false,
                    },
                );
                reply.opened(FileHandle(fh), FopenFlags::empty())
            }
            Err(e) => reply.error(e),
        })
    }

    fn readdir(&self, _req: &Request, ino: INodeNo, fh: FileHandle, offset: u64, mut reply: ReplyDirectory) {
        guard("readdir", || {
            let rewound = match lock(&self.dirs).get_mut(&fh.0) {
                Some(d) => offset == 0 && std::mem::replace(&mut d.served, true),
                None => return reply.error(Errno::EBADF),
            };
            // rewinddir: the directory as it is now, as on a local file system (an entry
            // unlinked since opendir is gone; plfs-regression readdir_ops, issue 25 item 6).
            if rewound {
                match self.list_dir(ino) {
                    Ok(l) => {
                        if let Some(d) = lock(&self.dirs).get_mut(&fh.0) {
                            d.list = Arc::new(l);
                        }
                    }
                    Err(e) => return reply.error(e),
                }
            }
            let Some(list) = lock(&self.dirs).get(&fh.0).map(|d| d.list.clone()) else {
                return reply.error(Errno::EBADF);
            };
            for (i, (ino, kind, name)) in list.iter().enumerate().skip(offset as usize) {
                // The offset of an entry is that of the next one.
                if reply.add(INodeNo(*ino), i as u64 + 1, file_type(*kind), name) {
                    break;
                }
            }
            reply.ok()
        })
    }

    fn releasedir(&self, _req: &Request, _ino: INodeNo, fh: FileHandle, _flags: OpenFlags, reply: ReplyEmpty) {
        guard("releasedir", || {
            lock(&self.dirs).remove(&fh.0);
            reply.ok()
        })
    }

    fn fsyncdir(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, _datasync: bool, reply: ReplyEmpty) {
        guard("fsyncdir", || {
            let r = self
                .rel(ino)
                .and_then(|r| self.plfs.sync_dir(&self.at(&r)).map_err(|e| errno(&e)));
            match r {
                Ok(()) => reply.ok(),
                Err(e) => reply.error(e),
            }
        })
    }

    fn statfs(&self, req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        let r = |()| self.plfs.statvfs(&self.at(Path::new(""))).map_err(|e| errno(&e));
        guard("statfs", || match self.as_meta(req, Path::new(""), 0).and_then(r) {
            Ok(s) => reply.statfs(
                s.f_blocks,
                s.f_bfree,
                s.f_bavail,
                s.f_files,
                s.f_ffree,
                s.f_bsize as u32,
                s.f_namemax as u32,
                s.f_frsize as u32,
            ),
            Err(e) => reply.error(e),
        })
    }

    fn access(&self, req: &Request, ino: INodeNo, mask: AccessFlags, reply: ReplyEmpty) {
        // Only reached without default_permissions (the kernel decides otherwise).
        guard("access", || match self.access_inner(req, ino, mask.bits() as u32) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        })
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        guard("create", || match self.create_inner(req, parent, name, mode, flags) {
            Ok((a, fh)) => reply.created(
                &ttl(&a),
                &a,
                Generation(GENERATION),
                FileHandle(fh),
                fopen_flags(flags & libc::O_ACCMODE != libc::O_RDONLY, self.direct_reads),
            ),
            Err(e) => reply.error(e),
        })
    }
}
