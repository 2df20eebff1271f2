//! PLFS 2.5-compatible C API: `libplfs.so` / `libplfs.a`, declared in `include/plfs.h`.
//!
//! Programs written for the original PLFS API (`plfs_open`, `plfs_write`, `plfs_close` with
//! `num_ref`, ...) compile against our header and run on the Rust core unchanged. Every call
//! returns a `plfs_error_t`; one process-wide [`plfs_core::Plfs`] built from the plfsrc found by
//! [`plfs_core::Config::load`] serves them all.
//!
//! Layout: [`error`] (codes, errno mapping), [`instance`] (the instance, panic guard, argument
//! helpers), [`handles`] (`Plfs_fd` / `Plfs_dirp` tables), [`file_api`] (calls on open files),
//! [`path_api`] (calls on paths), [`stat`] (C struct conversions). `unsafe` is confined to the
//! `extern "C"` functions and the argument helpers; handles are table keys, never dereferenced.

#![deny(clippy::undocumented_unsafe_blocks)]

pub mod error;
pub mod extra_api;
pub mod file_api;
pub mod handles;
pub mod instance;
pub mod path_api;
pub mod stat;

pub use error::{to_plfs_error, PlfsError};

/// Runs when the library is loaded, before the program's threads usually exist: grows the
/// descriptor table for the core's high descriptors (see `plfs_core::grow_fd_table`), which a
/// multi-threaded process would otherwise pay for with an RCU grace period at its first open.
extern "C" fn constructor() {
    let _ = std::panic::catch_unwind(plfs_core::grow_fd_table);
}

#[used]
#[link_section = ".init_array"]
static CONSTRUCTOR: extern "C" fn() = constructor;
