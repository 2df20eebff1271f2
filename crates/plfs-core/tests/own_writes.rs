//! A process that writes a file and asks for its size or reads it while it writes (a database at
//! every transaction, HDF5 at every `fstat`) lists only `meta/` while no other process writes it:
//! its own writes are in its merged index already (issue 26, sqlite). The moment another
//! process opens it for writing, writes, closes, or truncates it, the next refresh reads
//! everything again. Each `fx.plfs()` is a separate instance with its own merged index, as a
//! separate process would have.

mod common;

use common::{call_counter, rw_create, Fixture};

#[test]
fn a_lone_writer_lists_only_meta_and_sees_every_other_writer_at_once() {
    let fx = Fixture::simple("own-writes");
    let path = fx.path("db");
    let listed = call_counter(&fx, "sys::readdir");
    let (p1, p2) = (fx.plfs(), fx.plfs());
    let f1 = p1.open(&path, rw_create(), 0o644, 1).unwrap();
    f1.write(b"a", 0).unwrap();
    assert_eq!(f1.size().unwrap(), 1);
    // The first write the loaded index is told of makes the next refresh read everything.
    f1.write(b"a", 1).unwrap();
    assert_eq!(f1.size().unwrap(), 2);
    // Only this process writes: each further size or read lists `meta/` and nothing else.
    for k in 2..20u64 {
        f1.write(b"a", k).unwrap();
        let before = listed();
        assert_eq!(f1.size().unwrap(), k + 1);
        let mut b = [0u8; 1];
        assert_eq!(f1.read(&mut b, k).unwrap(), 1);
        // One listing at most: none once the directory's stamp vouches for the last one
        // (`a_quiet_file_whose_directory_keeps_its_stamp_is_not_listed`).
        assert!(
            listed() - before <= 1,
            "listings for one size of a file only this process writes"
        );
    }
    // Another process opens it for writing and writes: seen at the next size, and every
    // refresh reads everything while it has the file open.
    let f2 = p2.open(&path, rw_create(), 0o644, 2).unwrap();
    f2.write(b"bb", 20).unwrap();
    assert_eq!(f1.size().unwrap(), 22);
    f2.write(b"cc", 22).unwrap();
    assert_eq!(f1.size().unwrap(), 24);
    let mut b = [0u8; 24];
    assert_eq!(f1.read(&mut b, 0).unwrap(), 24);
    assert_eq!(&b[..], b"aaaaaaaaaaaaaaaaaaaabbcc");
    f2.close().unwrap();
    assert_eq!(f1.size().unwrap(), 24);
    // Opened, written and closed between two sizes: its close dropping says so.
    let f2 = p2.open(&path, rw_create(), 0o644, 3).unwrap();
    f2.write(b"dd", 24).unwrap();
    f2.close().unwrap();
    assert_eq!(f1.size().unwrap(), 26);
    // Truncated by another process.
    p2.truncate(&path, 5).unwrap();
    assert_eq!(f1.size().unwrap(), 5);
    f1.write(b"e", 5).unwrap();
    assert_eq!(f1.size().unwrap(), 6);
    let mut b = [0u8; 6];
    assert_eq!(f1.read(&mut b, 0).unwrap(), 6);
    assert_eq!(&b[..], b"aaaaae");
    f1.close().unwrap();
    let f = p2.open(&path, rw_create(), 0o644, 4).unwrap();
    let mut b = [0u8; 8];
    assert_eq!(f.read(&mut b, 0).unwrap(), 6);
    assert_eq!(&b[..6], b"aaaaae");
    f.close().unwrap();
}

/// A writer that wrote before this process loaded the file's index, then asks for its size again
/// and again without writing (a program that writes a file, then `fstat`s it): its writes are
/// all in its logs by then, so it is this process's own too, and each size lists only `meta/`.
/// It listed every directory and opened the writer's logs at every size, since only a write
/// made after the load made the writer known.
#[test]
fn sizes_after_writes_made_before_the_load_list_only_meta() {
    let fx = Fixture::simple("own-before-load");
    let path = fx.path("f");
    let listed = call_counter(&fx, "sys::readdir");
    let (p1, p2) = (fx.plfs(), fx.plfs());
    let f1 = p1.open(&path, rw_create(), 0o644, 1).unwrap();
    for k in 0..10u64 {
        f1.write(b"w", k).unwrap();
    }
    assert_eq!(f1.size().unwrap(), 10); // loads the index
    assert_eq!(f1.size().unwrap(), 10); // reads everything once more, knowing the writer
    for _ in 0..5 {
        let before = listed();
        assert_eq!(f1.size().unwrap(), 10);
        assert!(
            listed() - before <= 1,
            "listings for one size of a file only this process wrote"
        );
    }
    // Another process's write is still seen at once.
    let f2 = p2.open(&path, rw_create(), 0o644, 2).unwrap();
    f2.write(b"xy", 10).unwrap();
    assert_eq!(f1.size().unwrap(), 12);
    f2.close().unwrap();
    f1.close().unwrap();
}

#[test]
fn the_index_and_the_writers_of_a_process_share_one_handle_on_the_container() {
    // The container directory, reopened on a description of its own (never a duplicate of the
    // locked descriptor): once per container and process, not once for the index, once for each
    // writer's logs and once again at each refresh that reads every log.
    let fx = Fixture::simple("own-handle");
    let path = fx.path("db");
    let reopened = call_counter(&fx, "sys::lookup");
    let p = fx.plfs();
    let f = p.open(&path, rw_create(), 0o644, 1).unwrap();
    let before = reopened();
    assert_eq!(f.size().unwrap(), 0); // the index, loaded
    f.write(b"abc", 0).unwrap(); // a writer's logs, made
    assert_eq!(f.size().unwrap(), 3); // a refresh that reads every log again
    let g = p.open(&path, rw_create(), 0o644, 2).unwrap();
    g.write(b"de", 3).unwrap(); // a second writer of the process
    assert_eq!(f.size().unwrap(), 5);
    let mut b = [0u8; 5];
    assert_eq!(f.read(&mut b, 0).unwrap(), 5);
    assert_eq!(&b, b"abcde");
    assert_eq!(reopened() - before, 1, "the container was reopened more than once");
    g.close().unwrap();
    f.close().unwrap();
}

/// On a local file system a refresh of a file that only this process writes stats the container
/// directory and lists it only if its stamp (mtime, ctime, inode) moved, or if the last listing
/// was taken within a tick of the mtime (design.md, "Noticing a new log"). Elsewhere (a FUSE or
/// network backend, whose stat may lag behind another client) it lists every time, as before.
#[test]
fn a_quiet_file_whose_directory_keeps_its_stamp_is_not_listed() {
    let fx = Fixture::simple("own-stamp");
    let path = fx.path("db");
    let local =
        plfs_core::testing::timestamp_window_ns(&fx.canonical[0]).unwrap() == plfs_core::testing::LOCAL_WINDOW_NS;
    let listed = call_counter(&fx, "sys::readdir");
    let (p1, p2) = (fx.plfs(), fx.plfs());
    let f1 = p1.open(&path, rw_create(), 0o644, 1).unwrap();
    f1.write(b"0123", 0).unwrap();
    assert_eq!(f1.size().unwrap(), 4);
    assert_eq!(f1.size().unwrap(), 4);
    // Past the tick of the directory's last change, one more listing leaves a stamp that
    // vouches for it.
    let settle = || std::thread::sleep(std::time::Duration::from_millis(30));
    settle();
    assert_eq!(f1.size().unwrap(), 4);
    let before = listed();
    for k in 4..20u64 {
        f1.write(b"x", k).unwrap();
        assert_eq!(f1.size().unwrap(), k + 1);
        let mut b = [0u8; 1];
        assert_eq!(f1.read(&mut b, k).unwrap(), 1);
    }
    let want = if local { 0 } else { 16 };
    assert_eq!(
        listed() - before,
        want,
        "listings of a quiet file (local file system: {local})"
    );
    // Another process opens it for writing and writes: its open dropping moves the stamp.
    let f2 = p2.open(&path, rw_create(), 0o644, 2).unwrap();
    f2.write(b"yy", 20).unwrap();
    assert_eq!(f1.size().unwrap(), 22);
    f2.close().unwrap();
    assert_eq!(f1.size().unwrap(), 22);
    settle();
    assert_eq!(f1.size().unwrap(), 22);
    // A change that leaves the mtime as it was (made within its tick, or set back) still moves
    // the ctime, which no one can set back.
    let dir = fx.container_dir("db");
    let mtime = std::fs::metadata(&dir).unwrap().modified().unwrap();
    let f3 = p2.open(&path, rw_create(), 0o644, 3).unwrap();
    f3.write(b"zz", 22).unwrap();
    f3.close().unwrap();
    std::fs::File::open(&dir).unwrap().set_modified(mtime).unwrap();
    assert_eq!(std::fs::metadata(&dir).unwrap().modified().unwrap(), mtime);
    assert_eq!(f1.size().unwrap(), 24);
    let mut b = [0u8; 24];
    assert_eq!(f1.read(&mut b, 0).unwrap(), 24);
    assert_eq!(&b[..], b"0123xxxxxxxxxxxxxxxxyyzz");
    f1.close().unwrap();
}

#[test]
fn a_process_asks_the_kind_of_its_backend_once() {
    // Whether reads bypass the page cache (MooseFS) and whether a directory's stamp can be
    // trusted (a local file system) both follow from the backend's statfs type, asked once per
    // backend and process: on a FUSE backend each fstatfs is a request to its servers (3 brick
    // operations on the GlusterFS volume, one more per file read before 2026-11-28).
    let fx = Fixture::simple("statfs-once");
    let writer = fx.plfs();
    for name in ["a", "b"] {
        let f = writer.open(&fx.path(name), rw_create(), 0o644, 1).unwrap();
        f.write(name.as_bytes(), 0).unwrap();
        f.close().unwrap();
    }
    let asked = call_counter(&fx, "sys::statfs");
    let p = fx.plfs();
    for name in ["a", "b"] {
        let f = p.open(&fx.path(name), common::ro(), 0, 2).unwrap();
        let mut b = [0u8; 1];
        assert_eq!(f.read(&mut b, 0).unwrap(), 1);
        assert_eq!(&b, name.as_bytes());
        assert_eq!(f.size().unwrap(), 1);
        assert_eq!(f.size().unwrap(), 1);
        f.close().unwrap();
    }
    assert_eq!(asked(), 1, "statfs of the backend per process");
}
