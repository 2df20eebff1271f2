//! Who the daemon acts as. A root daemon serves every user (`allow_other`); so that the kernel
//! checks every backend access as the user it is made for, each request thread switches its
//! file-system identity (`setfsuid`, `setfsgid`, and the supplementary groups) to the caller's
//! before calling the core, as the original PLFS FUSE daemon did. The crate README
//! ("Permissions") says which requests run as whom.
//!
//! Invariants:
//! - Switching is per thread: the raw `setfsuid`, `setfsgid` and `setgroups` system calls change
//!   only the calling thread's credentials (glibc's `setgroups` would change every thread's).
//!   Threads the core spawns for a request (index loading) inherit them.
//! - A thread keeps the identity it last switched to ([`act_as`] does nothing when it already
//!   has it), so a run of requests from one user costs no system call; the daemon's own identity
//!   ([`Ident::daemon`]) is restored by switching to it like to any other.
//! - Supplementary groups are the calling thread's own, read from `/proc/<pid>/status` (only if
//!   its file-system ids still match the request's, so a recycled pid gets no groups), cached for
//!   [`GROUPS_TTL`]. A caller whose groups cannot be read gets none: never more than it has.
//! - Switching is enabled only when the daemon runs as root ([`enable`]); otherwise every
//!   request runs as the daemon's user, the only one the mount admits.

use fuser::Errno;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How long a process's supplementary groups are cached (a process that changes its groups is
/// served with the new ones at most this much later).
pub const GROUPS_TTL: Duration = Duration::from_secs(1);
/// Cached group lists beyond this many are dropped all at once.
const GROUPS_CACHE_MAX: usize = 4096;

/// A file-system identity: user, group and supplementary groups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ident {
    /// File-system user id.
    pub uid: u32,
    /// File-system group id.
    pub gid: u32,
    /// Supplementary groups.
    pub groups: Arc<[u32]>,
}

impl Ident {
    /// The daemon's own identity (as it started).
    pub fn daemon() -> Ident {
        static OWN: OnceLock<Ident> = OnceLock::new();
        OWN.get_or_init(|| {
            // SAFETY: getgroups with a null buffer and size 0 only returns the count; the second
            // call writes at most `n` ids into a buffer of that size. geteuid/getegid cannot fail.
            unsafe {
                let n = libc::getgroups(0, std::ptr::null_mut()).max(0);
                let mut g = vec![0 as libc::gid_t; n as usize];
                let got = libc::getgroups(n, g.as_mut_ptr()).max(0) as usize;
                g.truncate(got);
                Ident {
                    uid: libc::geteuid(),
                    gid: libc::getegid(),
                    groups: g.into(),
                }
            }
        })
        .clone()
    }

    /// Root with group `gid` and no supplementary groups (a root caller: it needs none); the
    /// daemon's own identity if that has the same group (then no switch is needed for it).
    pub fn root(gid: u32) -> Ident {
        let own = Ident::daemon();
        if own.uid == 0 && own.gid == gid {
            return own;
        }
        Ident {
            uid: 0,
            gid,
            groups: Arc::from([]),
        }
    }

    /// True if it is a member of group `g`.
    pub fn in_group(&self, g: u32) -> bool {
        self.gid == g || self.groups.contains(&g)
    }

    /// Whether the mode bits `mode` of an object owned by `uid`:`gid` grant it every access in
    /// `want` (R=4, W=2, X=1), as the kernel's `generic_permission` decides without ACLs: root may
    /// do anything but execute a file nobody may execute.
    pub fn may(&self, mode: u32, uid: u32, gid: u32, want: u32) -> bool {
        if self.uid == 0 {
            let is_dir = mode & libc::S_IFMT == libc::S_IFDIR;
            return want & 1 == 0 || is_dir || mode & 0o111 != 0;
        }
        let bits = if self.uid == uid {
            mode >> 6
        } else if self.in_group(gid) {
            mode >> 3
        } else {
            mode
        } & 7;
        bits & want == want
    }
}

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Turns identity switching on (the daemon runs as root) and records the daemon's identity.
pub fn enable() {
    let own = Ident::daemon();
    ENABLED.store(own.uid == 0, Ordering::Relaxed);
}

/// True if requests run with their callers' identities.
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

thread_local! {
    /// The identity this thread has switched to; `None`: the daemon's own.
    static CURRENT: RefCell<Option<Ident>> = const { RefCell::new(None) };
}

fn sys_setfsuid(uid: u32) -> u32 {
    // SAFETY: setfsuid takes an id and only changes this thread's credentials; it returns the
    // previous fsuid (passing -1, an invalid id, changes nothing and returns the current one).
    unsafe { libc::syscall(libc::SYS_setfsuid, uid as libc::c_long) as u32 }
}

fn sys_setfsgid(gid: u32) -> u32 {
    // SAFETY: as for setfsuid.
    unsafe { libc::syscall(libc::SYS_setfsgid, gid as libc::c_long) as u32 }
}

fn sys_setgroups(groups: &[u32]) -> bool {
    // SAFETY: the raw system call (per thread, unlike glibc's wrapper, which changes every
    // thread) reads `groups.len()` ids from a live slice.
    unsafe {
        libc::syscall(
            libc::SYS_setgroups,
            groups.len() as libc::c_long,
            groups.as_ptr() as libc::c_long,
        ) == 0
    }
}

/// Switches this thread to `id` (if it does not have it already). Fails (EPERM) if the kernel
/// refused, in which case the thread is back to the daemon's own identity.
pub fn act_as(id: &Ident) -> Result<(), Errno> {
    if !enabled() {
        return Ok(());
    }
    CURRENT.with_borrow_mut(|cur| {
        let own = Ident::daemon();
        let have = cur.as_ref().unwrap_or(&own);
        if have == id {
            return Ok(());
        }
        // Groups and group first: changing the fsuid away from 0 drops the file-system
        // capabilities, not CAP_SETGID, but this order never depends on that.
        let ok = sys_setgroups(&id.groups)
            && {
                sys_setfsgid(id.gid);
                sys_setfsgid(u32::MAX) == id.gid
            }
            && {
                sys_setfsuid(id.uid);
                sys_setfsuid(u32::MAX) == id.uid
            };
        if ok {
            *cur = (*id != own).then(|| id.clone());
            return Ok(());
        }
        // Back to a known state.
        sys_setgroups(&own.groups);
        sys_setfsgid(own.gid);
        sys_setfsuid(own.uid);
        *cur = None;
        plfs_core::warn!("fuse: cannot act as uid {} gid {}: request refused", id.uid, id.gid);
        Err(Errno::EPERM)
    })
}

/// Switches this thread back to the daemon's own identity.
pub fn act_as_daemon() -> Result<(), Errno> {
    act_as(&Ident::daemon())
}

/// (pid, uid, gid) of a request.
type Caller = (u32, u32, u32);
/// Groups of a caller, and when they were read.
type Cached = (Arc<[u32]>, Instant);

/// The supplementary groups of calling processes, cached for [`GROUPS_TTL`].
#[derive(Debug, Default)]
pub struct Groups {
    cache: Mutex<HashMap<Caller, Cached>>,
}

impl Groups {
    /// The identity of a request from thread `pid` with file-system ids `uid`:`gid`.
    pub fn ident(&self, pid: u32, uid: u32, gid: u32) -> Ident {
        if uid == 0 {
            return Ident::root(gid);
        }
        let key = (pid, uid, gid);
        let now = Instant::now();
        let mut c = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((g, at)) = c.get(&key) {
            if now.duration_since(*at) < GROUPS_TTL {
                return Ident {
                    uid,
                    gid,
                    groups: g.clone(),
                };
            }
        }
        drop(c);
        let groups: Arc<[u32]> = proc_groups(pid, uid, gid).unwrap_or_default().into();
        c = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if c.len() >= GROUPS_CACHE_MAX {
            c.clear();
        }
        c.insert(key, (groups.clone(), now));
        Ident { uid, gid, groups }
    }
}

/// The supplementary groups of thread `pid` if its file-system ids are `uid`:`gid`.
fn proc_groups(pid: u32, uid: u32, gid: u32) -> Option<Vec<u32>> {
    if pid == 0 {
        return None;
    }
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    parse_status(&text, uid, gid)
}

/// The `Groups:` of a `/proc/<pid>/status` text whose fourth (file-system) `Uid:` and `Gid:`
/// fields are `uid` and `gid`.
fn parse_status(text: &str, uid: u32, gid: u32) -> Option<Vec<u32>> {
    let field = |name: &str| text.lines().find_map(|l| l.strip_prefix(name));
    let fs_id = |name: &str| field(name)?.split_whitespace().nth(3)?.parse::<u32>().ok();
    if fs_id("Uid:")? != uid || fs_id("Gid:")? != gid {
        return None;
    }
    field("Groups:")?.split_whitespace().map(|g| g.parse().ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const STATUS: &str = "Name:\tcat\nUmask:\t0022\nState:\tR (running)\nTgid:\t7\nUid:\t1000\t1000\t1000\t1001\nGid:\t100\t100\t100\t101\nFDSize:\t64\nGroups:\t4 24 27 \n";

    #[test]
    fn groups_come_from_status_only_when_the_fs_ids_match() {
        assert_eq!(parse_status(STATUS, 1001, 101), Some(vec![4, 24, 27]));
        assert_eq!(parse_status(STATUS, 1000, 101), None, "the fs uid is the fourth field");
        assert_eq!(parse_status(STATUS, 1001, 100), None);
        let none = STATUS.replace("Groups:\t4 24 27 ", "Groups:\t");
        assert_eq!(parse_status(&none, 1001, 101), Some(vec![]));
        assert_eq!(parse_status("garbage", 1, 1), None);
    }

    #[test]
    fn this_process_has_its_groups_read() {
        // SAFETY: no preconditions.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        let pid = std::process::id();
        let g = proc_groups(pid, uid, gid).expect("our own status");
        assert_eq!(g.len(), Ident::daemon().groups.len());
        assert!(proc_groups(pid, uid.wrapping_add(1), gid).is_none());
    }

    #[test]
    fn permission_bits_follow_owner_group_other() {
        let u = Ident {
            uid: 5,
            gid: 6,
            groups: Arc::from([7u32]),
        };
        let f = libc::S_IFREG;
        assert!(u.may(f | 0o600, 5, 0, 6));
        assert!(!u.may(f | 0o060, 5, 6, 4), "the owner class decides for the owner");
        assert!(u.may(f | 0o040, 1, 7, 4), "a supplementary group counts");
        assert!(u.may(f | 0o040, 1, 6, 4), "the primary group counts");
        assert!(!u.may(f | 0o604, 1, 7, 4), "the group class decides for a member");
        assert!(u.may(f | 0o004, 1, 2, 4));
        assert!(!u.may(f | 0o004, 1, 2, 2));
        let root = Ident::root(0);
        assert!(root.may(f, 1, 1, 6));
        assert!(!root.may(f | 0o644, 1, 1, 1), "root executes only executable files");
        assert!(root.may(libc::S_IFDIR, 1, 1, 1));
    }
}
