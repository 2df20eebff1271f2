//! `plfs fsck` and `plfs verify` through the real binary (exit codes, JSON), and permissions:
//! another user (nobody, through `setpriv`) must not read a 0600 file through `plfs cat` and must
//! read a 0644 one.

mod common;

use common::{test_root, Sandbox};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

struct Env {
    sb: Sandbox,
    mount: PathBuf,
}

impl std::ops::Deref for Env {
    type Target = Sandbox;
    fn deref(&self) -> &Sandbox {
        &self.sb
    }
}

impl Env {
    fn new(name: &str, extra: &str) -> Env {
        let dir = test_root().join(format!("plfs-fsck-cli-{}-{name}", std::process::id()));
        let sb = Sandbox::new(dir, &["b1"]);
        let mount = PathBuf::from(format!("/plfs-fsck-cli-{}-{name}", std::process::id()));
        sb.write_plfsrc(&format!(
            "- global_params:\n    num_hostdirs: 4\n{extra}- mount_point: {}\n  workload: n-1\n  backends:\n    - location: {}\n",
            mount.display(),
            sb.dir.join("b1").display()
        ));
        for p in [&sb.dir, &sb.dir.join("b1")] {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        Env { sb, mount }
    }

    fn file(&self, name: &str) -> String {
        self.mount.join(name).display().to_string()
    }

    fn import(&self, name: &str, data: &[u8], mode: u32) {
        let src = self.dir.join(format!("{name}.src"));
        std::fs::write(&src, data).unwrap();
        std::fs::set_permissions(&src, std::fs::Permissions::from_mode(mode)).unwrap();
        let o = self.run(&["import", src.to_str().unwrap(), &self.file(name)]);
        assert!(o.status.success(), "import: {}", String::from_utf8_lossy(&o.stderr));
    }

    /// The hostdir of `name` holding its logs.
    fn logs(&self, name: &str, prefix: &str) -> Vec<PathBuf> {
        let c = self.dir.join("b1").join(name);
        let mut v = Vec::new();
        for h in std::fs::read_dir(&c).unwrap().flatten() {
            if h.file_name().to_string_lossy().starts_with("hostdir.") {
                for l in std::fs::read_dir(h.path()).unwrap().flatten() {
                    if l.file_name().to_string_lossy().starts_with(prefix) {
                        v.push(l.path());
                    }
                }
            }
        }
        v
    }
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

#[test]
fn fsck_exit_codes_and_json() {
    let e = Env::new("codes", "");
    e.import("f", &vec![5u8; 10000], 0o644);
    let f = e.file("f");
    assert_eq!(code(&e.run(&["fsck", &f])), 0);
    // A torn record at the end of the index log.
    let ix = e.logs("f", "index.").remove(0);
    let mut b = std::fs::read(&ix).unwrap();
    b.extend_from_slice(&[1, 0, 40, 0, 9, 9]);
    std::fs::write(&ix, &b).unwrap();
    let o = e.run(&["fsck", &f, "--json"]);
    assert_eq!(code(&o), 4, "{}", String::from_utf8_lossy(&o.stdout));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["findings"][0]["kind"], "torn-index-tail");
    assert_eq!(v["findings"][0]["path"], ix.display().to_string());
    let o = e.run(&["fsck", &f, "--repair"]);
    assert_eq!(code(&o), 1, "{}", String::from_utf8_lossy(&o.stdout));
    assert!(String::from_utf8_lossy(&o.stdout).contains("repaired: truncated the log"));
    assert_eq!(code(&e.run(&["fsck", &e.mount.display().to_string()])), 0);
    let o = e.run(&["cat", &f]);
    assert_eq!(o.stdout, vec![5u8; 10000]);
    // Operational error: not a PLFS path, or a missing file.
    assert_eq!(code(&e.run(&["fsck", "/definitely/not/plfs"])), 8);
    assert_eq!(code(&e.run(&["fsck", &e.file("missing")])), 8);
}

#[test]
fn verify_exit_codes() {
    let e = Env::new("verify", "    data_checksums: true\n");
    e.import(
        "f",
        &(0..100_000u32).map(|i| (i % 251) as u8).collect::<Vec<_>>(),
        0o644,
    );
    let f = e.file("f");
    let o = e.run(&["verify", &f]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stdout));
    assert!(String::from_utf8_lossy(&o.stdout).contains("0 mismatches: OK"));
    let d = e.logs("f", "data.").remove(0);
    let mut b = std::fs::read(&d).unwrap();
    b[64 + 50_000] ^= 1;
    std::fs::write(&d, &b).unwrap();
    let o = e.run(&["verify", &f]);
    assert_eq!(code(&o), 4);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("MISMATCH") && out.contains(&*d.to_string_lossy()), "{out}");
    // A read checks the checksums too: `plfs cat` fails instead of printing the damaged bytes.
    let o = e.run(&["cat", &f]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_ne!(code(&o), 0, "cat of damaged data succeeded");
    assert!(o.stdout.len() < 100_000, "cat printed {} bytes", o.stdout.len());
    assert!(err.contains("logical offset 0"), "{err}");
    // A torn record at the end of the index log of a writer that closed: damage, as a reader
    // reports it, even where no checksum is stored.
    e.import("g", &[7u8; 5000], 0o644);
    let g = e.file("g");
    assert_eq!(code(&e.run(&["verify", &g])), 0);
    let ix = e.logs("g", "index.").remove(0);
    let mut b = std::fs::read(&ix).unwrap();
    b.extend_from_slice(&[1, 0, 40, 0, 9, 9]);
    std::fs::write(&ix, &b).unwrap();
    let o = e.run(&["verify", &g]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(code(&o), 4, "{out}");
    assert!(out.contains("UNREADABLE") && out.contains("torn record"), "{out}");
}

fn setpriv_nobody(e: &Env, args: &[&str]) -> Option<Output> {
    use std::os::unix::fs::MetadataExt;
    let euid = std::fs::metadata("/proc/self").map(|m| m.uid()).unwrap_or(1);
    if euid != 0 || !Path::new("/usr/bin/setpriv").exists() {
        return None;
    }
    let exe = env!("CARGO_BIN_EXE_plfs");
    let o = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", exe])
        .args(args)
        .env("PLFSRC", &e.cfg)
        .env("HOME", "/")
        .env("PLFS_LOG", "off")
        .output()
        .expect("setpriv");
    Some(o)
}

#[test]
fn another_user_cannot_read_a_private_file() {
    let e = Env::new("perm", "");
    e.import("private", b"secret data", 0o600);
    e.import("public", b"public data", 0o644);
    // The binary must be reachable by nobody for this test to mean anything.
    let probe = setpriv_nobody(&e, &["version"]);
    let Some(probe) = probe else {
        eprintln!("skipped: needs root and setpriv");
        return;
    };
    if !probe.status.success() {
        eprintln!("skipped: nobody cannot run the plfs binary here");
        return;
    }
    let o = setpriv_nobody(&e, &["cat", &e.file("private")]).unwrap();
    assert!(!o.status.success(), "nobody read a 0600 file: {:?}", o.stdout);
    assert!(o.stdout.is_empty());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("ermission denied"), "{err}");
    let o = setpriv_nobody(&e, &["cat", &e.file("public")]).unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(o.stdout, b"public data");
    // fsck by a user who may not read the container says so (permission denied, the operational
    // exit code), never that it is damaged.
    let o = setpriv_nobody(&e, &["fsck", &e.file("private"), "--json"]).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stderr)
        .unwrap_or_else(|_| panic!("fsck --json: {}", String::from_utf8_lossy(&o.stderr)));
    assert_eq!(code(&o), 8, "{v}");
    assert!(v["error"].as_str().unwrap().contains("ermission denied"), "{v}");
    // A container whose directory this user may list but whose marker it may not read (as
    // containers of 0600 files were made before their directories got the file's mode): one
    // `unreadable` finding, no marker rewrite proposed, no missing cid.
    let c = e.dir.join("b1").join("private");
    std::fs::set_permissions(&c, std::fs::Permissions::from_mode(0o755)).unwrap();
    let o = setpriv_nobody(&e, &["fsck", &e.file("private"), "--json"]).unwrap();
    std::fs::set_permissions(&c, std::fs::Permissions::from_mode(0o711)).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|_| panic!("fsck --json: {}", String::from_utf8_lossy(&o.stderr)));
    let kinds: Vec<&str> = v["findings"]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"))
        .iter()
        .map(|f| f["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["unreadable"], "{v}");
    assert_eq!(code(&o), 4, "{v}");
    let o = setpriv_nobody(&e, &["map", &e.file("private")]).unwrap();
    assert!(
        !o.status.success(),
        "map by nobody: {}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("ermission denied"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // The logs carry the logical file's mode: nobody cannot read the private data directly either.
    for l in e.logs("private", "data.") {
        let mode = std::fs::metadata(&l).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode & 0o077, 0, "{}: mode {mode:o}", l.display());
    }
    for l in e.logs("public", "data.") {
        let mode = std::fs::metadata(&l).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o644, "{}", l.display());
    }
}
