//! Reading one index log from where the last refresh stopped, and, for a framed data log of a
//! writer that did not close, the frames past what its index log lists (format 2, docs/format.md
//! section 3).

use crate::container::Container;
use crate::error::{Error, Result};
use crate::format;
use crate::sys::{Access, Dir, File};
use std::collections::HashSet;
use std::ffi::OsString;
use std::path::PathBuf;

/// An index log found while listing hostdirs.
pub(super) struct FoundLog {
    pub(super) dir: usize,
    pub(super) name: OsString,
    pub(super) path: PathBuf,
    pub(super) info: format::LogName,
}

/// A record that points past the end of its data log: damage (data always reaches the data log
/// before the record that points at it).
pub(super) fn past_end(f: &FoundLog, logical: u64, data_len: u64) -> Error {
    let data = format::data_log_name(f.info.writer_id, f.info.pid, &f.info.host);
    Error::corrupt(
        &f.path,
        format!("the write at logical offset {logical} points past the end of its {data_len}-byte data log {data}"),
    )
}

/// What is known of an index log's data log between refreshes.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Tail {
    /// The logs' header flags, once the index log's header was read.
    pub(super) flags: Option<u32>,
    /// The data log offset just past the last write seen, indexed or read from its frame (0:
    /// none seen): where the next frame starts in a framed log.
    pub(super) end: u64,
}

/// What [`read_log`] read of an index log.
pub(super) struct LogRead {
    /// Bytes of the log consumed so far (header included).
    pub(super) consumed: u64,
    pub(super) dec: format::DecodedRecords,
    /// Size of the matching data log.
    pub(super) data_len: u64,
    /// What is known of the data log now.
    pub(super) tail: Tail,
    /// Writes described by frames of the data log past its last indexed write (a framed log of a
    /// writer that did not close: still writing, or killed before appending its records).
    pub(super) recovered: Vec<format::WriteRecord>,
}

/// Reads an index log from byte `start`, and, for a framed log of a writer that did not close
/// (`open`), the frames its data log holds past what the index describes. A data log missing
/// while its index log has records is damage.
pub(super) fn read_log(dir: &Dir, f: &FoundLog, start: u64, tail: Tail, open: bool) -> Result<LogRead> {
    let (file, size) = no_link(dir.open_file_sized(&f.name, Access::Read), dir, &f.name)?;
    let nothing = |consumed| LogRead {
        consumed,
        dec: format::DecodedRecords::default(),
        data_len: 0,
        tail,
        recovered: Vec::new(),
    };
    if size < start {
        return Ok(nothing(size));
    }
    // Read to the end of the file, not to the size fstat reported: a network file system may
    // report a size that lags behind what another client appended (GlusterFS: about a second).
    let buf = file.read_to_end_from(start, size - start)?;
    let mut body_start = 0usize;
    let mut tail = tail;
    if start == 0 {
        if buf.len() < format::INDEX_HEADER_LEN {
            // Header not (fully) written yet: nothing to consume.
            return Ok(nothing(0));
        }
        let h = format::LogHeader::decode(&f.path, &buf, format::INDEX_MAGIC)?;
        if h.writer_id != f.info.writer_id {
            return Err(Error::corrupt(
                &f.path,
                format!(
                    "header names writer {:016x}, file name {:016x}",
                    h.writer_id, f.info.writer_id
                ),
            ));
        }
        body_start = format::INDEX_HEADER_LEN;
        tail.flags = Some(h.flags);
    }
    let dec = format::decode_records(&buf[body_start..]);
    let consumed = start + (body_start + dec.valid_len) as u64;
    let data_name = format::data_log_name(f.info.writer_id, f.info.pid, &f.info.host);
    let gap = format::frame_gap(tail.flags.unwrap_or(0));
    // Where the new records end in the data log.
    let end = dec
        .records
        .iter()
        .map(|r| r.physical_off.saturating_add(r.length))
        .chain(dec.patterns.iter().map(|p| {
            let n = p.ts.len() as u64;
            p.physical_start
                .saturating_add((n - 1).saturating_mul(p.length.saturating_add(gap)))
                .saturating_add(p.length)
        }))
        .max()
        .unwrap_or(0);
    tail.end = tail.end.max(end);
    let framed = gap > 0 && open;
    // The data log's size bounds the new records; with none, and no frames to look for, it is
    // not needed.
    if end == 0 && !framed {
        return Ok(LogRead {
            consumed,
            dec,
            data_len: 0,
            tail,
            recovered: Vec::new(),
        });
    }
    let (data, len) = match dir.open_file_sized(&data_name, Access::Read) {
        Ok(v) => v,
        // A writer creates its data log before its index log, and a framed log that has no
        // records yet may be gone with a wipe: nothing to recover then.
        Err(e) if crate::sys::is_missing(&e) && end == 0 => return Ok(nothing(consumed)),
        Err(e) if crate::sys::is_missing(&e) => {
            return Err(Error::corrupt(
                dir.sub(&data_name),
                format!("missing, but its index log {} has records", f.path.display()),
            ))
        }
        Err(e) => return Err(no_link::<()>(Err(e), dir, &data_name).unwrap_err()),
    };
    // A size that lags (see above) is checked against the data itself before the records are
    // called damaged.
    let mut data_len = len;
    if end > len {
        let mut b = [0u8; 1];
        if data.pread_full(&mut b, end - 1)? == 1 {
            data_len = end;
        }
    }
    let mut recovered = Vec::new();
    if framed {
        let from = if tail.end == 0 {
            format::DATA_HEADER_LEN as u64
        } else {
            tail.end
        };
        tail.end = scan_frames(&data, from, data_len, tail.flags.unwrap_or(0), &mut recovered)?;
    }
    Ok(LogRead {
        consumed,
        dec,
        data_len,
        tail,
        recovered,
    })
}

/// Reads the frames of a framed data log from offset `from` (where a frame starts) up to `len`,
/// appending a record for each whole one; returns where the first frame not read starts. The
/// first frame that is cut short by the end of the log, or is not intact, ends the scan: it is a
/// write still in progress, or one its writer never finished (its call did not return).
pub(crate) fn scan_frames(
    data: &File,
    from: u64,
    len: u64,
    flags: u32,
    out: &mut Vec<format::WriteRecord>,
) -> Result<u64> {
    const WINDOW: u64 = 64 << 10;
    const FL: u64 = format::FRAME_LEN as u64;
    let crc = flags & format::LOG_FLAG_DATA_CRC != 0;
    let mut pos = from;
    let mut buf = Vec::new();
    // After a frame larger than a window, the next read is one page: enough for the next
    // frame's header (and a few small frames), not a window of data nobody needs.
    let mut window = WINDOW;
    'window: loop {
        if pos.saturating_add(FL) > len {
            return Ok(pos);
        }
        buf.resize(window.min(len - pos) as usize, 0);
        window = WINDOW;
        let got = data.pread_full(&mut buf, pos)? as u64;
        if got < FL {
            return Ok(pos);
        }
        let mut at = 0u64;
        loop {
            if at + FL > got {
                pos += at; // the next frame starts in the next window
                continue 'window;
            }
            let Some(fr) = format::Frame::decode(&buf[at as usize..got as usize]) else {
                return Ok(pos + at);
            };
            let data_at = pos + at + FL;
            let next = data_at + u64::from(fr.length);
            if next > len {
                return Ok(pos + at);
            }
            out.push(format::WriteRecord {
                logical_off: fr.logical_off,
                length: u64::from(fr.length),
                physical_off: data_at,
                ts: fr.ts,
                data_crc: if crc { fr.data_crc } else { 0 },
            });
            if next >= pos + got {
                pos = next; // its data runs past the window: read on from the next frame
                window = 4096;
                continue 'window;
            }
            at = next - pos;
        }
    }
}

/// A log opened without following links (`O_NOFOLLOW`) that turned out to be a symbolic link:
/// something planted in the container, which is damage (EIO), not a path to follow.
pub(super) fn no_link<T>(r: Result<T>, dir: &Dir, name: impl AsRef<std::ffi::OsStr>) -> Result<T> {
    r.map_err(|e| {
        if e.raw_errno() == rustix::io::Errno::LOOP.raw_os_error() {
            Error::corrupt(dir.sub(name), "a symbolic link where a log should be (not followed)")
        } else {
            e
        }
    })
}

/// Writers whose logs the container's compaction journal retires (none without a journal).
pub(super) fn retired_writers(c: &Container) -> Result<HashSet<u64>> {
    use crate::format::compact::{Journal, E_RETIRED, JOURNAL_NAME};
    let Some(f) = c.dir.open_file_opt(JOURNAL_NAME, crate::sys::Access::Read)? else {
        return Ok(HashSet::new());
    };
    let j = Journal::decode(&c.sub(JOURNAL_NAME), &f.read_to_end_from(0, 4096)?)?;
    Ok(j.names(E_RETIRED)
        .filter_map(format::parse_log_name)
        .map(|l| l.writer_id)
        .collect())
}
