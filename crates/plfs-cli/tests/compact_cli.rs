//! `plfs compact`, and the space accounting of `plfs stat` and `plfs du`, run as a user would:
//! the real binary with its own plfsrc (an N-1 mount on two backends and a 1-N mount), files
//! written with overwrites and truncates through the library, every byte checked with
//! `plfs cat` against a model before and after.

mod common;

use common::{rw, N1AndSmall as Env};
use plfs_core::Plfs;
use serde_json::Value;
use std::path::{Path, PathBuf};

impl Env {
    /// Every file below a backend directory: (path, size).
    fn backend_tree(&self, b: &str) -> Vec<(PathBuf, u64)> {
        fn walk(d: &Path, out: &mut Vec<(PathBuf, u64)>) {
            for e in std::fs::read_dir(d).unwrap().flatten() {
                if e.file_type().unwrap().is_dir() {
                    walk(&e.path(), out);
                } else {
                    out.push((e.path(), e.metadata().unwrap().len()));
                }
            }
        }
        let mut v = Vec::new();
        walk(&self.dir.join(b), &mut v);
        v.sort();
        v
    }
}

/// [`common::bytes`] with the seed spread over its bits first.
fn bytes(len: usize, seed: u64) -> Vec<u8> {
    common::bytes(len, seed.wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

/// Writes `path` by three writers overwriting each other, with a truncate; returns the model.
fn churn(p: &Plfs, path: &Path) -> Vec<u8> {
    let mut m = Vec::new();
    for w in 0..3u64 {
        let f = p.open(path, rw(), 0o644, 1 + w as u32).unwrap();
        for i in 0..40u64 {
            let off = (i * 7919 + w * 1013) % 200_000;
            let d = bytes(20_000, w * 100 + i);
            f.write(&d, off).unwrap();
            let end = off as usize + d.len();
            if m.len() < end {
                m.resize(end, 0);
            }
            m[off as usize..end].copy_from_slice(&d);
        }
        f.truncate(150_000 + w * 1000).unwrap();
        m.resize(150_000 + w as usize * 1000, 0);
        f.close().unwrap();
    }
    m
}

#[test]
fn compact_n1_file_and_directory() {
    let e = Env::new("compact", "n1");
    let f = e.n1.join("d/f");
    let p = e.plfs();
    p.mkdir(&e.n1.join("d"), 0o755).unwrap();
    let model = churn(&p, &f);
    let model2 = churn(&p, &e.n1.join("d/g"));
    drop(p);
    // stat and du account for the dead data.
    let st = e.json(&["stat", f.to_str().unwrap()]);
    let u = &st["usage"];
    assert_eq!(u["logical_bytes"], model.len() as u64);
    assert!(u["dead_ratio"].as_f64().unwrap() > 0.5, "{u}");
    assert_eq!(u["logs"], 6, "{u}");
    let du = e.json(&["du", f.to_str().unwrap()]);
    assert!(du["total"]["dead_ratio"].as_f64().unwrap() > 0.5, "{du}");
    let text = String::from_utf8(e.ok_bytes(&["stat", f.to_str().unwrap()])).unwrap();
    assert!(text.contains("physical:") && text.contains("(dead "), "{text}");
    // A dry run changes nothing and says what it would reclaim.
    let before = (e.backend_tree("b1"), e.backend_tree("b2"));
    let dry = e.json(&["compact", "--dry-run", f.to_str().unwrap()]);
    assert_eq!(dry["dry_run"], true);
    assert_eq!(dry["paths"][0]["status"], "dry-run");
    assert!(dry["paths"][0]["reclaimed_bytes"].as_u64().unwrap() > 100_000, "{dry}");
    assert_eq!(
        (e.backend_tree("b1"), e.backend_tree("b2")),
        before,
        "a dry run must not change the backends"
    );
    assert_eq!(e.ok_bytes(&["cat", f.to_str().unwrap()]), model);
    // The file, then the whole directory (the other file; the first has nothing left to do).
    let out = String::from_utf8(e.ok_bytes(&["compact", "-h", f.to_str().unwrap()])).unwrap();
    assert!(out.contains("compacted") && out.contains(f.to_str().unwrap()), "{out}");
    assert_eq!(e.ok_bytes(&["cat", f.to_str().unwrap()]), model);
    let all = e.json(&["compact", e.n1.join("d").to_str().unwrap()]);
    let statuses: Vec<(&str, &str)> = all["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["path"].as_str().unwrap(), r["status"].as_str().unwrap()))
        .collect();
    let fg = e.n1.join("d/g");
    assert!(
        statuses.contains(&(f.to_str().unwrap(), "nothing-to-do")),
        "{statuses:?}"
    );
    assert!(statuses.contains(&(fg.to_str().unwrap(), "compacted")), "{statuses:?}");
    assert!(all["total"]["reclaimed_bytes"].as_u64().unwrap() > 0);
    assert_eq!(e.ok_bytes(&["cat", fg.to_str().unwrap()]), model2);
    let st = e.json(&["stat", f.to_str().unwrap()]);
    assert_eq!(st["usage"]["dead_ratio"], 0.0);
    assert_eq!(st["usage"]["logs"], 2);
    assert!(st["usage"]["meta_files"].as_u64().unwrap() <= 3);
    assert_eq!(e.run(&["fsck", e.n1.to_str().unwrap()]).status.code(), Some(0));
    // A missing file is an error naming it (exit 1), the others are still compacted.
    let o = e.run(&[
        "--json",
        "compact",
        e.n1.join("nope").to_str().unwrap(),
        f.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err: Value = serde_json::from_str(String::from_utf8_lossy(&o.stderr).lines().next().unwrap()).unwrap();
    assert_eq!(err["errno"], 2);
    assert!(err["path"].as_str().unwrap().ends_with("/nope"));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["paths"].as_array().unwrap().len(), 1);
}

#[test]
fn compact_packed_directory() {
    let e = Env::new("compact", "small");
    let d = e.small.join("pk");
    let p = e.plfs();
    p.mkdir(&d, 0o755).unwrap();
    let mut model = Vec::new();
    for round in 0..3u64 {
        for i in 0..10u64 {
            let f = p.open(&d.join(format!("f{i}")), rw(), 0o644, 1).unwrap();
            let b = bytes(5000 + i as usize * 100, round * 10 + i);
            f.write(&b, 0).unwrap();
            f.close().unwrap();
            if round == 2 {
                model.push(b);
            }
        }
    }
    for i in 5..10 {
        p.unlink(&d.join(format!("f{i}"))).unwrap();
    }
    drop(p);
    let r = e.json(&["compact", d.to_str().unwrap()]);
    let row = &r["paths"][0];
    assert_eq!(row["kind"], "packed logs", "{r}");
    assert_eq!(row["status"], "compacted", "{r}");
    assert!(row["files_dropped"].as_u64().unwrap() >= 5, "{r}");
    assert_eq!(row["after"]["logs"], 1);
    for (i, b) in model.iter().enumerate().take(5) {
        assert_eq!(&e.ok_bytes(&["cat", d.join(format!("f{i}")).to_str().unwrap()]), b);
    }
    let names = String::from_utf8(e.ok_bytes(&["ls", d.to_str().unwrap()])).unwrap();
    assert_eq!(names.lines().count(), 5, "{names}");
}
