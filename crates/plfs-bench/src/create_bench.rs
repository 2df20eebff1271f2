//! Small-file creates and N-N bandwidth.
//!
//! P processes each create M files of 1 KiB (open-write-close) in their own directory, through:
//! - the plfs API on a 1-N (`small_file`) mount,
//! - ldplfs (the same libc open/write/close calls, with LD_PRELOAD) on that mount,
//! - plain files in a directory of the same file system.
//!
//! Then P processes each write one file of S MiB through the API on an N-N mount and as plain
//! N-N files. Reports creates per second per process and aggregate, and MB/s; medians of 3 runs.
//!
//! Usage: `plfs-create-bench [--files M] [--procs 1,2,4] [--nn-mib S] [--ldplfs LIB] [--csv FILE]`

use plfs_core::config::{BackendRole, BackendSpec, Config, GlobalParams, MountConfig, Workload};
use plfs_core::{OpenFlags, Plfs};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

fn config(root: &Path, workload: Workload) -> Config {
    let backend = root.join("store");
    std::fs::create_dir_all(&backend).expect("backend");
    Config {
        files: vec![root.join("plfsrc")],
        global: GlobalParams::default(),
        mounts: vec![MountConfig {
            mount_point: root.join("mnt"),
            workload,
            backends: vec![BackendSpec {
                location: backend,
                role: BackendRole::Both,
            }],
        }],
        warnings: Vec::new(),
    }
}

fn write_rc(root: &Path, workload: &str) -> PathBuf {
    let rc = root.join("plfsrc");
    std::fs::create_dir_all(root.join("store")).expect("backend");
    std::fs::write(
        &rc,
        format!(
            "- mount_point: {}\n  workload: {workload}\n  backends:\n    - location: {}\n",
            root.join("mnt").display(),
            root.join("store").display()
        ),
    )
    .expect("plfsrc");
    rc
}

/// One child: performs its share and prints its elapsed seconds.
fn child(kind: &str, root: &Path, rank: u32, n: u64, mib: u64) -> Result<f64, String> {
    let data = vec![0x42u8; 1024];
    match kind {
        "api" => {
            let p = Plfs::new(config(root, Workload::SmallFile)).map_err(|e| e.to_string())?;
            let dir = root.join("mnt").join(format!("r{rank}"));
            p.mkdir(&dir, 0o755).map_err(|e| e.to_string())?;
            let flags = OpenFlags {
                write: true,
                create: true,
                trunc: true,
                ..Default::default()
            };
            let t = Instant::now();
            for i in 0..n {
                let h = p
                    .open(&dir.join(format!("f{i}")), flags, 0o644, rank)
                    .map_err(|e| e.to_string())?;
                h.write(&data, 0).map_err(|e| e.to_string())?;
                h.close().map_err(|e| e.to_string())?;
            }
            Ok(t.elapsed().as_secs_f64())
        }
        "posix" => {
            // Plain libc calls: through ldplfs when LD_PRELOAD is set and `root` is a mount.
            let dir = root.join(format!("r{rank}"));
            std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            let t = Instant::now();
            for i in 0..n {
                let mut f = std::fs::File::create(dir.join(format!("f{i}"))).map_err(|e| e.to_string())?;
                f.write_all(&data).map_err(|e| e.to_string())?;
            }
            Ok(t.elapsed().as_secs_f64())
        }
        "nn-api" | "nn-plain" => {
            let block = vec![7u8; 1 << 20];
            let t = Instant::now();
            if kind == "nn-api" {
                let p = Plfs::new(config(root, Workload::FilePerProc)).map_err(|e| e.to_string())?;
                let h = p
                    .open(
                        &root.join("mnt").join(format!("rank{rank}")),
                        OpenFlags {
                            write: true,
                            create: true,
                            trunc: true,
                            ..Default::default()
                        },
                        0o644,
                        rank,
                    )
                    .map_err(|e| e.to_string())?;
                for i in 0..mib {
                    h.write(&block, i << 20).map_err(|e| e.to_string())?;
                }
                h.close().map_err(|e| e.to_string())?;
            } else {
                let mut f = std::fs::File::create(root.join(format!("rank{rank}"))).map_err(|e| e.to_string())?;
                for _ in 0..mib {
                    f.write_all(&block).map_err(|e| e.to_string())?;
                }
            }
            Ok(t.elapsed().as_secs_f64())
        }
        _ => Err(format!("unknown kind {kind}")),
    }
}

/// One measured run: `procs` children of one kind at once.
struct Job<'a> {
    exe: &'a Path,
    kind: &'a str,
    root: &'a Path,
    procs: u32,
    files: u64,
    mib: u64,
    preload: Option<&'a Path>,
    rc: Option<&'a Path>,
}

/// Runs a job; returns the slowest child's seconds.
fn run(j: &Job) -> f64 {
    let (kind, procs) = (j.kind, j.procs);
    let kids: Vec<_> = (0..procs)
        .map(|r| {
            let mut c = Command::new(j.exe);
            c.args([
                "--child",
                kind,
                &j.root.to_string_lossy(),
                &r.to_string(),
                &j.files.to_string(),
                &j.mib.to_string(),
            ])
            .stdout(Stdio::piped());
            if let Some(l) = j.preload {
                c.env("LD_PRELOAD", l);
            }
            if let Some(rc) = j.rc {
                c.env("PLFSRC", rc);
            }
            c.spawn().expect("spawn child")
        })
        .collect();
    let mut worst = 0f64;
    for k in kids {
        let out = k.wait_with_output().expect("child");
        let s = String::from_utf8_lossy(&out.stdout);
        let t: f64 = s.trim().parse().unwrap_or_else(|_| panic!("child {kind} failed: {s}"));
        worst = worst.max(t);
    }
    worst
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The command line of a run.
struct Opts {
    files: u64,
    procs: Vec<u32>,
    mib: u64,
    csv: Option<PathBuf>,
    lib: Option<PathBuf>,
}

/// Parses the options after the program name (exits with a usage message on a bad one).
fn parse_args(args: &[String]) -> Opts {
    let (mut files, mut procs, mut mib, mut csv, mut lib) =
        (20_000u64, vec![1u32, 2, 4], 256u64, None::<PathBuf>, None::<PathBuf>);
    let mut it = args.iter().skip(1);
    while let Some(k) = it.next() {
        let v = it.next().cloned().unwrap_or_default();
        match k.as_str() {
            "--files" => files = v.parse().expect("--files N"),
            "--procs" => procs = v.split(',').map(|x| x.parse().expect("--procs 1,2,4")).collect(),
            "--nn-mib" => mib = v.parse().expect("--nn-mib S"),
            "--csv" => csv = Some(PathBuf::from(v)),
            "--ldplfs" => lib = Some(PathBuf::from(v)),
            _ => {
                eprintln!(
                    "usage: plfs-create-bench [--files M] [--procs 1,2,4] [--nn-mib S] [--ldplfs LIB] [--csv FILE]"
                );
                std::process::exit(2);
            }
        }
    }
    Opts {
        files,
        procs,
        mib,
        csv,
        lib,
    }
}

/// A child process (`--child KIND ROOT RANK FILES MIB`): performs its share, prints its seconds.
fn child_main(args: &[String]) {
    let n = |i: usize| args[i].parse::<u64>().expect("number");
    match child(&args[2], Path::new(&args[3]), n(4) as u32, n(5), n(6)) {
        Ok(t) => println!("{t}"),
        Err(e) => {
            eprintln!("plfs-create-bench child: {e}");
            std::process::exit(1);
        }
    }
}

/// The small-file creates of every process count in `o`, through the API, ldplfs (`lib`, if
/// there is one) and plain files, in runs under `base`; rows appended to the CSV `out`.
fn creates(exe: &Path, lib: Option<&Path>, base: &Path, o: &Opts, out: &mut String) {
    let files = o.files;
    println!("creates of 1 KiB files (open-write-close), {files} per process, medians of 3");
    println!(
        "{:<20} {:>5} {:>16} {:>14}",
        "method", "procs", "creates/s/proc", "aggregate/s"
    );
    for &p in &o.procs {
        let mut rates = Vec::new();
        for (label, kind, preload) in [
            ("1-n via API", "api", false),
            ("1-n via ldplfs", "posix", true),
            ("plain files", "posix", false),
        ] {
            if preload && lib.is_none() {
                println!("{label:<20} {p:>5} {:>16}", "not available (no libldplfs.so)");
                continue;
            }
            let mut ts = Vec::new();
            for rep in 0..3 {
                let root = base.join(format!("{kind}-{p}-{rep}-{preload}"));
                std::fs::create_dir_all(&root).expect("root");
                let rc = write_rc(&root, "1-n");
                let target = if preload {
                    root.join("mnt")
                } else if kind == "posix" {
                    root.join("plain")
                } else {
                    root.clone()
                };
                let t = run(&Job {
                    exe,
                    kind,
                    root: &target,
                    procs: p,
                    files,
                    mib: 0,
                    preload: if preload { lib } else { None },
                    rc: Some(&rc),
                });
                ts.push(t);
                let _ = std::fs::remove_dir_all(&root);
            }
            let t = median(ts);
            let per = files as f64 / t;
            rates.push(per);
            println!("{label:<20} {p:>5} {per:>16.0} {:>14.0}", per * p as f64);
            out.push_str(&format!(
                "{kind}{},{p},{files},{t:.4},{per:.0},{:.0}\n",
                if preload { "-ldplfs" } else { "" },
                per * p as f64
            ));
        }
        if rates.len() == 3 {
            println!(
                "{:<20} {p:>5} API/plain {:.1}x, ldplfs/plain {:.1}x",
                "ratios",
                rates[0] / rates[2],
                rates[1] / rates[2]
            );
        }
    }
}

/// N-N bandwidth of every process count in `o`, through the API and as plain files, in runs
/// under `base`; rows appended to the CSV `out`.
fn nn_bandwidth(exe: &Path, base: &Path, o: &Opts, out: &mut String) {
    let mib = o.mib;
    println!("N-N: each process writes one {mib} MiB file (no fsync), medians of 3");
    for &p in &o.procs {
        let mut bw = Vec::new();
        for kind in ["nn-api", "nn-plain"] {
            let mut ts = Vec::new();
            for rep in 0..3 {
                let root = base.join(format!("{kind}-{p}-{rep}"));
                std::fs::create_dir_all(&root).expect("root");
                ts.push(run(&Job {
                    exe,
                    kind,
                    root: &root,
                    procs: p,
                    files: 0,
                    mib,
                    preload: None,
                    rc: None,
                }));
                let _ = std::fs::remove_dir_all(&root);
            }
            let t = median(ts);
            let mbs = (p as u64 * mib) as f64 * 1.048576 / t;
            bw.push(mbs);
            out.push_str(&format!("{kind},{p},{mib},{t:.4},,{mbs:.1}\n"));
        }
        println!(
            "n-n {p} procs: PLFS {:.0} MB/s, plain {:.0} MB/s, ratio {:.2}",
            bw[0],
            bw[1],
            bw[0] / bw[1]
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--child") {
        child_main(&args);
        return;
    }
    let o = parse_args(&args);
    let exe = std::env::current_exe().expect("exe");
    let lib = o
        .lib
        .clone()
        .or_else(|| Some(exe.with_file_name("libldplfs.so")).filter(|p| p.exists()));
    let base = std::env::temp_dir().join(format!("plfs-create-bench-{}", std::process::id()));
    let mut out = String::from(
        "kind,procs,files_or_mib_per_proc,seconds,creates_per_sec_per_proc,aggregate_creates_or_mb_per_sec\n",
    );
    creates(&exe, lib.as_deref(), &base, &o, &mut out);
    nn_bandwidth(&exe, &base, &o, &mut out);
    if let Some(c) = &o.csv {
        if let Some(d) = c.parent() {
            let _ = std::fs::create_dir_all(d);
        }
        std::fs::write(c, out).expect("csv");
    }
    let _ = std::fs::remove_dir_all(&base);
}
