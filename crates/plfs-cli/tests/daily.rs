//! The daily-use commands (mkdir, cp, mv, rm, du, ls -R -h) through the real binary on all three
//! workloads (n-1 containers with a shadow backend, n-n plain files, 1-n packed files), checked
//! byte for byte against plain files; and the scripting contract: JSON for results and errors,
//! the exit codes, a quiet end on a closed pipe, messages that name the logical path once and
//! no backend path unless -v, progress bars only on a terminal.

mod common;

use common::{bytes, Sandbox};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

struct Env {
    sb: Sandbox,
    /// Mount points: n-1, n-n, 1-n.
    mounts: [String; 3],
}

impl std::ops::Deref for Env {
    type Target = Sandbox;
    fn deref(&self) -> &Sandbox {
        &self.sb
    }
}

impl Env {
    fn new(name: &str) -> Env {
        let dir = std::env::temp_dir().join(format!("plfs-daily-{}-{name}", std::process::id()));
        let sb = Sandbox::new(dir.clone(), &["b1", "b2", "b3", "b4", "plain"]);
        for p in [
            dir.clone(),
            dir.join("b1"),
            dir.join("b2"),
            dir.join("b3"),
            dir.join("b4"),
        ] {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let base = format!("/plfs-daily-{}-{name}", std::process::id());
        let mounts = [format!("{base}-n1"), format!("{base}-nn"), format!("{base}-1n")];
        let d = |b: &str| dir.join(b).display().to_string();
        let text = format!(
            "- global_params:\n    num_hostdirs: 5\n\
             - mount_point: {}\n  workload: n-1\n  backends:\n    - location: {}\n    - location: {}\n      type: shadow\n\
             - mount_point: {}\n  workload: n-n\n  backends:\n    - location: {}\n\
             - mount_point: {}\n  workload: 1-n\n  backends:\n    - location: {}\n",
            mounts[0],
            d("b1"),
            d("b2"),
            mounts[1],
            d("b3"),
            mounts[2],
            d("b4")
        );
        sb.write_plfsrc(&text);
        std::fs::set_permissions(&sb.cfg, std::fs::Permissions::from_mode(0o644)).unwrap();
        Env { sb, mounts }
    }

    /// Runs, expects exit `code`, and returns the JSON error object from standard error.
    fn json_err(&self, args: &[&str], code: i32) -> Value {
        let mut a = vec!["--json"];
        a.extend_from_slice(args);
        let o = self.run(&a);
        assert_eq!(
            o.status.code(),
            Some(code),
            "plfs {a:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let err = String::from_utf8_lossy(&o.stderr);
        let line = err
            .lines()
            .last()
            .unwrap_or_else(|| panic!("plfs {a:?}: nothing on stderr"));
        serde_json::from_str(line).unwrap_or_else(|e| panic!("plfs {a:?}: stderr is not JSON ({e}): {err}"))
    }

    fn plain(&self, rel: &str) -> PathBuf {
        self.dir.join("plain").join(rel)
    }
}

/// A plain tree: files of several sizes (one over the 4 MiB copy buffer), a subdirectory, an
/// empty directory and a symlink; modes 0640/0750.
fn make_tree(root: &Path) -> Vec<(String, Vec<u8>)> {
    let files = vec![
        ("a.dat".to_string(), bytes(5 * 1024 * 1024 + 17, 1)),
        ("empty".to_string(), Vec::new()),
        ("sub/b.txt".to_string(), b"hello plfs\n".to_vec()),
        ("sub/deeper/c.bin".to_string(), bytes(70_001, 3)),
    ];
    std::fs::create_dir_all(root.join("sub/deeper")).unwrap();
    std::fs::create_dir_all(root.join("emptydir")).unwrap();
    for (n, d) in &files {
        std::fs::write(root.join(n), d).unwrap();
        std::fs::set_permissions(root.join(n), std::fs::Permissions::from_mode(0o640)).unwrap();
    }
    std::fs::set_permissions(root.join("sub"), std::fs::Permissions::from_mode(0o750)).unwrap();
    std::os::unix::fs::symlink("sub/b.txt", root.join("link")).unwrap();
    files
}

/// Asserts that plain tree `b` equals plain tree `a`: same names, bytes, modes and links.
fn same_tree(a: &Path, b: &Path) {
    let mut names_a: Vec<_> = std::fs::read_dir(a).unwrap().map(|e| e.unwrap().file_name()).collect();
    let mut names_b: Vec<_> = std::fs::read_dir(b).unwrap().map(|e| e.unwrap().file_name()).collect();
    names_a.sort();
    names_b.sort();
    assert_eq!(names_a, names_b, "{} vs {}", a.display(), b.display());
    for n in names_a {
        let (pa, pb) = (a.join(&n), b.join(&n));
        let (ma, mb) = (
            std::fs::symlink_metadata(&pa).unwrap(),
            std::fs::symlink_metadata(&pb).unwrap(),
        );
        assert_eq!(ma.file_type(), mb.file_type(), "{}", pb.display());
        if ma.file_type().is_symlink() {
            assert_eq!(std::fs::read_link(&pa).unwrap(), std::fs::read_link(&pb).unwrap());
            continue;
        }
        assert_eq!(ma.mode() & 0o7777, mb.mode() & 0o7777, "mode of {}", pb.display());
        if ma.is_dir() {
            same_tree(&pa, &pb);
        } else {
            assert!(
                std::fs::read(&pa).unwrap() == std::fs::read(&pb).unwrap(),
                "bytes of {}",
                pb.display()
            );
        }
    }
}

#[test]
fn cp_mv_rm_mkdir_round_trip_on_every_workload() {
    let env = Env::new("cp");
    let src = env.plain("tree");
    let files = make_tree(&src);
    for (i, m) in env.mounts.iter().enumerate() {
        // mkdir -p makes parents, and is quiet about an existing directory.
        let d = format!("{m}/proj/run1");
        env.ok(&["mkdir", "-p", &d]);
        env.ok(&["mkdir", "-p", &d]);
        let e = env.json_err(&["mkdir", &d], 1);
        assert_eq!(e["errno"], 17, "{e}");
        assert_eq!(e["path"], d.as_str());
        let e = env.json_err(&["mkdir", &format!("{m}/nope/x")], 1);
        assert_eq!(e["errno"], 2, "{e}");
        let made = env.json(&["mkdir", "-m", "700", &format!("{m}/private")]);
        assert_eq!(made[0]["path"], format!("{m}/private").as_str());
        assert_eq!(env.json(&["stat", &format!("{m}/private")])["perm"], "0700");

        // Plain -> PLFS, recursively; a directory without -r is refused.
        let e = env.json_err(&["cp", src.to_str().unwrap(), &d], 1);
        assert_eq!(e["errno"], 21, "{e}");
        let v = env.json(&["cp", "-r", src.to_str().unwrap(), &d]);
        assert_eq!(v[0]["files"], files.len() as u64, "{v}");
        assert_eq!(v[0]["links"], 1);
        let total: usize = files.iter().map(|f| f.1.len()).sum();
        assert_eq!(v[0]["bytes"], total as u64);
        let tree = format!("{d}/tree");
        for (n, data) in &files {
            let o = env.run(&["cat", &format!("{tree}/{n}")]);
            assert!(
                o.status.success() && o.stdout == *data,
                "{tree}/{n} differs (workload {i})"
            );
        }
        // PLFS -> plain: the same tree comes back, modes and link included.
        let back = env.plain(&format!("back{i}"));
        env.ok(&["cp", "-r", &tree, back.to_str().unwrap()]);
        same_tree(&src, &back);

        // Existing targets: refused (exit 1, EEXIST, file untouched), skipped with -n, replaced with -f.
        let one = format!("{tree}/sub/b.txt");
        let other = env.plain("other.txt");
        std::fs::write(&other, b"other bytes").unwrap();
        let e = env.json_err(&["cp", other.to_str().unwrap(), &one], 1);
        assert_eq!(e["errno"], 17);
        assert!(e["error"].as_str().unwrap().contains("-f"), "{e}");
        assert_eq!(env.run(&["cat", &one]).stdout, b"hello plfs\n");
        let v = env.json(&["cp", "-n", other.to_str().unwrap(), &one]);
        assert_eq!(v[0]["skipped"], 1);
        assert_eq!(env.run(&["cat", &one]).stdout, b"hello plfs\n");
        env.ok(&["cp", "-f", other.to_str().unwrap(), &one]);
        assert_eq!(env.run(&["cat", &one]).stdout, b"other bytes");
        // Within PLFS, and onto itself.
        env.ok(&["cp", &format!("{tree}/a.dat"), &format!("{d}/a.copy")]);
        assert!(env.run(&["cat", &format!("{d}/a.copy")]).stdout == files[0].1);
        let e = env.json_err(&["cp", "-f", &format!("{d}/a.copy"), &format!("{d}/a.copy")], 1);
        assert!(e["error"].as_str().unwrap().contains("same file"), "{e}");

        // mv within the mount is a rename; into a directory keeps the name.
        env.ok(&["mv", &format!("{d}/a.copy"), &format!("{d}/a.moved")]);
        env.ok(&["mv", &format!("{d}/a.moved"), &format!("{m}/private")]);
        assert!(env.run(&["cat", &format!("{m}/private/a.moved")]).stdout == files[0].1);
        assert_eq!(env.run(&["stat", &format!("{d}/a.moved")]).status.code(), Some(1));
        // mv onto an existing file needs -f.
        env.ok(&["cp", other.to_str().unwrap(), &format!("{d}/x")]);
        assert_eq!(env.json_err(&["mv", &format!("{d}/x"), &one], 1)["errno"], 17);
        env.ok(&["mv", "-f", &format!("{d}/x"), &one]);

        // rm: files, -r trees, -f for missing names; the mount point itself is refused.
        let e = env.json_err(&["rm", &tree], 1);
        assert_eq!(e["errno"], 21);
        let v = env.json(&["rm", "-r", &tree, &format!("{m}/private")]);
        assert_eq!(v.as_array().unwrap().len(), 2);
        assert_eq!(env.json_err(&["rm", &tree], 1)["errno"], 2);
        env.ok(&["rm", "-f", &tree]);
        assert_eq!(env.json_err(&["rm", "-r", m], 1)["errno"], 16);
        let left = env.json(&["ls", "-R", m]);
        let names: Vec<&str> = left
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["proj", "run1"], "workload {i}");
    }
    // Across mount points and out to plain files, mv copies and removes the source.
    let (n1, nn) = (&env.mounts[0], &env.mounts[1]);
    env.ok(&["cp", "-r", src.to_str().unwrap(), &format!("{n1}/t")]);
    let v = env.json(&["mv", &format!("{n1}/t"), &format!("{nn}/t")]);
    assert_eq!(v[0]["how"], "copy");
    assert_eq!(env.run(&["stat", &format!("{n1}/t")]).status.code(), Some(1));
    let out = env.plain("moved-out");
    env.ok(&["mv", &format!("{nn}/t"), out.to_str().unwrap()]);
    same_tree(&src, &out);
    // Several sources need a directory target.
    let e = env.json_err(
        &[
            "cp",
            src.to_str().unwrap(),
            src.to_str().unwrap(),
            &format!("{n1}/nodir"),
        ],
        1,
    );
    assert_eq!(e["errno"], 20);
}

#[test]
fn du_reports_logical_physical_dead_and_writers() {
    let env = Env::new("du");
    let [n1, nn, n1n] = env.mounts.clone();
    // N-1 with a shadow backend: 1 MiB written, then its first 256 KiB overwritten: 1.25 MiB of
    // data stored, 1 MiB live, dead = 0.2.
    let plfs = env.plfs();
    let f = PathBuf::from(format!("{n1}/ckpt"));
    let flags = plfs_core::OpenFlags {
        write: true,
        create: true,
        ..Default::default()
    };
    let h = plfs.open(&f, flags, 0o644, 4242).unwrap();
    h.write(&bytes(1 << 20, 9), 0).unwrap();
    h.write(&bytes(256 << 10, 10), 0).unwrap();
    h.sync().unwrap();
    // While it is open, du counts one writer.
    let v = env.json(&["du", &f.display().to_string()]);
    let e = &v["paths"][0]["entries"][0];
    assert_eq!(e["writers"], 1, "{v}");
    h.close().unwrap();
    let v = env.json(&["du", &f.display().to_string()]);
    let e = &v["paths"][0]["entries"][0];
    assert_eq!(e["kind"], "file");
    assert_eq!(e["logical_bytes"], 1 << 20);
    assert_eq!(e["live_bytes"], 1 << 20);
    assert_eq!(e["physical_data_bytes"], (1 << 20) + (256 << 10));
    assert!((e["dead_ratio"].as_f64().unwrap() - 0.2).abs() < 1e-9, "{e}");
    assert_eq!(e["writers"], 0);
    // Physical bytes: every regular file of both backends (this is the only file).
    let mut sum = 0u64;
    let mut stack = vec![env.dir.join("b1"), env.dir.join("b2")];
    while let Some(d) = stack.pop() {
        for x in std::fs::read_dir(&d).unwrap() {
            let x = x.unwrap();
            let m = std::fs::symlink_metadata(x.path()).unwrap();
            if m.is_dir() {
                stack.push(x.path());
            } else {
                sum += m.len();
            }
        }
    }
    assert_eq!(e["physical_bytes"], sum, "{e}");

    // N-N: the backend file. 1-N: a packed-logs row per directory.
    let p = env.plain("p");
    std::fs::write(&p, bytes(300_000, 4)).unwrap();
    env.ok(&["cp", p.to_str().unwrap(), &format!("{nn}/p")]);
    let v = env.json(&["du", &nn]);
    let e = &v["paths"][0]["entries"][0];
    assert_eq!(
        (e["kind"].as_str().unwrap(), e["physical_bytes"].as_u64()),
        ("plain file", Some(300_000))
    );
    assert_eq!(e["dead_ratio"], 0.0);
    env.ok(&["mkdir", &format!("{n1n}/d")]);
    for k in 0..3 {
        env.ok(&["cp", p.to_str().unwrap(), &format!("{n1n}/d/f{k}")]);
    }
    env.ok(&["cp", "-f", p.to_str().unwrap(), &format!("{n1n}/d/f0")]);
    let v = env.json(&["du", &n1n]);
    let rows = v["paths"][0]["entries"].as_array().unwrap();
    let packed = rows
        .iter()
        .find(|r| r["kind"] == "packed logs")
        .expect("a packed logs row");
    assert_eq!(packed["live_bytes"], 900_000, "{v}");
    assert_eq!(packed["physical_data_bytes"], 1_200_000, "{v}");
    assert!((packed["dead_ratio"].as_f64().unwrap() - 0.25).abs() < 1e-9);
    let store: u64 = std::fs::read_dir(env.dir.join("b4/d/.plfs_small"))
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    assert_eq!(packed["physical_bytes"], store);
    assert_eq!(v["paths"][0]["logical_bytes"], 900_000);
    assert_eq!(v["paths"][0]["files"], 3);

    // Text: a header, one row per file, a total; -h uses K/M; -s only the total.
    let t = env.ok(&["du", "-h", &n1]);
    assert!(
        t.contains("logical") && t.contains("1.0M") && t.contains("20.0%"),
        "{t}"
    );
    let t = env.ok(&["du", "-s", &n1, &nn]);
    assert_eq!(t.lines().count(), 4, "{t}");
    assert!(t.lines().last().unwrap().ends_with("total"), "{t}");
}

#[test]
fn ls_recursive_and_human() {
    let env = Env::new("ls");
    let m = &env.mounts[0];
    let src = env.plain("tree");
    make_tree(&src);
    env.ok(&["cp", "-r", src.to_str().unwrap(), m]);
    let t = env.ok(&["ls", "-R", &format!("{m}/tree")]);
    let want = format!(
        "{m}/tree:\na.dat\nempty\nemptydir\nlink\nsub\n\n{m}/tree/emptydir:\n\n{m}/tree/sub:\nb.txt\ndeeper\n\n{m}/tree/sub/deeper:\nc.bin\n"
    );
    assert_eq!(t, want);
    let t = env.ok(&["ls", "-l", "-h", &format!("{m}/tree")]);
    let a = t.lines().find(|l| l.ends_with(" a.dat")).unwrap();
    assert!(a.contains(" 5.1M "), "{a}");
    assert!(t.contains("link -> sub/b.txt"), "{t}");
    let v = env.json(&["ls", "-R", &format!("{m}/tree")]);
    let paths: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert!(
        paths.contains(&format!("{m}/tree/sub/deeper/c.bin").as_str()),
        "{paths:?}"
    );
    assert!(env.ok(&["ls", "--help"]).contains("--human-readable"));
}

/// Every command prints JSON under --json, and its errors as JSON on stderr.
#[test]
fn json_for_every_command_and_error() {
    let env = Env::new("json");
    let m = &env.mounts[0];
    let p = env.plain("f");
    std::fs::write(&p, bytes(10_000, 2)).unwrap();
    let f = format!("{m}/f");
    let cases: Vec<Vec<String>> = vec![
        vec!["import".into(), p.display().to_string(), f.clone()],
        vec!["export".into(), f.clone(), env.plain("g").display().to_string()],
        vec!["ls".into(), m.clone()],
        vec!["stat".into(), f.clone()],
        vec!["map".into(), f.clone()],
        vec!["query".into(), f.clone()],
        vec!["flatten".into(), f.clone()],
        vec!["version".into(), f.clone()],
        vec!["check-config".into()],
        vec!["du".into(), f.clone()],
        vec!["verify".into(), f.clone()],
        vec!["fsck".into(), f.clone()],
        vec!["mkdir".into(), format!("{m}/d")],
        vec!["cp".into(), f.clone(), format!("{m}/d/")],
        vec!["mv".into(), format!("{m}/d/f"), format!("{m}/d/f2")],
        vec!["rm".into(), "-r".into(), format!("{m}/d")],
        vec![
            "demo".into(),
            "-n".into(),
            "2".into(),
            "-r".into(),
            "3".into(),
            "-b".into(),
            "1K".into(),
            "--baseline-dir".into(),
            env.dir.join("plain").display().to_string(),
        ],
    ];
    for c in &cases {
        let a: Vec<&str> = c.iter().map(String::as_str).collect();
        let v = env.json(&a);
        assert!(v.is_object() || v.is_array(), "{a:?}: {v}");
    }
    // Errors: one JSON object on stderr with the path and the errno; usage errors exit 2.
    let missing = format!("{m}/missing");
    for c in ["stat", "map", "cat", "du", "export", "flatten", "query", "version"] {
        let mut a = vec![c, missing.as_str()];
        if c == "export" {
            a.push("/tmp");
        }
        let e = env.json_err(&a, 1);
        assert_eq!(e["errno"], 2, "{c}: {e}");
        assert_eq!(e["path"], missing.as_str(), "{c}: {e}");
        assert_eq!(e["exit_code"], 1);
        let msg = e["error"].as_str().unwrap();
        assert_eq!(msg.matches(missing.as_str()).count(), 1, "{c}: path named once: {msg}");
    }
    let e = env.json_err(&["no-such-command"], 2);
    assert_eq!(e["exit_code"], 2);
    let e = env.json_err(&["fsck", &missing], 8);
    assert_eq!(e["exit_code"], 8);
    // Text mode: "cannot stat X: No such file or directory", the path once.
    let o = env.run(&["stat", &missing]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        err.trim(),
        format!("plfs: error: cannot stat {missing}: No such file or directory")
    );
}

/// Standard output closed early (`plfs map F | head -1`): exit 0, nothing on stderr.
#[test]
fn closed_pipe_ends_quietly() {
    let env = Env::new("pipe");
    let plfs = env.plfs();
    let f = PathBuf::from(format!("{}/many", env.mounts[0]));
    let flags = plfs_core::OpenFlags {
        write: true,
        create: true,
        ..Default::default()
    };
    let h = plfs.open(&f, flags, 0o644, 1).unwrap();
    // 20,000 separate extents: far more map output than a pipe holds.
    for i in 0..20_000u64 {
        h.write(b"0123456789", i * 20).unwrap();
    }
    h.close().unwrap();
    let fs = f.display().to_string();
    for args in [
        vec!["map", fs.as_str()],
        vec!["cat", fs.as_str()],
        vec!["--json", "map", fs.as_str()],
    ] {
        let mut c = env
            .cmd()
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut r = BufReader::new(c.stdout.take().unwrap());
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        drop(r);
        let o = c.wait_with_output().unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(o.stderr.is_empty(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
    }
}

fn nobody(env: &Env, args: &[&str]) -> Option<Output> {
    let root = std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
    if !root {
        return None;
    }
    Some(
        Command::new("setpriv")
            .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_plfs"))
            .args(args)
            .env("PLFSRC", &env.cfg)
            .env("PLFS_LOG", "off")
            .env("HOME", &env.dir)
            .output()
            .expect("setpriv (util-linux) must be installed"),
    )
}

/// Permission errors: `map` of an unreadable file fails with EACCES (it printed "0 extents");
/// a failed create names the logical path and no backend or `.plfstmp` path unless -v.
#[test]
fn permission_errors_name_the_logical_path_only() {
    let env = Env::new("perm");
    let m = &env.mounts[0];
    let p = env.plain("secret");
    std::fs::write(&p, b"top secret").unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    let f = format!("{m}/secret");
    env.ok(&["import", p.to_str().unwrap(), &f]);
    // Nobody must be able to run the binary for this test to mean anything.
    let Some(o) = nobody(&env, &["version"]) else {
        eprintln!("skipped: needs root (to run as nobody)");
        return;
    };
    assert!(
        o.status.success(),
        "nobody cannot run plfs: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = nobody(&env, &["--json", "map", &f]).unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", String::from_utf8_lossy(&o.stdout));
    let e: Value = serde_json::from_str(String::from_utf8_lossy(&o.stderr).trim()).unwrap();
    assert_eq!(e["errno"], 13, "{e}");
    assert!(o.stdout.is_empty());
    let o = nobody(&env, &["du", &f]).unwrap();
    assert_eq!(o.status.code(), Some(1), "du of an unreadable file");

    // import into a root-owned directory: EACCES creating the container.
    env.ok(&["mkdir", "-m", "755", &format!("{m}/rootonly")]);
    let pub_src = env.dir.join("pub");
    std::fs::write(&pub_src, b"x").unwrap();
    std::fs::set_permissions(&pub_src, std::fs::Permissions::from_mode(0o644)).unwrap();
    let target = format!("{m}/rootonly/x");
    let backend = env.dir.join("b1").display().to_string();
    for args in [
        vec!["import", pub_src.to_str().unwrap(), &target],
        vec!["mkdir", &target],
    ] {
        let o = nobody(&env, &args).unwrap();
        assert_eq!(o.status.code(), Some(1));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("Permission denied") && err.contains(&target),
            "{args:?}: {err}"
        );
        assert_eq!(err.matches(target.as_str()).count(), 1, "{err}");
        assert!(
            !err.contains(".plfstmp") && !err.contains(&backend),
            "backend path leaked: {err}"
        );
        let mut v = vec!["-v"];
        v.extend_from_slice(&args);
        let o = nobody(&env, &v).unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(&backend), "-v names the backend file: {err}");
    }
}

/// A progress bar on a terminal (through `script`, which gives the command a pty), none when
/// standard error is a pipe.
#[test]
fn progress_bar_only_on_a_terminal() {
    let env = Env::new("progress");
    let big = env.plain("big");
    std::fs::write(&big, bytes(24 << 20, 5)).unwrap();
    let dst = format!("{}/big", env.mounts[0]);
    let o = env.run(&["import", big.to_str().unwrap(), &dst]);
    assert!(o.status.success());
    assert!(o.stderr.is_empty(), "{}", String::from_utf8_lossy(&o.stderr));
    let line = format!(
        "{} import -f {} {dst}",
        env!("CARGO_BIN_EXE_plfs"),
        big.to_str().unwrap()
    );
    let o = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .env("PLFSRC", &env.cfg)
        .env("PLFS_LOG", "off")
        .output()
        .expect("script (util-linux) must be installed");
    assert!(
        o.status.success(),
        "script: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let tty = String::from_utf8_lossy(&o.stdout);
    assert!(tty.contains("MiB/24.00 MiB"), "no progress bar on a terminal: {tty:?}");
    assert!(env.run(&["cat", &dst]).stdout == std::fs::read(&big).unwrap());
}

/// Issue 25, item 11 (in part): `plfs cp -p` keeps the times (and the mode, as every copy does),
/// on every workload and in both directions; without `-p` a copy is new.
#[test]
fn cp_p_keeps_times() {
    let env = Env::new("cp-p");
    let src = env.plain("old.dat");
    let data = bytes(3 << 20, 11);
    std::fs::write(&src, &data).unwrap();
    std::fs::set_permissions(&src, std::fs::Permissions::from_mode(0o640)).unwrap();
    let when = std::time::UNIX_EPOCH + std::time::Duration::new(1_577_923_200, 123_000_000);
    std::fs::File::options()
        .write(true)
        .open(&src)
        .unwrap()
        .set_times(std::fs::FileTimes::new().set_accessed(when).set_modified(when))
        .unwrap();
    let p = env.plfs();
    for (i, m) in env.mounts.iter().enumerate() {
        let dst = format!("{m}/kept.dat");
        env.ok(&["cp", "-p", src.to_str().unwrap(), &dst]);
        let st = p.stat(Path::new(&dst)).unwrap();
        assert_eq!(
            (st.mtime_ns, st.mode & 0o7777),
            (1_577_923_200_123_000_000, 0o640),
            "{dst}"
        );
        // And back out.
        let back = env.plain(&format!("back{i}"));
        env.ok(&["cp", "-p", &dst, back.to_str().unwrap()]);
        let md = std::fs::metadata(&back).unwrap();
        assert_eq!(
            (md.mtime(), md.mtime_nsec(), md.mode() & 0o7777),
            (1_577_923_200, 123_000_000, 0o640)
        );
        assert!(std::fs::read(&back).unwrap() == data);
        // Without -p the copy is new.
        env.ok(&["cp", src.to_str().unwrap(), &format!("{m}/new.dat")]);
        assert!(p.stat(Path::new(&format!("{m}/new.dat"))).unwrap().mtime_ns > 1_700_000_000_000_000_000);
    }
}

/// `plfs cp` is atomic (issue 25, item 11): a copy that fails part-way (an I/O error injected at
/// the second backend write) leaves neither a partial file under the name, which a later `cp -n`
/// would skip as done, nor its temporary file, and a file it was replacing stays as it was; a
/// copy that succeeds replaces the old file whole, on every mount.
#[test]
fn cp_is_atomic() {
    let env = Env::new("cp-atomic");
    let src = env.plain("big.dat");
    let data = bytes(12 << 20, 12); // three of the copy's 4 MiB writes
    std::fs::write(&src, &data).unwrap();
    let old = env.plain("old.dat");
    std::fs::write(&old, b"the old file").unwrap();
    let p = env.plfs();
    for m in &env.mounts {
        for (dst, existed) in [(format!("{m}/new.dat"), false), (format!("{m}/old.dat"), true)] {
            if existed {
                env.ok(&["cp", old.to_str().unwrap(), &dst]);
            }
            let o = env
                .cmd()
                .env("PLFS_FAILPOINTS", "sys::pwrite_all=EIO@1")
                .args(["cp", src.to_str().unwrap(), &dst])
                .output()
                .unwrap();
            assert_eq!(
                o.status.code(),
                Some(1),
                "{dst}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(err.contains(&dst) && !err.contains(".plfs-cp."), "{err}");
            let names: Vec<String> = p
                .readdir(Path::new(m))
                .unwrap()
                .into_iter()
                .map(|e| e.name.to_string_lossy().into_owned())
                .collect();
            assert!(!names.iter().any(|n| n.starts_with(".plfs-cp.")), "{m}: {names:?}");
            let got = env.plain("got");
            if existed {
                env.ok(&["cp", "-f", &dst, got.to_str().unwrap()]);
                assert_eq!(std::fs::read(&got).unwrap(), b"the old file", "{dst}");
            } else {
                assert!(p.stat(Path::new(&dst)).is_err(), "{dst}: a partial copy is there");
            }
            env.ok(&["cp", "-f", src.to_str().unwrap(), &dst]);
            env.ok(&["cp", "-f", &dst, got.to_str().unwrap()]);
            assert!(std::fs::read(&got).unwrap() == data, "{dst}");
        }
    }
}
