//! The plfsrc loader, continued: `- mount_point:` entries and their backends.

use super::load::Loader;
use super::values::*;
use super::*;

impl Loader {
    // ---- mount_point ------------------------------------------------------------------------

    pub(super) fn mount_entry(&mut self, src: usize, mp: &Pair, keys: &[Pair]) -> Result<()> {
        let mount_point = match mp.value.as_str() {
            Some(s) => abs_path(s).map_err(|m| self.err(src, mp.value.line, format!("mount_point: {m}")))?,
            None => {
                return Err(self.err(
                    src,
                    mp.value.line,
                    format!("mount_point: expected an absolute path, found {}", describe(mp.value)),
                ))
            }
        };
        let mpd = mount_point.display().to_string();
        let mut workload = Workload::SharedFile;
        let mut backends = None;
        for p in keys {
            match p.name {
                "mount_point" => {}
                "workload" => workload = self.workload(src, p.value)?,
                "backends" => backends = Some((p.key.line, self.backends(src, p.value)?)),
                k if IGNORED_MOUNT_KEYS.contains(&k) => self.warn(
                    src,
                    p.key.line,
                    format!("{k}: accepted for compatibility, has no effect"),
                ),
                k => {
                    return Err(self.err(
                        src,
                        p.key.line,
                        format!(
                            "unknown key \"{k}\" in mount_point {mpd}{}",
                            did_you_mean(k, &[MOUNT_KEYS, IGNORED_MOUNT_KEYS].concat())
                        ),
                    ))
                }
            }
        }
        let Some((backends_line, (backends, locations))) = backends else {
            return Err(self.err(
                src,
                mp.key.line,
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
                        locations[b],
                        format!("location: {loc} is listed twice in the backends of mount_point {mpd}"),
                    ));
                }
                if spec.location.starts_with(&prev.location) || prev.location.starts_with(&spec.location) {
                    return Err(self.err(
                        src,
                        locations[b],
                        format!(
                            "location: {loc} and {} overlap (one is inside the other) in the backends of \
                             mount_point {mpd}; backends must be disjoint",
                            prev.location.display()
                        ),
                    ));
                }
            }
        }
        if backends.iter().all(|b| b.role == BackendRole::Shadow) {
            return Err(self.err(
                src,
                backends_line,
                format!(
                    "backends: every backend of mount_point {mpd} is type: shadow; at least one must be \
                     canonical (type: canonical or no type)"
                ),
            ));
        }
        if backends.iter().all(|b| b.role == BackendRole::Canonical) {
            return Err(self.err(
                src,
                backends_line,
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
                mount_point: mp.value.line,
                locations,
            },
        ));
        Ok(())
    }

    pub(super) fn workload(&self, src: usize, v: &Node) -> Result<Workload> {
        let Some(s) = v.as_str() else {
            return Err(self.err(
                src,
                v.line,
                format!("workload: expected shared_file, found {}", describe(v)),
            ));
        };
        match s.trim().to_ascii_lowercase().as_str() {
            "shared_file" | "n-1" | "n-1:byterange" => Ok(Workload::SharedFile),
            "file_per_proc" | "n-n" => Ok(Workload::FilePerProc),
            "small_file" | "1-n" => Ok(Workload::SmallFile),
            _ => Err(self.err(
                src,
                v.line,
                format!("workload: unknown workload \"{s}\" (expected shared_file/n-1, file_per_proc/n-n or small_file/1-n)"),
            )),
        }
    }

    /// Parses `backends:`, returning the specs and the line of each location.
    pub(super) fn backends(&self, src: usize, v: &Node) -> Result<(Vec<BackendSpec>, Vec<usize>)> {
        let mut specs = Vec::new();
        let mut lines = Vec::new();
        match &v.value {
            // The older form: a comma-separated list of directories.
            Value::String(s) => {
                for part in s.split(',') {
                    let part = part.trim();
                    if part.is_empty() {
                        return Err(self.err(src, v.line, format!("backends: empty location in \"{s}\"")));
                    }
                    let location = location(part).map_err(|m| self.err(src, v.line, format!("backends: {m}")))?;
                    specs.push(BackendSpec {
                        location,
                        role: BackendRole::Both,
                    });
                    lines.push(v.line);
                }
            }
            Value::Sequence(seq) => {
                for el in seq {
                    let (spec, line) = self.backend(src, el)?;
                    specs.push(spec);
                    lines.push(line);
                }
            }
            Value::Null => {}
            _ => {
                return Err(self.err(
                    src,
                    v.line,
                    format!(
                        "backends: expected a list of \"- location: <dir>\" entries, found {}",
                        describe(v)
                    ),
                ))
            }
        }
        if specs.is_empty() {
            return Err(self.err(src, v.line, "backends: no locations listed; at least one is required"));
        }
        Ok((specs, lines))
    }

    /// One `- location:` entry (or a plain directory), and the line of its location.
    pub(super) fn backend(&self, src: usize, el: &Node) -> Result<(BackendSpec, usize)> {
        match &el.value {
            Value::String(s) => {
                let location = location(s).map_err(|m| self.err(src, el.line, format!("location: {m}")))?;
                Ok((
                    BackendSpec {
                        location,
                        role: BackendRole::Both,
                    },
                    el.line,
                ))
            }
            Value::Mapping(m) => {
                let keys = string_keys(m)
                    .map_err(|k| self.err(src, el.line, format!("backends: key {} is not a string", describe(k))))?;
                let mut loc = None;
                let mut role = BackendRole::Both;
                for p in keys {
                    let v = p.value;
                    match p.name {
                        "location" => {
                            let Some(s) = v.as_str() else {
                                return Err(self.err(
                                    src,
                                    v.line,
                                    format!("location: expected a directory, found {}", describe(v)),
                                ));
                            };
                            let spec = location(s).map_err(|m| self.err(src, v.line, format!("location: {m}")))?;
                            loc = Some((spec, v.line));
                        }
                        "type" => {
                            role = match v.as_str().map(|s| s.trim().to_ascii_lowercase()).as_deref() {
                                Some("canonical") => BackendRole::Canonical,
                                Some("shadow") => BackendRole::Shadow,
                                _ => {
                                    return Err(self.err(
                                        src,
                                        v.line,
                                        format!("type: expected canonical or shadow, found {}", describe(v)),
                                    ))
                                }
                            }
                        }
                        k => {
                            return Err(self.err(
                                src,
                                p.key.line,
                                format!(
                                    "unknown key \"{k}\" in backends entry (expected location and type){}",
                                    did_you_mean(k, BACKEND_KEYS)
                                ),
                            ))
                        }
                    }
                }
                match loc {
                    Some((location, line)) => Ok((BackendSpec { location, role }, line)),
                    None => Err(self.err(src, el.line, "backends: entry has no \"location\" key")),
                }
            }
            _ => Err(self.err(
                src,
                el.line,
                format!("backends: expected \"- location: <dir>\", found {}", describe(el)),
            )),
        }
    }
}
