//! The exec family, posix_spawn and dlopen. Each runs [`before_exec`] or [`before_spawn`]
//! (process.rs) first. A program, script or library stored under a mount point is handed to the
//! kernel through `file::image` (a sealed memfd, or a script's interpreter), since the kernel
//! cannot see a logical path.

use super::process::{after_spawn, before_exec, before_spawn, no_such_function};
use crate::fd::conf::enabled;
use crate::file::image::{self, Exec};
use crate::file::init::enter;
use crate::rt::errno::{set_errno, Errno, Res};
use libc::{c_char, c_int, c_void, pid_t};
use std::ffi::{CStr, CString};
use std::sync::atomic::AtomicUsize;

type Argv = *const *const c_char;

extern "C" {
    static environ: Argv;
}

/// How deep a chain of scripts may go (`#!` naming a script naming a script...), as in Linux.
const MAX_INTERPRETERS: u32 = 4;

/// Runs `f` inside the library, if the library is on and the thread not already inside it;
/// a panic becomes EIO. `Ok(Exec::Pass)` otherwise.
fn plan(f: impl FnOnce() -> Res<Exec> + std::panic::UnwindSafe) -> Res<Exec> {
    let Some(_busy) = enter() else { return Ok(Exec::Pass) };
    if !enabled() {
        return Ok(Exec::Pass);
    }
    std::panic::catch_unwind(f).unwrap_or(Err(Errno(libc::EIO)))
}

/// The bytes of a C string argument (empty for NULL, which libc then refuses).
///
/// # Safety
/// `p` is NULL or a NUL-terminated string.
unsafe fn bytes<'a>(p: *const c_char) -> &'a [u8] {
    if p.is_null() {
        return b"";
    }
    // SAFETY: the caller's C string.
    unsafe { CStr::from_ptr(p) }.to_bytes()
}

/// `args` then `argv[1..]`, NULL-terminated: the argument vector of a script's interpreter.
///
/// # Safety
/// `argv` is NULL or a NULL-terminated vector of C strings.
unsafe fn script_argv(args: &[CString], argv: Argv) -> Vec<*const c_char> {
    let mut v: Vec<*const c_char> = args.iter().map(|a| a.as_ptr()).collect();
    if !argv.is_null() {
        let mut i = 1;
        // SAFETY: argv[0] exists (a NULL argv[0] ends it at once) and the vector ends with NULL.
        unsafe {
            if !(*argv).is_null() {
                while !(*argv.add(i)).is_null() {
                    v.push(*argv.add(i));
                    i += 1;
                }
            }
        }
    }
    v.push(std::ptr::null());
    v
}

/// execve of what `dirfd`/`path` names; `pass` is the libc call for a path that is not ours.
///
/// # Safety
/// The caller's exec arguments.
unsafe fn exec_at(
    dirfd: c_int,
    path: *const c_char,
    argv: Argv,
    envp: Argv,
    depth: u32,
    pass: &dyn Fn() -> c_int,
) -> c_int {
    // SAFETY: the caller's C string.
    let name = unsafe { bytes(path) };
    match plan(|| image::for_exec(dirfd, name)) {
        Err(Errno(e)) => {
            set_errno(e);
            -1
        }
        Ok(Exec::Pass) => {
            before_exec();
            pass()
        }
        Ok(Exec::Real(c)) => {
            before_exec();
            crate::real!(execve(c.as_ptr(), argv, envp): fn(*const c_char, Argv, Argv) -> c_int)
        }
        Ok(Exec::Image { fd, path }) => {
            before_exec();
            let r = crate::real!(execve(path.as_ptr(), argv, envp): fn(*const c_char, Argv, Argv) -> c_int);
            let _ = crate::rt::real::sys::close(fd);
            r
        }
        Ok(Exec::Script { interp, args }) => {
            if depth >= MAX_INTERPRETERS {
                set_errno(libc::ELOOP);
                return -1;
            }
            // SAFETY: the caller's argument vector.
            let v = unsafe { script_argv(&args, argv) };
            let p = interp.as_ptr();
            let pass = || crate::real!(execve(p, v.as_ptr(), envp): fn(*const c_char, Argv, Argv) -> c_int);
            // SAFETY: `v` and the strings it points to live until the call returns.
            unsafe { exec_at(libc::AT_FDCWD, p, v.as_ptr(), envp, depth + 1, &pass) }
        }
    }
}

/// The process's `PATH` (what glibc's own search reads: the current environment, not an
/// `envp` given to execvpe).
fn path_env() -> Option<&'static [u8]> {
    // SAFETY: getenv returns NULL or a C string that lives in the environment.
    unsafe {
        let p = libc::getenv(c"PATH".as_ptr());
        (!p.is_null()).then(|| CStr::from_ptr(p).to_bytes())
    }
}

/// What an exec that searches PATH (execvp, execvpe, posix_spawnp) runs: a name with a slash
/// itself; a bare name, the logical path where the search finds it first under a mount, or
/// None: libc's own search then finds the same program (a bare name is never looked up in a
/// logical cwd).
///
/// # Safety
/// `file` is NULL or a C string.
unsafe fn searched(file: *const c_char) -> Option<CString> {
    // SAFETY: the caller's C string.
    let name = unsafe { bytes(file) };
    if name.contains(&b'/') {
        return CString::new(name).ok();
    }
    let _busy = enter()?;
    if !enabled() {
        return None;
    }
    std::panic::catch_unwind(|| image::search(name, path_env()))
        .ok()
        .flatten()
        .and_then(|c| CString::new(c).ok())
}

/// execve(2).
#[no_mangle]
pub unsafe extern "C" fn execve(path: *const c_char, argv: Argv, envp: Argv) -> c_int {
    let pass = || crate::real!(execve(path, argv, envp): fn(*const c_char, Argv, Argv) -> c_int);
    // SAFETY: forwarded caller arguments.
    unsafe { exec_at(libc::AT_FDCWD, path, argv, envp, 0, &pass) }
}
/// execv(3).
#[no_mangle]
pub unsafe extern "C" fn execv(path: *const c_char, argv: Argv) -> c_int {
    let pass = || crate::real!(execv(path, argv): fn(*const c_char, Argv) -> c_int);
    // SAFETY: forwarded caller arguments; `environ` is libc's.
    unsafe { exec_at(libc::AT_FDCWD, path, argv, environ, 0, &pass) }
}
/// execvp(3).
#[no_mangle]
pub unsafe extern "C" fn execvp(file: *const c_char, argv: Argv) -> c_int {
    let pass = || crate::real!(execvp(file, argv): fn(*const c_char, Argv) -> c_int);
    // SAFETY: forwarded caller arguments; `environ` is libc's.
    unsafe {
        let Some(path) = searched(file) else {
            before_exec();
            return pass();
        };
        exec_at(libc::AT_FDCWD, path.as_ptr(), argv, environ, 0, &pass)
    }
}
/// execvpe(3).
#[no_mangle]
pub unsafe extern "C" fn execvpe(file: *const c_char, argv: Argv, envp: Argv) -> c_int {
    let pass = || crate::real!(execvpe(file, argv, envp): fn(*const c_char, Argv, Argv) -> c_int);
    // SAFETY: forwarded caller arguments.
    unsafe {
        let Some(path) = searched(file) else {
            before_exec();
            return pass();
        };
        exec_at(libc::AT_FDCWD, path.as_ptr(), argv, envp, 0, &pass)
    }
}
/// fexecve(3): a descriptor the kernel knows (one of a PLFS file is a placeholder, which it
/// cannot run: ENOEXEC, as for any file it cannot run).
#[no_mangle]
pub unsafe extern "C" fn fexecve(fd: c_int, argv: Argv, envp: Argv) -> c_int {
    before_exec();
    crate::real!(fexecve(fd, argv, envp): fn(c_int, Argv, Argv) -> c_int)
}
/// execveat(2).
#[no_mangle]
pub unsafe extern "C" fn execveat(dirfd: c_int, path: *const c_char, argv: Argv, envp: Argv, flags: c_int) -> c_int {
    // SAFETY: forwarded caller arguments.
    let empty = unsafe { bytes(path) }.is_empty();
    if empty || flags & libc::AT_SYMLINK_NOFOLLOW != 0 {
        before_exec();
        return crate::real!(execveat(dirfd, path, argv, envp, flags): fn(c_int, *const c_char, Argv, Argv, c_int) -> c_int);
    }
    let pass =
        || crate::real!(execveat(dirfd, path, argv, envp, flags): fn(c_int, *const c_char, Argv, Argv, c_int) -> c_int);
    // SAFETY: forwarded caller arguments.
    unsafe { exec_at(dirfd, path, argv, envp, 0, &pass) }
}

// ---------------------------------------------------------------- spawning

type SpawnFn = unsafe extern "C" fn(
    *mut pid_t,
    *const c_char,
    *const libc::posix_spawn_file_actions_t,
    *const libc::posix_spawnattr_t,
    Argv,
    Argv,
) -> c_int;

/// posix_spawn of `path` through `real` (libc's posix_spawn or posix_spawnp): libc's child execs
/// with its internal execve, which no interposer sees, so a program under a mount is turned into
/// its memfd (whose descriptor the child inherits until its exec) or its interpreter here.
///
/// # Safety
/// The caller's posix_spawn arguments.
#[allow(clippy::too_many_arguments)]
unsafe fn spawn(
    real: SpawnFn,
    pid: *mut pid_t,
    path: *const c_char,
    fa: *const libc::posix_spawn_file_actions_t,
    attr: *const libc::posix_spawnattr_t,
    argv: Argv,
    envp: Argv,
    depth: u32,
) -> c_int {
    // SAFETY: the caller's C string.
    let name = unsafe { bytes(path) };
    let (ours, fd) = match plan(|| image::for_exec(libc::AT_FDCWD, name)) {
        // posix_spawn reports errors as its result.
        Err(Errno(e)) => return e,
        Ok(Exec::Pass) => (None, None),
        Ok(Exec::Real(c)) => (Some(c), None),
        Ok(Exec::Image { fd, path }) => (Some(path), Some(fd)),
        Ok(Exec::Script { interp, args }) => {
            if depth >= MAX_INTERPRETERS {
                return libc::ELOOP;
            }
            // SAFETY: the caller's argument vector.
            let v = unsafe { script_argv(&args, argv) };
            // The interpreter may be under a mount too.
            // SAFETY: `v` and `interp` outlive the call.
            return unsafe { spawn(real, pid, interp.as_ptr(), fa, attr, v.as_ptr(), envp, depth + 1) };
        }
    };
    let p = ours.as_ref().map_or(path, |c| c.as_ptr());
    let dups = before_spawn();
    // SAFETY: forwarded caller arguments, `p` a live C string.
    let r = unsafe { real(pid, p, fa, attr, argv, envp) };
    after_spawn(dups);
    if let Some(fd) = fd {
        let _ = crate::rt::real::sys::close(fd);
    }
    r
}

/// The real libc function `name`, or one failing with ENOSYS.
fn real_fn(slot: &AtomicUsize, name: &'static str) -> usize {
    match crate::rt::real::resolve(slot, name) {
        0 => no_such_function as *const () as usize,
        p => p,
    }
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
    static SLOT: AtomicUsize = AtomicUsize::new(0);
    // SAFETY: glibc's posix_spawn has the SpawnFn prototype.
    let real = unsafe { std::mem::transmute::<usize, SpawnFn>(real_fn(&SLOT, "posix_spawn\0")) };
    // SAFETY: forwarded caller arguments.
    unsafe { spawn(real, pid, path, fa, attr, argv, envp, 0) }
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
    static SLOT: AtomicUsize = AtomicUsize::new(0);
    // SAFETY: glibc's posix_spawnp has the SpawnFn prototype.
    let real = unsafe { std::mem::transmute::<usize, SpawnFn>(real_fn(&SLOT, "posix_spawnp\0")) };
    // SAFETY: forwarded caller arguments.
    unsafe {
        let found = searched(file);
        match &found {
            Some(path) => spawn(real, pid, path.as_ptr(), fa, attr, argv, envp, 0),
            None => {
                let dups = before_spawn();
                let r = real(pid, file, fa, attr, argv, envp);
                after_spawn(dups);
                r
            }
        }
    }
}

// ---------------------------------------------------------------- trampolines

/// Where a trampoline jumps and the first argument it passes: returned in two registers
/// (rax:rdx on x86_64, x0:x1 on aarch64).
#[repr(C)]
pub struct Jump {
    func: usize,
    arg: usize,
}

/// The first-argument replacement of the variadic execs: a program under a mount runs from its
/// memfd (kept open on purpose, without close-on-exec for a script, whose interpreter then opens
/// `/proc/self/fd/N`: its `$0` shows that name). The descriptor is lost if the exec fails.
fn variadic_path(which: usize, path: *const c_char) -> Option<CString> {
    let _busy = enter()?;
    if !enabled() {
        return None;
    }
    std::panic::catch_unwind(|| {
        // SAFETY: the caller's C string.
        let name = unsafe { bytes(path) };
        let found = if which == 2 && !name.contains(&b'/') {
            // Not found under a mount: libc searches (a bare name is not looked up in a cwd).
            Some(image::search(name, path_env())?)
        } else {
            None
        };
        let name = found.as_deref().unwrap_or(name);
        match image::for_exec_inline(libc::AT_FDCWD, name) {
            Ok(Exec::Image { path, .. }) | Ok(Exec::Real(path)) => Some(path),
            _ => None,
        }
    })
    .ok()
    .flatten()
}

/// The real function behind execl (0), execle (1) or execlp (2), after [`before_exec`], and
/// the path it must be given (`path`, or the memfd of a program under a mount).
extern "C" fn variadic_exec(which: usize, path: *const c_char) -> Jump {
    let arg = match variadic_path(which, path) {
        // Kept for the life of the image: the exec replaces it, or its failure leaks one string.
        Some(c) => c.into_raw() as usize,
        None => path as usize,
    };
    before_exec();
    static SLOTS: [AtomicUsize; 3] = [const { AtomicUsize::new(0) }; 3];
    const NAMES: [&str; 3] = ["execl\0", "execle\0", "execlp\0"];
    Jump {
        func: real_fn(&SLOTS[which % 3], NAMES[which % 3]),
        arg,
    }
}

/// Defines a variadic exec call as a trampoline: stable Rust cannot define a C-variadic
/// function, and glibc builds the argument vector and calls its internal execve, which no
/// interposer sees. The trampoline saves the argument registers, calls [`variadic_exec`]
/// (which runs [`before_exec`] and returns the real function and the path to give it), restores
/// them with that path first and jumps to the real function; the arguments passed on the stack
/// are never touched, so any number of them reaches it.
macro_rules! variadic_exec {
    ($(#[$m:meta])* $name:ident = $which:literal) => {
        $(#[$m])*
        #[unsafe(naked)]
        #[no_mangle]
        pub unsafe extern "C" fn $name(path: *const c_char, arg0: *const c_char) -> c_int {
            // x86_64: six integer argument registers, and %al (vector registers used by a
            // variadic call). Seven pushes keep the stack 16-byte aligned for the call; the
            // saved rdi (the path) is the first, at [rsp + 48].
            #[cfg(target_arch = "x86_64")]
            std::arch::naked_asm!(
                "push rdi", "push rsi", "push rdx", "push rcx", "push r8", "push r9", "push rax",
                "mov rsi, rdi",
                "mov edi, {which}",
                "call {hook}",
                "mov r11, rax",
                "mov [rsp + 48], rdx",
                "pop rax", "pop r9", "pop r8", "pop rcx", "pop rdx", "pop rsi", "pop rdi",
                "jmp r11",
                which = const $which,
                hook = sym variadic_exec,
            );
            // aarch64: eight argument registers, the frame pointer and the link register.
            #[cfg(target_arch = "aarch64")]
            std::arch::naked_asm!(
                "stp x29, x30, [sp, #-80]!",
                "mov x29, sp",
                "stp x0, x1, [sp, #16]",
                "stp x2, x3, [sp, #32]",
                "stp x4, x5, [sp, #48]",
                "stp x6, x7, [sp, #64]",
                "mov x1, x0",
                "mov x0, #{which}",
                "bl {hook}",
                "mov x16, x0",
                "str x1, [sp, #16]",
                "ldp x0, x1, [sp, #16]",
                "ldp x2, x3, [sp, #32]",
                "ldp x4, x5, [sp, #48]",
                "ldp x6, x7, [sp, #64]",
                "ldp x29, x30, [sp], #80",
                "br x16",
                which = const $which,
                hook = sym variadic_exec,
            );
        }
    };
}

variadic_exec!(/// execl(3): `execl(path, arg0, ..., NULL)`.
    execl = 0);
variadic_exec!(/// execle(3): `execle(path, arg0, ..., NULL, envp)`.
    execle = 1);
variadic_exec!(/// execlp(3): `execlp(file, arg0, ..., NULL)`.
    execlp = 2);

/// The real dlopen and the name to give it: a library under a mount is mapped from its memfd;
/// anything else (and a library that cannot be read: the real dlopen then reports it in
/// `dlerror` as for any file) goes on unchanged.
extern "C" fn dlopen_hook(name: *const c_char) -> Jump {
    let arg = (|| {
        let _busy = enter()?;
        if name.is_null() || !enabled() {
            return None;
        }
        std::panic::catch_unwind(|| {
            // SAFETY: the caller's C string.
            image::for_dlopen(unsafe { bytes(name) }).ok().flatten()
        })
        .ok()
        .flatten()
    })();
    static SLOT: AtomicUsize = AtomicUsize::new(0);
    Jump {
        func: real_fn(&SLOT, "dlopen\0"),
        // The memfd's name lives in image's table for the life of the process.
        arg: arg.map_or(name as usize, |c| c as usize),
    }
}

/// dlopen(3), as a trampoline: glibc finds the caller's own search path (RPATH, RUNPATH,
/// `$ORIGIN`) from the return address, which a wrapper calling dlopen would make its own. So it
/// calls [`dlopen_hook`] and jumps to the real dlopen with the caller's return address intact.
#[unsafe(naked)]
#[no_mangle]
pub unsafe extern "C" fn dlopen(name: *const c_char, flags: c_int) -> *mut c_void {
    // Three pushes keep the stack 16-byte aligned for the call.
    #[cfg(target_arch = "x86_64")]
    std::arch::naked_asm!(
        "push rdi", "push rsi", "push rax",
        "call {hook}",
        "mov r11, rax",
        "mov rdi, rdx",
        "pop rax", "pop rsi", "add rsp, 8",
        "jmp r11",
        hook = sym dlopen_hook,
    );
    #[cfg(target_arch = "aarch64")]
    std::arch::naked_asm!(
        "stp x29, x30, [sp, #-32]!",
        "mov x29, sp",
        "str x1, [sp, #16]",
        "bl {hook}",
        "mov x16, x0",
        "mov x0, x1",
        "ldr x1, [sp, #16]",
        "ldp x29, x30, [sp], #32",
        "br x16",
        hook = sym dlopen_hook,
    );
}
