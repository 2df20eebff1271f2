//! `plfs advise DIR`: probes the plain file system under DIR for a few seconds, feeds the costs to
//! a model of plain N-1, plain N-N and plfs, and says whether plfs helps there (issue 24).
//! `plfs advise --scale [--costs FILE.json] [DIR]`: the same question for 1 to 10,000 writers.

pub mod model;
pub mod probe;
pub mod scale;

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
  median latency of create, mknod, stat, readdir, rename, unlink and mkdir; an fsync after 4 KiB;
  write bandwidth (fsync included) of 1 writer, of N threads each into its own file (N-N), of N
  threads strided into one plfs file (a private mount over a backend in that directory) and of N
  threads strided into one shared file at the record size (N-1), at most 4 MiB per writer and
  64 MiB per run (256 MiB without --quick), repeated while the budget lasts; the read-back of the shared file. Every phase has a deadline.

What it predicts: for N writers of --per-writer bytes each in --record-byte writes, the write
bandwidth of a plain shared file, of plain files per writer and of plfs, and the read-back of the
shared file and of plfs. plfs = its metadata operations per container and per writer (counted from
the code, serialised) + the data at the N-N bandwidth + the measured extra cost of each write
through plfs and of each writer's final sync; plfs is advised from 1.1x the plain shared file.

Limits: a first model, checked on one local ext4 disk and on GlusterFS and MooseFS volumes of one
host (docs/performance.md, \"Will plfs help here?\"). The probe sees mostly the page cache plus one fsync, one host, at most 64 threads;
it does not see a server's writeback, several client hosts, or a metadata server under load.

With --scale: the write bandwidth of plain N-1, plain N-N, plfs and plfs behind --aggregators
processes for 1, 2, 4, ..., 8192 and 10,000 writers, from a probe of DIR or from --costs FILE.json
(keys, in us and MiB/s: mds_op_us, mds_concurrency, lock_callback_us, servers, server_mibs,
server_stream_penalty, fabric_mibs, client_mibs, writers_per_client, stream_mibs, n1_lock_us,
n1_stripes, and optionally workload: {bytes_per_writer, record_bytes}; bench/model/lustre-sierra.json
is an example). A bottleneck model: each phase (create, open, write, close) lasts as long as its
busiest resource needs: the metadata server (its work over its concurrency, and the longest chain
of changes of one directory, each paying a lock callback per other client that caches it), a
writer's stream, the client links, the fabric, the data servers (less per extra stream), and for
the shared file the stripe locks bouncing between writers. plfs's operation counts are those above.
A probe is one host: no callbacks, so its curves level off rather than collapse. Limits: bounds,
not a simulation (no queueing delays below saturation, no caches, no failures, no other jobs);
see docs/performance.md, \"At scale, on paper\".";

/// Arguments of `plfs advise`.
#[derive(Debug, Args)]
pub struct AdviseArgs {
    /// A directory of the file system to probe (a plain directory, e.g. a backend's file system,
    /// not a PLFS path). The probe works in a temporary directory under it and removes it.
    /// Not with --costs.
    #[arg(required_unless_present = "costs")]
    pub dir: Option<PathBuf>,
    /// Writers of the workload to predict (threads in the probe: at most 64).
    #[arg(long, default_value = "4", value_parser = crate::util::parse_count)]
    pub writers: u64,
    /// Bytes per write of the workload (K, M suffixes accepted) [default: 47008, or the costs
    /// file's workload].
    #[arg(long, value_parser = crate::util::parse_count, value_name = "BYTES")]
    pub record: Option<u64>,
    /// Bytes each writer writes in the predicted workload (the probe itself writes at most 4 MiB
    /// per writer and 64 or 256 MiB in all) [default: 256M, or the costs file's workload].
    #[arg(long, value_parser = crate::util::parse_count, value_name = "BYTES")]
    pub per_writer: Option<u64>,
    /// Probe for at most 5 seconds instead of 30 (fewer samples).
    #[arg(long, conflicts_with = "costs")]
    pub quick: bool,
    /// Predict for 1 to 10,000 writers (1, 2, 4, ..., 8192, 10000) instead of one workload; with a
    /// probe, --writers is the probe's threads.
    #[arg(long)]
    pub scale: bool,
    /// With --scale: take the costs from this JSON file instead of probing DIR.
    #[arg(long, requires = "scale", conflicts_with = "dir", value_name = "FILE.json")]
    pub costs: Option<PathBuf>,
    /// With --scale: aggregators of the aggregated plfs curve [default: the data servers, at
    /// least 1].
    #[arg(long, requires = "scale", value_parser = crate::util::parse_count, value_name = "N")]
    pub aggregators: Option<u64>,
}

/// `record` and `per_writer` when the command line does not say.
const DEFAULT_RECORD: u64 = 47008;
const DEFAULT_PER_WRITER: u64 = 256 << 20;

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

/// Probes `dir` (checked first) with `writers` threads (at most 64) at `record` bytes.
fn run_probe(g: &Globals, dir: &Path, writers: u64, record: u64, quick: bool) -> Result<(PathBuf, probe::Probe)> {
    let canon = check_dir(g, dir)?;
    let budget = probe::Budget::new(quick);
    let threads = usize::try_from(writers.min(MAX_PROBE_THREADS)).unwrap_or(1);
    let scratch = probe::Scratch::new(&canon).map_err(|e| Failure::io("cannot create a directory in", dir, &e))?;
    let p =
        probe::run(&scratch.path, threads, record, budget).map_err(|e| Failure::io("probing failed in", dir, &e))?;
    // `scratch` is removed here, and on every early return above.
    Ok((canon, p))
}

/// Runs `plfs advise`.
pub fn advise(g: &Globals, a: &AdviseArgs) -> Result<()> {
    if a.scale {
        return advise_scale(g, a);
    }
    let started = Instant::now();
    let Some(dir) = a.dir.as_deref() else {
        unreachable!("clap requires DIR without --costs, and --costs requires --scale")
    };
    let record = a.record.unwrap_or(DEFAULT_RECORD);
    let per_writer = a.per_writer.unwrap_or(DEFAULT_PER_WRITER);
    let (dir, p) = run_probe(g, dir, a.writers, record, a.quick)?;
    let wl = model::Workload {
        writers: a.writers,
        record_bytes: record,
        bytes_per_writer: per_writer,
    };
    let x = model::predict(&p, wl);
    let mut reasons = x.reasons.clone();
    if p.record_bytes < record {
        reasons.push(format!(
            "the probe wrote records of {} B (its limit per writer); bandwidths for {} B records are assumed the same",
            p.record_bytes, record
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
            "record_bytes": record,
            "bytes_per_writer": per_writer,
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
            "probe": probe_json(&p),
            "elapsed_s": elapsed,
        });
        out::json(&v);
    } else {
        // `num_hostdirs: 1` is the default (the logs in the container): named only when it is not.
        let hostdirs = match x.num_hostdirs {
            1 => String::new(),
            k => format!(", num_hostdirs {k}"),
        };
        let first = if x.use_plfs {
            format!(
                "use plfs (workload n-1{hostdirs}): predicted {:.2}x the plain shared file for {} writers of {} B",
                x.ratio_plfs_vs_n1, a.writers, record
            )
        } else {
            format!(
                "use the plain file system: plfs predicted at {:.2}x the plain shared file for {} writers of {} B",
                x.ratio_plfs_vs_n1, a.writers, record
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

/// The measured costs, as `plfs advise --json` reports them under `probe`.
fn probe_json(p: &probe::Probe) -> serde_json::Value {
    json!({
        "create_us": p.create_us,
        "mknod_us": p.mknod_us,
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
        "plfs_write_mibs": p.plfs_write_mibs,
        "plfs_write_us": p.plfs_write_us,
        "plfs_sync_us": p.plfs_sync_us,
        "threads": p.writers,
        "record_bytes": p.record_bytes,
        "bytes_per_writer": p.bytes_per_writer,
        "metadata_samples": p.metadata_samples,
        "bandwidth_reps": p.bandwidth_reps,
    })
}

/// A costs file: its costs, its workload (bytes per writer, record bytes) and its name, if any.
struct CostsFile {
    costs: scale::Costs,
    workload: Option<(u64, u64)>,
    name: Option<serde_json::Value>,
}

/// Reads and checks a costs file; errors name it (exit 1; EINVAL for bad contents).
fn read_costs(path: &Path) -> Result<CostsFile> {
    let text = std::fs::read_to_string(path).map_err(|e| Failure::io("cannot read", path, &e))?;
    let bad = |why: String| Failure::new(path, 22, format!("invalid costs file {}: {why}", path.display()));
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    let (costs, workload) = scale::Costs::from_json(&v).map_err(bad)?;
    Ok(CostsFile {
        costs,
        workload,
        name: v.get("name").cloned(),
    })
}

/// Runs `plfs advise --scale`.
fn advise_scale(g: &Globals, a: &AdviseArgs) -> Result<()> {
    let started = Instant::now();
    let mut head = serde_json::Map::new();
    let (costs, file_wl, from) = if let Some(path) = &a.costs {
        let f = read_costs(path)?;
        head.insert("source".into(), json!("costs"));
        head.insert("costs_file".into(), json!(path.display().to_string()));
        if let Some(name) = f.name {
            head.insert("name".into(), name);
        }
        (f.costs, f.workload, format!("the costs in {}", path.display()))
    } else {
        let Some(dir) = a.dir.as_deref() else {
            unreachable!("clap requires DIR without --costs")
        };
        let record = a.record.unwrap_or(DEFAULT_RECORD);
        let (canon, p) = run_probe(g, dir, a.writers, record, a.quick)?;
        let from = format!(
            "a probe of {} ({} threads, {:.1} s; one host)",
            canon.display(),
            p.writers,
            started.elapsed().as_secs_f64()
        );
        head.insert("source".into(), json!("probe"));
        head.insert("dir".into(), json!(canon.display().to_string()));
        head.insert("probe".into(), probe_json(&p));
        (scale::Costs::from_probe(&p), None, from)
    };
    let record = a.record.or(file_wl.map(|w| w.1)).unwrap_or(DEFAULT_RECORD);
    let per_writer = a.per_writer.or(file_wl.map(|w| w.0)).unwrap_or(DEFAULT_PER_WRITER);
    let aggregators = a.aggregators.unwrap_or(costs.servers.round().max(1.0) as u64);
    let pts = scale::curve(&costs, per_writer, record, aggregators);
    let summary = scale::summarize(&pts);
    if out::json_mode() {
        let mut v = head;
        v.insert("costs".into(), costs.to_json());
        v.insert("record_bytes".into(), json!(record));
        v.insert("bytes_per_writer".into(), json!(per_writer));
        v.insert("aggregators".into(), json!(aggregators));
        if let serde_json::Value::Object(m) = scale::to_json(&pts, &summary) {
            v.extend(m);
        }
        v.insert("elapsed_s".into(), json!(started.elapsed().as_secs_f64()));
        out::json(&serde_json::Value::Object(v));
    } else {
        outln!("predicted write bandwidth from {from}: {per_writer} B per writer in {record}-byte writes");
        for line in scale::text(&pts, &summary, aggregators) {
            outln!("{line}");
        }
        outln!("  (a bottleneck model: see docs/performance.md, \"At scale, on paper\")");
    }
    Ok(())
}
