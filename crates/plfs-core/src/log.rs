//! Minimal logging to standard error through a raw write(2) (never libc's stdio, which the
//! LD_PRELOAD library interposes). Level from `$PLFS_LOG`: off, warn (default), info, debug.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::OnceLock;

/// Log levels, most severe first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Nothing is printed.
    Off,
    /// Problems that were handled (a torn index tail skipped...).
    Warn,
    /// Notable events.
    Info,
    /// Everything.
    Debug,
}

/// The level set by [`set_level`], if any (0 = not set).
static OVERRIDE: AtomicU8 = AtomicU8::new(0);

/// The configured level: [`set_level`]'s if called, else `$PLFS_LOG`'s (default: warn).
pub fn level() -> Level {
    match OVERRIDE.load(Ordering::Relaxed) {
        1 => return Level::Off,
        2 => return Level::Warn,
        3 => return Level::Info,
        4 => return Level::Debug,
        _ => {}
    }
    static L: OnceLock<Level> = OnceLock::new();
    *L.get_or_init(|| env_level().unwrap_or(Level::Warn))
}

/// The level `$PLFS_LOG` asks for, if it is set to a known level.
pub fn env_level() -> Option<Level> {
    match std::env::var("PLFS_LOG").as_deref() {
        Ok("off") | Ok("0") | Ok("none") => Some(Level::Off),
        Ok("warn") | Ok("warning") => Some(Level::Warn),
        Ok("info") => Some(Level::Info),
        Ok("debug") | Ok("trace") => Some(Level::Debug),
        _ => None,
    }
}

/// Sets the level for this process (front ends that run inside other programs, like the
/// LD_PRELOAD library, keep the core quiet unless `$PLFS_LOG` asks otherwise).
pub fn set_level(l: Level) {
    let v = match l {
        Level::Off => 1,
        Level::Warn => 2,
        Level::Info => 3,
        Level::Debug => 4,
    };
    OVERRIDE.store(v, Ordering::Relaxed);
}

/// Writes one line to fd 2 if `lvl` is enabled.
pub fn emit(lvl: Level, msg: std::fmt::Arguments<'_>) {
    if lvl > level() || lvl == Level::Off {
        return;
    }
    let tag = match lvl {
        Level::Warn => "warning",
        Level::Info => "info",
        _ => "debug",
    };
    let line = format!("plfs: {tag}: {msg}\n");
    // SAFETY-free: rustix's stderr() borrows fd 2 for the duration of the call.
    let _ = rustix::io::write(rustix::stdio::stderr(), line.as_bytes());
}

/// Logs a warning.
#[macro_export]
macro_rules! warn {
    ($($t:tt)*) => { $crate::log::emit($crate::log::Level::Warn, format_args!($($t)*)) };
}

/// Logs at debug level.
#[macro_export]
macro_rules! debug {
    ($($t:tt)*) => { $crate::log::emit($crate::log::Level::Debug, format_args!($($t)*)) };
}
