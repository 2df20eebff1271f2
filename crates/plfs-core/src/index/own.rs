//! What this process writes itself: its writes reach its merged index from the write path
//! ([`IndexState::note_write`]), and its writers' open droppings do not stop a refresh from
//! stopping after `meta/` ([`quiet_signature`]; docs/design.md, "Data flow of a read", step 3).

use super::IndexState;
use crate::extent::Key;
use crate::format::{self, MetaDropping, WriteRecord};
use crate::sys::Dir;
use std::sync::Arc;

impl IndexState {
    /// Notes a write this process made through writer `(id, pid, host)` into its data log in
    /// `dir` (the record its index log will get): the merged index stays current without a
    /// refresh. `checksummed`: the writer's logs carry data checksums.
    pub(crate) fn note_write(&mut self, dir: Arc<Dir>, writer: (u64, u32, &str), w: &WriteRecord, checksummed: bool) {
        let (id, pid, host) = writer;
        if self.last_own != Some(id) {
            if !self.own.contains(&id) {
                // A writer new to this map: the next refresh reads everything once more (a wipe
                // before its open dropping was made would otherwise go unseen, see
                // `insert_trunc`).
                self.own_writers_here();
                self.own.insert(id);
                self.quiet_sig = None;
            }
            self.last_own = Some(id);
        }
        let d = self.add_dir(dir);
        let chunk = self.chunk_for(d, id, pid, host);
        self.map.insert_write(
            w.logical_off,
            w.length,
            chunk,
            w.physical_off,
            Key { ts: w.ts, writer: id },
        );
        if checksummed {
            self.sums.enable(chunk);
            self.sums
                .add(chunk, w.physical_off, w.length, w.logical_off, w.data_crc);
        }
    }

    /// Takes writers `ids` of this process as its own (all their records are in their index
    /// logs, which the next refresh reads if it has not): as [`IndexState::note_write`] does for
    /// a writer new to the map, the next refresh reads everything once more.
    pub(crate) fn adopt_own(&mut self, ids: &[u64]) -> &mut IndexState {
        if ids.iter().any(|id| !self.own.contains(id)) {
            self.own_writers_here();
            self.own.extend(ids);
            self.quiet_sig = None;
        }
        self
    }

    /// Forgets the writers noted by another process (the parent this one was forked from).
    pub(super) fn own_writers_here(&mut self) {
        let pid = crate::clock::pid();
        if self.own_pid != pid {
            self.own.clear();
            self.last_own = None;
            self.own_pid = pid;
            self.quiet_sig = None;
        }
    }

    /// The signature of a container's droppings, or `None` when a writer other than this
    /// process's own has the file open. Its own writers' open droppings count as names: one that
    /// comes or goes changes it.
    pub(super) fn quiet_signature(&self, droppings: &[MetaDropping]) -> Option<u64> {
        format::flat::signature_with(droppings, |w| self.own.contains(&w))
    }
}
