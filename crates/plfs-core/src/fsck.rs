//! `plfs fsck` and `plfs verify`: finding and repairing the debris that crashed writers, failed
//! I/O and outside damage leave in containers, and checking stored data against its checksums.
//!
//! What fsck looks for (each finding has a stable [`Kind`] code that scripts can match):
//! torn or corrupt index-log tails, unreadable log headers, open records of writers that died
//! (`meta/open.*` left behind), missing, duplicate or contradictory close records, a missing or
//! contradictory `cid` dropping, a bad or missing marker, data logs without index logs and the
//! reverse, creation and deletion debris (`.plfstmp.*`), shadow directories no container owns,
//! logs stranded where readers do not look, undecodable flattened indexes and unknown files.
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

mod container;
mod liveness;
mod verify;
mod walk;

pub use liveness::{writer_liveness, Liveness};
pub use verify::{verify, Mismatch, VerifyReport};

use crate::error::Result;
use crate::fs::Plfs;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How fsck runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// Repair what can be repaired safely.
    pub repair: bool,
    /// Treat open records whose writer cannot be checked (another host, pid alive but not
    /// holding the logs) as stale.
    pub force_stale: bool,
    /// `.plfstmp.*` creation debris younger than this is left alone (a creator may be running).
    pub tmp_min_age: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            repair: false,
            force_stale: false,
            tmp_min_age: Duration::from_secs(60),
        }
    }
}

/// What a finding is about. [`Kind::code`] is the stable name printed by the CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// An index log ends in an incomplete record (a writer died mid-append).
    TornIndexTail,
    /// An index log ends in bytes that are not a valid record, and no valid record follows.
    CorruptIndexTail,
    /// A bad record is followed by valid-looking ones, which readers ignore.
    CorruptIndexMiddle,
    /// An index log's header is torn or unreadable.
    BadIndexHeader,
    /// Logs created by a writer that died before writing any data.
    EmptyLogs,
    /// An open record of a writer that is no longer running.
    StaleOpen,
    /// An open record whose writer cannot be checked from here.
    UnverifiableOpen,
    /// A writer that is running (information).
    LiveWriter,
    /// A writer with indexed data but neither an open nor a close record.
    MissingClose,
    /// A close record that disagrees with its writer's index log, or several for one writer.
    ContradictoryClose,
    /// A writer with both an open and a close record (it died between writing the two).
    OpenAndClosed,
    /// A close record with data whose writer has no index log.
    CloseWithoutLogs,
    /// `meta/` has no `cid.*` dropping (or no `meta/` at all).
    MissingCid,
    /// The `cid.*` droppings disagree with each other or with the marker.
    CidMismatch,
    /// The marker is unreadable.
    BadMarker,
    /// A directory holding container metadata but no marker.
    MissingMarker,
    /// A data log without its index log.
    OrphanDataLog,
    /// An index log with records but no data log.
    OrphanIndexLog,
    /// Data written but never indexed (information: readers never see it).
    UnindexedData,
    /// Records pointing past the end of their data log.
    RecordPastDataEnd,
    /// Debris of an interrupted create or atomic write.
    TmpDebris,
    /// A container whose unlink was interrupted after it was renamed aside.
    TrashDebris,
    /// A file PLFS did not create (information).
    UnknownFile,
    /// A file or directory that could not be read.
    Unreadable,
    /// A flattened index that does not decode.
    BadFlatIndex,
    /// A shadow directory that belongs to no container.
    OrphanShadow,
    /// Logs in a shadow directory that readers of its container do not look at.
    StrandedShadow,
}

impl Kind {
    /// The stable, script-friendly code.
    pub fn code(self) -> &'static str {
        use Kind::*;
        match self {
            TornIndexTail => "torn-index-tail",
            CorruptIndexTail => "corrupt-index-tail",
            CorruptIndexMiddle => "corrupt-index-middle",
            BadIndexHeader => "bad-index-header",
            EmptyLogs => "empty-logs",
            StaleOpen => "stale-open",
            UnverifiableOpen => "unverifiable-open",
            LiveWriter => "live-writer",
            MissingClose => "missing-close",
            ContradictoryClose => "contradictory-close",
            OpenAndClosed => "open-and-closed",
            CloseWithoutLogs => "close-without-logs",
            MissingCid => "missing-cid",
            CidMismatch => "cid-mismatch",
            BadMarker => "bad-marker",
            MissingMarker => "missing-marker",
            OrphanDataLog => "orphan-data-log",
            OrphanIndexLog => "orphan-index-log",
            UnindexedData => "unindexed-data",
            RecordPastDataEnd => "record-past-data-end",
            TmpDebris => "tmp-debris",
            TrashDebris => "trash-debris",
            UnknownFile => "unknown-file",
            Unreadable => "unreadable",
            BadFlatIndex => "bad-flat-index",
            OrphanShadow => "orphan-shadow",
            StrandedShadow => "stranded-shadow",
        }
    }
}

/// What happened (or can happen) about a finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Repair {
    /// Nothing to do (information only).
    None,
    /// `--repair` would do this.
    Possible(String),
    /// Repaired: what was done.
    Done(String),
    /// The repair was attempted and failed.
    Failed(String),
    /// Not repaired automatically: why, and what a person could do.
    Manual(String),
}

/// One thing fsck found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// What it is.
    pub kind: Kind,
    /// True for problems; false for information (live writers, unindexed bytes, unknown files).
    pub problem: bool,
    /// The backend file or directory concerned.
    pub path: PathBuf,
    /// Human-readable description.
    pub message: String,
    /// The repair.
    pub repair: Repair,
}

impl Finding {
    /// True if this is a problem that is still there.
    pub fn outstanding(&self) -> bool {
        self.problem && !matches!(self.repair, Repair::Done(_))
    }
}

/// The result of a fsck run.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Everything found, in discovery order.
    pub findings: Vec<Finding>,
    /// Containers checked.
    pub containers: usize,
    /// Writers (index/data log pairs or open records) examined.
    pub writers: usize,
    /// Valid index records read.
    pub records: u64,
}

impl Report {
    /// e2fsck-style exit code: 0 clean, 1 everything repaired, 4 problems left.
    pub fn exit_code(&self) -> i32 {
        if self.findings.iter().any(Finding::outstanding) {
            4
        } else if self.findings.iter().any(|f| f.problem) {
            1
        } else {
            0
        }
    }

    /// Problems found (repaired or not).
    pub fn problems(&self) -> usize {
        self.findings.iter().filter(|f| f.problem).count()
    }

    /// Findings of one kind.
    pub fn of(&self, kind: Kind) -> Vec<&Finding> {
        self.findings.iter().filter(|f| f.kind == kind).collect()
    }

    fn push(&mut self, kind: Kind, problem: bool, path: impl Into<PathBuf>, message: String, repair: Repair) {
        self.findings.push(Finding {
            kind,
            problem,
            path: path.into(),
            message,
            repair,
        });
    }
}

/// Checks (and with `opts.repair` repairs) a logical file, or every container under a logical
/// directory on every canonical backend. At a mount point's root it also finds shadow
/// directories that belong to no container.
pub fn fsck(plfs: &Plfs, path: &Path, opts: &Options) -> Result<Report> {
    walk::run(plfs, path, opts)
}

/// Runs a repair step: `Done(what)` if `f` succeeds, `Failed` with the error otherwise; without
/// `--repair`, `Possible(what)` and `f` is not run.
fn repair_step(opts: &Options, what: impl Into<String>, f: impl FnOnce() -> Result<()>) -> Repair {
    let what = what.into();
    if !opts.repair {
        return Repair::Possible(what);
    }
    match f() {
        Ok(()) => Repair::Done(what),
        Err(e) => Repair::Failed(format!("{what}: {e}")),
    }
}
