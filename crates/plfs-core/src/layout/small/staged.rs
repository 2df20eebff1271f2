//! New logs written whole under a temporary name (`.plfstmp.cmp.<writer id>.log`, format.md §14),
//! which readers ignore, and made visible by one rename: a compaction's new log (compact.rs
//! publishes it after its journal commits), and the converted files of a PLFS 2.x 1-N directory
//! (`plfs upgrade`, [`Staged`]), which appear all at once, each with its data and attributes,
//! or not at all. A crash before the rename leaves a log no reader sees, which `plfs fsck` reports
//! as an unpublished new log and `--repair` (or the directory's next compaction) removes.

use super::view::SmallDir;
use crate::clock;
use crate::error::{Error, Result};
use crate::format::compact as cf;
use crate::format::small::{self as fmt, SMALL_MAGIC, SMALL_MAX_BODY};
use crate::format::{self, LogHeader};
use crate::sys::{Create, Dir, File};
use rustix::io::Errno;
use std::sync::Arc;

/// A new log: the store it goes in (on the directory's writer backend), its writer id, its
/// temporary and final names.
pub(super) struct NewLog {
    pub(super) store: Dir,
    pub(super) wc: u64,
    pub(super) tmp: String,
    pub(super) fin: String,
}

impl NewLog {
    /// Names a new log for directory `d`, making its store if missing.
    pub(super) fn new(d: &SmallDir) -> Result<NewLog> {
        let wb = &d.mount.canonical[d.writer_backend()];
        let parent = wb.dir(&d.rel)?;
        parent.mkdir_ok(fmt::SMALL_DIR, 0o755)?;
        let store = parent.open_dir(fmt::SMALL_DIR)?;
        let wc = clock::random_u64();
        let tmp = cf::tmp_log_name(wc);
        let fin = fmt::log_name(wc, clock::pid(), clock::hostname());
        Ok(NewLog { store, wc, tmp, fin })
    }

    /// Creates the log under its temporary name, with its header (records go from
    /// `format::INDEX_HEADER_LEN` on).
    fn create(&self) -> Result<File> {
        let f = self.store.create_file(&self.tmp, 0o644, Create::Excl)?;
        let h = LogHeader {
            magic: SMALL_MAGIC,
            writer_id: self.wc,
            open_ns: clock::now_ns(),
            pid: clock::pid(),
            flags: 0,
        };
        f.pwrite_all(&h.encode(), 0)?;
        Ok(f)
    }

    /// Writes the log (its header, then `body`) under its temporary name, fsynced; on an error
    /// nothing of it is left.
    pub(super) fn write(&self, body: &[u8]) -> Result<()> {
        let build = || -> Result<()> {
            let f = self.create()?;
            f.pwrite_all(body, format::INDEX_HEADER_LEN as u64)?;
            f.fsync()
        };
        if let Err(e) = build() {
            let _ = self.store.unlink_opt(&self.tmp);
            return Err(e);
        }
        Ok(())
    }
}

/// Files added to a new log of a directory that no reader sees until [`Staged::publish`]. It
/// holds the directory's compaction lock (one compaction or staging at a time), so no compaction
/// takes its temporary log for debris meanwhile. Dropped unpublished, the log is removed.
pub struct Staged {
    d: Arc<SmallDir>,
    _lock: Dir,
    log: NewLog,
    file: File,
    off: u64,
    published: bool,
}

/// What the attributes of a staged file are.
#[derive(Clone, Copy, Debug)]
pub struct StagedAttrs {
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub mtime_ns: i64,
}

impl Staged {
    /// Starts a new log for directory `d`: `EBUSY` while a compaction (or another staging) of
    /// the directory runs.
    /// `finish` finishes what an interrupted compaction left (the lock held), as a compaction
    /// does first: its unpublished log has the name this log's kind has, and its journal rules
    /// the old logs.
    pub(super) fn new(d: Arc<SmallDir>, finish: fn(&SmallDir) -> Result<()>) -> Result<Staged> {
        let Some(lock) = d.mount.canonical[0].dir_opt(&d.rel)? else {
            return Err(Error::NotFound(d.logical()));
        };
        if !lock.try_lock_exclusive()? {
            return Err(Error::errno(
                Errno::BUSY,
                format!(
                    "{}: a compaction or an upgrade of the directory is running",
                    d.logical().display()
                ),
            ));
        }
        finish(&d)?;
        let log = NewLog::new(&d)?;
        let file = log.create()?;
        Ok(Staged {
            d,
            _lock: lock,
            log,
            file,
            off: format::INDEX_HEADER_LEN as u64,
            published: false,
        })
    }

    /// The names of this format's files the directory holds now (not the staged ones).
    pub fn names(&self) -> Result<Vec<String>> {
        self.d.names()
    }

    fn append(&mut self, kind: u16, fixed: &[u8], tail: &[u8]) -> Result<()> {
        let mut rec = Vec::with_capacity(fmt::SMALL_FRAME + fixed.len() + tail.len());
        fmt::encode(&mut rec, kind, fixed, tail);
        self.file.pwrite_all(&rec, self.off)?;
        self.off += rec.len() as u64;
        Ok(())
    }

    /// Adds file `name` of `size` bytes, read by `read(buf, offset)` (which fills `buf` whole),
    /// with attributes `a`: its CREATE, a WRITE for each piece of up to `chunk` bytes that is not
    /// all zeros, a TRUNC to `size`, and a SETATTR (mode, owner, mtime). Returns the bytes of
    /// data written.
    pub fn add(
        &mut self,
        name: &str,
        size: u64,
        a: StagedAttrs,
        chunk: usize,
        read: &mut dyn FnMut(&mut [u8], u64) -> Result<()>,
    ) -> Result<u64> {
        super::names::check_name(name)?;
        let le = super::names::le;
        let id = super::names::new_file_id();
        let mut fixed = le(&[clock::next_ts(), id]);
        for v in [a.mode & 0o7777, a.uid, a.gid] {
            fixed.extend_from_slice(&v.to_le_bytes());
        }
        self.append(fmt::K_CREATE, &fixed, name.as_bytes())?;
        let chunk = chunk.clamp(1, SMALL_MAX_BODY - 24);
        let mut buf = vec![0u8; chunk.min(size.max(1) as usize)];
        let (mut pos, mut copied) = (0u64, 0u64);
        while pos < size {
            let k = (size - pos).min(buf.len() as u64) as usize;
            read(&mut buf[..k], pos)?;
            if buf[..k].iter().any(|&x| x != 0) {
                self.append(fmt::K_WRITE, &le(&[clock::next_ts(), id, pos]), &buf[..k])?;
                copied += k as u64;
            }
            pos += k as u64;
        }
        self.append(fmt::K_TRUNC, &le(&[clock::next_ts(), id, size]), &[])?;
        let mut sa = le(&[clock::next_ts(), id]);
        for v in [
            fmt::SET_MODE | fmt::SET_UID | fmt::SET_GID | fmt::SET_MTIME,
            a.mode & 0o7777,
            a.uid,
            a.gid,
        ] {
            sa.extend_from_slice(&v.to_le_bytes());
        }
        sa.extend_from_slice(&le(&[0, a.mtime_ns as u64]));
        self.append(fmt::K_SETATTR, &sa, &[])?;
        Ok(copied)
    }

    /// Makes every staged file visible at once: the log is fsynced, renamed to its final name,
    /// and the store fsynced. Returns the published log, which [`Published::revoke`] removes.
    pub fn publish(mut self) -> Result<Published> {
        self.file.fsync()?;
        self.log.store.rename(&self.log.tmp, &self.log.store, &self.log.fin)?;
        self.published = true;
        self.log.store.fsync()?;
        Ok(Published {
            store: self.log.store.try_clone()?,
            fin: self.log.fin.clone(),
        })
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.published {
            let _ = self.log.store.unlink_opt(&self.log.tmp);
        }
    }
}

/// A published staged log.
pub struct Published {
    store: Dir,
    fin: String,
}

impl Published {
    /// Removes the log again: every file it made visible is gone at once.
    pub fn revoke(self) -> Result<()> {
        self.store.unlink(&self.fin)?;
        self.store.fsync()
    }
}
