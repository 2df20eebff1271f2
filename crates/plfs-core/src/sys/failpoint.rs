//! Fault injection: named failpoints in the backend layer ([`crate::sys`]) that make a chosen call
//! fail with a chosen errno, or kill the process, after a chosen number of passes.
//!
//! Always compiled in. When no failpoint is configured, [`hit`] costs one relaxed atomic load (the
//! table is only consulted once [`set`] or `$PLFS_FAILPOINTS` armed it), so production builds keep
//! the hooks. Points are named `module::function`: `sys::pwrite_all`, `sys::fsync`, `sys::create`
//! (an open with `O_CREAT`), `sys::mkdir`, `sys::rename`, `sys::unlink`, `sys::ftruncate`,
//! `sys::close` (the close is made, then reports the errno, as a network file system's close
//! reports a write that failed after it returned: [`super::File::close`]), and
//! `sys::openat2`, whose errno stands for the kernel's answer to `openat2` (see [`answer`]), and
//! `sys::stale_size`, which stands for a size that lags behind a file's bytes (see
//! [`stale_size`]), and `sys::partial_listing`, which leaves an entry out of a listing (see
//! [`left_out`]).
//!
//! Configuration, in-process ([`set`], [`Spec`]) or through the environment for processes that
//! cannot be driven through the API (ldplfs, FUSE, the CLI), read at the first hit:
//!
//! ```text
//! PLFS_FAILPOINTS="sys::pwrite_all=ENOSPC@3,sys::fsync=EIO@0*1,sys::pwrite_all[index.]=kill@10"
//! ```
//!
//! `NAME[FILTER]=ACTION[@AFTER][*TIMES]`: `ACTION` is an errno name (`ENOSPC`, `EIO`, `EACCES`,
//! `EDQUOT`, `EROFS`, `EPERM`, `ENOENT`, `EEXIST`), `kill` (SIGKILL to the calling process, a
//! crash at exactly that call) or `stop` (SIGSTOP to it: the call is made once it is continued); the first `AFTER` hits pass (default 0); then `TIMES` hits fire
//! (default: every later hit); `FILTER` restricts the point to paths containing that text.

use crate::error::{Error, Result};
use rustix::io::Errno;
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Mutex, MutexGuard};

/// What a failpoint does when it fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// The call fails with this errno (nothing is done).
    Errno(Errno),
    /// The process is killed with SIGKILL before the call is made.
    Kill,
    /// The process stops itself with SIGSTOP before the call is made, and makes the call once
    /// it is continued (SIGCONT): a process caught in the middle of an operation, alive.
    Stop,
}

/// One armed failpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    /// Point name, e.g. `sys::pwrite_all`.
    pub name: String,
    /// Only paths containing this text match (empty: every path).
    pub filter: String,
    /// What happens when it fires.
    pub action: Action,
    /// Matching hits that pass before it fires.
    pub after: u64,
    /// How many times it fires (`None`: every matching hit after `after`).
    pub times: Option<u64>,
}

#[derive(Debug)]
struct Armed {
    spec: Spec,
    seen: u64,
    fired: u64,
}

/// 0 = the environment was not read yet, 1 = nothing armed, 2 = something armed.
static STATE: AtomicU8 = AtomicU8::new(0);
static TABLE: Mutex<Vec<Armed>> = Mutex::new(Vec::new());
static INJECTED: AtomicU64 = AtomicU64::new(0);

fn table() -> MutexGuard<'static, Vec<Armed>> {
    TABLE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Called at the top of every hooked backend call. `Ok(())` unless an armed point fires; the
/// error names `path` and `op` exactly like the real call's error would.
#[inline]
pub fn hit(name: &'static str, op: &'static str, path: &Path) -> Result<()> {
    match STATE.load(Ordering::Relaxed) {
        1 => Ok(()),
        0 => {
            init_from_env();
            hit(name, op, path)
        }
        _ => hit_slow(name, op, path),
    }
}

/// Whether a failpoint may be armed: callers that build a path only for [`hit`] skip it when
/// not (true until the environment was read).
#[inline]
pub fn armed() -> bool {
    STATE.load(Ordering::Relaxed) != 1
}

/// For a point that stands for a kernel's answer rather than a failed call (`sys::openat2`):
/// the errno an armed point injects, so that the caller handles it as if the kernel gave it.
#[inline]
pub fn answer(name: &'static str, path: &Path) -> Option<Errno> {
    hit(name, "", path)
        .err()
        .map(|e| Errno::from_raw_os_error(e.raw_errno()))
}

/// For `sys::stale_size`, a point that stands for the size a file system reports rather than a
/// failed call: whether the size of `path` that a stat (`Dir::stat`, `Dir::open_file_sized`)
/// just gave is to be taken as 0. A network file system's cached attributes can lag behind the
/// bytes a read returns; tests arm this point (with any errno) to hold readers and fsck to not
/// trusting a size.
#[inline]
pub fn stale_size(path: &Path) -> bool {
    armed() && hit("sys::stale_size", "", path).is_err()
}

/// For `sys::partial_listing`, a point that stands for a listing a distributed file system
/// returns without some of its entries (GlusterFS leaves out the part of a server that cannot
/// resolve the directory for a moment, as while it renames it): whether the entry `path` (the
/// listed directory joined with the entry's name, which `FILTER` matches) is left out of the
/// listing being read. Each entry that matches counts as one hit.
#[inline]
pub fn left_out(path: &Path) -> bool {
    armed() && hit("sys::partial_listing", "", path).is_err()
}

#[cold]
fn hit_slow(name: &str, op: &'static str, path: &Path) -> Result<()> {
    let action = {
        let mut t = table();
        let mut fire = None;
        for a in t.iter_mut() {
            if a.spec.name != name {
                continue;
            }
            if !a.spec.filter.is_empty() && !path.to_string_lossy().contains(a.spec.filter.as_str()) {
                continue;
            }
            a.seen += 1;
            if a.seen > a.spec.after && a.spec.times.is_none_or(|n| a.fired < n) {
                a.fired += 1;
                fire = Some(a.spec.action);
                break;
            }
        }
        fire
    };
    match action {
        None => Ok(()),
        Some(Action::Errno(e)) => {
            INJECTED.fetch_add(1, Ordering::Relaxed);
            Err(Error::io(path, op, e))
        }
        Some(Action::Kill) => {
            let _ = rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::KILL);
            // SIGKILL cannot be caught; this is only reached if the kernel refused it.
            std::process::abort()
        }
        Some(Action::Stop) => {
            let _ = rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::STOP);
            // The stop is made by whichever thread takes the signal, and reaches this one a
            // moment later (a creator went on to make its marker first): it stops in here.
            std::thread::sleep(std::time::Duration::from_millis(50));
            Ok(())
        }
    }
}

fn init_from_env() {
    let mut t = table();
    if STATE.load(Ordering::Acquire) != 0 {
        return;
    }
    if let Ok(text) = std::env::var("PLFS_FAILPOINTS") {
        match parse(&text) {
            Ok(specs) => t.extend(specs.into_iter().map(|spec| Armed {
                spec,
                seen: 0,
                fired: 0,
            })),
            Err(e) => crate::warn!("PLFS_FAILPOINTS: {e}; ignored"),
        }
    }
    STATE.store(if t.is_empty() { 1 } else { 2 }, Ordering::Release);
}

/// Arms a failpoint (in addition to any already armed; the first matching one fires).
pub fn set(spec: Spec) {
    let mut t = table();
    if STATE.load(Ordering::Acquire) == 0 {
        drop(t);
        init_from_env();
        t = table();
    }
    t.push(Armed {
        spec,
        seen: 0,
        fired: 0,
    });
    STATE.store(2, Ordering::Release);
}

/// Shorthand: `name` fails with `errno` on every hit after the first `after` ones.
pub fn fail(name: &str, errno: Errno, after: u64) {
    set(Spec {
        name: name.to_string(),
        filter: String::new(),
        action: Action::Errno(errno),
        after,
        times: None,
    });
}

/// Disarms every failpoint.
pub fn clear() {
    let mut t = table();
    t.clear();
    STATE.store(1, Ordering::Release);
}

/// Disarms the points named `name` armed with exactly this `filter`, and no other: a test running
/// beside others in one process takes back its own (a [`clear`] there disarmed theirs too).
pub fn clear_for(name: &str, filter: &str) {
    let mut t = table();
    t.retain(|a| !(a.spec.name == name && a.spec.filter == filter));
    if t.is_empty() {
        STATE.store(1, Ordering::Release);
    }
}

/// Matching hits counted so far by each armed point named `name` (summed), whether it fired or
/// not. Arm a point with a huge `after` to count the calls a workload makes.
pub fn hits(name: &str) -> u64 {
    table().iter().filter(|a| a.spec.name == name).map(|a| a.seen).sum()
}

/// Like [`hits`], counting only the points armed with exactly this `filter` (tests running side
/// by side in one process each count their own).
pub fn hits_for(name: &str, filter: &str) -> u64 {
    table()
        .iter()
        .filter(|a| a.spec.name == name && a.spec.filter == filter)
        .map(|a| a.seen)
        .sum()
}

/// Errors injected by this process since it started.
pub fn injected() -> u64 {
    INJECTED.load(Ordering::Relaxed)
}

/// Parses the `$PLFS_FAILPOINTS` syntax (see the module documentation).
pub fn parse(text: &str) -> std::result::Result<Vec<Spec>, String> {
    let mut out = Vec::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (lhs, rhs) = item
            .split_once('=')
            .ok_or_else(|| format!("{item:?}: expected NAME=ACTION"))?;
        let (name, filter) = match lhs.split_once('[') {
            Some((n, f)) => (
                n,
                f.strip_suffix(']')
                    .ok_or_else(|| format!("{item:?}: unclosed [ in the point name"))?,
            ),
            None => (lhs, ""),
        };
        if name.is_empty() {
            return Err(format!("{item:?}: empty point name"));
        }
        let (rest, times) = match rhs.split_once('*') {
            Some((r, n)) => (r, Some(n.parse().map_err(|e| format!("{item:?}: bad *TIMES: {e}"))?)),
            None => (rhs, None),
        };
        let (act, after) = match rest.split_once('@') {
            Some((a, n)) => (a, n.parse().map_err(|e| format!("{item:?}: bad @AFTER: {e}"))?),
            None => (rest, 0),
        };
        let action = if act.eq_ignore_ascii_case("kill") {
            Action::Kill
        } else if act.eq_ignore_ascii_case("stop") {
            Action::Stop
        } else {
            Action::Errno(errno_by_name(act).ok_or_else(|| format!("{item:?}: unknown action {act:?}"))?)
        };
        out.push(Spec {
            name: name.to_string(),
            filter: filter.to_string(),
            action,
            after,
            times,
        });
    }
    Ok(out)
}

/// The errno of a symbolic name (`ENOSPC`...), for the errnos a storage layer meets.
pub fn errno_by_name(name: &str) -> Option<Errno> {
    Some(match name.to_ascii_uppercase().as_str() {
        "ENOSPC" => Errno::NOSPC,
        "EIO" => Errno::IO,
        "EACCES" => Errno::ACCESS,
        "EDQUOT" => Errno::DQUOT,
        "EROFS" => Errno::ROFS,
        "EPERM" => Errno::PERM,
        "ENOENT" => Errno::NOENT,
        "EEXIST" => Errno::EXIST,
        "EINTR" => Errno::INTR,
        "EXDEV" => Errno::XDEV,
        "EAGAIN" => Errno::AGAIN,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_syntax() {
        let v = parse("sys::pwrite_all=ENOSPC@3, sys::fsync=eio*1,sys::pwrite_all[index.]=kill@10*2").unwrap();
        assert_eq!(v.len(), 3);
        assert_eq!(v[0].action, Action::Errno(Errno::NOSPC));
        assert_eq!((v[0].after, v[0].times), (3, None));
        assert_eq!((v[1].after, v[1].times), (0, Some(1)));
        assert_eq!(v[2].filter, "index.");
        assert_eq!(v[2].action, Action::Kill);
        assert_eq!((v[2].after, v[2].times), (10, Some(2)));
        assert_eq!(parse("sys::create=stop@1").unwrap()[0].action, Action::Stop);
        assert!(parse("x").is_err());
        assert!(parse("x=EWHAT").is_err());
        assert!(parse("x=EIO@z").is_err());
        assert!(parse("x[abc=EIO").is_err());
        assert_eq!(parse(" ,").unwrap(), Vec::new());
    }
}
