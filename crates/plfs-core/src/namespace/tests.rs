//! Unit tests of the namespace: a round trip through every operation, and each workload mode.

use super::*;
use crate::config::{BackendRole, BackendSpec, GlobalParams, MountConfig, Workload};

fn plfs_at(dir: &Path, backends: usize) -> Plfs {
    plfs_mode(dir, backends, Workload::SharedFile)
}

fn plfs_mode(dir: &Path, backends: usize, workload: Workload) -> Plfs {
    let mut specs = Vec::new();
    for i in 0..backends {
        let b = dir.join(format!("b{i}"));
        std::fs::create_dir_all(&b).unwrap();
        specs.push(BackendSpec {
            location: b,
            role: BackendRole::Both,
        });
    }
    let cfg = Config {
        files: vec![dir.join("plfsrc")],
        global: GlobalParams {
            index_buffer_records: 3,
            ..GlobalParams::default()
        },
        mounts: vec![MountConfig {
            mount_point: "/mnt/plfs".into(),
            workload,
            backends: specs,
        }],
        warnings: Vec::new(),
    };
    Plfs::new(cfg).unwrap()
}

/// Opens `f` for writing as pid 1, made if missing (mode 0644).
fn create_writer(p: &Plfs, f: &(impl Logical + ?Sized)) -> OpenFile {
    let flags = OpenFlags {
        write: true,
        create: true,
        ..Default::default()
    };
    p.open(f, flags, 0o644, 1).unwrap()
}

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "plfs-fs-{tag}-{}-{}",
        std::process::id(),
        crate::clock::random_u64()
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn write_read_stat_roundtrip() {
    let d = tmpdir("rt");
    let p = plfs_at(&d, 2);
    let f = Path::new("/mnt/plfs/f");
    let w = create_writer(&p, f);
    w.write(b"hello", 0).unwrap();
    w.write_as(b"WORLD", 10, 2).unwrap();
    w.write(b"xy", 1).unwrap();
    assert_eq!(p.stat(f).unwrap().size, 15);
    let r = p
        .open(
            f,
            OpenFlags {
                read: true,
                ..Default::default()
            },
            0,
            3,
        )
        .unwrap();
    let mut buf = [9u8; 20];
    assert_eq!(r.read(&mut buf, 0).unwrap(), 15);
    assert_eq!(&buf[..15], b"hxylo\0\0\0\0\0WORLD");
    w.close().unwrap();
    r.close().unwrap();
    // Another "process": a fresh instance, fast stat path.
    let p2 = plfs_at(&d, 2);
    assert_eq!(p2.stat(f).unwrap().size, 15);
    assert_eq!(p2.stat(f).unwrap().kind, FileKind::File);
    let r = p2
        .open(
            f,
            OpenFlags {
                read: true,
                ..Default::default()
            },
            0,
            3,
        )
        .unwrap();
    let mut buf = [0u8; 15];
    r.read(&mut buf, 0).unwrap();
    assert_eq!(&buf, b"hxylo\0\0\0\0\0WORLD");
    drop(r);
    p2.truncate(f, 3).unwrap();
    assert_eq!(p2.stat(f).unwrap().size, 3);
    assert_eq!(plfs_at(&d, 2).stat(f).unwrap().size, 3);
    p2.rename(f, Path::new("/mnt/plfs/g")).unwrap();
    assert!(p2.stat(f).unwrap_err().is_not_found());
    let names: Vec<_> = p2
        .readdir(Path::new("/mnt/plfs"))
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(names, vec![OsString::from("g")]);
    p2.unlink(Path::new("/mnt/plfs/g")).unwrap();
    assert!(p2.readdir(Path::new("/mnt/plfs")).unwrap().is_empty());
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn flatten_is_invalidated_by_later_writes() {
    let d = tmpdir("flat");
    let p = plfs_at(&d, 1);
    let f = Path::new("/mnt/plfs/f");
    let w = create_writer(&p, f);
    w.write(&[1u8; 30], 0).unwrap();
    w.close().unwrap();
    let rep = crate::tools::flatten(&p, f).unwrap();
    assert_eq!(rep.extents, 1);
    let w = plfs_at(&d, 1)
        .open(
            f,
            OpenFlags {
                write: true,
                ..Default::default()
            },
            0,
            2,
        )
        .unwrap();
    w.write(&[2u8; 10], 30).unwrap();
    w.write(&[3u8; 3], 0).unwrap();
    w.close().unwrap();
    let p2 = plfs_at(&d, 1);
    assert_eq!(p2.stat(f).unwrap().size, 40);
    let r = p2
        .open(
            f,
            OpenFlags {
                read: true,
                ..Default::default()
            },
            0,
            3,
        )
        .unwrap();
    let mut buf = [0u8; 40];
    assert_eq!(r.read(&mut buf, 0).unwrap(), 40);
    assert_eq!(&buf[..3], &[3, 3, 3]);
    assert_eq!(&buf[3..30], &[1u8; 27][..]);
    assert_eq!(&buf[30..], &[2u8; 10]);
    std::fs::remove_dir_all(&d).unwrap();
}

fn rw() -> OpenFlags {
    OpenFlags {
        read: true,
        write: true,
        create: true,
        ..Default::default()
    }
}

fn read_all(p: &Plfs, f: &Path) -> Vec<u8> {
    let h = p
        .open(
            f,
            OpenFlags {
                read: true,
                ..Default::default()
            },
            0,
            1,
        )
        .unwrap();
    let mut v = vec![0u8; p.stat(f).unwrap().size as usize];
    assert_eq!(h.read(&mut v, 0).unwrap(), v.len());
    v
}

#[test]
fn n_n_mode_spreads_plain_files() {
    let d = tmpdir("nn");
    let p = plfs_mode(&d, 3, Workload::FilePerProc);
    p.mkdir(Path::new("/mnt/plfs/dir"), 0o755).unwrap();
    for i in 0..12 {
        let f = PathBuf::from(format!("/mnt/plfs/dir/rank{i}"));
        let h = p.open(&f, rw(), 0o644, i).unwrap();
        h.write(format!("data of rank {i}").as_bytes(), 0).unwrap();
        h.close().unwrap();
    }
    // Files are plain files spread over more than one backend.
    let used = (0..3)
        .filter(|b| std::fs::read_dir(d.join(format!("b{b}/dir"))).unwrap().count() > 0)
        .count();
    assert!(used > 1, "files on {used} backend(s)");
    let names = p.readdir(Path::new("/mnt/plfs/dir")).unwrap();
    assert_eq!(names.len(), 12);
    assert!(names.iter().all(|e| e.kind == FileKind::File));
    assert_eq!(read_all(&p, Path::new("/mnt/plfs/dir/rank7")), b"data of rank 7");
    p.rename(Path::new("/mnt/plfs/dir/rank7"), Path::new("/mnt/plfs/dir/seven"))
        .unwrap();
    assert_eq!(read_all(&p, Path::new("/mnt/plfs/dir/seven")), b"data of rank 7");
    p.truncate(Path::new("/mnt/plfs/dir/seven"), 4).unwrap();
    assert_eq!(p.stat(Path::new("/mnt/plfs/dir/seven")).unwrap().size, 4);
    p.unlink(Path::new("/mnt/plfs/dir/seven")).unwrap();
    assert_eq!(p.readdir(Path::new("/mnt/plfs/dir")).unwrap().len(), 11);
    assert_eq!(
        p.rmdir(Path::new("/mnt/plfs/dir")).unwrap_err().raw_errno(),
        Errno::NOTEMPTY.raw_os_error()
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn one_n_mode_packs_small_files() {
    let d = tmpdir("1n");
    let p = plfs_mode(&d, 2, Workload::SmallFile);
    p.mkdir(Path::new("/mnt/plfs/d"), 0o755).unwrap();
    for i in 0..200u32 {
        let f = PathBuf::from(format!("/mnt/plfs/d/f{i}"));
        let h = p.open(&f, rw(), 0o640, 1).unwrap();
        h.write(&vec![i as u8; 1000 + i as usize], 0).unwrap();
        h.close().unwrap();
    }
    // One log per writer, not one file per logical file (and the store's reserve).
    let names: Vec<String> = (0..2)
        .flat_map(|b| {
            std::fs::read_dir(d.join(format!("b{b}/d/.plfs_small")))
                .into_iter()
                .flatten()
        })
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names.iter().filter(|n| n.starts_with("log.")).count(), 1, "{names:?}");
    assert_eq!(names.iter().filter(|n| *n == "reserve").count(), 1, "{names:?}");
    assert_eq!(names.len(), 2, "{names:?}");
    // Another process sees every file after close, with no explicit flush.
    let q = plfs_mode(&d, 2, Workload::SmallFile);
    let names = q.readdir(Path::new("/mnt/plfs/d")).unwrap();
    assert_eq!(names.len(), 200);
    assert_eq!(read_all(&q, Path::new("/mnt/plfs/d/f17")), vec![17u8; 1017]);
    let st = q.stat(Path::new("/mnt/plfs/d/f17")).unwrap();
    assert_eq!(
        (st.size, st.mode & 0o777, st.kind),
        (1017, 0o640 & !crate::sys::umask(), FileKind::File)
    );
    // Both processes write into the same directory at once.
    let hq = q.open(Path::new("/mnt/plfs/d/from_q"), rw(), 0o644, 2).unwrap();
    hq.write(b"qq", 0).unwrap();
    let hp = p.open(Path::new("/mnt/plfs/d/from_p"), rw(), 0o644, 1).unwrap();
    hp.write(b"pp", 0).unwrap();
    hq.close().unwrap();
    hp.close().unwrap();
    assert_eq!(read_all(&p, Path::new("/mnt/plfs/d/from_q")), b"qq");
    assert_eq!(read_all(&q, Path::new("/mnt/plfs/d/from_p")), b"pp");
    // Overwrite, truncate, rename (same and other directory), unlink.
    let h = p
        .open(
            Path::new("/mnt/plfs/d/f1"),
            OpenFlags {
                read: true,
                write: true,
                ..Default::default()
            },
            0,
            1,
        )
        .unwrap();
    h.write(b"XY", 500).unwrap();
    h.truncate(600).unwrap();
    h.close().unwrap();
    let mut want = vec![1u8; 600];
    want[500..502].copy_from_slice(b"XY");
    assert_eq!(read_all(&q, Path::new("/mnt/plfs/d/f1")), want);
    p.rename(Path::new("/mnt/plfs/d/f1"), Path::new("/mnt/plfs/d/g1"))
        .unwrap();
    p.mkdir(Path::new("/mnt/plfs/e"), 0o755).unwrap();
    p.rename(Path::new("/mnt/plfs/d/f2"), Path::new("/mnt/plfs/e/h2"))
        .unwrap();
    p.unlink(Path::new("/mnt/plfs/d/f3")).unwrap();
    let q2 = plfs_mode(&d, 2, Workload::SmallFile);
    assert_eq!(read_all(&q2, Path::new("/mnt/plfs/d/g1")), want);
    assert_eq!(read_all(&q2, Path::new("/mnt/plfs/e/h2")), vec![2u8; 1002]);
    assert!(q2.stat(Path::new("/mnt/plfs/d/f1")).unwrap_err().is_not_found());
    assert!(q2.stat(Path::new("/mnt/plfs/d/f2")).unwrap_err().is_not_found());
    assert!(q2.stat(Path::new("/mnt/plfs/d/f3")).unwrap_err().is_not_found());
    assert_eq!(q2.readdir(Path::new("/mnt/plfs/d")).unwrap().len(), 200);
    // Names cannot escape the directory; rmdir needs an empty directory.
    assert!(q2.create(Path::new("/mnt/plfs/d/.plfs_small"), 0o644, false).is_err());
    assert_eq!(
        q2.rmdir(Path::new("/mnt/plfs/e")).unwrap_err().raw_errno(),
        Errno::NOTEMPTY.raw_os_error()
    );
    q2.unlink(Path::new("/mnt/plfs/e/h2")).unwrap();
    q2.rmdir(Path::new("/mnt/plfs/e")).unwrap();
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn strided_writers_load_compressed_and_overwrites_stay_exact() {
    let d = tmpdir("pat");
    std::fs::create_dir_all(d.join("b0")).unwrap();
    let cfg = || Config {
        files: vec![d.join("plfsrc")],
        global: GlobalParams::default(),
        mounts: vec![MountConfig {
            mount_point: "/mnt/plfs".into(),
            workload: Workload::SharedFile,
            backends: vec![BackendSpec {
                location: d.join("b0"),
                role: BackendRole::Both,
            }],
        }],
        warnings: Vec::new(),
    };
    let f = Path::new("/mnt/plfs/ckpt");
    let (n, rec, per) = (4u64, 100usize, 500u64);
    let p = Plfs::new(cfg()).unwrap();
    let hs: Vec<OpenFile> = (0..n)
        .map(|w| {
            p.open(
                f,
                OpenFlags {
                    write: true,
                    create: true,
                    ..Default::default()
                },
                0o644,
                w as u32,
            )
            .unwrap()
        })
        .collect();
    let mut want = vec![0u8; (n * per) as usize * rec];
    for i in 0..per {
        for (w, h) in hs.iter().enumerate() {
            let off = ((i * n + w as u64) as usize) * rec;
            let data: Vec<u8> = (0..rec).map(|k| (off + k) as u8 ^ w as u8).collect();
            h.write(&data, off as u64).unwrap();
            want[off..off + rec].copy_from_slice(&data);
        }
    }
    for h in hs {
        h.close().unwrap();
    }
    let check = |p: &Plfs, want: &[u8]| {
        let r = p
            .open(
                f,
                OpenFlags {
                    read: true,
                    ..Default::default()
                },
                0,
                99,
            )
            .unwrap();
        let mut got = vec![0u8; want.len()];
        assert_eq!(r.read(&mut got, 0).unwrap(), want.len());
        assert!(got == want, "content differs");
        r
    };
    let p2 = Plfs::new(cfg()).unwrap();
    let r = check(&p2, &want);
    let st = r.index_stats().unwrap();
    let (patterns, pieces, mem) = (st.patterns, st.pieces, st.mem_bytes);
    assert_eq!(pieces, 0);
    assert!((4..=8).contains(&patterns), "{patterns} patterns");
    assert!(mem < 4096, "{mem} bytes");
    drop(r);
    assert_eq!(crate::tools::flatten(&p2, f).unwrap().extents, patterns);
    check(&Plfs::new(cfg()).unwrap(), &want);
    // Overwrite across writers' records after flattening: the flattened index is ignored and
    // the compressed patterns expand exactly where the new write lands.
    let p3 = Plfs::new(cfg()).unwrap();
    let h = p3
        .open(
            f,
            OpenFlags {
                read: true,
                write: true,
                ..Default::default()
            },
            0,
            7,
        )
        .unwrap();
    let mut got = vec![0u8; 10];
    h.read(&mut got, 0).unwrap();
    h.write(&[0xEE; 250], 150).unwrap();
    want[150..400].fill(0xEE);
    let mut got = vec![0u8; 1000];
    h.read(&mut got, 0).unwrap();
    assert!(got[..] == want[..1000]);
    h.close().unwrap();
    check(&Plfs::new(cfg()).unwrap(), &want);
    std::fs::remove_dir_all(&d).unwrap();
}

/// Every directory of a container (meta/, hostdirs, shadow directories) has the container's mode
/// and every log the file's read bits, whatever the umask, and a chmod carries them along: a
/// user the logical mode admits can reach every log, one it does not cannot.
#[test]
fn inner_modes_follow_the_file_mode() {
    use std::os::unix::fs::PermissionsExt;
    let d = tmpdir("modes");
    let p = plfs_at(&d, 2);
    let mode_of = |path: &Path| std::fs::symlink_metadata(path).unwrap().permissions().mode() & 0o7777;
    let check = |mode: u32| {
        let mut dirs = 0;
        let mut logs = 0;
        for b in 0..2 {
            let root = d.join(format!("b{b}"));
            let shadow = root.join(format::SHADOW_ROOT);
            if shadow.exists() {
                assert_eq!(mode_of(&shadow), crate::container::SHADOW_ROOT_MODE);
            }
            let mut stack: Vec<PathBuf> = std::fs::read_dir(&root).unwrap().map(|e| e.unwrap().path()).collect();
            while let Some(x) = stack.pop() {
                let name = x.file_name().unwrap().to_string_lossy().into_owned();
                if x.is_dir() {
                    if x != shadow {
                        assert_eq!(
                            mode_of(&x),
                            crate::container::container_dir_mode(mode),
                            "{}",
                            x.display()
                        );
                        dirs += 1;
                    }
                    stack.extend(std::fs::read_dir(&x).unwrap().map(|e| e.unwrap().path()));
                } else if name.starts_with("data.") || name.starts_with("index.") {
                    assert_eq!(mode_of(&x), crate::container::log_mode(mode), "{}", x.display());
                    logs += 1;
                }
            }
        }
        (dirs, logs)
    };
    let files: Vec<PathBuf> = (0..6).map(|i| PathBuf::from(format!("/mnt/plfs/f{i}"))).collect();
    for f in &files {
        let w = p
            .open(
                f,
                OpenFlags {
                    write: true,
                    create: true,
                    ..Default::default()
                },
                0o660,
                7,
            )
            .unwrap();
        w.write(b"data", 0).unwrap();
        w.close().unwrap();
    }
    let (dirs, logs) = check(0o660 & !crate::sys::umask());
    assert!(
        // One directory per container (format 3); more where a writer logs on a shadow backend.
        dirs >= files.len() && logs == 2 * files.len(),
        "{dirs} dirs, {logs} logs"
    );
    for f in &files {
        p.chmod(f, 0o604).unwrap();
    }
    check(0o604);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_missing_backend_is_a_configuration_error_naming_it_at_its_first_use() {
    // The library no longer stats every backend of every mount point when it starts: a backend
    // that is not there is found when a call first needs it, with the same message.
    let d = tmpdir("nobackend");
    let p = plfs_at(&d, 2);
    let gone = d.join("b1");
    std::fs::remove_dir(&gone).unwrap();
    // Each backend holds the files whose names hash to it: some of these land on the missing one.
    let mut failed = 0;
    for i in 0..16 {
        let f = format!("/mnt/plfs/f{i}");
        match p.create(Path::new(&f), 0o644, true) {
            Ok(_) => assert!(p.stat(Path::new(&f)).is_ok()),
            Err(e) => {
                let msg = e.to_string();
                assert!(
                    msg.contains(&gone.display().to_string()) && msg.contains("does not exist"),
                    "{msg}"
                );
                assert_eq!(e.raw_errno(), rustix::io::Errno::INVAL.raw_os_error(), "{msg}");
                failed += 1;
            }
        }
    }
    assert!(failed > 0, "no file hashed to the missing backend");
    std::fs::remove_dir_all(&d).unwrap();
}

/// A path a front end holds relative to its mount point names the same file as the absolute
/// path, through the same checks, and a relative path not made of names is refused.
#[test]
fn a_path_in_a_mount_names_what_the_absolute_path_names() {
    let d = tmpdir("inmount");
    let p = plfs_at(&d, 2);
    let m = p.mount_id(Path::new("/mnt/plfs")).expect("the configured mount point");
    assert_eq!(p.mount_id(Path::new("/mnt/other")), None);
    let at = |rel: &'static str| InMount {
        mount: m,
        rel: Path::new(rel),
    };
    p.mkdir(&at("dir"), 0o755).unwrap();
    let w = create_writer(&p, &at("dir/f"));
    w.write(b"placed", 0).unwrap();
    w.close().unwrap();
    assert_eq!(p.stat(Path::new("/mnt/plfs/dir/f")).unwrap().size, 6);
    assert_eq!(p.stat(&at("dir/f")).unwrap().size, 6);
    assert_eq!(p.stat(&at("")).unwrap().kind, FileKind::Dir);
    let a = at("dir/f").locate(&p).unwrap();
    let b = Path::new("/mnt/plfs/dir/f").locate(&p).unwrap();
    assert_eq!((a.idx, &a.rel, &a.logical), (b.idx, &b.rel, &b.logical));
    assert_eq!(a.logical, Path::new("/mnt/plfs/dir/f"));
    for bad in ["/dir/f", "dir/../f", "./dir", "dir//f", "dir/", "dir/."] {
        let e = p.stat(&at(bad)).expect_err(bad);
        assert_eq!(e.raw_errno(), Errno::INVAL.raw_os_error(), "{bad}: {e}");
    }
    let reserved = format!("dir/{}", format::MARKER_NAME);
    let e = p
        .stat(&InMount {
            mount: m,
            rel: Path::new(&reserved),
        })
        .expect_err("a reserved name");
    assert!(e.to_string().contains("reserved by PLFS"), "{e}");
    p.rename(&at("dir/f"), &at("g")).unwrap();
    assert_eq!(p.stat(Path::new("/mnt/plfs/g")).unwrap().size, 6);
    std::fs::remove_dir_all(&d).unwrap();
}
