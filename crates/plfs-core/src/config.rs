//! plfsrc configuration: the original PLFS 2.5 YAML syntax (a list of `- global_params:`,
//! `- include:` and `- mount_point:` entries) plus our documented keys, and the zero-config default.
//! See the "Configuration" section of README.md for the reference.

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// Which workload a mount point serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// N-1: many processes write one shared file (`shared_file`, `n-1`).
    SharedFile,
}

/// The role of a backend in a mount point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendRole {
    /// No `type:` given: both canonical and shadow.
    Both,
    /// `type: canonical`: holds containers (markers, meta, and the logs of writers whose shadow it is).
    Canonical,
    /// `type: shadow`: holds only writers' logs (the burst-buffer use).
    Shadow,
}

/// One `- location:` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendSpec {
    /// Absolute directory (a `posix://` prefix is stripped).
    pub location: PathBuf,
    /// Its role.
    pub role: BackendRole,
}

/// One `- mount_point:` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountConfig {
    /// Absolute, normalised logical mount point.
    pub mount_point: PathBuf,
    /// Workload.
    pub workload: Workload,
    /// Backends in file order.
    pub backends: Vec<BackendSpec>,
}

impl MountConfig {
    /// Backends that hold containers (role Both or Canonical), in file order.
    pub fn canonical(&self) -> Vec<&Path> {
        self.backends.iter().filter(|b| b.role != BackendRole::Shadow).map(|b| b.location.as_path()).collect()
    }
    /// Backends that hold writers' logs (role Both or Shadow), in file order.
    pub fn shadows(&self) -> Vec<&Path> {
        self.backends.iter().filter(|b| b.role != BackendRole::Canonical).map(|b| b.location.as_path()).collect()
    }
}

/// `- global_params:` values, with their defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobalParams {
    /// `num_hostdirs` (default 32, 1..=1024).
    pub num_hostdirs: u32,
    /// `threadpool_size` (default 8, 1..=1024): threads for merging index logs.
    pub threadpool_size: u32,
    /// `index_buffer_records` (ours; default 1024, 1..=16M): index records a writer buffers before
    /// appending them to its index log. Also flushed on sync and close.
    pub index_buffer_records: u32,
    /// `data_checksums` (ours; default false): store a crc32c of each write's data in its record.
    pub data_checksums: bool,
    /// `max_open_data_logs` (ours; default 256): data-log descriptors a reader keeps open.
    pub max_open_data_logs: u32,
}

impl Default for GlobalParams {
    fn default() -> Self {
        GlobalParams {
            num_hostdirs: 32,
            threadpool_size: 8,
            index_buffer_records: 1024,
            data_checksums: false,
            max_open_data_logs: 256,
        }
    }
}

/// A loaded configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The files read, top-level first (empty for the zero-config default).
    pub files: Vec<PathBuf>,
    /// Global parameters.
    pub global: GlobalParams,
    /// Mount points, in file order.
    pub mounts: Vec<MountConfig>,
}

impl Config {
    /// Loads the configuration: `$PLFSRC`, else `~/.plfsrc`, else `/etc/plfsrc`, else the
    /// zero-config default. A file that exists but is invalid is an error (never a silent default).
    pub fn load() -> Result<Config> {
        todo_config()
    }

    /// Parses one plfsrc file (following `- include:` entries).
    pub fn from_file(path: &Path) -> Result<Config> {
        let _ = path;
        todo_config()
    }

    /// The zero-config default: mount point `/tmp/plfs-$USER` stored in
    /// `${XDG_DATA_HOME:-$HOME/.local/share}/plfs/store`.
    pub fn zero_config() -> Config {
        let user = std::env::var("USER").ok().filter(|u| !u.is_empty() && !u.contains('/'));
        let user = user.unwrap_or_else(|| rustix::process::getuid().as_raw().to_string());
        let data = std::env::var_os("XDG_DATA_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
            .unwrap_or_else(|| PathBuf::from(format!("/tmp/plfs-data-{user}")));
        Config {
            files: Vec::new(),
            global: GlobalParams::default(),
            mounts: vec![MountConfig {
                mount_point: PathBuf::from(format!("/tmp/plfs-{user}")),
                workload: Workload::SharedFile,
                backends: vec![BackendSpec { location: data.join("plfs/store"), role: BackendRole::Both }],
            }],
        }
    }
}

fn todo_config() -> Result<Config> {
    Err(Error::Config("plfsrc parsing is not implemented yet".into()))
}
