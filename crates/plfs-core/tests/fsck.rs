//! fsck and verify on hand-made damage: each test breaks a container the way a crash, a failed
//! disk or a person would, checks that fsck reports it under the right code and exit status, that
//! `--repair` fixes it without changing a byte of the file, and that a second run is clean.

mod common;

use common::{assert_bytes_eq, pattern, read_fresh, rw_create, Fixture};
use plfs_core::config::GlobalParams;
use plfs_core::fsck::{self, Kind, Options, Repair};
use std::path::{Path, PathBuf};
use std::time::Duration;

fn dead_pid() -> u32 {
    let mut c = std::process::Command::new("true").spawn().expect("spawn true");
    let pid = c.id();
    c.wait().expect("wait");
    pid
}

fn repair() -> Options {
    Options {
        repair: true,
        tmp_min_age: Duration::ZERO,
        ..Options::default()
    }
}

/// Writes file `name` as writer `pid`: three writes, closed unless `leave_open` (then the handle
/// is leaked as a killed process would leave it). Returns the expected contents.
fn write_file(fx: &Fixture, name: &str, pid: u32, leave_open: bool) -> Vec<u8> {
    let p = fx.plfs();
    let f = p.open(&fx.path(name), rw_create(), 0o640, pid).unwrap();
    let mut want = vec![0u8; 9000];
    for (i, off) in [0u64, 3000, 6000].into_iter().enumerate() {
        let d = pattern(i as u64, off, 3000);
        f.write(&d, off).unwrap();
        want[off as usize..off as usize + 3000].copy_from_slice(&d);
    }
    f.sync().unwrap();
    if leave_open {
        std::mem::forget(f); // no close: its open record stays, as after a SIGKILL
        std::mem::forget(p);
    } else {
        f.close().unwrap();
    }
    want
}

/// fsck (check) must report `kind` with exit 4; repair must give exit 1 and keep the data; a
/// second check must be clean.
fn report_repair_clean(fx: &Fixture, name: &str, kind: Kind, want: &[u8]) {
    let path = fx.path(name);
    let rep = fsck::fsck(&fx.plfs(), &path, &Options::default()).unwrap();
    assert!(!rep.of(kind).is_empty(), "{kind:?} not reported: {:#?}", rep.findings);
    assert_eq!(rep.exit_code(), 4, "{:#?}", rep.findings);
    let rep = fsck::fsck(&fx.plfs(), &path, &repair()).unwrap();
    assert!(
        rep.of(kind).iter().all(|f| matches!(f.repair, Repair::Done(_))),
        "{kind:?} not repaired: {:#?}",
        rep.findings
    );
    assert_eq!(rep.exit_code(), 1, "{:#?}", rep.findings);
    let again = fsck::fsck(&fx.plfs(), &path, &Options::default()).unwrap();
    assert_eq!(again.exit_code(), 0, "{:#?}", again.findings);
    assert_bytes_eq(&read_fresh(fx, &path).unwrap(), want, "after repair");
    assert_eq!(fx.plfs().stat(&path).unwrap().size, want.len() as u64);
}

fn meta(fx: &Fixture, name: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(fx.meta_dir(name))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn clean_file_exit_0() {
    let fx = Fixture::simple("fsck-clean");
    write_file(&fx, "f", dead_pid(), false);
    let rep = fsck::fsck(&fx.plfs(), &fx.path("f"), &Options::default()).unwrap();
    assert_eq!(rep.exit_code(), 0, "{:#?}", rep.findings);
    assert_eq!((rep.containers, rep.writers, rep.records), (1, 1, 3));
}

#[test]
fn stale_open_record_becomes_a_close_record() {
    let fx = Fixture::simple("fsck-stale");
    let want = write_file(&fx, "f", dead_pid(), true);
    assert!(meta(&fx, "f").iter().any(|n| n.starts_with("open.")));
    report_repair_clean(&fx, "f", Kind::StaleOpen, &want);
    let m = meta(&fx, "f");
    assert!(m.iter().all(|n| !n.starts_with("open.")), "{m:?}");
    assert!(m.iter().any(|n| n.starts_with("close.")), "{m:?}");
    // Truncate-to-zero can now reclaim the data (no open record blocks the wipe).
    fx.plfs().truncate(&fx.path("f"), 0).unwrap();
    assert!(fx.logs("f", "data.").is_empty());
}

/// A close that made its close record but died before removing its open record (the two steps
/// that replaced one rename in issue 22) leaves both: fsck removes the open record and keeps the
/// close record stat reads.
#[test]
fn open_and_close_records_of_one_writer_keep_the_close_record() {
    let fx = Fixture::simple("fsck-both");
    let pid = dead_pid();
    let want = write_file(&fx, "f", pid, false);
    let close = meta(&fx, "f").into_iter().find(|n| n.starts_with("close.")).unwrap();
    let writer = close.split('.').nth(1).unwrap().to_string();
    let open = fx
        .meta_dir("f")
        .join(format!("open.{writer}.{pid}.{}", plfs_core::hostname()));
    std::fs::write(&open, b"").unwrap();
    // While both are there, stat takes the merged index and is still right.
    assert_eq!(fx.plfs().stat(&fx.path("f")).unwrap().size, want.len() as u64);
    report_repair_clean(&fx, "f", Kind::OpenAndClosed, &want);
    assert_eq!(meta(&fx, "f").iter().filter(|n| n.starts_with("close.")).count(), 1);
    assert!(meta(&fx, "f").iter().all(|n| !n.starts_with("open.")));
}

#[test]
fn live_writer_is_left_alone() {
    let fx = Fixture::simple("fsck-live");
    let p = fx.plfs();
    let f = p.open(&fx.path("f"), rw_create(), 0o644, plfs_core::pid()).unwrap();
    f.write(b"hello", 0).unwrap();
    f.sync().unwrap();
    let rep = fsck::fsck(&fx.plfs(), &fx.path("f"), &repair()).unwrap();
    assert_eq!(rep.of(Kind::LiveWriter).len(), 1, "{:#?}", rep.findings);
    assert_eq!(rep.exit_code(), 0);
    assert!(meta(&fx, "f").iter().any(|n| n.starts_with("open.")));
    f.close().unwrap();
}

/// Repairs that rewrite a log go by the bytes read, never by a size that lags behind them (a
/// network file system's cached attributes; here the `sys::stale_size` failpoint makes every stat
/// of this fixture's files say 0, and stays armed for this fixture only): a bad index header is
/// rebuilt from the data log's with every record behind it kept. Before, the rebuilt log was cut
/// to the size its stat gave, which would have dropped the records after it.
#[test]
fn a_bad_index_header_is_rebuilt_by_the_bytes_not_by_a_size_that_lags() {
    let fx = Fixture::simple("fsck-lag");
    let want = write_file(&fx, "f", dead_pid(), false);
    let ix = fx.logs("f", "index.").remove(0);
    let whole = std::fs::read(&ix).unwrap();
    let mut b = whole.clone();
    b[..4].copy_from_slice(b"XXXX");
    std::fs::write(&ix, &b).unwrap();
    let lagged = common::lagging_sizes(&fx);
    report_repair_clean(&fx, "f", Kind::BadIndexHeader, &want);
    let now = std::fs::read(&ix).unwrap();
    assert_eq!(
        (now.len(), &now[64..]),
        (whole.len(), &whole[64..]),
        "every record kept"
    );
    assert!(lagged() > 0, "no stat reached the failpoint");
}

#[test]
fn torn_and_corrupt_index_tails() {
    let fx = Fixture::simple("fsck-tails");
    let want = write_file(&fx, "f", dead_pid(), false);
    let ix = fx.logs("f", "index.").remove(0);
    let len = std::fs::metadata(&ix).unwrap().len();
    // A torn record at the end (a writer killed mid-append).
    let mut b = std::fs::read(&ix).unwrap();
    b.extend_from_within(64..64 + 20);
    std::fs::write(&ix, &b).unwrap();
    report_repair_clean(&fx, "f", Kind::TornIndexTail, &want);
    assert_eq!(std::fs::metadata(&ix).unwrap().len(), len);
    // A complete but bad record after the last one.
    let mut b = std::fs::read(&ix).unwrap();
    b.extend_from_slice(&[1, 0, 40, 0]); // a whole WRITE frame whose checksum is wrong
    b.extend_from_slice(&[0xa5; 44]);
    std::fs::write(&ix, &b).unwrap();
    report_repair_clean(&fx, "f", Kind::CorruptIndexTail, &want);
    assert_eq!(std::fs::metadata(&ix).unwrap().len(), len);
}

#[test]
fn bad_record_in_the_middle_is_not_truncated() {
    let fx = Fixture::new(
        "fsck-middle",
        1,
        0,
        GlobalParams {
            index_compression: false,
            ..GlobalParams::default()
        },
    );
    write_file(&fx, "f", dead_pid(), false);
    let ix = fx.logs("f", "index.").remove(0);
    let mut b = std::fs::read(&ix).unwrap();
    let len = b.len();
    b[64 + 10] ^= 0xff; // first record
    std::fs::write(&ix, &b).unwrap();
    let rep = fsck::fsck(&fx.plfs(), &fx.path("f"), &repair()).unwrap();
    let f = rep.of(Kind::CorruptIndexMiddle);
    assert_eq!(f.len(), 1, "{:#?}", rep.findings);
    assert!(matches!(f[0].repair, Repair::Manual(_)));
    assert_eq!(f[0].path, ix);
    assert_eq!(rep.exit_code(), 4);
    assert_eq!(
        std::fs::read(&ix).unwrap().len(),
        len,
        "records after the bad one must be kept"
    );
}

/// A version 2 container keeps its id twice, in `meta/cid.*` and in its marker: either one
/// restores the other.
#[test]
fn missing_cid_and_bad_marker() {
    let g = plfs_core::config::GlobalParams {
        container_format: 2,
        ..Default::default()
    };
    let fx = Fixture::new("fsck-cid", 1, 0, g);
    let want = write_file(&fx, "f", dead_pid(), false);
    let c = fx.container_dir("f");
    let cid = meta(&fx, "f").into_iter().find(|n| n.starts_with("cid.")).unwrap();
    std::fs::remove_file(c.join("meta").join(&cid)).unwrap();
    // The marker holds the second copy of the id: the file stays readable, byte for byte.
    let got = read_fresh(&fx, &fx.path("f")).unwrap();
    assert_bytes_eq(&got, &want, "data without a cid dropping");
    report_repair_clean(&fx, "f", Kind::MissingCid, &want);
    assert!(meta(&fx, "f").contains(&cid));
    // A damaged marker: rewritten with the same mode.
    let marker = c.join(".plfscontainer");
    let mode = std::fs::metadata(&marker).unwrap();
    let mut b = std::fs::read(&marker).unwrap();
    b[20] ^= 1;
    std::fs::write(&marker, &b).unwrap();
    report_repair_clean(&fx, "f", Kind::BadMarker, &want);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&marker).unwrap().permissions().mode(),
        mode.permissions().mode()
    );
}

/// A one-directory container (format 3) keeps its id in its marker alone: a damaged marker on a
/// mount without shadow backends (where the id names nothing) is rewritten with a new id, of
/// the same size (its layout), mode and times, and the file reads as before.
#[test]
fn a_bad_marker_of_a_one_directory_container_is_rewritten() {
    use std::os::unix::fs::PermissionsExt;
    let fx = Fixture::simple("fsck-marker3");
    let want = write_file(&fx, "f", dead_pid(), false);
    let marker = fx.container_dir("f").join(".plfscontainer");
    let before = std::fs::metadata(&marker).unwrap();
    assert_eq!(before.len(), 64);
    let mut b = std::fs::read(&marker).unwrap();
    b[20] ^= 1;
    std::fs::write(&marker, &b).unwrap();
    // Readers need the id only for shadow backends: the data reads as before.
    assert_bytes_eq(&read_fresh(&fx, &fx.path("f")).unwrap(), &want, "with a damaged marker");
    report_repair_clean(&fx, "f", Kind::BadMarker, &want);
    let after = std::fs::metadata(&marker).unwrap();
    assert_eq!(after.len(), 64);
    assert_eq!(after.permissions().mode(), before.permissions().mode());
}

#[test]
fn missing_and_contradictory_close_records() {
    let fx = Fixture::simple("fsck-close");
    let want = write_file(&fx, "f", dead_pid(), false);
    let mdir = fx.meta_dir("f");
    let close = meta(&fx, "f").into_iter().find(|n| n.starts_with("close.")).unwrap();
    std::fs::remove_file(mdir.join(&close)).unwrap();
    report_repair_clean(&fx, "f", Kind::MissingClose, &want);
    // A close record claiming a larger file than the index holds.
    let close = meta(&fx, "f").into_iter().find(|n| n.starts_with("close.")).unwrap();
    let mut parts: Vec<String> = close.split('.').map(str::to_string).collect();
    parts[4] = "99999".into();
    std::fs::rename(mdir.join(&close), mdir.join(parts.join("."))).unwrap();
    assert_eq!(
        fx.plfs().stat(&fx.path("f")).unwrap().size,
        want.len() as u64,
        "stat holds the dropping's eof to its writer's index log (issue 50)"
    );
    report_repair_clean(&fx, "f", Kind::ContradictoryClose, &want);
}

#[test]
fn orphan_logs_debris_and_shadows() {
    let fx = Fixture::simple("fsck-orphans");
    let want = write_file(&fx, "f", dead_pid(), false);
    let hostdir = fx.logs("f", "data.").remove(0).parent().unwrap().to_path_buf();
    // An empty data log (a writer killed right after creating it) is removed...
    let empty = hostdir.join("data.00000000000000aa.1.somehost");
    std::fs::write(&empty, b"").unwrap();
    report_repair_clean(&fx, "f", Kind::OrphanDataLog, &want);
    assert!(!empty.exists());
    // ...one holding data is kept (exit 4).
    let full = hostdir.join("data.00000000000000bb.1.somehost");
    std::fs::write(&full, vec![7u8; 500]).unwrap();
    let rep = fsck::fsck(&fx.plfs(), &fx.path("f"), &repair()).unwrap();
    assert!(matches!(rep.of(Kind::OrphanDataLog)[0].repair, Repair::Manual(_)));
    assert_eq!(rep.exit_code(), 4);
    assert!(full.exists());
    std::fs::remove_file(&full).unwrap();
    // Creation and deletion debris, and a shadow directory of no container, at the mount root.
    let root = &fx.canonical[0];
    let tmp = root.join(".plfstmp.g.00000000deadbeef");
    std::fs::create_dir_all(tmp.join("meta")).unwrap();
    let trash = root.join(".plfstmp.rm.00000000deadbeef");
    std::fs::create_dir_all(trash.join("meta")).unwrap();
    std::fs::write(trash.join("meta").join(format!("cid.{:032x}", 77)), b"").unwrap();
    let orphan = root.join(".plfs_shadow").join(format!("{:032x}", 78)).join("hostdir.1");
    std::fs::create_dir_all(&orphan).unwrap();
    let mount = PathBuf::from(common::MOUNT);
    // Young creation debris is left alone by default (a create may be running).
    let rep = fsck::fsck(
        &fx.plfs(),
        &mount,
        &Options {
            repair: true,
            ..Options::default()
        },
    )
    .unwrap();
    assert!(
        matches!(rep.of(Kind::TmpDebris)[0].repair, Repair::Manual(_)),
        "{:#?}",
        rep.findings
    );
    assert!(tmp.exists() && !trash.exists());
    let rep = fsck::fsck(&fx.plfs(), &mount, &repair()).unwrap();
    assert_eq!(rep.exit_code(), 1, "{:#?}", rep.findings);
    assert!(!tmp.exists() && !orphan.parent().unwrap().exists());
    assert_eq!(
        fsck::fsck(&fx.plfs(), &mount, &Options::default()).unwrap().exit_code(),
        0
    );
    assert_bytes_eq(
        &read_fresh(&fx, &fx.path("f")).unwrap(),
        &want,
        "f after the mount fsck",
    );
}

#[test]
fn verify_finds_a_flipped_data_byte() {
    let fx = Fixture::new(
        "fsck-verify",
        1,
        0,
        GlobalParams {
            data_checksums: true,
            ..GlobalParams::default()
        },
    );
    write_file(&fx, "f", dead_pid(), false);
    let v = fsck::verify(&fx.plfs(), &fx.path("f")).unwrap();
    assert_eq!((v.records, v.checked, v.unchecked, v.exit_code()), (3, 3, 0, 0));
    assert_eq!(v.bytes, 9000);
    let data = fx.logs("f", "data.").remove(0);
    let mut b = std::fs::read(&data).unwrap();
    // Write k's bytes follow its 32-byte frame: at 64 + k*(32 + 3000) + 32.
    let at = |k: usize| 64 + k * 3032 + 32;
    b[at(1) + 17] ^= 0x40; // second write, logical 3017
    std::fs::write(&data, &b).unwrap();
    let v = fsck::verify(&fx.plfs(), &fx.path("f")).unwrap();
    assert_eq!(v.mismatches.len(), 1, "{v:?}");
    let m = &v.mismatches[0];
    assert_eq!((m.logical_off, m.length, m.physical_off), (3000, 3000, at(1) as u64));
    assert_eq!(m.data_log, data);
    assert!(m.to_string().contains(&*data.to_string_lossy()));
    assert_eq!(v.exit_code(), 4);
    // A shortened data log: the record's data is missing.
    std::fs::write(&data, &b[..at(2) + 1000]).unwrap();
    let v = fsck::verify(&fx.plfs(), &fx.path("f")).unwrap();
    assert!(
        v.mismatches.iter().any(|m| m.actual.is_none() && m.logical_off == 6000),
        "{v:?}"
    );
}

#[test]
fn verify_without_checksums_checks_nothing() {
    let fx = Fixture::simple("fsck-nocrc");
    write_file(&fx, "f", dead_pid(), false);
    let v = fsck::verify(&fx.plfs(), &fx.path("f")).unwrap();
    assert_eq!((v.checked, v.unchecked, v.exit_code()), (0, 3, 0));
}

#[test]
fn not_found_is_an_error() {
    let fx = Fixture::simple("fsck-missing");
    let e = fsck::fsck(
        &fx.plfs(),
        Path::new(common::MOUNT).join("nope").as_path(),
        &Options::default(),
    )
    .unwrap_err();
    assert!(e.is_not_found());
}
