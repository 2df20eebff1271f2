//! How a regular file is stored, behind two small traits the namespace dispatches to:
//!
//! - [`Node`]: a regular file found in the namespace, whatever stores it: an N-1 container
//!   ([`n1`]), a plain backend file ([`nn`]), a file packed in a directory's small-file logs
//!   ([`small`]). stat, open, truncate, unlink and attribute changes.
//! - [`Handle`]: an open file (behind the public [`OpenFile`]): read, write, sync, close.
//!
//! and one per workload mode, [`Layout`]: what a create makes, and which files exist where the
//! backend shows nothing (the 1-N mode's packed files). Files written by PLFS 2.x are nodes too,
//! read-only ([`legacy`]).

pub mod compaction;
mod file;
pub mod legacy;
pub mod n1;
pub mod nn;
pub mod small;

pub(crate) use file::{check_mode, is_type_clash};
pub use file::{Handle, Layout, Node, OpenFile};
