//! The I/O characterisation behind `plfs stats`, from a file's write records alone (no I/O):
//! per writer its bytes, writes, times and access sizes; for the file its access pattern, record
//! size, overlap, span and bandwidth.
//!
//! The pattern of one writer, over its writes in the order it made them:
//! - **sequential**: at least [`REGULAR`] of its writes start where its previous one ended
//!   (a writer with one write is sequential);
//! - **strided**: at least [`REGULAR`] of its writes start the same distance (the stride, larger
//!   than zero) after its previous one;
//! - **random**: neither.
//!
//! The pattern of the file: **sequential** (one writer, sequential), **segmented** (several
//! writers, each sequential: each writes its own segment), **strided** (every writer with more
//! than one write strided, all with the same stride), **random** (anything else), **empty** (no
//! writes).

use plfs_core::tools::{Write, WriterWrites};
use std::collections::HashMap;

/// The share of a writer's steps that must follow one rule for its pattern to be that rule.
pub const REGULAR: f64 = 0.9;

/// An access pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// No writes.
    Empty,
    /// Each write where the previous one ended.
    Sequential,
    /// Several writers, each sequential in its own segment.
    Segmented,
    /// Writes a constant stride apart.
    Strided,
    /// None of the above.
    Random,
}

impl Kind {
    /// The name used in the output.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Empty => "empty",
            Kind::Sequential => "sequential",
            Kind::Segmented => "segmented",
            Kind::Strided => "strided",
            Kind::Random => "random",
        }
    }
}

/// Access sizes in power-of-two buckets: `(k, count)` counts writes of `2^k` up to
/// `2^(k+1) - 1` bytes (`k` = -1: zero-byte writes), by increasing `k`.
pub type Histogram = Vec<(i32, u64)>;

/// The bucket of a write size.
pub fn bucket(len: u64) -> i32 {
    if len == 0 {
        -1
    } else {
        63 - len.leading_zeros() as i32
    }
}

fn histogram<'a>(writes: impl Iterator<Item = &'a Write>) -> Histogram {
    let mut h: HashMap<i32, u64> = HashMap::new();
    for w in writes {
        *h.entry(bucket(w.length)).or_default() += 1;
    }
    let mut v: Histogram = h.into_iter().collect();
    v.sort();
    v
}

/// The bounds of bucket `k`: first size in it, first size past it.
pub fn bucket_range(k: i32) -> (u64, u64) {
    if k < 0 {
        (0, 1)
    } else {
        (1u64 << k, 1u64.checked_shl(k as u32 + 1).unwrap_or(u64::MAX))
    }
}

/// One writer's characterisation.
#[derive(Debug, Clone)]
pub struct WriterStats {
    /// Writer id.
    pub writer_id: u64,
    /// Writer pid or rank.
    pub pid: u32,
    /// Writer host.
    pub host: String,
    /// Bytes written.
    pub bytes: u64,
    /// Writes made.
    pub writes: u64,
    /// Timestamp of its first and of its last write (ns since the epoch).
    pub first_ns: Option<u64>,
    /// See `first_ns`.
    pub last_ns: Option<u64>,
    /// When it opened and closed the file (from its close dropping).
    pub open_ns: Option<u64>,
    /// See `open_ns`.
    pub close_ns: Option<u64>,
    /// End of its last write, when known.
    pub end_ns: Option<u64>,
    /// Access sizes.
    pub sizes: Histogram,
    /// Its pattern.
    pub pattern: Kind,
    /// Its stride, when strided.
    pub stride: Option<u64>,
}

/// A file's characterisation.
#[derive(Debug, Clone)]
pub struct FileStats {
    /// Per writer, sorted by host, pid and writer id.
    pub writers: Vec<WriterStats>,
    /// Bytes written (overwritten ones counted each time).
    pub bytes: u64,
    /// Writes made.
    pub writes: u64,
    /// Bytes written more than once: `bytes` minus the bytes of the file some write covered.
    pub overlap_bytes: u64,
    /// The most common write size, when at least half of the writes have it.
    pub record_size: Option<u64>,
    /// The file's pattern.
    pub pattern: Kind,
    /// The stride, when strided.
    pub stride: Option<u64>,
    /// The first write's timestamp.
    pub first_ns: Option<u64>,
    /// The end of the last write: its writer's close dropping says when it returned; without
    /// one, the last write's timestamp.
    pub end_ns: Option<u64>,
    /// Access sizes of every write.
    pub sizes: Histogram,
}

impl FileStats {
    /// Seconds from the first write's start to the last write's end (`None` if zero).
    pub fn span_s(&self) -> Option<f64> {
        match (self.first_ns, self.end_ns) {
            (Some(a), Some(b)) if b > a => Some((b - a) as f64 / 1e9),
            _ => None,
        }
    }

    /// Bytes written per second of the span, in MiB/s.
    pub fn bandwidth_mibs(&self) -> Option<f64> {
        self.span_s().map(|s| self.bytes as f64 / (1u64 << 20) as f64 / s)
    }
}

/// The pattern of one writer's writes (in the order made) and its stride.
fn writer_pattern(ws: &[Write]) -> (Kind, Option<u64>) {
    if ws.is_empty() {
        return (Kind::Empty, None);
    }
    if ws.len() == 1 {
        return (Kind::Sequential, None);
    }
    let steps = (ws.len() - 1) as f64;
    let consecutive = ws
        .windows(2)
        .filter(|p| p[1].logical == p[0].logical.saturating_add(p[0].length))
        .count();
    if consecutive as f64 >= REGULAR * steps {
        return (Kind::Sequential, None);
    }
    let mut deltas: HashMap<u64, usize> = HashMap::new();
    for p in ws.windows(2) {
        if p[1].logical > p[0].logical {
            *deltas.entry(p[1].logical - p[0].logical).or_default() += 1;
        }
    }
    // The most common forward step (the smallest of equally common ones).
    if let Some((&stride, &n)) = deltas.iter().max_by_key(|&(&d, &n)| (n, std::cmp::Reverse(d))) {
        if n as f64 >= REGULAR * steps {
            return (Kind::Strided, Some(stride));
        }
    }
    (Kind::Random, None)
}

/// Bytes covered by at least one write.
fn covered(all: &mut [(u64, u64)]) -> u64 {
    all.sort_unstable();
    let (mut total, mut cur_end) = (0u64, 0u64);
    let mut started = false;
    for &(start, end) in all.iter() {
        if !started || start > cur_end {
            started = true;
            total += end - start;
            cur_end = end;
        } else if end > cur_end {
            total += end - cur_end;
            cur_end = end;
        }
    }
    total
}

/// Characterises a file from its writers' writes.
pub fn analyze(writers: &[WriterWrites]) -> FileStats {
    let mut out = Vec::with_capacity(writers.len());
    for w in writers {
        let (pattern, stride) = writer_pattern(&w.writes);
        out.push(WriterStats {
            writer_id: w.writer_id,
            pid: w.pid,
            host: w.host.clone(),
            bytes: w.writes.iter().map(|x| x.length).sum(),
            writes: w.writes.len() as u64,
            first_ns: w.writes.iter().map(|x| x.ts).min(),
            last_ns: w.writes.iter().map(|x| x.ts).max(),
            open_ns: w.open_ns,
            close_ns: w.close_ns,
            end_ns: match (w.last_end_ns, w.writes.iter().map(|x| x.ts).max()) {
                (Some(e), Some(l)) => Some(e.max(l)),
                (_, l) => l,
            },
            sizes: histogram(w.writes.iter()),
            pattern,
            stride,
        });
    }
    let all = || writers.iter().flat_map(|w| w.writes.iter());
    let bytes: u64 = out.iter().map(|w| w.bytes).sum();
    let writes: u64 = out.iter().map(|w| w.writes).sum();
    let mut extents: Vec<(u64, u64)> = all().map(|w| (w.logical, w.logical.saturating_add(w.length))).collect();
    let overlap_bytes = bytes.saturating_sub(covered(&mut extents));
    let mut lens: HashMap<u64, u64> = HashMap::new();
    for w in all() {
        *lens.entry(w.length).or_default() += 1;
    }
    let record_size = lens
        .iter()
        .max_by_key(|&(&l, &n)| (n, std::cmp::Reverse(l)))
        .filter(|&(_, &n)| 2 * n >= writes)
        .map(|(&l, _)| l);
    let active: Vec<&WriterStats> = out.iter().filter(|w| w.writes > 0).collect();
    let multi: Vec<&&WriterStats> = active.iter().filter(|w| w.writes > 1).collect();
    let (pattern, stride) = if active.is_empty() {
        (Kind::Empty, None)
    } else if multi.iter().all(|w| w.pattern == Kind::Sequential) {
        if active.len() == 1 {
            (Kind::Sequential, None)
        } else {
            (Kind::Segmented, None)
        }
    } else if multi
        .iter()
        .all(|w| w.pattern == Kind::Strided && w.stride == multi[0].stride)
    {
        (Kind::Strided, multi[0].stride)
    } else {
        (Kind::Random, None)
    };
    FileStats {
        first_ns: out.iter().filter_map(|w| w.first_ns).min(),
        end_ns: out.iter().filter_map(|w| w.end_ns).max(),
        writers: out,
        bytes,
        writes,
        overlap_bytes,
        record_size,
        pattern,
        stride,
        sizes: histogram(all()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn writer(id: u64, writes: &[(u64, u64)]) -> WriterWrites {
        WriterWrites {
            writer_id: id,
            pid: id as u32,
            host: "h".into(),
            open_ns: None,
            close_ns: None,
            last_end_ns: None,
            writes: writes
                .iter()
                .enumerate()
                .map(|(i, &(logical, length))| Write {
                    logical,
                    length,
                    ts: 1000 * id + i as u64,
                })
                .collect(),
        }
    }

    #[test]
    fn strided_n1_is_recognised_with_its_stride_and_record() {
        let (n, rec) = (4u64, 47008u64);
        let ws: Vec<_> = (0..n)
            .map(|r| writer(r + 1, &(0..10).map(|i| ((i * n + r) * rec, rec)).collect::<Vec<_>>()))
            .collect();
        let s = analyze(&ws);
        assert_eq!(
            (s.pattern, s.stride, s.record_size),
            (Kind::Strided, Some(n * rec), Some(rec))
        );
        assert_eq!((s.bytes, s.writes, s.overlap_bytes), (40 * rec, 40, 0));
        assert_eq!(s.sizes, vec![(15, 40)]);
        assert_eq!(bucket_range(15), (32768, 65536));
        assert!(s.writers.iter().all(|w| w.bytes == 10 * rec && w.writes == 10));
    }

    #[test]
    fn segments_sequential_random_and_overlap() {
        let seg: Vec<_> = (0..3u64)
            .map(|r| writer(r + 1, &(0..5).map(|i| (r * 500 + i * 100, 100)).collect::<Vec<_>>()))
            .collect();
        assert_eq!(analyze(&seg).pattern, Kind::Segmented);
        let one = analyze(&seg[..1]);
        assert_eq!((one.pattern, one.record_size), (Kind::Sequential, Some(100)));
        let rnd = writer(1, &[(500, 10), (0, 10), (900, 10), (100, 10), (700, 10)]);
        assert_eq!(analyze(&[rnd]).pattern, Kind::Random);
        let over = writer(1, &[(0, 100), (50, 100), (0, 10)]);
        let s = analyze(&[over]);
        assert_eq!((s.bytes, s.overlap_bytes), (210, 60));
        assert_eq!(analyze(&[]).pattern, Kind::Empty);
        assert_eq!(bucket(0), -1);
        assert_eq!(bucket(1), 0);
        assert_eq!(bucket(u64::MAX), 63);
        assert_eq!(bucket_range(63).1, u64::MAX);
    }
}
