//! The real libc functions, found with `dlsym(RTLD_NEXT, name)` once per symbol and cached, and
//! the few raw system calls the library makes on its own descriptors (never through an
//! interposable symbol, so bookkeeping never re-enters the wrappers: not even `syscall(3)`,
//! which this library defines itself, so that `libc::syscall` here would be our own wrapper).

use std::sync::atomic::{AtomicUsize, Ordering};

/// Resolves `name` (NUL-terminated) with `dlsym(RTLD_NEXT)` and caches it in `slot`.
/// Returns 0 when libc has no such symbol.
pub fn resolve(slot: &AtomicUsize, name: &'static str) -> usize {
    let p = slot.load(Ordering::Acquire);
    if p != 0 {
        return p;
    }
    // SAFETY: `name` is a NUL-terminated literal (built by the `real!` macro with concat!).
    let p = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr().cast()) } as usize;
    slot.store(p, Ordering::Release);
    p
}

/// Calls the real libc function `name` with the given C signature:
/// `real!(read(fd, buf, n): fn(c_int, *mut c_void, size_t) -> ssize_t)`.
/// A symbol libc lacks fails with ENOSYS.
#[macro_export]
macro_rules! real {
    ($name:ident ($($arg:expr),* $(,)?) : fn($($t:ty),* $(,)?) -> $r:ty) => {{
        static SLOT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        match $crate::rt::real::resolve(&SLOT, concat!(stringify!($name), "\0")) {
            0 => {
                $crate::rt::errno::set_errno(libc::ENOSYS);
                <$r as $crate::rt::errno::Fail>::fail()
            }
            p => {
                // SAFETY: `p` is glibc's definition of this symbol, whose C prototype is the
                // signature written at the call site (checked against the glibc headers).
                let f = unsafe { std::mem::transmute::<usize, unsafe extern "C" fn($($t),*) -> $r>(p) };
                // SAFETY: the arguments are the caller's, passed through unchanged.
                unsafe { f($($arg),*) }
            }
        }
    }};
}

/// A system call made with the instruction itself ([`sys::raw6`]) in libc's convention: the
/// result, or -1 with `errno` set. What `libc::syscall` would be if this library did not define
/// `syscall` itself: inside the library that name binds to our wrapper, which treats a close or
/// a dup3 as one made behind our back (every descriptor of the table was then confirmed again by
/// `fstat` at its next use, after each open of a PLFS file). Used inside `unsafe`, as
/// `libc::syscall` is: `raw_syscall!(libc::SYS_close, fd)`.
#[macro_export]
macro_rules! raw_syscall {
    ($n:expr $(, $a:expr)* $(,)?) => {
        $crate::rt::real::sys::call($n, $crate::rt::real::sys::args(&[$($a as libc::c_long),*]))
    };
}

/// Raw system calls on descriptors, returning `Err(errno)` on failure.
pub mod sys {
    use crate::rt::errno::{errno, set_errno, Errno};

    /// A raw system call's result: `Err(errno)` when negative.
    pub fn check(r: libc::c_long) -> Result<libc::c_long, Errno> {
        if r < 0 {
            Err(Errno(errno()))
        } else {
            Ok(r)
        }
    }

    /// [`raw6`] in libc's convention: -1 and `errno` for a negative errno (out of line: the
    /// callers are on rare paths of hot functions, which stay small).
    ///
    /// # Safety
    /// As [`raw6`].
    #[inline(never)]
    pub unsafe fn call(n: libc::c_long, a: [libc::c_long; 6]) -> libc::c_long {
        // SAFETY: the caller vouches for the arguments.
        let r = unsafe { raw6(n, a) };
        if (-4095..0).contains(&r) {
            set_errno(-r as i32);
            -1
        } else {
            r
        }
    }

    /// Up to six arguments of [`raw6`], the rest zero.
    pub fn args(given: &[libc::c_long]) -> [libc::c_long; 6] {
        let mut a = [0; 6];
        a[..given.len()].copy_from_slice(given);
        a
    }

    /// lseek(2).
    pub fn lseek(fd: i32, off: i64, whence: i32) -> Result<i64, Errno> {
        // SAFETY: plain system call with integer arguments.
        check(unsafe { crate::raw_syscall!(libc::SYS_lseek, fd, off, whence) })
    }

    /// fstat(2): the (st_dev, st_ino) of a descriptor.
    pub fn fstat_key(fd: i32) -> Result<(u64, u64), Errno> {
        // SAFETY: `st` is a valid, writable stat buffer for the duration of the call.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: see above.
        check(unsafe { crate::raw_syscall!(libc::SYS_fstat, fd, &mut st as *mut libc::stat) })?;
        Ok((st.st_dev, st.st_ino))
    }

    /// close(2).
    pub fn close(fd: i32) -> Result<(), Errno> {
        // SAFETY: plain system call with an integer argument.
        check(unsafe { crate::raw_syscall!(libc::SYS_close, fd) }).map(drop)
    }

    /// dup3(2).
    pub fn dup3(old: i32, new: i32, flags: i32) -> Result<i32, Errno> {
        // SAFETY: plain system call with integer arguments.
        check(unsafe { crate::raw_syscall!(libc::SYS_dup3, old, new, flags) }).map(|v| v as i32)
    }

    /// fcntl(2) with an integer argument.
    pub fn fcntl_int(fd: i32, cmd: i32, arg: libc::c_long) -> Result<i32, Errno> {
        // SAFETY: plain system call with integer arguments.
        check(unsafe { crate::raw_syscall!(libc::SYS_fcntl, fd, cmd, arg) }).map(|v| v as i32)
    }

    /// Any system call with six arguments, made with the instruction itself (no libc symbol, no
    /// lookup): the pass-through of our `syscall(3)`. Returns the kernel's raw result (a negative
    /// errno on failure).
    ///
    /// # Safety
    /// The arguments must be valid for system call `n` (pointers it reads or writes included).
    pub unsafe fn raw6(n: libc::c_long, a: [libc::c_long; 6]) -> libc::c_long {
        let r: libc::c_long;
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the caller vouches for the arguments; rcx and r11 are clobbered by `syscall`.
        unsafe {
            std::arch::asm!("syscall", inlateout("rax") n => r, in("rdi") a[0], in("rsi") a[1],
                in("rdx") a[2], in("r10") a[3], in("r8") a[4], in("r9") a[5],
                lateout("rcx") _, lateout("r11") _, options(nostack));
        }
        #[cfg(target_arch = "aarch64")]
        // SAFETY: the caller vouches for the arguments.
        unsafe {
            std::arch::asm!("svc 0", in("x8") n, inlateout("x0") a[0] => r, in("x1") a[1],
                in("x2") a[2], in("x3") a[3], in("x4") a[4], in("x5") a[5], options(nostack));
        }
        r
    }

    /// getpid(2), never cached.
    pub fn getpid() -> u32 {
        // SAFETY: getpid cannot fail.
        unsafe { crate::raw_syscall!(libc::SYS_getpid) as u32 }
    }
}
