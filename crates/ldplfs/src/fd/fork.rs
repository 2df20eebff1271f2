//! fork: the handlers registered with pthread_atfork at initialisation.
//!
//! Before fork this process's buffered index records are written out (the child, and whatever
//! it execs, must see our writes), the file positions kept in the process are written to the
//! kernel offsets the child will share, and every lock of the library is taken, so the child never
//! inherits one held by a thread that does not exist there. In the parent a new consistency
//! epoch starts; in the child the pid is updated, the PLFS instance is dropped (a new one is
//! built at first need) and every table entry is renewed without an open file, so the child's
//! first access opens the file again as its own writer.

use crate::fd::{conf, entry, held, table};
use crate::rt::sync;

/// Registers the handlers (once, at initialisation).
pub fn install() {
    // SAFETY: the handlers are plain extern "C" functions that live as long as the process.
    unsafe { libc::pthread_atfork(Some(prepare), Some(parent), Some(child)) };
}

extern "C" fn prepare() {
    let _busy = crate::rt::guard::enter();
    // The child (and whatever it execs) must see this process's writes.
    let _ = std::panic::catch_unwind(table::flush_all);
    // Parent and child share the open file descriptions from now on.
    let _ = std::panic::catch_unwind(table::share_positions);
    // The child holds this process's container locks until it opens those files itself.
    let _ = std::panic::catch_unwind(held::before_fork);
    sync::hold_all();
}

extern "C" fn parent() {
    entry::bump_epoch();
    held::in_parent();
    sync::release_all();
}

extern "C" fn child() {
    crate::rt::report::reset();
    conf::set_pid();
    conf::forget_instance();
    table::renew_in_child();
    held::in_child();
    sync::release_all();
}
