//! Container layout on the backends: creating a container, finding its droppings, and the
//! metadata droppings in `meta/`. The byte-level grammar is in [`crate::format`] and docs/format.md.
//!
//! A container is opened through a directory descriptor, and everything inside it is reached with
//! `*at` calls relative to that descriptor, so renaming a container never strands an open handle.

use crate::error::{Error, Result};
use crate::format::{self, MetaDropping};
use crate::fs::Mount;
use crate::sys;
use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// An open container.
#[derive(Debug)]
pub struct Container {
    /// The mount point it belongs to.
    pub mount: Arc<Mount>,
    /// Index of its canonical backend in `mount.canonical`.
    pub backend: usize,
    /// Its backend path when it was opened (for messages; the descriptor stays valid across renames).
    pub path: PathBuf,
    /// Directory descriptor of the container.
    pub dir: OwnedFd,
    /// Container id (names its shadow directories).
    pub cid: u128,
    /// (st_dev, st_ino) of the container directory: its process-wide identity.
    pub ident: (u64, u64),
}

/// What a backend path holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// Nothing.
    Missing,
    /// A container (a logical regular file).
    Container,
    /// A logical directory.
    Dir,
    /// A symbolic link.
    Symlink,
    /// Some other file (not created by PLFS).
    Other,
}

/// Classifies a backend path.
pub fn probe(path: &Path) -> Result<Probe> {
    let Some(st) = sys::lstat_opt(path)? else {
        return Ok(Probe::Missing);
    };
    Ok(match sys::FileType::from_raw_mode(st.st_mode) {
        sys::FileType::Directory => {
            if sys::lstat_opt(&path.join(format::MARKER_NAME))?.is_some() {
                Probe::Container
            } else {
                Probe::Dir
            }
        }
        sys::FileType::Symlink => Probe::Symlink,
        _ => Probe::Other,
    })
}

/// Mode of a container directory for a logical file of mode `mode`: everyone may list it and
/// its `meta/` (stat of a file needs no permission on the file itself, as in POSIX); group and
/// other get write where the logical mode lets them write. The data is protected by the logs'
/// own modes ([`log_mode`]).
pub fn container_dir_mode(mode: u32) -> u32 {
    0o755 | (mode & 0o022)
}

/// Mode of a data or index log: readable by those who may read the logical file, always owner rw.
pub fn log_mode(mode: u32) -> u32 {
    (mode & 0o666) | 0o600
}

fn cid_dropping(cid: u128) -> String {
    format!("cid.{cid:032x}")
}

impl Container {
    /// Opens the container at backend path `path`; `Ok(None)` if nothing is there, an error if
    /// something that is not a container is there.
    pub fn open(mount: &Arc<Mount>, backend: usize, path: &Path) -> Result<Option<Container>> {
        let dir = match rustix::fs::open(
            path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
            Mode::empty(),
        ) {
            Ok(fd) => sys::high(fd),
            Err(Errno::NOENT) => return Ok(None),
            Err(Errno::NOTDIR) | Err(Errno::LOOP) => {
                return Err(Error::errno(
                    Errno::NOTDIR,
                    format!("{}: not a PLFS file", path.display()),
                ))
            }
            Err(e) => return Err(Error::io(path, "open", e)),
        };
        match rustix::fs::statat(&dir, format::MARKER_NAME, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(_) => {}
            Err(Errno::NOENT) => {
                return Err(Error::errno(
                    Errno::ISDIR,
                    format!("{}: is a directory", path.display()),
                ))
            }
            Err(e) => return Err(Error::io(path.join(format::MARKER_NAME), "stat", e)),
        }
        let st = sys::fstat(&dir, path)?;
        let mut c = Container {
            mount: mount.clone(),
            backend,
            path: path.to_path_buf(),
            dir,
            cid: 0,
            ident: (st.st_dev, st.st_ino),
        };
        c.cid = c.read_cid()?;
        Ok(Some(c))
    }

    fn read_cid(&self) -> Result<u128> {
        for name in self.list_meta_raw()? {
            if let Some(hex) = name.to_str().and_then(|n| n.strip_prefix("cid.")) {
                if let Ok(v) = u128::from_str_radix(hex, 16) {
                    return Ok(v);
                }
            }
        }
        Err(Error::corrupt(
            self.path.join(format::META_DIR),
            "container has no cid dropping",
        ))
    }

    /// Creates a container at `path` atomically (built under a temporary name, then renamed into
    /// place without replacing). Returns `Ok(false)` if something already exists at `path`.
    pub fn create(path: &Path, mode: u32, uid_gid: Option<(u32, u32)>) -> Result<bool> {
        let parent = path
            .parent()
            .ok_or_else(|| Error::InvalidArgument(format!("{}: bad path", path.display())))?;
        // The temporary name does not embed the logical name, so names up to NAME_MAX work.
        let tmp = parent.join(format!(
            "{}{:016x}{:016x}",
            format::TMP_PREFIX,
            crate::clock::random_u64(),
            crate::clock::pid()
        ));
        let cid = (u128::from(crate::clock::random_u64()) << 64) | u128::from(crate::clock::random_u64());
        let marker = format::Marker {
            version: format::FORMAT_VERSION,
            container_id: cid,
            created_ns: crate::clock::now_ns(),
        };
        let build = || -> Result<()> {
            sys::mkdir(&tmp, container_dir_mode(mode))?;
            let mpath = tmp.join(format::MARKER_NAME);
            sys::create_file_with(&mpath, &marker.encode(), mode & 0o7777)?;
            // The marker's mode is the logical mode; set it exactly (creation applies the umask).
            sys::chmod(&mpath, mode & 0o7777)?;
            sys::mkdir(&tmp.join(format::META_DIR), 0o755)?;
            sys::touch(&tmp.join(format::META_DIR).join(cid_dropping(cid)), 0o644)?;
            if let Some((u, g)) = uid_gid {
                sys::lchown(&mpath, u, g)?;
            }
            Ok(())
        };
        if let Err(e) = build() {
            let _ = sys::remove_tree(&tmp);
            return Err(e);
        }
        match sys::rename_noreplace(&tmp, path) {
            Ok(()) => Ok(true),
            Err(Error::Io {
                errno: Errno::EXIST, ..
            })
            | Err(Error::Io {
                errno: Errno::NOTEMPTY, ..
            }) => {
                sys::remove_tree(&tmp)?;
                Ok(false)
            }
            Err(Error::Io {
                errno: Errno::NOENT, ..
            }) => {
                let _ = sys::remove_tree(&tmp);
                Err(Error::NotFound(parent.to_path_buf()))
            }
            Err(e) => {
                let _ = sys::remove_tree(&tmp);
                Err(e)
            }
        }
    }

    /// Display path of an entry inside the container.
    pub fn sub(&self, rel: &str) -> PathBuf {
        self.path.join(rel)
    }

    fn list_at(&self, rel: &str) -> Result<Vec<OsString>> {
        let fd = match rustix::fs::openat(
            &self.dir,
            rel,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(Vec::new()),
            Err(e) => return Err(Error::io(self.sub(rel), "open", e)),
        };
        list_fd(&fd, &self.sub(rel))
    }

    fn list_meta_raw(&self) -> Result<Vec<OsString>> {
        self.list_at(format::META_DIR)
    }

    /// Lists and parses `meta/`. Unknown names are skipped (fsck reports them).
    pub fn list_meta(&self) -> Result<Vec<MetaDropping>> {
        Ok(self
            .list_meta_raw()?
            .iter()
            .filter_map(|n| n.to_str().and_then(MetaDropping::parse))
            .collect())
    }

    /// Creates a zero-length dropping in `meta/`.
    pub fn add_meta(&self, d: &MetaDropping) -> Result<()> {
        let rel = format!("{}/{}", format::META_DIR, d.name());
        match rustix::fs::openat(
            &self.dir,
            rel.as_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        ) {
            Ok(_) => Ok(()),
            Err(e) => Err(Error::io(self.sub(&rel), "create", e)),
        }
    }

    /// Removes a dropping from `meta/` (missing is fine).
    pub fn remove_meta(&self, d: &MetaDropping) -> Result<()> {
        let rel = format!("{}/{}", format::META_DIR, d.name());
        match rustix::fs::unlinkat(&self.dir, rel.as_str(), AtFlags::empty()) {
            Ok(()) | Err(Errno::NOENT) => Ok(()),
            Err(e) => Err(Error::io(self.sub(&rel), "unlink", e)),
        }
    }

    /// stat of the marker: the logical file's mode, owner and times.
    pub fn marker_stat(&self) -> Result<sys::RawStat> {
        rustix::fs::statat(&self.dir, format::MARKER_NAME, AtFlags::SYMLINK_NOFOLLOW)
            .map_err(|e| Error::io(self.sub(format::MARKER_NAME), "stat", e))
    }

    /// Reads and checks the marker's contents.
    pub fn read_marker(&self) -> Result<format::Marker> {
        let p = self.sub(format::MARKER_NAME);
        let fd = rustix::fs::openat(
            &self.dir,
            format::MARKER_NAME,
            OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| Error::io(&p, "open", e))?;
        let mut b = [0u8; format::MARKER_LEN];
        let n = sys::pread_full(&fd, &p, &mut b, 0)?;
        format::Marker::decode(&p, &b[..n])
    }

    /// Sets the marker's mtime to `ns` if that is newer than its current mtime.
    pub fn bump_mtime(&self, ns: u64) -> Result<()> {
        let st = self.marker_stat()?;
        let cur = (st.st_mtime as i128 * 1_000_000_000 + st.st_mtime_nsec as i128).max(0) as u64;
        if ns > cur {
            self.set_times(
                sys::TimeSpec::Omit,
                sys::TimeSpec::At((ns / 1_000_000_000) as i64, (ns % 1_000_000_000) as i64),
            )?;
        }
        Ok(())
    }

    /// utimensat on the marker.
    pub fn set_times(&self, atime: sys::TimeSpec, mtime: sys::TimeSpec) -> Result<()> {
        let times = sys::timestamps(atime, mtime);
        rustix::fs::utimensat(&self.dir, format::MARKER_NAME, &times, AtFlags::SYMLINK_NOFOLLOW)
            .map_err(|e| Error::io(self.sub(format::MARKER_NAME), "utimensat", e))
    }

    /// The directory where a writer on `host` keeps its logs, and its display path. Created if
    /// `create`. Writers whose shadow backend is this container's canonical backend use the
    /// container itself; others use `<shadow>/.plfs_shadow/<cid>/`.
    pub fn writer_dir(&self, host: &str, create: bool) -> Result<(OwnedFd, PathBuf)> {
        let hd = format!(
            "{}{}",
            format::HOSTDIR_PREFIX,
            format::hash_str(host) % u64::from(self.mount.global.num_hostdirs.max(1))
        );
        let shadows = &self.mount.shadows;
        let sidx = (format::hash_str(host) % shadows.len() as u64) as usize;
        let shadow = &shadows[sidx];
        if *shadow == self.mount.canonical[self.backend] {
            if create {
                match rustix::fs::mkdirat(&self.dir, hd.as_str(), Mode::from_raw_mode(0o755)) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(e) => return Err(Error::io(self.sub(&hd), "mkdir", e)),
                }
            }
            let fd = rustix::fs::openat(
                &self.dir,
                hd.as_str(),
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|e| Error::io(self.sub(&hd), "open", e))?;
            return Ok((sys::high(fd), self.sub(&hd)));
        }
        let dir = self.shadow_dir(shadow).join(&hd);
        if create {
            sys::mkdir_all(&dir, 0o755)?;
        }
        Ok((sys::high(sys::open(&dir, OFlags::RDONLY | OFlags::DIRECTORY, 0)?), dir))
    }

    /// `<shadow>/.plfs_shadow/<cid>`.
    pub fn shadow_dir(&self, shadow: &Path) -> PathBuf {
        shadow.join(format::SHADOW_ROOT).join(format!("{:032x}", self.cid))
    }

    /// Every hostdir of the container: those inside it and those on shadow backends.
    /// Returns (display path, directory descriptor).
    pub fn hostdirs(&self) -> Result<Vec<(PathBuf, OwnedFd)>> {
        let mut out = Vec::new();
        for name in list_fd(&self.dir, &self.path)? {
            if name.as_bytes().starts_with(format::HOSTDIR_PREFIX.as_bytes()) {
                let p = self.path.join(&name);
                match rustix::fs::openat(
                    &self.dir,
                    name.as_os_str(),
                    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                    Mode::empty(),
                ) {
                    Ok(fd) => out.push((p, sys::high(fd))),
                    Err(Errno::NOENT) => {}
                    Err(e) => return Err(Error::io(p, "open", e)),
                }
            }
        }
        for shadow in &self.mount.shadows {
            let sdir = self.shadow_dir(shadow);
            for name in sys::read_dir_opt(&sdir)? {
                if name.as_bytes().starts_with(format::HOSTDIR_PREFIX.as_bytes()) {
                    let p = sdir.join(&name);
                    match sys::open(&p, OFlags::RDONLY | OFlags::DIRECTORY, 0) {
                        Ok(fd) => out.push((p, sys::high(fd))),
                        Err(Error::Io {
                            errno: Errno::NOENT, ..
                        }) => {}
                        Err(e) => {
                            crate::warn!("{e}: skipping an unreachable shadow hostdir");
                        }
                    }
                }
            }
        }
        Ok(out)
    }

    /// Deletes every writer's logs (all hostdirs, here and on shadows) and the close/trunc
    /// droppings and flattened index. Used by truncate-to-zero when no writer has the file open.
    pub fn wipe_data(&self) -> Result<()> {
        for name in list_fd(&self.dir, &self.path)? {
            let b = name.as_bytes();
            if b.starts_with(format::HOSTDIR_PREFIX.as_bytes()) || b == crate::index::FLAT_NAME.as_bytes() {
                sys::remove_tree(&self.path_of_fd_entry(&name))?;
            }
        }
        // Every shadow backend, the container's own included: a rename may have moved the
        // container onto the backend that holds its shadow logs.
        for shadow in &self.mount.shadows {
            sys::remove_tree(&self.shadow_dir(shadow))?;
        }
        for d in self.list_meta()? {
            if !matches!(d, MetaDropping::Open { .. }) {
                self.remove_meta(&d)?;
            }
        }
        Ok(())
    }

    /// Backend path of an entry, resolved through the descriptor (correct even after a rename).
    pub fn path_of_fd_entry(&self, name: &OsString) -> PathBuf {
        self.current_path().join(name)
    }

    /// The container's current backend path, read back from /proc/self/fd (falls back to the
    /// path it was opened at).
    pub fn current_path(&self) -> PathBuf {
        use rustix::fd::AsRawFd;
        let link = format!("/proc/self/fd/{}", self.dir.as_fd().as_raw_fd());
        match sys::readlink(Path::new(&link)) {
            Ok(p) if !p.as_bytes().ends_with(b" (deleted)") => PathBuf::from(p),
            _ => self.path.clone(),
        }
    }
}

/// Lists an open directory descriptor (without `.` and `..`).
pub fn list_fd(fd: &OwnedFd, display: &Path) -> Result<Vec<OsString>> {
    use std::os::unix::ffi::OsStringExt;
    // Dir::read_from reopens the directory itself, so the caller's descriptor is left untouched.
    let dir = rustix::fs::Dir::read_from(fd).map_err(|e| Error::io(display, "opendir", e))?;
    let mut out = Vec::new();
    for ent in dir {
        let ent = ent.map_err(|e| Error::io(display, "readdir", e))?;
        let n = ent.file_name().to_bytes();
        if n != b"." && n != b".." {
            out.push(OsString::from_vec(n.to_vec()));
        }
    }
    Ok(out)
}

/// Size and mtime of a closed container from its droppings (the fast stat path). `None` when the
/// droppings cannot decide (a writer is open, or a writer's session straddles a truncate).
pub fn fast_size(droppings: &[MetaDropping]) -> Option<(u64, u64)> {
    let mut last_trunc: Option<(u64, u64)> = None;
    for d in droppings {
        match d {
            MetaDropping::Open { .. } => return None,
            MetaDropping::Trunc { ts, size, .. } => {
                if last_trunc.is_none_or(|(t, _)| *ts > t) {
                    last_trunc = Some((*ts, *size));
                }
            }
            MetaDropping::Close { .. } => {}
        }
    }
    let (tts, mut size) = last_trunc.unwrap_or((0, 0));
    let mut mtime = tts;
    for d in droppings {
        if let MetaDropping::Close {
            open_ts,
            close_ts,
            eof,
            mtime_ns,
            ..
        } = d
        {
            if *close_ts < tts {
                continue; // wholly before the last truncate: superseded by it
            }
            if *open_ts < tts {
                return None; // straddles the truncate: only the index can tell
            }
            size = size.max(*eof);
            mtime = mtime.max(*mtime_ns);
        }
    }
    Some((size, mtime))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes() {
        assert_eq!(container_dir_mode(0o644), 0o755);
        assert_eq!(container_dir_mode(0o600), 0o755);
        assert_eq!(container_dir_mode(0o620), 0o775);
        assert_eq!(log_mode(0o444), 0o644);
    }

    #[test]
    fn fast_size_rules() {
        let close = |o, c, eof| MetaDropping::Close {
            writer_id: 1,
            open_ts: o,
            close_ts: c,
            eof,
            bytes: eof,
            mtime_ns: c,
        };
        let trunc = |ts, size| MetaDropping::Trunc { ts, size, writer_id: 2 };
        assert_eq!(fast_size(&[]), Some((0, 0)));
        assert_eq!(fast_size(&[close(1, 2, 10), close(3, 4, 30)]), Some((30, 4)));
        assert_eq!(fast_size(&[close(1, 2, 10), trunc(5, 3)]), Some((3, 5)));
        assert_eq!(fast_size(&[close(1, 2, 10), trunc(5, 3), close(6, 7, 4)]), Some((4, 7)));
        assert_eq!(fast_size(&[close(1, 6, 10), trunc(5, 3)]), None);
        assert_eq!(
            fast_size(&[MetaDropping::Open {
                writer_id: 1,
                pid: 1,
                host: "h".into()
            }]),
            None
        );
    }
}
