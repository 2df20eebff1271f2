//! The two sides of a copy: a plain file system or PLFS; their files, readers and writers.

use crate::fail::{CoreContext, Failure, IoContext};
use crate::util::{absolute, trailing_slash};
use anyhow::Result;
use plfs_core::{FileKind, OpenFile, OpenFlags, Plfs};
use std::ffi::OsString;
use std::os::unix::fs::{DirBuilderExt, FileExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// `EEXIST`: the name is taken.
pub(super) const EEXIST: i32 = 17;

/// Kind of a file on either side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Regular file.
    File,
    /// Directory.
    Dir,
    /// Symbolic link.
    Symlink,
    /// Device, fifo, socket.
    Other,
}

impl Kind {
    pub(super) fn name(self) -> &'static str {
        match self {
            Kind::File => "file",
            Kind::Dir => "directory",
            Kind::Symlink => "symlink",
            Kind::Other => "special file",
        }
    }
}

/// What a copy needs to know about a file.
#[derive(Debug, Clone, Copy)]
pub struct Meta {
    /// Kind.
    pub kind: Kind,
    /// Permission bits.
    pub mode: u32,
    /// Size in bytes.
    pub size: u64,
    /// Access and modification times, ns since the epoch.
    pub atime_ns: i64,
    pub mtime_ns: i64,
}

/// Where a path lives: a plain file system, or PLFS.
#[derive(Clone, Copy)]
pub enum Side<'a> {
    /// The kernel's file system.
    Plain,
    /// PLFS.
    Plfs(&'a Plfs),
}

/// An open source file.
pub(super) enum Reader {
    Plain(std::fs::File),
    Plfs(OpenFile),
}

/// An open target file.
pub(super) enum Writer {
    Plain(std::fs::File),
    Plfs(OpenFile),
}

const READ: OpenFlags = OpenFlags {
    read: true,
    write: false,
    create: false,
    excl: false,
    trunc: false,
    append: false,
};

fn is_not_found(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::NotFound
}

impl<'a> Side<'a> {
    /// The side of `p` (PLFS if it lies under a mount point), and the path to use on it.
    pub fn of(plfs: &'a Plfs, p: &Path) -> Result<(Side<'a>, PathBuf)> {
        let abs = absolute(p)?;
        Ok(if plfs.is_plfs_path(&abs) {
            // `dir/` keeps its slash: a target that must be a directory.
            let abs = if trailing_slash(p) { abs.join("") } else { abs };
            (Side::Plfs(plfs), abs)
        } else {
            (Side::Plain, p.to_path_buf())
        })
    }

    pub(super) fn is_plfs(&self) -> bool {
        matches!(self, Side::Plfs(_))
    }

    /// Attributes of `p` without following a final symlink (`follow` follows it on the plain
    /// side); `None` if it does not exist.
    pub fn stat(&self, p: &Path, follow: bool) -> Result<Option<Meta>> {
        match self {
            Side::Plain => {
                let m = if follow {
                    std::fs::metadata(p)
                } else {
                    std::fs::symlink_metadata(p)
                };
                match m {
                    Ok(m) => {
                        let ft = m.file_type();
                        let kind = if ft.is_dir() {
                            Kind::Dir
                        } else if ft.is_file() {
                            Kind::File
                        } else if ft.is_symlink() {
                            Kind::Symlink
                        } else {
                            Kind::Other
                        };
                        Ok(Some(Meta {
                            kind,
                            mode: m.mode() & 0o7777,
                            size: m.len(),
                            atime_ns: m.atime() * 1_000_000_000 + m.atime_nsec(),
                            mtime_ns: m.mtime() * 1_000_000_000 + m.mtime_nsec(),
                        }))
                    }
                    Err(e) if is_not_found(&e) => Ok(None),
                    Err(e) => Err(Failure::io("cannot stat", p, &e).into()),
                }
            }
            Side::Plfs(plfs) => match plfs.stat(p) {
                Ok(st) => Ok(Some(Meta {
                    kind: match st.kind {
                        FileKind::File => Kind::File,
                        FileKind::Dir => Kind::Dir,
                        FileKind::Symlink => Kind::Symlink,
                    },
                    mode: st.mode & 0o7777,
                    size: st.size,
                    atime_ns: st.atime_ns,
                    mtime_ns: st.mtime_ns,
                })),
                Err(e) if e.is_not_found() => Ok(None),
                Err(e) => Err(Failure::core("cannot stat", p, e).into()),
            },
        }
    }

    /// Names in a directory, sorted.
    pub fn list(&self, p: &Path) -> Result<Vec<OsString>> {
        match self {
            Side::Plain => {
                let mut v = Vec::new();
                for e in std::fs::read_dir(p).at("cannot read directory", p)? {
                    v.push(e.at("cannot read directory", p)?.file_name());
                }
                v.sort();
                Ok(v)
            }
            Side::Plfs(plfs) => Ok(plfs
                .readdir(p)
                .at("cannot read directory", p)?
                .into_iter()
                .map(|e| e.name)
                .collect()),
        }
    }

    pub(super) fn mkdir(&self, p: &Path, mode: u32) -> Result<()> {
        match self {
            Side::Plain => std::fs::DirBuilder::new()
                .mode(mode)
                .create(p)
                .at("cannot create directory", p),
            Side::Plfs(plfs) => plfs.mkdir(p, mode).at("cannot create directory", p),
        }
    }

    pub(super) fn chmod(&self, p: &Path, mode: u32) -> Result<()> {
        match self {
            Side::Plain => {
                std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).at("cannot set the mode of", p)
            }
            Side::Plfs(plfs) => plfs.chmod(p, mode).at("cannot set the mode of", p),
        }
    }

    pub(super) fn readlink(&self, p: &Path) -> Result<OsString> {
        match self {
            Side::Plain => std::fs::read_link(p)
                .map(PathBuf::into_os_string)
                .at("cannot read link", p),
            Side::Plfs(plfs) => plfs.readlink(p).at("cannot read link", p),
        }
    }

    pub(super) fn symlink(&self, target: &OsString, p: &Path) -> Result<()> {
        match self {
            Side::Plain => std::os::unix::fs::symlink(target, p).at("cannot create link", p),
            Side::Plfs(plfs) => plfs.symlink(Path::new(target), p).at("cannot create link", p),
        }
    }

    /// Sets the access and modification times of a file or directory (`cp -p`).
    pub(super) fn set_times(&self, p: &Path, atime_ns: i64, mtime_ns: i64) -> Result<()> {
        match self {
            Side::Plain => std::fs::File::open(p)
                .and_then(|f| f.set_times(file_times(atime_ns, mtime_ns)))
                .at("cannot set the times of", p),
            Side::Plfs(plfs) => plfs
                .utimens(p, time_spec(atime_ns), time_spec(mtime_ns))
                .at("cannot set the times of", p),
        }
    }

    /// Sets the mode of the file `w` has open (at `p`), without a look-up by name.
    pub(super) fn set_mode_open(&self, w: &Writer, mode: u32, p: &Path) -> Result<()> {
        match (self, w) {
            (_, Writer::Plain(f)) => f
                .set_permissions(std::fs::Permissions::from_mode(mode))
                .at("cannot set the mode of", p),
            (Side::Plfs(plfs), Writer::Plfs(f)) => plfs.fchmod(f, mode).at("cannot set the mode of", p),
            (Side::Plain, Writer::Plfs(_)) => Err(mixed(p)),
        }
    }

    /// Sets the times of the file `w` has open (at `p`), without a look-up by name: before its
    /// close, which then leaves them as set.
    pub(super) fn set_times_open(&self, w: &Writer, atime_ns: i64, mtime_ns: i64, p: &Path) -> Result<()> {
        match (self, w) {
            (_, Writer::Plain(f)) => f
                .set_times(file_times(atime_ns, mtime_ns))
                .at("cannot set the times of", p),
            (Side::Plfs(plfs), Writer::Plfs(f)) => plfs
                .futimens(f, time_spec(atime_ns), time_spec(mtime_ns))
                .at("cannot set the times of", p),
            (Side::Plain, Writer::Plfs(_)) => Err(mixed(p)),
        }
    }

    /// Renames `from` to `to` (replacing `to`), both on this side.
    pub(super) fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        match self {
            Side::Plain => std::fs::rename(from, to).at("cannot rename into place", to),
            Side::Plfs(plfs) => plfs.rename(from, to).at("cannot rename into place", to),
        }
    }

    /// Renames `from` to `to` only if nothing is at `to` (`EEXIST` otherwise), both on this
    /// side: `renameat2(RENAME_NOREPLACE)`, or where a plain file system refuses that flag, a
    /// look before the rename.
    pub(super) fn rename_noreplace(&self, from: &Path, to: &Path) -> Result<()> {
        match self {
            Side::Plain => {
                use nix::{errno::Errno, fcntl};
                let cwd = fcntl::AT_FDCWD;
                match fcntl::renameat2(cwd, from, cwd, to, fcntl::RenameFlags::RENAME_NOREPLACE) {
                    Err(Errno::EINVAL) | Err(Errno::ENOSYS) => {
                        if std::fs::symlink_metadata(to).is_ok() {
                            return Err(std::io::Error::from_raw_os_error(EEXIST)).at("cannot rename into place", to);
                        }
                        std::fs::rename(from, to).at("cannot rename into place", to)
                    }
                    r => r.map_err(std::io::Error::from).at("cannot rename into place", to),
                }
            }
            Side::Plfs(plfs) => plfs.rename_noreplace(from, to).at("cannot rename into place", to),
        }
    }

    /// Removes a file or symlink.
    pub fn unlink(&self, p: &Path) -> Result<()> {
        match self {
            Side::Plain => std::fs::remove_file(p).at("cannot remove", p),
            Side::Plfs(plfs) => plfs.unlink(p).at("cannot remove", p),
        }
    }

    /// Removes an empty directory.
    pub fn rmdir(&self, p: &Path) -> Result<()> {
        match self {
            Side::Plain => std::fs::remove_dir(p).at("cannot remove directory", p),
            Side::Plfs(plfs) => plfs.rmdir(p).at("cannot remove directory", p),
        }
    }

    pub(super) fn open_read(&self, p: &Path) -> Result<Reader> {
        match self {
            Side::Plain => Ok(Reader::Plain(std::fs::File::open(p).at("cannot open", p)?)),
            Side::Plfs(plfs) => Ok(Reader::Plfs(
                plfs.open(p, READ, 0, std::process::id()).at("cannot open", p)?,
            )),
        }
    }

    /// Creates (`excl`: the name must not exist) or truncates a file for writing.
    pub(super) fn create(&self, p: &Path, mode: u32, excl: bool) -> Result<Writer> {
        match self {
            Side::Plain => {
                let mut o = std::fs::OpenOptions::new();
                o.write(true).mode(mode | 0o200);
                if excl {
                    o.create_new(true);
                } else {
                    o.create(true).truncate(true);
                }
                Ok(Writer::Plain(o.open(p).at("cannot create", p)?))
            }
            Side::Plfs(plfs) => {
                let flags = OpenFlags {
                    read: false,
                    write: true,
                    create: true,
                    excl,
                    trunc: true,
                    append: false,
                };
                Ok(Writer::Plfs(
                    plfs.open(p, flags, mode | 0o200, std::process::id())
                        .at("cannot create", p)?,
                ))
            }
        }
    }
}

/// A PLFS file in the hands of the plain side: a mistake of this program, told as an error.
fn mixed(p: &Path) -> anyhow::Error {
    Failure::new(
        p,
        22,
        format!("{}: a PLFS file handled as a plain one (a bug)", p.display()),
    )
    .into()
}

/// Nanoseconds since the epoch as whole seconds and nanoseconds (both signed, the second in
/// 0..1e9).
fn split_ns(ns: i64) -> (i64, i64) {
    (ns.div_euclid(1_000_000_000), ns.rem_euclid(1_000_000_000))
}

fn time_spec(ns: i64) -> plfs_core::TimeSpec {
    let (s, n) = split_ns(ns);
    plfs_core::TimeSpec::At(s, n)
}

fn file_times(atime_ns: i64, mtime_ns: i64) -> std::fs::FileTimes {
    let at = |ns: i64| {
        let (s, n) = split_ns(ns);
        std::time::UNIX_EPOCH + std::time::Duration::new(s.max(0) as u64, n as u32)
    };
    std::fs::FileTimes::new()
        .set_accessed(at(atime_ns))
        .set_modified(at(mtime_ns))
}

impl Reader {
    pub(super) fn read_at(&self, buf: &mut [u8], off: u64, p: &Path) -> Result<usize> {
        loop {
            let r = match self {
                Reader::Plain(f) => f.read_at(buf, off),
                Reader::Plfs(f) => return f.read(buf, off).at("cannot read", p),
            };
            match r {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                r => return r.at("cannot read", p),
            }
        }
    }

    pub(super) fn close(self, p: &Path) -> Result<()> {
        match self {
            Reader::Plain(_) => Ok(()),
            Reader::Plfs(f) => f.close().at("cannot close", p),
        }
    }
}

impl Writer {
    pub(super) fn write_all_at(&self, mut buf: &[u8], mut off: u64, p: &Path) -> Result<()> {
        match self {
            Writer::Plain(f) => f.write_all_at(buf, off).at("cannot write", p),
            Writer::Plfs(f) => {
                while !buf.is_empty() {
                    let n = f.write(buf, off).at("cannot write", p)?;
                    if n == 0 {
                        return Err(Failure::new(p, 5, format!("cannot write {}: wrote 0 bytes", p.display())).into());
                    }
                    buf = &buf[n..];
                    off += n as u64;
                }
                Ok(())
            }
        }
    }

    pub(super) fn close(self, p: &Path) -> Result<()> {
        match self {
            Writer::Plain(f) => {
                drop(f);
                Ok(())
            }
            Writer::Plfs(f) => f.close().at("cannot close", p),
        }
    }
}
