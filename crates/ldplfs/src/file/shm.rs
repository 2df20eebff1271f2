//! Shared mappings of PLFS files (`mmap` with MAP_SHARED): SQLite's WAL index (`-shm`) and any
//! program that maps a small file shared.
//!
//! A PLFS file has no page cache the kernel could map, so a shared mapping is served from a
//! per-node copy of the file's bytes in shared memory: `/dev/shm/ldplfs-<uid>/<hash>.map`, one
//! per file (keyed by its container and logical path), in the user's private directory. Every
//! process of the node that maps the file maps that copy, so they share its bytes coherently, as
//! they would share a page cache. Its bytes go back to the PLFS file (only the ranges that differ)
//! at msync, at munmap, when the file's last descriptor is closed, before exec and at exit.
//!
//! Who holds the copy: each process that maps it holds a shared flock on it. The first mapper
//! (the one that gets an exclusive flock) fills it from PLFS; later mappers map it as it is; the
//! last process to unmap it deletes it (its bytes are in PLFS by then). Filling, growing and
//! deleting happen under a whole-file fcntl lock on the copy, so two processes never fill or
//! delete at once, and a process that opened a copy another one deleted meanwhile notices (the
//! path names another inode or none) and starts again.
//!
//! Reads and writes through read(2)/write(2) by processes that do not map the file see the
//! mapping's bytes once they were written back (msync, munmap); mapped bytes do not change when
//! another process writes the file with write(2) while the copy exists (a new copy, made when
//! nobody maps the file any more, sees them).

use crate::fd::conf::{foreign_child, my_pid};
use crate::fd::entry::{file_of, open_again, Entry, Key, Kind};
use crate::rt::errno::{Errno, Res};
use crate::rt::sync::ForkMutex;
use plfs_core::{OpenFile, OpenFlags};
use rustix::fd::{AsRawFd, BorrowedFd, FromRawFd, IntoRawFd, OwnedFd};
use rustix::fs::{FlockOperation, Mode, OFlags};
use std::collections::BTreeMap;
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The shared-memory copy of one file, as this process holds it.
pub struct Copy {
    /// Descriptor of the copy (close-on-exec, above the numbers programs manage).
    fd: i32,
    /// Its path.
    path: String,
    /// The process that opened `fd` (a forked child inherits the descriptor and its flock).
    pid: u32,
    /// Mappings of this process that use it.
    maps: usize,
}

/// One shared mapping (or what is left of it after partial munmaps).
pub struct Mapping {
    len: usize,
    /// File offset of its first byte.
    off: u64,
    /// The copy it maps: key into `Registry::copies`.
    copy: (u64, u32),
    /// The file (its logical path and open flags; written back through it).
    entry: Arc<Entry>,
    /// Mapped from a descriptor open for writing: its bytes go back to PLFS.
    writable: bool,
}

/// The shared mappings and copies of this process.
#[derive(Default)]
pub struct Registry {
    /// By start address.
    maps: BTreeMap<usize, Mapping>,
    /// By (key, pid).
    copies: BTreeMap<(u64, u32), Copy>,
}

/// The shared mappings of this process (held across fork by the fork handlers).
static MAPS: ForkMutex<Registry> = ForkMutex::new(
    10,
    Registry {
        maps: BTreeMap::new(),
        copies: BTreeMap::new(),
    },
);
/// Number of shared mappings (0: munmap and msync pass straight through).
static NMAPS: AtomicUsize = AtomicUsize::new(0);

/// True while this process has shared mappings of PLFS files.
#[inline]
pub fn active() -> bool {
    NMAPS.load(Ordering::Relaxed) != 0
}

fn errno(e: rustix::io::Errno) -> Errno {
    Errno(e.raw_os_error())
}

fn fnv1a(b: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &x in b {
        h ^= u64::from(x);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The user's private directory in shared memory, `/dev/shm/ldplfs-<uid>`: created 0700, and
/// refused unless it is a real directory owned by us that nobody else may enter (someone else
/// could otherwise plant lock files or mapped bytes there).
pub fn private_dir() -> Res<String> {
    let uid = rustix::process::geteuid().as_raw();
    let dir = format!("/dev/shm/ldplfs-{uid}");
    match rustix::fs::mkdir(dir.as_str(), Mode::from_raw_mode(0o700)) {
        Ok(()) | Err(rustix::io::Errno::EXIST) => {}
        Err(e) => return Err(errno(e)),
    }
    let st = rustix::fs::lstat(dir.as_str()).map_err(errno)?;
    if st.st_mode & libc::S_IFMT != libc::S_IFDIR || st.st_uid != uid || st.st_mode & 0o077 != 0 {
        crate::rt::log::always(format_args!(
            "{dir} is not a private directory of user {uid} (mode {:o}, owner {}): refusing to use it",
            st.st_mode, st.st_uid
        ));
        return Err(Errno(libc::EACCES));
    }
    Ok(dir)
}

/// Identity of the shared copy of an open file.
fn key_of(f: &OpenFile) -> u64 {
    let mut b = f.container_path().as_os_str().as_bytes().to_vec();
    b.push(0);
    b.extend_from_slice(f.path().as_os_str().as_bytes());
    fnv1a(&b)
}

fn fd_of(raw: i32) -> BorrowedFd<'static> {
    // SAFETY: `raw` is a descriptor of a Copy this process holds open while it uses it.
    unsafe { BorrowedFd::borrow_raw(raw) }
}

fn copy_size(fd: i32) -> Res<u64> {
    Ok(rustix::fs::fstat(fd_of(fd)).map_err(errno)?.st_size as u64)
}

/// Copies the file's bytes `[from, to)` (zeros past its end) into the copy, then makes the copy
/// `to` bytes long.
fn fill(f: &OpenFile, fd: i32, from: u64, to: u64) -> Res<()> {
    let size = f.size()?;
    let mut off = from;
    let mut buf = vec![0u8; 1 << 20];
    while off < to.min(size) {
        let n = ((to.min(size) - off) as usize).min(buf.len());
        let got = f.read(&mut buf[..n], off)?;
        if got == 0 {
            break;
        }
        let mut done = 0;
        while done < got {
            done += rustix::io::pwrite(fd_of(fd), &buf[done..got], off + done as u64).map_err(errno)?;
        }
        off += got as u64;
    }
    rustix::fs::ftruncate(fd_of(fd), to).map_err(errno)
}

/// Opens (creating it if needed) the copy of `f` and makes it at least `end` bytes long, filled
/// from PLFS where nobody mapped it yet. Returns the copy's descriptor and path.
fn open_copy(f: &OpenFile, key: u64, end: u64) -> Res<(i32, String)> {
    let path = format!("{}/{key:016x}.map", private_dir()?);
    for _ in 0..100 {
        let fd = rustix::fs::open(
            path.as_str(),
            OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )
        .map_err(errno)?;
        // Far from the numbers programs manage themselves, like the lock files.
        let fd = rustix::io::fcntl_dupfd_cloexec(&fd, 700).map_err(errno)?;
        let st = rustix::fs::fstat(&fd).map_err(errno)?;
        if st.st_mode & libc::S_IFMT != libc::S_IFREG || st.st_uid != rustix::process::geteuid().as_raw() {
            return Err(Errno(libc::EACCES));
        }
        rustix::fs::fcntl_lock(&fd, FlockOperation::LockExclusive).map_err(errno)?;
        // Deleted (and perhaps made anew) by its last user while we were opening it: again.
        match rustix::fs::lstat(path.as_str()) {
            Ok(now) if now.st_dev == st.st_dev && now.st_ino == st.st_ino => {}
            _ => continue,
        }
        let first = rustix::fs::flock(&fd, FlockOperation::NonBlockingLockExclusive).is_ok();
        let r = (|| {
            if first {
                // Nobody maps the file: whatever the copy holds is stale.
                rustix::fs::ftruncate(&fd, 0).map_err(errno)?;
                fill(f, fd.as_raw_fd(), 0, end)?;
            } else {
                let have = copy_size(fd.as_raw_fd())?;
                if have < end {
                    fill(f, fd.as_raw_fd(), have, end)?;
                }
            }
            rustix::fs::flock(&fd, FlockOperation::LockShared).map_err(errno)
        })();
        let _ = rustix::fs::fcntl_lock(&fd, FlockOperation::Unlock);
        r?;
        return Ok((fd.into_raw_fd(), path));
    }
    Err(Errno(libc::EAGAIN))
}

/// Gives up this process's hold on a copy: the last process deletes it (its bytes were written
/// back), under the same lock as `open_copy`.
fn drop_copy(c: Copy) {
    // SAFETY: the descriptor is the Copy's own, closed exactly here.
    let fd = unsafe { OwnedFd::from_raw_fd(c.fd) };
    if c.pid != my_pid() {
        // Inherited through fork: the flock belongs to the parent's description too.
        return;
    }
    if rustix::fs::fcntl_lock(&fd, FlockOperation::LockExclusive).is_err() {
        return;
    }
    if rustix::fs::flock(&fd, FlockOperation::NonBlockingLockExclusive).is_ok() {
        if let (Ok(st), Ok(now)) = (rustix::fs::fstat(&fd), rustix::fs::lstat(c.path.as_str())) {
            if now.st_dev == st.st_dev && now.st_ino == st.st_ino {
                let _ = rustix::fs::unlink(c.path.as_str());
            }
        }
    }
    // Our shared flock goes before the lock that serialises droppers: a dropper waiting for it
    // must find us gone, or each of the last two would see the other and neither delete.
    let _ = rustix::fs::flock(&fd, FlockOperation::Unlock);
    let _ = rustix::fs::fcntl_lock(&fd, FlockOperation::Unlock);
}

/// mmap(MAP_SHARED) of a PLFS file: maps its shared copy.
pub fn map_shared(
    e: &Arc<Entry>,
    addr: *mut libc::c_void,
    len: usize,
    prot: libc::c_int,
    flags: libc::c_int,
    off: i64,
) -> Res<*mut libc::c_void> {
    let acc = e.flags() & libc::O_ACCMODE;
    if e.kind != Kind::File {
        return Err(Errno(libc::ENODEV));
    }
    if off < 0 || len == 0 {
        return Err(Errno(libc::EINVAL));
    }
    if acc == libc::O_WRONLY || (prot & libc::PROT_WRITE != 0 && acc != libc::O_RDWR) {
        return Err(Errno(libc::EACCES));
    }
    let end = (off as u64).checked_add(len as u64).ok_or(Errno(libc::EOVERFLOW))?;
    let me = my_pid();
    let mut reg = MAPS.lock();
    let key = {
        let mut st = e.lock();
        let f = file_of(e, &mut st)?;
        let key = key_of(f);
        match reg.copies.get(&(key, me)) {
            Some(c) => {
                // Grow the copy under the lock, filling what nobody mapped yet from PLFS.
                let fd = fd_of(c.fd);
                rustix::fs::fcntl_lock(fd, FlockOperation::LockExclusive).map_err(errno)?;
                let r = copy_size(c.fd).and_then(|have| if have < end { fill(f, c.fd, have, end) } else { Ok(()) });
                let _ = rustix::fs::fcntl_lock(fd, FlockOperation::Unlock);
                r?;
            }
            None => {
                let (fd, path) = open_copy(f, key, end)?;
                reg.copies.insert(
                    (key, me),
                    Copy {
                        fd,
                        path,
                        pid: me,
                        maps: 0,
                    },
                );
            }
        }
        key
    };
    let copy = reg.copies.get_mut(&(key, me)).expect("inserted above");
    // The copy lives in shared memory, so MAP_SHARED is shared by every process of the node.
    let p = crate::real!(mmap(addr, len, prot, flags, copy.fd, off): fn(*mut libc::c_void, usize, libc::c_int, libc::c_int, libc::c_int, libc::off_t) -> *mut libc::c_void);
    if p == libc::MAP_FAILED {
        let err = crate::rt::errno::errno();
        if copy.maps == 0 {
            if let Some(c) = reg.copies.remove(&(key, me)) {
                drop_copy(c);
            }
        }
        return Err(Errno(err));
    }
    copy.maps += 1;
    // MAP_FIXED replaces whatever was mapped there: forget our mappings it covered.
    let gone = cut(&mut reg, p as usize, len);
    for (m, _, _) in &gone {
        release_copy(&mut reg, m.copy);
    }
    reg.maps.insert(
        p as usize,
        Mapping {
            len,
            off: off as u64,
            copy: (key, me),
            entry: e.clone(),
            writable: acc == libc::O_RDWR,
        },
    );
    NMAPS.store(reg.maps.len(), Ordering::Relaxed);
    crate::rt::log::debug(format_args!(
        "mmap shared {} [{off}, +{len}) at {p:?}",
        e.path.display()
    ));
    Ok(p)
}

/// Writes back the file range `[from, to)` of a mapping's copy to PLFS: only the bytes that
/// differ from what PLFS holds, and not past the file's end (a mapping cannot grow a file).
fn write_back(reg: &Registry, m: &Mapping, from: u64, to: u64) -> Res<()> {
    if !m.writable || from >= to {
        return Ok(());
    }
    let Some(c) = reg.copies.get(&m.copy) else {
        return Ok(());
    };
    let e = &m.entry;
    let me = my_pid();
    let own = {
        let st = e.lock();
        st.file.is_some() && st.pid == me
    };
    // The file's descriptors are closed (or were the parent's): open it for this write only.
    let temp = if own {
        None
    } else {
        match open_again(e, OpenFlags::from_posix(libc::O_RDWR)?, me) {
            Ok(f) => Some(f),
            Err(Errno(libc::ENOENT)) => return Ok(()),
            Err(err) => return Err(err),
        }
    };
    let st = e.lock();
    let f = match (&temp, st.file.as_ref()) {
        (Some(t), _) => t,
        (None, Some(f)) => f,
        (None, None) => return Ok(()),
    };
    let r = copy_back(c.fd, f, from, to);
    drop(st);
    if let Some(t) = temp {
        t.close()?;
    }
    r
}

/// The bytes of `[from, to)` of copy `fd` that differ from the file's, written to the file.
fn copy_back(fd: i32, f: &OpenFile, from: u64, to: u64) -> Res<()> {
    let to = to.min(f.size()?);
    let mut off = from;
    let mut mine = vec![0u8; 1 << 20];
    let mut theirs = vec![0u8; 1 << 20];
    while off < to {
        let n = ((to - off) as usize).min(mine.len());
        let got = rustix::io::pread(fd_of(fd), &mut mine[..n], off).map_err(errno)?;
        if got == 0 {
            break;
        }
        let had = f.read(&mut theirs[..got], off)?;
        theirs[had..got].fill(0);
        let mut i = 0;
        while i < got {
            if mine[i] == theirs[i] {
                i += 1;
                continue;
            }
            // A run of differing bytes (equal stretches shorter than 64 bytes are written along).
            let mut j = i + 1;
            let mut same = 0;
            while j < got && same < 64 {
                if mine[j] == theirs[j] {
                    same += 1;
                } else {
                    same = 0;
                }
                j += 1;
            }
            let k = j - same;
            f.write(&mine[i..k], off + i as u64)?;
            i = j;
        }
        off += got as u64;
    }
    Ok(())
}

/// Removes `[start, start+len)` from the registry; returns the pieces of mappings it covered
/// (mapping, file range start, file range end), in address order.
fn cut(reg: &mut Registry, start: usize, len: usize) -> Vec<(Mapping, u64, u64)> {
    let end = start.saturating_add(len);
    let hits: Vec<usize> = reg
        .maps
        .range(..end)
        .filter(|(&a, m)| a + m.len > start)
        .map(|(&a, _)| a)
        .collect();
    let mut out = Vec::new();
    for a in hits {
        let m = reg.maps.remove(&a).expect("listed above");
        let (lo, hi) = (a.max(start), (a + m.len).min(end));
        if a < lo {
            reg.maps.insert(
                a,
                Mapping {
                    len: lo - a,
                    off: m.off,
                    copy: m.copy,
                    entry: m.entry.clone(),
                    writable: m.writable,
                },
            );
            reg.copies.entry(m.copy).and_modify(|c| c.maps += 1);
        }
        if hi < a + m.len {
            reg.maps.insert(
                hi,
                Mapping {
                    len: a + m.len - hi,
                    off: m.off + (hi - a) as u64,
                    copy: m.copy,
                    entry: m.entry.clone(),
                    writable: m.writable,
                },
            );
            reg.copies.entry(m.copy).and_modify(|c| c.maps += 1);
        }
        let (fa, fb) = (m.off + (lo - a) as u64, m.off + (hi - a) as u64);
        out.push((m, fa, fb));
    }
    NMAPS.store(reg.maps.len(), Ordering::Relaxed);
    out
}

/// One mapping (piece) of a copy is gone.
fn release_copy(reg: &mut Registry, key: (u64, u32)) {
    let last = match reg.copies.get_mut(&key) {
        Some(c) => {
            c.maps = c.maps.saturating_sub(1);
            c.maps == 0
        }
        None => false,
    };
    if last {
        if let Some(c) = reg.copies.remove(&key) {
            drop_copy(c);
        }
    }
}

fn warn_back(e: &Entry, r: Res<()>) {
    if let Err(Errno(x)) = r {
        crate::rt::log::warn(format_args!(
            "{}: writing back a shared mapping: {}",
            e.path.display(),
            std::io::Error::from_raw_os_error(x)
        ));
    }
}

/// munmap(2) of a range that may hold shared mappings of PLFS files: writes them back, unmaps,
/// and lets go of copies nobody here maps any more. None: not ours, the caller unmaps.
pub fn unmap(addr: *mut libc::c_void, len: usize) -> Option<libc::c_int> {
    if NMAPS.load(Ordering::Relaxed) == 0 || foreign_child() {
        return None;
    }
    let mut reg = MAPS.lock();
    let start = addr as usize;
    let end = start.saturating_add(len);
    if !reg.maps.range(..end).any(|(&a, m)| a + m.len > start) {
        return None;
    }
    for (&a, m) in reg.maps.range(..end).filter(|(&a, m)| a + m.len > start) {
        let (lo, hi) = (a.max(start), (a + m.len).min(end));
        warn_back(
            &m.entry,
            write_back(&reg, m, m.off + (lo - a) as u64, m.off + (hi - a) as u64),
        );
    }
    let r = crate::real!(munmap(addr, len): fn(*mut libc::c_void, usize) -> libc::c_int);
    if r == 0 {
        for (m, _, _) in cut(&mut reg, start, len) {
            release_copy(&mut reg, m.copy);
        }
    }
    Some(r)
}

/// msync(2): writes back the shared mappings of PLFS files in the range. None: none there.
pub fn sync(addr: *mut libc::c_void, len: usize) -> Option<Res<()>> {
    if NMAPS.load(Ordering::Relaxed) == 0 {
        return None;
    }
    let reg = MAPS.lock();
    let start = addr as usize;
    let end = start.saturating_add(len);
    let mut any = false;
    let mut res = Ok(());
    for (&a, m) in reg.maps.range(..end).filter(|(&a, m)| a + m.len > start) {
        any = true;
        let (lo, hi) = (a.max(start), (a + m.len).min(end));
        if let Err(e) = write_back(&reg, m, m.off + (lo - a) as u64, m.off + (hi - a) as u64) {
            res = Err(e);
        }
    }
    any.then_some(res)
}

/// Writes back every shared mapping (of the file behind `only`, if given): the file's last
/// descriptor is being closed, or the process execs or exits.
pub fn write_back_all(only: Option<Key>) {
    if NMAPS.load(Ordering::Relaxed) == 0 {
        return;
    }
    let reg = MAPS.lock();
    for m in reg.maps.values() {
        if only.is_none_or(|k| k == m.entry.key) {
            warn_back(&m.entry, write_back(&reg, m, m.off, m.off + m.len as u64));
        }
    }
}
