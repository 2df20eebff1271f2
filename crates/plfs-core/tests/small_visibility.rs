//! 1-N visibility after close (issue [2/7] item 7): two processes that each create a file in a
//! fresh directory at the same moment must see each other's file as soon as the other has closed
//! it, whatever the backend's timestamp granularity. (The view used to key its refresh on the
//! store directory's mtime, so a log created within one timestamp tick of the last look was never
//! found: mdtest -F -N 1 at np 2 failed 8 of 15 runs.)

mod common;

use common::{arg, child_command, child_role, TempDir, CHILD_TAG};
use plfs_core::{Config, OpenFlags, Plfs};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;

const ENTRY: &str = "child_entry";
const MOUNT: &str = "/plfs-test/small";

/// Creates its file, closes it, says so, waits for "go", then looks for the other's file once.
#[test]
fn child_entry() {
    let Some(role) = child_role() else { return };
    assert_eq!(role, "pair");
    let p = Plfs::new(Config::from_file(Path::new(&arg("RC"))).unwrap()).unwrap();
    let dir = PathBuf::from(arg("DIR"));
    let (mine, other) = (arg("MINE"), arg("OTHER"));
    let flags = OpenFlags {
        write: true,
        create: true,
        excl: true,
        ..Default::default()
    };
    let f = p.open(&dir.join(&mine), flags, 0o644, 1).unwrap();
    f.write(mine.as_bytes(), 0).unwrap();
    f.close().unwrap();
    println!("{CHILD_TAG} closed {mine}");
    std::io::stdout().flush().unwrap();
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "go");
    let seen = match p.stat(&dir.join(&other)) {
        Ok(st) => st.size == other.len() as u64,
        Err(e) if e.is_not_found() => false,
        Err(e) => panic!("stat {other}: {e}"),
    };
    let listed = p.readdir(&dir).unwrap().iter().any(|e| e.name == other.as_str());
    println!("{CHILD_TAG} seen {} {}", u8::from(seen), u8::from(listed));
}

#[test]
fn files_created_at_once_in_a_fresh_directory_are_seen_after_close() {
    let t = TempDir::new("small-vis");
    let backend = t.path().join("b0");
    std::fs::create_dir_all(&backend).unwrap();
    let rc = t.path().join("plfsrc");
    std::fs::write(
        &rc,
        format!(
            "- mount_point: {MOUNT}\n  workload: small_file\n  backends:\n    - location: {}\n",
            backend.display()
        ),
    )
    .unwrap();
    let p = Plfs::new(Config::from_file(&rc).unwrap()).unwrap();
    let trials = 30;
    let mut misses = Vec::new();
    for trial in 0..trials {
        // A fresh directory each time: the race is between the two first logs of a store.
        let dir = Path::new(MOUNT).join(format!("d{trial}"));
        p.mkdir(&dir, 0o755).unwrap();
        let kids: Vec<_> = [("a", "b"), ("b", "a")]
            .iter()
            .map(|(mine, other)| {
                child_command(
                    ENTRY,
                    "pair",
                    &[
                        ("RC", rc.display().to_string()),
                        ("DIR", dir.display().to_string()),
                        ("MINE", mine.to_string()),
                        ("OTHER", other.to_string()),
                    ],
                )
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .unwrap()
            })
            .collect();
        let mut kids: Vec<_> = kids
            .into_iter()
            .map(|mut k| {
                let out = BufReader::new(k.stdout.take().unwrap());
                (k, out)
            })
            .collect();
        // Both have closed their file before either looks.
        for (_, out) in kids.iter_mut() {
            let mut line = String::new();
            loop {
                line.clear();
                assert!(
                    out.read_line(&mut line).unwrap() > 0,
                    "child ended before closing its file"
                );
                if line.starts_with(&format!("{CHILD_TAG} closed")) {
                    break;
                }
            }
        }
        for (k, _) in kids.iter_mut() {
            k.stdin.take().unwrap().write_all(b"go\n").unwrap();
        }
        for (mut k, mut out) in kids {
            let mut rest = String::new();
            std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
            assert!(k.wait().unwrap().success(), "child failed:\n{rest}");
            let seen = rest
                .lines()
                .find_map(|l| l.strip_prefix(&format!("{CHILD_TAG} seen ")))
                .unwrap_or_else(|| panic!("child said nothing:\n{rest}"))
                .to_string();
            if seen != "1 1" {
                misses.push((trial, seen));
            }
        }
    }
    assert!(
        misses.is_empty(),
        "{} of {} trials missed the other file: {misses:?}",
        misses.len(),
        trials
    );
}
