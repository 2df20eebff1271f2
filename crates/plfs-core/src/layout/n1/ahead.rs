//! A read-ahead of plfs's own, for data logs read past the page cache (`O_DIRECT`, on a backend
//! whose cache can be stale: `sys::File::is_direct`). There every read is a round trip to the
//! file system, so a sequential reader of small records paid one per record where the kernel's
//! readahead would have fetched a window at once (on MooseFS, 4 KiB reads of a 256 MiB file:
//! 3.3x as long as through the cache).
//!
//! A sequential read that one element of a pattern answers ([`IndexState::plan_read`]) fills a
//! window of up to [`WINDOW`] bytes of the data log from where it starts, and the reads that
//! follow copy from it while they fall inside. The window never reaches past the pattern's last
//! element: every byte of a data log before a write that a reader's index holds was written
//! before that write, and data log bytes, once written, never change, so nothing in the window
//! can be stale or unwritten (a later refresh cannot change them, only point elsewhere, and the
//! index says where each read goes before the window is looked at).
//!
//! [`IndexState::plan_read`]: crate::index::IndexState::plan_read

use crate::error::Result;
use crate::sys::File;
use std::sync::Arc;

/// Bytes read at once: what the kernel's readahead reaches for a sequential reader, and a
/// FUSE request's largest size.
pub(super) const WINDOW: u64 = 1 << 20;

/// One window of one data log.
#[derive(Default)]
pub(super) struct Ahead {
    file: Option<Arc<File>>,
    at: u64,
    buf: Vec<u8>,
}

impl std::fmt::Debug for Ahead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ahead")
            .field("file", &self.file.as_ref().map(|w| w.path().to_path_buf()))
            .field("at", &self.at)
            .field("len", &self.buf.len())
            .finish()
    }
}

impl Ahead {
    /// Fills `out` from `phys` of data log `f` (whose bytes before `end` are all written) out of
    /// the window, reading a new window first when it does not hold them. `false` when the log
    /// is shorter than that (the caller's full path then reports it).
    pub(super) fn read(&mut self, f: &Arc<File>, out: &mut [u8], phys: u64, end: u64) -> Result<bool> {
        let len = out.len() as u64;
        let held = self.file.as_ref().is_some_and(|w| Arc::ptr_eq(w, f))
            && phys >= self.at
            && phys + len <= self.at + self.buf.len() as u64;
        if !held {
            let want = end.saturating_sub(phys).min(WINDOW).max(len);
            self.file = None;
            self.buf.resize(want as usize, 0);
            let got = f.pread_full(&mut self.buf, phys)?;
            self.buf.truncate(got);
            (self.file, self.at) = (Some(f.clone()), phys);
            if (got as u64) < len {
                return Ok(false);
            }
        }
        let from = (phys - self.at) as usize;
        out.copy_from_slice(&self.buf[from..from + out.len()]);
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::{Create, Dir};

    fn log(tag: &str, len: usize) -> (Arc<File>, Vec<u8>) {
        let dir = std::env::temp_dir().join(format!("plfs-ahead-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let f = Dir::open_root(&dir)
            .unwrap()
            .create_file("data", 0o600, Create::Excl)
            .unwrap();
        let bytes: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
        f.pwrite_all(&bytes, 0).unwrap();
        (Arc::new(f), bytes)
    }

    /// Reads inside the window are copied from it, reads outside it refill it, a window never
    /// reaches past `end`, and a log shorter than the read says so.
    #[test]
    fn reads_come_from_the_window_and_never_past_its_end() {
        let (f, bytes) = log("w", 3 << 20);
        let mut a = Ahead::default();
        let mut out = vec![0u8; 4096];
        for phys in [100u64, 4196, 900_000, (1 << 20) + 50, 2 << 20] {
            assert!(a.read(&f, &mut out, phys, 3 << 20).unwrap());
            assert_eq!(out, bytes[phys as usize..phys as usize + 4096], "at {phys}");
        }
        // The window starts at the read that filled it and stops at `end`.
        assert!(a.read(&f, &mut out, 10_000, 20_000).unwrap());
        assert_eq!((a.at, a.buf.len()), (10_000, 10_000));
        assert_eq!(out, bytes[10_000..14_096]);
        // A read the window does not hold (past its end) reads again.
        assert!(a.read(&f, &mut out, 18_000, 3 << 20).unwrap());
        assert_eq!(out, bytes[18_000..22_096]);
        // Another log's window is never used.
        let (g, gbytes) = log("g", 8192);
        assert!(a.read(&g, &mut out, 100, 8192).unwrap());
        assert_eq!(out, gbytes[100..4196]);
        // Past the end of the log.
        assert!(!a.read(&g, &mut out, 6000, 10_096).unwrap());
    }
}
