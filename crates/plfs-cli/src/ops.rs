//! Namespace commands: `plfs mkdir`, `plfs rm` and `plfs mv`. Like their coreutils namesakes, they
//! print nothing on success (a JSON array under `--json`), report each failing operand and go on
//! with the others, and exit 1 if any failed.

use crate::copy::{Copier, Kind, Policy, PolicyArgs, Side, Summary};
use crate::fail::{CoreContext, Failure, Reported};
use crate::globals::Globals;
use crate::progress::Progress;
use crate::util::{absolute, open_plfs, require_plfs_path, trailing_slash};
use anyhow::Result;
use clap::Args;
use plfs_core::{FileKind, Plfs};
use serde_json::json;
use std::path::{Path, PathBuf};

const EISDIR: i32 = 21;
const ENOTDIR: i32 = 20;
const EBUSY: i32 = 16;
const EXDEV: i32 = 18;

/// Arguments of `plfs mkdir`.
#[derive(Debug, Args)]
pub struct MkdirArgs {
    /// Make parent directories as needed; no error if a directory exists.
    #[arg(short = 'p', long)]
    parents: bool,
    /// Permission bits of the new directories (octal; default 0777 less the umask).
    #[arg(short = 'm', long, value_parser = parse_mode)]
    mode: Option<u32>,
    /// Directories under a PLFS mount point.
    #[arg(required = true)]
    dirs: Vec<PathBuf>,
}

/// Arguments of `plfs rm`.
#[derive(Debug, Args)]
pub struct RmArgs {
    /// Remove directories and everything below them.
    #[arg(short = 'r', short_alias = 'R', long)]
    recursive: bool,
    /// Ignore paths that do not exist.
    #[arg(short = 'f', long)]
    force: bool,
    /// Files (and with -r, directories) under a PLFS mount point.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
}

/// Arguments of `plfs mv`.
#[derive(Debug, Args)]
pub struct MvArgs {
    #[command(flatten)]
    policy: PolicyArgs,
    /// Sources, then the destination (a directory when there are several sources). Within one
    /// mount point a move is a rename; otherwise (plain <-> PLFS, or between mount points) the
    /// tree is copied and the source removed.
    #[arg(required = true, num_args = 2.., value_name = "PATH")]
    paths: Vec<PathBuf>,
}

fn parse_mode(s: &str) -> Result<u32, String> {
    match u32::from_str_radix(s, 8) {
        Ok(m) if m <= 0o7777 => Ok(m),
        _ => Err(format!("{s:?}: expected an octal mode such as 755")),
    }
}

/// Runs `f` for each operand, reporting failures; the JSON values of the successes are printed
/// as one array. Fails with [`Reported`] if any operand failed.
fn each<T>(items: &[T], mut f: impl FnMut(&T) -> Result<Vec<serde_json::Value>>) -> Result<()> {
    let mut out = Vec::new();
    let mut failed = false;
    for it in items {
        match f(it) {
            Ok(v) => out.extend(v),
            Err(e) => {
                crate::fail::report(&e, crate::out::EXIT_FAILURE);
                failed = true;
            }
        }
    }
    if crate::out::json_mode() {
        crate::out::json(&json!(out));
    }
    if failed {
        return Err(Reported.into());
    }
    Ok(())
}

/// Runs `plfs mkdir`.
pub fn mkdir(cli: &Globals, a: &MkdirArgs) -> Result<()> {
    let plfs = open_plfs(cli)?;
    let mode = a.mode.unwrap_or(0o777);
    each(&a.dirs, |d| {
        let path = absolute(d)?;
        require_plfs_path(&plfs, &path)?;
        let mut made = Vec::new();
        if a.parents {
            let root = plfs.resolve(&path).at("cannot create directory", &path)?;
            let mut cur = root.mount.cfg.mount_point.clone();
            for c in root.rel.components() {
                cur.push(c);
                match plfs.stat(&cur) {
                    Ok(st) if st.kind == FileKind::Dir => continue,
                    Ok(_) => {
                        return Err(Failure::new(
                            &cur,
                            ENOTDIR,
                            format!(
                                "cannot create directory {}: {} is not a directory",
                                path.display(),
                                cur.display()
                            ),
                        )
                        .into())
                    }
                    Err(e) if e.is_not_found() => {}
                    Err(e) => return Err(Failure::core("cannot create directory", &cur, e).into()),
                }
                plfs.mkdir(&cur, mode).at("cannot create directory", &cur)?;
                made.push(cur.clone());
            }
        } else {
            plfs.mkdir(&path, mode).at("cannot create directory", &path)?;
            made.push(path.clone());
        }
        if a.mode.is_some() {
            for m in &made {
                plfs.chmod(m, mode).at("cannot set the mode of", m)?;
            }
        }
        Ok(made
            .iter()
            .map(|m| json!({"path": m.display().to_string(), "created": true}))
            .collect())
    })
}

/// Removes a file, or a directory tree when `recursive`; returns the entries removed.
pub fn remove(side: Side, p: &Path, recursive: bool) -> Result<u64> {
    let m = side.stat(p, false)?.ok_or_else(|| {
        Failure::new(
            p,
            2,
            format!("cannot remove {}: {}", p.display(), crate::fail::strerror(2)),
        )
    })?;
    if m.kind != Kind::Dir {
        side.unlink(p)?;
        return Ok(1);
    }
    if !recursive {
        return Err(Failure::new(
            p,
            EISDIR,
            format!("cannot remove {}: is a directory (use -r)", p.display()),
        )
        .into());
    }
    let mut n = 0;
    for name in side.list(p)? {
        n += remove(side, &p.join(name), true)?;
    }
    side.rmdir(p)?;
    Ok(n + 1)
}

/// Runs `plfs rm`.
pub fn rm(cli: &Globals, a: &RmArgs) -> Result<()> {
    let plfs = open_plfs(cli)?;
    each(&a.paths, |p| {
        let path = absolute(p)?;
        require_plfs_path(&plfs, &path)?;
        let loc = plfs.resolve(&path).at("cannot remove", &path)?;
        if loc.rel.as_os_str().is_empty() {
            return Err(Failure::new(
                &path,
                EBUSY,
                format!("cannot remove {}: it is a mount point", path.display()),
            )
            .into());
        }
        let side = Side::Plfs(&plfs);
        let kind = match side.stat(&path, false)? {
            None if a.force => return Ok(Vec::new()),
            None => {
                return Err(Failure::new(
                    &path,
                    2,
                    format!("cannot remove {}: {}", path.display(), crate::fail::strerror(2)),
                )
                .into())
            }
            Some(m) => m.kind,
        };
        let n = remove(side, &path, a.recursive)?;
        Ok(vec![json!({
            "path": path.display().to_string(),
            "kind": if kind == Kind::Dir { "directory" } else { "file" },
            "removed": n,
        })])
    })
}

/// Moves one source to `target` (the final name).
fn move_one(plfs: &Plfs, from: (Side, &Path), to: (Side, &Path), policy: Policy) -> Result<serde_json::Value> {
    let (fs, src) = from;
    let (ts, dst) = to;
    let m = fs.stat(src, false)?.ok_or_else(|| {
        Failure::new(
            src,
            2,
            format!("cannot move {}: {}", src.display(), crate::fail::strerror(2)),
        )
    })?;
    let existing = ts.stat(dst, false)?;
    if let Some(e) = existing {
        if e.kind != Kind::Dir || m.kind != Kind::Dir {
            match policy {
                Policy::Skip => {
                    return Ok(
                        json!({"src": src.display().to_string(), "dst": dst.display().to_string(), "how": "skipped"}),
                    )
                }
                Policy::Refuse => {
                    return Err(Failure::new(
                        dst,
                        17,
                        format!(
                            "{} already exists (use -f to overwrite it, -n to skip it)",
                            dst.display()
                        ),
                    )
                    .into())
                }
                Policy::Force => {}
            }
        }
    }
    if let (Side::Plfs(_), Side::Plfs(_)) = (fs, ts) {
        match plfs.rename(src, dst) {
            Ok(()) => {
                return Ok(json!({"src": src.display().to_string(), "dst": dst.display().to_string(), "how": "rename"}))
            }
            Err(e) if e.raw_errno() == EXDEV => {}
            Err(e) => return Err(Failure::core("cannot move", src, e).into()),
        }
    }
    // Across file systems: copy, then remove the source.
    // mv keeps times, as mv(1) does across file systems.
    let mut c = Copier::new(fs, ts, policy, true, true);
    c.workers = crate::copy::default_jobs();
    if crate::out::progress_wanted() {
        let total = c.total_bytes(src, false);
        c.progress = Progress::bytes(total, &src.display().to_string());
    }
    let mut sum = Summary::default();
    c.run(src, dst, false, &mut sum)?;
    if c.failed || sum.failed || sum.skipped > 0 {
        return Err(Failure::new(
            src,
            5,
            format!(
                "{} was not moved completely; the source is left in place",
                src.display()
            ),
        )
        .into());
    }
    drop(c);
    remove(fs, src, true)?;
    Ok(json!({"src": src.display().to_string(), "dst": dst.display().to_string(), "how": "copy", "bytes": sum.bytes}))
}

/// Runs `plfs mv`.
pub fn mv(cli: &Globals, a: &MvArgs) -> Result<()> {
    let plfs = open_plfs(cli)?;
    let (srcs, dst) = a.paths.split_at(a.paths.len() - 1);
    let (ts, dst) = Side::of(&plfs, &dst[0])?;
    let dst_meta = ts.stat(&dst, true)?;
    let dst_is_dir = dst_meta.is_some_and(|m| m.kind == Kind::Dir) || (dst_meta.is_none() && trailing_slash(&dst));
    if srcs.len() > 1 && !dst_is_dir {
        return Err(Failure::new(&dst, ENOTDIR, format!("target {} is not a directory", dst.display())).into());
    }
    let srcs = srcs.iter().map(|s| Side::of(&plfs, s)).collect::<Result<Vec<_>>>()?;
    each(&srcs, |(fs, src)| {
        let target = if dst_is_dir {
            let name = src
                .file_name()
                .ok_or_else(|| Failure::new(src, 22, format!("{}: has no file name", src.display())))?;
            dst.join(name)
        } else {
            dst.clone()
        };
        if let Side::Plfs(_) = fs {
            if plfs.resolve(src).at("cannot move", src)?.rel.as_os_str().is_empty() {
                return Err(Failure::new(
                    src,
                    EBUSY,
                    format!("cannot move {}: it is a mount point", src.display()),
                )
                .into());
            }
        }
        let v = move_one(&plfs, (*fs, src), (ts, &target), a.policy.policy())?;
        Ok(vec![v])
    })
}
