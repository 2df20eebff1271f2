//! `Plfs::reopen`: opening a file again by the identity an earlier open reported, as a process
//! does with a descriptor it inherited across exec (the LD_PRELOAD library). After another process
//! unlinked the file (its container renamed aside, design.md "Unlink"), the file is found where it
//! went and reads byte for byte as before, with `st_nlink` 0, and its last closer deletes it; an
//! identity that is not there opens nothing, never another file's bytes. Each `fx.plfs()` is a
//! separate instance with its own descriptors and locks, as a separate process would have.

mod common;

use common::{assert_bytes_eq, assert_errno, get, pattern, put, read_all, ro, Fixture};
use plfs_core::config::GlobalParams;
use plfs_core::OpenFlags;
use rustix::io::Errno;
use std::path::{Path, PathBuf};

fn rw() -> OpenFlags {
    OpenFlags {
        read: true,
        write: true,
        ..OpenFlags::default()
    }
}

/// Every regular file or symlink left on the backends.
fn files_on(fx: &Fixture) -> Vec<PathBuf> {
    fn walk(d: &Path, out: &mut Vec<PathBuf>) {
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

/// Entries with a trash name at the top of every canonical backend.
fn trash_on(fx: &Fixture) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for b in &fx.canonical {
        for e in std::fs::read_dir(b).unwrap().flatten() {
            if e.file_name().to_string_lossy().starts_with(".plfstmp.r") {
                out.push(e.path());
            }
        }
    }
    out
}

/// The file is opened (and held) by one process, unlinked by a second, and reopened by identity
/// by a third: same bytes, nlink 0, writable; it outlives the first holder's close and goes with
/// the last.
fn reopen_after_unlink(fx: &Fixture) {
    let path = fx.path("inherited");
    let data = pattern(7, 0, 300_000);
    put(&fx.plfs(), &path, &data);
    let opener = fx.plfs();
    let held = opener.open(&path, ro(), 0, 11).unwrap();
    let ident = held.ident().expect("an N-1 file has an identity");
    let st = held.stat().unwrap();
    assert_eq!((st.dev, st.ino), ident, "the identity is what fstat reports");
    assert_eq!(st.nlink, 1);

    fx.plfs().unlink(&path).unwrap();
    assert_errno(fx.plfs().stat(&path), Errno::NOENT, "stat after unlink");
    assert_eq!(trash_on(fx).len(), 1, "the container waits under a trash name");

    let heir = fx.plfs();
    let f = heir.reopen(&path, rw(), 12, ident).unwrap();
    assert_eq!(f.ident(), Some(ident));
    assert_bytes_eq(&read_all(&f).unwrap(), &data, "reopened after the unlink");
    let st = f.stat().unwrap();
    assert_eq!(st.nlink, 0, "an unlinked file has no name");
    assert_eq!((st.dev, st.ino), ident);
    assert_eq!(st.size, data.len() as u64);
    assert_eq!(f.write(b"tail", data.len() as u64).unwrap(), 4);

    // The first holder closes: the heir still has it open, so it stays.
    held.close().unwrap();
    assert_eq!(trash_on(fx).len(), 1, "kept while the heir has it open");
    let mut want = data.clone();
    want.extend_from_slice(b"tail");
    assert_bytes_eq(&read_all(&f).unwrap(), &want, "after the first holder closed");
    assert_eq!(f.stat().unwrap().size, want.len() as u64);

    f.close().unwrap();
    assert_eq!(files_on(fx), Vec::<PathBuf>::new(), "the last close deleted it");
    assert_eq!(trash_on(fx), Vec::<PathBuf>::new());
    assert_errno(heir.reopen(&path, ro(), 12, ident), Errno::NOENT, "reopen once deleted");
}

#[test]
fn reopen_after_unlink_one_backend() {
    reopen_after_unlink(&Fixture::new("reopen-unl1", 1, 0, GlobalParams::default()));
}

#[test]
fn reopen_after_unlink_three_backends() {
    reopen_after_unlink(&Fixture::new("reopen-unl3", 3, 0, GlobalParams::default()));
}

#[test]
fn reopen_after_unlink_shadow_backend() {
    reopen_after_unlink(&Fixture::new("reopen-unl-sh", 2, 1, GlobalParams::default()));
}

/// While the name is the same file, reopen is an open by name; the heir may also be the last
/// closer when the opener closes first.
#[test]
fn reopen_by_name_and_heir_closes_last() {
    let fx = Fixture::new("reopen-name", 1, 0, GlobalParams::default());
    let path = fx.path("d1/f");
    fx.plfs().mkdir(&fx.path("d1"), 0o755).unwrap();
    let data = pattern(9, 0, 70_000);
    put(&fx.plfs(), &path, &data);
    let opener = fx.plfs();
    let held = opener.open(&path, ro(), 0, 21).unwrap();
    let ident = held.ident().unwrap();
    let heir = fx.plfs();
    let f = heir.reopen(&path, ro(), 22, ident).unwrap();
    assert_eq!(f.stat().unwrap().nlink, 1, "not unlinked");
    assert_bytes_eq(&read_all(&f).unwrap(), &data, "reopened by name");
    fx.plfs().unlink(&path).unwrap();
    held.close().unwrap();
    assert_eq!(f.stat().unwrap().nlink, 0);
    assert_bytes_eq(&read_all(&f).unwrap(), &data, "after the unlink and the opener's close");
    f.close().unwrap();
    assert_eq!(files_on(&fx), Vec::<PathBuf>::new(), "the heir's close deleted it");
}

/// An identity that is not at the name nor in the trash opens nothing: not the file that took
/// the name, not a link to a container, not a non-container with a trash name.
#[test]
fn reopen_never_opens_another_file() {
    let fx = Fixture::new("reopen-neg", 1, 0, GlobalParams::default());
    let path = fx.path("f");
    let old = pattern(1, 0, 90_000);
    let new = pattern(2, 0, 50_000);
    put(&fx.plfs(), &path, &old);
    let opener = fx.plfs();
    let held = opener.open(&path, ro(), 0, 31).unwrap();
    let old_id = held.ident().unwrap();

    // Replaced by a rename while open: the name is another file now.
    let other = fx.path("other");
    put(&fx.plfs(), &other, &new);
    fx.plfs().rename(&other, &path).unwrap();
    let new_id = fx.plfs().open(&path, ro(), 0, 32).unwrap().ident().unwrap();
    assert_ne!(old_id, new_id);

    let heir = fx.plfs();
    let f = heir.reopen(&path, ro(), 33, old_id).unwrap();
    assert_bytes_eq(
        &read_all(&f).unwrap(),
        &old,
        "the replaced file, not the one at its name",
    );
    assert_eq!(f.stat().unwrap().nlink, 0);
    let g = heir.reopen(&path, ro(), 33, new_id).unwrap();
    assert_bytes_eq(&read_all(&g).unwrap(), &new, "the file at the name");
    assert_eq!(g.stat().unwrap().nlink, 1);
    g.close().unwrap();

    // Identities nobody has.
    assert_errno(
        heir.reopen(&path, ro(), 33, (old_id.0, old_id.1 ^ 0x5555)),
        Errno::NOENT,
        "unknown identity at an existing name",
    );
    // The identity decides, the name only says which directory to look in: another name in the
    // same directory finds the same file, a name in another directory nothing.
    let same = heir.reopen(&fx.path("never"), ro(), 33, old_id).unwrap();
    assert_bytes_eq(&read_all(&same).unwrap(), &old, "by identity, under another name");
    same.close().unwrap();
    fx.plfs().mkdir(&fx.path("d"), 0o755).unwrap();
    assert_errno(
        heir.reopen(&fx.path("d/f"), ro(), 33, old_id),
        Errno::NOENT,
        "a name in another directory",
    );

    held.close().unwrap();
    f.close().unwrap();
    assert!(trash_on(&fx).is_empty(), "the replaced file went with its last close");
    assert_errno(heir.reopen(&path, ro(), 33, old_id), Errno::NOENT, "deleted");
    assert_bytes_eq(&get(&fx.plfs(), &path), &new, "the name still is the new file");

    // Trash names that are not containers, or are links (never followed) to the live container.
    let b = &fx.canonical[0];
    std::fs::write(b.join(".plfstmp.rm.plainfile"), b"x").unwrap();
    std::fs::create_dir(b.join(".plfstmp.rm.emptydir")).unwrap();
    std::os::unix::fs::symlink(b.join("f"), b.join(".plfstmp.rm.link")).unwrap();
    std::os::unix::fs::symlink(b.join("f"), b.join(".plfstmp.rp.link")).unwrap();
    assert_errno(
        heir.reopen(&fx.path("gone"), ro(), 33, new_id),
        Errno::NOENT,
        "through a link with a trash name",
    );
    assert_errno(
        heir.reopen(&fx.path("gone"), ro(), 33, old_id),
        Errno::NOENT,
        "non-containers with trash names",
    );
}
