//! What every conversion of `plfs upgrade` shares: copying an old file's data into a new
//! container and comparing the two ([`Transfer`]), and putting the new container in the old
//! one's place ([`swap`]).

use crate::container::{Container, DirExt};
use crate::error::{Error, Result};
use crate::format;
use crate::layout::n1::{ContainerNode, Registry};
use crate::layout::{Node, OpenFile};
use crate::mount::Loc;
use crate::sys::{Dir, TimeSpec};
use crate::types::OpenFlags;
use std::ffi::OsStr;
use std::path::PathBuf;

/// Copy and compare in pieces of this size.
pub(super) const CHUNK: u64 = 8 << 20;

/// What one upgrade did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upgraded {
    /// The logical file.
    pub logical: PathBuf,
    /// Its size.
    pub size: u64,
    /// Data bytes copied (holes excluded).
    pub copied: u64,
}

pub(super) fn ro() -> OpenFlags {
    OpenFlags {
        read: true,
        ..Default::default()
    }
}

/// Nanoseconds since the epoch as a [`TimeSpec`].
fn at(ns: i64) -> TimeSpec {
    TimeSpec::At(ns.div_euclid(1_000_000_000), ns.rem_euclid(1_000_000_000))
}

/// Reads `[pos, pos + buf.len())` of both and fails unless they are equal.
pub(super) fn compare(
    what: &std::path::Path,
    pos: u64,
    want: &mut [u8],
    got: &mut [u8],
    old: impl FnOnce(&mut [u8]) -> Result<usize>,
    new: &OpenFile,
) -> Result<()> {
    let n = want.len();
    let a = old(want)?;
    let b = new.read(got, pos)?;
    if a != n || b != n || want != got {
        return Err(Error::corrupt(
            what,
            format!("the converted copy differs from the original near offset {pos}"),
        ));
    }
    Ok(())
}

/// The data of one conversion: the old file's data copied into the new container, then both
/// compared, with the progress of the two.
pub(super) struct Transfer<'a> {
    /// Reads the old file (a PLFS 2.x one, or a version 2 container): `buf.len()` bytes at an
    /// offset, fewer only at its end.
    pub(super) old: &'a mut dyn FnMut(&mut [u8], u64) -> Result<usize>,
    /// The old file's backend path, for messages.
    pub(super) old_path: PathBuf,
    /// The file's size.
    pub(super) size: u64,
    /// Data bytes to copy plus bytes to compare.
    pub(super) total: u64,
    /// Bytes copied and compared so far.
    pub(super) done: u64,
    pub(super) buf: Vec<u8>,
    pub(super) mine: Vec<u8>,
    pub(super) progress: &'a mut dyn FnMut(u64, u64),
}

impl Transfer<'_> {
    /// Copies the data `runs` into a node of the new container made by `node` (a piece of zeros
    /// stays a hole), sets its size, then the times `atime` and `mtime_ns`.
    pub(super) fn copy(
        &mut self,
        node: &dyn Fn(Registry) -> ContainerNode,
        runs: &[(u64, u64)],
        atime: TimeSpec,
        mtime_ns: i64,
    ) -> Result<()> {
        let size = self.size;
        let n = node(Registry::default());
        let pid = std::process::id();
        let w = n.open(wo(), pid, true)?;
        for &(off, len) in runs {
            let mut pos = off;
            while pos < off + len {
                let k = (off + len - pos).min(CHUNK) as usize;
                if (self.old)(&mut self.buf[..k], pos)? != k {
                    return Err(Error::corrupt(&self.old_path, format!("short read at {pos}")));
                }
                if self.buf[..k].iter().any(|&x| x != 0) {
                    w.write(&self.buf[..k], pos)?;
                }
                pos += k as u64;
                self.done += k as u64;
                (self.progress)(self.done, self.total);
            }
        }
        if size > runs.last().map_or(0, |r| r.0 + r.1) {
            w.truncate(size)?;
        }
        w.sync()?;
        w.close()?;
        // After the close, which raises the mtime.
        n.utimens(atime, at(mtime_ns))
    }

    /// Compares the whole file with a fresh reader of the new container (a node made by `node`;
    /// `path`: the new container, for errors).
    pub(super) fn verify(&mut self, node: &dyn Fn(Registry) -> ContainerNode, path: &std::path::Path) -> Result<()> {
        let (size, total) = (self.size, self.total);
        let pid = std::process::id();
        let r = node(Registry::default()).open(ro(), pid, true)?;
        if r.size()? != size {
            let msg = format!("the converted copy has size {} instead of {size}", r.size()?);
            return Err(Error::corrupt(path, msg));
        }
        let mut pos = 0u64;
        while pos < size {
            let k = (size - pos).min(CHUNK) as usize;
            let old = |b: &mut [u8]| (self.old)(b, pos);
            compare(path, pos, &mut self.buf[..k], &mut self.mine[..k], old, &r)?;
            pos += k as u64;
            self.done += k as u64;
            (self.progress)(self.done.min(total), total);
        }
        r.close()
    }
}

/// Puts the new container `tmp` in place of the legacy one at `name` in `parent`; returns the
/// name the legacy one has then.
pub(super) fn swap(parent: &Dir, tmp: &str, name: &OsStr, legacy_dir: &Dir) -> Result<String> {
    if parent.exchange(tmp, parent, name)? {
        return Ok(tmp.to_string());
    }
    // No RENAME_EXCHANGE on this backend: the fallback of renames over a file (design.md,
    // "Backends"). Between the two renames the name is missing; after a crash there, fsck moves
    // the original back under the name it records.
    let trash = format::tmp_name(format::RENAME_TRASH_PREFIX, crate::clock::random_u64());
    legacy_dir.write_atomic(format::RENAME_NAME_FILE, name.as_encoded_bytes(), 0o600)?;
    parent.rename(name, parent, &trash)?;
    if let Err(e) = parent.rename(tmp, parent, name) {
        match parent.rename(&trash, parent, name) {
            Ok(()) => {
                let _ = legacy_dir.unlink_opt(format::RENAME_NAME_FILE);
            }
            Err(e2) => crate::warn!("{e2}: could not move the original back after a failed rename (plfs fsck does)"),
        }
        return Err(e);
    }
    Ok(trash)
}

/// Flags of the writer that fills a new file.
fn wo() -> OpenFlags {
    OpenFlags {
        write: true,
        ..Default::default()
    }
}

/// The location of the new container built beside the file of `loc` under the name `tmp`.
pub(super) fn beside(loc: &Loc, tmp: &str) -> Loc {
    Loc {
        mount: loc.mount.clone(),
        idx: loc.idx,
        rel: loc.parent_rel().join(tmp),
        logical: loc.logical.clone(),
    }
}

/// Removes the partial new container `tmp` in `parent` (on canonical backend `b`) and its shadow
/// directories, after a failed conversion (best effort: the error that stopped it is reported).
pub(super) fn discard(loc: &Loc, b: usize, parent: &Dir, tmp: &str) {
    if let Ok(c) = Container::open(&loc.mount, b, &beside(loc, tmp).rel) {
        let _ = c.remove_shadows();
    }
    let _ = parent.remove_tree(tmp);
}
