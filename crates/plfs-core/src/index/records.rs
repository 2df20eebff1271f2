//! Every write of a container, writer by writer, as its index log records it (overwritten and
//! truncated-away writes too, unlike the merged map): what `plfs stats` characterises.

use super::logs::{read_log, FoundLog, Tail};
use crate::container::Container;
use crate::error::Result;
use crate::format::{self, MetaDropping};
use std::collections::HashMap;

/// One write as its writer's index log (or, for a writer that did not close, its data log's
/// frames) records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Write {
    /// Logical offset.
    pub logical: u64,
    /// Bytes written.
    pub length: u64,
    /// Its timestamp: wall-clock nanoseconds since the epoch, taken as the write began.
    pub ts: u64,
}

/// One writer (one open handle) of a container and its writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriterWrites {
    /// Writer id.
    pub writer_id: u64,
    /// Writer pid (the `pid` argument of the open: an MPI rank or the process id).
    pub pid: u32,
    /// Writer host.
    pub host: String,
    /// When the writer opened the file (ns since the epoch), from its close dropping.
    pub open_ns: Option<u64>,
    /// When it closed the file, from its close dropping (`None`: still open, or killed).
    pub close_ns: Option<u64>,
    /// Wall-clock time just after its last write returned, from its close dropping.
    pub last_end_ns: Option<u64>,
    /// Its writes, in the order it made them.
    pub writes: Vec<Write>,
}

/// Every index log of `c`, read whole: one entry per writer, sorted by host, pid and writer id.
pub(crate) fn writer_writes(c: &Container) -> Result<Vec<WriterWrites>> {
    let closes: HashMap<u64, (u64, u64, u64)> = c
        .list_meta()?
        .into_iter()
        .filter_map(|d| match d {
            MetaDropping::Close {
                writer_id,
                open_ts,
                close_ts,
                mtime_ns,
                ..
            } => Some((writer_id, (open_ts, close_ts, mtime_ns))),
            _ => None,
        })
        .collect();
    let mut out = Vec::new();
    for (i, hd) in c.hostdirs()?.into_iter().enumerate() {
        for name in hd.list()? {
            let Some(info) = name.to_str().and_then(format::parse_log_name) else {
                continue;
            };
            if !info.is_index {
                continue;
            }
            let close = closes.get(&info.writer_id).copied();
            let f = FoundLog {
                dir: i,
                path: hd.sub(&name),
                name,
                info,
            };
            let r = read_log(&hd, &f, 0, Tail::default(), close.is_none())?;
            let mut writes: Vec<Write> = Vec::new();
            for p in &r.dec.patterns {
                writes.extend(p.ts.iter().enumerate().map(|(k, &ts)| Write {
                    logical: p.logical_start.saturating_add((k as u64).saturating_mul(p.stride)),
                    length: p.length,
                    ts,
                }));
            }
            writes.extend(r.dec.records.iter().chain(&r.recovered).map(|w| Write {
                logical: w.logical_off,
                length: w.length,
                ts: w.ts,
            }));
            // Records and patterns are each in log order; together, in timestamp order (a
            // writer's timestamps increase).
            writes.sort_by_key(|w| w.ts);
            out.push(WriterWrites {
                writer_id: f.info.writer_id,
                pid: f.info.pid,
                host: f.info.host,
                open_ns: close.map(|c| c.0),
                close_ns: close.map(|c| c.1),
                last_end_ns: close.map(|c| c.2),
                writes,
            });
        }
    }
    out.sort_by(|a, b| (&a.host, a.pid, a.writer_id).cmp(&(&b.host, b.pid, b.writer_id)));
    Ok(out)
}
