//! The data checksums of a merged index (`data_checksums: true`): for each data log whose writes
//! carry a crc32c, where each write lies in it, so that a read can check the writes its bytes
//! belong to (docs/design.md, "fsck and verify").

use std::collections::{BTreeMap, HashMap};

/// A write's data checksum, as its index record gives it.
#[derive(Debug, Clone, Copy)]
struct Sum {
    len: u64,
    logical: u64,
    crc: u32,
    /// This process has read the write's data and found it matches.
    checked: bool,
}

/// A write whose data a read returns part of, to be checked against its checksum.
#[derive(Debug, Clone, Copy)]
pub struct SumCheck {
    /// The data log.
    pub chunk: u32,
    /// Where the write's data starts in it.
    pub phys: u64,
    /// The write's length.
    pub len: u64,
    /// Where it was written in the file.
    pub logical: u64,
    /// Its crc32c.
    pub crc: u32,
}

/// By chunk (data log): the physical start of each write → its checksum.
#[derive(Debug, Default)]
pub struct Sums(HashMap<u32, BTreeMap<u64, Sum>>);

impl Sums {
    /// Records that the writes in `chunk`'s data log carry data checksums.
    pub fn enable(&mut self, chunk: u32) {
        self.0.entry(chunk).or_default();
    }

    /// Records the checksum of a write of `len` bytes at `phys` in `chunk`'s data log, written
    /// at `logical` in the file (nothing when that log's writes carry no checksums).
    pub fn add(&mut self, chunk: u32, phys: u64, len: u64, logical: u64, crc: u32) {
        if let Some(m) = self.0.get_mut(&chunk) {
            m.entry(phys).or_insert(Sum {
                len,
                logical,
                crc,
                checked: false,
            });
        }
    }

    /// The writes with checksums that bytes `phys..phys + len` of `chunk`'s data log belong to
    /// and that this process has not checked yet, appended to `out`.
    pub fn to_check(&self, chunk: u32, phys: u64, len: u64, out: &mut Vec<SumCheck>) {
        let Some(m) = self.0.get(&chunk) else { return };
        // The write that starts at or before `phys`, then those that start inside the range.
        let first = m.range(..=phys).next_back().map_or(phys, |(&p, _)| p);
        for (&p, s) in m.range(first..phys.saturating_add(len)) {
            if p.saturating_add(s.len) > phys && !s.checked {
                out.push(SumCheck {
                    chunk,
                    phys: p,
                    len: s.len,
                    logical: s.logical,
                    crc: s.crc,
                });
            }
        }
    }

    /// Whether the writes in `chunk`'s data log carry data checksums.
    pub fn carried_by(&self, chunk: u32) -> bool {
        self.0.contains_key(&chunk)
    }

    /// Notes that this process read a write's data and found it matches its checksum.
    pub fn checked(&mut self, chunk: u32, phys: u64) {
        if let Some(s) = self.0.get_mut(&chunk).and_then(|m| m.get_mut(&phys)) {
            s.checked = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_overlapping_a_range_are_found_until_checked() {
        let mut s = Sums::default();
        s.add(0, 64, 100, 0, 1); // not enabled: ignored
        s.enable(0);
        for (i, p) in [64u64, 164, 264].into_iter().enumerate() {
            s.add(0, p, 100, i as u64 * 1000, i as u32);
        }
        let find = |s: &Sums, phys, len| {
            let mut v = Vec::new();
            s.to_check(0, phys, len, &mut v);
            v.iter().map(|c| c.phys).collect::<Vec<_>>()
        };
        assert_eq!(find(&s, 100, 10), vec![64]);
        assert_eq!(find(&s, 163, 2), vec![64, 164]);
        assert_eq!(find(&s, 0, 1000), vec![64, 164, 264]);
        assert_eq!(find(&s, 364, 10), Vec::<u64>::new());
        assert_eq!(find(&s, 10, 54), Vec::<u64>::new());
        s.checked(0, 164);
        assert_eq!(find(&s, 100, 200), vec![64, 264]);
        // Learning a write again (a refresh re-reading a record) keeps it checked.
        s.add(0, 164, 100, 1000, 1);
        assert_eq!(find(&s, 164, 1), Vec::<u64>::new());
        let mut v = Vec::new();
        s.to_check(1, 0, 1000, &mut v);
        assert!(v.is_empty(), "chunk without checksums");
    }
}
