//! Damaged 1-N logs (docs/format.md §11, "Damage"): a byte changed anywhere in a packed log, the
//! log cut to any length, its header damaged. What a damaged record may have changed answers
//! `EIO` (a file it may have written, or, where it may have created, renamed or unlinked a
//! name, a name the view lacks); everything else reads exactly as written, the records after
//! the damage included; `plfs fsck` reports every case but a cut between two whole records (no
//! file says how long a log should be: that reads as the log its writer had written up to
//! then, as after a power loss).

mod common;

use common::{read_all, ro, Fixture};
use plfs_core::config::GlobalParams;
use plfs_core::fsck::{self, Kind, Options as FsckOptions};
use plfs_core::Plfs;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const EIO: i32 = 5;
const FILES: u8 = 6;
const SIZE: usize = 10_000;

/// Six files of 10,000 B written by one process into one log; returns the log's path and the
/// model (name → bytes).
fn build(fx: &Fixture) -> (PathBuf, BTreeMap<String, Vec<u8>>) {
    let p = fx.plfs();
    let dir = fx.path("d");
    p.mkdir(&dir, 0o755).unwrap();
    let mut model = BTreeMap::new();
    for i in 0..FILES {
        let name = format!("f{i}");
        let bytes: Vec<u8> = (0..SIZE).map(|k| (k as u8).wrapping_mul(7) ^ i).collect();
        let f = p.open(&dir.join(&name), common::rw_create(), 0o644, 1).unwrap();
        f.write(&bytes, 0).unwrap();
        f.close().unwrap();
        model.insert(name, bytes);
    }
    drop(p);
    let store = fx.canonical[0].join("d").join(".plfs_small");
    let logs: Vec<PathBuf> = std::fs::read_dir(&store)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_str().unwrap().starts_with("log."))
        .collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
    (logs[0].clone(), model)
}

/// How one file of the model reads through a fresh instance.
#[derive(Debug, PartialEq)]
enum Seen {
    Exact,
    Eio,
    Missing,
    /// Read with success, but not the model's bytes (length read).
    Wrong(usize),
}

fn look(p: &Plfs, path: &Path, want: &[u8]) -> Seen {
    let r = p
        .stat(path)
        .and_then(|_| p.open(path, ro(), 0, 3))
        .and_then(|f| read_all(&f));
    match r {
        Ok(b) if b == want => Seen::Exact,
        Ok(b) => Seen::Wrong(b.len()),
        Err(e) if e.raw_errno() == EIO => Seen::Eio,
        Err(e) if e.raw_errno() == 2 => Seen::Missing,
        Err(e) => panic!("{}: unexpected error {e}", path.display()),
    }
}

/// Every model file as it reads now, the names listed, and whether fsck reports a problem.
fn judge(fx: &Fixture, model: &BTreeMap<String, Vec<u8>>) -> (BTreeMap<String, Seen>, Vec<String>, bool) {
    let p = fx.plfs();
    let dir = fx.path("d");
    let seen = model
        .iter()
        .map(|(n, b)| (n.clone(), look(&p, &dir.join(n), b)))
        .collect();
    let listed = p
        .readdir(&dir)
        .unwrap()
        .into_iter()
        .map(|e| e.name.to_string_lossy().into_owned())
        .collect();
    let rep = fsck::fsck(&p, &dir, &FsckOptions::default()).unwrap();
    let found = rep
        .findings
        .iter()
        .any(|f| f.problem && matches!(f.kind, Kind::DamagedPackedRecords | Kind::TornPackedTail));
    (seen, listed, found)
}

/// A byte changed at every offset of the first three files' records (frames and fixed parts
/// entirely, the data every 97 bytes), to 0, to 0xff and to its complement: never a wrong
/// answer with success, never a file missing, fsck finds it every time; a change in a file's
/// data hits that file alone (the case: one byte of the third file set to 0).
#[test]
fn a_changed_byte_in_a_packed_log_is_eio_for_what_it_hit_and_the_rest_reads() {
    let fx = Fixture::small("dmg-byte", 1, GlobalParams::default());
    let (log, model) = build(&fx);
    let pristine = std::fs::read(&log).unwrap();
    let per_file = (pristine.len() - 64) / FILES as usize;
    let mut offsets: Vec<usize> = (0..64).collect();
    for f in 0..3 {
        let start = 64 + f * per_file;
        offsets.extend(start..start + 100);
        offsets.extend((start + 100..start + per_file).step_by(97));
    }
    let (mut trials, mut hit_one) = (0, 0);
    for &at in &offsets {
        for v in [0u8, 0xff, !pristine[at]] {
            if v == pristine[at] {
                continue;
            }
            let mut b = pristine.clone();
            b[at] = v;
            std::fs::write(&log, &b).unwrap();
            let (seen, listed, found) = judge(&fx, &model);
            trials += 1;
            for (n, s) in &seen {
                assert!(
                    matches!(s, Seen::Exact | Seen::Eio),
                    "byte {at} = {v:#x}: {n} reads {s:?}"
                );
            }
            assert!(
                listed.iter().all(|n| model.contains_key(n)),
                "byte {at}: lists {listed:?}"
            );
            if at >= 64 {
                assert!(found, "byte {at} = {v:#x}: fsck finds nothing");
            }
            let bad = seen.values().filter(|s| **s != Seen::Exact).count();
            if bad == 1 {
                hit_one += 1;
            }
        }
    }
    // The case exactly.
    let mut b = pristine.clone();
    b[25_000] = 0;
    std::fs::write(&log, &b).unwrap();
    let (seen, _, found) = judge(&fx, &model);
    assert!(found);
    assert_eq!(seen["f2"], Seen::Eio);
    for n in ["f0", "f1", "f3", "f4", "f5"] {
        assert_eq!(seen[n], Seen::Exact, "{n}");
    }
    eprintln!("{trials} changed bytes: {hit_one} hit one file only, the rest EIO for names too; 0 wrong answers");
    assert!(
        hit_one * 2 > trials,
        "most changes (data) hit one file: {hit_one} of {trials}"
    );
}

/// The log cut at every length (every byte of the header and of the first file's records, then
/// every 61 bytes): a file reads exactly, answers EIO, is missing, or, the file whose records the
/// cut went through, shorter; and fsck reports every cut that is not between two whole records.
#[test]
fn a_cut_packed_log_is_found_by_fsck() {
    let fx = Fixture::small("dmg-cut", 1, GlobalParams::default());
    let (log, model) = build(&fx);
    let pristine = std::fs::read(&log).unwrap();
    let bounds = record_bounds(&pristine);
    let mut lens: Vec<usize> = (1..64 + 200).collect();
    lens.extend((264..pristine.len()).step_by(61));
    for len in lens {
        std::fs::write(&log, &pristine[..len]).unwrap();
        let (seen, listed, found) = judge(&fx, &model);
        assert!(listed.iter().all(|n| model.contains_key(n)));
        let shorter = seen.values().filter(|s| matches!(s, Seen::Wrong(_))).count();
        assert!(shorter <= 1, "cut at {len}: {seen:?}");
        if !bounds.contains(&len) {
            assert!(found, "cut at {len}: fsck finds nothing ({seen:?})");
        }
    }
    // fsck --repair cuts a torn tail back to the last whole record; the log is clean then.
    std::fs::write(&log, &pristine[..pristine.len() - 10]).unwrap();
    let p = fx.plfs();
    let opts = FsckOptions {
        repair: true,
        ..FsckOptions::default()
    };
    let rep = fsck::fsck(&p, &fx.path("d"), &opts).unwrap();
    assert_eq!(rep.exit_code(), 1, "{:#?}", rep.findings);
    assert_eq!(
        fsck::fsck(&p, &fx.path("d"), &FsckOptions::default())
            .unwrap()
            .exit_code(),
        0
    );
    assert_eq!(
        std::fs::metadata(&log).unwrap().len() as usize,
        *bounds.iter().rev().nth(1).unwrap()
    );
}

/// Offsets of the log where a whole record ends (its header's end included).
fn record_bounds(log: &[u8]) -> Vec<usize> {
    let mut out = vec![64];
    let mut pos = 64;
    while pos + 12 <= log.len() {
        let blen = u32::from_le_bytes(log[pos + 4..pos + 8].try_into().unwrap()) as usize;
        pos += 12 + blen;
        out.push(pos);
    }
    out
}

// ---- The compaction journal (format.md §14) -------------------------------------------------

/// A directory of two writers' logs (files f0..f5, then `a` renamed over `b`, which only a
/// replay of the whole old history reads right), compacted by a compaction that stopped after
/// its journal committed: at the publication (`stop = "sys::rename"`, the new log still under its
/// temporary name) or after it retired one old log (`"sys::unlink"`). Returns the model.
fn committed_dir(fx: &Fixture, tag: &str, stop: &str) -> BTreeMap<String, Vec<u8>> {
    use plfs_core::failpoint;
    let dir = fx.path("d");
    let (p, q) = (fx.plfs(), fx.plfs());
    p.mkdir(&dir, 0o755).unwrap();
    let mut model = BTreeMap::new();
    for i in 0..FILES {
        let name = format!("f{i}");
        let bytes: Vec<u8> = (0..SIZE).map(|k| (k as u8).wrapping_mul(13) ^ i).collect();
        let w = if i % 2 == 0 { &p } else { &q };
        common::put(w, &dir.join(&name), &bytes);
        model.insert(name, bytes);
    }
    common::put(&p, &dir.join("a"), b"written as a");
    common::put(&q, &dir.join("b"), b"written as b");
    p.rename(&dir.join("a"), &dir.join("b")).unwrap();
    model.insert("b".into(), b"written as a".to_vec());
    drop((p, q));
    // The journal's own rename (write_atomic) is the first; the publication the second.
    let after = if stop == "sys::rename" { 1 } else { 0 };
    failpoint::set(failpoint::Spec {
        name: stop.into(),
        filter: tag.into(),
        action: failpoint::Action::Errno(rustix::io::Errno::IO),
        after,
        times: None,
    });
    let r = plfs_core::compact::compact_packed_dir(&fx.plfs(), &dir, &plfs_core::compact::Options::default());
    failpoint::clear();
    assert!(r.is_err(), "{stop}: the compaction did not stop: {r:?}");
    let store = fx.canonical[0].join("d/.plfs_small");
    assert!(store.join("compact.journal").exists(), "{stop}: no journal left");
    model
}

/// The committed journal of a compaction that stopped halfway (before its new log is published,
/// and after it retired one old log), cut to every length and with every byte changed: every
/// file reads exactly or answers EIO, no name is listed that the directory does not hold, and
/// fsck reports the journal; `fsck --repair` then leaves a directory that reads exactly or
/// answers EIO, never a wrong file with success.
#[test]
fn a_damaged_compaction_journal_is_eio_never_a_wrong_file() {
    for (tag, stop) in [("dmg-jrn-pub", "sys::rename"), ("dmg-jrn-ret", "sys::unlink")] {
        let fx = Fixture::small(tag, 1, GlobalParams::default());
        let model = committed_dir(&fx, tag, stop);
        let journal = fx.canonical[0].join("d/.plfs_small/compact.journal");
        let pristine = std::fs::read(&journal).unwrap();
        let (seen, _, _) = judge(&fx, &model);
        assert!(
            seen.values().all(|s| *s == Seen::Exact),
            "{stop}: before any damage: {seen:?}"
        );
        let mut damaged: Vec<(String, Vec<u8>)> = (0..pristine.len())
            .map(|n| (format!("cut to {n}"), pristine[..n].to_vec()))
            .collect();
        for at in 0..pristine.len() {
            let mut b = pristine.clone();
            b[at] ^= 0x5a;
            damaged.push((format!("byte {at} changed"), b));
        }
        for (what, bytes) in &damaged {
            std::fs::write(&journal, bytes).unwrap();
            let (seen, listed, _) = judge(&fx, &model);
            for (n, s) in &seen {
                assert!(
                    matches!(s, Seen::Exact | Seen::Eio),
                    "{stop}: journal {what}: {n} reads {s:?}"
                );
            }
            assert!(
                listed.iter().all(|n| model.contains_key(n)),
                "{stop}: journal {what}: lists {listed:?}"
            );
            let rep = fsck::fsck(&fx.plfs(), &fx.path("d"), &FsckOptions::default()).unwrap();
            assert!(
                rep.findings.iter().any(|f| f.problem && f.kind == Kind::BadJournal),
                "{stop}: journal {what}: fsck: {:#?}",
                rep.findings
            );
        }
        std::fs::write(&journal, &pristine).unwrap();
        // fsck --repair, on a few of the damages each in a fresh directory: it removes a journal
        // only where its compaction never published (every old log is there), and leaves one it
        // cannot judge; what reads afterwards is still exact or EIO.
        for (k, (what, bytes)) in damaged.iter().enumerate().filter(|(k, _)| k % 97 == 0) {
            let tag = format!("{tag}-r{k}");
            let fx = Fixture::small(&tag, 1, GlobalParams::default());
            let model = committed_dir(&fx, &tag, stop);
            std::fs::write(fx.canonical[0].join("d/.plfs_small/compact.journal"), bytes).unwrap();
            let opts = FsckOptions {
                repair: true,
                tmp_min_age: std::time::Duration::ZERO,
                ..FsckOptions::default()
            };
            fsck::fsck(&fx.plfs(), &fx.path("d"), &opts).unwrap();
            let (seen, listed, _) = judge(&fx, &model);
            for (n, s) in &seen {
                assert!(
                    matches!(s, Seen::Exact | Seen::Eio),
                    "{stop}: journal {what}, after fsck --repair: {n} reads {s:?}"
                );
            }
            assert!(listed.iter().all(|n| model.contains_key(n)), "{listed:?}");
            let exact = seen.values().all(|s| *s == Seen::Exact);
            assert_eq!(
                exact,
                stop == "sys::rename",
                "{stop}: journal {what}, after fsck --repair: {seen:?}"
            );
        }
    }
}
