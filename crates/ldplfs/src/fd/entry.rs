//! One open file description of a PLFS file or directory: what it is, its open flags and the
//! per-process state that changes under I/O (the core's open file).
//!
//! An entry's `OpenFile` belongs to the process that opened it (`FileState::pid`). A forked
//! child gets fresh entries with no `OpenFile` (`fd::fork`), so its first access opens the file
//! again with its own pid: its own writer, its own data log.
//!
//! The file position: POSIX keeps it in the open file description, which dups, fork and exec
//! share. The placeholder's kernel offset is that shared position. While this process alone
//! uses the description (it opened the file and has not forked, spawned or exec'd since), the
//! position is kept here instead (`FileState::pos`), so a read or write costs no system call
//! for it; before anything that shares the description with another process (fork, vfork,
//! posix_spawn, system, popen, exec, a raw clone through `syscall`) it is written to the kernel
//! offset (`fd::table::share_positions`) and from then on the kernel offset is the position.

use crate::fd::conf::{my_pid, plfs};
use crate::rt::errno::{Errno, Res};
use plfs_core::{OpenFile, OpenFlags};
use std::path::PathBuf;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

/// What a placeholder stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A regular PLFS file.
    File,
    /// A PLFS directory (or the mount point).
    Dir,
    /// An `O_PATH` descriptor of a file.
    Path,
}

impl Kind {
    /// Encoding in the placeholder metadata.
    pub fn code(self) -> u8 {
        match self {
            Kind::File => b'F',
            Kind::Dir => b'D',
            Kind::Path => b'P',
        }
    }

    /// Decoding from the placeholder metadata.
    pub fn from_code(c: u8) -> Option<Kind> {
        match c {
            b'F' => Some(Kind::File),
            b'D' => Some(Kind::Dir),
            b'P' => Some(Kind::Path),
            _ => None,
        }
    }
}

/// Kernel identity of a placeholder: (st_dev, st_ino).
pub type Key = (u64, u64);

/// Identity of an open PLFS file (`OpenFile::ident`): an inherited or forked description opens
/// the same file by it again, even after an unlink.
pub type Ident = (u64, u64);

/// Per-process state of an open file that changes under I/O.
#[derive(Debug, Default)]
pub struct FileState {
    /// The open PLFS file, opened lazily (after fork, exec adoption, or exit).
    pub file: Option<OpenFile>,
    /// Process that opened `file`.
    pub pid: u32,
    /// Descriptor of the lock file for fcntl byte-range locks (-1: not opened yet).
    pub lock_fd: i32,
    /// The file position while no other process shares the open file description (the
    /// placeholder's kernel offset is then stale); None: the kernel offset is the position.
    pub pos: Option<u64>,
}

/// One open file description of a PLFS file or directory.
#[derive(Debug)]
pub struct Entry {
    /// Placeholder identity.
    pub key: Key,
    /// File, directory or O_PATH.
    pub kind: Kind,
    /// Normalised logical path.
    pub path: PathBuf,
    /// Identity of the file it opened, if it has one (reopened by it, not by `path` alone).
    pub ident: Option<Ident>,
    /// open(2) flags: access mode and status flags (F_SETFL changes O_APPEND/O_NONBLOCK).
    pub flags: AtomicI32,
    /// I/O state; held across read/write so the offset update is atomic per description.
    pub state: Mutex<FileState>,
    /// The [`EPOCH`] this entry's index was last refreshed in.
    pub seen: AtomicU64,
}

/// Consistency epoch: bumped at points where another process's writes must become visible
/// (our fork returned, a child was waited for, a lock was taken, fsync). A read in an entry
/// that has not seen the current epoch refreshes the index first.
pub static EPOCH: AtomicU64 = AtomicU64::new(1);

/// Starts a new consistency epoch.
pub fn bump_epoch() {
    EPOCH.fetch_add(1, Ordering::Relaxed);
}

impl Entry {
    /// A new entry without an open file. `pos`: the position kept in this process (a new open:
    /// `Some(0)`), or None when the kernel offset is the position (a description inherited
    /// through exec or fork, which other processes may share).
    pub fn new(key: Key, kind: Kind, path: PathBuf, ident: Option<Ident>, flags: i32, pos: Option<u64>) -> Entry {
        Entry {
            key,
            kind,
            path,
            ident,
            flags: AtomicI32::new(flags),
            state: Mutex::new(FileState {
                file: None,
                pid: 0,
                lock_fd: -1,
                pos,
            }),
            seen: AtomicU64::new(EPOCH.load(Ordering::Relaxed)),
        }
    }

    /// Current open flags.
    pub fn flags(&self) -> i32 {
        self.flags.load(Ordering::Relaxed)
    }

    /// Locks the I/O state.
    pub fn lock(&self) -> MutexGuard<'_, FileState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Returns the open file of `e`, opening it for this process if needed.
#[inline]
pub fn file_of<'a>(e: &Entry, st: &'a mut FileState) -> Res<&'a OpenFile> {
    // Every read and write comes here: the common case (opened by this process) stays inline
    // and small, the rest is out of line (it saved the register spills of the whole function).
    if st.pid != my_pid() || st.file.is_none() {
        open_file_of(e, st)?;
    }
    Ok(st.file.as_ref().expect("opened above"))
}

/// [`file_of`] when the entry has no open file of this process yet: opens it.
#[cold]
#[inline(never)]
fn open_file_of(e: &Entry, st: &mut FileState) -> Res<()> {
    let me = my_pid();
    if st.pid != me {
        // Inherited through fork (or vfork): it belongs to the parent; never close it here.
        if let Some(f) = st.file.take() {
            std::mem::forget(f);
        }
    }
    if st.file.is_none() {
        if e.kind != Kind::File {
            return Err(Errno(libc::EISDIR));
        }
        let fl = e.flags() & (libc::O_ACCMODE | libc::O_APPEND);
        let f = open_again(e, OpenFlags::from_posix(fl)?, me)?;
        st.file = Some(f);
        st.pid = me;
        if let Some(id) = e.ident {
            // It holds a lock of its own now: one inherited with the descriptor can go.
            crate::fd::held::take_over(id);
        }
    }
    Ok(())
}

/// Opens the file of `e` again in this process (after fork or exec): by its identity where the
/// first open recorded one, so an unlinked file is found where it went and a file that took its
/// name is never opened in its place; else by its path.
pub fn open_again(e: &Entry, flags: OpenFlags, pid: u32) -> Res<OpenFile> {
    let plfs = plfs()?;
    Ok(match e.ident {
        Some(id) => plfs.reopen(&e.path, flags, pid, id)?,
        None => plfs.open(&e.path, flags, 0, pid)?,
    })
}

/// Closes the open file of an entry (last descriptor gone, exec, exit). Errors are returned.
pub fn close_file(st: &mut FileState) -> Res<()> {
    match st.file.take() {
        Some(f) if st.pid == my_pid() => f.close().map_err(Errno::from),
        Some(f) => {
            std::mem::forget(f);
            Ok(())
        }
        None => Ok(()),
    }
}
