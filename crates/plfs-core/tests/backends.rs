//! Backend portability: creates and renames stay correct on backends that lack `renameat2`
//! flags, with real concurrent processes. The fallbacks are forced with `$PLFS_CAPS_DISABLE` so
//! they run on any file system; CI also runs this binary with its backends on a GlusterFS volume
//! (`PLFS_TEST_ROOT`), which lacks the flags for real.

mod common;

use common::{arg, arg_u64, assert_child_ok, child_command, child_lines, child_role, Fixture, CHILD_TAG};
use plfs_core::config::GlobalParams;
use plfs_core::{fsck, Config, OpenFlags, Plfs};
use std::path::{Path, PathBuf};

const ENTRY: &str = "child_entry";

fn plfs_from_rc() -> Plfs {
    Plfs::new(Config::from_file(Path::new(&arg("RC"))).unwrap()).unwrap()
}

fn excl() -> OpenFlags {
    OpenFlags {
        write: true,
        create: true,
        excl: true,
        ..Default::default()
    }
}

fn version(k: u64) -> Vec<u8> {
    common::pattern(k, 0, 3000 + (k as usize % 7) * 1000)
}

#[test]
fn child_entry() {
    let Some(role) = child_role() else { return };
    let p = plfs_from_rc();
    let dir = PathBuf::from(arg("DIR"));
    match role.as_str() {
        // Tries to create every name exclusively; reports the ones it won.
        "creator" => {
            let id = arg_u64("ID");
            for i in 0..arg_u64("N") {
                let path = dir.join(format!("f{i}"));
                match p.open(&path, excl(), 0o644, id as u32) {
                    Ok(f) => {
                        f.write(format!("won by {id}").as_bytes(), 0).unwrap();
                        f.close().unwrap();
                        println!("{CHILD_TAG} won {i}");
                    }
                    Err(e) => assert_eq!(e.raw_errno(), 17, "EEXIST expected: {}: {e}", path.display()),
                }
            }
        }
        // Writes a file of its own for every name and publishes it there without replacing
        // (as `plfs cp` does); reports the names it won, and removes the files that lost.
        "publisher" => {
            let id = arg_u64("ID");
            for i in 0..arg_u64("N") {
                let tmp = dir.join(format!("pub.{id}.{i}"));
                let f = p.open(&tmp, excl(), 0o644, id as u32).unwrap();
                f.write(format!("won by {id}").as_bytes(), 0).unwrap();
                f.close().unwrap();
                match p.rename_noreplace(&tmp, &dir.join(format!("f{i}"))) {
                    Ok(()) => println!("{CHILD_TAG} won {i}"),
                    Err(e) => {
                        assert_eq!(e.raw_errno(), 17, "EEXIST expected: {e}");
                        assert!(p.stat(&tmp).is_ok(), "a refused rename leaves its source");
                        p.unlink(&tmp).unwrap();
                    }
                }
            }
        }
        // Writes version k to a fresh name and renames it over the target, k = 1..=N.
        "renamer" => {
            let target = dir.join("target");
            for k in 1..=arg_u64("N") {
                let tmp = dir.join(format!("new.{k}"));
                let f = p.open(&tmp, excl(), 0o644, 1).unwrap();
                f.write(&version(k), 0).unwrap();
                f.close().unwrap();
                p.rename(&tmp, &target).unwrap();
            }
            println!("{CHILD_TAG} done 1");
        }
        // Reads the target until told to stop: every read must be one whole version.
        "reader" => {
            let target = dir.join("target");
            let stop = dir.join("stop");
            let (mut reads, mut missing) = (0u64, 0u64);
            loop {
                let done = p.stat(&stop).is_ok();
                match p.open(&target, common::ro(), 0, 2) {
                    Ok(f) => {
                        let got = common::read_all(&f).unwrap();
                        f.close().unwrap();
                        let whole = (0..=arg_u64("N")).any(|k| version(k) == got);
                        let near = (0..=arg_u64("N")).find(|k| version(*k).len() == got.len());
                        assert!(
                            whole,
                            "read {} bytes that are no whole version (same length as version {near:?}; first byte {:?})",
                            got.len(),
                            got.first()
                        );
                        reads += 1;
                    }
                    Err(e) if e.is_not_found() => missing += 1,
                    Err(e) => panic!("open target: {e}"),
                }
                if done {
                    break;
                }
            }
            println!("{CHILD_TAG} reads {reads}");
            println!("{CHILD_TAG} missing {missing}");
        }
        // Stats and reads `target` (version K) under the failpoints of `PLFS_FAILPOINTS`, which
        // stand for a backend's passing faults; reports how many times they fired.
        "faulty_reader" => {
            let target = dir.join("target");
            let want = version(arg_u64("K"));
            let st = p.stat(&target).unwrap();
            assert_eq!(st.kind, plfs_core::FileKind::File, "{} is a file", target.display());
            assert_eq!(st.size, want.len() as u64, "stat of {}", target.display());
            let f = p.open(&target, common::ro(), 0, 2).unwrap();
            let got = common::read_all(&f).unwrap();
            f.close().unwrap();
            assert!(got == want, "read {} bytes of {}", got.len(), want.len());
            println!("{CHILD_TAG} injected {}", plfs_core::failpoint::injected());
        }
        // Stats `NAME` and reports how many times its container was listed (the
        // `sys::readdir` failpoint armed to count, never to fire).
        "stat_lister" => {
            let name = arg("NAME");
            p.stat(&dir.join(&name)).unwrap();
            println!(
                "{CHILD_TAG} listings {}",
                plfs_core::failpoint::hits_for("sys::readdir", &name)
            );
        }
        // Opens NAME, says so with the file `opened`, waits for the file `go`, then refreshes
        // its handle and reads the file through it.
        "long_reader" => {
            let f = p.open(&dir.join(arg("NAME")), common::ro(), 0, 2).unwrap();
            p.open(&dir.join("opened"), excl(), 0o644, 2).unwrap().close().unwrap();
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            while p.stat(&dir.join("go")).is_err() {
                assert!(std::time::Instant::now() < deadline, "no go");
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            f.refresh().unwrap();
            println!("{CHILD_TAG} read {}", common::read_all(&f).unwrap().len());
            f.close().unwrap();
        }
        // Renames `src` over `target` (a failpoint kills it mid-way).
        "killed_renamer" => {
            p.rename(&dir.join("src"), &dir.join("target")).unwrap();
            panic!("the failpoint should have killed this process");
        }
        other => panic!("unknown role {other}"),
    }
}

fn child(fx: &Fixture, role: &str, disable: &str, args: &[(&str, String)]) -> std::process::Command {
    let mut all = vec![
        ("RC", fx.rc.display().to_string()),
        ("DIR", fx.path("d").display().to_string()),
    ];
    all.extend(args.iter().cloned());
    let mut c = child_command(ENTRY, role, &all);
    c.env("PLFS_CAPS_DISABLE", disable);
    c
}

fn fixture(tag: &str) -> Fixture {
    let fx = Fixture::new(tag, 2, 0, GlobalParams::default());
    fx.plfs().mkdir(&fx.path("d"), 0o755).unwrap();
    fx
}

/// Temporary names left in the backend directories of `d` (none may stay after a clean run).
fn debris(fx: &Fixture) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for b in &fx.canonical {
        for e in std::fs::read_dir(b.join("d")).unwrap() {
            let e = e.unwrap();
            if e.file_name().to_string_lossy().starts_with(".plfstmp.") {
                out.push(e.path());
            }
        }
    }
    out
}

fn creators_agree(disable: &str) {
    let fx = fixture(&format!("be-create-{}", disable.replace(',', "-")));
    let n = 60u64;
    let kids: Vec<_> = (0..4)
        .map(|id| {
            child(&fx, "creator", disable, &[("ID", id.to_string()), ("N", n.to_string())])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut won = vec![0u32; n as usize];
    for k in kids {
        let out = k.wait_with_output().unwrap();
        assert_child_ok(&out, "creator");
        for i in child_lines(&out, "won") {
            won[i.parse::<usize>().unwrap()] += 1;
        }
    }
    assert!(
        won.iter().all(|&w| w == 1),
        "every name must be won exactly once: {won:?}"
    );
    let p = fx.plfs();
    for i in 0..n {
        let got = common::get(&p, &fx.path(&format!("d/f{i}")));
        assert!(got.starts_with(b"won by "), "f{i}: {got:?}");
    }
    // Exactly one container per name, and nothing half-made left behind.
    let names = p.readdir(&fx.path("d")).unwrap();
    assert_eq!(names.len(), n as usize);
    assert_eq!(debris(&fx), Vec::<PathBuf>::new());
}

#[test]
fn concurrent_creators_agree_on_one_container() {
    creators_agree("");
}

#[test]
fn concurrent_creators_agree_without_renameat2_flags() {
    creators_agree("noreplace,exchange,fsync_dir");
}

/// Four processes publish a file of their own under each of N names with a no-replace rename:
/// every name is won exactly once and holds its winner's bytes, and nothing else is left.
fn publishers_agree(disable: &str) {
    let fx = fixture(&format!("be-publish-{}", disable.replace(',', "-")));
    let n = 40u64;
    let kids: Vec<_> = (0..4)
        .map(|id| {
            child(
                &fx,
                "publisher",
                disable,
                &[("ID", id.to_string()), ("N", n.to_string())],
            )
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
        })
        .collect();
    let mut winner = vec![Vec::new(); n as usize];
    for (id, k) in kids.into_iter().enumerate() {
        let out = k.wait_with_output().unwrap();
        assert_child_ok(&out, "publisher");
        for i in child_lines(&out, "won") {
            winner[i.parse::<usize>().unwrap()].push(id);
        }
    }
    let p = fx.plfs();
    for (i, w) in winner.iter().enumerate() {
        assert_eq!(w.len(), 1, "f{i} must be won exactly once: {winner:?}");
        let got = common::get(&p, &fx.path(&format!("d/f{i}")));
        assert_eq!(got, format!("won by {}", w[0]).into_bytes(), "f{i}");
    }
    let names = p.readdir(&fx.path("d")).unwrap();
    assert_eq!(names.len(), n as usize, "only the published names stay: {names:?}");
    assert_eq!(debris(&fx), Vec::<PathBuf>::new());
}

#[test]
fn concurrent_no_replace_renames_publish_each_name_once() {
    publishers_agree("");
}

#[test]
fn concurrent_no_replace_renames_publish_each_name_once_without_renameat2_flags() {
    publishers_agree("noreplace,exchange");
}

/// One process renames N versions over `target` while another reads it: every read is a whole
/// version; returns how often the reader found no file at the name.
fn rename_over(disable: &str, n: u64) -> u64 {
    let fx = fixture(&format!("be-rename-{}", disable.replace(',', "-")));
    let p = fx.plfs();
    let f = p.open(&fx.path("d/target"), excl(), 0o644, 1).unwrap();
    f.write(&version(0), 0).unwrap();
    f.close().unwrap();
    let reader = child(&fx, "reader", disable, &[("N", n.to_string())])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let out = child(&fx, "renamer", disable, &[("N", n.to_string())])
        .output()
        .unwrap();
    assert_child_ok(&out, "renamer");
    p.create(&fx.path("d/stop"), 0o644, true).unwrap();
    let rout = reader.wait_with_output().unwrap();
    assert_child_ok(&rout, "reader");
    let reads: u64 = child_lines(&rout, "reads")[0].parse().unwrap();
    let missing: u64 = child_lines(&rout, "missing")[0].parse().unwrap();
    eprintln!("{disable:?}: {reads} reads, {missing} found no file at the name");
    assert!(reads > 0);
    assert_eq!(common::get(&fx.plfs(), &fx.path("d/target")), version(n));
    assert_eq!(
        debris(&fx),
        Vec::<PathBuf>::new(),
        "renamed-over containers must be removed"
    );
    missing
}

#[test]
fn rename_over_a_file_never_leaves_the_name_missing() {
    // Where the backend has RENAME_EXCHANGE (ext4, xfs...), the name is never missing. Where it
    // has not (GlusterFS, MooseFS, NFS), the fallback of the next test is what runs.
    let fx = fixture("be-probe");
    let exchange = plfs_core::probe_backend(&fx.canonical[0])
        .unwrap()
        .iter()
        .any(|i| i.feature == "renameat2 RENAME_EXCHANGE" && i.supported);
    let missing = rename_over("", 200);
    if exchange {
        assert_eq!(missing, 0, "RENAME_EXCHANGE keeps the name present");
    } else {
        eprintln!("backend without RENAME_EXCHANGE: the name was missing {missing} times");
    }
}

#[test]
fn rename_over_a_file_without_exchange_is_whole() {
    // Without RENAME_EXCHANGE a reader may find no file between the two renames (docs/design.md);
    // what it does read is always one whole version, and nothing is left behind.
    rename_over("noreplace,exchange", 200);
}

/// A fixture whose `d/target` holds version `k`, written by one writer.
fn with_target(tag: &str, k: u64) -> Fixture {
    let fx = fixture(tag);
    let f = fx.plfs().open(&fx.path("d/target"), excl(), 0o644, 1).unwrap();
    f.write(&version(k), 0).unwrap();
    f.close().unwrap();
    fx
}

/// Stats and reads `target` (version `k`) in a child on a backend taken for a distributed one
/// (`local_clock` disabled), under failpoints `spec`; how many times they fired.
fn read_under_faults(fx: &Fixture, k: u64, spec: &str) -> u64 {
    let out = child(fx, "faulty_reader", "local_clock", &[("K", k.to_string())])
        .env("PLFS_FAILPOINTS", spec)
        .output()
        .unwrap();
    assert_child_ok(&out, spec);
    child_lines(&out, "injected")[0].parse().unwrap()
}

/// A listing of a one-directory container that comes back without some of its entries, as
/// GlusterFS's does while the container is renamed (docs/design.md, "Listings that miss a
/// server"), is taken again where the rest says it cannot be whole, or sends stat to the index:
/// stat and read give the file, never a shorter one.
#[test]
fn a_listing_that_misses_entries_is_not_a_shorter_file() {
    let fx = with_target("be-partial", 3);
    // The first `after` listings of the entry are whole, the next `times` are not.
    let point = |what: &str, after: u32, times: u32| format!("sys::partial_listing[{what}]=EIO@{after}*{times}");
    let cases = [
        // The marker and all of a writer: the marker's absence says it (a stat of size 0 before).
        [".plfscontainer", "close.", "index.", "data."]
            .map(|w| point(w, 0, 1))
            .join(","),
        // All of its only writer (what a reader saw in a CI run on GlusterFS: 0 bytes): a
        // listing without any log is taken again.
        ["close.", "index.", "data."].map(|w| point(w, 0, 1)).join(","),
        // Its close dropping: the fast stat's answer was size 0 before.
        point("close.", 0, 1),
        // Its index log, in the open's listings.
        point("index.", 1, 3),
        // Its data log, in the open's listings (harmless: the index names its data log), which
        // says the listing may lack more.
        point("data.", 1, 2),
    ];
    for case in cases {
        assert!(
            read_under_faults(&fx, 3, &case) >= 1,
            "{case}: nothing was left out of a listing"
        );
    }
}

/// The listing of an empty file that nobody wrote (mdtest's) is taken once on a distributed
/// backend, like a written file's: only a file whose marker says it was written, or cannot say
/// (whole-second times), is listed again when its listing holds no log.
#[test]
fn an_empty_file_nobody_wrote_is_listed_once() {
    let fx = fixture("be-empty");
    let p = fx.plfs();
    p.open(&fx.path("d/empty"), excl(), 0o644, 1).unwrap().close().unwrap();
    let f = p.open(&fx.path("d/written"), excl(), 0o644, 1).unwrap();
    f.write(b"x", 0).unwrap();
    f.close().unwrap();
    // A backend that keeps whole seconds (MooseFS) cannot tell an untouched marker: there an
    // empty listing is taken twice more.
    let marker = fx
        .canonical
        .iter()
        .map(|c| c.join("d/empty").join(plfs_core::MARKER_NAME))
        .find(|m| m.exists())
        .expect("the empty file's marker");
    let whole_seconds = std::os::unix::fs::MetadataExt::mtime_nsec(&std::fs::metadata(&marker).unwrap()) == 0;
    let empty = if whole_seconds { "3" } else { "1" };
    for (name, want) in [("empty", empty), ("written", "1")] {
        let out = child(&fx, "stat_lister", "local_clock", &[("NAME", name.into())])
            .env("PLFS_FAILPOINTS", format!("sys::readdir[{name}]=EIO@1000000"))
            .output()
            .unwrap();
        assert_child_ok(&out, name);
        assert_eq!(
            child_lines(&out, "listings"),
            [want],
            "{name} (whole seconds: {whole_seconds})"
        );
    }
}

/// A look-up that finds a container's directory but not its marker, as GlusterFS answers one
/// while it renames the container (docs/design.md, "Backends"), looks for the marker once more
/// before it calls the file a directory, where the directory changed lately: the file is found
/// (a directory, and `EISDIR` for the open, before).
#[test]
fn a_marker_missing_for_a_moment_from_a_renamed_container_is_looked_for_again() {
    let fx = with_target("be-renamed", 4);
    let spec = "sys::stat[target/.plfscontainer]=ENOENT*1";
    assert_eq!(read_under_faults(&fx, 4, spec), 1, "{spec}");
}

#[test]
fn interrupted_rename_without_exchange_is_rolled_back_by_fsck() {
    let fx = fixture("be-kill");
    let p = fx.plfs();
    for (name, k) in [("d/target", 1), ("d/src", 2)] {
        let f = p.open(&fx.path(name), excl(), 0o644, 1).unwrap();
        f.write(&version(k), 0).unwrap();
        f.close().unwrap();
    }
    // Killed when moving `src` in, after `target` was moved aside: the name is missing.
    let out = child(&fx, "killed_renamer", "noreplace,exchange", &[])
        .env("PLFS_FAILPOINTS", "sys::rename[/src]=kill")
        .output()
        .unwrap();
    assert!(!out.status.success(), "the child must have been killed");
    let p = fx.plfs();
    assert!(p.stat(&fx.path("d/target")).unwrap_err().is_not_found());
    let opts = fsck::Options {
        repair: true,
        tmp_min_age: std::time::Duration::ZERO,
        ..Default::default()
    };
    let rep = fsck::fsck(&p, &fx.path("d"), &opts).unwrap();
    assert_eq!(rep.of(fsck::Kind::TrashDebris).len(), 1, "{:#?}", rep.findings);
    // The rename did not happen: both files are back, each with its own bytes.
    assert_eq!(common::get(&p, &fx.path("d/target")), version(1));
    assert_eq!(common::get(&p, &fx.path("d/src")), version(2));
    assert_eq!(debris(&fx), Vec::<PathBuf>::new());
    // A completed rename leaves nothing for fsck.
    p.rename(&fx.path("d/src"), &fx.path("d/target")).unwrap();
    assert_eq!(common::get(&p, &fx.path("d/target")), version(2));
    let rep = fsck::fsck(&p, &fx.path("d"), &opts).unwrap();
    assert_eq!(rep.problems(), 0, "{:#?}", rep.findings);
}

/// Across clients a closed file is whole at once (docs/backends.md, "What another client sees"):
/// the other client first reads and stats each file, so that its caches hold it; then this client
/// rewrites it longer (a truncating open) or a second writer appends to it, and the other
/// client's stat and read see every new byte at once. On the GlusterFS volume a plain file shows
/// the old size and bytes there for up to 1 s (`bench/coherence.py`: 30 of 30), and so would a
/// stat or a read-open that took anything from the marker's attributes or bytes instead of the
/// container's listing (docs/design.md, "Format 3"). Without `PLFS_TEST_ROOT2` both are one
/// client.
#[test]
fn another_client_sees_a_closed_file_whole_at_once() {
    let fx = fixture("be-coherent");
    let (one, two) = (fx.plfs(), fx.plfs_other_client());
    let read = |path: &Path| {
        let r = two.open(path, common::ro(), 0, 2).unwrap();
        let v = common::read_all(&r).unwrap();
        r.close().unwrap();
        v
    };
    for k in 0..20u64 {
        let path = fx.path(&format!("d/f{k}"));
        let old = common::pattern(k, 0, 4096);
        let f = one.open(&path, common::wo_create(), 0o644, 1).unwrap();
        f.write(&old, 0).unwrap();
        f.close().unwrap();
        assert_eq!(read(&path), old, "file {k}: the other client's first read");
        assert_eq!(
            two.stat(&path).unwrap().size,
            4096,
            "file {k}: the other client's first stat"
        );
        let (flags, new) = if k % 2 == 0 {
            let trunc = OpenFlags {
                trunc: true,
                ..common::wo_create()
            };
            (trunc, common::pattern(k + 100, 0, 8192))
        } else {
            let mut v = old.clone();
            v.extend(common::pattern(k + 100, 4096, 4096));
            (common::wo_create(), v)
        };
        let f = one.open(&path, flags, 0o644, 3).unwrap();
        f.write(&new[new.len() - 4096..], new.len() as u64 - 4096).unwrap();
        if k % 2 == 0 {
            f.write(&new[..4096], 0).unwrap();
        }
        f.close().unwrap();
        assert_eq!(
            two.stat(&path).unwrap().size,
            new.len() as u64,
            "file {k}: the other client's stat at once"
        );
        assert!(read(&path) == new, "file {k}: the other client's read at once");
    }
}

/// A reader that opened a file nobody had written yet, and refreshes after a writer wrote and
/// closed it, does not take a listing that missed the writer for the whole file: the marker's
/// stat from the open said nobody wrote it, and it is taken again before an empty listing is
/// trusted on its word. Before, the refresh read 0 bytes of the 6000 on a distributed backend
/// whose listing missed the writer's entries once (docs/design.md, "Listings that miss a server").
#[test]
fn a_reader_of_an_empty_file_looks_at_the_marker_again_before_trusting_an_empty_listing() {
    let fx = fixture("be-longread");
    let p = fx.plfs();
    p.open(&fx.path("d/late"), excl(), 0o644, 1).unwrap().close().unwrap();
    // Each of the writer's entries is left out of the first listing that holds it.
    let spec = ["close.", "index.", "data."]
        .map(|w| format!("sys::partial_listing[{w}]=EIO@0*1"))
        .join(",");
    let reader = child(&fx, "long_reader", "local_clock", &[("NAME", "late".into())])
        .env("PLFS_FAILPOINTS", &spec)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while p.stat(&fx.path("d/opened")).is_err() {
        assert!(std::time::Instant::now() < deadline, "the reader did not open the file");
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let f = p.open(&fx.path("d/late"), common::wo_create(), 0o644, 1).unwrap();
    f.write(&version(3), 0).unwrap();
    f.close().unwrap();
    p.open(&fx.path("d/go"), excl(), 0o644, 1).unwrap().close().unwrap();
    let out = reader.wait_with_output().unwrap();
    assert_child_ok(&out, "long_reader");
    assert_eq!(child_lines(&out, "read"), ["6000"], "the reader's refresh");
}

/// The directories of every shadow backend (`.plfs_shadow/<id>` and its hostdirs) under the
/// canonical backends of `fx`, each with its inode.
fn shadow_dirs(fx: &Fixture) -> Vec<(PathBuf, u64)> {
    use std::os::unix::fs::MetadataExt;
    let mut out = Vec::new();
    for c in &fx.canonical {
        let Ok(ids) = std::fs::read_dir(c.join(".plfs_shadow")) else {
            continue;
        };
        for id in ids.map(|e| e.unwrap().path()) {
            out.push((id.clone(), std::fs::metadata(&id).unwrap().ino()));
            for h in std::fs::read_dir(&id).unwrap().map(|e| e.unwrap().path()) {
                out.push((h.clone(), std::fs::metadata(&h).unwrap().ino()));
            }
        }
    }
    out.sort();
    out
}

/// A truncate to zero removes a file's logs from its shadow backends but keeps their
/// directories, which the next writer would make again under the same names: another client
/// can keep such a name bound to the removed directory for a while and list nothing there
/// (MooseFS: `another_client_sees_a_closed_file_whole_at_once` failed with `EIO` there, a
/// closed writer's logs missing, until the directories were kept). Here: the same directories,
/// by inode, before and after a truncating rewrite, and none of the first writer's logs.
#[test]
fn a_truncate_to_zero_keeps_the_shadow_directories() {
    let fx = fixture("be-keepshadow");
    let p = fx.plfs();
    // Two canonical backends, each a shadow too: some of these files' logs go to a shadow.
    for k in 0..4u64 {
        let f = p.open(&fx.path(&format!("d/s{k}")), excl(), 0o644, 1).unwrap();
        f.write(&version(k), 0).unwrap();
        f.close().unwrap();
    }
    let before = shadow_dirs(&fx);
    assert!(!before.is_empty(), "no writer's logs went to a shadow backend");
    let trunc = OpenFlags {
        trunc: true,
        ..common::wo_create()
    };
    for k in 0..4u64 {
        let path = fx.path(&format!("d/s{k}"));
        let f = p.open(&path, trunc, 0o644, 1).unwrap();
        f.write(&version(k + 10), 0).unwrap();
        f.close().unwrap();
        assert_eq!(common::read_fresh(&fx, &path).unwrap(), version(k + 10), "s{k}");
    }
    assert_eq!(shadow_dirs(&fx), before, "the shadow directories, by inode");
    let logs: usize = before
        .iter()
        .filter(|(p, _)| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("hostdir."))
        })
        .map(|(p, _)| std::fs::read_dir(p).unwrap().count())
        .sum();
    let shadowed = before.iter().filter(|(p, _)| !p.ends_with("hostdir.0")).count();
    assert_eq!(
        logs,
        2 * shadowed,
        "one writer's two logs per shadowed file, the first writers' gone"
    );
}
