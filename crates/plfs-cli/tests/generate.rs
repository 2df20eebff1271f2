//! Man pages and shell completions generated from the clap definitions (`plfs generate`, run by
//! `make install`): a page for every visible command, and completion scripts the shells accept.

use std::path::PathBuf;
use std::process::Command;

fn plfs(args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_plfs")).args(args).output().unwrap();
    assert!(
        o.status.success(),
        "plfs {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// The visible subcommands, from `plfs --help`.
fn commands() -> Vec<String> {
    let help = plfs(&["--help"]);
    let mut in_cmds = false;
    let mut v = Vec::new();
    for l in help.lines() {
        if l.starts_with("Commands:") {
            in_cmds = true;
            continue;
        }
        if in_cmds {
            if l.trim().is_empty() {
                break;
            }
            let name = l.split_whitespace().next().unwrap().to_string();
            if name != "help" {
                v.push(name);
            }
        }
    }
    v
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("plfs-gen-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[test]
fn a_man_page_for_every_command() {
    let cmds = commands();
    for c in [
        "ls", "cp", "mv", "rm", "mkdir", "du", "import", "export", "map", "fsck", "mount",
    ] {
        assert!(cmds.iter().any(|x| x == c), "plfs --help lacks {c}: {cmds:?}");
    }
    let dir = tmp("man");
    plfs(&["generate", "man", dir.to_str().unwrap()]);
    let top = std::fs::read_to_string(dir.join("plfs.1")).unwrap();
    assert!(
        top.starts_with(".ie") || top.contains(".TH plfs 1"),
        "{}",
        &top[..200.min(top.len())]
    );
    // The exit-code table is in the main page.
    assert!(top.contains("Exit codes"), "plfs.1 lacks the exit codes");
    for c in &cmds {
        let page = std::fs::read_to_string(dir.join(format!("plfs-{c}.1")))
            .unwrap_or_else(|e| panic!("no man page for {c}: {e}"));
        assert!(page.contains(&format!(".TH plfs-{c} 1")), "plfs-{c}.1: {page}");
        // Listed in the main page's SUBCOMMANDS section.
        assert!(
            top.contains(&format!("plfs\\-{}(1)", c.replace('-', "\\-"))),
            "plfs.1 lacks {c}"
        );
    }
    // Hidden commands get none.
    assert!(!dir.join("plfs-demo-worker.1").exists());
    assert!(!dir.join("plfs-help.1").exists());
    // man renders them, when it is installed.
    if Command::new("man").arg("--version").output().is_ok() {
        let o = Command::new("man")
            .arg("-l")
            .arg(dir.join("plfs-cp.1"))
            .env("MANPAGER", "cat")
            .output()
            .unwrap();
        assert!(o.status.success());
        assert!(String::from_utf8_lossy(&o.stdout).contains("no-clobber"));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn completions_parse_in_their_shells() {
    let dir = tmp("comp");
    for (sh, file) in [("bash", "plfs"), ("zsh", "_plfs"), ("fish", "plfs.fish")] {
        plfs(&["generate", "completions", sh, dir.to_str().unwrap()]);
        let text = std::fs::read_to_string(dir.join(file)).unwrap();
        for c in commands() {
            assert!(text.contains(&c), "{sh} completion lacks {c}");
        }
    }
    // bash must accept the script (bash is always there; a missing bash fails the test).
    let o = Command::new("bash")
        .arg("-n")
        .arg(dir.join("plfs"))
        .output()
        .expect("bash");
    assert!(o.status.success(), "bash -n: {}", String::from_utf8_lossy(&o.stderr));
    // Loaded into bash, it completes subcommands.
    let script = format!(
        "source {}; COMP_WORDS=(plfs mk); COMP_CWORD=1; COMP_LINE='plfs mk'; COMP_POINT=7; _plfs plfs mk plfs; echo \"${{COMPREPLY[@]}}\"",
        dir.join("plfs").display()
    );
    let o = Command::new("bash").arg("-c").arg(&script).output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        "mkdir",
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Standard output when no directory is given.
    assert!(plfs(&["generate", "completions", "bash"]).contains("_plfs"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// What the bash completion offers for the word `word` after `plfs ls`, run in `cwd` with the
/// plfsrc `cfg`: COMPREPLY, one per line.
fn bash_complete(script: &std::path::Path, cfg: &std::path::Path, cwd: &std::path::Path, word: &str) -> Vec<String> {
    let bin = env!("CARGO_BIN_EXE_plfs");
    let code = format!(
        "source {script}; COMP_WORDS=({bin} ls \"$W\"); COMP_CWORD=2; COMP_LINE=\"{bin} ls $W\"; \
         COMP_POINT=${{#COMP_LINE}}; COMPREPLY=(); _plfs_paths {bin} \"$W\" ls; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script = script.display()
    );
    let o = Command::new("bash")
        .arg("-c")
        .arg(&code)
        .current_dir(cwd)
        .env("PLFSRC", cfg)
        .env("PLFS_LOG", "off")
        .env("W", word)
        .output()
        .expect("bash");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut v: Vec<String> = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect();
    v.sort();
    v
}

#[test]
fn bash_completes_paths_under_a_mount_point() {
    let dir = tmp("paths");
    let (mount, backend) = (dir.join("mnt-plfs"), dir.join("backend"));
    std::fs::create_dir_all(&backend).unwrap();
    // The mount point as an empty directory of the kernel's, as it is before a FUSE mount.
    std::fs::create_dir_all(&mount).unwrap();
    std::fs::write(dir.join("mnt-plain.txt"), b"x").unwrap();
    let cfg = dir.join("plfsrc");
    std::fs::write(
        &cfg,
        format!(
            "- mount_point: {}\n  backends:\n    - location: {}\n",
            mount.display(),
            backend.display()
        ),
    )
    .unwrap();
    let run = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_plfs"))
            .args(args)
            .env("PLFSRC", &cfg)
            .env("PLFS_LOG", "off")
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "plfs {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    };
    let m = mount.display().to_string();
    run(&["mkdir", "-p", &format!("{m}/alpha/inner")]);
    run(&["mkdir", &format!("{m}/.hidden")]);
    let f = dir.join("f");
    std::fs::write(&f, b"data").unwrap();
    for name in ["alpha/f1", "alpha/f2.txt", "beta.dat", "with space"] {
        run(&["cp", f.to_str().unwrap(), &format!("{m}/{name}")]);
    }
    plfs(&["generate", "completions", "bash", dir.to_str().unwrap()]);
    let script = dir.join("plfs");
    let c = |cwd: &std::path::Path, w: &str| bash_complete(&script, &cfg, cwd, w);

    assert_eq!(
        c(&dir, &format!("{m}/")),
        [
            format!("{m}/alpha/"),
            format!("{m}/beta.dat"),
            format!("{m}/with space")
        ]
    );
    assert_eq!(c(&dir, &format!("{m}/al")), [format!("{m}/alpha/")]);
    assert_eq!(
        c(&dir, &format!("{m}/alpha/f")),
        [format!("{m}/alpha/f1"), format!("{m}/alpha/f2.txt")]
    );
    assert_eq!(c(&dir, &format!("{m}/.h")), [format!("{m}/.hidden/")]);
    assert!(c(&dir, &format!("{m}/zzz")).is_empty());
    // Relative to a working directory under the mount point.
    assert_eq!(c(&mount, "alpha/i"), ["alpha/inner/"]);
    // A word that is a prefix of the mount point: the mount point beside the plain files, once.
    let pre = format!("{}/mnt", dir.display());
    assert_eq!(c(&dir, &pre), [format!("{pre}-plain.txt"), format!("{m}/")]);
    // Elsewhere the protocol says "not mine": exit 1, nothing printed.
    let o = Command::new(env!("CARGO_BIN_EXE_plfs"))
        .args(["__complete", &format!("{}/f", dir.display())])
        .env("PLFSRC", &cfg)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(o.stdout.is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}
