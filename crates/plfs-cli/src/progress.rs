//! Progress bars for long operations (cp, import, export, flatten): drawn on standard error only
//! when it is a terminal and the output is not JSON, so pipes, logs and scripts see nothing.

use crate::out;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::time::Duration;

/// Copies smaller than this finish too fast for a bar to help.
pub const MIN_BYTES: u64 = 8 << 20;

/// The bar of [`Progress::bytes`] on `target`. Everything but the label has a bounded width
/// (57 columns), and the label (`wide_msg`) gets what is left of the terminal's width,
/// cut short with an ellipsis: a line never wraps on an 80-column terminal.
fn bytes_bar(total: u64, what: &str, target: ProgressDrawTarget) -> ProgressBar {
    let pb = ProgressBar::with_draw_target(Some(total), target);
    let style = ProgressStyle::with_template(
        "{wide_msg:.bold} [{bar:16}] {bytes:>10}/{total_bytes:<10} {binary_bytes_per_sec:>11} {eta:>3}",
    )
    .expect("a valid template")
    .progress_chars("=> ");
    pb.set_style(style);
    pb.set_message(short_label(what));
    pb
}

/// Labels are paths, whose end says most: a long one keeps its last 20 characters after `...`
/// (23 columns: what an 80-column terminal leaves beside the bar).
fn short_label(what: &str) -> String {
    let n = what.chars().count();
    if n <= 23 {
        return what.to_string();
    }
    format!("...{}", what.chars().skip(n - 20).collect::<String>())
}

/// A progress bar, or nothing when none is wanted.
pub struct Progress(Option<ProgressBar>);

impl Progress {
    /// A bar over `total` bytes, labelled `what` (none unless [`out::progress_wanted`] and the
    /// copy is at least [`MIN_BYTES`]).
    pub fn bytes(total: u64, what: &str) -> Progress {
        if !out::progress_wanted() || total < MIN_BYTES {
            return Progress(None);
        }
        Progress(Some(bytes_bar(total, what, ProgressDrawTarget::stderr())))
    }

    /// A spinner for an operation of unknown length.
    pub fn spinner(what: &str) -> Progress {
        if !out::progress_wanted() {
            return Progress(None);
        }
        let pb = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        pb.set_style(ProgressStyle::with_template("{spinner} {wide_msg} {elapsed:>4}").expect("a valid template"));
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
            pb.set_message(short_label(what));
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

#[cfg(test)]
mod tests {
    use super::*;
    use indicatif::TermLike;
    use std::sync::{Arc, Mutex};

    /// A terminal of a given width that keeps what is drawn on it.
    #[derive(Debug, Clone)]
    struct Screen(u16, Arc<Mutex<Vec<String>>>);

    impl TermLike for Screen {
        fn width(&self) -> u16 {
            self.0
        }
        fn move_cursor_up(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_down(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_right(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_left(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn write_line(&self, s: &str) -> std::io::Result<()> {
            self.1.lock().unwrap().push(s.to_string());
            Ok(())
        }
        fn write_str(&self, s: &str) -> std::io::Result<()> {
            self.write_line(s)
        }
        fn clear_line(&self) -> std::io::Result<()> {
            Ok(())
        }
        fn flush(&self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Printable width of a drawn line (escape sequences for bold left out).
    fn width(s: &str) -> usize {
        let mut n = 0;
        let mut esc = false;
        for c in s.chars() {
            match (esc, c) {
                (false, '\u{1b}') => esc = true,
                (true, 'm') => esc = false,
                (true, _) => {}
                (false, _) => n += 1,
            }
        }
        n
    }

    #[test]
    fn the_bar_fits_80_columns_whatever_the_label_and_sizes() {
        for label in ["x", &"/mnt/plfs/a/very/long/path/".repeat(6)] {
            let screen = Screen(80, Arc::new(Mutex::new(Vec::new())));
            let pb = bytes_bar(
                999 << 40,
                label,
                ProgressDrawTarget::term_like_with_hz(Box::new(screen.clone()), 100),
            );
            pb.set_position(512 << 40);
            pb.tick();
            pb.finish();
            let lines: Vec<String> = screen
                .1
                .lock()
                .unwrap()
                .iter()
                .filter(|l| !l.is_empty())
                .cloned()
                .collect();
            assert!(!lines.is_empty(), "nothing drawn");
            for l in &lines {
                assert!(width(l) <= 80, "{} columns: {l:?}", width(l));
                assert!(l.contains('['), "{l:?}");
            }
            if label.len() > 23 {
                assert!(lines[0].starts_with("...fs/a/very/long/path/ ["), "{lines:?}");
            }
        }
    }
}
