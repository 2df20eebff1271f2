//! Renames and unlinks of files, also while a writer has them open and across canonical and
//! shadow backends: every byte must stay readable at the new name (open handles work through
//! directory descriptors, not paths), and an unlinked file must vanish with its logs.

mod common;

use common::{assert_bytes_eq, assert_errno, get, pattern, put, rw_create, Fixture};
use plfs_core::config::{GlobalParams, Workload};
use plfs_core::TimeSpec;
use rustix::io::Errno;

fn fixture(tag: &str, backends: usize) -> Fixture {
    Fixture::new(tag, backends, 0, GlobalParams::default())
}

/// A chain of renames through many names, so the file's home backend changes every way.
fn rename_chain(fx: &Fixture) {
    let p = fx.plfs();
    let a = pattern(1, 0, 5000);
    let mut cur = fx.path("c");
    put(&p, &cur, &a);
    for i in 0..8 {
        let next = fx.path(&format!("n{i}"));
        p.rename(&cur, &next).unwrap();
        assert_bytes_eq(
            &get(&fx.plfs(), &next),
            &a,
            &format!("after rename to {}", next.display()),
        );
        cur = next;
    }
}

#[test]
fn rename_chain_one_backend() {
    rename_chain(&fixture("ns-chain1", 1));
}

#[test]
fn rename_chain_three_backends() {
    rename_chain(&fixture("ns-chain3", 3));
}

/// Names whose home is (`true`) or is not (`false`) canonical backend `b` of `n`.
fn name_with_home(n: u64, b: u64, at_home: bool, tag: &str) -> String {
    (0..)
        .map(|i| format!("{tag}{i}"))
        .find(|s| (plfs_format::hash_str(s) % n == b) == at_home)
        .unwrap()
}

/// Open for writing, write, rename, keep writing through the same handle, close: every byte must
/// be at the new name (the handle works through a directory descriptor, not a path).
fn rename_while_open(fx: &Fixture, from: &str, to: &str) {
    let p = fx.plfs();
    let f = p.open(&fx.path(from), rw_create(), 0o644, 77).unwrap();
    let first = pattern(3, 0, 70_000);
    f.write(&first, 0).unwrap();
    f.sync().unwrap();
    p.rename(&fx.path(from), &fx.path(to)).unwrap();
    let second = pattern(4, 70_000, 30_000);
    f.write(&second, 70_000).unwrap();
    f.write(b"HEAD", 0).unwrap();
    let mut want = first.clone();
    want.extend_from_slice(&second);
    want[..4].copy_from_slice(b"HEAD");
    assert_bytes_eq(&common::read_all(&f).unwrap(), &want, "read through the renamed handle");
    // Same process, new name: the same open container, so the unsynced writes are visible.
    assert_eq!(
        p.stat(&fx.path(to)).unwrap().size,
        100_000,
        "stat of the new name while open"
    );
    assert_bytes_eq(
        &get(&p, &fx.path(to)),
        &want,
        "read at the new name while the writer is open",
    );
    f.close().unwrap();
    assert_errno(p.stat(&fx.path(from)), Errno::NOENT, "old name");
    assert_eq!(
        fx.plfs().stat(&fx.path(to)).unwrap().size,
        100_000,
        "size at the new name"
    );
    assert_bytes_eq(
        &get(&fx.plfs(), &fx.path(to)),
        &want,
        &format!("{from} -> {to}: contents at the new name"),
    );
}

#[test]
fn rename_while_open_one_backend() {
    rename_while_open(&fixture("ns-ren-open1", 1), "w", "w2");
}

/// Three backends: the writer's host picks shadow backend `s`; the source's home is (or not) `s`,
/// and so is the target's.
fn rename_open_homes(tag: &str, from_home: bool, to_home: bool) {
    let s = plfs_format::hash_str(plfs_core::hostname()) % 3;
    let fx = fixture(tag, 3);
    let from = name_with_home(3, s, from_home, "src");
    let to = name_with_home(3, s, to_home, "dst");
    rename_while_open(&fx, &from, &to);
}

#[test]
fn rename_while_open_three_backends_shadow_to_shadow() {
    rename_open_homes("ns-ren-open-ss", true, true);
}

#[test]
fn rename_while_open_three_backends_shadow_to_other() {
    rename_open_homes("ns-ren-open-so", true, false);
}

#[test]
fn rename_while_open_three_backends_other_to_shadow() {
    rename_open_homes("ns-ren-open-os", false, true);
}

#[test]
fn rename_while_open_three_backends_other_to_other() {
    rename_open_homes("ns-ren-open-oo", false, false);
}

#[test]
fn rename_closed_file_onto_the_writers_shadow_backend() {
    // The file was written where its logs went to the shadow backend's .plfs_shadow; the new
    // name's home is that backend.
    let s = plfs_format::hash_str(plfs_core::hostname()) % 3;
    let fx = fixture("ns-ren-shadow", 3);
    let (from, to) = (name_with_home(3, s, false, "src"), name_with_home(3, s, true, "dst"));
    let p = fx.plfs();
    let data = pattern(9, 0, 12_345);
    put(&p, &fx.path(&from), &data);
    p.rename(&fx.path(&from), &fx.path(&to)).unwrap();
    assert_eq!(fx.plfs().stat(&fx.path(&to)).unwrap().size, data.len() as u64);
    assert_bytes_eq(&get(&fx.plfs(), &fx.path(&to)), &data, "contents after the rename");
}

#[test]
fn rename_while_open_with_a_shadow_only_backend() {
    for (from, to) in [("a", "b"), ("c", "d"), ("e", "f"), ("g", "h")] {
        let fx = Fixture::new("ns-ren-open-sh", 2, 1, GlobalParams::default());
        rename_while_open(&fx, from, to);
        assert!(!fx.logs(to, "index.").is_empty());
    }
}

/// Every regular file left on the backends.
fn files_on(fx: &Fixture) -> Vec<std::path::PathBuf> {
    fn walk(d: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(d).into_iter().flatten().flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                walk(&e.path(), out);
            } else {
                out.push(e.path());
            }
        }
    }
    let mut out = Vec::new();
    for b in fx.canonical.iter().chain(&fx.shadows) {
        walk(b, &mut out);
    }
    out
}

fn unlink_while_open(fx: &Fixture) {
    let p = fx.plfs();
    let path = fx.path("doomed");
    let f = p.open(&path, rw_create(), 0o644, 5).unwrap();
    f.write(&pattern(1, 0, 50_000), 0).unwrap();
    f.sync().unwrap();
    p.unlink(&path).unwrap();
    assert_errno(p.stat(&path), Errno::NOENT, "stat after unlink");
    // The open handle keeps working, as on POSIX, and closing it is not an error.
    f.write(b"more", 50_000).unwrap();
    let mut want = pattern(1, 0, 50_000);
    want.extend_from_slice(b"more");
    assert_bytes_eq(
        &common::read_all(&f).unwrap(),
        &want,
        "read through the unlinked handle",
    );
    f.close().unwrap();
    assert_errno(p.stat(&path), Errno::NOENT, "stat after close");
    assert!(p.readdir(std::path::Path::new(common::MOUNT)).unwrap().is_empty());
    assert_eq!(
        files_on(fx),
        Vec::<std::path::PathBuf>::new(),
        "nothing left on the backends"
    );
    // The name is free again.
    put(&p, &path, b"reborn");
    assert_eq!(get(&fx.plfs(), &path), b"reborn");
}

#[test]
fn unlink_while_open_one_backend() {
    unlink_while_open(&fixture("ns-unl-open1", 1));
}

#[test]
fn unlink_while_open_shadow_backend() {
    unlink_while_open(&Fixture::new("ns-unl-open-sh", 2, 1, GlobalParams::default()));
}

#[test]
fn reader_keeps_reading_an_unlinked_file() {
    let fx = fixture("ns-unl-read", 1);
    let data = pattern(2, 0, 30_000);
    let path = fx.path("f");
    put(&fx.plfs(), &path, &data);
    let other = fx.plfs(); // another process
    let r = other.open(&path, common::ro(), 0, 9).unwrap();
    assert_bytes_eq(&common::read_all(&r).unwrap(), &data, "before unlink");
    fx.plfs().unlink(&path).unwrap();
    assert_bytes_eq(
        &common::read_all(&r).unwrap(),
        &data,
        "after unlink, through the open handle",
    );
    r.close().unwrap();
}

/// fchmod, fchown and futimens through an open file (`Plfs::fchmod` and its kin) change that
/// file after a rename and after an unlink, never the file that took its old name: they went
/// by the name the file was opened with, which changed the new file's mode and times.
#[test]
fn attribute_changes_through_an_open_file_follow_the_file() {
    for (w, tag) in [(Workload::SharedFile, "n1"), (Workload::FilePerProc, "nn")] {
        let mut fx = fixture(&format!("fattr-{tag}"), 1);
        fx.config.mounts[0].workload = w;
        let p = fx.plfs();
        let (a, b) = (fx.path("a"), fx.path("b"));
        let f = p.open(&a, rw_create(), 0o644, 7).unwrap();
        f.write(b"first", 0).unwrap();
        p.rename(&a, &b).unwrap();
        put(&p, &a, b"other");
        p.fchmod(&f, 0o600).unwrap();
        p.fchown(&f, u32::MAX, rustix::process::getegid().as_raw()).unwrap();
        p.futimens(&f, TimeSpec::At(1, 7), TimeSpec::At(2, 9)).unwrap();
        let moved = p.stat(&b).unwrap();
        assert_eq!(
            (moved.mode & 0o7777, moved.mtime_ns),
            (0o600, 2_000_000_009),
            "{tag}: the renamed file"
        );
        let other = p.stat(&a).unwrap();
        assert_eq!(
            other.mode & 0o7777,
            0o644 & !plfs_core::umask(),
            "{tag}: the file with the old name"
        );
        assert_ne!(other.mtime_ns, 2_000_000_009, "{tag}: the file with the old name");
        p.unlink(&b).unwrap();
        // An N-N file is a plain file of the backend: unlinked, it takes a mode only where the
        // backend's own files do (GlusterFS refuses with ESTALE). A container is still there.
        let refused = (w == Workload::FilePerProc)
            .then(|| plain_fchmod_after_unlink(fx.dir.path()))
            .flatten();
        if let Some(errno) = refused {
            assert_eq!(
                p.fchmod(&f, 0o640).unwrap_err().raw_errno(),
                errno,
                "{tag}: as the backend"
            );
            f.close().unwrap();
            continue;
        }
        p.fchmod(&f, 0o640).unwrap();
        p.futimens(&f, TimeSpec::Omit, TimeSpec::At(4, 13)).unwrap();
        let st = p.fstat(&f).unwrap();
        assert_eq!(
            (st.mode & 0o7777, st.mtime_ns, st.size),
            (0o640, 4_000_000_013, 5),
            "{tag}: unlinked"
        );
        f.close().unwrap();
        assert_eq!(get(&p, &a), b"other", "{tag}");
    }
}

/// The errno with which the backend under `dir` refuses fchmod of a plain file that was unlinked
/// while open, or `None` if it allows it (as a local file system does).
fn plain_fchmod_after_unlink(dir: &std::path::Path) -> Option<i32> {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join("plain-unlinked");
    let f = std::fs::File::create(&p).unwrap();
    std::fs::remove_file(&p).unwrap();
    f.set_permissions(std::fs::Permissions::from_mode(0o640))
        .err()
        .map(|e| e.raw_os_error().unwrap())
}

/// Modes of the backend objects under `name`'s container: the directories holding its logs
/// (hostdirs, or the container itself where the logs are in it, format 3) and every log.
fn log_modes(fx: &Fixture, name: &str) -> Vec<(String, u32)> {
    use std::os::unix::fs::PermissionsExt;
    let c = fx.container_dir(name);
    let mut out = Vec::new();
    let mut dirs = common::subdirs_with_prefix(&c, "hostdir.");
    if dirs.is_empty() {
        dirs.push(c.clone());
    }
    for d in dirs {
        out.push((
            "hostdir".to_string(),
            d.metadata().unwrap().permissions().mode() & 0o7777,
        ));
    }
    for l in fx.logs(name, "data.").into_iter().chain(fx.logs(name, "index.")) {
        let kind = l
            .file_name()
            .unwrap()
            .to_string_lossy()
            .split('.')
            .next()
            .unwrap()
            .to_string();
        out.push((kind, l.metadata().unwrap().permissions().mode() & 0o7777));
    }
    out
}

/// Logs made after a chmod have its mode: a file made private through its open file before its
/// first write (`open(0644)`, `fchmod(0600)`, `write`), and a chmod by another process while this
/// one has the file open. A writer took the mode read when the file was opened, so those logs
/// (and the hostdir) were readable by every user.
#[test]
fn logs_made_after_a_chmod_have_its_mode() {
    let fx = fixture("chmod-then-write", 1);
    let p = fx.plfs();
    let a = fx.path("a");
    let f = p.open(&a, rw_create(), 0o644, 7).unwrap();
    p.fchmod(&f, 0o600).unwrap();
    f.write(b"secret", 0).unwrap();
    let want = [("hostdir", 0o711), ("data", 0o600), ("index", 0o600)];
    let got = log_modes(&fx, "a");
    assert_eq!(got.len(), 3, "{got:?}");
    for (kind, mode) in &got {
        let w = want.iter().find(|(k, _)| k == kind).unwrap().1;
        assert_eq!(*mode, w, "{kind} after fchmod 0600 and the first write: {got:?}");
    }
    // Another process makes it group-readable; this one's next writer (pid 8) makes its logs.
    fx.plfs().chmod(&a, 0o640).unwrap();
    f.write_as(b"-more", 6, 8).unwrap();
    f.close().unwrap();
    let got = log_modes(&fx, "a");
    assert_eq!(got.len(), 5, "{got:?}");
    for (kind, mode) in &got {
        let w = if kind == "hostdir" { 0o751 } else { 0o640 };
        assert_eq!(*mode, w, "{kind} after another process's chmod 0640: {got:?}");
    }
    assert_eq!(get(&p, &a), b"secret-more");
}
