//! fsck of one writer's `meta/` droppings against what its index log holds: stale open records,
//! missing, duplicate or contradictory close records.

use super::index_log::IndexScan;
use super::liveness::Liveness;
use super::report::{repair_step, Kind, Repair, Report};
use super::writer::{LogFile, WriterCheck};
use crate::error::Result;
use crate::format::{self, MetaDropping};
use crate::sys::Dir;
use std::ffi::OsString;

/// Droppings among `names` (of `holder`, the directory that keeps them) that are not empty:
/// their name is all a dropping says, so bytes in one are not its writer's (reported; readers
/// go by the name).
pub(super) fn check_empty(holder: &Dir, names: &[OsString], rep: &mut Report) -> Result<()> {
    for n in names {
        let s = n.to_str();
        let dropping = s.is_some_and(|s| MetaDropping::parse(s).is_some() || format::parse_cid_dropping(s).is_some());
        if !dropping {
            continue;
        }
        if let Some(st) = holder.stat_opt(n)? {
            if st.st_size != 0 {
                let msg = format!("a dropping of {} bytes: droppings are empty", st.st_size);
                let repair = Repair::Manual("find what wrote into it; readers go by its name".into());
                rep.push(Kind::BadDropping, true, holder.sub(n), msg, repair);
            }
        }
    }
    Ok(())
}

/// The close record a writer would have written, computed from its index log.
fn computed_close(id: u64, open_ts: u64, scan: &IndexScan, data: Option<&LogFile>) -> MetaDropping {
    let eof = scan.records.iter().map(|r| r.logical_off + r.length).max().unwrap_or(0);
    let bytes = scan.records.iter().map(|r| r.length).sum();
    let close_ts = scan.records.iter().map(|r| r.ts).max().unwrap_or(open_ts).max(open_ts);
    let mtime_ns = data.map_or(close_ts, |d| d.mtime_ns.max(0) as u64);
    MetaDropping::Close {
        writer_id: id,
        open_ts,
        close_ts,
        eof,
        bytes,
        mtime_ns,
    }
}

/// Checks writer `ck`'s open and close records against its index log (`scan`, if it has one).
pub(super) fn check_droppings(ck: &WriterCheck, scan: Option<&IndexScan>, rep: &mut Report) {
    let (id, w) = (ck.id, ck.w);
    let records = scan.map_or(0, |s| s.records.len());
    let index_ok = scan.is_some_and(|s| matches!(s.header, Some(Ok(_))) && s.tail_error.is_none());
    let open_ts = w
        .closes
        .iter()
        .find_map(|d| match d {
            MetaDropping::Close { open_ts, .. } => Some(*open_ts),
            _ => None,
        })
        .or(ck.opened_ns)
        .unwrap_or_else(|| scan.and_then(|s| s.records.iter().map(|r| r.ts).min()).unwrap_or(1) - 1);
    let want = scan.map(|s| computed_close(id, open_ts, s, w.data.as_ref()));
    let new_close = want.clone().filter(|_| records > 0);
    if !w.opens.is_empty() {
        stale_open(ck, scan, index_ok, new_close.as_ref(), rep);
        return;
    }
    match (w.closes.len(), &new_close) {
        (0, Some(d)) => missing_close(ck, d, index_ok, records, rep),
        (0, None) => {}
        (n, _) if scan.is_none() => close_without_logs(ck, n, rep),
        (n, _) => {
            let Some(want) = want.as_ref() else { return };
            contradictory_closes(ck, n, want, scan, index_ok, rep);
        }
    }
}

/// Replaces the writer's close records by `new` (if any) and removes its open records.
fn settle(ck: &WriterCheck, new: Option<&MetaDropping>, drop_opens: bool) -> Result<()> {
    let (c, w) = (ck.c, ck.w);
    if let Some(d) = new {
        if !w.closes.contains(d) {
            c.add_meta(d)?;
        }
        if let MetaDropping::Close { mtime_ns, .. } = d {
            c.bump_mtime(*mtime_ns)?;
        }
    }
    for old in w.closes.iter().filter(|o| Some(*o) != new) {
        c.remove_meta(old)?;
    }
    if drop_opens {
        for o in &w.opens {
            c.remove_meta(o)?;
        }
    }
    Ok(())
}

/// An open record of a writer that is gone, or whose liveness cannot be told: the repair
/// replaces it by `new_close` (the close record computed from the index log, if it holds writes).
fn stale_open(
    ck: &WriterCheck,
    scan: Option<&IndexScan>,
    index_ok: bool,
    new_close: Option<&MetaDropping>,
    rep: &mut Report,
) {
    let (c, w, wname, opts) = (ck.c, ck.w, &ck.wname, ck.opts);
    let meta = c.meta_path();
    let (kind, why) = match &ck.live {
        Some(Liveness::Dead(why)) => (
            if w.closes.is_empty() {
                Kind::StaleOpen
            } else {
                Kind::OpenAndClosed
            },
            why.clone(),
        ),
        Some(Liveness::Unknown(why)) => (Kind::UnverifiableOpen, why.clone()),
        _ => return,
    };
    let repair = if !ck.may_touch {
        Repair::Manual("rerun with --force-stale if the writer is known to be dead".into())
    } else if !w.closes.is_empty() {
        // Its close records stay: they are what stat reads once the open record is gone.
        repair_step(opts, "removed the open record (the writer had closed)", || {
            w.opens.iter().try_for_each(|o| c.remove_meta(o))
        })
    } else if scan.is_some() && !index_ok {
        Repair::Manual("the index log must be repaired first".into())
    } else {
        let what = match new_close {
            Some(d) => format!("wrote {} from the index log and removed the open record", d.name()),
            None => "removed the open record (the writer wrote nothing)".into(),
        };
        repair_step(opts, what, || settle(ck, new_close, true))
    };
    let msg = format!(
        "{wname} left an open record: {why}; stat takes the slow path and truncate-to-zero cannot reclaim space"
    );
    rep.push(kind, true, &meta, msg, repair);
}

/// Indexed writes without any open or close record: the repair writes close record `d`.
fn missing_close(ck: &WriterCheck, d: &MetaDropping, index_ok: bool, records: usize, rep: &mut Report) {
    let (wname, opts) = (&ck.wname, ck.opts);
    let meta = ck.c.meta_path();
    let repair = if index_ok {
        repair_step(opts, format!("wrote {}", d.name()), || settle(ck, Some(d), false))
    } else {
        Repair::Manual("the index log must be repaired first".into())
    };
    let msg = format!("{wname}: {records} indexed writes but no open or close record; stat misses them");
    rep.push(Kind::MissingClose, true, &meta, msg, repair);
}

/// `n` close records but no index log: damage if one of them says the writer wrote data.
fn close_without_logs(ck: &WriterCheck, n: usize, rep: &mut Report) {
    let (w, wname) = (ck.w, &ck.wname);
    let meta = ck.c.meta_path();
    let any_bytes = w
        .closes
        .iter()
        .any(|d| matches!(d, MetaDropping::Close { bytes, .. } if *bytes > 0));
    if any_bytes {
        let msg = format!("{wname}: {n} close record(s) but no index log; stat reports data that reads cannot find");
        let repair = Repair::Manual("restore the logs, or remove the close record to match the data".into());
        rep.push(Kind::CloseWithoutLogs, true, &meta, msg, repair);
    }
}

/// `n` close records checked against `want`, the one computed from the index log: one that
/// agrees is all there should be.
fn contradictory_closes(
    ck: &WriterCheck,
    n: usize,
    want: &MetaDropping,
    scan: Option<&IndexScan>,
    index_ok: bool,
    rep: &mut Report,
) {
    let (w, wname, opts) = (ck.w, &ck.wname, ck.opts);
    let meta = ck.c.meta_path();
    let records = scan.map_or(0, |s| s.records.len());
    let agrees = |d: &MetaDropping| match (d, want) {
        (
            MetaDropping::Close {
                eof,
                bytes,
                open_ts,
                close_ts,
                ..
            },
            MetaDropping::Close {
                eof: weof,
                bytes: wbytes,
                ..
            },
        ) => {
            // Below the records' end only where a truncate fell in the writer's session.
            let cut = ck.truncs.iter().any(|t| (*open_ts..=*close_ts).contains(t));
            bytes == wbytes && (eof == weof || (cut && eof <= weof))
        }
        _ => false,
    };
    if n == 1 && agrees(&w.closes[0]) {
        return;
    }
    if !index_ok {
        let msg = format!("{wname}: close record(s) cannot be checked against a damaged index log");
        rep.push(
            Kind::ContradictoryClose,
            true,
            &meta,
            msg,
            Repair::Manual("repair the index log first".into()),
        );
        return;
    }
    let keep = kept_close(ck, want, agrees).filter(|_| records > 0);
    let what = match &keep {
        Some(k) => format!("kept {} only", k.name()),
        None => "removed the close records (the index holds no writes)".into(),
    };
    let repair = repair_step(opts, what, || settle(ck, keep.as_ref(), false));
    let names: Vec<String> = w.closes.iter().map(MetaDropping::name).collect();
    let msg = format!(
        "{wname}: close record(s) {} disagree with the index log ({records} records, {} bytes)",
        names.join(", "),
        scan.map_or(0, |s| s.records.iter().map(|r| r.length).sum::<u64>())
    );
    rep.push(Kind::ContradictoryClose, true, &meta, msg, repair);
}

/// The close record to keep of the writer's contradictory ones.
fn kept_close(ck: &WriterCheck, want: &MetaDropping, agrees: impl Fn(&MetaDropping) -> bool) -> Option<MetaDropping> {
    let w = ck.w;
    // Keep one that agrees if there is one, else replace with the computed record
    // (keeping the original open and close timestamps).
    w.closes
        .iter()
        .find(|d| agrees(d))
        .cloned()
        .or_else(|| match (&w.closes[0], want) {
            (
                MetaDropping::Close {
                    open_ts,
                    close_ts,
                    mtime_ns,
                    ..
                },
                MetaDropping::Close { eof, bytes, .. },
            ) => Some(MetaDropping::Close {
                writer_id: ck.id,
                open_ts: *open_ts,
                close_ts: *close_ts,
                eof: *eof,
                bytes: *bytes,
                mtime_ns: *mtime_ns,
            }),
            _ => None,
        })
}
