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
