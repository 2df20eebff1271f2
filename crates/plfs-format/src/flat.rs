//! The flattened index (`flat.index`): one merged index readers load instead of every index log.
//!
//! It never goes stale: it records a signature of the container's `meta/` droppings (every writer
//! leaves a uniquely named close dropping, every truncate a trunc dropping) and the container's
//! logical path. A reader uses it only if no writer is open, the signature still matches and the
//! path is unchanged; any later write, truncate or rename makes readers ignore it.
//!
//! Format: { magic [8] = "PLFSFLT\0" | version u32 | flags u32 | signature u64 | path_len u32 |
//!           nchunks u32 | ntruncs u32 | npatterns u32 | npieces u64 | path bytes |
//!           chunks: { writer_id u64 | pid u32 | dir_kind u8 | pad u8 | dir_len u16 | name_len u16 |
//!                     host_len u16 | dir | name | host } |
//!           truncs: { ts u64 | writer u64 | size u64 } |
//!           pieces: { logical u64 | len u64 | phys u64 | ts u64 | writer u64 | chunk u32 } |
//!           patterns: { start u64 | len u64 | stride u64 | count u64 | phys u64 | pstride u64 |
//!                       ts_first u64 | ts_last u64 | writer u64 | chunk u32 } |
//!           crc32c u32 over every preceding byte }
//!
//! Version 1 had no `pstride` (76-byte patterns in version 2, 68 in version 1): its elements lay
//! back to back, `pstride = len`.

use crate as format;
use crate::error::{Error, Result};
use crate::MetaDropping;
use std::path::{Path, PathBuf};

/// Flattened index magic.
pub const FLAT_MAGIC: [u8; 8] = *b"PLFSFLT\0";
/// Fixed header length.
pub const FLAT_HEADER_LEN: usize = 48;
/// Length of one encoded piece.
pub const FLAT_PIECE_LEN: usize = 44;
/// Length of one encoded pattern.
pub const FLAT_PATTERN_LEN: usize = 76;
/// Length of one encoded pattern in a version 1 flattened index (no `pstride`).
pub const FLAT_PATTERN_LEN_V1: usize = 68;

/// A compressed run: (start, len, stride, count, phys, pstride, ts_first, ts_last, writer, chunk).
pub type FlatPattern = (u64, u64, u64, u64, u64, u64, u64, u64, u64, u32);

/// Where a chunk's hostdir is: inside the container (relative name) or on a shadow (absolute).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlatChunk {
    /// Writer id.
    pub writer_id: u64,
    /// Writer pid.
    pub pid: u32,
    /// Writer host.
    pub host: String,
    /// True when `dir` is relative to the container.
    pub in_container: bool,
    /// Hostdir path (relative name or absolute shadow path).
    pub dir: PathBuf,
    /// Data log file name.
    pub name: String,
}

/// A decoded flattened index.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Flat {
    /// Signature of the droppings it was built from.
    pub signature: u64,
    /// Logical path of the file when it was flattened.
    pub logical: PathBuf,
    /// Data logs.
    pub chunks: Vec<FlatChunk>,
    /// Truncates: (ts, writer, size).
    pub truncs: Vec<(u64, u64, u64)>,
    /// Pieces: (logical, len, phys, ts, writer, chunk).
    pub pieces: Vec<(u64, u64, u64, u64, u64, u32)>,
    /// Compressed runs.
    pub patterns: Vec<FlatPattern>,
}

/// The signature of a container's droppings, or `None` when a writer is open (then no flattened
/// index is valid).
pub fn signature(droppings: &[MetaDropping]) -> Option<u64> {
    signature_with(droppings, |_| false)
}

/// [`signature`], where the open droppings of the writers `counted` accepts count as names (one
/// that comes or goes changes it) instead of making it `None`: a process's own writers, whose
/// writes it knows without reading their logs.
pub fn signature_with(droppings: &[MetaDropping], counted: impl Fn(u64) -> bool) -> Option<u64> {
    let mut names: Vec<String> = Vec::with_capacity(droppings.len());
    for d in droppings {
        match d {
            MetaDropping::Open { writer_id, .. } if !counted(*writer_id) => return None,
            _ => names.push(d.name()),
        }
    }
    names.sort();
    Some(format::hash_str(&names.join("/")) ^ names.len() as u64)
}

fn put_str(out: &mut Vec<u8>, s: &[u8]) {
    out.extend_from_slice(s);
}

impl Flat {
    /// Encodes the flattened index.
    pub fn encode(&self) -> Vec<u8> {
        use std::os::unix::ffi::OsStrExt;
        let path = self.logical.as_os_str().as_bytes();
        let mut b = Vec::with_capacity(FLAT_HEADER_LEN + self.pieces.len() * FLAT_PIECE_LEN + 256);
        b.extend_from_slice(&FLAT_MAGIC);
        b.extend_from_slice(&format::LOG_VERSION.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&self.signature.to_le_bytes());
        b.extend_from_slice(&(path.len() as u32).to_le_bytes());
        b.extend_from_slice(&(self.chunks.len() as u32).to_le_bytes());
        b.extend_from_slice(&(self.truncs.len() as u32).to_le_bytes());
        b.extend_from_slice(&(self.patterns.len() as u32).to_le_bytes());
        b.extend_from_slice(&(self.pieces.len() as u64).to_le_bytes());
        put_str(&mut b, path);
        for c in &self.chunks {
            let dir = c.dir.as_os_str().as_bytes();
            b.extend_from_slice(&c.writer_id.to_le_bytes());
            b.extend_from_slice(&c.pid.to_le_bytes());
            b.push(u8::from(c.in_container));
            b.push(0);
            b.extend_from_slice(&(dir.len() as u16).to_le_bytes());
            b.extend_from_slice(&(c.name.len() as u16).to_le_bytes());
            b.extend_from_slice(&(c.host.len() as u16).to_le_bytes());
            put_str(&mut b, dir);
            put_str(&mut b, c.name.as_bytes());
            put_str(&mut b, c.host.as_bytes());
        }
        for &(ts, w, size) in &self.truncs {
            for v in [ts, w, size] {
                b.extend_from_slice(&v.to_le_bytes());
            }
        }
        for &(l, len, phys, ts, w, chunk) in &self.pieces {
            for v in [l, len, phys, ts, w] {
                b.extend_from_slice(&v.to_le_bytes());
            }
            b.extend_from_slice(&chunk.to_le_bytes());
        }
        for &(a, l, st, n, ph, ps, t0, t1, w, chunk) in &self.patterns {
            for v in [a, l, st, n, ph, ps, t0, t1, w] {
                b.extend_from_slice(&v.to_le_bytes());
            }
            b.extend_from_slice(&chunk.to_le_bytes());
        }
        let crc = crate::crc::crc32c(&b);
        b.extend_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decodes a flattened index held in memory; `path` names the file in errors.
    pub fn decode(path: &Path, b: &[u8]) -> Result<Flat> {
        let mut f = Flat::default();
        let mut read = |off: u64, buf: &mut [u8]| {
            let at = off as usize;
            buf.copy_from_slice(&b[at..at + buf.len()]);
            Ok(())
        };
        decode_stream::<Error>(
            path,
            b.len() as u64,
            &mut read,
            &mut |h| {
                f.signature = h.signature;
                f.logical = h.logical.clone();
                true
            },
            &mut |item| {
                match item {
                    FlatItem::Chunk(c) => f.chunks.push(c),
                    FlatItem::Trunc(t) => f.truncs.push(t),
                    FlatItem::Piece(p) => f.pieces.push(p),
                    FlatItem::Pattern(p) => f.patterns.push(p),
                }
                Ok(())
            },
        )?;
        Ok(f)
    }
}

/// The header of a flattened index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlatHead {
    /// Signature of the droppings it was built from.
    pub signature: u64,
    /// Logical path of the file when it was flattened.
    pub logical: PathBuf,
}

/// One record of a flattened index, in file order: every chunk, then truncates, pieces, patterns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlatItem {
    /// A data log (its number is its position among the chunks).
    Chunk(FlatChunk),
    /// A truncate: (ts, writer, size).
    Trunc((u64, u64, u64)),
    /// A piece: (logical, len, phys, ts, writer, chunk).
    Piece((u64, u64, u64, u64, u64, u32)),
    /// A compressed run.
    Pattern(FlatPattern),
}

/// What [`decode_stream`] reads a flattened index through: `read(offset, buf)` fills `buf`.
pub type ReadAt<'a, E> = dyn FnMut(u64, &mut [u8]) -> Result<(), E> + 'a;

/// The most a flattened index is read at a time by [`decode_stream`].
const STREAM_PIECE: usize = 1 << 20;

/// Decodes a flattened index of `len` bytes, read through `read(offset, buf)` (which fills `buf`)
/// in pieces of at most 1 MiB, so that a reader never holds the whole file nor a decoded copy of
/// it. `head` sees the header first and may stop the decode (`false`: returns `Ok(false)`, e.g. a
/// stale index); then every record goes to `item`, already checked against the counts and the
/// chunk list. The checksum covers the whole file and is checked last: on an error, the caller
/// must drop whatever it built from the records. The caller's error type `E` carries its own
/// errors from `read` and `item` (e.g. a failed read) and this decoder's.
pub fn decode_stream<E: From<Error>>(
    path: &Path,
    len: u64,
    read: &mut ReadAt<'_, E>,
    head: &mut dyn FnMut(&FlatHead) -> bool,
    item: &mut dyn FnMut(FlatItem) -> Result<(), E>,
) -> Result<bool, E> {
    use std::os::unix::ffi::OsStrExt;
    let bad = |what: &str| E::from(Error::corrupt(path, what.to_string()));
    if len < (FLAT_HEADER_LEN + 4) as u64 {
        return Err(bad("not a flattened index (bad magic or too short)"));
    }
    let mut r = Stream {
        read,
        path,
        body: len - 4,
        loaded: 0,
        buf: Vec::new(),
        pos: 0,
        crc: 0,
    };
    if r.bytes(8)? != FLAT_MAGIC {
        return Err(bad("not a flattened index (bad magic or too short)"));
    }
    let v = r.u32()?;
    if v == 0 || v > format::FORMAT_VERSION {
        return Err(bad("unsupported flattened index version"));
    }
    r.u32()?; // flags
    let signature = r.u64()?;
    let path_len = r.u32()? as usize;
    let nchunks = r.u32()? as usize;
    let ntruncs = r.u32()? as usize;
    let npatterns = r.u32()? as usize;
    let npieces = r.u64()? as usize;
    if path_len > 1 << 16 {
        return Err(bad("path length exceeds any path"));
    }
    let logical = PathBuf::from(std::ffi::OsStr::from_bytes(r.bytes(path_len)?));
    if !head(&FlatHead { signature, logical }) {
        return Ok(false);
    }
    for _ in 0..nchunks {
        let writer_id = r.u64()?;
        let pid = r.u32()?;
        let kind = r.bytes(2)?[0];
        let dl = r.u16()? as usize;
        let nl = r.u16()? as usize;
        let hl = r.u16()? as usize;
        let dir = PathBuf::from(std::ffi::OsStr::from_bytes(r.bytes(dl)?));
        let name = String::from_utf8_lossy(r.bytes(nl)?).into_owned();
        let host = String::from_utf8_lossy(r.bytes(hl)?).into_owned();
        item(FlatItem::Chunk(FlatChunk {
            writer_id,
            pid,
            host,
            in_container: kind == 1,
            dir,
            name,
        }))?;
    }
    for _ in 0..ntruncs {
        item(FlatItem::Trunc((r.u64()?, r.u64()?, r.u64()?)))?;
    }
    if npieces.checked_mul(FLAT_PIECE_LEN).is_none_or(|n| n as u64 > len) {
        return Err(bad("piece count exceeds file size"));
    }
    for _ in 0..npieces {
        let p = (r.u64()?, r.u64()?, r.u64()?, r.u64()?, r.u64()?, r.u32()?);
        if p.5 as usize >= nchunks {
            return Err(bad("piece refers to an unknown data log"));
        }
        item(FlatItem::Piece(p))?;
    }
    let pattern_len = if v == 1 { FLAT_PATTERN_LEN_V1 } else { FLAT_PATTERN_LEN };
    if npatterns.checked_mul(pattern_len).is_none_or(|n| n as u64 > len) {
        return Err(bad("pattern count exceeds file size"));
    }
    for _ in 0..npatterns {
        let (start, len, stride, count, phys) = (r.u64()?, r.u64()?, r.u64()?, r.u64()?, r.u64()?);
        let pstride = if v == 1 { len } else { r.u64()? };
        let p = (
            start,
            len,
            stride,
            count,
            phys,
            pstride,
            r.u64()?,
            r.u64()?,
            r.u64()?,
            r.u32()?,
        );
        let fits = (count.checked_sub(1))
            .and_then(|c| c.checked_mul(stride))
            .and_then(|x| x.checked_add(start))
            .and_then(|x| x.checked_add(len))
            .is_some();
        if p.9 as usize >= nchunks || count == 0 || len == 0 || stride < len || pstride < len || !fits {
            return Err(bad("invalid pattern"));
        }
        item(FlatItem::Pattern(p))?;
    }
    if r.loaded != r.body || r.pos != r.buf.len() {
        return Err(bad("trailing bytes in flattened index"));
    }
    let mut crc = [0u8; 4];
    (r.read)(r.body, &mut crc)?;
    if format::le_u32(&crc) != r.crc {
        return Err(bad("flattened index checksum mismatch"));
    }
    Ok(true)
}

/// The body of a flattened index, read a piece at a time, checksummed as it is read.
struct Stream<'a, E> {
    read: &'a mut ReadAt<'a, E>,
    path: &'a Path,
    /// Bytes before the checksum.
    body: u64,
    /// Bytes of the body read so far.
    loaded: u64,
    buf: Vec<u8>,
    /// Next unread byte of `buf`.
    pos: usize,
    crc: u32,
}

impl<E: From<Error>> Stream<'_, E> {
    fn bytes(&mut self, n: usize) -> Result<&[u8], E> {
        if self.buf.len() - self.pos < n {
            let left = (self.body - self.loaded) as usize;
            if self.buf.len() - self.pos + left < n {
                return Err(Error::corrupt(self.path, "truncated flattened index").into());
            }
            self.buf.drain(..self.pos);
            self.pos = 0;
            let have = self.buf.len();
            let more = left.min(STREAM_PIECE.max(n - have));
            self.buf.resize(have + more, 0);
            (self.read)(self.loaded, &mut self.buf[have..])?;
            self.crc = crc32c::crc32c_append(self.crc, &self.buf[have..]);
            self.loaded += more as u64;
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    fn u16(&mut self) -> Result<u16, E> {
        Ok(u16::from_le_bytes(self.bytes(2)?.try_into().expect("2 bytes")))
    }
    fn u32(&mut self) -> Result<u32, E> {
        Ok(format::le_u32(self.bytes(4)?))
    }
    fn u64(&mut self) -> Result<u64, E> {
        Ok(format::le_u64(self.bytes(8)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/format.md section 6 gives the same layout: read from the document, not restated.
    #[test]
    fn layout_matches_format_md() {
        let doc = include_str!("../../../docs/format.md");
        let start = doc.find("## 6. Flattened index").expect("format.md has section 6");
        let sec = &doc[start..start + doc[start..].find("\n## 7.").expect("section 7 follows")];
        for needle in [
            "magic [8] = \"PLFSFLT\\0\"",
            "nchunks u32 | ntruncs u32 | npatterns u32 | npieces u64",
            "chunk{nchunks} | trunc{ntruncs} | piece{npieces} | pattern{npatterns} | crc32c u32",
            &format!("({FLAT_PIECE_LEN} bytes)"),
            &format!("({FLAT_PATTERN_LEN} bytes)"),
            &format!("The header is {FLAT_HEADER_LEN} bytes"),
        ] {
            assert!(sec.contains(needle), "format.md section 6 lacks {needle:?}");
        }
        assert_eq!(&FLAT_MAGIC, b"PLFSFLT\0");
        // Field widths in the document add up to the constants.
        let width = |fields: &str| -> usize {
            fields
                .split('|')
                .map(|f| match f.split_whitespace().nth(1) {
                    Some("u64") => 8,
                    Some("u32") => 4,
                    _ => panic!("field {f:?}"),
                })
                .sum()
        };
        let flat: String = sec.split_whitespace().collect::<Vec<_>>().join(" ");
        let body = |name: &str| -> String {
            let key = format!("\n{name}: {{");
            let key = key.trim_start();
            let i = flat.find(&format!(" {key}")).unwrap_or_else(|| panic!("{name} record"));
            let rest = &flat[i + key.len() + 1..];
            rest[..rest.find('}').unwrap()]
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert_eq!(width(&body("piece")), FLAT_PIECE_LEN);
        assert_eq!(width(&body("pattern")), FLAT_PATTERN_LEN);
        assert_eq!(width(&body("trunc")), 24);
        // And the encoder writes what they say: header, one piece, one pattern, the crc.
        let f = Flat {
            signature: 1,
            logical: "".into(),
            chunks: vec![],
            truncs: vec![],
            pieces: vec![(0, 1, 0, 1, 1, 0)],
            patterns: vec![(0, 1, 2, 8, 0, 1, 1, 2, 1, 0)],
        };
        assert_eq!(
            f.encode().len(),
            FLAT_HEADER_LEN + FLAT_PIECE_LEN + FLAT_PATTERN_LEN + 4
        );
    }

    #[test]
    fn roundtrip_and_corruption() {
        let f = Flat {
            signature: 7,
            logical: "/mnt/plfs/f".into(),
            chunks: vec![FlatChunk {
                writer_id: 1,
                pid: 2,
                host: "h".into(),
                in_container: true,
                dir: "hostdir.3".into(),
                name: "data.x".into(),
            }],
            truncs: vec![(1, 2, 3)],
            pieces: vec![(0, 10, 64, 5, 1, 0)],
            patterns: vec![(100, 10, 40, 3, 74, 42, 6, 9, 1, 0)],
        };
        let b = f.encode();
        assert_eq!(Flat::decode(Path::new("x"), &b).unwrap(), f);
        for cut in 0..b.len() {
            assert!(Flat::decode(Path::new("x"), &b[..cut]).is_err());
        }
        let mut c = b.clone();
        c[60] ^= 1;
        assert!(Flat::decode(Path::new("x"), &c).is_err());
    }

    /// An index of several MiB is read in 1 MiB pieces: records that straddle a piece decode
    /// whole, at most one piece is read at a time, and damage anywhere (the last piece too) or a
    /// cut is an error, never a shorter index.
    #[test]
    fn a_large_index_streams_in_pieces() {
        let mut f = Flat {
            signature: 9,
            logical: "/mnt/plfs/big".into(),
            chunks: vec![FlatChunk {
                writer_id: 1,
                pid: 2,
                host: "h".into(),
                in_container: true,
                dir: "hostdir.0".into(),
                name: "data.y".into(),
            }],
            ..Default::default()
        };
        f.pieces = (0..80_000u64).map(|i| (i * 100, 10 + i % 7, i * 17, i, 1, 0)).collect();
        f.patterns = (0..5_000u64)
            .map(|i| (1 << 40 | i << 20, 8, 16, 3, i, 8, 1, 2, 1, 0))
            .collect();
        let b = f.encode();
        assert!(b.len() > 3 * STREAM_PIECE);
        let (mut got, mut most) = (Flat::default(), 0usize);
        let ok = decode_stream::<Error>(
            Path::new("x"),
            b.len() as u64,
            &mut |off, buf| {
                most = most.max(buf.len());
                buf.copy_from_slice(&b[off as usize..off as usize + buf.len()]);
                Ok(())
            },
            &mut |h| {
                got.signature = h.signature;
                got.logical = h.logical.clone();
                true
            },
            &mut |it| {
                match it {
                    FlatItem::Chunk(c) => got.chunks.push(c),
                    FlatItem::Trunc(t) => got.truncs.push(t),
                    FlatItem::Piece(p) => got.pieces.push(p),
                    FlatItem::Pattern(p) => got.patterns.push(p),
                }
                Ok(())
            },
        )
        .unwrap();
        assert!(ok);
        assert_eq!(got, f);
        assert!(most <= STREAM_PIECE, "read {most} bytes at once");
        for at in [STREAM_PIECE - 3, 2 * STREAM_PIECE + 1, b.len() - 10, b.len() - 2] {
            let mut c = b.clone();
            c[at] ^= 0x10;
            assert!(Flat::decode(Path::new("x"), &c).is_err(), "byte {at} flipped");
        }
        assert!(Flat::decode(Path::new("x"), &b[..b.len() - STREAM_PIECE]).is_err());
        // A stale header stops the decode before any record.
        let stop = decode_stream::<Error>(
            Path::new("x"),
            b.len() as u64,
            &mut |off, buf| {
                buf.copy_from_slice(&b[off as usize..off as usize + buf.len()]);
                Ok(())
            },
            &mut |_| false,
            &mut |_| panic!("a record after a refused header"),
        );
        assert!(!stop.unwrap());
    }
}
