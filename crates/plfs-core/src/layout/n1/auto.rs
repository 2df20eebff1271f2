//! This process's automatic compaction of an N-1 container ([`crate::layout::compaction::AutoState`])
//! at the last writer's close and, for writers that stay open, every `compaction_min_bytes / 2`
//! written, which first moves the process's own writers to fresh logs so that what they wrote so
//! far can be compacted ([`super::compact`]).

use super::compact::compact;
use super::shared::{lock, Shared};
use crate::error::Result;
use crate::format::{self, MetaDropping};
use crate::layout::compaction::{worth_it, CompactOptions};
use std::collections::HashSet;
use std::sync::atomic::Ordering;

/// Ids of this process's writers on the file.
fn own_ids(sh: &Shared) -> HashSet<u64> {
    lock(&sh.writers).keys().copied().collect()
}

/// Bytes written between two checks of a writer that stays open: at least half of
/// `compaction_min_bytes`, more after checks that found too little dead.
fn check_every(sh: &Shared) -> u64 {
    let least = (sh.c.mount.global.compaction_min_bytes / 2).max(256 << 10);
    least.max(sh.auto.interval.load(Ordering::Relaxed))
}

/// After a write of `n` bytes by this process. The write path decides from what the process
/// knows and nothing else: only when its own writers have provably overwritten their own bytes
/// (they wrote more than the span they cover) does it go on to the real check, which lists the
/// container and reads the index. An appending or strided writer therefore never lists, stats or
/// opens anything while it writes, whatever other writers do (issue 22).
#[inline]
pub(crate) fn after_write(sh: &Shared, n: u64) {
    if !sh.c.mount.global.auto_compaction {
        return;
    }
    sh.auto.wrote.store(true, Ordering::Relaxed);
    let every = check_every(sh);
    if sh.auto.since.fetch_add(n, Ordering::Relaxed) + n < every {
        return;
    }
    check_own_overwrites(sh);
}

/// [`after_write`] once `check_every` bytes were written since the last check (out of line:
/// the test above runs at every write).
#[cold]
#[inline(never)]
fn check_own_overwrites(sh: &Shared) {
    sh.auto.since.store(0, Ordering::Relaxed);
    let g = &sh.c.mount.global;
    let (bytes, span) = own_bytes_and_span(sh);
    if worth_it(bytes, span, 0, g.compaction_min_bytes, g.compaction_dead_permille) {
        maybe(sh, true);
    }
}

/// The bytes this process's open writers wrote, and the end of the furthest of them: every one
/// of those bytes lies below that end, so at least `bytes - end` of them were overwritten.
fn own_bytes_and_span(sh: &Shared) -> (u64, u64) {
    let (mut bytes, mut end) = (0u64, 0u64);
    for w in lock(&sh.writers).values() {
        let wg = lock(w);
        bytes = bytes.saturating_add(wg.bytes);
        end = end.max(wg.eof);
    }
    (bytes, end)
}

/// After a truncate by this process that left a trunc dropping.
pub(crate) fn after_truncate(sh: &Shared) {
    if !sh.c.mount.global.auto_compaction {
        return;
    }
    sh.auto.wrote.store(true, Ordering::Relaxed);
    if sh.auto.truncs.fetch_add(1, Ordering::Relaxed) + 1 > crate::layout::compaction::MAX_TRUNCS {
        maybe(sh, true);
    }
}

/// After this process's last writer on the file closed. It decides from what the process knows
/// and looks at the backend (a listing of `meta/`, then maybe the index) only when its own
/// writes overwrote enough of themselves, or it truncated: a checkpoint written once costs its
/// close nothing but the close record (issue 22). Overwrites between processes that each wrote
/// once are left to `plfs compact`, or to a later writer that overwrites.
pub(crate) fn after_last_close(sh: &Shared) {
    let bytes = sh.auto.closed_bytes.swap(0, Ordering::Relaxed);
    let end = sh.auto.closed_end.swap(0, Ordering::Relaxed);
    let wrote = sh.auto.wrote.swap(false, Ordering::Relaxed);
    let g = &sh.c.mount.global;
    let truncated = sh.auto.truncs.load(Ordering::Relaxed) > 0;
    if g.auto_compaction
        && wrote
        && (truncated || worth_it(bytes, end, 0, g.compaction_min_bytes, g.compaction_dead_permille))
    {
        maybe(sh, false);
    }
    super::flat_close::after_last_close(sh, bytes > 0 || truncated);
}

fn maybe(sh: &Shared, online: bool) {
    if sh.auto.running.swap(true, Ordering::Acquire) {
        return;
    }
    sh.auto.since.store(0, Ordering::Relaxed);
    sh.auto.truncs.store(0, Ordering::Relaxed);
    // A writer that does not read keeps no merged index: one loaded by this check is dropped
    // after it, so the writer's memory stays bounded by its index buffer (issue 22).
    let had_index = lock(&sh.index).is_some();
    let r = check_and_compact(sh, online);
    if online && !had_index {
        sh.reset_index();
    }
    let every = check_every(sh);
    // Back off whatever the result, except after a compaction: a check that was skipped (other
    // writers open) or found too little dead would find the same at the next minimum.
    match r {
        Ok(Check::Compacted) => sh.auto.interval.store(0, Ordering::Relaxed),
        _ => sh
            .auto
            .interval
            .store(every.saturating_mul(2).min(1 << 40), Ordering::Relaxed),
    }
    sh.auto.running.store(false, Ordering::Release);
    if let Err(e) = &r {
        crate::warn!("{}: automatic compaction: {e}", sh.logical.display());
    }
}

/// What a check did.
enum Check {
    /// Stopped before reading the index (below the thresholds, other writers open...): the
    /// next online check waits twice as long.
    Skipped,
    /// Read the index and found too little dead: the next online check waits twice as long.
    Kept,
    /// Compacted: the next online check comes after the minimum again.
    Compacted,
}

/// The cheap test first (the droppings: bytes written against the size), then the exact one
/// (the merged index), then the compaction. Nothing happens while writers of other processes
/// have the file open: the last of them to close compacts it.
fn check_and_compact(sh: &Shared, online: bool) -> Result<Check> {
    if sh.is_unlinked() {
        return Ok(Check::Skipped);
    }
    let g = &sh.c.mount.global;
    let meta = sh.c.list_meta()?;
    let own = own_ids(sh);
    let mut written = 0u64;
    let mut truncs = 0u64;
    for d in &meta {
        match d {
            MetaDropping::Open { writer_id, .. } if !own.contains(writer_id) => return Ok(Check::Skipped),
            MetaDropping::Close { bytes, .. } => written += bytes,
            MetaDropping::Trunc { .. } => truncs += 1,
            MetaDropping::Open { .. } => {}
        }
    }
    for w in lock(&sh.writers).values() {
        written += lock(w).bytes;
    }
    if written < g.compaction_min_bytes && truncs <= crate::layout::compaction::MAX_TRUNCS {
        return Ok(Check::Skipped);
    }
    // Written bytes against the size is a lower bound of the dead bytes: a file written once
    // stops here without reading its index.
    if !online && truncs <= crate::layout::compaction::MAX_TRUNCS {
        if let Some((size, _)) = format::fast_size(&meta) {
            if !worth_it(written, size, 0, g.compaction_min_bytes, g.compaction_dead_permille) {
                return Ok(Check::Skipped);
            }
        }
    }
    // Refreshed: a merged index cached by an earlier check holds this process's writes but not
    // what other writers wrote since, whose bytes would count as dead.
    let live = sh.with_index(true, |s| Ok(s.live_bytes()))?;
    if !worth_it(
        written,
        live,
        truncs,
        g.compaction_min_bytes,
        g.compaction_dead_permille,
    ) {
        return Ok(Check::Kept);
    }
    let r = compact(
        sh,
        &CompactOptions {
            automatic: true,
            ..Default::default()
        },
    )?;
    crate::debug!(
        "{}: automatic compaction: {} ({} -> {} bytes, {} logs retired, {:.1} ms)",
        sh.logical.display(),
        r.status.code(),
        r.before.physical,
        r.after.physical,
        r.logs_retired,
        r.seconds * 1000.0
    );
    Ok(Check::Compacted)
}
