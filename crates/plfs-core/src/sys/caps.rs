//! What a backend file system supports, learned once and cached.
//!
//! Every [`super::Dir`] carries its backend's [`Caps`]. A feature starts as "unknown" and is
//! tried; if the backend answers that it lacks it (`EINVAL`, `ENOSYS`, `EOPNOTSUPP`), the cache
//! remembers and the fallback is used from then on, so a backend costs at most one refused call
//! per feature per process. docs/design.md ("Backends") gives each fallback and its races.

use std::sync::atomic::{AtomicU8, Ordering};

const YES: u8 = 1;
const NO: u8 = 2;

/// The cached capabilities of one backend (each 0 = not tried yet, 1 = works, 2 = refused).
#[derive(Debug)]
pub struct Caps {
    noreplace: AtomicU8,
    exchange: AtomicU8,
    fsync_dir: AtomicU8,
    locks: AtomicU8,
    local_clock: AtomicU8,
    direct_reads: AtomicU8,
    /// The backend's `statfs` `f_type` (0: not asked yet; -1: `fstatfs` failed), asked once for
    /// every answer that depends on the kind of file system: on a FUSE backend each `fstatfs`
    /// is a request to its servers (3 brick operations on the GlusterFS volume).
    fs_type: std::sync::atomic::AtomicI64,
}

/// Features `$PLFS_CAPS_DISABLE` (a comma-separated list of `noreplace`, `exchange`,
/// `fsync_dir`, `locks`, `local_clock`) declares missing, so that the fallbacks of a backend lacking them can be tested on
/// any file system.
fn disabled(feature: &str) -> bool {
    static LIST: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    LIST.get_or_init(|| {
        std::env::var("PLFS_CAPS_DISABLE")
            .map(|v| v.split(',').map(|s| s.trim().to_string()).collect())
            .unwrap_or_default()
    })
    .iter()
    .any(|f| f == feature)
}

impl Default for Caps {
    fn default() -> Caps {
        let init = |f: &str| AtomicU8::new(if disabled(f) { NO } else { 0 });
        Caps {
            noreplace: init("noreplace"),
            exchange: init("exchange"),
            fsync_dir: init("fsync_dir"),
            locks: init("locks"),
            local_clock: init("local_clock"),
            direct_reads: AtomicU8::new(0),
            fs_type: std::sync::atomic::AtomicI64::new(0),
        }
    }
}

fn usable(a: &AtomicU8) -> bool {
    a.load(Ordering::Relaxed) != NO
}

fn learn(a: &AtomicU8, yes: bool) -> bool {
    a.store(if yes { YES } else { NO }, Ordering::Relaxed);
    true
}

/// The cached answer of `a`, found by `find` at the first call.
fn learn_once(a: &AtomicU8, find: impl FnOnce() -> bool) -> bool {
    match a.load(Ordering::Relaxed) {
        YES => true,
        NO => false,
        _ => {
            let yes = find();
            learn(a, yes);
            yes
        }
    }
}

impl Caps {
    /// Whether `renameat2(RENAME_NOREPLACE)` should be tried.
    pub fn noreplace(&self) -> bool {
        usable(&self.noreplace)
    }

    /// Whether `renameat2(RENAME_EXCHANGE)` should be tried.
    pub fn exchange(&self) -> bool {
        usable(&self.exchange)
    }

    /// Whether fsync of a directory should be tried.
    pub fn fsync_dir(&self) -> bool {
        usable(&self.fsync_dir)
    }

    /// Whether flock(2) on a directory should be tried.
    pub fn locks(&self) -> bool {
        usable(&self.locks)
    }

    /// Records whether flock(2) on a directory works.
    pub fn learn_locks(&self, yes: bool) -> bool {
        if !yes {
            crate::debug!("backend refuses flock on directories: unlinked files are deleted at once");
        }
        learn(&self.locks, yes)
    }

    /// Records whether `RENAME_NOREPLACE` works (always returns true, for use in match guards).
    pub fn learn_noreplace(&self, yes: bool) -> bool {
        if !yes {
            crate::debug!("backend refuses renameat2(RENAME_NOREPLACE): using the fallback");
        }
        learn(&self.noreplace, yes)
    }

    /// Records whether `RENAME_EXCHANGE` works.
    pub fn learn_exchange(&self, yes: bool) -> bool {
        if !yes {
            crate::debug!("backend refuses renameat2(RENAME_EXCHANGE): using the fallback");
        }
        learn(&self.exchange, yes)
    }

    /// The backend's `statfs` `f_type`, asked of `ask` at the first call (-1 if it fails).
    pub fn fs_type(&self, ask: impl FnOnce() -> Option<i64>) -> i64 {
        match self.fs_type.load(Ordering::Relaxed) {
            0 => {
                let t = ask().filter(|&t| t != 0).unwrap_or(-1);
                self.fs_type.store(t, Ordering::Relaxed);
                t
            }
            t => t,
        }
    }

    /// Whether the backend's timestamps come from this machine's kernel clock (a local file
    /// system): `learn` finds out at the first call.
    pub fn local_clock(&self, learn_it: impl FnOnce() -> bool) -> bool {
        learn_once(&self.local_clock, learn_it)
    }

    /// What [`Caps::local_clock`] has learned, without learning it: `None` before its first call.
    pub fn local_clock_known(&self) -> Option<bool> {
        match self.local_clock.load(Ordering::Relaxed) {
            YES => Some(true),
            NO => Some(false),
            _ => None,
        }
    }

    /// Whether files are opened for reading with `O_DIRECT`, because the backend's page cache
    /// can show a reader zeros where another process has already written (MooseFS,
    /// `super::coherence`): `stale` finds out at the first call.
    pub fn direct_reads(&self, stale: impl FnOnce() -> bool) -> bool {
        learn_once(&self.direct_reads, || {
            let yes = stale();
            if yes {
                crate::debug!("backend's page cache can go stale under other processes' writes: reading with O_DIRECT");
            }
            yes
        })
    }

    /// Records that an `O_DIRECT` open was refused: files are read through the cache.
    pub fn refuse_direct_reads(&self) {
        crate::debug!("backend refuses O_DIRECT: reading through the page cache");
        learn(&self.direct_reads, false);
    }

    /// Records whether fsync of a directory works.
    pub fn learn_fsync_dir(&self, yes: bool) -> bool {
        if !yes {
            crate::debug!("backend refuses fsync of a directory: relying on its own commits");
        }
        learn(&self.fsync_dir, yes)
    }
}
