//! What fsck finds and does: [`Kind`] codes, [`Finding`]s, the [`Report`] and its exit code, and
//! the repair step wrapper every check uses.

use crate::error::Result;
use std::path::PathBuf;
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
    /// A flattened index that readers use and that the index logs it summarises no longer
    /// reproduce (one missing, renamed, damaged or saying otherwise): the file reads only
    /// through it, so fsck repairs nothing in that container.
    FlatIndexNeeded,
    /// A closed writer's data log whose header or frames are damaged or disagree with its
    /// index log (readers of its records still read right).
    DamagedDataLog,
    /// A dropping that is not empty (droppings are zero-length: its name is all it says).
    BadDropping,
    /// A shadow directory that belongs to no container.
    OrphanShadow,
    /// Logs in a shadow directory that readers of its container do not look at.
    StrandedShadow,
    /// A container or 1-N directory written by PLFS 2.x (information: read-only until
    /// `plfs upgrade`).
    LegacyContainer,
    /// A PLFS 2.x container or 1-N directory that cannot be read (a damaged record, data log or
    /// metalink).
    LegacyDamage,
    /// What a `plfs upgrade` that did not finish left: its partial copy or the superseded
    /// original.
    UpgradeDebris,
    /// A compaction that died before committing (its unpublished logs) or during its
    /// roll-forward (a committed journal).
    InterruptedCompaction,
    /// A compaction is running (information).
    CompactionRunning,
    /// Data logs retired by a compaction, waiting for the file's readers to close (information).
    RetiredDataLogs,
    /// A compaction journal that does not decode.
    BadJournal,
    /// A 1-N log holds bytes that are not whole records, followed by whole records.
    DamagedPackedRecords,
    /// A 1-N log ends in a torn record (an append cut short).
    TornPackedTail,
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
            FlatIndexNeeded => "flat-index-needed",
            DamagedDataLog => "damaged-data-log",
            BadDropping => "bad-dropping",
            OrphanShadow => "orphan-shadow",
            StrandedShadow => "stranded-shadow",
            LegacyContainer => "legacy-container",
            LegacyDamage => "legacy-damage",
            UpgradeDebris => "upgrade-debris",
            InterruptedCompaction => "interrupted-compaction",
            CompactionRunning => "compaction-running",
            RetiredDataLogs => "retired-data-logs",
            BadJournal => "bad-journal",
            DamagedPackedRecords => "damaged-packed-records",
            TornPackedTail => "torn-packed-tail",
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
    /// Containers checked (those written by PLFS 2.x included).
    pub containers: usize,
    /// Containers and 1-N directories written by PLFS 2.x found.
    pub legacy: usize,
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

    pub(super) fn push(
        &mut self,
        kind: Kind,
        problem: bool,
        path: impl Into<PathBuf>,
        message: String,
        repair: Repair,
    ) {
        self.findings.push(Finding {
            kind,
            problem,
            path: path.into(),
            message,
            repair,
        });
    }
}

/// Runs a repair step: `Done(what)` if `f` succeeds, `Failed` with the error otherwise; without
/// `--repair`, `Possible(what)` and `f` is not run.
pub(super) fn repair_step(opts: &Options, what: impl Into<String>, f: impl FnOnce() -> Result<()>) -> Repair {
    let what = what.into();
    if !opts.repair {
        return Repair::Possible(what);
    }
    match f() {
        Ok(()) => Repair::Done(what),
        Err(e) => Repair::Failed(format!("{what}: {e}")),
    }
}
