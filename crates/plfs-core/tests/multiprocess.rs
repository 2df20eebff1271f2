//! Real multi-process tests: this test binary re-executes itself (`PLFS_TEST_CHILD=<role>`, test
//! `child_entry`) as writer and reader processes with their real pids, so several processes write
//! one N-1 file at once and a different number of processes read it back, byte for byte against
//! a deterministic pattern and against a plain file written identically.

mod common;

use common::{arg, arg_u64, assert_child_ok, child_command, child_lines, Fixture, CHILD_TAG};
use plfs_core::config::GlobalParams;
use plfs_core::{Config, Plfs};
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

/// The test that child processes run.
const ENTRY: &str = "child_entry";

/// Entry point of child processes; does nothing in a normal test run.
#[test]
fn child_entry() {
    let Some(role) = common::child_role() else { return };
    match role.as_str() {
        "writer" => child_writer(),
        "reader" => child_reader(),
        r => panic!("unknown child role {r}"),
    }
}

fn plfs_from_rc() -> Plfs {
    let rc = PathBuf::from(arg("RC"));
    let cfg = Config::from_file(&rc).unwrap_or_else(|e| panic!("{}: {e}", rc.display()));
    Plfs::new(cfg).expect("Plfs::new")
}

/// Offset of record `i` of rank `rank`.
fn record_offset(layout: &str, rank: u64, nprocs: u64, i: u64, nrecs: u64, recsize: u64) -> u64 {
    match layout {
        "strided" => (i * nprocs + rank) * recsize,
        "segmented" => (rank * nrecs + i) * recsize,
        l => panic!("unknown layout {l}"),
    }
}

/// Writes this rank's records to the PLFS file and to the plain file; with `WAIT=1`, syncs, says
/// `synced` and keeps the file open until a line arrives on stdin.
fn child_writer() {
    let plfs = plfs_from_rc();
    let path = PathBuf::from(arg("PATH"));
    let (rank, nprocs, recsize, nrecs, seed) = (
        arg_u64("RANK"),
        arg_u64("NPROCS"),
        arg_u64("RECSIZE"),
        arg_u64("NRECS"),
        arg_u64("SEED"),
    );
    let layout = arg("LAYOUT");
    let f = plfs
        .open(&path, common::wo_create(), 0o644, std::process::id())
        .expect("open for writing");
    let plain = File::options()
        .write(true)
        .create(true)
        .truncate(false)
        .open(arg("PLAIN"))
        .expect("open plain");
    let mut buf = vec![0u8; recsize as usize];
    for i in 0..nrecs {
        let off = record_offset(&layout, rank, nprocs, i, nrecs, recsize);
        common::fill_pattern(seed, off, &mut buf);
        assert_eq!(f.write(&buf, off).expect("write"), buf.len());
        plain.write_all_at(&buf, off).expect("plain write");
    }
    if arg("WAIT") == "1" {
        f.sync().expect("sync");
        println!("{CHILD_TAG} synced {rank}");
        let mut line = String::new();
        std::io::stdin().read_line(&mut line).expect("stdin");
    }
    f.close().expect("close");
    println!("{CHILD_TAG} done {rank}");
}

/// Reads `[START, END)` in chunks that do not align with records, checking every byte against the
/// pattern and the plain file; prints the range's crc32c.
fn child_reader() {
    let plfs = plfs_from_rc();
    let path = PathBuf::from(arg("PATH"));
    let (start, end, seed) = (arg_u64("START"), arg_u64("END"), arg_u64("SEED"));
    let plain = File::open(arg("PLAIN")).expect("open plain");
    let f = plfs
        .open(&path, common::ro(), 0, std::process::id())
        .expect("open for reading");
    let mut buf = vec![0u8; (1 << 20) + 13];
    let mut pbuf = vec![0u8; buf.len()];
    let mut want = vec![0u8; buf.len()];
    let mut crc = 0u32;
    let mut off = start;
    while off < end {
        let len = ((end - off) as usize).min(buf.len());
        let n = f.read(&mut buf[..len], off).expect("read");
        assert_eq!(n, len, "short read at {off}");
        common::fill_pattern(seed, off, &mut want[..len]);
        common::assert_bytes_eq(&buf[..len], &want[..len], &format!("PLFS bytes at {off}"));
        plain.read_exact_at(&mut pbuf[..len], off).expect("plain read");
        common::assert_bytes_eq(&buf[..len], &pbuf[..len], &format!("plain vs PLFS at {off}"));
        crc = crc32c::crc32c_append(crc, &buf[..len]);
        off += len as u64;
    }
    f.close().expect("close");
    println!("{CHILD_TAG} crc {crc}");
}

/// A job description shared by the scenarios.
struct Job<'a> {
    fx: &'a Fixture,
    name: &'a str,
    plain: PathBuf,
    nprocs: u64,
    recsize: u64,
    nrecs: u64,
    layout: &'a str,
    seed: u64,
}

impl Job<'_> {
    fn new<'a>(fx: &'a Fixture, name: &'a str, layout: &'a str, nprocs: u64, recsize: u64, nrecs: u64) -> Job<'a> {
        let plain = fx.dir.path().join(format!("{name}.plain"));
        Job {
            fx,
            name,
            plain,
            nprocs,
            recsize,
            nrecs,
            layout,
            seed: 0x5eed ^ nprocs ^ recsize,
        }
    }

    fn size(&self) -> u64 {
        self.nprocs * self.nrecs * self.recsize
    }

    fn logical(&self) -> PathBuf {
        self.fx.path(self.name)
    }

    fn common_args(&self) -> Vec<(&'static str, String)> {
        vec![
            ("RC", self.fx.rc.display().to_string()),
            ("PATH", self.logical().display().to_string()),
            ("PLAIN", self.plain.display().to_string()),
            ("SEED", self.seed.to_string()),
        ]
    }

    /// Starts writer `rank` (as host `host` if given).
    fn spawn_writer(&self, rank: u64, host: Option<&str>, wait: bool) -> Child {
        let mut args = self.common_args();
        args.extend([
            ("RANK", rank.to_string()),
            ("NPROCS", self.nprocs.to_string()),
            ("RECSIZE", self.recsize.to_string()),
            ("NRECS", self.nrecs.to_string()),
            ("LAYOUT", self.layout.to_string()),
            ("WAIT", if wait { "1" } else { "0" }.to_string()),
        ]);
        let mut c = child_command(ENTRY, "writer", &args);
        if let Some(h) = host {
            c.env("PLFS_HOSTNAME", h);
        }
        c.stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .stdin(if wait { Stdio::piped() } else { Stdio::null() });
        c.spawn().expect("spawn writer")
    }

    /// Runs every writer at once; returns their pids.
    fn write(&self, host_of: impl Fn(u64) -> Option<String>) -> Vec<u32> {
        let children: Vec<Child> = (0..self.nprocs)
            .map(|r| self.spawn_writer(r, host_of(r).as_deref(), false))
            .collect();
        let pids = children.iter().map(Child::id).collect();
        for (r, c) in children.into_iter().enumerate() {
            let out = c.wait_with_output().unwrap();
            assert_child_ok(&out, &format!("writer {r}"));
            assert_eq!(child_lines(&out, "done"), vec![r.to_string()]);
        }
        pids
    }

    /// `nreaders` processes at once each read one contiguous share of the file, checking it against
    /// the pattern and the plain file; their crc32c of each share must match the plain file's.
    fn read_back(&self, nreaders: u64, host: Option<&str>) {
        let size = self.size();
        let children: Vec<(u64, u64, Child)> = (0..nreaders)
            .map(|i| {
                let (start, end) = (size * i / nreaders, size * (i + 1) / nreaders);
                let mut args = self.common_args();
                args.extend([("START", start.to_string()), ("END", end.to_string())]);
                let mut c = child_command(ENTRY, "reader", &args);
                if let Some(h) = host {
                    c.env("PLFS_HOSTNAME", h);
                }
                c.stdout(Stdio::piped()).stderr(Stdio::piped());
                (start, end, c.spawn().expect("spawn reader"))
            })
            .collect();
        let plain = std::fs::read(&self.plain).unwrap();
        assert_eq!(plain.len() as u64, size, "plain file size");
        for (start, end, c) in children {
            let out = c.wait_with_output().unwrap();
            assert_child_ok(&out, &format!("reader of [{start}, {end})"));
            let want = common::crc(&plain[start as usize..end as usize]).to_string();
            assert_eq!(child_lines(&out, "crc"), vec![want], "crc of [{start}, {end})");
        }
    }

    /// Whole-file checks with a fresh instance in this process: stat size, every byte against the
    /// plain file and the pattern, and the crc32c of both.
    fn verify_here(&self) {
        let p = self.fx.plfs();
        assert_eq!(p.stat(&self.logical()).unwrap().size, self.size(), "stat size");
        let got = common::read_fresh(self.fx, &self.logical()).unwrap();
        let plain = std::fs::read(&self.plain).unwrap();
        common::assert_bytes_eq(&got, &plain, "PLFS file vs plain file");
        common::assert_bytes_eq(
            &got,
            &common::pattern(self.seed, 0, self.size() as usize),
            "PLFS file vs pattern",
        );
        assert_eq!(common::crc(&got), common::crc(&plain));
    }
}

/// Index logs of `name` and the pids and hosts in their names.
fn index_logs(fx: &Fixture, name: &str) -> Vec<(PathBuf, u32, String)> {
    fx.logs(name, "index.")
        .into_iter()
        .map(|p| {
            let n = p.file_name().unwrap().to_str().unwrap().to_string();
            let l = plfs_format::parse_log_name(&n).unwrap_or_else(|| panic!("bad log name {n}"));
            (p, l.pid, l.host)
        })
        .collect()
}

#[test]
fn scenario_a_four_writers_strided_three_readers() {
    let fx = Fixture::simple("mp-a");
    let job = Job::new(&fx, "strided", "strided", 4, 47008, 50);
    let pids = job.write(|_| None);
    // One index log per writer process, named by its real pid.
    let mut log_pids: Vec<u32> = index_logs(&fx, job.name).into_iter().map(|(_, pid, _)| pid).collect();
    let mut want = pids.clone();
    log_pids.sort();
    want.sort();
    assert_eq!(log_pids, want, "index logs are named by the writers' pids");
    job.read_back(3, None);
    job.verify_here();
}

#[test]
fn scenario_b_segmented_two_writers() {
    let fx = Fixture::new("mp-b", 2, 0, GlobalParams::default());
    let job = Job::new(&fx, "segmented", "segmented", 2, 65536 + 7, 40);
    job.write(|_| None);
    job.read_back(3, None);
    job.read_back(1, None);
    job.verify_here();
}

/// Two host names whose hash differs modulo `m` (so they use different hostdirs or shadows).
fn two_hosts(m: u64) -> (String, String) {
    let h = |s: &str| plfs_format::hash_str(s) % m;
    let a = "hostA".to_string();
    let b = (0..).map(|i| format!("hostB{i}")).find(|b| h(b) != h(&a)).unwrap();
    (a, b)
}

#[test]
fn scenario_c_two_hosts_many_hostdirs() {
    let g = GlobalParams {
        num_hostdirs: 1024,
        ..GlobalParams::default()
    };
    let fx = Fixture::new("mp-c", 1, 0, g);
    let (ha, hb) = two_hosts(1024);
    let job = Job::new(&fx, "hosts", "strided", 4, 10_007, 30);
    job.write(|r| Some(if r % 2 == 0 { ha.clone() } else { hb.clone() }));
    let c = fx.container_dir(job.name);
    let mut hostdirs: Vec<String> = common::subdirs_with_prefix(&c, "hostdir.")
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    hostdirs.sort();
    let hd = |h: &str| format!("hostdir.{}", plfs_format::hash_str(h) % 1024);
    let mut want = vec![hd(&ha), hd(&hb)];
    want.sort();
    assert_eq!(hostdirs, want, "one hostdir per host");
    let logs = index_logs(&fx, job.name);
    assert_eq!(logs.len(), 4);
    for (p, _, host) in &logs {
        assert!(host == &ha || host == &hb, "{}: host {host}", p.display());
        assert_eq!(
            p.parent().unwrap().file_name().unwrap().to_string_lossy(),
            hd(host),
            "{} is in its host's hostdir",
            p.display()
        );
    }
    job.read_back(3, Some("hostR"));
    job.verify_here();
}

#[test]
fn scenario_c2_two_hosts_two_backends_shadow_dirs() {
    let fx = Fixture::new("mp-c2", 2, 0, GlobalParams::default());
    let (ha, hb) = two_hosts(2);
    let job = Job::new(&fx, "hosts2", "strided", 4, 4096 + 1, 25);
    job.write(|r| Some(if r < 2 { ha.clone() } else { hb.clone() }));
    let logs = index_logs(&fx, job.name);
    assert_eq!(logs.len(), 4);
    // One host's shadow is the container's own backend, the other's is the other backend: its
    // logs live under .plfs_shadow there.
    let c = fx.container_dir(job.name);
    let inside = logs.iter().filter(|(p, _, _)| p.starts_with(&c)).count();
    let shadowed = logs
        .iter()
        .filter(|(p, _, _)| p.to_string_lossy().contains("/.plfs_shadow/"))
        .count();
    assert_eq!((inside, shadowed), (2, 2), "logs: {logs:?}");
    job.read_back(3, Some(&ha));
    job.read_back(2, Some(&hb));
    job.verify_here();
}

#[test]
fn scenario_c3_burst_buffer_two_shadow_backends() {
    // One canonical backend holds the container; two shadow-only backends take the logs, one
    // per host.
    let fx = Fixture::new("mp-c3", 1, 2, GlobalParams::default());
    let (ha, hb) = two_hosts(2);
    let job = Job::new(&fx, "burst", "strided", 4, 8191, 20);
    job.write(|r| Some(if r % 2 == 0 { ha.clone() } else { hb.clone() }));
    let logs = index_logs(&fx, job.name);
    assert_eq!(logs.len(), 4);
    for (i, shadow) in fx.shadows.iter().enumerate() {
        let n = logs.iter().filter(|(p, _, _)| p.starts_with(shadow)).count();
        assert_eq!(n, 2, "shadow {i} holds the logs of one host: {logs:?}");
    }
    assert!(common::subdirs_with_prefix(&fx.container_dir(job.name), "hostdir.").is_empty());
    job.read_back(3, Some("hostR"));
    job.verify_here();
}

/// Reads lines from a child's stdout until a `PLFS-CHILD <key> ...` line.
fn wait_for_line(r: &mut impl BufRead, key: &str) {
    let prefix = format!("{CHILD_TAG} {key}");
    let mut line = String::new();
    loop {
        line.clear();
        let n = r.read_line(&mut line).unwrap();
        assert!(n > 0, "child ended before saying {key}");
        if line.starts_with(&prefix) {
            return;
        }
    }
}

fn meta_fast_size(p: &Plfs, path: &Path) -> Option<(u64, u64)> {
    plfs_format::fast_size(&plfs_core::tools::droppings(p, path).unwrap())
}

#[test]
fn scenario_d_stat_while_writers_open_then_closed() {
    let fx = Fixture::new("mp-d", 2, 0, GlobalParams::default());
    let job = Job::new(&fx, "open", "strided", 2, 4099, 20);
    let path = job.logical();
    // A reader that loaded the (empty) index before the writers started.
    let here = fx.plfs();
    here.open(&path, common::wo_create(), 0o644, 1)
        .unwrap()
        .close()
        .unwrap();
    let early = here.open(&path, common::ro(), 0, 2).unwrap();
    assert_eq!(common::read_all(&early).unwrap().len(), 0);

    let mut children: Vec<Child> = (0..job.nprocs).map(|r| job.spawn_writer(r, None, true)).collect();
    let mut outs: Vec<BufReader<std::process::ChildStdout>> = Vec::new();
    for c in &mut children {
        let mut r = BufReader::new(c.stdout.take().unwrap());
        wait_for_line(&mut r, "synced");
        outs.push(r);
    }
    // Writers are open and synced: stat must take the slow path and still be exact.
    let p = fx.plfs();
    assert_eq!(
        meta_fast_size(&p, &path),
        None,
        "open droppings make stat use the index"
    );
    assert_eq!(p.stat(&path).unwrap().size, job.size(), "stat while writers are open");
    let want = common::pattern(job.seed, 0, job.size() as usize);
    common::assert_bytes_eq(
        &common::read_fresh(&fx, &path).unwrap(),
        &want,
        "read while writers are open",
    );
    early.refresh().unwrap();
    common::assert_bytes_eq(&common::read_all(&early).unwrap(), &want, "early reader after refresh");
    early.close().unwrap();

    for c in &mut children {
        c.stdin.take().unwrap().write_all(b"close\n").unwrap();
    }
    for (i, (c, mut r)) in children.into_iter().zip(outs).enumerate() {
        wait_for_line(&mut r, "done");
        let out = c.wait_with_output().unwrap();
        assert_child_ok(&out, &format!("writer {i}"));
    }
    let p = fx.plfs();
    assert_eq!(
        meta_fast_size(&p, &path).map(|(s, _)| s),
        Some(job.size()),
        "droppings alone give the size"
    );
    assert_eq!(p.stat(&path).unwrap().size, job.size(), "stat after close (fast path)");
    common::assert_bytes_eq(&common::read_fresh(&fx, &path).unwrap(), &want, "read after close");
}
