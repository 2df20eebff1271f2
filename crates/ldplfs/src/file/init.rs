//! Initialisation, and the entry of every interposer: [`enter`] marks the thread busy (the
//! reentrancy guard) and initialises the library at the first call, whichever comes first: the
//! constructor or an interposed call made before it (by another library's constructor).

use crate::fd::{conf, fork, paths, placeholder};
use crate::file::streams::std_stream_is_plfs;
use crate::rt::guard::{self, Busy};
use std::sync::Once;

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
