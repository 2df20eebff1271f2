//! Opening PLFS files and the bookkeeping of new descriptors: a placeholder for each open,
//! dups registered for the entry they copy, and the standard streams pointed at a cookie stream
//! when descriptor 0, 1 or 2 becomes a PLFS file.

use crate::fd::conf::{foreign_child, my_pid, plfs};
use crate::fd::entry::{open_again, Entry, Kind};
use crate::fd::paths::{follow, Followed};
use crate::fd::placeholder;
use crate::fd::table::{self, ours};
use crate::file::close::{forget, kernel_gave, release};
use crate::file::streams::std_stream_is_plfs;
use crate::rt::errno::{Errno, Res};
use libc::{c_char, c_int, c_uint};
use plfs_core::{FileKind, OpenFile, OpenFlags};
use std::path::PathBuf;

/// Opens a logical path (already classified as PLFS). Returns the placeholder descriptor.
pub fn open_plfs(p: PathBuf, flags: c_int, mode: c_uint) -> Res<c_int> {
    if flags & libc::O_TMPFILE == libc::O_TMPFILE {
        return Err(Errno(libc::EOPNOTSUPP));
    }
    let plfs = plfs()?;
    let (p, st) = if flags & libc::O_NOFOLLOW != 0 {
        match plfs.stat(&p) {
            Ok(st) if st.kind == FileKind::Symlink && flags & libc::O_PATH == 0 => return Err(Errno(libc::ELOOP)),
            Ok(st) => (p, Some(st)),
            Err(e) if e.is_not_found() => (p, None),
            Err(e) => return Err(e.into()),
        }
    } else {
        // A regular file, the common case: the core's open looks the name up once (classifying
        // it here first would look it up twice, and a stat of a closed N-1 file lists its
        // droppings for the size). A directory, a symbolic link, a missing name (perhaps behind
        // a link) or a path through a link come back as one of these errors and take the
        // classifying path, which then decides as before.
        if let Some(of) = OpenFlags::from_posix(flags)
            .ok()
            .filter(|_| flags & (libc::O_DIRECTORY | libc::O_PATH) == 0)
        {
            match plfs.open(&p, of, mode & 0o7777, my_pid()) {
                Ok(f) => return publish(Kind::File, flags, p, Some(f)),
                Err(e) if !reclassify(&e) => return Err(e.into()),
                Err(_) => {}
            }
        }
        match follow(p)? {
            Followed::Plfs(p, st) => (p, st),
            Followed::Real(c) => {
                let fd = crate::real!(open(c.as_ptr(), flags, mode): fn(*const c_char, c_int, c_uint) -> c_int);
                if fd < 0 {
                    return Err(Errno(crate::rt::errno::errno()));
                }
                kernel_gave(fd);
                return Ok(fd);
            }
        }
    };
    let acc = flags & libc::O_ACCMODE;
    let excl = flags & libc::O_CREAT != 0 && flags & libc::O_EXCL != 0;
    let kind = match st.map(|s| s.kind) {
        None if flags & libc::O_CREAT == 0 => return Err(Errno(libc::ENOENT)),
        None if flags & libc::O_DIRECTORY != 0 => return Err(Errno(libc::EINVAL)),
        None => Kind::File,
        Some(_) if excl => return Err(Errno(libc::EEXIST)),
        Some(FileKind::Dir) => {
            if acc != libc::O_RDONLY && flags & libc::O_PATH == 0 {
                return Err(Errno(libc::EISDIR));
            }
            Kind::Dir
        }
        Some(_) if flags & libc::O_DIRECTORY != 0 => return Err(Errno(libc::ENOTDIR)),
        Some(_) if flags & libc::O_PATH != 0 => Kind::Path,
        Some(FileKind::Symlink) => return Err(Errno(libc::ELOOP)),
        Some(FileKind::File) => Kind::File,
    };
    let file = if kind == Kind::File {
        let of = OpenFlags::from_posix(flags)?;
        Some(plfs.open(&p, of, mode & 0o7777, my_pid())?)
    } else {
        None
    };
    publish(kind, flags, p, file)
}

/// Whether a failed open of a path as a regular file may mean that it is something else (a
/// directory, a symbolic link, a missing name behind a link), which the classifying path knows.
fn reclassify(e: &plfs_core::Error) -> bool {
    [libc::EISDIR, libc::EINVAL, libc::ELOOP, libc::ENOENT, libc::ENOTDIR].contains(&e.raw_errno())
}

/// open of `/dev/fd/N` (or `/proc/self/fd/N`) where N is the PLFS descriptor of entry `e`: as
/// the kernel does for a real file, a new open of the same file (its own position and flags),
/// never the placeholder (whose record it would read). A file with an identity is opened by it,
/// so this works after an unlink too.
pub fn open_entry(e: &Entry, flags: c_int, mode: c_uint) -> Res<c_int> {
    if e.kind != Kind::File {
        return open_plfs(e.path.clone(), flags, mode);
    }
    if flags & libc::O_CREAT != 0 && flags & libc::O_EXCL != 0 {
        return Err(Errno(libc::EEXIST));
    }
    if flags & libc::O_DIRECTORY != 0 {
        return Err(Errno(libc::ENOTDIR));
    }
    if flags & libc::O_PATH != 0 {
        return publish(Kind::Path, flags, e.path.clone(), None);
    }
    let of = OpenFlags::from_posix(flags & !(libc::O_CREAT | libc::O_EXCL))?;
    let f = open_again(e, of, my_pid())?;
    if of.trunc && of.write {
        f.truncate(0)?;
    }
    publish(Kind::File, flags, e.path.clone(), Some(f))
}

/// A placeholder for a new open of `p` (`file`: the open PLFS file, for a regular file).
fn publish(kind: Kind, flags: c_int, p: PathBuf, file: Option<OpenFile>) -> Res<c_int> {
    let ident = file.as_ref().and_then(|f| f.ident());
    let (fd, entry) = placeholder::create(kind, flags, ident, &p)?;
    if file.is_some() {
        crate::rt::report::count(crate::rt::report::Count::Open, 0);
    }
    if let Some(f) = file {
        let mut st = entry.lock();
        st.file = Some(f);
        st.pid = my_pid();
    }
    if fd <= 2 {
        std_stream_is_plfs(fd);
    }
    crate::rt::log::debug(format_args!("open {} flags {flags:#o} -> fd {fd}", p.display()));
    Ok(fd)
}

/// Bookkeeping after the kernel made `new` a copy of `old`: `onto` for dup2/dup3 (which closed
/// what `new` was), false for dup/F_DUPFD (the kernel chose a free number).
pub fn dup_done(old: c_int, new: c_int, onto: bool) {
    if foreign_child() {
        return;
    }
    let src = if onto {
        // A PLFS descriptor dup'ed onto one of ours replaces its registration in one step
        // (`table::insert_fd`), so that a call racing this one never finds the number unowned.
        let src = ours(old);
        if src.is_none() && table::maybe_ours(new) {
            let _ = forget(new);
        }
        src
    } else {
        // First: a number the table still held proves a close behind our back, and `old` is
        // then checked again before it is trusted.
        kernel_gave(new);
        ours(old)
    };
    if let Some(e) = src {
        if let Some(orphan) = table::insert_fd(new, &e) {
            let _ = release(orphan);
        }
        if new <= 2 {
            std_stream_is_plfs(new);
        }
    }
}
