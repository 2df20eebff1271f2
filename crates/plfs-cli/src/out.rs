//! Everything the tool prints goes through here, never through `println!` (the crate denies
//! `clippy::print_stdout` and `clippy::print_stderr`):
//!
//! - [`outln!`] writes a line of text to standard output; under `--json` it writes nothing, so
//!   standard output carries only the JSON documents written by [`json`].
//! - A write to a closed pipe (`plfs map F | head -1`) ends the process at once, quietly, with
//!   exit code 0: the reader went away, which is not an error of ours. Any other write error is
//!   reported and exits with [`EXIT_FAILURE`].
//! - [`errln!`] writes to standard error and ignores errors (there is nobody left to tell).

use std::fmt;
use std::io::{ErrorKind, IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// Exit code: success.
pub const EXIT_OK: i32 = 0;
/// Exit code: an operation failed (the message, or the JSON `errno`, says which and why).
pub const EXIT_FAILURE: i32 = 1;
/// Exit code: bad usage (unknown option, missing argument); clap's convention.
pub const EXIT_USAGE: i32 = 2;

static JSON: AtomicBool = AtomicBool::new(false);
static VERBOSE: AtomicBool = AtomicBool::new(false);

/// Sets the output mode for the whole process (called once, after parsing the arguments).
pub fn set_mode(json: bool, verbose: bool) {
    JSON.store(json, Ordering::Relaxed);
    VERBOSE.store(verbose, Ordering::Relaxed);
}

/// True under `--json`.
pub fn json_mode() -> bool {
    JSON.load(Ordering::Relaxed)
}

/// True under `-v`/`--verbose`.
pub fn verbose() -> bool {
    VERBOSE.load(Ordering::Relaxed)
}

/// Handles a failed write to standard output: quiet exit on a closed pipe, else a message.
fn write_failed(e: std::io::Error) -> ! {
    if e.kind() == ErrorKind::BrokenPipe {
        std::process::exit(EXIT_OK);
    }
    err_text(format_args!("plfs: error: writing standard output: {e}\n"));
    std::process::exit(EXIT_FAILURE);
}

/// Writes text to standard output (nothing under `--json`).
pub fn text(args: fmt::Arguments) {
    if json_mode() {
        return;
    }
    let mut o = std::io::stdout().lock();
    if let Err(e) = o.write_fmt(args) {
        write_failed(e);
    }
}

/// Writes a JSON document (pretty-printed, one per command) to standard output.
pub fn json(v: &serde_json::Value) {
    let s = serde_json::to_string_pretty(v).expect("a JSON value serialises");
    let mut o = std::io::stdout().lock();
    if let Err(e) = o.write_all(s.as_bytes()).and_then(|_| o.write_all(b"\n")) {
        write_failed(e);
    }
}

/// Writes raw bytes (file contents for `plfs cat`) to standard output, in either mode.
pub fn bytes(b: &[u8]) {
    let mut o = std::io::stdout().lock();
    if let Err(e) = o.write_all(b) {
        write_failed(e);
    }
}

/// Flushes standard output (before exiting, or before a message on standard error).
pub fn flush() {
    if let Err(e) = std::io::stdout().lock().flush() {
        write_failed(e);
    }
}

/// Flushes standard output and exits with `code`.
pub fn exit(code: i32) -> ! {
    flush();
    std::process::exit(code)
}

/// Writes to standard error, ignoring errors.
pub fn err_text(args: fmt::Arguments) {
    let _ = std::io::stderr().lock().write_fmt(args);
}

/// True when standard error is a terminal and the output is not JSON: progress bars are drawn.
pub fn progress_wanted() -> bool {
    !json_mode() && std::io::stderr().is_terminal()
}

/// `outln!("...", args)`: a line of text on standard output (see the module documentation).
#[macro_export]
macro_rules! outln {
    () => { $crate::out::text(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::out::text(format_args!("{}\n", format_args!($($arg)*))) };
}

/// `errln!("...", args)`: a line on standard error.
#[macro_export]
macro_rules! errln {
    ($($arg:tt)*) => { $crate::out::err_text(format_args!("{}\n", format_args!($($arg)*))) };
}
