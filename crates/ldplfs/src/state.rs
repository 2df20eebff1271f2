//! Process-wide state: the configuration, the PLFS instance, and the table of open PLFS files.
//!
//! Invariants:
//! - Every open PLFS file (or directory) is backed by a sealed memfd placeholder; the table maps
//!   the placeholder's kernel identity `(st_dev, st_ino)` to one [`Entry`], and each descriptor
//!   number that refers to it to that key. The kernel owns descriptors, offsets and dups; the
//!   table only mirrors which descriptor numbers are ours. A descriptor is trusted only after
//!   fstat confirms its key, so a number closed behind our back and reused is never mistaken
//!   for a PLFS file.
//! - An entry's `OpenFile` belongs to the process that opened it (`FileState::pid`). A forked
//!   child gets fresh entries with no `OpenFile` (see [`atfork_child`]), so its first access
//!   opens the file again with its own pid: its own writer, its own data log.
//! - `FD_BITS` is a conservative filter: a clear bit means "not ours" for descriptors below
//!   65536; a set bit is confirmed through the table and fstat.

use crate::guard::{Errno, Res};
use crate::real::sys;
use plfs_core::{Config, OpenFile, OpenFlags, Plfs};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Once, OnceLock};

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

/// Per-process state of an open file that changes under I/O.
#[derive(Debug, Default)]
pub struct FileState {
    /// The open PLFS file, opened lazily (after fork, exec adoption, or exit).
    pub file: Option<OpenFile>,
    /// Process that opened `file`.
    pub pid: u32,
    /// Descriptor of the lock file for fcntl byte-range locks (-1: not opened yet).
    pub lock_fd: i32,
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
    /// A new entry without an open file.
    pub fn new(key: Key, kind: Kind, path: PathBuf, flags: i32) -> Entry {
        Entry {
            key,
            kind,
            path,
            flags: AtomicI32::new(flags),
            state: Mutex::new(FileState {
                file: None,
                pid: 0,
                lock_fd: -1,
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
pub fn file_of<'a>(e: &Entry, st: &'a mut FileState) -> Res<&'a OpenFile> {
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
        let flags = OpenFlags::from_posix(fl)?;
        let f = plfs()?.open(&e.path, flags, 0, me)?;
        st.file = Some(f);
        st.pid = me;
    }
    Ok(st.file.as_ref().expect("opened above"))
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

struct Table {
    entries: BTreeMap<Key, (Arc<Entry>, usize)>,
    fds: BTreeMap<i32, Key>,
}

static TABLE: ForkMutex<Table> = ForkMutex::new(Table {
    entries: BTreeMap::new(),
    fds: BTreeMap::new(),
});
/// Number of descriptors in the table (0: every descriptor call is a pass-through).
static NFDS: AtomicUsize = AtomicUsize::new(0);
const BITS: usize = 65536;
static FD_BITS: [AtomicU64; BITS / 64] = [const { AtomicU64::new(0) }; BITS / 64];

fn table() -> MutexGuard<'static, Table> {
    TABLE.lock()
}

fn set_bit(fd: i32, on: bool) {
    let fd = fd as usize;
    if fd < BITS {
        let m = 1u64 << (fd % 64);
        if on {
            FD_BITS[fd / 64].fetch_or(m, Ordering::Relaxed);
        } else {
            FD_BITS[fd / 64].fetch_and(!m, Ordering::Relaxed);
        }
    }
}

/// Cheap test: may `fd` be a PLFS descriptor?
#[inline]
pub fn maybe_ours(fd: i32) -> bool {
    if fd < 0 || NFDS.load(Ordering::Relaxed) == 0 {
        return false;
    }
    let u = fd as usize;
    u >= BITS || FD_BITS[u / 64].load(Ordering::Relaxed) & (1u64 << (u % 64)) != 0
}

/// Registers descriptor `fd` for `entry` (a new open, a dup, or an adopted descriptor). If `fd`
/// was registered for another entry, that registration is dropped first (and the returned
/// entry, if its last descriptor, must be closed by the caller).
pub fn insert_fd(fd: i32, entry: &Arc<Entry>) -> Option<Arc<Entry>> {
    let mut t = table();
    let orphan = remove_locked(&mut t, fd);
    let slot = t.entries.entry(entry.key).or_insert_with(|| (entry.clone(), 0));
    slot.1 += 1;
    t.fds.insert(fd, entry.key);
    set_bit(fd, true);
    NFDS.store(t.fds.len(), Ordering::Relaxed);
    orphan
}

fn remove_locked(t: &mut Table, fd: i32) -> Option<Arc<Entry>> {
    let key = t.fds.remove(&fd)?;
    set_bit(fd, false);
    NFDS.store(t.fds.len(), Ordering::Relaxed);
    let last = match t.entries.get_mut(&key) {
        Some(slot) => {
            slot.1 -= 1;
            slot.1 == 0
        }
        None => false,
    };
    if last {
        t.entries.remove(&key).map(|(e, _)| e)
    } else {
        None
    }
}

/// Forgets descriptor `fd` (it was closed). Returns the entry if that was its last descriptor.
pub fn remove_fd(fd: i32) -> Option<Arc<Entry>> {
    if !maybe_ours(fd) {
        return None;
    }
    remove_locked(&mut table(), fd)
}

/// Forgets every descriptor in `[lo, hi]`; returns the entries that lost their last one.
pub fn remove_range(lo: u32, hi: u32) -> Vec<Arc<Entry>> {
    if NFDS.load(Ordering::Relaxed) == 0 {
        return Vec::new();
    }
    let mut t = table();
    let fds: Vec<i32> = t
        .fds
        .keys()
        .copied()
        .filter(|&f| f as u32 >= lo && f as u32 <= hi)
        .collect();
    fds.into_iter().filter_map(|fd| remove_locked(&mut t, fd)).collect()
}

/// The entry behind descriptor `fd`, if it is a live PLFS placeholder.
pub fn lookup(fd: i32) -> Option<Arc<Entry>> {
    if !maybe_ours(fd) {
        return None;
    }
    let entry = {
        let t = table();
        let key = t.fds.get(&fd)?;
        t.entries.get(key).map(|(e, _)| e.clone())?
    };
    match sys::fstat_key(fd) {
        Ok(k) if k == entry.key => Some(entry),
        _ => {
            // Closed behind our back and possibly reused: not ours any more.
            if let Some(e) = remove_fd(fd) {
                let _ = close_file(&mut e.lock());
            }
            None
        }
    }
}

/// The entry registered for a placeholder key (used by adoption to share dups).
pub fn entry_for_key(key: Key) -> Option<Arc<Entry>> {
    table().entries.get(&key).map(|(e, _)| e.clone())
}

/// Every entry (for flush and close at fork, exec and exit).
pub fn all_entries() -> Vec<Arc<Entry>> {
    table().entries.values().map(|(e, _)| e.clone()).collect()
}

/// Descriptor numbers registered for `key`.
pub fn fds_of(key: Key) -> Vec<i32> {
    table()
        .fds
        .iter()
        .filter(|(_, k)| **k == key)
        .map(|(f, _)| *f)
        .collect()
}

/// Makes this process's writes visible to other processes (before fork, exec, spawn): appends
/// every buffered index record to its index log.
pub fn flush_all() {
    for e in all_entries() {
        if e.kind != Kind::File || e.flags() & libc::O_ACCMODE == libc::O_RDONLY {
            continue;
        }
        let st = e.lock();
        if let Some(f) = st.file.as_ref() {
            if st.pid == my_pid() {
                if let Err(err) = f.refresh() {
                    crate::log::warn(format_args!("{}: flush: {err}", e.path.display()));
                }
            }
        }
    }
}

/// Makes this process's writes to every open file visible to other processes (a lock is
/// released): appends each writer's buffered index records to its index log, nothing more.
pub fn publish_all() -> Res<()> {
    for e in all_entries() {
        if e.kind != Kind::File || e.flags() & libc::O_ACCMODE == libc::O_RDONLY {
            continue;
        }
        let st = e.lock();
        if let Some(f) = st.file.as_ref() {
            if st.pid == my_pid() {
                f.flush()?;
            }
        }
    }
    Ok(())
}

/// Closes every open file of this process (exec, exit): writes the close droppings. Entries stay,
/// so a later access (a failed exec, a late stdio flush) opens the file again.
pub fn close_all() {
    for e in all_entries() {
        let mut st = e.lock();
        if let Err(err) = close_file(&mut st) {
            crate::log::warn(format_args!("{}: close: {err:?}", e.path.display()));
        }
    }
}

// ---------------------------------------------------------------- configuration and instance

/// The configuration and what the fast path needs from it.
#[derive(Debug)]
pub struct Conf {
    /// The loaded configuration.
    pub cfg: Config,
    /// Mount points as bytes (normalised, no trailing slash).
    pub mounts: Vec<Vec<u8>>,
    /// Every component of every mount point (`tmp`, `plfs` of `/tmp/plfs`): a path relative to a
    /// real directory descriptor can lead into a mount only through one of these names.
    pub mount_names: Vec<Vec<u8>>,
    /// (canonical backend directory, its mount point), to map a kernel cwd back to a logical one.
    pub backends: Vec<(PathBuf, PathBuf)>,
    /// Every backend directory (canonical and shadow), as bytes: the core's descriptors point here.
    pub roots: Vec<Vec<u8>>,
}

static CONF: OnceLock<Option<Conf>> = OnceLock::new();
static PLFS: AtomicPtr<Plfs> = AtomicPtr::new(std::ptr::null_mut());
static PLFS_FAILED: AtomicBool = AtomicBool::new(false);
static MY_PID: AtomicU32 = AtomicU32::new(0);
static INIT: Once = Once::new();

/// The configuration, loading it at the first call. None: the library is disabled.
pub fn conf() -> Option<&'static Conf> {
    CONF.get_or_init(|| {
        // Secure-execution mode (setuid/setgid programs, file capabilities): the environment
        // (LD_PRELOAD, PLFSRC) is the unprivileged user's, so the library stays out of the way
        // and every call goes straight to libc.
        // SAFETY: getauxval only reads the process's auxiliary vector.
        if unsafe { libc::getauxval(libc::AT_SECURE) } != 0 {
            return None;
        }
        load_conf()
    })
    .as_ref()
}

fn load_conf() -> Option<Conf> {
    match Config::load() {
        Ok(cfg) => {
            let mounts: Vec<Vec<u8>> = cfg
                .mounts
                .iter()
                .map(|m| m.mount_point.as_os_str().as_encoded_bytes().to_vec())
                .collect();
            let mut mount_names: Vec<Vec<u8>> = mounts
                .iter()
                .flat_map(|m| m.split(|&b| b == b'/').filter(|c| !c.is_empty()).map(<[u8]>::to_vec))
                .collect();
            mount_names.sort();
            mount_names.dedup();
            let mut backends = Vec::new();
            let mut roots = Vec::new();
            for m in &cfg.mounts {
                for b in m.canonical() {
                    backends.push((b.to_path_buf(), m.mount_point.clone()));
                }
                for b in &m.backends {
                    roots.push(b.location.as_os_str().as_encoded_bytes().to_vec());
                }
            }
            Some(Conf {
                cfg,
                mounts,
                mount_names,
                backends,
                roots,
            })
        }
        Err(e) => {
            crate::log::always(format_args!("PLFS disabled, every call passes through to libc: {e}"));
            None
        }
    }
}

/// The PLFS instance of this process, built at first need (and again in a forked child).
pub fn plfs() -> Res<&'static Plfs> {
    let p = PLFS.load(Ordering::Acquire);
    if !p.is_null() {
        // SAFETY: instances are leaked, never freed: the pointer stays valid for the process.
        return Ok(unsafe { &*p });
    }
    let c = conf().ok_or(Errno(libc::ENOSYS))?;
    // Inside someone else's program the core stays quiet unless PLFS_LOG asks for its messages.
    if plfs_core::log::env_level().is_none() {
        plfs_core::log::set_level(plfs_core::log::Level::Off);
    }
    match Plfs::new(c.cfg.clone()) {
        Ok(inst) => {
            let new = Box::into_raw(Box::new(inst));
            match PLFS.compare_exchange(std::ptr::null_mut(), new, Ordering::AcqRel, Ordering::Acquire) {
                // SAFETY: `new` was just leaked from a Box and is never freed.
                Ok(_) => Ok(unsafe { &*new }),
                // SAFETY: another thread won; its instance is equally leaked. Ours stays leaked
                // too (a Plfs holds no descriptors until used).
                Err(other) => Ok(unsafe { &*other }),
            }
        }
        Err(e) => {
            if !PLFS_FAILED.swap(true, Ordering::Relaxed) {
                crate::log::always(format_args!("cannot use PLFS: {e}"));
            }
            Err(Errno::from(e))
        }
    }
}

/// True once this process built its PLFS instance (so the core may hold descriptors).
pub fn plfs_active() -> bool {
    !PLFS.load(Ordering::Relaxed).is_null()
}

/// True if `fd` is a descriptor the core holds (it points into a backend directory). Programs
/// do not know about these: a dup2 onto one or a close of one must not pull it from the core.
pub fn core_fd(fd: i32) -> bool {
    if fd < 0 || !plfs_active() || maybe_ours(fd) {
        return false;
    }
    let Some(c) = conf() else { return false };
    let Ok(link) = rustix::fs::readlinkat(rustix::fs::CWD, format!("/proc/self/fd/{fd}").as_str(), Vec::new()) else {
        return false;
    };
    let b = link.as_bytes();
    c.roots
        .iter()
        .any(|r| b.starts_with(r) && (b.len() == r.len() || b[r.len()] == b'/'))
}

/// This process's id as seen by the library (updated in a forked child).
pub fn my_pid() -> u32 {
    MY_PID.load(Ordering::Relaxed)
}

/// True in a vfork/clone child that shares our memory: it must not change the parent's state.
pub fn foreign_child() -> bool {
    sys::getpid() != my_pid()
}

/// One-time initialisation (constructor, or the first intercepted call if it comes earlier).
pub fn ready() {
    INIT.call_once(|| {
        MY_PID.store(sys::getpid(), Ordering::Relaxed);
        // A panic here must neither unwind into C nor poison the Once (every later call would
        // panic): the library then simply knows less (no adoption, no cwd).
        let _ = std::panic::catch_unwind(|| {
            if conf().is_none() {
                return;
            }
            // SAFETY: the handlers are plain extern "C" functions that live as long as the process.
            unsafe { libc::pthread_atfork(Some(atfork_prepare), Some(atfork_parent), Some(atfork_child)) };
            crate::paths::init_cwd();
            crate::placeholder::adopt_all();
        });
    });
}

/// True once initialised with a usable configuration.
pub fn enabled() -> bool {
    ready();
    CONF.get().is_some_and(|c| c.is_some())
}

// ---------------------------------------------------------------- fork

/// A mutex that the fork handlers hold across fork(), so the child never inherits it locked by a
/// thread that does not exist there.
pub struct ForkMutex<T: 'static> {
    m: Mutex<T>,
    stash: std::cell::UnsafeCell<Option<MutexGuard<'static, T>>>,
}

// SAFETY: `m` is a Mutex; `stash` is touched only by the forking thread between its prepare and
// parent/child handlers, which run in that same thread.
unsafe impl<T: Send> Sync for ForkMutex<T> {}

impl<T> ForkMutex<T> {
    /// A new unlocked mutex.
    pub const fn new(v: T) -> Self {
        ForkMutex {
            m: Mutex::new(v),
            stash: std::cell::UnsafeCell::new(None),
        }
    }

    /// Locks it (a poisoned lock is recovered: the data are plain maps).
    pub fn lock(&'static self) -> MutexGuard<'static, T> {
        self.m.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Prepare handler: takes the lock.
    pub fn prepare(&'static self) {
        let g = self.lock();
        // SAFETY: see the Sync impl.
        unsafe { *self.stash.get() = Some(g) };
    }

    /// Parent/child handler: releases it, first letting `f` fix the data up (child).
    pub fn release(&'static self, f: impl FnOnce(&mut T)) {
        // SAFETY: see the Sync impl.
        if let Some(mut g) = unsafe { (*self.stash.get()).take() } {
            f(&mut g);
        }
    }
}

extern "C" fn atfork_prepare() {
    let _busy = crate::guard::enter();
    // The child (and whatever it execs) must see this process's writes.
    let _ = std::panic::catch_unwind(flush_all);
    crate::shm::MAPS.prepare();
    crate::dirs::DIRS.prepare();
    crate::stdio::STREAMS.prepare();
    TABLE.prepare();
}

extern "C" fn atfork_parent() {
    bump_epoch();
    TABLE.release(|_| {});
    crate::stdio::STREAMS.release(|_| {});
    crate::dirs::DIRS.release(|_| {});
    crate::shm::MAPS.release(|_| {});
}

extern "C" fn atfork_child() {
    MY_PID.store(sys::getpid(), Ordering::Relaxed);
    // The parent's instance may have locks held by threads that do not exist here: use a new one.
    PLFS.store(std::ptr::null_mut(), Ordering::Release);
    TABLE.release(|t| {
        let old = std::mem::take(&mut t.entries);
        for (key, (e, n)) in old {
            let lock_fd = e.state.try_lock().map(|s| s.lock_fd).unwrap_or(-1);
            let fresh = Arc::new(Entry::new(key, e.kind, e.path.clone(), e.flags()));
            fresh.lock().lock_fd = lock_fd;
            // The parent's OpenFile (and its writer) must never be closed by the child.
            std::mem::forget(e);
            t.entries.insert(key, (fresh, n));
        }
    });
    crate::stdio::STREAMS.release(|_| {});
    crate::dirs::DIRS.release(|_| {});
    crate::shm::MAPS.release(|_| {});
}
