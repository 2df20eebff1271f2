//! The plfsrc loader, continued: `- mount_point:` entries and their backends.

use super::load::Loader;
use super::values::*;
use super::*;

impl Loader {
    // ---- mount_point ------------------------------------------------------------------------

    pub(super) fn mount_entry(&mut self, src: usize, i: usize, keys: &[(&str, &Value)]) -> Result<()> {
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
                            did_you_mean(k, &[MOUNT_KEYS, IGNORED_MOUNT_KEYS].concat())
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

    pub(super) fn workload(&self, src: usize, vs: &[Step], v: &Value) -> Result<Workload> {
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
    pub(super) fn backends(&self, src: usize, i: usize, v: &Value) -> Result<(Vec<BackendSpec>, Vec<Steps>)> {
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

    pub(super) fn backend(&self, src: usize, es: &[Step], el: &Value) -> Result<(BackendSpec, Vec<Step>)> {
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
                                    did_you_mean(k, BACKEND_KEYS)
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
}
