//! Reading through a merged index: the plan of a read (which data log and where, for each
//! stretch of the caller's buffer), the preads that carry it out, and the checks of the data
//! checksums of the writes it returns (`data_checksums: true`). The plan is made under the
//! index's lock ([`IndexState::plan_read`]); the preads and checks run without it, so that
//! threads of one process read in parallel; a read that checked writes notes it under the lock
//! once more ([`IndexState::note_checked`]), which happens the first time a write is read only.

use super::logs::no_link;
use super::{IndexState, SumCheck};
use crate::error::{Error, Result};
use crate::extent::{Cursor, Segment};
use crate::format;
use crate::sys::{Access, File};
use smallvec::SmallVec;
use std::path::Path;
use std::sync::Arc;

/// What a read will do, made from the merged index and carried out without it. Made empty by
/// the caller and filled in place (a read moves nothing bigger than a pointer).
#[derive(Default)]
pub(crate) struct ReadPlan {
    stretches: Plan,
    checks: Vec<Check>,
}

impl IndexState {
    /// Whether the map must be loaded again before a read is planned: an expansion needed the
    /// timestamps that [`Self::compact`] dropped, so it is no longer exact.
    pub(crate) fn is_stale(&self) -> bool {
        self.map.is_stale()
    }

    /// The plan of a read of `len` (> 0) bytes at logical offset `off`: one `pread` of a data log
    /// at an offset when one element of the pattern (or one piece) that served the last
    /// sequential read holds all of it, and no data checksum needs checking there (returned
    /// with where that pattern's last element ends in the log,
    /// [`crate::extent::Run::phys_end`]); else `plan` (`None`) is set to the full plan
    /// ([`IndexState::plan_read_all`]) and `None` returned.
    ///
    /// The element is copied out of the map with the map's generation ([`crate::extent::Run`]),
    /// with the reader's place in it ([`Cursor`]), so a read that continues the last one inside
    /// an element costs a comparison, and any other read in the run arithmetic, until the map
    /// changes (a refresh that found something, a write or truncate of this process). Only a read that starts where the last one ended, and is no
    /// longer than the elements found last, looks for a new element: a random reader, or one
    /// whose reads span elements, makes one look-up per read, as before.
    #[inline]
    pub(crate) fn plan_read(
        &mut self,
        off: u64,
        len: u64,
        plan: &mut Option<ReadPlan>,
    ) -> Result<Option<(Arc<File>, u64, u64)>> {
        let sequential = off == self.next_read;
        self.next_read = off.saturating_add(len);
        let gen = self.map.generation();
        if let Some((g, cur, f)) = &mut self.run {
            if *g == gen {
                if let Some(phys) = cur.locate(off, len) {
                    return Ok(Some((f.clone(), phys, cur.phys_end())));
                }
            }
        }
        self.plan_read_slow(off, len, sequential, plan)
    }

    /// [`IndexState::plan_read`] when the run of the last read does not hold this one (out of
    /// line: a sequential reader comes here once per pattern).
    #[inline(never)]
    fn plan_read_slow(
        &mut self,
        off: u64,
        len: u64,
        sequential: bool,
        plan: &mut Option<ReadPlan>,
    ) -> Result<Option<(Arc<File>, u64, u64)>> {
        let gen = self.map.generation();
        // Reads longer than the elements last found (1 MiB reads of a file of 4 KiB records)
        // span elements: no run can hold them, and none is looked for.
        if sequential && len <= self.run_elem_len {
            self.run = None;
            if let Some(run) = self.map.run_at(off).filter(|r| !self.sums.carried_by(r.chunk)) {
                self.run_elem_len = run.elem_len();
                let f = self.data_fd(run.chunk)?;
                let mut cur = Cursor::new(run);
                let phys = cur.locate(off, len);
                self.run = Some((gen, cur, f.clone()));
                if let Some(phys) = phys {
                    return Ok(Some((f, phys, cur.phys_end())));
                }
            }
        }
        self.plan_read_all(off, len, plan.insert(ReadPlan::default()))?;
        Ok(None)
    }

    /// Fills `plan` (empty) for a read of `len` bytes at logical offset `off`: the map's
    /// segments with a descriptor of each data log, and the writes with data checksums that
    /// this process has not checked yet.
    pub(crate) fn plan_read_all(&mut self, off: u64, len: u64, plan: &mut ReadPlan) -> Result<()> {
        let segs = self.map.lookup(off, len);
        let ReadPlan { stretches, checks } = plan;
        let mut sums = Vec::new();
        for seg in &segs {
            match *seg {
                Segment::Hole { len } => stretches.push((len, None)),
                Segment::Data { len, chunk, phys } => {
                    let f = self.data_fd(chunk)?;
                    sums.clear();
                    self.sums.to_check(chunk, phys, len, &mut sums);
                    let writer = self.chunks[chunk as usize].writer_id;
                    checks.extend(sums.drain(..).map(|sum| Check {
                        sum,
                        writer,
                        seg: stretches.len(),
                        file: f.clone(),
                    }));
                    stretches.push((len, Some((f, phys))))
                }
            }
        }
        Ok(())
    }

    /// A descriptor for a chunk's data log (cached, at most `max_open_data_logs` open; the least
    /// recently used one is closed first).
    pub(super) fn data_fd(&mut self, chunk: u32) -> Result<Arc<File>> {
        self.fd_tick += 1;
        if let Some(Some((fd, used))) = self.fds.get_mut(chunk as usize) {
            *used = self.fd_tick;
            return Ok(fd.clone());
        }
        let c = self
            .chunks
            .get(chunk as usize)
            .ok_or_else(|| Error::InvalidArgument(format!("unknown chunk {chunk}")))?;
        let fd = Arc::new(
            no_link(
                self.dirs[c.dir].open_file(&c.name, Access::Read),
                &self.dirs[c.dir],
                &c.name,
            )?
            .kept(),
        );
        // Counted here, where a data log is opened (a system call), not kept beside `fds`.
        if self.fds.iter().flatten().count() >= self.max_fds {
            let lru = (self.fds.iter().enumerate())
                .filter_map(|(i, s)| s.as_ref().map(|(_, used)| (i, *used)))
                .min_by_key(|&(_, used)| used);
            if let Some((i, _)) = lru {
                self.fds[i] = None;
            }
        }
        let i = chunk as usize;
        if self.fds.len() <= i {
            self.fds.resize(i + 1, None);
        }
        self.fds[i] = Some((fd.clone(), self.fd_tick));
        Ok(fd)
    }

    /// Notes the writes that `plan`'s read checked, so that this process reads them unchecked
    /// from now on. Only into the merged index the plan was made from: a reloaded one numbers
    /// its chunks anew (a chunk that names another writer now is left alone).
    pub(crate) fn note_checked(&mut self, plan: &ReadPlan) {
        for c in &plan.checks {
            if self.chunks.get(c.sum.chunk as usize).map(|ch| ch.writer_id) == Some(c.writer) {
                self.sums.checked(c.sum.chunk, c.sum.phys);
            }
        }
    }
}

impl ReadPlan {
    /// Whether the read checks writes (and so has something for [`IndexState::note_checked`]).
    pub(crate) fn checks_writes(&self) -> bool {
        !self.checks.is_empty()
    }

    /// Fills `buf` from the data logs and checks the writes the plan names; returns the bytes
    /// filled. A write whose data does not match its checksum is damage (EIO naming the logical
    /// file `logical`), not data.
    pub(crate) fn run(&self, buf: &mut [u8], logical: &Path) -> Result<usize> {
        let (at, pos) = read_plan(&self.stretches, buf)?;
        for Check {
            sum: c, seg, file: f, ..
        } in &self.checks
        {
            let (len, src) = &self.stretches[*seg];
            let seg_phys = src.as_ref().map_or(0, |s| s.1);
            // Read whole by this read: checked from the buffer; else from the log.
            let inside = c.phys >= seg_phys && c.phys + c.len <= seg_phys + len;
            let got = if inside {
                let s = at[*seg] + (c.phys - seg_phys) as usize;
                Some(crc32c::crc32c(&buf[s..s + c.len as usize]))
            } else {
                crc_of(f, c)?
            };
            if got != Some(c.crc) {
                return Err(Error::corrupt(
                    f.path(),
                    format!(
                        "{}: the write of {} bytes at logical offset {} (bytes {}..{} of this data log) {}, the index says crc32c {:08x}",
                        logical.display(),
                        c.len,
                        c.logical,
                        c.phys,
                        c.phys + c.len,
                        got.map_or("is cut short".to_string(), |g| format!("has crc32c {g:08x}")),
                        c.crc
                    ),
                ));
            }
        }
        Ok(pos)
    }
}

/// A write a read returns part of, to check: in plan segment `seg`, from `file`, the data log
/// of `writer`.
struct Check {
    sum: SumCheck,
    writer: u64,
    seg: usize,
    file: Arc<File>,
}

/// The crc32c of a write's data read from its data log, or `None` when the log ends before it.
fn crc_of(f: &File, c: &SumCheck) -> Result<Option<u32>> {
    let mut b = vec![0u8; c.len.min(1 << 20) as usize];
    let (mut crc, mut done) = (0u32, 0u64);
    while done < c.len {
        let want = (c.len - done).min(b.len() as u64) as usize;
        let n = f.pread_full(&mut b[..want], c.phys + done)?;
        if n < want {
            return Ok(None);
        }
        crc = crc32c::crc32c_append(crc, &b[..n]);
        done += n as u64;
    }
    Ok(Some(crc))
}

/// A read's plan: for each stretch of the buffer, its length and where it comes from (a data
/// log and offset; none for a hole).
/// Inline for the usual read of one or two stretches: a read allocates nothing for its plan.
type Plan = SmallVec<[(u64, Option<(Arc<File>, u64)>); 4]>;

/// Stretches of one data log at most this far apart are read by one `preadv`, the bytes between
/// them (a framed log's frames) into a scratch buffer.
const MAX_GAP: u64 = format::FRAME_LEN as u64;

/// The most stretches one `preadv` reads (two vectors each, within IOV_MAX).
const MAX_RUN: usize = 256;

/// Fills `buf` from the plan; returns where each stretch starts in `buf`, and the bytes filled.
/// The stretches of one data log that lie at most a frame apart in it are read by one `preadv`,
/// wherever they land in `buf`: one writer's consecutive writes (back to back in its log, as an
/// unframed log's were read by one `pread`), also when other writers' records lie between them
/// in the file (N-1 strided: a read of 16 records of 4 writers costs 4 calls, not 16).
fn read_plan(plan: &Plan, buf: &mut [u8]) -> Result<(SmallVec<[usize; 4]>, usize)> {
    let mut at = SmallVec::with_capacity(plan.len());
    let mut pos = 0usize;
    for (len, _) in plan {
        at.push(pos);
        pos += *len as usize;
    }
    if let [(len, src)] = plan.as_slice() {
        let b = &mut buf[..*len as usize];
        match src {
            None => b.fill(0),
            Some((f, phys)) => {
                let got = f.pread_full(b, *phys)?;
                short_log(f, *phys, got, phys + len)?;
            }
        }
        return Ok((at, pos));
    }
    // Each stretch's part of `buf`, taken when it is read; holes are zeros.
    let mut parts: Vec<Option<&mut [u8]>> = Vec::with_capacity(plan.len());
    let mut rest = &mut buf[..pos];
    for (len, src) in plan {
        let (part, r) = std::mem::take(&mut rest).split_at_mut(*len as usize);
        rest = r;
        if src.is_none() {
            part.fill(0);
        }
        parts.push(Some(part));
    }
    // The data stretches by data log, then by offset in it.
    let mut order: Vec<(usize, &Arc<File>, u64)> = plan
        .iter()
        .enumerate()
        .filter_map(|(k, (_, src))| src.as_ref().map(|(f, p)| (k, f, *p)))
        .collect();
    order.sort_by_key(|&(_, f, p)| (Arc::as_ptr(f) as usize, p));
    let mut i = 0;
    while i < order.len() {
        let (first, f, phys) = order[i];
        // The run of stretches [i, j) that follow each other in this data log.
        let mut j = i + 1;
        let mut end = phys + plan[first].0;
        while j < order.len() && j - i < MAX_RUN {
            let (k, g, p) = order[j];
            if !(Arc::ptr_eq(f, g) && p >= end && p - end <= MAX_GAP) {
                break;
            }
            end = p + plan[k].0;
            j += 1;
        }
        let got = if j == i + 1 {
            f.pread_full(parts[first].take().expect("each stretch is read once"), phys)?
        } else {
            // The bytes between the stretches (frames) land in a scratch buffer.
            let data: u64 = order[i..j].iter().map(|&(k, ..)| plan[k].0).sum();
            let mut scratch = vec![0u8; (end - phys - data) as usize];
            let mut sc = &mut scratch[..];
            let mut iov: Vec<std::io::IoSliceMut<'_>> = Vec::with_capacity(2 * (j - i));
            let mut prev_end = phys;
            for &(k, _, p) in &order[i..j] {
                if p > prev_end {
                    let (g, r) = std::mem::take(&mut sc).split_at_mut((p - prev_end) as usize);
                    sc = r;
                    iov.push(std::io::IoSliceMut::new(g));
                }
                iov.push(std::io::IoSliceMut::new(
                    parts[k].take().expect("each stretch is read once"),
                ));
                prev_end = p + plan[k].0;
            }
            f.preadv_full(&mut iov, phys)?
        };
        short_log(f, phys, got, end)?;
        i = j;
    }
    Ok((at, pos))
}

/// The error for a data log that ended (`got` bytes from `phys`) before `end`, where the index
/// points.
fn short_log(f: &File, phys: u64, got: usize, end: u64) -> Result<()> {
    if phys + (got as u64) < end {
        return Err(Error::corrupt(
            f.path(),
            format!("data log ends at {} but the index points to {}", phys + got as u64, end),
        ));
    }
    Ok(())
}
