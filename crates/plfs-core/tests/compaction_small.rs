//! Compaction of 1-N packed logs (docs/design.md, "Compaction"): every file of the directory is
//! checked against a model (bytes, size, mode, times, inode number) through fresh instances
//! before and after; the logs are counted.
//!
//! - `packed_directory_compacted`: creates, overwrites, truncates, unlinks, renames, chmod and
//!   utimens over 60 files on two backends; compaction leaves one log, drops the deleted and
//!   replaced files, keeps every attribute; a dry run changes nothing; fsck is clean.
//! - `a_live_writer_blocks_compaction`: another process (instance) still appending to its log
//!   makes the compaction stop (`writers-open`), changing nothing; once it is gone it runs.
//! - `automatic_compaction_bounds_the_logs`: a file rewritten 400 times stays within a few times
//!   its size in the directory's logs.

mod common;

use common::{fill_pattern, read_all, ro, Fixture};
use plfs_core::compact::{self, Options, Status};
use plfs_core::config::GlobalParams;
use plfs_core::fsck::{self, Options as FsckOptions};
use plfs_core::{OpenFlags, Plfs, Stat, TimeSpec};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn no_auto() -> GlobalParams {
    GlobalParams {
        auto_compaction: false,
        ..GlobalParams::default()
    }
}

fn rw() -> OpenFlags {
    OpenFlags {
        read: true,
        write: true,
        create: true,
        ..Default::default()
    }
}

fn data(seed: u64, off: u64, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    fill_pattern(seed, off, &mut v);
    v
}

/// Every file of `dir`: name -> (stat, bytes), through a fresh instance.
fn snapshot(fx: &Fixture, dir: &Path) -> BTreeMap<String, (Stat, Vec<u8>)> {
    let p = fx.plfs();
    let mut out = BTreeMap::new();
    for e in p.readdir(dir).unwrap() {
        let path = dir.join(&e.name);
        let st = p.stat(&path).unwrap();
        let f = p.open(&path, ro(), 0, 5).unwrap();
        let b = read_all(&f).unwrap();
        f.close().unwrap();
        out.insert(e.name.to_string_lossy().into_owned(), (st, b));
    }
    out
}

/// Packed logs of `dir` (relative to the mount) on every backend.
fn logs(fx: &Fixture, rel: &str) -> Vec<PathBuf> {
    let mut v = Vec::new();
    for b in &fx.canonical {
        let s = b.join(rel).join(".plfs_small");
        if let Ok(rd) = std::fs::read_dir(&s) {
            v.extend(rd.flatten().map(|e| e.path()).filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("log."))
            }));
        }
    }
    v.sort();
    v
}

#[track_caller]
fn same(a: &BTreeMap<String, (Stat, Vec<u8>)>, b: &BTreeMap<String, (Stat, Vec<u8>)>, what: &str) {
    assert_eq!(
        a.keys().collect::<Vec<_>>(),
        b.keys().collect::<Vec<_>>(),
        "{what}: names"
    );
    for (n, (sa, da)) in a {
        let (sb, db) = &b[n];
        common::assert_bytes_eq(db, da, &format!("{what}: {n}"));
        assert_eq!(
            (sa.mode, sa.uid, sa.gid, sa.size, sa.ino),
            (sb.mode, sb.uid, sb.gid, sb.size, sb.ino),
            "{what}: {n}: stat"
        );
        assert_eq!(
            (sa.atime_ns, sa.mtime_ns, sa.ctime_ns),
            (sb.atime_ns, sb.mtime_ns, sb.ctime_ns),
            "{what}: {n}: times"
        );
    }
}

#[test]
fn packed_directory_compacted() {
    let fx = Fixture::small("cmps-basic", 2, no_auto());
    let dir = fx.path("d");
    // Three "processes" work on the directory one after the other.
    for k in 0..3u64 {
        let p = fx.plfs();
        if k == 0 {
            p.mkdir(&dir, 0o755).unwrap();
        }
        for i in 0..60u64 {
            let path = dir.join(format!("f{i}"));
            let f = p.open(&path, rw(), 0o644, 1).unwrap();
            let len = 100 + ((i * 37 + k * 11) % 3000) as usize;
            f.write(&data(k * 100 + i, 0, len), 0).unwrap();
            if i % 7 == 0 {
                f.truncate(len as u64 / 2).unwrap();
            }
            if i % 11 == 0 {
                f.truncate(len as u64 * 3).unwrap(); // grows: the size is in a TRUNC only
            }
            f.close().unwrap();
        }
        if k == 1 {
            for i in (0..60u64).step_by(3) {
                p.unlink(&dir.join(format!("f{i}"))).unwrap();
            }
            for i in (1..30u64).step_by(6) {
                p.rename(&dir.join(format!("f{i}")), &dir.join(format!("r{i}")))
                    .unwrap();
            }
            p.rename(&dir.join("f2"), &dir.join("f4")).unwrap(); // replaces f4
            p.chmod(&dir.join("f5"), 0o600).unwrap();
            p.utimens(&dir.join("f8"), TimeSpec::At(1000, 5), TimeSpec::At(2000, 7))
                .unwrap();
        }
    }
    let before = snapshot(&fx, &dir);
    let logs_before = logs(&fx, "d");
    assert_eq!(logs_before.len(), 3, "{logs_before:?}");
    let p = fx.plfs();
    let dry = compact::compact_packed_dir(
        &p,
        &dir,
        &Options {
            dry_run: true,
            ..Options::default()
        },
    )
    .unwrap()
    .unwrap();
    assert_eq!(dry.status, Status::DryRun);
    assert_eq!(logs(&fx, "d"), logs_before, "a dry run changes nothing");
    let rep = compact::compact_packed_dir(&p, &dir, &Options::default())
        .unwrap()
        .unwrap();
    assert_eq!(rep.status, Status::Compacted, "{rep:?}");
    assert_eq!(rep.logs_retired, 3);
    assert!(rep.files_dropped >= 20, "{rep:?}");
    assert_eq!(rep.after.data, rep.after.live, "only live data is left");
    assert!(rep.after.physical < rep.before.physical / 2, "{rep:?}");
    assert_eq!(dry.after.physical, rep.after.physical, "the dry run's prediction");
    drop(p);
    assert_eq!(logs(&fx, "d").len(), 1);
    same(&before, &snapshot(&fx, &dir), "after compaction");
    // A compacted directory goes on working: write, unlink, create, compact again.
    let p = fx.plfs();
    let f = p.open(&dir.join("f1"), rw(), 0o644, 1).unwrap();
    f.write(b"again", 3).unwrap();
    f.close().unwrap();
    p.unlink(&dir.join("f5")).unwrap();
    let f = p.open(&dir.join("new"), rw(), 0o640, 1).unwrap();
    f.write(&data(9, 0, 5000), 0).unwrap();
    f.close().unwrap();
    drop(p);
    let before = snapshot(&fx, &dir);
    assert!(before.contains_key("new") && !before.contains_key("f5"));
    let rep = compact::compact_packed_dir(&fx.plfs(), &dir, &Options::default())
        .unwrap()
        .unwrap();
    assert_eq!(rep.status, Status::Compacted);
    same(&before, &snapshot(&fx, &dir), "after a second compaction");
    let again = compact::compact_packed_dir(&fx.plfs(), &dir, &Options::default())
        .unwrap()
        .unwrap();
    assert_eq!(again.status, Status::NothingToDo, "{again:?}");
    // `plfs compact FILE` on a packed file compacts its directory.
    let r = compact::compact(&fx.plfs(), &dir.join("new"), &Options::default()).unwrap();
    assert_eq!(r.path, dir);
    let rep = fsck::fsck(&fx.plfs(), Path::new(common::MOUNT), &FsckOptions::default()).unwrap();
    assert_eq!(rep.exit_code(), 0, "{:#?}", rep.findings);
}

#[test]
fn a_live_writer_blocks_compaction() {
    let fx = Fixture::small("cmps-live", 1, no_auto());
    let dir = fx.path("d");
    let a: Plfs = fx.plfs();
    a.mkdir(&dir, 0o755).unwrap();
    for i in 0..5 {
        let f = a.open(&dir.join(format!("a{i}")), rw(), 0o644, 1).unwrap();
        f.write(&data(i, 0, 1000), 0).unwrap();
        f.close().unwrap();
    }
    let b = fx.plfs();
    for i in 0..5 {
        let f = b.open(&dir.join(format!("a{i}")), rw(), 0o644, 2).unwrap();
        f.write(&data(50 + i, 0, 1000), 0).unwrap();
        f.close().unwrap();
    }
    // `a` still has its writer log (its view is alive): compaction by `c` must not retire it.
    let before = snapshot(&fx, &dir);
    let logs_before = logs(&fx, "d");
    drop(b);
    let c = fx.plfs();
    let rep = compact::compact_packed_dir(&c, &dir, &Options::default())
        .unwrap()
        .unwrap();
    assert_eq!(rep.status, Status::WritersOpen, "{rep:?}");
    assert_eq!(logs(&fx, "d"), logs_before);
    // `a` goes on appending to its log.
    let f = a.open(&dir.join("a0"), rw(), 0o644, 1).unwrap();
    f.write(b"still here", 0).unwrap();
    f.close().unwrap();
    drop(a);
    let mut before = before;
    let mut a0 = before["a0"].1.clone();
    a0[..10].copy_from_slice(b"still here");
    before.get_mut("a0").unwrap().1 = a0;
    let rep = compact::compact_packed_dir(&c, &dir, &Options::default())
        .unwrap()
        .unwrap();
    assert_eq!(rep.status, Status::Compacted, "{rep:?}");
    let after = snapshot(&fx, &dir);
    for (n, (_, d)) in &before {
        common::assert_bytes_eq(&after[n].1, d, n);
    }
    assert_eq!(logs(&fx, "d").len(), 1);
}

#[test]
fn automatic_compaction_bounds_the_logs() {
    let g = GlobalParams {
        compaction_min_bytes: 256 << 10,
        ..GlobalParams::default()
    };
    let fx = Fixture::small("cmps-auto", 1, g);
    let dir = fx.path("d");
    let p = fx.plfs();
    p.mkdir(&dir, 0o755).unwrap();
    let mut max = 0u64;
    let mut last = Vec::new();
    for i in 0..400u64 {
        let f = p.open(&dir.join("hot"), rw(), 0o644, 1).unwrap();
        last = data(i, 0, 20_000 + (i as usize % 7) * 1000);
        f.write(&last, 0).unwrap();
        f.truncate(last.len() as u64).unwrap();
        f.close().unwrap();
        if i % 3 == 0 {
            let g = p.open(&dir.join(format!("tmp{}", i % 5)), rw(), 0o644, 1).unwrap();
            g.write(&data(i + 1, 0, 3000), 0).unwrap();
            g.close().unwrap();
            p.unlink(&dir.join(format!("tmp{}", i % 5))).unwrap();
        }
        let bytes: u64 = logs(&fx, "d").iter().map(|l| std::fs::metadata(l).unwrap().len()).sum();
        max = max.max(bytes);
    }
    drop(p);
    // 400 rewrites of about 23 KB: 9 MB written; the logs stay near the threshold.
    assert!(max < 1 << 20, "packed logs reached {max} bytes");
    let snap = snapshot(&fx, &dir);
    common::assert_bytes_eq(&snap["hot"].1, &last, "hot");
    assert_eq!(snap.len(), 1, "{:?}", snap.keys());
}
