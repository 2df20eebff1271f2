//! File commands on the logical namespace: `plfs ls`, `stat` and `cat` (copies are in
//! [`crate::copy`]).

use crate::fail::{CoreContext, Reported};
use crate::globals::Globals;
use crate::util::{absolute, format_time, format_time_short, group_name, human_iec, mode_string, open_plfs};
use crate::util::{plural, user_name};
use crate::util::{require_plfs_path, BUF_SIZE};
use anyhow::{Context, Result};
use clap::Args;
use plfs_core::{FileFormat, FileKind, OpenFlags, Plfs, Stat};
use serde_json::json;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Arguments of `plfs ls`.
#[derive(Debug, Args)]
#[command(disable_help_flag = true)]
pub struct LsArgs {
    /// Long listing: mode, links, owner, group, size, modification time (local time).
    #[arg(short = 'l')]
    long: bool,
    /// List subdirectories recursively.
    #[arg(short = 'R', long)]
    recursive: bool,
    /// With -l, sizes in powers of 1024 (K, M, G).
    #[arg(short = 'h', long = "human-readable")]
    human: bool,
    /// Print help.
    #[arg(long, action = clap::ArgAction::Help)]
    help: Option<bool>,
    /// Logical files or directories (default: the first mount point).
    paths: Vec<PathBuf>,
}

/// Arguments of `plfs stat`.
#[derive(Debug, Args)]
pub struct StatArgs {
    /// The logical file.
    file: PathBuf,
}

/// Arguments of `plfs cat`.
#[derive(Debug, Args)]
pub struct CatArgs {
    /// Logical files, written to standard output in order.
    #[arg(required = true)]
    files: Vec<PathBuf>,
}

fn kind_name(k: FileKind) -> &'static str {
    match k {
        FileKind::File => "file",
        FileKind::Dir => "directory",
        FileKind::Symlink => "symlink",
    }
}

/// How a regular file is stored (`None` for directories and symlinks, or if it cannot be told).
fn format_of(plfs: &Plfs, path: &Path, st: &Stat) -> Option<FileFormat> {
    if st.kind != FileKind::File {
        return None;
    }
    plfs.file_format(path).ok().flatten()
}

fn stat_json(plfs: &Plfs, path: &Path, st: &Stat) -> serde_json::Value {
    let format = format_of(plfs, path, st);
    json!({
        "path": path.display().to_string(),
        "format": format.as_ref().map(|f| f.to_string()),
        "legacy": format.as_ref().is_some_and(FileFormat::is_legacy),
        "kind": kind_name(st.kind),
        "mode": st.mode, "perm": format!("{:04o}", st.mode & 0o7777),
        "uid": st.uid, "gid": st.gid,
        "size": st.size, "blocks": st.blocks, "blksize": st.blksize,
        "atime_ns": st.atime_ns, "mtime_ns": st.mtime_ns, "ctime_ns": st.ctime_ns,
        "ino": st.ino, "dev": st.dev, "nlink": st.nlink,
    })
}

fn long_line(plfs: &Plfs, path: &Path, name: &str, st: &Stat, human: bool) -> String {
    let size = if human { human_iec(st.size) } else { st.size.to_string() };
    let mut s = format!(
        "{} {:>3} {:<8} {:<8} {:>12} {} {name}",
        mode_string(st.mode),
        st.nlink,
        user_name(st.uid),
        group_name(st.gid),
        size,
        format_time_short(st.mtime_ns)
    );
    if st.kind == FileKind::Symlink {
        if let Ok(t) = plfs.readlink(path) {
            s.push_str(&format!(" -> {}", Path::new(&t).display()));
        }
    }
    // Files written by PLFS 2.x are marked: they are read-only until `plfs upgrade`.
    if let Some(f) = format_of(plfs, path, st).filter(FileFormat::is_legacy) {
        s.push_str(&format!("  [{f}]"));
    }
    s
}

/// State of one `plfs ls` run.
struct Lister<'a> {
    plfs: &'a Plfs,
    a: &'a LsArgs,
    json: Vec<serde_json::Value>,
    /// A directory section was printed (the next one gets a blank line first).
    sections: usize,
    /// Directory headings are printed (several operands, or -R).
    headings: bool,
    failed: bool,
}

impl Lister<'_> {
    fn entry(&mut self, full: &Path, name: &str, st: Option<&Stat>) {
        if crate::out::json_mode() {
            if let Some(st) = st {
                let mut v = stat_json(self.plfs, full, st);
                v["name"] = json!(name);
                self.json.push(v);
            }
        } else if self.a.long {
            if let Some(st) = st {
                outln!("{}", long_line(self.plfs, full, name, st, self.a.human));
            }
        } else {
            outln!("{name}");
        }
    }

    /// Lists directory `path`, and with -R its subdirectories after it.
    fn dir(&mut self, path: &Path) -> Result<()> {
        let entries = self.plfs.readdir(path).at("cannot read directory", path)?;
        if self.headings && !crate::out::json_mode() {
            if self.sections > 0 {
                outln!();
            }
            outln!("{}:", path.display());
        }
        self.sections += 1;
        let need_stat = self.a.long || crate::out::json_mode();
        let mut subdirs = Vec::new();
        for e in entries {
            let full = path.join(&e.name);
            // An entry removed since readdir is skipped, as ls does.
            let st = if need_stat {
                match self.plfs.stat(&full) {
                    Ok(st) => Some(st),
                    Err(_) => continue,
                }
            } else {
                None
            };
            let name = String::from_utf8_lossy(e.name.as_bytes()).into_owned();
            self.entry(&full, &name, st.as_ref());
            if self.a.recursive && e.kind == FileKind::Dir {
                subdirs.push(full);
            }
        }
        for d in subdirs {
            if let Err(e) = self.dir(&d) {
                crate::fail::report(&e, crate::out::EXIT_FAILURE);
                self.failed = true;
            }
        }
        Ok(())
    }
}

/// Runs `plfs ls`.
pub fn ls(cli: &Globals, a: &LsArgs) -> Result<()> {
    let plfs = open_plfs(cli)?;
    let paths: Vec<PathBuf> = if a.paths.is_empty() {
        let m = plfs
            .config()
            .mounts
            .first()
            .context("the configuration has no mount point")?;
        vec![m.mount_point.clone()]
    } else {
        a.paths.iter().map(|p| absolute(p)).collect::<Result<_>>()?
    };
    let mut l = Lister {
        plfs: &plfs,
        a,
        json: Vec::new(),
        sections: 0,
        headings: paths.len() > 1 || a.recursive,
        failed: false,
    };
    // Files first, then directories (as ls does).
    let mut dirs = Vec::new();
    for path in &paths {
        let r = require_plfs_path(&plfs, path).and_then(|()| plfs.stat(path).at("cannot access", path));
        match r {
            Ok(st) if st.kind == FileKind::Dir => dirs.push(path.clone()),
            Ok(st) => {
                let name = path.display().to_string();
                l.entry(path, &name, Some(&st));
                l.sections += 1;
            }
            Err(e) => {
                crate::fail::report(&e, crate::out::EXIT_FAILURE);
                l.failed = true;
            }
        }
    }
    for d in &dirs {
        if let Err(e) = l.dir(d) {
            crate::fail::report(&e, crate::out::EXIT_FAILURE);
            l.failed = true;
        }
    }
    if crate::out::json_mode() {
        crate::out::json(&json!(l.json));
    }
    if l.failed {
        return Err(Reported.into());
    }
    Ok(())
}

/// Runs `plfs stat`.
pub fn stat(cli: &Globals, a: &StatArgs) -> Result<()> {
    let plfs = open_plfs(cli)?;
    let path = absolute(&a.file)?;
    require_plfs_path(&plfs, &path)?;
    let st = plfs.stat(&path).at("cannot stat", &path)?;
    // Space accounting of a file with logs of its own (an N-1 container).
    let usage = match st.kind {
        FileKind::File => plfs_core::compact::usage(&plfs, &path).at("cannot measure", &path)?,
        _ => None,
    };
    if crate::out::json_mode() {
        let mut v = stat_json(&plfs, &path, &st);
        v["usage"] = usage
            .as_ref()
            .map_or(serde_json::Value::Null, crate::compact_cmd::usage_json);
        crate::out::json(&v);
        return Ok(());
    }
    outln!("  path: {}", path.display());
    outln!("  kind: {}", kind_name(st.kind));
    if st.kind == FileKind::File {
        let f = plfs.file_format(&path).at("cannot stat", &path)?;
        if let Some(f) = f {
            outln!("format: {f}");
        }
    }
    outln!("  mode: {:06o} ({})", st.mode, mode_string(st.mode));
    outln!("   uid: {} ({})", st.uid, user_name(st.uid));
    outln!("   gid: {} ({})", st.gid, group_name(st.gid));
    outln!("  size: {}", st.size);
    outln!("blocks: {} (512-byte)", st.blocks);
    outln!("blksize: {}", st.blksize);
    outln!(" atime: {}", format_time(st.atime_ns));
    outln!(" mtime: {}", format_time(st.mtime_ns));
    outln!(" ctime: {}", format_time(st.ctime_ns));
    outln!("   ino: {}", st.ino);
    outln!("   dev: {}", st.dev);
    outln!(" nlink: {}", st.nlink);
    if let Some(u) = usage {
        outln!(
            "physical: {} in {}, {} in meta/",
            plural(u.physical, "byte", "bytes"),
            plural(u.logs, "log", "logs"),
            plural(u.meta_files, "file", "files")
        );
        outln!(
            "    live: {} of {} data bytes (dead {:.1}%)",
            u.live,
            u.data,
            u.dead_ratio() * 100.0
        );
        if u.pending > 0 {
            outln!(
                " pending: {} bytes of retired logs wait for readers to close",
                u.pending
            );
        }
    }
    Ok(())
}

const READ_ONLY: OpenFlags = OpenFlags {
    read: true,
    write: false,
    create: false,
    excl: false,
    trunc: false,
    append: false,
};

/// Runs `plfs cat`: the files' bytes on standard output (`--json` changes only the errors).
pub fn cat(cli: &Globals, a: &CatArgs) -> Result<()> {
    let plfs = open_plfs(cli)?;
    let mut buf = vec![0u8; BUF_SIZE];
    for f in &a.files {
        let path = absolute(f)?;
        require_plfs_path(&plfs, &path)?;
        let file = plfs
            .open(&path, READ_ONLY, 0, std::process::id())
            .at("cannot open", &path)?;
        let mut off = 0u64;
        loop {
            let n = file.read(&mut buf, off).at("cannot read", &path)?;
            if n == 0 {
                break;
            }
            crate::out::bytes(&buf[..n]);
            off += n as u64;
        }
        file.close().at("cannot close", &path)?;
    }
    Ok(())
}
