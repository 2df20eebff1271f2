//! Diagnostics of the preload library itself, off by default (except damage found in a
//! container): `LDPLFS_LOG=warn|debug` prints one line per event to standard error through a
//! raw write(2). The bottom of the library: it uses nothing else of it.

use std::sync::atomic::{AtomicU8, Ordering};

/// 0 = not read yet, 1 = off, 2 = warn, 3 = debug.
static LEVEL: AtomicU8 = AtomicU8::new(0);

fn level() -> u8 {
    match LEVEL.load(Ordering::Relaxed) {
        0 => {
            let l = match std::env::var("LDPLFS_LOG").as_deref() {
                Ok("warn") | Ok("1") => 2,
                Ok("debug") | Ok("2") | Ok("trace") => 3,
                _ => 1,
            };
            LEVEL.store(l, Ordering::Relaxed);
            l
        }
        l => l,
    }
}

fn emit(tag: &str, msg: std::fmt::Arguments<'_>) {
    // SAFETY: getpid cannot fail.
    let pid = unsafe { crate::raw_syscall!(libc::SYS_getpid) };
    let line = format!("ldplfs[{pid}]: {tag}: {msg}\n");
    // SAFETY: writes a valid buffer to fd 2 with a raw system call.
    unsafe { crate::raw_syscall!(libc::SYS_write, 2, line.as_ptr(), line.len()) };
}

/// Logs a warning (printed with `LDPLFS_LOG=warn` or `debug`).
pub fn warn(msg: std::fmt::Arguments<'_>) {
    if level() >= 2 {
        emit("warning", msg);
    }
}

/// Logs damage found in a container: the program sees only EIO, so this is printed unless
/// logging is switched off explicitly (`LDPLFS_LOG=off`).
pub fn damage(msg: std::fmt::Arguments<'_>) {
    if level() >= 2 || std::env::var_os("LDPLFS_LOG").is_none() {
        emit("error", msg);
    }
}

/// Logs a debug line (printed with `LDPLFS_LOG=debug`).
pub fn debug(msg: std::fmt::Arguments<'_>) {
    if level() >= 3 {
        emit("debug", msg);
    }
}

/// Always printed: the one warning about an unusable configuration.
pub fn always(msg: std::fmt::Arguments<'_>) {
    emit("warning", msg);
}
