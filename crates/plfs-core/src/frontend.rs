//! What the front ends (ldplfs, the C API, FUSE, the CLI) need of the layers below, each by name,
//! re-exported at the crate's root: the layers themselves (`sys`, `format`, `clock`...) are not
//! part of the core's API (issue 27, item 2; scripts/check-architecture.py).

use crate::error::Result;
use crate::{format, sys};

pub use crate::clock::{hostname, pid, random_u64};
pub use crate::format::FORMAT_VERSION;
pub use crate::sys::probe::ProbeItem;
pub use crate::sys::{grow_fd_table, umask, umask_now, user_name, HIGH_FD};

/// The largest value of an extended attribute (`plfs_setxattr`), in bytes.
pub const MAX_XATTR_VALUE: usize = format::xattr::MAX_VALUE;

/// The name of a container's marker file: the file whose (device, inode) identifies a container,
/// for its locks among others, whatever the container's name or path.
pub const MARKER_NAME: &str = format::MARKER_NAME;

/// The prefix of every temporary name plfs makes on a backend (atomic writes, trash, probes);
/// fsck knows such names as debris. A front end that makes a scratch file on a backend names it
/// with this prefix.
pub const TMP_PREFIX: &str = format::TMP_PREFIX;

/// Whether a backend name (a container's directory name) is a trash name: the container was
/// unlinked, or replaced by a rename, while a descriptor still had it open.
pub fn is_trash_name(name: &[u8]) -> bool {
    name.starts_with(format::TRASH_PREFIX.as_bytes()) || name.starts_with(format::RENAME_TRASH_PREFIX.as_bytes())
}

/// Tries every feature plfs relies on or falls back from on the backend directory at `path` (as
/// configured), in a scratch directory made and removed inside it (`plfs config check`).
pub fn probe_backend(path: &std::path::Path) -> Result<Vec<ProbeItem>> {
    sys::probe::probe_path(path, format::TMP_PREFIX)
}
