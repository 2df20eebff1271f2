//! The man pages (`plfs generate man DIR`, run by `make install`): `plfs(1)`, one
//! `plfs-COMMAND(1)` per visible command, `plfsrc(5)` and `ldplfs(8)`.
//!
//! Each page is written section by section as roff, from the clap definitions (synopsis,
//! options, the commands' descriptions) and from the text in this module and its children (what
//! a table's columns mean, environment, files, examples). Every page turns off hyphenation and
//! justification (`.nh`, `.ad l`), so no word is split across lines, and keeps hard line
//! breaks only in examples (`.nf`). In the text given to [`Page`], `` `code` `` is set in bold.

mod commands;
mod ldplfs;
mod plfsrc;
mod roff;
mod shared;

use crate::fail::IoContext;
use anyhow::Result;
use roff::{escape, inline, unwrap, Page};
use std::path::{Path, PathBuf};

/// clap_mangen's OPTIONS section of `cmd`.
fn options_roff(cmd: &clap::Command) -> Result<String> {
    let mut buf = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .render_options_section(&mut buf)
        .at("cannot render the options of", Path::new(cmd.get_name()))?;
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// The visible commands of `plfs`, in `plfs --help` order.
fn commands(top: &clap::Command) -> Vec<&clap::Command> {
    top.get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
        .collect()
}

/// The usage line of a (built) command, without clap's `Usage: `.
fn usage(cmd: &clap::Command) -> String {
    let u = cmd.clone().render_usage().to_string();
    u.trim_start_matches("Usage:").trim().to_string()
}

fn synopsis(p: &mut Page, cmd: &clap::Command) {
    p.sh("Synopsis");
    let u = usage(cmd);
    let (name, rest) = match u.find(" [").or_else(|| u.find(" <")) {
        Some(i) => u.split_at(i),
        None => (u.as_str(), ""),
    };
    p.raw(&format!(".PP\n\\fB{}\\fR{}", escape(name), escape(rest)));
}

/// The EXIT STATUS section every command shares (fsck and verify have their own).
fn exit_status(p: &mut Page, name: &str) {
    p.sh("Exit status");
    match name {
        "fsck" => {
            p.p("`plfs fsck` follows e2fsck(8):");
            p.tp("0", "No problem found.");
            p.tp("1", "Problems were found and all of them repaired (with `--repair`).");
            p.tp(
                "4",
                "Problems are left (run again with `--repair`, or they need a person).",
            );
            p.tp(
                "8",
                "The check could not run (a path missing or not under a mount point, an unreadable directory).",
            );
        }
        "verify" => {
            p.tp("0", "Every write's data matched its checksum.");
            p.tp("4", "A mismatch, or an index or data log that could not be read.");
            p.tp("8", "The check could not run.");
        }
        _ => {
            p.tp(
                "0",
                "Success; also when standard output is closed early (`plfs map F | head -1`).",
            );
            p.tp(
                "1",
                "An operation failed: the message (or with `--json` the JSON object on standard error, with its errno) \
                 says which path and why. Commands with several operands go on with the others and exit 1 at the end.",
            );
            p.tp("2", "Usage error: unknown command or option, missing or bad argument.");
        }
    }
}

/// `plfs-NAME(1)`.
fn command_page(cmd: &clap::Command) -> Result<Page> {
    let name = cmd.get_name();
    let mut p = Page::new(&format!("plfs-{name}"), 1);
    let about = cmd.get_about().map(|s| s.to_string()).unwrap_or_default();
    p.sh("Name");
    p.raw(&format!(
        "plfs\\-{} \\- {}",
        escape(name),
        inline(&unwrap(first_sentence(&about)))
    ));
    synopsis(&mut p, cmd);
    p.sh("Description");
    let long = cmd.get_long_about().map(|s| s.to_string()).unwrap_or(about);
    for para in long.split("\n\n") {
        p.p(para);
    }
    commands::description(&mut p, name);
    p.raw(&options_roff(cmd)?);
    commands::sections(&mut p, name, cmd);
    exit_status(&mut p, name);
    p.p("With `--json`, an error is one line of JSON on standard error: see plfs(1).");
    let mut also = vec!["plfs(1)".to_string()];
    also.extend(commands::related(name).iter().map(|r| r.to_string()));
    also.push("plfsrc(5)".into());
    p.see_also(&also);
    Ok(p)
}

/// The first sentence of an about text, without a usage summary in it (`: \`plfs mount ...\``,
/// ` (\`plfs advise ...\`)`): NAME sections are one line.
fn first_sentence(s: &str) -> &str {
    let mut s = s.trim().trim_end_matches('.');
    if let Some(i) = s.find(". ") {
        s = &s[..i];
    }
    for cut in [" (`plfs ", ": `plfs "] {
        if let Some(i) = s.find(cut) {
            s = &s[..i];
        }
    }
    s
}

/// Writes every page into `dir`; `tree` puts them in `dir/man1`, `dir/man5` and `dir/man8`
/// instead. Returns the files written.
pub fn write_all(top: &clap::Command, dir: &Path, tree: bool) -> Result<Vec<PathBuf>> {
    let mut pages = vec![top_page(top)?];
    for c in commands(top) {
        pages.push(command_page(c)?);
    }
    pages.push(plfsrc::page());
    pages.push(ldplfs::page());
    let mut written = Vec::new();
    for p in &pages {
        let d = if tree {
            dir.join(format!("man{}", p.section()))
        } else {
            dir.to_path_buf()
        };
        std::fs::create_dir_all(&d).at("cannot create directory", &d)?;
        p.write(&d, &mut written)?;
    }
    Ok(written)
}

/// `plfs(1)`.
fn top_page(top: &clap::Command) -> Result<Page> {
    let mut p = Page::new("plfs", 1);
    p.sh("Name");
    p.raw("plfs \\- the command\\-line tool of PLFS, the Parallel Log\\-structured File System");
    p.sh("Synopsis");
    p.raw(".PP\n\\fBplfs\\fR [\\fB\\-\\-config\\fR \\fIFILE\\fR] [\\fB\\-\\-json\\fR] [\\fB\\-v\\fR] \\fICOMMAND\\fR [\\fIOPTIONS\\fR] [\\fIARGS\\fR]");
    p.sh("Description");
    p.p(
        "PLFS turns one logical file that many processes write at once (N-1, a checkpoint) into a \
         container directory on an existing file system, in which every writer appends to its own data log \
         and records where each byte went in its own index log. Readers merge the indexes; programs see one \
         ordinary file. Logical files live under the mount points of the plfsrc (see plfsrc(5)); their bytes \
         live in the backend directories it names.",
    );
    p.p(
        "`plfs` works on logical paths directly, through the library, with no mount and no daemon: listing, \
         copying in and out, space used, where every byte lives, I/O statistics, checks and repairs. \
         Unmodified programs reach the same files through the LD_PRELOAD library, ldplfs(8), or through a \
         FUSE mount, plfs-mount(1).",
    );
    p.p(
        "Messages name the logical path and say what went wrong in the C library's words \
         (`plfs: error: cannot stat /mnt/plfs/x: No such file or directory`); backend files are named only \
         with `-v`. With `--json` every command prints one JSON document on standard output, and each error as \
         one line of JSON on standard error: `{\"error\": \"...\", \"path\": \"...\", \"errno\": N, \"exit_code\": N}`.",
    );
    p.raw(&options_roff(top)?);
    p.sh("Commands");
    p.p("Each command has its own page, plfs-COMMAND(1), and `plfs COMMAND --help`.");
    for c in commands(top) {
        let about = c.get_about().map(|s| s.to_string()).unwrap_or_default();
        p.raw(&format!(
            ".TP\n\\fBplfs\\-{}(1)\\fR\n{}",
            escape(c.get_name()),
            inline(&unwrap(&about))
        ));
    }
    p.sh("Exit status");
    p.p("Exit codes of every command:");
    p.tp(
        "0",
        "Success; also when standard output is closed early (`plfs map F | head -1` ends quietly).",
    );
    p.tp(
        "1",
        "An operation failed: the message (or the JSON error's errno) says which path and why. Commands with \
         several operands (`cp`, `mv`, `rm`, `mkdir`, `ls`, `du`, `stats` of a directory) report each failure, \
         go on with the others and exit 1 at the end.",
    );
    p.tp("2", "Usage error: unknown command or option, missing or bad argument.");
    p.p(
        "`plfs fsck` and `plfs verify` follow e2fsck(8) instead: fsck 0 clean, 1 problems found and all \
         repaired, 4 problems left, 8 could not run; verify 0 every checksum matched, 4 a mismatch or an \
         unreadable log, 8 could not run.",
    );
    shared::environment(&mut p);
    shared::files(&mut p);
    p.sh("Examples");
    p.pre(EXAMPLES);
    let mut also = vec!["plfsrc(5)".to_string(), "ldplfs(8)".to_string()];
    also.extend(commands(top).iter().map(|c| format!("plfs-{}(1)", c.get_name())));
    p.see_also(&also);
    Ok(p)
}

const EXAMPLES: &str = "
plfs check-config               # which plfsrc? backends there?
M=/tmp/plfs-${USER:-$(id -un)}  # the zero-config mount point
plfs mkdir -p $M/run1
plfs import results.dat $M/run1/results.dat
plfs ls -l -h $M/run1
plfs du -h $M/run1              # logical, physical, dead, writers
plfs stats $M/run1/ckpt         # bytes, writes, pattern per rank
plfs map --rank 3 $M/run1/ckpt  # where rank 3's bytes live
plfs cp -r $M/run1 ./back       # PLFS -> plain
plfs --json stat $M/run1/results.dat | jq .size
plfs fsck --repair $M/run1      # after a crash
";
