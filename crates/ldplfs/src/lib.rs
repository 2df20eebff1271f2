//! ldplfs: the LD_PRELOAD front end. `LD_PRELOAD=libldplfs.so` plus a plfsrc makes every path
//! under a PLFS mount point a PLFS file for an unmodified dynamically linked program; every
//! other call passes straight through to libc.
//!
//! Layout: [`real`] (libc's own functions), [`guard`] (reentrancy and the FFI boundary),
//! [`state`] (configuration, instance, open-file table, fork), [`paths`] (what is ours),
//! [`placeholder`] (memfd descriptors, exec adoption), then the interposed entry points:
//! [`open`], [`io`], [`shm`] (shared mappings), [`stat`], [`ns`], [`dirs`], [`stdio`], [`locks`],
//! [`process`].
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

pub mod aio;
pub mod attrs;
pub mod cwd;
pub mod dirs;
pub mod guard;
pub mod io;
pub mod locks;
pub mod log;
pub mod ns;
pub mod open;
pub mod paths;
pub mod placeholder;
pub mod process;
pub mod real;
pub mod shm;
pub mod stat;
pub mod state;
pub mod stdio;

extern "C" fn constructor() {
    // Initialises (configuration, adoption of inherited placeholders, cwd) before main.
    let _busy = guard::enter();
}

extern "C" fn destructor() {
    process::at_exit();
}

#[used]
#[link_section = ".init_array"]
static CONSTRUCTOR: extern "C" fn() = constructor;

#[used]
#[link_section = ".fini_array"]
static DESTRUCTOR: extern "C" fn() = destructor;
