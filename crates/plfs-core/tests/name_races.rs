//! Races between processes over one name of an N-1 mount (issue 50): a rename over a name that
//! another process creates and unlinks in a loop, the write-temp-then-rename pattern of every
//! safe writer, must behave as rename(2) does on a plain file system: it never fails while its
//! source exists, it replaces whatever is at the target atomically, and it leaves nothing
//! half-removed behind.

mod common;

use common::{arg, arg_u64, assert_child_ok, child_command, child_lines, Fixture};
use plfs_core::{Config, Plfs};
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// The test that child processes run.
const ENTRY: &str = "child_entry";

/// Entry point of child processes; does nothing in a normal test run.
#[test]
fn child_entry() {
    let Some(role) = common::child_role() else { return };
    match role.as_str() {
        "churn" => child_churn(),
        r => panic!("unknown child role {r}"),
    }
}

fn plfs_from_rc() -> Plfs {
    let rc = PathBuf::from(arg("RC"));
    let cfg = Config::from_file(&rc).unwrap_or_else(|e| panic!("{}: {e}", rc.display()));
    Plfs::new(cfg).expect("Plfs::new")
}

/// Creates (writing one byte) and unlinks `PATH` until the file `STOP` exists, at least `MIN`
/// times; prints how many rounds it made and every failure.
fn child_churn() {
    let p = plfs_from_rc();
    let path = PathBuf::from(arg("PATH"));
    let stop = PathBuf::from(arg("STOP"));
    let min = arg_u64("MIN");
    let (mut rounds, mut failures) = (0u64, 0u64);
    while rounds < min || !stop.exists() {
        rounds += 1;
        match p.open(&path, common::wo_create(), 0o644, std::process::id()) {
            Ok(f) => {
                if let Err(e) = f.write(b"a", 0).and_then(|_| f.close()) {
                    failures += 1;
                    println!("{} failure write {e}", common::CHILD_TAG);
                }
            }
            Err(e) => {
                failures += 1;
                println!("{} failure create {e}", common::CHILD_TAG);
            }
        }
        // The other process's rename may have replaced the file meanwhile: that one goes.
        if let Err(e) = p.unlink(&path) {
            failures += 1;
            println!("{} failure unlink {e}", common::CHILD_TAG);
        }
    }
    println!("{} rounds {rounds}", common::CHILD_TAG);
    println!("{} failures {failures}", common::CHILD_TAG);
}

/// The names in the backend directory `dir`.
fn names_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Renames made by [`a_rename_over_a_name_another_process_unlinks_never_fails`] (and at least
/// as many creates and unlinks by the other process).
const ROUNDS: u64 = 600;

/// One process creates and unlinks `t` in a loop; this one writes `s` and renames it over `t`,
/// [`ROUNDS`] times. Before the fix about 17 of 300 renames failed with `ENOTEMPTY` (the target was
/// made between the look-up and the rename of the source directory) and a few with `ENOENT`
/// (the target was unlinked between its look-up and the exchange), with `s` still there.
#[test]
fn a_rename_over_a_name_another_process_unlinks_never_fails() {
    let fx = Fixture::simple("rename-churn");
    let p = fx.plfs();
    let (s, t) = (fx.path("s"), fx.path("t"));
    let stop = fx.dir.path().join("stop");
    let child = child_command(
        ENTRY,
        "churn",
        &[
            ("RC", fx.rc.display().to_string()),
            ("PATH", t.display().to_string()),
            ("STOP", stop.display().to_string()),
            ("MIN", ROUNDS.to_string()),
        ],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let mut failures = Vec::new();
    for i in 0..ROUNDS {
        let data = common::pattern(i, 0, 100 + i as usize);
        common::put(&p, &s, &data);
        if let Err(e) = p.rename(&s, &t) {
            failures.push(format!("rename {i}: {e}"));
            let _ = p.unlink(&s);
        }
        if p.stat(&s).is_ok() {
            failures.push(format!("rename {i}: the source is still there"));
            let _ = p.unlink(&s);
        }
    }
    std::fs::write(&stop, b"").unwrap();
    let out = child.wait_with_output().unwrap();
    assert_child_ok(&out, "churn");
    let child_failures: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains("failure "))
        .map(str::to_string)
        .collect();
    assert!(failures.is_empty(), "{} renames failed: {failures:#?}", failures.len());
    assert!(child_failures.is_empty(), "the churning process: {child_failures:#?}");
    assert_eq!(child_lines(&out, "failures"), vec!["0".to_string()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("warning"), "the churning process warned: {err}");
    // Nothing half-removed stays behind: once `t` is unlinked (the last rename may have come
    // after the churn's last unlink) the backend holds nothing.
    if p.stat(&t).is_ok() {
        p.unlink(&t).unwrap();
    }
    let left = names_in(&fx.canonical[0]);
    let inside: Vec<_> = left
        .iter()
        .map(|n| {
            let d = fx.canonical[0].join(n);
            let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&d).unwrap().permissions());
            (n.clone(), format!("{mode:o}"), names_in(&d))
        })
        .collect();
    assert!(left.is_empty(), "backend after the race: {inside:?}");
    // And the pattern ends as it should: t reads s's bytes.
    let data = common::pattern(1000, 0, 4321);
    common::put(&p, &s, &data);
    p.rename(&s, &t).unwrap();
    common::assert_bytes_eq(&common::get(&fx.plfs(), &t), &data, "t after the last rename");
    assert_eq!(names_in(&fx.canonical[0]), vec!["t".to_string()]);
}
