//! Reentrancy guard and the FFI boundary: every wrapper runs its PLFS logic through [`run`],
//! which marks the thread busy (so calls libc makes on our behalf go straight to libc), turns
//! `Err(errno)` into `-1`/NULL plus errno, and converts a panic into EIO instead of unwinding
//! into C.

use crate::real::Fail;
use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};

thread_local! {
    /// True while this thread is inside the library's own logic.
    static BUSY: Cell<bool> = const { Cell::new(false) };
}

/// An errno value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Errno(pub i32);

impl From<plfs_core::Error> for Errno {
    fn from(e: plfs_core::Error) -> Self {
        crate::log::debug(format_args!("{e}"));
        Errno(e.raw_errno())
    }
}

/// Result of the library's internal operations.
pub type Res<T> = Result<T, Errno>;

/// Reads errno.
pub fn errno() -> i32 {
    // SAFETY: __errno_location always returns this thread's errno slot.
    unsafe { *libc::__errno_location() }
}

/// Sets errno.
pub fn set_errno(e: i32) {
    // SAFETY: __errno_location always returns this thread's errno slot.
    unsafe { *libc::__errno_location() = e }
}

/// Marks the thread busy until dropped.
pub struct Busy(());

impl Drop for Busy {
    fn drop(&mut self) {
        let _ = BUSY.try_with(|b| b.set(false));
    }
}

/// Enters the library: None when this thread is already inside it (or is being torn down), in
/// which case the caller must pass the call straight to libc.
pub fn enter() -> Option<Busy> {
    match BUSY.try_with(|b| b.replace(true)) {
        Ok(false) => {
            crate::state::ready();
            Some(Busy(()))
        }
        Ok(true) => None,
        Err(_) => None,
    }
}

/// True when this thread is inside the library.
pub fn busy() -> bool {
    BUSY.try_with(|b| b.get()).unwrap_or(true)
}

/// Runs `f` at the FFI boundary: a value on success; the failure value with errno set on error;
/// EIO on panic. The caller must hold a [`Busy`].
pub fn run<R: Fail>(f: impl FnOnce() -> Res<R>) -> R {
    let saved = errno();
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => {
            // Success leaves errno as the caller had it, whatever our own probing did.
            set_errno(saved);
            v
        }
        Ok(Err(Errno(e))) => {
            set_errno(e);
            R::fail()
        }
        Err(_) => {
            crate::log::warn(format_args!("internal error (panic) turned into EIO"));
            set_errno(libc::EIO);
            R::fail()
        }
    }
}
