//! The plfsrc loader: reads a file and its includes, checks every key and value, and builds a
//! [`Config`](super::Config), with errors that name the file, line and key.

use super::*;

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
pub(super) struct Loader {
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

    pub(super) fn parse_bytes(&mut self, path: &Path, bytes: &[u8], ident: Ident, depth: usize) -> Result<()> {
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

    pub(super) fn parse_text(&mut self, path: &Path, text: String, ident: Ident, depth: usize) -> Result<()> {
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
                        "unknown key \"{k}\" at the start of an entry (expected global_params, include or mount_point){}",
                        did_you_mean(k, &["global_params", "include", "mount_point"])
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
            "index_compression" => self.global.index_compression = self.boolean(src, &vs, k, v)?,
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
                        format!(
                            "unknown key \"{k}\" in mount_point {mpd}{}",
                            did_you_mean(
                                k,
                                &[&["mount_point", "workload", "backends"], IGNORED_MOUNT_KEYS].concat()
                            )
                        ),
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
            "file_per_proc" | "n-n" => Ok(Workload::FilePerProc),
            "small_file" | "1-n" => Ok(Workload::SmallFile),
            _ => Err(self.err(
                src,
                vs,
                format!("workload: unknown workload \"{s}\" (expected shared_file/n-1, file_per_proc/n-n or small_file/1-n)"),
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
                                format!(
                                    "unknown key \"{k}\" in backends entry (expected location and type){}",
                                    did_you_mean(k, &["location", "type"])
                                ),
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

/// Keys of global_params that have an effect.
const GLOBAL_KEYS: &[&str] = &[
    "num_hostdirs",
    "threadpool_size",
    "index_buffer_records",
    "max_open_data_logs",
    "data_checksums",
    "index_compression",
    "lazy_stat",
    "lazy_droppings",
    "compress_contiguous",
    "index_buffer_mbs",
    "read_buffer_mbs",
];

/// `; did you mean "x"?` when a known key is within a small edit distance of `k` (a typo), else
/// nothing.
pub(crate) fn did_you_mean(k: &str, known: &[&str]) -> String {
    let limit = (k.chars().count() / 3).clamp(1, 3);
    known
        .iter()
        .map(|c| (edit_distance(k, c), *c))
        .filter(|&(d, _)| d <= limit)
        .min()
        .map_or_else(String::new, |(_, c)| format!("; did you mean \"{c}\"?"))
}

/// Levenshtein distance (ASCII-case-insensitive).
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().map(|c| c.to_ascii_lowercase()).collect();
    let b: Vec<char> = b.chars().map(|c| c.to_ascii_lowercase()).collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != cb)).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}
