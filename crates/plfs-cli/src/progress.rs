//! Progress bars for long operations (cp, import, export, flatten): drawn on standard error only
//! when it is a terminal and the output is not JSON, so pipes, logs and scripts see nothing.

use crate::out;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::time::Duration;

/// Copies smaller than this finish too fast for a bar to help.
pub const MIN_BYTES: u64 = 8 << 20;

/// A progress bar, or nothing when none is wanted.
pub struct Progress(Option<ProgressBar>);

impl Progress {
    /// A bar over `total` bytes, labelled `what` (none unless [`out::progress_wanted`] and the
    /// copy is at least [`MIN_BYTES`]).
    pub fn bytes(total: u64, what: &str) -> Progress {
        if !out::progress_wanted() || total < MIN_BYTES {
            return Progress(None);
        }
        let pb = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template(
            "{msg:.bold} [{bar:30}] {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta}",
        )
        .expect("a valid template")
        .progress_chars("=> ");
        pb.set_style(style);
        pb.set_message(what.to_string());
        Progress(Some(pb))
    }

    /// A spinner for an operation of unknown length.
    pub fn spinner(what: &str) -> Progress {
        if !out::progress_wanted() {
            return Progress(None);
        }
        let pb = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        pb.set_style(ProgressStyle::with_template("{spinner} {msg} ({elapsed})").expect("a valid template"));
        pb.set_message(what.to_string());
        pb.enable_steady_tick(Duration::from_millis(120));
        Progress(Some(pb))
    }

    /// Advances by `n` bytes.
    pub fn inc(&self, n: u64) {
        if let Some(pb) = &self.0 {
            pb.inc(n);
        }
    }

    /// Sets the label (the file being copied).
    pub fn label(&self, what: &str) {
        if let Some(pb) = &self.0 {
            pb.set_message(what.to_string());
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(pb) = &self.0 {
            pb.finish_and_clear();
        }
    }
}
