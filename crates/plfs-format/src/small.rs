//! The 1-N small-file log (docs/format.md §11): a 64-byte header (magic `PLFSSML\0`) followed by
//! framed, checksummed records: CREATE, WRITE (with its data inline), TRUNC, UNLINK, RENAME and
//! SETATTR.
//!
//! Format of a record: { kind u16 | flags u16 | body_len u32 | body | crc32c u32 over the frame
//! and body }.

/// Name of the per-directory store.
pub const SMALL_DIR: &str = ".plfs_small";
/// Prefix of a writer's log in a store: `log.<writer id: 16 hex>.<pid>.<host>`.
pub const LOG_PREFIX: &str = "log.";

/// Name of a writer's log in a store.
pub fn log_name(writer_id: u64, pid: u32, host: &str) -> String {
    format!("{LOG_PREFIX}{writer_id:016x}.{pid}.{host}")
}

/// Parses a log's name (the host may contain dots, as in a data log's name); `None` for any
/// other name.
pub fn parse_log_name(name: &str) -> Option<crate::LogName> {
    let rest = name.strip_prefix(LOG_PREFIX)?;
    crate::parse_log_name(&format!("data.{rest}"))
}

/// Space a store sets aside so that deleting works on a full backend (docs/format.md §11):
/// a file of this name in the store, ignored by readers.
pub const RESERVE_NAME: &str = "reserve";
/// Its size.
pub const RESERVE_BYTES: usize = 64 << 10;
/// Small-file log magic.
pub const SMALL_MAGIC: [u8; 8] = *b"PLFSSML\0";
/// Record frame overhead: kind u16, flags u16, body_len u32, crc32c u32.
pub const SMALL_FRAME: usize = 12;
/// Largest body a record may have (a WRITE carries its data inline).
pub const SMALL_MAX_BODY: usize = 64 << 20;

pub const K_CREATE: u16 = 1;
pub const K_WRITE: u16 = 2;
pub const K_TRUNC: u16 = 3;
pub const K_UNLINK: u16 = 4;
pub const K_RENAME: u16 = 5;
pub const K_SETATTR: u16 = 6;

/// SETATTR mask bits.
pub const SET_MODE: u32 = 1;
/// SETATTR: owner.
pub const SET_UID: u32 = 2;
/// SETATTR: group.
pub const SET_GID: u32 = 4;
/// SETATTR: access time.
pub const SET_ATIME: u32 = 8;
/// SETATTR: modification time.
pub const SET_MTIME: u32 = 16;

/// A decoded record (`phys` = log offset of a WRITE's data).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rec {
    Create {
        ts: u64,
        id: u64,
        mode: u32,
        uid: u32,
        gid: u32,
        name: String,
    },
    Write {
        ts: u64,
        id: u64,
        off: u64,
        len: u64,
        phys: u64,
    },
    Trunc {
        ts: u64,
        id: u64,
        size: u64,
    },
    Unlink {
        ts: u64,
        id: u64,
        name: String,
    },
    Rename {
        ts: u64,
        id: u64,
        from: String,
        to: String,
    },
    SetAttr {
        ts: u64,
        id: u64,
        mask: u32,
        mode: u32,
        uid: u32,
        gid: u32,
        atime: i64,
        mtime: i64,
    },
}

impl Rec {
    pub fn ts(&self) -> u64 {
        match self {
            Rec::Create { ts, .. }
            | Rec::Write { ts, .. }
            | Rec::Trunc { ts, .. }
            | Rec::Unlink { ts, .. }
            | Rec::Rename { ts, .. }
            | Rec::SetAttr { ts, .. } => *ts,
        }
    }
}

/// Appends one framed record. `data` (WRITE only) follows the body's fixed part.
pub fn encode(out: &mut Vec<u8>, kind: u16, fixed: &[u8], tail: &[u8]) {
    let start = out.len();
    out.extend_from_slice(&kind.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(&((fixed.len() + tail.len()) as u32).to_le_bytes());
    out.extend_from_slice(fixed);
    out.extend_from_slice(tail);
    let crc = crate::crc::crc32c(&out[start..]);
    out.extend_from_slice(&crc.to_le_bytes());
}

fn le64(v: &[u8], at: usize) -> u64 {
    super::le_u64(&v[at..at + 8])
}
fn le32(v: &[u8], at: usize) -> u32 {
    super::le_u32(&v[at..at + 4])
}

/// Decodes the records of a log body that starts at log offset `base`. Stops at the first bad
/// record; returns (records, bytes consumed, why it stopped early).
pub fn decode(body: &[u8], base: u64) -> (Vec<Rec>, usize, Option<String>) {
    let mut out = Vec::new();
    let mut pos = 0usize;
    while pos < body.len() {
        let r = &body[pos..];
        if r.len() < SMALL_FRAME {
            return (out, pos, Some(format!("torn record at {}", base + pos as u64)));
        }
        let kind = u16::from_le_bytes([r[0], r[1]]);
        let blen = le32(r, 4) as usize;
        if blen > SMALL_MAX_BODY {
            return (out, pos, Some(format!("bad record length at {}", base + pos as u64)));
        }
        let total = SMALL_FRAME + blen;
        if r.len() < total {
            return (out, pos, Some(format!("torn record at {}", base + pos as u64)));
        }
        if le32(r, 8 + blen) != crate::crc::crc32c(&r[..8 + blen]) {
            return (
                out,
                pos,
                Some(format!("record checksum mismatch at {}", base + pos as u64)),
            );
        }
        let b = &r[8..8 + blen];
        let need = |n: usize| b.len() >= n;
        let name = |from: usize| String::from_utf8_lossy(&b[from..]).into_owned();
        let rec = match kind {
            K_CREATE if need(28) => Rec::Create {
                ts: le64(b, 0),
                id: le64(b, 8),
                mode: le32(b, 16),
                uid: le32(b, 20),
                gid: le32(b, 24),
                name: name(28),
            },
            K_WRITE if need(24) => Rec::Write {
                ts: le64(b, 0),
                id: le64(b, 8),
                off: le64(b, 16),
                len: (b.len() - 24) as u64,
                phys: base + (pos + 8 + 24) as u64,
            },
            K_TRUNC if need(24) => Rec::Trunc {
                ts: le64(b, 0),
                id: le64(b, 8),
                size: le64(b, 16),
            },
            K_UNLINK if need(16) => Rec::Unlink {
                ts: le64(b, 0),
                id: le64(b, 8),
                name: name(16),
            },
            K_RENAME if need(18) => {
                let fl = u16::from_le_bytes([b[16], b[17]]) as usize;
                if b.len() < 18 + fl {
                    return (out, pos, Some(format!("bad rename record at {}", base + pos as u64)));
                }
                Rec::Rename {
                    ts: le64(b, 0),
                    id: le64(b, 8),
                    from: String::from_utf8_lossy(&b[18..18 + fl]).into_owned(),
                    to: name(18 + fl),
                }
            }
            K_SETATTR if need(48) => Rec::SetAttr {
                ts: le64(b, 0),
                id: le64(b, 8),
                mask: le32(b, 16),
                mode: le32(b, 20),
                uid: le32(b, 24),
                gid: le32(b, 28),
                atime: le64(b, 32) as i64,
                mtime: le64(b, 40) as i64,
            },
            _ => {
                return (
                    out,
                    pos,
                    Some(format!(
                        "unknown or short record (kind {kind}) at {}",
                        base + pos as u64
                    )),
                )
            }
        };
        out.push(rec);
        pos += total;
    }
    (out, pos, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserve_matches_format_md() {
        let doc = include_str!("../../../docs/format.md");
        let sec = &doc[doc.find("## 11. 1-N mode").expect("format.md has §11")..];
        assert!(sec.contains(&format!("`{RESERVE_NAME}`")), "§11 names the reserve");
        assert_eq!(RESERVE_BYTES, 65_536);
        assert!(sec.contains("65,536 zero bytes"));
    }

    #[test]
    fn records_roundtrip() {
        let mut b = Vec::new();
        encode(&mut b, K_TRUNC, &[1u8; 24], &[]);
        encode(&mut b, K_UNLINK, &[2u8; 16], b"name");
        let (rs, used, err) = decode(&b, 64);
        assert_eq!(rs.len(), 2);
        assert_eq!(used, b.len());
        assert!(err.is_none());
        for cut in 0..b.len() {
            let (rs, _, err) = decode(&b[..cut], 64);
            assert!(rs.len() < 2 || cut == b.len());
            assert_eq!(err.is_some(), cut != 0 && cut != SMALL_FRAME + 24);
        }
    }
}
