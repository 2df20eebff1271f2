//! The records of a writer's run of writes: [`encode_records`] turns runs of writes into pattern
//! records (format.md, "Pattern records"), their timestamps as varint deltas.

use crate::{WriteRecord, PATTERN_MAX_RUN, PATTERN_MIN_RUN, REC_PATTERN};

/// Encodes a writer's buffered records, turning runs of at least [`PATTERN_MIN_RUN`] writes of
/// one length at a constant logical stride (>= length) that lie `gap` bytes apart in the data log
/// (0 in an unframed log, [`crate::FRAME_LEN`] in a framed one) and carry no data checksum into
/// pattern records.
pub fn encode_records(recs: &[WriteRecord], gap: u64, out: &mut Vec<u8>) {
    let mut i = 0;
    while i < recs.len() {
        let r = &recs[i];
        if r.data_crc == 0 {
            if let Some(n) = encode_run(&recs[i..recs.len().min(i + PATTERN_MAX_RUN)], gap, out) {
                i += n;
                continue;
            }
        }
        r.encode_into(out);
        i += 1;
    }
}

/// Encodes the run that starts at `recs[0]` (a write with no data checksum) as one pattern
/// record, if it is at least [`PATTERN_MIN_RUN`] writes long; returns its length (`None`: nothing
/// was written). One pass: each write is checked against the one before it and its timestamp's
/// delta written as it is found.
fn encode_run(recs: &[WriteRecord], gap: u64, out: &mut Vec<u8>) -> Option<usize> {
    let (r, next) = (&recs[0], recs.get(1)?);
    let stride = next
        .logical_off
        .checked_sub(r.logical_off)
        .filter(|&s| s > 0 && s >= r.length)?;
    // The deltas go to a buffer on the stack, and to `out` a few dozen at a time, after the
    // record's fixed part once the run is long enough (no push, with its check of the vector's
    // capacity, per byte).
    let mut buf = [0u8; 64 * VARINT_MAX];
    let (mut n, mut a, mut count, mut start) = (0, r, 1, None);
    for b in &recs[1..] {
        let continues = b.length == r.length
            && b.data_crc == 0
            && b.logical_off.checked_sub(a.logical_off) == Some(stride)
            && b.physical_off == a.physical_off + r.length + gap
            && b.ts >= a.ts;
        if !continues {
            break;
        }
        if n > buf.len() - VARINT_MAX {
            start.get_or_insert_with(|| put_pattern_head(out, r, stride));
            out.extend_from_slice(&buf[..n]);
            n = 0;
        }
        let slot = buf[n..].first_chunk_mut().expect("room for a varint");
        n += put_varint(slot, b.ts - a.ts);
        a = b;
        count += 1;
    }
    if count < PATTERN_MIN_RUN {
        return None;
    }
    let start = start.unwrap_or_else(|| put_pattern_head(out, r, stride));
    out.extend_from_slice(&buf[..n]);
    out[start + 28..start + 36].copy_from_slice(&(count as u64).to_le_bytes());
    out[start + 52..start + 60].copy_from_slice(&a.ts.to_le_bytes());
    finish_pattern(out, start);
    Some(count)
}

/// Appends the fixed part of a pattern record of writes like `r` at `stride`, its count and last
/// timestamp 0 (set by the caller); returns where the record starts.
fn put_pattern_head(out: &mut Vec<u8>, r: &WriteRecord, stride: u64) -> usize {
    let start = out.len();
    put_fixed(out, [r.logical_off, r.length, stride, 0, r.physical_off, r.ts, 0]);
    start
}

/// Appends a pattern record's kind, a body length of 0 (set by [`finish_pattern`]) and its fixed
/// fields.
fn put_fixed(out: &mut Vec<u8>, fixed: [u64; 7]) {
    out.extend_from_slice(&REC_PATTERN.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    for v in fixed {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&0u32.to_le_bytes());
}

/// Sets the body length of the pattern record at `start` (all of `out` after it) and appends its
/// checksum.
fn finish_pattern(out: &mut Vec<u8>, start: usize) {
    let blen = (out.len() - start - 4) as u16;
    out[start + 2..start + 4].copy_from_slice(&blen.to_le_bytes());
    let crc = crate::crc::crc32c(&out[start..]);
    out.extend_from_slice(&crc.to_le_bytes());
}

/// Appends a pattern record: `fixed` holds its first seven fields in order (logical start,
/// length, stride, count, physical start, first and last timestamp), `ts` yields the `count`
/// timestamps, whose differences follow as varints.
pub(crate) fn encode_pattern(out: &mut Vec<u8>, fixed: [u64; 7], mut ts: impl Iterator<Item = u64>) {
    let start = out.len();
    put_fixed(out, fixed);
    if let Some(mut prev) = ts.next() {
        for t in ts {
            let mut slot = [0u8; VARINT_MAX];
            let n = put_varint(&mut slot, t - prev);
            out.extend_from_slice(&slot[..n]);
            prev = t;
        }
    }
    finish_pattern(out, start);
}

/// The longest varint of a `u64`: ten bytes of seven bits.
const VARINT_MAX: usize = 10;

/// Writes `d` as a varint at the start of `slot` and returns its length: seven bits a byte,
/// lowest first; the high bit says that another byte follows. (Inline: one and two bytes, the
/// usual deltas of a run's timestamps, take no loop.)
#[inline(always)]
fn put_varint(slot: &mut [u8; VARINT_MAX], mut d: u64) -> usize {
    if d < 0x80 {
        slot[0] = d as u8;
        return 1;
    }
    if d < 0x4000 {
        slot[0] = d as u8 | 0x80;
        slot[1] = (d >> 7) as u8;
        return 2;
    }
    let mut i = 0;
    while d >= 0x80 && i < VARINT_MAX - 1 {
        slot[i] = (d & 0x7f) as u8 | 0x80;
        d >>= 7;
        i += 1;
    }
    slot[i] = d as u8;
    i + 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::*;

    // What this module replaced, word for word: the bytes must not change.
    fn reference_pattern(out: &mut Vec<u8>, fixed: [u64; 7], mut ts: impl Iterator<Item = u64>) {
        let start = out.len();
        out.extend_from_slice(&REC_PATTERN.to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes());
        for v in fixed {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&0u32.to_le_bytes());
        if let Some(mut prev) = ts.next() {
            for t in ts {
                // Seven bits a byte, lowest first; the high bit says that another byte follows.
                let mut d = t - prev;
                prev = t;
                while d >= 0x80 {
                    out.push((d & 0x7f) as u8 | 0x80);
                    d >>= 7;
                }
                out.push(d as u8);
            }
        }
        let blen = (out.len() - start - 4) as u16;
        out[start + 2..start + 4].copy_from_slice(&blen.to_le_bytes());
        let crc = crate::crc::crc32c(&out[start..]);
        out.extend_from_slice(&crc.to_le_bytes());
    }

    // Encodes a writer's buffered records, turning runs of at least [`PATTERN_MIN_RUN`] writes of
    // one length at a constant logical stride (>= length) that lie `gap` bytes apart in the data log
    // (0 in an unframed log, [`FRAME_LEN`] in a framed one) and carry no data checksum into pattern
    // records.
    fn reference(recs: &[WriteRecord], gap: u64, out: &mut Vec<u8>) {
        let mut i = 0;
        while i < recs.len() {
            let r = recs[i];
            let mut j = i + 1;
            if r.data_crc == 0 && j < recs.len() && recs[j].logical_off > r.logical_off {
                let stride = recs[j].logical_off - r.logical_off;
                if stride >= r.length {
                    // Each record that continues the run, compared with the one before it (pairs of
                    // neighbours, so no index is checked against the slice).
                    let end = recs.len().min(i + PATTERN_MAX_RUN);
                    j += recs[i..end]
                        .windows(2)
                        .take_while(|w| {
                            let (a, b) = (&w[0], &w[1]);
                            b.length == r.length
                                && b.data_crc == 0
                                && b.logical_off.checked_sub(a.logical_off) == Some(stride)
                                && b.physical_off == a.physical_off + r.length + gap
                                && b.ts >= a.ts
                        })
                        .count();
                }
                if j - i >= PATTERN_MIN_RUN {
                    let run = &recs[i..j];
                    let fixed = [
                        r.logical_off,
                        r.length,
                        stride,
                        run.len() as u64,
                        r.physical_off,
                        r.ts,
                        recs[j - 1].ts,
                    ];
                    reference_pattern(out, fixed, run.iter().map(|x| x.ts));
                    i = j;
                    continue;
                }
            }
            r.encode_into(out);
            i += 1;
        }
    }

    #[test]
    fn the_one_pass_encoder_writes_the_bytes_of_the_old_one() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut rnd = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        for round in 0..300 {
            let gap = if round % 2 == 0 { 0 } else { crate::FRAME_LEN as u64 };
            let mut recs = Vec::new();
            let (mut off, mut phys, mut ts) = (rnd(1 << 20), rnd(1 << 20), rnd(1 << 40));
            while recs.len() < 5000 {
                // A run of some length, then something that breaks it (or not).
                let (len, stride) = (1 + rnd(8192), rnd(3));
                let run = [1, 2, 7, 8, 9, 63, 64, 65, 200, 4095, 4096, 4097][rnd(12) as usize];
                for _ in 0..run {
                    let d = [0, 1, 127, 128, 16383, 16384, 1 << 40, u64::MAX >> 1][rnd(8) as usize];
                    ts = ts.wrapping_add(d);
                    recs.push(WriteRecord {
                        logical_off: off,
                        length: len,
                        physical_off: phys,
                        ts,
                        data_crc: u32::from(rnd(40) == 0),
                    });
                    off = off.wrapping_add(len * stride + rnd(2) * rnd(3));
                    phys = phys.wrapping_add(len + gap + rnd(50) / 49);
                    if rnd(200) == 0 {
                        ts = ts.wrapping_sub(1);
                    }
                }
            }
            let (mut want, mut got) = (Vec::new(), Vec::new());
            reference(&recs, gap, &mut want);
            encode_records(&recs, gap, &mut got);
            assert_eq!(got, want, "round {round}");
        }
    }
}
