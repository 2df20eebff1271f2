//! Minimal logging to standard error through a raw write(2) (never libc's stdio, which the
//! LD_PRELOAD library interposes). Level from `$PLFS_LOG`: off, warn (default), info, debug.

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

/// The configured level.
pub fn level() -> Level {
    static L: OnceLock<Level> = OnceLock::new();
    *L.get_or_init(|| match std::env::var("PLFS_LOG").as_deref() {
        Ok("off") | Ok("0") | Ok("none") => Level::Off,
        Ok("info") => Level::Info,
        Ok("debug") | Ok("trace") => Level::Debug,
        _ => Level::Warn,
    })
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
