//! Retiring dead logs of a 1-N directory without writing anything (docs/format.md §14): a log no
//! process appends to, whose removal leaves what readers see unchanged, is deleted. The check is
//! a replay: the view of the remaining logs (every name, the file it is bound to, its attributes,
//! size and extents, extents named by log and offset) must equal the view of all of them. Logs are
//! deleted one at a time, each checked against the logs left, so a crash between two deletions
//! leaves a directory that reads the same, and no journal is needed. This is what frees space on a
//! full backend, where a compaction cannot write its new log: the logs of a deleted file (its
//! CREATE and data; then the UNLINK, once its file's CREATE is gone) go this way.

use super::state::{apply, Inner};
use crate::error::Result;
use crate::format::small::{self as fmt, Rec, SMALL_MAGIC};
use crate::format::{self, LogHeader};
use crate::sys::{Access, Dir};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Logs beyond which the pairwise replays are not tried (the regular compaction handles those).
const MAX_LOGS: usize = 256;
/// Replays one call may make (each checks one candidate against every record of the directory):
/// a bound on what this pass adds to a compaction, which rewrites whatever it leaves anyway.
const MAX_REPLAYS: usize = 64;

/// One log: where it is, its writer id, its records (empty for a header-only or empty log).
struct Log {
    dir: Dir,
    name: String,
    writer: u64,
    recs: Vec<Rec>,
    bytes: u64,
}

/// What readers see: name → (mode, uid, gid, atime, mtime, ctime, size, extents as
/// (offset, length, log path, log offset)).
type Seen = BTreeMap<String, (u32, u32, u32, i64, i64, i64, u64, Vec<(u64, u64, PathBuf, u64)>)>;

fn view(logs: &[&Log]) -> Seen {
    let mut g = Inner::default();
    let mut recs: Vec<(u64, u64, usize, &Rec)> = Vec::new();
    for (i, l) in logs.iter().enumerate() {
        recs.extend(l.recs.iter().map(|r| (r.ts(), l.writer, i, r)));
    }
    recs.sort_by_key(|r| (r.0, r.1));
    for (_, w, i, r) in recs {
        apply(&mut g, r, w, i);
    }
    let mut out = Seen::new();
    for (name, id) in &g.names {
        let Some(m) = g.files.get(id) else { continue };
        let ext = m
            .map
            .pieces()
            .into_iter()
            .map(|(o, p)| {
                (
                    o,
                    p.len,
                    logs[p.chunk as usize].dir.sub(&logs[p.chunk as usize].name),
                    p.phys,
                )
            })
            .collect();
        out.insert(
            name.clone(),
            (m.mode, m.uid, m.gid, m.atime, m.mtime, m.ctime, m.map.size(), ext),
        );
    }
    out
}

/// Deletes the dead logs among `logs` (every log of the directory, as `(store, name, size)`),
/// except those `kept` names (this process's own, and any a process may still append to, which
/// the caller found by their locks). The caller holds the directory's compaction lock. Returns
/// (logs deleted, bytes freed).
pub(super) fn retire(logs: &[(Dir, String, u64)], kept: &dyn Fn(&Path) -> bool) -> Result<(u64, u64)> {
    if logs.len() > MAX_LOGS {
        return Ok((0, 0));
    }
    let mut all = Vec::with_capacity(logs.len());
    for (dir, name, size) in logs {
        let Some(info) = fmt::parse_log_name(name) else {
            continue;
        };
        let Some(f) = dir.open_file_opt(name, Access::Read)? else {
            continue;
        };
        let bytes = f.read_from(0)?;
        let mut recs = Vec::new();
        if bytes.len() >= format::INDEX_HEADER_LEN {
            // A log that is not one of ours, or damaged, is never judged dead.
            if LogHeader::decode(&dir.sub(name), &bytes, SMALL_MAGIC).is_err() {
                return Ok((0, 0));
            }
            let d = fmt::decode(&bytes[format::INDEX_HEADER_LEN..], format::INDEX_HEADER_LEN as u64);
            if !d.damaged.is_empty() {
                return Ok((0, 0));
            }
            recs = d.recs;
        }
        all.push(Log {
            dir: dir.try_clone()?,
            name: name.clone(),
            writer: info.writer_id,
            recs,
            bytes: *size,
        });
    }
    let mut left: Vec<&Log> = all.iter().collect();
    let want = view(&left);
    let (mut n, mut freed, mut replays) = (0u64, 0u64, 0usize);
    loop {
        let mut progress = false;
        let mut i = 0;
        while i < left.len() {
            let l = left[i];
            let is_own = kept(&l.dir.sub(&l.name));
            // Cheap test first: a log holding live data is never dead.
            let holds_live = want.values().any(|v| v.7.iter().any(|e| e.2 == l.dir.sub(&l.name)));
            if !is_own && !holds_live {
                if replays == MAX_REPLAYS {
                    return Ok((n, freed));
                }
                replays += 1;
                let rest: Vec<&Log> = left.iter().copied().filter(|o| !std::ptr::eq(*o, l)).collect();
                if view(&rest) == want {
                    l.dir.unlink_opt(&l.name)?;
                    n += 1;
                    freed += l.bytes;
                    left = rest;
                    progress = true;
                    continue;
                }
            }
            i += 1;
        }
        if !progress {
            return Ok((n, freed));
        }
    }
}
