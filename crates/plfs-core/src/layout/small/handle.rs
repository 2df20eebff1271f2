//! An open packed 1-N file.

use super::view::{flush, stat_of, SmallDir, SmallMeta};
use crate::clock;
use crate::error::{Error, Result};
use crate::extent::Segment;
use crate::format::small::{self as fmt, Rec, SMALL_MAX_BODY};
use crate::layout::Handle;
use crate::types::Stat;
use rustix::io::Errno;
use std::path::PathBuf;
use std::sync::Arc;

/// An open packed file.
#[derive(Debug)]
pub struct SmallHandle {
    pub(super) dir: Arc<SmallDir>,
    pub(super) id: u64,
}

impl SmallHandle {
    fn meta<R>(&self, g: &super::view::Inner, f: impl FnOnce(&SmallMeta) -> R) -> Result<R> {
        g.files
            .get(&self.id)
            .map(f)
            .ok_or_else(|| Error::errno(Errno::STALE, "packed file vanished from its directory's logs"))
    }

    fn write(&self, buf: &[u8], off: u64) -> Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        off.checked_add(buf.len() as u64)
            .filter(|end| *end <= i64::MAX as u64)
            .ok_or_else(|| Error::errno(Errno::FBIG, "write beyond the largest file offset"))?;
        let mut g = self.dir.inner();
        for (i, chunk) in buf.chunks(SMALL_MAX_BODY - 24).enumerate() {
            let coff = off + (i * (SMALL_MAX_BODY - 24)) as u64;
            let ts = clock::next_ts();
            let fixed: Vec<u8> = [ts, self.id, coff].iter().flat_map(|v| v.to_le_bytes()).collect();
            let (id, len) = (self.id, chunk.len() as u64);
            self.dir
                .record(&mut g, fmt::K_WRITE, &fixed, chunk, move |phys| Rec::Write {
                    ts,
                    id,
                    off: coff,
                    len,
                    phys,
                })?;
        }
        Ok(buf.len())
    }
}

impl Handle for SmallHandle {
    fn write_as(&self, buf: &[u8], off: u64, _pid: u32) -> Result<usize> {
        self.write(buf, off)
    }

    /// Appends of every process to the files of this directory take turns (O_APPEND, issue 25):
    /// under an exclusive flock on the directory on the first backend (the lock a compaction of
    /// the directory takes), the end is read from a refreshed view and the record reaches this
    /// process's log before the lock is let go. Before, the end came from this process's view,
    /// which misses what other processes appended.
    fn append(&self, buf: &[u8], _pid: u32) -> Result<(u64, usize)> {
        let lockd = self.dir.mount.canonical[0].dir_opt(&self.dir.rel)?;
        let locked = match &lockd {
            Some(d) => d.lock_exclusive()?,
            None => false,
        };
        let r = (|| {
            self.refresh()?;
            let off = self.size()?;
            let n = self.write(buf, off)?;
            flush(&mut self.dir.inner())?;
            Ok((off, n))
        })();
        if let (true, Some(d)) = (locked, &lockd) {
            let _ = d.unlock();
        }
        r
    }

    fn read(&self, buf: &mut [u8], off: u64) -> Result<usize> {
        let mut g = self.dir.inner();
        flush(&mut g)?;
        let segs = self.meta(&g, |m| m.map.lookup(off, buf.len() as u64))?;
        let mut pos = 0usize;
        for s in segs {
            match s {
                Segment::Hole { len } => {
                    buf[pos..pos + len as usize].fill(0);
                    pos += len as usize;
                }
                Segment::Data { len, chunk, phys } => {
                    let l = &g.logs[chunk as usize];
                    let dst = &mut buf[pos..pos + len as usize];
                    let n = l.file.pread_full(dst, phys)?;
                    if n < dst.len() {
                        return Err(Error::corrupt(&l.path, "log shorter than its records"));
                    }
                    pos += len as usize;
                }
            }
        }
        Ok(pos)
    }

    fn refresh(&self) -> Result<()> {
        let mut g = self.dir.inner();
        self.dir.refresh(&mut g)
    }

    fn flush(&self) -> Result<()> {
        flush(&mut self.dir.inner())
    }

    fn sync(&self) -> Result<()> {
        SmallDir::sync_log(&mut self.dir.inner())
    }

    fn truncate(&self, size: u64) -> Result<()> {
        let mut g = self.dir.inner();
        let ts = clock::next_ts();
        let fixed: Vec<u8> = [ts, self.id, size].iter().flat_map(|v| v.to_le_bytes()).collect();
        let id = self.id;
        self.dir
            .record(&mut g, fmt::K_TRUNC, &fixed, &[], move |_| Rec::Trunc { ts, id, size })
    }

    fn size(&self) -> Result<u64> {
        let g = self.dir.inner();
        self.meta(&g, |m| m.map.size())
    }

    fn stat(&self) -> Result<Stat> {
        let g = self.dir.inner();
        self.meta(&g, |m| stat_of(self.id, m))
    }

    /// Close: the file's records reach its log.
    fn close(&self) -> Result<()> {
        flush(&mut self.dir.inner())?;
        super::compact::after_change(&self.dir, 0);
        Ok(())
    }

    fn backend_path(&self) -> PathBuf {
        self.dir.store_path()
    }
}
