//! fsck of one writer's index log: decoding it whole, and repairing a torn or corrupt tail or a
//! bad header (never past a valid record).

use super::report::{repair_step, Kind, Options, Repair, Report};
use super::writer::{LogFile, WriterState};
use crate::container::Container;
use crate::error::Result;
use crate::format::{self, LogHeader, WriteRecord};
use crate::sys::Access;

/// A decoded index log.
#[derive(Debug)]
pub(super) struct IndexScan {
    /// The header, or why it is unusable (`None` when the file is shorter than a header).
    pub header: Option<std::result::Result<LogHeader, String>>,
    pub records: Vec<WriteRecord>,
    /// File offset just past the last valid record.
    pub valid_end: u64,
    pub tail_error: Option<String>,
    /// For a bad (not torn) tail: whether a valid record follows the bad one.
    pub resyncs: bool,
    /// Bytes read: the log's length (its stat's size can lag behind it on a network file system).
    pub len: u64,
}

/// Reads and decodes a whole index log.
pub(super) fn scan_index(log: &LogFile) -> Result<IndexScan> {
    let path = log.path.as_path();
    let bytes = log.dir.open_file(&log.name, Access::Read)?.read_from(0)?;
    let hl = format::INDEX_HEADER_LEN;
    if bytes.len() < hl {
        return Ok(IndexScan {
            header: None,
            records: Vec::new(),
            valid_end: 0,
            tail_error: None,
            resyncs: false,
            len: bytes.len() as u64,
        });
    }
    let header = LogHeader::decode(path, &bytes, format::INDEX_MAGIC).map_err(|e| e.to_string());
    let mut dec = format::decode_records(&bytes[hl..]);
    let gap = header.as_ref().map_or(0, |h| format::frame_gap(h.flags));
    // A pattern record stands for a run of writes: fsck reasons about the writes themselves.
    for p in std::mem::take(&mut dec.patterns) {
        for (i, ts) in p.ts.iter().enumerate() {
            let i = i as u64;
            dec.records.push(WriteRecord {
                logical_off: p.logical_start + i * p.stride,
                length: p.length,
                physical_off: p.physical_start + i * p.pstride(gap),
                ts: *ts,
                data_crc: 0,
            });
        }
    }
    let resyncs = match &dec.tail_error {
        Some(e) if !e.starts_with("torn") => {
            let rest = &bytes[hl + dec.valid_len..];
            (1..rest.len()).any(|i| {
                let d = format::decode_records(&rest[i..]);
                !d.records.is_empty() || !d.patterns.is_empty()
            })
        }
        _ => false,
    };
    Ok(IndexScan {
        header: Some(header),
        records: dec.records,
        valid_end: (hl + dec.valid_len) as u64,
        tail_error: dec.tail_error,
        resyncs,
        len: bytes.len() as u64,
    })
}

#[allow(clippy::too_many_arguments)]
pub(super) fn fix_index_log(
    c: &Container,
    id: u64,
    w: &WriterState,
    ix: &LogFile,
    s: &mut IndexScan,
    data_header: Option<LogHeader>,
    may_touch: bool,
    opts: &Options,
    rep: &mut Report,
) -> bool {
    let _ = c;
    let guard = |opts: &Options, what: &str, f: &mut dyn FnMut() -> Result<()>| {
        if may_touch {
            repair_step(opts, what, f)
        } else {
            Repair::Manual("its writer may still be running (use --force-stale if it is not)".into())
        }
    };
    match &s.header {
        None => {
            let data_empty = w
                .data
                .as_ref()
                .is_none_or(|d| d.empty_past(format::DATA_HEADER_LEN as u64));
            let mut logs = vec![ix];
            logs.extend(w.data.iter());
            let h = LogHeader {
                magic: format::INDEX_MAGIC,
                writer_id: id,
                open_ns: data_header.map_or(0, |h| h.open_ns),
                pid: w.pid,
                flags: data_header.map_or(0, |h| h.flags),
            };
            let repair = if data_empty {
                guard(opts, "removed the logs (they hold no data)", &mut || {
                    logs.iter().try_for_each(|l| l.dir.unlink_opt(&l.name).map(drop))
                })
            } else {
                guard(opts, "wrote a valid header (the log has no records)", &mut || {
                    rewrite_index(ix, Some(&h.encode()), format::INDEX_HEADER_LEN as u64)
                })
            };
            let done = matches!(repair, Repair::Done(_));
            let msg = format!(
                "index log of writer {id:016x} is {} bytes, shorter than its header",
                s.len
            );
            rep.push(Kind::EmptyLogs, true, &ix.path, msg, repair);
            if done && !data_empty {
                s.header = Some(Ok(h));
            }
            return done && data_empty;
        }
        Some(Err(e)) => {
            let usable = data_header.filter(|h| h.writer_id == id);
            let repair = match usable {
                Some(dh) if !s.records.is_empty() => {
                    let h = LogHeader {
                        magic: format::INDEX_MAGIC,
                        ..dh
                    };
                    guard(opts, "rewrote the header from the data log's header", &mut || {
                        rewrite_index(ix, Some(&h.encode()), s.len)
                    })
                }
                _ => Repair::Manual("no valid data log header to rebuild it from".into()),
            };
            let msg = format!("{e}; readers skip this log ({} records behind it)", s.records.len());
            rep.push(Kind::BadIndexHeader, true, &ix.path, msg, repair);
            if !matches!(rep.findings.last().map(|f| &f.repair), Some(Repair::Done(_))) {
                return false;
            }
            s.header = Some(Ok(LogHeader {
                magic: format::INDEX_MAGIC,
                ..usable.expect("repaired from it")
            }));
        }
        Some(Ok(_)) => {}
    }
    let Some(err) = s.tail_error.clone() else { return false };
    let cut = s.valid_end;
    let (kind, repair) = if err.starts_with("torn") {
        let r = guard(opts, &format!("truncated the log to {cut} bytes"), &mut || {
            rewrite_index(ix, None, cut)
        });
        (Kind::TornIndexTail, r)
    } else if !s.resyncs {
        let r = guard(opts, &format!("truncated the log to {cut} bytes"), &mut || {
            rewrite_index(ix, None, cut)
        });
        (Kind::CorruptIndexTail, r)
    } else {
        (
            Kind::CorruptIndexMiddle,
            Repair::Manual("valid records follow the bad one; truncating would lose them".into()),
        )
    };
    let msg = format!("{err}: {} bytes after the last valid record", s.len.saturating_sub(cut));
    rep.push(kind, true, &ix.path, msg, repair);
    if matches!(rep.findings.last().map(|f| &f.repair), Some(Repair::Done(_))) {
        s.tail_error = None;
    }
    false
}

/// Appends `recs` (writes read from the data log's frames) to an index log whose valid records
/// end at `at`, replacing anything after that, and makes them durable.
pub(super) fn append_records(ix: &LogFile, at: u64, recs: &[WriteRecord]) -> Result<()> {
    let mut b = Vec::with_capacity(recs.len() * format::WRITE_REC_LEN);
    format::encode_records(recs, format::FRAME_LEN as u64, &mut b);
    let f = ix.dir.open_file(&ix.name, Access::Write)?;
    f.pwrite_all(&b, at)?;
    f.truncate(at + b.len() as u64)?;
    f.fsync()
}

/// Writes `header` at offset 0 (if given) and truncates the index log to `len` bytes.
fn rewrite_index(ix: &LogFile, header: Option<&[u8]>, len: u64) -> Result<()> {
    let f = ix.dir.open_file(&ix.name, Access::Write)?;
    if let Some(h) = header {
        f.pwrite_all(h, 0)?;
    }
    f.truncate(len)?;
    f.fsync()
}
