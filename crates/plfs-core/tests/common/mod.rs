//! Shared helpers of the plfs-core integration tests: temporary backends and configurations
//! (1..n canonical backends, optional shadow-only backends), deterministic data patterns, whole-file
//! reads, and re-executing the running test binary as a child process (real multi-process tests
//! without extra binaries).
//!
//! Each test binary includes this module with `mod common;`; not every binary uses every helper.
#![allow(dead_code)]

pub mod legacy_1n;

use plfs_core::config::{BackendRole, BackendSpec, GlobalParams, MountConfig, Workload};
use plfs_core::{Config, OpenFile, OpenFlags, Plfs};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU64, Ordering};

/// The logical mount point every fixture uses (it need not exist: PLFS resolves it lexically).
pub const MOUNT: &str = "/plfs-test/mnt";

/// Where the tests put their temporary directories (backends included): `$PLFS_TEST_ROOT` when set
/// and not empty (e.g. a directory on a GlusterFS mount, to run the tests on that backend), else
/// the system temp dir.
pub fn test_root() -> PathBuf {
    match std::env::var_os("PLFS_TEST_ROOT") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => std::env::temp_dir(),
    }
}

/// A temporary directory, removed with everything in it when dropped (kept when `PLFS_TEST_KEEP`
/// is set, for post-mortems).
#[derive(Debug)]
pub struct TempDir(PathBuf);

impl TempDir {
    /// Creates a fresh, unique directory under [`test_root`].
    pub fn new(tag: &str) -> TempDir {
        static N: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let p = test_root().join(format!(
            "plfs-it-{tag}-{}-{}-{nanos}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&p).unwrap_or_else(|e| panic!("mkdir {}: {e}", p.display()));
        TempDir(p)
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if std::env::var_os("PLFS_TEST_KEEP").is_none() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// A test installation: backends in a temporary directory, the plfsrc describing them (so child
/// processes can load the same configuration), and the parsed [`Config`].
#[derive(Debug)]
pub struct Fixture {
    /// Owns every file of the fixture.
    pub dir: TempDir,
    /// The plfsrc file written for this fixture.
    pub rc: PathBuf,
    /// The configuration (built directly; equal to what `rc` parses to).
    pub config: Config,
    /// Canonical backends (role Both when there is no shadow-only backend, else Canonical).
    pub canonical: Vec<PathBuf>,
    /// Shadow-only backends.
    pub shadows: Vec<PathBuf>,
}

impl Fixture {
    /// `ncanon` canonical backends; with `nshadow` > 0 they are canonical-only and `nshadow`
    /// shadow-only backends hold every writer's logs, else each backend has both roles.
    pub fn new(tag: &str, ncanon: usize, nshadow: usize, global: GlobalParams) -> Fixture {
        assert!(ncanon > 0);
        let dir = TempDir::new(tag);
        let mut backends = Vec::new();
        let mut canonical = Vec::new();
        let mut shadows = Vec::new();
        for i in 0..ncanon {
            let p = dir.path().join(format!("canon{i}"));
            std::fs::create_dir_all(&p).unwrap();
            let role = if nshadow > 0 {
                BackendRole::Canonical
            } else {
                BackendRole::Both
            };
            backends.push(BackendSpec {
                location: p.clone(),
                role,
            });
            canonical.push(p);
        }
        for i in 0..nshadow {
            let p = dir.path().join(format!("shadow{i}"));
            std::fs::create_dir_all(&p).unwrap();
            backends.push(BackendSpec {
                location: p.clone(),
                role: BackendRole::Shadow,
            });
            shadows.push(p);
        }
        let rc = dir.path().join("plfsrc");
        std::fs::write(&rc, plfsrc_text(&global, &backends)).unwrap();
        let config = Config {
            files: vec![rc.clone()],
            global,
            mounts: vec![MountConfig {
                mount_point: MOUNT.into(),
                workload: Workload::SharedFile,
                backends,
            }],
            warnings: Vec::new(),
        };
        Fixture {
            dir,
            rc,
            config,
            canonical,
            shadows,
        }
    }

    /// [`Fixture::new`] with the mount's workload set to `small_file` (1-N), in the
    /// configuration and in the plfsrc.
    pub fn small(tag: &str, ncanon: usize, global: GlobalParams) -> Fixture {
        let mut fx = Fixture::new(tag, ncanon, 0, global);
        fx.config.mounts[0].workload = Workload::SmallFile;
        let text = std::fs::read_to_string(&fx.rc)
            .unwrap()
            .replace("workload: shared_file", "workload: small_file");
        std::fs::write(&fx.rc, text).unwrap();
        fx
    }

    /// A fresh PLFS instance that reaches the backends through another client of the file
    /// system when `PLFS_TEST_ROOT2` names [`test_root`] as seen through a second mount (the
    /// GlusterFS and MooseFS tests set it), else the same as [`Fixture::plfs`].
    pub fn plfs_other_client(&self) -> Plfs {
        let mut config = self.config.clone();
        if let Some(root2) = std::env::var_os("PLFS_TEST_ROOT2").filter(|r| !r.is_empty()) {
            for b in &mut config.mounts[0].backends {
                let rel = b
                    .location
                    .strip_prefix(test_root())
                    .expect("backend under the test root");
                b.location = PathBuf::from(&root2).join(rel);
            }
        }
        Plfs::new(config).expect("Plfs::new")
    }

    /// One backend with both roles and default parameters.
    pub fn simple(tag: &str) -> Fixture {
        Fixture::new(tag, 1, 0, GlobalParams::default())
    }

    /// A fresh PLFS instance (as another process would have): no open-file table, no cached index.
    pub fn plfs(&self) -> Plfs {
        Plfs::new(self.config.clone()).expect("Plfs::new")
    }

    /// The logical path of `name` under the mount point.
    pub fn path(&self, name: &str) -> PathBuf {
        Path::new(MOUNT).join(name)
    }

    /// The backend directory of the container of logical file `name` (searched on every canonical
    /// backend; panics if there is none).
    pub fn container_dir(&self, name: &str) -> PathBuf {
        let found: Vec<PathBuf> = self
            .canonical
            .iter()
            .map(|b| b.join(name))
            .filter(|p| p.join(".plfscontainer").exists())
            .collect();
        assert_eq!(found.len(), 1, "container of {name}: found {found:?}");
        found.into_iter().next().unwrap()
    }

    /// The directory holding the droppings of `name`'s container: the container itself (format
    /// 3), or its `meta/` (format 2).
    pub fn meta_dir(&self, name: &str) -> PathBuf {
        let c = self.container_dir(name);
        if c.join("meta").is_dir() {
            c.join("meta")
        } else {
            c
        }
    }

    /// Every file under every hostdir of `name`'s container (in it and on shadows) whose name
    /// starts with `prefix` ("index." or "data."), sorted.
    pub fn logs(&self, name: &str, prefix: &str) -> Vec<PathBuf> {
        let c = self.container_dir(name);
        // A one-directory container (format 3) holds its writers' logs itself.
        let mut dirs = vec![c.clone()];
        dirs.extend(subdirs_with_prefix(&c, "hostdir."));
        for b in self.canonical.iter().chain(&self.shadows) {
            let root = b.join(".plfs_shadow");
            for cdir in subdirs_with_prefix(&root, "") {
                dirs.extend(subdirs_with_prefix(&cdir, "hostdir."));
            }
        }
        let mut out: Vec<PathBuf> = dirs
            .iter()
            .flat_map(|d| std::fs::read_dir(d).into_iter().flatten().flatten().map(|e| e.path()))
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(prefix))
            })
            .collect();
        out.sort();
        out
    }

    /// The single log of `kind` ("index" or "data") of the writer with pid `pid`.
    pub fn log_of_pid(&self, name: &str, kind: &str, pid: u32) -> PathBuf {
        let want = format!(".{pid}.");
        let v: Vec<PathBuf> = self
            .logs(name, &format!("{kind}."))
            .into_iter()
            .filter(|p| p.file_name().unwrap().to_string_lossy().contains(&want))
            .collect();
        assert_eq!(v.len(), 1, "{kind} log of pid {pid}: {v:?}");
        v.into_iter().next().unwrap()
    }
}

/// Subdirectories of `dir` whose names start with `prefix` (none if `dir` is missing).
pub fn subdirs_with_prefix(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
        .map(|e| e.path())
        .collect();
    v.sort();
    v
}

/// The plfsrc text describing one mount point at [`MOUNT`].
fn plfsrc_text(g: &GlobalParams, backends: &[BackendSpec]) -> String {
    let mut s = format!(
        "- global_params:\n    num_hostdirs: {}\n    container_format: {}\n    threadpool_size: {}\n    index_buffer_records: {}\n    \
         data_checksums: {}\n    max_open_data_logs: {}\n    auto_compaction: {}\n    \
         compaction_dead_ratio: {}\n    compaction_min_bytes: {}\n- mount_point: {MOUNT}\n  workload: shared_file\n  backends:\n",
        g.num_hostdirs,
        g.container_format,
        g.threadpool_size,
        g.index_buffer_records,
        g.data_checksums,
        g.max_open_data_logs,
        g.auto_compaction,
        f64::from(g.compaction_dead_permille) / 1000.0,
        g.compaction_min_bytes
    );
    for b in backends {
        s.push_str(&format!("    - location: {}\n", b.location.display()));
        match b.role {
            BackendRole::Both => {}
            BackendRole::Canonical => s.push_str("      type: canonical\n"),
            BackendRole::Shadow => s.push_str("      type: shadow\n"),
        }
    }
    s
}

/// Open flags: read-only.
pub fn ro() -> OpenFlags {
    OpenFlags {
        read: true,
        ..Default::default()
    }
}

/// Open flags: write-only, creating.
pub fn wo_create() -> OpenFlags {
    OpenFlags {
        write: true,
        create: true,
        ..Default::default()
    }
}

/// Open flags: read-write, creating.
pub fn rw_create() -> OpenFlags {
    OpenFlags {
        read: true,
        write: true,
        create: true,
        ..Default::default()
    }
}

/// The splitmix64 mix: a seed's well-spread successor.
pub fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The byte a pattern `seed` has at absolute offset `off`: pseudo-random, so a byte written at the
/// wrong offset or taken from the wrong writer is caught.
pub fn pattern_byte(seed: u64, off: u64) -> u8 {
    splitmix(seed.wrapping_mul(0x1000_0000_01b3) ^ (off / 8)).to_le_bytes()[(off % 8) as usize]
}

/// Fills `buf` with pattern `seed` as if it were placed at offset `off`.
pub fn fill_pattern(seed: u64, off: u64, buf: &mut [u8]) {
    for (i, b) in buf.iter_mut().enumerate() {
        *b = pattern_byte(seed, off + i as u64);
    }
}

/// `len` bytes of pattern `seed` at offset `off`.
pub fn pattern(seed: u64, off: u64, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    fill_pattern(seed, off, &mut v);
    v
}

/// Reads a whole logical file through `f` (until a read returns 0).
pub fn read_all(f: &OpenFile) -> plfs_core::Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf, out.len() as u64)?;
        if n == 0 {
            return Ok(out);
        }
        out.extend_from_slice(&buf[..n]);
    }
}

/// Opens `path` read-only with a fresh instance and reads it whole.
pub fn read_fresh(fx: &Fixture, path: &Path) -> plfs_core::Result<Vec<u8>> {
    let p = fx.plfs();
    let f = p.open(path, ro(), 0, 4242)?;
    let v = read_all(&f)?;
    f.close()?;
    Ok(v)
}

/// Position of the first differing byte of two slices (or of the end of the shorter one).
pub fn first_diff(a: &[u8], b: &[u8]) -> Option<usize> {
    a.iter().zip(b).position(|(x, y)| x != y).or(if a.len() != b.len() {
        Some(a.len().min(b.len()))
    } else {
        None
    })
}

/// Asserts that two byte strings are equal, reporting the first difference instead of dumping them.
#[track_caller]
pub fn assert_bytes_eq(got: &[u8], want: &[u8], what: &str) {
    if let Some(i) = first_diff(got, want) {
        panic!(
            "{what}: differ at byte {i} (got len {}, want len {}): got {:?} want {:?}",
            got.len(),
            want.len(),
            got.get(i..(i + 16).min(got.len())),
            want.get(i..(i + 16).min(want.len()))
        );
    }
}

// ---- Namespace helpers --------------------------------------------------------------------

/// Asserts that `r` failed with errno `want`.
#[track_caller]
pub fn assert_errno<T: std::fmt::Debug>(r: Result<T, plfs_core::Error>, want: rustix::io::Errno, what: &str) {
    match r {
        Ok(v) => panic!("{what}: succeeded ({v:?}), expected {want:?}"),
        Err(e) => assert_eq!(
            e.raw_errno(),
            want.raw_os_error(),
            "{what}: got `{e}`, expected {want:?}"
        ),
    }
}

/// Unpacks tests/fixtures/`tarball` into `dir` (made if missing): only `members` when any are
/// given.
pub fn untar_fixture(tarball: &str, dir: &Path, members: &[&str]) {
    std::fs::create_dir_all(dir).unwrap();
    let tarball = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(tarball);
    let st = Command::new("tar")
        .arg("xzf")
        .arg(&tarball)
        .arg("-C")
        .arg(dir)
        .args(members)
        .status()
        .expect("tar runs");
    assert!(st.success(), "tar xzf {} {members:?}", tarball.display());
}

/// A plfsrc in `t` with one `small_file` (1-N) mount point `mount` on one backend: its path
/// and the backend's.
pub fn small_rc(t: &TempDir, mount: &str) -> (PathBuf, PathBuf) {
    let backend = t.path().join("b0");
    std::fs::create_dir_all(&backend).unwrap();
    let rc = t.path().join("plfsrc");
    std::fs::write(
        &rc,
        format!(
            "- mount_point: {mount}\n  workload: small_file\n  backends:\n    - location: {}\n",
            backend.display()
        ),
    )
    .unwrap();
    (rc, backend)
}

/// Writes `data` to a new file `path` (as pid 1) and closes it.
pub fn put(p: &Plfs, path: &Path, data: &[u8]) {
    let f = p.open(path, wo_create(), 0o644, 1).unwrap();
    f.write(data, 0).unwrap();
    f.close().unwrap();
}

/// Reads a whole file (as pid 2).
pub fn get(p: &Plfs, path: &Path) -> Vec<u8> {
    let f = p.open(path, ro(), 0, 2).unwrap();
    let v = read_all(&f).unwrap();
    f.close().unwrap();
    v
}

// ---- Child processes --------------------------------------------------------------------------

/// Environment variable naming the role a re-executed test binary plays.
pub const CHILD_ENV: &str = "PLFS_TEST_CHILD";
/// Prefix of protocol lines children print on stdout (the test harness prints its own lines too).
pub const CHILD_TAG: &str = "PLFS-CHILD";

/// The role this process plays when it was started by [`child_command`], else `None`.
pub fn child_role() -> Option<String> {
    std::env::var(CHILD_ENV).ok().filter(|r| !r.is_empty())
}

/// A child argument passed as environment variable `PLFS_T_<key>` (panics if missing).
pub fn arg(key: &str) -> String {
    std::env::var(format!("PLFS_T_{key}")).unwrap_or_else(|_| panic!("child argument PLFS_T_{key} missing"))
}

/// A numeric child argument.
pub fn arg_u64(key: &str) -> u64 {
    arg(key).parse().unwrap_or_else(|e| panic!("child argument {key}: {e}"))
}

/// A command that re-executes this test binary running only test `entry` (which must dispatch on
/// [`child_role`]) in role `role`, with `args` as `PLFS_T_<key>` variables.
pub fn child_command(entry: &str, role: &str, args: &[(&str, String)]) -> Command {
    let exe = std::env::current_exe().expect("current_exe");
    let mut c = Command::new(exe);
    c.args([entry, "--exact", "--nocapture", "--test-threads=1", "-q"]);
    c.env(CHILD_ENV, role);
    c.env_remove("PLFS_HOSTNAME");
    c.env("PLFS_LOG", "warn");
    for (k, v) in args {
        c.env(format!("PLFS_T_{k}"), v);
    }
    c
}

/// The values a child printed as `PLFS-CHILD <key> <value>` lines, in order.
pub fn child_lines(out: &Output, key: &str) -> Vec<String> {
    let prefix = format!("{CHILD_TAG} {key} ");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix(&prefix).map(str::to_string))
        .collect()
}

/// Panics with the child's output unless it exited successfully.
#[track_caller]
pub fn assert_child_ok(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what}: child failed ({}):\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// crc32c of a byte string (for whole-file comparisons).
pub fn crc(b: &[u8]) -> u32 {
    crc32c::crc32c(b)
}

/// Arms a counting point (it never fires) for backend call `name` (e.g. `sys::readdir`,
/// `sys::mkdir`) under the fixture's directory; returns a closure that reads its count.
pub fn call_counter(fx: &Fixture, name: &str) -> impl Fn() -> u64 {
    let tag = fx.dir.path().file_name().unwrap().to_string_lossy().into_owned();
    calls_matching(name, &tag)
}

/// Arms a counting point (it never fires) for backend call `name` on the paths containing
/// `filter`; returns a closure that reads its count.
pub fn calls_matching(name: &str, filter: &str) -> impl Fn() -> u64 {
    plfs_core::failpoint::set(plfs_core::failpoint::Spec {
        name: name.into(),
        filter: filter.into(),
        action: plfs_core::failpoint::Action::Kill,
        after: u64::MAX,
        times: None,
    });
    let (name, filter) = (name.to_string(), filter.to_string());
    move || plfs_core::failpoint::hits_for(&name, &filter)
}

/// Makes every stat of the fixture's files (and every open's fstat) report a size of 0, a size
/// that lags behind the bytes as a network file system's cached attributes can (the
/// `sys::stale_size` failpoint, restricted to the fixture's directory); returns a closure that
/// counts the stats it changed.
#[allow(dead_code)] // not every test binary uses it
pub fn lagging_sizes(fx: &Fixture) -> impl Fn() -> u64 {
    let tag = fx.dir.path().file_name().unwrap().to_string_lossy().into_owned();
    plfs_core::failpoint::set(plfs_core::failpoint::Spec {
        name: "sys::stale_size".into(),
        filter: tag.clone(),
        action: plfs_core::failpoint::Action::Errno(rustix::io::Errno::IO),
        after: 0,
        times: None,
    });
    move || plfs_core::failpoint::hits_for("sys::stale_size", &tag)
}

/// Every file of a directory as a fresh instance reads it: name -> (size, mode, mtime, bytes).
pub type Snap = std::collections::BTreeMap<String, (u64, u32, i64, Vec<u8>)>;

/// Asserts two snapshots are equal, naming the first difference (never dumping the bytes).
#[track_caller]
pub fn same(got: &Snap, want: &Snap, what: &str) {
    let (gk, wk): (Vec<_>, Vec<_>) = (got.keys().collect(), want.keys().collect());
    assert_eq!(gk, wk, "{what}: names");
    for (n, w) in want {
        let g = &got[n];
        assert_eq!((g.0, g.1, g.2), (w.0, w.1, w.2), "{what}: {n}: size, mode, mtime");
        assert_bytes_eq(&g.3, &w.3, &format!("{what}: {n}"));
    }
}
