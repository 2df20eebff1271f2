//! The active probe behind `plfs check-config --probe`: which of the features plfs relies on or
//! falls back from a backend supports, tried in a scratch directory.

use super::dir::{Access, Create, Dir};
use super::fd;
use crate::error::Result;
use rustix::fd::BorrowedFd;
use rustix::fs::{self, AtFlags, Mode, OFlags, RenameFlags};
use rustix::io::Errno;

/// One line of a probe report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeItem {
    /// What was tried.
    pub feature: &'static str,
    /// Whether the backend supports it.
    pub supported: bool,
    /// What the backend answered, and what plfs does about it.
    pub detail: String,
}

fn item(feature: &'static str, r: std::result::Result<(), Errno>, yes: &str, no: &str) -> ProbeItem {
    match r {
        Ok(()) => ProbeItem {
            feature,
            supported: true,
            detail: yes.to_string(),
        },
        Err(e) => ProbeItem {
            feature,
            supported: false,
            detail: format!("{e}: {no}"),
        },
    }
}

/// [`probe`] of the directory at `path` (a backend root, as configured).
pub fn probe_path(path: &std::path::Path, scratch_prefix: &str) -> Result<Vec<ProbeItem>> {
    probe(&Dir::open_root(path)?, scratch_prefix)
}

/// Tries every feature plfs relies on or falls back from, in a scratch directory made (and
/// removed) inside `root`, named `scratch_prefix` and a random number (the caller's prefix tells
/// it from what else is there). Nothing outside that directory is touched.
pub fn probe(root: &Dir, scratch_prefix: &str) -> Result<Vec<ProbeItem>> {
    let name = format!("{scratch_prefix}probe.{:016x}", crate::clock::random_u64());
    root.mkdir(&name, 0o700)?;
    let d = root.open_dir(&name)?;
    let r = probe_in(&d);
    let _ = root.remove_tree_with(&name, std::ffi::OsStr::new(""));
    r
}

fn probe_in(d: &Dir) -> Result<Vec<ProbeItem>> {
    let fd = d.fd();
    let mut out = Vec::new();
    d.create_file("a", 0o600, Create::Excl)?;
    d.create_file("b", 0o600, Create::Excl)?;
    // To an absent name (some file systems only refuse the flag then: the kernel itself answers
    // EEXIST for an existing target), and back.
    out.push(item(
        "renameat2 RENAME_NOREPLACE",
        fs::renameat_with(fd, "a", fd, "n", RenameFlags::NOREPLACE).and_then(|()| fs::renameat(fd, "n", fd, "a")),
        "containers are published with it",
        "containers are published with rename(2) of a non-empty directory, files with link(2)",
    ));
    out.push(item(
        "renameat2 RENAME_EXCHANGE",
        fs::renameat_with(fd, "a", fd, "b", RenameFlags::EXCHANGE),
        "rename over an existing file swaps the two atomically",
        "rename over an existing file moves the old one aside first (a brief window with no file at the name)",
    ));
    out.push(item(
        "link(2)",
        fs::linkat(fd, "a", fd, "c", AtFlags::empty()),
        "used by the no-replace fallback for files",
        "the no-replace fallback for files checks then renames (racy)",
    ));
    out.push(item(
        "O_TMPFILE",
        fd::openat(fd, ".", OFlags::TMPFILE | OFlags::RDWR, Mode::from_raw_mode(0o600)).map(drop),
        "not needed by plfs",
        "not needed by plfs",
    ));
    out.push(item(
        "fsync of a directory",
        fs::fsync(fd),
        "new logs' directory entries are made durable at the first sync",
        "skipped; the backend is trusted to commit namespace operations",
    ));
    out.push(item(
        "openat2 RESOLVE_NO_SYMLINKS",
        fd::openat2(
            fd,
            ".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
            fs::ResolveFlags::BENEATH | fs::ResolveFlags::NO_SYMLINKS,
        )
        .map(drop),
        "paths beneath a backend are opened in one call, refusing links",
        "paths are walked one O_NOFOLLOW open per component",
    ));
    // flock on a directory, seen from a second open file description.
    let locks = (|| -> std::result::Result<(), Errno> {
        let a = reopen(fd)?;
        let b = reopen(fd)?;
        fs::flock(&a, fs::FlockOperation::LockShared)?;
        match fs::flock(&b, fs::FlockOperation::NonBlockingLockExclusive) {
            Err(Errno::WOULDBLOCK) => Ok(()),
            Ok(()) => Err(Errno::NOLCK), // accepted but not enforced
            Err(e) => Err(e),
        }
    })();
    out.push(item(
        "flock on a directory",
        locks,
        "an unlinked file's data stays until no process has it open",
        "an unlinked file's data is deleted at once (readers that still have it open get EIO)",
    ));
    let dtype = dtype_in_readdir(fd);
    out.push(item(
        "d_type in readdir",
        dtype,
        "a hint: deleting a container opens its directories without trying unlink first",
        "deleting a container unlinks each entry first, and empties a directory when that fails",
    ));
    // Not tried by writing (a stale page shows only under a race): known from the mount.
    out.push(item(
        "a page cache kept current by other processes' writes",
        if super::coherence::stale_page_cache(fd, d.fs_type()) {
            Err(Errno::NOTSUP)
        } else {
            Ok(())
        },
        "logs are read through the page cache",
        "MooseFS, ceph-fuse: files only read are opened O_DIRECT (a cached page or size could hide what another process wrote)",
    ));
    // Timestamp resolution: two files created a few microseconds apart.
    let f = d
        .open_file("a", Access::Read)
        .or_else(|_| d.open_file("b", Access::Read))?;
    drop(f);
    let t1 = d.stat_opt("a")?.or(d.stat_opt("b")?);
    d.create_file("t", 0o600, Create::Excl)?;
    let t2 = d.stat("t")?;
    let fine = t1.is_some_and(|t1| t1.st_mtime_nsec != 0 || t2.st_mtime_nsec != 0);
    out.push(item(
        "sub-second mtimes",
        if fine { Ok(()) } else { Err(Errno::NOTSUP) },
        "not relied on (visibility never depends on timestamps)",
        "not relied on (visibility never depends on timestamps)",
    ));
    Ok(out)
}

/// A new open file description of the directory `fd`.
fn reopen(fd: BorrowedFd<'_>) -> std::result::Result<fd::Fd, Errno> {
    fd::openat(
        fd,
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// Whether every entry of the directory `fd` comes with its `d_type`. Listed through a
/// descriptor of the seam's own (rustix's `Dir` would close its copy through libc).
fn dtype_in_readdir(fd: BorrowedFd<'_>) -> std::result::Result<(), Errno> {
    let d = reopen(fd)?;
    let mut buf: Vec<u8> = Vec::with_capacity(8192);
    let mut dir = fs::RawDir::new(&d, buf.spare_capacity_mut());
    while let Some(ent) = dir.next() {
        if ent?.file_type() == fs::FileType::Unknown {
            return Err(Errno::NOTSUP);
        }
    }
    Ok(())
}
