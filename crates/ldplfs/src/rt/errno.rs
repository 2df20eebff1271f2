//! errno: the value every internal operation fails with, and the value each C function returns
//! on failure (-1 or NULL).

/// An errno value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Errno(pub i32);

impl From<plfs_core::Error> for Errno {
    fn from(e: plfs_core::Error) -> Self {
        if matches!(e, plfs_core::Error::Corruption { .. }) {
            crate::rt::log::damage(format_args!("{e}"));
        } else {
            crate::rt::log::debug(format_args!("{e}"));
        }
        Errno(e.raw_errno())
    }
}

/// Result of the library's internal operations.
pub type Res<T> = Result<T, Errno>;

/// Reads errno.
pub fn errno() -> i32 {
    // SAFETY: __errno_location always returns this thread's errno slot.
    unsafe { *libc::__errno_location() }
}

/// Sets errno.
pub fn set_errno(e: i32) {
    // SAFETY: __errno_location always returns this thread's errno slot.
    unsafe { *libc::__errno_location() = e }
}

/// The value a failed call returns (-1 or NULL); errno says why.
pub trait Fail {
    /// The failure value.
    fn fail() -> Self;
}
impl Fail for i32 {
    fn fail() -> Self {
        -1
    }
}
impl Fail for i64 {
    fn fail() -> Self {
        -1
    }
}
impl Fail for isize {
    fn fail() -> Self {
        -1
    }
}
impl Fail for () {
    fn fail() -> Self {}
}
impl<T> Fail for *mut T {
    fn fail() -> Self {
        std::ptr::null_mut()
    }
}
