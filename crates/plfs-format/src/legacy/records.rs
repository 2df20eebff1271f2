//! The binary records of PLFS 2.x: the 48-byte `HostEntry` of index logs and the flattened
//! `global.index`. The original wrote native structs with no magic, version or checksum; every
//! container we read was written on little-endian 64-bit Linux (x86_64, aarch64), which is the
//! only layout decoded here. Every field is range-checked: a record that cannot be right is a
//! corruption error naming the file and the record, never a guess.

use crate::error::{Error, Result};
use std::path::Path;

/// Size of one index record.
pub const HOST_ENTRY_LEN: usize = 48;

/// One index record.
///
/// Format: { logical_offset i64 | physical_offset i64 | length u64 | begin_ts f64 | end_ts f64 |
///           pid i32 | pad u32 }
/// In `global.index` the same 48 bytes are a `ContainerEntry`: `pid` is then the chunk slot and
/// the pad holds the original writer pid.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HostEntry {
    /// Logical offset (checked non-negative).
    pub logical: u64,
    /// Offset in the data log (checked non-negative).
    pub physical: u64,
    /// Length; `logical + length` and `physical + length` fit an `off_t`.
    pub length: u64,
    /// Time the write began (seconds since the epoch, as a double).
    pub begin_ts: f64,
    /// Time the write ended.
    pub end_ts: f64,
    /// The writer pid (index logs) or the chunk slot (`global.index`).
    pub id: u32,
    /// The four bytes after `id`: the original pid in `global.index`, padding in index logs.
    pub extra: u32,
}

fn le_u64(b: &[u8]) -> u64 {
    u64::from_le_bytes(b[..8].try_into().expect("8 bytes"))
}

fn le_u32(b: &[u8]) -> u32 {
    u32::from_le_bytes(b[..4].try_into().expect("4 bytes"))
}

impl HostEntry {
    /// Decodes and checks one record; `what` names it in errors (file and record number).
    pub fn decode(path: &Path, what: impl Fn() -> String, b: &[u8]) -> Result<HostEntry> {
        let bad = |why: &str| Error::corrupt(path, format!("{}: {why}", what()));
        let logical = le_u64(&b[0..]);
        let physical = le_u64(&b[8..]);
        let length = le_u64(&b[16..]);
        let id = le_u32(&b[40..]);
        let max = i64::MAX as u64;
        if logical > max {
            return Err(bad("negative logical offset"));
        }
        if physical > max {
            return Err(bad("negative physical offset"));
        }
        if length > max || logical.checked_add(length).is_none_or(|e| e > max) {
            return Err(bad(&format!(
                "length {length} at offset {logical} overflows a file offset"
            )));
        }
        if physical.checked_add(length).is_none_or(|e| e > max) {
            return Err(bad(&format!("length {length} at data log offset {physical} overflows")));
        }
        if id > i32::MAX as u32 {
            return Err(bad("negative pid"));
        }
        Ok(HostEntry {
            logical,
            physical,
            length,
            begin_ts: f64::from_bits(le_u64(&b[24..])),
            end_ts: f64::from_bits(le_u64(&b[32..])),
            id,
            extra: le_u32(&b[44..]),
        })
    }
}

/// Decodes an index log. A trailing partial record (a writer died while appending) is ignored and
/// its length returned, as the original did; any other damage is an error.
pub fn decode_index_log(path: &Path, bytes: &[u8]) -> Result<(Vec<HostEntry>, usize)> {
    let n = bytes.len() / HOST_ENTRY_LEN;
    let mut out = Vec::with_capacity(n);
    for (i, rec) in bytes.chunks_exact(HOST_ENTRY_LEN).enumerate() {
        out.push(HostEntry::decode(path, || format!("record {i}"), rec)?);
    }
    Ok((out, bytes.len() % HOST_ENTRY_LEN))
}

/// A decoded `global.index`: merged entries and the data logs they point into.
#[derive(Debug, Clone, PartialEq)]
pub struct GlobalIndex {
    /// Entries; `id` is an index into `chunks`, `extra` the original pid.
    pub entries: Vec<HostEntry>,
    /// The chunk paths as written (absolute paths on the machine that flattened, maybe with a
    /// backend prefix such as `posix:`); only their last two components are used.
    pub chunks: Vec<String>,
}

/// Decodes `global.index`.
///
/// Format: { n u64 | n × 48-byte ContainerEntry | chunk paths, each followed by '\n' | NUL }
pub fn decode_global(path: &Path, b: &[u8]) -> Result<GlobalIndex> {
    if b.len() < 8 {
        return Err(Error::corrupt(path, "shorter than its 8-byte header"));
    }
    let n = le_u64(b);
    let body = (b.len() - 8) / HOST_ENTRY_LEN;
    if n > body as u64 {
        return Err(Error::corrupt(
            path,
            format!("claims {n} entries but holds at most {body}"),
        ));
    }
    let n = n as usize;
    let mut entries = Vec::with_capacity(n);
    for i in 0..n {
        let rec = &b[8 + i * HOST_ENTRY_LEN..8 + (i + 1) * HOST_ENTRY_LEN];
        entries.push(HostEntry::decode(path, || format!("entry {i}"), rec)?);
    }
    let tail = &b[8 + n * HOST_ENTRY_LEN..];
    let tail = match tail.iter().position(|&c| c == 0) {
        Some(p) => &tail[..p],
        None => return Err(Error::corrupt(path, "chunk path list is not NUL-terminated")),
    };
    let text = std::str::from_utf8(tail).map_err(|_| Error::corrupt(path, "chunk path list is not UTF-8"))?;
    let chunks: Vec<String> = text.split('\n').filter(|s| !s.is_empty()).map(str::to_string).collect();
    if let Some((i, e)) = entries.iter().enumerate().find(|(_, e)| e.id as usize >= chunks.len()) {
        return Err(Error::corrupt(
            path,
            format!("entry {i} refers to chunk {} of {}", e.id, chunks.len()),
        ));
    }
    Ok(GlobalIndex { entries, chunks })
}

/// Encodes one record (tests and the hand-made fixtures use it).
pub fn encode_entry(e: &HostEntry) -> [u8; HOST_ENTRY_LEN] {
    let mut b = [0u8; HOST_ENTRY_LEN];
    b[0..8].copy_from_slice(&e.logical.to_le_bytes());
    b[8..16].copy_from_slice(&e.physical.to_le_bytes());
    b[16..24].copy_from_slice(&e.length.to_le_bytes());
    b[24..32].copy_from_slice(&e.begin_ts.to_bits().to_le_bytes());
    b[32..40].copy_from_slice(&e.end_ts.to_bits().to_le_bytes());
    b[40..44].copy_from_slice(&e.id.to_le_bytes());
    b[44..48].copy_from_slice(&e.extra.to_le_bytes());
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(logical: u64, length: u64) -> HostEntry {
        HostEntry {
            logical,
            physical: 0,
            length,
            begin_ts: 1.5,
            end_ts: 2.5,
            id: 7,
            extra: 0,
        }
    }

    #[test]
    fn roundtrip_and_checks() {
        let p = Path::new("/x/dropping.index.1.2.h.3");
        let mut b = Vec::new();
        b.extend_from_slice(&encode_entry(&e(10, 5)));
        b.extend_from_slice(&encode_entry(&e(0, 3)));
        b.extend_from_slice(&[1, 2, 3]);
        let (v, torn) = decode_index_log(p, &b).unwrap();
        assert_eq!((v, torn), (vec![e(10, 5), e(0, 3)], 3));
        let mut neg = encode_entry(&e(0, 1));
        neg[7] = 0x80;
        let err = decode_index_log(p, &neg).unwrap_err().to_string();
        assert!(
            err.contains("dropping.index.1.2.h.3") && err.contains("record 0"),
            "{err}"
        );
        let mut over = encode_entry(&e(i64::MAX as u64 - 1, 5));
        assert!(decode_index_log(p, &over).is_err());
        over[40..44].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode_index_log(p, &over).is_err());
    }

    #[test]
    fn global_index() {
        let p = Path::new("/x/global.index");
        let mut b = 2u64.to_le_bytes().to_vec();
        let mut a = e(0, 4);
        a.id = 1;
        b.extend_from_slice(&encode_entry(&a));
        let mut c = e(4, 4);
        c.id = 0;
        b.extend_from_slice(&encode_entry(&c));
        b.extend_from_slice(b"/s/f/hostdir.1/dropping.data.1.2.h.3\nposix:/s/f/hostdir.1/dropping.data.1.2.h.4\n\0");
        let g = decode_global(p, &b).unwrap();
        assert_eq!(g.entries.len(), 2);
        assert_eq!(g.chunks.len(), 2);
        assert!(decode_global(p, &b[..b.len() - 1]).is_err());
        let mut big = b.clone();
        big[0..8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(decode_global(p, &big).is_err());
        let mut badid = b.clone();
        badid[8 + 40] = 9;
        assert!(decode_global(p, &badid).unwrap_err().to_string().contains("chunk 9"));
    }
}
