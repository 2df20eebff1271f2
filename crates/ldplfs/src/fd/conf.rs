//! The configuration, this process's PLFS instance and its pid as the library sees it.

use crate::rt::errno::{Errno, Res};
use crate::rt::real::sys;
use plfs_core::{Config, Plfs};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, Ordering};
use std::sync::OnceLock;

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
    /// Set when the plfsrc could not be loaded but the mount points it names could be read
    /// (`Config::load_or_mount_points`): paths under them are still PLFS paths, and every call on
    /// one fails with EIO, so that nothing is written into the real directories at the mount
    /// points' paths, where no plfs tool would look. The message was printed once, at load.
    pub unusable: bool,
}

static CONF: OnceLock<Option<Conf>> = OnceLock::new();
static PLFS: AtomicPtr<Plfs> = AtomicPtr::new(std::ptr::null_mut());
static PLFS_FAILED: AtomicBool = AtomicBool::new(false);
static MY_PID: AtomicU32 = AtomicU32::new(0);

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

/// True when the library serves PLFS paths (a usable configuration was loaded). Interposers
/// call it after `file::init::enter`, which initialised the library.
pub fn enabled() -> bool {
    conf().is_some()
}

fn load_conf() -> Option<Conf> {
    match Config::load_or_mount_points() {
        Ok(cfg) => Some(conf_of(cfg, false)),
        Err(u) if !u.mount_points.is_empty() => {
            let list: Vec<String> = u.mount_points.iter().map(|m| m.display().to_string()).collect();
            crate::rt::log::always(format_args!(
                "cannot use the plfsrc {}: {}; every call under {} fails with EIO until it is fixed \
                 (paths elsewhere pass through to libc)",
                u.file.as_deref().unwrap_or(std::path::Path::new("?")).display(),
                u.error,
                list.join(", ")
            ));
            let mut cfg = Config::zero_config();
            cfg.files = u.file.into_iter().collect();
            cfg.mounts.clear();
            let mut c = conf_of(cfg, true);
            c.mounts = u
                .mount_points
                .iter()
                .map(|m| m.as_os_str().as_encoded_bytes().to_vec())
                .collect();
            c.mount_names = names_of(&c.mounts);
            Some(c)
        }
        Err(u) => {
            crate::rt::log::always(format_args!(
                "PLFS disabled, every call passes through to libc: {}",
                u.error
            ));
            None
        }
    }
}

/// Every component of the mount points, sorted, each once.
fn names_of(mounts: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut names: Vec<Vec<u8>> = mounts
        .iter()
        .flat_map(|m| m.split(|&b| b == b'/').filter(|c| !c.is_empty()).map(<[u8]>::to_vec))
        .collect();
    names.sort();
    names.dedup();
    names
}

fn conf_of(cfg: Config, unusable: bool) -> Conf {
    let mounts: Vec<Vec<u8>> = cfg
        .mounts
        .iter()
        .map(|m| m.mount_point.as_os_str().as_encoded_bytes().to_vec())
        .collect();
    let mount_names = names_of(&mounts);
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
    Conf {
        cfg,
        mounts,
        mount_names,
        backends,
        roots,
        unusable,
    }
}

/// The configuration, when it can serve PLFS paths: EIO under the mount points of a plfsrc that
/// cannot be loaded (see [`Conf::unusable`]), ENOSYS when the library is disabled.
fn usable() -> Res<&'static Conf> {
    match conf() {
        Some(c) if c.unusable => Err(Errno(libc::EIO)),
        Some(c) => Ok(c),
        None => Err(Errno(libc::ENOSYS)),
    }
}

/// The PLFS instance of this process, built at first need (and again in a forked child).
pub fn plfs() -> Res<&'static Plfs> {
    let p = PLFS.load(Ordering::Acquire);
    if !p.is_null() {
        // SAFETY: instances are leaked, never freed: the pointer stays valid for the process.
        return Ok(unsafe { &*p });
    }
    let c = usable()?;
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
                crate::rt::log::always(format_args!("cannot use PLFS: {e}"));
            }
            Err(Errno::from(e))
        }
    }
}

/// A PLFS instance of its own for one task of a child that shares its parent's memory (a vfork
/// child, whose program may have closed every descriptor, the instance's included, and whose
/// parent's instance may be locked by another of the parent's threads): leaked like the others,
/// never installed.
pub fn private_plfs() -> Res<&'static Plfs> {
    let c = usable()?;
    let inst = Plfs::new(c.cfg.clone()).map_err(Errno::from)?;
    Ok(Box::leak(Box::new(inst)))
}

/// True once this process built its PLFS instance (so the core may hold descriptors).
pub fn plfs_active() -> bool {
    !PLFS.load(Ordering::Relaxed).is_null()
}

/// A forked child: the parent's instance may hold locks of threads that do not exist here, so
/// the child builds its own at first need (the parent's is never freed).
pub fn forget_instance() {
    PLFS.store(std::ptr::null_mut(), Ordering::Release);
}

/// This process's id as seen by the library (set at initialisation, updated in a forked child).
pub fn my_pid() -> u32 {
    MY_PID.load(Ordering::Relaxed)
}

/// Records the pid of this process (initialisation, a forked child).
pub fn set_pid() {
    MY_PID.store(sys::getpid(), Ordering::Relaxed);
}

/// True in a vfork/clone child that shares our memory: it must not change the parent's state.
pub fn foreign_child() -> bool {
    sys::getpid() != my_pid()
}
