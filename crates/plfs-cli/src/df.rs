//! `plfs df [PATH]`: the backends of a mount point (of PATH's, or of every mount point), each
//! with the capacity and free space of the file system it lies on, and the entries PLFS keeps
//! under it (every directory entry below the backend directory, counted by walking it).

use crate::fail::{Failure, IoContext, Reported};
use crate::globals::Globals;
use crate::util::{absolute, human_iec, open_plfs};
use anyhow::Result;
use clap::{ArgAction, Args};
use plfs_core::config::{BackendRole, MountConfig};
use serde_json::json;
use std::path::{Path, PathBuf};

/// Arguments of `plfs df`.
#[derive(Debug, Args)]
#[command(disable_help_flag = true)]
pub struct DfArgs {
    /// Sizes in powers of 1024 (K, M, G) instead of bytes.
    #[arg(short = 'h', long = "human-readable")]
    human: bool,
    /// Print help.
    #[arg(long, action = ArgAction::Help)]
    help: Option<bool>,
    /// A path under a mount point: only that mount point's backends (default: every mount point).
    path: Option<PathBuf>,
}

/// One backend's line.
struct Row {
    mount: PathBuf,
    backend: PathBuf,
    role: &'static str,
    size: u64,
    used: u64,
    avail: u64,
    entries: u64,
}

fn role(r: BackendRole) -> &'static str {
    match r {
        BackendRole::Both => "both",
        BackendRole::Canonical => "canonical",
        BackendRole::Shadow => "shadow",
    }
}

/// Entries below `dir` (not `dir` itself), without following symbolic links.
pub fn count_entries(dir: &Path) -> Result<u64> {
    let mut n = 0;
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).at("cannot read directory", &d)? {
            let e = e.at("cannot read directory", &d)?;
            n += 1;
            if e.file_type().at("cannot stat", &e.path())?.is_dir() {
                todo.push(e.path());
            }
        }
    }
    Ok(n)
}

fn row(m: &MountConfig, b: &plfs_core::config::BackendSpec) -> Result<Row> {
    let st = nix::sys::statvfs::statvfs(&b.location).map_err(|e| {
        Failure::io(
            "cannot measure backend",
            &b.location,
            &std::io::Error::from_raw_os_error(e as i32),
        )
    })?;
    let unit = st.fragment_size() as u64;
    let size = st.blocks() as u64 * unit;
    let free = st.blocks_free() as u64 * unit;
    Ok(Row {
        mount: m.mount_point.clone(),
        backend: b.location.clone(),
        role: role(b.role),
        size,
        used: size.saturating_sub(free),
        avail: st.blocks_available() as u64 * unit,
        entries: count_entries(&b.location)?,
    })
}

/// Runs `plfs df`.
pub fn df(cli: &Globals, a: &DfArgs) -> Result<()> {
    let plfs = open_plfs(cli)?;
    let cfg = plfs.config();
    let mounts: Vec<&MountConfig> = match &a.path {
        None => cfg.mounts.iter().collect(),
        Some(p) => {
            let abs = absolute(p)?;
            let (m, _) = cfg
                .mount_for(&abs)
                .ok_or_else(|| Failure::new(&abs, 18, format!("{}: not under a PLFS mount point", abs.display())))?;
            vec![m]
        }
    };
    let mut rows = Vec::new();
    let mut failed = false;
    for m in mounts {
        for b in &m.backends {
            match row(m, b) {
                Ok(r) => rows.push(r),
                Err(e) => {
                    crate::fail::report(&e, crate::out::EXIT_FAILURE);
                    failed = true;
                }
            }
        }
    }
    if crate::out::json_mode() {
        let v: Vec<_> = rows
            .iter()
            .map(|r| {
                json!({
                    "mount_point": r.mount.display().to_string(), "backend": r.backend.display().to_string(),
                    "role": r.role, "size_bytes": r.size, "used_bytes": r.used, "avail_bytes": r.avail,
                    "entries": r.entries,
                })
            })
            .collect();
        crate::out::json(&json!({ "backends": v }));
    } else {
        let sz = |n: u64| if a.human { human_iec(n) } else { n.to_string() };
        outln!(
            "{:>14} {:>14} {:>14} {:>5} {:>9}  {:<9}  backend (mount point)",
            "size",
            "used",
            "avail",
            "use%",
            "entries",
            "role"
        );
        for r in &rows {
            let pct = if r.size == 0 {
                "-".to_string()
            } else {
                format!("{}%", (r.used * 100).div_ceil(r.size))
            };
            outln!(
                "{:>14} {:>14} {:>14} {:>5} {:>9}  {:<9}  {} ({})",
                sz(r.size),
                sz(r.used),
                sz(r.avail),
                pct,
                r.entries,
                r.role,
                r.backend.display(),
                r.mount.display()
            );
        }
    }
    if failed {
        return Err(Reported.into());
    }
    Ok(())
}
