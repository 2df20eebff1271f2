//! The parts of the PLFS 2.5 API the core implements beyond plain file I/O: extended attributes
//! (docs/format.md §12: kept in the container, one framed file per key, with the container's
//! modes), `plfs_flush_writes` (buffered records become visible to other processes without a
//! close) and `plfs_invalidate_read_cache` (an open handle sees what others made visible since).
//! Other processes are played by other `Plfs` instances (each has its own table of open files
//! and caches, as a process has).

mod common;

use common::{assert_errno, read_all, ro, rw_create, Fixture, MOUNT};
use plfs_core::config::{GlobalParams, Workload};
use plfs_core::fsck::{self, Options};
use plfs_core::Plfs;
use rustix::io::Errno;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

fn fixture(tag: &str, workload: Workload) -> Fixture {
    let mut fx = Fixture::new(
        tag,
        1,
        0,
        GlobalParams {
            index_buffer_records: 1000,
            ..GlobalParams::default()
        },
    );
    fx.config.mounts[0].workload = workload;
    fx
}

#[test]
fn xattrs_are_kept_in_the_container_for_every_process() {
    let fx = fixture("xattr", Workload::SharedFile);
    let p = fx.plfs();
    let f = fx.path("f");
    let h = p.open(&f, rw_create(), 0o640, 1).unwrap();
    h.write(b"data", 0).unwrap();
    assert_errno(h.getxattr(b"user.k"), Errno::NOENT, "no such attribute yet");
    h.setxattr(b"user.k", b"value one").unwrap();
    h.setxattr(b"user.k", b"v2").unwrap();
    h.setxattr(b"a/b\0c", &[0, 1, 2, 255]).unwrap();
    h.setxattr(b"empty", b"").unwrap();
    assert_eq!(h.getxattr(b"user.k").unwrap(), b"v2", "replaced");
    h.close().unwrap();
    // Another process, a read-only handle.
    let q = fx.plfs();
    let r = q.open(&f, ro(), 0, 2).unwrap();
    assert_eq!(r.getxattr(b"user.k").unwrap(), b"v2");
    assert_eq!(r.getxattr(b"a/b\0c").unwrap(), [0, 1, 2, 255], "any key is a file name");
    assert_eq!(r.getxattr(b"empty").unwrap(), b"");
    assert_errno(r.getxattr(b"user.other"), Errno::NOENT, "missing key");
    // Bounds.
    assert_errno(r.setxattr(&[b'k'; 127], b"x"), Errno::INVAL, "a key of 127 bytes");
    assert_errno(r.setxattr(b"", b"x"), Errno::INVAL, "an empty key");
    assert_errno(
        r.setxattr(b"big", &vec![7u8; (64 << 10) + 1]),
        Errno::INVAL,
        "a value over 64 KiB",
    );
    r.setxattr(&[b'k'; 126], &vec![7u8; 64 << 10]).unwrap();
    assert_eq!(r.getxattr(&[b'k'; 126]).unwrap().len(), 64 << 10);
    // Stored as one framed file per key, with the logs' mode (a 0640 file: 0640, not 0644).
    let x = fx.container_dir("f").join("xattrs");
    let name = format!("x.{}", "user.k".bytes().map(|b| format!("{b:02x}")).collect::<String>());
    let meta = std::fs::metadata(x.join(&name)).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o640);
    assert_eq!(meta.len(), 16 + 2 + 4);
    // The attributes are no unknown files to fsck.
    let rep = fsck::fsck(&q, &f, &Options::default()).unwrap();
    assert_eq!(rep.problems(), 0, "{:?}", rep.findings);
    assert!(rep.findings.is_empty(), "{:?}", rep.findings);
    // Damage is EIO naming the attribute file, never a wrong value.
    let mut b = std::fs::read(x.join(&name)).unwrap();
    b[17] ^= 1;
    std::fs::write(x.join(&name), &b).unwrap();
    let e = r.getxattr(b"user.k").unwrap_err();
    assert_eq!(e.raw_errno(), Errno::IO.raw_os_error(), "{e}");
    assert!(
        e.to_string().contains(&name) && e.to_string().contains("checksum"),
        "{e}"
    );
    // A truncate to zero keeps the attributes (they are not data).
    q.truncate(&f, 0).unwrap();
    assert_eq!(q.open(&f, ro(), 0, 3).unwrap().getxattr(b"empty").unwrap(), b"");
}

#[test]
fn setxattr_needs_write_permission_and_only_n1_files_keep_attributes() {
    let fx = fixture("xattr-perm", Workload::SharedFile);
    let p = fx.plfs();
    let f = fx.path("ro");
    common::put(&p, &f, b"x");
    p.chmod(&f, 0o444).unwrap();
    let r = p.open(&f, ro(), 0, 1).unwrap();
    if rustix::process::geteuid().as_raw() != 0 {
        assert_errno(r.setxattr(b"k", b"v"), Errno::ACCESS, "a read-only file");
    }
    for (w, tag) in [(Workload::FilePerProc, "nn"), (Workload::SmallFile, "1n")] {
        let fx = fixture(&format!("xattr-{tag}"), w);
        let p = fx.plfs();
        let h = p.open(&fx.path("f"), rw_create(), 0o644, 1).unwrap();
        let e = h.setxattr(b"k", b"v").unwrap_err();
        assert_eq!(e.raw_errno(), Errno::NOTSUP.raw_os_error(), "{tag}: {e}");
        assert!(e.to_string().contains("N-1 files only"), "{e}");
        assert_errno(h.getxattr(b"k"), Errno::NOTSUP, tag);
    }
}

#[test]
fn flush_writes_makes_buffered_records_visible_and_invalidate_refreshes_readers() {
    let fx = fixture("flush", Workload::SharedFile);
    let (w, r) = (fx.plfs(), fx.plfs());
    std::fs::create_dir_all(fx.canonical[0].join("d")).unwrap();
    let f = fx.path("d/f");
    let h = w.open(&f, rw_create(), 0o644, 1).unwrap();
    let index_log = || {
        let ix = fx.logs("d/f", "index.").remove(0);
        std::fs::metadata(ix).unwrap().len()
    };
    h.write(b"first", 0).unwrap();
    // The record is buffered in the writer (1024 per append), but the write's frame is in the
    // data log: another process reads it already (format 2).
    let reader = r.open(&f, ro(), 0, 2).unwrap();
    assert_eq!(read_all(&reader).unwrap(), b"first", "read from the data log's frame");
    assert_eq!(index_log(), 64, "the record is still buffered");
    w.flush_writes(Path::new(MOUNT)).unwrap();
    assert_eq!(index_log(), 64 + 48, "flush_writes appends the record");
    let other = fx.plfs();
    assert_eq!(
        read_all(&other.open(&f, ro(), 0, 3).unwrap()).unwrap(),
        b"first",
        "another process sees it"
    );
    // The handle opened before has its index: it sees a later write after an invalidate.
    h.write(b"SECOND", 5).unwrap();
    assert_eq!(read_all(&reader).unwrap(), b"first", "cached index");
    // Only files under the path given are flushed.
    w.flush_writes(&fx.path("elsewhere")).unwrap();
    assert_eq!(index_log(), 64 + 48, "not flushed");
    r.invalidate_read_cache(&fx.path("d")).unwrap();
    assert_eq!(
        read_all(&reader).unwrap(),
        b"firstSECOND",
        "after invalidate_read_cache"
    );
    w.flush_writes(&f).unwrap();
    assert_eq!(index_log(), 64 + 2 * 48, "flushed");
    r.invalidate_read_cache(&f).unwrap();
    assert_eq!(read_all(&reader).unwrap(), b"firstSECOND");
    h.close().unwrap();

    // 1-N: a file's records reach its log at close, or at flush_writes.
    let fx = fixture("flush-1n", Workload::SmallFile);
    let (w, r) = (fx.plfs(), fx.plfs());
    let f = fx.path("small");
    let h = w.open(&f, rw_create(), 0o644, 1).unwrap();
    h.write(b"packed", 0).unwrap();
    assert_errno(r.stat(&f), Errno::NOENT, "not in the logs yet");
    w.flush_writes(Path::new(MOUNT)).unwrap();
    assert_eq!(read_all(&r.open(&f, ro(), 0, 2).unwrap()).unwrap(), b"packed");
    h.close().unwrap();
}

#[test]
fn file_format_and_storage_name_every_kind_of_file() {
    let fx = fixture("format", Workload::SharedFile);
    let p = fx.plfs();
    common::put(&p, &fx.path("f"), b"x");
    p.mkdir(&fx.path("d"), 0o755).unwrap();
    let s = |p: &Plfs, n: &str| p.file_format(&fx.path(n)).unwrap().map(|f| f.to_string());
    assert_eq!(s(&p, "f").as_deref(), Some("plfs v3 (N-1 container)"));
    assert_eq!(s(&p, "d"), None);
    assert_errno(p.file_format(&fx.path("none")), Errno::NOENT, "missing");
    assert!(matches!(
        p.storage(&fx.path("f")).unwrap(),
        plfs_core::Storage::Container(_)
    ));
    let fx = fixture("format-1n", Workload::SmallFile);
    let p = fx.plfs();
    common::put(&p, &fx.path("f"), b"x");
    assert_eq!(s(&p, "f").as_deref(), Some("packed file (1-N)"));
    assert_eq!(p.storage(&fx.path("f")).unwrap(), plfs_core::Storage::Packed);
    let fx = fixture("format-nn", Workload::FilePerProc);
    let p = fx.plfs();
    common::put(&p, &fx.path("f"), b"x");
    assert_eq!(s(&p, "f").as_deref(), Some("plain file (N-N)"));
}

/// An mtime set while the file is open for writing survives its close (issue 25, item 4): the
/// close raised it back to the time of the last write, so `cp -p`, `tar x` and `os.utime(fd)`
/// lost timestamps. A write after the utimens moves the mtime on again, as on a plain file.
#[test]
fn an_mtime_set_while_writing_survives_the_close() {
    let fx = fixture("mtime", Workload::SharedFile);
    let p = fx.plfs();
    let f = fx.path("f");
    let h = p.open(&f, rw_create(), 0o644, 1).unwrap();
    h.write(b"data", 0).unwrap();
    p.utimens(&f, plfs_core::TimeSpec::Omit, plfs_core::TimeSpec::At(1_577_923_200, 5))
        .unwrap();
    h.close().unwrap();
    assert_eq!(fx.plfs().stat(&f).unwrap().mtime_ns, 1_577_923_200_000_000_005);
    // A write after the utimens moves it on.
    let h = p.open(&f, rw_create(), 0o644, 1).unwrap();
    p.utimens(&f, plfs_core::TimeSpec::Omit, plfs_core::TimeSpec::At(1_577_923_200, 5))
        .unwrap();
    h.write(b"more", 4).unwrap();
    h.close().unwrap();
    assert!(fx.plfs().stat(&f).unwrap().mtime_ns > 1_700_000_000_000_000_000);
}

/// A framed data log keeps the pattern-compressed index (issue 23): 1000 strided writes of one
/// writer take a few pattern records, not 1000 write records of 48 bytes, and read back.
#[test]
fn strided_writes_to_a_framed_log_still_form_patterns() {
    let fx = fixture("patterns", Workload::SharedFile);
    let p = fx.plfs();
    let f = fx.path("f");
    let h = p.open(&f, common::wo_create(), 0o644, 1).unwrap();
    let rec = 4096u64;
    let mut want = vec![0u8; (2 * 1000 * rec) as usize];
    for i in 0..1000u64 {
        let off = 2 * i * rec;
        let d = common::pattern(i, off, rec as usize);
        h.write(&d, off).unwrap();
        want[off as usize..(off + rec) as usize].copy_from_slice(&d);
    }
    h.close().unwrap();
    want.truncate((2 * 999 * rec + rec) as usize);
    let logs = fx.logs("f", "index.");
    assert_eq!(logs.len(), 1);
    let ix = std::fs::metadata(&logs[0]).unwrap().len();
    // Header 64; 1000 writes in runs of at most 4096, with 1-byte timestamp deltas or so.
    assert!(ix < 64 + 1000 * 48 / 8, "index log of {ix} bytes: no patterns formed");
    let data = fx.logs("f", "data.");
    assert_eq!(std::fs::metadata(&data[0]).unwrap().len(), 64 + 1000 * (32 + rec));
    common::assert_bytes_eq(&common::read_fresh(&fx, &f).unwrap(), &want, "strided file");
}

/// A 1-N append that fails for good (here ENOSPC from the seam) is reported to the caller, its
/// records are dropped and cut off the log, and the directory works on in the same process: the
/// view is rebuilt from the logs, a later create, write and delete succeed, and a fresh process
/// sees exactly what this one sees. Before, the records stayed in the buffer of a long-lived
/// process (the FUSE daemon), and every later change of the directory, a delete included,
/// failed with ENOSPC again.
#[test]
fn a_failed_1n_append_is_dropped_and_the_directory_works_on() {
    let fx = Fixture::small("api25-1n-drop", 1, GlobalParams::default());
    let p = fx.plfs();
    p.mkdir(&fx.path("d"), 0o755).unwrap();
    let kept = p.open(&fx.path("d/kept"), rw_create(), 0o644, 1).unwrap();
    kept.write(b"kept bytes", 0).unwrap();
    kept.close().unwrap();
    let lost = p.open(&fx.path("d/lost"), rw_create(), 0o644, 1).unwrap();
    lost.write(&[7u8; 5000], 0).unwrap();
    plfs_core::failpoint::set(plfs_core::failpoint::Spec {
        name: "sys::pwrite_all".into(),
        filter: "api25-1n-drop".into(),
        action: plfs_core::failpoint::Action::Errno(Errno::NOSPC),
        after: 0,
        times: None,
    });
    let r = lost.close();
    plfs_core::failpoint::clear();
    assert_errno(r, Errno::NOSPC, "the close that flushes");
    // The same process goes on: its view is what the logs hold.
    assert_errno(
        p.stat(&fx.path("d/lost")),
        Errno::NOENT,
        "the file whose CREATE was dropped",
    );
    let again = p.open(&fx.path("d/again"), rw_create(), 0o644, 1).unwrap();
    again.write(b"again", 0).unwrap();
    again.close().unwrap();
    p.unlink(&fx.path("d/kept")).unwrap();
    let names = |q: &Plfs| -> Vec<String> {
        q.readdir(&fx.path("d"))
            .unwrap()
            .into_iter()
            .map(|e| e.name.to_string_lossy().into_owned())
            .collect()
    };
    assert_eq!(names(&p), ["again"]);
    let fresh = fx.plfs();
    assert_eq!(names(&fresh), ["again"]);
    assert_eq!(
        read_all(&fresh.open(&fx.path("d/again"), ro(), 0, 2).unwrap()).unwrap(),
        b"again"
    );
    let rep = fsck::fsck(&fresh, Path::new(MOUNT), &Options::default()).unwrap();
    assert_eq!(rep.problems(), 0, "{:?}", rep.findings);
}
