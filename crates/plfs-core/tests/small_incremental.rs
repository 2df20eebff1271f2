//! A 1-N view brought up to date from what other writers appended (`layout/small/fresh.rs`)
//! answers as a view replayed from every log does: records that arrive late (another process's,
//! buffered until its close, older than what this view applied since) are applied where they
//! commute with what came after them, and otherwise the directory is replayed.

mod common;

use common::{put, wo_create, TempDir};
use plfs_core::{Config, Plfs};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const MOUNT: &str = "/plfs-test/small-inc";

fn small_rc(t: &TempDir) -> PathBuf {
    common::small_rc(t, MOUNT).0
}

/// An instance of its own (its own views and writer logs, as another process would have).
fn view(rc: &Path) -> Plfs {
    Plfs::new(Config::from_file(rc).unwrap()).unwrap()
}

/// Every name of `dir` as `p` sees it, with its size and bytes.
fn snapshot(p: &Plfs, dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for e in p.readdir(dir).unwrap() {
        if e.name == "." || e.name == ".." {
            continue;
        }
        let path = dir.join(&e.name);
        let st = p.stat(&path).unwrap();
        let f = p.open(&path, common::ro(), 0, 1).unwrap();
        let mut b = vec![0u8; st.size as usize + 1];
        let n = f.read(&mut b, 0).unwrap();
        f.close().unwrap();
        b.truncate(n);
        let name = e.name.to_string_lossy().into_owned();
        assert_eq!(n as u64, st.size, "{name}: read {n} bytes of {}", st.size);
        out.insert(name, b);
    }
    out
}

/// A create that B made first but closed last (its record older than A's create and unlink of
/// the same name): applied late as it came, it would bring the name back; the replay merges the
/// two creates into one file, which A's unlink removed. A, which saw its own records first, must
/// answer as a fresh view does.
#[test]
fn a_late_create_of_a_name_unlinked_since_is_not_brought_back() {
    let t = TempDir::new("small-inc-late");
    let rc = small_rc(&t);
    let (a, b) = (view(&rc), view(&rc));
    let dir = Path::new(MOUNT).join("d");
    a.mkdir(&dir, 0o755).unwrap();
    put(&a, &dir.join("seed"), b"seed");
    let n = dir.join("n");
    // B's create record is older than everything A does next; it reaches B's log at its close.
    let late = b.open(&n, wo_create(), 0o644, 2).unwrap();
    late.write(b"from b", 0).unwrap();
    put(&a, &n, b"from a");
    a.unlink(&n).unwrap();
    put(&a, &dir.join("other"), b"other");
    late.close().unwrap();
    let fresh = view(&rc);
    let want = snapshot(&fresh, &dir);
    assert_eq!(snapshot(&a, &dir), want, "the view that applied its own records first");
    assert_eq!(snapshot(&b, &dir), want, "the late writer's view");
}

/// Many files created by two views at once, interleaved (each sees the other's records late and
/// out of order, on names of its own): both views and a fresh one agree on every name and byte,
/// and so they do after each unlinks and renames the other's files.
#[test]
fn interleaved_creates_renames_and_unlinks_agree_with_a_replay() {
    let t = TempDir::new("small-inc-mix");
    let rc = small_rc(&t);
    let (a, b) = (view(&rc), view(&rc));
    let dir = Path::new(MOUNT).join("m");
    a.mkdir(&dir, 0o755).unwrap();
    for i in 0..60u32 {
        // Opened by both, closed in the other order every other time.
        let fa = a.open(&dir.join(format!("a{i}")), wo_create(), 0o644, 1).unwrap();
        let fb = b.open(&dir.join(format!("b{i}")), wo_create(), 0o644, 2).unwrap();
        fa.write(format!("a{i}").repeat(i as usize + 1).as_bytes(), 0).unwrap();
        fb.write(format!("b{i}").repeat(i as usize + 1).as_bytes(), 0).unwrap();
        if i % 2 == 0 {
            fa.close().unwrap();
            fb.close().unwrap();
        } else {
            fb.close().unwrap();
            fa.close().unwrap();
        }
        // Each looks, so that it applies the other's records as they come.
        a.stat(&dir.join(format!("b{i}"))).unwrap();
        b.stat(&dir.join(format!("a{i}"))).unwrap();
    }
    let want = snapshot(&view(&rc), &dir);
    assert_eq!(want.len(), 120);
    assert_eq!(snapshot(&a, &dir), want);
    assert_eq!(snapshot(&b, &dir), want);
    for i in (0..60u32).step_by(3) {
        a.unlink(&dir.join(format!("b{i}"))).unwrap();
        b.rename(&dir.join(format!("a{i}")), &dir.join(format!("b{}", i + 1)))
            .unwrap();
    }
    let want = snapshot(&view(&rc), &dir);
    assert_eq!(snapshot(&a, &dir), want);
    assert_eq!(snapshot(&b, &dir), want);
    assert_eq!(want.get("b1").map(Vec::as_slice), Some(b"a0".as_slice()));
}
