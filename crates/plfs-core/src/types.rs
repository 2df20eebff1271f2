//! The types every layer shares: a logical file's attributes ([`Stat`], [`FileKind`]), directory
//! entries, open flags. Nothing here does I/O.

use std::ffi::OsString;

/// Kind of a logical file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link.
    Symlink,
}

/// Attributes of a logical file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    /// Kind.
    pub kind: FileKind,
    /// Full `st_mode` (type and permission bits).
    pub mode: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Logical size in bytes.
    pub size: u64,
    /// 512-byte blocks.
    pub blocks: u64,
    /// Preferred I/O size.
    pub blksize: u64,
    /// Access time, ns since the epoch.
    pub atime_ns: i64,
    /// Modification time, ns.
    pub mtime_ns: i64,
    /// Status change time, ns.
    pub ctime_ns: i64,
    /// Inode number (of the container directory for files).
    pub ino: u64,
    /// Device of the backend.
    pub dev: u64,
    /// Link count (0 once an open file was unlinked).
    pub nlink: u64,
}

/// A [`Stat`] as a C `struct stat` holds it, each field in the narrowest type the field has on
/// the supported targets (64-bit Linux: x86_64 and aarch64, where `struct stat` is `struct
/// stat64`), so that a front end fills its `struct stat` from here by lossless conversions
/// (`From`, checked by the compiler on its target). Both C front ends, ldplfs and the C API,
/// fill it from [`Stat::c_stat`] and nothing else, so they agree.
///
/// A value beyond its field is saturated, never wrapped or cut: a size or block count beyond
/// `i64::MAX` (`off_t`, `blkcnt_t`) becomes `i64::MAX`, a link count beyond `u32::MAX` (aarch64's
/// `nlink_t`) becomes `u32::MAX`. Only a damaged container claims such a size: it is a claim of
/// the storage that no kernel type can hold, and the kernel answers such a claim the same way
/// (its NFS client takes a server's size beyond `loff_t` as `OFFSET_MAX`); `EOVERFLOW` is the
/// kernel's and glibc's answer when a value the kernel holds does not fit a narrower (32-bit)
/// ABI, which the supported targets do not have. Saturating also keeps a damaged file visible to
/// `ls`, `rm` and `plfs fsck` through the preload (issue 25, item 15). The preferred I/O size is
/// a hint: one beyond `i32::MAX` (aarch64's `blksize_t`) is replaced by [`BLKSIZE`], as the
/// FUSE front end does. Times always fit (seconds and nanoseconds of an `i64` of nanoseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CStat {
    /// `st_dev`.
    pub dev: u64,
    /// `st_ino`.
    pub ino: u64,
    /// `st_mode`.
    pub mode: u32,
    /// `st_nlink`, saturated.
    pub nlink: u32,
    /// `st_uid`.
    pub uid: u32,
    /// `st_gid`.
    pub gid: u32,
    /// `st_size`, saturated.
    pub size: i64,
    /// `st_blksize` ([`BLKSIZE`] where the hint does not fit).
    pub blksize: i32,
    /// `st_blocks`, saturated.
    pub blocks: i64,
    /// `st_atime`, `st_atime_nsec`.
    pub atime: CTime,
    /// `st_mtime`, `st_mtime_nsec`.
    pub mtime: CTime,
    /// `st_ctime`, `st_ctime_nsec`.
    pub ctime: CTime,
}

/// A time as a `struct stat` holds it: seconds since the epoch (`time_t`) and nanoseconds
/// (`0..1_000_000_000`, a `long`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CTime {
    /// Seconds (negative before the epoch).
    pub sec: i64,
    /// Nanoseconds past `sec`.
    pub nsec: i64,
}

impl CTime {
    fn from_ns(ns: i64) -> CTime {
        CTime {
            sec: ns.div_euclid(1_000_000_000),
            nsec: ns.rem_euclid(1_000_000_000),
        }
    }
}

impl Stat {
    /// These attributes as a C `struct stat` holds them (see [`CStat`]).
    pub fn c_stat(&self) -> CStat {
        let signed = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        CStat {
            dev: self.dev,
            ino: self.ino,
            mode: self.mode,
            nlink: u32::try_from(self.nlink).unwrap_or(u32::MAX),
            uid: self.uid,
            gid: self.gid,
            size: signed(self.size),
            blksize: i32::try_from(self.blksize).unwrap_or(BLKSIZE as i32),
            blocks: signed(self.blocks),
            atime: CTime::from_ns(self.atime_ns),
            mtime: CTime::from_ns(self.mtime_ns),
            ctime: CTime::from_ns(self.ctime_ns),
        }
    }
}

/// Fills C `struct stat` `$st` (a `libc::stat` its caller made, all zero) from [`CStat`] `$c`:
/// the front ends that hand out a `struct stat` (ldplfs, the C API) fill it through here, so
/// they fill it alike, and the core needs neither `libc` nor `unsafe` for it. Every field is
/// converted with `From`: a target whose field were narrower than [`CStat`]'s would not build,
/// never cut a value.
#[macro_export]
macro_rules! fill_c_stat {
    ($st:ident, $c:expr) => {{
        let c: $crate::types::CStat = $c;
        $st.st_dev = c.dev.into();
        $st.st_ino = c.ino.into();
        $st.st_mode = c.mode.into();
        $st.st_nlink = c.nlink.into();
        $st.st_uid = c.uid.into();
        $st.st_gid = c.gid.into();
        $st.st_size = c.size.into();
        $st.st_blksize = c.blksize.into();
        $st.st_blocks = c.blocks.into();
        ($st.st_atime, $st.st_atime_nsec) = (c.atime.sec.into(), c.atime.nsec.into());
        ($st.st_mtime, $st.st_mtime_nsec) = (c.mtime.sec.into(), c.mtime.nsec.into());
        ($st.st_ctime, $st.st_ctime_nsec) = (c.ctime.sec.into(), c.ctime.nsec.into());
    }};
}

/// Preferred I/O size reported by stat: large, so tools read and write in big chunks.
pub const BLKSIZE: u64 = 1 << 20;

impl Stat {
    /// A logical stat from a backend stat.
    pub(crate) fn from_raw(st: &rustix::fs::Stat, kind: FileKind) -> Stat {
        let ns = |s: i64, n: u64| s.saturating_mul(1_000_000_000).saturating_add(n as i64);
        Stat {
            kind,
            mode: st.st_mode,
            uid: st.st_uid,
            gid: st.st_gid,
            size: st.st_size.max(0) as u64,
            blocks: st.st_blocks.max(0) as u64,
            blksize: st.st_blksize.max(0) as u64,
            atime_ns: ns(st.st_atime, st.st_atime_nsec),
            mtime_ns: ns(st.st_mtime, st.st_mtime_nsec),
            ctime_ns: ns(st.st_ctime, st.st_ctime_nsec),
            ino: st.st_ino,
            dev: st.st_dev,
            nlink: st.st_nlink,
        }
    }

    /// The same attributes as a regular file of `size` bytes (a container's marker stat made
    /// into the logical file's stat).
    pub(crate) fn as_file(mut self, size: u64) -> Stat {
        self.kind = FileKind::File;
        self.mode = (self.mode & 0o7777) | 0o100000;
        self.size = size;
        self.blocks = size.div_ceil(512);
        self.blksize = BLKSIZE;
        self.nlink = 1;
        self
    }
}

/// A directory entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    /// Name.
    pub name: OsString,
    /// Kind.
    pub kind: FileKind,
}

/// How a file is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OpenFlags {
    /// Open for reading.
    pub read: bool,
    /// Open for writing.
    pub write: bool,
    /// Create if missing.
    pub create: bool,
    /// With `create`: fail if it exists.
    pub excl: bool,
    /// Truncate to zero at open.
    pub trunc: bool,
    /// Every write goes to the end of the file.
    pub append: bool,
}

impl OpenFlags {
    /// From POSIX `open(2)` flags.
    pub fn from_posix(flags: i32) -> crate::Result<Self> {
        let acc = flags & libc_consts::O_ACCMODE;
        let (read, write) = match acc {
            libc_consts::O_RDONLY => (true, false),
            libc_consts::O_WRONLY => (false, true),
            libc_consts::O_RDWR => (true, true),
            _ => {
                return Err(crate::Error::InvalidArgument(format!(
                    "bad access mode in open flags {flags:#o}"
                )))
            }
        };
        Ok(OpenFlags {
            read,
            write,
            create: flags & libc_consts::O_CREAT != 0,
            excl: flags & libc_consts::O_EXCL != 0,
            trunc: flags & libc_consts::O_TRUNC != 0,
            append: flags & libc_consts::O_APPEND != 0,
        })
    }

    /// Back to POSIX flags (access mode, O_APPEND).
    pub fn to_posix(&self) -> i32 {
        let acc = match (self.read, self.write) {
            (true, true) => libc_consts::O_RDWR,
            (false, true) => libc_consts::O_WRONLY,
            _ => libc_consts::O_RDONLY,
        };
        acc | if self.append { libc_consts::O_APPEND } else { 0 }
    }

    /// The access(2) mask these flags need (`R_OK`=4, `W_OK`=2).
    pub(crate) fn access_mask(&self) -> u32 {
        (if self.read { 4 } else { 0 }) | (if self.write { 2 } else { 0 })
    }
}

/// Linux open(2) flag values (asm-generic, as on x86_64 and aarch64).
pub mod libc_consts {
    #![allow(missing_docs)]
    pub const O_ACCMODE: i32 = 0o3;
    pub const O_RDONLY: i32 = 0;
    pub const O_WRONLY: i32 = 1;
    pub const O_RDWR: i32 = 2;
    pub const O_CREAT: i32 = 0o100;
    pub const O_EXCL: i32 = 0o200;
    pub const O_TRUNC: i32 = 0o1000;
    pub const O_APPEND: i32 = 0o2000;
}

/// Statistics of a merged index ([`crate::OpenFile::index_stats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IndexStats {
    /// Uncompressed pieces.
    pub pieces: usize,
    /// Compressed patterns.
    pub patterns: usize,
    /// Approximate heap bytes of the extent map.
    pub mem_bytes: usize,
    /// Index records (pattern elements counted one by one) read from disk.
    pub records_read: u64,
}

/// Space accounting of one 1-N directory's packed logs (for `plfs du`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PackedUsage {
    /// Logs in the directory's store (every backend).
    pub logs: u64,
    /// Their total size in bytes, with the stores' reserves (docs/format.md §11).
    pub log_bytes: u64,
    /// Bytes of file data the logs hold, live or overwritten (the data of every WRITE record).
    pub data_bytes: u64,
    /// Bytes of file data a reader sees (holes excluded).
    pub live_bytes: u64,
}

/// What stores a logical path ([`crate::Plfs::storage`]), with the backend path where there is
/// one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Storage {
    /// Nothing is there.
    Missing,
    /// A directory (replicated on every canonical backend; the path on the one it was found on).
    Directory(std::path::PathBuf),
    /// A symbolic link.
    Symlink(std::path::PathBuf),
    /// An N-1 container directory.
    Container(std::path::PathBuf),
    /// A plain backend file (N-N mode).
    Plain(std::path::PathBuf),
    /// A file packed in its directory's small-file logs (1-N mode).
    Packed,
    /// A container written by PLFS 2.x (read-only until `plfs upgrade`).
    Legacy(std::path::PathBuf),
    /// A file of a PLFS 2.x 1-N directory (read-only until `plfs upgrade`).
    LegacyPacked,
}

/// How a regular file is stored, and in which format ([`crate::Plfs::file_format`], shown by
/// `plfs stat` and `plfs ls -l`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileFormat {
    /// An N-1 container of this library's format `version`.
    Container {
        /// The format version in its marker.
        version: u32,
    },
    /// A plain backend file (N-N mode).
    Plain,
    /// A file packed in its directory's small-file logs (1-N mode).
    Packed,
    /// An N-1 container written by PLFS `release` (read-only).
    Legacy {
        /// The release in its `version-tag.*` (`2.x` without one).
        release: String,
    },
    /// A file of a PLFS 2.x 1-N directory (read-only).
    LegacyPacked,
}

impl FileFormat {
    /// True for files written by PLFS 2.x: readable, but every change is refused until
    /// `plfs upgrade` converts them.
    pub fn is_legacy(&self) -> bool {
        matches!(self, FileFormat::Legacy { .. } | FileFormat::LegacyPacked)
    }
}

impl std::fmt::Display for FileFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FileFormat::Container { version } => write!(f, "plfs v{version} (N-1 container)"),
            FileFormat::Plain => f.write_str("plain file (N-N)"),
            FileFormat::Packed => f.write_str("packed file (1-N)"),
            FileFormat::Legacy { release } => write!(f, "plfs-{release} (legacy, read-only)"),
            FileFormat::LegacyPacked => f.write_str("plfs-2.x 1-N directory file (legacy, read-only)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(size: u64, blocks: u64, blksize: u64, nlink: u64) -> Stat {
        Stat {
            kind: FileKind::File,
            mode: 0o100640,
            uid: 7,
            gid: 8,
            size,
            blocks,
            blksize,
            atime_ns: 1_500_000_000_123_456_789,
            mtime_ns: -1,
            ctime_ns: 0,
            ino: 99,
            dev: 3,
            nlink,
        }
    }

    /// What fits is kept as it is; times split into seconds and nanoseconds, before the epoch
    /// too.
    #[test]
    fn c_stat_keeps_what_fits() {
        let c = stat(12345, 25, BLKSIZE, 2).c_stat();
        assert_eq!(
            (c.dev, c.ino, c.mode, c.nlink, c.uid, c.gid),
            (3, 99, 0o100640, 2, 7, 8)
        );
        assert_eq!((c.size, c.blocks, c.blksize), (12345, 25, 1 << 20));
        assert_eq!(
            c.atime,
            CTime {
                sec: 1_500_000_000,
                nsec: 123_456_789
            }
        );
        assert_eq!(
            c.mtime,
            CTime {
                sec: -1,
                nsec: 999_999_999
            }
        );
        assert_eq!(c.ctime, CTime { sec: 0, nsec: 0 });
        let edge = stat(i64::MAX as u64, i64::MAX as u64, i32::MAX as u64, u32::MAX as u64).c_stat();
        assert_eq!(
            (edge.size, edge.blocks, edge.blksize, edge.nlink),
            (i64::MAX, i64::MAX, i32::MAX, u32::MAX)
        );
    }

    /// A size, block count or link count beyond its C field is saturated, never wrapped (a
    /// size beyond `i64::MAX` came out negative in ldplfs once: issue 25, item 15); a preferred
    /// I/O size beyond `i32::MAX` is replaced by `BLKSIZE`.
    #[test]
    fn c_stat_saturates_what_does_not_fit() {
        let c = stat(u64::MAX, u64::MAX, u64::MAX, u64::MAX).c_stat();
        assert_eq!(
            (c.size, c.blocks, c.nlink, c.blksize),
            (i64::MAX, i64::MAX, u32::MAX, 1 << 20)
        );
        let c = stat(1 << 63, (1 << 63) + 1, 1 << 31, 1 << 32).c_stat();
        assert_eq!(
            (c.size, c.blocks, c.nlink, c.blksize),
            (i64::MAX, i64::MAX, u32::MAX, 1 << 20)
        );
    }
}
