//! Opening an N-1 file that was unlinked while another process had it open: its container then
//! sits under a trash name in the directory its name was in (design.md "Unlink"), and is found
//! there by its identity (the marker's `(st_dev, st_ino)`), never by a name alone.

use super::{ContainerNode, Registry};
use crate::container::Container;
use crate::error::{Error, Result};
use crate::format;
use crate::layout::{Node, OpenFile};
use crate::mount::Loc;
use crate::sys;
use crate::types::OpenFlags;
use rustix::io::Errno;
use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;

/// Whether `name` is one an unlink or a replacing rename moves a container aside to.
fn is_trash_name(name: &[u8]) -> bool {
    name.starts_with(format::TRASH_PREFIX.as_bytes()) || name.starts_with(format::RENAME_TRASH_PREFIX.as_bytes())
}

/// Opens the container whose marker has identity `ident`, renamed aside (unlinked, or replaced
/// by a rename) in the directory of `loc` on any canonical backend, as the logical file `loc`
/// (an open of it reports `st_nlink` 0, and its last closer deletes it). `Ok(None)` if there is
/// none: it was deleted already, or it never was unlinked there.
///
/// Only entries with a trash name are looked at; each is opened as a directory without
/// following a link, and its marker is compared by `lstat`. The handle opens the trash name
/// again if it must (never the logical name), so a container deleted meanwhile gives `ENOENT`,
/// not another file.
pub(crate) fn open_trashed(
    reg: &Arc<Registry>,
    loc: &Loc,
    ident: (u64, u64),
    flags: OpenFlags,
    pid: u32,
) -> Result<Option<OpenFile>> {
    for b in 0..loc.mount.canonical.len() {
        let parent = match loc.parent_dir(b) {
            Ok(p) => p,
            Err(e) if e.is_not_found() || e.raw_errno() == Errno::NOTDIR.raw_os_error() => continue,
            Err(e) => return Err(e),
        };
        for name in parent.list()? {
            if !is_trash_name(name.as_bytes()) {
                continue;
            }
            let d = match parent.open_dir(&name) {
                Ok(d) => d,
                Err(e) if sys::is_missing(&e) || is_not_dir(&e) => continue,
                Err(e) => return Err(e),
            };
            match d.stat_opt(format::MARKER_NAME)? {
                Some(st) if sys::is_file(&st) && (st.st_dev, st.st_ino) == ident => {}
                _ => continue,
            }
            // Its marker may go between the look and the open: it was being deleted.
            let c = match Container::from_dir(&loc.mount, b, d) {
                Ok(c) => c,
                Err(e) if e.raw_errno() == Errno::ISDIR.raw_os_error() => return Ok(None),
                Err(e) => return Err(e),
            };
            let at = Loc {
                rel: loc.parent_rel().join(&name),
                ..loc.clone()
            };
            let st = c.marker;
            let node = ContainerNode::with(reg.clone(), at, c, st);
            return match node.open(flags, pid, false) {
                Ok(f) => Ok(Some(f)),
                Err(e) if e.is_not_found() => Ok(None),
                Err(e) => Err(e),
            };
        }
    }
    Ok(None)
}

/// A trash entry that is not a directory (or is a link, which is never followed).
fn is_not_dir(e: &Error) -> bool {
    e.raw_errno() == Errno::NOTDIR.raw_os_error() || e.raw_errno() == Errno::LOOP.raw_os_error()
}
