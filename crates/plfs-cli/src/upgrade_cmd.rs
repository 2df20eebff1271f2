//! `plfs upgrade FILE|DIR...`: converts files written by PLFS 2.x, and format 2 containers of this
//! library, to this format, in place
//! (`plfs_core::upgrade`: built beside the original, verified byte for byte, swapped in one
//! rename), with a progress bar on a terminal. A file of a PLFS 2.x 1-N directory converts its
//! whole directory (the old logs are shared by all its files).

use crate::fail::{CoreContext, Failure, Reported};
use crate::globals::Globals;
use crate::progress::Progress;
use crate::util::{absolute, human_bytes, open_plfs, require_plfs_path};
use anyhow::Result;
use clap::Args;
use plfs_core::upgrade::{self, Target, Upgraded};
use plfs_core::{FileKind, Plfs};
use serde_json::json;
use std::path::{Path, PathBuf};

/// Arguments of `plfs upgrade`.
#[derive(Debug, Args)]
pub struct UpgradeArgs {
    /// Logical files, or directories to convert every PLFS 2.x file and format 2 container under.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
}

/// Every file written by PLFS 2.x (or 1-N directory of them), and every format 2 container, at or
/// under `path`.
fn targets(plfs: &Plfs, path: &Path, out: &mut Vec<Target>) -> Result<()> {
    let st = plfs.stat(path).at("cannot stat", path)?;
    match st.kind {
        FileKind::Dir => {
            for e in plfs.readdir(path).at("cannot read directory", path)? {
                targets(plfs, &path.join(&e.name), out)?;
            }
        }
        FileKind::File => {
            if let Some(t) = upgrade::target(plfs, path).at("cannot upgrade", path)? {
                if !out.contains(&t) {
                    out.push(t);
                }
            }
        }
        FileKind::Symlink => {}
    }
    Ok(())
}

/// Runs `plfs upgrade`.
pub fn upgrade(cli: &Globals, a: &UpgradeArgs) -> Result<()> {
    let plfs = open_plfs(cli)?;
    let mut todo = Vec::new();
    for p in &a.paths {
        let path = absolute(p)?;
        require_plfs_path(&plfs, &path)?;
        let before = todo.len();
        targets(&plfs, &path, &mut todo)?;
        let is_file = plfs.stat(&path).is_ok_and(|s| s.kind == FileKind::File);
        if todo.len() == before && is_file {
            let e = Failure::new(
                &path,
                22,
                format!(
                    "{}: not a file written by PLFS 2.x, nor a format 2 container",
                    path.display()
                ),
            );
            return Err(e.into());
        }
    }
    let mut done: Vec<Upgraded> = Vec::new();
    let mut failed = false;
    for t in &todo {
        let (Target::Container(f) | Target::SmallDir(f)) = t;
        let bar = std::cell::RefCell::new(None::<Progress>);
        let mut seen = 0u64;
        let mut progress = |d: u64, total: u64| {
            let mut b = bar.borrow_mut();
            let p = b.get_or_insert_with(|| Progress::bytes(total, &format!("upgrading {}", f.display())));
            p.inc(d.saturating_sub(seen));
            seen = d;
        };
        let r = match t {
            Target::Container(_) => upgrade::upgrade(&plfs, f, &mut progress).map(|u| vec![u]),
            Target::SmallDir(_) => upgrade::upgrade_small_dir(&plfs, f, &mut progress),
        };
        drop(bar);
        match r.at("cannot upgrade", f) {
            Ok(ups) => {
                for u in &ups {
                    outln!(
                        "{}: upgraded to format v{} ({} bytes, {} of data copied and verified)",
                        u.logical.display(),
                        plfs_core::FORMAT_VERSION,
                        u.size,
                        human_bytes(u.copied)
                    );
                }
                done.extend(ups);
            }
            Err(e) => {
                crate::fail::report(&e, crate::out::EXIT_FAILURE);
                failed = true;
            }
        }
    }
    if crate::out::json_mode() {
        let files: Vec<_> = done
            .iter()
            .map(|u| json!({ "path": u.logical.display().to_string(), "size": u.size, "copied_bytes": u.copied }))
            .collect();
        crate::out::json(&json!({
            "format_version": plfs_core::FORMAT_VERSION, "upgraded": files,
        }));
    } else if todo.is_empty() {
        outln!("no files written by PLFS 2.x or in format 2 found");
    }
    if failed {
        return Err(Reported.into());
    }
    Ok(())
}
