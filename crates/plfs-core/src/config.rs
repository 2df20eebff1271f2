//! plfsrc configuration: the original PLFS 2.5 YAML syntax (a list of `- global_params:`,
//! `- include:` and `- mount_point:` entries) plus our documented keys, and the zero-config default.
//! `docs/config.md` is the reference for every key, the search order and the validation rules.
//!
//! This module is embedded in the LD_PRELOAD library, so it reads files with raw system calls
//! (rustix), never through `std::fs` or libc's interposable file functions.
//!
//! Errors are [`Error::Config`] messages that name the file, the line (whenever it can be
//! determined) and the key, e.g.
//! `/etc/plfsrc: line 4: unknown key "num_hostdir" in global_params`.

use crate::error::{Error, Result};
use serde_yaml::Value;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

/// Which workload a mount point serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// N-1: many processes write one shared file (`shared_file`, `n-1`, `n-1:byterange`).
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
    /// `num_hostdirs` (default 32, 1..=1024).
    pub num_hostdirs: u32,
    /// `threadpool_size` (default 8, 1..=1024): threads for merging index logs.
    pub threadpool_size: u32,
    /// `index_buffer_records` (ours; default 1024, 1..=16M): index records a writer buffers before
    /// appending them to its index log. Also flushed on sync and close.
    pub index_buffer_records: u32,
    /// `data_checksums` (ours; default false): store a crc32c of each write's data in its record.
    pub data_checksums: bool,
    /// `max_open_data_logs` (ours; default 256, 1..=65536): data-log descriptors a reader keeps open.
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
            read_file(path).map_err(|e| Error::Config(format!("{}: cannot read: {}", path.display(), e)))?;
        let mut loader = Loader::default();
        loader.parse_bytes(path, &bytes, ident, 0)?;
        loader.finish()
    }

    /// Parses plfsrc text as if it had been read from the file `name` (used in messages; relative
    /// `include:` paths are resolved against `name`'s directory).
    pub fn from_str(text: &str, name: &Path) -> Result<Config> {
        let ident = match rustix::fs::stat(name) {
            Ok(st) => Ident::from_stat(&st),
            Err(_) => Ident::Path(normalize_path(name).unwrap_or_else(|| name.to_path_buf())),
        };
        let mut loader = Loader::default();
        loader.parse_text(name, text.to_owned(), ident, 0)?;
        loader.finish()
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
                backends: vec![BackendSpec {
                    location: data.join("plfs/store"),
                    role: BackendRole::Both,
                }],
            }],
            warnings: Vec::new(),
        }
    }

    /// The mount point `logical` lies under (the longest matching mount point, compared
    /// component-wise, so `/mnt/plfsx` is not under `/mnt/plfs`) and the path relative to it
    /// (empty for the mount point itself). `logical` must be absolute; it is lexically normalised
    /// first (see [`normalize_path`]). None for relative paths and paths under no mount point.
    pub fn mount_for(&self, logical: &Path) -> Option<(&MountConfig, PathBuf)> {
        let path = normalize_path(logical)?;
        let mut best: Option<(&MountConfig, usize)> = None;
        for m in &self.mounts {
            if path.starts_with(&m.mount_point) {
                let depth = m.mount_point.components().count();
                if best.is_none_or(|(_, d)| depth > d) {
                    best = Some((m, depth));
                }
            }
        }
        let (m, _) = best?;
        let rel = path.strip_prefix(&m.mount_point).ok()?.to_path_buf();
        Some((m, rel))
    }
}

/// Lexically normalises an absolute path: removes `.` components and duplicate or trailing
/// slashes, and resolves `..` against the preceding component (never above `/`). Symbolic links
/// are not consulted. Returns None for a relative path.
pub fn normalize_path(p: &Path) -> Option<PathBuf> {
    if !p.has_root() {
        return None;
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
    if let Some(p) = plfsrc.filter(|p| !p.is_empty()) {
        let path = PathBuf::from(p);
        return match rustix::fs::stat(&path) {
            Ok(_) => Config::from_file(&path),
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
        match rustix::fs::stat(&path) {
            Ok(_) => return Config::from_file(&path),
            Err(rustix::io::Errno::NOENT) | Err(rustix::io::Errno::NOTDIR) => continue,
            Err(e) => return Err(Error::Config(format!("{}: cannot stat: {}", path.display(), e))),
        }
    }
    Ok(Config::zero_config())
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
    fn from_stat(st: &rustix::fs::Stat) -> Ident {
        Ident::Inode(st.st_dev as u64, st.st_ino as u64)
    }
}

/// Reads a whole file with raw system calls (never std::fs or libc stdio).
fn read_file(path: &Path) -> std::result::Result<(Vec<u8>, Ident), rustix::io::Errno> {
    use rustix::fs::{Mode, OFlags};
    use rustix::io::Errno;
    let fd = loop {
        match rustix::fs::open(path, OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOCTTY, Mode::empty()) {
            Err(Errno::INTR) => continue,
            r => break r?,
        }
    };
    let st = rustix::fs::fstat(&fd)?;
    if rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Directory {
        return Err(Errno::ISDIR);
    }
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match rustix::io::read(&fd, &mut buf[..]) {
            Ok(0) => break,
            Ok(n) => {
                out.extend_from_slice(&buf[..n.min(buf.len())]);
                if out.len() > MAX_FILE_BYTES {
                    return Err(Errno::FBIG);
                }
            }
            Err(Errno::INTR) => continue,
            Err(e) => return Err(e),
        }
    }
    Ok((out, Ident::from_stat(&st)))
}

/// A path from a file's root node to one node (see [`Step`]).
type Steps = Vec<Step>;

/// One step of a path from a file's root node to the node an error is about, used to find the
/// node's line (see [`locate`]).
#[derive(Debug, Clone)]
enum Step {
    /// The n-th (0-based) element of a sequence.
    Index(usize),
    /// The value of a mapping's key.
    Value(String),
    /// A mapping's key itself (last step only).
    Key(String),
}

fn idx(i: usize) -> Step {
    Step::Index(i)
}
fn val(k: &str) -> Step {
    Step::Value(k.to_owned())
}
fn key(k: &str) -> Step {
    Step::Key(k.to_owned())
}
fn with(base: &[Step], s: Step) -> Vec<Step> {
    let mut v = base.to_vec();
    v.push(s);
    v
}

/// Finds the line of a node in YAML text.
///
/// serde_yaml's `Value` carries no positions, but errors raised while deserializing a node get
/// that node's position. So we deserialize the text again with a visitor that walks `steps` and
/// fails on purpose at the target node, and read the line from the error.
mod locate {
    use super::Step;
    use serde::de::{self, DeserializeSeed, Deserializer, EnumAccess, IgnoredAny, MapAccess, SeqAccess};
    use serde::de::{VariantAccess, Visitor};
    use std::fmt;

    const MARK: &str = "plfs-config-locate-marker";

    /// The 1-based line of the node at `steps`, or None if it cannot be found.
    pub(super) fn line(text: &str, steps: &[Step]) -> Option<usize> {
        let de = serde_yaml::Deserializer::from_str(text);
        match Seek(steps).deserialize(de) {
            Err(e) if e.to_string().contains(MARK) => e.location().map(|l| l.line()),
            _ => None,
        }
    }

    fn hit<E: de::Error>() -> E {
        E::custom(MARK)
    }

    struct Seek<'s>(&'s [Step]);

    impl<'de> DeserializeSeed<'de> for Seek<'_> {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_any(self)
        }
    }

    impl Seek<'_> {
        fn scalar<E: de::Error>(&self) -> Result<(), E> {
            if self.0.is_empty() {
                Err(hit())
            } else {
                Ok(())
            }
        }
    }

    impl<'de> Visitor<'de> for Seek<'_> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("any YAML node")
        }
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
            self.scalar()
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
            self.scalar()
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
            self.scalar()
        }
        fn visit_i128<E: de::Error>(self, _: i128) -> Result<(), E> {
            self.scalar()
        }
        fn visit_u128<E: de::Error>(self, _: u128) -> Result<(), E> {
            self.scalar()
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
            self.scalar()
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
            self.scalar()
        }
        fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<(), E> {
            self.scalar()
        }
        fn visit_unit<E: de::Error>(self) -> Result<(), E> {
            self.scalar()
        }
        fn visit_none<E: de::Error>(self) -> Result<(), E> {
            self.scalar()
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_any(self)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
            match self.0.split_first() {
                None => Err(hit()),
                Some((Step::Index(want), rest)) => {
                    let mut i = 0usize;
                    loop {
                        let more = if i == *want {
                            seq.next_element_seed(Seek(rest))?.is_some()
                        } else {
                            seq.next_element::<IgnoredAny>()?.is_some()
                        };
                        if !more {
                            return Ok(());
                        }
                        i = i.saturating_add(1);
                    }
                }
                Some(_) => {
                    while seq.next_element::<IgnoredAny>()?.is_some() {}
                    Ok(())
                }
            }
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            match self.0.split_first() {
                None => Err(hit()),
                Some((Step::Value(want), rest)) => {
                    let mut found = false;
                    while let Some(k) = map.next_key::<serde_yaml::Value>()? {
                        if !found && k.as_str() == Some(want.as_str()) {
                            found = true;
                            map.next_value_seed(Seek(rest))?;
                        } else {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                    Ok(())
                }
                Some((Step::Key(want), _)) => {
                    while map.next_key_seed(KeyProbe(want))?.is_some() {
                        map.next_value::<IgnoredAny>()?;
                    }
                    Ok(())
                }
                Some((Step::Index(_), _)) => {
                    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                    Ok(())
                }
            }
        }
        fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<(), A::Error> {
            if self.0.is_empty() {
                return Err(hit());
            }
            let (_, variant) = data.variant::<IgnoredAny>()?;
            variant.newtype_variant::<IgnoredAny>()?;
            Ok(())
        }
    }

    /// Deserializes a mapping key, failing on purpose if it is the string wanted.
    struct KeyProbe<'s>(&'s str);

    impl<'de> DeserializeSeed<'de> for KeyProbe<'_> {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_any(self)
        }
    }

    impl<'de> Visitor<'de> for KeyProbe<'_> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a mapping key")
        }
        fn visit_str<E: de::Error>(self, s: &str) -> Result<(), E> {
            if s == self.0 {
                Err(hit())
            } else {
                Ok(())
            }
        }
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
            Ok(())
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
            Ok(())
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
            Ok(())
        }
        fn visit_i128<E: de::Error>(self, _: i128) -> Result<(), E> {
            Ok(())
        }
        fn visit_u128<E: de::Error>(self, _: u128) -> Result<(), E> {
            Ok(())
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
            Ok(())
        }
        fn visit_unit<E: de::Error>(self) -> Result<(), E> {
            Ok(())
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(())
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok(())
        }
    }
}

/// One file read.
struct Source {
    path: PathBuf,
    text: String,
    ident: Ident,
}

/// Where a mount point was defined, for messages about it found later.
struct MountOrigin {
    src: usize,
    /// Steps to the `mount_point` value.
    mount_point: Vec<Step>,
    /// Steps to each backend's location (parallel to `MountConfig::backends`).
    locations: Vec<Vec<Step>>,
}

/// Accumulates the files of one configuration (the top-level file and its includes).
#[derive(Default)]
struct Loader {
    sources: Vec<Source>,
    /// Indices into `sources` of the files being parsed (the include chain).
    stack: Vec<usize>,
    global: GlobalParams,
    mounts: Vec<(MountConfig, MountOrigin)>,
    warnings: Vec<String>,
}

impl Loader {
    /// `FILE: line N` (or just `FILE` when the node's line cannot be determined).
    fn at(&self, src: usize, steps: &[Step]) -> String {
        let Some(s) = self.sources.get(src) else {
            return String::from("<unknown file>");
        };
        match locate::line(&s.text, steps) {
            Some(n) => format!("{}: line {}", s.path.display(), n),
            None => s.path.display().to_string(),
        }
    }

    fn err(&self, src: usize, steps: &[Step], msg: impl std::fmt::Display) -> Error {
        Error::Config(format!("{}: {}", self.at(src, steps), msg))
    }

    fn warn(&mut self, src: usize, steps: &[Step], msg: impl std::fmt::Display) {
        let w = format!("{}: {}", self.at(src, steps), msg);
        self.warnings.push(w);
    }

    fn parse_bytes(&mut self, path: &Path, bytes: &[u8], ident: Ident, depth: usize) -> Result<()> {
        let text = match std::str::from_utf8(bytes) {
            Ok(t) => t.to_owned(),
            Err(e) => {
                let good = bytes.get(..e.valid_up_to()).unwrap_or_default();
                let line = 1 + good.iter().filter(|&&b| b == b'\n').count();
                return Err(Error::Config(format!(
                    "{}: line {}: not valid UTF-8 text",
                    path.display(),
                    line
                )));
            }
        };
        self.parse_text(path, text, ident, depth)
    }

    fn parse_text(&mut self, path: &Path, text: String, ident: Ident, depth: usize) -> Result<()> {
        let src = self.sources.len();
        self.sources.push(Source {
            path: path.to_path_buf(),
            text,
            ident,
        });
        self.stack.push(src);
        let r = self.parse_entries(src, depth);
        self.stack.pop();
        r
    }

    fn parse_entries(&mut self, src: usize, depth: usize) -> Result<()> {
        let path = self.sources[src].path.display().to_string();
        let text = &self.sources[src].text;
        if text.trim().is_empty() {
            return Err(Error::Config(format!(
                "{path}: the file is empty (a plfsrc needs at least one entry)"
            )));
        }
        let mut doc: Value = serde_yaml::from_str(text).map_err(|e| yaml_error(&path, &e))?;
        doc.apply_merge().map_err(|e| yaml_error(&path, &e))?;
        let entries = match doc {
            Value::Sequence(s) if !s.is_empty() => s,
            Value::Null | Value::Sequence(_) => {
                return Err(Error::Config(format!(
                    "{path}: the file has no entries (only comments or an empty list)"
                )))
            }
            Value::Mapping(_) => {
                return Err(self.err(
                    src,
                    &[],
                    "a plfsrc must be a YAML list of entries, each starting with \"- \" \
                     (e.g. \"- mount_point: /mnt/plfs\"), not a mapping",
                ))
            }
            other => {
                return Err(self.err(
                    src,
                    &[],
                    format!("a plfsrc must be a YAML list of entries, found {}", describe(&other)),
                ))
            }
        };
        for (i, entry) in entries.iter().enumerate() {
            self.parse_entry(src, i, entry, depth)?;
        }
        Ok(())
    }

    fn parse_entry(&mut self, src: usize, i: usize, entry: &Value, depth: usize) -> Result<()> {
        let Value::Mapping(map) = entry else {
            return Err(self.err(
                src,
                &[idx(i)],
                format!(
                    "entry {} is {}; expected a mapping starting with global_params, include or mount_point",
                    i + 1,
                    describe(entry)
                ),
            ));
        };
        let keys =
            string_keys(map).map_err(|k| self.err(src, &[idx(i)], format!("key {} is not a string", describe(k))))?;
        let kinds: Vec<&str> = keys
            .iter()
            .map(|(k, _)| *k)
            .filter(|k| matches!(*k, "global_params" | "include" | "mount_point"))
            .collect();
        match kinds.as_slice() {
            ["global_params"] => self.global_entry(src, i, &keys),
            ["include"] => self.include_entry(src, i, &keys, depth),
            ["mount_point"] => self.mount_entry(src, i, &keys),
            [other] => Err(self.err(src, &[idx(i), key(other)], format!("unexpected entry kind \"{other}\""))),
            [] => match keys.first() {
                None => Err(self.err(
                    src,
                    &[idx(i)],
                    "empty entry; expected global_params, include or mount_point",
                )),
                Some((k, _)) => Err(self.err(
                    src,
                    &[idx(i), key(k)],
                    format!(
                        "unknown key \"{k}\" at the start of an entry (expected global_params, include or mount_point)"
                    ),
                )),
            },
            [first, second, ..] => Err(self.err(
                src,
                &[idx(i), key(second)],
                format!("{second}: this entry already has a {first} key; start each with its own \"- \""),
            )),
        }
    }

    // ---- global_params ----------------------------------------------------------------------

    fn global_entry(&mut self, src: usize, i: usize, keys: &[(&str, &Value)]) -> Result<()> {
        // Parameters may follow `global_params:` at the same indentation (the original PLFS 2.5
        // layout, where global_params has no value) or be nested under it.
        let mut params: Vec<(&str, &Value, Vec<Step>)> = Vec::new();
        for &(k, v) in keys {
            if k != "global_params" {
                params.push((k, v, vec![idx(i)]));
                continue;
            }
            match v {
                Value::Null => {}
                Value::Mapping(m) => {
                    let base = vec![idx(i), val("global_params")];
                    let nested = string_keys(m).map_err(|k| {
                        self.err(
                            src,
                            &base,
                            format!("global_params: key {} is not a string", describe(k)),
                        )
                    })?;
                    for (k2, v2) in nested {
                        params.push((k2, v2, base.clone()));
                    }
                }
                other => {
                    return Err(self.err(
                        src,
                        &[idx(i), val("global_params")],
                        format!(
                            "global_params: expected parameters (key: value lines), found {}",
                            describe(other)
                        ),
                    ))
                }
            }
        }
        for (n, (k, _, base)) in params.iter().enumerate() {
            if params[..n].iter().any(|(k0, _, _)| k0 == k) {
                return Err(self.err(
                    src,
                    &with(base, key(k)),
                    format!("{k}: set twice in the same global_params entry"),
                ));
            }
        }
        for (k, v, base) in params {
            self.global_param(src, &base, k, v)?;
        }
        Ok(())
    }

    fn global_param(&mut self, src: usize, base: &[Step], k: &str, v: &Value) -> Result<()> {
        let vs = with(base, val(k));
        match k {
            "num_hostdirs" => self.global.num_hostdirs = self.uint(src, &vs, k, v, 1, 1024)? as u32,
            "threadpool_size" => self.global.threadpool_size = self.uint(src, &vs, k, v, 1, 1024)? as u32,
            "index_buffer_records" => {
                self.global.index_buffer_records = self.uint(src, &vs, k, v, 1, 16 * 1024 * 1024)? as u32
            }
            "max_open_data_logs" => self.global.max_open_data_logs = self.uint(src, &vs, k, v, 1, 65536)? as u32,
            "data_checksums" => self.global.data_checksums = self.boolean(src, &vs, k, v)?,
            "lazy_stat" | "lazy_droppings" | "compress_contiguous" => {
                self.boolean(src, &vs, k, v)?;
                self.warn(
                    src,
                    &with(base, key(k)),
                    format!("{k}: accepted for compatibility, has no effect"),
                );
            }
            "index_buffer_mbs" | "read_buffer_mbs" => {
                self.uint(src, &vs, k, v, 0, u64::MAX)?;
                self.warn(
                    src,
                    &with(base, key(k)),
                    format!("{k}: accepted for compatibility, has no effect"),
                );
            }
            _ if IGNORED_GLOBAL_KEYS.contains(&k) => {
                let what = if k.starts_with("mlog_") || k == "fuse_crash_log" {
                    "ignored (logging is controlled by $PLFS_LOG)"
                } else {
                    "accepted for compatibility, has no effect"
                };
                self.warn(src, &with(base, key(k)), format!("{k}: {what}"));
            }
            _ => {
                return Err(self.err(
                    src,
                    &with(base, key(k)),
                    format!("unknown key \"{k}\" in global_params"),
                ))
            }
        }
        Ok(())
    }

    /// An unsigned integer in `lo..=hi` (a quoted number is accepted too, as the original did).
    fn uint(&self, src: usize, vs: &[Step], k: &str, v: &Value, lo: u64, hi: u64) -> Result<u64> {
        let n: Option<i128> = match v {
            Value::Number(n) => n.as_u64().map(i128::from).or_else(|| n.as_i64().map(i128::from)),
            Value::String(s) => s.trim().parse::<i128>().ok(),
            _ => None,
        };
        let expected = if hi == u64::MAX {
            "a non-negative integer".to_string()
        } else {
            format!("an integer in {lo}..={hi}")
        };
        let Some(n) = n else {
            return Err(self.err(src, vs, format!("{k}: expected {expected}, found {}", describe(v))));
        };
        if n < i128::from(lo) || n > i128::from(hi) {
            let range = if hi == u64::MAX {
                format!("{lo}..")
            } else {
                format!("{lo}..={hi}")
            };
            return Err(self.err(src, vs, format!("{k}: {n} is out of range {range}")));
        }
        Ok(n as u64)
    }

    /// A boolean: true/false, yes/no, on/off, y/n (any case), or 0/1.
    fn boolean(&self, src: usize, vs: &[Step], k: &str, v: &Value) -> Result<bool> {
        let b = match v {
            Value::Bool(b) => Some(*b),
            Value::Number(n) => match n.as_u64() {
                Some(0) => Some(false),
                Some(1) => Some(true),
                _ => None,
            },
            Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
                "true" | "yes" | "on" | "y" | "1" => Some(true),
                "false" | "no" | "off" | "n" | "0" => Some(false),
                _ => None,
            },
            _ => None,
        };
        b.ok_or_else(|| {
            self.err(
                src,
                vs,
                format!("{k}: expected true/false (or 1/0), found {}", describe(v)),
            )
        })
    }

    // ---- include ----------------------------------------------------------------------------

    fn include_entry(&mut self, src: usize, i: usize, keys: &[(&str, &Value)], depth: usize) -> Result<()> {
        if let Some((k, _)) = keys.iter().find(|(k, _)| *k != "include") {
            return Err(self.err(
                src,
                &[idx(i), key(k)],
                format!("unknown key \"{k}\" in include entry (an include entry has only the include key)"),
            ));
        }
        let v = keys
            .iter()
            .find(|(k, _)| *k == "include")
            .map(|(_, v)| *v)
            .unwrap_or(&Value::Null);
        let vs = vec![idx(i), val("include")];
        let targets: Vec<(&str, Vec<Step>)> = match v {
            Value::String(s) => vec![(s.as_str(), vs)],
            Value::Sequence(seq) if !seq.is_empty() => {
                let mut t = Vec::new();
                for (j, el) in seq.iter().enumerate() {
                    let st = with(&vs, idx(j));
                    match el.as_str() {
                        Some(s) => t.push((s, st)),
                        None => {
                            return Err(self.err(
                                src,
                                &st,
                                format!("include: expected a file name, found {}", describe(el)),
                            ))
                        }
                    }
                }
                t
            }
            other => {
                return Err(self.err(
                    src,
                    &vs,
                    format!("include: expected a file name, found {}", describe(other)),
                ))
            }
        };
        for (name, st) in targets {
            self.include_one(src, &st, name, depth)?;
        }
        Ok(())
    }

    fn include_one(&mut self, src: usize, st: &[Step], name: &str, depth: usize) -> Result<()> {
        if name.is_empty() {
            return Err(self.err(src, st, "include: empty file name"));
        }
        let target = expand_tilde(name).map_err(|m| self.err(src, st, format!("include: {m}")))?;
        let target = if target.has_root() {
            target
        } else {
            // Relative to the including file's directory.
            match self.sources[src].path.parent() {
                Some(dir) => dir.join(target),
                None => target,
            }
        };
        if depth + 1 > MAX_INCLUDE_DEPTH {
            return Err(self.err(
                src,
                st,
                format!(
                    "include: {}: includes are nested more than {MAX_INCLUDE_DEPTH} deep",
                    target.display()
                ),
            ));
        }
        let (bytes, ident) = read_file(&target)
            .map_err(|e| self.err(src, st, format!("include: cannot read {}: {}", target.display(), e)))?;
        if let Some(pos) = self.stack.iter().position(|&s| self.sources[s].ident == ident) {
            let mut chain: Vec<String> = self.stack[pos..]
                .iter()
                .map(|&s| self.sources[s].path.display().to_string())
                .collect();
            chain.push(target.display().to_string());
            return Err(self.err(src, st, format!("include: include cycle: {}", chain.join(" -> "))));
        }
        if let Some(prev) = self.sources.iter().find(|s| s.ident == ident) {
            return Err(self.err(
                src,
                st,
                format!(
                    "include: {} is already included (as {}); a file may be read only once",
                    target.display(),
                    prev.path.display()
                ),
            ));
        }
        self.parse_bytes(&target, &bytes, ident, depth + 1)
    }

    // ---- mount_point ------------------------------------------------------------------------

    fn mount_entry(&mut self, src: usize, i: usize, keys: &[(&str, &Value)]) -> Result<()> {
        let mps = vec![idx(i), val("mount_point")];
        let mp_val = keys
            .iter()
            .find(|(k, _)| *k == "mount_point")
            .map(|(_, v)| *v)
            .unwrap_or(&Value::Null);
        let mount_point = match mp_val.as_str() {
            Some(s) => abs_path(s).map_err(|m| self.err(src, &mps, format!("mount_point: {m}")))?,
            None => {
                return Err(self.err(
                    src,
                    &mps,
                    format!("mount_point: expected an absolute path, found {}", describe(mp_val)),
                ))
            }
        };
        let mpd = mount_point.display().to_string();
        let mut workload = Workload::SharedFile;
        let mut backends = None;
        for &(k, v) in keys {
            match k {
                "mount_point" => {}
                "workload" => workload = self.workload(src, &[idx(i), val(k)], v)?,
                "backends" => backends = Some(self.backends(src, i, v)?),
                _ if IGNORED_MOUNT_KEYS.contains(&k) => self.warn(
                    src,
                    &[idx(i), key(k)],
                    format!("{k}: accepted for compatibility, has no effect"),
                ),
                _ => {
                    return Err(self.err(
                        src,
                        &[idx(i), key(k)],
                        format!("unknown key \"{k}\" in mount_point {mpd}"),
                    ))
                }
            }
        }
        let Some((backends, locations)) = backends else {
            return Err(self.err(
                src,
                &[idx(i), key("mount_point")],
                format!("mount_point {mpd}: missing required key \"backends\""),
            ));
        };
        // Checks within the mount point.
        for (b, spec) in backends.iter().enumerate() {
            for prev in &backends[..b] {
                let loc = spec.location.display();
                if spec.location == prev.location {
                    return Err(self.err(
                        src,
                        &locations[b],
                        format!("location: {loc} is listed twice in the backends of mount_point {mpd}"),
                    ));
                }
                if spec.location.starts_with(&prev.location) || prev.location.starts_with(&spec.location) {
                    return Err(self.err(
                        src,
                        &locations[b],
                        format!(
                            "location: {loc} and {} overlap (one is inside the other) in the backends of \
                             mount_point {mpd}; backends must be disjoint",
                            prev.location.display()
                        ),
                    ));
                }
            }
        }
        let bs = [idx(i), key("backends")];
        if backends.iter().all(|b| b.role == BackendRole::Shadow) {
            return Err(self.err(
                src,
                &bs,
                format!(
                    "backends: every backend of mount_point {mpd} is type: shadow; at least one must be \
                     canonical (type: canonical or no type)"
                ),
            ));
        }
        if backends.iter().all(|b| b.role == BackendRole::Canonical) {
            return Err(self.err(
                src,
                &bs,
                format!(
                    "backends: every backend of mount_point {mpd} is type: canonical; writers need at least \
                     one shadow backend (type: shadow or no type)"
                ),
            ));
        }
        let mount = MountConfig {
            mount_point,
            workload,
            backends,
        };
        self.mounts.push((
            mount,
            MountOrigin {
                src,
                mount_point: mps,
                locations,
            },
        ));
        Ok(())
    }

    fn workload(&self, src: usize, vs: &[Step], v: &Value) -> Result<Workload> {
        let Some(s) = v.as_str() else {
            return Err(self.err(
                src,
                vs,
                format!("workload: expected shared_file, found {}", describe(v)),
            ));
        };
        match s.trim().to_ascii_lowercase().as_str() {
            "shared_file" | "n-1" | "n-1:byterange" => Ok(Workload::SharedFile),
            "file_per_proc" | "n-n" | "small_file" | "1-n" => Err(self.err(
                src,
                vs,
                format!("workload: \"{s}\" is not supported yet (planned); use shared_file (n-1)"),
            )),
            _ => Err(self.err(
                src,
                vs,
                format!("workload: unknown workload \"{s}\" (expected shared_file, n-1 or n-1:byterange)"),
            )),
        }
    }

    /// Parses `backends:`, returning the specs and the steps to each location.
    fn backends(&self, src: usize, i: usize, v: &Value) -> Result<(Vec<BackendSpec>, Vec<Steps>)> {
        let bs = vec![idx(i), val("backends")];
        let mut specs = Vec::new();
        let mut steps = Vec::new();
        match v {
            // The older form: a comma-separated list of directories.
            Value::String(s) => {
                for part in s.split(',') {
                    let part = part.trim();
                    if part.is_empty() {
                        return Err(self.err(src, &bs, format!("backends: empty location in \"{s}\"")));
                    }
                    let location = location(part).map_err(|m| self.err(src, &bs, format!("backends: {m}")))?;
                    specs.push(BackendSpec {
                        location,
                        role: BackendRole::Both,
                    });
                    steps.push(bs.clone());
                }
            }
            Value::Sequence(seq) => {
                for (j, el) in seq.iter().enumerate() {
                    let es = with(&bs, idx(j));
                    let (spec, ls) = self.backend(src, &es, el)?;
                    specs.push(spec);
                    steps.push(ls);
                }
            }
            Value::Null => {}
            other => {
                return Err(self.err(
                    src,
                    &bs,
                    format!(
                        "backends: expected a list of \"- location: <dir>\" entries, found {}",
                        describe(other)
                    ),
                ))
            }
        }
        if specs.is_empty() {
            return Err(self.err(src, &bs, "backends: no locations listed; at least one is required"));
        }
        Ok((specs, steps))
    }

    fn backend(&self, src: usize, es: &[Step], el: &Value) -> Result<(BackendSpec, Vec<Step>)> {
        match el {
            Value::String(s) => {
                let location = location(s).map_err(|m| self.err(src, es, format!("location: {m}")))?;
                Ok((
                    BackendSpec {
                        location,
                        role: BackendRole::Both,
                    },
                    es.to_vec(),
                ))
            }
            Value::Mapping(m) => {
                let keys = string_keys(m)
                    .map_err(|k| self.err(src, es, format!("backends: key {} is not a string", describe(k))))?;
                let mut loc = None;
                let mut role = BackendRole::Both;
                for (k, v) in keys {
                    let vs = with(es, val(k));
                    match k {
                        "location" => {
                            let Some(s) = v.as_str() else {
                                return Err(self.err(
                                    src,
                                    &vs,
                                    format!("location: expected a directory, found {}", describe(v)),
                                ));
                            };
                            loc = Some(location(s).map_err(|m| self.err(src, &vs, format!("location: {m}")))?);
                        }
                        "type" => {
                            role = match v.as_str().map(|s| s.trim().to_ascii_lowercase()).as_deref() {
                                Some("canonical") => BackendRole::Canonical,
                                Some("shadow") => BackendRole::Shadow,
                                _ => {
                                    return Err(self.err(
                                        src,
                                        &vs,
                                        format!("type: expected canonical or shadow, found {}", describe(v)),
                                    ))
                                }
                            }
                        }
                        _ => {
                            return Err(self.err(
                                src,
                                &with(es, key(k)),
                                format!("unknown key \"{k}\" in backends entry (expected location and type)"),
                            ))
                        }
                    }
                }
                match loc {
                    Some(location) => Ok((BackendSpec { location, role }, with(es, val("location")))),
                    None => Err(self.err(src, es, "backends: entry has no \"location\" key")),
                }
            }
            other => Err(self.err(
                src,
                es,
                format!("backends: expected \"- location: <dir>\", found {}", describe(other)),
            )),
        }
    }

    // ---- whole-configuration checks ---------------------------------------------------------

    fn finish(self) -> Result<Config> {
        if self.mounts.is_empty() {
            let top = self
                .sources
                .first()
                .map(|s| s.path.display().to_string())
                .unwrap_or_default();
            let inc = if self.sources.len() > 1 {
                " (in it or the files it includes)"
            } else {
                ""
            };
            return Err(Error::Config(format!(
                "{top}: no mount_point entries{inc}; a plfsrc must define at least one mount point"
            )));
        }
        for (b, (mb, ob)) in self.mounts.iter().enumerate() {
            for (ma, oa) in &self.mounts[..b] {
                let first = self.at(oa.src, &oa.mount_point);
                if mb.mount_point == ma.mount_point {
                    return Err(self.err(
                        ob.src,
                        &ob.mount_point,
                        format!(
                            "mount_point: {} is defined twice (first at {first})",
                            mb.mount_point.display()
                        ),
                    ));
                }
                let (inner, outer) = if mb.mount_point.starts_with(&ma.mount_point) {
                    (&mb.mount_point, &ma.mount_point)
                } else if ma.mount_point.starts_with(&mb.mount_point) {
                    (&ma.mount_point, &mb.mount_point)
                } else {
                    continue;
                };
                return Err(self.err(
                    ob.src,
                    &ob.mount_point,
                    format!(
                        "mount_point: {} is inside mount point {} (other one at {first}); mount points must not be nested",
                        inner.display(),
                        outer.display()
                    ),
                ));
            }
        }
        for (m, o) in &self.mounts {
            for (spec, ls) in m.backends.iter().zip(&o.locations) {
                for (other, oo) in &self.mounts {
                    if spec.location.starts_with(&other.mount_point) {
                        let which = if other.mount_point == spec.location {
                            "is"
                        } else {
                            "is inside"
                        };
                        return Err(self.err(
                            o.src,
                            ls,
                            format!(
                                "location: {} {which} mount point {} (defined at {}); a backend inside a mount \
                                 point would loop (PLFS would store its files inside itself)",
                                spec.location.display(),
                                other.mount_point.display(),
                                self.at(oo.src, &oo.mount_point)
                            ),
                        ));
                    }
                }
            }
        }
        Ok(Config {
            files: self.sources.into_iter().map(|s| s.path).collect(),
            global: self.global,
            mounts: self.mounts.into_iter().map(|(m, _)| m).collect(),
            warnings: self.warnings,
        })
    }
}

/// The string keys of a mapping, in order; Err with the first non-string key.
fn string_keys(m: &serde_yaml::Mapping) -> std::result::Result<Vec<(&str, &Value)>, &Value> {
    m.iter().map(|(k, v)| k.as_str().map(|s| (s, v)).ok_or(k)).collect()
}

/// A short description of a value for messages.
fn describe(v: &Value) -> String {
    match v {
        Value::Null => "nothing (an empty value)".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => format!("{s:?}"),
        Value::Sequence(_) => "a list".into(),
        Value::Mapping(_) => "a mapping".into(),
        Value::Tagged(t) => format!("a value tagged {}", t.tag),
    }
}

/// Formats a YAML syntax error with the file and line.
fn yaml_error(path: &str, e: &serde_yaml::Error) -> Error {
    let mut msg = e.to_string();
    let Some(loc) = e.location() else {
        return Error::Config(format!("{path}: invalid YAML: {msg}"));
    };
    let suffix = format!(" at line {} column {}", loc.line(), loc.column());
    if let Some(p) = msg.find(&suffix) {
        msg.replace_range(p..p + suffix.len(), "");
    }
    // serde's path to the node (".[2].global_params.num_hostdirs: ..."): keep the key names, drop
    // the entry index (the line says where the entry is).
    if msg.starts_with(['.', '[']) {
        if let Some(p) = msg.find(": ").filter(|&p| !msg[..p].contains(' ')) {
            let path = msg[..p].trim_start_matches('.');
            let path = match path.strip_prefix('[').and_then(|r| r.split_once(']')) {
                Some((n, rest)) if n.bytes().all(|b| b.is_ascii_digit()) => rest.trim_start_matches('.'),
                _ => path,
            };
            let rest = msg[p + 2..].to_string();
            msg = if path.is_empty() {
                rest
            } else {
                format!("{path}: {rest}")
            };
        }
    }
    if let Some(rest) = msg.strip_prefix("duplicate entry with key ") {
        msg = format!("duplicate key {rest} in the mapping that starts on this line");
    }
    if msg.contains("cannot start any token") || msg.contains("tab character") {
        msg.push_str(" (tabs cannot be used for indentation in YAML)");
    }
    Error::Config(format!(
        "{path}: line {}: invalid YAML (column {}): {msg}",
        loc.line(),
        loc.column()
    ))
}

/// Expands a leading `~` or `~/` with `$HOME`.
fn expand_tilde(s: &str) -> std::result::Result<PathBuf, String> {
    if s != "~" && !s.starts_with("~/") {
        return Ok(PathBuf::from(s));
    }
    let Some(mut home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) else {
        return Err(format!("{s:?} starts with ~ but $HOME is not set"));
    };
    if let Some(rest) = s.strip_prefix("~/") {
        home.push("/");
        home.push(rest);
    }
    Ok(PathBuf::from(home))
}

/// An absolute path (after `~` expansion), lexically normalised.
fn abs_path(s: &str) -> std::result::Result<PathBuf, String> {
    if s.is_empty() {
        return Err("empty path; expected an absolute path".into());
    }
    let p = expand_tilde(s)?;
    normalize_path(&p).ok_or_else(|| format!("{s:?} is not an absolute path"))
}

/// A backend location: `posix://` / `posix:` prefixes are stripped, other URL-like schemes are
/// rejected, and the rest must be an absolute directory.
fn location(raw: &str) -> std::result::Result<PathBuf, String> {
    let rest = if let Some(r) = raw.strip_prefix("posix://") {
        r
    } else if let Some(r) = raw.strip_prefix("posix:") {
        r
    } else {
        if let Some((scheme, _)) = raw.split_once(':') {
            let scheme_like = !scheme.is_empty()
                && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
            if scheme_like {
                return Err(format!(
                    "backend type \"{scheme}\" (in {raw:?}) is not supported; only POSIX directories \
                     (a plain path, posix:// or posix:) are"
                ));
            }
        }
        raw
    };
    abs_path(rest).map_err(|m| if rest == raw { m } else { format!("{m} (in {raw:?})") })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A fresh directory under the system temp dir (tests may use std::fs).
    fn tempdir(tag: &str) -> PathBuf {
        static N: AtomicUsize = AtomicUsize::new(0);
        let d = std::env::temp_dir().join(format!(
            "plfs-config-test-{}-{}-{tag}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    fn parse(text: &str) -> Result<Config> {
        Config::from_str(text, Path::new("/nonexistent-dir/plfsrc"))
    }

    /// Parses `text` and returns the error message, asserting it contains each of `needles`.
    #[track_caller]
    fn fails(text: &str, needles: &[&str]) -> String {
        let msg = match parse(text) {
            Ok(c) => panic!("expected an error, got {c:?}"),
            Err(Error::Config(m)) => m,
            Err(e) => panic!("expected Error::Config, got {e:?}"),
        };
        assert!(
            msg.starts_with("/nonexistent-dir/plfsrc"),
            "message does not start with the file: {msg}"
        );
        for n in needles {
            assert!(msg.contains(n), "message {msg:?} does not contain {n:?}");
        }
        msg
    }

    const EXAMPLE: &str = "\
- global_params:
    num_hostdirs: 32
    threadpool_size: 16
- mount_point: /mnt/plfs
  workload: shared_file               # also \"n-1\", \"n-1:byterange\"
  backends:
    - location: /panfs/vol1/.plfs_store   # or posix:///panfs/... or posix:/panfs/...
    - location: /burst/.plfs_store
      type: shadow                        # canonical | shadow; absent = both roles
";

    #[test]
    fn config_example_parses() {
        let c = parse(EXAMPLE).unwrap();
        assert_eq!(c.files, vec![PathBuf::from("/nonexistent-dir/plfsrc")]);
        assert_eq!(c.global.num_hostdirs, 32);
        assert_eq!(c.global.threadpool_size, 16);
        assert_eq!(c.global.index_buffer_records, 1024);
        assert_eq!(c.mounts.len(), 1);
        let m = &c.mounts[0];
        assert_eq!(m.mount_point, PathBuf::from("/mnt/plfs"));
        assert_eq!(m.workload, Workload::SharedFile);
        assert_eq!(
            m.backends,
            vec![
                BackendSpec {
                    location: "/panfs/vol1/.plfs_store".into(),
                    role: BackendRole::Both
                },
                BackendSpec {
                    location: "/burst/.plfs_store".into(),
                    role: BackendRole::Shadow
                },
            ]
        );
        assert_eq!(m.canonical(), vec![Path::new("/panfs/vol1/.plfs_store")]);
        assert_eq!(
            m.shadows(),
            vec![Path::new("/panfs/vol1/.plfs_store"), Path::new("/burst/.plfs_store")]
        );
        assert!(c.warnings.is_empty());
    }

    /// The PLFS 2.5 man page example (parameters at the same indentation as `global_params:`),
    /// with its hdfs backend replaced by a posix one.
    #[test]
    fn config_original_layout_parses() {
        let text = "\
- global_params:
  num_hostdirs: 16
  threadpool_size: 64
  index_buffer_mbs: 16
  lazy_stat: yes
  global_summary_dir: /mount/nfs/summary
  mlog_setmasks:
    INFO
    index=DEBUG
    container=DEBUG
  mlog_file: /tmp/logs/plfs-%p-%h-%t.log
- mount_point: /mount/example
  workload: n-1
  statfs: posix:///global/visible
  backends:
    - location: posix:///global/mount
      type: canonical
    - location: posix:/fast/storage1
      type: shadow
    - location: posix:///fast/storage2
      type: shadow
  syncer_ip: 192.168.0.1
";
        let c = parse(text).unwrap();
        assert_eq!(c.global.num_hostdirs, 16);
        assert_eq!(c.global.threadpool_size, 64);
        let m = &c.mounts[0];
        assert_eq!(m.mount_point, PathBuf::from("/mount/example"));
        assert_eq!(m.canonical(), vec![Path::new("/global/mount")]);
        assert_eq!(
            m.shadows(),
            vec![Path::new("/fast/storage1"), Path::new("/fast/storage2")]
        );
        // index_buffer_mbs, lazy_stat, global_summary_dir, mlog_setmasks, mlog_file, statfs, syncer_ip.
        assert_eq!(c.warnings.len(), 7, "{:#?}", c.warnings);
        assert!(c.warnings[1].contains("line 5: lazy_stat"), "{}", c.warnings[1]);
        assert!(c
            .warnings
            .iter()
            .any(|w| w.contains("mlog_file") && w.contains("PLFS_LOG")));
        assert!(c.warnings.iter().any(|w| w.contains("line 14: statfs")));
    }

    #[test]
    fn config_all_keys() {
        let text = "\
- global_params:
    num_hostdirs: 1024
    threadpool_size: 1
    index_buffer_records: 16777216
    data_checksums: true
    max_open_data_logs: 65536
    lazy_stat: 0
    lazy_droppings: false
    compress_contiguous: 1
    index_buffer_mbs: 64
    read_buffer_mbs: 0
    global_summary_dir: /x
    test_metalink: 0
    mlog_defmask: WARN
    mlog_setmasks: [INFO, index=DEBUG]
    mlog_stderrmask: CRIT
    mlog_stderr: false
    mlog_file: /tmp/x
    mlog_msgbuf_size: 4096
    mlog_syslog: false
    mlog_syslogfac: LOCAL0
    mlog_ucon: false
    fuse_crash_log: /tmp/crash
- mount_point: /a
  workload: n-1:byterange
  statfs: /x
  glib_buffer_mbs: 16
  syncer_ip: 1.2.3.4
  max_writers: 4
  max_smallfile_containers: 32
  mount_type: posix
  backends:
    - location: /store/a
";
        let c = parse(text).unwrap();
        assert_eq!(
            c.global,
            GlobalParams {
                num_hostdirs: 1024,
                threadpool_size: 1,
                index_buffer_records: 16777216,
                data_checksums: true,
                max_open_data_logs: 65536,
            }
        );
        assert_eq!(c.warnings.len(), 17 + 6, "{:#?}", c.warnings);
    }

    #[test]
    fn config_later_global_params_override_keys() {
        let text = "\
- global_params:
    num_hostdirs: 7
    threadpool_size: 3
- global_params:
    threadpool_size: 5
- mount_point: /a
  backends: [{location: /s}]
";
        let c = parse(text).unwrap();
        assert_eq!(c.global.num_hostdirs, 7);
        assert_eq!(c.global.threadpool_size, 5);
    }

    #[test]
    fn config_unknown_global_key() {
        let text = "\
# comment
- global_params:
    num_hostdirs: 32
    num_hostdir: 5
- mount_point: /a
  backends: [{location: /s}]
";
        let m = fails(text, &["line 4", "unknown key \"num_hostdir\" in global_params"]);
        assert_eq!(
            m,
            "/nonexistent-dir/plfsrc: line 4: unknown key \"num_hostdir\" in global_params"
        );
        // The original layout, and a key whose value is on the next line.
        fails(
            "- global_params:\n  bogus:\n    3\n",
            &["line 2", "unknown key \"bogus\" in global_params"],
        );
    }

    #[test]
    fn config_out_of_range() {
        let pre = "- mount_point: /a\n  backends: [{location: /s}]\n- global_params:\n";
        let m = fails(&format!("{pre}    num_hostdirs: 5000\n"), &["line 4"]);
        assert_eq!(
            m,
            "/nonexistent-dir/plfsrc: line 4: num_hostdirs: 5000 is out of range 1..=1024"
        );
        fails(
            &format!("{pre}    num_hostdirs: 0\n"),
            &["line 4", "num_hostdirs: 0 is out of range"],
        );
        fails(
            &format!("{pre}    num_hostdirs: -3\n"),
            &["line 4", "num_hostdirs: -3 is out of range"],
        );
        fails(
            &format!("{pre}    num_hostdirs: many\n"),
            &["line 4", "num_hostdirs: expected an integer", "\"many\""],
        );
        fails(
            &format!("{pre}    num_hostdirs: 1.5\n"),
            &["line 4", "num_hostdirs", "1.5"],
        );
        fails(
            &format!("{pre}    num_hostdirs:\n"),
            &["line 4", "num_hostdirs", "empty"],
        );
        fails(
            &format!("{pre}    threadpool_size: 1025\n"),
            &["line 4", "threadpool_size: 1025 is out of range 1..=1024"],
        );
        fails(
            &format!("{pre}    index_buffer_records: 16777217\n"),
            &["line 4", "index_buffer_records"],
        );
        fails(
            &format!("{pre}    index_buffer_records: 0\n"),
            &["line 4", "index_buffer_records: 0"],
        );
        fails(
            &format!("{pre}    max_open_data_logs: 65537\n"),
            &["line 4", "max_open_data_logs: 65537"],
        );
        fails(
            &format!("{pre}    data_checksums: maybe\n"),
            &["line 4", "data_checksums: expected true/false"],
        );
        fails(
            &format!("{pre}    lazy_stat: 2\n"),
            &["line 4", "lazy_stat: expected true/false"],
        );
        fails(
            &format!("{pre}    index_buffer_mbs: -1\n"),
            &["line 4", "index_buffer_mbs: -1 is out of range 0.."],
        );
        fails(
            &format!("{pre}    num_hostdirs: 99999999999999999999999999\n"),
            &["line 4", "num_hostdirs"],
        );
        // Quoted numbers are accepted, as the original parser did.
        let c = parse(&format!("{pre}    num_hostdirs: \"64\"\n")).unwrap();
        assert_eq!(c.global.num_hostdirs, 64);
    }

    #[test]
    fn config_global_params_shape_errors() {
        fails(
            "- global_params: 3\n",
            &["line 1", "global_params: expected parameters"],
        );
        fails(
            "- global_params:\n    num_hostdirs: 3\n  num_hostdirs: 4\n",
            &["num_hostdirs: set twice", "line 3"],
        );
        fails(
            "- global_params:\n    1: 3\n",
            &["line 2", "global_params: key 1 is not a string"],
        );
    }

    #[test]
    fn config_workloads() {
        let m = |w: &str| format!("- mount_point: /a\n  workload: {w}\n  backends: [{{location: /s}}]\n");
        for ok in ["shared_file", "n-1", "n-1:byterange", "N-1"] {
            assert_eq!(parse(&m(ok)).unwrap().mounts[0].workload, Workload::SharedFile, "{ok}");
        }
        for planned in ["file_per_proc", "n-n", "small_file", "1-n"] {
            fails(
                &m(planned),
                &["line 2", "workload", planned, "not supported yet (planned)"],
            );
        }
        fails(&m("random"), &["line 2", "workload: unknown workload \"random\""]);
        fails(&m("[a]"), &["line 2", "workload: expected shared_file"]);
    }

    #[test]
    fn config_backend_errors() {
        fails(
            "- mount_point: /a\n  workload: n-1\n",
            &["line 1", "mount_point /a: missing required key \"backends\""],
        );
        fails(
            "- mount_point: /a\n  backends: []\n",
            &["line 2", "backends: no locations listed"],
        );
        fails(
            "- mount_point: /a\n  backends:\n",
            &["line 2", "backends: no locations listed"],
        );
        fails(
            "- mount_point: /a\n  backends: 3\n",
            &["line 2", "backends: expected a list"],
        );
        fails(
            "- mount_point: /a\n  backends:\n    - location: /s\n    - type: shadow\n",
            &["line 4", "backends: entry has no \"location\" key"],
        );
        fails(
            "- mount_point: /a\n  backends:\n    - location: /s\n      type: fast\n",
            &["line 4", "type: expected canonical or shadow, found \"fast\""],
        );
        fails(
            "- mount_point: /a\n  backends:\n    - location: /s\n      typ: shadow\n",
            &["line 4", "unknown key \"typ\" in backends entry"],
        );
        fails(
            "- mount_point: /a\n  backends:\n    - location: 7\n",
            &["line 3", "location: expected a directory, found 7"],
        );
        fails(
            "- mount_point: /a\n  backends:\n    - [x]\n",
            &["line 3", "backends: expected \"- location"],
        );
    }

    #[test]
    fn config_backend_schemes() {
        for (scheme, loc) in [
            ("hdfs", "hdfs:///fast/storage1"),
            ("glib", "glib:///x"),
            ("pvfs", "pvfs://server/x"),
            ("iofsl", "iofsl:host:/x"),
        ] {
            let text = format!("- mount_point: /a\n  backends:\n    - location: /s\n    - location: {loc}\n");
            fails(
                &text,
                &[
                    "line 4",
                    "location",
                    &format!("backend type \"{scheme}\""),
                    "not supported",
                ],
            );
        }
        let text = "\
- mount_point: /a
  backends:
    - location: posix:///p1
    - location: posix:/p2
    - location: /p3/./x/../y//
    - location: posix:///p4/
";
        let c = parse(text).unwrap();
        let locs: Vec<_> = c.mounts[0].backends.iter().map(|b| b.location.clone()).collect();
        assert_eq!(
            locs,
            vec![PathBuf::from("/p1"), "/p2".into(), "/p3/y".into(), "/p4".into()]
        );
        fails(
            "- mount_point: /a\n  backends:\n    - location: relative/dir\n",
            &["line 3", "location", "absolute"],
        );
        fails(
            "- mount_point: /a\n  backends:\n    - location: posix://relative\n",
            &["line 3", "absolute"],
        );
        fails(
            "- mount_point: /a\n  backends:\n    - location: \"\"\n",
            &["line 3", "location: empty path"],
        );
    }

    #[test]
    fn config_tilde_expansion() {
        let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty() && Path::new(h).is_absolute()) else {
            return;
        };
        let c = parse("- mount_point: /a\n  backends:\n    - location: ~/store\n").unwrap();
        assert_eq!(
            c.mounts[0].backends[0].location,
            normalize_path(&Path::new(&home).join("store")).unwrap()
        );
    }

    #[test]
    fn config_backends_comma_string() {
        let c = parse("- mount_point: /a\n  backends: /s1, posix:///s2\n").unwrap();
        let b = &c.mounts[0].backends;
        assert_eq!(b.len(), 2);
        assert_eq!(
            b[1],
            BackendSpec {
                location: "/s2".into(),
                role: BackendRole::Both
            }
        );
        fails(
            "- mount_point: /a\n  backends: /s1,,/s2\n",
            &["line 2", "backends: empty location"],
        );
        fails(
            "- mount_point: /a\n  backends: /s1,rel\n",
            &["line 2", "backends", "absolute"],
        );
        // A list of plain strings.
        let c = parse("- mount_point: /a\n  backends:\n    - /s1\n    - /s2\n").unwrap();
        assert_eq!(c.mounts[0].backends.len(), 2);
    }

    #[test]
    fn config_mount_point_errors() {
        fails(
            "- mount_point: mnt/plfs\n  backends: [/s]\n",
            &["line 1", "mount_point", "not an absolute path"],
        );
        fails(
            "- mount_point:\n  backends: [/s]\n",
            &["line 1", "mount_point: expected an absolute path"],
        );
        fails(
            "- mount_point: /a\n  backend: [/s]\n",
            &["line 2", "unknown key \"backend\" in mount_point /a"],
        );
        let m = fails(
            "- mount_point: /a\n  backends: [/s]\n- mount_point: /a/\n  backends: [/t]\n",
            &[
                "line 3",
                "mount_point: /a is defined twice",
                "first at /nonexistent-dir/plfsrc: line 1",
            ],
        );
        assert!(m.starts_with("/nonexistent-dir/plfsrc: line 3:"), "{m}");
        fails(
            "- mount_point: /a\n  backends: [/s]\n- mount_point: /a/b/../c\n  backends: [/t]\n",
            &["line 3", "mount_point: /a/c is inside mount point /a", "nested"],
        );
        fails(
            "- mount_point: /a/c\n  backends: [/s]\n- mount_point: /a\n  backends: [/t]\n",
            &["line 3", "mount_point: /a/c is inside mount point /a"],
        );
        // Not nested: /mnt/plfsx is not under /mnt/plfs.
        parse("- mount_point: /mnt/plfs\n  backends: [/s]\n- mount_point: /mnt/plfsx\n  backends: [/t]\n").unwrap();
    }

    #[test]
    fn config_backend_inside_mount_point() {
        fails(
            "- mount_point: /mnt/plfs\n  backends:\n    - location: /mnt/plfs/store\n",
            &[
                "line 3",
                "location: /mnt/plfs/store is inside mount point /mnt/plfs",
                "loop",
            ],
        );
        fails(
            "- mount_point: /mnt/plfs\n  backends:\n    - location: /mnt/plfs\n",
            &["line 3", "location: /mnt/plfs is mount point /mnt/plfs"],
        );
        // Inside another mount point, defined later.
        fails(
            "- mount_point: /a\n  backends:\n    - location: /s\n    - location: /b/x\n- mount_point: /b\n  backends: [/t]\n",
            &["line 4", "location: /b/x is inside mount point /b (defined at /nonexistent-dir/plfsrc: line 5)"],
        );
        // Only a prefix of the name: fine.
        parse("- mount_point: /mnt/plfs\n  backends: [/mnt/plfs_store]\n").unwrap();
    }

    #[test]
    fn config_roles() {
        fails(
            "- mount_point: /a\n  backends:\n    - location: /s\n      type: shadow\n",
            &["line 2", "backends", "type: shadow", "at least one must be canonical"],
        );
        fails(
            "- mount_point: /a\n  backends:\n    - location: /s\n      type: canonical\n",
            &["line 2", "backends", "type: canonical", "shadow"],
        );
        let c = parse(
            "- mount_point: /a\n  backends:\n    - location: /s\n      type: canonical\n    - location: /t\n      type: shadow\n",
        )
        .unwrap();
        assert_eq!(c.mounts[0].canonical(), vec![Path::new("/s")]);
        assert_eq!(c.mounts[0].shadows(), vec![Path::new("/t")]);
    }

    #[test]
    fn config_duplicate_and_overlapping_backends() {
        fails(
            "- mount_point: /a\n  backends:\n    - location: /s\n    - location: posix:///s/\n",
            &["line 4", "location: /s is listed twice", "mount_point /a"],
        );
        fails(
            "- mount_point: /a\n  backends:\n    - location: /s\n    - location: /s/sub\n",
            &["line 4", "location: /s/sub and /s overlap"],
        );
        // The same store in two mount points is allowed (an alias, like a bind mount).
        parse("- mount_point: /a\n  backends: [/s]\n- mount_point: /b\n  backends: [/s]\n").unwrap();
    }

    #[test]
    fn config_entry_shape_errors() {
        fails("- global_params:\n    num_hostdirs: 3\n", &["no mount_point entries"]);
        fails("", &["empty"]);
        fails("\n  \n", &["empty"]);
        fails("# only a comment\n", &["no entries"]);
        fails("[]\n", &["no entries"]);
        fails(
            "global_params:\n  num_hostdirs: 3\n",
            &["line 1", "YAML list of entries"],
        );
        fails("hello\n", &["line 1", "YAML list of entries", "\"hello\""]);
        fails("- /a\n", &["line 1", "entry 1 is \"/a\""]);
        fails("- {}\n", &["line 1", "empty entry"]);
        fails(
            "- mount_point: /a\n  backends: [/s]\n- num_hostdirs: 3\n",
            &["line 3", "unknown key \"num_hostdirs\""],
        );
        fails(
            "- mount_point: /a\n  global_params:\n  backends: [/s]\n",
            &["line 2", "global_params: this entry already has a mount_point key"],
        );
        fails(
            "- include: x\n  num_hostdirs: 3\n",
            &["line 2", "unknown key \"num_hostdirs\" in include entry"],
        );
        fails("- ? [a]\n  : b\n", &["line 1", "is not a string"]);
    }

    #[test]
    fn config_yaml_errors() {
        let m = fails("- mount_point: /a\n  backends: [\n", &["line 3", "invalid YAML"]);
        assert!(!m.contains("at line"), "{m}");
        fails(
            "- mount_point: /a\n\t backends: [/s]\n",
            &["line 2", "invalid YAML", "tabs"],
        );
        fails(
            "- mount_point: /a\n  mount_point: /b\n",
            &["line 1", "duplicate key \"mount_point\""],
        );
        fails("- mount_point: *x\n", &["line 1", "unknown anchor"]);
        fails("--- []\n--- []\n", &["more than one document"]);
    }

    #[test]
    fn config_yaml_features_still_work() {
        // Anchors, aliases, merge keys and flow style.
        let text = "\
- mount_point: /a
  backends: &b
    - location: /s1
    - location: /s2
      type: shadow
- mount_point: /b
  backends: [{location: /t1}]
- {mount_point: /c, backends: [/u]}
";
        let c = parse(text).unwrap();
        assert_eq!(c.mounts.len(), 3);
        assert_eq!(c.mounts[2].backends[0].location, PathBuf::from("/u"));
        // Line lookups work in flow style too.
        fails(
            "- {mount_point: /c, backends: [/u]}\n- {mount_point: /c,\n   backends: [/v]}\n",
            &["line 2", "twice"],
        );
    }

    #[test]
    fn config_non_utf8() {
        let d = tempdir("utf8");
        let p = d.join("plfsrc");
        std::fs::write(&p, b"- mount_point: /a\n  backends: [/s\xff]\n").unwrap();
        let e = Config::from_file(&p).unwrap_err().to_string();
        assert!(e.contains(&format!("{}: line 2: not valid UTF-8", p.display())), "{e}");
    }

    #[test]
    fn config_from_file_and_errors() {
        let d = tempdir("fromfile");
        let p = write(&d, "plfsrc", EXAMPLE);
        let c = Config::from_file(&p).unwrap();
        assert_eq!(c.files, vec![p.clone()]);
        assert_eq!(c.mounts[0].mount_point, PathBuf::from("/mnt/plfs"));
        let missing = d.join("missing");
        let e = Config::from_file(&missing).unwrap_err().to_string();
        assert!(e.contains(&format!("{}: cannot read", missing.display())), "{e}");
        let e = Config::from_file(&d).unwrap_err().to_string();
        assert!(e.contains("cannot read"), "{e}");
        let empty = write(&d, "empty", "");
        let e = Config::from_file(&empty).unwrap_err().to_string();
        assert!(e.contains(&format!("{}: the file is empty", empty.display())), "{e}");
    }

    #[test]
    fn config_includes() {
        let d = tempdir("include");
        std::fs::create_dir_all(d.join("plfsrc.d/sub")).unwrap();
        write(
            &d,
            "plfsrc.d/global.yml",
            "- global_params:\n    threadpool_size: 4\n- include: sub/mounts.yml\n",
        );
        write(&d, "plfsrc.d/sub/mounts.yml", "- mount_point: /b\n  backends: [/t]\n");
        let top = write(
            &d,
            "plfsrc",
            "- include: plfsrc.d/global.yml\n- mount_point: /a\n  backends: [/s]\n- global_params:\n    num_hostdirs: 5\n",
        );
        let c = Config::from_file(&top).unwrap();
        assert_eq!(c.global.threadpool_size, 4);
        assert_eq!(c.global.num_hostdirs, 5);
        let mps: Vec<_> = c.mounts.iter().map(|m| m.mount_point.clone()).collect();
        assert_eq!(mps, vec![PathBuf::from("/b"), "/a".into()]);
        assert_eq!(c.files.len(), 3);
        assert_eq!(c.files[0], top);
        assert!(c.files[2].ends_with("plfsrc.d/sub/mounts.yml"));

        // from_str resolves relative includes against the name's directory.
        let c = Config::from_str("- include: plfsrc.d/sub/mounts.yml\n", &d.join("virtual")).unwrap();
        assert_eq!(c.mounts[0].mount_point, PathBuf::from("/b"));

        // Absolute includes, and a list of includes.
        let abs = d.join("plfsrc.d/sub/mounts.yml");
        let c = Config::from_str(&format!("- include: [{}]\n", abs.display()), Path::new("/x/y")).unwrap();
        assert_eq!(c.mounts.len(), 1);

        // Errors inside an included file name that file and its line.
        write(
            &d,
            "bad.yml",
            "- mount_point: /c\n  backends: [/u]\n- global_params:\n    threads: 3\n",
        );
        let top = write(
            &d,
            "top-bad",
            "- mount_point: /a\n  backends: [/s]\n- include: bad.yml\n",
        );
        let e = Config::from_file(&top).unwrap_err().to_string();
        assert!(
            e.contains(&format!(
                "{}: line 4: unknown key \"threads\"",
                d.join("bad.yml").display()
            )),
            "{e}"
        );

        // Missing include: names the including file, line and key.
        let top = write(
            &d,
            "top-missing",
            "- mount_point: /a\n  backends: [/s]\n- include: nope.yml\n",
        );
        let e = Config::from_file(&top).unwrap_err().to_string();
        assert!(
            e.contains(&format!(
                "{}: line 3: include: cannot read {}",
                top.display(),
                d.join("nope.yml").display()
            )),
            "{e}"
        );

        // A mount point defined in the top file and again in an include.
        write(&d, "dup.yml", "- mount_point: /a\n  backends: [/t]\n");
        let top = write(
            &d,
            "top-dup",
            "- mount_point: /a\n  backends: [/s]\n- include: dup.yml\n",
        );
        let e = Config::from_file(&top).unwrap_err().to_string();
        assert!(
            e.contains(&format!(
                "{}: line 1: mount_point: /a is defined twice (first at {}: line 1)",
                d.join("dup.yml").display(),
                top.display()
            )),
            "{e}"
        );

        // Include errors in general.
        fails("- include:\n", &["line 1", "include: expected a file name"]);
        fails(
            "- include: [3]\n",
            &["line 1", "include: expected a file name, found 3"],
        );
        fails("- include: \"\"\n", &["line 1", "include: empty file name"]);
    }

    #[test]
    fn config_include_cycles() {
        let d = tempdir("cycle");
        let a = write(&d, "a.yml", "- mount_point: /a\n  backends: [/s]\n- include: b.yml\n");
        write(&d, "b.yml", "- include: ./a.yml\n");
        let e = Config::from_file(&a).unwrap_err().to_string();
        assert!(
            e.contains(&format!(
                "{}: line 1: include: include cycle:",
                d.join("b.yml").display()
            )),
            "{e}"
        );
        assert!(e.contains("a.yml -> "), "{e}");

        let s = write(
            &d,
            "self.yml",
            "- mount_point: /a\n  backends: [/s]\n- include: self.yml\n",
        );
        let e = Config::from_file(&s).unwrap_err().to_string();
        assert!(e.contains("line 3: include: include cycle"), "{e}");

        // from_str under the name of an existing file: including that file is a cycle too.
        let e = Config::from_str("- include: self.yml\n", &s).unwrap_err().to_string();
        assert!(e.contains("include cycle"), "{e}");

        // Through a symbolic link.
        std::os::unix::fs::symlink(d.join("a.yml"), d.join("link.yml")).unwrap();
        write(
            &d,
            "c.yml",
            "- mount_point: /c\n  backends: [/u]\n- include: link.yml\n",
        );
        write(&d, "a2.yml", "- include: c.yml\n");
        std::fs::write(d.join("a.yml"), "- include: c.yml\n").unwrap();
        let e = Config::from_file(&d.join("a.yml")).unwrap_err().to_string();
        assert!(e.contains("include cycle"), "{e}");

        // The same file included twice (not a cycle) is an error too, as in PLFS 2.5.
        write(&d, "g.yml", "- global_params:\n    num_hostdirs: 3\n");
        let t = write(
            &d,
            "twice.yml",
            "- include: g.yml\n- mount_point: /a\n  backends: [/s]\n- include: g.yml\n",
        );
        let e = Config::from_file(&t).unwrap_err().to_string();
        assert!(e.contains("line 4: include:") && e.contains("already included"), "{e}");
    }

    #[test]
    fn config_include_depth_limit() {
        let d = tempdir("depth");
        for n in 0..40 {
            write(&d, &format!("{n}.yml"), &format!("- include: {}.yml\n", n + 1));
        }
        write(&d, "40.yml", "- mount_point: /a\n  backends: [/s]\n");
        let e = Config::from_file(&d.join("0.yml")).unwrap_err().to_string();
        assert!(e.contains("nested more than"), "{e}");
        let c = Config::from_file(&d.join("20.yml")).unwrap();
        assert_eq!(c.files.len(), 21);
    }

    #[test]
    fn config_load_search_order() {
        let d = tempdir("load");
        let home = d.join("home");
        std::fs::create_dir_all(&home).unwrap();
        let etc = d.join("etc-plfsrc");
        // Nothing anywhere: zero config.
        let c = load_from(None, Some(home.clone().into()), &etc).unwrap();
        assert_eq!(c, Config::zero_config());
        let c = load_from(Some(OsString::new()), None, &etc).unwrap();
        assert_eq!(c, Config::zero_config());
        // /etc/plfsrc.
        write(&d, "etc-plfsrc", "- mount_point: /etc-mount\n  backends: [/s]\n");
        let c = load_from(None, Some(home.clone().into()), &etc).unwrap();
        assert_eq!(c.mounts[0].mount_point, PathBuf::from("/etc-mount"));
        // ~/.plfsrc wins over /etc/plfsrc.
        write(&home, ".plfsrc", "- mount_point: /home-mount\n  backends: [/s]\n");
        let c = load_from(None, Some(home.clone().into()), &etc).unwrap();
        assert_eq!(c.mounts[0].mount_point, PathBuf::from("/home-mount"));
        assert_eq!(c.files, vec![home.join(".plfsrc")]);
        // $PLFSRC wins over both.
        let env = write(&d, "env-plfsrc", "- mount_point: /env-mount\n  backends: [/s]\n");
        let c = load_from(Some(env.clone().into()), Some(home.clone().into()), &etc).unwrap();
        assert_eq!(c.mounts[0].mount_point, PathBuf::from("/env-mount"));
        // $PLFSRC naming a missing file is an error naming it, even though others exist.
        let missing = d.join("nope");
        let e = load_from(Some(missing.clone().into()), Some(home.clone().into()), &etc)
            .unwrap_err()
            .to_string();
        assert!(e.contains(&format!("{} (from $PLFSRC)", missing.display())), "{e}");
        // An invalid file found in the search is an error, never a silent fallback.
        write(&home, ".plfsrc", "- mount_point: /home-mount\n");
        let e = load_from(None, Some(home.clone().into()), &etc)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(".plfsrc: line 1: mount_point /home-mount: missing required key"),
            "{e}"
        );
        // load() itself never panics.
        let _ = Config::load();
    }

    #[test]
    fn config_zero_config() {
        let c = Config::zero_config();
        assert!(c.files.is_empty());
        assert!(c.warnings.is_empty());
        assert_eq!(c.global, GlobalParams::default());
        assert_eq!(c.global.num_hostdirs, 32);
        assert_eq!(c.global.threadpool_size, 8);
        assert_eq!(c.global.index_buffer_records, 1024);
        assert!(!c.global.data_checksums);
        assert_eq!(c.global.max_open_data_logs, 256);
        assert_eq!(c.mounts.len(), 1);
        let m = &c.mounts[0];
        let user = std::env::var("USER")
            .ok()
            .filter(|u| !u.is_empty() && !u.contains('/'))
            .unwrap_or_else(|| rustix::process::getuid().as_raw().to_string());
        assert_eq!(m.mount_point, PathBuf::from(format!("/tmp/plfs-{user}")));
        assert_eq!(m.workload, Workload::SharedFile);
        assert_eq!(m.backends.len(), 1);
        assert_eq!(m.backends[0].role, BackendRole::Both);
        assert!(m.backends[0].location.ends_with("plfs/store"));
        assert!(m.backends[0].location.is_absolute());
        if let Some(x) = std::env::var_os("XDG_DATA_HOME").filter(|x| Path::new(x).is_absolute()) {
            assert_eq!(m.backends[0].location, Path::new(&x).join("plfs/store"));
        } else if let Some(h) = std::env::var_os("HOME") {
            assert_eq!(m.backends[0].location, Path::new(&h).join(".local/share/plfs/store"));
        }
        assert_eq!(
            c.mount_for(&m.mount_point.join("f")).map(|(_, r)| r),
            Some(PathBuf::from("f"))
        );
    }

    #[test]
    fn config_normalize_path() {
        let n = |s: &str| normalize_path(Path::new(s));
        assert_eq!(n("/"), Some(PathBuf::from("/")));
        assert_eq!(n("//a///b/"), Some(PathBuf::from("/a/b")));
        assert_eq!(n("/a/./b/."), Some(PathBuf::from("/a/b")));
        assert_eq!(n("/a/b/../c"), Some(PathBuf::from("/a/c")));
        assert_eq!(n("/../../a/.."), Some(PathBuf::from("/")));
        assert_eq!(n("/a/../../b"), Some(PathBuf::from("/b")));
        assert_eq!(n("a/b"), None);
        assert_eq!(n(""), None);
        assert_eq!(n("./a"), None);
    }

    #[test]
    fn config_mount_for() {
        let text = "\
- mount_point: /mnt/plfs
  backends: [/s1]
- mount_point: /mnt/other
  backends: [/s2]
- mount_point: /mnt/plfsx
  backends: [/s3]
";
        let c = parse(text).unwrap();
        let f = |p: &str| {
            c.mount_for(Path::new(p))
                .map(|(m, r)| (m.mount_point.display().to_string(), r))
        };
        let r = |m: &str, rel: &str| Some((m.to_string(), PathBuf::from(rel)));
        assert_eq!(f("/mnt/plfs"), r("/mnt/plfs", ""));
        assert_eq!(f("/mnt/plfs/"), r("/mnt/plfs", ""));
        assert_eq!(f("/mnt/plfs/a/b"), r("/mnt/plfs", "a/b"));
        assert_eq!(f("/mnt/plfs/a/../b"), r("/mnt/plfs", "b"));
        assert_eq!(f("/mnt/plfs//a/./b/"), r("/mnt/plfs", "a/b"));
        assert_eq!(f("/mnt/plfsx"), r("/mnt/plfsx", ""));
        assert_eq!(f("/mnt/plfsx/f"), r("/mnt/plfsx", "f"));
        assert_eq!(f("/mnt/plfs/../other/f"), r("/mnt/other", "f"));
        assert_eq!(f("/mnt/plfs/.."), None);
        assert_eq!(f("/mnt/plfs/../../../mnt/plfs/z"), r("/mnt/plfs", "z"));
        assert_eq!(f("/mnt"), None);
        assert_eq!(f("/mnt/pl"), None);
        assert_eq!(f("/"), None);
        assert_eq!(f("mnt/plfs/a"), None);
        assert_eq!(f(""), None);

        // Longest match wins (nested mounts are rejected by the parser, but mount_for does not
        // rely on that).
        let mut c2 = c.clone();
        let mut inner = c2.mounts[0].clone();
        inner.mount_point = "/mnt/plfs/deep".into();
        c2.mounts.insert(0, inner);
        let (m, rel) = c2.mount_for(Path::new("/mnt/plfs/deep/x")).unwrap();
        assert_eq!(
            (m.mount_point.as_path(), rel.as_path()),
            (Path::new("/mnt/plfs/deep"), Path::new("x"))
        );
        let (m, rel) = c2.mount_for(Path::new("/mnt/plfs/deeper")).unwrap();
        assert_eq!(
            (m.mount_point.as_path(), rel.as_path()),
            (Path::new("/mnt/plfs"), Path::new("deeper"))
        );
    }

    #[test]
    fn config_weird_inputs_never_panic() {
        let inputs = [
            "- !tag {mount_point: /a}\n",
            "- mount_point: !path /a\n  backends: [/s]\n",
            "- mount_point: /a\n  backends: !!str /s\n",
            "- mount_point: /a\n  backends: [!x {location: /s}]\n",
            "- &a [*a]\n",
            "- mount_point: /a\n  <<: {backends: [/s]}\n",
            "- mount_point: /a\n  <<: 3\n",
            &"[".repeat(10_000),
            &format!("{}1{}", "- ".repeat(300), ""),
            "- mount_point: /a\n  backends: [{location: /s, type: }]\n",
            "- mount_point: 1e9\n",
            "- ~: 1\n",
            "- mount_point: /a\n  backends:\n    - {? [x] : y}\n",
            "\u{feff}- mount_point: /a\n  backends: [/s]\n",
            "- mount_point: /a\n  backends: [/s]\n...\n",
            "%YAML 1.2\n---\n- mount_point: /a\n  backends: [/s]\n",
        ];
        for t in inputs {
            let _ = parse(t);
        }
        // Merge keys are applied.
        let c = parse("- mount_point: /a\n  <<: {backends: [/s]}\n").unwrap();
        assert_eq!(c.mounts[0].backends.len(), 1);
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config::with_cases(512))]
        #[test]
        fn config_fuzz_never_panics(s in "[-:\\[\\]{}/a-z0-9 \n#&*!|>,'\"~.]{0,200}") {
            let _ = parse(&s);
            let _ = parse(&format!("- mount_point: /a\n  backends: [/s]\n- global_params:\n    {s}\n"));
        }

        #[test]
        fn config_fuzz_locator(s in "[-:\\[\\]{}/a-z \n]{0,120}", path in proptest::collection::vec(0usize..3, 0..5)) {
            let steps: Vec<Step> = path
                .iter()
                .map(|&k| match k { 0 => idx(0), 1 => val("a"), _ => key("a") })
                .collect();
            let _ = locate::line(&s, &steps);
        }
    }
}
