//! An open packed 1-N file.

use super::state::{flush, stat_of, Inner, SmallMeta};
use super::view::SmallDir;
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
    /// Applies `f` to this file's (canonical id, attributes).
    fn meta<R>(&self, g: &Inner, f: impl FnOnce(u64, &SmallMeta) -> R) -> Result<R> {
        let (id, m) = g
            .file(self.id)
            .ok_or_else(|| Error::errno(Errno::STALE, "packed file vanished from its directory's logs"))?;
        g.damage.check_file(id, &self.dir.logical())?;
        Ok(f(id, m))
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
    /// under [`SmallDir::exclusively`], the end is read from a refreshed view and the record reaches this
    /// process's log before the lock is let go. Before, the end came from this process's view,
    /// which misses what other processes appended.
    fn append(&self, buf: &[u8], _pid: u32) -> Result<(u64, usize)> {
        self.dir.exclusively(|| {
            self.refresh()?;
            let off = self.size()?;
            let n = self.write(buf, off)?;
            flush(&mut self.dir.inner())?;
            Ok((off, n))
        })
    }

    fn read(&self, buf: &mut [u8], off: u64) -> Result<usize> {
        let mut g = self.dir.inner();
        flush(&mut g)?;
        let segs = self.meta(&g, |_, m| m.map.lookup(off, buf.len() as u64))?;
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

    /// Publishes this process's buffered records, then sees other processes' (as a refresh of
    /// an N-1 file does): ldplfs refreshes before a fork, and a child that inherits the
    /// descriptor must find the file its parent created (issue 25, item 2: `{ echo a; /bin/echo
    /// b; } > f` failed in /bin/echo with ENOENT). A refresh of the view alone publishes only
    /// when another log changed.
    fn refresh(&self) -> Result<()> {
        let mut g = self.dir.inner();
        flush(&mut g)?;
        self.dir.refresh(&mut g)
    }

    fn flush(&self) -> Result<()> {
        flush(&mut self.dir.inner())
    }

    fn sync(&self) -> Result<()> {
        self.dir.sync_log(&mut self.dir.inner())
    }

    fn truncate(&self, size: u64) -> Result<()> {
        let mut g = self.dir.inner();
        let ts = clock::next_ts();
        let fixed: Vec<u8> = [ts, self.id, size].iter().flat_map(|v| v.to_le_bytes()).collect();
        let id = self.id;
        self.dir
            .record_change(&mut g, fmt::K_TRUNC, &fixed, &[], move |_| Rec::Trunc { ts, id, size })
    }

    fn size(&self) -> Result<u64> {
        let g = self.dir.inner();
        self.meta(&g, |_, m| m.map.size())
    }

    fn stat(&self) -> Result<Stat> {
        let g = self.dir.inner();
        self.meta(&g, stat_of)
    }

    /// A close(2) through the FUSE daemon (its FLUSH): the buffered records reach the log then,
    /// so that an append that fails is reported to the program's close; at the release, which
    /// follows with no program waiting for it, there would be no one to tell.
    fn close_writer(&self, _pid: u32) -> Result<()> {
        flush(&mut self.dir.inner())
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
