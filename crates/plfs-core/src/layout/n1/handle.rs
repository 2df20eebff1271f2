//! [`ContainerHandle`]: an open N-1 file, the [`Handle`] behind an [`crate::layout::OpenFile`]
//! of a container. Each pid that writes through it has its own writer ([`Writer`]); reads,
//! syncs, truncates and attribute calls go to the file's [`Shared`] state in this process.

use super::auto;
use super::shared::{lock, Shared};
use super::writer::Writer;
use crate::error::{Error, Result};
use crate::format;
use crate::layout::Handle;
use crate::sys::TimeSpec;
use crate::types::{IndexStats, Stat};
use rustix::io::Errno;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// An open N-1 file.
#[derive(Debug)]
pub(super) struct ContainerHandle {
    shared: Arc<Shared>,
    /// Writers by pid (one per pid that wrote through this handle; looked up at every write,
    /// so no SipHash).
    writers: Mutex<BTreeMap<u32, Arc<Mutex<Writer>>>>,
    /// The first writer made through this handle and its pid (the opener's, nearly every
    /// write's): reached without the map's lock or a reference count (about 60 instructions of a
    /// 4 KiB write, issue 26). Not used once `first_closed`; a closed writer holds no logs.
    first: OnceLock<(u32, Arc<Mutex<Writer>>)>,
    first_closed: AtomicBool,
}

impl ContainerHandle {
    pub(super) fn new(shared: Arc<Shared>) -> Self {
        ContainerHandle {
            shared,
            writers: Mutex::new(BTreeMap::new()),
            first: OnceLock::new(),
            first_closed: AtomicBool::new(false),
        }
    }

    /// Runs `f` on the writer of `pid`, made if this pid has none.
    fn with_writer<R>(&self, pid: u32, f: impl FnOnce(&Arc<Mutex<Writer>>) -> R) -> R {
        if let Some((p, w)) = self.first.get() {
            if *p == pid && !self.first_closed.load(Ordering::Acquire) {
                return f(w);
            }
        }
        f(&self.writer(pid))
    }

    /// The writer of `pid` is being closed: the fast path of [`ContainerHandle::with_writer`]
    /// no longer leads to it.
    fn closing(&self, pid: Option<u32>) {
        if self.first.get().is_some_and(|(p, _)| pid.is_none_or(|q| q == *p)) {
            self.first_closed.store(true, Ordering::Release);
        }
    }

    /// After closing writers: if this process has no writer left on the file, automatic
    /// compaction may run.
    fn after_close(&self) {
        if lock(&self.shared.writers).is_empty() {
            auto::after_last_close(&self.shared);
        }
    }

    /// The writer of `pid` through this handle, made at its first write.
    pub(super) fn writer(&self, pid: u32) -> Arc<Mutex<Writer>> {
        let mut ws = lock(&self.writers);
        if let Some(w) = ws.get(&pid) {
            return w.clone();
        }
        let w = ws.entry(pid).or_insert_with(|| self.shared.new_writer(pid)).clone();
        let _ = self.first.set((pid, w.clone()));
        w
    }
}

impl Handle for ContainerHandle {
    fn write_as(&self, buf: &[u8], off: u64, pid: u32) -> Result<usize> {
        let n = self.with_writer(pid, |w| self.shared.write(w, buf, off))?;
        auto::after_write(&self.shared, n as u64);
        Ok(n)
    }

    fn append(&self, buf: &[u8], pid: u32) -> Result<(u64, usize)> {
        let w = self.writer(pid);
        let (off, n) = self.shared.append(&w, buf)?;
        auto::after_write(&self.shared, n as u64);
        Ok((off, n))
    }

    fn read(&self, buf: &mut [u8], off: u64) -> Result<usize> {
        self.shared.read(buf, off)
    }

    fn refresh(&self) -> Result<()> {
        self.shared.with_index(true, |_| Ok(()))
    }

    fn index_loads(&self) -> u64 {
        self.shared.loads.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn flush(&self) -> Result<()> {
        let ws: Vec<_> = lock(&self.writers).values().cloned().collect();
        for w in ws {
            lock(&w).flush_index()?;
        }
        Ok(())
    }

    fn sync(&self) -> Result<()> {
        let ws: Vec<_> = lock(&self.writers).values().cloned().collect();
        for w in &ws {
            self.shared.sync(w)?;
        }
        Ok(())
    }

    fn truncate(&self, size: u64) -> Result<()> {
        self.shared.truncate(size)?;
        auto::after_truncate(&self.shared);
        Ok(())
    }

    fn size(&self) -> Result<u64> {
        self.shared.size()
    }

    fn stat(&self) -> Result<Stat> {
        let mst = self.shared.c.marker_stat()?;
        let mut st = Stat::from_raw(&mst, crate::types::FileKind::File).as_file(self.size()?);
        if self.shared.is_unlinked() {
            st.nlink = 0;
        }
        Ok(st)
    }

    fn close_writer(&self, pid: u32) -> Result<()> {
        self.closing(Some(pid));
        let w = lock(&self.writers).remove(&pid);
        match w {
            Some(w) => {
                self.shared.close_writer(&w)?;
                self.after_close();
                Ok(())
            }
            None => Ok(()),
        }
    }

    fn close(&self) -> Result<()> {
        self.closing(None);
        let ws: Vec<_> = std::mem::take(&mut *lock(&self.writers)).into_values().collect();
        let mut first = Ok(());
        for w in ws {
            if let Err(e) = self.shared.close_writer(&w) {
                if first.is_ok() {
                    first = Err(e);
                }
            }
        }
        if first.is_ok() {
            self.after_close();
        }
        first
    }

    fn backend_path(&self) -> PathBuf {
        self.shared.c.path().to_path_buf()
    }

    fn ident(&self) -> Option<(u64, u64)> {
        Some(self.shared.c.ident)
    }

    fn getxattr(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        crate::xattr::get(&self.shared.c, key)
    }

    fn setxattr(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let c = &self.shared.c;
        if rustix::process::geteuid().as_raw() != 0 && c.dir.access(format::MARKER_NAME, 2).is_err() {
            return Err(Error::errno(
                Errno::ACCESS,
                format!("{}: permission denied", self.shared.logical.display()),
            ));
        }
        crate::xattr::set(c, key, value)
    }

    fn index_stats(&self) -> Result<IndexStats> {
        self.shared.with_index(false, |s| Ok(s.stats()))
    }

    fn chmod(&self, mode: u32) -> Option<Result<()>> {
        Some(self.shared.c.set_mode(mode))
    }

    fn chown(&self, uid: u32, gid: u32) -> Option<Result<()>> {
        Some(self.shared.c.set_owner(uid, gid))
    }

    fn utimens(&self, atime: TimeSpec, mtime: TimeSpec) -> Option<Result<()>> {
        Some(
            self.shared
                .c
                .set_times(atime, mtime)
                .map(|()| self.shared.times_were_set(mtime)),
        )
    }
}
