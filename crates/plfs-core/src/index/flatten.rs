//! Writing a file's flattened index (format.md §6): `plfs flatten`, and the last close of a file
//! several writers wrote (`layout::n1::auto`). Readers then load one file instead of every
//! writer's index log: a restart read by N processes of a file N processes wrote costs N index
//! reads instead of N².

use super::IndexState;
use crate::container::{Container, DirExt};
use crate::error::Result;
use crate::format::{self, flat, MetaDropping, FLAT_NAME};
use std::path::Path;

/// What [`flatten`] did.
#[derive(Debug)]
pub(crate) enum Flattened {
    /// Wrote this flattened index.
    Written(flat::Flat),
    /// A writer has the file open: the index could not be complete.
    Open,
    /// The droppings changed while the logs were read (a writer opened, closed or truncated).
    Changed,
}

/// Merges every index log of `c` (logical path `logical`) and writes the result as its
/// flattened index (atomically: a temporary file, fsync, rename), unless a writer has the file
/// open or the droppings changed meanwhile. `listed`: the droppings of the listing of `c` the
/// caller has just taken (its last [`Container::list_meta`]), which the merge then reads the
/// logs of; `None` lists here. Either way one listing before the logs are read and one after:
/// a writer that opened, closed or truncated in between changed the droppings' signature.
pub(crate) fn flatten(c: &Container, logical: &Path, listed: Option<Vec<MetaDropping>>) -> Result<Flattened> {
    let first = match listed {
        Some(m) => m,
        None => c.list_meta()?,
    };
    let Some(sig) = format::flat::signature(&first) else {
        return Ok(Flattened::Open);
    };
    // From the last flattened index and the logs of the writers after it where it still holds
    // (`flat_base.rs`): a log appended to by one short process after another is flattened
    // every few closes at the cost of the few new logs, not of every log.
    let mut s = IndexState::empty(1);
    let based =
        !c.mount.global.data_checksums && matches!(s.load_flat(c, logical, true, Some(first.clone())), Ok(true));
    if !based {
        s = IndexState::empty(1);
        s.refresh_listed(c, first)?;
    }
    let meta = c.list_meta()?;
    if format::flat::signature(&meta) != Some(sig) {
        return Ok(Flattened::Changed);
    }
    let f = s.to_flat(c, logical, sig);
    c.dir.write_atomic(FLAT_NAME, &f.encode(), 0o644)?;
    // Its mtime says which closes it covers, for the next last close (`layout::n1::flat_close`;
    // format.md §6): a hint, so a failure here changes nothing a reader sees.
    let newest = meta.iter().filter_map(|d| match *d {
        format::MetaDropping::Close { close_ts, .. } => Some(close_ts),
        _ => None,
    });
    if let Some(newest) = newest.max() {
        let t = crate::sys::TimeSpec::At((newest / 1_000_000_000) as i64, (newest % 1_000_000_000) as i64);
        let _ = c.dir.set_times(FLAT_NAME, crate::sys::TimeSpec::Omit, t);
    }
    Ok(Flattened::Written(f))
}

impl IndexState {
    /// [`IndexState::refresh`] from `meta`, the droppings of the listing of `c` its caller has
    /// just taken (the last [`Container::list_meta`] on `c`), instead of a listing of its own.
    fn refresh_listed(&mut self, c: &Container, meta: Vec<MetaDropping>) -> Result<()> {
        self.refresh_n(c, 0, Some(meta))
    }

    /// Builds the flattened form of this (fully refreshed) state.
    pub fn to_flat(&self, c: &Container, logical: &Path, signature: u64) -> flat::Flat {
        let cpath = c.path().to_path_buf();
        let chunks = self
            .chunks
            .iter()
            .map(|ch| {
                let dir = self.dirs[ch.dir].path();
                let (in_container, dir) = match dir.strip_prefix(&cpath) {
                    Ok(rel) => (true, rel.to_path_buf()),
                    Err(_) => (false, dir.to_path_buf()),
                };
                flat::FlatChunk {
                    writer_id: ch.writer_id,
                    pid: ch.pid,
                    host: ch.host.clone(),
                    in_container,
                    dir,
                    name: ch.name.to_string_lossy().into_owned(),
                }
            })
            .collect();
        let mut truncs: Vec<(u64, u64, u64)> = self.truncs.iter().map(|&(ts, size, w)| (ts, w, size)).collect();
        truncs.sort();
        let pieces = self
            .map
            .raw_pieces()
            .map(|(o, p)| (o, p.len, p.phys, p.key.ts, p.key.writer, p.chunk))
            .collect();
        let patterns = self
            .map
            .patterns()
            .map(|p| {
                (
                    p.start, p.len, p.stride, p.count, p.phys, p.pstride, p.ts_first, p.ts_last, p.writer, p.chunk,
                )
            })
            .collect();
        flat::Flat {
            signature,
            logical: logical.to_path_buf(),
            chunks,
            truncs,
            pieces,
            patterns,
        }
    }
}
