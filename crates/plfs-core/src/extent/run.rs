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

    /// The element that holds all of `[off, off + len)`, if one does, and where the range starts
    /// in it. An element is exact (nothing else in the map overlaps it: the invariants in
    /// `extent`), so this is what a lookup would answer.
    fn place(&self, off: u64, len: u64) -> Option<(u64, u64)> {
        let rel = off.checked_sub(self.start)?;
        let i = if self.count == 1 { 0 } else { rel / self.stride };
        let within = rel - i * self.stride;
        (i < self.count && within.checked_add(len)? <= self.len).then_some((i, within))
    }

    /// Where `[off, off + len)` lies in the data log, if one element holds all of it
    /// (statelessly: what a [`Cursor`] answers).
    #[cfg(test)]
    pub fn locate(&self, off: u64, len: u64) -> Option<u64> {
        let (i, within) = self.place(off, len)?;
        Some(self.phys + i * self.pstride + within)
    }
}

/// A sequential reader's place in a [`Run`]: a read that starts where the last one it answered
/// ended, and stays inside that element, is answered by a comparison (no division, no
/// multiplication); any other read is looked for in the whole run (`Run::place`), and the place
/// moves there. The answers are those of a stateless look-up in the run (a test holds them to
/// it).
#[derive(Debug, Clone, Copy)]
pub struct Cursor {
    run: Run,
    /// Where the run's last element ends in the data log ([`Run::phys_end`]).
    end: u64,
    /// From the end of an element to the start of the next, in the file and in the data log.
    skip: u64,
    pskip: u64,
    /// The elements after the place's.
    after: u64,
    /// The place, in the file and in the data log.
    off: u64,
    phys: u64,
    /// Bytes of the place's element from `off` on (0: the place is past the last element, or
    /// not set).
    left: u64,
}

impl Cursor {
    /// A cursor on `run` with no place yet.
    pub fn new(run: Run) -> Cursor {
        Cursor {
            run,
            end: run.phys_end(),
            // Wrapping: exact modulo 2^64, and a place moved by them is the start of an element.
            skip: run.stride.wrapping_sub(run.len),
            pskip: run.pstride.wrapping_sub(run.len),
            after: 0,
            off: run.start,
            phys: run.phys,
            left: 0,
        }
    }

    /// The run's data log.
    #[cfg(test)]
    pub fn chunk(&self) -> u32 {
        self.run.chunk
    }

    /// [`Run::phys_end`] of the run.
    pub fn phys_end(&self) -> u64 {
        self.end
    }

    /// Where `[off, off + len)` lies in the data log, if one element of the run holds all of it:
    /// from the place of the last read answered; the place moves past the answer.
    #[inline]
    pub fn locate(&mut self, off: u64, len: u64) -> Option<u64> {
        // `len - 1 < left`: `len <= left` for a read of some bytes; an empty one is located.
        if off == self.off && len.wrapping_sub(1) < self.left {
            let phys = self.phys;
            self.advance(len);
            return Some(phys);
        }
        self.seek(off, len)
    }

    /// [`Cursor::locate`] of a read that does not start at the place.
    #[inline(never)]
    fn seek(&mut self, off: u64, len: u64) -> Option<u64> {
        let r = &self.run;
        let (i, within) = r.place(off, len)?;
        let phys = r.phys + i * r.pstride + within;
        (self.after, self.off, self.phys, self.left) = (r.count - 1 - i, off, phys, r.len - within);
        self.advance(len);
        Some(phys)
    }

    /// Moves the place `len` bytes on (no more than `left`): to the next element's start when
    /// this one is done and another follows.
    #[inline]
    fn advance(&mut self, len: u64) {
        self.off = self.off.wrapping_add(len);
        self.phys = self.phys.wrapping_add(len);
        self.left -= len;
        if self.left == 0 && self.after != 0 {
            self.after -= 1;
            self.off = self.off.wrapping_add(self.skip);
            self.phys = self.phys.wrapping_add(self.pskip);
            self.left = self.run.len;
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_answers_what_locate_answers() {
        let runs = [
            Run::new(100, 8, 8, 1, 0, 50, 8),
            Run::new(100, 8, 8, 5, 0, 50, 40),
            Run::new(100, 8, 12, 5, 0, 50, 8),
            Run::new(3, 4, 9, 6, 1, 0, 36),
        ];
        for run in runs {
            let top = run.start + run.count * run.stride + 10;
            // Sequential sweeps of every step, then every (off, len) after every other.
            for step in 1..=20 {
                let mut c = Cursor::new(run);
                for off in (0..top).step_by(step as usize) {
                    assert_eq!(
                        c.locate(off, step),
                        run.locate(off, step),
                        "{run:?} step {step} at {off}"
                    );
                }
            }
            let mut c = Cursor::new(run);
            for off in 0..top {
                for len in 0..20 {
                    assert_eq!(c.locate(off, len), run.locate(off, len), "{run:?} {off}+{len}");
                    let next = off + len;
                    assert_eq!(c.locate(next, 1), run.locate(next, 1), "{run:?} after {off}+{len}");
                }
            }
        }
    }
}
