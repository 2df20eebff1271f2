//! Test harness: a real FUSE mount of a fresh PLFS store, served by the `plfs-fuse` binary in
//! the foreground as a child process, always unmounted when the guard drops (even after a
//! failed assertion), so no stale mount outlives a test.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// True if this machine can run FUSE tests (root and /dev/fuse). Otherwise the test prints why
/// it is skipped; CI runs as root with fuse3 installed.
pub fn fuse_available() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let ok = root && Path::new("/dev/fuse").exists();
    if !ok {
        eprintln!("SKIPPED: FUSE tests need root and /dev/fuse");
    }
    ok
}

/// A mounted PLFS file system.
pub struct Mounted {
    /// Temporary directory holding everything.
    pub dir: PathBuf,
    /// The FUSE mount point (also the plfsrc mount point).
    pub mnt: PathBuf,
    /// The backend directories.
    pub backends: Vec<PathBuf>,
    /// The plfsrc.
    pub plfsrc: PathBuf,
    /// Extra daemon arguments.
    args: Vec<String>,
    daemon: Option<Child>,
    /// Set when the files were handed over to another guard ([`Mounted::remount`]).
    handed_over: bool,
}

/// Where the tests put their temporary directories (backends and mount points): `$PLFS_TEST_ROOT`
/// when set and not empty (e.g. a directory on a GlusterFS mount), else the system temp dir.
pub fn test_root() -> PathBuf {
    match std::env::var_os("PLFS_TEST_ROOT") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => std::env::temp_dir(),
    }
}

fn unique_dir(tag: &str) -> PathBuf {
    let n = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let d = test_root().join(format!("plfs-fuse-test-{tag}-{}-{n:x}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

impl Mounted {
    /// Mounts a fresh store with `nbackends` backends and `extra_global` lines appended to the
    /// plfsrc's `global_params` (e.g. "  index_buffer_records: 4").
    pub fn with(tag: &str, nbackends: usize, extra_global: &str) -> Mounted {
        Mounted::with_args(tag, nbackends, extra_global, &[])
    }

    /// [`Mounted::with`], the daemon started with extra arguments (e.g. "--no-default-permissions").
    pub fn with_args(tag: &str, nbackends: usize, extra_global: &str, args: &[&str]) -> Mounted {
        Mounted::with_backends_in(tag, nbackends, extra_global, args, "")
    }

    /// [`Mounted::with_args`], the backends in subdirectory `sub` of the test directory.
    pub fn with_backends_in(tag: &str, nbackends: usize, extra_global: &str, args: &[&str], sub: &str) -> Mounted {
        let dir = unique_dir(tag);
        let mnt = dir.join("mnt");
        std::fs::create_dir_all(&mnt).unwrap();
        let mut backends = Vec::new();
        let mut rc = String::new();
        if !extra_global.is_empty() {
            rc.push_str(&format!("- global_params:\n{extra_global}\n"));
        }
        rc.push_str(&format!("- mount_point: {}\n  backends:\n", mnt.display()));
        for i in 0..nbackends {
            let b = dir.join(sub).join(format!("backend{i}"));
            std::fs::create_dir_all(&b).unwrap();
            rc.push_str(&format!("  - location: {}\n", b.display()));
            backends.push(b);
        }
        let plfsrc = dir.join("plfsrc");
        std::fs::write(&plfsrc, rc).unwrap();
        Mounted::start(Mounted {
            dir,
            mnt,
            backends,
            plfsrc,
            args: args.iter().map(|a| a.to_string()).collect(),
            daemon: None,
            handed_over: false,
        })
    }

    fn start(mut m: Mounted) -> Mounted {
        // $PLFS_FUSE_BIN runs the tests against another build of the daemon (e.g. an older one).
        let exe = std::env::var_os("PLFS_FUSE_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_plfs-fuse").into());
        let daemon = Command::new(exe)
            .arg(&m.mnt)
            .arg("--config")
            .arg(&m.plfsrc)
            .args(&m.args)
            .arg("--foreground")
            .stdin(Stdio::null())
            .spawn()
            .expect("start plfs-fuse");
        m.daemon = Some(daemon);
        let start = Instant::now();
        while !plfs_fuse::is_mounted(&m.mnt) {
            if let Some(st) = m.daemon.as_mut().unwrap().try_wait().unwrap() {
                panic!("plfs-fuse exited before mounting: {st}");
            }
            assert!(start.elapsed() < Duration::from_secs(20), "mount did not appear");
            std::thread::sleep(Duration::from_millis(10));
        }
        m
    }

    /// Mounts the same store again with a new daemon (after [`Mounted::unmount`]).
    pub fn remount(mut old: Mounted) -> Mounted {
        assert!(old.daemon.is_none(), "unmount first");
        old.handed_over = true;
        let m = Mounted {
            dir: old.dir.clone(),
            mnt: old.mnt.clone(),
            backends: old.backends.clone(),
            plfsrc: old.plfsrc.clone(),
            args: old.args.clone(),
            daemon: None,
            handed_over: false,
        };
        drop(old);
        Mounted::start(m)
    }

    /// Mounts a fresh store with one backend.
    pub fn new(tag: &str) -> Mounted {
        Mounted::with(tag, 1, "")
    }

    /// A path inside the mount.
    pub fn p(&self, rel: &str) -> PathBuf {
        self.mnt.join(rel)
    }

    /// The daemon's pid.
    pub fn daemon_pid(&self) -> u32 {
        self.daemon.as_ref().unwrap().id()
    }

    /// True while the daemon runs.
    pub fn daemon_alive(&mut self) -> bool {
        self.daemon.as_mut().is_some_and(|c| c.try_wait().unwrap().is_none())
    }

    /// Unmounts (waiting for the daemon to finish) and returns the daemon's exit status.
    pub fn unmount(&mut self) -> std::process::ExitStatus {
        plfs_fuse::umount(&self.mnt).expect("umount");
        self.wait_daemon()
    }

    /// Waits for the daemon to exit (after an unmount or a signal).
    pub fn wait_daemon(&mut self) -> std::process::ExitStatus {
        let mut c = self.daemon.take().expect("daemon running");
        let start = Instant::now();
        loop {
            if let Some(st) = c.try_wait().unwrap() {
                return st;
            }
            if start.elapsed() > Duration::from_secs(60) {
                let _ = c.kill();
                panic!("daemon did not exit");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Files under the backends whose name starts with `prefix` (e.g. "data.").
    pub fn backend_files(&self, prefix: &str) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for b in &self.backends {
            walk(b, &mut |p| {
                if p.file_name().is_some_and(|n| n.to_string_lossy().starts_with(prefix)) {
                    out.push(p.to_path_buf());
                }
            });
        }
        out.sort();
        out
    }

    /// A PLFS instance on the same configuration (for the tools: map, query).
    pub fn plfs(&self) -> plfs_core::Plfs {
        plfs_core::Plfs::new(plfs_core::Config::from_file(&self.plfsrc).unwrap()).unwrap()
    }
}

fn walk(dir: &Path, f: &mut dyn FnMut(&Path)) {
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            f(&p);
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                walk(&p, f);
            }
        }
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        if let Some(mut c) = self.daemon.take() {
            if plfs_fuse::umount(&self.mnt).is_err() {
                // Busy or broken: detach it so nothing stale stays mounted.
                let _ = Command::new("umount").arg("-l").arg(&self.mnt).status();
            }
            let start = Instant::now();
            while c.try_wait().ok().flatten().is_none() && start.elapsed() < Duration::from_secs(20) {
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
        if self.handed_over {
        } else if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        } else {
            eprintln!("test files kept in {}", self.dir.display());
        }
    }
}

/// Runs a shell command; panics with its output if it fails.
pub fn sh(cmd: &str) -> Output {
    let out = Command::new("sh").arg("-c").arg(cmd).output().unwrap();
    assert!(
        out.status.success(),
        "`{cmd}` failed ({}):\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Runs a shell command and returns its stdout as a string.
pub fn sh_out(cmd: &str) -> String {
    String::from_utf8(sh(cmd).stdout).unwrap()
}

/// Deterministic pseudo-random bytes.
pub fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// Runs `cmd` with `sh -c` as user `uid`, group `gid` and supplementary `groups` (setpriv).
pub fn as_user(uid: u32, gid: u32, groups: &[u32], cmd: &str) -> Output {
    let g = if groups.is_empty() {
        "--clear-groups".to_string()
    } else {
        format!(
            "--groups={}",
            groups.iter().map(|g| g.to_string()).collect::<Vec<_>>().join(",")
        )
    };
    Command::new("setpriv")
        .args([format!("--reuid={uid}"), format!("--regid={gid}"), g])
        .args(["sh", "-c", cmd])
        .output()
        .expect("setpriv (util-linux)")
}

/// The directory of the helper scripts.
pub fn scripts() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scripts")
}
