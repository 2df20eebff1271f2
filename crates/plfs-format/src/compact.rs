//! Compaction on disk (docs/format.md §14): the journal a compaction commits to, and the temporary
//! names its new logs are built under.
//!
//! A compaction writes the live extents of a file into one new log pair (N-1) or one new packed
//! log (1-N) under a `.plfstmp.cmp.` name that readers ignore, then commits by writing the
//! journal atomically, then publishes the new logs and retires the old ones. The journal names
//! everything the roll-forward must do, so a crash at any point is finished by the next
//! compaction, the last close, or `plfs fsck --repair`.
//!
//! Format: { magic [8] = "PLFSCMP\0" | version u32 = 1 | state u32 | writer_id u64 |
//!           created_ns u64 | nentries u32 | reserved u32 = 0 | entry{nentries} | crc32c u32 }
//! entry:  { kind u8 | reserved u8 = 0 | len u16 | name [len] }
//! The header is 40 bytes; the trailing crc32c covers every preceding byte.

use super::{le_u32, le_u64, TMP_PREFIX};
use crate::error::{Error, Result};
use std::path::Path;

/// Name of the journal: in an N-1 container's directory, or in a 1-N directory's `.plfs_small/`
/// store on its first canonical backend.
pub const JOURNAL_NAME: &str = "compact.journal";
/// A one-directory container's compaction lock (format.md §14): a zero-length file, flock(2)ed.
pub const LOCK_NAME: &str = "compact.lock";
/// Journal magic.
pub const JOURNAL_MAGIC: [u8; 8] = *b"PLFSCMP\0";
/// Journal header length.
pub const JOURNAL_HEADER_LEN: usize = 40;
/// Prefix of the temporary names of a compaction's new logs: `.plfstmp.cmp.<writer id hex16>.data`
/// and `.index` in a hostdir (N-1), `.plfstmp.cmp.<writer id hex16>.log` in a store (1-N).
pub const CMP_TMP_PREFIX: &str = ".plfstmp.cmp.";

/// Journal state: the new logs are complete and durable; the roll-forward (publish the new logs,
/// retire the old ones) may be under way.
pub const STATE_COMMITTED: u32 = 1;
/// Journal state: nothing left but retired data logs that other processes may still be reading
/// (N-1); they are deleted once no process has the file open.
pub const STATE_PENDING: u32 = 2;

/// Entry kind: the new log, by its final name (`data.<id>.<pid>.<host>` for N-1, `log.<id>...`
/// for 1-N).
pub const E_NEW_LOG: u8 = 1;
/// Entry kind: the close dropping the new log gets in `meta/` (N-1).
pub const E_NEW_CLOSE: u8 = 2;
/// Entry kind: a log the compaction retires: an N-1 writer, by its data log's name (its index
/// log and close droppings go too), or a 1-N log.
pub const E_RETIRED: u8 = 3;
/// Entry kind: a trunc dropping folded into the new log (N-1).
pub const E_FOLDED: u8 = 4;
/// Entry kind: a retired data log whose deletion waits until no process has the file open (N-1).
pub const E_PENDING: u8 = 5;

/// Temporary name of a compaction's new data log (N-1).
pub fn tmp_data_name(writer_id: u64) -> String {
    format!("{CMP_TMP_PREFIX}{writer_id:016x}.data")
}

/// Temporary name of a compaction's new index log (N-1).
pub fn tmp_index_name(writer_id: u64) -> String {
    format!("{CMP_TMP_PREFIX}{writer_id:016x}.index")
}

/// Temporary name of a compaction's new packed log (1-N).
pub fn tmp_log_name(writer_id: u64) -> String {
    format!("{CMP_TMP_PREFIX}{writer_id:016x}.log")
}

/// The writer id in a compaction's temporary log name, if `name` is one.
pub fn parse_tmp_name(name: &str) -> Option<u64> {
    let rest = name.strip_prefix(CMP_TMP_PREFIX)?;
    let (id, _) = rest.split_once('.')?;
    if id.len() != 16 {
        return None;
    }
    u64::from_str_radix(id, 16).ok()
}

/// A decoded journal.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Journal {
    /// [`STATE_COMMITTED`] or [`STATE_PENDING`].
    pub state: u32,
    /// Writer id of the new log.
    pub writer_id: u64,
    /// When the compaction committed, ns since the epoch.
    pub created_ns: u64,
    /// (kind, name) entries, in order.
    pub entries: Vec<(u8, String)>,
}

impl Journal {
    /// The names of the entries of one kind.
    pub fn names(&self, kind: u8) -> impl Iterator<Item = &str> {
        self.entries
            .iter()
            .filter(move |(k, _)| *k == kind)
            .map(|(_, n)| n.as_str())
    }

    /// Encodes the journal.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(JOURNAL_HEADER_LEN + self.entries.len() * 96);
        b.extend_from_slice(&JOURNAL_MAGIC);
        b.extend_from_slice(&super::LOG_VERSION.to_le_bytes());
        b.extend_from_slice(&self.state.to_le_bytes());
        b.extend_from_slice(&self.writer_id.to_le_bytes());
        b.extend_from_slice(&self.created_ns.to_le_bytes());
        b.extend_from_slice(&(self.entries.len() as u32).to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        for (kind, name) in &self.entries {
            let n = &name.as_bytes()[..name.len().min(u16::MAX as usize)];
            b.push(*kind);
            b.push(0);
            b.extend_from_slice(&(n.len() as u16).to_le_bytes());
            b.extend_from_slice(n);
        }
        let crc = crate::crc::crc32c(&b);
        b.extend_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decodes a journal; `path` names the file in errors. Every name must be one path component.
    pub fn decode(path: &Path, b: &[u8]) -> Result<Journal> {
        let bad = |what: &str| Error::corrupt(path, format!("compaction journal: {what}"));
        if b.len() < JOURNAL_HEADER_LEN + 4 {
            return Err(bad("too short"));
        }
        if b[0..8] != JOURNAL_MAGIC {
            return Err(bad("bad magic"));
        }
        let (body, crc) = b.split_at(b.len() - 4);
        if le_u32(crc) != crate::crc::crc32c(body) {
            return Err(bad("checksum mismatch"));
        }
        let version = le_u32(&b[8..12]);
        if version == 0 || version > super::FORMAT_VERSION {
            return Err(bad(&format!("format version {version} is not supported")));
        }
        let state = le_u32(&b[12..16]);
        if state != STATE_COMMITTED && state != STATE_PENDING {
            return Err(bad(&format!("unknown state {state}")));
        }
        let n = le_u32(&b[32..36]) as usize;
        let mut entries = Vec::with_capacity(n.min(1 << 16));
        let mut pos = JOURNAL_HEADER_LEN;
        for _ in 0..n {
            if pos + 4 > body.len() {
                return Err(bad("truncated entry"));
            }
            let kind = body[pos];
            let len = u16::from_le_bytes([body[pos + 2], body[pos + 3]]) as usize;
            pos += 4;
            if pos + len > body.len() {
                return Err(bad("truncated entry"));
            }
            let name = std::str::from_utf8(&body[pos..pos + len]).map_err(|_| bad("a name is not UTF-8"))?;
            if !(E_NEW_LOG..=E_PENDING).contains(&kind) {
                return Err(bad(&format!("unknown entry kind {kind}")));
            }
            if name.is_empty() || name == "." || name == ".." || name.contains('/') || name.contains('\0') {
                return Err(bad(&format!("{name:?} is not a file name")));
            }
            if name.starts_with(TMP_PREFIX) {
                return Err(bad(&format!("{name:?} is a temporary name")));
            }
            entries.push((kind, name.to_string()));
            pos += len;
        }
        if pos != body.len() {
            return Err(bad("trailing bytes"));
        }
        Ok(Journal {
            state,
            writer_id: le_u64(&b[16..24]),
            created_ns: le_u64(&b[24..32]),
            entries,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_match_format_md() {
        assert_eq!(JOURNAL_NAME, "compact.journal");
        assert_eq!(&JOURNAL_MAGIC, b"PLFSCMP\0");
        assert_eq!(JOURNAL_HEADER_LEN, 40);
        assert_eq!(CMP_TMP_PREFIX, ".plfstmp.cmp.");
        assert_eq!((STATE_COMMITTED, STATE_PENDING), (1, 2));
        assert_eq!(
            (E_NEW_LOG, E_NEW_CLOSE, E_RETIRED, E_FOLDED, E_PENDING),
            (1, 2, 3, 4, 5)
        );
        assert_eq!(tmp_data_name(0xab), ".plfstmp.cmp.00000000000000ab.data");
        assert_eq!(parse_tmp_name(&tmp_index_name(7)), Some(7));
        assert_eq!(parse_tmp_name(&tmp_log_name(u64::MAX)), Some(u64::MAX));
        assert_eq!(parse_tmp_name(".plfstmp.cmp.zz.data"), None);
        // The document says the same.
        let doc = include_str!("../../../docs/format.md");
        let sec = &doc[doc.find("## 14. Compaction").expect("format.md has §14")..];
        for needle in [
            "| 0 | 8 | magic `50 4c 46 53 43 4d 50 00` |",
            "| 40 | … | entries",
            "1 = committed",
            "2 = pending",
            "{ kind u8 | reserved u8 = 0 | len u16 | name [len] }",
            "`compact.journal`",
            "`.plfstmp.cmp.<writer id: 16 hex>.data`",
            "`.plfstmp.cmp.<writer id>.log`",
        ] {
            assert!(sec.contains(needle), "format.md §14 lacks {needle:?}");
        }
        for (kind, name) in [
            (E_NEW_LOG, "new log"),
            (E_NEW_CLOSE, "new close"),
            (E_RETIRED, "retired"),
            (E_FOLDED, "folded"),
            (E_PENDING, "pending"),
        ] {
            assert!(
                sec.contains(&format!("| {kind} | {name} |")),
                "format.md §14: entry kind {kind}"
            );
        }
    }

    #[test]
    fn roundtrip_and_damage() {
        let j = Journal {
            state: STATE_COMMITTED,
            writer_id: 0x1234,
            created_ns: 99,
            entries: vec![
                (E_NEW_LOG, "data.0000000000001234.7.host.a".into()),
                (E_NEW_CLOSE, "close.0000000000001234.1.2.3.4.5".into()),
                (E_RETIRED, "data.00000000000000aa.8.h".into()),
                (E_FOLDED, "trunc.5.6.0000000000000001".into()),
                (E_PENDING, "data.00000000000000bb.9.h".into()),
            ],
        };
        let b = j.encode();
        assert_eq!(&b[..8], b"PLFSCMP\0");
        assert_eq!(u32::from_le_bytes(b[32..36].try_into().unwrap()), 5);
        let p = Path::new("j");
        assert_eq!(Journal::decode(p, &b).unwrap(), j);
        assert_eq!(j.names(E_RETIRED).collect::<Vec<_>>(), ["data.00000000000000aa.8.h"]);
        for cut in 0..b.len() {
            assert!(Journal::decode(p, &b[..cut]).is_err(), "cut at {cut}");
        }
        for i in 0..b.len() {
            let mut d = b.clone();
            d[i] ^= 0x40;
            assert!(Journal::decode(p, &d).is_err(), "flip at {i}");
        }
        // A name that leaves its directory is refused even with a valid checksum.
        let evil = Journal {
            entries: vec![(E_RETIRED, "../x".into())],
            ..j.clone()
        };
        assert!(Journal::decode(p, &evil.encode()).is_err());
    }
}
