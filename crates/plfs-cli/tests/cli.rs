//! Integration tests of the `plfs` binary: each test runs the real executable with `PLFSRC`
//! pointing to a plfsrc in its own temporary directory (two backends, a private mount point).

mod common;

use common::{bytes, test_root, Sandbox};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Command;

/// A temporary directory with backends and a plfsrc; removed on drop.
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
    fn new(name: &str) -> Env {
        let dir = test_root().join(format!("plfs-cli-test-{}-{name}", std::process::id()));
        let sb = Sandbox::new(dir, &["b1", "b2", "plain"]);
        let mount = PathBuf::from(format!("/plfs-cli-test-{}-{name}", std::process::id()));
        sb.write_plfsrc(&format!(
            "- global_params:\n    num_hostdirs: 7\n- mount_point: {}\n  workload: n-1\n  backends:\n    - location: {}\n    - location: {}\n",
            mount.display(),
            sb.dir.join("b1").display(),
            sb.dir.join("b2").display()
        ));
        Env { sb, mount }
    }

    fn logical(&self, name: &str) -> String {
        self.mount.join(name).display().to_string()
    }
}

/// Writes a plain file with mode 0640 and imports it as `name`; returns its bytes.
fn import(env: &Env, name: &str, len: usize) -> Vec<u8> {
    let data = bytes(len, len as u64 + 7);
    let src = env.dir.join("plain").join(name);
    std::fs::write(&src, &data).unwrap();
    std::fs::set_permissions(&src, std::fs::Permissions::from_mode(0o640)).unwrap();
    env.ok(&["import", src.to_str().unwrap(), &env.logical(name)]);
    data
}

#[test]
fn import_export_round_trip_is_byte_exact_and_keeps_the_mode() {
    let env = Env::new("roundtrip");
    // Not a multiple of the 4 MiB copy buffer, so the last piece is partial.
    let data = bytes((9 << 20) + 12345, 1);
    let src = env.dir.join("plain/src.bin");
    std::fs::write(&src, &data).unwrap();
    std::fs::set_permissions(&src, std::fs::Permissions::from_mode(0o604)).unwrap();
    // DST is the mount point (a directory): the file keeps its name.
    env.ok(&["import", src.to_str().unwrap(), env.mount.to_str().unwrap()]);
    let dst = env.dir.join("plain/out.bin");
    env.ok(&["export", &env.logical("src.bin"), dst.to_str().unwrap()]);
    let back = std::fs::read(&dst).unwrap();
    assert_eq!(back.len(), data.len());
    assert!(back == data, "exported bytes differ from the imported ones");
    assert_eq!(std::fs::metadata(&dst).unwrap().permissions().mode() & 0o7777, 0o604);
    let st = env.ok_json(&["stat", "--json", &env.logical("src.bin")]);
    assert_eq!(st["perm"], "0604");
    // cat streams the same bytes.
    let o = env.run(&["cat", &env.logical("src.bin")]);
    assert!(o.status.success());
    assert!(o.stdout == data, "cat output differs");
    // Export into a directory; re-import over an existing file truncates it. Both refuse to
    // overwrite an existing file unless -f is given (issue 16: no silent overwrite).
    std::fs::write(env.dir.join("plain/src.bin"), b"old").unwrap();
    let plain_dir = env.dir.join("plain");
    let o = env.run(&["export", &env.logical("src.bin"), plain_dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("already exists"));
    assert_eq!(std::fs::read(env.dir.join("plain/src.bin")).unwrap(), b"old");
    env.ok(&["export", "-f", &env.logical("src.bin"), plain_dir.to_str().unwrap()]);
    assert!(std::fs::read(env.dir.join("plain/src.bin")).unwrap() == data);
    let small = env.dir.join("plain/small");
    std::fs::write(&small, b"short").unwrap();
    let o = env.run(&["import", small.to_str().unwrap(), &env.logical("src.bin")]);
    assert_eq!(o.status.code(), Some(1));
    assert!(env.run(&["cat", &env.logical("src.bin")]).stdout == data);
    env.ok(&["import", "-f", small.to_str().unwrap(), &env.logical("src.bin")]);
    assert_eq!(env.run(&["cat", &env.logical("src.bin")]).stdout, b"short");
}

#[test]
fn ls_and_stat_text_and_json() {
    let env = Env::new("ls");
    import(&env, "a.dat", 1000);
    import(&env, "b.dat", 5);
    let names = env.ok(&["ls"]);
    assert_eq!(names, "a.dat\nb.dat\n");
    let long = env.ok(&["ls", "-l", env.mount.to_str().unwrap()]);
    let line = long
        .lines()
        .find(|l| l.ends_with(" a.dat"))
        .unwrap_or_else(|| panic!("{long}"));
    assert!(line.starts_with("-rw-r----- "), "{line}");
    assert!(line.contains(" 1000 "), "{line}");
    let v = env.ok_json(&["ls", "--json"]);
    let arr = v.as_array().unwrap();
    assert_eq!(arr.len(), 2);
    assert_eq!(arr[0]["name"], "a.dat");
    assert_eq!(arr[0]["size"], 1000);
    assert_eq!(arr[1]["size"], 5);
    assert_eq!(arr[1]["kind"], "file");
    let st = env.ok_json(&["stat", "--json", &env.logical("a.dat")]);
    assert_eq!(st["size"], 1000);
    assert_eq!(st["kind"], "file");
    assert_eq!(st["mode"], 0o100640);
    assert_eq!(st["blocks"], 2);
    for k in [
        "uid", "gid", "atime_ns", "mtime_ns", "ctime_ns", "ino", "dev", "nlink", "blksize",
    ] {
        assert!(st[k].is_number(), "stat --json lacks {k}: {st}");
    }
    let text = env.ok(&["stat", &env.logical("a.dat")]);
    assert!(text.contains("size: 1000") && text.contains("-rw-r-----"), "{text}");
    // Errors name the path and exit 1; usage errors exit 2.
    let o = env.run(&["stat", &env.logical("missing")]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains(&env.logical("missing")));
    assert_eq!(env.run(&["stat"]).status.code(), Some(2));
    assert_eq!(env.run(&["no-such-command"]).status.code(), Some(2));
    let o = env.run(&["ls", "/definitely/not/plfs"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not under a PLFS mount point"));
}

#[test]
fn map_query_flatten_and_version() {
    let env = Env::new("tools");
    let data = import(&env, "f", (4 << 20) + 100);
    let f = env.logical("f");
    let map = env.ok_json(&["map", "--json", &f]);
    let ext = map.as_array().unwrap();
    assert!(!ext.is_empty());
    // The extents tile [0, size) in order, and each one's bytes are where map says.
    let mut next = 0u64;
    for e in ext {
        assert_eq!(e["logical"].as_u64().unwrap(), next);
        let len = e["length"].as_u64().unwrap();
        let log = std::fs::read(e["data_log"].as_str().unwrap()).unwrap();
        let phys = e["physical"].as_u64().unwrap() as usize;
        assert!(log[phys..phys + len as usize] == data[next as usize..(next + len) as usize]);
        assert_eq!(e["writer_id"].as_str().unwrap().len(), 16);
        next += len;
    }
    assert_eq!(next, data.len() as u64);
    let text = env.ok(&["map", &f]);
    assert!(text.contains(&format!("{} extents", ext.len())), "{text}");

    let q = env.ok_json(&["query", "--json", &f]);
    let kinds: Vec<&str> = q
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["kind"].as_str().unwrap())
        .collect();
    for k in ["marker", "data log", "index log", "hostdir"] {
        assert!(kinds.contains(&k), "query lacks a {k}: {kinds:?}");
    }
    let data_log = q.as_array().unwrap().iter().find(|p| p["kind"] == "data log").unwrap();
    // The header, then each write's frame (32 bytes) and bytes: one extent per write, the frames
    // keeping one write's bytes from touching the next's in the data log.
    assert_eq!(
        data_log["size"].as_u64().unwrap(),
        64 + data.len() as u64 + 32 * ext.len() as u64
    );
    let dl = data_log["path"].as_str().unwrap();
    // Reverse query, forced and auto-detected.
    assert_eq!(env.ok(&["query", "--reverse", dl]).trim(), f);
    assert_eq!(env.ok(&["query", dl]).trim(), f);

    let out = env.ok(&["flatten", &f]);
    assert!(out.contains("flattened") && out.contains("from 1 data log\n"), "{out}");
    let q = env.ok_json(&["query", "--json", &f]);
    assert!(q.as_array().unwrap().iter().any(|p| p["kind"] == "flat index"), "{q}");
    // Reading through the flattened index gives the same bytes.
    assert!(env.run(&["cat", &f]).stdout == data);

    let v = env.ok(&["version"]);
    assert!(
        v.contains(env!("CARGO_PKG_VERSION")) && v.contains("format version 3"),
        "{v}"
    );
    let v = env.ok_json(&["version", "--json", &f]);
    assert_eq!(v["file_format_version"], 3);
    assert_eq!(v["format_version"], 3);
    assert_eq!(env.run(&["map", &env.logical("nope")]).status.code(), Some(1));
}

#[test]
fn check_config_reports_backends_and_errors() {
    let env = Env::new("config");
    let out = env.ok(&["check-config"]);
    assert!(
        out.contains(&env.cfg.display().to_string()) && out.contains(&env.mount.display().to_string()),
        "{out}"
    );
    assert!(
        out.contains("num_hostdirs: 7") && out.contains("configuration OK"),
        "{out}"
    );
    let v = env.ok_json(&["check-config", "--json"]);
    assert_eq!(v["ok"], true);
    assert_eq!(v["mounts"][0]["backends"].as_array().unwrap().len(), 2);

    // --probe tries every feature on every backend, in a scratch directory it removes again.
    let v = env.ok_json(&["check-config", "--json", "--probe"]);
    let probes = v["probes"].as_array().unwrap();
    assert_eq!(probes.len(), 2, "{v}");
    let features: Vec<&str> = probes[0]["features"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["feature"].as_str().unwrap())
        .collect();
    for want in [
        "renameat2 RENAME_NOREPLACE",
        "renameat2 RENAME_EXCHANGE",
        "flock on a directory",
        "fsync of a directory",
        "openat2 RESOLVE_NO_SYMLINKS",
    ] {
        assert!(features.contains(&want), "{want} missing from {features:?}");
    }
    assert!(probes[0]["features"]
        .as_array()
        .unwrap()
        .iter()
        .all(|f| f["supported"].is_boolean()));
    for b in ["b1", "b2"] {
        let left: Vec<_> = std::fs::read_dir(env.dir.join(b)).unwrap().collect();
        assert!(left.is_empty(), "the probe left {left:?} in {b}");
    }
    let text = env.ok(&["check-config", "--probe"]);
    assert!(
        text.contains("probe of") && text.contains("renameat2 RENAME_NOREPLACE"),
        "{text}"
    );

    // A missing backend is an error, and --mkdir creates it.
    std::fs::remove_dir(env.dir.join("b2")).unwrap();
    let o = env.run(&["check-config"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&env.dir.join("b2").display().to_string()) && err.contains("does not exist"),
        "{err}"
    );
    env.ok(&["check-config", "--mkdir"]);
    assert!(env.dir.join("b2").is_dir());

    // A bad key: the message names the file, the line and the key.
    let bad = env.dir.join("bad.plfsrc");
    std::fs::write(
        &bad,
        "- mount_point: /x\n  backends:\n    - location: /tmp\n  colour: blue\n",
    )
    .unwrap();
    let o = env.run(&["--config", bad.to_str().unwrap(), "check-config"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&bad.display().to_string()) && err.contains("line 4") && err.contains("colour"),
        "{err}"
    );
    // The same through $PLFSRC.
    let o = Command::new(env!("CARGO_BIN_EXE_plfs"))
        .env("PLFSRC", &bad)
        .arg("check-config")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("colour"));
}

#[test]
fn demo_round_trip_verifies_and_cleans_up() {
    let env = Env::new("demo");
    let bdir = env.dir.join("plain");
    let out = env.ok(&[
        "demo",
        "--procs",
        "3",
        "--records",
        "20",
        "--record-size",
        "10000",
        "--baseline-dir",
        bdir.to_str().unwrap(),
    ]);
    assert!(
        out.contains("VERIFIED: N-1 round trip of 600000 bytes by 3 writers, read back by 2 readers"),
        "{out}"
    );
    assert!(
        out.contains("MB/s") && out.contains("records/s") && out.contains("data log"),
        "{out}"
    );
    // Both the logical file and the baseline are gone.
    assert_eq!(env.ok(&["ls"]), "");
    assert_eq!(std::fs::read_dir(&bdir).unwrap().count(), 0);
}

/// Corrupting one byte of the PLFS data (found through `plfs map`) or of the baseline makes the
/// demo's verification fail at exactly that offset.
#[test]
fn demo_verification_detects_a_corrupt_byte() {
    let env = Env::new("corrupt");
    let bdir = env.dir.join("plain");
    let f = env.logical("d");
    let out = env.ok(&[
        "demo",
        "-n",
        "2",
        "-r",
        "10",
        "-b",
        "1K",
        "--keep",
        "--file",
        &f,
        "--baseline-dir",
        bdir.to_str().unwrap(),
    ]);
    assert!(
        out.contains("VERIFIED: N-1 round trip of 20480 bytes by 2 writers, read back by 3 readers"),
        "{out}"
    );
    let worker = |target: &str, path: &str| {
        env.run(&[
            "demo-worker",
            "--mode",
            "read",
            "--target",
            target,
            "--path",
            path,
            "--rank",
            "0",
            "--nprocs",
            "1",
            "--total",
            "20480",
        ])
    };
    assert!(worker("plfs", &f).status.success());

    // Logical byte 5000 lives in the extent that covers it.
    let map = env.ok_json(&["map", "--json", &f]);
    let e = map.as_array().unwrap().iter().find(|e| {
        let (l, n) = (e["logical"].as_u64().unwrap(), e["length"].as_u64().unwrap());
        l <= 5000 && 5000 < l + n
    });
    let e = e.expect("an extent covers offset 5000");
    let at = e["physical"].as_u64().unwrap() + 5000 - e["logical"].as_u64().unwrap();
    let log = e["data_log"].as_str().unwrap();
    let mut b = std::fs::read(log).unwrap();
    b[at as usize] ^= 0x5a;
    std::fs::write(log, &b).unwrap();
    let o = worker("plfs", &f);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("MISMATCH") && err.contains("at offset 5000"), "{err}");

    let plain = std::fs::read_dir(&bdir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
        .join("shared.dat");
    let p = plain.to_str().unwrap();
    assert!(worker("plain", p).status.success());
    let mut b = std::fs::read(&plain).unwrap();
    b[20479] ^= 1;
    std::fs::write(&plain, &b).unwrap();
    let err = String::from_utf8_lossy(&worker("plain", p).stderr).into_owned();
    assert!(err.contains("MISMATCH") && err.contains("at offset 20479"), "{err}");
}

#[test]
fn help_everywhere() {
    let env = Env::new("help");
    for cmd in [
        "check-config",
        "map",
        "query",
        "flatten",
        "version",
        "ls",
        "stat",
        "cat",
        "import",
        "export",
        "demo",
    ] {
        let o = env.run(&[cmd, "--help"]);
        assert!(o.status.success(), "{cmd} --help");
        assert!(String::from_utf8_lossy(&o.stdout).contains("Usage: plfs"), "{cmd}");
    }
}

/// `make demo` runs `plfs demo` with no plfsrc at all: the zero-config default.
#[test]
fn demo_runs_on_the_zero_config_default() {
    if std::path::Path::new("/etc/plfsrc").exists() {
        eprintln!("skipped: /etc/plfsrc exists, so the zero-config default is not in use");
        return;
    }
    let env = Env::new("zero");
    let user = format!("clitest{}", std::process::id());
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_plfs"))
            .env_remove("PLFSRC")
            .env_remove("XDG_DATA_HOME")
            .env("HOME", &env.dir)
            .env("USER", &user)
            .args(args)
            .output()
            .unwrap()
    };
    let o = run(&["check-config"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success() && out.contains("zero-config default"), "{out}");
    assert!(out.contains(&format!("/tmp/plfs-{user}")), "{out}");
    let o = run(&["demo", "--records", "5", "--record-size", "3000"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}\n{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.contains("configuration: zero-config default"), "{out}");
    assert!(
        out.contains("VERIFIED: N-1 round trip of 60000 bytes by 4 writers, read back by 3 readers"),
        "{out}"
    );
    // The store was created under $HOME, and the demo left nothing behind in it.
    let store = env.dir.join(".local/share/plfs/store");
    assert!(store.is_dir());
    let left: Vec<_> = std::fs::read_dir(&store)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.iter().all(|n| n.to_string_lossy().starts_with('.')), "{left:?}");
    let parent: Vec<_> = std::fs::read_dir(store.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(parent, vec![std::ffi::OsString::from("store")]);
}

#[test]
fn counts_of_one_are_singular() {
    let env = Env::new("singular");
    let src = env.dir.join("plain/tree");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("only"), b"x").unwrap();
    let out = env.ok(&["cp", "-r", src.to_str().unwrap(), &env.logical("tree")]);
    assert!(out.contains("(1 file, 1 directory, 1 byte)"), "{out}");
    let map = env.ok(&["map", &env.logical("tree/only")]);
    assert!(
        map.starts_with(&format!("# {}: 1 extent\n", env.logical("tree/only"))),
        "{map}"
    );
    let du = env.ok(&["du", &env.logical("tree")]);
    assert!(du.contains("(total, 1 file)"), "{du}");
}
