//! Filling the C `struct stat` and `struct statvfs` from the core's values.

use plfs_core::Stat;

/// A `struct stat` for a logical file (`st_rdev` 0), filled as ldplfs fills one: from the
/// core's [`Stat::c_stat`] through [`plfs_core::fill_c_stat`] (values that do not fit are
/// saturated there).
pub fn fill_stat(s: &Stat) -> libc::stat {
    // SAFETY: `struct stat` is plain old data; all-zero bytes are a valid value (padding included).
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    plfs_core::fill_c_stat!(st, s.c_stat());
    st
}

/// A `struct statvfs` from the backend's statistics.
pub fn fill_statvfs(v: &rustix::fs::StatVfs) -> libc::statvfs {
    // SAFETY: `struct statvfs` is plain old data; all-zero bytes are a valid value.
    let mut out: libc::statvfs = unsafe { std::mem::zeroed() };
    out.f_bsize = v.f_bsize as _;
    out.f_frsize = v.f_frsize as _;
    out.f_blocks = v.f_blocks as _;
    out.f_bfree = v.f_bfree as _;
    out.f_bavail = v.f_bavail as _;
    out.f_files = v.f_files as _;
    out.f_ffree = v.f_ffree as _;
    out.f_favail = v.f_favail as _;
    out.f_fsid = v.f_fsid as _;
    out.f_flag = v.f_flag.bits() as _;
    out.f_namemax = v.f_namemax as _;
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use plfs_core::FileKind;

    #[test]
    fn times_split_into_seconds_and_nanoseconds() {
        let s = Stat {
            kind: FileKind::File,
            mode: 0o100640,
            uid: 7,
            gid: 8,
            size: 12345,
            blocks: 25,
            blksize: 1 << 20,
            atime_ns: 1_500_000_000_123_456_789,
            mtime_ns: -1,
            ctime_ns: 0,
            ino: 99,
            dev: 3,
            nlink: 1,
        };
        let st = fill_stat(&s);
        assert_eq!((st.st_mode, st.st_uid, st.st_gid, st.st_size), (0o100640, 7, 8, 12345));
        assert_eq!((st.st_atime, st.st_atime_nsec), (1_500_000_000, 123_456_789));
        assert_eq!((st.st_mtime, st.st_mtime_nsec), (-1, 999_999_999));
        assert_eq!(
            (st.st_ino, st.st_blocks, st.st_blksize, st.st_nlink),
            (99, 25, 1 << 20, 1)
        );
    }

    /// A size beyond `i64::MAX` (only a damaged container claims one) is clamped, never wrapped
    /// to a negative size, as ldplfs does (issue 25, item 15).
    #[test]
    fn sizes_beyond_off_t_are_clamped() {
        let s = Stat {
            kind: FileKind::File,
            mode: 0o100640,
            uid: 0,
            gid: 0,
            size: u64::MAX,
            blocks: u64::MAX,
            blksize: 1 << 20,
            atime_ns: 0,
            mtime_ns: 0,
            ctime_ns: 0,
            ino: 1,
            dev: 1,
            nlink: 1,
        };
        let st = fill_stat(&s);
        assert_eq!((st.st_size, st.st_blocks), (i64::MAX, i64::MAX));
    }
}
