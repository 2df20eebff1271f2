//! plfs-fuse: a FUSE daemon serving one plfsrc mount point through the kernel, so unmodified
//! programs (cp, dd, python, MPI codes without MPI-IO) use PLFS through a real mount.
//!
//! Layers, each using only those before it: [`attr`] (conversions, errnos), [`inodes`] (FUSE
//! inode numbers <-> logical paths), [`ident`] (whose identity a request thread acts with),
//! `state` (the open files and the operations, each run with the right identity), [`handlers`]
//! (`fuser::Filesystem` on top of the state), [`daemon`] (mount, run, daemonize, unmount;
//! [`mountinfo`] reads the mount table). Each process that writes through the mount is its own
//! PLFS writer (the request's pid names the writer), so N processes writing one file produce N
//! data logs, as in PLFS.
//!
//! Entry points for front ends: [`mount`] (blocking, foreground), [`spawn_background`] (re-execs
//! the current executable in the foreground mode and returns once the mount is live),
//! [`umount`] and [`is_mounted`].

pub mod attr;
pub mod daemon;
pub mod handlers;
pub mod ident;
pub mod inodes;
pub mod mountinfo;
mod state;

pub use daemon::{mount, spawn_background, umount};
pub use mountinfo::is_mounted;

use std::ffi::OsString;
use std::path::PathBuf;

/// Errors of the FUSE front end. Each names the mount point or file concerned.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An error from the PLFS core (configuration, backend I/O...).
    #[error(transparent)]
    Core(#[from] plfs_core::Error),
    /// A system call or helper program failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done, naming the path.
        what: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// Anything else (bad arguments, mount point already in use, daemon failed to start...).
    #[error("{0}")]
    Other(String),
}

impl Error {
    pub(crate) fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            what: what.into(),
            source,
        }
    }
}

/// Default number of threads serving kernel requests.
pub const DEFAULT_THREADS: usize = 8;

/// How to mount.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MountOptions {
    /// The directory to mount on.
    pub mountpoint: PathBuf,
    /// The plfsrc to use (default: `$PLFSRC`, `~/.plfsrc`, `/etc/plfsrc`, zero-config).
    pub config: Option<PathBuf>,
    /// Threads serving requests (default [`DEFAULT_THREADS`]).
    pub threads: Option<usize>,
    /// Let every user use the mount (the kernel still checks permissions: `default_permissions`).
    /// Default: true when the daemon runs as root, false otherwise.
    pub allow_other: Option<bool>,
    /// Let the kernel check permissions against the mode bits (`default_permissions`, the
    /// default). Without it the daemon checks opens itself and every request runs as its caller
    /// (README, "Permissions").
    pub default_permissions: Option<bool>,
    /// Read-only opens bypass the page cache too (writable ones always do): faster large reads,
    /// slower small ones (README, "Behaviour"). Default: false.
    pub direct_io: Option<bool>,
}

impl MountOptions {
    /// Options for `mountpoint` with every other setting at its default.
    pub fn new(mountpoint: impl Into<PathBuf>) -> Self {
        MountOptions {
            mountpoint: mountpoint.into(),
            ..Default::default()
        }
    }

    /// The same options with every path made absolute (relative to the current directory).
    pub fn absolute(&self) -> Result<MountOptions, Error> {
        let cwd = std::env::current_dir().map_err(|e| Error::io("current directory", e))?;
        let abs = |p: &PathBuf| -> PathBuf {
            let p = if p.is_absolute() { p.clone() } else { cwd.join(p) };
            plfs_core::config::normalize_path(&p).unwrap_or(p)
        };
        Ok(MountOptions {
            mountpoint: abs(&self.mountpoint),
            config: self.config.as_ref().map(abs),
            ..self.clone()
        })
    }

    /// Command-line arguments that reproduce these options in foreground mode:
    /// `MOUNTPOINT [--config FILE] [--threads N] [--allow-other|--no-allow-other]
    /// [--no-default-permissions] [--direct-io] --foreground`.
    /// Paths are made absolute. Front ends that daemonize with [`spawn_background`] must accept
    /// these arguments after their own prefix (e.g. `plfs mount`).
    pub fn foreground_args(&self) -> Result<Vec<OsString>, Error> {
        let o = self.absolute()?;
        let mut a: Vec<OsString> = vec![o.mountpoint.into_os_string()];
        if let Some(c) = o.config {
            a.push("--config".into());
            a.push(c.into_os_string());
        }
        if let Some(t) = o.threads {
            a.push("--threads".into());
            a.push(t.to_string().into());
        }
        match o.allow_other {
            Some(true) => a.push("--allow-other".into()),
            Some(false) => a.push("--no-allow-other".into()),
            None => {}
        }
        if o.default_permissions == Some(false) {
            a.push("--no-default-permissions".into());
        }
        if o.direct_io == Some(true) {
            a.push("--direct-io".into());
        }
        a.push("--foreground".into());
        Ok(a)
    }
}
