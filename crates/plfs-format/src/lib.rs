//! plfs-format: the PLFS on-disk format v3: every magic number, size, offset and file-name grammar
//! of a container, and the encoders and decoders of its files. Bytes in, records out: this crate
//! does no I/O (no file system call, no clock, no logging; scripts/check-architecture.py holds it
//! to that), so the core, the fuzz targets and the tests share one definition of the bytes.
//! The authoritative description is `docs/format.md`; the unit tests at the bottom pin each constant
//! to the value the document gives. All integers are little-endian.

use std::path::Path;

pub mod error;
pub use error::{Error, Result};

pub mod compact;
pub mod crc;
#[cfg(test)]
mod doc_tests;
pub mod flat;
pub mod legacy;
mod names;
mod runs;
pub(crate) use runs::encode_pattern;
pub use runs::encode_records;
pub mod small;
pub mod xattr;

pub use names::{
    cid_dropping_name, data_log_name, fast_size, fast_size_of_listing, hash_str, index_log_name, log_writer_of,
    parse_cid_dropping, parse_droppings, parse_log_name, LogName, MetaDropping,
};

/// Name of the flattened index inside a container.
pub const FLAT_NAME: &str = "flat.index";

/// Format version of the containers this library makes, and the newest one it reads. Version 3
/// changed the container's layout (one directory: format.md §1), not the bytes of its logs.
pub const FORMAT_VERSION: u32 = 3;
/// Version written in the headers of data and index logs, flattened indexes and compaction
/// journals: their bytes are those of version 2, so a version 2 container written by this
/// library (`container_format: 2`) stays readable by the library before it.
pub const LOG_VERSION: u32 = 2;

/// Name of the marker file that makes a backend directory a container.
pub const MARKER_NAME: &str = ".plfscontainer";
/// Marker file magic.
pub const MARKER_MAGIC: [u8; 8] = *b"PLFSCTR\0";
/// Marker file length in bytes (versions 1 and 2; the first bytes of a longer marker).
pub const MARKER_LEN: usize = 48;
/// Length of a version 3 marker: [`MARKER_LEN`] and 16 reserved bytes. Its size, which the `lstat`
/// every look-up makes already gives, says that the container is one directory (format.md §1).
pub const MARKER_LEN_V3: usize = 64;

/// Whether a published marker of `len` bytes belongs to a one-directory container (version 3).
/// Exactly [`MARKER_LEN_V3`]: a marker of any other size is no version 3 marker (a cut or grown
/// one is damage, which reading it reports).
pub fn is_flat_marker(len: u64) -> bool {
    len == MARKER_LEN_V3 as u64
}

/// Whether a published marker's size is a whole marker's of some version ([`MARKER_LEN`] or
/// [`MARKER_LEN_V3`]), so that the size alone may say the layout; any other size is read.
pub fn is_whole_marker_len(len: u64) -> bool {
    len == MARKER_LEN as u64 || len == MARKER_LEN_V3 as u64
}

/// Index log magic.
pub const INDEX_MAGIC: [u8; 8] = *b"PLFSIDX\0";
/// Index log header length in bytes.
pub const INDEX_HEADER_LEN: usize = 64;
/// Data log magic.
pub const DATA_MAGIC: [u8; 8] = *b"PLFSDAT\0";
/// Data log header length in bytes; the first data byte of a log is at this physical offset.
pub const DATA_HEADER_LEN: usize = 64;

/// Index record kind: a write of `length` bytes.
pub const REC_WRITE: u16 = 1;
/// Index record kind: a run of equally sized writes at a constant logical stride.
pub const REC_PATTERN: u16 = 2;
/// Fixed part of a [`REC_PATTERN`] body; per-element timestamp deltas follow as LEB128 varints.
pub const PATTERN_FIXED_LEN: usize = 60;
/// Shortest run a writer compresses into a pattern record.
pub const PATTERN_MIN_RUN: usize = 8;
/// Longest run in one pattern record (keeps the body under 64 KiB).
pub const PATTERN_MAX_RUN: usize = 4096;
/// Length of a framed record: kind u16, body_len u16, body, crc32c u32.
pub const REC_FRAME_OVERHEAD: usize = 8;
/// Body length of a [`REC_WRITE`] record.
pub const WRITE_BODY_LEN: usize = 40;
/// Total length of a [`REC_WRITE`] record on disk.
pub const WRITE_REC_LEN: usize = REC_FRAME_OVERHEAD + WRITE_BODY_LEN;

/// Directory inside a container holding metadata droppings.
pub const META_DIR: &str = "meta";
/// Prefix of hostdir names: `hostdir.<K>`.
pub const HOSTDIR_PREFIX: &str = "hostdir.";
/// Prefix of a close dropping's name (format.md §5).
pub const CLOSE_PREFIX: &str = "close.";
/// Directory on a shadow backend holding shadow containers, named by container id.
pub const SHADOW_ROOT: &str = ".plfs_shadow";
/// Mode a container's directory is made with, at its final name, until its marker exists
/// (format.md §1): the sticky bit, which no finished container directory has, with the modes
/// of a container directory (owner `rwx`, others `x`). A directory in this mode without a marker
/// is a file being created: absent to every reader, waited for by other creators.
pub const BUILD_DIR_MODE: u32 = 0o1711;

/// Whether a directory's mode is [`BUILD_DIR_MODE`], less the `x` bits of group and others that
/// a umask may take (plfs restores the owner's bits itself).
pub fn is_build_mode(mode: u32) -> bool {
    mode & 0o7777 & !0o011 == 0o1700
}

/// Whether a directory of mode `dir_mode` holding a marker of `marker_len` bytes is a published
/// container (format.md §1). The creator makes the marker and then writes it: a marker shorter
/// than [`MARKER_LEN`] in a directory still in the build mode is one being written (or whose
/// writer died before writing it), and the file is still being created. A short marker in a
/// finished directory is damage, which reading the marker reports.
pub fn is_published(marker_len: u64, dir_mode: u32) -> bool {
    marker_len >= MARKER_LEN as u64 || !is_build_mode(dir_mode)
}

/// Prefix of the temporary names used while a container is created (never visible as a file).
pub const TMP_PREFIX: &str = ".plfstmp.";
/// Prefix of a container deleted by an unlink, renamed aside before its removal.
pub const TRASH_PREFIX: &str = ".plfstmp.rm.";
/// Prefix of a container displaced by a rename onto its name on a backend without
/// `RENAME_EXCHANGE`, renamed aside before its removal.
pub const RENAME_TRASH_PREFIX: &str = ".plfstmp.rp.";
/// File inside a container displaced by a rename, holding the name it had (so fsck can move it
/// back if the rename was interrupted before the new file took the name).
pub const RENAME_NAME_FILE: &str = ".plfstmp.name";
/// Prefix of the new container a `plfs upgrade` builds beside a PLFS 2.x file, and of the
/// superseded original after the swap (or of a retired PLFS 2.x 1-N store), until removed.
pub const UPGRADE_PREFIX: &str = ".plfstmp.upgrade.";
/// A temporary name: one of the `.plfstmp.` prefixes above ([`TMP_PREFIX`] itself for an
/// atomically replaced file) and 16 hex digits of `nonce`, e.g. `.plfstmp.upgrade.<16 hex>`.
pub fn tmp_name(prefix: &str, nonce: u64) -> String {
    format!("{prefix}{nonce:016x}")
}
/// Maximum `num_hostdirs`.
pub const MAX_HOSTDIRS: u32 = 1024;

/// The `.plfscontainer` marker's contents.
///
/// Format: { magic [8] | version u32 | flags u32 | container_id u128 | created_ns u64 | reserved u32 | crc32c u32 }
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Marker {
    /// Format version the container was created with.
    pub version: u32,
    /// Random id; names the container's shadow directories so that renames never strand them.
    pub container_id: u128,
    /// Creation time, nanoseconds since the epoch.
    pub created_ns: u64,
}

impl Marker {
    /// Encodes the marker: [`MARKER_LEN`] bytes up to version 2, [`MARKER_LEN_V3`] from version 3.
    pub fn encode(&self) -> Vec<u8> {
        let len = if self.version >= 3 { MARKER_LEN_V3 } else { MARKER_LEN };
        let mut b = vec![0u8; len];
        b[0..8].copy_from_slice(&MARKER_MAGIC);
        b[8..12].copy_from_slice(&self.version.to_le_bytes());
        b[12..16].copy_from_slice(&0u32.to_le_bytes());
        b[16..32].copy_from_slice(&self.container_id.to_le_bytes());
        b[32..40].copy_from_slice(&self.created_ns.to_le_bytes());
        let crc = crate::crc::crc32c(&b[..44]);
        b[44..48].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decodes a marker; `path` names the file in errors.
    pub fn decode(path: &Path, b: &[u8]) -> Result<Marker> {
        if b.len() < MARKER_LEN {
            return Err(Error::corrupt(
                path,
                format!("marker is {} bytes, expected {MARKER_LEN}", b.len()),
            ));
        }
        if b[0..8] != MARKER_MAGIC {
            return Err(Error::corrupt(path, "bad marker magic"));
        }
        let version = le_u32(&b[8..12]);
        check_version(path, version)?;
        let crc = le_u32(&b[44..48]);
        if crc != crate::crc::crc32c(&b[..44]) {
            return Err(Error::corrupt(path, "marker checksum mismatch"));
        }
        // The size says the layout (`is_flat_marker`): a version 3 marker of another size, or an
        // older one of 64 bytes, would send readers to the wrong place for the logs; so would
        // one cut (a version 3 marker of 48 to 63 bytes is read as a version 2 container's) or
        // grown (bytes after it). Nothing in a container is trusted: the padding is zeros too.
        let want = if version >= 3 { MARKER_LEN_V3 } else { MARKER_LEN };
        if b.len() != want {
            return Err(Error::corrupt(
                path,
                format!("a version {version} marker of {} bytes", b.len()),
            ));
        }
        if b[MARKER_LEN..].iter().any(|&x| x != 0) {
            return Err(Error::corrupt(path, "marker padding is not zero"));
        }
        Ok(Marker {
            version,
            container_id: le_u128(&b[16..32]),
            created_ns: le_u64(&b[32..40]),
        })
    }
}

/// The header at the start of every index log and data log.
///
/// Format: { magic [8] | version u32 | header_len u32 | writer_id u64 | open_ns u64 | pid u32 |
///           flags u32 | reserved [20] | crc32c u32 }
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogHeader {
    /// Index or data log magic.
    pub magic: [u8; 8],
    /// The writer that owns the log (random, unique per open-for-write handle).
    pub writer_id: u64,
    /// When the writer opened the file, nanoseconds since the epoch.
    pub open_ns: u64,
    /// The writer's pid as passed to `plfs_open` (an MPI rank, or the process id).
    pub pid: u32,
    /// Flags: [`LOG_FLAG_DATA_CRC`], [`LOG_FLAG_FRAMED`].
    pub flags: u32,
}

/// [`LogHeader::flags`] bit: records carry a crc32c of their data.
pub const LOG_FLAG_DATA_CRC: u32 = 1;
/// [`LogHeader::flags`] bit (format 2): every write's bytes in the data log are preceded by a
/// [`Frame`] that describes them, so the data log alone says where each byte belongs.
pub const LOG_FLAG_FRAMED: u32 = 2;

/// Length of a [`Frame`].
pub const FRAME_LEN: usize = 32;

/// Bytes between two consecutive writes' data in a data log whose header has `flags`: a frame in
/// a framed log, nothing in an unframed one.
pub fn frame_gap(flags: u32) -> u64 {
    if flags & LOG_FLAG_FRAMED != 0 {
        FRAME_LEN as u64
    } else {
        0
    }
}
/// A frame's magic, `PLFW` (the first four bytes of every frame).
pub const FRAME_MAGIC: [u8; 4] = *b"PLFW";
/// The state of a frame's crc32c after its magic: each frame sums only the 24 bytes that follow.
const FRAME_MAGIC_CRC_STATE: u32 = crate::crc::state_after(&FRAME_MAGIC);
/// The most data bytes one frame describes (Linux's own limit for one write(2)).
pub const FRAME_MAX_DATA: usize = 0x7fff_f000;

/// What precedes each write's bytes in a framed data log (format 2): the write's logical offset,
/// length and ordering timestamp, written by the same `pwritev` as the bytes, so a write whose
/// call returned is described in the data log even when its index record was never appended.
///
/// Format: { magic [4] = "PLFW" | length u32 | logical_off u64 | ts u64 | data_crc32c u32 |
///           crc32c u32 }   (32 bytes; the crc32c covers bytes 0..28)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame {
    /// Offset in the logical file.
    pub logical_off: u64,
    /// Number of data bytes that follow the frame.
    pub length: u32,
    /// Ordering timestamp, the same as the write's index record.
    pub ts: u64,
    /// crc32c of the data when the log's [`LOG_FLAG_DATA_CRC`] flag is set, else 0.
    pub data_crc: u32,
}

impl Frame {
    /// Encodes the 32-byte frame (inline: every write makes one, in another crate).
    #[inline]
    pub fn encode(&self) -> [u8; FRAME_LEN] {
        let mut b = [0u8; FRAME_LEN];
        b[0..4].copy_from_slice(&FRAME_MAGIC);
        b[4..8].copy_from_slice(&self.length.to_le_bytes());
        b[8..16].copy_from_slice(&self.logical_off.to_le_bytes());
        b[16..24].copy_from_slice(&self.ts.to_le_bytes());
        b[24..28].copy_from_slice(&self.data_crc.to_le_bytes());
        let crc = crate::crc::crc32c_after(FRAME_MAGIC_CRC_STATE, &b[4..28]);
        b[28..32].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decodes a frame; `None` when the bytes are not a whole, intact frame (the end of what a
    /// writer wrote, or damage).
    pub fn decode(b: &[u8]) -> Option<Frame> {
        if b.len() < FRAME_LEN
            || b[0..4] != FRAME_MAGIC
            || le_u32(&b[28..32]) != crate::crc::crc32c_after(FRAME_MAGIC_CRC_STATE, &b[4..28])
        {
            return None;
        }
        let f = Frame {
            length: le_u32(&b[4..8]),
            logical_off: le_u64(&b[8..16]),
            ts: le_u64(&b[16..24]),
            data_crc: le_u32(&b[24..28]),
        };
        let fits = f
            .logical_off
            .checked_add(u64::from(f.length))
            .is_some_and(|e| e <= i64::MAX as u64);
        (f.length > 0 && f.length as usize <= FRAME_MAX_DATA && fits).then_some(f)
    }
}

impl LogHeader {
    /// Encodes the 64-byte header.
    pub fn encode(&self) -> [u8; INDEX_HEADER_LEN] {
        let mut b = [0u8; INDEX_HEADER_LEN];
        b[0..8].copy_from_slice(&self.magic);
        b[8..12].copy_from_slice(&LOG_VERSION.to_le_bytes());
        b[12..16].copy_from_slice(&(INDEX_HEADER_LEN as u32).to_le_bytes());
        b[16..24].copy_from_slice(&self.writer_id.to_le_bytes());
        b[24..32].copy_from_slice(&self.open_ns.to_le_bytes());
        b[32..36].copy_from_slice(&self.pid.to_le_bytes());
        b[36..40].copy_from_slice(&self.flags.to_le_bytes());
        let crc = crate::crc::crc32c(&b[..60]);
        b[60..64].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decodes a header and checks its magic against `magic`.
    pub fn decode(path: &Path, b: &[u8], magic: [u8; 8]) -> Result<LogHeader> {
        if b.len() < INDEX_HEADER_LEN {
            return Err(Error::corrupt(
                path,
                format!("log header is {} bytes, expected {INDEX_HEADER_LEN}", b.len()),
            ));
        }
        if b[0..8] != magic {
            return Err(Error::corrupt(path, "bad log magic"));
        }
        check_version(path, le_u32(&b[8..12]))?;
        if le_u32(&b[12..16]) as usize != INDEX_HEADER_LEN {
            return Err(Error::corrupt(path, "bad log header length"));
        }
        if le_u32(&b[60..64]) != crate::crc::crc32c(&b[..60]) {
            return Err(Error::corrupt(path, "log header checksum mismatch"));
        }
        Ok(LogHeader {
            magic,
            writer_id: le_u64(&b[16..24]),
            open_ns: le_u64(&b[24..32]),
            pid: le_u32(&b[32..36]),
            flags: le_u32(&b[36..40]),
        })
    }
}

/// One write, as recorded in an index log.
///
/// Format: { kind u16 = 1 | body_len u16 = 40 | logical_off u64 | length u64 | physical_off u64 |
///           timestamp u64 | data_crc32c u32 | flags u32 | crc32c u32 }
/// The trailing crc32c covers every preceding byte of the record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteRecord {
    /// Offset in the logical file.
    pub logical_off: u64,
    /// Number of bytes.
    pub length: u64,
    /// Offset in the writer's data log (counting the data log header).
    pub physical_off: u64,
    /// Ordering timestamp (nanoseconds, strictly increasing within a process; see docs/design.md).
    pub ts: u64,
    /// crc32c of the data when the log's [`LOG_FLAG_DATA_CRC`] flag is set, else 0.
    pub data_crc: u32,
}

impl WriteRecord {
    /// Appends the encoded record to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&REC_WRITE.to_le_bytes());
        out.extend_from_slice(&(WRITE_BODY_LEN as u16).to_le_bytes());
        out.extend_from_slice(&self.logical_off.to_le_bytes());
        out.extend_from_slice(&self.length.to_le_bytes());
        out.extend_from_slice(&self.physical_off.to_le_bytes());
        out.extend_from_slice(&self.ts.to_le_bytes());
        out.extend_from_slice(&self.data_crc.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        let crc = crate::crc::crc32c(&out[start..]);
        out.extend_from_slice(&crc.to_le_bytes());
    }
}

/// A run of writes by one writer: element `i` is `length` bytes at logical
/// `logical_start + i*stride`, stored at `physical_start + i*length` in an unframed data log and
/// at `physical_start + i*(length + FRAME_LEN)` in a framed one, written at `ts[i]`.
///
/// Format: { kind u16 = 2 | body_len u16 | logical_start u64 | length u64 | stride u64 | count u64 |
///           physical_start u64 | ts_first u64 | ts_last u64 | flags u32 = 0 |
///           (count-1) × varint(ts[i] - ts[i-1]) | crc32c u32 }
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatternRecord {
    /// Logical offset of element 0.
    pub logical_start: u64,
    /// Length of each element.
    pub length: u64,
    /// Logical distance between elements (>= length).
    pub stride: u64,
    /// Physical offset of element 0.
    pub physical_start: u64,
    /// Timestamp of every element (non-decreasing).
    pub ts: Vec<u64>,
}

impl PatternRecord {
    /// Physical distance between elements in a data log whose writes lie `gap` bytes apart
    /// ([`frame_gap`]).
    pub fn pstride(&self, gap: u64) -> u64 {
        self.length.saturating_add(gap)
    }

    /// One past the last data byte of the run in such a data log (saturating: a damaged record
    /// ends past any log).
    pub fn physical_end(&self, gap: u64) -> u64 {
        let n = self.ts.len().max(1) as u64;
        self.physical_start
            .saturating_add((n - 1).saturating_mul(self.pstride(gap)))
            .saturating_add(self.length)
    }

    /// Appends the encoded record to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        let first = self.ts.first().copied().unwrap_or(0);
        let last = self.ts.last().copied().unwrap_or(0);
        let fixed = [
            self.logical_start,
            self.length,
            self.stride,
            self.ts.len() as u64,
            self.physical_start,
            first,
            last,
        ];
        encode_pattern(out, fixed, self.ts.iter().copied());
    }

    fn decode(b: &[u8]) -> Option<PatternRecord> {
        if b.len() < PATTERN_FIXED_LEN {
            return None;
        }
        let (start, length, stride, count, phys, first, last) = (
            le_u64(&b[0..]),
            le_u64(&b[8..]),
            le_u64(&b[16..]),
            le_u64(&b[24..]),
            le_u64(&b[32..]),
            le_u64(&b[40..]),
            le_u64(&b[48..]),
        );
        if count == 0 || length == 0 || stride < length || count as usize > PATTERN_MAX_RUN {
            return None;
        }
        // The whole run must fit in u64 offsets.
        start
            .checked_add((count - 1).checked_mul(stride)?)?
            .checked_add(length)?;
        phys.checked_add(count.checked_mul(length)?)?;
        let mut ts = Vec::with_capacity(count as usize);
        ts.push(first);
        let mut pos = PATTERN_FIXED_LEN;
        for _ in 1..count {
            let (mut d, mut shift) = (0u64, 0u32);
            loop {
                let byte = *b.get(pos)?;
                pos += 1;
                if shift > 63 {
                    return None;
                }
                d |= u64::from(byte & 0x7f) << shift;
                shift += 7;
                if byte & 0x80 == 0 {
                    break;
                }
            }
            ts.push(ts.last()?.checked_add(d)?);
        }
        if pos != b.len() || *ts.last()? != last {
            return None;
        }
        Some(PatternRecord {
            logical_start: start,
            length,
            stride,
            physical_start: phys,
            ts,
        })
    }
}

/// Outcome of decoding the records of an index log body.
#[derive(Debug, Default)]
pub struct DecodedRecords {
    /// Every valid plain write record, in log order.
    pub records: Vec<WriteRecord>,
    /// Every valid pattern record, in log order.
    pub patterns: Vec<PatternRecord>,
    /// Bytes of the body consumed by valid records.
    pub valid_len: usize,
    /// Why decoding stopped before the end of the input, if it did (a torn or corrupt tail).
    pub tail_error: Option<String>,
}

/// Decodes the records that follow an index log header. Stops at the first record that is
/// truncated or fails its checksum, reporting it in `tail_error`; never panics.
pub fn decode_records(body: &[u8]) -> DecodedRecords {
    let mut out = DecodedRecords::default();
    let mut pos = 0usize;
    while pos < body.len() {
        let rest = &body[pos..];
        if rest.len() < 4 {
            out.tail_error = Some(format!("torn record header at body offset {pos}"));
            break;
        }
        let kind = u16::from_le_bytes([rest[0], rest[1]]);
        let blen = u16::from_le_bytes([rest[2], rest[3]]) as usize;
        let total = REC_FRAME_OVERHEAD + blen;
        if rest.len() < total {
            out.tail_error = Some(format!(
                "torn record at body offset {pos} ({} of {total} bytes)",
                rest.len()
            ));
            break;
        }
        let crc = le_u32(&rest[4 + blen..total]);
        if crc != crate::crc::crc32c(&rest[..4 + blen]) {
            // A record's checksum is its last bytes. Zeros there are a record not (all) there
            // yet: a log being written whose size a reader sees before its bytes (MooseFS can
            // show an appended length before the bytes, even to `O_DIRECT` reads), or a tail a
            // power loss left as zeros. Torn, like a record cut short; in a closed log, damage.
            out.tail_error = Some(if crc == 0 {
                format!("torn record at body offset {pos} (zeros where its checksum belongs)")
            } else {
                format!("record checksum mismatch at body offset {pos}")
            });
            break;
        }
        if kind == REC_PATTERN {
            match PatternRecord::decode(&rest[4..4 + blen]) {
                Some(p) => out.patterns.push(p),
                None => {
                    out.tail_error = Some(format!("invalid pattern record at body offset {pos}"));
                    break;
                }
            }
            pos += total;
            out.valid_len = pos;
            continue;
        }
        if kind != REC_WRITE || blen != WRITE_BODY_LEN {
            out.tail_error = Some(format!("unknown record kind {kind} (len {blen}) at body offset {pos}"));
            break;
        }
        let b = &rest[4..4 + blen];
        out.records.push(WriteRecord {
            logical_off: le_u64(&b[0..8]),
            length: le_u64(&b[8..16]),
            physical_off: le_u64(&b[16..24]),
            ts: le_u64(&b[24..32]),
            data_crc: le_u32(&b[32..36]),
        });
        pos += total;
        out.valid_len = pos;
    }
    out
}

fn check_version(path: &Path, v: u32) -> Result<()> {
    if v == 0 || v > FORMAT_VERSION {
        return Err(Error::corrupt(
            path,
            format!("format version {v} is not supported (this library reads 1..={FORMAT_VERSION})"),
        ));
    }
    Ok(())
}

pub(crate) fn le_u32(b: &[u8]) -> u32 {
    u32::from_le_bytes(b[..4].try_into().expect("4 bytes"))
}
pub(crate) fn le_u64(b: &[u8]) -> u64 {
    u64::from_le_bytes(b[..8].try_into().expect("8 bytes"))
}
fn le_u128(b: &[u8]) -> u128 {
    u128::from_le_bytes(b[..16].try_into().expect("16 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_match_format_md() {
        assert_eq!(FORMAT_VERSION, 3);
        assert_eq!(LOG_VERSION, 2);
        assert_eq!(MARKER_LEN_V3, 64);
        assert_eq!((FRAME_LEN, &FRAME_MAGIC, FRAME_MAX_DATA), (32, b"PLFW", 0x7fff_f000));
        assert_eq!((LOG_FLAG_DATA_CRC, LOG_FLAG_FRAMED), (1, 2));
        assert_eq!(&MARKER_MAGIC, b"PLFSCTR\0");
        assert_eq!(&INDEX_MAGIC, b"PLFSIDX\0");
        assert_eq!(&DATA_MAGIC, b"PLFSDAT\0");
        assert_eq!(MARKER_LEN, 48);
        assert_eq!(INDEX_HEADER_LEN, 64);
        assert_eq!(DATA_HEADER_LEN, 64);
        assert_eq!(WRITE_REC_LEN, 48);
        assert_eq!(
            (
                REC_WRITE,
                REC_PATTERN,
                PATTERN_FIXED_LEN,
                PATTERN_MIN_RUN,
                PATTERN_MAX_RUN
            ),
            (1, 2, 60, 8, 4096)
        );
        assert_eq!(MARKER_NAME, ".plfscontainer");
        assert_eq!(BUILD_DIR_MODE, 0o1711);
        // The build mode under any umask that leaves the owner's bits; no container directory mode
        // (container::container_dir_mode: never sticky) and no ordinary directory mode is one.
        for umask in [0, 0o022, 0o027, 0o077] {
            assert!(is_build_mode(BUILD_DIR_MODE & !umask), "{umask:o}");
        }
        for m in [0o711, 0o755, 0o1777, 0o1755, 0o700, 0o3711, 0o1751, 0o1600, 0o1311] {
            assert!(!is_build_mode(m), "{m:o}");
        }
        assert_eq!(hash_str(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(hash_str("a"), 0xaf63_dc4c_8601_ec8c);
    }

    /// docs/format.md section 3 gives the frame: read from the document, not restated.
    #[test]
    fn frame_matches_format_md() {
        let doc = include_str!("../../../docs/format.md");
        let start = doc.find("## 3. Data log").expect("format.md has section 3");
        let sec = &doc[start..start + doc[start..].find("\n## 4.").expect("section 4 follows")];
        let line = sec
            .lines()
            .find(|l| l.starts_with("Format: { magic [4] = \"PLFW\""))
            .expect("the frame's grammar");
        let body = &line[line.find('{').unwrap() + 1..line.rfind('}').unwrap()];
        let width: usize = body
            .split('|')
            .map(|f| match f.split_whitespace().nth(1) {
                Some("u64") => 8,
                Some("u32") => 4,
                Some("[4]") => 4,
                _ => panic!("field {f:?}"),
            })
            .sum();
        assert_eq!(width, FRAME_LEN);
        for needle in [
            "| 4 | 4 | data bytes",
            "| 8 | 8 | logical offset",
            "| 16 | 8 | timestamp",
            "| 28 | 4 | crc32c of bytes 0..28",
        ] {
            assert!(sec.contains(needle), "format.md section 3 lacks {needle:?}");
        }
        // The encoder writes what the table says.
        let f = Frame {
            logical_off: 0x0102_0304_0506_0708,
            length: 4096,
            ts: 77,
            data_crc: 9,
        };
        let b = f.encode();
        assert_eq!(&b[0..4], b"PLFW");
        assert_eq!(le_u32(&b[4..8]), 4096);
        assert_eq!(le_u64(&b[8..16]), 0x0102_0304_0506_0708);
        assert_eq!(le_u64(&b[16..24]), 77);
        assert_eq!(le_u32(&b[24..28]), 9);
        assert_eq!(le_u32(&b[28..32]), crc32c::crc32c(&b[..28]));
        assert_eq!(Frame::decode(&b), Some(f));
        // Cut short, or any bit flipped: not a frame.
        assert_eq!(Frame::decode(&b[..31]), None);
        for i in 0..FRAME_LEN * 8 {
            let mut c = b;
            c[i / 8] ^= 1 << (i % 8);
            assert_eq!(Frame::decode(&c), None, "bit {i}");
        }
        // A frame never describes a zero-length write or one past the largest file offset.
        for bad in [
            Frame { length: 0, ..f },
            Frame {
                logical_off: i64::MAX as u64,
                ..f
            },
        ] {
            assert_eq!(Frame::decode(&bad.encode()), None);
        }
    }

    /// Zeros where a record's checksum belongs make it torn (a record whose bytes are not all
    /// visible yet), not a checksum mismatch: a reader of a log still being written waits for it.
    #[test]
    fn a_record_ending_in_zeros_is_torn() {
        let r = WriteRecord {
            logical_off: 3,
            length: 4096,
            physical_off: 96,
            ts: 11,
            data_crc: 0,
        };
        let mut buf = Vec::new();
        r.encode_into(&mut buf);
        let mut log = buf.clone();
        // All of the second record zeros (its length visible before its bytes), or only its
        // end (the bytes past a block boundary not visible yet).
        for visible in [0, 8, WRITE_REC_LEN - 4] {
            let mut second = vec![0u8; WRITE_REC_LEN];
            second[..visible].copy_from_slice(&buf[..visible]);
            log.truncate(WRITE_REC_LEN);
            log.extend_from_slice(&second);
            let d = decode_records(&log);
            assert_eq!((d.records.len(), d.valid_len), (1, WRITE_REC_LEN), "{visible} bytes");
            let e = d.tail_error.expect("a tail error");
            assert!(e.starts_with("torn record at body offset 48"), "{visible} bytes: {e}");
        }
        // A wrong checksum that is not zeros is damage.
        let mut bad = buf.clone();
        bad[WRITE_REC_LEN - 1] ^= 0x40;
        let e = decode_records(&bad).tail_error.expect("a tail error");
        assert!(e.starts_with("record checksum mismatch"), "{e}");
    }

    #[test]
    fn record_roundtrip_and_torn_tail() {
        let recs = [
            WriteRecord {
                logical_off: 1,
                length: 2,
                physical_off: 64,
                ts: 9,
                data_crc: 0,
            },
            WriteRecord {
                logical_off: u64::MAX - 5,
                length: 5,
                physical_off: 66,
                ts: 10,
                data_crc: 7,
            },
        ];
        let mut buf = Vec::new();
        for r in &recs {
            r.encode_into(&mut buf);
        }
        assert_eq!(buf.len(), 2 * WRITE_REC_LEN);
        let d = decode_records(&buf);
        assert_eq!(d.records, recs);
        assert!(d.tail_error.is_none());
        for cut in 0..buf.len() {
            let d = decode_records(&buf[..cut]);
            assert_eq!(d.records.len(), cut / WRITE_REC_LEN);
            assert_eq!(d.tail_error.is_some(), cut % WRITE_REC_LEN != 0);
        }
        let mut bad = buf.clone();
        bad[WRITE_REC_LEN + 10] ^= 1;
        let d = decode_records(&bad);
        assert_eq!(d.records.len(), 1);
        assert!(d.tail_error.unwrap().contains("checksum"));
    }

    #[test]
    fn runs_become_patterns() {
        let mk = |i: u64, off: u64, len: u64, phys: u64| WriteRecord {
            logical_off: off,
            length: len,
            physical_off: phys,
            ts: 100 + i * 7 + i * i * 1013,
            data_crc: 0,
        };
        let mut recs: Vec<WriteRecord> = (0..20).map(|i| mk(i, i * 400, 100, 64 + i * 100)).collect();
        recs.push(mk(20, 5, 3, 64 + 2000)); // irregular
        recs.extend((21..26).map(|i| mk(i, i * 10_000, 50, 64 + 2003 + (i - 21) * 50))); // too short a run
        let mut buf = Vec::new();
        encode_records(&recs, 0, &mut buf);
        let d = decode_records(&buf);
        assert!(d.tail_error.is_none());
        assert_eq!(d.patterns.len(), 1);
        let p = &d.patterns[0];
        assert_eq!(
            (p.logical_start, p.length, p.stride, p.physical_start, p.ts.len()),
            (0, 100, 400, 64, 20)
        );
        assert_eq!(p.ts, recs[..20].iter().map(|r| r.ts).collect::<Vec<_>>());
        assert_eq!(d.records, recs[20..].to_vec());
        assert!(buf.len() < 20 * WRITE_REC_LEN);
        // Every truncation of the encoding decodes to a prefix, never panics.
        for cut in 0..buf.len() {
            let d = decode_records(&buf[..cut]);
            assert!(d.patterns.len() + d.records.len() <= 7);
        }
    }

    #[test]
    fn header_and_marker_roundtrip() {
        let p = Path::new("x");
        let h = LogHeader {
            magic: INDEX_MAGIC,
            writer_id: 0xabc,
            open_ns: 5,
            pid: 77,
            flags: 1,
        };
        assert_eq!(LogHeader::decode(p, &h.encode(), INDEX_MAGIC).unwrap(), h);
        assert!(LogHeader::decode(p, &h.encode(), DATA_MAGIC).is_err());
        let m = Marker {
            version: FORMAT_VERSION,
            container_id: 1 << 100,
            created_ns: 42,
        };
        assert_eq!(Marker::decode(p, &m.encode()).unwrap(), m);
        let mut e = m.encode();
        e[20] ^= 4;
        assert!(Marker::decode(p, &e).is_err());
        assert!(Marker::decode(p, &e[..10]).is_err());
    }

    #[test]
    fn dropping_names_roundtrip() {
        let ds = [
            MetaDropping::Open {
                writer_id: 3,
                pid: 9,
                host: "n1.cluster".into(),
            },
            MetaDropping::Close {
                writer_id: 3,
                open_ts: 1,
                close_ts: 2,
                eof: 3,
                bytes: 4,
                mtime_ns: 5,
            },
            MetaDropping::Trunc {
                ts: 7,
                size: 8,
                writer_id: u64::MAX,
            },
        ];
        for d in ds {
            assert_eq!(MetaDropping::parse(&d.name()), Some(d));
        }
        assert_eq!(MetaDropping::parse("close.zz"), None);
        let n = index_log_name(0x1f, 12, "host.a.b");
        assert_eq!(n, "index.000000000000001f.12.host.a.b");
        assert_eq!(
            parse_log_name(&n),
            Some(LogName {
                is_index: true,
                writer_id: 0x1f,
                pid: 12,
                host: "host.a.b".into()
            })
        );
        assert_eq!(parse_log_name("data.1.2.h"), None);
    }
}
