//! Placeholder descriptors: one sealed memfd per open PLFS file or directory.
//!
//! The memfd holds a small record describing the open, then is sealed (no write, grow, shrink or
//! further seals) and reopened write-only through /proc/self/fd, so a call we failed to
//! intercept fails loudly (read: EBADF, write: EPERM) instead of touching another file. Its
//! kernel offset is the file position (lseek past the end works on a sealed memfd), shared by
//! dups and across fork as POSIX requires. The record survives exec: the library's constructor
//! in the new image finds placeholders in /proc/self/fd and re-adopts them.
//!
//! Format of the record: `{ "LDPLFS1\n" | kind u8 ('F','D','P') | flags i32 le | path bytes }`,
//! or, for a file with an identity (an N-1 container: `OpenFile::ident`),
//! `{ "LDPLFS2\n" | kind | flags | st_dev u64 le | st_ino u64 le | path bytes }`. An adopted
//! file with an identity is reopened by it (`Plfs::reopen`), so a file unlinked while open stays
//! readable and writable through an inherited descriptor, and a file that took its name is never
//! opened in its place. Both forms are read; the first is still written where there is no
//! identity, so an image with an older library adopts those.

use crate::fd::entry::{close_file, Entry, Ident, Kind};
use crate::fd::table;
use crate::rt::errno::{Errno, Res};
use crate::rt::real::sys;
use rustix::fd::{AsRawFd, IntoRawFd};
use rustix::fs::{MemfdFlags, Mode, OFlags, SealFlags};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const MAGIC: &[u8; 8] = b"LDPLFS1\n";
const MAGIC2: &[u8; 8] = b"LDPLFS2\n";
const NAME: &str = "ldplfs";
/// readlink of a placeholder in /proc/self/fd starts with this.
const LINK_PREFIX: &[u8] = b"/memfd:ldplfs";

fn encode(kind: Kind, flags: i32, ident: Option<Ident>, path: &Path) -> Vec<u8> {
    let mut v = Vec::with_capacity(32 + path.as_os_str().len());
    v.extend_from_slice(if ident.is_some() { MAGIC2 } else { MAGIC });
    v.push(kind.code());
    v.extend_from_slice(&flags.to_le_bytes());
    if let Some((dev, ino)) = ident {
        v.extend_from_slice(&dev.to_le_bytes());
        v.extend_from_slice(&ino.to_le_bytes());
    }
    v.extend_from_slice(path.as_os_str().as_bytes());
    v
}

/// A decoded record: kind, flags, identity, path.
type Record = (Kind, i32, Option<Ident>, PathBuf);

fn decode(b: &[u8]) -> Option<Record> {
    if b.len() < 13 || (&b[..8] != MAGIC && &b[..8] != MAGIC2) {
        return None;
    }
    let kind = Kind::from_code(b[8])?;
    let flags = i32::from_le_bytes(b[9..13].try_into().ok()?);
    let (ident, path) = if &b[..8] == MAGIC2 {
        let dev = u64::from_le_bytes(b.get(13..21)?.try_into().ok()?);
        let ino = u64::from_le_bytes(b.get(21..29)?.try_into().ok()?);
        (Some((dev, ino)), &b[29..])
    } else {
        (None, &b[13..])
    };
    Some((kind, flags, ident, PathBuf::from(OsStr::from_bytes(path))))
}

fn errno(e: rustix::io::Errno) -> Errno {
    Errno(e.raw_os_error())
}

/// Creates a placeholder for an open of `path` and registers it. Returns the descriptor (the
/// lowest free number, as open(2) would) and its entry. `flags` are the open(2) flags; `ident`
/// the open file's identity, if it has one.
pub fn create(kind: Kind, flags: i32, ident: Option<Ident>, path: &Path) -> Res<(i32, Arc<Entry>)> {
    let mfd = rustix::fs::memfd_create(NAME, MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING).map_err(errno)?;
    let rec = encode(
        kind,
        flags & !(libc::O_CREAT | libc::O_EXCL | libc::O_TRUNC),
        ident,
        path,
    );
    let mut done = 0;
    while done < rec.len() {
        done += rustix::io::write(&mfd, &rec[done..]).map_err(errno)?;
    }
    rustix::fs::fcntl_add_seals(
        &mfd,
        SealFlags::WRITE | SealFlags::GROW | SealFlags::SHRINK | SealFlags::SEAL,
    )
    .map_err(errno)?;
    let proc_path = format!("/proc/self/fd/{}", mfd.as_raw_fd());
    let wfd = rustix::fs::open(proc_path.as_str(), OFlags::WRONLY | OFlags::CLOEXEC, Mode::empty()).map_err(errno)?;
    // Put the write-only description on the memfd's number (the lowest free one).
    let num = mfd.into_raw_fd();
    let cloexec = if flags & libc::O_CLOEXEC != 0 {
        libc::O_CLOEXEC
    } else {
        0
    };
    let wraw = wfd.into_raw_fd();
    let r = sys::dup3(wraw, num, cloexec);
    let _ = sys::close(wraw);
    if let Err(e) = r {
        let _ = sys::close(num);
        return Err(e);
    }
    let key = match sys::fstat_key(num) {
        Ok(k) => k,
        Err(e) => {
            let _ = sys::close(num);
            return Err(e);
        }
    };
    let entry = Arc::new(Entry::new(
        key,
        kind,
        path.to_path_buf(),
        ident,
        flags & !(libc::O_CREAT | libc::O_EXCL | libc::O_TRUNC | libc::O_CLOEXEC),
        // A new description: no other process has it yet, its position is ours to keep.
        Some(0),
    ));
    if let Some(orphan) = table::insert_fd(num, &entry) {
        let _ = close_file(&mut orphan.lock());
    }
    Ok((num, entry))
}

/// Reads the record of descriptor `fd` if it is a placeholder.
fn read_record(fd: i32) -> Option<Record> {
    let link = rustix::fs::readlinkat(rustix::fs::CWD, format!("/proc/self/fd/{fd}").as_str(), Vec::new()).ok()?;
    if !link.as_bytes().starts_with(LINK_PREFIX) {
        return None;
    }
    let rfd = rustix::fs::open(
        format!("/proc/self/fd/{fd}").as_str(),
        OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()?;
    let mut buf = vec![0u8; 8192];
    let mut n = 0;
    while n < buf.len() {
        match rustix::io::pread(&rfd, &mut buf[n..], n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(_) => return None,
        }
    }
    decode(&buf[..n])
}

/// Initialisation: re-adopts every placeholder inherited through exec. Returns the adopted
/// descriptor numbers.
pub fn adopt_all() -> Vec<i32> {
    let Ok(dir) = rustix::fs::open(
        "/proc/self/fd",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    ) else {
        return Vec::new();
    };
    let dirfd = dir.as_raw_fd();
    let Ok(mut d) = rustix::fs::Dir::read_from(&dir) else {
        return Vec::new();
    };
    let mut fds = Vec::new();
    while let Some(Ok(ent)) = d.read() {
        if let Some(fd) = std::str::from_utf8(ent.file_name().to_bytes())
            .ok()
            .and_then(|s| s.parse::<i32>().ok())
        {
            if fd != dirfd {
                fds.push(fd);
            }
        }
    }
    drop(d);
    drop(dir);
    let mut adopted = Vec::new();
    let mut files = Vec::new();
    for &fd in &fds {
        let Some((kind, flags, ident, path)) = read_record(fd) else {
            continue;
        };
        let Ok(key) = sys::fstat_key(fd) else {
            continue;
        };
        let entry =
            table::entry_for_key(key).unwrap_or_else(|| Arc::new(Entry::new(key, kind, path, ident, flags, None)));
        table::insert_fd(fd, &entry);
        crate::rt::log::debug(format_args!("adopted fd {fd} -> {}", entry.path.display()));
        if let Some(id) = entry.ident {
            files.push((id, entry.path.clone()));
        }
        adopted.push(fd);
    }
    // The locks handed over with them (see `fd::held`).
    crate::fd::held::adopt(&fds, &files);
    adopted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_roundtrip_and_rejects_foreign_bytes() {
        let p = Path::new("/mnt/plfs/dir/file with spaces");
        let rec = encode(Kind::File, libc::O_RDWR | libc::O_APPEND, None, p);
        assert_eq!(&rec[..8], MAGIC);
        let (k, f, id, q) = decode(&rec).unwrap();
        assert_eq!(
            (k, f, id, q.as_path()),
            (Kind::File, libc::O_RDWR | libc::O_APPEND, None, p)
        );
        assert!(decode(b"LDPLFS3\nF\0\0\0\0/x").is_none());
        assert!(decode(&rec[..12]).is_none());
        let mut bad = rec.clone();
        bad[8] = b'Z';
        assert!(decode(&bad).is_none());
    }

    #[test]
    fn record_with_identity_roundtrip() {
        let p = Path::new("/mnt/plfs/f");
        let id = (0x0123_4567_89ab_cdef, u64::MAX - 7);
        let rec = encode(Kind::File, libc::O_WRONLY, Some(id), p);
        assert_eq!(&rec[..8], MAGIC2);
        let (k, f, got, q) = decode(&rec).unwrap();
        assert_eq!((k, f, got, q.as_path()), (Kind::File, libc::O_WRONLY, Some(id), p));
        // A version-2 record too short to hold its identity is not a record.
        assert!(decode(&rec[..20]).is_none());
        assert!(decode(&rec[..28]).is_none());
        assert!(decode(&rec[..29]).is_some_and(|r| r.2 == Some(id) && r.3.as_os_str().is_empty()));
    }
}
