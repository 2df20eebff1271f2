//! The demo's data pattern: every byte is a deterministic function of its file offset, so any
//! process can generate or verify any range without coordination.
//!
//! Invariant: byte `o` of a file is byte `o % 8` (little-endian) of `mix(o / 8)`.

/// splitmix64's finaliser: a bijective, well-mixed function of the word index.
fn mix(word: u64) -> u64 {
    let mut z = word.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Fills `buf` with the pattern bytes of offsets `off..off + buf.len()`.
pub fn fill(buf: &mut [u8], off: u64) {
    let mut pos = 0usize;
    while pos < buf.len() {
        let o = off + pos as u64;
        let word = mix(o / 8).to_le_bytes();
        let skip = (o % 8) as usize;
        let n = (8 - skip).min(buf.len() - pos);
        buf[pos..pos + n].copy_from_slice(&word[skip..skip + n]);
        pos += n;
    }
}

/// Checks `buf` against the pattern at `off`; returns the first mismatching offset with the
/// expected and actual bytes.
pub fn verify(buf: &[u8], off: u64, scratch: &mut Vec<u8>) -> Option<(u64, u8, u8)> {
    scratch.resize(buf.len(), 0);
    fill(scratch, off);
    if scratch[..] == buf[..] {
        return None;
    }
    let i = buf
        .iter()
        .zip(scratch.iter())
        .position(|(a, b)| a != b)
        .expect("slices differ");
    Some((off + i as u64, scratch[i], buf[i]))
}

/// crc32c of the pattern over `0..len`, computed in `chunk`-byte pieces.
pub fn crc_of_range(len: u64, chunk: usize) -> u32 {
    let mut buf = vec![0u8; chunk];
    let mut crc = 0u32;
    let mut off = 0u64;
    while off < len {
        let n = ((len - off) as usize).min(chunk);
        fill(&mut buf[..n], off);
        crc = crc32c::crc32c_append(crc, &buf[..n]);
        off += n as u64;
    }
    crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unaligned_fill_matches_aligned() {
        let mut whole = vec![0u8; 100];
        fill(&mut whole, 0);
        for start in 0..20 {
            for len in 0..30 {
                let mut part = vec![0u8; len];
                fill(&mut part, start as u64);
                assert_eq!(&part[..], &whole[start..start + len]);
            }
        }
        // Different offsets give different bytes (not a constant fill).
        assert_ne!(whole[0..8], whole[8..16]);
    }

    #[test]
    fn verify_finds_first_mismatch() {
        let mut b = vec![0u8; 64];
        fill(&mut b, 13);
        let mut s = Vec::new();
        assert_eq!(verify(&b, 13, &mut s), None);
        let good = b[40];
        b[40] ^= 0xff;
        assert_eq!(verify(&b, 13, &mut s), Some((53, good, good ^ 0xff)));
        assert_eq!(
            crc_of_range(64, 10),
            crc32c::crc32c(&{
                let mut w = vec![0u8; 64];
                fill(&mut w, 0);
                w
            })
        );
    }
}
