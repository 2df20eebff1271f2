//! Containers written by the original PLFS 2.5.1 (tests/fixtures/plfs-2.5.1-containers.tar.gz,
//! made by the real PLFS through its C API) read byte-exact through the core API; hand-made
//! PLFS 2.x containers (built here from the documented format) pin the overlap rule, metalinks,
//! open records, stale flattened indexes, and that damage is EIO naming the file, never a hole,
//! a panic or a followed symlink. Every change to a legacy file is refused with EROFS naming
//! `plfs upgrade`.

mod common;

use common::{assert_errno, read_all, ro, Fixture, MOUNT};
use plfs_core::config::GlobalParams;
use plfs_core::fsck::{self, Kind, Options};
use plfs_core::{FileKind, OpenFlags, Plfs};
use plfs_format::legacy::records::{encode_entry, HostEntry};
use rustix::io::Errno;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

const FIXTURES: [&str; 4] = ["n1_strided", "n1_flat", "n1_holes", "empty"];

/// A fixture whose canonical backend holds the extracted `store/`; returns the directory holding
/// the `.expected` files.
fn extracted(tag: &str) -> (Fixture, PathBuf) {
    let fx = Fixture::new(tag, 1, 0, GlobalParams::default());
    let x = fx.dir.path().join("x");
    common::untar_fixture("plfs-2.5.1-containers.tar.gz", &x, &[]);
    for e in std::fs::read_dir(x.join("store")).unwrap() {
        let e = e.unwrap();
        std::fs::rename(e.path(), fx.canonical[0].join(e.file_name())).unwrap();
    }
    (fx, x)
}

fn expected(x: &Path, name: &str) -> Vec<u8> {
    std::fs::read(x.join(format!("{name}.expected"))).unwrap()
}

fn open_ro(p: &Plfs, path: &Path) -> plfs_core::Result<plfs_core::OpenFile> {
    p.open(path, ro(), 0, 1)
}

/// The format `plfs stat` shows for a file.
fn format_of(p: &Plfs, path: &Path) -> String {
    p.file_format(path).unwrap().expect("a regular file").to_string()
}

fn errno_of<T>(r: plfs_core::Result<T>) -> (i32, String) {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => (e.raw_errno(), e.to_string()),
    }
}

#[test]
fn fixtures_read_byte_exact() {
    let (fx, x) = extracted("legacy-read");
    let p = fx.plfs();
    for name in FIXTURES {
        let want = expected(&x, name);
        let f = open_ro(&p, &fx.path(name)).unwrap();
        let got = read_all(&f).unwrap();
        assert!(got == want, "{name}: content differs from {name}.expected");
        // Odd-sized reads at odd offsets, and reads past the end.
        let mut off = 0u64;
        let mut step = 1usize;
        while (off as usize) < want.len() {
            let mut buf = vec![0xAAu8; step];
            let n = f.read(&mut buf, off).unwrap();
            let end = (off as usize + step).min(want.len());
            assert_eq!(n, end - off as usize, "{name}: read of {step} at {off}");
            assert!(buf[..n] == want[off as usize..end], "{name}: bytes at {off}");
            off += (step as u64) * 3 + 1;
            step = step * 7 % 9973 + 1;
        }
        let mut buf = [0u8; 10];
        assert_eq!(f.read(&mut buf, want.len() as u64).unwrap(), 0, "{name}: EOF");
        let st = p.fstat(&f).unwrap();
        assert_eq!(st.size, want.len() as u64, "{name}: fstat size");
        f.close().unwrap();
    }
}

#[test]
fn fixtures_stat_readdir_and_format() {
    let (fx, x) = extracted("legacy-stat");
    let p = fx.plfs();
    let names: Vec<(String, FileKind)> = p
        .readdir(Path::new(MOUNT))
        .unwrap()
        .into_iter()
        .map(|e| (e.name.to_string_lossy().into_owned(), e.kind))
        .collect();
    let mut want: Vec<(String, FileKind)> = FIXTURES.iter().map(|n| (n.to_string(), FileKind::File)).collect();
    want.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(names, want, "legacy containers list as files");
    for name in FIXTURES {
        let st = p.stat(&fx.path(name)).unwrap();
        let len = expected(&x, name).len() as u64;
        assert_eq!((st.kind, st.size), (FileKind::File, len), "{name}");
        assert_eq!(st.mode, 0o100600, "{name}: mode from the access file");
        assert_eq!(st.nlink, 1);
        assert_eq!(format_of(&p, &fx.path(name)), "plfs-2.5.1 (legacy, read-only)");
        p.access(&fx.path(name), 4).unwrap();
        assert_errno(p.access(&fx.path(name), 2), Errno::ROFS, "access W_OK");
    }
    // Blocks come from the bytes written (meta droppings), overwrites included.
    assert_eq!(
        p.stat(&fx.path("n1_strided")).unwrap().blocks,
        4 * 262336u64.div_ceil(512) + 9
    );
    // A path through a legacy file is not a directory.
    assert_errno(
        p.stat(&fx.path("n1_flat/meta")),
        Errno::NOTDIR,
        "stat inside a legacy file",
    );
    assert_errno(
        p.readdir(&fx.path("n1_flat")),
        Errno::NOTDIR,
        "readdir of a legacy file",
    );
    let hostdir = std::fs::read_dir(fx.canonical[0].join("n1_flat"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .find(|n| n.starts_with("hostdir."))
        .unwrap();
    let log = std::fs::read_dir(fx.canonical[0].join("n1_flat").join(&hostdir))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .next()
        .unwrap();
    assert_errno(
        p.stat(&fx.path(&format!("n1_flat/{hostdir}/{log}"))),
        Errno::NOTDIR,
        "a log inside a legacy file",
    );
    assert_errno(
        p.open(&fx.path("n1_flat/new"), common::wo_create(), 0o644, 1),
        Errno::NOTDIR,
        "create inside a legacy file",
    );
    assert_errno(
        p.mkdir(&fx.path("n1_flat/d"), 0o755),
        Errno::NOTDIR,
        "mkdir inside a legacy file",
    );
    assert!(matches!(
        p.storage(&fx.path("n1_flat")).unwrap(),
        plfs_core::Storage::Legacy(at) if at == fx.canonical[0].join("n1_flat")
    ));
    // The map tool sees the merged index: the overwrite by the 5th process wins.
    let m = plfs_core::tools::map(&p, &fx.path("n1_strided")).unwrap();
    let at = |o: u64| m.iter().find(|e| e.logical <= o && o < e.logical + e.length).unwrap();
    assert_eq!(at(2049).length, 4099, "[2049, 6148) is one extent");
    assert!(at(2049).data_log.to_string_lossy().ends_with(".13916"));
    assert!(at(0).data_log.to_string_lossy().contains("dropping.data."));
    let total: u64 = m.iter().map(|e| e.length).sum();
    assert_eq!(total, 1049344);
    let q = plfs_core::tools::query(&p, &fx.path("n1_flat")).unwrap();
    assert!(q.iter().any(|e| e.kind == "flat index"));
    assert_eq!(q.iter().filter(|e| e.kind == "index log").count(), 4);
}

#[test]
fn fixtures_changes_refused_with_upgrade_message() {
    let (fx, _) = extracted("legacy-rofs");
    let p = fx.plfs();
    let f = fx.path("n1_holes");
    let flags = [
        OpenFlags {
            write: true,
            ..Default::default()
        },
        OpenFlags {
            read: true,
            write: true,
            ..Default::default()
        },
        OpenFlags {
            write: true,
            create: true,
            trunc: true,
            ..Default::default()
        },
    ];
    for fl in flags {
        let (e, msg) = errno_of(p.open(&f, fl, 0o644, 1));
        assert_eq!(e, Errno::ROFS.raw_os_error(), "{fl:?}: {msg}");
        assert!(
            msg.contains("written by PLFS 2.5") && msg.contains(&format!("plfs upgrade {}", f.display())),
            "{msg}"
        );
    }
    assert_errno(p.truncate(&f, 0), Errno::ROFS, "truncate");
    assert_errno(p.unlink(&f), Errno::ROFS, "unlink");
    assert_errno(p.rename(&f, &fx.path("moved")), Errno::ROFS, "rename from");
    common::put(&p, &fx.path("new"), b"x");
    assert_errno(p.rename(&fx.path("new"), &f), Errno::ROFS, "rename onto");
    assert_errno(p.chmod(&f, 0o644), Errno::ROFS, "chmod");
    assert_errno(p.chown(&f, 0, 0), Errno::ROFS, "chown");
    assert_errno(
        p.utimens(&f, plfs_core::TimeSpec::Now, plfs_core::TimeSpec::Now),
        Errno::ROFS,
        "utimens",
    );
    assert_errno(
        p.open(
            &f,
            OpenFlags {
                write: true,
                create: true,
                excl: true,
                ..Default::default()
            },
            0o644,
            1,
        ),
        Errno::EXIST,
        "O_EXCL",
    );
    // Still readable, nothing changed.
    let h = open_ro(&p, &f).unwrap();
    assert_eq!(read_all(&h).unwrap().len(), 101000);
}

/// Whether the legacy file's index is read from its `global.index` (fsck says so).
fn reads_flattened(p: &Plfs, path: &Path) -> bool {
    let rep = fsck::fsck(p, path, &Options::default()).unwrap();
    let info = rep.of(Kind::LegacyContainer);
    assert_eq!(info.len(), 1, "{:?}", rep.findings);
    info[0].message.contains(", flattened")
}

#[test]
fn flattened_index_used_while_current_and_ignored_when_stale() {
    let (fx, x) = extracted("legacy-flat");
    let p = fx.plfs();
    let f = fx.path("n1_flat");
    let want = expected(&x, "n1_flat");
    assert!(reads_flattened(&p, &f), "a current global.index is used");
    assert!(read(&p, &f) == want, "through global.index");
    // An index log newer than global.index (written after the flatten): the logs are merged.
    let hd = fx.canonical[0].join("n1_flat/hostdir.23");
    let log = std::fs::read_dir(&hd)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains("dropping.index."))
        .unwrap();
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(60);
    std::fs::File::options()
        .write(true)
        .open(&log)
        .unwrap()
        .set_modified(later)
        .unwrap();
    assert!(!reads_flattened(&p, &f), "a stale global.index is ignored");
    assert!(read(&p, &f) == want, "through the index logs");
    // So is one while a writer has an open record.
    std::fs::File::options()
        .write(true)
        .open(&log)
        .unwrap()
        .set_modified(std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1))
        .unwrap();
    assert!(reads_flattened(&p, &f), "current again");
    std::fs::write(fx.canonical[0].join("n1_flat/meta/open.host.a.77"), b"").unwrap();
    assert!(!reads_flattened(&p, &f), "a writer is open: the index logs");
    assert!(read(&p, &f) == want, "with an open record");
    std::fs::remove_file(fx.canonical[0].join("n1_flat/meta/open.host.a.77")).unwrap();
    std::fs::remove_file(fx.canonical[0].join("n1_flat/global.index")).unwrap();
    assert!(!reads_flattened(&p, &f));
    assert!(read(&p, &f) == want, "without global.index");
}

#[test]
fn fsck_reports_legacy_containers() {
    let (fx, _) = extracted("legacy-fsck");
    let rep = fsck::fsck(&fx.plfs(), Path::new(MOUNT), &Options::default()).unwrap();
    assert_eq!((rep.containers, rep.legacy), (4, 4));
    assert_eq!(rep.of(Kind::LegacyContainer).len(), 4);
    assert!(rep.of(Kind::LegacyContainer)[0].message.contains("PLFS 2.5.1"));
    assert_eq!(rep.problems(), 0, "{:?}", rep.findings);
    assert_eq!(rep.exit_code(), 0);
    // Damage is reported, never repaired in place.
    let d = fx.canonical[0].join("n1_holes/hostdir.23");
    let data = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains("dropping.data.") && p.metadata().unwrap().len() == 1000)
        .unwrap();
    std::fs::File::options()
        .write(true)
        .open(&data)
        .unwrap()
        .set_len(10)
        .unwrap();
    let rep = fsck::fsck(&fx.plfs(), &fx.path("n1_holes"), &Options::default()).unwrap();
    let bad = rep.of(Kind::LegacyDamage);
    assert_eq!(bad.len(), 1);
    assert!(bad[0].message.contains(&*data.to_string_lossy()), "{}", bad[0].message);
    assert_eq!(rep.exit_code(), 4);
}

// ---- Hand-made PLFS 2.x containers ------------------------------------------------------------

/// A PLFS 2.x container built by hand from the documented layout.
struct Legacy {
    dir: PathBuf,
}

/// One write of a hand-made writer: logical offset, data, begin and end timestamps.
type W<'a> = (u64, &'a [u8], f64, f64);

impl Legacy {
    fn new(backend: &Path, name: &str) -> Legacy {
        let dir = backend.join(name);
        std::fs::create_dir_all(dir.join("meta")).unwrap();
        std::fs::create_dir_all(dir.join("hostdir.3")).unwrap();
        std::fs::write(dir.join(".plfsaccess113918400"), b"").unwrap();
        std::fs::set_permissions(
            dir.join(".plfsaccess113918400"),
            std::fs::Permissions::from_mode(0o4755),
        )
        .unwrap();
        std::fs::write(dir.join("version-tag.2.4.0-dat.1.0-chk.1"), b"").unwrap();
        Legacy { dir }
    }

    /// Appends writes of `pid` to its data log and their records to index log `index_pid`'s
    /// (records carry the writer's pid, so one index log may point into several data logs).
    fn write(&self, hostdir: &str, index_pid: u32, pid: u32, writes: &[W]) {
        let hd = self.dir.join(hostdir);
        std::fs::create_dir_all(&hd).unwrap();
        let dpath = hd.join(format!("dropping.data.100.5.host.a.{pid}"));
        let ipath = hd.join(format!("dropping.index.100.5.host.a.{index_pid}"));
        let mut data = std::fs::read(&dpath).unwrap_or_default();
        let mut idx = std::fs::read(&ipath).unwrap_or_default();
        for &(off, bytes, b, e) in writes {
            idx.extend_from_slice(&encode_entry(&HostEntry {
                logical: off,
                physical: data.len() as u64,
                length: bytes.len() as u64,
                begin_ts: b,
                end_ts: e,
                id: pid,
                extra: 0,
            }));
            data.extend_from_slice(bytes);
        }
        if !data.is_empty() {
            std::fs::write(&dpath, &data).unwrap();
        }
        std::fs::write(&ipath, &idx).unwrap();
    }

    fn raw_index(&self, hostdir: &str, pid: u32, bytes: &[u8]) {
        std::fs::write(
            self.dir
                .join(hostdir)
                .join(format!("dropping.index.100.5.host.a.{pid}")),
            bytes,
        )
        .unwrap();
    }

    fn meta(&self, name: &str) {
        std::fs::write(self.dir.join("meta").join(name), b"").unwrap();
    }
}

fn hand(tag: &str) -> Fixture {
    Fixture::new(tag, 1, 1, GlobalParams::default())
}

fn read(p: &Plfs, path: &Path) -> Vec<u8> {
    read_all(&open_ro(p, path).unwrap()).unwrap()
}

#[test]
fn overlaps_resolve_by_end_then_begin_timestamp_then_pid() {
    let fx = hand("legacy-overlap");
    let l = Legacy::new(&fx.canonical[0], "f");
    // A [0,100) ends last of all it overlaps: it wins [50,100) over B.
    l.write("hostdir.3", 10, 10, &[(0, &[b'A'; 100], 1.0, 2.0)]);
    // B [50,150) ends at 1.9 with begin 1.5; C [120,130) ties B's end but began earlier: B wins.
    // D [140,145) ties B's end and begin: the larger pid (13 > 11) wins.
    l.write("hostdir.3", 11, 11, &[(50, &[b'B'; 100], 1.5, 1.9)]);
    l.write("hostdir.3", 11, 12, &[(120, &[b'C'; 10], 0.5, 1.9)]);
    l.write("hostdir.7", 13, 13, &[(140, &[b'D'; 5], 1.5, 1.9)]);
    // E [10,20) in the same index log as A but written by pid 14 later: it wins.
    l.write("hostdir.3", 10, 14, &[(10, &[b'E'; 10], 3.0, 3.5)]);
    // A zero-length record at 200 (a truncate that grew the file).
    l.write("hostdir.3", 10, 10, &[(200, &[], 4.0, 4.0)]);
    l.meta("200.225.4.0.host.a");
    let mut want = vec![0u8; 200];
    want[..100].fill(b'A');
    want[100..150].fill(b'B');
    want[10..20].fill(b'E');
    want[140..145].fill(b'D');
    let p = fx.plfs();
    let f = fx.path("f");
    assert_eq!(p.stat(&f).unwrap().size, 200);
    let got = read(&p, &f);
    assert!(got == want, "got {:?}", String::from_utf8_lossy(&got));
    // Set-id bits of the access file are not trusted.
    assert_eq!(p.stat(&f).unwrap().mode, 0o100755);
    // Extended attributes as PLFS 2.x kept them: the raw value in `xattrs/<key>`.
    std::fs::create_dir_all(l.dir.join("xattrs")).unwrap();
    std::fs::write(l.dir.join("xattrs/user.tag"), b"v2.4").unwrap();
    let h = open_ro(&p, &f).unwrap();
    assert_eq!(h.getxattr(b"user.tag").unwrap(), b"v2.4");
    assert_errno(h.getxattr(b"user.none"), Errno::NOENT, "no such attribute");
    assert_errno(h.getxattr(b"../meta"), Errno::NOENT, "not a key");
    assert_errno(h.setxattr(b"user.tag", b"new"), Errno::ROFS, "setxattr");
    std::os::unix::fs::symlink("/etc/passwd", l.dir.join("xattrs/user.link")).unwrap();
    assert_errno(
        h.getxattr(b"user.link"),
        Errno::IO,
        "a symlinked attribute is not followed",
    );
}

#[test]
fn metalinks_lead_only_into_configured_backends() {
    let fx = hand("legacy-metalink");
    let canon = &fx.canonical[0];
    let shadow = &fx.shadows[0];
    std::fs::create_dir_all(canon.join("d")).unwrap();
    let l = Legacy::new(&canon.join("d"), "f");
    // hostdir.5 is a metalink to the shadow backend; its hostdir is <shadow>/d/f/hostdir.5.
    let sh = Legacy {
        dir: shadow.join("d/f"),
    };
    sh.write("hostdir.5", 4, 4, &[(0, b"from the shadow", 1.0, 1.1)]);
    l.write("hostdir.3", 2, 2, &[(15, b"+canonical", 2.0, 2.1)]);
    let text = format!("{}{}", canon.to_string_lossy().len(), shadow.display());
    std::os::unix::fs::symlink(&text, l.dir.join("hostdir.5")).unwrap();
    l.meta("25.25.2.0.host.a");
    let p = fx.plfs();
    assert_eq!(read(&p, &fx.path("d/f")), b"from the shadow+canonical");
    // With a posix: prefix too.
    std::fs::remove_file(l.dir.join("hostdir.5")).unwrap();
    std::os::unix::fs::symlink(format!("3posix:{}", shadow.display()), l.dir.join("hostdir.5")).unwrap();
    assert_eq!(read(&p, &fx.path("d/f")), b"from the shadow+canonical");

    // A metalink to a directory that is not a configured backend: EIO naming the metalink.
    let outside = fx.dir.path().join("outside");
    Legacy {
        dir: outside.join("d/f"),
    }
    .write("hostdir.5", 4, 4, &[(0, b"secret!!!!!!!!!", 1.0, 1.1)]);
    for bad in [
        format!("5{}", outside.display()),
        format!("5{}/../outside", shadow.display()),
        "5relative/path".to_string(),
        "no-length".to_string(),
    ] {
        std::fs::remove_file(l.dir.join("hostdir.5")).unwrap();
        std::os::unix::fs::symlink(&bad, l.dir.join("hostdir.5")).unwrap();
        let (e, msg) = errno_of(open_ro(&p, &fx.path("d/f")));
        assert_eq!(e, Errno::IO.raw_os_error(), "{bad}: {msg}");
        assert!(msg.contains("hostdir.5") && msg.contains("metalink"), "{bad}: {msg}");
    }
    // A configured backend, but the shadow container path is a symlink leading elsewhere.
    std::fs::remove_file(l.dir.join("hostdir.5")).unwrap();
    std::os::unix::fs::symlink(&text, l.dir.join("hostdir.5")).unwrap();
    std::fs::rename(shadow.join("d"), fx.dir.path().join("moved")).unwrap();
    std::os::unix::fs::symlink(outside.join("d"), shadow.join("d")).unwrap();
    let (e, msg) = errno_of(open_ro(&p, &fx.path("d/f")));
    assert_eq!(e, Errno::IO.raw_os_error(), "{msg}");
}

#[test]
fn open_records_and_unreadable_meta_take_the_size_from_the_index() {
    let fx = hand("legacy-open");
    let l = Legacy::new(&fx.canonical[0], "f");
    l.write(
        "hostdir.3",
        1,
        1,
        &[(0, b"0123456789", 1.0, 1.1), (10, b"abcdef", 2.0, 2.1)],
    );
    l.meta("10.10.1.0.host.a");
    let p = fx.plfs();
    assert_eq!(p.stat(&fx.path("f")).unwrap().size, 10, "closed: meta droppings");
    l.meta("open.host.a.77");
    assert_eq!(p.stat(&fx.path("f")).unwrap().size, 16, "open record: the index");
    std::fs::remove_file(l.dir.join("meta/open.host.a.77")).unwrap();
    l.meta("99999999999999999999999.1.1.1.h");
    assert_eq!(
        p.stat(&fx.path("f")).unwrap().size,
        16,
        "unparseable size in a name: the index"
    );
    std::fs::remove_file(l.dir.join("meta/99999999999999999999999.1.1.1.h")).unwrap();
    std::fs::remove_file(l.dir.join("meta/10.10.1.0.host.a")).unwrap();
    assert_eq!(p.stat(&fx.path("f")).unwrap().size, 16, "no meta dropping: the index");
    assert_eq!(read(&p, &fx.path("f")), b"0123456789abcdef");
}

/// Asserts that opening `name` for reading fails with EIO naming `names`.
#[track_caller]
fn assert_eio(p: &Plfs, path: &Path, names: &str) {
    let (e, msg) = errno_of(open_ro(p, path));
    assert_eq!(e, Errno::IO.raw_os_error(), "{msg}");
    assert!(msg.contains(names), "`{msg}` does not name {names}");
}

#[test]
fn damage_is_eio_naming_the_file() {
    let fx = hand("legacy-damage");
    let b = &fx.canonical[0];
    let p = fx.plfs();
    let ok: W = (0, b"good data", 1.0, 1.1);

    // A negative logical offset.
    let l = Legacy::new(b, "neg");
    l.write("hostdir.3", 1, 1, &[ok]);
    let mut rec = encode_entry(&HostEntry {
        logical: 0,
        physical: 0,
        length: 4,
        begin_ts: 1.0,
        end_ts: 1.0,
        id: 1,
        extra: 0,
    });
    rec[7] = 0xff;
    l.raw_index("hostdir.3", 1, &rec);
    assert_eio(&p, &fx.path("neg"), "dropping.index.100.5.host.a.1");

    // Records beyond the end of their data log, and an overflowing length.
    let l = Legacy::new(b, "short");
    l.write("hostdir.3", 1, 1, &[ok]);
    std::fs::write(l.dir.join("hostdir.3/dropping.data.100.5.host.a.1"), b"good").unwrap();
    assert_eio(&p, &fx.path("short"), "dropping.data.100.5.host.a.1");
    let l = Legacy::new(b, "overflow");
    l.raw_index(
        "hostdir.3",
        1,
        &encode_entry(&HostEntry {
            logical: 1 << 62,
            physical: 0,
            length: 1 << 62,
            begin_ts: 1.0,
            end_ts: 1.0,
            id: 1,
            extra: 0,
        }),
    );
    assert_eio(&p, &fx.path("overflow"), "dropping.index.100.5.host.a.1");

    // A missing data log.
    let l = Legacy::new(b, "missing");
    l.write("hostdir.3", 1, 1, &[ok]);
    std::fs::remove_file(l.dir.join("hostdir.3/dropping.data.100.5.host.a.1")).unwrap();
    assert_eio(&p, &fx.path("missing"), "dropping.data.100.5.host.a.1");

    // A data log that is a symbolic link (to a file with enough bytes) is never followed.
    let l = Legacy::new(b, "symlinked");
    l.write("hostdir.3", 1, 1, &[ok]);
    let target = fx.dir.path().join("outside-data");
    std::fs::write(&target, b"SECRET SECRET").unwrap();
    let dl = l.dir.join("hostdir.3/dropping.data.100.5.host.a.1");
    std::fs::remove_file(&dl).unwrap();
    std::os::unix::fs::symlink(&target, &dl).unwrap();
    assert_eio(&p, &fx.path("symlinked"), "dropping.data.100.5.host.a.1");

    // A data log that is a FIFO: an error, not a hang.
    let l = Legacy::new(b, "fifo");
    l.write("hostdir.3", 1, 1, &[ok]);
    let dl = l.dir.join("hostdir.3/dropping.data.100.5.host.a.1");
    std::fs::remove_file(&dl).unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &dl,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    assert_eio(&p, &fx.path("fifo"), "dropping.data.100.5.host.a.1");

    // A symlinked index log is not followed either.
    let l = Legacy::new(b, "symidx");
    l.write("hostdir.3", 1, 1, &[ok]);
    let il = l.dir.join("hostdir.3/dropping.index.100.5.host.a.1");
    let real = fx.dir.path().join("real-index");
    std::fs::rename(&il, &real).unwrap();
    std::os::unix::fs::symlink(&real, &il).unwrap();
    assert_eio(&p, &fx.path("symidx"), "dropping.index.100.5.host.a.1");

    // The access file is a symbolic link.
    let l = Legacy::new(b, "badaccess");
    std::fs::remove_file(l.dir.join(".plfsaccess113918400")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", l.dir.join(".plfsaccess113918400")).unwrap();
    let (e, msg) = errno_of(p.stat(&fx.path("badaccess")));
    assert_eq!(e, Errno::IO.raw_os_error(), "{msg}");
    assert!(msg.contains(".plfsaccess113918400"), "{msg}");

    // A global.index whose entry names a chunk it does not list.
    let l = Legacy::new(b, "badglobal");
    l.write("hostdir.3", 1, 1, &[ok]);
    let mut g = 1u64.to_le_bytes().to_vec();
    g.extend_from_slice(&encode_entry(&HostEntry {
        logical: 0,
        physical: 0,
        length: 4,
        begin_ts: 1.0,
        end_ts: 1.0,
        id: 3,
        extra: 1,
    }));
    g.extend_from_slice(b"/x/badglobal/hostdir.3/dropping.data.100.5.host.a.1\n\0");
    std::fs::write(l.dir.join("global.index"), &g).unwrap();
    assert_eio(&p, &fx.path("badglobal"), "global.index");
    // ... or a chunk outside the container's hostdirs.
    let mut g = 1u64.to_le_bytes().to_vec();
    g.extend_from_slice(&encode_entry(&HostEntry {
        logical: 0,
        physical: 0,
        length: 4,
        begin_ts: 1.0,
        end_ts: 1.0,
        id: 0,
        extra: 1,
    }));
    g.extend_from_slice(b"/etc/passwd\n\0");
    std::fs::write(l.dir.join("global.index"), &g).unwrap();
    assert_eio(&p, &fx.path("badglobal"), "global.index");

    // A torn record at the end of an index log (a writer died appending) is ignored.
    let l = Legacy::new(b, "torn");
    l.write("hostdir.3", 1, 1, &[ok]);
    let il = l.dir.join("hostdir.3/dropping.index.100.5.host.a.1");
    let mut bytes = std::fs::read(&il).unwrap();
    bytes.extend_from_slice(&[7u8; 20]);
    std::fs::write(&il, &bytes).unwrap();
    assert_eq!(read(&p, &fx.path("torn")), b"good data");
}

// ---- plfs upgrade ---------------------------------------------------------------------------------

fn backend_names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn upgrade_converts_in_place_and_keeps_bytes_mode_and_times() {
    let (fx, x) = extracted("legacy-upgrade");
    let p = fx.plfs();
    for name in FIXTURES {
        let f = fx.path(name);
        let before = p.stat(&f).unwrap();
        let mut calls = 0;
        let up = plfs_core::upgrade::upgrade(&p, &f, &mut |done, total| {
            assert!(done <= total);
            calls += 1;
        })
        .unwrap();
        let want = expected(&x, name);
        assert_eq!(up.size, want.len() as u64);
        assert!(calls > 0 || want.is_empty());
        let fresh = fx.plfs();
        assert_eq!(format_of(&fresh, &f), "plfs v3 (N-1 container)", "{name}");
        assert!(read(&fresh, &f) == want, "{name}: bytes after upgrade");
        let after = fresh.stat(&f).unwrap();
        assert_eq!(
            (after.size, after.mode, after.uid, after.mtime_ns),
            (before.size, before.mode, before.uid, before.mtime_ns),
            "{name}"
        );
        // Writable now.
        let h = fresh
            .open(
                &f,
                OpenFlags {
                    read: true,
                    write: true,
                    ..Default::default()
                },
                0,
                9,
            )
            .unwrap();
        h.write(b"NEW", 1).unwrap();
        h.close().unwrap();
        let mut w2 = want.clone();
        if w2.len() < 4 {
            w2.resize(4, 0);
        }
        w2[1..4].copy_from_slice(b"NEW");
        assert!(read(&fx.plfs(), &f) == w2, "{name}: written after upgrade");
        assert!(
            plfs_core::upgrade::upgrade(&p, &f, &mut |_, _| {}).is_err(),
            "not legacy any more"
        );
    }
    // Nothing of the old containers or of the upgrade is left behind.
    assert_eq!(backend_names(&fx.canonical[0]), {
        let mut v: Vec<String> = FIXTURES.iter().map(|s| s.to_string()).collect();
        v.sort();
        v
    });
    for name in FIXTURES {
        assert!(!fx.canonical[0].join(name).join(".plfsaccess113918400").exists());
    }
    let rep = fsck::fsck(&fx.plfs(), Path::new(MOUNT), &Options::default()).unwrap();
    assert_eq!(
        (rep.containers, rep.legacy, rep.problems()),
        (4, 0, 0),
        "{:?}",
        rep.findings
    );
}

#[test]
fn upgrade_failure_keeps_the_original_and_fsck_recognises_half_done_upgrades() {
    let (fx, x) = extracted("legacy-upgrade-fail");
    let p = fx.plfs();
    let f = fx.path("n1_strided");
    // Fail a write into the new container: the original stays, the partial copy is removed.
    plfs_core::failpoint::set(plfs_core::failpoint::Spec {
        name: "sys::pwrite_all".into(),
        filter: "legacy-upgrade-fail".into(),
        action: plfs_core::failpoint::Action::Errno(Errno::NOSPC),
        after: 2,
        times: None,
    });
    let r = plfs_core::upgrade::upgrade(&p, &f, &mut |_, _| {});
    plfs_core::failpoint::clear();
    assert_errno(r, Errno::NOSPC, "upgrade with a failing write");
    assert_eq!(format_of(&p, &f), "plfs-2.5.1 (legacy, read-only)");
    assert!(read(&fx.plfs(), &f) == expected(&x, "n1_strided"));
    assert!(!backend_names(&fx.canonical[0])
        .iter()
        .any(|n| n.starts_with(".plfstmp")));

    // What a crash leaves: before the swap, a partial new container beside the original; after
    // it, the superseded original under the temporary name.
    let b = &fx.canonical[0];
    common::put(&p, &fx.path("scratch"), b"partial");
    std::fs::rename(b.join("scratch"), b.join(".plfstmp.upgrade.0000000000000001")).unwrap();
    std::fs::rename(b.join("n1_holes"), b.join(".plfstmp.upgrade.0000000000000002")).unwrap();
    let rep = fsck::fsck(&fx.plfs(), Path::new(MOUNT), &Options::default()).unwrap();
    let d = rep.of(Kind::UpgradeDebris);
    assert_eq!(d.len(), 2, "{:?}", rep.findings);
    assert!(d[0].message.contains("partial copy") && d[0].message.contains("original is intact"));
    assert!(d[1].message.contains("superseded"));
    let rep = fsck::fsck(
        &fx.plfs(),
        Path::new(MOUNT),
        &Options {
            repair: true,
            tmp_min_age: std::time::Duration::ZERO,
            ..Options::default()
        },
    )
    .unwrap();
    assert_eq!(rep.exit_code(), 1, "{:?}", rep.findings);
    assert!(!backend_names(b).iter().any(|n| n.starts_with(".plfstmp")));
}

// ---- PLFS 2.x 1-N directories (hand-made: there is no fixture from the original) --------------

pub(crate) mod small {
    use super::*;
    use plfs_core::config::{BackendRole, BackendSpec, MountConfig, Workload};
    use plfs_core::Config;

    pub(crate) fn plfs_1n(root: &Path) -> (Plfs, Vec<PathBuf>) {
        let backends: Vec<PathBuf> = (0..2).map(|i| root.join(format!("b{i}"))).collect();
        for b in &backends {
            std::fs::create_dir_all(b.join("d")).unwrap();
        }
        let cfg = Config {
            files: vec![root.join("plfsrc")],
            global: GlobalParams::default(),
            mounts: vec![MountConfig {
                mount_point: "/old1n".into(),
                workload: Workload::SmallFile,
                backends: backends
                    .iter()
                    .map(|b| BackendSpec {
                        location: b.clone(),
                        role: BackendRole::Both,
                    })
                    .collect(),
            }],
            warnings: Vec::new(),
        };
        (Plfs::new(cfg).unwrap(), backends)
    }

    pub(crate) fn build(b: &[PathBuf]) {
        common::legacy_1n::build(b, "d");
    }

    #[test]
    fn legacy_1n_directories_read_and_are_read_only() {
        let t = common::TempDir::new("legacy-1n");
        let (p, b) = plfs_1n(t.path());
        build(&b);
        let d = Path::new("/old1n/d");
        let get = |name: &str| read(&p, &d.join(name));
        let mut f1 = b"AAAAABBBA".to_vec();
        f1.resize(20, 0);
        f1.extend_from_slice(b"CCCCC");
        assert_eq!(get("f1"), f1);
        assert_eq!(get("f2"), b"22222");
        assert_eq!(get("f3"), b"3333");
        assert_errno(p.stat(&d.join("gone")), Errno::NOENT, "deleted");
        assert_errno(p.stat(&d.join("tmp")), Errno::NOENT, "renamed away");
        let st = p.stat(&d.join("f1")).unwrap();
        assert_eq!((st.kind, st.size, st.mode), (FileKind::File, 25, 0o100640));
        assert_eq!(st.mtime_ns, 102 * 1_000_000_000, "last OPEN on it");
        // New files live beside them, in this format.
        common::put(&p, &d.join("new"), b"fresh");
        let names: Vec<String> = p
            .readdir(d)
            .unwrap()
            .into_iter()
            .map(|e| e.name.to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["f1", "f2", "f3", "new"]);
        assert_eq!(get("new"), b"fresh");
        // Read-only.
        let wo = OpenFlags {
            write: true,
            ..Default::default()
        };
        let (e, msg) = errno_of(p.open(&d.join("f1"), wo, 0, 1));
        assert_eq!(e, Errno::ROFS.raw_os_error(), "{msg}");
        assert!(msg.contains("plfs upgrade"), "{msg}");
        assert_errno(p.unlink(&d.join("f1")), Errno::ROFS, "unlink");
        assert_errno(p.rename(&d.join("f2"), &d.join("x")), Errno::ROFS, "rename");
        assert_errno(p.chmod(&d.join("f2"), 0o600), Errno::ROFS, "chmod");
        assert_errno(p.truncate(&d.join("f2"), 0), Errno::ROFS, "truncate");
        assert_errno(
            p.open(
                &d.join("f3"),
                OpenFlags {
                    write: true,
                    create: true,
                    excl: true,
                    ..Default::default()
                },
                0o644,
                1,
            ),
            Errno::EXIST,
            "O_EXCL",
        );
        assert_errno(p.stat(&d.join("SMALLFILECONTAINER")), Errno::INVAL, "reserved name");
        assert_eq!(p.storage(&d.join("f1")).unwrap(), plfs_core::Storage::LegacyPacked);
        assert_eq!(p.storage(&d.join("new")).unwrap(), plfs_core::Storage::Packed);
        // Nothing may be renamed onto a legacy file either (this format's packed file would
        // hide it).
        assert_errno(p.rename(&d.join("new"), &d.join("f1")), Errno::ROFS, "rename onto");
        assert_eq!(get("f1"), f1, "unchanged");
        assert_eq!(get("new"), b"fresh", "the source stays");
        assert_eq!(
            format_of(&p, &d.join("f1")),
            "plfs-2.x 1-N directory file (legacy, read-only)"
        );
        // fsck recognises the directory (its stores on two backends) and finds nothing wrong.
        let rep = fsck::fsck(&p, Path::new("/old1n"), &Options::default()).unwrap();
        assert_eq!(rep.legacy, 1, "{:?}", rep.findings);
        let info = rep.of(Kind::LegacyContainer);
        assert_eq!(info.len(), 1);
        assert!(info[0].message.contains("3 files"), "{}", info[0].message);
        assert_eq!(rep.problems(), 0, "{:?}", rep.findings);
    }

    #[test]
    fn legacy_1n_damage_is_eio_naming_the_file() {
        let t = common::TempDir::new("legacy-1n-bad");
        let (p, b) = plfs_1n(t.path());
        build(&b);
        let sc = b[0].join("d/SMALLFILECONTAINER");
        let data = sc.join("dropping.data.1700000000.123456.host.7");
        let good = std::fs::read(&data).unwrap();
        std::fs::write(&data, &good[..10]).unwrap();
        let (e, msg) = errno_of(p.stat(Path::new("/old1n/d/f1")));
        assert_eq!(e, Errno::IO.raw_os_error(), "{msg}");
        assert!(msg.contains("dropping.data.1700000000.123456.host.7"), "{msg}");
        std::fs::write(&data, &good).unwrap();
        let names = sc.join("dropping.name.1700000000.123456.host.7");
        let mut n = std::fs::read(&names).unwrap();
        n[4] = 9; // unknown operation in the first record
        std::fs::write(&names, &n).unwrap();
        let p = plfs_1n(t.path()).0;
        let (e, msg) = errno_of(p.readdir(Path::new("/old1n/d")));
        assert_eq!(e, Errno::IO.raw_os_error(), "{msg}");
        assert!(
            msg.contains("dropping.name.1700000000.123456.host.7") && msg.contains("unknown operation"),
            "{msg}"
        );
        let rep = fsck::fsck(&p, Path::new("/old1n"), &Options::default()).unwrap();
        let bad = rep.of(Kind::LegacyDamage);
        assert_eq!(bad.len(), 1, "{:?}", rep.findings);
        assert!(bad[0].message.contains("unknown operation"), "{}", bad[0].message);
    }
}

mod small_upgrade {
    use super::small::*;
    use super::*;

    #[test]
    fn legacy_1n_directory_upgrades_whole() {
        let t = common::TempDir::new("legacy-1n-up");
        let (p, b) = plfs_1n(t.path());
        build(&b);
        let d = Path::new("/old1n/d");
        let before: Vec<(String, Vec<u8>, u32)> = ["f1", "f2", "f3"]
            .iter()
            .map(|n| (n.to_string(), read(&p, &d.join(n)), p.stat(&d.join(n)).unwrap().mode))
            .collect();
        common::put(&p, &d.join("new"), b"fresh");
        let up = plfs_core::upgrade::upgrade_small_dir(&p, &d.join("f2"), &mut |_, _| {}).unwrap();
        assert_eq!(up.len(), 3);
        for bk in &b {
            assert!(!bk.join("d/SMALLFILECONTAINER").exists(), "old store removed");
            assert!(!std::fs::read_dir(bk.join("d")).unwrap().any(|e| e
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with(".plfstmp")));
        }
        let q = plfs_1n(t.path()).0;
        for (n, bytes, mode) in &before {
            assert_eq!(&read(&q, &d.join(n)), bytes, "{n} after upgrade");
            assert_eq!(q.stat(&d.join(n)).unwrap().mode, *mode, "{n}: mode");
        }
        assert_eq!(read(&q, &d.join("new")), b"fresh");
        // Writable, and removing one does not bring an old copy back.
        let h = q
            .open(
                &d.join("f1"),
                OpenFlags {
                    read: true,
                    write: true,
                    ..Default::default()
                },
                0,
                3,
            )
            .unwrap();
        h.write(b"Z", 0).unwrap();
        h.close().unwrap();
        assert_eq!(read(&q, &d.join("f1"))[0], b'Z');
        q.unlink(&d.join("f2")).unwrap();
        assert_errno(q.stat(&d.join("f2")), Errno::NOENT, "unlinked after upgrade");
        assert!(
            plfs_core::upgrade::upgrade_small_dir(&q, d, &mut |_, _| {}).is_err(),
            "nothing left to upgrade"
        );
    }
}

#[test]
fn upgrade_of_a_metalinked_container_removes_its_shadow_hostdir() {
    let fx = hand("legacy-upgrade-metalink");
    let canon = &fx.canonical[0];
    let shadow = &fx.shadows[0];
    let l = Legacy::new(canon, "f");
    let sh = Legacy { dir: shadow.join("f") };
    sh.write("hostdir.5", 4, 4, &[(0, b"from the shadow", 1.0, 1.1)]);
    l.write("hostdir.3", 2, 2, &[(15, b"+canonical", 2.0, 2.1)]);
    std::os::unix::fs::symlink(
        format!("{}{}", canon.to_string_lossy().len(), shadow.display()),
        l.dir.join("hostdir.5"),
    )
    .unwrap();
    l.meta("25.25.2.0.host.a");
    let p = fx.plfs();
    let up = plfs_core::upgrade::upgrade(&p, &fx.path("f"), &mut |_, _| {}).unwrap();
    assert_eq!((up.size, up.copied), (25, 25));
    assert_eq!(read(&fx.plfs(), &fx.path("f")), b"from the shadow+canonical");
    assert!(!shadow.join("f/hostdir.5").exists(), "the shadow hostdir is removed");
    assert!(!shadow.join("f").exists(), "and its now empty shadow container");
    // The set-id bit of the access file is not carried over either.
    assert_eq!(fx.plfs().stat(&fx.path("f")).unwrap().mode, 0o100755);
}

// ---- more files of the real PLFS 2.5.1 (tests/fixtures/plfs-2.5.1-more.tar.gz) -----------------
// Written by the original on backends /work/plfs251/{be1,be2,befl} (tests/fixtures/README.md):
// `flat`, flattened by its `plfs_flatten_index` tool, whose global.index names chunks with `//`
// in the path; `metalinked`, renamed once by `plfs_rename` so that its canonical container moved
// from be2 to be1, leaving hostdir.23 on be2 behind the metalink `17/work/plfs251/be2`.

/// Extracts the second tarball into `x`.
fn extract_more(x: &Path) {
    common::untar_fixture("plfs-2.5.1-more.tar.gz", x, &[]);
}

/// Moves every entry of `from` into `to`.
fn move_entries(from: &Path, to: &Path) {
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::rename(e.path(), to.join(e.file_name())).unwrap();
    }
}

#[test]
fn a_file_flattened_by_the_original_tool_reads_byte_exact() {
    let fx = Fixture::new("legacy-flat-tool", 1, 0, GlobalParams::default());
    let x = fx.dir.path().join("x");
    extract_more(&x);
    move_entries(&x.join("befl"), &fx.canonical[0]);
    let want = std::fs::read(x.join("flat_tool.expected")).unwrap();
    let f = fx.path("flat");
    let g = std::fs::read(fx.canonical[0].join("flat/global.index")).unwrap();
    assert!(
        g.windows(13).any(|w| w == b"hostdir.23//d"),
        "the fixture's chunk paths have `//`"
    );
    let p = fx.plfs();
    assert!(reads_flattened(&p, &f), "read through its global.index");
    assert!(read(&p, &f) == want, "bytes through global.index");
    assert_eq!(p.stat(&f).unwrap().size, want.len() as u64);
    // Only the flattened index left: the same bytes.
    for e in std::fs::read_dir(fx.canonical[0].join("flat/hostdir.23")).unwrap() {
        let e = e.unwrap();
        if e.file_name().to_string_lossy().starts_with("dropping.index.") {
            std::fs::remove_file(e.path()).unwrap();
        }
    }
    assert!(read(&fx.plfs(), &f) == want, "bytes from global.index alone");
    // And `plfs upgrade` converts it.
    let p = fx.plfs();
    plfs_core::upgrade::upgrade(&p, &f, &mut |_, _| {}).unwrap();
    let fresh = fx.plfs();
    assert_eq!(format_of(&fresh, &f), "plfs v3 (N-1 container)");
    assert!(read(&fresh, &f) == want, "bytes after upgrade");
}

#[test]
fn a_file_whose_canonical_container_moved_reads_through_its_metalink() {
    let fx = Fixture::new("legacy-metalink-real", 2, 0, GlobalParams::default());
    let x = fx.dir.path().join("x");
    extract_more(&x);
    move_entries(&x.join("be1"), &fx.canonical[0]);
    move_entries(&x.join("be2"), &fx.canonical[1]);
    // The metalink names the backends where the original wrote; point it at where they are now
    // (as a site that moved its backends would): `<length of be1's path><be2's path>`.
    let link = fx.canonical[0].join("metalinked/hostdir.23");
    assert_eq!(std::fs::read_link(&link).unwrap(), Path::new("17/work/plfs251/be2"));
    std::fs::remove_file(&link).unwrap();
    let text = format!(
        "{}{}",
        fx.canonical[0].to_string_lossy().len(),
        fx.canonical[1].display()
    );
    std::os::unix::fs::symlink(text, &link).unwrap();
    let want = std::fs::read(x.join("metalink.expected")).unwrap();
    let f = fx.path("metalinked");
    let p = fx.plfs();
    let st = p.stat(&f).unwrap();
    assert_eq!((st.kind, st.size), (FileKind::File, want.len() as u64));
    assert!(read(&p, &f) == want, "bytes through the metalink");
    let names: Vec<String> = p
        .readdir(Path::new(MOUNT))
        .unwrap()
        .into_iter()
        .map(|e| e.name.to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["metalinked"], "one file, not a file and a directory");
    // `plfs upgrade` converts it and removes the shadow hostdir.
    plfs_core::upgrade::upgrade(&p, &f, &mut |_, _| {}).unwrap();
    let fresh = fx.plfs();
    assert_eq!(format_of(&fresh, &f), "plfs v3 (N-1 container)");
    assert!(read(&fresh, &f) == want, "bytes after upgrade");
    assert!(
        !fx.canonical[1].join("metalinked").exists(),
        "the shadow container removed"
    );
}
