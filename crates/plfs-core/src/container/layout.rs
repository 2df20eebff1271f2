//! Which layout a container has (format.md §1, §2), told without trusting its marker, as fsck
//! must where the marker may be damaged: what the container holds proves it, or cannot.

use super::read_marker;
use crate::error::Result;
use crate::format::{self, MetaDropping};
use crate::sys::Dir;
use std::os::unix::ffi::OsStrExt;

/// Whether the container in `dir` is one directory (format 3), as fsck must tell it when the
/// marker may be damaged or missing: by the marker's version where it reads whole, else by what
/// the container holds ([`proven_layout`]), else by whether `meta/` is missing.
pub(crate) fn layout_by_sight(dir: &Dir) -> Result<bool> {
    if let Ok(m) = read_marker(dir) {
        return Ok(m.version >= 3);
    }
    match proven_layout(dir)? {
        Some(flat) => Ok(flat),
        None => Ok(dir.stat_opt(format::META_DIR)?.is_none()),
    }
}

/// The layout what the container in `dir` holds proves, whatever its marker says: `Some(false)`
/// (version 2) where it has `meta/` and no dropping or log of its own, `Some(true)` (version 3)
/// where it has no `meta/` and droppings or logs of its own (a version 2 container keeps them
/// in `meta/` and its hostdirs), or neither those nor a hostdir (an empty version 3 file is its
/// marker alone; a version 2 one has `meta/`). `None`: it could be either.
pub(crate) fn proven_layout(dir: &Dir) -> Result<Option<bool>> {
    let names = dir.list()?;
    let mut meta = false;
    let mut own = false;
    let mut hostdir = false;
    for n in &names {
        let b = n.as_bytes();
        if b == format::META_DIR.as_bytes() {
            meta = true;
        } else if b.starts_with(format::HOSTDIR_PREFIX.as_bytes()) {
            hostdir = true;
        } else if n
            .to_str()
            .is_some_and(|s| MetaDropping::parse(s).is_some() || format::parse_log_name(s).is_some())
        {
            own = true;
        }
    }
    Ok(match (meta, own) {
        (true, false) => Some(false),
        (false, true) => Some(true),
        (false, false) if !hostdir => Some(true),
        _ => None,
    })
}
