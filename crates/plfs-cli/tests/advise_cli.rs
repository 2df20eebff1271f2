//! Integration tests of `plfs advise`: the real binary probes a temporary directory on the test
//! file system (`$PLFS_TEST_ROOT` or the system temp dir).

mod common;

use common::{test_root, Sandbox};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A fresh empty directory (its `dir`), removed on drop.
fn tmp_dir(name: &str) -> Sandbox {
    Sandbox::new(
        test_root().join(format!("plfs-advise-test-{}-{name}", std::process::id())),
        &[],
    )
}

/// Runs `plfs` with a plfsrc whose mount point is private (so no real mount point interferes).
fn plfs(cfg_dir: &Path, args: &[&str]) -> Output {
    plfs_in(cfg_dir, &[], args)
}

/// [`plfs`] run through `wrapper` (a command and its arguments, or nothing).
fn plfs_in(cfg_dir: &Path, wrapper: &[&str], args: &[&str]) -> Output {
    let cfg = cfg_dir.join("plfsrc");
    let be = cfg_dir.join("be");
    std::fs::create_dir_all(&be).unwrap();
    let mount = format!("/plfs-advise-test-{}", std::process::id());
    std::fs::write(
        &cfg,
        format!(
            "- mount_point: {mount}\n  backends:\n    - location: {}\n",
            be.display()
        ),
    )
    .unwrap();
    let mut c = match wrapper.split_first() {
        Some((w, rest)) => {
            let mut c = Command::new(w);
            c.args(rest).arg(env!("CARGO_BIN_EXE_plfs"));
            c
        }
        None => Command::new(env!("CARGO_BIN_EXE_plfs")),
    };
    c.args(args).env("PLFSRC", &cfg).output().unwrap()
}

fn names(d: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn quick_json_probe_has_every_key_and_leaves_the_directory_as_it_was() {
    let cfg = tmp_dir("cfg");
    let d = tmp_dir("quick");
    let target = d.dir.join("t");
    std::fs::create_dir(&target).unwrap();
    let before = names(&d.dir);
    let o = plfs(&cfg.dir, &["advise", target.to_str().unwrap(), "--quick", "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).expect("one JSON object");
    for k in [
        "plain_n1_mibs",
        "plain_nn_mibs",
        "plfs_mibs",
        "read_plain_mibs",
        "read_plfs_mibs",
        "ratio_plfs_vs_n1",
        "elapsed_s",
    ] {
        let x = v[k].as_f64().unwrap_or_else(|| panic!("{k} missing: {v}"));
        assert!(x.is_finite() && x > 0.0, "{k} = {x}");
    }
    // The budget is 5 s; a noisy shared machine gets slack, not a tight bound.
    assert!(v["elapsed_s"].as_f64().unwrap() <= 10.0, "{v}");
    assert_eq!(v["writers"], 4);
    assert_eq!(v["record_bytes"], 47008);
    let rec = &v["recommend"];
    assert!(rec["use"] == "plfs" || rec["use"] == "plain", "{rec}");
    assert_eq!(rec["workload"], "n-1");
    // Four writers: their logs stay in the container, format 3's default (hostdirs would only add
    // a mkdir and a look-up per writer in a model that counts every operation in turn).
    assert_eq!(rec["num_hostdirs"], 1);
    assert!(rec["auto_compaction"].is_boolean());
    assert!(!v["reasons"].as_array().unwrap().is_empty());
    for k in [
        "create_us",
        "mkdir_us",
        "stat_us",
        "readdir_us",
        "unlink_us",
        "rename_us",
        "fsync_us",
        "write_1_mibs",
        "nn_write_mibs",
        "n1_write_mibs",
        "read_mibs",
    ] {
        let x = v["probe"][k]
            .as_f64()
            .unwrap_or_else(|| panic!("probe.{k} missing: {v}"));
        assert!(x.is_finite() && x > 0.0, "probe.{k} = {x}");
    }
    assert!(names(&target).is_empty(), "left behind: {:?}", names(&target));
    assert_eq!(names(&d.dir), before);
}

#[test]
fn text_output_starts_with_the_recommendation() {
    let cfg = tmp_dir("cfg-text");
    let d = tmp_dir("text");
    let o = plfs(
        &cfg.dir,
        &[
            "advise",
            d.dir.to_str().unwrap(),
            "--quick",
            "--writers",
            "2",
            "--record",
            "1M",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    let first = text.lines().next().unwrap();
    assert!(first.starts_with("use "), "{text}");
    assert!(
        text.contains("N-1 penalty") && text.contains("metadata") && text.contains("read-back"),
        "{text}"
    );
    assert!(names(&d.dir).is_empty());
}

#[test]
fn bad_directories_fail_naming_the_path() {
    let cfg = tmp_dir("cfg-bad");
    let d = tmp_dir("bad");
    let missing = d.dir.join("missing");
    let file = d.dir.join("file");
    std::fs::write(&file, b"x").unwrap();
    for (p, why) in [(&missing, "No such file or directory"), (&file, "Not a directory")] {
        let o = plfs(&cfg.dir, &["advise", p.to_str().unwrap(), "--quick"]);
        assert_eq!(o.status.code(), Some(1));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(p.to_str().unwrap()) && err.contains(why), "{err}");
        assert!(!err.contains("panicked"), "{err}");
        let o = plfs(&cfg.dir, &["advise", p.to_str().unwrap(), "--quick", "--json"]);
        assert_eq!(o.status.code(), Some(1));
        let v: Value = serde_json::from_slice(&o.stderr).expect("a JSON error");
        assert_eq!(v["path"], p.to_str().unwrap());
    }
}

#[test]
fn a_read_only_directory_fails_with_a_clear_error() {
    use std::os::unix::fs::PermissionsExt;
    let cfg = tmp_dir("cfg-ro");
    let d = tmp_dir("ro");
    let ro = d.dir.join("ro");
    std::fs::create_dir(&ro).unwrap();
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
    // Root writes anyway: then the probe runs as another user (setpriv, util-linux).
    let root = std::fs::write(ro.join("probe"), b"").is_ok();
    let _ = std::fs::remove_file(ro.join("probe"));
    let o = if root {
        plfs_in(
            &cfg.dir,
            &["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"],
            &["advise", ro.to_str().unwrap(), "--quick"],
        )
    } else {
        plfs(&cfg.dir, &["advise", ro.to_str().unwrap(), "--quick"])
    };
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(ro.to_str().unwrap()) && err.contains("Permission denied"),
        "{err}"
    );
}

#[test]
fn a_directory_under_a_plfs_mount_point_is_refused() {
    let cfg = tmp_dir("cfg-mnt");
    // The configured mount point does not exist on the kernel's side; make one that does: a
    // configuration whose mount point is a real directory.
    let d = tmp_dir("mnt");
    let mnt = d.dir.join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let be = d.dir.join("be");
    std::fs::create_dir(&be).unwrap();
    let rc = cfg.dir.join("plfsrc-mnt");
    std::fs::write(
        &rc,
        format!(
            "- mount_point: {}\n  backends:\n    - location: {}\n",
            mnt.display(),
            be.display()
        ),
    )
    .unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_plfs"))
        .args(["advise", mnt.to_str().unwrap(), "--quick"])
        .env("PLFSRC", &rc)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("PLFS mount point") && err.contains(mnt.to_str().unwrap()),
        "{err}"
    );
    assert!(names(&mnt).is_empty());
}

/// The Lustre costs file of docs/performance.md ("At scale, on paper").
fn sierra_costs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/model/lustre-sierra.json")
}

#[test]
fn scale_from_a_costs_file_gives_curves_from_1_to_10000_writers() {
    let cfg = tmp_dir("cfg-scale");
    let costs = sierra_costs();
    let o = plfs(
        &cfg.dir,
        &["advise", "--scale", "--costs", costs.to_str().unwrap(), "--json"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).expect("one JSON object");
    assert_eq!(v["source"], "costs");
    assert_eq!(v["aggregators"], 24, "the servers of the file");
    assert_eq!(v["bytes_per_writer"], 205_000_000, "the file's workload");
    assert_eq!(v["costs"]["servers"], 24.0);
    let pts = v["points"].as_array().unwrap();
    let writers: Vec<u64> = pts.iter().map(|p| p["writers"].as_u64().unwrap()).collect();
    assert_eq!(writers.first(), Some(&1));
    assert_eq!(writers.last(), Some(&10_000));
    assert_eq!(writers.len(), 15);
    for p in pts {
        for k in [
            "plain_n1_mibs",
            "plain_nn_mibs",
            "plfs_mibs",
            "plfs_aggregated_mibs",
            "ratio_plfs_vs_n1",
            "plfs_metadata_s",
            "plfs_data_s",
        ] {
            let x = p[k].as_f64().unwrap_or_else(|| panic!("{k} missing: {p}"));
            assert!(x.is_finite() && x >= 0.0, "{k} = {x}");
        }
    }
    let peak = v["plfs_peak"]["writers"].as_u64().unwrap();
    assert!(peak > 1 && peak < 10_000, "{v}");
    assert!(v["plfs_below_n1_from"].as_u64().is_some_and(|w| w > peak), "{v}");
    // --record, --per-writer and --aggregators override the file.
    let o = plfs(
        &cfg.dir,
        &[
            "advise",
            "--scale",
            "--costs",
            costs.to_str().unwrap(),
            "--json",
            "--aggregators",
            "4",
            "--record",
            "1M",
            "--per-writer",
            "64M",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (&v["aggregators"], &v["record_bytes"], &v["bytes_per_writer"]),
        (&Value::from(4), &Value::from(1 << 20), &Value::from(64 << 20))
    );
    // The text: the table, then where plfs peaks and stops helping.
    let o = plfs(&cfg.dir, &["advise", "--scale", "--costs", costs.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.lines().next().unwrap().contains("lustre-sierra.json"), "{text}");
    assert!(
        text.contains("plfs peaks at") && text.contains("stops helping") && text.contains("10000"),
        "{text}"
    );
}

#[test]
fn scale_from_a_quick_probe_is_one_host_and_cleans_up() {
    let cfg = tmp_dir("cfg-scale-probe");
    let d = tmp_dir("scale-probe");
    let o = plfs(
        &cfg.dir,
        &[
            "advise",
            d.dir.to_str().unwrap(),
            "--scale",
            "--quick",
            "--json",
            "--writers",
            "2",
            "--per-writer",
            "1M",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["source"], "probe");
    assert_eq!(v["probe"]["threads"], 2);
    assert_eq!(v["costs"]["writers_per_client"], 0.0, "one host");
    assert_eq!(v["costs"]["lock_callback_us"], 0.0);
    assert_eq!(v["points"].as_array().unwrap().len(), 15);
    assert!(v["plfs_peak"]["mibs"].as_f64().is_some_and(|x| x > 0.0), "{v}");
    assert!(names(&d.dir).is_empty(), "left behind: {:?}", names(&d.dir));
}

#[test]
fn scale_refuses_bad_costs_and_bad_combinations() {
    let cfg = tmp_dir("cfg-scale-bad");
    let d = tmp_dir("scale-bad");
    let missing = d.dir.join("missing.json");
    let o = plfs(&cfg.dir, &["advise", "--scale", "--costs", missing.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(missing.to_str().unwrap()) && err.contains("No such file or directory"),
        "{err}"
    );
    let bad = d.dir.join("bad.json");
    std::fs::write(&bad, r#"{"mds_op_us": 100, "mds_concurrency": 4}"#).unwrap();
    let o = plfs(
        &cfg.dir,
        &["advise", "--scale", "--costs", bad.to_str().unwrap(), "--json"],
    );
    assert_eq!(o.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&o.stderr).expect("a JSON error");
    assert_eq!(v["path"], bad.to_str().unwrap());
    assert!(v["error"].as_str().unwrap().contains("\"servers\" is missing"), "{v}");
    std::fs::write(&bad, "not json").unwrap();
    let o = plfs(&cfg.dir, &["advise", "--scale", "--costs", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("invalid costs file"));
    let costs = sierra_costs();
    let c = costs.to_str().unwrap();
    let dir = d.dir.to_str().unwrap();
    for args in [
        vec!["advise", "--costs", c],
        vec!["advise", "--scale", "--costs", c, dir],
        vec!["advise", "--scale"],
        vec!["advise", dir, "--aggregators", "4"],
        vec!["advise", "--scale", "--costs", c, "--quick"],
    ] {
        let o = plfs(&cfg.dir, &args);
        assert_eq!(
            o.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    assert_eq!(names(&d.dir), ["bad.json"]);
}
