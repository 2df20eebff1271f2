//! Closing PLFS descriptors: the bookkeeping after the kernel closed one, and the close of the
//! open file when its last descriptor goes (shared mappings written back, lock file closed,
//! close droppings written).

use crate::fd::conf::{foreign_child, plfs_active};
use crate::fd::entry::{close_file, Entry};
use crate::fd::{held, table};
use crate::rt::errno::Res;
use crate::rt::real::sys;
use std::sync::Arc;

/// Closes the file of an entry that lost its last descriptor.
pub fn release(e: Arc<Entry>) -> Res<()> {
    // Mappings outlive descriptors; what they hold must be in the file when it is closed.
    crate::file::shm::write_back_all(Some(e.key));
    let mut st = e.lock();
    if st.lock_fd >= 0 {
        let _ = sys::close(st.lock_fd);
        st.lock_fd = -1;
    }
    let r = close_file(&mut st);
    drop(st);
    // The last descriptor of a file this process never opened itself: the lock inherited for
    // it goes (and an unlinked file is deleted if nobody else holds it).
    if let Some(id) = e.ident {
        if held::any() && !foreign_child() && !table::has_ident(id) {
            held::release(id);
        }
    }
    r
}

/// Drops `fd` from the table after the kernel closed it.
pub fn forget(fd: i32) -> Res<()> {
    match table::remove_fd(fd) {
        Some(e) => release(e),
        None => Ok(()),
    }
}

/// The kernel just gave descriptor `fd` to a call we passed through (an open of a real file, a
/// dup). If the table holds that number, its placeholder was closed behind our back (a raw
/// system call): forget it, and have every other descriptor checked at its next use. The caller
/// holds the guard.
pub fn kernel_gave(fd: i32) {
    if table::contains(fd) {
        crate::rt::log::debug(format_args!("fd {fd} was closed behind our back"));
        table::doubt();
        let _ = forget(fd);
    }
}

/// Closes a PLFS descriptor from inside the library (the caller holds the guard).
pub fn close_plfs(fd: i32) -> Res<()> {
    // Out of the table first (see `calls::fds::close`).
    let f = forget(fd);
    let r = sys::close(fd);
    f?;
    r
}

/// Before a program closes descriptors wholesale, or dup2s onto a number the core holds: closes
/// every open PLFS file of this process so the core holds no descriptors (files reopen lazily),
/// and retires the instance, whose directory descriptors are about to go (the next call builds
/// a new one; before, every later call failed with EBADF). The caller holds the guard.
pub fn release_core_fds() {
    if plfs_active() && !foreign_child() {
        table::close_all();
        crate::fd::conf::forget_instance();
    }
}
