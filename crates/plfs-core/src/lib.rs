//! plfs-core: the Parallel Log-structured File System library.
//!
//! A logical file is a *container* directory on a backend file system; each writer appends to its
//! own data log and records where each byte went in its own index log; readers merge the indexes.
//! `docs/design.md` describes the layers and data flow, `docs/format.md` the bytes on disk.
//!
//! The layers, each only using those above it in this list (and the format, a crate of its own,
//! `plfs-format`, which every layer above `sys` may use as `crate::format`):
//!
//! | module | what |
//! |---|---|
//! | [`types`], [`error`], [`log`], `clock` | shared types, errors, logging, the ordering clock |
//! | `sys` | the backend I/O seam: raw system calls, failpoints, symlink policy, fallbacks; it knows no names in containers |
//! | [`config`] | the plfsrc |
//! | `extent` | the merged index: an ordered map of non-overlapping pieces |
//! | `mount` | backends of a mount point and where a logical path lives on them |
//! | `container` | a container on its backend: create, open, droppings, hostdirs |
//! | `index` | loading and refreshing a container's merged index |
//! | `xattr` | extended attributes of a container |
//! | `legacy` | reading files written by PLFS 2.x (N-1 containers, 1-N directories) |
//! | `layout` | how a regular file is stored: N-1 containers, N-N plain files, 1-N packed files |
//! | `namespace` | [`Plfs`]: path resolution and every operation, dispatched once |
//! | [`tools`], [`fsck`], [`upgrade`], [`compact`] | map, query, flatten; fsck and verify; converting PLFS 2.x files; compaction |
//! | `frontend` | what the front ends need of the layers below, by name (re-exported here) |
//!
//! The API is what this file makes public: the modules declared `pub` below and the items it
//! re-exports; `sys`, `clock` and the format stay crate-private (scripts/check-architecture.py).
//! All backend I/O goes through raw system calls in `sys`, never through interposable libc
//! symbols, so the LD_PRELOAD front end can embed this crate without intercepting itself.

// One group per row of the picture in docs/design.md ("Inside the core"), bottom row first: a
// module may only use those declared before it (scripts/check-architecture.py).
pub(crate) mod clock;
pub mod error;
pub mod log;
pub mod types;

pub(crate) mod sys;

pub mod config;

pub(crate) mod extent;

pub(crate) mod mount;

pub(crate) mod container;

pub(crate) mod index;
pub(crate) mod legacy;
pub(crate) mod xattr;

pub(crate) mod layout;

pub(crate) mod namespace;

pub mod compact;
pub mod fsck;
pub mod tools;
pub mod upgrade;

pub(crate) mod frontend;
#[doc(hidden)]
pub mod testing;

/// The on-disk format: a crate of its own below the core (bytes in, records out, no I/O); for the
/// core's modules, `crate::format`. Not part of the core's API: a front end that needs a name or a
/// limit of the format gets it from the named items below.
pub(crate) use plfs_format as format;

pub use config::Config;
pub use error::{Error, Result};
pub use layout::OpenFile;
pub use namespace::{InMount, Logical, MountId, Plfs};
pub use sys::descriptors_anywhere;
pub use sys::failpoint;
pub use sys::may_be_kept_descriptor;
pub use sys::TimeSpec;
pub use types::{DirEntry, FileFormat, FileKind, IndexStats, OpenFlags, PackedUsage, Stat, Storage};

// What the front ends (ldplfs, the C API, FUSE, the CLI) need of the layers below, each by name:
// the layers themselves (`sys`, `format`, `clock`...) are not part of the core's API
// (scripts/check-architecture.py).
pub use frontend::{
    grow_fd_table, hostname, is_trash_name, pid, probe_backend, random_u64, umask, umask_now, user_name, ProbeItem,
    FORMAT_VERSION, HIGH_FD, MARKER_NAME, MAX_XATTR_VALUE, TMP_PREFIX,
};
