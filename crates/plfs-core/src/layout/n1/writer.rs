//! One writer of an N-1 container: its data log and index log (created at its first write),
//! the index records it has not appended yet, and what its close dropping will say.

use crate::clock;
use crate::container::{self, Container};
use crate::error::Result;
use crate::format::{self, LogHeader, WriteRecord};
use crate::sys::{Create, Dir, File};
use std::sync::Arc;

/// One writer: a data log and an index log, created at its first write.
#[derive(Debug)]
pub(crate) struct Writer {
    pub(crate) id: u64,
    pub(crate) pid: u32,
    /// Shared, not copied, by every write (the merged index needs it).
    pub(crate) host: Arc<str>,
    pub(crate) open_ts: u64,
    pub(crate) logs: Option<WriterLogs>,
    /// Records not yet appended to the index log.
    pub(crate) pending: Vec<WriteRecord>,
    /// Whether runs are written as pattern records (`index_compression`).
    pub(crate) compress: bool,
    pub(crate) eof: u64,
    pub(crate) bytes: u64,
    pub(crate) mtime_ns: u64,
    /// Whether its open record is in `meta/` (written at the first write).
    pub(crate) announced: bool,
    /// The process that made its logs (0 before): a forked child's copy of it is not its own.
    pub(crate) maker: u32,
    pub(crate) closed: bool,
}

#[derive(Debug)]
pub(crate) struct WriterLogs {
    pub(crate) dir: Arc<Dir>,
    pub(crate) data: File,
    pub(crate) index: File,
    pub(crate) data_off: u64,
    pub(crate) index_off: u64,
    /// Whether the directory entries of the new logs have been made durable (at the first sync,
    /// which also syncs the index log: its header, which says the data log is framed).
    pub(crate) dirs_synced: bool,
    /// `data_off` at the last fsync of the data log.
    pub(crate) data_synced_off: u64,
    /// Set by a sync after the first, which syncs the data log only (its frames describe every
    /// write it made durable): the index log must be synced before a close record names this
    /// writer closed, since readers then trust its index log and scan no frames.
    pub(crate) index_owed: bool,
    /// Whether the logs are in the container itself (else on a shadow backend).
    pub(crate) in_container: bool,
    /// The data log's header, until it is written together with the first data.
    pub(crate) data_header: Option<[u8; format::DATA_HEADER_LEN]>,
}

impl Writer {
    /// A writer that has written nothing yet.
    pub(crate) fn new(pid: u32, compress: bool) -> Writer {
        Writer {
            id: clock::random_u64(),
            pid,
            host: clock::hostname().into(),
            open_ts: clock::next_ts(),
            logs: None,
            pending: Vec::new(),
            compress,
            eof: 0,
            bytes: 0,
            mtime_ns: 0,
            announced: false,
            maker: 0,
            closed: false,
        }
    }

    /// Its `meta/open.*` record.
    pub(crate) fn open_record(&self) -> format::MetaDropping {
        format::MetaDropping::Open {
            writer_id: self.id,
            pid: self.pid,
            host: self.host.to_string(),
        }
    }

    /// Creates the data and index logs with their headers (the data log first: an index log
    /// never exists without its data log). On failure nothing half-made is left behind, so that
    /// a retry can create them again.
    pub(crate) fn create_logs(&mut self, c: &Container, data_crc: bool) -> Result<()> {
        let (dir, in_container) = c.writer_dir(&self.host, true)?;
        let mode = container::log_mode(c.marker.st_mode);
        // Format 2: the data log is framed, so a write that returned is found again from the data
        // log alone when the writer dies before appending its index record.
        let flags = format::LOG_FLAG_FRAMED | if data_crc { format::LOG_FLAG_DATA_CRC } else { 0 };
        // The logs have exactly the mode the file's mode gives them, whatever the umask, and
        // belong to the file's group, so that its group may read what another member wrote (a
        // writer not in the group keeps its own: the change is refused, harmlessly).
        let gid = c.marker.st_gid;
        let settle = |f: File| -> Result<File> {
            if gid != crate::sys::egid() {
                let _ = f.chown(u32::MAX, gid);
            }
            if mode & crate::sys::umask() != 0 {
                f.chmod(mode)?;
            }
            Ok(f.kept())
        };
        let header = |magic: [u8; 8]| {
            LogHeader {
                magic,
                writer_id: self.id,
                open_ns: self.open_ts,
                pid: self.pid,
                flags,
            }
            .encode()
        };
        // The data log's header goes out with the first data (one pwritev); the index log's is
        // written now, so an index log is never shorter than its header once it has records.
        let data_name = format::data_log_name(self.id, self.pid, &self.host);
        let data = settle(dir.create_file(&data_name, mode, Create::Excl)?)?;
        let index_name = format::index_log_name(self.id, self.pid, &self.host);
        // On failure leave nothing half-made behind, so that a retry can create the logs again.
        let index = match dir.create_file(&index_name, mode, Create::Excl) {
            // Settled (moved to the high range, which closes its first descriptor) before the
            // header is written: a close of a written file is where a network file system reports
            // a write that failed after it returned, and only the log's last close is looked at.
            Ok(f) => match settle(f).and_then(|f| f.pwrite_all(&header(format::INDEX_MAGIC), 0).map(|()| f)) {
                Ok(f) => f,
                Err(e) => {
                    let _ = dir.unlink_opt(&index_name);
                    let _ = dir.unlink_opt(&data_name);
                    return Err(e);
                }
            },
            Err(e) => {
                let _ = dir.unlink_opt(&data_name);
                return Err(e);
            }
        };
        if let Err(e) = follow_later_chmod(c, &dir, &data, &index, mode) {
            let _ = dir.unlink_opt(&index_name);
            let _ = dir.unlink_opt(&data_name);
            return Err(e);
        }
        self.maker = clock::pid();
        self.logs = Some(WriterLogs {
            dir,
            data,
            index,
            data_off: format::DATA_HEADER_LEN as u64,
            index_off: format::INDEX_HEADER_LEN as u64,
            dirs_synced: false,
            data_synced_off: 0,
            index_owed: false,
            in_container,
            data_header: Some(header(format::DATA_MAGIC)),
        });
        Ok(())
    }

    /// Ends this identity in `meta/` as a close does: ends its logs ([`Writer::end_logs`]); then,
    /// once announced, removes the open record of a writer that wrote nothing, or turns it into
    /// its close record in one rename (stat never sees neither) after raising the file's mtime
    /// to its last write's. If the logs could not be ended whole, the open record stays:
    /// readers then take this writer for one that died and read its data log's frames, which
    /// hold every write that reached it (design.md, "Crash semantics"). A real close and
    /// compaction's rotation of a writer both end an identity through here.
    pub(crate) fn close_records(&mut self, c: &Container) -> Result<()> {
        let ended = self.end_logs();
        if !self.announced {
            return ended;
        }
        if self.bytes == 0 {
            return ended.and_then(|()| c.remove_meta(&self.open_record()));
        }
        // Raised even when the logs could not be ended whole: the file was written.
        let _ = c.bump_mtime(self.mtime_ns);
        ended?;
        let d = format::MetaDropping::Close {
            writer_id: self.id,
            open_ts: self.open_ts,
            close_ts: clock::next_ts(),
            eof: self.eof,
            bytes: self.bytes,
            mtime_ns: self.mtime_ns,
        };
        c.replace_meta(&self.open_record(), &d)
    }

    /// Ends the logs of a close, and looks at what each close(2) answers ([`File::close`]): on a
    /// network file system a write that returned may fail afterwards, in the client's
    /// write-behind, and the close is where the program hears of it, as it would of a plain
    /// file's. The data log goes first: synced first if a sync left the index log unsynced
    /// (`index_owed`: data is durable before the records that point at it, so that a close
    /// record that survives a power loss names a writer whose index log holds every write a
    /// sync made durable), then closed. A data log whose close reports an error gets no more
    /// records, so that no record points at bytes that did not land (a reader would call the
    /// whole file damaged); the writer's frames describe what did. Then the buffered records are
    /// appended, and the index log is synced if owed and closed. The logs are gone after it,
    /// whatever it returns.
    fn end_logs(&mut self) -> Result<()> {
        let Some(l) = self.logs.take() else {
            return Ok(());
        };
        let pending = std::mem::take(&mut self.pending);
        if l.index_owed && l.data_off != l.data_synced_off {
            l.data.fsync()?;
        }
        l.data.close()?;
        if !pending.is_empty() {
            l.index.pwrite_all(&self.encode(&pending), l.index_off)?;
        }
        if l.index_owed {
            l.index.fsync()?;
        }
        l.index.close()
    }

    /// The index log's bytes of `records`.
    fn encode(&self, records: &[WriteRecord]) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(records.len() * format::WRITE_REC_LEN);
        if self.compress {
            format::encode_records(records, format::FRAME_LEN as u64, &mut bytes);
        } else {
            records.iter().for_each(|r| r.encode_into(&mut bytes));
        }
        bytes
    }

    /// Appends the buffered records to the index log.
    pub(crate) fn flush_index(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let bytes = self.encode(&self.pending);
        let l = self.logs.as_mut().expect("records imply logs");
        l.index.pwrite_all(&bytes, l.index_off)?;
        l.index_off += bytes.len() as u64;
        self.pending.clear();
        Ok(())
    }
}

/// Gives logs just made with the mode `made_with` (the file's when the container was opened) the
/// file's mode now, if a chmod came in between: by this process through its open file, or by
/// another while this one had the file open. The chmod gave every log it found the new mode
/// (`Container::follow_mode`, after changing the marker), so looking at the marker once the logs
/// exist leaves no gap: either the chmod's walk found these logs, or this look finds its mode.
/// Their directory follows too (a hostdir this writer may have made); one made by another user
/// is left as it is, as a chmod leaves it.
fn follow_later_chmod(c: &Container, dir: &Dir, data: &File, index: &File, made_with: u32) -> Result<()> {
    let now = match c.marker_stat() {
        Ok(st) => st.st_mode,
        Err(e) => {
            crate::debug!("{e}: the logs keep the mode the file had when it was opened");
            return Ok(());
        }
    };
    let mode = container::log_mode(now);
    if mode == made_with {
        return Ok(());
    }
    data.chmod(mode)?;
    index.chmod(mode)?;
    if let Err(e) = dir.chmod_self(container::container_dir_mode(now)) {
        crate::debug!("{e}: its hostdir keeps the mode it had");
    }
    Ok(())
}
