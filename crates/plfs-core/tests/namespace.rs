//! The logical namespace through the public API, with one and with three canonical backends:
//! directories, listings, renames (files, directories, over existing targets), unlink, symbolic
//! links, permissions and times, access, statvfs, and the errno of every error case. Renames and
//! unlinks of open files are in `open_handles.rs`.

mod common;

use common::{assert_bytes_eq, assert_errno, get, pattern, put, ro, wo_create, Fixture};
use plfs_core::config::GlobalParams;
use plfs_core::DirEntry;
use plfs_core::{FileKind, OpenFlags, Plfs};
use rustix::io::Errno;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

fn fixture(tag: &str, backends: usize) -> Fixture {
    Fixture::new(tag, backends, 0, GlobalParams::default())
}

fn listing(p: &Plfs, path: &Path) -> Vec<(String, FileKind)> {
    p.readdir(path)
        .unwrap()
        .into_iter()
        .map(|DirEntry { name, kind }| (name.to_string_lossy().into_owned(), kind))
        .collect()
}

fn dirs_files(fx: &Fixture) {
    let p = fx.plfs();
    let root = PathBuf::from(common::MOUNT);
    assert_eq!(listing(&p, &root), vec![]);
    p.mkdir(&fx.path("d"), 0o755).unwrap();
    p.mkdir(&fx.path("d/e"), 0o700).unwrap();
    put(&p, &fx.path("d/f1"), b"one");
    put(&p, &fx.path("d/f2"), b"two");
    put(&p, &fx.path("top"), b"top");
    p.symlink(Path::new("top"), &fx.path("d/link")).unwrap();
    let want = vec![
        ("e".to_string(), FileKind::Dir),
        ("f1".to_string(), FileKind::File),
        ("f2".to_string(), FileKind::File),
        ("link".to_string(), FileKind::Symlink),
    ];
    assert_eq!(listing(&p, &fx.path("d")), want);
    assert_eq!(
        listing(&fx.plfs(), &fx.path("d")),
        want,
        "a fresh instance lists the same"
    );
    assert_eq!(
        listing(&p, &root),
        vec![("d".into(), FileKind::Dir), ("top".into(), FileKind::File)]
    );
    assert_eq!(p.stat(&fx.path("d")).unwrap().kind, FileKind::Dir);
    assert_eq!(p.stat(&fx.path("d/e")).unwrap().mode & 0o7777, 0o700);
    let st = p.stat(&fx.path("d/f1")).unwrap();
    assert_eq!((st.kind, st.size, st.mode & 0o170000), (FileKind::File, 3, 0o100000));

    // Errors.
    assert_errno(p.mkdir(&fx.path("d"), 0o755), Errno::EXIST, "mkdir existing dir");
    assert_errno(p.mkdir(&fx.path("top"), 0o755), Errno::EXIST, "mkdir over a file");
    assert_errno(
        p.mkdir(&fx.path("nope/x"), 0o755),
        Errno::NOENT,
        "mkdir under a missing dir",
    );
    assert_errno(p.rmdir(&fx.path("d")), Errno::NOTEMPTY, "rmdir non-empty");
    assert_errno(p.rmdir(&fx.path("top")), Errno::NOTDIR, "rmdir a file");
    assert_errno(p.rmdir(&fx.path("nope")), Errno::NOENT, "rmdir missing");
    assert_errno(p.readdir(&fx.path("top")), Errno::NOTDIR, "readdir a file");
    assert_errno(p.readdir(&fx.path("nope")), Errno::NOENT, "readdir missing");
    assert_errno(p.stat(&fx.path("nope")), Errno::NOENT, "stat missing");
    assert_errno(p.open(&fx.path("nope"), ro(), 0, 1), Errno::NOENT, "open missing");
    assert_errno(
        p.open(&fx.path("nope/x"), wo_create(), 0o644, 1),
        Errno::NOENT,
        "create under a missing dir",
    );
    assert_errno(
        p.open(&fx.path("d"), wo_create(), 0o644, 1),
        Errno::ISDIR,
        "open a dir for writing",
    );
    let excl = OpenFlags {
        write: true,
        create: true,
        excl: true,
        ..Default::default()
    };
    assert_errno(
        p.open(&fx.path("top"), excl, 0o644, 1),
        Errno::EXIST,
        "O_EXCL on an existing file",
    );
    assert_errno(p.unlink(&fx.path("d")), Errno::ISDIR, "unlink a dir");
    assert_errno(p.unlink(&fx.path("nope")), Errno::NOENT, "unlink missing");
    assert_errno(
        p.symlink(Path::new("x"), &fx.path("top")),
        Errno::EXIST,
        "symlink over a file",
    );
    assert_errno(p.readlink(&fx.path("top")), Errno::INVAL, "readlink a file");

    // Emptying and removing.
    p.unlink(&fx.path("d/f1")).unwrap();
    p.unlink(&fx.path("d/f2")).unwrap();
    p.unlink(&fx.path("d/link")).unwrap();
    p.rmdir(&fx.path("d/e")).unwrap();
    assert_eq!(listing(&p, &fx.path("d")), vec![]);
    p.rmdir(&fx.path("d")).unwrap();
    assert_errno(p.stat(&fx.path("d")), Errno::NOENT, "stat removed dir");
    assert_eq!(listing(&p, &root), vec![("top".into(), FileKind::File)]);
    for b in &fx.canonical {
        assert!(!b.join("d").exists(), "{} still has d", b.display());
    }
}

#[test]
fn dirs_and_files_one_backend() {
    dirs_files(&fixture("ns-dirs1", 1));
}

#[test]
fn dirs_and_files_three_backends() {
    dirs_files(&fixture("ns-dirs3", 3));
}

/// Paths that go *through* a file must not reach into its container.
fn through_a_file(fx: &Fixture) {
    let p = fx.plfs();
    put(&p, &fx.path("f"), b"data");
    assert_errno(
        p.open(&fx.path("f/x"), wo_create(), 0o644, 1),
        Errno::NOTDIR,
        "create under a file",
    );
    // A name the container holds is not reached through the file (its marker is a reserved
    // name; any other entry will do).
    std::fs::write(fx.container_dir("f").join("inner"), b"").unwrap();
    let inner = "f/inner";
    assert_errno(p.stat(&fx.path(inner)), Errno::NOTDIR, "stat of a path under a file");
    assert_errno(p.mkdir(&fx.path("f/sub"), 0o755), Errno::NOTDIR, "mkdir under a file");
    assert_errno(p.readdir(&fx.path(inner)), Errno::NOTDIR, "readdir under a file");
    assert_errno(
        p.symlink(Path::new("x"), &fx.path("f/l")),
        Errno::NOTDIR,
        "symlink under a file",
    );
    assert_eq!(get(&p, &fx.path("f")), b"data");
}

#[test]
fn paths_through_a_file_one_backend() {
    through_a_file(&fixture("ns-through1", 1));
}

#[test]
fn paths_through_a_file_three_backends() {
    through_a_file(&fixture("ns-through3", 3));
}

fn renames(fx: &Fixture) {
    let p = fx.plfs();
    let a = pattern(1, 0, 5000);
    let b = pattern(2, 0, 3000);
    put(&p, &fx.path("a"), &a);
    put(&p, &fx.path("b"), &b);
    // Over an existing file: the target's old contents are gone, the source name is free.
    p.rename(&fx.path("a"), &fx.path("b")).unwrap();
    assert_errno(p.stat(&fx.path("a")), Errno::NOENT, "source after rename");
    assert_bytes_eq(&get(&p, &fx.path("b")), &a, "renamed over an existing file");
    assert_bytes_eq(&get(&fx.plfs(), &fx.path("b")), &a, "fresh instance");
    assert_eq!(fx.plfs().stat(&fx.path("b")).unwrap().size, 5000);
    assert_eq!(
        listing(&p, Path::new(common::MOUNT)),
        vec![("b".into(), FileKind::File)]
    );
    let cur = fx.path("b");
    // Onto a directory, and a directory onto a file.
    p.mkdir(&fx.path("dir"), 0o755).unwrap();
    assert_errno(p.rename(&cur, &fx.path("dir")), Errno::ISDIR, "file onto a dir");
    assert_errno(p.rename(&fx.path("dir"), &cur), Errno::NOTDIR, "dir onto a file");
    assert_errno(
        p.rename(&fx.path("missing"), &fx.path("x")),
        Errno::NOENT,
        "missing source",
    );
    assert_errno(
        p.rename(&fx.path("dir"), &fx.path("dir/sub")),
        Errno::INVAL,
        "dir into itself",
    );
    // Directories with contents.
    put(&p, &fx.path("dir/x"), &b);
    p.mkdir(&fx.path("dir/sub"), 0o755).unwrap();
    put(&p, &fx.path("dir/sub/y"), &a[..100]);
    p.rename(&fx.path("dir"), &fx.path("dir2")).unwrap();
    assert_errno(p.stat(&fx.path("dir")), Errno::NOENT, "old dir name");
    assert_bytes_eq(&get(&fx.plfs(), &fx.path("dir2/x")), &b, "file in a renamed dir");
    assert_bytes_eq(
        &get(&fx.plfs(), &fx.path("dir2/sub/y")),
        &a[..100],
        "file in a renamed subdir",
    );
    assert_eq!(
        listing(&p, &fx.path("dir2")),
        vec![("sub".into(), FileKind::Dir), ("x".into(), FileKind::File)]
    );
    // Over an empty directory is allowed; over a non-empty one is not.
    p.mkdir(&fx.path("empty"), 0o755).unwrap();
    p.rename(&fx.path("dir2"), &fx.path("empty")).unwrap();
    assert_bytes_eq(&get(&p, &fx.path("empty/x")), &b, "dir renamed over an empty dir");
    p.mkdir(&fx.path("full"), 0o755).unwrap();
    put(&p, &fx.path("full/z"), b"z");
    assert_errno(
        p.rename(&fx.path("empty"), &fx.path("full")),
        Errno::NOTEMPTY,
        "dir onto a non-empty dir",
    );
    // Symlinks move too.
    p.symlink(Path::new("/somewhere/else"), &fx.path("l")).unwrap();
    p.rename(&fx.path("l"), &fx.path("l2")).unwrap();
    assert_eq!(p.readlink(&fx.path("l2")).unwrap(), OsString::from("/somewhere/else"));
    assert_eq!(p.stat(&fx.path("l2")).unwrap().kind, FileKind::Symlink);
    // Renaming onto itself changes nothing.
    p.rename(&cur, &cur).unwrap();
    assert_bytes_eq(&get(&p, &cur), &a, "renamed onto itself");
}

/// `rename_noreplace` moves what it is given only to a free name, and refuses every kind of
/// target with `EEXIST`, leaving both sides as they were.
fn renames_without_replacing(fx: &Fixture) {
    let p = fx.plfs();
    let a = pattern(3, 0, 4000);
    let b = pattern(4, 0, 2000);
    put(&p, &fx.path("a"), &a);
    put(&p, &fx.path("b"), &b);
    p.mkdir(&fx.path("dir"), 0o755).unwrap();
    p.mkdir(&fx.path("dir2"), 0o755).unwrap();
    p.symlink(Path::new("a"), &fx.path("l")).unwrap();
    for (from, to) in [
        ("a", "b"),
        ("a", "dir"),
        ("a", "l"),
        ("dir", "dir2"),
        ("dir", "b"),
        ("l", "b"),
    ] {
        assert_errno(
            p.rename_noreplace(&fx.path(from), &fx.path(to)),
            Errno::EXIST,
            &format!("{from} onto {to}"),
        );
    }
    assert_errno(
        p.rename_noreplace(&fx.path("a"), &fx.path("a")),
        Errno::EXIST,
        "a onto itself",
    );
    assert_bytes_eq(&get(&fx.plfs(), &fx.path("a")), &a, "a refused source");
    assert_bytes_eq(&get(&fx.plfs(), &fx.path("b")), &b, "a refused target");
    assert_errno(
        p.rename_noreplace(&fx.path("missing"), &fx.path("x")),
        Errno::NOENT,
        "missing source",
    );
    // To free names: a file (within its directory and into another), a directory, a link.
    p.rename_noreplace(&fx.path("a"), &fx.path("c")).unwrap();
    p.rename_noreplace(&fx.path("c"), &fx.path("dir/c")).unwrap();
    p.rename_noreplace(&fx.path("dir2"), &fx.path("dir3")).unwrap();
    p.rename_noreplace(&fx.path("l"), &fx.path("l2")).unwrap();
    assert_errno(p.stat(&fx.path("a")), Errno::NOENT, "moved source");
    assert_bytes_eq(&get(&fx.plfs(), &fx.path("dir/c")), &a, "moved file");
    assert_eq!(p.stat(&fx.path("dir3")).unwrap().kind, FileKind::Dir);
    assert_eq!(p.readlink(&fx.path("l2")).unwrap(), OsString::from("a"));
    assert_eq!(
        listing(&fx.plfs(), Path::new(common::MOUNT)),
        vec![
            ("b".into(), FileKind::File),
            ("dir".into(), FileKind::Dir),
            ("dir3".into(), FileKind::Dir),
            ("l2".into(), FileKind::Symlink)
        ]
    );
}

#[test]
fn renames_without_replacing_one_backend() {
    renames_without_replacing(&fixture("ns-nrep1", 1));
}

#[test]
fn renames_without_replacing_three_backends() {
    renames_without_replacing(&fixture("ns-nrep3", 3));
}

#[test]
fn renames_one_backend() {
    renames(&fixture("ns-ren1", 1));
}

#[test]
fn renames_three_backends() {
    renames(&fixture("ns-ren3", 3));
}

fn attributes(fx: &Fixture) {
    let p = fx.plfs();
    put(&p, &fx.path("f"), b"hello");
    p.mkdir(&fx.path("d"), 0o755).unwrap();
    p.symlink(Path::new("f"), &fx.path("l")).unwrap();
    for (name, mode) in [("f", 0o640), ("d", 0o711)] {
        p.chmod(&fx.path(name), mode).unwrap();
        assert_eq!(p.stat(&fx.path(name)).unwrap().mode & 0o7777, mode, "chmod {name}");
        assert_eq!(
            fx.plfs().stat(&fx.path(name)).unwrap().mode & 0o7777,
            mode,
            "chmod {name} (fresh)"
        );
    }
    // The file stays usable by its owner whatever its mode says.
    p.chmod(&fx.path("f"), 0o200).unwrap();
    let f = p
        .open(
            &fx.path("f"),
            OpenFlags {
                write: true,
                ..Default::default()
            },
            0,
            3,
        )
        .unwrap();
    f.write(b"J", 0).unwrap();
    f.close().unwrap();
    p.chmod(&fx.path("f"), 0o644).unwrap();
    assert_eq!(get(&p, &fx.path("f")), b"Jello");

    let t = |s: i64, n: i64| plfs_core::TimeSpec::At(s, n);
    for name in ["f", "d", "l"] {
        p.utimens(&fx.path(name), t(1_000_000_000, 5), t(1_200_000_000, 123_456_789))
            .unwrap();
        let st = fx.plfs().stat(&fx.path(name)).unwrap();
        assert_eq!(st.atime_ns, 1_000_000_000 * 1_000_000_000 + 5, "atime of {name}");
        assert_eq!(
            st.mtime_ns,
            1_200_000_000 * 1_000_000_000 + 123_456_789,
            "mtime of {name}"
        );
    }
    // Omit leaves a time alone.
    p.utimens(&fx.path("f"), plfs_core::TimeSpec::Omit, t(1_300_000_000, 0))
        .unwrap();
    let st = p.stat(&fx.path("f")).unwrap();
    assert_eq!(
        (st.atime_ns, st.mtime_ns),
        (1_000_000_000 * 1_000_000_000 + 5, 1_300_000_000 * 1_000_000_000)
    );
    // A later write moves mtime forward.
    let f = p.open(&fx.path("f"), wo_create(), 0, 4).unwrap();
    f.write(b"!", 5).unwrap();
    f.close().unwrap();
    let st = fx.plfs().stat(&fx.path("f")).unwrap();
    assert!(st.mtime_ns > 1_300_000_000 * 1_000_000_000, "write updates mtime");
    assert_eq!(st.size, 6);

    let me = (rustix::process::geteuid().as_raw(), rustix::process::getegid().as_raw());
    let (uid, gid) = if me.0 == 0 { (1234, 5678) } else { me };
    for name in ["f", "d", "l"] {
        p.chown(&fx.path(name), uid, gid).unwrap();
        let st = fx.plfs().stat(&fx.path(name)).unwrap();
        assert_eq!((st.uid, st.gid), (uid, gid), "chown {name}");
    }
    p.chown(&fx.path("f"), u32::MAX, me.1).unwrap();
    let st = p.stat(&fx.path("f")).unwrap();
    assert_eq!((st.uid, st.gid), (uid, me.1), "chown with an id left unchanged");
    assert_errno(p.chmod(&fx.path("nope"), 0o644), Errno::NOENT, "chmod missing");
    assert_errno(p.chown(&fx.path("nope"), uid, gid), Errno::NOENT, "chown missing");
    assert_errno(
        p.utimens(&fx.path("nope"), t(1, 0), t(1, 0)),
        Errno::NOENT,
        "utimens missing",
    );

    p.access(&fx.path("f"), 0).unwrap();
    p.access(&fx.path("f"), 4).unwrap();
    p.access(&fx.path("d"), 1).unwrap();
    assert_errno(p.access(&fx.path("nope"), 0), Errno::NOENT, "access missing");
    if me.0 != 0 {
        p.chmod(&fx.path("f"), 0o400).unwrap();
        assert_errno(
            p.access(&fx.path("f"), 2),
            Errno::ACCESS,
            "access W_OK on a read-only file",
        );
    }

    let vfs = p.statvfs(&fx.path("f")).unwrap();
    assert!(
        vfs.f_bsize > 0 && vfs.f_blocks > 0,
        "statvfs: bsize {} blocks {}",
        vfs.f_bsize,
        vfs.f_blocks
    );
    let root_vfs = p.statvfs(Path::new(common::MOUNT)).unwrap();
    assert_eq!(root_vfs.f_fsid, vfs.f_fsid);
    assert_errno(
        p.statvfs(Path::new("/not/under/the/mount")).map(|v| v.f_bsize),
        Errno::XDEV,
        "statvfs outside the mount",
    );
}

#[test]
fn attributes_one_backend() {
    attributes(&fixture("ns-attr1", 1));
}

#[test]
fn attributes_three_backends() {
    attributes(&fixture("ns-attr3", 3));
}

#[test]
fn unlink_frees_the_name_and_the_logs() {
    let fx = Fixture::new("ns-unlink", 2, 1, GlobalParams::default());
    let p = fx.plfs();
    put(&p, &fx.path("f"), &pattern(5, 0, 10_000));
    assert!(!fx.logs("f", "data.").is_empty());
    p.unlink(&fx.path("f")).unwrap();
    assert_errno(p.stat(&fx.path("f")), Errno::NOENT, "after unlink");
    // No container, no shadow logs left behind.
    for b in fx.canonical.iter().chain(&fx.shadows) {
        let left: Vec<_> = walk(b).into_iter().filter(|x| x.is_file()).collect();
        assert!(left.is_empty(), "left on {}: {left:?}", b.display());
    }
    // The name can be reused, and starts empty.
    put(&p, &fx.path("f"), b"new");
    assert_eq!(get(&fx.plfs(), &fx.path("f")), b"new");
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            out.extend(walk(&p));
        }
        out.push(p);
    }
    out
}

#[test]
fn config_file_matches_the_built_config() {
    // The fixtures' plfsrc (used by child processes) parses to the configuration built in memory.
    let fx = Fixture::new(
        "ns-cfg",
        2,
        1,
        GlobalParams {
            num_hostdirs: 7,
            index_buffer_records: 3,
            ..GlobalParams::default()
        },
    );
    let parsed = plfs_core::Config::from_file(&fx.rc).unwrap();
    assert_eq!(parsed.global, fx.config.global);
    assert_eq!(parsed.mounts, fx.config.mounts);
    assert!(fx.plfs().is_plfs_path(&fx.path("x")));
    assert!(!fx.plfs().is_plfs_path(Path::new("/plfs-test/mntx")));
}

/// Logical names PLFS uses for itself inside backends must not corrupt the namespace: creating
/// them is refused, or they behave as ordinary files.
fn reserved_names(fx: &Fixture) {
    let p = fx.plfs();
    p.mkdir(&fx.path("d"), 0o755).unwrap();
    for name in [".plfscontainer", ".plfs_shadow", ".plfstmp.x", "meta", "hostdir.3"] {
        let path = fx.path(&format!("d/{name}"));
        match p.open(&path, wo_create(), 0o644, 1) {
            Ok(f) => {
                f.write(b"x", 0).unwrap();
                f.close().unwrap();
                assert_eq!(get(&fx.plfs(), &path), b"x", "{name} reads back");
                let names: Vec<String> = listing(&p, &fx.path("d")).into_iter().map(|(n, _)| n).collect();
                assert_eq!(names, vec![name.to_string()], "{name} is listed");
                p.unlink(&path).unwrap();
            }
            Err(e) => assert!(
                [Errno::INVAL, Errno::PERM, Errno::ACCESS]
                    .iter()
                    .any(|x| x.raw_os_error() == e.raw_errno()),
                "{name}: unexpected error {e}"
            ),
        }
        assert_eq!(
            p.stat(&fx.path("d")).unwrap().kind,
            FileKind::Dir,
            "d is still a directory after {name}"
        );
        assert_eq!(listing(&p, &fx.path("d")), vec![], "d is empty again after {name}");
    }
}

#[test]
fn reserved_names_one_backend() {
    reserved_names(&fixture("ns-reserved1", 1));
}

#[test]
fn reserved_names_three_backends() {
    reserved_names(&fixture("ns-reserved3", 3));
}

/// Names up to NAME_MAX (255 bytes) work, for files and directories, including renames and unlink.
fn long_names(fx: &Fixture) {
    let p = fx.plfs();
    let long = "n".repeat(255);
    let file = fx.path(&long);
    put(&p, &file, b"long");
    assert_eq!(get(&fx.plfs(), &file), b"long");
    let other = fx.path(&"m".repeat(255));
    p.rename(&file, &other).unwrap();
    assert_eq!(get(&fx.plfs(), &other), b"long");
    put(&p, &file, b"again");
    p.rename(&file, &other).unwrap(); // replaces an existing file
    assert_eq!(get(&fx.plfs(), &other), b"again");
    p.unlink(&other).unwrap();
    let dir = fx.path(&"d".repeat(255));
    p.mkdir(&dir, 0o755).unwrap();
    p.rmdir(&dir).unwrap();
    assert_eq!(listing(&p, Path::new(common::MOUNT)), vec![]);
    assert_errno(
        p.open(&fx.path(&"x".repeat(256)), wo_create(), 0o644, 1),
        Errno::NAMETOOLONG,
        "256-byte name",
    );
}

#[test]
fn long_names_one_backend() {
    long_names(&fixture("ns-long1", 1));
}

#[test]
fn long_names_three_backends() {
    long_names(&fixture("ns-long3", 3));
}

/// fsync of a directory (ldplfs and FUSE come here): every canonical backend's copy of it is
/// synced, so that what was created, renamed or removed in it survives a power loss; in a 1-N
/// directory this process's records of it reach its log and are synced with the log's name
/// first. Before 2026-11-27 it did nothing.
#[test]
fn fsync_of_a_directory_syncs_each_backend_copy_and_the_1n_records_in_it() {
    let fx = fixture("syncdir", 3);
    let p = fx.plfs();
    p.mkdir(&fx.path("d"), 0o755).unwrap();
    put(&p, &fx.path("d/f"), b"x");
    let fsyncs = common::call_counter(&fx, "sys::fsync");
    p.sync_dir(&fx.path("d")).unwrap();
    assert_eq!(fsyncs(), 3, "one fsync per backend copy of d");
    p.sync_dir(Path::new(common::MOUNT)).unwrap();
    assert_eq!(fsyncs(), 6, "the mount's root: one per backend root");

    let fx = Fixture::small("syncdir-1n", 1, GlobalParams::default());
    let (a, b) = (fx.plfs(), fx.plfs());
    a.mkdir(&fx.path("d"), 0o755).unwrap();
    let f = a.open(&fx.path("d/f"), wo_create(), 0o644, 7).unwrap();
    f.write(b"kept", 0).unwrap();
    assert_errno(b.stat(&fx.path("d/f")), Errno::NOENT, "not yet in the log");
    let fsyncs = common::call_counter(&fx, "sys::fsync");
    a.sync_dir(&fx.path("d")).unwrap();
    assert_eq!(
        fsyncs(),
        4,
        "the log, its store, the backend's d, then d again as a backend copy"
    );
    assert_eq!(
        b.stat(&fx.path("d/f")).unwrap().size,
        4,
        "the create and the write reached the log"
    );
    a.sync_dir(&fx.path("d")).unwrap();
    assert_eq!(fsyncs(), 6, "the names are synced once: the log and d");
    f.close().unwrap();
}

/// The owner of a backend object.
fn owner(p: &Path) -> (u32, u32) {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::symlink_metadata(p).unwrap();
    (m.uid(), m.gid())
}

#[test]
fn a_chown_follows_into_every_log_and_one_that_changes_nothing_lists_nothing() {
    let fx = fixture("chown-follow", 1);
    let p = fx.plfs();
    let f = fx.path("o");
    // Two writers, two pairs of logs.
    for k in 0..2u64 {
        let h = p.open(&f, wo_create(), 0o644, 10 + k as u32).unwrap();
        h.write(&pattern(k, 0, 3000), k * 3000).unwrap();
        h.close().unwrap();
    }
    let me = (rustix::process::geteuid().as_raw(), rustix::process::getegid().as_raw());
    // As root the ids change; otherwise only the group may be given (to the process's own).
    let to = if me.0 == 0 { (1234, 5678) } else { me };
    let c = fx.container_dir("o");
    let logs: Vec<PathBuf> = fx
        .logs("o", "index.")
        .into_iter()
        .chain(fx.logs("o", "data."))
        .collect();
    assert_eq!(logs.len(), 4, "{logs:?}");
    p.chown(&f, to.0, to.1).unwrap();
    for o in logs.iter().chain([&c, &c.join(".plfscontainer")]) {
        assert_eq!(owner(o), to, "{}", o.display());
    }
    // A chown to the ids the file has: the marker only, no listing of the container.
    let tag = fx.dir.path().file_name().unwrap().to_string_lossy().into_owned();
    let listed = common::calls_matching("sys::readdir", &tag);
    let before = listed();
    p.chown(&f, to.0, to.1).unwrap();
    p.chown(&f, u32::MAX, to.1).unwrap();
    assert_eq!(
        listed() - before,
        0,
        "a chown that changes nothing listed the container"
    );
    if me.0 == 0 {
        // A chown cut short after its logs, before the container directory (the last step):
        // the next chown to the same ids does it all again.
        std::os::unix::fs::lchown(&logs[0], Some(0), Some(0)).unwrap();
        std::os::unix::fs::lchown(&c, Some(0), Some(0)).unwrap();
        p.chown(&f, to.0, to.1).unwrap();
        assert_eq!(owner(&logs[0]), to, "a chown cut short was not finished");
        assert_eq!(owner(&c), to);
        assert!(listed() > before, "the finishing chown did not look at the logs");
    }
    assert_bytes_eq(&get(&p, &f), &[pattern(0, 0, 3000), pattern(1, 0, 3000)].concat(), "o");
}

#[test]
fn a_stat_of_the_mount_point_looks_for_no_plfs_2_file() {
    // The backend's root is the mount point: it is a directory, never a PLFS 2.x file, and
    // nothing renames it. Its stat is its own and its marker's (a container at a mount point's
    // root is still read), not a look for a PLFS 2.x access file and a second stat as well.
    let fx = fixture("root-stat", 1);
    let p = fx.plfs();
    p.mkdir(&fx.path("d"), 0o755).unwrap(); // the backend root is opened, and has links
    let tag = fx.dir.path().file_name().unwrap().to_string_lossy().into_owned();
    let stats = common::calls_matching("sys::stat", &tag);
    let before = stats();
    let st = p.stat(Path::new(common::MOUNT)).unwrap();
    assert_eq!(st.kind, FileKind::Dir);
    assert_eq!(stats() - before, 2, "stats of the mount point's backend root");
}

/// A symbolic link in the middle of a path is not followed (python.md, "a link in the middle of
/// a path ... is not"): every call through it fails as through a component that is not a
/// directory, `ENOTDIR` (`ENOENT` for a look-up of a name N-1 finds missing), the same in every
/// workload, and nothing is made where the link points. Before, a 1-N directory answered `ELOOP`
/// to each of them (the store's look-up refused the link), which no plain file system gives for
/// a link to a directory.
#[test]
fn a_link_in_the_middle_of_a_path_is_not_a_directory_in_every_workload() {
    for (tag, fx) in [
        ("N-1", fixture("midlink-n1", 1)),
        ("1-N", Fixture::small("midlink-1n", 1, GlobalParams::default())),
    ] {
        let p = fx.plfs();
        p.mkdir(&fx.path("d"), 0o755).unwrap();
        put(&p, &fx.path("d/f"), b"data");
        p.symlink(Path::new("d"), &fx.path("ld")).unwrap();
        p.symlink(Path::new("nowhere"), &fx.path("dangling")).unwrap();
        let refused = |what: &str, r: Result<(), plfs_core::Error>| {
            let e = r.expect_err(what).raw_errno();
            assert!(
                e == Errno::NOTDIR.raw_os_error() || e == Errno::NOENT.raw_os_error(),
                "{tag}: {what}: errno {e} ({})",
                std::io::Error::from_raw_os_error(e)
            );
        };
        refused("stat ld/f", p.stat(&fx.path("ld/f")).map(drop));
        refused("open ld/f", p.open(&fx.path("ld/f"), ro(), 0, 1).map(drop));
        refused("stat ld/missing", p.stat(&fx.path("ld/missing")).map(drop));
        refused("stat dangling/x", p.stat(&fx.path("dangling/x")).map(drop));
        refused("create ld/g", p.create(&fx.path("ld/g"), 0o644, true).map(drop));
        refused("open ld/g", p.open(&fx.path("ld/g"), wo_create(), 0o644, 1).map(drop));
        refused(
            "create dangling/x",
            p.create(&fx.path("dangling/x"), 0o644, true).map(drop),
        );
        refused("unlink ld/f", p.unlink(&fx.path("ld/f")));
        refused("rename d/f ld/h", p.rename(&fx.path("d/f"), &fx.path("ld/h")));
        refused("mkdir ld/e", p.mkdir(&fx.path("ld/e"), 0o755));
        assert_eq!(
            listing(&p, &fx.path("d")),
            vec![("f".to_string(), FileKind::File)],
            "{tag}: made through the link"
        );
        assert_eq!(get(&p, &fx.path("d/f")), b"data", "{tag}");
    }
}
