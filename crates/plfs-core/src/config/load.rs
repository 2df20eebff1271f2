//! The plfsrc loader: reads a file and its includes, checks every key and value, and builds a
//! [`Config`](super::Config), with errors that name the file, line and key.

use super::values::*;
use super::*;

/// One file read.
pub(super) struct Source {
    pub(super) path: PathBuf,
    pub(super) ident: Ident,
}

/// Where a mount point was defined, for messages about it found later.
pub(super) struct MountOrigin {
    pub(super) src: usize,
    /// The line of the `mount_point` value.
    pub(super) mount_point: usize,
    /// The line of each backend's location (parallel to `MountConfig::backends`).
    pub(super) locations: Vec<usize>,
}

/// Accumulates the files of one configuration (the top-level file and its includes).
#[derive(Default)]
pub(super) struct Loader {
    pub(super) sources: Vec<Source>,
    /// Indices into `sources` of the files being parsed (the include chain).
    pub(super) stack: Vec<usize>,
    pub(super) global: GlobalParams,
    pub(super) mounts: Vec<(MountConfig, MountOrigin)>,
    pub(super) warnings: Vec<String>,
}

impl Loader {
    /// `FILE: line N`.
    pub(super) fn at(&self, src: usize, line: usize) -> String {
        match self.sources.get(src) {
            Some(s) => format!("{}: line {line}", s.path.display()),
            None => String::from("<unknown file>"),
        }
    }

    pub(super) fn err(&self, src: usize, line: usize, msg: impl std::fmt::Display) -> Error {
        Error::Config(format!("{}: {}", self.at(src, line), msg))
    }

    pub(super) fn warn(&mut self, src: usize, line: usize, msg: impl std::fmt::Display) {
        let w = format!("{}: {}", self.at(src, line), msg);
        self.warnings.push(w);
    }

    pub(super) fn parse_bytes(&mut self, path: &Path, bytes: &[u8], ident: Ident, depth: usize) -> Result<()> {
        let text = match std::str::from_utf8(bytes) {
            Ok(t) => t,
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

    pub(super) fn parse_text(&mut self, path: &Path, text: &str, ident: Ident, depth: usize) -> Result<()> {
        let src = self.sources.len();
        self.sources.push(Source {
            path: path.to_path_buf(),
            ident,
        });
        self.stack.push(src);
        let r = self.parse_entries(src, text, depth);
        self.stack.pop();
        r
    }

    pub(super) fn parse_entries(&mut self, src: usize, text: &str, depth: usize) -> Result<()> {
        let path = self.sources[src].path.display().to_string();
        if text.trim().is_empty() {
            return Err(Error::Config(format!(
                "{path}: the file is empty (a plfsrc needs at least one entry)"
            )));
        }
        let root = yaml::parse(text).map_err(|e| {
            Error::Config(format!(
                "{path}: line {}: invalid YAML (column {}): {}",
                e.line, e.col, e.msg
            ))
        })?;
        let no_entries = || {
            Error::Config(format!(
                "{path}: the file has no entries (only comments or an empty list)"
            ))
        };
        let Some(root) = root else {
            return Err(no_entries());
        };
        let entries = match &root.value {
            Value::Sequence(s) if !s.is_empty() => s,
            Value::Null | Value::Sequence(_) => return Err(no_entries()),
            Value::Mapping(_) => {
                return Err(self.err(
                    src,
                    root.line,
                    "a plfsrc must be a YAML list of entries, each starting with \"- \" \
                     (e.g. \"- mount_point: /mnt/plfs\"), not a mapping",
                ))
            }
            _ => {
                return Err(self.err(
                    src,
                    root.line,
                    format!("a plfsrc must be a YAML list of entries, found {}", describe(&root)),
                ))
            }
        };
        for (i, entry) in entries.iter().enumerate() {
            self.parse_entry(src, i, entry, depth)?;
        }
        Ok(())
    }

    pub(super) fn parse_entry(&mut self, src: usize, i: usize, entry: &Node, depth: usize) -> Result<()> {
        let Value::Mapping(map) = &entry.value else {
            return Err(self.err(
                src,
                entry.line,
                format!(
                    "entry {} is {}; expected a mapping starting with global_params, include or mount_point",
                    i + 1,
                    describe(entry)
                ),
            ));
        };
        let keys =
            string_keys(map).map_err(|k| self.err(src, entry.line, format!("key {} is not a string", describe(k))))?;
        let kinds: Vec<&Pair> = keys.iter().filter(|p| ENTRY_KEYS.contains(&p.name)).collect();
        match kinds.as_slice() {
            [] => match keys.first() {
                None => Err(self.err(
                    src,
                    entry.line,
                    "empty entry; expected global_params, include or mount_point",
                )),
                Some(p) => Err(self.err(
                    src,
                    p.key.line,
                    format!(
                        "unknown key \"{}\" at the start of an entry (expected global_params, include or mount_point){}",
                        p.name,
                        did_you_mean(p.name, ENTRY_KEYS)
                    ),
                )),
            },
            [kind] => match kind.name {
                "global_params" => self.global_entry(src, &keys),
                "include" => self.include_entry(src, kind, &keys, depth),
                _ => self.mount_entry(src, kind, &keys),
            },
            [first, second, ..] => Err(self.err(
                src,
                second.key.line,
                format!(
                    "{}: this entry already has a {} key; start each with its own \"- \"",
                    second.name, first.name
                ),
            )),
        }
    }

    // ---- global_params ----------------------------------------------------------------------

    pub(super) fn global_entry(&mut self, src: usize, keys: &[Pair]) -> Result<()> {
        // Parameters may follow `global_params:` at the same indentation (the original PLFS 2.5
        // layout, where global_params has no value) or be nested under it.
        let mut params: Vec<Pair> = Vec::new();
        for p in keys {
            if p.name != "global_params" {
                params.push(*p);
                continue;
            }
            match &p.value.value {
                Value::Null => {}
                Value::Mapping(m) => params.extend(string_keys(m).map_err(|k| {
                    self.err(
                        src,
                        p.value.line,
                        format!("global_params: key {} is not a string", describe(k)),
                    )
                })?),
                _ => {
                    return Err(self.err(
                        src,
                        p.value.line,
                        format!(
                            "global_params: expected parameters (key: value lines), found {}",
                            describe(p.value)
                        ),
                    ))
                }
            }
        }
        for (n, p) in params.iter().enumerate() {
            if params[..n].iter().any(|q| q.name == p.name) {
                return Err(self.err(
                    src,
                    p.key.line,
                    format!("{}: set twice in the same global_params entry", p.name),
                ));
            }
        }
        for p in params {
            self.global_param(src, p)?;
        }
        Ok(())
    }

    pub(super) fn global_param(&mut self, src: usize, p: Pair) -> Result<()> {
        let (k, v) = (p.name, p.value);
        match k {
            "num_hostdirs" => self.global.num_hostdirs = self.uint(src, k, v, 1, 1024)? as u32,
            "container_format" => self.global.container_format = self.uint(src, k, v, 2, 3)? as u32,
            "threadpool_size" => self.global.threadpool_size = self.uint(src, k, v, 1, 1024)? as u32,
            "index_buffer_records" => {
                self.global.index_buffer_records = self.uint(src, k, v, 1, 16 * 1024 * 1024)? as u32
            }
            "max_open_data_logs" => self.global.max_open_data_logs = self.uint(src, k, v, 1, 65536)? as u32,
            "data_checksums" => self.global.data_checksums = self.boolean(src, k, v)?,
            "index_compression" => self.global.index_compression = self.boolean(src, k, v)?,
            "auto_compaction" => self.global.auto_compaction = self.boolean(src, k, v)?,
            "compaction_dead_ratio" => self.global.compaction_dead_permille = self.ratio(src, k, v)?,
            "compaction_min_bytes" => self.global.compaction_min_bytes = self.uint(src, k, v, 0, u64::MAX)?,
            "lazy_stat" | "lazy_droppings" | "compress_contiguous" => {
                self.boolean(src, k, v)?;
                self.warn(
                    src,
                    p.key.line,
                    format!("{k}: accepted for compatibility, has no effect"),
                );
            }
            "index_buffer_mbs" | "read_buffer_mbs" => {
                self.uint(src, k, v, 0, u64::MAX)?;
                self.warn(
                    src,
                    p.key.line,
                    format!("{k}: accepted for compatibility, has no effect"),
                );
            }
            _ if IGNORED_GLOBAL_KEYS.contains(&k) => {
                let what = if k.starts_with("mlog_") || k == "fuse_crash_log" {
                    "ignored (logging is controlled by $PLFS_LOG)"
                } else {
                    "accepted for compatibility, has no effect"
                };
                self.warn(src, p.key.line, format!("{k}: {what}"));
            }
            _ => {
                return Err(self.err(
                    src,
                    p.key.line,
                    format!(
                        "unknown key \"{k}\" in global_params{}",
                        did_you_mean(k, &[GLOBAL_KEYS, IGNORED_GLOBAL_KEYS].concat())
                    ),
                ))
            }
        }
        Ok(())
    }

    /// An unsigned integer in `lo..=hi` (a quoted number is accepted too, as the original did).
    pub(super) fn uint(&self, src: usize, k: &str, v: &Node, lo: u64, hi: u64) -> Result<u64> {
        let n: Option<i128> = match &v.value {
            Value::Int(n) => Some(*n),
            Value::String(s) => s.trim().parse::<i128>().ok(),
            _ => None,
        };
        let expected = if hi == u64::MAX {
            "a non-negative integer".to_string()
        } else {
            format!("an integer in {lo}..={hi}")
        };
        let Some(n) = n else {
            return Err(self.err(src, v.line, format!("{k}: expected {expected}, found {}", describe(v))));
        };
        if n < i128::from(lo) || n > i128::from(hi) {
            let range = if hi == u64::MAX {
                format!("{lo}..")
            } else {
                format!("{lo}..={hi}")
            };
            return Err(self.err(src, v.line, format!("{k}: {n} is out of range {range}")));
        }
        Ok(n as u64)
    }

    /// A ratio in 0..=1 (`0.5`, `1`, or a percentage `"50%"`), returned in thousandths.
    pub(super) fn ratio(&self, src: usize, k: &str, v: &Node) -> Result<u32> {
        let x: Option<f64> = match &v.value {
            Value::Int(n) => Some(*n as f64),
            Value::Float(x) => Some(*x),
            Value::String(s) => {
                let t = s.trim();
                match t.strip_suffix('%') {
                    Some(p) => p.trim().parse::<f64>().ok().map(|p| p / 100.0),
                    None => t.parse::<f64>().ok(),
                }
            }
            _ => None,
        };
        match x {
            Some(x) if (0.0..=1.0).contains(&x) => Ok((x * 1000.0).round() as u32),
            Some(x) => Err(self.err(src, v.line, format!("{k}: {x} is out of range 0..=1"))),
            None => Err(self.err(
                src,
                v.line,
                format!(
                    "{k}: expected a ratio between 0 and 1 (or a percentage), found {}",
                    describe(v)
                ),
            )),
        }
    }

    /// A boolean: true/false, yes/no, on/off, y/n (any case), or 0/1.
    pub(super) fn boolean(&self, src: usize, k: &str, v: &Node) -> Result<bool> {
        let b = match &v.value {
            Value::Bool(b) => Some(*b),
            Value::Int(0) => Some(false),
            Value::Int(1) => Some(true),
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
                v.line,
                format!("{k}: expected true/false (or 1/0), found {}", describe(v)),
            )
        })
    }

    // ---- include ----------------------------------------------------------------------------

    pub(super) fn include_entry(&mut self, src: usize, include: &Pair, keys: &[Pair], depth: usize) -> Result<()> {
        if let Some(p) = keys.iter().find(|p| p.name != "include") {
            return Err(self.err(
                src,
                p.key.line,
                format!(
                    "unknown key \"{}\" in include entry (an include entry has only the include key)",
                    p.name
                ),
            ));
        }
        let v = include.value;
        let targets: Vec<(&str, usize)> = match &v.value {
            Value::String(s) => vec![(s.as_str(), v.line)],
            Value::Sequence(seq) if !seq.is_empty() => {
                let mut t = Vec::new();
                for el in seq {
                    match el.as_str() {
                        Some(s) => t.push((s, el.line)),
                        None => {
                            return Err(self.err(
                                src,
                                el.line,
                                format!("include: expected a file name, found {}", describe(el)),
                            ))
                        }
                    }
                }
                t
            }
            _ => {
                return Err(self.err(
                    src,
                    v.line,
                    format!("include: expected a file name, found {}", describe(v)),
                ))
            }
        };
        for (name, line) in targets {
            self.include_one(src, line, name, depth)?;
        }
        Ok(())
    }

    pub(super) fn include_one(&mut self, src: usize, line: usize, name: &str, depth: usize) -> Result<()> {
        if name.is_empty() {
            return Err(self.err(src, line, "include: empty file name"));
        }
        let target = expand_tilde(name).map_err(|m| self.err(src, line, format!("include: {m}")))?;
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
                line,
                format!(
                    "include: {}: includes are nested more than {MAX_INCLUDE_DEPTH} deep",
                    target.display()
                ),
            ));
        }
        let (bytes, ident) = read_file(&target).map_err(|e| {
            self.err(
                src,
                line,
                format!("include: cannot read {}: {}", target.display(), super::why(e)),
            )
        })?;
        if let Some(pos) = self.stack.iter().position(|&s| self.sources[s].ident == ident) {
            let mut chain: Vec<String> = self.stack[pos..]
                .iter()
                .map(|&s| self.sources[s].path.display().to_string())
                .collect();
            chain.push(target.display().to_string());
            return Err(self.err(src, line, format!("include: include cycle: {}", chain.join(" -> "))));
        }
        if let Some(prev) = self.sources.iter().find(|s| s.ident == ident) {
            return Err(self.err(
                src,
                line,
                format!(
                    "include: {} is already included (as {}); a file may be read only once",
                    target.display(),
                    prev.path.display()
                ),
            ));
        }
        self.parse_bytes(&target, &bytes, ident, depth + 1)
    }

    // ---- whole-configuration checks ---------------------------------------------------------

    pub(super) fn finish(self) -> Result<Config> {
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
                let first = self.at(oa.src, oa.mount_point);
                if mb.mount_point == ma.mount_point {
                    return Err(self.err(
                        ob.src,
                        ob.mount_point,
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
                    ob.mount_point,
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
                            *ls,
                            format!(
                                "location: {} {which} mount point {} (defined at {}); a backend inside a mount \
                                 point would loop (PLFS would store its files inside itself)",
                                spec.location.display(),
                                other.mount_point.display(),
                                self.at(oo.src, oo.mount_point)
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
