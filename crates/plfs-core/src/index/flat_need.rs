//! Whether a file's reads depend on its flattened index (format.md §6): fsck must then change
//! nothing that would make readers ignore it (issue 50: a repair that wrote a close dropping for
//! a renamed index log changed the droppings' signature, readers fell back to the index logs,
//! which lacked the log, and a file that read right answered EIO).

use super::IndexState;
use crate::container::Container;
use crate::error::Result;
use std::path::Path;

/// What an index holds, by data log name rather than by the index's own chunk numbers: pieces
/// `(logical, len, data log, phys, ts, writer)`, patterns, truncates; each sorted.
type Extents = (
    Vec<(u64, u64, String, u64, u64, u64)>,
    Vec<(u64, u64, u64, u64, String, u64, u64, u64)>,
    Vec<(u64, u64, u64)>,
);

impl IndexState {
    /// Why reads of container `c` (logical path `logical`) need its flattened index: readers use
    /// it (it decodes and is current for these droppings and this path) and the index logs it
    /// summarises do not give the same extents (one is missing, damaged, renamed, or says
    /// something else). `None`: readers do not use it, or the logs agree with it.
    pub(crate) fn flat_needed(c: &Container, logical: &Path) -> Result<Option<String>> {
        if c.mount.global.data_checksums {
            return Ok(None); // such readers never use it
        }
        let fds = c.mount.global.max_open_data_logs as usize;
        let mut flat = IndexState::empty(fds);
        if !matches!(flat.load_flat(c, logical, false, None), Ok(true)) {
            return Ok(None);
        }
        let mut logs = IndexState::empty(fds);
        if let Err(e) = logs.refresh(c) {
            return Ok(Some(format!("the index logs do not read without it: {e}")));
        }
        if flat.extents() != logs.extents() {
            return Ok(Some("the index logs give other extents than it holds".into()));
        }
        Ok(None)
    }

    fn extents(&self) -> Extents {
        let name = |chunk: u32| {
            self.chunks
                .get(chunk as usize)
                .map_or_else(String::new, |ch| ch.name.to_string_lossy().into_owned())
        };
        let mut pieces: Vec<_> = self
            .map
            .raw_pieces()
            .map(|(o, p)| (o, p.len, name(p.chunk), p.phys, p.key.ts, p.key.writer))
            .collect();
        pieces.sort();
        let mut patterns: Vec<_> = self
            .map
            .patterns()
            .map(|p| {
                (
                    p.start,
                    p.len,
                    p.stride,
                    p.count,
                    name(p.chunk),
                    p.phys,
                    p.pstride,
                    p.ts_last,
                )
            })
            .collect();
        patterns.sort();
        let mut truncs: Vec<_> = self.truncs.iter().copied().collect();
        truncs.sort();
        (pieces, patterns, truncs)
    }
}
