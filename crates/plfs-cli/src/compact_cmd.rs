//! `plfs compact FILE|DIR... [--dry-run]`: rewrites files' live data into fresh logs and retires
//! the old ones (`plfs_core::compact`; docs/design.md, "Compaction"). For a directory, every
//! N-1 file below it and every directory's packed (1-N) logs.
//!
//! A file that cannot be compacted now is not an error: its status says why (`busy`: another
//! compaction holds it; `writers-open`: processes are still appending to the logs it would
//! retire). Exit code 1 only when a compaction failed (the message names the file).

use crate::fail::{CoreContext, Reported};
use crate::globals::Globals;
use crate::progress::Progress;
use crate::util::{absolute, human_iec, open_plfs, require_plfs_path};
use anyhow::Result;
use clap::{ArgAction, Args};
use plfs_core::compact::{self, Options, Report, Status, Usage};
use plfs_core::{FileKind, Plfs, Storage};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// Arguments of `plfs compact`.
#[derive(Debug, Args)]
#[command(disable_help_flag = true)]
pub struct CompactArgs {
    /// Only report what a compaction would reclaim; change nothing.
    #[arg(short = 'n', long)]
    dry_run: bool,
    /// Sizes in powers of 1024 (K, M, G) instead of bytes.
    #[arg(short = 'h', long = "human-readable")]
    human: bool,
    /// Print help.
    #[arg(long, action = ArgAction::Help)]
    help: Option<bool>,
    /// Logical files or directories (a directory: every file below it, and its packed logs).
    #[arg(required = true)]
    paths: Vec<PathBuf>,
}

/// JSON of a usage.
pub fn usage_json(u: &Usage) -> serde_json::Value {
    json!({
        "logical_bytes": u.logical, "physical_bytes": u.physical,
        "physical_data_bytes": u.data, "live_bytes": u.live, "dead_bytes": u.dead(),
        "dead_ratio": u.dead_ratio(), "meta_files": u.meta_files, "logs": u.logs,
        "pending_bytes": u.pending, "writers": u.writers,
    })
}

fn report_json(r: &Report, kind: &str) -> serde_json::Value {
    json!({
        "path": r.path.display().to_string(), "kind": kind, "status": r.status.code(),
        "before": usage_json(&r.before), "after": usage_json(&r.after),
        "reclaimed_bytes": r.reclaimed(), "logs_retired": r.logs_retired,
        "truncs_folded": r.truncs_folded, "files_dropped": r.files_dropped,
        "copied_bytes": r.copied, "seconds": r.seconds,
    })
}

struct Run<'a> {
    plfs: &'a Plfs,
    a: &'a CompactArgs,
    rows: Vec<serde_json::Value>,
    before: u64,
    after: u64,
    failed: bool,
}

impl Run<'_> {
    fn size(&self, n: u64) -> String {
        if self.a.human {
            human_iec(n)
        } else {
            n.to_string()
        }
    }

    fn row(&mut self, r: &Report, kind: &str) {
        self.before += r.before.physical;
        self.after += r.after.physical;
        if crate::out::json_mode() {
            self.rows.push(report_json(r, kind));
            return;
        }
        let what = if kind == "packed logs" {
            format!("{} (packed logs)", r.path.display())
        } else {
            r.path.display().to_string()
        };
        let meta = if kind == "packed logs" {
            format!("{}->{} logs", r.before.logs, r.after.logs)
        } else {
            format!("{}->{}", r.before.meta_files, r.after.meta_files)
        };
        outln!(
            "{:>12} {:>12} {:>12} {:>7.1}% {:>10}  {:<15} {what}",
            self.size(r.before.physical),
            self.size(r.after.physical),
            self.size(r.reclaimed()),
            r.before.dead_ratio() * 100.0,
            meta,
            r.status.code(),
        );
    }

    fn opts<'p>(&self, progress: Option<&'p (dyn Fn(u64, u64) + Sync)>) -> Options<'p> {
        Options {
            dry_run: self.a.dry_run,
            thresholds: false,
            progress,
            automatic: false,
        }
    }

    /// Compacts with a progress bar (drawn once there is enough to copy).
    fn with_bar(
        &self,
        label: &Path,
        f: impl FnOnce(&Options) -> plfs_core::Result<Report>,
    ) -> plfs_core::Result<Report> {
        let bar: OnceLock<Progress> = OnceLock::new();
        let shown = AtomicU64::new(0);
        let label = format!("compacting {}", label.display());
        let cb = |done: u64, total: u64| {
            let b = bar.get_or_init(|| Progress::bytes(total, &label));
            let prev = shown.swap(done, Ordering::Relaxed);
            b.inc(done.saturating_sub(prev));
        };
        let opts = self.opts(Some(&cb));
        f(&opts)
    }

    fn file(&mut self, path: &Path) -> Result<()> {
        let r = self
            .with_bar(path, |o| compact::compact(self.plfs, path, o))
            .at("cannot compact", path)?;
        let kind = if r.path == path { "file" } else { "packed logs" };
        self.row(&r, kind);
        Ok(())
    }

    fn dir(&mut self, path: &Path) -> Result<()> {
        let entries = self.plfs.readdir(path).at("cannot read directory", path)?;
        for e in entries {
            let p = path.join(&e.name);
            let r = match e.kind {
                FileKind::Dir => self.dir(&p),
                FileKind::Symlink => Ok(()),
                FileKind::File => match self.plfs.storage(&p).at("cannot compact", &p)? {
                    Storage::Container(_) => self.file(&p),
                    _ => Ok(()), // plain N-N files: nothing to compact; packed: below
                },
            };
            if let Err(err) = r {
                crate::fail::report(&err, crate::out::EXIT_FAILURE);
                self.failed = true;
            }
        }
        let r = self
            .with_bar(path, |o| {
                compact::compact_packed_dir(self.plfs, path, o)
                    .map(|r| r.unwrap_or_else(|| Report::new(path.to_path_buf())))
            })
            .at("cannot compact", path)?;
        if r.before.logs > 0 || r.status != Status::NothingToDo {
            self.row(&r, "packed logs");
        }
        Ok(())
    }
}

/// Runs `plfs compact`.
pub fn compact(cli: &Globals, a: &CompactArgs) -> Result<()> {
    let plfs = open_plfs(cli)?;
    let mut run = Run {
        plfs: &plfs,
        a,
        rows: Vec::new(),
        before: 0,
        after: 0,
        failed: false,
    };
    if !crate::out::json_mode() {
        outln!(
            "{:>12} {:>12} {:>12} {:>8} {:>10}  {:<15} path",
            "before",
            "after",
            if a.dry_run { "reclaimable" } else { "reclaimed" },
            "dead",
            "meta",
            "status"
        );
    }
    for p in &a.paths {
        let r = absolute(p).and_then(|path| {
            require_plfs_path(&plfs, &path)?;
            let st = plfs.stat(&path).at("cannot compact", &path)?;
            if st.kind == FileKind::Dir {
                run.dir(&path)
            } else {
                run.file(&path)
            }
        });
        if let Err(e) = r {
            crate::fail::report(&e, crate::out::EXIT_FAILURE);
            run.failed = true;
        }
    }
    if crate::out::json_mode() {
        crate::out::json(&json!({
            "dry_run": a.dry_run, "paths": run.rows,
            "total": {
                "before_physical_bytes": run.before, "after_physical_bytes": run.after,
                "reclaimed_bytes": run.before.saturating_sub(run.after),
            },
        }));
    } else if a.paths.len() > 1 || run.before != run.after {
        outln!(
            "{:>12} {:>12} {:>12}  total",
            run.size(run.before),
            run.size(run.after),
            run.size(run.before.saturating_sub(run.after))
        );
    }
    if run.failed {
        return Err(Reported.into());
    }
    Ok(())
}
