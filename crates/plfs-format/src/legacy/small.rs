//! The logs of a PLFS 2.x 1-N ("small file") directory.
//!
//! A logical directory `<dir>` holds `<dir>/SMALLFILECONTAINER/` on each backend, with one log
//! triple per writer: `dropping.{name,index,data}.<sec>.<usec>.<host>.<pid>`, and (on the first
//! backend) `meta-file-for-stat-operation`, whose inode gives every file's mode and owner.
//!
//! - Name log: packed records `{ length u32 | op u32 | ts u64 | name bytes, NUL-terminated,
//!   padded }` (`length` counts the 16-byte header; `ts` = seconds << 32 | microseconds; op 1
//!   CREATE, 2 DELETE, 3 OPEN, 4 RENAME with `from\0to\0`, 5 UTIME). An OPEN binds the file to
//!   this writer's index records whose `fid` is the byte offset of that OPEN record in its name
//!   log.
//! - Index log: 40-byte records `{ fid u64 | offset u64 | length u64 | ts u64 | physical i64 }`;
//!   `length == 0 && physical == -1` is a truncate to `offset`.
//! - Data log: the bytes, at `physical`.

use crate::error::{Error, Result};
use std::path::Path;

/// The directory holding a 1-N directory's logs on each backend.
pub const SMALL_CONTAINER: &str = "SMALLFILECONTAINER";
/// The file whose inode holds the mode and owner of every file of the directory.
pub const STAT_FILE: &str = "meta-file-for-stat-operation";
/// Name log prefix.
pub const NAME_PREFIX: &str = "dropping.name.";
/// Name record header length.
pub const NAME_HEADER_LEN: usize = 16;
/// Index record length.
pub const SMALL_INDEX_LEN: usize = 40;

/// Operation codes of name records.
pub mod ops {
    /// CREATE.
    pub const CREATE: u32 = 1;
    /// DELETE.
    pub const DELETE: u32 = 2;
    /// OPEN.
    pub const OPEN: u32 = 3;
    /// RENAME (`from\0to\0`).
    pub const RENAME: u32 = 4;
    /// UTIME.
    pub const UTIME: u32 = 5;
}

fn le64(b: &[u8]) -> u64 {
    u64::from_le_bytes(b[..8].try_into().expect("8 bytes"))
}

fn le32(b: &[u8]) -> u32 {
    u32::from_le_bytes(b[..4].try_into().expect("4 bytes"))
}

/// A name-log timestamp (`sec << 32 | usec`) in ns since the epoch.
pub fn ts_ns(ts: u64) -> i64 {
    ((ts >> 32) as i64).saturating_mul(1_000_000_000) + ((ts & 0xffff_ffff) as i64 % 1_000_000) * 1000
}

/// One decoded name record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameRecord {
    /// Byte offset of the record in its log (the `fid` of an OPEN).
    pub offset: u64,
    /// Operation ([`ops`]).
    pub op: u32,
    /// Timestamp (`sec << 32 | usec`).
    pub ts: u64,
    /// The name (RENAME: the source).
    pub name: String,
    /// RENAME: the target.
    pub to: Option<String>,
}

fn valid_name(n: &str) -> bool {
    !n.is_empty() && n != "." && n != ".." && !n.contains('/')
}

/// Decodes a name log, as [`decode_name_log`] does, without saying where a torn record was.
pub fn decode_names(path: &Path, b: &[u8]) -> Result<Vec<NameRecord>> {
    decode_name_log(path, b).map(|(records, _)| records)
}

/// Decodes a name log. A record that runs past the end (a torn append) ends it: its offset is
/// returned second, for the caller to report; anything else that cannot be right is an error
/// naming the log and the record's offset.
pub fn decode_name_log(path: &Path, b: &[u8]) -> Result<(Vec<NameRecord>, Option<u64>)> {
    let mut out = Vec::new();
    let mut off = 0usize;
    while b.len() - off >= NAME_HEADER_LEN {
        let bad = |why: &str| Error::corrupt(path, format!("name record at offset {off}: {why}"));
        let len = le32(&b[off..]) as usize;
        if len < NAME_HEADER_LEN + 2 {
            return Err(bad(&format!("length {len} is too short")));
        }
        if len > b.len() - off {
            return Ok((out, Some(off as u64)));
        }
        let op = le32(&b[off + 4..]);
        let ts = le64(&b[off + 8..]);
        let body = &b[off + NAME_HEADER_LEN..off + len];
        let mut parts = body.split(|&c| c == 0);
        let text = |s: &[u8]| {
            std::str::from_utf8(s)
                .ok()
                .filter(|n| valid_name(n))
                .map(str::to_string)
        };
        let name = text(parts.next().unwrap_or_default()).ok_or_else(|| bad("not a valid file name"))?;
        let to = match op {
            ops::RENAME => {
                Some(text(parts.next().unwrap_or_default()).ok_or_else(|| bad("rename without a valid target"))?)
            }
            ops::CREATE | ops::DELETE | ops::OPEN | ops::UTIME => None,
            _ => return Err(bad(&format!("unknown operation {op}"))),
        };
        out.push(NameRecord {
            offset: off as u64,
            op,
            ts,
            name,
            to,
        });
        off += len;
    }
    Ok((out, None))
}

/// One decoded index record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SmallIndexRecord {
    /// The file: offset of its OPEN record in the same writer's name log.
    pub fid: u64,
    /// Logical offset.
    pub offset: u64,
    /// Length (0 with `physical == None`: a truncate).
    pub length: u64,
    /// Timestamp.
    pub ts: u64,
    /// Offset in the data log; `None` for a truncate.
    pub physical: Option<u64>,
}

/// Decodes an index log (a trailing partial record is ignored).
pub fn decode_small_index(path: &Path, b: &[u8]) -> Result<Vec<SmallIndexRecord>> {
    let mut out = Vec::with_capacity(b.len() / SMALL_INDEX_LEN);
    for (i, r) in b.chunks_exact(SMALL_INDEX_LEN).enumerate() {
        let bad = |why: &str| Error::corrupt(path, format!("index record {i}: {why}"));
        let (offset, length, phys) = (le64(&r[8..]), le64(&r[16..]), le64(&r[32..]) as i64);
        let max = i64::MAX as u64;
        let physical = match phys {
            -1 if length == 0 => None,
            p if p >= 0 && (p as u64).checked_add(length).is_some_and(|e| e <= max) => Some(p as u64),
            _ => return Err(bad("bad physical offset")),
        };
        if offset.checked_add(length).is_none_or(|e| e > max) {
            return Err(bad(&format!("length {length} at offset {offset} overflows")));
        }
        out.push(SmallIndexRecord {
            fid: le64(r),
            offset,
            length,
            ts: le64(&r[24..]),
            physical,
        });
    }
    Ok(out)
}

/// Encodes a name record (for hand-made test directories).
pub fn encode_name(op: u32, ts: u64, names: &[&str]) -> Vec<u8> {
    let mut body: Vec<u8> = Vec::new();
    for n in names {
        body.extend_from_slice(n.as_bytes());
        body.push(0);
    }
    body.push(0);
    while body.len() % 4 != 0 {
        body.push(0);
    }
    let mut b = Vec::new();
    b.extend_from_slice(&((NAME_HEADER_LEN + body.len()) as u32).to_le_bytes());
    b.extend_from_slice(&op.to_le_bytes());
    b.extend_from_slice(&ts.to_le_bytes());
    b.extend_from_slice(&body);
    b
}

/// Encodes an index record (for hand-made test directories); `physical` `None` is a truncate.
pub fn encode_small_index(fid: u64, offset: u64, length: u64, ts: u64, physical: Option<u64>) -> [u8; SMALL_INDEX_LEN] {
    let mut b = [0u8; SMALL_INDEX_LEN];
    b[0..8].copy_from_slice(&fid.to_le_bytes());
    b[8..16].copy_from_slice(&offset.to_le_bytes());
    b[16..24].copy_from_slice(&length.to_le_bytes());
    b[24..32].copy_from_slice(&ts.to_le_bytes());
    b[32..40].copy_from_slice(&physical.map_or(-1i64, |p| p as i64).to_le_bytes());
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_damage_names_the_log() {
        let p = Path::new("/d/SMALLFILECONTAINER/dropping.name.1.2.h.3");
        let mut b = encode_name(ops::CREATE, 5 << 32 | 7, &["f"]);
        let off = b.len() as u64;
        b.extend_from_slice(&encode_name(ops::RENAME, 6 << 32, &["f", "g"]));
        let r = decode_names(p, &b).unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(
            (r[1].offset, r[1].name.as_str(), r[1].to.as_deref()),
            (off, "f", Some("g"))
        );
        assert_eq!(ts_ns(r[0].ts), 5_000_007_000);
        // A torn record at the end is ignored.
        assert_eq!(decode_names(p, &b[..b.len() - 2]).unwrap().len(), 1);
        assert_eq!(decode_name_log(p, &b[..b.len() - 2]).unwrap().1, Some(off));
        assert_eq!(decode_name_log(p, &b).unwrap().1, None);
        let mut bad = b.clone();
        bad[4] = 9;
        let e = decode_names(p, &bad).unwrap_err().to_string();
        assert!(
            e.contains("dropping.name.1.2.h.3") && e.contains("unknown operation 9"),
            "{e}"
        );
        let i = Path::new("/d/i");
        let mut x = encode_small_index(4, 10, 3, 1, Some(0)).to_vec();
        x.extend_from_slice(&encode_small_index(4, 7, 0, 2, None));
        let v = decode_small_index(i, &x).unwrap();
        assert_eq!((v[0].physical, v[1].physical), (Some(0), None));
        let neg = encode_small_index(4, 10, 3, 1, None);
        assert!(decode_small_index(i, &neg).is_err(), "a write with physical -1");
    }
}
