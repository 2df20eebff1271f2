//! The README's "Using it" block, run as written: taken from README.md (so the two cannot
//! drift), run by bash with `-e -o pipefail` from a directory laid out like this repository after
//! `make build` (`target/release/plfs` and `libldplfs.so`), in a fresh HOME, a fresh TMPDIR, no
//! plfsrc and no PLFS_* variable: the zero-config default of a new user. Once with USER set and
//! once without it (the mount point then comes from the user database, as `id -un` says).

use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

fn readme() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md")).unwrap()
}

/// The first ```sh block after the "## Using it" heading.
fn using_it_block() -> String {
    let text = readme();
    let at = text
        .find("\n## Using it\n")
        .expect("README has a \"## Using it\" section");
    let rest = &text[at..];
    let start = rest.find("```sh\n").expect("a ```sh block in \"Using it\"") + "```sh\n".len();
    let end = rest[start..].find("\n```").expect("the block ends");
    rest[start..start + end].to_string()
}

struct Run {
    stdout: String,
    stderr: String,
    mount: PathBuf,
}

fn run(tag: &str, user: Option<&str>) -> Run {
    let block = using_it_block();
    let t = std::env::temp_dir().join(format!("plfs-readme-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&t);
    let release = t.join("repo/target/release");
    for d in [&release, &t.join("home"), &t.join("tmp"), &t.join("bin")] {
        std::fs::create_dir_all(d).unwrap();
    }
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_plfs"));
    let lib = exe.with_file_name("libldplfs.so");
    assert!(
        lib.exists(),
        "{} is not built: build the workspace first (make build, or cargo build --release --workspace)",
        lib.display()
    );
    symlink(&exe, release.join("plfs")).unwrap();
    symlink(&lib, release.join("libldplfs.so")).unwrap();
    // `make build` has been done by whoever built this test: a make that accepts only that.
    let make = t.join("bin/make");
    std::fs::write(
        &make,
        "#!/bin/sh\n[ \"$*\" = build ] || { echo \"unexpected make $*\" >&2; exit 2; }\n",
    )
    .unwrap();
    std::fs::set_permissions(&make, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut c = Command::new("bash");
    c.args(["-e", "-o", "pipefail", "-c", &block])
        .current_dir(t.join("repo"))
        .env_clear()
        .env(
            "PATH",
            format!("{}:/usr/local/bin:/usr/bin:/bin", t.join("bin").display()),
        )
        .env("HOME", t.join("home"))
        .env("TMPDIR", t.join("tmp"))
        .env("LANG", "C.UTF-8");
    if let Some(u) = user {
        c.env("USER", u);
    }
    let o = c.output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    );
    assert!(
        o.status.success(),
        "the README's \"Using it\" block failed ({:?}):\n--- block\n{block}\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        o.status.code()
    );
    let name = match user {
        Some(u) => u.to_string(),
        None => {
            let id = Command::new("id").arg("-un").output().unwrap();
            String::from_utf8(id.stdout).unwrap().trim().to_string()
        }
    };
    let _ = std::fs::remove_dir_all(&t);
    Run {
        stdout,
        stderr,
        mount: PathBuf::from(format!("/tmp/plfs-{name}")),
    }
}

fn check(r: &Run) {
    let m = r.mount.display().to_string();
    // check-config: the zero-config default, mount point named as the README computes it.
    assert!(r.stdout.contains("zero-config default"), "{}", r.stdout);
    assert!(r.stdout.contains(&format!("mount_point: {m}\n")), "{}", r.stdout);
    // ls -l lists the imported file with its size (seq 200000 is 1288895 bytes).
    assert!(
        r.stdout.contains(" 1288895 ") && r.stdout.contains("results.dat"),
        "{}",
        r.stdout
    );
    // stats: one writer, sequential.
    assert!(r.stdout.contains("pattern   sequential"), "{}", r.stdout);
    // map and query print the extents and the backend files.
    assert!(r.stdout.contains("# ") && r.stdout.contains("data log"), "{}", r.stdout);
    // md5sum through ldplfs: the PLFS file and the plain one have the same sum.
    let sums: Vec<&str> = r
        .stdout
        .lines()
        .filter(|l| l.len() > 34 && l[..32].bytes().all(|b| b.is_ascii_hexdigit()) && l[32..].starts_with("  "))
        .collect();
    assert_eq!(sums.len(), 2, "{}", r.stdout);
    assert_eq!(sums[0][..32], sums[1][..32], "{sums:?}");
    assert!(sums[0].ends_with(&format!("{m}/run1/results.dat")), "{sums:?}");
    // The report of the cp under LDPLFS_REPORT.
    assert!(r.stderr.contains("1 file opened through PLFS"), "{}", r.stderr);
}

#[test]
fn the_readme_using_it_block_runs_as_written() {
    let block = using_it_block();
    assert!(block.contains("plfs import") && block.contains("LD_PRELOAD"), "{block}");
    check(&run("user", Some("plfsreadme")));
    check(&run("nouser", None));
}
