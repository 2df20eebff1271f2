//! Space accounting of a 1-N directory: its logs' bytes, the data they hold, what of it is live.

use super::state::{flush, Inner};
use super::view::SmallDir;
use crate::error::Result;
use crate::format;
use crate::format::small::{self as fmt, Rec};
use crate::types::PackedUsage;

/// (bytes of every log of the view, bytes of data of their WRITE records, live or not).
pub(super) fn log_totals(g: &Inner) -> Result<(u64, u64)> {
    let (mut logs, mut data) = (0, 0);
    for l in &g.logs {
        let bytes = l.file.read_from(0)?;
        logs += bytes.len() as u64;
        if bytes.len() > format::INDEX_HEADER_LEN {
            let d = fmt::decode(&bytes[format::INDEX_HEADER_LEN..], format::INDEX_HEADER_LEN as u64);
            data += d
                .recs
                .iter()
                .map(|r| if let Rec::Write { len, .. } = r { *len } else { 0 })
                .sum::<u64>();
        }
    }
    Ok((logs, data))
}

impl SmallDir {
    /// Space accounting of this directory's logs, read afresh.
    pub fn usage(&self) -> Result<PackedUsage> {
        let mut g = self.inner();
        flush(&mut g)?;
        self.refresh(&mut g)?;
        let (log_bytes, data_bytes) = log_totals(&g)?;
        let mut u = PackedUsage {
            logs: g.logs.len() as u64,
            log_bytes,
            data_bytes,
            ..PackedUsage::default()
        };
        // The reserve is space the directory takes on its backends too.
        for b in &self.mount.canonical {
            if let Some(store) = b.dir_opt(self.store_rel())? {
                if let Some(st) = store.stat_opt(fmt::RESERVE_NAME)? {
                    u.log_bytes += st.st_size.max(0) as u64;
                }
            }
        }
        // Only files that have a name: one unlinked, or renamed over, is dead space (open or not).
        u.live_bytes = g
            .names
            .values()
            .filter_map(|id| g.files.get(id))
            .map(|m| m.map.pieces().iter().map(|(_, p)| p.len).sum::<u64>())
            .sum();
        Ok(u)
    }
}
