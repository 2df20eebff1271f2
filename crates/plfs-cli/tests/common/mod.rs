//! What the integration tests of the `plfs` binary share: where their temporary directories go,
//! a temporary directory with a plfsrc ([`Sandbox`], removed on drop) and the real binary run
//! with it, and deterministic test data. Each test file is its own crate and uses a part.
#![allow(dead_code)]

use plfs_core::{OpenFlags, Plfs};
use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Output};

/// Where the tests put their temporary directories: `$PLFS_TEST_ROOT` when set and not empty (e.g.
/// a directory on a GlusterFS mount, to run the tests on that backend), else the system temp dir.
pub fn test_root() -> PathBuf {
    std::env::var_os("PLFS_TEST_ROOT")
        .filter(|p| !p.is_empty())
        .map_or_else(std::env::temp_dir, PathBuf::from)
}

/// A temporary directory (backends, plain files) and the plfsrc in it; removed on drop. A test
/// file's own `Env` adds its mount points and dereferences to it.
#[derive(Debug)]
pub struct Sandbox {
    /// The directory.
    pub dir: PathBuf,
    /// Its plfsrc (`dir/plfsrc`), written by [`Sandbox::write_plfsrc`].
    pub cfg: PathBuf,
}

impl Sandbox {
    /// Directory `dir`, emptied (whatever a failed run left is removed) and created, with the
    /// subdirectories `subdirs`.
    pub fn new(dir: PathBuf, subdirs: &[&str]) -> Sandbox {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for s in subdirs {
            std::fs::create_dir_all(dir.join(s)).unwrap();
        }
        let cfg = dir.join("plfsrc");
        Sandbox { dir, cfg }
    }

    /// Writes the plfsrc.
    pub fn write_plfsrc(&self, text: &str) {
        std::fs::write(&self.cfg, text).unwrap();
    }

    /// The `plfs` binary with this plfsrc, `HOME` here, no `PLFS_HOSTNAME` from the caller and
    /// the core's log off (what the commands print is theirs, not the log's).
    pub fn cmd(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_plfs"));
        c.env("PLFSRC", &self.cfg)
            .env("HOME", &self.dir)
            .env("PLFS_LOG", "off")
            .env_remove("PLFS_HOSTNAME");
        c
    }

    /// Runs `plfs args`.
    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd().args(args).output().expect("running plfs")
    }

    /// Runs `plfs args`, asserts it succeeded, and returns its standard output.
    pub fn ok_bytes(&self, args: &[&str]) -> Vec<u8> {
        let o = self.run(args);
        assert!(
            o.status.success(),
            "plfs {args:?} failed ({:?}): {}\nstdout: {}",
            o.status.code(),
            String::from_utf8_lossy(&o.stderr),
            String::from_utf8_lossy(&o.stdout)
        );
        o.stdout
    }

    /// [`Sandbox::ok_bytes`] as text.
    pub fn ok(&self, args: &[&str]) -> String {
        String::from_utf8(self.ok_bytes(args)).unwrap()
    }

    /// Runs `plfs args` as given (with its own `--json`), asserts it succeeded, and parses its
    /// standard output as JSON.
    pub fn ok_json(&self, args: &[&str]) -> Value {
        let out = self.ok(args);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("plfs {args:?}: not JSON ({e}): {out}"))
    }

    /// [`Sandbox::ok_json`] of `plfs --json args`.
    pub fn json(&self, args: &[&str]) -> Value {
        let mut a = vec!["--json"];
        a.extend_from_slice(args);
        self.ok_json(&a)
    }

    /// The library on this plfsrc.
    pub fn plfs(&self) -> Plfs {
        Plfs::new(plfs_core::Config::from_file(&self.cfg).unwrap()).unwrap()
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A sandbox whose plfsrc has an N-1 mount point (`n1`) on backends `b1` and `b2` and a 1-N
/// one (`small`) on `s1`, with automatic compaction off (so that a test compacts when it says).
#[derive(Debug)]
pub struct N1AndSmall {
    /// The sandbox.
    pub sb: Sandbox,
    /// The N-1 mount point.
    pub n1: PathBuf,
    /// The 1-N mount point.
    pub small: PathBuf,
}

impl N1AndSmall {
    /// In the system temp dir, named after the test file (`tag`), the process and `name`.
    pub fn new(tag: &str, name: &str) -> N1AndSmall {
        let base = format!("plfs-cli-{tag}-{}-{name}", std::process::id());
        let sb = Sandbox::new(std::env::temp_dir().join(&base), &["b1", "b2", "s1"]);
        let n1 = PathBuf::from(format!("/{base}"));
        let small = PathBuf::from(format!("/{base}-small"));
        let text = format!(
            "- global_params:\n    auto_compaction: false\n\
             - mount_point: {}\n  workload: n-1\n  backends:\n    - location: {}\n    - location: {}\n\
             - mount_point: {}\n  workload: small_file\n  backends:\n    - location: {}\n",
            n1.display(),
            sb.dir.join("b1").display(),
            sb.dir.join("b2").display(),
            small.display(),
            sb.dir.join("s1").display()
        );
        sb.write_plfsrc(&text);
        N1AndSmall { sb, n1, small }
    }
}

impl std::ops::Deref for N1AndSmall {
    type Target = Sandbox;
    fn deref(&self) -> &Sandbox {
        &self.sb
    }
}

/// Deterministic pseudo-random bytes (xorshift64).
pub fn bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Open flags to read and write, creating the file.
pub fn rw() -> OpenFlags {
    OpenFlags {
        read: true,
        write: true,
        create: true,
        ..Default::default()
    }
}
