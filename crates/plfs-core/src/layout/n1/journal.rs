//! The compaction journal of an N-1 container (docs/format.md §14): reading and writing it, the
//! roll-forward that publishes a committed compaction's new logs and retires the old ones, and
//! the deletion of retired data logs once no other process can be reading them.
//!
//! Every step of the roll-forward is idempotent, so whoever finds a committed journal (the next
//! compaction, the last process to close the file, `plfs fsck --repair`) simply runs it again.
//! The order of the steps is what makes every intermediate state read the same bytes:
//!
//! 1. publish the new logs (data log first, then index log: a data log alone is never read);
//! 2. add the new log's close dropping;
//! 3. delete the retired writers' index logs (their records are in the new log, with the same
//!    timestamps, so a reader merging any subset of them with the new log reads the same bytes);
//! 4. remove their close droppings, the folded trunc droppings and the flattened index (only now:
//!    a trunc dropping removed while an index log that it clips still existed could let old bytes
//!    reappear);
//! 5. the retired data logs become *pending*: deleted at once when no other process has the file
//!    open, else by the last one to close it (its shared flock tells), by the next compaction or
//!    by fsck.

use crate::container::Container;
use crate::container::DirExt;
use crate::error::{Error, Result};
use crate::format::compact::{self as cf, Journal};
use crate::format::{self, MetaDropping};
use crate::sys::{self, Access, Dir};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// Reads the container's journal, if there is one.
pub(crate) fn read(c: &Container) -> Result<Option<Journal>> {
    let Some(f) = c.dir.open_file_opt(cf::JOURNAL_NAME, Access::Read)? else {
        return Ok(None);
    };
    let b = f.read_from(0)?;
    Ok(Some(Journal::decode(&c.sub(cf::JOURNAL_NAME), &b)?))
}

/// Writes the journal atomically and makes its name durable (the commit point of a compaction).
pub(crate) fn write(c: &Container, j: &Journal) -> Result<()> {
    c.dir.write_atomic(cf::JOURNAL_NAME, &j.encode(), 0o644)?;
    c.dir.fsync()
}

/// Removes the journal (missing is fine).
pub(crate) fn remove(c: &Container) -> Result<()> {
    c.dir.unlink_opt(cf::JOURNAL_NAME).map(drop)
}

/// Every entry of every hostdir of the container (here and on shadow backends): name → the
/// hostdir holding it.
pub(crate) fn all_logs(c: &Container) -> Result<HashMap<String, Arc<Dir>>> {
    let mut out = HashMap::new();
    for hd in c.hostdirs()? {
        for n in hd.list()? {
            if let Some(s) = n.to_str() {
                out.insert(s.to_string(), hd.clone());
            }
        }
    }
    Ok(out)
}

/// `index.<rest>` for a data log named `data.<rest>`.
pub(crate) fn index_name_of(data_name: &str) -> Option<String> {
    let info = format::parse_log_name(data_name).filter(|l| !l.is_index)?;
    Some(format::index_log_name(info.writer_id, info.pid, &info.host))
}

/// Runs (again) the roll-forward of a committed journal; returns every data log now pending.
pub(crate) fn roll_forward(c: &Container, j: &Journal) -> Result<Vec<String>> {
    let jpath = c.sub(cf::JOURNAL_NAME);
    let retired: Vec<&str> = j.names(cf::E_RETIRED).collect();
    let mut ids = HashSet::new();
    for r in &retired {
        let info = format::parse_log_name(r)
            .filter(|l| !l.is_index)
            .ok_or_else(|| Error::corrupt(&jpath, format!("retired entry {r:?} is not a data log name")))?;
        ids.insert(info.writer_id);
    }
    let mut logs = all_logs(c)?;
    // 1. Publish the new logs.
    if let Some(data) = j.names(cf::E_NEW_LOG).next() {
        let index = index_name_of(data)
            .ok_or_else(|| Error::corrupt(&jpath, format!("new log {data:?} is not a data log name")))?;
        let mut dirs = Vec::new();
        for (tmp, fin) in [
            (cf::tmp_data_name(j.writer_id), data.to_string()),
            (cf::tmp_index_name(j.writer_id), index.clone()),
        ] {
            if let Some(d) = logs.get(&tmp).cloned() {
                if !logs.contains_key(&fin) {
                    match d.rename(&tmp, &d, &fin) {
                        Ok(()) => {}
                        // Published meanwhile by someone else finishing the same journal.
                        Err(e) if sys::is_missing(&e) => {}
                        Err(e) => return Err(e),
                    }
                } else {
                    d.unlink_opt(&tmp)?;
                }
                logs.insert(fin.clone(), d.clone());
                dirs.push(d);
            }
        }
        if !logs.contains_key(data) || !logs.contains_key(&index) {
            // The new logs are gone (only a truncate to zero removes them, and it removes the
            // journal too): retire nothing.
            let retired_gone = retired
                .iter()
                .any(|r| index_name_of(r).is_some_and(|i| !logs.contains_key(&i)));
            if retired_gone {
                let what = "its new log is missing but old logs were already retired: data of this file may be lost";
                return Err(Error::corrupt(&jpath, what));
            }
            crate::warn!(
                "{}: its new log is missing; the compaction is abandoned",
                jpath.display()
            );
            return Ok(j.names(cf::E_PENDING).map(str::to_string).collect());
        }
        for d in dirs {
            d.fsync()?;
        }
    }
    // 2. The new log's close dropping.
    if let Some(close) = j.names(cf::E_NEW_CLOSE).next() {
        let d = MetaDropping::parse(close)
            .ok_or_else(|| Error::corrupt(&jpath, format!("{close:?} is not a dropping name")))?;
        c.add_meta(&d)?;
    }
    // 3. The retired writers' index logs.
    for r in &retired {
        let index = index_name_of(r).expect("checked above");
        if let Some(d) = logs.get(&index) {
            d.unlink_opt(&index)?;
        }
    }
    // 4. Their close droppings, the folded truncs, the flattened index.
    for d in c.list_meta()? {
        if let MetaDropping::Close { writer_id, .. } = d {
            if ids.contains(&writer_id) {
                c.remove_meta(&d)?;
            }
        }
    }
    for t in j.names(cf::E_FOLDED) {
        match MetaDropping::parse(t) {
            Some(d @ MetaDropping::Trunc { .. }) => c.remove_meta(&d)?,
            _ => {
                return Err(Error::corrupt(
                    &jpath,
                    format!("folded entry {t:?} is not a trunc dropping"),
                ))
            }
        }
    }
    c.dir.unlink_opt(format::FLAT_NAME)?;
    // 5. What stays pending.
    let mut pending: Vec<String> = j.names(cf::E_PENDING).map(str::to_string).collect();
    for r in retired {
        if !pending.iter().any(|p| p == r) {
            pending.push(r.to_string());
        }
    }
    Ok(pending)
}

/// Deletes retired data logs (never one that still has an index log) and returns the bytes
/// freed. Only call this when no other process can be reading them.
pub(crate) fn delete_pending(c: &Container, names: &[String]) -> Result<u64> {
    let logs = all_logs(c)?;
    let mut freed = 0;
    for n in names {
        let Some(d) = logs.get(n) else { continue };
        match index_name_of(n) {
            Some(i) if !logs.contains_key(&i) => {}
            _ => {
                crate::warn!("{}: still indexed; not deleting it", d.sub(n).display());
                continue;
            }
        }
        freed += d.stat_opt(n)?.map_or(0, |s| s.st_size.max(0) as u64);
        d.unlink_opt(n)?;
    }
    Ok(freed)
}

/// Bytes of the pending data logs that still exist.
pub(crate) fn pending_bytes(c: &Container, names: &[String]) -> Result<u64> {
    let logs = all_logs(c)?;
    let mut total = 0;
    for n in names {
        if let Some(d) = logs.get(n) {
            total += d.stat_opt(n)?.map_or(0, |s| s.st_size.max(0) as u64);
        }
    }
    Ok(total)
}

/// Whether this process is the only one holding the container open (every flock on its
/// directory is ours), found without giving up our own lock. `false` when it cannot be told.
pub(crate) fn alone(c: &Container) -> bool {
    let Ok(st) = c.dir.fstat() else { return false };
    match sys::locks::flock_holders(st.st_dev, st.st_ino) {
        Some(h) => !h.is_empty() && h.iter().all(|&p| p == crate::clock::pid()),
        None => false,
    }
}

/// Leaves the journal describing only what is still pending (or removes it when nothing is).
pub(crate) fn settle(c: &Container, j: &Journal, pending: Vec<String>) -> Result<()> {
    if pending.is_empty() {
        return remove(c);
    }
    let p = Journal {
        state: cf::STATE_PENDING,
        writer_id: j.writer_id,
        created_ns: j.created_ns,
        entries: pending.into_iter().map(|n| (cf::E_PENDING, n)).collect(),
    };
    c.dir.write_atomic(cf::JOURNAL_NAME, &p.encode(), 0o644)
}

/// Whether the container has a compaction's journal (an error counts as yes: the last holder
/// then looks properly).
pub(crate) fn pending(c: &Container) -> bool {
    !matches!(c.dir.stat_opt(cf::JOURNAL_NAME), Ok(None))
}

/// At the last close of the file by any process (its shared flock became exclusive): finishes a
/// journal left by a compaction and deletes the data logs it retired.
pub(crate) fn on_last_holder(c: &Container) {
    if let Err(e) = finish_exclusive(c) {
        crate::warn!("{e}: finishing a compaction");
    }
}

/// Finishes whatever a journal leaves to do, for a process that holds the container
/// exclusively (the last close, fsck): roll forward a committed compaction and delete every
/// pending data log. Returns the bytes freed; `Ok(None)` when there is no journal or another
/// compaction holds the container's compaction lock (`meta/`, or `compact.lock`).
pub(crate) fn finish_exclusive(c: &Container) -> Result<Option<u64>> {
    if c.dir.stat_opt(cf::JOURNAL_NAME)?.is_none() {
        return Ok(None);
    }
    // Made if missing: a journal without the lock is damage, and a compaction starting now
    // opens the same file.
    let meta = c.compaction_lock(true)?;
    if !meta.as_ref().map_or(Ok(true), |m| m.try_exclusive())? {
        return Ok(None);
    }
    let Some(j) = read(c)? else { return Ok(None) };
    let pending = if j.state == cf::STATE_COMMITTED {
        roll_forward(c, &j)?
    } else {
        j.names(cf::E_PENDING).map(str::to_string).collect()
    };
    let freed = delete_pending(c, &pending)?;
    remove(c)?;
    Ok(Some(freed))
}
