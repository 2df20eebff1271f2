//! Answers the extent map gives without a range search: the pattern a lookup tries first
//! ([`Hint`]), and the elements of one pattern or piece copied out for a sequential reader
//! ([`Run`]).

/// The elements of one pattern, or one piece as a run of a single element: where each lies in the
/// file and in its data log. Copied out of the map ([`ExtentMap::run_at`]), so that a reader can
/// answer the reads that fall inside one element by arithmetic alone, while
/// [`ExtentMap::generation`] has not moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    start: u64,
    len: u64,
    stride: u64,
    count: u64,
    /// The data log.
    pub chunk: u32,
    phys: u64,
    pstride: u64,
}

impl Run {
    /// Elements `0..count` of `len` bytes at `start + i * stride` in the file, at `phys + i *
    /// pstride` in data log `chunk`.
    pub(super) fn new(start: u64, len: u64, stride: u64, count: u64, chunk: u32, phys: u64, pstride: u64) -> Run {
        Run {
            start,
            len,
            stride,
            count,
            chunk,
            phys,
            pstride,
        }
    }

    /// The length of each element.
    pub fn elem_len(&self) -> u64 {
        self.len
    }

    /// Where the last element ends in the data log: every byte of the log before it was written
    /// before that element was (a data log is appended in order), so it is all there to read.
    pub fn phys_end(&self) -> u64 {
        self.phys + self.count.saturating_sub(1) * self.pstride + self.len
    }

    /// Where `[off, off + len)` lies in the data log, if one element holds all of it. An element
    /// is exact (nothing else in the map overlaps it: the invariants in `extent`), so this is what a
    /// lookup would answer.
    pub fn locate(&self, off: u64, len: u64) -> Option<u64> {
        let rel = off.checked_sub(self.start)?;
        let i = if self.count == 1 { 0 } else { rel / self.stride };
        let within = rel - i * self.stride;
        (i < self.count && within.checked_add(len)? <= self.len).then(|| self.phys + i * self.pstride + within)
    }
}

/// The key of a pattern (start, sequence number) that a lookup may try first: a sequential reader
/// reads element after element of one pattern, and one exact look-up of that pattern answers it
/// (about a tenth of a range search over pieces and patterns). Only a hint: whatever pattern it
/// names, if that pattern exists and one of its elements covers the whole range asked for, that
/// element is the answer, since nothing else in the map overlaps an element (the invariants
/// in `extent`). Two relaxed atomics, so that lookups stay `&self` and concurrent: a torn pair names
/// some other pattern or none, and is then merely a miss.
#[derive(Debug, Default)]
pub(super) struct Hint {
    start: std::sync::atomic::AtomicU64,
    /// Sequence number plus one (0: no hint).
    seq1: std::sync::atomic::AtomicU64,
}

impl Clone for Hint {
    fn clone(&self) -> Self {
        let h = Hint::default();
        if let Some((start, seq)) = self.get() {
            h.set((start, seq));
        }
        h
    }
}

impl Hint {
    pub(super) fn get(&self) -> Option<(u64, u64)> {
        use std::sync::atomic::Ordering::Relaxed;
        let seq1 = self.seq1.load(Relaxed);
        (seq1 != 0).then(|| (self.start.load(Relaxed), seq1 - 1))
    }

    pub(super) fn set(&self, (start, seq): (u64, u64)) {
        use std::sync::atomic::Ordering::Relaxed;
        self.start.store(start, Relaxed);
        self.seq1.store(seq.wrapping_add(1), Relaxed);
    }
}
