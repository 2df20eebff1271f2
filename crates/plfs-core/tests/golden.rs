//! Backward compatibility of on-disk format v1: containers written by plfs (made by
//! `examples/make_golden.rs`, expected bytes from an independent model) must read byte-exact in
//! every later version. Two writers' output is kept: `plfs-v1-golden-first.tar.gz`, written by
//! the first v1 writer (open records at open, data log headers at log creation, container
//! directories 0755), and `plfs-v1-golden.tar.gz`, written by the layered core (open records at
//! the first write renamed to close records, headers with the first data, container, hostdir and
//! `meta/` modes from the file's mode). Never regenerate a tarball to make this test pass: a
//! failure means a reader no longer reads what was written. A new writer adds a new tarball.

mod common;

use common::{read_all, ro, TempDir};
use plfs_core::config::{BackendRole, BackendSpec, GlobalParams, MountConfig, Workload};
use plfs_core::fsck::{self, Options};
use plfs_core::{Config, FileKind, Plfs};
use std::path::{Path, PathBuf};

const TARBALLS: [&str; 2] = ["plfs-v1-golden-first.tar.gz", "plfs-v1-golden.tar.gz"];

fn extracted(tarball: &str) -> (TempDir, Plfs, PathBuf) {
    let t = TempDir::new("golden");
    common::untar_fixture(tarball, t.path(), &[]);
    let m = |mp: &str, dir: &str, workload| MountConfig {
        mount_point: mp.into(),
        workload,
        backends: vec![BackendSpec {
            location: t.path().join(dir),
            role: BackendRole::Both,
        }],
    };
    let cfg = Config {
        files: vec![t.path().join("plfsrc")],
        global: GlobalParams::default(),
        mounts: vec![
            m("/golden/n1", "store", Workload::SharedFile),
            m("/golden/1n", "store1n", Workload::SmallFile),
        ],
        warnings: Vec::new(),
    };
    let p = Plfs::new(cfg).unwrap();
    let exp = t.path().join("expected");
    (t, p, exp)
}

const FILES: [&str; 8] = [
    "n1/strided",
    "n1/overwrites",
    "n1/truncated",
    "n1/flattened",
    "n1/checksummed",
    "1n/d/a",
    "1n/d/b",
    "1n/d/c",
];

#[test]
fn format_v1_golden_files_read_byte_exact() {
    for tarball in TARBALLS {
        golden_files_read_byte_exact(tarball);
    }
}

fn golden_files_read_byte_exact(tarball: &str) {
    let (_t, p, exp) = extracted(tarball);
    for name in FILES {
        let want = std::fs::read(exp.join(name)).unwrap();
        let path = Path::new("/golden").join(name);
        let st = p.stat(&path).unwrap();
        assert_eq!(
            (st.kind, st.size),
            (FileKind::File, want.len() as u64),
            "{tarball}: {name}: stat"
        );
        let f = p.open(&path, ro(), 0, 1).unwrap();
        let got = read_all(&f).unwrap();
        assert!(got == want, "{tarball}: {name}: bytes differ from the golden copy");
        f.close().unwrap();
    }
    let names: Vec<String> = p
        .readdir(Path::new("/golden/1n/d"))
        .unwrap()
        .into_iter()
        .map(|e| e.name.to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["a", "b", "c"], "{tarball}");
}

/// `plfs upgrade` converts each golden N-1 file (format 1, read as format 2: `meta/` and
/// hostdirs) to a one-directory container (format 3) in place: the same bytes, its extended
/// attributes kept, no `meta/` or hostdir left, fsck clean; a second upgrade refuses (nothing
/// to convert), and so does one of a file some process has open.
#[test]
fn format_v1_golden_files_upgrade_to_format_3() {
    use plfs_core::upgrade;
    for tarball in TARBALLS {
        let (t, p, exp) = extracted(tarball);
        let n1: Vec<&str> = FILES.iter().copied().filter(|f| f.starts_with("n1/")).collect();
        let busy = Path::new("/golden").join(n1[0]);
        let held = p.open(&busy, ro(), 0, 7).unwrap();
        let e = upgrade::upgrade(&p, &busy, &mut |_, _| {}).unwrap_err();
        assert_eq!(e.raw_errno(), rustix::io::Errno::BUSY.raw_os_error(), "{tarball}: {e}");
        held.close().unwrap();
        for name in &n1 {
            let path = Path::new("/golden").join(name);
            let h = p.open(&path, ro(), 0, 1).unwrap();
            h.setxattr(b"user.k", format!("value of {name}").as_bytes()).unwrap();
            h.close().unwrap();
            assert!(matches!(
                upgrade::target(&p, &path).unwrap(),
                Some(upgrade::Target::Container(_))
            ));
            let u = upgrade::upgrade(&p, &path, &mut |_, _| {}).unwrap();
            let want = std::fs::read(exp.join(name)).unwrap();
            assert_eq!(u.size, want.len() as u64, "{tarball}: {name}");
            // Read by a fresh instance, as another process would.
            let q = Plfs::new(p.config().clone()).unwrap();
            let f = q.open(&path, ro(), 0, 2).unwrap();
            assert!(
                read_all(&f).unwrap() == want,
                "{tarball}: {name}: bytes differ after the upgrade"
            );
            assert_eq!(f.getxattr(b"user.k").unwrap(), format!("value of {name}").as_bytes());
            f.close().unwrap();
            let fmt = q.file_format(&path).unwrap().unwrap().to_string();
            assert_eq!(fmt, "plfs v3 (N-1 container)", "{tarball}: {name}");
            let c = t.path().join("store").join(name.strip_prefix("n1/").unwrap());
            let dirs: Vec<String> = std::fs::read_dir(&c)
                .unwrap()
                .map(|e| e.unwrap())
                .filter(|e| e.file_type().unwrap().is_dir())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            assert!(dirs.iter().all(|d| d == "xattrs"), "{tarball}: {name}: {dirs:?}");
            assert!(
                upgrade::target(&q, &path).unwrap().is_none(),
                "{tarball}: {name}: converted twice"
            );
            let rep = fsck::fsck(&q, &path, &Options::default()).unwrap();
            assert_eq!(
                (rep.containers, rep.problems()),
                (1, 0),
                "{tarball}: {name}: {:?}",
                rep.findings
            );
        }
        // Nothing of the originals is left beside the converted files.
        let left: Vec<String> = std::fs::read_dir(t.path().join("store"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(".plfstmp"))
            .collect();
        assert!(left.is_empty(), "{tarball}: {left:?}");
    }
}

#[test]
fn format_v1_golden_metadata_patterns_checksums_and_fsck() {
    for tarball in TARBALLS {
        golden_metadata_patterns_checksums_and_fsck(tarball);
    }
}

fn golden_metadata_patterns_checksums_and_fsck(tarball: &str) {
    let (_t, p, _) = extracted(tarball);
    let strided = Path::new("/golden/n1/strided");
    assert_eq!(plfs_core::tools::file_version(&p, strided).unwrap(), 1);
    let f = p.open(strided, ro(), 0, 1).unwrap();
    assert!(f.index_stats().unwrap().patterns > 0, "strided writes load as patterns");
    assert_eq!(f.getxattr(b"user.golden").unwrap(), b"format v1");
    assert_eq!(p.stat(strided).unwrap().mode, 0o100640);
    let v = fsck::verify(&p, Path::new("/golden/n1/checksummed")).unwrap();
    assert!(v.mismatches.is_empty() && v.checked > 0, "{v:?}");
    let rep = fsck::fsck(&p, Path::new("/golden/n1"), &Options::default()).unwrap();
    assert_eq!(
        (rep.containers, rep.problems()),
        (5, 0),
        "{tarball}: {:?}",
        rep.findings
    );
    assert!(rep.findings.iter().all(|f| !f.problem), "{tarball}: {:?}", rep.findings);
}

/// A lock held for a moment does not make `plfs upgrade` refuse the file: a process that forks
/// keeps a copy of its descriptors in the child, and so the shared lock of a file it has open,
/// until the child's exec or exit (in CI a test thread that spawned `tar` while another closed a
/// file made the upgrade of that file fail with EBUSY, 4 runs in 30 of this binary). The upgrade
/// waits up to half a second for the lock before it calls the file open.
#[test]
fn an_upgrade_waits_out_a_lock_held_for_a_moment() {
    use plfs_core::upgrade;
    let (_t, p, exp) = extracted(TARBALLS[0]);
    let name = FILES.iter().find(|f| f.starts_with("n1/")).unwrap();
    let path = Path::new("/golden").join(name);
    let held = p.open(&path, ro(), 0, 7).unwrap();
    let closer = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(100));
        held.close().unwrap();
    });
    let u = upgrade::upgrade(&p, &path, &mut |_, _| {}).unwrap();
    closer.join().unwrap();
    assert_eq!(u.size, std::fs::read(exp.join(name)).unwrap().len() as u64);
}
