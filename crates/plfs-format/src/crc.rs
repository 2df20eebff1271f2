//! CRC-32C (Castagnoli, as in iSCSI and ext4; format.md "Conventions") of the format's records.
//!
//! Most checksummed things in a container are a few dozen bytes: a data log's 28-byte frame on
//! every write, a marker, a log header, a 1-N record. The `crc32c` crate is built for long
//! buffers (three interleaved hardware streams); below a few hundred bytes its set-up costs more
//! than the sum itself: about 330 instructions for a frame, a quarter of a whole 4 KiB write
//! through ldplfs (issue 26, callgrind). Short inputs take a table-driven sum here (eight bytes
//! per step, "slicing by 8", about 80 instructions for a frame); longer ones go to the crate. Both
//! give the same value for every input: a test holds them to it.

/// The reflected Castagnoli polynomial (0x1EDC6F41).
const POLY: u32 = 0x82F6_3B78;

/// Inputs up to this many bytes take the table-driven sum.
const SHORT: usize = 256;

/// `T[0]` is the byte-at-a-time table; `T[k][i]` is the sum of byte `i` followed by `k` zero
/// bytes, so that eight bytes are folded with eight look-ups.
static T: [[u32; 256]; 8] = TABLES;

/// The tables, for the constant evaluation of [`state_after`].
const TABLES: [[u32; 256]; 8] = tables();

const fn tables() -> [[u32; 256]; 8] {
    let mut t = [[0u32; 256]; 8];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { (c >> 1) ^ POLY } else { c >> 1 };
            k += 1;
        }
        t[0][i] = c;
        i += 1;
    }
    let mut k = 1;
    while k < 8 {
        let mut i = 0;
        while i < 256 {
            let prev = t[k - 1][i];
            t[k][i] = (prev >> 8) ^ t[0][(prev & 0xff) as usize];
            i += 1;
        }
        k += 1;
    }
    t
}

/// CRC-32C of `b`.
pub fn crc32c(b: &[u8]) -> u32 {
    if b.len() > SHORT {
        return crc32c::crc32c(b);
    }
    !update(!0, b)
}

/// The running state of the sum (before its final inversion) after the bytes `b`, at compile
/// time: a constant prefix, such as a frame's magic, is summed once, not at every encode.
pub const fn state_after(b: &[u8]) -> u32 {
    let mut crc = !0u32;
    let mut i = 0;
    while i < b.len() {
        crc = TABLES[0][((crc ^ b[i] as u32) & 0xff) as usize] ^ (crc >> 8);
        i += 1;
    }
    crc
}

/// CRC-32C of a prefix followed by `rest`, given the prefix's [`state_after`]: the same value
/// as [`crc32c`] of the whole. For short inputs (a frame's 24 bytes after its magic: three
/// eight-byte steps, no byte at a time).
#[inline]
pub fn crc32c_after(state: u32, rest: &[u8]) -> u32 {
    if rest.len() > SHORT {
        return crc32c::crc32c_append(!state, rest);
    }
    !update(state, rest)
}

/// Folds `b` into the running state `crc` (inline: a caller's fixed length, such as a frame's,
/// unrolls the loop).
#[inline(always)]
fn update(mut crc: u32, b: &[u8]) -> u32 {
    let mut words = b.chunks_exact(8);
    for w in &mut words {
        let mut v = [0u8; 8];
        v.copy_from_slice(w);
        let v = u64::from_le_bytes(v) ^ u64::from(crc);
        let at = |shift: u32| ((v >> shift) & 0xff) as usize;
        crc = T[7][at(0)]
            ^ T[6][at(8)]
            ^ T[5][at(16)]
            ^ T[4][at(24)]
            ^ T[3][at(32)]
            ^ T[2][at(40)]
            ^ T[1][at(48)]
            ^ T[0][at(56)];
    }
    for &x in words.remainder() {
        crc = T[0][((crc ^ u32::from(x)) & 0xff) as usize] ^ (crc >> 8);
    }
    crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_check_value() {
        // The catalogue's check value of CRC-32/ISCSI.
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
    }

    #[test]
    fn a_sum_after_a_prefix_equals_the_sum_of_the_whole() {
        let b: Vec<u8> = (0..2 * SHORT as u32 + 40).map(|i| (i * 131 + 7) as u8).collect();
        for cut in [0, 1, 3, 4, 5, 8, 13] {
            let state = state_after(&b[..cut]);
            for end in cut..=b.len() {
                assert_eq!(crc32c_after(state, &b[cut..end]), crc32c(&b[..end]), "{cut}..{end}");
            }
        }
        const MAGIC: u32 = state_after(b"PLFW");
        assert_eq!(crc32c_after(MAGIC, b""), crc32c(b"PLFW"));
    }

    #[test]
    fn equals_the_crate_at_every_length_and_alignment() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let bytes: Vec<u8> = (0..2 * SHORT + 64)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        for start in 0..8 {
            for len in 0..=(bytes.len() - start) {
                let s = &bytes[start..start + len];
                assert_eq!(crc32c(s), crc32c::crc32c(s), "{len} bytes at offset {start}");
            }
        }
    }
}
