//! The man pages as a reader gets them: every page `plfs generate man` writes, rendered by
//! `man -l` (man-db; `scripts/install-deps.sh` installs it, and a missing `man` fails this test),
//! has its sections, no EXTRA section, no word split across lines, no roff warning, no line
//! past 80 columns, and a SEE ALSO naming only pages that are generated too. plfsrc(5) documents
//! every key the configuration loader reads, and plfs(1) every environment variable.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn generate(name: &str, tree: bool) -> PathBuf {
    let d = std::env::temp_dir().join(format!("plfs-man-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    let mut c = Command::new(env!("CARGO_BIN_EXE_plfs"));
    c.args(["generate", "man"]);
    if tree {
        c.arg("--tree");
    }
    let o = c.arg(&d).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    d
}

/// `man -l FILE` at 80 columns: (text, warnings).
fn render(file: &Path) -> (String, String) {
    let o = Command::new("man")
        .args(["--warnings=w", "-l"])
        .arg(file)
        .env("MANWIDTH", "80")
        .env("MANPAGER", "cat")
        .env("PAGER", "cat")
        .env("LC_ALL", "C.UTF-8")
        .env("MAN_KEEP_FORMATTING", "")
        .output()
        .unwrap_or_else(|e| panic!("cannot run man ({e}): install man-db (scripts/install-deps.sh)"));
    assert!(
        o.status.success(),
        "man -l {}: {}",
        file.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    // No bold or underline overstrikes (man writes them when it thinks a terminal reads).
    let text: String = String::from_utf8_lossy(&o.stdout)
        .split('\u{8}')
        .enumerate()
        .map(|(i, s)| {
            if i == 0 {
                s
            } else {
                &s[s.chars().next().map_or(0, char::len_utf8)..]
            }
        })
        .collect();
    (text, String::from_utf8_lossy(&o.stderr).into_owned())
}

/// Section headings: lines that start in column 0 with an upper-case word.
fn sections(text: &str) -> Vec<String> {
    text.lines()
        .skip(1)
        .filter(|l| l.chars().next().is_some_and(|c| c.is_ascii_uppercase()) && l == &l.to_uppercase())
        .map(str::to_string)
        .collect()
}

/// The text of section `name`: its lines up to the next heading (or the footer), after a newline.
fn section(text: &str, name: &str) -> String {
    let mut out = String::from("\n");
    let mut inside = false;
    for l in text.lines() {
        if inside {
            if l.starts_with(|c: char| !c.is_whitespace()) {
                return out;
            }
            out.push_str(l);
            out.push('\n');
        } else if l == name {
            inside = true;
        }
    }
    assert!(inside, "no {name} section in\n{text}");
    out
}

#[test]
fn every_page_renders_with_its_sections_and_no_split_words() {
    let dir = generate("flat", false);
    let mut pages: BTreeMap<String, String> = BTreeMap::new();
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_str().unwrap().to_string();
        let src = std::fs::read_to_string(&p).unwrap();
        assert!(
            src.contains("\n.nh\n") && src.contains("\n.ad l\n"),
            "{name}: hyphenation not off"
        );
        let (text, warnings) = render(&p);
        assert!(warnings.trim().is_empty(), "{name}: roff warnings: {warnings}");
        pages.insert(name, text);
    }
    for want in ["plfs.1", "plfs-stats.1", "plfs-du.1", "plfsrc.5", "ldplfs.8"] {
        assert!(pages.contains_key(want), "{want} not generated: {:?}", pages.keys());
    }
    assert!(!pages.contains_key("plfs-help.1") && !pages.contains_key("plfs-generate.1"));
    let common = ["NAME", "SYNOPSIS", "DESCRIPTION", "SEE ALSO"];
    for (name, text) in &pages {
        let secs = sections(text);
        assert!(!secs.iter().any(|s| s == "EXTRA"), "{name}: an EXTRA section");
        let mut want: Vec<&str> = common.to_vec();
        match name.as_str() {
            "plfs.1" => want.extend(["OPTIONS", "COMMANDS", "EXIT STATUS", "ENVIRONMENT", "FILES", "EXAMPLES"]),
            "plfsrc.5" => want.extend(["GLOBAL PARAMETERS", "MOUNT POINTS", "FILES", "ENVIRONMENT", "EXAMPLES"]),
            "ldplfs.8" => want.extend(["WHAT IS INTERCEPTED", "ENVIRONMENT", "FILES", "LIMITS", "EXAMPLES"]),
            _ => want.extend(["OPTIONS", "EXIT STATUS"]),
        }
        if [
            "plfs-du.1",
            "plfs-ls.1",
            "plfs-map.1",
            "plfs-stats.1",
            "plfs-advise.1",
            "plfs-compact.1",
        ]
        .contains(&name.as_str())
        {
            want.push("OUTPUT");
        }
        if name == "plfs-advise.1" {
            want.extend(["WHAT IT MEASURES", "WHAT IT PREDICTS", "LIMITS"]);
        }
        for w in want {
            assert!(secs.iter().any(|s| s == w), "{name}: no {w} section in {secs:?}");
        }
        let lines: Vec<&str> = text.lines().collect();
        for (i, l) in lines.iter().enumerate() {
            assert!(
                l.chars().count() <= 80,
                "{name}: line {} longer than 80 columns: {l:?}",
                i + 1
            );
            // A word split across lines ends in a hyphenation hyphen, or in a letter and a
            // hyphen followed by a word (every hyphen of the source is `\-`, never a break).
            let t = l.trim_end();
            let next = lines.get(i + 1).map_or("", |n| n.trim_start());
            assert!(!t.ends_with('\u{2010}'), "{name}: word split at line {}: {t:?}", i + 1);
            let split = t.len() > 1
                && t.ends_with('-')
                && t[..t.len() - 1].ends_with(|c: char| c.is_ascii_alphabetic())
                && next.starts_with(|c: char| c.is_ascii_lowercase());
            assert!(!split, "{name}: word split at line {}: {t:?} / {next:?}", i + 1);
        }
        // SEE ALSO names only pages that exist.
        let also = section(text, "SEE ALSO");
        let refs: Vec<&str> = also.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
        assert!(!refs.is_empty(), "{name}: empty SEE ALSO");
        for r in refs {
            let (page, sec) = r
                .trim_end_matches('.')
                .strip_suffix(')')
                .and_then(|x| x.split_once('('))
                .unwrap_or_else(|| panic!("{name}: SEE ALSO entry {r:?} is not NAME(SECTION)"));
            assert!(
                pages.contains_key(&format!("{page}.{sec}")),
                "{name}: SEE ALSO names {r}, which is not generated"
            );
        }
    }
    // Columns and models are explained where a command prints them.
    let du = section(&pages["plfs-du.1"], "OUTPUT");
    for c in ["logical", "physical", "dead", "writers"] {
        assert!(
            du.contains(&format!("\n       {c}")),
            "plfs-du(1) does not explain {c}:\n{du}"
        );
    }
    let stats = section(&pages["plfs-stats.1"], "OUTPUT");
    for c in ["pattern", "span", "sizes", "writer", "first s, last s"] {
        assert!(stats.contains(c), "plfs-stats(1) does not explain {c}");
    }
    assert!(section(&pages["plfs-advise.1"], "WHAT IT MEASURES").contains("median latency"));
    assert!(section(&pages["plfs-advise.1"], "LIMITS").contains("ext4"));
    assert!(section(&pages["plfs-map.1"], "OUTPUT").contains("data log"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn plfs_1_documents_every_environment_variable_read() {
    let dir = generate("env", false);
    let (text, _) = render(&dir.join("plfs.1"));
    let env = section(&text, "ENVIRONMENT");
    // Every LDPLFS_ variable the preload library reads.
    let mut vars = vec![
        "PLFSRC".to_string(),
        "PLFS_HOSTNAME".into(),
        "PLFS_LOG".into(),
        "HOME".into(),
        "USER".into(),
    ];
    let mut stack = vec![root().join("crates/ldplfs/src")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let src = std::fs::read_to_string(&p).unwrap();
                for (i, _) in src.match_indices("\"LDPLFS_") {
                    let name: String = src[i + 1..]
                        .chars()
                        .take_while(|c| c.is_ascii_uppercase() || *c == '_')
                        .collect();
                    vars.push(name);
                }
            }
        }
    }
    assert!(vars.iter().any(|v| v == "LDPLFS_REPORT"), "{vars:?}");
    for v in &vars {
        assert!(env.contains(&format!("\n       {v}")), "plfs(1) ENVIRONMENT lacks {v}");
    }
    let files = section(&text, "FILES");
    for f in ["$PLFSRC", "~/.plfsrc", "/etc/plfsrc"] {
        assert!(files.contains(f), "FILES lacks {f}");
    }
    assert!(files.find("~/.plfsrc") < files.find("/etc/plfsrc"), "search order");
    // --tree puts each page in its section's directory.
    let tree = generate("tree", true);
    for f in ["man1/plfs.1", "man1/plfs-stats.1", "man5/plfsrc.5", "man8/ldplfs.8"] {
        assert!(tree.join(f).exists(), "{f} missing under --tree");
    }
    std::fs::remove_dir_all(&tree).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn plfsrc_5_documents_every_configuration_key() {
    let dir = generate("keys", false);
    let src = std::fs::read_to_string(dir.join("plfsrc.5")).unwrap();
    // Every key the loader reads, as a tagged item (bold).
    let keys = plfs_core::config::known_keys();
    assert!(keys.len() > 30, "{keys:?}");
    for (section, k) in &keys {
        let tag = format!("\\fB{}\\fR", k.replace('-', "\\-"));
        assert!(src.contains(&tag), "plfsrc(5) does not document the {section} key {k}");
    }
    // Every field of GlobalParams names its key first in its documentation: that key must be
    // one the loader reads (and so, above, one the page documents).
    let conf = std::fs::read_to_string(root().join("crates/plfs-core/src/config/mod.rs")).unwrap();
    let body = &conf[conf.find("pub struct GlobalParams {").unwrap()..];
    let body = &body[..body.find("\n}").unwrap()];
    let mut fields = 0;
    let mut doc_key: Option<String> = None;
    for l in body.lines().skip(1).map(str::trim) {
        if let Some(d) = l.strip_prefix("/// `") {
            if doc_key.is_none() {
                doc_key = d.split('`').next().map(str::to_string);
            }
        } else if l.starts_with("pub ") {
            let k = doc_key
                .take()
                .unwrap_or_else(|| panic!("GlobalParams field without its key: {l}"));
            assert!(
                keys.iter().any(|(_, x)| *x == k),
                "GlobalParams key {k} unknown to known_keys()"
            );
            assert!(src.contains(&format!("\\fB{k}\\fR")), "plfsrc(5) does not document {k}");
            fields += 1;
        }
    }
    assert!(fields >= 9, "{fields} fields found");
    std::fs::remove_dir_all(&dir).unwrap();
}
