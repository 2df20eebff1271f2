//! `plfs check-config`: load the configuration, print it, and check that every backend exists and
//! is a writable directory (creating missing ones with `--mkdir`); with `--probe`, try on every
//! backend the file system features plfs relies on or falls back from.

use crate::globals::Globals;
use crate::util::load_config;
use anyhow::{bail, Result};
use clap::Args;
use plfs_core::config::{BackendRole, Config};
use plfs_core::ProbeItem;
use serde_json::json;
use std::path::Path;

/// Arguments of `plfs check-config`.
#[derive(Debug, Args)]
pub struct CheckConfigArgs {
    /// Create missing backend directories.
    #[arg(long, alias = "mkdir-backends")]
    mkdir: bool,
    /// Also try, in a scratch directory on every backend, the file system features plfs uses
    /// (renameat2 flags, flock, directory fsync, openat2...) and say which fallback it will use.
    #[arg(long)]
    probe: bool,
}

/// What was found at a backend location.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Status {
    Ok,
    Created,
    /// Missing, but the zero-config default creates it at first use.
    WillCreate,
    Problem(String),
}

impl Status {
    fn text(&self) -> String {
        match self {
            Status::Ok => "ok".into(),
            Status::Created => "created".into(),
            Status::WillCreate => "missing: created at first use (zero-config default)".into(),
            Status::Problem(p) => format!("ERROR: {p}"),
        }
    }
}

fn role_name(r: BackendRole) -> &'static str {
    match r {
        BackendRole::Both => "canonical+shadow",
        BackendRole::Canonical => "canonical",
        BackendRole::Shadow => "shadow",
    }
}

/// `SharedFile` → `shared_file`.
fn snake(debug: &str) -> String {
    let mut s = String::new();
    for (i, c) in debug.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                s.push('_');
            }
            s.push(c.to_ascii_lowercase());
        } else {
            s.push(c);
        }
    }
    s
}

/// Checks one backend directory: exists (or is created), is a directory, and a file can be
/// created in it (a real test: access(2) says yes to root on a read-only mount).
fn check_backend(loc: &Path, mkdir: bool, zero_config: bool) -> Status {
    let mut created = false;
    match std::fs::metadata(loc) {
        Ok(m) if !m.is_dir() => return Status::Problem("exists but is not a directory".into()),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if mkdir {
                if let Err(e) = std::fs::create_dir_all(loc) {
                    return Status::Problem(format!("cannot create it: {e}"));
                }
                created = true;
            } else if zero_config {
                return Status::WillCreate;
            } else {
                return Status::Problem("does not exist (create it, or run `plfs check-config --mkdir`)".into());
            }
        }
        Err(e) => return Status::Problem(format!("cannot stat it: {e}")),
    }
    // The temporary prefix keeps a leftover probe out of every listing.
    let probe = loc.join(format!("{}check.{}", plfs_core::TMP_PREFIX, std::process::id()));
    match std::fs::OpenOptions::new().write(true).create_new(true).open(&probe) {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
        }
        Err(e) => return Status::Problem(format!("not writable: {e}")),
    }
    if created {
        Status::Created
    } else {
        Status::Ok
    }
}

fn print_text(cfg: &Config, results: &[Vec<Status>]) {
    if cfg.files.is_empty() {
        outln!("configuration: zero-config default (no $PLFSRC, ~/.plfsrc or /etc/plfsrc found)");
    } else {
        outln!("configuration files read:");
        for f in &cfg.files {
            outln!("  {}", f.display());
        }
    }
    for w in &cfg.warnings {
        outln!("warning: {w}");
    }
    let g = &cfg.global;
    outln!("global_params:");
    outln!("  num_hostdirs: {}", g.num_hostdirs);
    outln!("  threadpool_size: {}", g.threadpool_size);
    outln!("  index_buffer_records: {}", g.index_buffer_records);
    outln!("  data_checksums: {}", g.data_checksums);
    outln!("  max_open_data_logs: {}", g.max_open_data_logs);
    for (m, st) in cfg.mounts.iter().zip(results) {
        outln!("mount_point: {}", m.mount_point.display());
        outln!("  workload: {}", snake(&format!("{:?}", m.workload)));
        outln!("  backends:");
        for (b, s) in m.backends.iter().zip(st) {
            outln!("    {} ({}): {}", b.location.display(), role_name(b.role), s.text());
        }
    }
}

fn to_json(cfg: &Config, results: &[Vec<Status>], ok: bool) -> serde_json::Value {
    let g = &cfg.global;
    json!({
        "files": cfg.files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>(),
        "zero_config": cfg.files.is_empty(),
        "warnings": cfg.warnings,
        "global_params": {
            "num_hostdirs": g.num_hostdirs,
            "threadpool_size": g.threadpool_size,
            "index_buffer_records": g.index_buffer_records,
            "data_checksums": g.data_checksums,
            "max_open_data_logs": g.max_open_data_logs,
        },
        "mounts": cfg.mounts.iter().zip(results).map(|(m, st)| json!({
            "mount_point": m.mount_point.display().to_string(),
            "workload": snake(&format!("{:?}", m.workload)),
            "backends": m.backends.iter().zip(st).map(|(b, s)| json!({
                "location": b.location.display().to_string(),
                "role": role_name(b.role),
                "status": s.text(),
                "ok": !matches!(s, Status::Problem(_)),
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "ok": ok,
    })
}

/// Runs `plfs check-config`.
pub fn check_config(cli: &Globals, a: &CheckConfigArgs) -> Result<()> {
    let cfg = load_config(cli)?;
    let zero = cfg.files.is_empty();
    let results: Vec<Vec<Status>> = cfg
        .mounts
        .iter()
        .map(|m| {
            m.backends
                .iter()
                .map(|b| check_backend(&b.location, a.mkdir, zero))
                .collect()
        })
        .collect();
    let mut problems = Vec::new();
    for (m, st) in cfg.mounts.iter().zip(&results) {
        if m.canonical().is_empty() {
            problems.push(format!("mount point {}: no canonical backend", m.mount_point.display()));
        }
        if m.shadows().is_empty() {
            problems.push(format!("mount point {}: no shadow backend", m.mount_point.display()));
        }
        for (b, s) in m.backends.iter().zip(st) {
            if let Status::Problem(p) = s {
                problems.push(format!(
                    "mount point {}: backend {}: {p}",
                    m.mount_point.display(),
                    b.location.display()
                ));
            }
        }
    }
    let probes = if a.probe { probe_all(&cfg, &results) } else { Vec::new() };
    if cli.json {
        let mut v = to_json(&cfg, &results, problems.is_empty());
        if a.probe {
            v["probes"] = probes_json(&probes);
        }
        crate::out::json(&v);
    } else {
        print_text(&cfg, &results);
        print_probes(&probes);
    }
    if !problems.is_empty() {
        bail!(
            "the configuration has {} problem(s):\n  {}",
            problems.len(),
            problems.join("\n  ")
        );
    }
    if !cli.json {
        outln!("configuration OK");
    }
    Ok(())
}

/// One backend's probe result.
type BackendProbe = (std::path::PathBuf, std::result::Result<Vec<ProbeItem>, String>);

/// Probes every distinct backend that exists.
fn probe_all(cfg: &Config, results: &[Vec<Status>]) -> Vec<BackendProbe> {
    let mut out: Vec<BackendProbe> = Vec::new();
    for (m, st) in cfg.mounts.iter().zip(results) {
        for (b, s) in m.backends.iter().zip(st) {
            if out.iter().any(|(p, _)| *p == b.location) || !matches!(s, Status::Ok | Status::Created) {
                continue;
            }
            let r = plfs_core::probe_backend(&b.location).map_err(|e| e.to_string());
            out.push((b.location.clone(), r));
        }
    }
    out
}

fn print_probes(probes: &[BackendProbe]) {
    for (path, r) in probes {
        outln!("probe of {}:", path.display());
        match r {
            Ok(items) => {
                for i in items {
                    let mark = if i.supported { "yes" } else { "no " };
                    outln!("  {mark}  {:<28} {}", i.feature, i.detail);
                }
            }
            Err(e) => outln!("  could not probe: {e}"),
        }
    }
}

fn probes_json(probes: &[BackendProbe]) -> serde_json::Value {
    json!(probes
        .iter()
        .map(|(path, r)| match r {
            Ok(items) => json!({
                "backend": path.display().to_string(),
                "features": items.iter().map(|i| json!({
                    "feature": i.feature, "supported": i.supported, "detail": i.detail,
                })).collect::<Vec<_>>(),
            }),
            Err(e) => json!({"backend": path.display().to_string(), "error": e}),
        })
        .collect::<Vec<_>>())
}
