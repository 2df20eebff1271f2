//! Compaction and space accounting (`plfs compact`, `plfs du`, `plfs stat`): rewriting a file's
//! live data into fresh logs so that a file that is rewritten again and again stays within a
//! bounded multiple of its size, with few files in its container, and reads at a steady speed.
//!
//! - An N-1 file ([`compact`]): the live extents of every closed writer's logs are copied into
//!   one new log with their original timestamps, trunc droppings are folded, and the old logs are
//!   retired through a journal; a crash at any point leaves the old state or the new one
//!   (docs/design.md, "Compaction"; the journal is in docs/format.md §14).
//! - The packed (1-N) files of a directory ([`compact_packed_dir`]): every log of the directory
//!   is rewritten into one, without deleted or replaced files and overwritten data.
//!
//! Automatic compaction (plfsrc `auto_compaction`, `compaction_dead_ratio`,
//! `compaction_min_bytes`) runs the same code when the last writer of a process closes a file,
//! and every `compaction_min_bytes / 2` written by a writer that stays open (doubling after each
//! check that found too little dead).

use crate::error::{Error, Result};
use crate::namespace::{Entry, Plfs};
use rustix::io::Errno;
use std::path::Path;

pub use crate::layout::compaction::{worth_it, CompactOptions as Options, CompactReport as Report};
pub use crate::layout::compaction::{CompactStatus as Status, Usage, MAX_TRUNCS};

/// Compacts one logical file. An N-1 file is compacted itself; for a packed 1-N file, the logs of
/// its directory are (they are shared by all its files). A plain N-N file has nothing to
/// compact: `EINVAL`.
pub fn compact(plfs: &Plfs, path: &Path, opts: &Options) -> Result<Report> {
    let loc = plfs.resolve(path)?;
    match plfs.lookup(&loc)? {
        Entry::File(n) => {
            if let Some(r) = n.compact(opts) {
                return r;
            }
            let parent = loc.parent();
            if let Some(r) = plfs.layout(&parent).compact_dir(&parent, opts) {
                return r;
            }
            Err(loc.err(Errno::INVAL, "a plain file: nothing to compact"))
        }
        Entry::Missing => Err(loc.not_found()),
        Entry::Dir(..) => Err(loc.err(Errno::ISDIR, "is a directory")),
        Entry::Symlink(..) => Err(loc.err(Errno::INVAL, "a symbolic link: nothing to compact")),
    }
}

/// Compacts the packed (1-N) logs of logical directory `dir`; `Ok(None)` on a mount whose
/// workload packs nothing.
pub fn compact_packed_dir(plfs: &Plfs, dir: &Path, opts: &Options) -> Result<Option<Report>> {
    let loc = plfs.resolve(dir)?;
    match plfs.lookup(&loc)? {
        Entry::Dir(..) => plfs.layout(&loc).compact_dir(&loc, opts).transpose(),
        Entry::Missing => Err(loc.not_found()),
        _ => Err(Error::errno(
            Errno::NOTDIR,
            format!("{}: not a directory", loc.logical.display()),
        )),
    }
}

/// Space used by one logical file: logical, physical, data, live and dead bytes, files in
/// `meta/`, logs, retired data logs awaiting readers. `Ok(None)` for files without logs of their
/// own (plain N-N files, packed 1-N files: see [`crate::Plfs::small_usage`]).
pub fn usage(plfs: &Plfs, path: &Path) -> Result<Option<Usage>> {
    let loc = plfs.resolve(path)?;
    match plfs.lookup(&loc)? {
        Entry::File(n) => n.usage().transpose(),
        Entry::Missing => Err(loc.not_found()),
        _ => Ok(None),
    }
}
