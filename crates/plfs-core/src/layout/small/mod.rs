//! 1-N (`workload: small_file | 1-n`): the files of a directory are packed into one log per
//! writer, turning a metadata problem (one create per file) into a data problem (one append per
//! file).
//!
//! Layout: `<canonical backend>/<dir>/.plfs_small/log.<writer id hex16>.<pid>.<host>`, on the
//! backend `hash(host) % n`, in the record format of [`crate::format::small`]. Readers replay
//! every log of the directory in timestamp order into a view ([`SmallDir`]). A writer appends its
//! records at every file close and every namespace operation, so a file is in its log at close
//! and visible to other processes from then on, with no explicit flush.

pub(crate) mod compact;
pub(crate) mod damage;
mod dead;
mod fresh;
mod handle;
mod names;
mod reserve;
mod retired;
mod staged;
mod state;
mod usage;
mod view;

pub use staged::{Staged, StagedAttrs};
pub use view::SmallDir;

use crate::clock;
use crate::error::{Error, Result};
use crate::format::small as fmt;
use crate::layout::legacy::LegacyDirs;
use crate::layout::Handle;
use crate::layout::{check_mode, Layout, Node, OpenFile};
use crate::mount::Loc;
use crate::sys::{Dir, TimeSpec};
use crate::types::{DirEntry, FileFormat, FileKind, OpenFlags, PackedUsage, Stat};
use handle::SmallHandle;
use rustix::io::Errno;
use std::collections::HashMap;
use std::ffi::OsStr;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

/// 1-N views kept cached beyond those in use.
const SMALL_CACHE: usize = 256;

/// This process's directory views, by logical directory, and the one asked for last (a process
/// creating or reading file after file of one directory finds it without building and hashing the
/// directory's path). One lock for both, so that `forget` leaves no forgotten view behind.
#[derive(Debug, Default)]
struct Views {
    map: HashMap<PathBuf, Arc<SmallDir>>,
    last: Option<Arc<SmallDir>>,
}

/// The 1-N layout: this process's directory views (and the PLFS 2.x 1-N directories it reads).
#[derive(Debug)]
pub struct Small {
    views: Mutex<Views>,
    legacy: LegacyDirs,
    umask: crate::sys::Umask,
}

impl Small {
    /// The layout.
    pub fn new(umask: crate::sys::Umask) -> Arc<Small> {
        Arc::new(Small {
            views: Mutex::new(Views::default()),
            legacy: LegacyDirs::default(),
            umask,
        })
    }

    fn views(&self) -> std::sync::MutexGuard<'_, Views> {
        self.views.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The view of directory `rel` of `loc`'s mount.
    fn view(&self, loc: &Loc, rel: &Path) -> Arc<SmallDir> {
        let mut v = self.views();
        if let Some(d) = v.last.as_ref() {
            if Arc::ptr_eq(&d.mount, &loc.mount) && d.rel.as_os_str() == rel.as_os_str() {
                return d.clone();
            }
        }
        let key = loc.mount.cfg.mount_point.join(rel);
        let d = match v.map.get(&key) {
            Some(d) => d.clone(),
            None => {
                if v.map.len() >= SMALL_CACHE {
                    v.map.retain(|_, d| Arc::strong_count(d) > 1);
                }
                let d = Arc::new(SmallDir::new(loc.mount.clone(), rel.to_path_buf(), self.umask));
                v.map.insert(key, d.clone());
                d
            }
        };
        v.last = Some(d.clone());
        d
    }

    /// A new log for the 1-N directory `dir` whose files no reader sees until it is published
    /// ([`Staged`]); `EBUSY` while a compaction of the directory runs.
    pub fn stage(&self, dir: &Loc) -> Result<Staged> {
        through_link(dir, Staged::new(self.view(dir, &dir.rel), compact::finish_leftovers))
    }

    /// The view holding file `loc`, and the file's name.
    fn parts(&self, loc: &Loc) -> Result<(Arc<SmallDir>, String)> {
        let name = loc
            .name()
            .to_str()
            .ok_or_else(|| Error::InvalidArgument(format!("{}: not a valid packed file name", loc.logical.display())))?
            .to_string();
        Ok((self.view(loc, loc.parent_rel()), name))
    }
}

/// A symbolic link in the middle of a path is not followed (the backends are opened with
/// `RESOLVE_NO_SYMLINKS`): the view's store look-up then fails with `ELOOP`, which is, to the
/// caller, a path component that is not a directory, as an N-1 look-up answers (`ENOTDIR`).
fn through_link<T>(loc: &Loc, r: Result<T>) -> Result<T> {
    r.map_err(|e| {
        if e.raw_errno() == Errno::LOOP.raw_os_error() {
            Error::errno(
                Errno::NOTDIR,
                format!("{}: a path component is not a directory", loc.logical.display()),
            )
        } else {
            e
        }
    })
}

impl Layout for Arc<Small> {
    fn create(&self, loc: &Loc, mode: u32, excl: bool) -> Result<(Box<dyn Node>, bool)> {
        let (d, name) = self.parts(loc)?;
        let (id, st, created) = through_link(loc, d.create(&name, mode, excl))?;
        Ok((
            Box::new(PackedNode::new(self.clone(), loc.clone(), d, name, id, st)),
            created,
        ))
    }

    /// Where this process already writes the parent's store (it held a log there at the last
    /// refresh, so the parent is a 1-N directory), a create needs neither the look-up nor the
    /// parent check: one refresh, which also finds an existing file or a removed directory.
    fn create_packed(&self, loc: &Loc, mode: u32, excl: bool) -> Option<Result<(Box<dyn Node>, bool)>> {
        if loc.is_root() {
            return None;
        }
        let (d, name) = match self.parts(loc) {
            Ok(p) => p,
            Err(e) => return Some(Err(e)),
        };
        if !d.writes_here() {
            return None;
        }
        let mut legacy = None;
        let r = through_link(
            loc,
            d.create_unless(&name, mode, excl, || {
                // A file of a PLFS 2.x 1-N directory of that name (as `lookup_missing` finds); once
                // the directory is known to hold no PLFS 2.x store, its view remembers (it is
                // forgotten with the view, `forget`).
                if d.no_legacy.load(Ordering::Relaxed) {
                    return Ok(false);
                }
                legacy = self.legacy.lookup(loc)?;
                if legacy.is_none() && self.legacy.known_plain(loc.parent_logical()) {
                    d.no_legacy.store(true, Ordering::Relaxed);
                }
                Ok(legacy.is_some())
            }),
        );
        Some(match r {
            Ok(Some((id, st, created))) => Ok((
                Box::new(PackedNode::new(self.clone(), loc.clone(), d, name, id, st)) as Box<dyn Node>,
                created,
            )),
            Ok(None) => match legacy {
                Some(n) if !excl => Ok((n, false)),
                _ => Err(Error::Exists(loc.logical.clone())),
            },
            Err(e) => Err(e),
        })
    }

    /// The rule of `create_packed`: a parent whose store this process writes (it held a log
    /// there at the last refresh) is a 1-N directory, never a path through a file. The look-up
    /// that follows refreshes the view, which finds a store removed since.
    fn vouches_for_parent(&self, loc: &Loc) -> bool {
        !loc.is_root() && self.view(loc, loc.parent_rel()).writes_here()
    }

    fn lookup_missing(&self, loc: &Loc) -> Result<Option<Box<dyn Node>>> {
        if loc.is_root() {
            return Ok(None);
        }
        let (d, name) = self.parts(loc)?;
        match through_link(loc, d.entry(&name))? {
            Some((id, st)) => Ok(Some(Box::new(PackedNode::new(
                self.clone(),
                loc.clone(),
                d,
                name,
                id,
                st,
            )))),
            // A file of a PLFS 2.x 1-N directory, unless this format's logs have one of that name.
            None => self.legacy.lookup(loc),
        }
    }

    fn list_extra(&self, loc: &Loc, out: &mut Vec<DirEntry>) -> Result<()> {
        for name in self.view(loc, &loc.rel).names()? {
            out.push(DirEntry {
                name: OsString::from(name),
                kind: FileKind::File,
            });
        }
        self.legacy.list(loc, out)
    }

    fn before_rmdir(&self, loc: &Loc) -> Result<()> {
        self.view(loc, &loc.rel).remove_store()?;
        self.forget(&loc.logical);
        Ok(())
    }

    fn packed_usage(&self, loc: &Loc) -> Result<Option<PackedUsage>> {
        self.view(loc, &loc.rel).usage().map(Some)
    }

    fn compact_dir(
        &self,
        loc: &Loc,
        opts: &crate::layout::compaction::CompactOptions,
    ) -> Option<Result<crate::layout::compaction::CompactReport>> {
        Some(compact::compact(&self.view(loc, &loc.rel), opts))
    }

    fn forget(&self, logical: &Path) {
        let mut v = self.views();
        v.map.retain(|k, _| !k.starts_with(logical));
        v.last = None;
        drop(v);
        self.legacy.forget(logical);
    }

    /// The files this process made, renamed or removed in the directory are records in its
    /// log there: flushed and synced, with the log's name.
    fn sync_dir(&self, loc: &Loc) -> Result<()> {
        let view = self.views().map.get(&loc.mount.cfg.mount_point.join(&loc.rel)).cloned();
        match view {
            Some(d) => d.sync_log(&mut d.inner()),
            None => Ok(()),
        }
    }

    fn flush_under(&self, logical: &Path) -> Result<()> {
        let views: Vec<Arc<SmallDir>> = {
            let v = self.views();
            v.map
                .iter()
                .filter(|(k, _)| k.starts_with(logical))
                .map(|(_, d)| d.clone())
                .collect()
        };
        views.iter().try_for_each(|d| state::flush(&mut d.inner()))
    }
}

/// A packed file found in the namespace.
#[derive(Debug)]
pub struct PackedNode {
    layout: Arc<Small>,
    loc: Loc,
    dir: Arc<SmallDir>,
    name: String,
    id: u64,
    st: Stat,
}

impl PackedNode {
    fn new(layout: Arc<Small>, loc: Loc, dir: Arc<SmallDir>, name: String, id: u64, st: Stat) -> PackedNode {
        PackedNode {
            layout,
            loc,
            dir,
            name,
            id,
            st,
        }
    }

    fn handle(&self) -> SmallHandle {
        SmallHandle {
            dir: self.dir.clone(),
            id: self.id,
        }
    }

    /// Renames this file to `to` (a name with nothing, or another packed file, there): within
    /// its directory one RENAME record; across directories a copy into the target directory's
    /// logs, then an unlink.
    pub fn rename_to(&self, to: &Loc) -> Result<()> {
        let (td, tname) = self.layout.parts(to)?;
        if Arc::ptr_eq(&self.dir, &td) {
            self.dir.rename(&self.name, &tname)?;
            // It may have replaced a file (`free_dead`), and it counts towards a compaction.
            compact::after_change(&self.dir, 1);
            return Ok(());
        }
        let src = self.handle();
        let (tid, _, _) = through_link(to, td.create(&tname, self.st.mode & 0o7777, false))?;
        let dst = SmallHandle {
            dir: td.clone(),
            id: tid,
        };
        dst.truncate(0)?;
        let mut buf = vec![0u8; 1 << 20];
        let mut off = 0u64;
        loop {
            let n = src.read(&mut buf, off)?;
            if n == 0 {
                break;
            }
            dst.write_as(&buf[..n], off, 0)?;
            off += n as u64;
        }
        if self.st.size > off {
            dst.truncate(self.st.size)?;
        }
        dst.close()?;
        td.setattr(
            &tname,
            fmt::SET_MODE | fmt::SET_MTIME,
            self.st.mode,
            0,
            0,
            0,
            self.st.mtime_ns,
        )?;
        self.dir.unlink(&self.name)
    }
}

impl Node for PackedNode {
    fn stat(&self) -> Result<Stat> {
        self.dir.check_file(&self.name, self.id)?;
        Ok(self.st)
    }

    fn open(&self, flags: OpenFlags, pid: u32, created: bool) -> Result<OpenFile> {
        self.dir.check_file(&self.name, self.id)?;
        if !created && !check_mode(&self.st, flags.access_mask()) {
            return Err(self.loc.err(Errno::ACCESS, "permission denied"));
        }
        let h = self.handle();
        if flags.trunc && flags.write && !created {
            h.truncate(0)?;
        }
        Ok(OpenFile::new(Box::new(h), self.loc.logical.clone(), flags, pid))
    }

    fn truncate(&self, size: u64) -> Result<()> {
        let h = self.handle();
        h.truncate(size)?;
        h.close()
    }

    fn unlink(&self) -> Result<()> {
        self.dir.unlink(&self.name)?;
        compact::after_change(&self.dir, 1);
        Ok(())
    }

    fn chmod(&self, mode: u32) -> Result<()> {
        self.dir.setattr(&self.name, fmt::SET_MODE, mode, 0, 0, 0, 0)
    }

    fn chown(&self, uid: u32, gid: u32) -> Result<()> {
        let mask = if uid != u32::MAX { fmt::SET_UID } else { 0 } | if gid != u32::MAX { fmt::SET_GID } else { 0 };
        self.dir.setattr(&self.name, mask, 0, uid, gid, 0, 0)
    }

    fn utimens(&self, atime: TimeSpec, mtime: TimeSpec) -> Result<()> {
        let now = clock::now_ns() as i64;
        let conv = |t: TimeSpec, bit: u32| match t {
            TimeSpec::Omit => (0, 0),
            TimeSpec::Now => (bit, now),
            TimeSpec::At(s, n) => (bit, s.saturating_mul(1_000_000_000).saturating_add(n)),
        };
        let (ma, a) = conv(atime, fmt::SET_ATIME);
        let (mm, m) = conv(mtime, fmt::SET_MTIME);
        self.dir.setattr(&self.name, ma | mm, 0, 0, 0, a, m)
    }

    fn format(&self) -> Result<FileFormat> {
        Ok(FileFormat::Packed)
    }

    fn access(&self, mode: u32) -> Result<()> {
        if check_mode(&self.st, mode) {
            Ok(())
        } else {
            Err(self.loc.err(Errno::ACCESS, "permission denied"))
        }
    }

    fn rename_within(&self, to: &Loc) -> Option<Result<()>> {
        Some(self.rename_to(to))
    }

    /// A backend object moved onto a packed name takes the name; the packed file is removed.
    fn replace_by(&self, from_parent: &Dir, from_name: &OsStr) -> Result<()> {
        from_parent.rename(from_name, &*self.loc.parent_dir(self.loc.home())?, self.loc.name())?;
        self.unlink()
    }
}
