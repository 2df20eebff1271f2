//! A flattened index as the base of a reader's index when writers came after it (format.md §6):
//! the writers it covers are read from it, the others from their index logs. Without this, one
//! writer more than the flattening saw (an append to a log, a rank that writes again, an
//! appender's own open writer) sent every reader back to every index log: an append to a log
//! that 1,100 shell commands had appended to opened 1,144 files (`echo x >> log` through ldplfs
//! on ext4, `strace -c`), and four shell loops of 300 appends each on CephFS took 9 minutes.
//!
//! Why the base is still right: a flattened index records the signature of the close and trunc
//! droppings it was made from (none open), and names its writers (chunks) and truncates. The
//! droppings of a listing that belong to those writers (their close droppings; an open one of
//! theirs would be damage) and the truncates it recorded give that signature again only if
//! every one of them is still there, unchanged: then the writers it covers are exactly those it
//! read, each closed, its index log whole when it was read and never written since (a writer's
//! id is its session's alone). Everything else in the listing is newer: writers it does not
//! name (open or closed), read from their logs as any refresh reads them, and truncates, which
//! apply to its extents by time as to any other. A compaction removes the droppings of the
//! writers it retires, and a truncate to zero (a wipe) removes them all: the base then no
//! longer holds, and the state starts again from every log. A writer that wrote nothing has a
//! close dropping but no chunk: every such dropping counts as covered (it adds nothing to the
//! map either way), so one made after the flattening changes the signature and the logs decide,
//! as before.

use super::IndexState;
use crate::container::Container;
use crate::error::{Error, Result};
use crate::extent::Key;
use crate::format::{flat, flat::FlatItem, MetaDropping, FLAT_NAME};
use crate::sys::{Access, Dir};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What the flattened index a state was loaded from covers.
#[derive(Debug, Clone)]
pub(crate) struct FlatBase {
    /// The signature it records.
    pub sig: u64,
    /// The writers it names (its chunks).
    pub writers: HashSet<u64>,
    /// The truncates it records, as `(ts, size, writer)`.
    pub truncs: HashSet<(u64, u64, u64)>,
}

impl FlatBase {
    /// The base a state just loaded from a flattened index of signature `sig` holds (its chunks
    /// and truncates are the flattened index's alone).
    pub fn of(s: &IndexState, sig: u64) -> FlatBase {
        FlatBase {
            sig,
            writers: s.chunk_by_writer.keys().copied().collect(),
            truncs: s.truncs.clone(),
        }
    }

    /// Whether it is covered by `d`: a dropping of a writer it names, a truncate it records, or
    /// the close dropping of a writer that wrote nothing (no chunk names it, and it adds nothing
    /// to a map; one that came after the flattening changes the signature, and the logs decide).
    fn covers(&self, d: &MetaDropping) -> bool {
        match *d {
            MetaDropping::Close { bytes: 0, .. } => true,
            MetaDropping::Close { writer_id, .. } | MetaDropping::Open { writer_id, .. } => {
                self.writers.contains(&writer_id)
            }
            MetaDropping::Trunc { ts, size, writer_id } => self.truncs.contains(&(ts, size, writer_id)),
        }
    }

    /// Whether the droppings `meta` still hold every dropping it was made from, unchanged (see
    /// the module's comment).
    pub fn holds(&self, meta: &[MetaDropping]) -> bool {
        let covered: Vec<MetaDropping> = meta.iter().filter(|d| self.covers(d)).cloned().collect();
        flat::signature(&covered) == Some(self.sig)
    }

    /// The droppings of `meta` it does not cover: what the logs must answer for.
    pub fn others(&self, meta: &[MetaDropping]) -> Vec<MetaDropping> {
        meta.iter().filter(|d| !self.covers(d)).cloned().collect()
    }
}

impl IndexState {
    /// Loads the flattened index if it is valid for these droppings and this path. It is read
    /// a piece at a time straight into the map (a reader never holds the file, nor a decoded
    /// copy of it); on an error the caller drops this state and merges the logs. With
    /// `partial`, one that writers came after is a base (see the module's comment): the logs
    /// of the writers it does not cover are read next. `listed`: the droppings of a listing of
    /// `c` just taken (its last [`Container::list_meta`]), used instead of a listing of its own
    /// (a flattened index written after that listing covers droppings it lacks: not a base).
    pub(super) fn load_flat(
        &mut self,
        c: &Container,
        logical: &Path,
        partial: bool,
        listed: Option<Vec<MetaDropping>>,
    ) -> Result<bool> {
        // The file first: most containers have none, and then `meta/` is listed once, by the
        // refresh. (A flattened index replaced after this open still holds the signature of the
        // droppings it was made for, which the listing below checks.)
        let (file, len) = match c.dir.open_file_sized(FLAT_NAME, Access::Read) {
            Ok(v) => v,
            Err(e) if crate::sys::is_missing(&e) => return Ok(false),
            Err(e) => return Err(e),
        };
        let meta = match listed {
            Some(m) => m,
            None => c.list_meta()?,
        };
        let whole = flat::signature(&meta);
        if whole.is_none() && !partial {
            return Ok(false);
        }
        let path = c.sub(FLAT_NAME);
        let mut read = |off: u64, buf: &mut [u8]| {
            if file.pread_full(buf, off)? < buf.len() {
                return Err(Error::corrupt(&path, "truncated flattened index"));
            }
            Ok(())
        };
        let mut records = 0u64;
        // Each directory once, however many chunks it holds (a version 3 container holds them
        // all: one open, not one per writer).
        let mut dirs: HashMap<(bool, PathBuf), usize> = HashMap::new();
        let mut item = |it: FlatItem| {
            match it {
                FlatItem::Chunk(ch) => {
                    let d = match dirs.get(&(ch.in_container, ch.dir.clone())) {
                        Some(&d) => d,
                        None => {
                            let dir = if ch.in_container && ch.dir.as_os_str().is_empty() {
                                // The container itself (version 3): its descriptor, again.
                                c.dir.try_clone()?
                            } else if ch.in_container {
                                c.dir.open_dir_beneath(&ch.dir)?
                            } else {
                                Dir::open(&ch.dir)?
                            };
                            let d = self.add_dir(Arc::new(dir.kept()));
                            dirs.insert((ch.in_container, ch.dir.clone()), d);
                            d
                        }
                    };
                    self.chunk_for(d, ch.writer_id, ch.pid, &ch.host);
                }
                FlatItem::Trunc((ts, writer, size)) => self.insert_trunc(ts, size, writer),
                FlatItem::Piece((l, len, phys, ts, writer, chunk)) => {
                    records += 1;
                    self.map.insert_write(l, len, chunk, phys, Key { ts, writer });
                }
                FlatItem::Pattern((start, len, stride, count, phys, pstride, ts_first, ts_last, writer, chunk)) => {
                    records += 1;
                    self.map.insert_pattern(crate::extent::Pattern {
                        start,
                        len,
                        stride,
                        count,
                        chunk,
                        phys,
                        pstride,
                        writer,
                        ts_first,
                        ts_last,
                        ts: None,
                    });
                }
            }
            Ok(())
        };
        let mut head_sig = None;
        let current = &mut |h: &flat::FlatHead| {
            let ok = h.logical == logical && (partial || whole == Some(h.signature));
            head_sig = Some(h.signature).filter(|_| ok);
            ok
        };
        if !flat::decode_stream(&path, len, &mut read, current, &mut item)? {
            return Ok(false);
        }
        let Some(sig) = head_sig else { return Ok(false) };
        self.records_read = records;
        let base = FlatBase::of(self, sig);
        if whole == Some(sig) {
            if !self.listing_confirms(c, flat::signature, Some(sig))? {
                return Ok(false);
            }
            self.flat = Some(base);
            return Ok(true);
        }
        // The refresh asks whether the base holds for this listing (once): where it does not,
        // it starts again from every log of this same listing, which is what the caller would
        // do next.
        self.flat = Some(base);
        self.refresh_n(c, 0, Some(meta))?;
        Ok(true)
    }
}
