//! Process boundaries: exec (close this image's files so their droppings are written; the new
//! image re-adopts inherited placeholders), posix_spawn/system/popen (make our writes visible
//! to the child first), and exit (close everything, also on `_exit` after fork).

use crate::fd::conf::{enabled, foreign_child};
use crate::fd::{entry, table};
use crate::file::init::enter;
use crate::file::{io, shm};
use libc::{c_char, c_int, pid_t};
use std::sync::atomic::Ordering;

/// Before an exec: a vfork child only flushes (its memory is the parent's); a process of its own
/// closes its files, which the new image reopens through the inherited placeholders.
fn before_exec() {
    if let Some(_busy) = enter() {
        if !enabled() {
            return;
        }
        let _ = std::panic::catch_unwind(|| {
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

/// Before starting a child that shares nothing but descriptors: make our writes visible to it.
fn before_spawn() {
    if let Some(_busy) = enter() {
        if enabled() {
            let _ = std::panic::catch_unwind(table::flush_all);
        }
    }
}

type Argv = *const *const c_char;

/// execve(2).
#[no_mangle]
pub unsafe extern "C" fn execve(path: *const c_char, argv: Argv, envp: Argv) -> c_int {
    before_exec();
    crate::real!(execve(path, argv, envp): fn(*const c_char, Argv, Argv) -> c_int)
}
/// execv(3).
#[no_mangle]
pub unsafe extern "C" fn execv(path: *const c_char, argv: Argv) -> c_int {
    before_exec();
    crate::real!(execv(path, argv): fn(*const c_char, Argv) -> c_int)
}
/// execvp(3).
#[no_mangle]
pub unsafe extern "C" fn execvp(file: *const c_char, argv: Argv) -> c_int {
    before_exec();
    crate::real!(execvp(file, argv): fn(*const c_char, Argv) -> c_int)
}
/// execvpe(3).
#[no_mangle]
pub unsafe extern "C" fn execvpe(file: *const c_char, argv: Argv, envp: Argv) -> c_int {
    before_exec();
    crate::real!(execvpe(file, argv, envp): fn(*const c_char, Argv, Argv) -> c_int)
}
/// fexecve(3).
#[no_mangle]
pub unsafe extern "C" fn fexecve(fd: c_int, argv: Argv, envp: Argv) -> c_int {
    before_exec();
    crate::real!(fexecve(fd, argv, envp): fn(c_int, Argv, Argv) -> c_int)
}
/// execveat(2).
#[no_mangle]
pub unsafe extern "C" fn execveat(dirfd: c_int, path: *const c_char, argv: Argv, envp: Argv, flags: c_int) -> c_int {
    before_exec();
    crate::real!(execveat(dirfd, path, argv, envp, flags): fn(c_int, *const c_char, Argv, Argv, c_int) -> c_int)
}

/// posix_spawn(3).
#[no_mangle]
pub unsafe extern "C" fn posix_spawn(
    pid: *mut pid_t,
    path: *const c_char,
    fa: *const libc::posix_spawn_file_actions_t,
    attr: *const libc::posix_spawnattr_t,
    argv: Argv,
    envp: Argv,
) -> c_int {
    before_spawn();
    crate::real!(posix_spawn(pid, path, fa, attr, argv, envp): fn(*mut pid_t, *const c_char, *const libc::posix_spawn_file_actions_t, *const libc::posix_spawnattr_t, Argv, Argv) -> c_int)
}
/// posix_spawnp(3).
#[no_mangle]
pub unsafe extern "C" fn posix_spawnp(
    pid: *mut pid_t,
    file: *const c_char,
    fa: *const libc::posix_spawn_file_actions_t,
    attr: *const libc::posix_spawnattr_t,
    argv: Argv,
    envp: Argv,
) -> c_int {
    before_spawn();
    crate::real!(posix_spawnp(pid, file, fa, attr, argv, envp): fn(*mut pid_t, *const c_char, *const libc::posix_spawn_file_actions_t, *const libc::posix_spawnattr_t, Argv, Argv) -> c_int)
}
/// system(3).
#[no_mangle]
pub unsafe extern "C" fn system(cmd: *const c_char) -> c_int {
    before_spawn();
    crate::real!(system(cmd): fn(*const c_char) -> c_int)
}
/// popen(3).
#[no_mangle]
pub unsafe extern "C" fn popen(cmd: *const c_char, mode: *const c_char) -> *mut libc::FILE {
    before_spawn();
    crate::real!(popen(cmd, mode): fn(*const c_char, *const c_char) -> *mut libc::FILE)
}

/// Closes every file of this process at exit; later writes reopen and close again.
pub fn at_exit() {
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
    unsafe { libc::syscall(libc::SYS_exit_group, status) };
    unreachable!("exit_group returned")
}

/// _Exit(2).
#[no_mangle]
pub extern "C" fn _Exit(status: c_int) -> ! {
    _exit(status)
}

/// Like [`at_exit`] without flushing stdio (`_exit` must not flush streams).
fn at_exit_raw() {
    if let Some(_busy) = enter() {
        if !enabled() || foreign_child() {
            return;
        }
        let _ = std::panic::catch_unwind(|| {
            shm::write_back_all(None);
            table::close_all();
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

extern "C" fn constructor() {
    // Initialises (configuration, adoption of inherited placeholders, cwd) before main.
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
