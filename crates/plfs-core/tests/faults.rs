//! I/O errors injected through the backend failpoints (`plfs_core::failpoint`): a scripted
//! workload (create, writes, syncs, close, reopen, flatten, rename, unlink, mkdir) runs once per
//! (failpoint, hit number, errno), with the fault either persistent (a full or broken disk) or
//! transient (one failure, then the caller retries). Every run checks that the caller got the
//! injected errno, that a fresh instance can still stat and read the file, that every
//! acknowledged byte (covered by a successful sync or close) is intact and nothing else appears,
//! that renames and unlinks are all-or-nothing, and that fsck --repair clears the debris without
//! changing a byte. Corrupt-input fuzzing of the decoders lives in `fuzz.rs`-style proptests at
//! the bottom of this file.
//!
//! Failpoints are process-global: every test of this binary holds [`serial`].

mod common;

use common::{pattern, Fixture};
use plfs_core::failpoint::{self, Action, Spec};
use plfs_core::fsck::{self, Kind, Options};
use plfs_core::{OpenFile, OpenFlags, Plfs};
use rustix::io::Errno;
use std::path::Path;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// Serialises the tests of this binary (the failpoint table is process-global).
fn serial() -> MutexGuard<'static, ()> {
    static M: Mutex<()> = Mutex::new(());
    let g = M.lock().unwrap_or_else(|p| p.into_inner());
    failpoint::clear();
    g
}

const POINTS: &[&str] = &[
    "sys::pwrite_all",
    "sys::fsync",
    "sys::create",
    "sys::mkdir",
    "sys::rename",
    "sys::unlink",
    "sys::ftruncate",
    // What a close(2) answers: on a network file system, a write that had returned and failed
    // in the client's write-behind (design.md, "Crash semantics", `close`).
    "sys::close",
];
const ERRNOS: &[Errno] = &[Errno::NOSPC, Errno::IO, Errno::ACCESS];

/// One write of the workload and what the caller was told about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WState {
    /// Not attempted, or it failed.
    None,
    /// `write` returned Ok.
    Written,
    /// A later `sync` or `close` returned Ok.
    Acked,
}

/// Non-overlapping writes of file `f`: (offset, length).
const WRITES: &[(u64, usize)] = &[
    (0, 8192),
    (16384, 4000),
    (30000, 100),
    (40000, 5000),
    (50000, 10),
    (60000, 70000),
];

fn seed_of(i: usize) -> u64 {
    1000 + i as u64
}

/// A pid that belongs to no process (a reaped child's), so fsck judges abandoned handles stale.
fn dead_pid() -> u32 {
    let mut c = std::process::Command::new("true").spawn().expect("spawn true");
    let pid = c.id();
    c.wait().expect("wait");
    pid
}

struct Run<'a> {
    fx: &'a Fixture,
    plfs: Plfs,
    pid: u32,
    states: Vec<WState>,
    /// Retry a failed step once (transient faults).
    retry: bool,
    /// errnos callers saw.
    errors: Vec<(String, i32)>,
}

impl Run<'_> {
    /// Runs `f`; on error records it and (in retry mode) runs it once more.
    fn step<T>(&mut self, what: &str, mut f: impl FnMut(&mut Self) -> plfs_core::Result<T>) -> Option<T> {
        match f(self) {
            Ok(v) => Some(v),
            Err(e) => {
                self.errors.push((format!("{what}: {e}"), e.raw_errno()));
                if self.retry {
                    match f(self) {
                        Ok(v) => return Some(v),
                        Err(e) => self.errors.push((format!("{what} (retry): {e}"), e.raw_errno())),
                    }
                }
                None
            }
        }
    }

    /// Runs a close: never retried (like close(2), a failed close has released the writer).
    fn close(&mut self, what: &str, f: impl FnOnce() -> plfs_core::Result<()>) -> Option<()> {
        match f() {
            Ok(()) => {
                self.ack();
                Some(())
            }
            Err(e) => {
                self.errors.push((format!("{what}: {e}"), e.raw_errno()));
                None
            }
        }
    }

    fn write(&mut self, h: &OpenFile, i: usize) -> Option<()> {
        let (off, len) = WRITES[i];
        let data = pattern(seed_of(i), off, len);
        self.step(&format!("write {i}"), |_| h.write(&data, off).map(drop))?;
        self.states[i] = WState::Written;
        Some(())
    }

    fn ack(&mut self) {
        for s in &mut self.states {
            if *s == WState::Written {
                *s = WState::Acked;
            }
        }
    }

    /// The scripted workload; stops at the first step that fails for good.
    fn workload(&mut self) -> Option<()> {
        let f = self.fx.path("f");
        let rw = OpenFlags {
            read: true,
            write: true,
            create: true,
            ..Default::default()
        };
        let pid = self.pid;
        let h = self.step("open f", |r| r.plfs.open(&f, rw, 0o640, pid))?;
        self.write(&h, 0)?;
        self.write(&h, 1)?;
        self.step("sync 1", |_| h.sync())?;
        self.ack();
        self.write(&h, 2)?;
        self.step("sync 2", |_| h.sync())?;
        self.ack();
        self.write(&h, 3)?;
        self.close("close f", || h.close_writer(pid))?;
        drop(h);
        // A second file, renamed and unlinked.
        let g = self.fx.path("g");
        let hg = self.step("open g", |r| r.plfs.open(&g, rw, 0o600, pid))?;
        self.step("write g", |_| hg.write(b"gggg", 0).map(drop))?;
        self.close("close g", || hg.close_writer(pid))?;
        drop(hg);
        let hpath = self.fx.path("h");
        self.step("rename g h", |r| r.plfs.rename(&g, &hpath))?;
        self.step("unlink h", |r| r.plfs.unlink(&hpath))?;
        // Reopen f, append more, flatten, mkdir.
        let h = self.step("reopen f", |r| {
            r.plfs.open(
                &f,
                OpenFlags {
                    write: true,
                    ..Default::default()
                },
                0,
                pid,
            )
        })?;
        self.write(&h, 4)?;
        self.write(&h, 5)?;
        self.step("sync 3", |_| h.sync())?;
        self.ack();
        self.close("close f again", || h.close_writer(pid))?;
        drop(h);
        self.step("flatten f", |r| plfs_core::tools::flatten(&r.plfs, &f).map(drop))?;
        self.step("mkdir d", |r| r.plfs.mkdir(&r.fx.path("d"), 0o755))?;
        Some(())
    }
}

/// Checks file `f` with a fresh instance against the write states.
fn check_f(fx: &Fixture, states: &[WState], what: &str) -> Option<Vec<u8>> {
    let p = fx.plfs();
    let path = fx.path("f");
    let st = match p.stat(&path) {
        Ok(st) => st,
        Err(e) if e.is_not_found() => {
            assert!(
                states.iter().all(|s| *s == WState::None),
                "{what}: f vanished after acks"
            );
            return None;
        }
        Err(e) => panic!("{what}: stat f: {e}"),
    };
    let data = common::read_fresh(fx, &path).unwrap_or_else(|e| panic!("{what}: read f: {e}"));
    assert_eq!(st.size, data.len() as u64, "{what}: stat size vs bytes read");
    let mut covered = vec![false; data.len()];
    for (i, &(off, len)) in WRITES.iter().enumerate() {
        let want = pattern(seed_of(i), off, len);
        let lo = (off as usize).min(data.len());
        let hi = (off as usize + len).min(data.len());
        let got = &data[lo..hi];
        covered[lo..hi].iter_mut().for_each(|c| *c = true);
        match states[i] {
            WState::Acked => common::assert_bytes_eq(got, &want, &format!("{what}: acknowledged write {i}")),
            _ => assert!(
                got == &want[..got.len()] || got.iter().all(|&b| b == 0),
                "{what}: unacknowledged write {i} reads as neither its data nor zeros"
            ),
        }
    }
    let invented = covered.iter().zip(&data).position(|(c, b)| !c && *b != 0);
    assert_eq!(invented, None, "{what}: non-zero byte outside every write");
    Some(data)
}

/// After a run: namespace atomicity, file contents, fsck check and repair.
fn check_after(fx: &Fixture, states: &[WState], what: &str) {
    let before = check_f(fx, states, what);
    let p = fx.plfs();
    let (g, h) = (p.stat(&fx.path("g")), p.stat(&fx.path("h")));
    assert!(!(g.is_ok() && h.is_ok()), "{what}: rename left both g and h");
    for r in [g, h].into_iter().flatten() {
        assert!(r.size == 0 || r.size == 4, "{what}: g/h has size {}", r.size);
    }
    let allowed = [
        Kind::StaleOpen,
        Kind::OpenAndClosed,
        Kind::EmptyLogs,
        Kind::OrphanDataLog,
        Kind::UnindexedData,
        Kind::TmpDebris,
        Kind::TrashDebris,
        Kind::OrphanShadow,
    ];
    let root = Path::new(common::MOUNT);
    let rep = fsck::fsck(&p, root, &Options::default()).unwrap_or_else(|e| panic!("{what}: fsck: {e}"));
    for f in rep.findings.iter().filter(|f| f.problem) {
        assert!(
            allowed.contains(&f.kind),
            "{what}: fsck found {:?}: {} ({})",
            f.kind,
            f.message,
            f.path.display()
        );
    }
    let opts = Options {
        repair: true,
        tmp_min_age: Duration::ZERO,
        ..Options::default()
    };
    let rep = fsck::fsck(&p, root, &opts).unwrap_or_else(|e| panic!("{what}: fsck --repair: {e}"));
    assert!(
        rep.exit_code() <= 1,
        "{what}: fsck --repair left problems: {:#?}",
        rep.findings
    );
    let again = fsck::fsck(&fx.plfs(), root, &Options::default()).expect("fsck again");
    assert_eq!(
        again.exit_code(),
        0,
        "{what}: problems after repair: {:#?}",
        again.findings
    );
    let after = check_f(fx, states, &format!("{what}, after repair"));
    assert_eq!(before, after, "{what}: fsck --repair changed the file");
}

/// Runs the workload once with `spec` armed (or nothing, to count hits).
fn run_once(spec: Option<Spec>, retry: bool, count: Option<&str>) -> (Vec<WState>, Vec<(String, i32)>, u64) {
    let fx = Fixture::new(
        "faults",
        1,
        0,
        plfs_core::config::GlobalParams {
            num_hostdirs: 4,
            data_checksums: true,
            ..Default::default()
        },
    );
    let what = format!("{spec:?} retry={retry}");
    failpoint::clear();
    if let Some(name) = count {
        failpoint::set(Spec {
            name: name.into(),
            filter: String::new(),
            action: Action::Errno(Errno::IO),
            after: u64::MAX,
            times: None,
        });
    }
    if let Some(s) = spec.clone() {
        failpoint::set(s);
    }
    let mut run = Run {
        fx: &fx,
        plfs: fx.plfs(),
        pid: dead_pid(),
        states: vec![WState::None; WRITES.len()],
        retry,
        errors: Vec::new(),
    };
    let completed = run.workload().is_some();
    let hits = count.map_or(0, failpoint::hits);
    failpoint::clear();
    drop(run.plfs);
    if let Some(s) = &spec {
        if let (Action::Errno(e), false) = (s.action, retry) {
            for (msg, got) in &run.errors {
                assert_eq!(
                    *got,
                    e.raw_os_error(),
                    "{what}: {msg}: errno {got} instead of the injected one"
                );
            }
        }
        if retry && completed {
            assert!(
                run.states.iter().all(|s| *s == WState::Acked),
                "{what}: completed but not all acked"
            );
        }
    } else {
        assert!(completed && run.errors.is_empty(), "clean run failed: {:?}", run.errors);
    }
    check_after(&fx, &run.states, &what);
    (run.states, run.errors, hits)
}

#[test]
fn injected_errors_at_every_backend_call() {
    let _g = serial();
    let start_injected = failpoint::injected();
    let mut runs = 0u64;

    for point in POINTS {
        let (_, _, hits) = run_once(None, false, Some(point));
        assert!(
            hits > 0 || *point == "sys::ftruncate",
            "{point}: the workload never reaches it"
        );
        for n in 0..hits {
            for &errno in ERRNOS {
                for retry in [false, true] {
                    let spec = Spec {
                        name: point.to_string(),
                        filter: String::new(),
                        action: Action::Errno(errno),
                        after: n,
                        times: retry.then_some(1),
                    };
                    let (states, errors, _) = run_once(Some(spec), retry, None);
                    runs += 1;
                    if retry && states.iter().any(|s| *s != WState::Acked) {
                        let last = errors.last().map(|e| e.0.clone()).unwrap_or_default();
                        // A failed close is final (as for close(2)): its unsynced writes are not
                        // acknowledged, which check_after already verified. Every other
                        // transient fault must be overcome by a retry.
                        let known = last.starts_with("close");
                        assert!(
                            known,
                            "{point}@{n} {errno:?}: a retry after a transient fault failed: {errors:?}"
                        );
                    }
                }
            }
        }
    }
    let injected = failpoint::injected() - start_injected;
    eprintln!(
        "faults: {runs} runs, {injected} injected errors (ENOSPC, EIO, EACCES on {} backend calls), \
         0 lost acknowledged bytes; every transient fault overcome by a retry",
        POINTS.len()
    );
    assert!(injected > 100);
}

/// On a network file system a write that returned can still fail in the client (GlusterFS's
/// write-behind: on a full brick every `write` of a file succeeded and its `close` said
/// `ENOSPC`), and close(2) is where a program hears of it. A writer's close looks at what the
/// close of each of its logs answers: the logical close fails with that errno, naming the log;
/// no close record is written, so readers take the writer for one that died and read its data
/// log's frames; when the data log's close failed, the buffered index records are not appended
/// (a record pointing past the bytes that landed would make the whole file read as damage).
/// Before, the logs were closed by dropping their descriptors: the close succeeded and a
/// reader of the file got `EIO` (measured on a GlusterFS volume with a full brick).
#[test]
fn a_log_whose_close_reports_a_failed_write_fails_the_logical_close() {
    let _g = serial();
    let fx = Fixture::simple("f-close");
    let model = pattern(7, 0, 3 * 65536 + 100);
    for (which, filter, records) in [("data log", "/data.", false), ("index log", "/index.", true)] {
        let path = fx.path(&format!("closed-badly-{}", which.replace(' ', "-")));
        let p = fx.plfs();
        let f = p.open(&path, common::wo_create(), 0o644, 1).unwrap();
        for (k, chunk) in model.chunks(65536).enumerate() {
            f.write(chunk, (k * 65536) as u64).unwrap();
        }
        failpoint::set(Spec {
            name: "sys::close".into(),
            filter: filter.into(),
            action: Action::Errno(Errno::NOSPC),
            after: 0,
            times: Some(1),
        });
        let e = f.close().expect_err(which);
        failpoint::clear();
        assert_eq!(e.raw_errno(), Errno::NOSPC.raw_os_error(), "{which}: {e}");
        assert!(
            e.to_string().contains(filter.trim_matches('/')),
            "{which}: `{e}` names the log"
        );
        drop(p);

        let name = path.file_name().unwrap().to_str().unwrap();
        let dir = fx.meta_dir(name);
        let names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|d| d.unwrap().file_name().into_string().unwrap())
            .collect();
        let count = |prefix: &str| names.iter().filter(|n| n.starts_with(prefix)).count();
        assert_eq!(
            (count("open."), count("close.")),
            (1, 0),
            "{which}: the writer stays open: {names:?}"
        );
        let index = fx.logs(name, "index.");
        assert_eq!(index.len(), 1, "{which}: {index:?}");
        let header = std::fs::metadata(&index[0]).unwrap().len() == plfs_format::INDEX_HEADER_LEN as u64;
        assert_eq!(!header, records, "{which}: records appended to the index log");
        common::assert_bytes_eq(&common::read_fresh(&fx, &path).unwrap(), &model, which);
    }
}

/// The kernel's `openat2` refuses a lookup that a concurrent rename moved (EXDEV from its final
/// "still beneath" check, EAGAIN from its rename sequence check). The backend layer then walks the
/// path one `O_NOFOLLOW` open at a time: files open and read as before, and a symbolic link in
/// the namespace is refused as with `openat2` (CI met the EXDEV once, under a rename-over loop).
#[test]
fn a_lookup_refused_by_openat2_walks_and_still_refuses_links() {
    let _g = serial();
    let fx = Fixture::simple("f-openat2");
    let p = fx.plfs();
    p.mkdir(&fx.path("d"), 0o755).unwrap();
    p.mkdir(&fx.path("d/e"), 0o755).unwrap();
    let want = pattern(5, 0, 70_000);
    common::put(&p, &fx.path("d/e/f"), &want);
    let elsewhere = fx.dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, fx.canonical[0].join("d/link")).unwrap();
    let refused = p.create(&fx.path("d/link/x"), 0o644, true).unwrap_err().raw_errno();
    assert!(
        [Errno::LOOP, Errno::NOTDIR].iter().any(|e| e.raw_os_error() == refused),
        "{refused}"
    );
    for errno in [Errno::XDEV, Errno::AGAIN] {
        failpoint::fail("sys::openat2", errno, 0);
        let p = fx.plfs();
        assert_eq!(common::get(&p, &fx.path("d/e/f")), want, "{errno:?}");
        let e = p.create(&fx.path("d/link/x"), 0o644, true).unwrap_err();
        assert_eq!(e.raw_errno(), refused, "{errno:?}: {e}");
        assert!(
            std::fs::read_dir(&elsewhere).unwrap().next().is_none(),
            "created through a link"
        );
        assert!(failpoint::hits("sys::openat2") > 0, "the lookups never asked openat2");
        failpoint::clear();
    }
}

// ---- Corrupt input: proptest fuzzing of every decoder and of readers over damaged files -------

mod fuzz {
    use super::*;
    use plfs_core::config::Workload;
    use plfs_format::{self as format, LogHeader, Marker, MetaDropping};
    use proptest::prelude::*;
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::OnceLock;

    /// Decoder inputs executed (all targets).
    static EXECS: AtomicU64 = AtomicU64::new(0);

    /// Cases per decoder target (`PLFS_FUZZ_CASES`, default 4000); file-level targets run a tenth.
    fn cases() -> u32 {
        std::env::var("PLFS_FUZZ_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(4000)
    }

    /// Real files to mutate: a marker, index logs (plain, checksummed and pattern records), a
    /// flattened index and a 1-N small-file log.
    struct Corpus {
        fx: Fixture,
        marker: Vec<u8>,
        index: Vec<u8>,
        index_path: PathBuf,
        flat: Vec<u8>,
        small: Vec<u8>,
        small_path: PathBuf,
        small_cfg: plfs_core::Config,
    }

    fn corpus() -> &'static Corpus {
        static C: OnceLock<Corpus> = OnceLock::new();
        C.get_or_init(|| {
            // Readers warn about every damaged log they skip: keep the output readable.
            std::env::set_var("PLFS_LOG", "off");
            let fx = Fixture::new(
                "fuzz",
                1,
                0,
                plfs_core::config::GlobalParams {
                    data_checksums: true,
                    ..Default::default()
                },
            );
            let p = fx.plfs();
            let f = p.open(&fx.path("f"), common::rw_create(), 0o644, 7).unwrap();
            for i in 0..40u64 {
                f.write(&pattern(i, i * 100, 64), i * 100).unwrap();
            }
            f.write(&pattern(9, 5, 3000), 5).unwrap();
            f.close().unwrap();
            plfs_core::tools::flatten(&p, &fx.path("f")).unwrap();
            let dir = fx.container_dir("f");
            let index_path = fx.logs("f", "index.").remove(0);
            let mut small_cfg = fx.config.clone();
            small_cfg.mounts[0].workload = Workload::SmallFile;
            let sp = Plfs::new(small_cfg.clone()).unwrap();
            for n in 0..5u64 {
                let h = sp
                    .open(&fx.path(&format!("s{n}")), common::rw_create(), 0o644, 7)
                    .unwrap();
                h.write(&pattern(n, 0, 100 + n as usize * 50), 0).unwrap();
                h.close().unwrap();
            }
            drop(sp);
            let sdir = fx.canonical[0].join(".plfs_small");
            let small_path = std::fs::read_dir(&sdir)
                .unwrap()
                .map(|e| e.unwrap().path())
                .find(|p| p.file_name().unwrap().to_str().unwrap().starts_with("log."))
                .unwrap();
            Corpus {
                marker: std::fs::read(dir.join(".plfscontainer")).unwrap(),
                index: std::fs::read(&index_path).unwrap(),
                flat: std::fs::read(dir.join("flat.index")).unwrap(),
                small: std::fs::read(&small_path).unwrap(),
                index_path,
                small_path,
                small_cfg,
                fx,
            }
        })
    }

    /// Applies byte flips, a truncation and an appended tail to `base`.
    fn mutate(base: &[u8], flips: &[(usize, u8)], cut: Option<usize>, tail: &[u8]) -> Vec<u8> {
        let mut v = base.to_vec();
        for &(pos, x) in flips {
            if !v.is_empty() {
                let i = pos % v.len();
                v[i] ^= x.max(1);
            }
        }
        if let Some(c) = cut {
            v.truncate(c % (v.len() + 1));
        }
        v.extend_from_slice(tail);
        v
    }

    fn mutation() -> impl Strategy<Value = (Vec<(usize, u8)>, Option<usize>, Vec<u8>)> {
        (
            proptest::collection::vec((any::<usize>(), any::<u8>()), 0..4),
            proptest::option::of(any::<usize>()),
            proptest::collection::vec(any::<u8>(), 0..64),
        )
    }

    fn decode_all(b: &[u8]) {
        EXECS.fetch_add(5, Ordering::Relaxed);
        let p = Path::new("fuzz-input");
        let _ = format::decode_records(b);
        let _ = LogHeader::decode(p, b, format::INDEX_MAGIC);
        let _ = Marker::decode(p, b);
        let _ = plfs_format::flat::Flat::decode(p, b);
        let s = String::from_utf8_lossy(b);
        let _ = MetaDropping::parse(&s);
        let _ = format::parse_log_name(&s);
    }

    /// Runs `body` on `cases` inputs from `strat` and prints how many ran.
    fn fuzz<S: Strategy>(name: &str, cases: u32, strat: S, body: impl Fn(S::Value) -> Result<(), TestCaseError>)
    where
        S::Value: std::fmt::Debug,
    {
        let runs = AtomicU64::new(0);
        let cfg = ProptestConfig {
            cases,
            failure_persistence: None,
            ..ProptestConfig::default()
        };
        let mut runner = proptest::test_runner::TestRunner::new(cfg);
        let counted = |v: S::Value| {
            runs.fetch_add(1, Ordering::Relaxed);
            body(v)
        };
        if let Err(e) = runner.run(&strat, counted) {
            panic!("{name}: {e}");
        }
        let n = runs.load(Ordering::Relaxed);
        eprintln!("fuzz {name}: {n} executions, no panic, no unnamed error");
    }

    #[test]
    fn decoders_never_panic_on_random_bytes() {
        fuzz(
            "random bytes",
            cases(),
            proptest::collection::vec(any::<u8>(), 0..512),
            |b| {
                decode_all(&b);
                if b.len() > format::INDEX_HEADER_LEN {
                    EXECS.fetch_add(1, Ordering::Relaxed);
                    let _ = format::decode_records(&b[format::INDEX_HEADER_LEN..]);
                }
                Ok(())
            },
        );
    }

    #[test]
    fn decoders_never_panic_on_mutated_files() {
        let _g = serial(); // the corpus is written through the backend layer
        fuzz(
            "mutated files",
            cases(),
            (0usize..4, mutation()),
            |(which, (flips, cut, tail))| {
                let c = corpus();
                let base = [&c.marker, &c.index, &c.flat, &c.small][which];
                let v = mutate(base, &flips, cut, &tail);
                decode_all(&v);
                if v.len() >= format::INDEX_HEADER_LEN {
                    EXECS.fetch_add(1, Ordering::Relaxed);
                    let d = format::decode_records(&v[format::INDEX_HEADER_LEN..]);
                    prop_assert!(d.valid_len <= v.len() - format::INDEX_HEADER_LEN);
                }
                Ok(())
            },
        );
    }

    #[test]
    fn dropping_names_never_panic() {
        let names = "(open|close|trunc|cid|index|data)\\.[0-9a-f.]{0,60}[a-z.]{0,8}";
        fuzz("dropping names", cases(), names, |s: String| {
            EXECS.fetch_add(2, Ordering::Relaxed);
            if let Some(d) = MetaDropping::parse(&s) {
                prop_assert_eq!(MetaDropping::parse(&d.name()), Some(d));
            }
            let _ = format::parse_log_name(&s);
            Ok(())
        });
    }

    /// Error text must name a file or the logical path, so a person can find the damage.
    fn names_a_file(e: &plfs_core::Error, files: &[&Path]) -> bool {
        let m = e.to_string();
        files.iter().any(|f| m.contains(&*f.to_string_lossy())) || m.contains(common::MOUNT)
    }

    #[test]
    fn readers_survive_a_damaged_index_log() {
        let _g = serial();
        fuzz("damaged index log", cases() / 10, mutation(), |(flips, cut, tail)| {
            let c = corpus();
            std::fs::write(&c.index_path, mutate(&c.index, &flips, cut, &tail)).unwrap();
            // Keep the flattened index out of the way: readers must go through the damaged log.
            let flat = c.fx.container_dir("f").join("flat.index");
            let _ = std::fs::remove_file(&flat);
            EXECS.fetch_add(1, Ordering::Relaxed);
            let p = c.fx.plfs();
            let path = c.fx.path("f");
            let files = [c.index_path.as_path()];
            match p.stat(&path) {
                Ok(_) => {}
                Err(e) => prop_assert!(names_a_file(&e, &files), "stat: {e}"),
            }
            if let Err(e) = common::read_fresh(&c.fx, &path) {
                prop_assert!(names_a_file(&e, &files), "read: {e}");
            }
            let rep = fsck::fsck(&p, &path, &Options::default());
            prop_assert!(rep.is_ok(), "fsck: {:?}", rep.err());
            let v = fsck::verify(&p, &path).unwrap();
            for (f, _) in &v.unreadable {
                prop_assert_eq!(f, &c.index_path);
            }
            std::fs::write(&c.index_path, &c.index).unwrap();
            Ok(())
        });
    }

    #[test]
    fn readers_survive_a_damaged_small_file_log() {
        let _g = serial();
        fuzz(
            "damaged small-file log",
            cases() / 10,
            mutation(),
            |(flips, cut, tail)| {
                let c = corpus();
                std::fs::write(&c.small_path, mutate(&c.small, &flips, cut, &tail)).unwrap();
                EXECS.fetch_add(1, Ordering::Relaxed);
                let p = Plfs::new(c.small_cfg.clone()).unwrap();
                let files = [c.small_path.as_path()];
                match p.readdir(Path::new(common::MOUNT)) {
                    Ok(ents) => {
                        for e in ents {
                            let path = Path::new(common::MOUNT).join(&e.name);
                            if let Err(e) = p.stat(&path) {
                                prop_assert!(names_a_file(&e, &files), "stat: {e}");
                            }
                            match p.open(&path, common::ro(), 0, 1) {
                                Ok(h) => {
                                    if let Err(e) = common::read_all(&h) {
                                        prop_assert!(names_a_file(&e, &files), "read: {e}");
                                    }
                                }
                                Err(e) => prop_assert!(names_a_file(&e, &files), "open: {e}"),
                            }
                        }
                    }
                    Err(e) => prop_assert!(names_a_file(&e, &files), "readdir: {e}"),
                }
                std::fs::write(&c.small_path, &c.small).unwrap();
                Ok(())
            },
        );
    }
}
