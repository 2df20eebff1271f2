//! What a compaction is asked to do and what it reports, shared by the N-1 compaction
//! ([`super::n1`]) and the 1-N one ([`super::small`]); the public entry points are in
//! [`crate::compact`]. docs/design.md ("Compaction") describes the protocol.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64};

/// How a compaction runs.
#[derive(Default)]
pub struct CompactOptions<'a> {
    /// Only measure: report what would be reclaimed, change nothing.
    pub dry_run: bool,
    /// Compact only if the plfsrc's thresholds (`compaction_dead_ratio`, `compaction_min_bytes`)
    /// say it is worth it (automatic compaction); an explicit compaction always runs.
    pub thresholds: bool,
    /// Called with (bytes copied so far, bytes to copy) while live data is copied.
    pub progress: Option<&'a (dyn Fn(u64, u64) + Sync)>,
    /// Run by the library itself (at a close, while writing, after unlinks): it never waits for
    /// the lock another compaction or a last close holds, it is tried again later.
    pub automatic: bool,
}

impl std::fmt::Debug for CompactOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompactOptions")
            .field("dry_run", &self.dry_run)
            .field("thresholds", &self.thresholds)
            .field("automatic", &self.automatic)
            .finish()
    }
}

/// How long a compaction waits for the lock that makes it the only one: an automatic one not at
/// all (it runs again later), an explicit one a moment, since a process finishing an earlier
/// compaction's journal at its last close holds the lock that long (a compaction still running
/// holds it longer and is reported busy).
pub(crate) fn patience(opts: &CompactOptions) -> std::time::Duration {
    if opts.automatic || opts.thresholds {
        std::time::Duration::ZERO
    } else {
        std::time::Duration::from_secs(2)
    }
}

/// What a compaction did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompactStatus {
    /// The live data was rewritten and the old logs retired.
    Compacted,
    /// `--dry-run`: nothing was changed; the report says what a compaction would reclaim.
    DryRun,
    /// Nothing to gain (one log already holding only live data, no droppings to fold).
    NothingToDo,
    /// Below the automatic thresholds (only with [`CompactOptions::thresholds`]).
    BelowThreshold,
    /// Another compaction (or a truncate to zero) holds the file; try again later.
    Busy,
    /// Writers in other processes have the file (or the directory's packed logs) open and nothing
    /// can be compacted safely now.
    WritersOpen,
}

impl CompactStatus {
    /// The stable name printed by the CLI and in JSON.
    pub fn code(self) -> &'static str {
        match self {
            CompactStatus::Compacted => "compacted",
            CompactStatus::DryRun => "dry-run",
            CompactStatus::NothingToDo => "nothing-to-do",
            CompactStatus::BelowThreshold => "below-threshold",
            CompactStatus::Busy => "busy",
            CompactStatus::WritersOpen => "writers-open",
        }
    }
}

/// Space used by a file (or by a directory's packed logs): the same figures `plfs du` and
/// `plfs stat` show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    /// The logical size (for a directory's packed logs: the sum of its files' sizes).
    pub logical: u64,
    /// Bytes of every backend file behind it (marker, droppings, logs, flattened index, journal,
    /// on every backend).
    pub physical: u64,
    /// Bytes of data held in data logs (headers excluded), live or dead.
    pub data: u64,
    /// Bytes of data a reader sees (holes excluded).
    pub live: u64,
    /// Files in `meta/` (N-1; 0 for packed logs).
    pub meta_files: u64,
    /// Data and index logs (N-1) or packed logs (1-N).
    pub logs: u64,
    /// Bytes of retired data logs whose deletion waits until no other process has the file open.
    pub pending: u64,
    /// Writers that have the file open (N-1 open records).
    pub writers: u64,
}

impl Usage {
    /// Dead bytes: data a reader no longer sees (overwritten, truncated away, retired).
    pub fn dead(&self) -> u64 {
        self.data.saturating_sub(self.live)
    }

    /// `dead / data` (0 for no data).
    pub fn dead_ratio(&self) -> f64 {
        if self.data == 0 {
            0.0
        } else {
            self.dead() as f64 / self.data as f64
        }
    }
}

/// The outcome of compacting one file (N-1) or one directory's packed logs (1-N).
#[derive(Debug, Clone, PartialEq)]
pub struct CompactReport {
    /// The logical file or directory.
    pub path: PathBuf,
    /// What happened.
    pub status: CompactStatus,
    /// Usage before.
    pub before: Usage,
    /// Usage after (for a dry run: the estimate).
    pub after: Usage,
    /// Logs retired (N-1: writers' data and index log pairs; 1-N: packed logs).
    pub logs_retired: u64,
    /// Trunc droppings folded into the new index (N-1).
    pub truncs_folded: u64,
    /// Packed files dropped from the logs (deleted or replaced names, 1-N).
    pub files_dropped: u64,
    /// Live bytes copied into the new log.
    pub copied: u64,
    /// Seconds taken.
    pub seconds: f64,
}

impl CompactReport {
    /// An empty report for `path`.
    pub fn new(path: PathBuf) -> CompactReport {
        CompactReport {
            path,
            status: CompactStatus::NothingToDo,
            before: Usage::default(),
            after: Usage::default(),
            logs_retired: 0,
            truncs_folded: 0,
            files_dropped: 0,
            copied: 0,
            seconds: 0.0,
        }
    }

    /// Physical bytes reclaimed (or, for a dry run, that would be).
    pub fn reclaimed(&self) -> u64 {
        self.before.physical.saturating_sub(self.after.physical)
    }
}

/// A process's counters for the automatic compaction of one file or packed directory: what it
/// wrote and truncated or unlinked since it last looked.
#[derive(Debug, Default)]
pub struct AutoState {
    /// Bytes written since the last check.
    pub since: AtomicU64,
    /// Bytes between two checks of a writer that stays open (0: the minimum). It doubles after
    /// each check that did not compact, so a file that is only appended to is checked a
    /// logarithmic number of times, and returns to the minimum after a compaction.
    pub interval: AtomicU64,
    /// Truncates (N-1) or unlinks and renames (1-N) since the last check.
    pub truncs: AtomicU64,
    /// Something was written since the last check at close.
    pub wrote: AtomicBool,
    /// Bytes written by this process's writers that closed since the last check at close, and
    /// the furthest end they reached: what the check at the last close decides from, without
    /// looking at the backend (issue 22).
    pub closed_bytes: AtomicU64,
    pub closed_end: AtomicU64,
    /// A check or compaction is running (one at a time per process).
    pub running: AtomicBool,
}

/// Whether the plfsrc thresholds call for a compaction: at least `min_bytes` of data of which
/// at least `ratio_permille`/1000 is dead, or more trunc droppings than [`MAX_TRUNCS`].
pub fn worth_it(data: u64, live: u64, truncs: u64, min_bytes: u64, ratio_permille: u32) -> bool {
    let dead = data.saturating_sub(live);
    (data >= min_bytes.max(1) && u128::from(dead) * 1000 >= u128::from(data) * u128::from(ratio_permille))
        || truncs > MAX_TRUNCS
}

/// Trunc droppings beyond which an automatic compaction folds them whatever the dead ratio (each
/// is a file in `meta/` that every stat and open of the file lists).
pub const MAX_TRUNCS: u64 = 48;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds() {
        assert!(worth_it(1000, 400, 0, 1000, 500));
        assert!(!worth_it(1000, 600, 0, 1000, 500));
        assert!(!worth_it(999, 0, 0, 1000, 500));
        assert!(worth_it(10, 10, MAX_TRUNCS + 1, 1000, 500));
        assert!(!worth_it(0, 0, 0, 0, 0), "an empty file is never worth compacting");
        let u = Usage {
            data: 200,
            live: 50,
            ..Usage::default()
        };
        assert_eq!((u.dead(), u.dead_ratio()), (150, 0.75));
        assert_eq!(Usage::default().dead_ratio(), 0.0);
    }
}
