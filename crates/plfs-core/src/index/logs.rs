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
    // Read to the end of the file, not to the size fstat reported: a network file system may
    // report a size that lags behind what another client appended (GlusterFS: about a second),
    // even one below what an earlier refresh already read (which is then read on from, not
    // read again: the bytes a writer wrote counted twice would look like damage at its close).
    let buf = file.read_to_end_from(start, size.saturating_sub(start))?;
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
    let body = &buf[body_start..];
    let mut dec = format::decode_records(body);
    let mut consumed = start + (body_start + dec.valid_len) as u64;
    let data_name = format::data_log_name(f.info.writer_id, f.info.pid, &f.info.host);
    let gap = format::frame_gap(tail.flags.unwrap_or(0));
    let end = records_end(&dec, gap);
    let prior_end = tail.end;
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
    // A writer creates its data log before its index log, and a framed log that has no records
    // yet may be gone with a wipe: nothing to recover then.
    let Some((data, len)) = data_log(dir, f, data_name.as_ref(), end, framed)? else {
        return Ok(nothing(consumed));
    };
    // A size that lags (see above) is checked against the data itself before the records are
    // called damaged.
    let mut data_len = len;
    if let Some(data) = data.as_ref().filter(|_| end > len) {
        if holds_byte(data, end - 1)? {
            data_len = end;
        }
    }
    // A writer still writing can have a record visible before the data it points at: on
    // GlusterFS a reader on another client sees what the writer's client has sent to the bricks,
    // and its write-behind sends the two logs' writes in no set order. Such a record is not
    // damage but a write not yet visible here: the records from the first one past the data
    // log's end are left for a later refresh (as a torn tail is). In a writer that closed, or on
    // a second look that still finds it, it is damage (`merge_log`, `IndexState::load`).
    if open && end > data_len {
        let cut = visible_prefix(body, dec.valid_len, gap, data_len);
        dec = format::decode_records(&body[..cut]);
        consumed = start + (body_start + cut) as u64;
        tail.end = prior_end.max(records_end(&dec, gap));
    }
    let mut recovered = Vec::new();
    if framed {
        let from = if tail.end == 0 {
            format::DATA_HEADER_LEN as u64
        } else {
            tail.end
        };
        // The scan reads on past the size fstat gave while the log holds whole frames (that
        // size can lag, see above), so the writes read here and the writes `plfs fsck --repair`
        // later indexes from the same log are the same ones.
        // (A framed log's data log was opened above.)
        if let Some(data) = data.as_ref() {
            tail.end = scan_frames(data, from, data_len, tail.flags.unwrap_or(0), &mut recovered)?;
        }
        data_len = data_len.max(tail.end);
    }
    Ok(LogRead {
        consumed,
        dec,
        data_len,
        tail,
        recovered,
    })
}

/// The data log `name` of index log `f` whose records end at `end`: its size, and a descriptor
/// where its bytes are needed (`framed`: frames to scan; or records past that size, which may
/// lag). The size comes from a look-up by name: the reads that follow open only the data logs
/// they read, once. Anything but a plain file takes the open, which says what is wrong with it.
/// `None`: missing with no record pointing into it.
fn data_log(
    dir: &Dir,
    f: &FoundLog,
    name: &std::ffi::OsStr,
    end: u64,
    framed: bool,
) -> Result<Option<(Option<File>, u64)>> {
    let missing = || {
        Error::corrupt(
            dir.sub(name),
            format!("missing, but its index log {} has records", f.path.display()),
        )
    };
    // A framed log (a writer still writing, or killed) is scanned, so opened anyway: no look-up.
    if !framed {
        match dir.stat_opt(name)? {
            Some(st) if crate::sys::is_file(&st) && end <= st.st_size as u64 => {
                return Ok(Some((None, st.st_size as u64)))
            }
            None if end == 0 => return Ok(None),
            None => return Err(missing()),
            // Not a plain file, or records past a size that may lag: the open below.
            Some(_) => {}
        }
    }
    match no_link(dir.open_file_sized(name, Access::Read), dir, name) {
        Ok((file, len)) => Ok(Some((Some(file), len))),
        Err(e) if crate::sys::is_missing(&e) && end == 0 => Ok(None),
        Err(e) if crate::sys::is_missing(&e) => Err(missing()),
        Err(e) => Err(e),
    }
}

/// Where the records of `dec` end in their data log (0: none).
fn records_end(dec: &format::DecodedRecords, gap: u64) -> u64 {
    dec.records
        .iter()
        .map(|r| r.physical_off.saturating_add(r.length))
        .chain(dec.patterns.iter().map(|p| p.physical_end(gap)))
        .max()
        .unwrap_or(0)
}

/// Bytes of `body` (whose first `valid` bytes are whole records) before the first record whose
/// data ends past `data_len`.
fn visible_prefix(body: &[u8], valid: usize, gap: u64, data_len: u64) -> usize {
    let mut pos = 0;
    while pos + 4 <= valid {
        let total = format::REC_FRAME_OVERHEAD + u16::from_le_bytes([body[pos + 2], body[pos + 3]]) as usize;
        let one = format::decode_records(&body[pos..(pos + total).min(valid)]);
        if records_end(&one, gap) > data_len {
            break;
        }
        pos += total;
    }
    pos.min(valid)
}

/// Reads the frames of a framed data log from offset `from` (where a frame starts), appending a
/// record for each whole one; returns where the first frame not read starts. The first frame
/// that is cut short by the end of the log, or is not intact, ends the scan: it is a write still
/// in progress, or one its writer never finished (its call did not return).
///
/// `known` is the log's size as the caller learned it (fstat): frames past it are read too, as
/// long as the log holds them. A size can lag behind the bytes a read returns (a network file
/// system's cached attributes), and a reader and `plfs fsck --repair` that trusted two sizes
/// taken at different moments could disagree on a dead writer's last writes (docs/design.md,
/// "Crash semantics"). The kernel returns only bytes that were copied into the file, so a read
/// that returns a frame's last byte says that its write landed, as a size that covers it does.
pub(crate) fn scan_frames(
    data: &File,
    from: u64,
    known: u64,
    flags: u32,
    out: &mut Vec<format::WriteRecord>,
) -> Result<u64> {
    const WINDOW: u64 = 64 << 10;
    const FL: u64 = format::FRAME_LEN as u64;
    let crc = flags & format::LOG_FLAG_DATA_CRC != 0;
    let mut known = known;
    let mut pos = from;
    let mut buf = Vec::new();
    // After a frame larger than a window, the next read is one page: enough for the next
    // frame's header (and a few small frames), not a window of data nobody needs.
    let mut window = WINDOW;
    'window: loop {
        buf.resize(window as usize, 0);
        window = WINDOW;
        let got = data.pread_full(&mut buf, pos)? as u64;
        if got < FL {
            return Ok(pos);
        }
        known = known.max(pos + got);
        let at_end = got < buf.len() as u64; // the read found the end of the log
        let mut at = 0u64;
        loop {
            if at + FL > got {
                if at_end {
                    return Ok(pos + at);
                }
                pos += at; // the next frame starts in the next window
                continue 'window;
            }
            let Some(fr) = format::Frame::decode(&buf[at as usize..got as usize]) else {
                return Ok(pos + at);
            };
            let data_at = pos + at + FL;
            let next = data_at + u64::from(fr.length);
            if next > known && !holds_byte(data, next - 1)? {
                return Ok(pos + at);
            }
            known = known.max(next);
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

/// Whether `data` holds a byte at offset `off` (a one-byte read returns it).
pub(crate) fn holds_byte(data: &File, off: u64) -> Result<bool> {
    let mut b = [0u8; 1];
    Ok(data.pread_full(&mut b, off)? == 1)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::Create;

    /// A data log with `writes` (logical offset, length) framed one after another from offset 64;
    /// returns the log and where each write's data starts.
    fn framed(tag: &str, writes: &[(u64, usize)]) -> (File, Vec<u8>, Vec<u64>) {
        let dir = std::env::temp_dir().join(format!("plfs-frames-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let d = Dir::open_root(&dir).unwrap();
        let f = d.create_file("data", 0o600, Create::Excl).unwrap();
        let mut bytes = vec![0u8; format::DATA_HEADER_LEN];
        let mut at = Vec::new();
        for (i, &(off, len)) in writes.iter().enumerate() {
            let fr = format::Frame {
                logical_off: off,
                length: len as u32,
                ts: 100 + i as u64,
                data_crc: 0,
            };
            bytes.extend_from_slice(&fr.encode());
            at.push(bytes.len() as u64);
            bytes.extend((0..len).map(|j| (i + j) as u8));
        }
        f.pwrite_all(&bytes, 0).unwrap();
        (f, bytes, at)
    }

    fn scan(f: &File, from: u64, len: u64) -> (u64, Vec<format::WriteRecord>) {
        let mut out = Vec::new();
        let end = scan_frames(f, from, len, format::LOG_FLAG_FRAMED, &mut out).unwrap();
        (end, out)
    }

    /// Small and large frames, frames across the 64 KiB window and a frame whose data runs
    /// past several windows are all read, in order, with their data's offsets.
    #[test]
    fn every_whole_frame_is_read_across_windows() {
        let writes: Vec<(u64, usize)> = (0..300u64)
            .map(|i| match i % 7 {
                0 => (i * 10, 1),
                3 => (i * 1_000_000, 200_000),
                _ => (i * 5000, 4000 + i as usize),
            })
            .collect();
        let (f, bytes, at) = framed("windows", &writes);
        let (end, recs) = scan(&f, 64, bytes.len() as u64);
        assert_eq!(end, bytes.len() as u64);
        assert_eq!(recs.len(), writes.len());
        for (i, r) in recs.iter().enumerate() {
            assert_eq!(
                (r.logical_off, r.length, r.physical_off, r.ts),
                (writes[i].0, writes[i].1 as u64, at[i], 100 + i as u64),
                "write {i}"
            );
        }
        // From the middle: the scan starts at a frame boundary it is given.
        let (end, recs) = scan(&f, at[150] - format::FRAME_LEN as u64, bytes.len() as u64);
        assert_eq!((end, recs.len()), (bytes.len() as u64, 150));
    }

    /// A size that lags behind the log (a network file system's cached attributes) hides no
    /// write: every whole frame past it is read, the large ones (checked by their last byte)
    /// included, and the scan says where the log's writes end.
    #[test]
    fn frames_past_a_size_that_lags_are_read() {
        let writes: Vec<(u64, usize)> = (0..40u64)
            .map(|i| (i * 300_000, if i % 5 == 0 { 150_000 } else { 100 + i as usize }))
            .collect();
        let (f, bytes, at) = framed("lag", &writes);
        for known in [0, 64, at[3], at[10] + 50, bytes.len() as u64 - 1] {
            let (end, recs) = scan(&f, 64, known);
            assert_eq!(
                (end, recs.len()),
                (bytes.len() as u64, writes.len()),
                "size said {known}"
            );
            assert_eq!(recs[20].physical_off, at[20]);
        }
    }

    /// The scan stops at the first frame cut short by the end of the log (a write in progress,
    /// or one killed part-way) and at the first frame that is not intact, and says where.
    #[test]
    fn a_cut_or_damaged_frame_ends_the_scan() {
        let writes = [(0u64, 100usize), (100, 70_000), (70_100, 10), (70_110, 5)];
        let (f, bytes, at) = framed("cut", &writes);
        let frame_of = |i: usize| at[i] - format::FRAME_LEN as u64;
        // Cut inside write 1's data, inside write 2's frame, right after write 2; each told
        // the log's size, and told a size that lags behind it (the frames past it are read).
        for (len, want_end, want_n) in [
            (at[1] + 10, frame_of(1), 1),
            (frame_of(2) + 5, frame_of(2), 2),
            (at[2] + 10, frame_of(3), 3),
        ] {
            let (cut, _, _) = framed(&format!("cut{len}"), &writes);
            cut.truncate(len).unwrap();
            for known in [len, 64, frame_of(1) + 1] {
                let (end, recs) = scan(&cut, 64, known);
                assert_eq!(
                    (end, recs.len()),
                    (want_end, want_n),
                    "log cut at {len}, size said {known}"
                );
            }
        }
        // A flipped bit in write 2's frame: writes 0 and 1 only.
        let mut b = [0u8; 1];
        f.pread_full(&mut b, frame_of(2) + 9).unwrap();
        f.pwrite_all(&[b[0] ^ 4], frame_of(2) + 9).unwrap();
        let (end, recs) = scan(&f, 64, bytes.len() as u64);
        assert_eq!((end, recs.len()), (frame_of(2), 2));
        // Zeros where a frame should be (a file extended but never written): nothing.
        f.truncate(bytes.len() as u64 + 4096).unwrap();
        let (end, recs) = scan(&f, bytes.len() as u64, bytes.len() as u64 + 4096);
        assert_eq!((end, recs.len()), (bytes.len() as u64, 0));
    }
}
