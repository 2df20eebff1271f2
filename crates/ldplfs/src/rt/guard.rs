//! Reentrancy guard and the FFI boundary: a wrapper that acts on a call marks the thread busy
//! ([`enter`]), so calls libc makes on our behalf go straight to libc, and runs its PLFS logic
//! through [`run`], which turns `Err(errno)` into `-1`/NULL plus errno and converts a panic into
//! EIO instead of unwinding into C. (The interposers enter through `file::init::enter`, which
//! also initialises the library at the first call.)

use crate::rt::errno::{set_errno, Errno, Fail, Res};
use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};

thread_local! {
    /// True while this thread is inside the library's own logic.
    static BUSY: Cell<bool> = const { Cell::new(false) };
}

/// Marks the thread busy until dropped. It keeps this thread's flag, found once by [`enter`]:
/// every interposed call enters and leaves, and each look-up of a thread-local in this shared
/// library may be a call to `__tls_get_addr`.
pub struct Busy(*const Cell<bool>);

impl Drop for Busy {
    fn drop(&mut self) {
        // SAFETY: the flag of the thread that made this Busy, which is not Send: the thread is
        // still running, and the flag (a const-initialised Cell without a destructor) lives as
        // long as it does.
        unsafe { (*self.0).set(false) }
    }
}

/// Enters the library: None when this thread is already inside it (or is being torn down), in
/// which case the caller must pass the call straight to libc.
pub fn enter() -> Option<Busy> {
    match BUSY.try_with(|b| (b.replace(true), std::ptr::from_ref(b))) {
        Ok((false, flag)) => Some(Busy(flag)),
        Ok((true, _)) => None,
        Err(_) => None,
    }
}

/// True when this thread is inside the library.
pub fn busy() -> bool {
    BUSY.try_with(|b| b.get()).unwrap_or(true)
}

type StartFn = extern "C" fn(*mut libc::c_void) -> *mut libc::c_void;

/// First function of a thread started from inside the library: the thread runs inside it for
/// its whole life, then calls the start routine it was created with.
extern "C" fn start_busy(p: *mut libc::c_void) -> *mut libc::c_void {
    // SAFETY: `p` is the Box leaked by pthread_create below, handed to exactly this thread.
    let (start, arg) = *unsafe { Box::from_raw(p.cast::<(StartFn, *mut libc::c_void)>()) };
    let _ = BUSY.try_with(|b| b.set(true));
    start(arg)
}

/// pthread_create(3). A thread that the library starts while it is working (the core reads index
/// logs on a pool of threads) is inside the library too, so its libc calls go straight to libc.
/// Without this, the `close` with which the core drops a descriptor it opened on such a thread
/// reached our `close`, which ignores a close of a core descriptor: one descriptor leaked per
/// index log on every index refresh (fstat, lseek(SEEK_END), fallocate, stat of an open file).
/// Since 2026-11-29 the core closes its descriptors with the system call (`sys::Fd` in the
/// core), so those no longer depend on this; whatever else libc does for such a thread still
/// does. Threads a program starts itself are created unchanged.
#[no_mangle]
pub unsafe extern "C" fn pthread_create(
    thread: *mut libc::pthread_t,
    attr: *const libc::pthread_attr_t,
    start: StartFn,
    arg: *mut libc::c_void,
) -> libc::c_int {
    if !busy() {
        return crate::real!(pthread_create(thread, attr, start, arg): fn(*mut libc::pthread_t, *const libc::pthread_attr_t, StartFn, *mut libc::c_void) -> libc::c_int);
    }
    let boxed = Box::into_raw(Box::new((start, arg))).cast::<libc::c_void>();
    // The thread starts with the program's asynchronous signals blocked (it inherits the mask in
    // force here), so the kernel delivers a process-directed signal (SIGALRM of setitimer,
    // SIGCHLD, SIGTERM...) to one of the program's threads: a handler run on this thread would
    // run inside the library, where a call on a PLFS descriptor cannot be served
    // (`file::init::serve_fd`). Faults (SIGSEGV, SIGBUS, SIGFPE, SIGILL) stay deliverable.
    // SAFETY: sigset_t values owned here; pthread_sigmask only changes this thread's mask.
    let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
    let blocked = unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        for sig in [
            libc::SIGSEGV,
            libc::SIGBUS,
            libc::SIGFPE,
            libc::SIGILL,
            libc::SIGTRAP,
            libc::SIGSYS,
        ] {
            libc::sigdelset(&mut all, sig);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &all, &mut old) == 0
    };
    let r = crate::real!(pthread_create(thread, attr, start_busy as StartFn, boxed): fn(*mut libc::pthread_t, *const libc::pthread_attr_t, StartFn, *mut libc::c_void) -> libc::c_int);
    if blocked {
        // SAFETY: restores this thread's own mask, saved above.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
    }
    if r != 0 {
        // SAFETY: the thread was not created, so the Box was not handed over.
        drop(unsafe { Box::from_raw(boxed.cast::<(StartFn, *mut libc::c_void)>()) });
    }
    r
}

/// Runs `f` at the FFI boundary: a value on success; the failure value with errno set on error;
/// EIO on panic. The caller must hold a [`Busy`].
pub fn run<R: Fail>(f: impl FnOnce() -> Res<R>) -> R {
    crate::rt::report::count(crate::rt::report::Count::Served, 0);
    // This thread's errno, found once for the read here and the write back on success.
    // SAFETY: __errno_location always returns this thread's errno slot, valid while it runs.
    let slot = unsafe { libc::__errno_location() };
    // SAFETY: see above.
    let saved = unsafe { *slot };
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => {
            // Success leaves errno as the caller had it, whatever our own probing did.
            // SAFETY: see above.
            unsafe { *slot = saved };
            v
        }
        Ok(Err(Errno(e))) => {
            set_errno(e);
            R::fail()
        }
        Err(_) => {
            crate::rt::log::warn(format_args!("internal error (panic) turned into EIO"));
            set_errno(libc::EIO);
            R::fail()
        }
    }
}
