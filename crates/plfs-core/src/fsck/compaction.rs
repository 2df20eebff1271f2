//! fsck of a container's compaction state (docs/design.md, "Compaction"; docs/format.md §14):
//!
//! - a **committed journal** left by a compaction that died during its roll-forward: finished
//!   (the new logs published, the old ones retired: every step is idempotent);
//! - **unpublished logs** (`.plfstmp.cmp.*` in a hostdir, no committed journal naming them) of a
//!   compaction that died before committing: removed (the old logs were never touched);
//! - **retired data logs** waiting for the last reader (a pending journal): deleted when no
//!   process has the file open;
//! - an undecodable journal: removed (nothing is lost: retired data logs then show as orphan
//!   data logs, an unpublished new log as debris, a published one as a writer to settle).
//!
//! A running compaction holds the container's `meta/` directory locked: fsck then reports it
//! and touches nothing of it.

use super::report::{repair_step, Kind, Options, Repair, Report};
use crate::container::Container;
use crate::error::Result;
use crate::format::compact::{self as cf};
use crate::format::{self};
use crate::layout::n1::journal;
use crate::layout::small::compact::{leftovers, Leftover};
use crate::mount::Mount;
use crate::sys::Dir;
use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

/// What the writer checks of a container must leave alone: the files of a compaction (names in
/// its hostdirs) and the writers it is retiring or creating (their logs and droppings are in
/// between two consistent states until the roll-forward finishes).
#[derive(Debug, Default)]
pub(super) struct Skip {
    pub names: HashSet<String>,
    pub writers: HashSet<u64>,
}

/// Checks (and with `--repair` finishes or undoes) the compaction state of container `c`.
pub(super) fn check(c: &Container, opts: &Options, rep: &mut Report) -> Result<Skip> {
    let mut skip = Skip::default();
    let jpath = c.sub(cf::JOURNAL_NAME);
    let logs = journal::all_logs(c)?;
    let tmp: Vec<(String, u64)> = logs
        .keys()
        .filter_map(|n| cf::parse_tmp_name(n).map(|id| (n.clone(), id)))
        .collect();
    let has_journal = c.dir.stat_opt(cf::JOURNAL_NAME)?.is_some();
    if tmp.is_empty() && !has_journal {
        return Ok(skip);
    }
    // A one-directory container makes its lock file at its first compaction: a check that
    // repairs nothing makes none, and takes a missing one for free.
    let meta = c.compaction_lock(opts.repair)?;
    if !meta.as_ref().map_or(Ok(true), |m| m.try_exclusive())? {
        skip.names.extend(tmp.iter().map(|(n, _)| n.clone()));
        if let Ok(Some(j)) = journal::read(c) {
            skip_journal(&j, &mut skip);
        }
        let msg = "a compaction is running (it holds the compaction lock); its files are left alone".to_string();
        rep.push(Kind::CompactionRunning, false, c.path(), msg, Repair::None);
        return Ok(skip);
    }
    let j = match journal::read(c) {
        Ok(j) => j,
        Err(e) => {
            let repair = repair_step(
                opts,
                "removed it (the logs it names are checked as ordinary logs)",
                || journal::remove(c),
            );
            rep.push(Kind::BadJournal, true, &jpath, e.to_string(), repair);
            None
        }
    };
    let committed = j.as_ref().filter(|j| j.state == cf::STATE_COMMITTED);
    // Unpublished new logs of a compaction that never committed.
    for (n, id) in &tmp {
        if committed.is_some_and(|j| j.writer_id == *id) {
            continue;
        }
        let d = logs[n].clone();
        let repair = repair_step(
            opts,
            "removed it (the compaction never committed; the old logs are intact)",
            || d.unlink_opt(n).map(drop),
        );
        let msg = "an unpublished log of an interrupted compaction".to_string();
        rep.push(Kind::InterruptedCompaction, true, d.sub(n), msg, repair);
    }
    let Some(j) = j else { return Ok(skip) };
    let mut pending: Vec<String> = j.names(cf::E_PENDING).map(str::to_string).collect();
    if j.state == cf::STATE_COMMITTED {
        let mut rolled = None;
        let repair = repair_step(
            opts,
            "finished it: published the new log and retired the old ones",
            || {
                let p = journal::roll_forward(c, &j)?;
                journal::settle(c, &j, p.clone())?;
                rolled = Some(p);
                Ok(())
            },
        );
        let msg = format!(
            "a compaction committed but did not finish retiring {} log(s)",
            j.names(cf::E_RETIRED).count()
        );
        rep.push(Kind::InterruptedCompaction, true, &jpath, msg, repair);
        match rolled {
            Some(p) => pending = p,
            None => {
                skip_journal(&j, &mut skip);
                return Ok(skip);
            }
        }
    }
    skip.names.extend(pending.iter().cloned());
    if pending.is_empty() {
        if opts.repair {
            journal::remove(c)?;
        }
        return Ok(skip);
    }
    let bytes = journal::pending_bytes(c, &pending)?;
    // No process has the file open if its directory can be locked exclusively (through a
    // descriptor of our own, released when it is dropped).
    let exclusive = match c.dir.current_path() {
        Some(p) => {
            let d = Dir::open(&p)?;
            d.try_lock_exclusive()?.then_some(d)
        }
        None => None,
    };
    let repair = match &exclusive {
        Some(_) => repair_step(opts, format!("deleted them ({bytes} bytes)"), || {
            journal::delete_pending(c, &pending)?;
            journal::remove(c)
        }),
        None => Repair::Manual("a process has the file open; its last close deletes them".into()),
    };
    let msg = format!(
        "{} data log(s) retired by a compaction ({bytes} bytes) wait for the file's readers to close",
        pending.len()
    );
    rep.push(Kind::RetiredDataLogs, false, &jpath, msg, repair);
    Ok(skip)
}

/// Adds what journal `j` is in the middle of to `skip`.
fn skip_journal(j: &cf::Journal, skip: &mut Skip) {
    skip.names.extend(j.names(cf::E_PENDING).map(str::to_string));
    if j.state != cf::STATE_COMMITTED {
        return;
    }
    skip.names.insert(cf::tmp_data_name(j.writer_id));
    skip.names.insert(cf::tmp_index_name(j.writer_id));
    skip.writers.insert(j.writer_id);
    for r in j.names(cf::E_RETIRED) {
        skip.names.insert(r.to_string());
        skip.names.extend(journal::index_name_of(r));
        if let Some(l) = format::parse_log_name(r) {
            skip.writers.insert(l.writer_id);
        }
    }
}

/// The compaction leftovers of the 1-N directory `dir` (on canonical backend `b`, which has a
/// `.plfs_small` store): a committed journal (finished by `--repair`), an unpublished new log
/// (removed), an undecodable journal (removed). Checked once per directory, from the first
/// backend that has a store.
pub(super) fn check_store(mount: &Arc<Mount>, b: usize, dir: &Dir, opts: &Options, rep: &mut Report) -> Result<()> {
    let Ok(rel) = dir.path().strip_prefix(&mount.canonical[b].path) else {
        return Ok(());
    };
    let store = rel.join(format::small::SMALL_DIR);
    for earlier in &mount.canonical[..b] {
        if earlier.dir_opt(&store)?.is_some() {
            return Ok(());
        }
    }
    check_leftovers(mount, rel, dir, opts, rep)?;
    // Then the logs, as the leftovers' repair left them.
    super::packed::check(mount, rel, opts, rep)
}

fn check_leftovers(mount: &Mount, rel: &Path, dir: &Dir, opts: &Options, rep: &mut Report) -> Result<()> {
    let Some(found) = leftovers(mount, rel, false)? else {
        let msg = "a compaction of this directory's packed logs is running".to_string();
        rep.push(
            Kind::CompactionRunning,
            false,
            dir.sub(format::small::SMALL_DIR),
            msg,
            Repair::None,
        );
        return Ok(());
    };
    if found.is_empty() {
        return Ok(());
    }
    let repair = repair_step(opts, "finished what was committed, removed what was not", || {
        leftovers(mount, rel, true).map(drop)
    });
    for f in found {
        let r = repair.clone();
        match f {
            Leftover::Committed(p) => {
                let msg = "a compaction of the packed logs committed but did not retire the old logs".into();
                rep.push(Kind::InterruptedCompaction, true, p, msg, r);
            }
            Leftover::Unpublished(p) => {
                let msg = "an unpublished log of an interrupted compaction of the packed logs, or of an interrupted `plfs upgrade` of a PLFS 2.x 1-N directory".into();
                rep.push(Kind::InterruptedCompaction, true, p, msg, r);
            }
            Leftover::Bad(p, e, true) => {
                let msg = format!("{e}; its compaction never published its new log: readers ignore it");
                rep.push(Kind::BadJournal, true, p, msg, r)
            }
            Leftover::Bad(p, e, false) => {
                let msg = format!(
                    "{e}; its compaction published its new log, and which old logs it retired is lost: \
                     the directory's files answer EIO (not repaired: restore the journal from a backup)"
                );
                rep.push(Kind::BadJournal, true, p, msg, Repair::None)
            }
        }
    }
    Ok(())
}
