//! fsck of a 1-N directory's packed logs (docs/format.md §11, "Damage"): damaged records
//! (bytes that are not whole records, followed by whole records), reported with the file each
//! may have changed, for a person to decide (readers answer `EIO` for what it may have
//! changed); and torn tails (an append cut short by a crash, or a log cut by hand): cut back to
//! the last whole record by `--repair` once no process appends to the log.

use super::report::{repair_step, Kind, Options, Repair, Report};
use crate::error::Result;
use crate::format::small as fmt;
use crate::layout::small::SmallDir;
use crate::mount::Mount;
use crate::sys::{Access, Umask};
use std::path::Path;
use std::sync::Arc;

/// Checks the packed logs of directory `rel` (called once per directory, from the first
/// backend that has a store).
pub(super) fn check(mount: &Arc<Mount>, rel: &Path, opts: &Options, rep: &mut Report) -> Result<()> {
    let view = SmallDir::new(mount.clone(), rel.to_path_buf(), Umask::Given(0o022));
    let (stretches, torn) = view.damage()?;
    let logical = mount.cfg.mount_point.join(rel);
    for (s, name) in stretches {
        let hit = match (&name, s.names) {
            (Some(n), false) => format!("it may have changed {}", logical.join(n).display()),
            (Some(n), true) => format!(
                "it may have changed {} and created, renamed or unlinked names of {}",
                logical.join(n).display(),
                logical.display()
            ),
            (None, _) => format!(
                "it may have created, renamed or unlinked names of {}",
                logical.display()
            ),
        };
        let msg = format!(
            "{} damaged bytes at byte {} ({}): {hit}; the records after them still count",
            s.at.len, s.at.at, s.at.why
        );
        let what = "readers answer EIO for what it may have changed: copy out what reads, remove the file it hit (rm), then plfs compact the directory";
        rep.push(
            Kind::DamagedPackedRecords,
            true,
            &s.log,
            msg,
            Repair::Manual(what.into()),
        );
    }
    for (log, at) in torn {
        cut_torn(mount, rel, &log, at, opts, rep)?;
    }
    Ok(())
}

/// Reports the torn tail of `log` (starting at byte `at`) and, with `--repair`, cuts it off,
/// unless a process still appends to the log (it holds its shared flock: the tail may be an
/// append in flight).
fn cut_torn(mount: &Mount, rel: &Path, log: &Path, at: u64, opts: &Options, rep: &mut Report) -> Result<()> {
    let store_rel = rel.join(fmt::SMALL_DIR);
    for b in &mount.canonical {
        let Some(store) = b.dir_opt(&store_rel)? else { continue };
        let Some(name) = log.file_name().filter(|_| log.parent() == Some(store.path())) else {
            continue;
        };
        let Some(f) = store.open_file_opt(name, Access::Write)? else {
            return Ok(());
        };
        if f.try_lock_exclusive()? == Some(false) {
            return Ok(());
        }
        let msg = format!("ends in a torn record at byte {at} (an append cut short): readers take the log up to it");
        let r = repair_step(opts, format!("cut the log to {at} bytes"), || f.truncate(at));
        rep.push(Kind::TornPackedTail, true, log, msg, r);
        return Ok(());
    }
    Ok(())
}
