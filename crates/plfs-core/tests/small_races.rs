//! 1-N (small_file) names under concurrent processes (issue [4/7]): two processes that create
//! one name at once must get one file, `O_EXCL` must let exactly one of them win, and a file
//! renamed over or unlinked stops counting as live space. Each `Plfs` instance here has its own
//! views and its own writer log, as another process would; a process's records stay in its
//! buffer until a close, so a second instance that opens the name before the first closes does
//! not see the first one's CREATE record: the race, made deterministic.

mod common;

use common::{assert_errno, get, put, wo_create, Fixture};
use plfs_core::config::GlobalParams;
use plfs_core::OpenFlags;
use rustix::io::Errno;

fn excl() -> OpenFlags {
    OpenFlags {
        excl: true,
        ..wo_create()
    }
}

#[test]
fn two_processes_creating_one_name_at_once_write_one_file() {
    let fx = Fixture::small("small-create-race", 1, GlobalParams::default());
    let (a, b) = (fx.plfs(), fx.plfs());
    a.mkdir(&fx.path("d"), 0o755).unwrap();
    let path = fx.path("d/log");
    let fa = a.open(&path, wo_create(), 0o644, 1).unwrap();
    let fb = b.open(&path, wo_create(), 0o644, 2).unwrap();
    fa.write(b"AAAA", 0).unwrap();
    fb.write(b"BBBB", 4).unwrap();
    fa.close().unwrap();
    fb.close().unwrap();
    // Before the replay merged the two CREATE records, the later one took the name and the
    // earlier file's bytes were gone: "\0\0\0\0BBBB".
    let c = fx.plfs();
    assert_eq!(get(&c, &path), b"AAAABBBB");
    assert_eq!(get(&a, &path), b"AAAABBBB");
    assert_eq!(get(&b, &path), b"AAAABBBB");
    let names: Vec<_> = c.readdir(&fx.path("d")).unwrap().into_iter().map(|e| e.name).collect();
    assert_eq!(names.iter().filter(|n| n.as_os_str() == "log").count(), 1, "{names:?}");
    assert_eq!(a.stat(&path).unwrap().ino, b.stat(&path).unwrap().ino);
    // Opened again by both: writes through either land in the one file.
    let write = OpenFlags {
        write: true,
        ..Default::default()
    };
    let fa = a.open(&path, write, 0, 1).unwrap();
    let fb = b.open(&path, write, 0, 2).unwrap();
    fb.write(b"b", 8).unwrap();
    fa.write(b"a", 9).unwrap();
    fb.close().unwrap();
    fa.close().unwrap();
    assert_eq!(get(&fx.plfs(), &path), b"AAAABBBBba");
}

#[test]
fn o_excl_lets_one_process_of_two_create_a_name() {
    let fx = Fixture::small("small-excl-race", 1, GlobalParams::default());
    let (a, b) = (fx.plfs(), fx.plfs());
    a.mkdir(&fx.path("d"), 0o755).unwrap();
    let path = fx.path("d/lock");
    // `a` has not closed: its CREATE reached its log all the same (an O_EXCL create decides
    // and writes under the directory's lock), so `b` finds the name taken.
    let fa = a.open(&path, excl(), 0o644, 1).unwrap();
    assert_errno(b.open(&path, excl(), 0o644, 2), Errno::EXIST, "second O_EXCL create");
    fa.write(b"owner a", 0).unwrap();
    fa.close().unwrap();
    assert_errno(
        fx.plfs().open(&path, excl(), 0o644, 3),
        Errno::EXIST,
        "O_EXCL after close",
    );
    assert_eq!(get(&b, &path), b"owner a");
}

#[test]
fn a_file_renamed_over_or_unlinked_is_not_live_space() {
    let fx = Fixture::small("small-du-dead", 1, GlobalParams::default());
    let p = fx.plfs();
    p.mkdir(&fx.path("d"), 0o755).unwrap();
    put(&p, &fx.path("d/old"), &[1u8; 300]);
    put(&p, &fx.path("d/new"), &[2u8; 200]);
    put(&p, &fx.path("d/gone"), &[3u8; 100]);
    let u = p.small_usage(&fx.path("d")).unwrap().unwrap();
    assert_eq!((u.data_bytes, u.live_bytes), (600, 600));
    p.rename(&fx.path("d/new"), &fx.path("d/old")).unwrap();
    p.unlink(&fx.path("d/gone")).unwrap();
    // Counted 600 before: the replaced file and the unlinked one kept their ids in the view.
    for q in [&p, &fx.plfs()] {
        let u = q.small_usage(&fx.path("d")).unwrap().unwrap();
        assert_eq!((u.data_bytes, u.live_bytes), (600, 200));
    }
    assert_eq!(get(&p, &fx.path("d/old")), vec![2u8; 200]);
}

/// A stat, an open and an unlink of a file in a directory this process writes make no `lstat`
/// of the parent's marker: the layout vouches for the parent, as it does for a create (on a
/// network file system each `lstat` is a round trip: a stat of such a file on the GlusterFS
/// volume went from two to one). A process that does not write there still looks, and a
/// directory another process removed meanwhile is not found by either.
#[test]
fn look_ups_where_this_process_writes_skip_the_parent_check() {
    use plfs_core::failpoint;
    let fx = Fixture::small("small-lookup-vouch", 1, GlobalParams::default());
    let (a, b) = (fx.plfs(), fx.plfs());
    a.mkdir(&fx.path("lv"), 0o755).unwrap();
    put(&a, &fx.path("lv/x"), b"xx");
    put(&a, &fx.path("lv/y"), b"y");
    // Counted, never fired: the marker `check_through` looks for.
    let filter = "lv/.plfscontainer";
    failpoint::set(failpoint::Spec {
        name: "sys::stat".into(),
        filter: filter.into(),
        action: failpoint::Action::Errno(Errno::IO),
        after: u64::MAX,
        times: None,
    });
    let checks = || failpoint::hits_for("sys::stat", filter);
    let before = checks();
    assert_eq!(a.stat(&fx.path("lv/x")).unwrap().size, 2);
    assert_eq!(get(&a, &fx.path("lv/x")), b"xx");
    a.unlink(&fx.path("lv/y")).unwrap();
    assert_eq!(
        checks(),
        before,
        "the writing process looked for a marker above its own files"
    );
    assert_eq!(b.stat(&fx.path("lv/x")).unwrap().size, 2);
    assert!(b.stat(&fx.path("lv/y")).unwrap_err().is_not_found());
    assert!(
        checks() > before,
        "a process that does not write there skipped the check"
    );
    b.unlink(&fx.path("lv/x")).unwrap();
    b.rmdir(&fx.path("lv")).unwrap();
    let e = a.stat(&fx.path("lv/x")).unwrap_err();
    assert!(e.is_not_found(), "a file of a removed directory: {e}");
    assert_errno(
        a.unlink(&fx.path("lv/x")),
        Errno::NOENT,
        "unlink in a removed directory",
    );
}
