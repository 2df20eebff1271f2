//! Reading files written by the original PLFS 2.x (2.0 to 2.5.1), read-only: N-1 containers
//! ([`LegacyContainer`], [`LegacyIndex`]) and 1-N directories ([`LegacySmallDir`]).
//! docs/format.md ("Legacy formats read") lists what is supported and what is not; the bytes and
//! names are decoded by [`crate::format::legacy`].
//!
//! A legacy container is a directory holding `.plfsaccess113918400`. Its index logs hold 48-byte
//! native `HostEntry` records; its size is in the names of `meta/` droppings; some hostdirs may be
//! metalinks to shadow backends. Nothing in it is trusted: every name, number, record and link is
//! checked, and damage is an error naming the file ([`crate::Error::Corruption`], EIO), never a
//! hole or a panic.
//!
//! Layer: above `mount` (it reads backends through [`crate::sys`] and resolves metalinks against
//! the mount's backends), below `layout` (whose `layout::legacy` makes these files nodes of the
//! namespace).

mod container;
mod index;
mod metalink;
mod small;

pub use container::LegacyContainer;
pub use index::LegacyIndex;
pub use small::{LegacySmallDir, SmallStat};

use crate::error::{Error, Result};
use crate::sys::{self, RawStat};
use rustix::io::Errno;
use std::path::Path;

/// The error of every refused change to a legacy file (EROFS), naming the command that makes it
/// writable.
pub fn read_only(logical: &Path) -> Error {
    Error::errno(
        Errno::ROFS,
        format!(
            "{0}: written by PLFS 2.5; run `plfs upgrade {0}` to make it writable",
            logical.display()
        ),
    )
}

/// Attributes of a legacy file.
#[derive(Debug, Clone, Copy)]
pub struct LegacyStat {
    /// lstat of the access file (mode, owner, times).
    pub access: RawStat,
    /// Logical size.
    pub size: u64,
    /// 512-byte blocks.
    pub blocks: u64,
    /// Modification time, ns: the later of the access file's and the last close.
    pub mtime_ns: i64,
    /// True if the size came from the index (a writer is or was open, or `meta/` could not tell).
    pub from_index: bool,
}

/// Attributes of a legacy container: mode, owner and times from the access file, the size from
/// the meta droppings (max last offset; blocks from the bytes written), or from the index when a
/// writer has an open record, `meta/` has no size dropping, or one of its names does not parse.
pub fn stat(c: &LegacyContainer) -> Result<LegacyStat> {
    let access = c.access_stat()?;
    let meta = c.meta()?;
    let mut mtime_ns = sys::mtime_ns(&access);
    for (_, _, ns, _) in &meta.sizes {
        mtime_ns = mtime_ns.max(*ns);
    }
    if !meta.open.is_empty() || meta.sizes.is_empty() || !meta.unparsed.is_empty() {
        if !meta.unparsed.is_empty() {
            crate::warn!(
                "{}/meta: unrecognised meta droppings {:?}; taking the size from the index",
                c.path().display(),
                meta.unparsed
            );
        }
        let idx = LegacyIndex::load(c)?;
        return Ok(LegacyStat {
            access,
            size: idx.size(),
            blocks: idx.bytes().div_ceil(512),
            mtime_ns,
            from_index: true,
        });
    }
    let size = meta.sizes.iter().map(|s| s.0).max().unwrap_or(0);
    let blocks = meta.sizes.iter().map(|s| s.1.div_ceil(512)).sum();
    Ok(LegacyStat {
        access,
        size,
        blocks,
        mtime_ns,
        from_index: false,
    })
}

/// An open legacy file: its container and merged index.
#[derive(Debug)]
pub struct LegacyFile {
    /// The container.
    pub container: LegacyContainer,
    /// Its merged index, loaded at open.
    pub index: LegacyIndex,
    /// The latest close time in its `meta/` droppings, ns.
    closed_ns: i64,
}

impl LegacyFile {
    /// Opens a legacy container for reading: loads its index (every data log it names is checked).
    pub fn open(container: LegacyContainer) -> Result<LegacyFile> {
        let index = LegacyIndex::load(&container)?;
        let closed_ns = container.meta()?.sizes.iter().map(|s| s.2).max().unwrap_or(i64::MIN);
        Ok(LegacyFile {
            container,
            index,
            closed_ns,
        })
    }

    /// Attributes of the open file: as [`stat`], with the size of the loaded index.
    pub fn stat(&self) -> Result<LegacyStat> {
        let access = self.container.access_stat()?;
        Ok(LegacyStat {
            access,
            size: self.index.size(),
            blocks: self.index.bytes().div_ceil(512),
            mtime_ns: sys::mtime_ns(&access).max(self.closed_ns),
            from_index: true,
        })
    }
}
