//! `plfs upgrade` under crashes, with real processes (this test binary re-executed): a child
//! converts a file and is killed with SIGKILL at the n-th call of a backend operation
//! (`PLFS_FAILPOINTS=sys::rename=kill@n`, ...), n drawn over every call of every operation the
//! upgrade makes (counted by a first, unkilled child), and at random moments. Three kinds of
//! input: a PLFS 2.5.1 N-1 container (`n1_strided` of the original's fixtures), a version 2
//! container of this library (`strided` of the v1 golden tarball, with an extended attribute),
//! and a PLFS 2.x 1-N directory (made by hand, `common::legacy_1n`).
//!
//! After each kill a fresh instance reads every file as before the upgrade (the same names,
//! sizes, modes, mtimes and bytes: an upgrade changes none of them, so "as before or as after"
//! is one answer); fsck reports nothing but what an interrupted upgrade leaves, `--repair`
//! clears it and a second fsck is clean; the file still reads the same; and a new upgrade then
//! converts what is left and the file reads the same again, in format 3.

mod common;

use common::{arg, child_command, read_all, ro, same, splitmix, Fixture, Snap, CHILD_TAG};
use plfs_core::config::GlobalParams;
use plfs_core::fsck::{self, Kind, Options as FsckOptions};
use plfs_core::upgrade;
use plfs_core::{Config, Plfs};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

const ENTRY: &str = "child_entry";
/// Backend calls an upgrade is killed at.
const POINTS: &[&str] = &[
    "sys::pwrite_all",
    "sys::fsync",
    "sys::create",
    "sys::mkdir",
    "sys::rename",
    "sys::unlink",
    "sys::setattr",
];
/// Kills at most this many calls of one operation, spread evenly over its calls (first and last
/// included).
const MAX_PER_POINT: u64 = 24;

#[test]
fn child_entry() {
    let Some(role) = common::child_role() else { return };
    assert_eq!(role, "upgrade");
    let cfg = Config::from_file(Path::new(&arg("RC"))).expect("rc");
    let plfs = Plfs::new(cfg).expect("Plfs::new");
    let path = PathBuf::from(arg("PATH"));
    if arg("SMALL") == "1" {
        upgrade::upgrade_small_dir(&plfs, &path, &mut |_, _| {}).expect("upgrade of a 1-N directory");
    } else {
        upgrade::upgrade(&plfs, &path, &mut |_, _| {}).expect("upgrade");
    }
    drop(plfs);
    for p in POINTS {
        println!("{CHILD_TAG} hits {p} {}", plfs_core::failpoint::hits(p));
    }
}

/// What is converted.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Input {
    /// A PLFS 2.5.1 N-1 container.
    Legacy,
    /// A version 2 container of this library.
    Version2,
    /// A PLFS 2.x 1-N directory.
    LegacySmall,
}

impl Input {
    fn small(self) -> bool {
        self == Input::LegacySmall
    }
}

/// Where the inputs are made: a fixture (N-1, one backend; 1-N, two) and the extracted
/// tarball member copied for each trial.
struct Bench {
    fx: Fixture,
    input: Input,
    /// The extracted container each N-1 trial copies.
    template: Option<PathBuf>,
}

impl Bench {
    fn new(tag: &str, input: Input) -> Bench {
        let fx = if input.small() {
            Fixture::small(tag, 2, GlobalParams::default())
        } else {
            Fixture::new(tag, 1, 0, GlobalParams::default())
        };
        let template = match input {
            Input::LegacySmall => None,
            Input::Legacy => Some(extract(&fx, "plfs-2.5.1-containers.tar.gz", "store/n1_strided")),
            Input::Version2 => Some(extract(&fx, "plfs-v1-golden.tar.gz", "store/strided")),
        };
        Bench { fx, input, template }
    }

    /// Makes the input under the logical name `name` (a file, or a 1-N directory).
    fn make(&self, name: &str) -> PathBuf {
        match &self.template {
            Some(t) => {
                let st = std::process::Command::new("cp")
                    .arg("-a")
                    .arg(t)
                    .arg(self.fx.canonical[0].join(name))
                    .status()
                    .expect("cp runs");
                assert!(st.success(), "cp -a {}", t.display());
            }
            None => common::legacy_1n::build(&self.fx.canonical, name),
        }
        self.fx.path(name)
    }

    fn run_child(&self, path: &Path, kill: Kill) -> std::process::Output {
        let mut c = child_command(
            ENTRY,
            "upgrade",
            &[
                ("RC", self.fx.rc.display().to_string()),
                ("PATH", path.display().to_string()),
                ("SMALL", u8::from(self.input.small()).to_string()),
            ],
        );
        let spec = match kill {
            Kill::At(p, n) => format!("{p}=kill@{n}"),
            // Count every call: armed so far out that they never fire.
            Kill::Never | Kill::After(_) => POINTS
                .iter()
                .map(|p| format!("{p}=kill@{}", u64::MAX / 2))
                .collect::<Vec<_>>()
                .join(","),
        };
        c.env("PLFS_FAILPOINTS", spec)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        match kill {
            Kill::After(d) => {
                let mut child = c.spawn().expect("spawn");
                std::thread::sleep(d);
                let _ = child.kill();
                child.wait_with_output().expect("wait")
            }
            _ => c.output().expect("spawn"),
        }
    }

    /// Every file of the input as a fresh instance reads it: name -> (size, mode, mtime, bytes).
    fn snapshot(&self, path: &Path) -> Snap {
        let p = self.fx.plfs();
        let files: Vec<PathBuf> = if self.input.small() {
            p.readdir(path)
                .unwrap()
                .into_iter()
                .map(|e| path.join(e.name))
                .collect()
        } else {
            vec![path.to_path_buf()]
        };
        let mut out = BTreeMap::new();
        for f in files {
            let st = p.stat(&f).unwrap_or_else(|e| panic!("stat {}: {e}", f.display()));
            let h = p
                .open(&f, ro(), 0, 5)
                .unwrap_or_else(|e| panic!("open {}: {e}", f.display()));
            let b = read_all(&h).unwrap_or_else(|e| panic!("read {}: {e}", f.display()));
            h.close().unwrap();
            out.insert(f.display().to_string(), (st.size, st.mode, st.mtime_ns, b));
        }
        out
    }

    /// Whether something of the input is still to convert.
    fn unconverted(&self, path: &Path) -> bool {
        let p = self.fx.plfs();
        if self.input.small() {
            self.fx.canonical.iter().any(|b| {
                b.join(path.strip_prefix(common::MOUNT).unwrap())
                    .join("SMALLFILECONTAINER")
                    .exists()
            })
        } else {
            upgrade::target(&p, path).unwrap().is_some()
        }
    }

    /// The format every file reads as.
    fn formats(&self, path: &Path) -> Vec<String> {
        let p = self.fx.plfs();
        self.snapshot(path)
            .keys()
            .map(|f| p.file_format(Path::new(f)).unwrap().unwrap().to_string())
            .collect()
    }
}

/// Unpacks `member` of the fixture tarball into the fixture's directory; its path.
fn extract(fx: &Fixture, tarball: &str, member: &str) -> PathBuf {
    let x = fx.dir.path().join("template");
    common::untar_fixture(tarball, &x, &[member]);
    x.join(member)
}

/// How a trial's upgrade dies.
#[derive(Clone, Copy, Debug)]
enum Kill<'a> {
    Never,
    At(&'a str, u64),
    After(Duration),
}

/// Kinds fsck may report as problems after an upgrade was killed (a 1-N directory's converted
/// files are staged in a new log the way a compaction stages its own: unpublished, it is an
/// interrupted compaction's leftover).
const KILL_KINDS: &[Kind] = &[
    Kind::UpgradeDebris,
    Kind::TrashDebris,
    Kind::TmpDebris,
    Kind::InterruptedCompaction,
];

#[derive(Default)]
struct Tally {
    trials: u64,
    killed: u64,
    completed: u64,
    /// fsck found debris (and repaired it).
    debris: u64,
    /// The kill left the input unconverted.
    unconverted: u64,
    by_point: BTreeMap<&'static str, u64>,
}

/// One trial: the input made under `name`, its upgrade killed as `kill` says; then the checks
/// of the module's head.
fn trial(b: &Bench, name: &str, kill: Kill, t: &mut Tally) {
    use std::os::unix::process::ExitStatusExt;
    let path = b.make(name);
    let before = b.snapshot(&path);
    let out = b.run_child(&path, kill);
    t.trials += 1;
    if out.status.success() {
        t.completed += 1;
    } else {
        assert_eq!(
            out.status.signal(),
            Some(9),
            "{name}: the upgrade died of {} ({kill:?}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        t.killed += 1;
    }
    let what = format!("{:?} {name} ({kill:?})", b.input);
    same(&b.snapshot(&path), &before, &format!("{what}: after the kill"));
    let target = if b.input.small() {
        path.clone()
    } else {
        path.parent().unwrap().to_path_buf()
    };
    let plain = fsck::fsck(&b.fx.plfs(), &target, &FsckOptions::default()).unwrap();
    for f in &plain.findings {
        assert!(
            !f.problem || KILL_KINDS.contains(&f.kind),
            "{what}: fsck found {:?}: {} ({})",
            f.kind,
            f.message,
            f.path.display()
        );
    }
    if plain.problems() > 0 {
        t.debris += 1;
    }
    let opts = FsckOptions {
        repair: true,
        tmp_min_age: Duration::ZERO,
        ..FsckOptions::default()
    };
    let rep = fsck::fsck(&b.fx.plfs(), &target, &opts).unwrap();
    assert!(rep.exit_code() <= 1, "{what}: fsck --repair: {:#?}", rep.findings);
    let again = fsck::fsck(&b.fx.plfs(), &target, &FsckOptions::default()).unwrap();
    assert_eq!(again.problems(), 0, "{what}: after repair: {:#?}", again.findings);
    same(&b.snapshot(&path), &before, &format!("{what}: after fsck --repair"));
    if b.unconverted(&path) {
        t.unconverted += 1;
        let p = b.fx.plfs();
        if b.input.small() {
            upgrade::upgrade_small_dir(&p, &path, &mut |_, _| {})
                .unwrap_or_else(|e| panic!("{what}: the upgrade after the kill: {e}"));
        } else {
            upgrade::upgrade(&p, &path, &mut |_, _| {})
                .unwrap_or_else(|e| panic!("{what}: the upgrade after the kill: {e}"));
        }
    }
    assert!(!b.unconverted(&path), "{what}: still to convert after a whole upgrade");
    same(&b.snapshot(&path), &before, &format!("{what}: after a new upgrade"));
    for f in b.formats(&path) {
        assert!(
            !f.contains("legacy") && (f.starts_with("plfs v3") || f == "packed file (1-N)"),
            "{what}: {f} after a new upgrade"
        );
    }
    let last = fsck::fsck(&b.fx.plfs(), &target, &FsckOptions::default()).unwrap();
    assert_eq!(last.problems(), 0, "{what}: at the end: {:#?}", last.findings);
}

/// The trials of one input: killed at every call of every operation (up to `MAX_PER_POINT` per
/// operation), then at 12 random moments.
fn trials(tag: &str, input: Input) {
    let b = Bench::new(tag, input);
    let cal = b.make("cal");
    let t0 = Instant::now();
    let out = b.run_child(&cal, Kill::Never);
    let whole = t0.elapsed();
    common::assert_child_ok(&out, "calibration upgrade");
    let mut t = Tally::default();
    let mut calls = BTreeMap::new();
    for l in common::child_lines(&out, "hits") {
        let (p, n) = l.split_once(' ').unwrap();
        let point = *POINTS.iter().find(|x| **x == p).unwrap();
        let n: u64 = n.parse().unwrap();
        calls.insert(point, n);
        let ks: Vec<u64> = if n <= MAX_PER_POINT {
            (0..n).collect()
        } else {
            (0..MAX_PER_POINT).map(|i| i * (n - 1) / (MAX_PER_POINT - 1)).collect()
        };
        for k in ks {
            *t.by_point.entry(point).or_default() += 1;
            trial(&b, &format!("{}-{k}", &point[5..]), Kill::At(point, k), &mut t);
        }
    }
    let killed_at_calls = t.killed;
    let base = plfs_core::random_u64();
    // Each trial that ran to completion makes the window a fifth shorter (the calibration run
    // may have been slowed by a cold start or a busy machine).
    let mut window = whole;
    for n in 0..12u64 {
        let seed = splitmix(base ^ n);
        let after = window.mul_f64((seed >> 11) as f64 / (1u64 << 53) as f64);
        let completed = t.completed;
        trial(&b, &format!("m{n}"), Kill::After(after), &mut t);
        if t.completed > completed {
            window = window.mul_f64(0.8);
        }
    }
    eprintln!(
        "{input:?}: calls {calls:?}; {} trials ({:?} by call, then 12 at random moments of {:.1} ms, base seed {base}): {} killed, {} ran to completion, {} left debris, {} left it unconverted, 0 changed",
        t.trials,
        t.by_point,
        whole.as_secs_f64() * 1e3,
        t.killed,
        t.completed,
        t.debris,
        t.unconverted
    );
    let by_call: u64 = t.by_point.values().sum();
    assert!(by_call >= 10, "{input:?}: only {by_call} calls to kill at: {calls:?}");
    assert_eq!(
        killed_at_calls, by_call,
        "{input:?}: an upgrade armed to die at a call ran to completion"
    );
    assert!(
        t.debris > 0,
        "{input:?}: no kill left anything for fsck: the trials miss the upgrade's middle"
    );
}

#[test]
fn sigkill_during_upgrade_of_a_plfs_2_5_1_container() {
    if common::child_role().is_none() {
        trials("upk-legacy", Input::Legacy);
    }
}

#[test]
fn sigkill_during_upgrade_of_a_version_2_container() {
    if common::child_role().is_none() {
        trials("upk-v2", Input::Version2);
    }
}

#[test]
fn sigkill_during_upgrade_of_a_plfs_2_x_1n_directory() {
    if common::child_role().is_none() {
        trials("upk-1n", Input::LegacySmall);
    }
}
