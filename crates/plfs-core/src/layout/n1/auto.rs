//! Per-process state of the automatic compaction of one container (the logic is in
//! [`super::compact`]): what this process wrote and truncated since it last looked.

use std::sync::atomic::{AtomicBool, AtomicU64};

/// Counters of one container's automatic compaction in this process.
#[derive(Debug, Default)]
pub(crate) struct Auto {
    /// Bytes this process wrote since the last check.
    pub(super) since: AtomicU64,
    /// Truncates this process made since the last check.
    pub(super) truncs: AtomicU64,
    /// This process wrote to the file since its last check at close.
    pub(super) wrote: AtomicBool,
    /// A check or compaction is running (one at a time per process).
    pub(super) running: AtomicBool,
}
