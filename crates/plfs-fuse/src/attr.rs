//! Conversions between plfs-core types and FUSE types: attributes, file kinds, times, and the one
//! place core errors become FUSE errnos.

use fuser::{Errno, FileAttr, FileType, INodeNo, TimeOrNow};
use plfs_core::TimeSpec;
use plfs_core::{FileKind, Stat};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// FUSE file type of a PLFS file kind.
pub fn file_type(kind: FileKind) -> FileType {
    match kind {
        FileKind::File => FileType::RegularFile,
        FileKind::Dir => FileType::Directory,
        FileKind::Symlink => FileType::Symlink,
    }
}

/// A time in nanoseconds since the epoch (negative before it).
pub fn system_time(ns: i64) -> SystemTime {
    let d = Duration::from_nanos(ns.unsigned_abs());
    if ns >= 0 {
        UNIX_EPOCH + d
    } else {
        UNIX_EPOCH.checked_sub(d).unwrap_or(UNIX_EPOCH)
    }
}

/// A FUSE `setattr` time as a core time specification.
pub fn time_spec(t: Option<TimeOrNow>) -> TimeSpec {
    match t {
        None => TimeSpec::Omit,
        Some(TimeOrNow::Now) => TimeSpec::Now,
        Some(TimeOrNow::SpecificTime(st)) => match st.duration_since(UNIX_EPOCH) {
            Ok(d) => TimeSpec::At(d.as_secs() as i64, i64::from(d.subsec_nanos())),
            Err(e) => {
                // Before the epoch: seconds round down, nanoseconds stay in [0, 1e9).
                let d = e.duration();
                let (s, n) = (d.as_secs() as i64, i64::from(d.subsec_nanos()));
                if n == 0 {
                    TimeSpec::At(-s, 0)
                } else {
                    TimeSpec::At(-s - 1, 1_000_000_000 - n)
                }
            }
        },
    }
}

/// FUSE attributes of a core stat, under our inode number `ino`.
pub fn file_attr(st: &Stat, ino: u64) -> FileAttr {
    FileAttr {
        ino: INodeNo(ino),
        size: st.size,
        blocks: st.blocks,
        atime: system_time(st.atime_ns),
        mtime: system_time(st.mtime_ns),
        ctime: system_time(st.ctime_ns),
        crtime: system_time(st.ctime_ns),
        kind: file_type(st.kind),
        perm: (st.mode & 0o7777) as u16,
        nlink: u32::try_from(st.nlink).unwrap_or(u32::MAX),
        uid: st.uid,
        gid: st.gid,
        rdev: 0,
        blksize: u32::try_from(st.blksize).unwrap_or(1 << 20),
        flags: 0,
    }
}

/// The errno a core error is returned as. Every error reply goes through here.
pub fn errno(e: &plfs_core::Error) -> Errno {
    let raw = e.raw_errno();
    if raw == libc::EIO || matches!(e, plfs_core::Error::Corruption { .. }) {
        // Unexpected failures are worth a line in the daemon's log; ENOENT and friends are not.
        plfs_core::warn!("fuse: {e}");
    }
    if raw > 0 {
        Errno::from_i32(raw)
    } else {
        Errno::EIO
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_round_trip() {
        for ns in [0i64, 1, 1_500_000_000, -1, -1_500_000_001] {
            let st = system_time(ns);
            let TimeSpec::At(s, n) = time_spec(Some(TimeOrNow::SpecificTime(st))) else {
                panic!("not At")
            };
            assert!((0..1_000_000_000).contains(&n));
            assert_eq!(s * 1_000_000_000 + n, ns);
        }
        assert!(matches!(time_spec(None), TimeSpec::Omit));
        assert!(matches!(time_spec(Some(TimeOrNow::Now)), TimeSpec::Now));
    }

    #[test]
    fn errors_map_to_their_errno() {
        let e = plfs_core::Error::NotFound("/x".into());
        assert_eq!(errno(&e), Errno::ENOENT);
        let e = plfs_core::Error::corrupt("/x", "bad magic");
        assert_eq!(errno(&e), Errno::EIO);
        let e = plfs_core::Error::Exists("/x".into());
        assert_eq!(errno(&e), Errno::EEXIST);
    }
}
