//! The merged index: a map from logical byte ranges to (data log, physical offset).
//!
//! Writes and truncates may be inserted in **any order** and the result is the same as applying
//! them in timestamp order: each piece remembers the [`Key`] of the write it came from, an overlap
//! keeps the newer key, and each truncate clips older pieces beyond its size. That makes the merge
//! commutative, so index logs can be merged in parallel, incrementally, and in any order.
//!
//! Invariants: pieces never overlap and have `len > 0`; every piece older than the newest
//! truncate ends at or below that truncate's size. Hence `size = max(last_trunc.size, end of the
//! last piece)`.

use std::collections::BTreeMap;

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
    /// Truncates, sorted by key.
    truncs: Vec<(Key, u64)>,
}

impl ExtentMap {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of pieces (memory is proportional to it).
    pub fn len(&self) -> usize {
        self.pieces.len()
    }

    /// True when there are no pieces.
    pub fn is_empty(&self) -> bool {
        self.pieces.is_empty()
    }

    /// Logical file size.
    pub fn size(&self) -> u64 {
        let t = self.truncs.last().map_or(0, |&(_, s)| s);
        let p = self.pieces.iter().next_back().map_or(0, |(&o, p)| o + p.len);
        t.max(p)
    }

    /// Iterates over the pieces in logical order: (logical offset, piece).
    pub fn pieces(&self) -> impl Iterator<Item = (u64, &Piece)> {
        self.pieces.iter().map(|(&o, p)| (o, p))
    }

    /// Inserts a write of `len` bytes at logical `off`, stored at `phys` in `chunk`.
    pub fn insert_write(&mut self, off: u64, len: u64, chunk: u32, phys: u64, key: Key) {
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
        let pos = self.truncs.partition_point(|&(k, _)| k < key);
        self.truncs.insert(pos, (key, size));
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
    pub fn lookup(&self, off: u64, len: u64) -> Vec<Segment> {
        let size = self.size();
        let end = off.saturating_add(len).min(size);
        let mut out = Vec::new();
        if off >= end {
            return out;
        }
        let mut cur = off;
        let start = match self.pieces.range(..=off).next_back() {
            Some((&o, p)) if o + p.len > off => o,
            _ => off,
        };
        for (&o, p) in self.pieces.range(start..end) {
            if o > cur {
                out.push(Segment::Hole { len: o - cur });
                cur = o;
            }
            let pend = (o + p.len).min(end);
            if pend > cur {
                out.push(Segment::Data {
                    len: pend - cur,
                    chunk: p.chunk,
                    phys: p.phys + (cur - o),
                });
                cur = pend;
            }
        }
        if cur < end {
            out.push(Segment::Hole { len: end - cur });
        }
        out
    }
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

    #[test]
    fn overwrite_and_holes() {
        let mut m = ExtentMap::new();
        m.insert_write(10, 10, 0, 100, k(1));
        m.insert_write(15, 10, 1, 200, k(2));
        assert_eq!(m.size(), 25);
        assert_eq!(
            m.lookup(0, 100),
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
    fn truncate_then_late_write() {
        let mut m = ExtentMap::new();
        m.insert_trunc(5, k(5));
        m.insert_write(0, 10, 0, 0, k(1)); // older than the truncate: clipped to 5
        m.insert_write(8, 2, 1, 0, k(9)); // newer: survives
        assert_eq!(m.size(), 10);
        assert_eq!(
            m.lookup(0, 10),
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
        assert_eq!(g.lookup(90, 50), vec![Segment::Hole { len: 10 }]);
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
