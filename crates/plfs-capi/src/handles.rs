//! The handles C holds: `Plfs_fd *` (a reference-counted open file) and `Plfs_dirp *` (a directory
//! listing being read).
//!
//! A handle pointer is only a key into a process-wide table and is never dereferenced, so a stale,
//! forged or already-closed pointer gives `PLFS_EBADF` instead of undefined behaviour. The key is
//! the address of the table's `Arc`, unique while the handle is open.

use crate::error::PlfsError;
use crate::instance::{CResult, Failure};
use plfs_core::{Error, OpenFile, OpenFlags, Plfs};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// The opaque C `Plfs_fd`.
#[repr(C)]
pub struct PlfsFdC {
    _private: [u8; 0],
}

/// The opaque C `Plfs_dirp`.
#[repr(C)]
pub struct PlfsDirpC {
    _private: [u8; 0],
}

/// The references and core handles of one `Plfs_fd`.
///
/// Invariant: `handles` is non-empty while `refs > 0`; together the handles grant every access
/// mode any open reference asked for. Each handle adds the access the earlier ones lacked.
#[derive(Debug, Default)]
pub struct FdState {
    /// Core handles on the file.
    pub handles: Vec<OpenFile>,
    /// Open references (`plfs_open` calls not yet matched by `plfs_close`).
    pub refs: usize,
    /// References opened for writing (O_WRONLY or O_RDWR).
    pub writers: usize,
    /// References opened for reading (O_RDONLY or O_RDWR).
    pub readers: usize,
}

/// One `Plfs_fd`: readers and writers share it (the state's read lock); `plfs_open` and
/// `plfs_close` change it (the write lock).
#[derive(Debug)]
pub struct Fd {
    /// The logical path it was first opened with.
    pub path: PathBuf,
    /// References and handles.
    pub state: RwLock<FdState>,
    /// Bytes written through it (reported by `plfs_query`).
    pub bytes_written: AtomicU64,
}

impl Fd {
    /// Opens the first reference.
    pub fn open(plfs: &Plfs, path: PathBuf, flags: OpenFlags, mode: u32, pid: u32) -> Result<Fd, Error> {
        let f = plfs.open(&path, flags, mode, pid)?;
        let state = FdState {
            handles: vec![f],
            refs: 1,
            writers: flags.write as usize,
            readers: flags.read as usize,
        };
        Ok(Fd {
            path,
            state: RwLock::new(state),
            bytes_written: AtomicU64::new(0),
        })
    }

    /// Adds a reference with `flags`, opening another core handle when the existing ones lack an
    /// access mode it needs. O_CREAT/O_EXCL are moot (the file is open); O_TRUNC truncates.
    pub fn add_ref(&self, plfs: &Plfs, flags: OpenFlags, mode: u32, pid: u32) -> CResult<usize> {
        let mut st = self.write();
        if st.refs == 0 {
            return Err(closed());
        }
        let has_read = st.handles.iter().any(|h| h.flags().read);
        let has_write = st.handles.iter().any(|h| h.flags().write);
        if (flags.read && !has_read) || (flags.write && !has_write) {
            let extra = OpenFlags {
                create: false,
                excl: false,
                trunc: false,
                ..flags
            };
            let f = plfs.open(&self.path, extra, mode, pid)?;
            st.handles.push(f);
        }
        if flags.trunc && flags.write {
            let h = st
                .handles
                .iter()
                .find(|h| h.flags().write)
                .expect("a write handle was just ensured");
            h.truncate(0)?;
        }
        st.refs += 1;
        st.writers += flags.write as usize;
        st.readers += flags.read as usize;
        Ok(st.refs)
    }

    /// The shared state, for I/O.
    pub fn read(&self) -> RwLockReadGuard<'_, FdState> {
        self.state.read().unwrap_or_else(|p| p.into_inner())
    }

    /// The shared state, for open and close.
    pub fn write(&self) -> RwLockWriteGuard<'_, FdState> {
        self.state.write().unwrap_or_else(|p| p.into_inner())
    }
}

impl FdState {
    /// A handle open for reading, else `PLFS_EBADF`.
    pub fn reader(&self) -> CResult<&OpenFile> {
        self.handles
            .iter()
            .find(|h| h.flags().read)
            .ok_or_else(|| Failure::new(PlfsError::EBADF, "not open for reading"))
    }

    /// A handle open for writing, else `PLFS_EBADF`. Always the first one, so each pid keeps one
    /// writer (data and index log) for the life of the `Plfs_fd`.
    pub fn writer(&self) -> CResult<&OpenFile> {
        self.handles
            .iter()
            .find(|h| h.flags().write)
            .ok_or_else(|| Failure::new(PlfsError::EBADF, "not open for writing"))
    }

    /// Any handle (`PLFS_EBADF` once closed).
    pub fn any(&self) -> CResult<&OpenFile> {
        self.handles.first().ok_or_else(closed)
    }
}

fn closed() -> Failure {
    Failure::new(PlfsError::EBADF, "Plfs_fd is closed")
}

/// A directory listing being read by `plfs_readdir_c`.
#[derive(Debug)]
pub struct Dir {
    /// The logical directory.
    pub path: PathBuf,
    /// Entry names, `.` and `..` first, then sorted.
    pub names: Vec<Vec<u8>>,
    /// Index of the next name to return.
    pub next: usize,
}

/// A table of live handles keyed by the address C holds.
pub struct Table<T> {
    map: Mutex<Option<HashMap<usize, Arc<T>>>>,
}

impl<T> Table<T> {
    /// An empty table (usable in a `static`).
    pub const fn new() -> Self {
        Table { map: Mutex::new(None) }
    }

    fn lock(&self) -> MutexGuard<'_, Option<HashMap<usize, Arc<T>>>> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers a handle; returns the key to give C.
    pub fn insert(&self, v: T) -> (usize, Arc<T>) {
        let a = Arc::new(v);
        let key = Arc::as_ptr(&a) as usize;
        self.lock().get_or_insert_with(HashMap::new).insert(key, a.clone());
        (key, a)
    }

    /// The handle behind a key (`PLFS_EBADF` for NULL or unknown keys).
    pub fn get(&self, key: usize) -> CResult<Arc<T>> {
        self.lock()
            .as_ref()
            .and_then(|m| m.get(&key).cloned())
            .ok_or_else(|| Failure::new(PlfsError::EBADF, format!("{key:#x} is not an open PLFS handle")))
    }

    /// Unregisters a handle; later lookups of `key` fail.
    pub fn remove(&self, key: usize) -> Option<Arc<T>> {
        self.lock().as_mut().and_then(|m| m.remove(&key))
    }
}

impl<T> Default for Table<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// Open `Plfs_fd`s.
pub static FDS: Table<Fd> = Table::new();
/// Open `Plfs_dirp`s.
pub static DIRS: Table<Mutex<Dir>> = Table::new();

/// Counts bytes written through an fd.
pub fn add_written(fd: &Fd, n: usize) {
    fd.bytes_written.fetch_add(n as u64, Ordering::Relaxed);
}
