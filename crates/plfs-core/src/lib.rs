//! plfs-core: the Parallel Log-structured File System library.
//!
//! A logical file is a *container* directory on a backend file system; each writer appends to its
//! own data log and records where each byte went in its own index log; readers merge the indexes.
//! `docs/design.md` describes the layers and data flow, `docs/format.md` the bytes on disk.
//!
//! All backend I/O goes through raw system calls ([`sys`]), never through interposable libc
//! symbols, so the LD_PRELOAD front end can embed this crate without intercepting itself.

pub mod clock;
pub mod config;
pub mod container;
pub mod error;
pub mod extent;
pub mod failpoint;
pub mod file;
pub mod flat;
pub mod format;
pub mod fs;
pub mod fsck;
pub mod index;
pub mod log;
pub mod nn;
pub mod smallfile;
pub mod sys;
pub mod tools;

pub use config::Config;
pub use error::{Error, Result};
pub use file::{OpenFile, OpenFlags};
pub use fs::{FileKind, Plfs, Stat};
