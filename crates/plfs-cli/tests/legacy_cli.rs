//! The `plfs` binary on containers written by the original PLFS 2.5.1
//! (tests/fixtures/plfs-2.5.1-containers.tar.gz, extracted at test time): `cat` is byte-exact
//! against each `.expected`, `stat`/`ls -l` show the format and the sizes from the meta
//! droppings (also as JSON), `map` shows the merged index, `du` measures them, `fsck` reports the
//! containers as legacy, a write is refused naming `plfs upgrade`, and `plfs upgrade` converts
//! them in place, also on a backend without `RENAME_EXCHANGE` (`PLFS_CAPS_DISABLE=exchange`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const FIXTURES: [&str; 4] = ["n1_strided", "n1_flat", "n1_holes", "empty"];

/// Unpacks tests/fixtures/`tarball` into `dir` (emptied first).
fn unpack(tarball: &str, dir: &Path) {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).unwrap();
    let tarball = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(tarball);
    let st = Command::new("tar")
        .arg("xzf")
        .arg(&tarball)
        .arg("-C")
        .arg(dir)
        .status()
        .unwrap();
    assert!(st.success(), "tar xzf {}", tarball.display());
}

struct Env {
    dir: PathBuf,
    cfg: PathBuf,
    mount: PathBuf,
}

impl Env {
    fn new(name: &str) -> Env {
        let dir = std::env::temp_dir().join(format!("plfs-cli-legacy-{}-{name}", std::process::id()));
        unpack("plfs-2.5.1-containers.tar.gz", &dir);
        let mount = PathBuf::from(format!("/plfs-cli-legacy-{}-{name}", std::process::id()));
        let cfg = dir.join("plfsrc");
        let text = format!(
            "- mount_point: {}\n  workload: n-1\n  backends:\n    - location: {}\n",
            mount.display(),
            dir.join("store").display()
        );
        std::fs::write(&cfg, text).unwrap();
        Env { dir, cfg, mount }
    }

    fn run(&self, args: &[&str]) -> Output {
        self.run_env(args, &[])
    }

    fn run_env(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut c = Command::new(env!("CARGO_BIN_EXE_plfs"));
        c.env("PLFSRC", &self.cfg).env("HOME", &self.dir).env("PLFS_LOG", "off");
        for (k, v) in env {
            c.env(k, v);
        }
        c.args(args).output().expect("running plfs")
    }

    fn ok(&self, args: &[&str]) -> Vec<u8> {
        let o = self.run(args);
        assert!(
            o.status.success(),
            "plfs {args:?} failed: {}\nstdout: {}",
            String::from_utf8_lossy(&o.stderr),
            String::from_utf8_lossy(&o.stdout)
        );
        o.stdout
    }

    fn text(&self, args: &[&str]) -> String {
        String::from_utf8(self.ok(args)).unwrap()
    }

    fn logical(&self, name: &str) -> String {
        self.mount.join(name).display().to_string()
    }

    fn expected(&self, name: &str) -> Vec<u8> {
        std::fs::read(self.dir.join(format!("{name}.expected"))).unwrap()
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn cat_stat_ls_map_fsck_on_plfs_2_5_1_containers() {
    let e = Env::new("read");
    for name in FIXTURES {
        let f = e.logical(name);
        assert!(e.ok(&["cat", &f]) == e.expected(name), "plfs cat {name}");
        let st = e.text(&["stat", &f]);
        assert!(st.contains("  kind: file"), "{st}");
        assert!(st.contains("format: plfs-2.5.1 (legacy, read-only)"), "{st}");
        assert!(st.contains(&format!("  size: {}\n", e.expected(name).len())), "{st}");
        let v = e.text(&["version", &f]);
        assert!(v.contains("written by PLFS 2.5.1 (legacy, read-only"), "{v}");
        let j: serde_json::Value = serde_json::from_slice(&e.ok(&["--json", "stat", &f])).unwrap();
        assert_eq!(j["format"], "plfs-2.5.1 (legacy, read-only)", "{j}");
        assert_eq!(j["legacy"], true, "{j}");
        assert_eq!(j["size"], e.expected(name).len() as u64, "{j}");
    }
    let ls = e.text(&["ls", "-l", &e.mount.display().to_string()]);
    for name in FIXTURES {
        let line = ls
            .lines()
            .find(|l| l.ends_with(&format!(" {name}  [plfs-2.5.1 (legacy, read-only)]")));
        let line = line.unwrap_or_else(|| panic!("{name} not listed as a legacy file:\n{ls}"));
        assert!(line.starts_with("-rw-------"), "a file, not a directory: {line}");
        assert!(line.contains(&format!(" {} ", e.expected(name).len())), "{line}");
    }
    let map = e.text(&["map", &e.logical("n1_holes")]);
    assert!(map.contains("dropping.data."), "{map}");
    let extents: u64 = map
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap())
        .sum();
    // n1_holes: 6 records of 4099 bytes, 1000 of 'T' and 50 of 'U' overlapping one of them.
    assert_eq!(extents, 6 * 4099 + 1000);
    let fsck = e.run(&["fsck", &e.mount.display().to_string()]);
    let out = String::from_utf8_lossy(&fsck.stdout);
    assert_eq!(fsck.status.code(), Some(0), "{out}");
    assert!(out.contains("4 containers (4 written by PLFS 2.x, read-only)"), "{out}");
    assert_eq!(out.matches("legacy-container").count(), 4, "{out}");
    let j: serde_json::Value =
        serde_json::from_slice(&e.run(&["--json", "fsck", &e.mount.display().to_string()]).stdout).unwrap();
    assert_eq!(
        (j["containers"].as_u64(), j["legacy"].as_u64()),
        (Some(4), Some(4)),
        "{j}"
    );
    // du: the logical size, and the live bytes of the merged index.
    let j: serde_json::Value = serde_json::from_slice(&e.ok(&["--json", "du", &e.logical("n1_holes")])).unwrap();
    let row = &j["paths"][0]["entries"][0];
    assert_eq!(row["kind"], "legacy file", "{j}");
    assert_eq!(row["logical_bytes"], e.expected("n1_holes").len() as u64, "{j}");
    assert_eq!(row["live_bytes"], 6 * 4099 + 1000, "{j}");
    assert!(
        row["physical_bytes"].as_u64().unwrap() > row["physical_data_bytes"].as_u64().unwrap(),
        "{j}"
    );
    // The physical files, the access file and version tag included.
    let q = e.text(&["query", &e.logical("n1_flat")]);
    for kind in [
        "legacy container",
        "access file",
        "version tag",
        "flat index",
        "index log",
        "data log",
    ] {
        assert!(q.contains(kind), "{kind}: {q}");
    }
}

#[test]
fn writes_refused_and_upgrade_converts() {
    let e = Env::new("upgrade");
    let f = e.logical("n1_flat");
    let src = e.dir.join("src");
    std::fs::write(&src, b"new data").unwrap();
    let o = e.run(&["import", "-f", src.to_str().unwrap(), &f]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("written by PLFS 2.5") && err.contains(&format!("run `plfs upgrade {f}`")),
        "{err}"
    );
    let ro = e.run(&["upgrade", &e.logical("nothing-here")]);
    assert!(!ro.status.success(), "a missing file");
    let out = e.text(&["upgrade", &e.mount.display().to_string()]);
    assert_eq!(out.matches("upgraded to format v2").count(), 4, "{out}");
    for name in FIXTURES {
        let f = e.logical(name);
        assert!(e.ok(&["cat", &f]) == e.expected(name), "plfs cat {name} after upgrade");
        let st = e.text(&["stat", &f]);
        assert!(st.contains("format: plfs v2 (N-1 container)"), "{st}");
    }
    e.ok(&["import", "-f", src.to_str().unwrap(), &f]);
    assert_eq!(e.ok(&["cat", &f]), b"new data");
    let o = e.run(&["upgrade", &f]);
    assert!(!o.status.success(), "upgrading a converted file is an error");
    let fsck = e.text(&["fsck", &e.mount.display().to_string()]);
    assert!(fsck.contains("4 containers, "), "{fsck}");
    let out = e.text(&["upgrade", &e.mount.display().to_string()]);
    assert!(out.contains("no files written by PLFS 2.x found"), "{out}");
}

/// On a backend without `RENAME_EXCHANGE` the swap uses the rename fallback; the result is the
/// same, and nothing is left behind.
#[test]
fn upgrade_without_rename_exchange() {
    let e = Env::new("noexchange");
    let o = e.run_env(
        &["--json", "upgrade", &e.mount.display().to_string()],
        &[("PLFS_CAPS_DISABLE", "exchange")],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["upgraded"].as_array().map(Vec::len), Some(4), "{j}");
    for name in FIXTURES {
        let f = e.logical(name);
        assert!(e.ok(&["cat", &f]) == e.expected(name), "plfs cat {name} after upgrade");
        assert!(e.text(&["stat", &f]).contains("format: plfs v2 (N-1 container)"));
    }
    let left: Vec<String> = std::fs::read_dir(e.dir.join("store"))
        .unwrap()
        .map(|d| d.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".plfstmp"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    let fsck = e.run(&["fsck", &e.mount.display().to_string()]);
    assert_eq!(fsck.status.code(), Some(0), "{}", String::from_utf8_lossy(&fsck.stdout));
}

/// The files of tests/fixtures/plfs-2.5.1-more.tar.gz (issue 25, items 8 and 9): one flattened
/// by the original's `plfs_flatten_index` tool (chunk paths with `//`), one behind a metalink
/// (two backends). `plfs cat` reads both byte-exact, `plfs upgrade` converts both, and they read
/// the same after.
#[test]
fn flattened_by_the_tool_and_metalinked_files_cat_and_upgrade() {
    let dir = std::env::temp_dir().join(format!("plfs-cli-legacy-more-{}", std::process::id()));
    unpack("plfs-2.5.1-more.tar.gz", &dir);
    // The metalink names the backends where the original wrote them; point it here.
    let link = dir.join("be1/metalinked/hostdir.23");
    std::fs::remove_file(&link).unwrap();
    let text = format!(
        "{}{}",
        dir.join("be1").to_string_lossy().len(),
        dir.join("be2").display()
    );
    std::os::unix::fs::symlink(text, &link).unwrap();
    let m1 = PathBuf::from(format!("/plfs-cli-legacy-more-{}-a", std::process::id()));
    let m2 = PathBuf::from(format!("/plfs-cli-legacy-more-{}-b", std::process::id()));
    let cfg = dir.join("plfsrc");
    let rc = format!(
        "- mount_point: {}\n  backends:\n    - location: {}\n    - location: {}\n- mount_point: {}\n  backends:\n    - location: {}\n",
        m1.display(),
        dir.join("be1").display(),
        dir.join("be2").display(),
        m2.display(),
        dir.join("befl").display()
    );
    std::fs::write(&cfg, rc).unwrap();
    let run = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_plfs"))
            .env("PLFSRC", &cfg)
            .env("HOME", &dir)
            .env("PLFS_LOG", "off")
            .args(args)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "plfs {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        o.stdout
    };
    for (file, expected) in [
        (m1.join("metalinked"), "metalink.expected"),
        (m2.join("flat"), "flat_tool.expected"),
    ] {
        let want = std::fs::read(dir.join(expected)).unwrap();
        let f = file.to_str().unwrap();
        assert!(run(&["cat", f]) == want, "{f}: cat");
        run(&["upgrade", f]);
        assert!(run(&["cat", f]) == want, "{f}: cat after upgrade");
        let st = String::from_utf8(run(&["stat", f])).unwrap();
        assert!(st.contains("plfs v2"), "{f}: {st}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
