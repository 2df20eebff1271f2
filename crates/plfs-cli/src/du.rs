//! `plfs du`: space used by logical files, per file and in total.
//!
//! - **logical**: the file's size as `stat` reports it.
//! - **physical**: bytes of the backend files behind it. For an N-1 container: its marker, meta
//!   droppings, index and data logs on every backend (shadow backends included) and its flattened
//!   index. For an N-N file: the plain backend file. Packed 1-N files share their directory's
//!   logs, so their physical bytes are shown once per directory, on a `packed logs` row.
//! - **dead**: 1 - live / physical data bytes, where live bytes are what a reader sees (holes
//!   excluded) and physical data bytes are the data in the data logs (headers excluded): the
//!   share of stored data that was overwritten or truncated away.
//! - **entries**: backend directory entries behind it (files and directories, on every backend):
//!   for an N-1 container, what `plfs query` lists (container and meta directories, marker,
//!   droppings, hostdirs, logs, shadow directories); 1 for an N-N file or a symlink; none for a
//!   packed 1-N file, whose directory's `packed logs` row counts its shared logs. The logical
//!   directories themselves are not counted.
//! - **writers**: writers that have the file open now (open records in the container; N-N and
//!   1-N files keep none, so it is not known there).

use crate::fail::{CoreContext, Reported};
use crate::globals::Globals;
use crate::util::{absolute, human_iec, open_plfs, plural, require_plfs_path};
use anyhow::Result;
use clap::{ArgAction, Args};
use plfs_core::{compact, tools, FileKind, Plfs, Storage};
use serde_json::json;
use std::path::{Path, PathBuf};

/// Arguments of `plfs du`.
#[derive(Debug, Args)]
#[command(disable_help_flag = true)]
pub struct DuArgs {
    /// Sizes in powers of 1024 (K, M, G) instead of bytes.
    #[arg(short = 'h', long = "human-readable")]
    human: bool,
    /// Only a total for each argument.
    #[arg(short = 's', long)]
    summarize: bool,
    /// Print help.
    #[arg(long, action = ArgAction::Help)]
    help: Option<bool>,
    /// Logical files or directories (default: the first mount point).
    paths: Vec<PathBuf>,
}

/// Usage of one file, or of a directory's packed logs.
#[derive(Debug, Clone, Default)]
struct Usage {
    path: PathBuf,
    kind: &'static str,
    logical: u64,
    physical: Option<u64>,
    /// Physical data bytes.
    data: Option<u64>,
    /// Live data bytes.
    live: Option<u64>,
    writers: Option<u64>,
    /// Backend entries.
    entries: u64,
}

impl Usage {
    fn dead(&self) -> Option<f64> {
        match (self.live, self.data) {
            (Some(_), Some(0)) => Some(0.0),
            (Some(l), Some(d)) => Some((1.0 - l as f64 / d as f64).max(0.0)),
            _ => None,
        }
    }

    fn json(&self) -> serde_json::Value {
        json!({
            "path": self.path.display().to_string(), "kind": self.kind,
            "logical_bytes": self.logical, "physical_bytes": self.physical,
            "physical_data_bytes": self.data, "live_bytes": self.live,
            "dead_ratio": self.dead(), "writers": self.writers, "backend_entries": self.entries,
        })
    }
}

/// Sums of many [`Usage`]s.
#[derive(Debug, Clone, Default)]
struct Total {
    files: u64,
    logical: u64,
    physical: u64,
    data: u64,
    live: u64,
    writers: u64,
    entries: u64,
}

impl Total {
    fn add(&mut self, u: &Usage) {
        if u.kind != "packed logs" {
            self.files += 1;
            self.logical += u.logical;
        }
        self.physical += u.physical.unwrap_or(0);
        self.data += u.data.unwrap_or(0);
        self.live += u.live.unwrap_or(0);
        self.writers += u.writers.unwrap_or(0);
        self.entries += u.entries;
    }

    fn dead(&self) -> f64 {
        if self.data == 0 {
            0.0
        } else {
            (1.0 - self.live as f64 / self.data as f64).max(0.0)
        }
    }

    fn json(&self, path: &Path) -> serde_json::Value {
        json!({
            "path": path.display().to_string(), "files": self.files,
            "logical_bytes": self.logical, "physical_bytes": self.physical,
            "physical_data_bytes": self.data, "live_bytes": self.live,
            "dead_ratio": self.dead(), "writers": self.writers, "backend_entries": self.entries,
        })
    }
}

/// Usage of one N-1 container (`plfs_core::compact::usage`, which `plfs stat` and
/// `plfs compact` report too).
fn container_usage(plfs: &Plfs, path: &Path, logical: u64) -> Result<Usage> {
    let u = compact::usage(plfs, path)
        .at("cannot measure", path)?
        .unwrap_or_default();
    Ok(Usage {
        path: path.to_path_buf(),
        kind: "file",
        logical,
        physical: Some(u.physical),
        data: Some(u.data),
        live: Some(u.live),
        writers: Some(u.writers),
        entries: tools::query(plfs, path).at("cannot measure", path)?.len() as u64,
    })
}

/// Usage of one file written by PLFS 2.x: its backend files (data logs have no header), its
/// merged index, and its open records.
fn legacy_usage(plfs: &Plfs, path: &Path, logical: u64) -> Result<Usage> {
    let phys = tools::query(plfs, path).at("cannot measure", path)?;
    let map = tools::map(plfs, path).at("cannot measure", path)?;
    let is_open = |p: &tools::Physical| {
        p.kind == "dropping"
            && p.path
                .file_name()
                .is_some_and(|n| n.as_encoded_bytes().starts_with(b"open."))
    };
    Ok(Usage {
        path: path.to_path_buf(),
        kind: "legacy file",
        logical,
        physical: Some(phys.iter().map(|p| p.size).sum()),
        data: Some(phys.iter().filter(|p| p.kind == "data log").map(|p| p.size).sum()),
        live: Some(map.iter().map(|e| e.length).sum()),
        writers: Some(phys.iter().filter(|p| is_open(p)).count() as u64),
        entries: phys.len() as u64,
    })
}

/// Usage of one logical file (not a directory).
fn file_usage(plfs: &Plfs, path: &Path, size: u64, kind: FileKind) -> Result<Usage> {
    match plfs.storage(path).at("cannot measure", path)? {
        Storage::Container(_) => container_usage(plfs, path, size),
        Storage::Legacy(_) => legacy_usage(plfs, path, size),
        Storage::Plain(at) | Storage::Symlink(at) => {
            let bytes = std::fs::symlink_metadata(at).map_or(size, |m| m.len());
            let plain = kind == FileKind::File;
            Ok(Usage {
                path: path.to_path_buf(),
                kind: if plain { "plain file" } else { "symlink" },
                logical: size,
                physical: Some(bytes),
                data: plain.then_some(bytes),
                live: plain.then_some(size.min(bytes)),
                writers: None,
                entries: 1,
            })
        }
        // Nothing on the backend under this name: a packed 1-N file.
        _ => Ok(Usage {
            path: path.to_path_buf(),
            kind: "packed file",
            logical: size,
            ..Usage::default()
        }),
    }
}

struct Walk<'a> {
    plfs: &'a Plfs,
    rows: Vec<Usage>,
    failed: bool,
}

impl Walk<'_> {
    fn visit(&mut self, path: &Path) -> Result<()> {
        let st = self.plfs.stat(path).at("cannot stat", path)?;
        if st.kind != FileKind::Dir {
            let u = file_usage(self.plfs, path, st.size, st.kind)?;
            self.rows.push(u);
            return Ok(());
        }
        let entries = self.plfs.readdir(path).at("cannot read directory", path)?;
        for e in entries {
            let p = path.join(&e.name);
            if let Err(err) = self.visit(&p) {
                crate::fail::report(&err, crate::out::EXIT_FAILURE);
                self.failed = true;
            }
        }
        if let Some(s) = self.plfs.small_usage(path).at("cannot measure", path)? {
            if s.logs > 0 {
                self.rows.push(Usage {
                    path: path.to_path_buf(),
                    kind: "packed logs",
                    logical: 0,
                    physical: Some(s.log_bytes),
                    data: Some(s.data_bytes),
                    live: Some(s.live_bytes),
                    writers: None,
                    entries: s.logs,
                });
            }
        }
        Ok(())
    }
}

fn size_text(n: u64, human: bool) -> String {
    if human {
        human_iec(n)
    } else {
        n.to_string()
    }
}

fn ratio_text(r: Option<f64>) -> String {
    r.map_or_else(|| "-".into(), |r| format!("{:.1}%", r * 100.0))
}

/// Runs `plfs du`.
pub fn du(cli: &Globals, a: &DuArgs) -> Result<()> {
    let plfs = open_plfs(cli)?;
    let paths: Vec<PathBuf> = if a.paths.is_empty() {
        vec![plfs
            .config()
            .mounts
            .first()
            .map(|m| m.mount_point.clone())
            .ok_or_else(|| anyhow::anyhow!("the configuration has no mount point"))?]
    } else {
        a.paths.iter().map(|p| absolute(p)).collect::<Result<_>>()?
    };
    let mut docs = Vec::new();
    let mut grand = Total::default();
    let mut failed = false;
    if !crate::out::json_mode() {
        outln!(
            "{:>12} {:>12} {:>7} {:>7} {:>7}  path",
            "logical",
            "physical",
            "entries",
            "dead",
            "writers"
        );
    }
    for path in &paths {
        let mut w = Walk {
            plfs: &plfs,
            rows: Vec::new(),
            failed: false,
        };
        let r = require_plfs_path(&plfs, path).and_then(|()| w.visit(path));
        if let Err(e) = r {
            crate::fail::report(&e, crate::out::EXIT_FAILURE);
            failed = true;
            continue;
        }
        failed |= w.failed;
        let mut t = Total::default();
        for u in &w.rows {
            t.add(u);
            grand.add(u);
            if !a.summarize && !crate::out::json_mode() {
                let path = if u.kind == "packed logs" {
                    format!("{} (packed logs)", u.path.display())
                } else {
                    u.path.display().to_string()
                };
                outln!(
                    "{:>12} {:>12} {:>7} {:>7} {:>7}  {path}",
                    if u.kind == "packed logs" {
                        "-".to_string()
                    } else {
                        size_text(u.logical, a.human)
                    },
                    u.physical.map_or_else(|| "-".into(), |p| size_text(p, a.human)),
                    u.entries,
                    ratio_text(u.dead()),
                    u.writers.map_or_else(|| "-".into(), |w| w.to_string()),
                );
            }
        }
        if crate::out::json_mode() {
            let mut d = t.json(path);
            if !a.summarize {
                d["entries"] = json!(w.rows.iter().map(Usage::json).collect::<Vec<_>>());
            }
            docs.push(d);
        } else if a.summarize || w.rows.len() != 1 || w.rows[0].path != *path {
            outln!(
                "{:>12} {:>12} {:>7} {:>7} {:>7}  {} (total, {})",
                size_text(t.logical, a.human),
                size_text(t.physical, a.human),
                t.entries,
                ratio_text(Some(t.dead())),
                t.writers,
                path.display(),
                plural(t.files, "file", "files")
            );
        }
    }
    if crate::out::json_mode() {
        crate::out::json(&json!({
            "paths": docs,
            "total": grand.json(Path::new("")),
        }));
    } else if paths.len() > 1 {
        outln!(
            "{:>12} {:>12} {:>7} {:>7} {:>7}  total",
            size_text(grand.logical, a.human),
            size_text(grand.physical, a.human),
            grand.entries,
            ratio_text(Some(grand.dead())),
            grand.writers
        );
    }
    if failed {
        return Err(Reported.into());
    }
    Ok(())
}
