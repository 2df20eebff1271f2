//! Index at scale: builds containers of N strided writes by W writers (raw index, pattern-
//! compressed index, flattened index) and of N random-offset writes (for contrast; merged and
//! flattened), then measures, each in a fresh process, the time of open + stat + first read, the
//! memory of the merged index and the process's peak resident memory, and the lookups of small
//! reads: up to 100,000 reads of one record each, in file order.
//!
//! Usage: `plfs-index-bench [--writes N] [--writers W] [--record B] [--dir DIR] [--csv FILE]`
//! (defaults: 1,000,000 writes, 4 writers, 64-byte records). Prints a table; medians of 5 runs.

use plfs_core::config::{BackendRole, BackendSpec, Config, GlobalParams, MountConfig, Workload};
use plfs_core::{OpenFlags, Plfs};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

struct Args {
    writes: u64,
    writers: u64,
    record: u64,
    dir: PathBuf,
    csv: Option<PathBuf>,
}

fn parse_args() -> Result<(Args, Option<(String, String)>), String> {
    let mut a = Args {
        writes: 1_000_000,
        writers: 4,
        record: 64,
        dir: std::env::temp_dir().join(format!("plfs-index-bench-{}", std::process::id())),
        csv: None,
    };
    let mut measure = None;
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = || it.next().ok_or_else(|| format!("{k} needs a value"));
        match k.as_str() {
            "--writes" => a.writes = v()?.parse().map_err(|e| format!("--writes: {e}"))?,
            "--writers" => a.writers = v()?.parse().map_err(|e| format!("--writers: {e}"))?,
            "--record" => a.record = v()?.parse().map_err(|e| format!("--record: {e}"))?,
            "--dir" => a.dir = PathBuf::from(v()?),
            "--csv" => a.csv = Some(PathBuf::from(v()?)),
            "--measure" => {
                let variant = v()?;
                measure = Some((variant, v()?));
            }
            "-h" | "--help" => {
                println!(
                    "usage: plfs-index-bench [--writes N] [--writers W] [--record BYTES] [--dir DIR] [--csv FILE]"
                );
                std::process::exit(0);
            }
            _ => return Err(format!("unknown argument {k}")),
        }
    }
    if a.writers == 0 || a.writes == 0 || a.record == 0 {
        return Err("--writes, --writers and --record must be positive".into());
    }
    Ok((a, measure))
}

fn config(dir: &Path, compression: bool) -> Config {
    let backend = dir.join("store");
    std::fs::create_dir_all(&backend).expect("create backend");
    Config {
        files: vec![dir.join("plfsrc")],
        global: GlobalParams {
            index_compression: compression,
            ..GlobalParams::default()
        },
        mounts: vec![MountConfig {
            mount_point: "/plfs-bench".into(),
            workload: Workload::SharedFile,
            backends: vec![BackendSpec {
                location: backend,
                role: BackendRole::Both,
            }],
        }],
        warnings: Vec::new(),
    }
}

/// Writes the container for `variant` ("raw", "compressed", "flattened", "irregular",
/// "irregular-flat").
fn build(a: &Args, variant: &str) -> Result<(), String> {
    let dir = a.dir.join(variant);
    let p = Plfs::new(config(&dir, variant != "raw")).map_err(|e| e.to_string())?;
    let f = Path::new("/plfs-bench/file");
    let flags = OpenFlags {
        write: true,
        create: true,
        ..Default::default()
    };
    let hs: Vec<_> = (0..a.writers)
        .map(|w| p.open(f, flags, 0o644, w as u32 + 1))
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    let buf = vec![0x5au8; a.record as usize];
    let per = a.writes / a.writers;
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    for i in 0..per {
        for (w, h) in hs.iter().enumerate() {
            let slot = if variant.starts_with("irregular") {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                rng % (per * a.writers)
            } else {
                i * a.writers + w as u64
            };
            h.write(&buf, slot * a.record).map_err(|e| e.to_string())?;
        }
    }
    for h in hs {
        h.close().map_err(|e| e.to_string())?;
    }
    if variant.ends_with("flat") || variant == "flattened" {
        plfs_core::tools::flatten(&p, f).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// In a fresh process: open + stat + first 1-byte read, then the index's size.
fn measure(a: &Args, variant: &str, dir: &str) -> Result<(), String> {
    let p = Plfs::new(config(Path::new(dir), variant != "raw")).map_err(|e| e.to_string())?;
    let f = Path::new("/plfs-bench/file");
    let t = Instant::now();
    let h = p
        .open(
            f,
            OpenFlags {
                read: true,
                ..Default::default()
            },
            0,
            1,
        )
        .map_err(|e| e.to_string())?;
    let st = p.stat(f).map_err(|e| e.to_string())?;
    let mut b = [0u8; 1];
    h.read(&mut b, st.size / 2).map_err(|e| e.to_string())?;
    let secs = t.elapsed().as_secs_f64();
    let s = h.index_stats().map_err(|e| e.to_string())?;
    // Small reads, one record each in file order: the index lookup dominates their cost.
    let n = (st.size / a.record).min(100_000);
    let mut rec = vec![0u8; a.record as usize];
    let t = Instant::now();
    for i in 0..n {
        h.read(&mut rec, i * a.record).map_err(|e| e.to_string())?;
    }
    let lookup = t.elapsed().as_secs_f64();
    // The process's peak resident memory (kernel's VmHWM), in KiB.
    let peak = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|t| t.lines().find(|l| l.starts_with("VmHWM:")).map(str::to_string))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|k| k.parse::<u64>().ok()))
        .unwrap_or(0);
    println!(
        "{secs:.6} {} {} {} {} {} {lookup:.6} {n} {peak}",
        s.mem_bytes, s.pieces, s.patterns, s.records_read, st.size
    );
    Ok(())
}

fn dir_bytes(d: &Path, prefix: &str) -> u64 {
    let mut n = 0;
    if let Ok(rd) = std::fs::read_dir(d) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                n += dir_bytes(&p, prefix);
            } else if e.file_name().to_string_lossy().starts_with(prefix) {
                n += e.metadata().map(|m| m.len()).unwrap_or(0);
            }
        }
    }
    n
}

fn main() {
    let (a, m) = match parse_args() {
        Ok(v) => v,
        Err(e) => {
            eprintln!("plfs-index-bench: {e}");
            std::process::exit(2);
        }
    };
    if let Some((variant, dir)) = m {
        if let Err(e) = measure(&a, &variant, &dir) {
            eprintln!("plfs-index-bench: {e}");
            std::process::exit(1);
        }
        return;
    }
    let exe = std::env::current_exe().expect("current exe");
    println!(
        "index at scale: {} writes of {} B by {} writers (page cache warm; medians of 5 fresh processes)",
        a.writes, a.record, a.writers
    );
    println!(
        "{:<14} {:>13} {:>14} {:>12} {:>9} {:>9} {:>12} {:>14} {:>11}",
        "index",
        "open+stat+1st",
        "index memory",
        "index bytes",
        "pieces",
        "patterns",
        "records",
        "small reads/s",
        "peak RSS"
    );
    let mut csv = String::from("variant,writes,writers,record_bytes,open_stat_read_ms,index_mem_bytes,index_log_bytes,pieces,patterns,records,reads,reads_per_s,peak_rss_kib\n");
    for variant in ["raw", "compressed", "flattened", "irregular", "irregular-flat"] {
        if let Err(e) = build(&a, variant) {
            eprintln!("plfs-index-bench: building {variant}: {e}");
            std::process::exit(1);
        }
        let dir = a.dir.join(variant);
        let mut runs: Vec<(f64, String)> = Vec::new();
        for _ in 0..5 {
            let out = Command::new(&exe)
                .args(["--measure", variant, &dir.to_string_lossy()])
                .output()
                .expect("run measure");
            if !out.status.success() {
                eprintln!(
                    "plfs-index-bench: measure {variant}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                std::process::exit(1);
            }
            let line = String::from_utf8_lossy(&out.stdout).trim().to_string();
            let t: f64 = line.split(' ').next().and_then(|x| x.parse().ok()).unwrap_or(f64::NAN);
            runs.push((t, line));
        }
        runs.sort_by(|x, y| x.0.total_cmp(&y.0));
        let med = &runs[2].1;
        let f: Vec<&str> = med.split(' ').collect();
        let (ms, mem, pieces, patterns, records) = (runs[2].0 * 1e3, f[1], f[2], f[3], f[4]);
        let num = |i: usize| f.get(i).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0);
        // The median of the lookup times (the runs were sorted by open time).
        let mut lk: Vec<f64> = runs
            .iter()
            .filter_map(|(_, l)| l.split(' ').nth(6).and_then(|x| x.parse().ok()))
            .collect();
        lk.sort_by(f64::total_cmp);
        let (reads, peak) = (num(7), num(8));
        let per_s = lk
            .get(lk.len() / 2)
            .map_or(0.0, |t| if *t > 0.0 { reads / t } else { 0.0 });
        let idx = dir_bytes(&dir, "index.") + dir_bytes(&dir, "flat.");
        println!(
            "{variant:<14} {ms:>10.2} ms {:>11.1} KiB {:>9.1} KiB {pieces:>9} {patterns:>9} {records:>12} {per_s:>14.0} {:>7.1} MiB",
            mem.parse::<f64>().unwrap_or(0.0) / 1024.0,
            idx as f64 / 1024.0,
            peak / 1024.0
        );
        csv.push_str(&format!(
            "{variant},{},{},{},{ms:.3},{mem},{idx},{pieces},{patterns},{records},{reads},{per_s:.0},{peak}\n",
            a.writes, a.writers, a.record
        ));
    }
    if let Some(path) = &a.csv {
        if let Some(parent) = path.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        std::fs::write(path, csv).expect("write csv");
        println!("csv: {}", path.display());
    }
    let _ = std::fs::remove_dir_all(&a.dir);
}
