//! The backend I/O seam: every system call the core makes on a backend file system goes through
//! this module, so that three policies apply to all of them in one place:
//!
//! - **Raw system calls** (rustix, linux_raw backend): nothing here calls an interposable libc
//!   symbol, so the LD_PRELOAD library never sees the core's own I/O. Descriptors are made only
//!   in [`fd`], as an [`fd::Fd`] that the close system call closes (std's `OwnedFd` would close
//!   through libc's `close`).
//! - **Failpoints** ([`failpoint`]): every mutating call (create, write, fsync, mkdir, rename,
//!   unlink, ftruncate, setattr) and the reads (open, pread, readdir) can be made to fail with a
//!   chosen errno or to kill the process, by name (`sys::pwrite_all`, ...).
//! - **The symlink policy**: inside a backend, symbolic links are never followed. [`Dir`]
//!   operations take one path component and open it with `O_NOFOLLOW` (and `O_DIRECTORY` or a
//!   regular-file check), so a link planted in a container is refused (`ELOOP`), never read
//!   through. Multi-component lookups beneath a backend root ([`Dir::open_dir_beneath`]) use
//!   `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` where the kernel has it, else a walk of
//!   `O_NOFOLLOW` opens. Only a logical symlink itself is read, with `readlinkat`, as data.
//! - **Portability fallbacks** ([`caps`]): `renameat2` flags, directory fsync and `openat2` are
//!   tried once per backend (or kernel) and, where refused (`EINVAL`, `ENOSYS`, `EOPNOTSUPP`), the
//!   fallback is used from then on. docs/design.md ("Backends") argues each fallback's races.
//!
//! Every function maps failures to [`Error::Io`] naming the backend path and the operation.
//! `scripts/check-architecture.py` fails the build when backend I/O appears outside this module.

mod attrs;
pub mod caps;
mod coherence;
mod dir;
pub mod failpoint;
mod fd;
mod file;
mod listing;
pub mod locks;
pub mod probe;
mod remove;
mod rename;

pub use dir::{is_missing, Access, Create, Dir};
pub use file::File;
pub use listing::{LOCAL_WINDOW_NS, REMOTE_WINDOW_NS};
pub use rustix::fs::FileType;
pub use rustix::fs::Stat as RawStat;
pub use rustix::fs::StatVfs;

use crate::error::{Error, Result};
use fd::Fd;
use rustix::fd::{AsFd, AsRawFd};
use rustix::fs::{self, AtFlags, Mode, OFlags};
use rustix::io::Errno;
use std::path::Path;

/// The login name of user `uid` in the system's user database (getpwuid_r(3): /etc/passwd, or
/// LDAP, SSSD... as nsswitch.conf says), if it has one.
pub fn user_name(uid: u32) -> Option<String> {
    nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
        .ok()
        .flatten()
        .map(|u| u.name)
}

/// The process's file mode creation mask, read once from /proc/self/status without changing it
/// (0o022 if unknown). Creates that the mask would narrow are followed by an exact chmod.
pub fn umask() -> u32 {
    static UMASK: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *UMASK.get_or_init(umask_now)
}

/// The umask a layout applies to the modes it creates with: the process's, read at the first
/// create that needs it (a process that only reads, stats or removes never pays the four system
/// calls of reading it), or one given (a FUSE daemon's 0: the kernel applied the caller's).
#[derive(Debug, Clone, Copy)]
pub enum Umask {
    /// The process's ([`umask`]).
    OfProcess,
    /// This one.
    Given(u32),
}

impl Umask {
    /// The mask.
    pub fn get(self) -> u32 {
        match self {
            Umask::OfProcess => umask(),
            Umask::Given(m) => m,
        }
    }
}

/// The process's file mode creation mask now, read from /proc/self/status without changing it
/// (0o022 if unknown). Its `Umask:` line is the second, so the read stops at the first buffer
/// that holds the whole line: three system calls (open, read, close), not a read to the end.
pub fn umask_now() -> u32 {
    let path = Path::new("/proc/self/status");
    let Ok(fd) = fd::open(path, OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOCTTY, Mode::empty()) else {
        return 0o022;
    };
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        if let Some(m) = umask_in(&got) {
            return m;
        }
        match rustix::io::read(&fd, &mut buf) {
            Ok(0) => return 0o022,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(Errno::INTR) => continue,
            Err(_) => return 0o022,
        }
    }
}

/// The mask of a `Umask:\t0022\n` line in the start of /proc/self/status, once the line is
/// whole.
fn umask_in(status: &[u8]) -> Option<u32> {
    let at = status.windows(7).position(|w| w == b"\nUmask:")?;
    let rest = &status[at + 7..];
    let end = rest.iter().position(|&c| c == b'\n')?;
    u32::from_str_radix(std::str::from_utf8(&rest[..end]).ok()?.trim(), 8).ok()
}

/// The process's effective group id (the group of the files it creates), read once.
pub fn egid() -> u32 {
    static EGID: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *EGID.get_or_init(|| rustix::process::getegid().as_raw())
}

/// Records that descriptors the core kept were closed behind its back by a raw system call: no
/// descriptor made before is closed or used again (`fd::lost`); each stands for an `O_PATH`
/// descriptor of /dev/null from now on.
pub(crate) fn descriptors_lost() {
    fd::lost(|| {
        fd::open("/dev/null", OFlags::PATH | OFlags::CLOEXEC, Mode::empty())
            .ok()
            .map(high)
    });
}

/// Lowest descriptor number the core keeps its long-lived descriptors at. Programs that take over
/// fixed numbers (a shell's `exec 3>file`, `dup2(x, 5)`) then never close ours by accident.
pub const HIGH_FD: i32 = 512;

/// Whether the core moves the descriptors it keeps to [`HIGH_FD`] and up (see
/// [`descriptors_anywhere`]).
static HIGH_FDS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// Says that this process is a plfs program (the CLI, the FUSE daemon), not a user's: no program
/// of its own takes over fixed descriptor numbers, so the core leaves its descriptors where the
/// kernel put them instead of moving them up (two system calls, a dup and a close, per directory
/// or log it keeps: 10 of the 82 of each file `plfs cp` makes).
pub fn descriptors_anywhere() {
    HIGH_FDS.store(false, std::sync::atomic::Ordering::Relaxed);
}

/// Moves a descriptor to [`HIGH_FD`] or above (close-on-exec); keeps it where it is if the
/// descriptor limit is lower than that.
pub(crate) fn high(fd: Fd) -> Fd {
    high_dup(&fd).unwrap_or(fd)
}

/// A copy of `fd` at [`HIGH_FD`] or above (close-on-exec), if it is below and the limit allows.
pub(crate) fn high_dup(fd: &Fd) -> Option<Fd> {
    if fd.as_raw_fd() >= HIGH_FD || !HIGH_FDS.load(std::sync::atomic::Ordering::Relaxed) {
        return None;
    }
    let moved = fd::dupfd_cloexec(fd, HIGH_FD).ok();
    if moved.is_none() {
        LOW_KEPT.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    moved
}

/// Set when a descriptor the core keeps stayed below [`HIGH_FD`] (the descriptor limit is lower).
static LOW_KEPT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether descriptor `fd` may be one the core keeps: false below [`HIGH_FD`] while every
/// descriptor the core kept went up there, so that a front end can tell a program's `dup2` onto
/// 0, 1 or 2 from one onto the core's descriptors without asking the kernel what `fd` is. (A
/// descriptor the core opens for a moment, inside one call, is not kept and not covered.)
pub fn may_be_kept_descriptor(fd: i32) -> bool {
    fd >= HIGH_FD
        || !HIGH_FDS.load(std::sync::atomic::Ordering::Relaxed)
        || LOW_KEPT.load(std::sync::atomic::Ordering::Relaxed)
}

/// Grows this process's descriptor table to hold [`HIGH_FD`] now, so that the first descriptor
/// the core moves up there does not grow it. The kernel grows the table when a descriptor is
/// numbered past its end, and in a process with several threads it first waits for an RCU grace
/// period: 6 ms measured here, in the first open of a file by an MPI rank (more than the whole
/// read of a 32 MiB file). Called while the process still has one thread (the constructors of
/// ldplfs and of the C API) it costs three system calls. The table never shrinks, so this holds
/// until an exec.
pub fn grow_fd_table() {
    let Ok(fd) = fd::open("/", OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()) else {
        return;
    };
    if fd.as_fd().as_raw_fd() < HIGH_FD {
        // Dropped (closed) at once: the table keeps its new size.
        let _ = fd::dupfd_cloexec(&fd, HIGH_FD);
    }
}

/// True for the errnos a file system answers with when it lacks a feature (as opposed to a
/// feature that failed).
pub(crate) fn unsupported(e: Errno) -> bool {
    matches!(e, Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP)
}

/// Whether `st` is a directory.
pub fn is_dir(st: &RawStat) -> bool {
    FileType::from_raw_mode(st.st_mode) == FileType::Directory
}

/// Whether `st` is a regular file.
pub fn is_file(st: &RawStat) -> bool {
    FileType::from_raw_mode(st.st_mode) == FileType::RegularFile
}

/// Whether `st` is a symbolic link.
pub fn is_symlink(st: &RawStat) -> bool {
    FileType::from_raw_mode(st.st_mode) == FileType::Symlink
}

/// Opens a file by absolute path (configuration files, `/proc`): `O_NOFOLLOW` is not applied,
/// these are not backend files. Not for anything inside a backend: use [`Dir`].
pub fn read_file(path: &Path) -> Result<Vec<u8>> {
    let fd = fd::open(path, OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOCTTY, Mode::empty())
        .map_err(|e| Error::io(path, "open", e))?;
    read_to_end(&fd, path)
}

fn read_to_end(fd: &Fd, path: &Path) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match rustix::io::read(fd, &mut buf) {
            Ok(0) => return Ok(out),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(Errno::INTR) => continue,
            Err(e) => return Err(Error::io(path, "read", e)),
        }
    }
}

/// Reads a whole configuration file of at most `max` bytes (`EFBIG` beyond), refusing a
/// directory (`EISDIR`) and anything else that is not a regular file (`ENOEXEC`: a FIFO, whose
/// open would wait for a writer, hung every preloaded program at start-up, a device); also
/// returns its stat (its identity, for include cycles).
pub fn read_config_file(path: &Path, max: usize) -> std::result::Result<(Vec<u8>, RawStat), Errno> {
    // O_NONBLOCK: opening a FIFO returns at once instead of waiting for a writer.
    let flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NONBLOCK;
    let fd = loop {
        match fd::open(path, flags, Mode::empty()) {
            Err(Errno::INTR) => continue,
            r => break r?,
        }
    };
    let st = fs::fstat(&fd)?;
    if is_dir(&st) {
        return Err(Errno::ISDIR);
    }
    if !is_file(&st) {
        return Err(Errno::NOEXEC);
    }
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match rustix::io::read(&fd, &mut buf[..]) {
            Ok(0) => return Ok((out, st)),
            Ok(n) => {
                out.extend_from_slice(&buf[..n]);
                if out.len() > max {
                    return Err(Errno::FBIG);
                }
            }
            Err(Errno::INTR) => continue,
            Err(e) => return Err(e),
        }
    }
}

/// stat that follows symbolic links, with the raw errno (configuration files).
pub fn stat_follow(path: &Path) -> std::result::Result<RawStat, Errno> {
    fs::stat(path)
}

/// lstat by absolute path; `Ok(None)` when the path does not exist.
pub fn lstat_opt(path: &Path) -> Result<Option<RawStat>> {
    failpoint::hit("sys::stat", "lstat", path)?;
    match fs::lstat(path) {
        Ok(s) => Ok(Some(s)),
        Err(Errno::NOENT) | Err(Errno::NOTDIR) => Ok(None),
        Err(e) => Err(Error::io(path, "lstat", e)),
    }
}

/// mkdir -p by absolute path (backend roots and shadow directories). Existing is success.
pub fn mkdir_all(path: &Path, mode: u32) -> Result<()> {
    failpoint::hit("sys::mkdir", "mkdir", path)?;
    match fs::mkdir(path, Mode::from_raw_mode(mode)) {
        Ok(()) | Err(Errno::EXIST) => Ok(()),
        Err(Errno::NOENT) => {
            if let Some(parent) = path.parent() {
                mkdir_all(parent, mode)?;
            }
            match fs::mkdir(path, Mode::from_raw_mode(mode)) {
                Ok(()) | Err(Errno::EXIST) => Ok(()),
                Err(e) => Err(Error::io(path, "mkdir", e)),
            }
        }
        Err(e) => Err(Error::io(path, "mkdir", e)),
    }
}

/// The (st_dev, st_ino) of every file process `pid` has open, from `/proc/<pid>/fd` (whose
/// magic links are followed to the open files themselves); `None` if it cannot be read.
pub fn open_file_idents(pid: u32) -> Option<Vec<(u64, u64)>> {
    let d = Dir::open(&Path::new("/proc").join(pid.to_string()).join("fd")).ok()?;
    let names = d.list().ok()?;
    Some(
        names
            .iter()
            .filter_map(|n| fs::statat(d.fd(), n.as_os_str(), AtFlags::empty()).ok())
            .map(|st| (st.st_dev, st.st_ino))
            .collect(),
    )
}

/// Timestamp argument for the `utimensat` family.
#[derive(Debug, Clone, Copy)]
pub enum TimeSpec {
    /// Set to the current time.
    Now,
    /// Leave unchanged.
    Omit,
    /// Set to this time (seconds, nanoseconds).
    At(i64, i64),
}

fn ts(t: TimeSpec) -> fs::Timespec {
    match t {
        TimeSpec::Now => fs::Timespec {
            tv_sec: 0,
            tv_nsec: fs::UTIME_NOW,
        },
        TimeSpec::Omit => fs::Timespec {
            tv_sec: 0,
            tv_nsec: fs::UTIME_OMIT,
        },
        TimeSpec::At(s, n) => fs::Timespec {
            tv_sec: s,
            tv_nsec: n as _,
        },
    }
}

pub(crate) fn timestamps(atime: TimeSpec, mtime: TimeSpec) -> fs::Timestamps {
    fs::Timestamps {
        last_access: ts(atime),
        last_modification: ts(mtime),
    }
}

/// `AT_SYMLINK_NOFOLLOW`, for the `*at` calls of [`Dir`].
pub(crate) const NOFOLLOW: AtFlags = AtFlags::SYMLINK_NOFOLLOW;

/// Nanoseconds of a stat's modification time.
pub fn mtime_ns(st: &RawStat) -> i64 {
    st.st_mtime
        .saturating_mul(1_000_000_000)
        .saturating_add(st.st_mtime_nsec as i64)
}

/// A directory's stamp for a listing taken with it: mtime (ns), ctime (s, ns), inode. An entry made,
/// removed or renamed in the directory moves the mtime and the ctime; nobody can set a ctime back
/// (design.md, "Noticing a new log").
pub type DirStamp = (i128, i64, i64, u64);

/// The [`DirStamp`] of a directory's stat.
pub fn dir_stamp(st: &RawStat) -> DirStamp {
    (
        i128::from(mtime_ns(st)),
        st.st_ctime,
        st.st_ctime_nsec as i64,
        st.st_ino,
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_umask_is_read_from_its_line_once_the_line_is_whole() {
        assert_eq!(super::umask_in(b"Name:\tx\nUmask:\t0027\nState:\tR\n"), Some(0o027));
        assert_eq!(super::umask_in(b"Name:\tx\nUmask:\t00"), None, "a line cut short");
        assert_eq!(super::umask_in(b"Name:\tx\nState:\tR\n"), None);
        // What the short read finds is what the whole file says.
        let whole = super::read_file(std::path::Path::new("/proc/self/status")).unwrap();
        assert_eq!(Some(super::umask_now()), super::umask_in(&whole));
    }
}
