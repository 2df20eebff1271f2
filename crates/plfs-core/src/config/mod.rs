//! plfsrc configuration: the original PLFS 2.5 YAML syntax (a list of `- global_params:`,
//! `- include:` and `- mount_point:` entries) plus our documented keys, and the zero-config default.
//! `docs/config.md` is the reference for every key, the search order and the validation rules.
//!
//! This module is embedded in the LD_PRELOAD library, so it reads files with raw system calls
//! (rustix), never through `std::fs` or libc's interposable file functions.
//!
//! Errors are [`Error::Config`] messages that name the file, the line and the key, e.g.
//! `/etc/plfsrc: line 4: unknown key "num_hostdir" in global_params`.

use crate::error::{Error, Result};
use crate::sys;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// Which workload a mount point serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// N-1: many processes write one shared file (`shared_file`, `n-1`).
    SharedFile,
    /// N-N: each process writes its own files, spread over the backends (`file_per_proc`, `n-n`).
    FilePerProc,
    /// 1-N: a process creates many small files, packed into one log per writer per directory
    /// (`small_file`, `1-n`).
    SmallFile,
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
    /// Absolute, lexically normalised directory (a `posix://` or `posix:` prefix is stripped,
    /// a leading `~/` is expanded with `$HOME`).
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
        self.backends
            .iter()
            .filter(|b| b.role != BackendRole::Shadow)
            .map(|b| b.location.as_path())
            .collect()
    }
    /// Backends that hold writers' logs (role Both or Shadow), in file order.
    pub fn shadows(&self) -> Vec<&Path> {
        self.backends
            .iter()
            .filter(|b| b.role != BackendRole::Canonical)
            .map(|b| b.location.as_path())
            .collect()
    }
}

/// `- global_params:` values, with their defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobalParams {
    /// `num_hostdirs` (default 1, 1..=1024): hostdirs per container for the logs of writers on
    /// the container's backend; 1 keeps them in the container directory itself (format 3).
    pub num_hostdirs: u32,
    /// `container_format` (ours; default 3, 2..=3): the format of the containers this library
    /// makes. 2 keeps new files readable by plfs before format 3 on a shared backend.
    pub container_format: u32,
    /// `threadpool_size` (default 8, 1..=1024): threads for merging index logs.
    pub threadpool_size: u32,
    /// `index_buffer_records` (ours; default 1024, 1..=16M): index records a writer buffers before
    /// appending them to its index log. Also flushed on sync and close.
    pub index_buffer_records: u32,
    /// `data_checksums` (ours; default false): store a crc32c of each write's data in its record.
    pub data_checksums: bool,
    /// `index_compression` (ours; default true): writers record regular runs of writes as one
    /// pattern record instead of one record per write.
    pub index_compression: bool,
    /// `max_open_data_logs` (ours; default 256, 1..=65536): data-log descriptors a reader keeps open.
    pub max_open_data_logs: u32,
    /// `auto_compaction` (ours; default true): compact a file automatically when its dead bytes
    /// pass the thresholds below (at the last writer's close in a process, and while a writer
    /// stays open).
    pub auto_compaction: bool,
    /// `compaction_dead_ratio` (ours; default 0.5, 0..=1, stored in thousandths): the share of a
    /// file's stored data that must be dead (overwritten or truncated away) before it is compacted
    /// automatically.
    pub compaction_dead_permille: u32,
    /// `compaction_min_bytes` (ours; default 1048576): files with less stored data than this are
    /// not compacted automatically.
    pub compaction_min_bytes: u64,
}

impl Default for GlobalParams {
    fn default() -> Self {
        GlobalParams {
            num_hostdirs: 1,
            container_format: 3,
            threadpool_size: 8,
            index_buffer_records: 1024,
            data_checksums: false,
            index_compression: true,
            max_open_data_logs: 256,
            auto_compaction: true,
            compaction_dead_permille: 500,
            compaction_min_bytes: 1 << 20,
        }
    }
}

/// A loaded configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The files read, top-level first, then included files in the order they were read
    /// (empty for the zero-config default).
    pub files: Vec<PathBuf>,
    /// Global parameters.
    pub global: GlobalParams,
    /// Mount points, in file order.
    pub mounts: Vec<MountConfig>,
    /// Non-fatal remarks about the files, each naming file, line and key (original PLFS keys that
    /// are accepted for compatibility but have no effect). Front ends may print them
    /// (e.g. a config check command); the library itself does not.
    pub warnings: Vec<String>,
}

/// Largest plfsrc (or included file) we read.
const MAX_FILE_BYTES: usize = 4 << 20;
/// Deepest include chain.
const MAX_INCLUDE_DEPTH: usize = 32;

/// Original PLFS `global_params` keys that are accepted and ignored without checking their value.
const IGNORED_GLOBAL_KEYS: &[&str] = &[
    "global_summary_dir",
    "test_metalink",
    "mlog_defmask",
    "mlog_setmasks",
    "mlog_stderrmask",
    "mlog_stderr",
    "mlog_file",
    "mlog_msgbuf_size",
    "mlog_syslog",
    "mlog_syslogfac",
    "mlog_ucon",
    "fuse_crash_log",
];

/// Original PLFS mount-point keys that are accepted and ignored.
const IGNORED_MOUNT_KEYS: &[&str] = &[
    "statfs",
    "glib_buffer_mbs",
    "syncer_ip",
    "max_writers",
    "max_smallfile_containers",
    "mount_type",
];

impl Config {
    /// Loads the configuration: `$PLFSRC`, else `~/.plfsrc`, else `/etc/plfsrc`, else the
    /// zero-config default. A file that exists but is invalid is an error (never a silent default);
    /// so is a `$PLFSRC` naming a file that does not exist.
    pub fn load() -> Result<Config> {
        load_from(
            std::env::var_os("PLFSRC"),
            std::env::var_os("HOME"),
            Path::new("/etc/plfsrc"),
        )
    }

    /// Parses one plfsrc file (following `- include:` entries).
    pub fn from_file(path: &Path) -> Result<Config> {
        let (bytes, ident) =
            read_file(path).map_err(|e| Error::Config(format!("{}: cannot read: {}", path.display(), why(e))))?;
        let mut loader = Loader::default();
        loader.parse_bytes(path, &bytes, ident, 0)?;
        loader.finish()
    }

    /// Parses plfsrc text as if it had been read from the file `name` (used in messages; relative
    /// `include:` paths are resolved against `name`'s directory).
    pub fn from_str(text: &str, name: &Path) -> Result<Config> {
        let ident = match sys::stat_follow(name) {
            Ok(st) => Ident::from_stat(&st),
            Err(_) => Ident::Path(normalize_path(name).unwrap_or_else(|| name.to_path_buf())),
        };
        let mut loader = Loader::default();
        loader.parse_text(name, text, ident, 0)?;
        loader.finish()
    }

    /// The zero-config default: mount point `/tmp/plfs-$USER` stored in
    /// `${XDG_DATA_HOME:-$HOME/.local/share}/plfs/store`; see [`Config::zero_config_user`].
    pub fn zero_config() -> Config {
        let user = Self::zero_config_user();
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
                backends: vec![BackendSpec {
                    location: data.join("plfs/store"),
                    role: BackendRole::Both,
                }],
            }],
            warnings: Vec::new(),
        }
    }

    /// The user name in the zero-config mount point: `$USER`, or when it is unset, empty or holds a
    /// `/`, the login name of the real user id in the system's user database (what `id -un`
    /// prints), or the numeric uid when there is none.
    pub fn zero_config_user() -> String {
        let ok = |u: &String| !u.is_empty() && !u.contains('/');
        let uid = rustix::process::getuid().as_raw();
        std::env::var("USER")
            .ok()
            .filter(ok)
            .or_else(|| sys::user_name(uid).filter(ok))
            .unwrap_or_else(|| uid.to_string())
    }

    /// The mount point `logical` lies under (the longest matching mount point, compared
    /// component-wise, so `/mnt/plfsx` is not under `/mnt/plfs`) and the path relative to it
    /// (empty for the mount point itself). `logical` must be absolute; it is lexically normalised
    /// first (see [`normalize_path`]). None for relative paths and paths under no mount point.
    pub fn mount_for(&self, logical: &Path) -> Option<(&MountConfig, PathBuf)> {
        self.place(logical).map(|(m, _, rel)| (m, rel))
    }

    /// [`Config::mount_for`], with the normalised logical path too (which is the mount point
    /// joined with the relative path).
    pub fn place(&self, logical: &Path) -> Option<(&MountConfig, PathBuf, PathBuf)> {
        let path = normalize_path(logical)?;
        let p = path.as_os_str().as_bytes();
        // Both normalised (mount points are, at load): a byte prefix ending at a separator is a
        // component-wise prefix, and the longest one is the deepest.
        let mut best: Option<(&MountConfig, usize)> = None;
        for m in &self.mounts {
            let mp = m.mount_point.as_os_str().as_bytes();
            let under = mp == b"/" || (p.starts_with(mp) && (p.len() == mp.len() || p[mp.len()] == b'/'));
            if under && best.is_none_or(|(_, l)| mp.len() > l) {
                best = Some((m, mp.len()));
            }
        }
        let (m, len) = best?;
        let rest = &p[len.min(p.len())..];
        let rel = PathBuf::from(OsStr::from_bytes(rest.strip_prefix(b"/").unwrap_or(rest)));
        Some((m, path, rel))
    }
}

/// Whether an absolute path is already in the form [`normalize_path`] gives: no `.`, `..` or
/// empty component, no trailing slash.
fn is_normal(b: &[u8]) -> bool {
    b == b"/"
        || (!b.ends_with(b"/")
            && b[1..]
                .split(|&c| c == b'/')
                .all(|c| !c.is_empty() && c != b"." && c != b".."))
}

/// Lexically normalises an absolute path: removes `.` components and duplicate or trailing
/// slashes, and resolves `..` against the preceding component (never above `/`). Symbolic links
/// are not consulted. Returns None for a relative path.
pub fn normalize_path(p: &Path) -> Option<PathBuf> {
    if !p.has_root() {
        return None;
    }
    let b = p.as_os_str().as_bytes();
    if b.first() == Some(&b'/') && is_normal(b) {
        // The common case, with one allocation.
        return Some(p.to_path_buf());
    }
    let mut out = PathBuf::from("/");
    for c in p.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::ParentDir => {
                out.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    Some(out)
}

/// The search behind [`Config::load`], with its inputs explicit (for tests).
fn load_from(plfsrc: Option<OsString>, home: Option<OsString>, etc: &Path) -> Result<Config> {
    match locate(plfsrc, home, etc)? {
        Some(path) => Config::from_file(&path),
        None => Ok(Config::zero_config()),
    }
}

/// The file the search of [`Config::load`] picks; None for the zero-config default.
fn locate(plfsrc: Option<OsString>, home: Option<OsString>, etc: &Path) -> Result<Option<PathBuf>> {
    if let Some(p) = plfsrc.filter(|p| !p.is_empty()) {
        let path = PathBuf::from(p);
        return match sys::stat_follow(&path) {
            Ok(_) => Ok(Some(path)),
            Err(e) => Err(Error::Config(format!(
                "{} (from $PLFSRC): cannot read: {}",
                path.display(),
                e
            ))),
        };
    }
    let mut candidates = Vec::new();
    if let Some(h) = home.filter(|h| !h.is_empty()) {
        candidates.push(PathBuf::from(h).join(".plfsrc"));
    }
    candidates.push(etc.to_path_buf());
    for path in candidates {
        match sys::stat_follow(&path) {
            Ok(_) => return Ok(Some(path)),
            Err(rustix::io::Errno::NOENT) | Err(rustix::io::Errno::NOTDIR) => continue,
            Err(e) => return Err(Error::Config(format!("{}: cannot stat: {}", path.display(), e))),
        }
    }
    Ok(None)
}

/// Identity of a file read, for include cycle and repetition detection.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Ident {
    /// Device and inode of a file on disk.
    Inode(u64, u64),
    /// Text given to [`Config::from_str`] under a name that does not exist.
    Path(PathBuf),
}

impl Ident {
    #[allow(clippy::unnecessary_cast)]
    fn from_stat(st: &sys::RawStat) -> Ident {
        Ident::Inode(st.st_dev as u64, st.st_ino as u64)
    }
}

/// What a failed read of a configuration file says: the errno's text, or for the refusal of a
/// FIFO or device ([`sys::read_config_file`]) what it was.
pub(crate) fn why(e: rustix::io::Errno) -> String {
    if e == rustix::io::Errno::NOEXEC {
        "not a regular file (a FIFO or device is never read as a configuration)".to_string()
    } else {
        e.to_string()
    }
}

/// Reads a whole file with raw system calls (never std::fs or libc stdio).
fn read_file(path: &Path) -> std::result::Result<(Vec<u8>, Ident), rustix::io::Errno> {
    let (bytes, st) = sys::read_config_file(path, MAX_FILE_BYTES)?;
    Ok((bytes, Ident::from_stat(&st)))
}

mod lenient;
mod load;
mod mounts;
#[cfg(test)]
mod tests;
mod values;
mod yaml;

pub use lenient::{mount_points_in, Unusable};
use load::*;
pub use values::known_keys;
use yaml::{describe, Node, Value};
