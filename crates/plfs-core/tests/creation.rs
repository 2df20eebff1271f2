//! How a file is created (format.md §1, issue 22): the name is claimed by `mkdir` in the build
//! mode and published by its marker. A directory in the build mode without a marker is a file
//! being created: absent to readers, waited for by other creators, finished by one of them when
//! its creator died, reported and removed by fsck; no logical directory may take that mode.

mod common;

use common::{arg, child_command, rw_create, Fixture};
use plfs_core::config::GlobalParams;
use plfs_core::fsck::{self, Kind, Options};
use plfs_core::{FileKind, OpenFlags};
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::Path;
use std::time::{Duration, Instant};

/// Makes `name` on the fixture's backend as a creator that stopped after its `mkdir` (and, with
/// `cid`, after its cid dropping) would leave it.
fn claimed(fx: &Fixture, name: &str, cid: Option<u128>) -> std::path::PathBuf {
    let d = fx.canonical[0].join(name);
    std::fs::DirBuilder::new().mode(0o1711).create(&d).unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o1711)).unwrap();
    if let Some(c) = cid {
        std::fs::create_dir(d.join("meta")).unwrap();
        std::fs::write(d.join("meta").join(format!("cid.{c:032x}")), b"").unwrap();
    }
    d
}

#[test]
fn a_file_being_created_is_absent_to_readers() {
    let fx = Fixture::simple("build-absent");
    claimed(&fx, "f", None);
    let p = fx.plfs();
    let e = p.stat(&fx.path("f")).unwrap_err();
    assert!(e.is_not_found(), "{e}");
    let names: Vec<_> = p.readdir(Path::new(common::MOUNT)).unwrap();
    assert!(names.is_empty(), "{names:?}");
    let ro = OpenFlags {
        read: true,
        ..Default::default()
    };
    assert!(p.open(&fx.path("f"), ro, 0, 1).unwrap_err().is_not_found());
    // A mkdir of the name finds it taken.
    assert_eq!(p.mkdir(&fx.path("f"), 0o755).unwrap_err().raw_errno(), libc_eexist());
}

fn libc_eexist() -> i32 {
    17
}

#[test]
fn a_second_creator_waits_for_the_first_and_opens_its_file() {
    let fx = Fixture::simple("build-wait");
    let d = claimed(&fx, "f", None);
    // The "first creator" publishes after 300 ms: meta/, its cid dropping, the marker, the mode.
    let pub_dir = d.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        let cid = 0x1234_5678_9abc_def0_1122_3344_5566_7788u128;
        std::fs::create_dir(pub_dir.join("meta")).unwrap();
        std::fs::write(pub_dir.join("meta").join(format!("cid.{cid:032x}")), b"").unwrap();
        let mut m = Vec::new();
        m.extend_from_slice(b"PLFSCTR\0");
        m.extend_from_slice(&2u32.to_le_bytes());
        m.extend_from_slice(&0u32.to_le_bytes());
        m.extend_from_slice(&cid.to_le_bytes());
        m.extend_from_slice(&1u64.to_le_bytes());
        m.extend_from_slice(&0u32.to_le_bytes());
        let crc = common::crc(&m);
        m.extend_from_slice(&crc.to_le_bytes());
        std::fs::write(pub_dir.join(".plfscontainer"), &m).unwrap();
        std::fs::set_permissions(&pub_dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    });
    let p = fx.plfs();
    let start = Instant::now();
    let f = p.open(&fx.path("f"), rw_create(), 0o644, 1).unwrap();
    let waited = start.elapsed();
    t.join().unwrap();
    assert!(
        waited >= Duration::from_millis(250),
        "opened after {waited:?}, before it was published"
    );
    assert!(waited < Duration::from_secs(5), "waited {waited:?}");
    f.write(b"second", 0).unwrap();
    f.close().unwrap();
    assert_eq!(common::get(&fx.plfs(), &fx.path("f")), b"second");
    let cids: Vec<_> = std::fs::read_dir(d.join("meta"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("cid."))
        .collect();
    assert_eq!(cids.len(), 1, "{cids:?}");
}

/// Opens (creating) `f`, claimed by a creator that died with container id `cid`: the open waits
/// for the patience, then finishes the container with that id and the caller's mode.
fn adopt_and_check(fx: &Fixture, d: &Path, cid: u128) {
    let p = fx.plfs();
    let start = Instant::now();
    let f = p.open(&fx.path("f"), rw_create(), 0o640, 1).unwrap();
    assert!(
        start.elapsed() >= Duration::from_secs(9),
        "adopted after {:?}",
        start.elapsed()
    );
    f.write(b"adopted", 0).unwrap();
    f.close().unwrap();
    let st = fx.plfs().stat(&fx.path("f")).unwrap();
    assert_eq!((st.kind, st.size, st.mode & 0o7777), (FileKind::File, 7, 0o640));
    assert_eq!(common::get(&fx.plfs(), &fx.path("f")), b"adopted");
    let dmode = std::fs::metadata(d).unwrap().permissions().mode() & 0o7777;
    assert_eq!(dmode, 0o751, "the container directory's mode");
    let m = std::fs::read(d.join(".plfscontainer")).unwrap();
    assert_eq!(m.len(), 48);
    assert_eq!(u128::from_le_bytes(m[16..32].try_into().unwrap()), cid);
}

#[test]
fn an_abandoned_create_is_finished_by_the_next_creator_with_its_id() {
    let fx = Fixture::simple("build-adopt");
    let cid = 0xfeed_u128 << 64 | 0xbeef;
    let d = claimed(&fx, "f", Some(cid));
    adopt_and_check(&fx, &d, cid);
}

/// An exclusive create of a name whose creator died succeeds (the name is absent: stat says
/// so); one of a name another process is creating, or made, fails with EEXIST.
#[test]
fn an_exclusive_create_finishes_an_abandoned_one_and_loses_to_a_live_one() {
    let fx = Fixture::simple("build-excl");
    claimed(&fx, "f", Some(9));
    let excl = OpenFlags {
        write: true,
        create: true,
        excl: true,
        ..Default::default()
    };
    let p = fx.plfs();
    let f = p.open(&fx.path("f"), excl, 0o644, 1).unwrap();
    f.write(b"mine", 0).unwrap();
    f.close().unwrap();
    assert_eq!(common::get(&fx.plfs(), &fx.path("f")), b"mine");
    assert_eq!(
        p.open(&fx.path("f"), excl, 0o644, 1).unwrap_err().raw_errno(),
        libc_eexist()
    );
}

#[test]
fn fsck_reports_and_removes_an_abandoned_create() {
    let fx = Fixture::simple("build-fsck");
    let d = claimed(&fx, "f", Some(7));
    let p = fx.plfs();
    fsck_reports_and_removes(&p, &d);
    assert_eq!(
        fsck::fsck(&p, Path::new(common::MOUNT), &Options::default())
            .unwrap()
            .exit_code(),
        0
    );
}

/// fsck of the mount reports the claimed directory `d` as debris of a create, nothing as a bad
/// marker, and its repair (with no minimum age) removes it.
fn fsck_reports_and_removes(p: &plfs_core::Plfs, d: &Path) {
    let root = Path::new(common::MOUNT);
    let rep = fsck::fsck(p, root, &Options::default()).unwrap();
    assert_eq!(rep.of(Kind::TmpDebris).len(), 1, "{:#?}", rep.findings);
    assert!(rep.of(Kind::BadMarker).is_empty(), "{:#?}", rep.findings);
    let opts = Options {
        repair: true,
        tmp_min_age: Duration::ZERO,
        ..Options::default()
    };
    fsck::fsck(p, root, &opts).unwrap();
    assert!(!d.exists());
}

#[test]
fn no_logical_directory_gets_the_build_mode() {
    let fx = Fixture::simple("build-refuse");
    let p = fx.plfs();
    assert_eq!(p.mkdir(&fx.path("d"), 0o1711).unwrap_err().raw_errno(), 22);
    assert!(p.stat(&fx.path("d")).unwrap_err().is_not_found());
    p.mkdir(&fx.path("d"), 0o755).unwrap();
    assert_eq!(p.chmod(&fx.path("d"), 0o1700).unwrap_err().raw_errno(), 22);
    p.chmod(&fx.path("d"), 0o1777).unwrap();
    assert_eq!(p.stat(&fx.path("d")).unwrap().mode & 0o7777, 0o1777);
}

/// Gives a claimed directory the marker its creator made and was killed before writing (0
/// bytes), last modified `age` ago.
fn unwritten_marker(d: &Path, age: Duration) {
    let m = std::fs::File::create(d.join(".plfscontainer")).unwrap();
    m.set_modified(std::time::SystemTime::now() - age).unwrap();
}

/// The crash test's finding (CI of db413b2): a creator killed between making its marker and
/// writing it leaves a 0-byte marker in a directory in the build mode. That is a file still being
/// created, not a damaged one: absent to readers, debris to fsck.
#[test]
fn a_marker_not_yet_written_is_a_file_being_created() {
    let fx = Fixture::simple("build-unwritten");
    let d = claimed(&fx, "f", Some(5));
    unwritten_marker(&d, Duration::ZERO);
    let p = fx.plfs();
    assert!(p.stat(&fx.path("f")).unwrap_err().is_not_found());
    let names: Vec<_> = p.readdir(Path::new(common::MOUNT)).unwrap();
    assert!(names.is_empty(), "{names:?}");
    fsck_reports_and_removes(&p, &d);
    let root = Path::new(common::MOUNT);
    // Once the directory has its container mode, a short marker is damage again.
    let f = p.open(&fx.path("g"), rw_create(), 0o644, 1).unwrap();
    f.close().unwrap();
    std::fs::write(fx.canonical[0].join("g").join(".plfscontainer"), b"").unwrap();
    let rep = fsck::fsck(&p, root, &Options::default()).unwrap();
    assert_eq!(rep.of(Kind::BadMarker).len(), 1, "{:#?}", rep.findings);
}

#[test]
fn an_abandoned_create_with_an_unwritten_marker_is_finished_with_its_id() {
    let fx = Fixture::simple("build-adopt-unwritten");
    let cid = 0xabcd_u128 << 64 | 0x1234;
    let d = claimed(&fx, "f", Some(cid));
    unwritten_marker(&d, Duration::from_secs(60));
    adopt_and_check(&fx, &d, cid);
}

/// Concurrent creators of one name all open the one file: none may see the directory between
/// its marker and its mode (found by the crash test: a look-up that stat'ed the marker before
/// it existed and the directory after it left the build mode said `EISDIR`).
#[test]
fn concurrent_creators_of_a_name_all_open_it() {
    let fx = Fixture::simple("build-race");
    let instances: Vec<_> = (0..6).map(|_| std::sync::Arc::new(fx.plfs())).collect();
    for round in 0..1500 {
        let path = fx.path(&format!("f{round}"));
        let gate = std::sync::Arc::new(std::sync::Barrier::new(instances.len()));
        let handles: Vec<_> = instances
            .iter()
            .map(|p| {
                let (p, path, gate) = (p.clone(), path.clone(), gate.clone());
                std::thread::spawn(move || {
                    gate.wait();
                    let f = p
                        .open(&path, rw_create(), 0o644, 1)
                        .unwrap_or_else(|e| panic!("round {round}: {e}"));
                    f.close().unwrap();
                    true
                })
            })
            .collect();
        let made: Vec<bool> = handles.into_iter().map(|t| t.join().unwrap()).collect();
        assert_eq!(made.len(), instances.len());
        let st = instances[0].stat(&path).unwrap();
        assert_eq!(st.kind, FileKind::File);
    }
}

/// Every writer after the first of a file opens the hostdir the first one made instead of
/// trying to make it (issue 22, brick operations per writer): a `mkdir` that fails with `EEXIST`
/// takes the directory's locks on every brick of a GlusterFS volume. The creator makes its
/// hostdir without looking for it first (its container is new). A version 3 container is one
/// directory: its creator makes nothing else, whatever writers follow.
#[test]
fn later_writers_make_no_directory() {
    // (container format, num_hostdirs, directories its creator makes): the container, and in
    // format 2 `meta/`, and a hostdir where there are hostdirs.
    for (format, hostdirs, made) in [(3, 1, 1), (3, 32, 2), (2, 32, 3)] {
        later_writers_make_no_directory_in(format, hostdirs, made);
    }
}

fn later_writers_make_no_directory_in(format: u32, hostdirs: u32, made: u64) {
    let g = GlobalParams {
        container_format: format,
        num_hostdirs: hostdirs,
        ..Default::default()
    };
    let fx = Fixture::new(&format!("later-writers-{format}-{hostdirs}"), 1, 0, g);
    let path = fx.path("n1");
    let mkdirs = common::call_counter(&fx, "sys::mkdir");
    let (p1, p2) = (fx.plfs(), fx.plfs());
    let before = mkdirs();
    let f1 = p1.open(&path, rw_create(), 0o644, 1).unwrap();
    f1.write(b"first", 0).unwrap();
    assert_eq!(
        mkdirs() - before,
        made,
        "directories made by the creator (format {format}, {hostdirs} hostdirs)"
    );
    let before = mkdirs();
    let f2 = p2.open(&path, rw_create(), 0o644, 2).unwrap();
    f2.write(b"second", 5).unwrap();
    f2.close().unwrap();
    assert_eq!(mkdirs() - before, 0, "directories the second writer tried to make");
    f1.close().unwrap();
    let mut buf = [0u8; 11];
    let f = p1.open(&path, rw_create(), 0o644, 3).unwrap();
    assert_eq!(f.read(&mut buf, 0).unwrap(), 11);
    assert_eq!(&buf, b"firstsecond");
    f.close().unwrap();
}

/// A writer keeps `meta/` and its hostdir open only as bases of `*at` calls (`O_PATH`): a FUSE
/// backend then sees a look-up where it saw an open and a release of each directory (on the
/// GlusterFS volume 12 brick operations per writer). In a one-directory container (format 3) it
/// holds the container itself twice: once open for real, with its shared lock, and once
/// `O_PATH` on a description of its own, for its logs (a duplicate would share the lock, and
/// keep an unlinked file from being deleted at its last close). Read from `/proc/self/fdinfo`.
#[test]
fn a_writer_holds_its_directories_as_paths_only() {
    for format in [3, 2] {
        let g = GlobalParams {
            container_format: format,
            num_hostdirs: if format == 2 { 32 } else { 1 },
            ..Default::default()
        };
        let fx = Fixture::new(&format!("path-only-{format}"), 1, 0, g);
        let path = fx.path("n1");
        let p = fx.plfs();
        let f = p.open(&path, rw_create(), 0o644, 1).unwrap();
        f.write(b"data", 0).unwrap();
        f.sync().unwrap();
        let c = fx.container_dir("n1");
        const O_PATH: u32 = 0o10000000;
        let mut held = Vec::new();
        for e in std::fs::read_dir("/proc/self/fd").unwrap() {
            let e = e.unwrap();
            let Ok(target) = std::fs::read_link(e.path()) else {
                continue;
            };
            if target.parent() != Some(c.as_path()) && target != c || !target.is_dir() {
                continue;
            }
            let info =
                std::fs::read_to_string(format!("/proc/self/fdinfo/{}", e.file_name().to_string_lossy())).unwrap();
            let flags = info.lines().find_map(|l| l.strip_prefix("flags:")).unwrap().trim();
            let flags = u32::from_str_radix(flags, 8).unwrap();
            let name = if target == c {
                ".".to_string()
            } else {
                target.file_name().unwrap().to_string_lossy().into_owned()
            };
            held.push((name, flags & O_PATH != 0));
        }
        held.sort();
        if format == 2 {
            assert!(
                held.iter().any(|(n, _)| n == "meta") && held.iter().any(|(n, _)| n.starts_with("hostdir.")),
                "{held:?}"
            );
        } else {
            let own: Vec<bool> = held.iter().filter(|(n, _)| n == ".").map(|(_, p)| *p).collect();
            assert_eq!(
                own.iter().filter(|p| !**p).count(),
                1,
                "the container open for real: {held:?}"
            );
            assert!(
                own.iter().any(|p| *p),
                "the writer's handle on its logs' directory: {held:?}"
            );
            assert!(held.iter().all(|(n, _)| n == "."), "no other directory: {held:?}");
        }
        for (name, path_only) in held.iter().filter(|(n, _)| n != ".") {
            assert!(path_only, "{name} held open for real: {held:?}");
        }
        f.close().unwrap();
    }
}

/// A stat of a closed file opens only the directory of its droppings (to list it) and the index
/// log of the writer whose close dropping gives its size: the container is looked up
/// (`O_PATH`), not opened. A last close opens nothing when the file was not unlinked and no
/// compaction left work behind, where it used to open the container again to try its lock:
/// on a FUSE backend each of those was an open and a release of a directory (GlusterFS: 6 brick
/// operations per stat and per close). An unlink, on the other hand, still deletes the file of
/// a process that holds it open at that process's last close.
#[test]
fn stat_and_close_open_no_container() {
    let fx = Fixture::simple("stat-close-opens");
    let path = fx.path("n1");
    let opened = common::call_counter(&fx, "sys::open");
    let p = fx.plfs();
    let f = p.open(&path, rw_create(), 0o644, 1).unwrap();
    f.write(b"data", 0).unwrap();
    let before = opened();
    f.close().unwrap();
    assert_eq!(opened() - before, 0, "directories and files a writer's close opened");

    let q = fx.plfs();
    // Its first call opens the backend's root, once per instance.
    assert_eq!(q.stat(&fx.path("")).unwrap().kind, FileKind::Dir);
    let before = opened();
    assert_eq!(q.stat(&path).unwrap().size, 4);
    // The droppings' directory, and the index log of the writer whose close dropping gives
    // the size, which holds that size to its records (issue 50: sizes in names are not trusted).
    assert_eq!(
        opened() - before,
        2,
        "opens by a stat of a closed file (the droppings' directory and one index log)"
    );

    let r = q.open(&path, common::ro(), 0, 2).unwrap();
    let mut buf = [0u8; 8];
    assert_eq!(r.read(&mut buf, 0).unwrap(), 4);
    let before = opened();
    r.close().unwrap();
    assert_eq!(opened() - before, 0, "opens by a reader's close");

    // The protocol still deletes: unlinked while open elsewhere, gone at that last close.
    let backend = fx.container_dir("n1").parent().unwrap().to_path_buf();
    let r = q.open(&path, common::ro(), 0, 3).unwrap();
    p.unlink(&path).unwrap();
    let trashed = || {
        std::fs::read_dir(&backend)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with(".plfstmp.rm.")
            })
            .count()
    };
    assert_eq!(trashed(), 1, "the unlinked container waits for its holder");
    r.close().unwrap();
    assert_eq!(trashed(), 0, "the holder's last close deleted it");
}

/// A handle reaches the writer of its opener's pid without a look-up (issue 26); once that
/// writer is closed (`close_writer`, as when a forked process lets go of its share), the pid's
/// next write gets a new writer, and every byte reaches a reader.
#[test]
fn a_pid_writes_again_after_its_writer_closed() {
    let fx = Fixture::simple("write-after-close-writer");
    let path = fx.path("n1");
    let p = fx.plfs();
    let f = p.open(&path, rw_create(), 0o644, 7).unwrap();
    assert_eq!(f.write(b"first", 0).unwrap(), 5);
    f.close_writer(7).unwrap();
    assert_eq!(f.write(b"second", 5).unwrap(), 6);
    assert_eq!(f.write_as(b"third", 11, 8).unwrap(), 5);
    f.close().unwrap();
    let q = fx.plfs();
    let r = q.open(&path, common::ro(), 0, 9).unwrap();
    let mut buf = [0u8; 32];
    assert_eq!(r.read(&mut buf, 0).unwrap(), 16);
    assert_eq!(&buf[..16], b"firstsecondthird");
    r.close().unwrap();
    assert_eq!(fx.logs("n1", "data.").len(), 3, "one data log per writer session");
}

/// The test that child processes run.
const ENTRY: &str = "child_entry";

/// Entry point of child processes; does nothing in a normal test run.
#[test]
fn child_entry() {
    let Some(role) = common::child_role() else { return };
    match role.as_str() {
        "create" => {
            let rc = std::path::PathBuf::from(arg("RC"));
            let p = plfs_core::Plfs::new(plfs_core::Config::from_file(&rc).unwrap()).unwrap();
            common::put(&p, Path::new(&arg("PATH")), arg("DATA").as_bytes());
        }
        r => panic!("unknown child role {r}"),
    }
}

/// A child process that creates `name` (writing `data`) with the failpoints `points` armed.
fn creator(fx: &Fixture, name: &str, data: &str, points: &str) -> std::process::Command {
    let mut c = child_command(
        ENTRY,
        "create",
        &[
            ("RC", fx.rc.display().to_string()),
            ("PATH", fx.path(name).display().to_string()),
            ("DATA", data.to_string()),
        ],
    );
    c.env("PLFS_FAILPOINTS", points);
    // A process group of its own: a stopped process in a group the kernel takes for orphaned
    // (its members' parents all in it, or in another session) is continued (SIGHUP, SIGCONT)
    // when a member exits, as the killed creators of the other tests do.
    std::os::unix::process::CommandExt::process_group(&mut c, 0);
    c.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    c
}

/// The failpoints that kill a create before its marker is published: before the marker is
/// made, and after it is made but before its bytes are written.
const BEFORE_MARKER: [&str; 2] = [
    "sys::create[.plfscontainer]=kill",
    "sys::pwrite_all[.plfscontainer]=kill",
];

/// Issue 50: a create killed before its marker (as a killed `cp`, or `plfs cp -r` leaving
/// `.plfs-cp.<pid>.*`) left a directory that listed empty and that `rmdir`, `rm -r` and
/// `plfs rm -r` could not remove (`ENOTEMPTY`, still after 46 minutes). Its creator is gone
/// (nobody holds its lock): the rmdir removes it, and the directory goes.
#[test]
fn a_directory_whose_only_entry_is_a_killed_create_is_removable() {
    for (i, point) in BEFORE_MARKER.iter().enumerate() {
        let fx = Fixture::simple(&format!("killed-create-rmdir-{i}"));
        let p = fx.plfs();
        p.mkdir(&fx.path("d"), 0o755).unwrap();
        let out = creator(&fx, "d/f", "never", point).output().unwrap();
        assert!(!out.status.success(), "{point}: the creator was not killed");
        let build = fx.canonical[0].join("d").join("f");
        assert!(build.is_dir(), "{point}: no half-built file left to test with");
        assert!(p.stat(&fx.path("d/f")).unwrap_err().is_not_found(), "{point}");
        assert!(p.readdir(&fx.path("d")).unwrap().is_empty(), "{point}");
        p.rmdir(&fx.path("d"))
            .unwrap_or_else(|e| panic!("{point}: rmdir of a directory holding a killed create: {e}"));
        assert!(
            !fx.canonical[0].join("d").exists(),
            "{point}: the directory is still there"
        );
        assert!(p.stat(&fx.path("d")).unwrap_err().is_not_found(), "{point}");
    }
}

/// fsck's repair removes a killed create at once (its lock is free), where it refused for the
/// first 60 s (`tmp_min_age`) whatever the creator was doing.
#[test]
fn fsck_removes_a_killed_create_at_once() {
    for (i, point) in BEFORE_MARKER.iter().enumerate() {
        let fx = Fixture::simple(&format!("killed-create-fsck-{i}"));
        let p = fx.plfs();
        let out = creator(&fx, "f", "never", point).output().unwrap();
        assert!(!out.status.success(), "{point}: the creator was not killed");
        let build = fx.canonical[0].join("f");
        assert!(build.is_dir(), "{point}");
        let root = Path::new(common::MOUNT);
        let rep = fsck::fsck(&p, root, &Options::default()).unwrap();
        assert_eq!(rep.of(Kind::TmpDebris).len(), 1, "{point}: {:#?}", rep.findings);
        let repair = Options {
            repair: true,
            ..Options::default()
        };
        fsck::fsck(&p, root, &repair).unwrap();
        assert!(!build.exists(), "{point}: fsck --repair left a killed create in place");
        // The name is free again: a new create makes the file.
        common::put(&p, &fx.path("f"), b"again");
        assert_eq!(common::get(&fx.plfs(), &fx.path("f")), b"again");
    }
}

/// Waits until process `pid` is stopped (state `T` in /proc/PID/stat).
fn wait_stopped(pid: u32) {
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let state = stat.rsplit_once(") ").map(|(_, r)| r.chars().next().unwrap());
        if state == Some('T') {
            return;
        }
        assert!(Instant::now() < until, "the creator never stopped: {stat}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A create whose creator is alive (stopped with SIGSTOP right before it makes its marker, well
/// past any age a guess would give it) is not destroyed: rmdir of its directory says
/// `ENOTEMPTY` as on a plain file system, fsck's repair leaves it; continued, the creator
/// finishes its file, which reads whole.
#[test]
fn a_live_create_is_never_removed() {
    let fx = Fixture::simple("live-create");
    let p = fx.plfs();
    p.mkdir(&fx.path("d"), 0o755).unwrap();
    let mut child = creator(&fx, "d/f", "alive", "sys::create[.plfscontainer]=stop")
        .spawn()
        .unwrap();
    wait_stopped(child.id());
    let build = fx.canonical[0].join("d").join("f");
    assert!(build.is_dir());
    common::assert_errno(
        p.rmdir(&fx.path("d")),
        rustix::io::Errno::NOTEMPTY,
        "rmdir under a live create",
    );
    let repair = Options {
        repair: true,
        tmp_min_age: Duration::ZERO,
        ..Options::default()
    };
    let rep = fsck::fsck(&p, Path::new(common::MOUNT), &repair).unwrap();
    assert_eq!(rep.of(Kind::TmpDebris).len(), 1, "{:#?}", rep.findings);
    assert!(build.is_dir(), "fsck --repair removed a live create");
    let names: Vec<_> = std::fs::read_dir(&build)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(names.is_empty(), "the creator stopped before its marker: {names:?}");
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::CONT).unwrap();
    let status = child.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert!(status.success(), "the creator, continued: {status}: {err}");
    assert_eq!(common::get(&fx.plfs(), &fx.path("d/f")), b"alive");
    p.unlink(&fx.path("d/f")).unwrap();
    p.rmdir(&fx.path("d")).unwrap();
    assert!(!fx.canonical[0].join("d").exists());
}
