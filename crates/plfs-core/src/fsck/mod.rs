//! `plfs fsck` and `plfs verify`: finding and repairing the debris that crashed writers, failed
//! I/O and outside damage leave in containers, and checking stored data against its checksums.
//!
//! What fsck looks for (each finding has a stable [`Kind`] code that scripts can match):
//! torn or corrupt index-log tails, unreadable log headers, open records of writers that died
//! (`meta/open.*` left behind), missing, duplicate or contradictory close records, a missing or
//! contradictory `cid` dropping, a bad or missing marker, data logs without index logs and the
//! reverse, creation and deletion debris (`.plfstmp.*`), shadow directories no container owns,
//! logs stranded where readers do not look, undecodable flattened indexes and unknown files; files
//! written by PLFS 2.x (reported as such, their logs checked) and what an interrupted
//! `plfs upgrade` left.
//!
//! Repair invariant: **`--repair` never deletes bytes that a valid index record references.** It
//! truncates index logs only past their last valid record (and only when no valid record follows),
//! removes only logs that hold no data, debris whose rename never committed (or whose deletion
//! did), and caches (the flattened index); stale open records are replaced by close records
//! computed from the writer's own index log. Anything else is reported for a person to decide.
//!
//! Exit codes ([`Report::exit_code`], e2fsck's convention): 0 = clean, 1 = problems found and all
//! repaired, 4 = problems left (found without `--repair`, or not repairable automatically),
//! 8 = fsck could not run (the CLI maps errors to it).

mod compaction;
mod container;
mod debris;
mod droppings;
mod flat_index;
mod frames;
mod index_log;
mod legacy;
mod liveness;
mod marker;
mod packed;
mod report;
mod verify;
mod walk;
mod writer;

pub use liveness::{writer_liveness, Liveness};
pub use report::{Finding, Kind, Options, Repair, Report};
pub use verify::{verify, Mismatch, VerifyReport};

use crate::error::Result;
use crate::namespace::Plfs;
use std::path::Path;

/// Checks (and with `opts.repair` repairs) a logical file, or every container under a logical
/// directory on every canonical backend. At a mount point's root it also finds shadow
/// directories that belong to no container.
pub fn fsck(plfs: &Plfs, path: &Path, opts: &Options) -> Result<Report> {
    walk::run(plfs, path, opts)
}
