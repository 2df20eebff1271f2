//! Compaction under crashes and concurrent readers, with real processes (this test binary
//! re-executed).
//!
//! - `sigkill_during_compaction`: a child process compacts a file (N-1: writers all closed, or
//!   one still open in the parent; 1-N: a directory of packed files) and is killed with SIGKILL
//!   at the n-th call of a backend operation (`PLFS_FAILPOINTS=sys::rename=kill@n`, ...), n
//!   drawn over every call the compaction makes (counted by a first, unkilled child). After each
//!   kill: a fresh instance reads every byte and the size as the model says (0 lost or changed);
//!   fsck reports only what an interrupted compaction leaves, `--repair` finishes or undoes it
//!   and leaves the bytes as they were; a new compaction then succeeds. `PLFS_COMPACT_TRIALS`
//!   sets the number of trials (default 120).
//! - `readers_during_compaction`: two reader processes (one holding the file open from before
//!   the first compaction, one opening it afresh again and again) check every byte they read
//!   while the parent compacts the file ten times (rewriting the same bytes in between so each
//!   compaction has work); then the retired data logs are deleted once the readers close.

mod common;

use common::{arg, arg_u64, child_command, fill_pattern, read_all, ro, same, splitmix, Fixture, Snap, CHILD_TAG};
use plfs_core::compact::{self, Options, Status};
use plfs_core::config::GlobalParams;
use plfs_core::fsck::{self, Kind, Options as FsckOptions};
use plfs_core::{Config, OpenFlags, Plfs};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

const ENTRY: &str = "child_entry";
/// Backend calls a compaction is killed at.
const POINTS: &[&str] = &[
    "sys::pwrite_all",
    "sys::fsync",
    "sys::create",
    "sys::rename",
    "sys::unlink",
];

#[test]
fn child_entry() {
    let Some(role) = common::child_role() else { return };
    let cfg = Config::from_file(Path::new(&arg("RC"))).expect("rc");
    let plfs = Plfs::new(cfg).expect("Plfs::new");
    let path = PathBuf::from(arg("PATH"));
    match role.as_str() {
        "compact" => {
            let r = if arg("SMALL") == "1" {
                compact::compact_packed_dir(&plfs, &path, &Options::default()).map(|r| r.unwrap())
            } else {
                compact::compact(&plfs, &path, &Options::default())
            };
            let r = r.expect("compaction");
            drop(plfs);
            println!("{CHILD_TAG} status {}", r.status.code());
            for p in POINTS {
                println!("{CHILD_TAG} hits {p} {}", plfs_core::failpoint::hits(p));
            }
        }
        "reader" => reader(&plfs, &path),
        r => panic!("unknown role {r}"),
    }
}

fn rw() -> OpenFlags {
    OpenFlags {
        read: true,
        write: true,
        create: true,
        ..Default::default()
    }
}

fn data(seed: u64, off: u64, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    fill_pattern(seed, off, &mut v);
    v
}

/// Builds an N-1 file: three closed writers overwriting each other with truncates, and, if
/// `open`, a fourth writer (returned) still open with flushed records. Returns the model.
fn build_n1(fx: &Fixture, path: &Path, seed: u64, open: bool) -> (Vec<u8>, Option<(Plfs, plfs_core::OpenFile)>) {
    let mut m: Vec<u8> = Vec::new();
    let put = |m: &mut Vec<u8>, off: u64, d: &[u8]| {
        let end = off as usize + d.len();
        if m.len() < end {
            m.resize(end, 0);
        }
        m[off as usize..end].copy_from_slice(d);
    };
    for w in 0..3u64 {
        let p = fx.plfs();
        let f = p.open(path, rw(), 0o644, 1 + w as u32).unwrap();
        for i in 0..60u64 {
            let r = splitmix(seed ^ (w << 32) ^ i);
            let off = r % 200_000;
            let len = 1 + (r >> 20) as usize % 9000;
            let d = data(r, off, len);
            f.write(&d, off).unwrap();
            put(&mut m, off, &d);
            if i % 20 == 19 {
                let size = (r >> 8) % 210_000;
                f.truncate(size).unwrap();
                m.resize(size as usize, 0);
            }
        }
        f.close().unwrap();
    }
    let held = open.then(|| {
        let p = fx.plfs();
        let f = p.open(path, rw(), 0o644, 9).unwrap();
        let d = data(seed ^ 99, 1000, 30_000);
        f.write(&d, 1000).unwrap();
        put(&mut m, 1000, &d);
        f.flush().unwrap();
        (p, f)
    });
    (m, held)
}

/// Builds a 1-N directory of 24 files by two instances (some overwritten, truncated, unlinked,
/// renamed to a new name, renamed over another file, and two swapped by three renames). Returns
/// nothing: the model is the snapshot taken before compacting.
fn build_small(fx: &Fixture, dir: &Path, seed: u64) {
    for k in 0..2u64 {
        let p = fx.plfs();
        if k == 0 {
            p.mkdir(dir, 0o755).unwrap();
        }
        for i in 0..24u64 {
            let r = splitmix(seed ^ (k << 40) ^ i);
            let f = p.open(&dir.join(format!("f{i}")), rw(), 0o644, 1).unwrap();
            f.write(&data(r, 0, 100 + r as usize % 7000), (r >> 30) % 100).unwrap();
            if r % 5 == 0 {
                f.truncate((r >> 12) % 9000).unwrap();
            }
            f.close().unwrap();
        }
        p.unlink(&dir.join(format!("f{}", 3 + k))).unwrap();
        p.rename(&dir.join(format!("f{}", 10 + k)), &dir.join(format!("g{k}")))
            .unwrap();
        let f = |i: u64| dir.join(format!("f{i}"));
        // Over another file: its new log binds the name to the renamed file, at that file's
        // CREATE time, which is before the replaced file's.
        p.rename(&f(12 + 4 * k), &f(13 + 4 * k)).unwrap();
        // A swap through a third name.
        p.rename(&f(14 + 4 * k), &dir.join("swap")).unwrap();
        p.rename(&f(15 + 4 * k), &f(14 + 4 * k)).unwrap();
        p.rename(&dir.join("swap"), &f(15 + 4 * k)).unwrap();
    }
}

/// name -> (size, mode, mtime, bytes) of every file of `dir`.
fn snapshot(fx: &Fixture, dir: &Path) -> Snap {
    let p = fx.plfs();
    let mut out = BTreeMap::new();
    for e in p.readdir(dir).unwrap() {
        let path = dir.join(&e.name);
        let st = p.stat(&path).unwrap();
        let f = p.open(&path, ro(), 0, 5).unwrap();
        let b = read_all(&f).unwrap();
        f.close().unwrap();
        out.insert(
            e.name.to_string_lossy().into_owned(),
            (st.size, st.mode, st.mtime_ns, b),
        );
    }
    out
}

/// Reads `path` through a fresh instance: (stat size, bytes).
fn read_n1(fx: &Fixture, path: &Path) -> (u64, Vec<u8>) {
    let p = fx.plfs();
    let size = p.stat(path).unwrap().size;
    let f = p.open(path, ro(), 0, 5).unwrap();
    let b = read_all(&f).unwrap();
    f.close().unwrap();
    (size, b)
}

/// Runs a compacting child; with `kill`, armed to die at the `n`-th call of `point`.
fn run_child(fx: &Fixture, path: &Path, small: bool, kill: Option<(&str, u64)>) -> std::process::Output {
    let mut c = child_command(
        ENTRY,
        "compact",
        &[
            ("RC", fx.rc.display().to_string()),
            ("PATH", path.display().to_string()),
            ("SMALL", u8::from(small).to_string()),
        ],
    );
    let spec = match kill {
        Some((p, n)) => format!("{p}=kill@{n}"),
        // Count every call: armed so far out that they never fire.
        None => POINTS
            .iter()
            .map(|p| format!("{p}=kill@{}", u64::MAX / 2))
            .collect::<Vec<_>>()
            .join(","),
    };
    c.env("PLFS_FAILPOINTS", spec);
    c.stdout(Stdio::piped()).stderr(Stdio::piped()).output().expect("spawn")
}

/// Kinds fsck may report after a compaction was killed.
const KILL_KINDS: &[Kind] = &[Kind::InterruptedCompaction, Kind::TmpDebris];

#[derive(Default)]
struct Tally {
    trials: u64,
    killed: u64,
    completed: u64,
    finished_by_fsck: u64,
    undone_by_fsck: u64,
    /// fsck found nothing: the kill left nothing, or the last close finished it first.
    nothing_left: u64,
    bytes_checked: u64,
    by_point: BTreeMap<&'static str, u64>,
}

impl Tally {
    /// Counts a child's end: killed by SIGKILL, or finished (this file needed fewer calls than
    /// the calibration file).
    fn outcome(&mut self, out: &std::process::Output, seed: u64) {
        use std::os::unix::process::ExitStatusExt;
        if out.status.success() {
            self.completed += 1;
        } else {
            assert_eq!(
                out.status.signal(),
                Some(9),
                "seed {seed}: child died of {}",
                out.status
            );
            self.killed += 1;
        }
    }
}

fn fsck_after_kill(fx: &Fixture, target: &Path, seed: u64, t: &mut Tally) {
    let plain = fsck::fsck(&fx.plfs(), target, &FsckOptions::default()).unwrap();
    if std::env::var_os("PLFS_T_DEBUG").is_some() {
        eprintln!(
            "seed {seed}: {:?}",
            plain
                .findings
                .iter()
                .map(|f| (f.kind, f.message.clone()))
                .collect::<Vec<_>>()
        );
    }
    for f in &plain.findings {
        assert!(
            !f.problem || KILL_KINDS.contains(&f.kind),
            "seed {seed}: fsck found {:?}: {} ({})",
            f.kind,
            f.message,
            f.path.display()
        );
    }
    if plain
        .findings
        .iter()
        .any(|f| f.kind == Kind::InterruptedCompaction && f.message.contains("committed"))
    {
        t.finished_by_fsck += 1;
    } else if plain.findings.iter().any(|f| f.kind == Kind::InterruptedCompaction) {
        t.undone_by_fsck += 1;
    } else {
        t.nothing_left += 1;
    }
    let opts = FsckOptions {
        repair: true,
        tmp_min_age: Duration::ZERO,
        ..FsckOptions::default()
    };
    let rep = fsck::fsck(&fx.plfs(), target, &opts).unwrap();
    assert!(rep.exit_code() <= 1, "seed {seed}: fsck --repair: {:#?}", rep.findings);
    let again = fsck::fsck(&fx.plfs(), target, &FsckOptions::default()).unwrap();
    assert_eq!(again.exit_code(), 0, "seed {seed}: after repair: {:#?}", again.findings);
}

#[test]
fn sigkill_during_compaction() {
    if common::child_role().is_some() {
        return;
    }
    let trials: u64 = std::env::var("PLFS_COMPACT_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(120);
    let base = std::env::var("PLFS_CRASH_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(plfs_core::random_u64);
    eprintln!("compaction crash: base seed {base} (set PLFS_CRASH_SEED to replay)");
    let g = GlobalParams {
        auto_compaction: false,
        index_buffer_records: 16,
        ..GlobalParams::default()
    };
    let fx_n1 = Fixture::new("cmpk-n1", 1, 0, g.clone());
    let fx_shadow = Fixture::new("cmpk-sh", 2, 1, g.clone());
    let fx_small = Fixture::small("cmpk-1n", 2, g);
    // The calls a whole compaction makes, per scenario (from a child that is not killed).
    let mut calls: BTreeMap<(u8, &str), u64> = BTreeMap::new();
    let scen = |n: u64| (n % 5) as u8; // 0,1: N-1 closed; 2: N-1 with a writer open; 3: shadows; 4: 1-N
    for s in 0..5u8 {
        let name = format!("cal{s}");
        let (fx, small) = match s {
            3 => (&fx_shadow, false),
            4 => (&fx_small, true),
            _ => (&fx_n1, false),
        };
        let path = fx.path(&name);
        let _held = if small {
            build_small(fx, &path, 7);
            None
        } else {
            build_n1(fx, &path, 7, s == 2).1
        };
        let out = run_child(fx, &path, small, None);
        common::assert_child_ok(&out, "calibration compaction");
        for l in common::child_lines(&out, "hits") {
            let (p, n) = l.split_once(' ').unwrap();
            let p = POINTS.iter().find(|x| **x == p).unwrap();
            calls.insert((s, p), n.parse().unwrap());
        }
    }
    eprintln!("compaction crash: calls per compaction: {calls:?}");
    let mut t = Tally::default();
    let start = Instant::now();
    for n in 0..trials {
        let seed = splitmix(base ^ n);
        let s = scen(n);
        let point = POINTS[(seed % POINTS.len() as u64) as usize];
        let total = calls[&(s, point)];
        if total == 0 {
            continue;
        }
        let k = (seed >> 16) % total;
        let name = format!("t{n}");
        let (fx, small) = match s {
            3 => (&fx_shadow, false),
            4 => (&fx_small, true),
            _ => (&fx_n1, false),
        };
        let path = fx.path(&name);
        t.trials += 1;
        *t.by_point.entry(point).or_default() += 1;
        if small {
            small_trial(fx, &path, seed, Kill::At(point, k), &mut t);
            continue;
        }
        let (mut model, held) = build_n1(fx, &path, seed, s == 2);
        let out = run_child(fx, &path, false, Some((point, k)));
        t.outcome(&out, seed);
        // Half the trials let fsck meet the debris first; in the others a reader does (and, as the
        // last process to close the file, finishes a committed compaction itself).
        let fsck_first = seed % 2 == 1 && held.is_none();
        if fsck_first {
            fsck_after_kill(fx, &path, seed, &mut t);
        }
        let (size, got) = read_n1(fx, &path);
        assert_eq!(
            size,
            model.len() as u64,
            "seed {seed}: size after a kill at {point}@{k}"
        );
        common::assert_bytes_eq(&got, &model, &format!("seed {seed}: bytes after a kill at {point}@{k}"));
        if let Some((p, f)) = held {
            // The writer that stayed open goes on, then closes.
            let d = data(seed ^ 5, 500, 4000);
            f.write(&d, 500).unwrap();
            model[500..4500].copy_from_slice(&d);
            f.truncate(150_000).unwrap();
            model.resize(150_000, 0);
            f.close().unwrap();
            drop(p);
            let (size, got) = read_n1(fx, &path);
            assert_eq!(
                size,
                model.len() as u64,
                "seed {seed}: size after the open writer closed"
            );
            common::assert_bytes_eq(&got, &model, &format!("seed {seed}: after the open writer closed"));
        }
        if !fsck_first {
            fsck_after_kill(fx, &path, seed, &mut t);
        }
        let (size, got) = read_n1(fx, &path);
        assert_eq!(size, model.len() as u64);
        common::assert_bytes_eq(&got, &model, &format!("seed {seed}: after fsck --repair"));
        let r = compact::compact(&fx.plfs(), &path, &Options::default()).unwrap();
        assert!(matches!(r.status, Status::Compacted | Status::NothingToDo), "{r:?}");
        let (_, got) = read_n1(fx, &path);
        common::assert_bytes_eq(&got, &model, &format!("seed {seed}: after a new compaction"));
        t.bytes_checked += 4 * model.len() as u64;
    }
    eprintln!(
        "compaction crash: {} trials, {} compactions killed by SIGKILL, {} ran to completion ({:?}), {} finished and {} undone by fsck --repair, \
         {} left nothing for fsck (finished by the last close), {} bytes checked, 0 lost or changed; {:.1} s",
        t.trials,
        t.killed,
        t.completed,
        t.by_point,
        t.finished_by_fsck,
        t.undone_by_fsck,
        t.nothing_left,
        t.bytes_checked,
        start.elapsed().as_secs_f64()
    );
    assert!(t.killed >= trials * 9 / 10, "too few compactions were killed");
}

/// Runs a compacting child (1-N) and kills it with SIGKILL `after` its start, unless it ended.
fn run_child_killed_after(fx: &Fixture, path: &Path, after: Duration) -> std::process::Output {
    let mut c = child_command(
        ENTRY,
        "compact",
        &[
            ("RC", fx.rc.display().to_string()),
            ("PATH", path.display().to_string()),
            ("SMALL", "1".to_string()),
        ],
    );
    let mut child = c.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");
    std::thread::sleep(after);
    let _ = child.kill();
    child.wait_with_output().expect("wait")
}

/// How a 1-N trial's compaction dies: at the n-th call of a backend operation, or at a moment.
#[derive(Clone, Copy, Debug)]
enum Kill<'a> {
    At(&'a str, u64),
    After(Duration),
}

/// One 1-N trial: a directory built from `seed`, its compaction killed as `kill` says; every
/// file then reads as before (names, sizes, modes, mtimes, bytes), after fsck and its repair,
/// and after a new compaction.
fn small_trial(fx: &Fixture, path: &Path, seed: u64, kill: Kill, t: &mut Tally) {
    build_small(fx, path, seed);
    let before = snapshot(fx, path);
    let out = match kill {
        Kill::At(point, k) => run_child(fx, path, true, Some((point, k))),
        Kill::After(d) => run_child_killed_after(fx, path, d),
    };
    t.outcome(&out, seed);
    let got = snapshot(fx, path);
    same(
        &got,
        &before,
        &format!("seed {seed}: packed files after a kill ({kill:?})"),
    );
    fsck_after_kill(fx, path, seed, t);
    same(
        &snapshot(fx, path),
        &before,
        &format!("seed {seed}: after fsck --repair"),
    );
    let r = compact::compact_packed_dir(&fx.plfs(), path, &Options::default())
        .unwrap()
        .unwrap();
    assert!(matches!(r.status, Status::Compacted | Status::NothingToDo), "{r:?}");
    same(
        &snapshot(fx, path),
        &before,
        &format!("seed {seed}: after a new compaction"),
    );
    t.bytes_checked += before.values().map(|v| v.3.len() as u64).sum::<u64>() * 4;
}

/// A 1-N compaction killed at every one of its backend calls in turn (every point, every n):
/// the directory reads as before each time. Its renames over other files and its swap are what
/// a new log replayed beside the old ones would get wrong.
#[test]
fn sigkill_at_every_call_of_a_packed_compaction() {
    if common::child_role().is_some() {
        return;
    }
    let g = GlobalParams {
        auto_compaction: false,
        ..GlobalParams::default()
    };
    let fx = Fixture::small("cmpk-every", 2, g);
    let cal = fx.path("cal");
    build_small(&fx, &cal, 11);
    let out = run_child(&fx, &cal, true, None);
    common::assert_child_ok(&out, "calibration compaction");
    let mut t = Tally::default();
    for l in common::child_lines(&out, "hits") {
        let (p, n) = l.split_once(' ').unwrap();
        let point = POINTS.iter().find(|x| **x == p).unwrap();
        let n: u64 = n.parse().unwrap();
        for k in 0..n {
            t.trials += 1;
            *t.by_point.entry(point).or_default() += 1;
            let path = fx.path(&format!("{}-{k}", &point[5..]));
            small_trial(&fx, &path, 11, Kill::At(point, k), &mut t);
        }
    }
    eprintln!(
        "packed compaction killed at every call: {} trials ({:?}), {} killed, 0 changed",
        t.trials, t.by_point, t.killed
    );
    assert!(
        t.trials >= 10 && t.killed == t.trials,
        "{} trials, {} killed",
        t.trials,
        t.killed
    );
}

/// A 1-N compaction killed with SIGKILL at a random moment of its process's life (40 trials,
/// moments drawn up to the length of an unkilled run): the directory reads as before each time.
#[test]
fn sigkill_packed_compaction_at_random_moments() {
    if common::child_role().is_some() {
        return;
    }
    let base = std::env::var("PLFS_CRASH_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(plfs_core::random_u64);
    eprintln!("packed compaction at random moments: base seed {base} (set PLFS_CRASH_SEED to replay)");
    let g = GlobalParams {
        auto_compaction: false,
        ..GlobalParams::default()
    };
    let fx = Fixture::small("cmpk-moment", 2, g);
    let cal = fx.path("cal");
    build_small(&fx, &cal, base);
    let t0 = Instant::now();
    let out = run_child(&fx, &cal, true, None);
    let whole = t0.elapsed();
    common::assert_child_ok(&out, "calibration compaction");
    let mut t = Tally::default();
    // The calibration run may be slower than the trials (a cold start, a busy machine): each
    // trial that ran to completion makes the window the moments are drawn from a fifth shorter.
    let mut window = whole;
    for n in 0..40u64 {
        let seed = splitmix(base ^ n);
        let after = window.mul_f64((seed >> 11) as f64 / (1u64 << 53) as f64);
        t.trials += 1;
        let completed = t.completed;
        small_trial(&fx, &fx.path(&format!("m{n}")), seed, Kill::After(after), &mut t);
        if t.completed > completed {
            window = window.mul_f64(0.8);
        }
    }
    eprintln!(
        "packed compaction at random moments (a whole run {:.1} ms, the window at the end {:.1} ms): {} trials, {} killed, {} ran to completion, 0 changed",
        whole.as_secs_f64() * 1e3,
        window.as_secs_f64() * 1e3,
        t.trials,
        t.killed,
        t.completed
    );
    assert!(t.killed >= 10, "too few compactions were killed: {}", t.killed);
}

// ---- Readers during compaction -----------------------------------------------------------

/// A reader child: checks every byte of `PATH` against the plain file `MODEL`, through one handle
/// opened at start (`HOLD=1`) or a fresh instance per round, until `STOP` exists. Prints the
/// rounds and bytes it checked.
fn reader(plfs: &Plfs, path: &Path) {
    let model = std::fs::read(arg("MODEL")).unwrap();
    let stop = PathBuf::from(arg("STOP"));
    let hold = arg_u64("HOLD") == 1;
    let held = hold.then(|| plfs.open(path, ro(), 0, 77).unwrap());
    println!("{CHILD_TAG} ready 1");
    let (mut rounds, mut bytes) = (0u64, 0u64);
    let mut s = 99u64;
    while !stop.exists() || rounds < 3 {
        let fresh;
        let f = match &held {
            Some(f) => f,
            None => {
                fresh = Plfs::new(Config::from_file(Path::new(&arg("RC"))).unwrap()).unwrap();
                let f = fresh.open(path, ro(), 0, 78).unwrap();
                let got = read_all(&f).unwrap();
                assert_eq!(got.len(), model.len(), "round {rounds}: size");
                assert!(got == model, "round {rounds}: whole-file read differs");
                bytes += got.len() as u64;
                rounds += 1;
                continue;
            }
        };
        // Random ranges through the long-lived handle.
        for _ in 0..64 {
            s = splitmix(s);
            let off = s % model.len() as u64;
            let len = 1 + (s >> 40) as usize % 100_000;
            let mut b = vec![0u8; len];
            let n = f.read(&mut b, off).unwrap();
            let want = &model[off as usize..(off as usize + len).min(model.len())];
            assert_eq!(n, want.len(), "round {rounds}: read of {len} at {off}");
            assert!(b[..n] == *want, "round {rounds}: bytes at {off}");
            bytes += n as u64;
        }
        rounds += 1;
    }
    if let Some(f) = held {
        f.close().unwrap();
    }
    println!("{CHILD_TAG} rounds {rounds}");
    println!("{CHILD_TAG} bytes {bytes}");
}

#[test]
fn readers_during_compaction() {
    if common::child_role().is_some() {
        return;
    }
    let g = GlobalParams {
        auto_compaction: false,
        max_open_data_logs: 2, // readers reopen data logs by name: retired ones must still be there
        ..GlobalParams::default()
    };
    let fx = Fixture::new("cmpk-readers", 1, 0, g);
    let path = fx.path("r");
    let size = 6usize << 20;
    let model = data(3, 0, size);
    let p = fx.plfs();
    // Written in pieces by several writers, so the file spans several logs.
    for w in 0..4u64 {
        let f = p.open(&path, rw(), 0o644, 1 + w as u32).unwrap();
        for i in (w as usize..size / 65536).step_by(4) {
            f.write(&model[i * 65536..(i + 1) * 65536], (i * 65536) as u64).unwrap();
        }
        f.close().unwrap();
    }
    drop(p);
    let model_file = fx.dir.path().join("model");
    std::fs::write(&model_file, &model).unwrap();
    let stop = fx.dir.path().join("stop");
    let spawn = |hold: u64| {
        child_command(
            ENTRY,
            "reader",
            &[
                ("RC", fx.rc.display().to_string()),
                ("PATH", path.display().to_string()),
                ("MODEL", model_file.display().to_string()),
                ("STOP", stop.display().to_string()),
                ("HOLD", hold.to_string()),
            ],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn reader")
    };
    let mut readers = vec![spawn(1), spawn(0)];
    // Let the holding reader open the file before the first compaction.
    std::thread::sleep(Duration::from_millis(400));
    let mut retired_while_open = 0;
    for round in 0..10u64 {
        // Rewrite a quarter of the file with the same bytes: dead data, same content.
        let p = fx.plfs();
        let f = p.open(&path, rw(), 0o644, 50 + round as u32).unwrap();
        let q = (round as usize % 4) * (size / 4);
        for c in (q..q + size / 4).step_by(1 << 19) {
            f.write(&model[c..c + (1 << 19)], c as u64).unwrap();
        }
        f.close().unwrap();
        let r = compact::compact(&p, &path, &Options::default()).unwrap();
        assert_eq!(r.status, Status::Compacted, "round {round}: {r:?}");
        if r.after.pending > 0 {
            retired_while_open += 1;
        }
        drop(p);
        let (sz, got) = read_n1(&fx, &path);
        assert_eq!(sz, size as u64);
        assert!(got == model, "round {round}: parent's read");
    }
    std::fs::write(&stop, b"").unwrap();
    let mut total = 0u64;
    for c in readers.drain(..) {
        let out = c.wait_with_output().unwrap();
        common::assert_child_ok(&out, "reader");
        let rounds: u64 = common::child_lines(&out, "rounds")[0].parse().unwrap();
        let bytes: u64 = common::child_lines(&out, "bytes")[0].parse().unwrap();
        assert!(rounds >= 3, "a reader checked only {rounds} rounds");
        total += bytes;
    }
    assert!(
        retired_while_open >= 5,
        "retired data logs were deleted while a reader held the file ({retired_while_open} of 10 kept)"
    );
    // The readers are gone: the next compaction (or fsck) deletes what they kept alive.
    let r = compact::compact(&fx.plfs(), &path, &Options::default()).unwrap();
    assert_eq!(r.after.pending, 0, "{r:?}");
    let dir = fx.container_dir("r");
    assert!(!dir.join("compact.journal").exists());
    let data_logs = fx.logs("r", "data.");
    assert_eq!(data_logs.len(), 1, "{data_logs:?}");
    let rep = fsck::fsck(&fx.plfs(), &path, &FsckOptions::default()).unwrap();
    assert_eq!(rep.exit_code(), 0, "{:#?}", rep.findings);
    eprintln!("readers during compaction: 10 compactions, {total} bytes read and checked by 2 reader processes");
}
