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
            if conf::conf().is_none_or(|c| c.unusable) {
                // Disabled, or only refusing calls under the mount points of a plfsrc that does
                // not load: nothing to adopt, no working directory inside a backend.
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
    let Some(_busy) = enter() else {
        return reentered(fd);
    };
    let found = if ready { registered(fd) } else { ours(fd) };
    found.map(|e| run(|| f(e)))
}

/// A call on descriptor `fd` made while this thread is already inside the library: a signal
/// handler that interrupted it (the library itself never calls an interposed descriptor call on
/// one of its placeholders). A descriptor that is not ours goes to libc (None), so a handler's
/// write to stderr, a plain file or a pipe always reaches the kernel. One of ours cannot be served
/// here: the interrupted code may hold the file's lock, the table's or the allocator's, and
/// waiting for it would deadlock; passed to libc it met the placeholder, which refuses writes
/// (EPERM, issue 50: 1,122 of 1,123 writes of a SIGALRM handler while the main loop did PLFS I/O).
/// It fails with EAGAIN instead, as ldplfs(8) says (not EINTR: a handler that retries on EINTR
/// would spin for ever, since the code it interrupted cannot go on until the handler returns).
/// Async-signal-safe: one atomic load of the descriptor's slot (or one fcntl above the slots).
fn reentered<R: Fail>(fd: i32) -> Option<R> {
    if !ready_done() || !maybe_ours(fd) || !placeholder_now(fd) {
        return None;
    }
    crate::rt::errno::set_errno(libc::EAGAIN);
    Some(R::fail())
}

/// Whether `fd` is a placeholder, without a lock or an allocation: its slot holds an entry, or,
/// above the slots, the descriptor carries a placeholder's seals.
fn placeholder_now(fd: i32) -> bool {
    match usize::try_from(fd) {
        Ok(u) if u < crate::fd::direct::LEN => crate::fd::direct::occupied(u),
        Ok(_) => {
            // SAFETY: fcntl(F_GET_SEALS) only reads the descriptor's seals.
            let seals = unsafe { crate::raw_syscall!(libc::SYS_fcntl, fd, libc::F_GET_SEALS) };
            let all = libc::F_SEAL_WRITE | libc::F_SEAL_GROW | libc::F_SEAL_SHRINK | libc::F_SEAL_SEAL;
            seals >= 0 && seals as i32 & all == all
        }
        Err(_) => false,
    }
}
