//! Writing a compaction's new log pair: the live extents of a merged map copied into one data log
//! in logical order, and the index log describing them (both under their temporary names,
//! fsynced; [`super::compact`] publishes them).
//!
//! Two ways to describe the copied extents:
//!
//! - **exact** (another process may still add records older than some extent: a writer open
//!   elsewhere, a log the compaction does not retire): every extent keeps its own timestamp; a
//!   compressed pattern stays one pattern record with its per-element timestamps;
//! - **coalesced** (nothing left can be ordered against the extents but later events): extents
//!   that follow each other in the file are one run in the new data log and one WRITE record,
//!   with the newest timestamp of the run. Every record of the file that is not retired is newer
//!   than all of them, so the order is the same; a file that took a million records can take one.

use crate::clock;
use crate::container::{self, Container};
use crate::error::{Error, Result};
use crate::extent::{ExtentMap, Pattern};
use crate::format::compact as cf;
use crate::format::{self, LogHeader, PatternRecord, WriteRecord};
use crate::sys::{Access, Create, Dir, File};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Bytes copied per read and per write.
const COPY_BUF: usize = 4 << 20;

/// Copies byte ranges of source data logs to the end of the new data log, reading contiguous
/// ranges of one source in one go and writing in `COPY_BUF` pieces.
struct Copier<'a> {
    srcs: &'a [(&'a Dir, &'a str)],
    open: Vec<Option<File>>,
    dst: &'a File,
    buf: Vec<u8>,
    /// Offset in the new data log where `buf[0]` goes.
    buf_at: u64,
    /// A read not made yet: (source, physical offset, length).
    want: Option<(u32, u64, u64)>,
    /// With data checksums: the crc32c of the bytes read since the last [`Copier::take_sum`]
    /// (reads are then never merged across pushes, so the sums follow the records' bounds).
    crc: bool,
    sum: u32,
}

impl Copier<'_> {
    /// Schedules `len` bytes of source `chunk` at `phys`.
    fn push(&mut self, chunk: u32, phys: u64, len: u64) -> Result<()> {
        if let Some((c, p, l)) = self.want.as_mut().filter(|_| !self.crc) {
            if *c == chunk && *p + *l == phys && *l + len <= COPY_BUF as u64 {
                *l += len;
                return Ok(());
            }
        }
        self.read_pending()?;
        self.want = Some((chunk, phys, len));
        Ok(())
    }

    fn read_pending(&mut self) -> Result<()> {
        let Some((chunk, phys, len)) = self.want.take() else {
            return Ok(());
        };
        let i = chunk as usize;
        if self.open[i].is_none() {
            let (d, n) = self.srcs[i];
            self.open[i] = Some(d.open_file(n, Access::Read)?);
        }
        let f = self.open[i].as_ref().expect("opened");
        let mut done = 0u64;
        while done < len {
            if self.buf.len() >= COPY_BUF {
                self.dst.pwrite_all(&self.buf, self.buf_at)?;
                self.buf_at += self.buf.len() as u64;
                self.buf.clear();
            }
            let k = (len - done).min((COPY_BUF - self.buf.len()) as u64) as usize;
            let start = self.buf.len();
            self.buf.resize(start + k, 0);
            let n = f.pread_full(&mut self.buf[start..], phys + done)?;
            if n < k {
                return Err(Error::corrupt(f.path(), "data log ends before the extents it holds"));
            }
            if self.crc {
                self.sum = crc32c::crc32c_append(self.sum, &self.buf[start..]);
            }
            done += k as u64;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.dst.pwrite_all(&self.buf, self.buf_at)?;
        self.buf_at += self.buf.len() as u64;
        self.buf.clear();
        Ok(())
    }

    /// The crc32c of the bytes pushed since the last call (0 without data checksums).
    fn take_sum(&mut self) -> Result<u32> {
        self.read_pending()?;
        Ok(std::mem::take(&mut self.sum))
    }
}

/// One extent in logical order: (logical offset, length, source, physical offset, timestamp).
type Ext = (u64, u64, u32, u64, u64);

/// The map's extents in logical order, pattern elements included, without expanding the map.
fn extents(map: &ExtentMap) -> impl Iterator<Item = Ext> + '_ {
    let pats: Vec<_> = map.patterns().collect();
    // Next element of each pattern, smallest logical offset first.
    let mut heap: BinaryHeap<Reverse<(u64, usize, u64)>> =
        pats.iter().enumerate().map(|(k, p)| Reverse((p.start, k, 0))).collect();
    let mut pieces = map.raw_pieces().peekable();
    std::iter::from_fn(move || {
        let next_pat = heap.peek().map(|Reverse((o, _, _))| *o);
        let take_piece = match (pieces.peek(), next_pat) {
            (None, None) => return None,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some((o, _)), Some(po)) => *o <= po,
        };
        if take_piece {
            let (o, p) = pieces.next().expect("peeked");
            return Some((o, p.len, p.chunk, p.phys, p.key.ts));
        }
        let Reverse((o, k, i)) = heap.pop().expect("peeked");
        let p = pats[k];
        if i + 1 < p.count {
            heap.push(Reverse((o + p.stride, k, i + 1)));
        }
        let ts =
            p.ts.as_ref()
                .and_then(|t| t.get(i as usize).copied())
                .unwrap_or(p.ts_last);
        Some((o, p.len, p.chunk, p.phys + i * p.len, ts))
    })
}

/// The new log pair while it is written: the copy into the data log, the index log's bytes, and
/// how far the copy got.
struct NewLogs<'a> {
    cp: Copier<'a>,
    /// The index log: its header, then the records so far.
    ix: Vec<u8>,
    /// Offset in the new data log of the next byte copied.
    cursor: u64,
    /// End of the highest extent copied.
    eof: u64,
    /// Bytes copied.
    copied: u64,
    /// Live bytes of the map (all there is to copy).
    total: u64,
    /// Extents copied (the progress is reported every 4096).
    tick: u64,
    progress: Option<&'a (dyn Fn(u64, u64) + Sync)>,
}

impl NewLogs<'_> {
    fn report(&mut self) {
        self.tick += 1;
        if let Some(p) = self
            .progress
            .filter(|_| self.tick % 4096 == 0 || self.copied == self.total)
        {
            p(self.copied, self.total);
        }
    }

    /// The coalesced form (see the module documentation).
    fn coalesced(&mut self, map: &ExtentMap) -> Result<()> {
        // One record per run of extents that follow each other in the file.
        let mut run: Option<WriteRecord> = None;
        let mut recs: Vec<WriteRecord> = Vec::new();
        for (o, len, chunk, phys, ts) in extents(map) {
            match run.as_mut() {
                Some(r) if r.logical_off + r.length == o => {
                    r.length += len;
                    r.ts = r.ts.max(ts);
                }
                _ => {
                    if let Some(mut r) = run.take() {
                        r.data_crc = self.cp.take_sum()?;
                        recs.push(r);
                    }
                    run = Some(WriteRecord {
                        logical_off: o,
                        length: len,
                        physical_off: self.cursor,
                        ts,
                        data_crc: 0,
                    });
                }
            }
            self.cp.push(chunk, phys, len)?;
            self.cursor += len;
            self.eof = self.eof.max(o + len);
            self.copied += len;
            self.report();
        }
        if let Some(mut r) = run.take() {
            r.data_crc = self.cp.take_sum()?;
            recs.push(r);
        }
        recs.iter().for_each(|r| r.encode_into(&mut self.ix));
        Ok(())
    }

    /// The exact form (see the module documentation).
    fn exact(&mut self, map: &ExtentMap) -> Result<()> {
        // Exact: pieces keep their timestamps; patterns stay patterns.
        let mut run: Vec<WriteRecord> = Vec::new();
        let mut pieces = map.raw_pieces().peekable();
        let mut patterns = map.patterns().peekable();
        loop {
            let take_piece = match (pieces.peek(), patterns.peek()) {
                (None, None) => break,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (Some((o, _)), Some(q)) => *o <= q.start,
            };
            if take_piece {
                let (o, p) = pieces.next().expect("peeked");
                self.cp.push(p.chunk, p.phys, p.len)?;
                let data_crc = self.cp.take_sum()?;
                run.push(WriteRecord {
                    logical_off: o,
                    length: p.len,
                    physical_off: self.cursor,
                    ts: p.key.ts,
                    data_crc,
                });
                self.cursor += p.len;
                self.eof = self.eof.max(o + p.len);
                self.copied += p.len;
            } else {
                let q = patterns.next().expect("peeked");
                self.exact_pattern(q, &mut run)?;
            }
            self.report();
        }
        format::encode_records(&run, 0, &mut self.ix);
        Ok(())
    }

    /// Copies pattern `q` in the exact form: one record per element with data checksums (their
    /// sums are per record), else one pattern record, after the records of `run` so far.
    fn exact_pattern(&mut self, q: &Pattern, run: &mut Vec<WriteRecord>) -> Result<()> {
        let ts =
            q.ts.as_ref()
                .ok_or_else(|| Error::InvalidArgument("compaction: a pattern without timestamps".into()))?;
        if self.cp.crc {
            for i in 0..q.count {
                self.cp.push(q.chunk, q.phys + i * q.pstride, q.len)?;
                let data_crc = self.cp.take_sum()?;
                run.push(WriteRecord {
                    logical_off: q.start + i * q.stride,
                    length: q.len,
                    physical_off: self.cursor,
                    ts: ts[i as usize],
                    data_crc,
                });
                self.cursor += q.len;
            }
        } else {
            if q.pstride == q.len {
                self.cp.push(q.chunk, q.phys, q.count * q.len)?;
            } else {
                // A framed log's elements have their frames between them; the new log
                // holds them back to back.
                for i in 0..q.count {
                    self.cp.push(q.chunk, q.phys + i * q.pstride, q.len)?;
                }
            }
            format::encode_records(run, 0, &mut self.ix);
            run.clear();
            PatternRecord {
                logical_start: q.start,
                length: q.len,
                stride: q.stride,
                physical_start: self.cursor,
                ts: ts.to_vec(),
            }
            .encode_into(&mut self.ix);
            self.cursor += q.count * q.len;
        }
        self.eof = self.eof.max(q.end());
        self.copied += q.count * q.len;
        Ok(())
    }
}

/// Copies the live extents of `map` (chunk `i` = source data log `srcs[i]`) into a new data log
/// and writes its index log, under their temporary names in `dir`, both fsynced. `coalesce`:
/// see the module documentation. Returns (end of the highest extent, bytes copied).
#[allow(clippy::too_many_arguments)]
pub(super) fn write_logs(
    c: &Container,
    dir: &Dir,
    wc: u64,
    open_ns: u64,
    map: &ExtentMap,
    srcs: &[(&Dir, &str)],
    coalesce: bool,
    progress: Option<&(dyn Fn(u64, u64) + Sync)>,
) -> Result<(u64, u64)> {
    let crc = c.mount.global.data_checksums;
    let mode = c.marker_stat().map(|s| container::log_mode(s.st_mode)).unwrap_or(0o600);
    let header = |magic| LogHeader {
        magic,
        writer_id: wc,
        open_ns,
        pid: clock::pid(),
        flags: if crc { format::LOG_FLAG_DATA_CRC } else { 0 },
    };
    let data = dir.create_file(cf::tmp_data_name(wc), mode, Create::Excl)?;
    data.pwrite_all(&header(format::DATA_MAGIC).encode(), 0)?;
    let total = map.live_bytes();
    let mut out = NewLogs {
        cp: Copier {
            srcs,
            open: (0..srcs.len()).map(|_| None).collect(),
            dst: &data,
            buf: Vec::with_capacity(COPY_BUF.min(total as usize + 1)),
            buf_at: format::DATA_HEADER_LEN as u64,
            want: None,
            crc,
            sum: 0,
        },
        ix: header(format::INDEX_MAGIC).encode().to_vec(),
        cursor: format::DATA_HEADER_LEN as u64,
        eof: 0,
        copied: 0,
        total,
        tick: 0,
        progress,
    };
    if coalesce {
        out.coalesced(map)?;
    } else {
        out.exact(map)?;
    }
    out.cp.read_pending()?;
    out.cp.flush()?;
    data.fsync()?;
    let index = dir.create_file(cf::tmp_index_name(wc), mode, Create::Excl)?;
    index.pwrite_all(&out.ix, 0)?;
    index.fsync()?;
    Ok((out.eof, out.copied))
}
