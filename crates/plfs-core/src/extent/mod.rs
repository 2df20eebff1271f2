//! The merged index: a map from logical byte ranges to (data log, physical offset).
//!
//! Writes and truncates may be inserted in **any order** and the result is the same as applying
//! them in timestamp order: each piece remembers the [`Key`] of the write it came from, an overlap
//! keeps the newer key, and each truncate clips older pieces beyond its size. That makes the merge
//! commutative, so index logs can be merged in parallel, incrementally, and in any order.
//!
//! Regular runs of writes (constant length, constant logical stride, contiguous in the data log)
//! are kept as one compressed [`Pattern`] each, answered by arithmetic without expansion, as long
//! as none of their elements overlaps anything else in the map. A pattern that would overlap is
//! expanded into exact pieces, which needs its per-element timestamps; [`ExtentMap::compact`]
//! drops those to bound memory, and an expansion that then lacks them marks the map
//! [`ExtentMap::is_stale`] so that the caller rebuilds it from the logs.
//!
//! Invariants: pieces never overlap each other and have `len > 0`; no element of a pattern
//! overlaps a piece or an element of another pattern; every piece or element older than the
//! newest truncate ends at or below that truncate's size. Hence `size = max(last_trunc.size, end
//! of the last piece, end of the last pattern)`.

mod run;

use smallvec::SmallVec;
use std::collections::BTreeMap;
use std::sync::Arc;

use run::Hint;
pub use run::{Cursor, Run};

/// The answer of [`ExtentMap::lookup`]: a read of one writer's bytes is one or two segments, kept
/// inline, so a read allocates nothing for it.
pub type Segments = SmallVec<[Segment; 4]>;

/// Ordering key of a write or truncate: timestamp first, then writer id (the documented
/// tie-break for equal timestamps from different processes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key {
    /// Timestamp from [`crate::clock::next_ts`].
    pub ts: u64,
    /// Writer id of the log the event came from.
    pub writer: u64,
}

/// A stretch of logical bytes served from one data log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    /// Length in bytes (> 0).
    pub len: u64,
    /// Index into the reader's chunk (data log) table.
    pub chunk: u32,
    /// Physical offset in the data log.
    pub phys: u64,
    /// The write this piece came from.
    pub key: Key,
}

/// A run of `count` writes by one writer: element `i` is `len` bytes at logical
/// `start + i*stride`, stored at `phys + i*pstride` in data log `chunk`, written at `ts[i]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    /// Logical offset of element 0.
    pub start: u64,
    /// Length of every element (> 0).
    pub len: u64,
    /// Logical distance between elements (>= len, so elements never overlap each other).
    pub stride: u64,
    /// Number of elements (> 0).
    pub count: u64,
    /// Data log.
    pub chunk: u32,
    /// Physical offset of element 0; element i is at `phys + i*pstride`.
    pub phys: u64,
    /// Physical distance between elements (>= len): `len` in an unframed data log, `len` plus
    /// the frame in a framed one (docs/format.md, section 3).
    pub pstride: u64,
    /// Writer id.
    pub writer: u64,
    /// Timestamp of element 0.
    pub ts_first: u64,
    /// Timestamp of the last element.
    pub ts_last: u64,
    /// Exact timestamp of every element, while known (see [`ExtentMap::compact`]).
    pub ts: Option<Arc<[u64]>>,
}

impl Pattern {
    /// One past the last byte.
    pub fn end(&self) -> u64 {
        self.start + (self.count - 1) * self.stride + self.len
    }

    fn elem(&self, i: u64) -> u64 {
        self.start + i * self.stride
    }

    /// Index range of the elements that intersect `[a, b)`.
    fn elems_in(&self, a: u64, b: u64) -> std::ops::Range<u64> {
        if b <= self.start || a >= self.end() {
            return 0..0;
        }
        // First element whose end > a.
        let lo = if a < self.start + self.len {
            0
        } else {
            (a - self.start - self.len) / self.stride + 1
        };
        // Last element whose start < b.
        let hi = ((b - 1 - self.start) / self.stride + 1).min(self.count);
        lo.min(hi)..hi
    }

    fn key(&self, i: u64) -> Option<Key> {
        let ts = if i == 0 {
            self.ts_first
        } else if i == self.count - 1 {
            self.ts_last
        } else {
            *self.ts.as_ref()?.get(i as usize)?
        };
        Some(Key {
            ts,
            writer: self.writer,
        })
    }

    fn first_key(&self) -> Key {
        Key {
            ts: self.ts_first,
            writer: self.writer,
        }
    }

    fn last_key(&self) -> Key {
        Key {
            ts: self.ts_last,
            writer: self.writer,
        }
    }
}

/// One segment of a lookup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Segment {
    /// `len` bytes of zeros (a hole).
    Hole {
        /// Length.
        len: u64,
    },
    /// `len` bytes at `phys` in data log `chunk`.
    Data {
        /// Length.
        len: u64,
        /// Data log.
        chunk: u32,
        /// Physical offset.
        phys: u64,
    },
}

/// The extent map.
#[derive(Debug, Clone, Default)]
pub struct ExtentMap {
    pieces: BTreeMap<u64, Piece>,
    /// Compressed runs keyed by (start, sequence number).
    patterns: BTreeMap<(u64, u64), Pattern>,
    pattern_seq: u64,
    /// Longest span (end - start) of any pattern, to find candidates by start offset.
    max_span: u64,
    /// Largest end of any pattern (so that [`ExtentMap::size`], asked at every lookup, does not
    /// visit every pattern: that made reads of a 1M-record compressed index 4x slower than raw).
    pattern_end: u64,
    /// Truncates, sorted by key.
    truncs: Vec<(Key, u64)>,
    stale: bool,
    /// The pattern that served the last lookup, tried first by the next one.
    hint: Hint,
    /// Counts the changes of the map (inserts and truncates): an answer taken from it, such as
    /// a [`Run`], holds while this stays the same.
    gen: u64,
}

impl ExtentMap {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of compressed patterns.
    pub fn pattern_count(&self) -> usize {
        self.patterns.len()
    }

    /// Bytes of data a reader sees (holes excluded): the pieces' and the patterns' elements.
    pub fn live_bytes(&self) -> u64 {
        let p: u64 = self.pieces.values().map(|p| p.len).sum();
        p + self.patterns.values().map(|q| q.count * q.len).sum::<u64>()
    }

    /// The newest truncate: its key and size (compaction keeps the size it set).
    pub fn last_trunc(&self) -> Option<(Key, u64)> {
        self.truncs.last().copied()
    }

    /// True when an expansion needed timestamps that [`ExtentMap::compact`] had dropped: the map
    /// is then no longer exact and must be rebuilt from the logs.
    pub fn is_stale(&self) -> bool {
        self.stale
    }

    /// Approximate heap bytes used.
    pub fn mem_bytes(&self) -> usize {
        let ts: usize = self
            .patterns
            .values()
            .map(|p| p.ts.as_ref().map_or(0, |t| t.len() * 8))
            .sum();
        self.pieces.len() * 72 + self.patterns.len() * 128 + self.truncs.len() * 24 + ts
    }

    /// Drops the per-element timestamps of compressed patterns (after a full load).
    pub fn compact(&mut self) {
        for p in self.patterns.values_mut() {
            p.ts = None;
        }
    }

    /// Logical file size.
    pub fn size(&self) -> u64 {
        let t = self.truncs.last().map_or(0, |&(_, s)| s);
        let p = self.pieces.iter().next_back().map_or(0, |(&o, p)| o + p.len);
        t.max(p).max(self.pattern_end)
    }

    /// Every stretch of data in logical order, patterns expanded: (logical offset, piece).
    pub fn pieces(&self) -> Vec<(u64, Piece)> {
        let mut v: Vec<(u64, Piece)> = self.pieces.iter().map(|(&o, p)| (o, *p)).collect();
        for p in self.patterns.values() {
            for i in 0..p.count {
                let key = p.key(i).unwrap_or(p.last_key());
                v.push((
                    p.elem(i),
                    Piece {
                        len: p.len,
                        chunk: p.chunk,
                        phys: p.phys + i * p.pstride,
                        key,
                    },
                ));
            }
        }
        v.sort_by_key(|e| e.0);
        v
    }

    /// The compressed patterns, by start.
    pub fn patterns(&self) -> impl Iterator<Item = &Pattern> {
        self.patterns.values()
    }

    /// The uncompressed pieces only: (logical offset, piece).
    pub fn raw_pieces(&self) -> impl Iterator<Item = (u64, &Piece)> {
        self.pieces.iter().map(|(&o, p)| (o, p))
    }

    /// Keys of the patterns whose elements intersect `[a, b)`.
    fn patterns_touching(&self, a: u64, b: u64) -> Vec<(u64, u64)> {
        let lo = a.saturating_sub(self.max_span);
        self.patterns
            .range((lo, 0)..(b, 0))
            .filter(|(_, p)| {
                !p.elems_in(a, b).is_empty() && {
                    let r = p.elems_in(a, b);
                    // An element in range may still miss [a, b) only at the edges; check both.
                    r.clone().any(|i| p.elem(i) < b && p.elem(i) + p.len > a)
                }
            })
            .map(|(k, _)| *k)
            .collect()
    }

    /// Removes a pattern and inserts its elements as exact pieces.
    fn expand(&mut self, k: (u64, u64)) {
        let Some(p) = self.patterns.remove(&k) else { return };
        if p.end() >= self.pattern_end {
            self.pattern_end = self.patterns.values().map(Pattern::end).max().unwrap_or(0);
        }
        for i in 0..p.count {
            let key = self.key_or_stale(&p, i);
            self.insert_piece(p.elem(i), p.len, p.chunk, p.phys + i * p.pstride, key);
        }
    }

    /// Inserts a write of `len` bytes at logical `off`, stored at `phys` in `chunk`.
    pub fn insert_write(&mut self, off: u64, len: u64, chunk: u32, phys: u64, key: Key) {
        self.gen += 1;
        if len == 0 {
            return;
        }
        for k in self.patterns_touching(off, off.saturating_add(len)) {
            self.expand(k);
        }
        self.insert_piece(off, len, chunk, phys, key);
    }

    /// Inserts a run of writes, kept compressed unless it overlaps something.
    pub fn insert_pattern(&mut self, p: Pattern) {
        self.gen += 1;
        if p.count == 0 || p.len == 0 {
            return;
        }
        if p.stride < p.len || p.count == 1 {
            self.insert_expanded(p);
            return;
        }
        let (a, b) = (p.start, p.end());
        // A truncate after any of its elements: only the exact pieces can be clipped right.
        let clipped = self.truncs.iter().any(|&(tk, s)| tk > p.first_key() && s < b);
        let mut conflict = clipped;
        if !conflict {
            // Any piece overlapping an element?
            let start = match self.pieces.range(..a).next_back() {
                Some((&o, q)) if o + q.len > a => o,
                _ => a,
            };
            conflict = self.pieces.range(start..b).any(|(&o, q)| {
                !p.elems_in(o, o + q.len).is_empty() && {
                    let r = p.elems_in(o, o + q.len);
                    r.clone().any(|i| p.elem(i) < o + q.len && p.elem(i) + p.len > o)
                }
            });
        }
        let touching: Vec<(u64, u64)> = self
            .patterns
            .range((a.saturating_sub(self.max_span), 0)..(b, 0))
            .filter(|(_, q)| q.end() > a && patterns_overlap(&p, q))
            .map(|(k, _)| *k)
            .collect();
        if conflict || !touching.is_empty() {
            for k in touching {
                self.expand(k);
            }
            self.insert_expanded(p);
            return;
        }
        self.max_span = self.max_span.max(b - a);
        self.pattern_end = self.pattern_end.max(b);
        self.pattern_seq += 1;
        self.patterns.insert((a, self.pattern_seq), p);
    }

    fn insert_expanded(&mut self, p: Pattern) {
        for i in 0..p.count {
            let key = self.key_or_stale(&p, i);
            self.insert_write(p.elem(i), p.len, p.chunk, p.phys + i * p.pstride, key);
        }
    }

    /// The key of element `i` of `p`; where [`ExtentMap::compact`] dropped the per-element
    /// timestamps, the pattern's last key, and the map is then stale.
    fn key_or_stale(&mut self, p: &Pattern, i: u64) -> Key {
        p.key(i).unwrap_or_else(|| {
            self.stale = true;
            p.last_key()
        })
    }

    fn insert_piece(&mut self, off: u64, len: u64, chunk: u32, phys: u64, key: Key) {
        // Clip by every truncate that happened after this write.
        let mut end = off.saturating_add(len);
        for &(tk, s) in self.truncs.iter().rev() {
            if tk <= key {
                break;
            }
            end = end.min(s);
        }
        if end <= off {
            return;
        }
        let new = Piece {
            len: end - off,
            chunk,
            phys,
            key,
        };
        // Fast path: nothing at or beyond `off` overlaps (appending writes).
        let prev_overlaps = self
            .pieces
            .range(..=off)
            .next_back()
            .is_some_and(|(&o, p)| o + p.len > off);
        let next_overlaps = self.pieces.range(off..end).next().is_some();
        if !prev_overlaps && !next_overlaps {
            self.pieces.insert(off, new);
            return;
        }
        // Collect every piece overlapping [off, end).
        let mut overlapped: Vec<(u64, Piece)> = Vec::new();
        if let Some((&o, p)) = self.pieces.range(..off).next_back() {
            if o + p.len > off {
                overlapped.push((o, *p));
            }
        }
        overlapped.extend(self.pieces.range(off..end).map(|(&o, p)| (o, *p)));
        for (o, _) in &overlapped {
            self.pieces.remove(o);
        }
        let mut cursor = off; // next logical byte of [off, end) not yet placed
        for (o, p) in overlapped {
            let pend = o + p.len;
            // Parts of the old piece outside [off, end) survive unchanged.
            if o < off {
                self.pieces.insert(o, Piece { len: off - o, ..p });
            }
            if pend > end {
                let cut = end - o;
                self.pieces.insert(
                    end,
                    Piece {
                        len: pend - end,
                        phys: p.phys + cut,
                        ..p
                    },
                );
            }
            let (s, e) = (o.max(off), pend.min(end));
            if p.key > key {
                // The old piece is newer: it keeps [s, e); the new write fills the gap before it.
                if cursor < s {
                    self.put_new(&new, off, cursor, s);
                }
                self.pieces.insert(
                    s,
                    Piece {
                        len: e - s,
                        phys: p.phys + (s - o),
                        ..p
                    },
                );
                cursor = e;
            }
        }
        if cursor < end {
            self.put_new(&new, off, cursor, end);
        }
    }

    fn put_new(&mut self, new: &Piece, off: u64, from: u64, to: u64) {
        self.pieces.insert(
            from,
            Piece {
                len: to - from,
                phys: new.phys + (from - off),
                ..*new
            },
        );
    }

    /// Records a truncate to `size` with ordering key `key`.
    pub fn insert_trunc(&mut self, size: u64, key: Key) {
        self.gen += 1;
        let pos = self.truncs.partition_point(|&(k, _)| k < key);
        self.truncs.insert(pos, (key, size));
        // Patterns reaching beyond `size` with an element older than the truncate become pieces.
        let hit: Vec<(u64, u64)> = self
            .patterns
            .iter()
            .filter(|(_, p)| p.end() > size && p.first_key() < key)
            .map(|(k, _)| *k)
            .collect();
        for k in hit {
            self.expand(k);
        }
        // Clip pieces older than the truncate that extend beyond `size`.
        let mut victims: Vec<(u64, Piece)> = Vec::new();
        if let Some((&o, p)) = self.pieces.range(..size).next_back() {
            if o + p.len > size && p.key < key {
                victims.push((o, *p));
            }
        }
        victims.extend(
            self.pieces
                .range(size..)
                .filter(|(_, p)| p.key < key)
                .map(|(&o, p)| (o, *p)),
        );
        for (o, p) in victims {
            self.pieces.remove(&o);
            if o < size {
                self.pieces.insert(o, Piece { len: size - o, ..p });
            }
        }
    }

    /// Describes `[off, off+len)` clipped to the file size as holes and data segments.
    pub fn lookup(&self, off: u64, len: u64) -> Segments {
        let size = self.size();
        let end = off.saturating_add(len).min(size);
        let mut out = Segments::new();
        if off >= end {
            return out;
        }
        if let Some(seg) = self.hinted(off, end) {
            out.push(seg);
            return out;
        }
        // Data stretches from pieces and pattern elements, in logical order.
        let mut spans: SmallVec<[(u64, u64, u32, u64); 4]> = SmallVec::new();
        if !self.pieces.is_empty() {
            let start = match self.pieces.range(..=off).next_back() {
                Some((&o, p)) if o + p.len > off => o,
                _ => off,
            };
            for (&o, p) in self.pieces.range(start..end) {
                spans.push((o, p.len, p.chunk, p.phys));
            }
        }
        if !self.patterns.is_empty() {
            for (k, p) in self.patterns.range((off.saturating_sub(self.max_span), 0)..(end, 0)) {
                for i in p.elems_in(off, end) {
                    spans.push((p.elem(i), p.len, p.chunk, p.phys + i * p.pstride));
                    self.hint.set(*k);
                }
            }
            spans.sort_unstable_by_key(|s| s.0);
        }
        let mut cur = off;
        for &(o, l, chunk, phys) in &spans {
            let (s, e) = (o.max(cur), (o + l).min(end));
            if e <= s {
                continue;
            }
            if s > cur {
                out.push(Segment::Hole { len: s - cur });
            }
            let phys = phys + (s - o);
            match out.last_mut() {
                // Next in the file and next in the same data log (one writer's sequential
                // writes): one segment, so a reader makes one pread for all of them.
                Some(Segment::Data {
                    len: pl,
                    chunk: pc,
                    phys: pp,
                }) if *pc == chunk && *pp + *pl == phys => {
                    *pl += e - s;
                }
                _ => out.push(Segment::Data {
                    len: e - s,
                    chunk,
                    phys,
                }),
            }
            cur = e;
        }
        if cur < end {
            out.push(Segment::Hole { len: end - cur });
        }
        out
    }
}

impl ExtentMap {
    /// The number of changes made to the map so far (see [`Run`]).
    pub fn generation(&self) -> u64 {
        self.gen
    }

    /// The pattern or piece that holds byte `off` (the hinted pattern first, then the pieces,
    /// then the patterns that start close enough before `off`); `None` in a hole.
    pub fn run_at(&self, off: u64) -> Option<Run> {
        let of = |p: &Pattern| Run::new(p.start, p.len, p.stride, p.count, p.chunk, p.phys, p.pstride);
        if let Some(p) = self.hint.get().and_then(|k| self.patterns.get(&k)) {
            if !p.elems_in(off, off.saturating_add(1)).is_empty() {
                return Some(of(p));
            }
        }
        if let Some((&o, p)) = self.pieces.range(..=off).next_back() {
            if o + p.len > off {
                return Some(Run::new(o, p.len, p.len, 1, p.chunk, p.phys, p.len));
            }
        }
        let near = (off.saturating_sub(self.max_span), 0)..(off.saturating_add(1), 0);
        let (k, p) = self
            .patterns
            .range(near)
            .find(|(_, p)| !p.elems_in(off, off.saturating_add(1)).is_empty())?;
        self.hint.set(*k);
        Some(of(p))
    }

    /// `[off, end)` (not empty, within the size) as one data segment, when one element of the
    /// hinted pattern covers all of it (see [`Hint`]).
    fn hinted(&self, off: u64, end: u64) -> Option<Segment> {
        let p = self.patterns.get(&self.hint.get()?)?;
        let i = p.elems_in(off, end);
        if i.end != i.start + 1 {
            return None;
        }
        let s = p.elem(i.start);
        (off >= s && end <= s + p.len).then(|| Segment::Data {
            len: end - off,
            chunk: p.chunk,
            phys: p.phys + i.start * p.pstride + (off - s),
        })
    }
}

/// True if any element of `p` overlaps any element of `q`.
fn patterns_overlap(p: &Pattern, q: &Pattern) -> bool {
    let (a, b) = (p.start.max(q.start), p.end().min(q.end()));
    if a >= b {
        return false;
    }
    // Equal strides: element windows repeat with the stride, so if q's window, taken modulo the
    // stride relative to p's, misses p's window, no two elements can meet (O(1), the common case
    // of interleaved N-1 strided writers).
    if p.stride == q.stride {
        let d = (q.start % p.stride + p.stride - p.start % p.stride) % p.stride;
        if d >= p.len && d + q.len <= p.stride {
            return false;
        }
    }
    // Walk the elements of the pattern with fewer elements in the common range.
    let (x, y) = if p.elems_in(a, b).count() <= q.elems_in(a, b).count() {
        (p, q)
    } else {
        (q, p)
    };
    x.elems_in(a, b).any(|i| {
        let (s, e) = (x.elem(i), x.elem(i) + x.len);
        y.elems_in(s, e).any(|j| y.elem(j) < e && y.elem(j) + y.len > s)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A test event: key, a write (off, len, chunk, phys) or none, and a truncate size.
    type Event = (Key, Option<(u64, u64, u32, u64)>, u64);

    fn k(ts: u64) -> Key {
        Key { ts, writer: 1 }
    }

    /// Reference model: apply events in key order to a byte vector of (chunk, phys) tags.
    fn model(events: &[Event]) -> Vec<Option<(u32, u64)>> {
        let mut ev = events.to_vec();
        ev.sort_by_key(|e| e.0);
        let mut v: Vec<Option<(u32, u64)>> = Vec::new();
        for (_, w, s) in ev {
            match w {
                Some((off, len, chunk, phys)) => {
                    let end = (off + len) as usize;
                    if v.len() < end {
                        v.resize(end, None);
                    }
                    for i in 0..len {
                        v[(off + i) as usize] = Some((chunk, phys + i));
                    }
                }
                None => v.resize(s as usize, None),
            }
        }
        v
    }

    fn flatten(m: &ExtentMap) -> Vec<Option<(u32, u64)>> {
        let mut v = Vec::new();
        for seg in m.lookup(0, u64::MAX) {
            match seg {
                Segment::Hole { len } => v.extend(std::iter::repeat_n(None, len as usize)),
                Segment::Data { len, chunk, phys } => v.extend((0..len).map(|i| Some((chunk, phys + i)))),
            }
        }
        v
    }

    /// [`flatten`] as a sequential reader of `step` bytes a read sees it through [`Run`]s
    /// (`index/read.rs`): from the run of the last read while it holds the range, else from the
    /// run at the offset, else (a range across elements, or a hole) by a lookup.
    fn flatten_by_runs(m: &ExtentMap, step: u64) -> Vec<Option<(u32, u64)>> {
        let mut v = Vec::new();
        let (mut off, mut run): (u64, Option<Cursor>) = (0, None);
        while off < m.size() {
            let len = step.min(m.size() - off);
            let hit = run.as_mut().and_then(|r| Some((r.chunk(), r.locate(off, len)?)));
            let hit = hit.or_else(|| {
                run = m.run_at(off).map(Cursor::new);
                run.as_mut().and_then(|r| Some((r.chunk(), r.locate(off, len)?)))
            });
            match hit {
                Some((chunk, phys)) => v.extend((0..len).map(|i| Some((chunk, phys + i)))),
                None => v.extend(flatten_range(m, off, len)),
            }
            off += step;
        }
        v
    }

    fn flatten_range(m: &ExtentMap, off: u64, len: u64) -> Vec<Option<(u32, u64)>> {
        let mut v = Vec::new();
        for seg in m.lookup(off, len) {
            match seg {
                Segment::Hole { len } => v.extend(std::iter::repeat_n(None, len as usize)),
                Segment::Data { len, chunk, phys } => v.extend((0..len).map(|i| Some((chunk, phys + i)))),
            }
        }
        v
    }

    /// [`flatten`] by lookups of `step` bytes each, as a sequential reader makes them: every
    /// lookup after the first may be answered by the hinted pattern.
    fn flatten_by(m: &ExtentMap, step: u64) -> Vec<Option<(u32, u64)>> {
        let mut v = Vec::new();
        let mut off = 0;
        while off < m.size() {
            for seg in m.lookup(off, step) {
                match seg {
                    Segment::Hole { len } => v.extend(std::iter::repeat_n(None, len as usize)),
                    Segment::Data { len, chunk, phys } => v.extend((0..len).map(|i| Some((chunk, phys + i)))),
                }
            }
            off += step;
        }
        v
    }

    #[test]
    fn overwrite_and_holes() {
        let mut m = ExtentMap::new();
        m.insert_write(10, 10, 0, 100, k(1));
        m.insert_write(15, 10, 1, 200, k(2));
        assert_eq!(m.size(), 25);
        assert_eq!(
            m.lookup(0, 100).to_vec(),
            vec![
                Segment::Hole { len: 10 },
                Segment::Data {
                    len: 5,
                    chunk: 0,
                    phys: 100
                },
                Segment::Data {
                    len: 10,
                    chunk: 1,
                    phys: 200
                },
            ]
        );
        // An older write arriving late loses where it overlaps.
        m.insert_write(0, 30, 2, 300, k(0));
        assert_eq!(
            m.lookup(0, 100)[0],
            Segment::Data {
                len: 10,
                chunk: 2,
                phys: 300
            }
        );
        assert_eq!(m.size(), 30);
    }

    #[test]
    fn contiguous_writes_of_one_log_are_one_segment() {
        let mut m = ExtentMap::new();
        // Three sequential 4 KiB writes, one after the other in data log 0; then one in log 1.
        for i in 0..3u64 {
            m.insert_write(i * 4096, 4096, 0, 64 + i * 4096, k(1 + i));
        }
        m.insert_write(3 * 4096, 4096, 1, 64, k(9));
        assert_eq!(
            m.lookup(100, 4 * 4096).to_vec(),
            vec![
                Segment::Data {
                    len: 3 * 4096 - 100,
                    chunk: 0,
                    phys: 164
                },
                Segment::Data {
                    len: 4096,
                    chunk: 1,
                    phys: 64
                },
            ]
        );
        // Logically adjacent but not physically: two segments.
        let mut g = ExtentMap::new();
        g.insert_write(0, 10, 0, 100, k(1));
        g.insert_write(10, 10, 0, 50, k(2));
        assert_eq!(g.lookup(0, 20).len(), 2);
    }

    #[test]
    fn truncate_then_late_write() {
        let mut m = ExtentMap::new();
        m.insert_trunc(5, k(5));
        m.insert_write(0, 10, 0, 0, k(1)); // older than the truncate: clipped to 5
        m.insert_write(8, 2, 1, 0, k(9)); // newer: survives
        assert_eq!(m.size(), 10);
        assert_eq!(
            m.lookup(0, 10).to_vec(),
            vec![
                Segment::Data {
                    len: 5,
                    chunk: 0,
                    phys: 0
                },
                Segment::Hole { len: 3 },
                Segment::Data {
                    len: 2,
                    chunk: 1,
                    phys: 0
                },
            ]
        );
        // Grow-truncate with nothing written: all holes.
        let mut g = ExtentMap::new();
        g.insert_trunc(100, k(1));
        assert_eq!(g.size(), 100);
        assert_eq!(g.lookup(90, 50).to_vec(), vec![Segment::Hole { len: 10 }]);
    }

    /// A generated event: a write, a truncate, or a pattern run of `count` writes.
    #[derive(Debug, Clone)]
    enum Gen {
        W(u64, u64),
        T(u64),
        P {
            start: u64,
            len: u64,
            stride: u64,
            count: u64,
        },
    }

    fn gen() -> impl proptest::strategy::Strategy<Value = Gen> {
        use proptest::prelude::*;
        prop_oneof![
            5 => (0u64..64, 1u64..24).prop_map(|(o, l)| Gen::W(o, l)),
            1 => (0u64..80).prop_map(Gen::T),
            3 => (0u64..64, 1u64..8, 0u64..8, 1u64..7).prop_map(|(start, len, extra, count)| Gen::P { start, len, stride: len + extra, count }),
        ]
    }

    proptest::proptest! {
        #[test]
        fn patterns_in_any_order_match_model(evs in proptest::collection::vec(gen(), 1..30), seed in 0u64..1000, compact_at in 0usize..40) {
            // Build the model's flat event list and the map's insertable items.
            let mut model_events: Vec<Event> = Vec::new();
            let mut items: Vec<Gen> = Vec::new();
            let mut keys: Vec<u64> = Vec::new();
            for (i, e) in evs.iter().enumerate() {
                let base = i as u64 * 100 + 1;
                let writer = i as u64 % 3;
                match *e {
                    Gen::W(o, l) => model_events.push((Key { ts: base, writer }, Some((o, l, i as u32, 1000 * i as u64)), 0)),
                    Gen::T(sz) => model_events.push((Key { ts: base, writer }, None, sz)),
                    Gen::P { start, len, stride, count } => {
                        for j in 0..count {
                            model_events.push((Key { ts: base + j, writer }, Some((start + j * stride, len, i as u32, 1000 * i as u64 + j * len)), 0));
                        }
                    }
                }
                items.push(e.clone());
                keys.push(base);
            }
            let want = model(&model_events);
            let mut order: Vec<usize> = (0..items.len()).collect();
            let mut s = seed;
            for i in (1..order.len()).rev() {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                order.swap(i, (s >> 33) as usize % (i + 1));
            }
            let mut m = ExtentMap::new();
            for (n, &i) in order.iter().enumerate() {
                if n == compact_at {
                    m.compact();
                }
                // Lookups between insertions leave hints naming patterns that later insertions
                // expand, clip or remove.
                let _ = m.lookup(seed % 200, 1 + n as u64 % 5);
                let writer = i as u64 % 3;
                let base = keys[i];
                let gen = m.generation();
                match items[i] {
                    Gen::W(o, l) => m.insert_write(o, l, i as u32, 1000 * i as u64, Key { ts: base, writer }),
                    Gen::T(sz) => m.insert_trunc(sz, Key { ts: base, writer }),
                    Gen::P { start, len, stride, count } => {
                        let ts: Vec<u64> = (0..count).map(|j| base + j).collect();
                        m.insert_pattern(Pattern { start, len, stride, count, chunk: i as u32, phys: 1000 * i as u64, pstride: len, writer, ts_first: base, ts_last: base + count - 1, ts: Some(ts.into()) });
                    }
                }
                // Every change moves the generation: a run taken before it is not used after it.
                proptest::prop_assert!(m.generation() > gen);
            }
            if !m.is_stale() {
                proptest::prop_assert_eq!(m.size() as usize, want.len());
                proptest::prop_assert_eq!(flatten(&m), want.clone());
                for step in [1, 3, 7] {
                    proptest::prop_assert_eq!(flatten_by(&m, step), want.clone(), "lookups of {} bytes", step);
                    proptest::prop_assert_eq!(flatten_by_runs(&m, step), want.clone(), "runs, reads of {} bytes", step);
                }
            }
        }
    }

    #[test]
    fn strided_writers_stay_compressed() {
        // 4 writers, 1000 records each, N-1 strided: 4 patterns, no pieces, exact lookups.
        let mut m = ExtentMap::new();
        let (n, rec) = (4u64, 100u64);
        for w in 0..n {
            let ts: Vec<u64> = (0..1000).map(|i| 10 + i * 4 + w).collect();
            m.insert_pattern(Pattern {
                start: w * rec,
                len: rec,
                stride: n * rec,
                count: 1000,
                chunk: w as u32,
                phys: 64,
                pstride: rec,
                writer: w,
                ts_first: ts[0],
                ts_last: ts[999],
                ts: Some(ts.into()),
            });
        }
        m.compact();
        assert_eq!((m.pattern_count(), m.raw_pieces().count()), (4, 0));
        assert_eq!(m.size(), 4000 * rec);
        assert!(m.mem_bytes() < 4096);
        assert_eq!(
            m.lookup(150, 100).to_vec(),
            vec![
                Segment::Data {
                    len: 50,
                    chunk: 1,
                    phys: 64 + 50
                },
                Segment::Data {
                    len: 50,
                    chunk: 2,
                    phys: 64
                }
            ]
        );
        // An overwrite by another writer expands only the patterns it touches; without
        // timestamps after compaction the map says it is stale instead of guessing.
        m.insert_write(
            0,
            10,
            9,
            0,
            Key {
                ts: 1_000_000,
                writer: 9,
            },
        );
        assert!(m.is_stale());
    }

    proptest::proptest! {
        #[test]
        fn any_insertion_order_matches_model(
            evs in proptest::collection::vec((0u64..64, 1u64..24, proptest::bool::weighted(0.8), 0u64..80), 1..40),
            seed in 0u64..1000,
        ) {
            let events: Vec<Event> = evs.iter().enumerate().map(|(i, &(off, len, is_write, sz))| {
                let key = Key { ts: (i as u64) * 3 + 1, writer: i as u64 % 3 };
                if is_write { (key, Some((off, len, i as u32, 1000 * i as u64)), 0) } else { (key, None, sz) }
            }).collect();
            let want = model(&events);
            // Insert in a shuffled order.
            let mut order: Vec<usize> = (0..events.len()).collect();
            let mut s = seed;
            for i in (1..order.len()).rev() {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                order.swap(i, (s >> 33) as usize % (i + 1));
            }
            let mut m = ExtentMap::new();
            for &i in &order {
                let (key, w, sz) = events[i];
                match w {
                    Some((off, len, chunk, phys)) => m.insert_write(off, len, chunk, phys, key),
                    None => m.insert_trunc(sz, key),
                }
            }
            proptest::prop_assert_eq!(m.size() as usize, want.len());
            proptest::prop_assert_eq!(flatten(&m), want);
        }
    }
}
