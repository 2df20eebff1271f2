//! `plfs verify`: re-reads the data of every index record of a file whose writer stored data
//! checksums (`data_checksums: true` in the plfsrc sets [`format::LOG_FLAG_DATA_CRC`] and a
//! crc32c of each write's data in its record) and compares. Records are checked whole, straight
//! from the index logs: the merged map may hold only pieces of a write.

use crate::error::Result;
use crate::format::{self, LogHeader};
use crate::namespace::Plfs;
use crate::sys::{Access, Dir};
use std::path::{Path, PathBuf};

/// A record whose data does not match its checksum.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// The index log holding the record.
    pub index_log: PathBuf,
    /// The data log holding the data.
    pub data_log: PathBuf,
    /// Logical offset of the write.
    pub logical_off: u64,
    /// Its length.
    pub length: u64,
    /// Where its data starts in the data log.
    pub physical_off: u64,
    /// Checksum stored in the record.
    pub expected: u32,
    /// Checksum of the bytes found (`None`: the data log is shorter than the record says).
    pub actual: Option<u32>,
}

/// The result of [`verify`].
#[derive(Debug, Clone, Default)]
pub struct VerifyReport {
    /// Index logs read.
    pub logs: usize,
    /// Valid records found.
    pub records: u64,
    /// Records whose data was checked.
    pub checked: u64,
    /// Bytes of data checked.
    pub bytes: u64,
    /// Records of logs written without checksums (not checkable).
    pub unchecked: u64,
    /// Records whose data did not match.
    pub mismatches: Vec<Mismatch>,
    /// Logs that could not be read at all, with the reason.
    pub unreadable: Vec<(PathBuf, String)>,
}

impl VerifyReport {
    /// 0 when every checksum matched and every log was readable, 4 otherwise.
    pub fn exit_code(&self) -> i32 {
        if self.mismatches.is_empty() && self.unreadable.is_empty() {
            0
        } else {
            4
        }
    }
}

/// Verifies every checksummed record of logical file `path`.
pub fn verify(plfs: &Plfs, path: &Path) -> Result<VerifyReport> {
    let c = plfs.container(path)?;
    let mut rep = VerifyReport::default();
    for d in c.hostdirs()? {
        let mut names = d.list()?;
        names.sort();
        for n in names {
            let Some(info) = n.to_str().and_then(format::parse_log_name).filter(|i| i.is_index) else {
                continue;
            };
            let dname = format::data_log_name(info.writer_id, info.pid, &info.host);
            rep.logs += 1;
            if let Err(e) = verify_log(&d, n.to_str().unwrap_or_default(), &dname, &mut rep) {
                rep.unreadable.push((d.sub(&n), e.to_string()));
            }
        }
    }
    // What a reader would say of the whole file: a torn tail in the log of a writer that
    // closed, a closed writer's missing log, records past the end of their data log.
    if rep.unreadable.is_empty() {
        let flags = crate::OpenFlags {
            read: true,
            ..Default::default()
        };
        let loaded = plfs
            .open(path, flags, 0, std::process::id())
            .and_then(|f| f.index_stats().and_then(|_| f.close()));
        match loaded {
            // Under the damaged file's own name, as the per-log checks report theirs.
            Err(crate::Error::Corruption { path: file, what }) => {
                rep.unreadable.push((file, format!("corrupt: {what}")))
            }
            Err(e) => rep.unreadable.push((path.to_path_buf(), e.to_string())),
            Ok(()) => {}
        }
    }
    Ok(rep)
}

fn verify_log(d: &Dir, iname: &str, dname: &str, rep: &mut VerifyReport) -> Result<()> {
    let ipath = &d.sub(iname);
    let dlog = &d.sub(dname);
    let bytes = d.open_file(iname, Access::Read)?.read_from(0)?;
    if bytes.len() < format::INDEX_HEADER_LEN {
        return Ok(()); // a writer that never wrote a record
    }
    let h = LogHeader::decode(ipath, &bytes, format::INDEX_MAGIC)?;
    let dec = format::decode_records(&bytes[format::INDEX_HEADER_LEN..]);
    if let Some(e) = dec.tail_error.as_ref().filter(|e| !e.starts_with("torn")) {
        rep.unreadable
            .push((ipath.to_path_buf(), format!("{e}; records after it were not checked")));
    }
    // Runs compressed into pattern records carry no checksums (writers only compress writes
    // without one): they count as unchecked.
    let pattern_writes: u64 = dec.patterns.iter().map(|p| p.ts.len() as u64).sum();
    rep.records += dec.records.len() as u64 + pattern_writes;
    rep.unchecked += pattern_writes;
    if h.flags & format::LOG_FLAG_DATA_CRC == 0 {
        rep.unchecked += dec.records.len() as u64;
        return Ok(());
    }
    if dec.records.is_empty() {
        return Ok(());
    }
    let fd = d.open_file(dname, Access::Read)?;
    let mut buf = vec![0u8; 1 << 22];
    for r in &dec.records {
        let mut crc = 0u32;
        let mut done = 0u64;
        let mut short = false;
        while done < r.length {
            let want = (r.length - done).min(buf.len() as u64) as usize;
            let n = fd.pread_full(&mut buf[..want], r.physical_off + done)?;
            crc = crc32c::crc32c_append(crc, &buf[..n]);
            done += n as u64;
            if n < want {
                short = true;
                break;
            }
        }
        rep.checked += 1;
        rep.bytes += done;
        let actual = (!short).then_some(crc);
        if actual != Some(r.data_crc) {
            rep.mismatches.push(Mismatch {
                index_log: ipath.to_path_buf(),
                data_log: dlog.to_path_buf(),
                logical_off: r.logical_off,
                length: r.length,
                physical_off: r.physical_off,
                expected: r.data_crc,
                actual,
            });
        }
    }
    Ok(())
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.actual {
            Some(a) => write!(
                f,
                "{}: bytes {}..{} (logical {}..{}): crc32c {a:08x}, the index ({}) says {:08x}",
                self.data_log.display(),
                self.physical_off,
                self.physical_off + self.length,
                self.logical_off,
                self.logical_off + self.length,
                self.index_log.display(),
                self.expected
            ),
            None => write!(
                f,
                "{}: ends before byte {} that the index ({}) points to (logical {}..{})",
                self.data_log.display(),
                self.physical_off + self.length,
                self.index_log.display(),
                self.logical_off,
                self.logical_off + self.length
            ),
        }
    }
}
