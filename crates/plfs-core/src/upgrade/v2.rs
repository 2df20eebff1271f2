//! `plfs upgrade` of a version 2 container (format.md §1: `meta/`, a cid dropping, hostdirs) to a
//! one-directory container (format 3), by the steps of the PLFS 2.x conversion (the parent
//! module): the original is locked exclusively, which also tells that no process has it open
//! (every open holds a shared lock on it) and keeps any from opening it until the end; its data is
//! copied into a new container built beside it under `.plfstmp.upgrade.<16 hex>`, and its extended
//! attributes; the copy is read back by a fresh reader and compared byte for byte; the two are
//! swapped with one rename; the original and its shadow directories are removed last. A crash
//! before the swap leaves the original in place beside a partial copy, after it the new file in
//! place beside the original: `plfs fsck` reports either as `upgrade-debris` and `--repair`
//! removes it.

use super::transfer::{beside, discard, swap, Transfer, Upgraded, CHUNK};
use crate::container::{Container, DirExt};
use crate::error::{Error, Result};
use crate::format::{self, xattr::XATTR_DIR};
use crate::index::{IndexState, ReadPlan};
use crate::layout::n1::{ContainerNode, Registry};
use crate::mount::Loc;
use crate::sys::{self, TimeSpec};
use rustix::io::Errno;
use std::ffi::OsStr;
use std::path::Path;
use std::sync::Arc;

/// How long a conversion waits for the container's lock before it calls the file open.
const LOCK_PATIENCE: std::time::Duration = std::time::Duration::from_millis(500);

/// Converts the version 2 container of `loc` on canonical backend `b`.
pub(super) fn upgrade(loc: Loc, b: usize, progress: &mut dyn FnMut(u64, u64)) -> Result<Upgraded> {
    if loc.mount.global.container_format < 3 {
        return Err(loc.err(
            Errno::INVAL,
            "the plfsrc says container_format: 2, so there is no newer format to convert it to",
        ));
    }
    let old = Container::open_real(&loc.mount, b, &loc.rel)?;
    if old.is_flat() {
        return Err(loc.err(Errno::INVAL, "already in this format"));
    }
    // Waited for a moment: a process that forks keeps a copy of every descriptor in the child,
    // and so the shared lock of a file it had open then, until the child's exec or exit (a test
    // thread that spawned `tar` while another closed the file made this EBUSY in CI).
    if !old.dir.try_lock_exclusive_within(LOCK_PATIENCE)? {
        return Err(loc.err(
            Errno::BUSY,
            "the file is open (plfs upgrade converts a file no process has open)",
        ));
    }
    let mut index = IndexState::load(&old, &loc.logical)?;
    let size = index.size();
    let parent = loc.parent_dir(b)?;
    let tmp = format::tmp_name(format::UPGRADE_PREFIX, crate::clock::random_u64());
    let m = old.marker;
    let owner = Some((m.st_uid, m.st_gid));
    let c = Container::create(&loc.mount, b, &parent, OsStr::new(&tmp), m.st_mode & 0o7777, owner)?
        .ok_or_else(|| Error::Exists(parent.sub(&tmp)))?;
    let marker = c.marker;
    let tmploc = beside(&loc, &tmp);
    let fail = |e: Error| {
        discard(&loc, b, &parent, &tmp);
        e
    };
    copy_xattrs(&old, &c).map_err(fail)?;
    drop(c);
    // A private table of open containers: the new one is open nowhere else.
    let node = |reg: Registry| ContainerNode::new(Arc::new(reg), tmploc.clone(), b, marker);
    let logical = loc.logical.clone();
    let mut read_old = |buf: &mut [u8], off: u64| read_index(&mut index, buf, off, &logical);
    let buf = vec![0u8; CHUNK.min(size.max(1)) as usize];
    let mut t = Transfer {
        old: &mut read_old,
        old_path: old.path().to_path_buf(),
        size,
        total: 2 * size,
        done: 0,
        mine: vec![0u8; buf.len()],
        buf,
        progress,
    };
    let runs: Vec<(u64, u64)> = if size > 0 { vec![(0, size)] } else { Vec::new() };
    let atime = TimeSpec::At(m.st_atime, m.st_atime_nsec as i64);
    t.copy(&node, &runs, atime, sys::mtime_ns(&m)).map_err(fail)?;
    t.verify(&node, &parent.sub(&tmp)).map_err(fail)?;
    let superseded = swap(&parent, &tmp, loc.name(), &old.dir).map_err(fail)?;
    if let Err(e) = parent.fsync() {
        crate::warn!("{e}: upgraded, but the directory could not be synced");
    }
    let removed = old.remove_shadows().and_then(|()| parent.remove_tree(&superseded));
    if let Err(e) = removed {
        crate::warn!("{e}: upgraded, but the old container could not be removed (plfs fsck --repair removes it)");
    }
    Ok(Upgraded {
        logical: loc.logical,
        size,
        copied: size,
    })
}

/// Reads `buf.len()` bytes at `off` of the file whose merged index is `s` (fewer at its end).
fn read_index(s: &mut IndexState, buf: &mut [u8], off: u64, logical: &Path) -> Result<usize> {
    let mut plan = ReadPlan::default();
    s.plan_read_all(off, buf.len() as u64, &mut plan)?;
    plan.run(buf, logical)
}

/// Copies every extended attribute of `old` (format.md §12: `xattrs/x.<hex key>`) to `new`.
fn copy_xattrs(old: &Container, new: &Container) -> Result<()> {
    let Some(d) = old.dir.open_dir_opt(XATTR_DIR)? else {
        return Ok(());
    };
    for name in d.list()? {
        let Some(key) = name.to_str().and_then(key_of) else {
            continue; // not an attribute (a temporary file of an interrupted set)
        };
        if let Some(value) = crate::xattr::get(old, &key)? {
            crate::xattr::set(new, &key, &value)?;
        }
    }
    Ok(())
}

/// The key an attribute file `name` holds, if it is one (`x.<hex key>`, the name
/// `format::xattr::file_name` gives).
fn key_of(name: &str) -> Option<Vec<u8>> {
    let hex = name.strip_prefix("x.")?;
    if hex.len() % 2 != 0 {
        return None;
    }
    let key: Option<Vec<u8>> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect();
    key.filter(|k| format::xattr::file_name(k).ok().as_deref() == Some(name))
}
