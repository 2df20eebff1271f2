//! Container locks held for another process image (docs/design.md, "Unlink").
//!
//! A file unlinked while open is deleted by the last process that lets go of its shared flock
//! on the container. A process image that inherits a PLFS descriptor (a forked child, the new
//! image after exec) opens the file only at its first use; until then it would hold no lock and
//! the file could be deleted under it. So the lock goes with the descriptor:
//! - **fork**: the child inherits the description of every lock this process holds (the core's
//!   descriptors, listed in the prepare handler, and those this process holds itself);
//! - **exec** (and posix_spawn, system, popen): each lock of a file whose placeholder survives
//!   exec is dup'd without close-on-exec, numbered from [`FIRST`]; the new image finds it at
//!   initialisation (a directory whose marker has the identity of an adopted placeholder).
//!
//! The image keeps such a descriptor (close-on-exec, invisible to the program's close) until
//! it opens the file itself and so holds a lock of its own ([`take_over`]), or lets go of the
//! file unused: its last placeholder closed, or exit ([`release`]). Letting go of a file that was
//! unlinked meanwhile opens it by identity and closes it, so the last holder deletes it, as a
//! close does.

use crate::fd::conf::{my_pid, plfs, plfs_active};
use crate::rt::real::sys;
use crate::rt::sync::ForkMutex;
use plfs_core::OpenFlags;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A file's identity (`OpenFile::ident`).
pub type Ident = (u64, u64);

/// Lock descriptors handed to another image are numbered from here (like the core's).
pub const FIRST: i32 = 512;

/// A lock this process holds for a file it has not opened itself.
#[derive(Debug, Clone)]
struct Held {
    fd: i32,
    ident: Ident,
    path: PathBuf,
    /// A dup made for an exec (no close-on-exec): if this process still runs, the exec failed.
    for_exec: bool,
}

static HELD: ForkMutex<Vec<Held>> = ForkMutex::new(70, Vec::new());
/// The core's locks, listed before fork for the child.
static PENDING: ForkMutex<Vec<Held>> = ForkMutex::new(71, Vec::new());
/// Length of `HELD` (0: nothing to do, without locking).
static COUNT: AtomicUsize = AtomicUsize::new(0);

fn set_cloexec(fd: i32) {
    let _ = sys::fcntl_int(fd, libc::F_SETFD, libc::FD_CLOEXEC as libc::c_long);
}

/// Locks `HELD`; an exec that returned (it failed) leaves its dups to this process.
fn held() -> std::sync::MutexGuard<'static, Vec<Held>> {
    let mut h = HELD.lock();
    for x in h.iter_mut().filter(|x| x.for_exec) {
        set_cloexec(x.fd);
        x.for_exec = false;
    }
    h
}

fn count(h: &[Held]) {
    COUNT.store(h.len(), Ordering::Relaxed);
}

/// True if `fd` is a lock descriptor held here (the program never opened it).
pub fn contains(fd: i32) -> bool {
    COUNT.load(Ordering::Relaxed) > 0 && HELD.lock().iter().any(|x| x.fd == fd)
}

/// True if any lock is held here.
pub fn any() -> bool {
    COUNT.load(Ordering::Relaxed) > 0
}

/// Descriptors the kernel closed (close_range, closefrom, a dup2 onto one): forgotten.
pub fn forget_range(lo: u32, hi: u32) {
    if !any() {
        return;
    }
    let mut h = HELD.lock();
    h.retain(|x| !(x.fd as u32 >= lo && x.fd as u32 <= hi));
    count(&h);
}

/// Takes the locks held for file `ident` out of the list.
fn take(ident: Ident) -> Vec<Held> {
    let mut h = held();
    let (gone, keep) = std::mem::take(&mut *h).into_iter().partition(|x| x.ident == ident);
    *h = keep;
    count(&h);
    gone
}

/// This process opened the file itself and holds its own lock: the inherited one goes.
pub fn take_over(ident: Ident) {
    if !any() {
        return;
    }
    for x in take(ident) {
        let _ = sys::close(x.fd);
    }
}

/// This process lets go of the file without having opened it: if it was unlinked meanwhile,
/// it is opened by identity (a lock of this process's own), the inherited lock closed, then the
/// file closed, so that the last holder deletes it.
pub fn release(ident: Ident) {
    if !any() {
        return;
    }
    let_go(take(ident));
}

/// [`release`] of every lock held here (exit).
pub fn release_all() {
    if !any() {
        return;
    }
    let gone = {
        let mut h = held();
        let gone = std::mem::take(&mut *h);
        count(&h);
        gone
    };
    let_go(gone);
}

fn let_go(mut gone: Vec<Held>) {
    while let Some(x) = gone.pop() {
        let mut fds = vec![x.fd];
        gone.retain(|y| {
            let same = y.ident == x.ident;
            if same {
                fds.push(y.fd);
            }
            !same
        });
        let f = if trashed(x.fd) {
            let ro = OpenFlags {
                read: true,
                ..Default::default()
            };
            plfs().ok().and_then(|p| p.reopen(&x.path, ro, my_pid(), x.ident).ok())
        } else {
            None
        };
        for fd in fds {
            let _ = sys::close(fd);
        }
        if let Some(f) = f {
            let _ = f.close();
        }
    }
}

/// Whether the container behind `fd` sits under a trash name (it was unlinked or replaced).
fn trashed(fd: i32) -> bool {
    let Ok(link) = rustix::fs::readlinkat(rustix::fs::CWD, format!("/proc/self/fd/{fd}").as_str(), Vec::new()) else {
        return false;
    };
    let b = link.as_bytes();
    let name = b.rsplit(|&c| c == b'/').next().unwrap_or(b);
    plfs_core::is_trash_name(name)
}

/// Before exec or a spawn: a dup, without close-on-exec, of a lock of each file in `files`
/// (those whose placeholders the new image inherits), from the core's locks or those held here.
/// With `keep`, the dups are recorded here (an exec: if it fails, they stay this process's);
/// without, the caller closes them once the child has them (a spawn).
pub fn dup_for_exec(files: &[(Ident, PathBuf)], keep: bool) -> Vec<i32> {
    if files.is_empty() {
        return Vec::new();
    }
    let mut locks: Vec<(i32, Ident)> = Vec::new();
    if plfs_active() {
        if let Ok(p) = plfs() {
            locks.extend(p.container_locks().into_iter().map(|(fd, id, _)| (fd, id)));
        }
    }
    if any() {
        locks.extend(held().iter().map(|x| (x.fd, x.ident)));
    }
    let mut dups = Vec::new();
    let mut made = Vec::new();
    for (ident, path) in files {
        let Some(&(fd, _)) = locks.iter().find(|(_, id)| id == ident) else {
            continue;
        };
        if let Ok(d) = sys::fcntl_int(fd, libc::F_DUPFD, FIRST as libc::c_long) {
            dups.push(d);
            made.push(Held {
                fd: d,
                ident: *ident,
                path: path.clone(),
                for_exec: true,
            });
        }
    }
    if keep && !made.is_empty() {
        let mut h = HELD.lock();
        h.extend(made);
        count(&h);
    }
    dups
}

/// Initialisation of a new image: among the descriptors it inherited (`fds`), those that hold
/// the lock of an adopted placeholder's file (`files`) are kept here, close-on-exec.
pub fn adopt(fds: &[i32], files: &[(Ident, PathBuf)]) {
    if files.is_empty() {
        return;
    }
    let mut found = Vec::new();
    for &fd in fds.iter().filter(|&&fd| fd >= FIRST) {
        let marker = format!("/proc/self/fd/{fd}/{}", plfs_core::MARKER_NAME);
        let Ok(st) = rustix::fs::statat(rustix::fs::CWD, marker.as_str(), rustix::fs::AtFlags::SYMLINK_NOFOLLOW) else {
            continue;
        };
        if let Some((ident, path)) = files.iter().find(|(id, _)| *id == (st.st_dev, st.st_ino)) {
            set_cloexec(fd);
            found.push(Held {
                fd,
                ident: *ident,
                path: path.clone(),
                for_exec: false,
            });
        }
    }
    if !found.is_empty() {
        let mut h = HELD.lock();
        h.extend(found);
        count(&h);
    }
}

/// fork, prepare handler (before the library's locks are taken): lists the core's locks for
/// the child, and registers both lists with the fork handlers.
pub fn before_fork() {
    let mine: Vec<Held> = if plfs_active() {
        plfs()
            .map(|p| {
                p.container_locks()
                    .into_iter()
                    .map(|(fd, ident, path)| Held {
                        fd,
                        ident,
                        path,
                        for_exec: false,
                    })
                    .collect()
            })
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    *PENDING.lock() = mine;
    drop(held());
}

/// fork, parent handler (the fork handlers hold the locks).
pub fn in_parent() {
    PENDING.with_held(|p| p.clear());
}

/// fork, child handler (the fork handlers hold the locks): the parent's core locks are the
/// child's to hold until it opens those files itself.
pub fn in_child() {
    PENDING.with_held(|p| {
        let mine = std::mem::take(p);
        HELD.with_held(|h| {
            h.extend(mine);
            count(h);
        });
    });
}
