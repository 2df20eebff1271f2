//! The table of open PLFS descriptors: which descriptor numbers are placeholders, and of which
//! open file ([`Entry`]).
//!
//! Invariants:
//! - Every open PLFS file (or directory) is backed by a sealed memfd placeholder; the table maps
//!   the placeholder's kernel identity `(st_dev, st_ino)` to one [`Entry`], and each descriptor
//!   number that refers to it to that key. The kernel owns descriptors and dups; the table
//!   mirrors which descriptor numbers are ours.
//! - The mirror is kept exact by the calls that change descriptor numbers, all interposed:
//!   open (a placeholder is made), close, close_range, closefrom, dup, dup2, dup3,
//!   fcntl(F_DUPFD), exec. A number is trusted without a system call when it was registered, or
//!   last confirmed by fstat, in the current *generation*. The generation changes ([`doubt`])
//!   whenever something may have closed or replaced descriptors behind our back: `syscall` with
//!   a close, dup or clone number, daemon/login_tty/forkpty (glibc dup2s onto 0-2 internally),
//!   and any pass-through call (an open of a real file, dup) that the kernel answered with a
//!   number the table holds, which proves the placeholder was closed without us. After that,
//!   each descriptor's next use is checked by fstat once (a changed key: not ours any more).
//! - `FD_BITS` is a conservative filter: a clear bit means "not ours" for descriptors below
//!   65536; a set bit is confirmed through the table.
//! - Descriptors below 65536 are looked up without the table's lock, in the slots of
//!   `fd::direct`, which mirror `fds` (entry and generation) and change with it, under the lock.

use crate::fd::conf::{conf, my_pid, plfs_active};
use crate::fd::direct;
use crate::fd::entry::{close_file, Entry, Ident, Key, Kind};
use crate::rt::errno::Res;
use crate::rt::real::sys;
use crate::rt::sync::ForkMutex;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, MutexGuard};

/// The table (held across fork; locked last, after every other registered lock).
pub struct Table {
    entries: BTreeMap<Key, (Arc<Entry>, usize)>,
    fds: BTreeMap<i32, Slot>,
    /// The references that left `fd::direct`'s slots, until no reader can still be taking one.
    grave: Vec<Arc<Entry>>,
}

/// A descriptor number of ours.
struct Slot {
    /// The entry of its placeholder (the one `entries` holds for `entry.key`), so that a look-up
    /// searches one map.
    entry: Arc<Entry>,
    /// The generation in which the number was registered or last confirmed by fstat.
    checked: u64,
}

/// The current generation (see the module documentation).
static GEN: AtomicU64 = AtomicU64::new(1);

/// Descriptors may have been closed or replaced behind our back: every descriptor of the table
/// is checked by fstat at its next use.
pub fn doubt() {
    GEN.fetch_add(1, Ordering::AcqRel);
}

static TABLE: ForkMutex<Table> = ForkMutex::new(
    250,
    Table {
        entries: BTreeMap::new(),
        fds: BTreeMap::new(),
        grave: Vec::new(),
    },
);
/// Number of descriptors in the table (0: every descriptor call is a pass-through).
static NFDS: AtomicUsize = AtomicUsize::new(0);
const BITS: usize = 65536;
static FD_BITS: [AtomicU64; BITS / 64] = [const { AtomicU64::new(0) }; BITS / 64];

fn table() -> MutexGuard<'static, Table> {
    TABLE.lock()
}

/// `fd`'s slot in `fd::direct`, if it has one.
fn direct_slot(fd: i32) -> Option<usize> {
    usize::try_from(fd).ok().filter(|&u| u < direct::LEN)
}

/// Mirrors the registration of `fd` (None: removed) in `fd::direct`; the caller holds `t`.
fn mirror(t: &mut Table, fd: i32, entry: Option<&Arc<Entry>>, checked: u64) {
    if let Some(u) = direct_slot(fd) {
        direct::set(u, entry, checked, &mut t.grave);
        direct::reclaim(&mut t.grave);
    }
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
/// entry, if its last descriptor, must be closed by the caller). The number's bit and slot stay
/// set across the change: a call racing a dup2 onto a number of ours (the look-up takes no
/// lock) finds the old entry or the new one, never "not ours", which would hand it the
/// placeholder itself.
pub fn insert_fd(fd: i32, entry: &Arc<Entry>) -> Option<Arc<Entry>> {
    let mut t = table();
    let orphan = match t.fds.remove(&fd) {
        Some(old) => unref(&mut t, old.entry.key),
        None => None,
    };
    let slot = t.entries.entry(entry.key).or_insert_with(|| (entry.clone(), 0));
    slot.1 += 1;
    let registered = slot.0.clone();
    let checked = GEN.load(Ordering::Acquire);
    mirror(&mut t, fd, Some(&registered), checked);
    t.fds.insert(
        fd,
        Slot {
            entry: registered,
            checked,
        },
    );
    set_bit(fd, true);
    NFDS.store(t.fds.len(), Ordering::Relaxed);
    orphan
}

fn remove_locked(t: &mut Table, fd: i32) -> Option<Arc<Entry>> {
    let key = t.fds.remove(&fd)?.entry.key;
    mirror(t, fd, None, 0);
    set_bit(fd, false);
    NFDS.store(t.fds.len(), Ordering::Relaxed);
    unref(t, key)
}

/// One descriptor fewer refers to the entry of placeholder `key`: the entry, if that was its
/// last one (the caller closes it).
fn unref(t: &mut Table, key: Key) -> Option<Arc<Entry>> {
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

/// True if `fd` is registered.
pub fn contains(fd: i32) -> bool {
    maybe_ours(fd) && table().fds.contains_key(&fd)
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

/// [`ours`] of a descriptor that [`maybe_ours`] let through.
#[inline]
pub fn registered(fd: i32) -> Option<Arc<Entry>> {
    let gen = GEN.load(Ordering::Acquire);
    let (entry, checked) = match direct_slot(fd) {
        Some(u) => direct::get(u)?,
        None => in_map(fd)?,
    };
    if checked == gen {
        return Some(entry);
    }
    confirm(fd, gen, entry)
}

/// The entry and generation of a descriptor without a slot in `fd::direct`, from the map.
#[cold]
#[inline(never)]
fn in_map(fd: i32) -> Option<(Arc<Entry>, u64)> {
    let t = table();
    let slot = t.fds.get(&fd)?;
    Some((slot.entry.clone(), slot.checked))
}

/// [`registered`] of a descriptor not confirmed in generation `gen`: fstat tells whether it is
/// still the placeholder of `entry`, or now another placeholder of ours (out of line: the
/// look-up above runs on every call).
#[cold]
#[inline(never)]
fn confirm(fd: i32, gen: u64, mut entry: Arc<Entry>) -> Option<Arc<Entry>> {
    // The number can change hands between the fstat and the lock (a dup2 in another thread):
    // then the table names the new entry, and the kernel is asked again.
    for _ in 0..8 {
        let now = sys::fstat_key(fd);
        let mut t = table();
        if let Ok(k) = now {
            if let Some(s) = t.fds.get_mut(&fd).filter(|s| s.entry.key == k) {
                s.checked = gen;
                if let Some(u) = direct_slot(fd) {
                    direct::confirmed(u, &s.entry, gen);
                }
            }
            if k == entry.key {
                return Some(entry);
            }
            // Another placeholder of ours is there now: a dup2, dup3 or open of a PLFS file
            // raced this look-up, its registration made meanwhile or still to come (the
            // kernel's part is done first). The call is on that file, never on the placeholder
            // itself (whose stat and bytes are the library's record).
            if let Some((e, _)) = t.entries.get(&k) {
                return Some(e.clone());
            }
        }
        match t.fds.get(&fd) {
            // Closed behind our back and possibly reused: not ours any more.
            Some(s) if Arc::ptr_eq(&s.entry, &entry) => {
                let gone = remove_locked(&mut t, fd);
                drop(t);
                if let Some(e) = gone {
                    let _ = close_file(&mut e.lock());
                }
                return None;
            }
            Some(s) => entry = s.entry.clone(),
            None => return None,
        }
    }
    None
}

/// Our entry for `fd`, if it is a live PLFS placeholder (the test every descriptor call makes:
/// the cheap [`maybe_ours`] here, inline, then the table, once). No system call unless the
/// generation changed since the number was last confirmed.
#[inline]
pub fn ours(fd: i32) -> Option<Arc<Entry>> {
    if !maybe_ours(fd) {
        return None;
    }
    registered(fd)
}

/// The entry registered for a placeholder key (used by adoption to share dups).
pub fn entry_for_key(key: Key) -> Option<Arc<Entry>> {
    table().entries.get(&key).map(|(e, _)| e.clone())
}

/// Every entry (for flush and close at fork, exec and exit).
pub fn all_entries() -> Vec<Arc<Entry>> {
    table().entries.values().map(|(e, _)| e.clone()).collect()
}

/// The files (identity, path) that a new image inherits descriptors of at exec: those with a
/// descriptor without close-on-exec.
pub fn surviving_files() -> Vec<(Ident, PathBuf)> {
    if NFDS.load(Ordering::Relaxed) == 0 {
        return Vec::new();
    }
    let t = table();
    let mut out: Vec<(Ident, PathBuf)> = Vec::new();
    for (fd, slot) in &t.fds {
        let e = &slot.entry;
        let Some(id) = e.ident else { continue };
        if out.iter().any(|(i, _)| *i == id) {
            continue;
        }
        if sys::fcntl_int(*fd, libc::F_GETFD, 0).is_ok_and(|f| f & libc::FD_CLOEXEC == 0) {
            out.push((id, e.path.clone()));
        }
    }
    out
}

/// True if an entry of the table is a file of identity `id`.
pub fn has_ident(id: Ident) -> bool {
    table().entries.values().any(|(e, _)| e.ident == Some(id))
}

/// Descriptor numbers registered for `key`.
pub fn fds_of(key: Key) -> Vec<i32> {
    table()
        .fds
        .iter()
        .filter(|(_, s)| s.entry.key == key)
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
                    crate::rt::log::warn(format_args!("{}: flush: {err}", e.path.display()));
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

/// Before the open file descriptions are shared with another process (fork, spawn, exec):
/// writes every position kept in this process to its placeholder's kernel offset, which is the
/// position from then on (see `fd::entry`).
pub fn share_positions() {
    for e in all_entries() {
        let mut st = e.lock();
        let Some(pos) = st.pos else { continue };
        // Any descriptor of the entry: they all share the description and its offset.
        let set = |fd: &i32| i64::try_from(pos).is_ok_and(|p| sys::lseek(*fd, p, libc::SEEK_SET).is_ok());
        if fds_of(e.key).iter().any(set) {
            st.pos = None;
        } else {
            crate::rt::log::warn(format_args!("{}: cannot share the position {pos}", e.path.display()));
        }
    }
}

/// Closes every open file of this process (exec, exit): writes the close droppings. Entries stay,
/// so a later access (a failed exec, a late stdio flush) opens the file again.
pub fn close_all() {
    for e in all_entries() {
        let mut st = e.lock();
        if let Err(err) = close_file(&mut st) {
            crate::rt::log::warn(format_args!("{}: close: {err:?}", e.path.display()));
        }
    }
}

/// True if `fd` is a descriptor the core holds (it points into a backend directory). Programs
/// do not know about these: a dup2 onto one or a close of one must not pull it from the core.
pub fn core_fd(fd: i32) -> bool {
    if fd < 0 || !plfs_active() || maybe_ours(fd) || !plfs_core::may_be_kept_descriptor(fd) {
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

/// In a forked child, while the fork handlers hold the table: every entry is replaced by a fresh
/// one without an open file (the parent's `OpenFile` and its writer must never be closed by the
/// child), keeping its descriptors and its lock-file descriptor.
pub fn renew_in_child() {
    TABLE.with_held(|t| {
        let old = std::mem::take(&mut t.entries);
        for (key, (e, n)) in old {
            let lock_fd = e.state.try_lock().map(|s| s.lock_fd).unwrap_or(-1);
            let fresh = Arc::new(Entry::new(key, e.kind, e.path.clone(), e.ident, e.flags(), None));
            fresh.lock().lock_fd = lock_fd;
            std::mem::forget(e);
            t.entries.insert(key, (fresh, n));
        }
        // Each descriptor's slot names the fresh entry too (its reference to the parent's entry
        // is let go: the forgotten one above keeps that entry from ever being dropped here).
        let Table { entries, fds, grave } = t;
        direct::in_child(grave);
        for (fd, slot) in fds.iter_mut() {
            if let Some((e, _)) = entries.get(&slot.entry.key) {
                slot.entry = e.clone();
                if let Some(u) = direct_slot(*fd) {
                    direct::renew(u, e);
                }
            }
        }
    });
}
