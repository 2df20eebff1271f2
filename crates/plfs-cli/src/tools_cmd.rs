//! The container tools: `plfs map`, `plfs query`, `plfs flatten` and `plfs version`, thin
//! wrappers around `plfs_core::tools`.

use crate::fail::{CoreContext, Failure};
use crate::globals::Globals;
use crate::progress::Progress;
use crate::util::{absolute, open_plfs, plural, require_plfs_path};
use anyhow::Result;
use clap::Args;
use plfs_core::{tools, FileFormat, Plfs};
use serde_json::json;
use std::path::{Path, PathBuf};

/// Arguments of `plfs map`.
#[derive(Debug, Args)]
pub struct MapArgs {
    /// The logical file.
    file: PathBuf,
    /// Only the extents of this writer: its writer id in hex, or a prefix of it (as `plfs stats`
    /// shows the first 8 digits).
    #[arg(long, value_name = "HEX", value_parser = parse_writer)]
    writer: Option<String>,
    /// Only the extents written by this rank (the pid the writer opened the file with).
    #[arg(long, value_name = "N")]
    rank: Option<u32>,
}

/// A writer id or prefix: 1 to 16 hex digits, kept in lower case.
fn parse_writer(s: &str) -> Result<String, String> {
    let t = s.trim().trim_start_matches("0x").to_ascii_lowercase();
    if t.is_empty() || t.len() > 16 || !t.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!("{s:?}: expected 1 to 16 hex digits of a writer id"));
    }
    Ok(t)
}

/// Arguments of `plfs query`.
#[derive(Debug, Args)]
pub struct QueryArgs {
    /// A logical file, or (with --reverse, or when the path lies under a backend) a backend path.
    path: PathBuf,
    /// Treat PATH as a backend path and print the logical file it belongs to.
    #[arg(short, long)]
    reverse: bool,
}

/// Arguments of `plfs flatten`.
#[derive(Debug, Args)]
pub struct FlattenArgs {
    /// The logical file.
    file: PathBuf,
}

/// Arguments of `plfs version`.
#[derive(Debug, Args)]
pub struct VersionArgs {
    /// Also print the format version this logical file was written with.
    file: Option<PathBuf>,
}

/// Runs `plfs map`.
pub fn map(cli: &Globals, a: &MapArgs) -> Result<()> {
    let plfs = open_plfs(cli)?;
    let path = absolute(&a.file)?;
    require_plfs_path(&plfs, &path)?;
    let all = tools::map(&plfs, &path).at("cannot map", &path)?;
    let total = all.len();
    let filtered = a.writer.is_some() || a.rank.is_some();
    let entries: Vec<_> = all
        .into_iter()
        .filter(|e| {
            a.writer
                .as_ref()
                .is_none_or(|w| format!("{:016x}", e.writer_id).starts_with(w.as_str()))
                && a.rank.is_none_or(|r| e.pid == r)
        })
        .collect();
    if cli.json {
        let v: Vec<_> = entries
            .iter()
            .map(|e| {
                json!({
                    "logical": e.logical, "length": e.length,
                    "data_log": e.data_log.display().to_string(), "physical": e.physical,
                    "pid": e.pid, "host": e.host, "writer_id": format!("{:016x}", e.writer_id), "ts": e.ts,
                })
            })
            .collect();
        crate::out::json(&serde_json::json!(v));
        return Ok(());
    }
    if filtered {
        outln!(
            "# {}: {} of {}",
            path.display(),
            entries.len(),
            plural(total as u64, "extent", "extents")
        );
    } else {
        outln!(
            "# {}: {}",
            path.display(),
            plural(entries.len() as u64, "extent", "extents")
        );
    }
    outln!(
        "# {:>14} {:>12} {:>14} {:>8} {:<16} {:<16} data log",
        "logical",
        "length",
        "physical",
        "pid",
        "host",
        "writer"
    );
    for e in &entries {
        outln!(
            "  {:>14} {:>12} {:>14} {:>8} {:<16} {:016x} {}",
            e.logical,
            e.length,
            e.physical,
            e.pid,
            e.host,
            e.writer_id,
            e.data_log.display()
        );
    }
    Ok(())
}

/// True if `p` (as given, or with symlinks resolved) lies under a backend of `plfs`.
fn under_backend(plfs: &Plfs, p: &Path) -> bool {
    let real = std::fs::canonicalize(p).ok();
    plfs.config().mounts.iter().flat_map(|m| m.backends.iter()).any(|b| {
        let breal = std::fs::canonicalize(&b.location).ok();
        p.starts_with(&b.location)
            || real
                .as_deref()
                .is_some_and(|r| r.starts_with(&b.location) || breal.as_deref().is_some_and(|br| r.starts_with(br)))
    })
}

/// Runs `plfs query`.
pub fn query(cli: &Globals, a: &QueryArgs) -> Result<()> {
    let plfs = open_plfs(cli)?;
    let path = absolute(&a.path)?;
    let reverse = a.reverse || (!plfs.is_plfs_path(&path) && under_backend(&plfs, &path));
    if reverse {
        let logical = tools::reverse_query(&plfs, &path).at("cannot reverse-query", &path)?;
        if cli.json {
            crate::out::json(
                &json!({ "backend_path": path.display().to_string(), "logical": logical.display().to_string() }),
            );
        } else {
            outln!("{}", logical.display());
        }
        return Ok(());
    }
    if !plfs.is_plfs_path(&path) {
        return Err(Failure::new(
            &path,
            22,
            format!(
                "{}: neither under a PLFS mount point nor under a backend",
                path.display()
            ),
        )
        .into());
    }
    let phys = tools::query(&plfs, &path).at("cannot query", &path)?;
    if cli.json {
        let v: Vec<_> = phys
            .iter()
            .map(|p| json!({ "path": p.path.display().to_string(), "kind": p.kind, "size": p.size }))
            .collect();
        crate::out::json(&serde_json::json!(v));
    } else {
        for p in &phys {
            outln!("{:<11} {:>12} {}", p.kind, p.size, p.path.display());
        }
    }
    Ok(())
}

/// Runs `plfs flatten`.
pub fn flatten(cli: &Globals, a: &FlattenArgs) -> Result<()> {
    let plfs = open_plfs(cli)?;
    let path = absolute(&a.file)?;
    require_plfs_path(&plfs, &path)?;
    let r = {
        let _spin = Progress::spinner(&format!("flattening {}", path.display()));
        tools::flatten(&plfs, &path).at("cannot flatten", &path)?
    };
    if cli.json {
        crate::out::json(&json!({
            "path": path.display().to_string(), "extents": r.extents, "data_logs": r.chunks,
            "flat_index": r.path.display().to_string(),
        }));
        return Ok(());
    }
    let into = if crate::out::verbose() {
        format!(" into {}", r.path.display())
    } else {
        String::new()
    };
    outln!(
        "{}: flattened {} from {}{into}",
        path.display(),
        plural(r.extents as u64, "extent", "extents"),
        plural(r.chunks as u64, "data log", "data logs")
    );
    Ok(())
}

/// Runs `plfs version`.
pub fn version(cli: &Globals, a: &VersionArgs) -> Result<()> {
    let lib = env!("CARGO_PKG_VERSION");
    let fmt = plfs_core::FORMAT_VERSION;
    let file = match &a.file {
        None => None,
        Some(f) => {
            let plfs = open_plfs(cli)?;
            let path = absolute(f)?;
            require_plfs_path(&plfs, &path)?;
            // A file written by PLFS 2.x has no format version of ours: its release says what.
            let written_by = match plfs.file_format(&path).at("cannot read the format version of", &path)? {
                Some(FileFormat::Legacy { release }) => Some(release),
                Some(FileFormat::LegacyPacked) => Some("2.x".to_string()),
                _ => None,
            };
            let v = match written_by {
                Some(r) => Err(r),
                None => Ok(tools::file_version(&plfs, &path).at("cannot read the format version of", &path)?),
            };
            Some((path, v))
        }
    };
    if cli.json {
        let mut v = json!({ "library_version": lib, "format_version": fmt });
        if let Some((p, fv)) = &file {
            v["file"] = json!(p.display().to_string());
            match fv {
                Ok(fv) => v["file_format_version"] = json!(fv),
                Err(release) => {
                    v["file_format_version"] = json!(null);
                    v["file_written_by"] = json!(format!("PLFS {release}"));
                }
            }
        }
        crate::out::json(&serde_json::json!(v));
        return Ok(());
    }
    outln!("plfs {lib}");
    outln!("format version {fmt}");
    match file {
        Some((p, Ok(fv))) => outln!("{}: format version {fv}", p.display()),
        Some((p, Err(release))) => outln!(
            "{}: written by PLFS {release} (legacy, read-only; `plfs upgrade` converts it)",
            p.display()
        ),
        None => {}
    }
    Ok(())
}
