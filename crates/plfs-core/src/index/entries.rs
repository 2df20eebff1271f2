//! The merged index as a table (`plfs map`): where each stretch of a file's data lives, for a
//! container of either format; and what the index tells the layers above it (size, live
//! bytes, statistics).

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

impl super::IndexState {
    /// The merged map as a table, in logical order.
    pub(crate) fn entries(&self) -> Vec<MapEntry> {
        self.map
            .pieces()
            .into_iter()
            .map(|(o, p)| {
                let ch = &self.chunks[p.chunk as usize];
                MapEntry::new(
                    o,
                    &p,
                    self.chunk_path(p.chunk),
                    ch.writer_id,
                    ch.pid,
                    ch.host.clone(),
                    p.key.ts,
                )
            })
            .collect()
    }

    /// The logical size.
    pub(crate) fn size(&self) -> u64 {
        self.map.size()
    }

    /// Bytes of the file that are data (not holes).
    pub(crate) fn live_bytes(&self) -> u64 {
        self.map.live_bytes()
    }

    /// Writes read from the index logs of framed data logs (each has a frame in its data log:
    /// overhead, not dead data, in a usage report).
    pub(crate) fn framed_writes(&self) -> u64 {
        self.framed_writes
    }

    /// Statistics of the merged index.
    pub(crate) fn stats(&self) -> crate::types::IndexStats {
        crate::types::IndexStats {
            pieces: self.map.raw_pieces().count(),
            patterns: self.map.pattern_count(),
            mem_bytes: self.map.mem_bytes(),
            records_read: self.records_read,
        }
    }

    /// Drops the per-element timestamps of compressed patterns, which only a process that
    /// writes the file too needs (its own writes could overlap a pattern).
    pub(crate) fn compact(&mut self) {
        self.map.compact();
    }
}
