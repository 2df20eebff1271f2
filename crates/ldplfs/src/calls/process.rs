//! Process boundaries: what happens before an exec (close this image's files so their droppings
//! are written; the new image re-adopts inherited placeholders) and before a spawn (make our
//! writes visible to the child first), both used by [`super::exec`]; vfork, system, popen; and
//! exit (close everything, also on `_exit` after fork).

use crate::fd::conf::{enabled, foreign_child};
use crate::fd::{entry, held, table};
use crate::file::init::enter;
use crate::file::{io, shm};
use libc::{c_char, c_int, pid_t};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Before an exec: a vfork child only flushes (its memory is the parent's); a process of its own
/// closes its files, which the new image reopens through the inherited placeholders.
pub(super) fn before_exec() {
    if let Some(_busy) = enter() {
        if !enabled() {
            return;
        }
        let _ = std::panic::catch_unwind(|| {
            // The new image reads the file positions from the kernel offsets.
            table::share_positions();
            // It holds the locks of the files it inherits until it opens them (`fd::held`);
            // taken before our own go below.
            held::dup_for_exec(&table::surviving_files(), !foreign_child());
            if foreign_child() {
                table::flush_all();
            } else {
                // Mappings vanish at exec: what they hold goes to PLFS first.
                shm::write_back_all(None);
                table::close_all();
            }
        });
    }
}

/// Before starting a child that shares nothing but descriptors: make our writes visible to it,
/// and hand it the locks of the files it inherits (dups, returned for [`after_spawn`]).
pub(super) fn before_spawn() -> Vec<i32> {
    if let Some(_busy) = enter() {
        if enabled() {
            let _ = std::panic::catch_unwind(table::flush_all);
            // The child shares the open file descriptions.
            let _ = std::panic::catch_unwind(table::share_positions);
            return std::panic::catch_unwind(|| held::dup_for_exec(&table::surviving_files(), false))
                .unwrap_or_default();
        }
    }
    Vec::new()
}

/// After the child started (it has its copies of the dups by now, or failed): ours go.
pub(super) fn after_spawn(dups: Vec<i32>) {
    for fd in dups {
        let _ = crate::rt::real::sys::close(fd);
    }
}

/// Stands in for a function libc lacks: fails with ENOSYS.
pub(super) extern "C" fn no_such_function() -> c_int {
    crate::rt::errno::set_errno(libc::ENOSYS);
    -1
}

/// The real vfork (or `__vfork`, `which` 1) after the positions kept in this process were
/// written to the kernel offsets: the child shares the open file descriptions, and what it
/// execs reads the positions from them. (In the child itself nothing can be fixed: it may have
/// closed the descriptor we know and kept only a dup2 of it, which it does not tell us about.)
extern "C" fn before_vfork(which: usize) -> usize {
    if let Some(_busy) = enter() {
        if enabled() {
            let _ = std::panic::catch_unwind(table::share_positions);
        }
    }
    static SLOTS: [AtomicUsize; 2] = [const { AtomicUsize::new(0) }; 2];
    const NAMES: [&str; 2] = ["vfork\0", "__vfork\0"];
    match crate::rt::real::resolve(&SLOTS[which % 2], NAMES[which % 2]) {
        0 => no_such_function as *const () as usize,
        p => p,
    }
}

/// Defines vfork as a trampoline: a wrapper cannot call the real vfork and return (the child
/// would run on, and the parent then return through, one stack frame), so it calls
/// [`before_vfork`] and jumps to the real vfork, which returns straight to the caller, twice.
macro_rules! vfork_trampoline {
    ($(#[$m:meta])* $name:ident = $which:literal) => {
        $(#[$m])*
        #[unsafe(naked)]
        #[no_mangle]
        pub unsafe extern "C" fn $name() -> pid_t {
            #[cfg(target_arch = "x86_64")]
            std::arch::naked_asm!(
                "sub rsp, 8",
                "mov edi, {which}",
                "call {hook}",
                "add rsp, 8",
                "jmp rax",
                which = const $which,
                hook = sym before_vfork,
            );
            #[cfg(target_arch = "aarch64")]
            std::arch::naked_asm!(
                "stp x29, x30, [sp, #-16]!",
                "mov x29, sp",
                "mov x0, #{which}",
                "bl {hook}",
                "mov x16, x0",
                "ldp x29, x30, [sp], #16",
                "br x16",
                which = const $which,
                hook = sym before_vfork,
            );
        }
    };
}

vfork_trampoline!(/// vfork(2).
    vfork = 0);
vfork_trampoline!(/// glibc alias of vfork.
    __vfork = 1);

/// system(3).
#[no_mangle]
pub unsafe extern "C" fn system(cmd: *const c_char) -> c_int {
    let dups = before_spawn();
    let r = crate::real!(system(cmd): fn(*const c_char) -> c_int);
    after_spawn(dups);
    r
}
/// popen(3).
#[no_mangle]
pub unsafe extern "C" fn popen(cmd: *const c_char, mode: *const c_char) -> *mut libc::FILE {
    let dups = before_spawn();
    let r = crate::real!(popen(cmd, mode): fn(*const c_char, *const c_char) -> *mut libc::FILE);
    after_spawn(dups);
    r
}

/// `LDPLFS_REPORT=1`: this process's summary (not a vfork child's: it is its parent's).
fn report_at_exit() {
    if !foreign_child() {
        crate::rt::report::print_if_wanted(crate::rt::real::sys::getpid());
    }
}

/// Closes every file of this process at exit; later writes reopen and close again.
pub fn at_exit() {
    report_at_exit();
    if let Some(_busy) = enter() {
        if !enabled() || foreign_child() {
            return;
        }
        let _ = std::panic::catch_unwind(|| {
            // Streams first: their buffers may hold data for PLFS files.
            // SAFETY: flushing every stream is always valid.
            unsafe { libc::fflush(std::ptr::null_mut()) };
            shm::write_back_all(None);
            table::close_all();
            held::release_all();
            io::AFTER_EXIT.store(true, Ordering::Relaxed);
        });
    }
}

/// _exit(2): a forked child often leaves this way; its writes must still be recorded.
#[no_mangle]
pub extern "C" fn _exit(status: c_int) -> ! {
    at_exit_raw();
    crate::real!(_exit(status): fn(c_int) -> ());
    // SAFETY: terminates the process.
    unsafe { crate::raw_syscall!(libc::SYS_exit_group, status) };
    unreachable!("exit_group returned")
}

/// _Exit(2).
#[no_mangle]
pub extern "C" fn _Exit(status: c_int) -> ! {
    _exit(status)
}

/// Like [`at_exit`] without flushing stdio (`_exit` must not flush streams).
fn at_exit_raw() {
    report_at_exit();
    if let Some(_busy) = enter() {
        if !enabled() || foreign_child() {
            return;
        }
        let _ = std::panic::catch_unwind(|| {
            shm::write_back_all(None);
            table::close_all();
            held::release_all();
        });
    }
}

macro_rules! wait_wrapper {
    ($($(#[$m:meta])* fn $name:ident($($a:ident: $t:ty),*) -> $r:ty;)*) => {$(
        $(#[$m])*
        #[no_mangle]
        pub unsafe extern "C" fn $name($($a: $t),*) -> $r {
            let r = crate::real!($name($($a),*): fn($($t),*) -> $r);
            // A child finished: its writes must be visible to our next reads.
            entry::bump_epoch();
            r
        }
    )*};
}

wait_wrapper! {
    /// wait(2).
    fn wait(st: *mut c_int) -> pid_t;
    /// waitpid(2).
    fn waitpid(pid: pid_t, st: *mut c_int, o: c_int) -> pid_t;
    /// wait3(2).
    fn wait3(st: *mut c_int, o: c_int, ru: *mut libc::rusage) -> pid_t;
    /// wait4(2).
    fn wait4(pid: pid_t, st: *mut c_int, o: c_int, ru: *mut libc::rusage) -> pid_t;
    /// waitid(2).
    fn waitid(t: libc::idtype_t, id: libc::id_t, info: *mut libc::siginfo_t, o: c_int) -> c_int;
}

/// daemon(3): glibc dup2s /dev/null onto 0, 1 and 2 with internal calls that do not reach our
/// dup2, so the table doubts its descriptors afterwards (each is checked at its next use).
#[no_mangle]
pub extern "C" fn daemon(nochdir: c_int, noclose: c_int) -> c_int {
    let r = crate::real!(daemon(nochdir, noclose): fn(c_int, c_int) -> c_int);
    table::doubt();
    r
}

/// login_tty(3): dup2s the terminal onto 0, 1 and 2 internally (see [`daemon`]).
#[no_mangle]
pub extern "C" fn login_tty(fd: c_int) -> c_int {
    let r = crate::real!(login_tty(fd): fn(c_int) -> c_int);
    table::doubt();
    r
}

/// forkpty(3): the child runs login_tty internally (see [`daemon`]).
#[no_mangle]
pub unsafe extern "C" fn forkpty(
    master: *mut c_int,
    name: *mut c_char,
    termp: *const libc::termios,
    winp: *const libc::winsize,
) -> pid_t {
    let r = crate::real!(forkpty(master, name, termp, winp): fn(*mut c_int, *mut c_char, *const libc::termios, *const libc::winsize) -> pid_t);
    table::doubt();
    r
}

extern "C" fn constructor() {
    // Initialises (configuration, adoption of inherited placeholders, cwd) before main.
    crate::rt::report::init();
    let _busy = enter();
}

extern "C" fn destructor() {
    at_exit();
}

#[used]
#[link_section = ".init_array"]
static CONSTRUCTOR: extern "C" fn() = constructor;

#[used]
#[link_section = ".fini_array"]
static DESTRUCTOR: extern "C" fn() = destructor;
