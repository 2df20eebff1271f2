//! For the core's integration tests only (`#[doc(hidden)]`, not an API): what they check of the
//! I/O seam, by name, so that `sys` stays private to the core.

pub use crate::sys::LOCAL_WINDOW_NS;

/// The timestamp window of the backend directory at `path` (`sys::Dir::timestamp_window_ns`).
pub fn timestamp_window_ns(path: &std::path::Path) -> crate::Result<i128> {
    Ok(crate::sys::Dir::open_root(path)?.timestamp_window_ns())
}
