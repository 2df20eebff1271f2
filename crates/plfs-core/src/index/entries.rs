//! The merged index as a table (`plfs map`): where each stretch of a file's data lives, for a
//! container of either format.

use crate::extent::Piece;
use std::path::PathBuf;

/// One extent of the merged index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapEntry {
    /// Logical offset.
    pub logical: u64,
    /// Length.
    pub length: u64,
    /// The data log holding the bytes.
    pub data_log: PathBuf,
    /// Offset in the data log.
    pub physical: u64,
    /// Writer id (0 for a file written by PLFS 2.x, whose writers have none).
    pub writer_id: u64,
    /// Writer pid.
    pub pid: u32,
    /// Writer host.
    pub host: String,
    /// Timestamp of the write (for a file written by PLFS 2.x, the end of the write, ns since
    /// the epoch).
    pub ts: u64,
}

impl MapEntry {
    /// The entry for piece `p` of a merged map, at logical offset `logical`: its bytes are in
    /// `data_log`, written by writer `writer_id` (`pid` on `host`) at `ts`.
    pub(crate) fn new(
        logical: u64,
        p: &Piece,
        data_log: PathBuf,
        writer_id: u64,
        pid: u32,
        host: String,
        ts: u64,
    ) -> MapEntry {
        MapEntry {
            logical,
            length: p.len,
            data_log,
            physical: p.phys,
            writer_id,
            pid,
            host,
            ts,
        }
    }
}
