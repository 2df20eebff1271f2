//! Initialisation, and the entry of every interposer: [`enter`] marks the thread busy (the
//! reentrancy guard) and initialises the library at the first call, whichever comes first: the
//! constructor or an interposed call made before it (by another library's constructor).
//! [`serve_fd`] is the whole gate of a call on a descriptor, in one place: the wrapper either
//! gets its C result from it or passes the call to libc.

use crate::fd::entry::Entry;
use crate::fd::table::{maybe_ours, ours, registered};
use crate::fd::{conf, fork, paths, placeholder};
use crate::file::streams::std_stream_is_plfs;
use crate::rt::errno::{Fail, Res};
use crate::rt::guard::{self, run, Busy};
use std::sync::{Arc, Once};

static INIT: Once = Once::new();

/// One-time initialisation: pid, configuration, fork handlers, working directory, and the
/// placeholders inherited through exec (standard streams on them become cookie streams).
fn ready() {
    INIT.call_once(|| {
        conf::set_pid();
        // A panic here must neither unwind into C nor poison the Once (every later call would
        // panic): the library then simply knows less (no adoption, no cwd).
        let _ = std::panic::catch_unwind(|| {
            if conf::conf().is_none() {
                return;
            }
            // Before the program starts threads (see the core's grow_fd_table).
            plfs_core::grow_fd_table();
            fork::install();
            paths::init_cwd();
            for fd in placeholder::adopt_all() {
                if fd <= 2 {
                    std_stream_is_plfs(fd);
                }
            }
        });
    });
}

/// Whether the one-time initialisation is done: from then on a descriptor call on a descriptor
/// that [`crate::fd::table::maybe_ours`] rules out can go to libc without entering the library
/// (before it, entering initialises, which may adopt inherited descriptors).
#[inline]
pub fn ready_done() -> bool {
    INIT.is_completed()
}

/// Enters the library: None when this thread is already inside it (or is being torn down), in
/// which case the caller must pass the call straight to libc.
pub fn enter() -> Option<Busy> {
    let busy = guard::enter()?;
    ready();
    Some(busy)
}

/// The gate of a call on descriptor `fd`: when it is a PLFS descriptor and this thread is not
/// already inside the library, runs `f` on its entry at the FFI boundary (errno, panics: see
/// [`run`]) and returns the C result; None when the call goes to libc.
///
/// Once the library is initialised, a descriptor that the table's bitmap rules out (the other
/// end of most copies) goes to libc without entering the library; before that, entering
/// initialises, which may adopt inherited descriptors, so the table is asked after it.
#[inline]
pub fn serve_fd<R: Fail>(fd: i32, f: impl FnOnce(Arc<Entry>) -> Res<R>) -> Option<R> {
    let ready = ready_done();
    if ready && !maybe_ours(fd) {
        return None;
    }
    let _busy = enter()?;
    let found = if ready { registered(fd) } else { ours(fd) };
    found.map(|e| run(|| f(e)))
}
