//! plfs-core: the Parallel Log-structured File System library.
//!
//! A logical file is a *container* directory on a backend file system; each writer appends to its
//! own data log and records where each byte went in its own index log; readers merge the indexes.
//! `docs/design.md` describes the layers and data flow, `docs/format.md` the bytes on disk.
//!
//! The layers, each only using those above it in this list:
//!
//! | module | what |
//! |---|---|
//! | [`types`], [`error`], [`log`], [`clock`] | shared types, errors, logging, the ordering clock |
//! | [`sys`] | the backend I/O seam: raw system calls, failpoints, symlink policy, fallbacks |
//! | [`config`] | the plfsrc |
//! | [`format`] | every byte on disk: records, headers, names, flattened index, 1-N logs |
//! | `extent` | the merged index: an ordered map of non-overlapping pieces |
//! | `mount` | backends of a mount point and where a logical path lives on them |
//! | `container` | a container on its backend: create, open, droppings, hostdirs |
//! | `index` | loading and refreshing a container's merged index |
//! | `xattr` | extended attributes of a container |
//! | `legacy` | reading files written by PLFS 2.x (N-1 containers, 1-N directories) |
//! | `layout` | how a regular file is stored: N-1 containers, N-N plain files, 1-N packed files |
//! | `namespace` | [`Plfs`]: path resolution and every operation, dispatched once |
//! | [`tools`], [`fsck`], [`upgrade`], [`compact`] | map, query, flatten; fsck and verify; converting PLFS 2.x files; compaction |
//!
//! All backend I/O goes through raw system calls in [`sys`], never through interposable libc
//! symbols, so the LD_PRELOAD front end can embed this crate without intercepting itself.

// One group per row of the picture in docs/design.md ("Inside the core"), bottom row first: a
// module may only use those declared before it (scripts/check-architecture.py).
pub mod clock;
pub mod error;
pub mod log;
pub mod types;

pub mod sys;

pub mod config;

pub(crate) mod extent;
pub mod format;

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

pub use config::Config;
pub use error::{Error, Result};
pub use layout::OpenFile;
pub use namespace::Plfs;
pub use sys::descriptors_anywhere;
pub use sys::failpoint;
pub use sys::TimeSpec;
pub use types::{DirEntry, FileFormat, FileKind, IndexStats, OpenFlags, PackedUsage, Stat, Storage};
