//! One process of `plfs demo` (the hidden `plfs demo-worker` subcommand): writes its strided
//! share of the N-1 file, or reads back and verifies a contiguous share, through PLFS or through
//! a plain shared file, and prints one JSON line of timings on stdout.
//!
//! Start barrier: the worker does all its setup, then reads stdin to end of file; the parent
//! closes every worker's stdin at once, so the timed sections of all workers start together.

use crate::fail::CoreContext;
use crate::globals::Globals;
use crate::pattern;
use crate::util::{open_plfs, parse_count, parse_size, BUF_SIZE};
use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use plfs_core::OpenFlags;
use serde_json::json;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

/// What a worker does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// Write records `rank, rank + nprocs, ...` of the strided pattern.
    Write,
    /// Read and verify bytes `[total * rank / nprocs, total * (rank + 1) / nprocs)`.
    Read,
}

/// Where a worker does it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Target {
    /// A logical file through the PLFS library.
    Plfs,
    /// A plain file with pwrite/pread (the baseline).
    Plain,
}

/// Arguments of `plfs demo-worker`.
#[derive(Debug, Args)]
pub struct WorkerArgs {
    #[arg(long, value_enum)]
    mode: Mode,
    #[arg(long, value_enum)]
    target: Target,
    /// The logical file (plfs) or the plain file (plain).
    #[arg(long)]
    path: PathBuf,
    #[arg(long)]
    rank: u64,
    #[arg(long, value_parser = parse_count)]
    nprocs: u64,
    /// Records per writer (write mode).
    #[arg(long, value_parser = parse_count, default_value = "1")]
    records: u64,
    /// Bytes per record (write mode).
    #[arg(long, value_parser = parse_size, default_value = "1")]
    record_size: u64,
    /// File size to split among the readers (read mode).
    #[arg(long, value_parser = parse_size, default_value = "0")]
    total: u64,
}

/// Wall-clock time in ns since the epoch: comparable between the processes of one machine.
pub fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// Timings a worker reports; all times are [`now_ns`] values.
#[derive(Debug, Default, Clone)]
struct Report {
    start: u64,
    opened: u64,
    first_io: u64,
    end: u64,
    bytes: u64,
    records_read: u64,
}

fn wait_for_start() -> Result<()> {
    let mut sink = Vec::new();
    std::io::stdin()
        .read_to_end(&mut sink)
        .context("waiting for the start signal on stdin")?;
    Ok(())
}

fn mismatch(rank: u64, what: &str, (off, want, got): (u64, u8, u8)) -> anyhow::Error {
    anyhow::anyhow!("reader {rank}: MISMATCH in {what} at offset {off}: expected byte {want:#04x}, found {got:#04x}")
}

fn write_plfs(cli: &Globals, a: &WorkerArgs) -> Result<Report> {
    let plfs = open_plfs(cli)?;
    let mut buf = vec![0u8; a.record_size as usize];
    let flags = OpenFlags {
        read: false,
        write: true,
        create: true,
        excl: false,
        trunc: false,
        append: false,
    };
    let pid = std::process::id();
    wait_for_start()?;
    let mut r = Report {
        start: now_ns(),
        ..Report::default()
    };
    let f = plfs
        .open(&a.path, flags, 0o644, pid)
        .ctx(|| format!("writer {}: opening {}", a.rank, a.path.display()))?;
    r.opened = now_ns();
    for i in 0..a.records {
        let off = (i * a.nprocs + a.rank) * a.record_size;
        pattern::fill(&mut buf, off);
        f.write(&buf, off)
            .ctx(|| format!("writer {}: writing {} at offset {off}", a.rank, a.path.display()))?;
        r.bytes += buf.len() as u64;
        if i == 0 {
            r.first_io = now_ns();
        }
    }
    f.close()
        .ctx(|| format!("writer {}: closing {}", a.rank, a.path.display()))?;
    r.end = now_ns();
    Ok(r)
}

fn write_plain(a: &WorkerArgs) -> Result<Report> {
    let mut buf = vec![0u8; a.record_size as usize];
    wait_for_start()?;
    let mut r = Report {
        start: now_ns(),
        ..Report::default()
    };
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&a.path)
        .with_context(|| format!("writer {}: opening {}", a.rank, a.path.display()))?;
    r.opened = now_ns();
    for i in 0..a.records {
        let off = (i * a.nprocs + a.rank) * a.record_size;
        pattern::fill(&mut buf, off);
        f.write_all_at(&buf, off)
            .with_context(|| format!("writer {}: writing {} at offset {off}", a.rank, a.path.display()))?;
        r.bytes += buf.len() as u64;
        if i == 0 {
            r.first_io = now_ns();
        }
    }
    drop(f);
    r.end = now_ns();
    Ok(r)
}

/// Reads `[lo, hi)` in [`BUF_SIZE`] pieces with `read_at`, verifying every byte.
fn read_share(
    rank: u64,
    what: &str,
    lo: u64,
    hi: u64,
    r: &mut Report,
    mut read_at: impl FnMut(&mut [u8], u64) -> Result<usize>,
) -> Result<()> {
    let mut buf = vec![0u8; BUF_SIZE];
    let mut scratch = Vec::with_capacity(BUF_SIZE);
    let mut off = lo;
    while off < hi {
        let want = ((hi - off) as usize).min(BUF_SIZE);
        let mut got = 0;
        while got < want {
            let n = read_at(&mut buf[got..want], off + got as u64)?;
            if n == 0 {
                bail!(
                    "reader {rank}: {what} ends at offset {} but should hold {hi} bytes",
                    off + got as u64
                );
            }
            got += n;
        }
        if r.first_io == 0 {
            r.first_io = now_ns();
        }
        if let Some(m) = pattern::verify(&buf[..want], off, &mut scratch) {
            return Err(mismatch(rank, what, m));
        }
        r.bytes += want as u64;
        off += want as u64;
    }
    Ok(())
}

fn read_plfs(cli: &Globals, a: &WorkerArgs) -> Result<Report> {
    let plfs = open_plfs(cli)?;
    let (lo, hi) = (a.total * a.rank / a.nprocs, a.total * (a.rank + 1) / a.nprocs);
    let flags = OpenFlags {
        read: true,
        write: false,
        create: false,
        excl: false,
        trunc: false,
        append: false,
    };
    let what = a.path.display().to_string();
    wait_for_start()?;
    let mut r = Report {
        start: now_ns(),
        ..Report::default()
    };
    let f = plfs
        .open(&a.path, flags, 0, std::process::id())
        .ctx(|| format!("reader {}: opening {what}", a.rank))?;
    r.opened = now_ns();
    // A one-byte first read makes the process merge the index: timed on its own as `first_io`.
    if lo < hi {
        f.read(&mut [0u8; 1], lo)
            .ctx(|| format!("reader {}: reading {what} at offset {lo}", a.rank))?;
        r.first_io = now_ns();
    }
    read_share(a.rank, &what, lo, hi, &mut r, |b, o| {
        f.read(b, o)
            .ctx(|| format!("reader {}: reading {what} at offset {o}", a.rank))
    })?;
    r.records_read = f.records_read();
    f.close().ctx(|| format!("reader {}: closing {what}", a.rank))?;
    r.end = now_ns();
    Ok(r)
}

fn read_plain(a: &WorkerArgs) -> Result<Report> {
    let (lo, hi) = (a.total * a.rank / a.nprocs, a.total * (a.rank + 1) / a.nprocs);
    let what = a.path.display().to_string();
    wait_for_start()?;
    let mut r = Report {
        start: now_ns(),
        ..Report::default()
    };
    let f = std::fs::File::open(&a.path).with_context(|| format!("reader {}: opening {what}", a.rank))?;
    r.opened = now_ns();
    read_share(a.rank, &what, lo, hi, &mut r, |b, o| {
        f.read_at(b, o)
            .with_context(|| format!("reader {}: reading {what} at offset {o}", a.rank))
    })?;
    drop(f);
    r.end = now_ns();
    Ok(r)
}

/// Runs `plfs demo-worker`.
pub fn worker(cli: &Globals, a: &WorkerArgs) -> Result<()> {
    if a.rank >= a.nprocs {
        bail!("--rank {} must be below --nprocs {}", a.rank, a.nprocs);
    }
    let r = match (a.mode, a.target) {
        (Mode::Write, Target::Plfs) => write_plfs(cli, a)?,
        (Mode::Write, Target::Plain) => write_plain(a)?,
        (Mode::Read, Target::Plfs) => read_plfs(cli, a)?,
        (Mode::Read, Target::Plain) => read_plain(a)?,
    };
    let v = json!({
        "rank": a.rank, "start": r.start, "opened": r.opened, "first_io": r.first_io, "end": r.end,
        "bytes": r.bytes, "records_read": r.records_read,
    });
    outln!("{v}");
    Ok(())
}
