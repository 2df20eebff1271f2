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

/// What a log body decodes to ([`decode`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Decoded {
    /// The whole records, in log order.
    pub recs: Vec<Rec>,
    /// Bytes of the body taken (whole records and the damage between them; not a torn tail).
    pub used: usize,
    /// Why decoding stopped before the end: a torn tail (an append cut short), or `None`.
    pub tail: Option<String>,
    /// Stretches of bytes that are not whole records, each followed by a whole record or by
    /// the end of the log (never a torn tail, which is `tail`).
    pub damaged: Vec<Damaged>,
}

/// A damaged stretch of a log (docs/format.md §11, "Damage"), with what its first bytes would
/// say if its frame were whole: the record kind and the file id. Neither is trusted: a reader
/// uses them only to say which file the damage may have hit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damaged {
    /// Log offset of its first byte.
    pub at: u64,
    /// Its length in bytes.
    pub len: u64,
    /// Why the record there does not decode.
    pub why: String,
    /// The kind field, if it names a kind.
    pub kind: Option<u16>,
    /// The file id field, if the stretch is long enough to hold one.
    pub id: Option<u64>,
}

impl Damaged {
    /// A log's header of `len` bytes that does not decode (`why`): it names no kind or file.
    pub fn whole_header(len: usize, why: String) -> Damaged {
        Damaged {
            at: 0,
            len: len as u64,
            why,
            kind: None,
            id: None,
        }
    }
}

/// Why the bytes at a position are not a whole record.
enum Bad {
    /// Shorter than its frame, or than the body its length field claims: an append cut short
    /// (or a damaged length field).
    Torn,
    /// Whole, but not a valid record.
    Invalid(String),
}

/// The record at the start of `r` (a WRITE's data at log offset `data_base` + 32) and its length.
fn record_at(r: &[u8], data_base: u64) -> Result<(Rec, usize), Bad> {
    if r.len() < SMALL_FRAME {
        return Err(Bad::Torn);
    }
    let kind = u16::from_le_bytes([r[0], r[1]]);
    let blen = le32(r, 4) as usize;
    if blen > SMALL_MAX_BODY {
        return Err(Bad::Invalid("bad record length".into()));
    }
    let total = SMALL_FRAME + blen;
    if r.len() < total {
        return Err(Bad::Torn);
    }
    if le32(r, 8 + blen) != crate::crc::crc32c(&r[..8 + blen]) {
        return Err(Bad::Invalid("record checksum mismatch".into()));
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
            phys: data_base + (8 + 24) as u64,
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
                return Err(Bad::Invalid("bad rename record".into()));
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
        _ => return Err(Bad::Invalid(format!("unknown or short record (kind {kind})"))),
    };
    Ok((rec, total))
}

/// Whether a whole record starts at `pos` of `body` and is followed by another whole record,
/// by the end of the log, or by a torn tail: where decoding resumes after damage. A frame
/// whose flags are not 0 is never taken (writers write 0), which with the checksum makes a
/// false start in damaged bytes a chance of about 2^-48 per position.
fn resumes_at(body: &[u8], pos: usize) -> bool {
    let r = &body[pos..];
    if r.len() < SMALL_FRAME
        || r[2] != 0
        || r[3] != 0
        || !(K_CREATE..=K_SETATTR).contains(&u16::from_le_bytes([r[0], r[1]]))
    {
        return false;
    }
    let Ok((_, total)) = record_at(r, 0) else { return false };
    let next = pos + total;
    next == body.len() || !matches!(record_at(&body[next..], 0), Err(Bad::Invalid(_)))
}

/// Decodes the records of a log body that starts at log offset `base` (docs/format.md §11).
/// A record that does not decode is damage when a whole record follows it: by its own length
/// field (damage inside the record), or at the first later position where records resume
/// (damage in its frame); decoding goes on from there, so the records after damage still count.
/// Bytes that are not followed by any whole record end the log: a torn tail when they are
/// zeros or shorter than the record they start claims (an append cut short), else damage.
pub fn decode(body: &[u8], base: u64) -> Decoded {
    let mut d = Decoded::default();
    let mut pos = 0usize;
    while pos < body.len() {
        let why = match record_at(&body[pos..], base + pos as u64) {
            Ok((rec, total)) => {
                d.recs.push(rec);
                pos += total;
                continue;
            }
            Err(Bad::Torn) => None,
            Err(Bad::Invalid(why)) => Some(why),
        };
        let r = &body[pos..];
        // Damage confined to one record whose length field is right.
        let own_end = (r.len() >= SMALL_FRAME)
            .then(|| pos + SMALL_FRAME + le32(r, 4) as usize)
            .filter(|&e| why.is_some() && e <= body.len() && (e == body.len() || resumes_at(body, e)));
        let resume = own_end.or_else(|| (pos + 1..body.len()).find(|&q| resumes_at(body, q)));
        let end = match resume {
            Some(q) => q,
            None if why.is_none() || r.iter().all(|&b| b == 0) => {
                d.tail = Some(format!("torn record at {}", base + pos as u64));
                break;
            }
            None => body.len(),
        };
        let at = &body[pos..end];
        d.damaged.push(Damaged {
            at: base + pos as u64,
            len: (end - pos) as u64,
            why: why.unwrap_or_else(|| "record cut short".into()),
            kind: (at.len() >= 2)
                .then(|| u16::from_le_bytes([at[0], at[1]]))
                .filter(|k| (K_CREATE..=K_SETATTR).contains(k)),
            id: (at.len() >= 24).then(|| le64(at, 16)),
        });
        pos = end;
    }
    d.used = pos;
    d
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
        let d = decode(&b, 64);
        assert_eq!(d.recs.len(), 2);
        assert_eq!(d.used, b.len());
        assert!(d.tail.is_none() && d.damaged.is_empty());
        for cut in 0..b.len() {
            let d = decode(&b[..cut], 64);
            assert!(d.recs.len() < 2 || cut == b.len());
            assert_eq!(d.tail.is_some(), cut != 0 && cut != SMALL_FRAME + 24);
            assert!(d.damaged.is_empty(), "a cut is a torn tail, never damage: {cut}");
        }
    }

    /// Three records; a byte changed anywhere in the middle one is damage to exactly that record
    /// (its own length field, or the search for where records resume), and the third still
    /// counts; in the last one, damage to the end.
    #[test]
    fn damage_is_reported_and_the_records_after_it_count() {
        let mut b = Vec::new();
        encode(&mut b, K_CREATE, &[1u8; 28], b"a");
        let second = b.len();
        encode(&mut b, K_WRITE, &[2u8; 24], &[7u8; 300]);
        let third = b.len();
        encode(&mut b, K_UNLINK, &[3u8; 16], b"a");
        let whole = decode(&b, 64).recs;
        for at in second..third {
            for v in [0u8, 0xff, b[at] ^ 1] {
                if v == b[at] {
                    continue;
                }
                let mut c = b.clone();
                c[at] = v;
                let d = decode(&c, 64);
                assert_eq!(d.recs, vec![whole[0].clone(), whole[2].clone()], "byte {at} = {v}");
                assert_eq!(d.damaged.len(), 1, "byte {at} = {v}");
                assert_eq!(
                    (d.damaged[0].at, d.damaged[0].len),
                    (64 + second as u64, (third - second) as u64)
                );
                assert!(d.tail.is_none());
                assert_eq!(d.used, c.len());
            }
        }
        // The file id a damaged WRITE's frame names (the stretch's bytes 16..24).
        let mut c = b.clone();
        c[second + 40] ^= 1;
        assert_eq!(decode(&c, 0).damaged[0].id, Some(u64::from_le_bytes([2; 8])));
        assert_eq!(decode(&c, 0).damaged[0].kind, Some(K_WRITE));
        // In the last record, with nothing after it: damage to the end, not a torn tail.
        let mut c = b.clone();
        c[third + 14] ^= 1;
        let d = decode(&c, 64);
        assert_eq!((d.recs.len(), d.damaged.len(), d.tail.is_none()), (2, 1, true));
        // Zeros after the last record (a file extended by a crash) are a torn tail.
        let mut c = b.clone();
        c.extend_from_slice(&[0u8; 100]);
        let d = decode(&c, 64);
        assert_eq!(
            (d.recs.len(), d.damaged.len(), d.tail.is_some(), d.used),
            (3, 0, true, b.len())
        );
    }
}
