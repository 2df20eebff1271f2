//! `plfs advise DIR`: probes the plain file system under DIR for a few seconds, feeds the costs to
//! a model of plain N-1, plain N-N and plfs, and says whether plfs helps there (issue 24).

pub mod model;
pub mod probe;

use crate::fail::Failure;
use crate::globals::Globals;
use crate::out;
use anyhow::Result;
use clap::Args;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The long help of `plfs advise` (and `man plfs-advise`): the model's inputs and its limits.
pub const HELP: &str = "\
What it measures (in DIR/.plfs-advise.<pid>.<n>, removed at the end, also on error):
  median latency of create, stat, readdir, rename, unlink and mkdir; an fsync after 4 KiB; write
  bandwidth (fsync included) of 1 writer, of N threads each into its own file (N-N) and of N
  threads strided into one shared file at the record size (N-1), at most 4 MiB per writer and
  64 MiB per run (256 MiB without --quick), repeated while the budget lasts; the read-back of the shared file. Every phase has a deadline.

What it predicts: for N writers of --per-writer bytes each in --record-byte writes, the write
bandwidth of a plain shared file, of plain files per writer and of plfs, and the read-back of the
shared file and of plfs. plfs = its metadata operations per container and per writer (counted from
docs/design.md and docs/format.md, serialised) + the data, frames and index records at the N-N
bandwidth; plfs is advised from 1.1x the plain shared file.

Limits: a first model, checked so far only on one local ext4 disk (docs/performance.md, \"Will plfs
help here?\"). The probe sees mostly the page cache plus one fsync, one host, at most 64 threads;
it does not see a server's writeback, several client hosts, or a metadata server under load.";

/// Arguments of `plfs advise`.
#[derive(Debug, Args)]
pub struct AdviseArgs {
    /// A directory of the file system to probe (a plain directory, e.g. a backend's file system,
    /// not a PLFS path). The probe works in a temporary directory under it and removes it.
    pub dir: PathBuf,
    /// Writers of the workload to predict (threads in the probe: at most 64).
    #[arg(long, default_value = "4", value_parser = crate::util::parse_count)]
    pub writers: u64,
    /// Bytes per write of the workload (K, M suffixes accepted).
    #[arg(long, default_value = "47008", value_parser = crate::util::parse_count, value_name = "BYTES")]
    pub record: u64,
    /// Bytes each writer writes in the predicted workload (the probe itself writes at most 4 MiB
    /// per writer and 64 or 256 MiB in all).
    #[arg(long, default_value = "256M", value_parser = crate::util::parse_count, value_name = "BYTES")]
    pub per_writer: u64,
    /// Probe for at most 5 seconds instead of 30 (fewer samples).
    #[arg(long)]
    pub quick: bool,
}

/// At most this many probe threads, whatever `--writers` says.
const MAX_PROBE_THREADS: u64 = 64;

/// Refuses what cannot be probed, naming the path: missing, not a directory, under a PLFS mount
/// point (a FUSE mount of plfs, or a mount point of the configuration, which ldplfs serves).
fn check_dir(g: &Globals, dir: &Path) -> Result<PathBuf> {
    let md = std::fs::metadata(dir).map_err(|e| Failure::io("cannot probe", dir, &e))?;
    if !md.is_dir() {
        return Err(Failure::new(dir, 20, format!("cannot probe {}: Not a directory", dir.display())).into());
    }
    let canon = std::fs::canonicalize(dir).map_err(|e| Failure::io("cannot probe", dir, &e))?;
    let abs = crate::util::absolute(dir)?;
    let mut plfs_mounts: Vec<PathBuf> = plfs_fuse::mountinfo::mounts()
        .into_iter()
        .filter(|m| m.is_plfs())
        .map(|m| m.mountpoint)
        .collect();
    if let Ok(cfg) = crate::util::load_config(g) {
        plfs_mounts.extend(cfg.mounts.iter().map(|m| m.mount_point.clone()));
    }
    if let Some(m) = plfs_mounts.iter().find(|m| canon.starts_with(m) || abs.starts_with(m)) {
        let msg = format!(
            "cannot probe {}: it is under the PLFS mount point {}; give a directory of the backend file system",
            dir.display(),
            m.display()
        );
        return Err(Failure::new(dir, 22, msg).into());
    }
    Ok(canon)
}

/// Runs `plfs advise`.
pub fn advise(g: &Globals, a: &AdviseArgs) -> Result<()> {
    let started = Instant::now();
    let dir = check_dir(g, &a.dir)?;
    let budget = probe::Budget::new(a.quick);
    let threads = usize::try_from(a.writers.min(MAX_PROBE_THREADS)).unwrap_or(1);
    let p = {
        let scratch = probe::Scratch::new(&dir).map_err(|e| Failure::io("cannot create a directory in", &a.dir, &e))?;
        probe::run(&scratch.path, threads, a.record, budget)
            .map_err(|e| Failure::io("probing failed in", &a.dir, &e))?
        // `scratch` is removed here, and on every early return above.
    };
    let wl = model::Workload {
        writers: a.writers,
        record_bytes: a.record,
        bytes_per_writer: a.per_writer,
    };
    let x = model::predict(&p, wl);
    let mut reasons = x.reasons.clone();
    if p.record_bytes < a.record {
        reasons.push(format!(
            "the probe wrote records of {} B (its limit per writer); bandwidths for {} B records are assumed the same",
            p.record_bytes, a.record
        ));
    }
    if a.writers > MAX_PROBE_THREADS {
        reasons.push(format!(
            "the probe ran {MAX_PROBE_THREADS} threads on this host; bandwidths for {} writers are assumed flat beyond",
            a.writers
        ));
    }
    let elapsed = started.elapsed().as_secs_f64();
    let verdict = if x.use_plfs { "plfs" } else { "plain" };
    if out::json_mode() {
        let v = json!({
            "dir": dir.display().to_string(),
            "writers": a.writers,
            "record_bytes": a.record,
            "bytes_per_writer": a.per_writer,
            "plain_n1_mibs": x.plain_n1_mibs,
            "plain_nn_mibs": x.plain_nn_mibs,
            "plfs_mibs": x.plfs_mibs,
            "read_plain_mibs": x.read_plain_mibs,
            "read_plfs_mibs": x.read_plfs_mibs,
            "ratio_plfs_vs_n1": x.ratio_plfs_vs_n1,
            "recommend": {
                "use": verdict,
                "workload": "n-1",
                "num_hostdirs": x.num_hostdirs,
                "auto_compaction": true,
            },
            "model": {
                "plfs_metadata_s": x.plfs_metadata_s,
                "plfs_index_s": x.plfs_index_s,
                "plfs_read_open_s": x.plfs_read_open_s,
            },
            "reasons": reasons,
            "probe": {
                "create_us": p.create_us,
                "mkdir_us": p.mkdir_us,
                "stat_us": p.stat_us,
                "readdir_us": p.readdir_us,
                "readdir_entries": p.readdir_entries,
                "unlink_us": p.unlink_us,
                "rename_us": p.rename_us,
                "fsync_us": p.fsync_us,
                "write_1_mibs": p.write_1_mibs,
                "nn_write_mibs": p.nn_write_mibs,
                "n1_write_mibs": p.n1_write_mibs,
                "read_mibs": p.read_mibs,
                "threads": p.writers,
                "record_bytes": p.record_bytes,
                "bytes_per_writer": p.bytes_per_writer,
                "metadata_samples": p.metadata_samples,
                "bandwidth_reps": p.bandwidth_reps,
            },
            "elapsed_s": elapsed,
        });
        out::json(&v);
    } else {
        let first = if x.use_plfs {
            format!(
                "use plfs (workload n-1, num_hostdirs {}): predicted {:.2}x the plain shared file for {} writers of {} B",
                x.num_hostdirs, x.ratio_plfs_vs_n1, a.writers, a.record
            )
        } else {
            format!(
                "use the plain file system: plfs predicted at {:.2}x the plain shared file for {} writers of {} B",
                x.ratio_plfs_vs_n1, a.writers, a.record
            )
        };
        outln!("{first}");
        for r in &reasons {
            outln!("  {r}");
        }
        outln!(
            "  (probe of {} in {elapsed:.1} s; a first model: see docs/performance.md)",
            dir.display()
        );
    }
    Ok(())
}
