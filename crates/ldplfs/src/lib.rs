//! ldplfs: the LD_PRELOAD front end. `LD_PRELOAD=libldplfs.so` plus a plfsrc makes every path
//! under a PLFS mount point a PLFS file for an unmodified dynamically linked program; every
//! other call passes straight through to libc.
//!
//! Four layers, each using only the ones below it (`scripts/check-architecture.py` checks that
//! no module cycle exists):
//!
//! - [`calls`]: the interposed entry points, one module per family;
//! - [`file`]: open PLFS files: I/O, position, shared mappings, locks, closing, cookie streams,
//!   opening, initialisation;
//! - [`fd`]: the descriptor table: configuration, entries, placeholders, paths, fork;
//! - [`rt`]: the runtime: logging, errno, libc's real functions, the reentrancy guard, mutexes
//!   held across fork.
//!
//! `README.md` in this crate describes the design and its limits.

// Every exported function is a libc entry point called from C: its contract (valid pointers,
// NUL-terminated strings) is the one its manual page states, not a Rust-side one.
// `real!` forwards its arguments unchanged to the C function it calls: the call is the unsafe
// part, and its contract is the interposed function's own.
#![allow(
    clippy::missing_safety_doc,
    clippy::not_unsafe_ptr_arg_deref,
    clippy::macro_metavars_in_unsafe
)]

pub mod calls;
pub mod fd;
pub mod file;
pub mod rt;
