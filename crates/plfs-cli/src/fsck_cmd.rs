//! `plfs fsck FILE|DIR [--repair]` and `plfs verify FILE`: thin wrappers around
//! `plfs_core::fsck`, with exit codes a script can use (e2fsck's convention):
//!
//! - fsck: 0 clean, 1 problems found and all repaired, 4 problems left, 8 fsck could not run.
//! - verify: 0 every checksum matched, 4 a mismatch or an unreadable log, 8 could not run.

use crate::globals::Globals;
use crate::util::{absolute, human_bytes, open_plfs, plural, require_plfs_path};
use anyhow::{Context, Result};
use clap::Args;
use plfs_core::fsck::{self, Options, Repair};
use serde_json::json;
use std::path::PathBuf;
use std::time::Duration;

/// Exit code when the check itself could not run.
const EXIT_OPERATIONAL: i32 = 8;

/// Arguments of `plfs fsck`.
#[derive(Debug, Args)]
pub struct FsckArgs {
    /// A logical file, or a logical directory (every file below it; at a mount point's root, also
    /// shadow directories that belong to no file).
    path: PathBuf,
    /// Repair what can be repaired safely (never deletes data an index refers to).
    #[arg(long)]
    repair: bool,
    /// Treat open records of writers that cannot be checked from here (another host, or a pid
    /// that is alive but does not hold the logs) as stale.
    #[arg(long)]
    force_stale: bool,
    /// Leave `.plfstmp.*` creation debris younger than this many seconds alone.
    #[arg(long, value_name = "SECS", default_value_t = 60)]
    tmp_age: u64,
    /// Print only problems, not information.
    #[arg(short, long)]
    quiet: bool,
}

/// Arguments of `plfs verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The logical file.
    file: PathBuf,
}

/// Prints `e` and exits with the operational-error code.
fn fail(e: anyhow::Error) -> ! {
    crate::fail::report(&e, EXIT_OPERATIONAL);
    crate::out::exit(EXIT_OPERATIONAL)
}

fn exit_with(code: i32) -> ! {
    crate::out::exit(code)
}

fn repair_text(r: &Repair) -> (&'static str, String) {
    match r {
        Repair::None => ("none", String::new()),
        Repair::Possible(w) => ("possible", format!("--repair would: {w}")),
        Repair::Done(w) => ("done", format!("repaired: {w}")),
        Repair::Failed(w) => ("failed", format!("repair FAILED: {w}")),
        Repair::Manual(w) => ("manual", format!("not repaired: {w}")),
    }
}

/// Runs `plfs fsck`; exits with its code.
pub fn fsck(cli: &Globals, a: &FsckArgs) -> Result<()> {
    let run = || -> Result<(PathBuf, fsck::Report)> {
        let plfs = open_plfs(cli)?;
        let path = absolute(&a.path)?;
        require_plfs_path(&plfs, &path)?;
        let opts = Options {
            repair: a.repair,
            force_stale: a.force_stale,
            tmp_min_age: Duration::from_secs(a.tmp_age),
        };
        let rep = fsck::fsck(&plfs, &path, &opts).with_context(|| format!("checking {}", path.display()))?;
        Ok((path, rep))
    };
    let (path, rep) = run().unwrap_or_else(|e| fail(e));
    let code = rep.exit_code();
    if cli.json {
        let findings: Vec<_> = rep
            .findings
            .iter()
            .map(|f| {
                let (state, what) = repair_text(&f.repair);
                json!({
                    "kind": f.kind.code(), "problem": f.problem, "path": f.path.display().to_string(),
                    "message": f.message, "repair": state, "repair_detail": what,
                })
            })
            .collect();
        let v = json!({
            "path": path.display().to_string(), "containers": rep.containers, "legacy": rep.legacy,
            "writers": rep.writers,
            "records": rep.records, "problems": rep.problems(), "exit_code": code, "findings": findings,
        });
        crate::out::json(&v);
        exit_with(code);
    }
    for f in &rep.findings {
        if a.quiet && !f.problem {
            continue;
        }
        let tag = if f.problem { "PROBLEM" } else { "info   " };
        outln!("{tag} {:<22} {}: {}", f.kind.code(), f.path.display(), f.message);
        let (_, what) = repair_text(&f.repair);
        if !what.is_empty() {
            outln!("        {:<22} {what}", "");
        }
    }
    let left = rep.findings.iter().filter(|f| f.outstanding()).count();
    let legacy = if rep.legacy > 0 {
        format!(" ({} written by PLFS 2.x, read-only)", rep.legacy)
    } else {
        String::new()
    };
    outln!(
        "{}: {}{legacy}, {}, {}; {}, {} repaired, {} left",
        path.display(),
        plural(rep.containers as u64, "container", "containers"),
        plural(rep.writers as u64, "writer", "writers"),
        plural(rep.records, "record", "records"),
        plural(rep.problems() as u64, "problem", "problems"),
        rep.problems() - left,
        left
    );
    exit_with(code)
}

/// Runs `plfs verify`; exits with its code.
pub fn verify(cli: &Globals, a: &VerifyArgs) -> Result<()> {
    let run = || -> Result<(PathBuf, fsck::VerifyReport)> {
        let plfs = open_plfs(cli)?;
        let path = absolute(&a.file)?;
        require_plfs_path(&plfs, &path)?;
        let rep = fsck::verify(&plfs, &path).with_context(|| format!("verifying {}", path.display()))?;
        Ok((path, rep))
    };
    let (path, rep) = run().unwrap_or_else(|e| fail(e));
    let code = rep.exit_code();
    if cli.json {
        let mm: Vec<_> = rep
            .mismatches
            .iter()
            .map(|m| {
                json!({
                    "index_log": m.index_log.display().to_string(), "data_log": m.data_log.display().to_string(),
                    "logical_off": m.logical_off, "length": m.length, "physical_off": m.physical_off,
                    "expected": format!("{:08x}", m.expected), "actual": m.actual.map(|a| format!("{a:08x}")),
                })
            })
            .collect();
        let bad: Vec<_> = rep
            .unreadable
            .iter()
            .map(|(p, e)| json!({"path": p.display().to_string(), "error": e}))
            .collect();
        let v = json!({
            "path": path.display().to_string(), "logs": rep.logs, "records": rep.records,
            "checked": rep.checked, "bytes": rep.bytes, "unchecked": rep.unchecked,
            "mismatches": mm, "unreadable": bad, "exit_code": code,
        });
        crate::out::json(&v);
        exit_with(code);
    }
    for m in &rep.mismatches {
        outln!("MISMATCH {m}");
    }
    for (p, e) in &rep.unreadable {
        outln!("UNREADABLE {}: {e}", p.display());
    }
    let verdict = if code == 0 { "OK" } else { "FAILED" };
    outln!(
        "{}: {}, {}, {} checked ({}), {} without checksums, {}: {verdict}",
        path.display(),
        plural(rep.logs as u64, "index log", "index logs"),
        plural(rep.records, "record", "records"),
        rep.checked,
        human_bytes(rep.bytes),
        rep.unchecked,
        plural(rep.mismatches.len() as u64, "mismatch", "mismatches")
    );
    if rep.records > 0 && rep.checked == 0 {
        outln!("note: this file was written without data checksums (set `data_checksums: true` in the plfsrc)");
    }
    exit_with(code)
}
