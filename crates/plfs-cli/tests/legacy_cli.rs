//! The `plfs` binary on containers written by the original PLFS 2.5.1
//! (tests/fixtures/plfs-2.5.1-containers.tar.gz, extracted at test time): `cat` is byte-exact
//! against each `.expected`, `stat`/`ls -l` show the format and the sizes from the meta
//! droppings (also as JSON), `map` shows the merged index, `du` measures them, `fsck` reports the
//! containers as legacy, a write is refused naming `plfs upgrade`, and `plfs upgrade` converts
//! them in place, also on a backend without `RENAME_EXCHANGE` (`PLFS_CAPS_DISABLE=exchange`).

mod common;

use common::Sandbox;
use std::path::{Path, PathBuf};
use std::process::Output;

const FIXTURES: [&str; 4] = ["n1_strided", "n1_flat", "n1_holes", "empty"];

/// Unpacks tests/fixtures/`tarball` into `dir`.
fn unpack(tarball: &str, dir: &Path) {
    let tarball = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(tarball);
    let st = std::process::Command::new("tar")
        .arg("xzf")
        .arg(&tarball)
        .arg("-C")
        .arg(dir)
        .status()
        .unwrap();
    assert!(st.success(), "tar xzf {}", tarball.display());
}

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
        let dir = std::env::temp_dir().join(format!("plfs-cli-legacy-{}-{name}", std::process::id()));
        let sb = Sandbox::new(dir, &[]);
        unpack("plfs-2.5.1-containers.tar.gz", &sb.dir);
        let mount = PathBuf::from(format!("/plfs-cli-legacy-{}-{name}", std::process::id()));
        sb.write_plfsrc(&format!(
            "- mount_point: {}\n  workload: n-1\n  backends:\n    - location: {}\n",
            mount.display(),
            sb.dir.join("store").display()
        ));
        Env { sb, mount }
    }

    fn run_env(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut c = self.cmd();
        for (k, v) in env {
            c.env(k, v);
        }
        c.args(args).output().expect("running plfs")
    }

    fn logical(&self, name: &str) -> String {
        self.mount.join(name).display().to_string()
    }

    fn expected(&self, name: &str) -> Vec<u8> {
        std::fs::read(self.dir.join(format!("{name}.expected"))).unwrap()
    }
}

#[test]
fn cat_stat_ls_map_fsck_on_plfs_2_5_1_containers() {
    let e = Env::new("read");
    for name in FIXTURES {
        let f = e.logical(name);
        assert!(e.ok_bytes(&["cat", &f]) == e.expected(name), "plfs cat {name}");
        let st = e.ok(&["stat", &f]);
        assert!(st.contains("  kind: file"), "{st}");
        assert!(st.contains("format: plfs-2.5.1 (legacy, read-only)"), "{st}");
        assert!(st.contains(&format!("  size: {}\n", e.expected(name).len())), "{st}");
        let v = e.ok(&["version", &f]);
        assert!(v.contains("written by PLFS 2.5.1 (legacy, read-only"), "{v}");
        let j: serde_json::Value = serde_json::from_slice(&e.ok_bytes(&["--json", "stat", &f])).unwrap();
        assert_eq!(j["format"], "plfs-2.5.1 (legacy, read-only)", "{j}");
        assert_eq!(j["legacy"], true, "{j}");
        assert_eq!(j["size"], e.expected(name).len() as u64, "{j}");
    }
    let ls = e.ok(&["ls", "-l", &e.mount.display().to_string()]);
    for name in FIXTURES {
        let line = ls
            .lines()
            .find(|l| l.ends_with(&format!(" {name}  [plfs-2.5.1 (legacy, read-only)]")));
        let line = line.unwrap_or_else(|| panic!("{name} not listed as a legacy file:\n{ls}"));
        assert!(line.starts_with("-rw-------"), "a file, not a directory: {line}");
        assert!(line.contains(&format!(" {} ", e.expected(name).len())), "{line}");
    }
    let map = e.ok(&["map", &e.logical("n1_holes")]);
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
    let j: serde_json::Value = serde_json::from_slice(&e.ok_bytes(&["--json", "du", &e.logical("n1_holes")])).unwrap();
    let row = &j["paths"][0]["entries"][0];
    assert_eq!(row["kind"], "legacy file", "{j}");
    assert_eq!(row["logical_bytes"], e.expected("n1_holes").len() as u64, "{j}");
    assert_eq!(row["live_bytes"], 6 * 4099 + 1000, "{j}");
    assert!(
        row["physical_bytes"].as_u64().unwrap() > row["physical_data_bytes"].as_u64().unwrap(),
        "{j}"
    );
    // The physical files, the access file and version tag included.
    let q = e.ok(&["query", &e.logical("n1_flat")]);
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
    let out = e.ok(&["upgrade", &e.mount.display().to_string()]);
    assert_eq!(out.matches("upgraded to format v3").count(), 4, "{out}");
    for name in FIXTURES {
        let f = e.logical(name);
        assert!(
            e.ok_bytes(&["cat", &f]) == e.expected(name),
            "plfs cat {name} after upgrade"
        );
        let st = e.ok(&["stat", &f]);
        assert!(st.contains("format: plfs v3 (N-1 container)"), "{st}");
    }
    e.ok_bytes(&["import", "-f", src.to_str().unwrap(), &f]);
    assert_eq!(e.ok_bytes(&["cat", &f]), b"new data");
    let o = e.run(&["upgrade", &f]);
    assert!(!o.status.success(), "upgrading a converted file is an error");
    let fsck = e.ok(&["fsck", &e.mount.display().to_string()]);
    assert!(fsck.contains("4 containers, "), "{fsck}");
    let out = e.ok(&["upgrade", &e.mount.display().to_string()]);
    assert!(
        out.contains("no files written by PLFS 2.x or in format 2 found"),
        "{out}"
    );
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
        assert!(
            e.ok_bytes(&["cat", &f]) == e.expected(name),
            "plfs cat {name} after upgrade"
        );
        assert!(e.ok(&["stat", &f]).contains("format: plfs v3 (N-1 container)"));
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
    let sb = Sandbox::new(
        std::env::temp_dir().join(format!("plfs-cli-legacy-more-{}", std::process::id())),
        &[],
    );
    let dir = &sb.dir;
    unpack("plfs-2.5.1-more.tar.gz", dir);
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
    let rc = format!(
        "- mount_point: {}\n  backends:\n    - location: {}\n    - location: {}\n- mount_point: {}\n  backends:\n    - location: {}\n",
        m1.display(),
        dir.join("be1").display(),
        dir.join("be2").display(),
        m2.display(),
        dir.join("befl").display()
    );
    sb.write_plfsrc(&rc);
    let run = |args: &[&str]| sb.ok_bytes(args);
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
        assert!(st.contains("plfs v3"), "{f}: {st}");
    }
}
