//! `plfs demo`: the N-1 round trip behind `make demo`. N writer processes write one shared
//! logical file in a strided pattern, M != N reader processes verify it byte for byte, and the
//! same N/M processes do the same on ONE plain shared file as the baseline; then the whole file's
//! crc32c is checked against the baseline and the pattern, and the container is shown.
//!
//! Bandwidth is bytes over the span from the first worker's open to the last worker's close
//! (see [`crate::worker`] for the start barrier). Nothing is fsynced, by PLFS or the baseline.

use crate::fail::CoreContext;
use crate::globals::Globals;
use crate::pattern;
use crate::util::{human_bytes, open_plfs, parse_count, parse_size, BUF_SIZE};
use crate::worker::{Mode, Target};
use anyhow::{bail, ensure, Context, Result};
use clap::Args;
use plfs_core::{tools, OpenFlags, Plfs};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Arguments of `plfs demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Writer processes (N).
    #[arg(short = 'n', long, value_parser = parse_count, default_value = "4")]
    procs: u64,
    /// Reader processes (M; default N-1, or N+1 when N < 3).
    #[arg(long, value_parser = parse_count)]
    readers: Option<u64>,
    /// Records each writer writes (K/M suffixes accepted).
    #[arg(short = 'r', long, value_parser = parse_count, default_value = "200")]
    records: u64,
    /// Bytes per record (K/M/G suffixes accepted).
    #[arg(short = 'b', long, value_parser = parse_size, default_value = "47008")]
    record_size: u64,
    /// Keep the logical file and the plain baseline file afterwards.
    #[arg(long)]
    keep: bool,
    /// The logical file (default: plfs-demo.<pid> under the first mount point).
    #[arg(long)]
    file: Option<PathBuf>,
    /// Directory for the plain baseline file (default: beside the first backend, so both use the
    /// same file system).
    #[arg(long)]
    baseline_dir: Option<PathBuf>,
}

/// The result of one phase: every worker's report, combined.
#[derive(Debug, Clone, Copy, Default)]
struct Phase {
    bytes: u64,
    /// From the earliest start to the latest end, ns.
    wall_ns: u64,
    /// Sum over workers of index records read.
    records: u64,
    /// Sum over workers of the time from the start of open to the end of the first read, ns
    /// (for PLFS readers: open plus merging the index, see [`crate::worker`]).
    first_io_ns: u64,
}

impl Phase {
    fn mb_s(&self) -> f64 {
        self.bytes as f64 / (self.wall_ns.max(1) as f64 / 1e9) / 1e6
    }
}

fn field(v: &serde_json::Value, k: &str) -> Result<u64> {
    v[k].as_u64().with_context(|| format!("worker report lacks {k:?}: {v}"))
}

/// Spawns `nprocs` workers, releases them together, waits for all and combines their reports.
fn run_phase(
    cli: &Globals,
    mode: Mode,
    target: Target,
    path: &Path,
    nprocs: u64,
    a: &DemoArgs,
    total: u64,
) -> Result<Phase> {
    let exe = std::env::current_exe().context("finding the plfs executable")?;
    let mut children = Vec::new();
    for rank in 0..nprocs {
        let mut c = Command::new(&exe);
        if let Some(cfg) = &cli.config {
            c.arg("--config").arg(cfg);
        }
        c.arg("demo-worker")
            .args(["--mode", if mode == Mode::Write { "write" } else { "read" }])
            .args(["--target", if target == Target::Plfs { "plfs" } else { "plain" }])
            .arg("--path")
            .arg(path)
            .args(["--rank", &rank.to_string(), "--nprocs", &nprocs.to_string()])
            .args([
                "--records",
                &a.records.to_string(),
                "--record-size",
                &a.record_size.to_string(),
            ])
            .args(["--total", &total.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        children.push(c.spawn().with_context(|| format!("starting {}", exe.display()))?);
    }
    // Closing every stdin at once is the start barrier.
    for ch in &mut children {
        drop(ch.stdin.take());
    }
    let mut failures = Vec::new();
    let mut reports = Vec::new();
    for (rank, ch) in children.into_iter().enumerate() {
        let out = ch.wait_with_output().context("waiting for a demo worker")?;
        if !out.status.success() {
            failures.push(format!("worker {rank} {}", out.status));
            continue;
        }
        let line = String::from_utf8_lossy(&out.stdout);
        let v: serde_json::Value =
            serde_json::from_str(line.trim()).with_context(|| format!("worker {rank} printed {line:?}"))?;
        reports.push(v);
    }
    if !failures.is_empty() {
        bail!(
            "{} of {nprocs} demo processes failed ({}); see the messages above",
            failures.len(),
            failures.join(", ")
        );
    }
    let mut p = Phase::default();
    let (mut lo, mut hi) = (u64::MAX, 0);
    for v in &reports {
        lo = lo.min(field(v, "start")?);
        hi = hi.max(field(v, "end")?);
        p.bytes += field(v, "bytes")?;
        p.records += field(v, "records_read")?;
        p.first_io_ns += field(v, "first_io")?.saturating_sub(field(v, "start")?);
    }
    p.wall_ns = hi.saturating_sub(lo);
    Ok(p)
}

/// crc32c of a whole logical file, read by this process.
fn crc_plfs(plfs: &Plfs, path: &Path) -> Result<(u32, u64)> {
    let flags = OpenFlags {
        read: true,
        ..OpenFlags::default()
    };
    let f = plfs
        .open(path, flags, 0, std::process::id())
        .ctx(|| format!("opening {}", path.display()))?;
    let (mut buf, mut off, mut crc) = (vec![0u8; BUF_SIZE], 0u64, 0u32);
    loop {
        let n = f
            .read(&mut buf, off)
            .ctx(|| format!("reading {} at offset {off}", path.display()))?;
        if n == 0 {
            break;
        }
        crc = crc32c::crc32c_append(crc, &buf[..n]);
        off += n as u64;
    }
    f.close().ctx(|| format!("closing {}", path.display()))?;
    Ok((crc, off))
}

/// crc32c of a whole plain file.
fn crc_plain(path: &Path) -> Result<(u32, u64)> {
    let mut f = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let (mut buf, mut off, mut crc) = (vec![0u8; BUF_SIZE], 0u64, 0u32);
    loop {
        let n = f
            .read(&mut buf)
            .with_context(|| format!("reading {}", path.display()))?;
        if n == 0 {
            break;
        }
        crc = crc32c::crc32c_append(crc, &buf[..n]);
        off += n as u64;
    }
    Ok((crc, off))
}

/// Creates the baseline directory: under `--baseline-dir`, else beside the first backend (same
/// file system as PLFS), else in the temporary directory.
fn baseline_dir(plfs: &Plfs, a: &DemoArgs) -> Result<PathBuf> {
    let name = format!("plfs-demo-baseline.{}", std::process::id());
    if let Some(d) = &a.baseline_dir {
        let p = d.join(name);
        std::fs::create_dir(&p).with_context(|| format!("creating {}", p.display()))?;
        return Ok(p);
    }
    let beside = plfs
        .config()
        .mounts
        .first()
        .and_then(|m| m.backends.first())
        .and_then(|b| b.location.parent());
    for dir in beside.into_iter().map(Path::to_path_buf).chain([std::env::temp_dir()]) {
        let p = dir.join(&name);
        if std::fs::create_dir(&p).is_ok() {
            return Ok(p);
        }
    }
    bail!(
        "cannot create a baseline directory beside the backend or in {}; use --baseline-dir",
        std::env::temp_dir().display()
    )
}

/// Prints the container's physical files and a count and total size per kind.
fn show_container(plfs: &Plfs, path: &Path) -> Result<()> {
    let phys = tools::query(plfs, path).ctx(|| format!("querying {}", path.display()))?;
    outln!("\ncontainer of {} ({} physical entries):", path.display(), phys.len());
    let mut kinds: std::collections::BTreeMap<&str, (usize, u64)> = Default::default();
    for p in &phys {
        outln!("  {:<11} {:>12}  {}", p.kind, p.size, p.path.display());
        let e = kinds.entry(p.kind.as_str()).or_default();
        e.0 += 1;
        e.1 += p.size;
    }
    let summary: Vec<String> = kinds
        .iter()
        .map(|(k, (n, b))| {
            if *b > 0 {
                format!("{k}: {n} ({})", human_bytes(*b))
            } else {
                format!("{k}: {n}")
            }
        })
        .collect();
    outln!("  summary: {}", summary.join(", "));
    Ok(())
}

/// The demo proper; leaves its files in place (the caller cleans up).
fn run_demo(
    cli: &Globals,
    a: &DemoArgs,
    plfs: &Plfs,
    logical: &Path,
    plain: &Path,
    readers: u64,
    total: u64,
) -> Result<[Phase; 4]> {
    let (n, m) = (a.procs, readers);
    std::fs::File::create(plain).with_context(|| format!("creating {}", plain.display()))?;

    outln!(
        "\n[1/5] write: {n} processes write {} each into {}",
        human_bytes(a.records * a.record_size),
        logical.display()
    );
    let pw = run_phase(cli, Mode::Write, Target::Plfs, logical, n, a, total)?;
    outln!(
        "[2/5] write: the same {n} processes, pwrite into the plain shared file {}",
        plain.display()
    );
    let bw = run_phase(cli, Mode::Write, Target::Plain, plain, n, a, total)?;
    ensure!(
        pw.bytes == total && bw.bytes == total,
        "writers wrote {} (PLFS) and {} (plain) bytes, expected {total}",
        pw.bytes,
        bw.bytes
    );

    let st = plfs.stat(logical).ctx(|| format!("stat {}", logical.display()))?;
    ensure!(
        st.size == total,
        "{}: stat says {} bytes after the writers closed, expected {total}",
        logical.display(),
        st.size
    );

    outln!(
        "[3/5] read: {m} processes each read and verify 1/{m} of {} byte for byte",
        logical.display()
    );
    let pr = run_phase(cli, Mode::Read, Target::Plfs, logical, m, a, total)?;
    outln!("[4/5] read: {m} processes each read and verify 1/{m} of the plain file");
    let br = run_phase(cli, Mode::Read, Target::Plain, plain, m, a, total)?;

    outln!("[5/5] whole-file crc32c: PLFS file vs plain baseline vs the pattern");
    let (pcrc, plen) = crc_plfs(plfs, logical)?;
    let (bcrc, blen) = crc_plain(plain)?;
    let want = pattern::crc_of_range(total, BUF_SIZE);
    outln!("  PLFS  {plen:>12} bytes  crc32c {pcrc:08x}");
    outln!("  plain {blen:>12} bytes  crc32c {bcrc:08x}");
    outln!("  expected {total:>9} bytes  crc32c {want:08x}");
    ensure!(
        plen == total && blen == total,
        "MISMATCH: read {plen} bytes from PLFS and {blen} from the plain file, expected {total}"
    );
    ensure!(
        bcrc == want,
        "MISMATCH: the plain baseline file's crc32c {bcrc:08x} differs from the pattern's {want:08x}"
    );
    ensure!(
        pcrc == want,
        "MISMATCH: the PLFS file's crc32c {pcrc:08x} differs from the pattern's and the baseline's {want:08x}"
    );

    show_container(plfs, logical)?;

    outln!("\nresults ({}, page cache warm, no fsync):", human_bytes(total));
    outln!(
        "  {:<22} {:>14} {:>18} {:>11}",
        "",
        "PLFS",
        "plain shared file",
        "PLFS/plain"
    );
    for (label, p, b) in [
        (format!("write, {n} processes"), pw, bw),
        (format!("read, {m} processes"), pr, br),
    ] {
        outln!(
            "  {label:<22} {:>9.1} MB/s {:>13.1} MB/s {:>10.2}x",
            p.mb_s(),
            b.mb_s(),
            p.mb_s() / b.mb_s().max(1e-9)
        );
    }
    let per_reader = pr.records as f64 / m as f64;
    let secs = pr.first_io_ns as f64 / 1e9 / m as f64;
    outln!(
        "  index at read open:   {per_reader:.0} records merged per reader in {:.2} ms (open + first 1-byte read) = {:.0} records/s",
        secs * 1e3,
        per_reader / secs.max(1e-9)
    );
    Ok([pw, bw, pr, br])
}

/// Runs `plfs demo`.
pub fn demo(cli: &Globals, a: &DemoArgs) -> Result<()> {
    ensure!(a.procs <= 1024, "--procs {} is too many (at most 1024)", a.procs);
    ensure!(
        a.record_size <= 1 << 30,
        "--record-size {} is too large (at most 1G)",
        a.record_size
    );
    let readers = a
        .readers
        .unwrap_or(if a.procs >= 3 { a.procs - 1 } else { a.procs + 1 });
    ensure!(readers <= 1024, "--readers {readers} is too many (at most 1024)");
    let total = a
        .records
        .checked_mul(a.procs)
        .and_then(|x| x.checked_mul(a.record_size))
        .context("file size overflows")?;

    let plfs = open_plfs(cli)?;
    let mount = plfs
        .config()
        .mounts
        .first()
        .context("the configuration has no mount point")?
        .clone();
    let logical = match &a.file {
        Some(f) => crate::util::absolute(f)?,
        None => mount.mount_point.join(format!("plfs-demo.{}", std::process::id())),
    };
    crate::util::require_plfs_path(&plfs, &logical)?;
    match plfs.stat(&logical) {
        Ok(_) => bail!("{} already exists; remove it or pick another --file", logical.display()),
        Err(e) if e.is_not_found() => {}
        Err(e) => return Err(anyhow::Error::new(e).context(format!("stat {}", logical.display()))),
    }
    let bdir = baseline_dir(&plfs, a)?;
    let plain = bdir.join("shared.dat");

    outln!("PLFS N-1 demo");
    match plfs.config().files.as_slice() {
        [] => outln!("  configuration: zero-config default"),
        files => outln!(
            "  configuration: {}",
            files
                .iter()
                .map(|f| f.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
    let backends: Vec<String> = mount
        .backends
        .iter()
        .map(|b| b.location.display().to_string())
        .collect();
    outln!(
        "  mount point:   {} (backends: {})",
        mount.mount_point.display(),
        backends.join(", ")
    );
    outln!("  logical file:  {}", logical.display());
    outln!("  baseline file: {}", plain.display());
    outln!(
        "  pattern:       {} writers x {} records x {} B, strided (rank r writes record i at (i*{} + r)*{}) = {}",
        a.procs,
        a.records,
        a.record_size,
        a.procs,
        a.record_size,
        human_bytes(total)
    );

    let phases = match run_demo(cli, a, &plfs, &logical, &plain, readers, total) {
        Ok(p) => p,
        Err(e) => {
            errln!(
                "plfs demo: FAILED; files kept for inspection: {} and {}",
                logical.display(),
                plain.display()
            );
            return Err(e);
        }
    };
    if a.keep {
        outln!("\nkept: {} and {}", logical.display(), plain.display());
    } else {
        plfs.unlink(&logical)
            .ctx(|| format!("removing {}", logical.display()))?;
        std::fs::remove_dir_all(&bdir).with_context(|| format!("removing {}", bdir.display()))?;
    }
    outln!(
        "\nVERIFIED: N-1 round trip of {total} bytes by {} writers, read back by {readers} readers",
        a.procs
    );
    if cli.json {
        let [pw, bw, pr, br] = phases;
        crate::out::json(&serde_json::json!({
            "verified": true, "bytes": total, "writers": a.procs, "readers": readers,
            "file": logical.display().to_string(), "kept": a.keep,
            "write_mb_s": {"plfs": pw.mb_s(), "plain": bw.mb_s()},
            "read_mb_s": {"plfs": pr.mb_s(), "plain": br.mb_s()},
            "index_records_read": pr.records,
        }));
    }
    Ok(())
}
