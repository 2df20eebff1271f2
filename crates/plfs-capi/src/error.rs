//! `plfs_error_t`: the PLFS 2.5 error codes, their errno translations and messages, and the one
//! place where a core [`plfs_core::Error`] becomes a C error code ([`to_plfs_error`]).
//!
//! Values are those of the original `plfs_error.h` (a sequential enum, *not* errno values), so
//! programs compiled against PLFS 2.5 see the same numbers. Codes 44..=48 are our additions for
//! errnos a file system can return that 2.5 had no name for; 2.5 mapped them to `PLFS_TBD`.

use plfs_core::Error;
use std::ffi::{c_char, c_int, CStr};

/// A C `plfs_error_t`. A transparent `int`, not a Rust enum: C may pass any value.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlfsError(pub c_int);

/// Every named code: (value, name, errno, message). The message is the glibc `strerror` text, as
/// in 2.5. `errno` 0 marks codes with no errno of their own (they translate to EIO).
const TABLE: &[(c_int, &str, c_int, &CStr)] = &[
    (0, "PLFS_SUCCESS", 0, c"Success"),
    (1, "PLFS_EPERM", libc::EPERM, c"Operation not permitted"),
    (2, "PLFS_ENOENT", libc::ENOENT, c"No such file or directory"),
    (3, "PLFS_ESRCH", libc::ESRCH, c"No such process"),
    (4, "PLFS_EINTR", libc::EINTR, c"Interrupted system call"),
    (5, "PLFS_EIO", libc::EIO, c"Input/output error"),
    (6, "PLFS_ENXIO", libc::ENXIO, c"No such device or address"),
    (7, "PLFS_E2BIG", libc::E2BIG, c"Argument list too long"),
    (8, "PLFS_EBADF", libc::EBADF, c"Bad file descriptor"),
    (9, "PLFS_EAGAIN", libc::EAGAIN, c"Resource temporarily unavailable"),
    (10, "PLFS_ENOMEM", libc::ENOMEM, c"Cannot allocate memory"),
    (11, "PLFS_EACCES", libc::EACCES, c"Permission denied"),
    (12, "PLFS_EFAULT", libc::EFAULT, c"Bad address"),
    (13, "PLFS_EBUSY", libc::EBUSY, c"Device or resource busy"),
    (14, "PLFS_EEXIST", libc::EEXIST, c"File exists"),
    (15, "PLFS_EXDEV", libc::EXDEV, c"Invalid cross-device link"),
    (16, "PLFS_ENODEV", libc::ENODEV, c"No such device"),
    (17, "PLFS_ENOTDIR", libc::ENOTDIR, c"Not a directory"),
    (18, "PLFS_EISDIR", libc::EISDIR, c"Is a directory"),
    (19, "PLFS_EINVAL", libc::EINVAL, c"Invalid argument"),
    (20, "PLFS_ENFILE", libc::ENFILE, c"Too many open files in system"),
    (21, "PLFS_EMFILE", libc::EMFILE, c"Too many open files"),
    (22, "PLFS_ENOTTY", libc::ENOTTY, c"Inappropriate ioctl for device"),
    (23, "PLFS_ETXTBSY", libc::ETXTBSY, c"Text file busy"),
    (24, "PLFS_EFBIG", libc::EFBIG, c"File too large"),
    (25, "PLFS_ENOSPC", libc::ENOSPC, c"No space left on device"),
    (26, "PLFS_ESPIPE", libc::ESPIPE, c"Illegal seek"),
    (27, "PLFS_EROFS", libc::EROFS, c"Read-only file system"),
    (28, "PLFS_EMLINK", libc::EMLINK, c"Too many links"),
    (29, "PLFS_EPIPE", libc::EPIPE, c"Broken pipe"),
    (30, "PLFS_ERANGE", libc::ERANGE, c"Numerical result out of range"),
    (31, "PLFS_EDEADLK", libc::EDEADLK, c"Resource deadlock avoided"),
    (32, "PLFS_ENAMETOOLONG", libc::ENAMETOOLONG, c"File name too long"),
    (33, "PLFS_ENOSYS", libc::ENOSYS, c"Function not implemented"),
    (34, "PLFS_ENOTEMPTY", libc::ENOTEMPTY, c"Directory not empty"),
    (35, "PLFS_ELOOP", libc::ELOOP, c"Too many levels of symbolic links"),
    (36, "PLFS_ENODATA", libc::ENODATA, c"No data available"),
    (
        37,
        "PLFS_EOVERFLOW",
        libc::EOVERFLOW,
        c"Value too large for defined data type",
    ),
    (38, "PLFS_EBADFD", libc::EBADFD, c"File descriptor in bad state"),
    (
        39,
        "PLFS_EPROTOTYPE",
        libc::EPROTOTYPE,
        c"Protocol wrong type for socket",
    ),
    (40, "PLFS_ENOTSUP", libc::ENOTSUP, c"Operation not supported"),
    (41, "PLFS_EEOF", 0, c"End of file"),
    (42, "PLFS_SIGSEGV", 0, c"Segmentation fault"),
    (43, "PLFS_SIGBUS", 0, c"Bus error"),
    (44, "PLFS_EDQUOT", libc::EDQUOT, c"Disk quota exceeded"),
    (45, "PLFS_ESTALE", libc::ESTALE, c"Stale file handle"),
    (46, "PLFS_ETIMEDOUT", libc::ETIMEDOUT, c"Connection timed out"),
    (47, "PLFS_ENOLCK", libc::ENOLCK, c"No locks available"),
    (
        48,
        "PLFS_ENOTCONN",
        libc::ENOTCONN,
        c"Transport endpoint is not connected",
    ),
    (300, "PLFS_TBD", 0, c"Unknown error"),
];

#[allow(missing_docs)]
impl PlfsError {
    pub const SUCCESS: PlfsError = PlfsError(0);
    pub const EPERM: PlfsError = PlfsError(1);
    pub const ENOENT: PlfsError = PlfsError(2);
    pub const EIO: PlfsError = PlfsError(5);
    pub const EBADF: PlfsError = PlfsError(8);
    pub const ENOMEM: PlfsError = PlfsError(10);
    pub const EACCES: PlfsError = PlfsError(11);
    pub const EFAULT: PlfsError = PlfsError(12);
    pub const EEXIST: PlfsError = PlfsError(14);
    pub const EXDEV: PlfsError = PlfsError(15);
    pub const EINVAL: PlfsError = PlfsError(19);
    pub const ENAMETOOLONG: PlfsError = PlfsError(32);
    pub const ENOSYS: PlfsError = PlfsError(33);
    pub const ENOTEMPTY: PlfsError = PlfsError(34);
    pub const EOVERFLOW: PlfsError = PlfsError(37);
    pub const TBD: PlfsError = PlfsError(300);

    /// The entry of this code in [`TABLE`], if it is a named code.
    fn entry(self) -> Option<&'static (c_int, &'static str, c_int, &'static CStr)> {
        TABLE.iter().find(|e| e.0 == self.0)
    }

    /// The code for an errno (`PLFS_TBD` for an errno with no code).
    pub fn from_errno(errno: c_int) -> PlfsError {
        if errno == 0 {
            return PlfsError::SUCCESS;
        }
        // EWOULDBLOCK == EAGAIN and EOPNOTSUPP == ENOTSUP on Linux: the table covers them.
        TABLE
            .iter()
            .find(|e| e.2 == errno)
            .map(|e| PlfsError(e.0))
            .unwrap_or(PlfsError::TBD)
    }

    /// The errno for this code: EIO for codes that have none (2.5 returned the non-errno 300).
    pub fn to_errno(self) -> c_int {
        match self.entry() {
            Some(&(0, ..)) => 0,
            Some(&(_, _, e, _)) if e != 0 => e,
            _ => libc::EIO,
        }
    }

    /// The symbolic name, e.g. `PLFS_ENOENT` (for the header test and messages).
    pub fn name(self) -> Option<&'static str> {
        self.entry().map(|e| e.1)
    }

    /// The message `strplfserr` returns.
    pub fn message(self) -> &'static CStr {
        self.entry().map(|e| e.3).unwrap_or(c"Unknown error")
    }
}

/// Every named code with its value and name (used by the tests that check include/plfs.h).
pub fn named_codes() -> impl Iterator<Item = (c_int, &'static str)> {
    TABLE.iter().map(|e| (e.0, e.1))
}

/// The only translation of core errors for C callers.
pub fn to_plfs_error(e: &Error) -> PlfsError {
    PlfsError::from_errno(e.raw_errno())
}

/// `const char *strplfserr(plfs_error_t)`: a static message; never NULL.
#[no_mangle]
pub extern "C" fn strplfserr(err: PlfsError) -> *const c_char {
    err.message().as_ptr()
}

/// `int plfs_error_to_errno(plfs_error_t)`.
#[no_mangle]
pub extern "C" fn plfs_error_to_errno(err: PlfsError) -> c_int {
    err.to_errno()
}

/// `plfs_error_t errno_to_plfs_error(int)`. Negative errnos (the `-errno` convention of older
/// PLFS releases) are accepted too.
#[no_mangle]
pub extern "C" fn errno_to_plfs_error(errno: c_int) -> PlfsError {
    PlfsError::from_errno(errno.checked_abs().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::io::Errno;
    use std::path::PathBuf;

    #[test]
    fn values_match_plfs_2_5() {
        assert_eq!(PlfsError::from_errno(libc::ENOENT), PlfsError(2));
        assert_eq!(PlfsError::from_errno(libc::EBADF), PlfsError(8));
        assert_eq!(PlfsError::from_errno(libc::EINVAL), PlfsError(19));
        assert_eq!(PlfsError::from_errno(libc::ENOTSUP), PlfsError(40));
        assert_eq!(PlfsError::from_errno(libc::EWOULDBLOCK), PlfsError(9));
        assert_eq!(PlfsError::from_errno(libc::EHOSTDOWN), PlfsError::TBD);
        assert_eq!(errno_to_plfs_error(-libc::EEXIST), PlfsError::EEXIST);
        assert_eq!(errno_to_plfs_error(c_int::MIN), PlfsError::SUCCESS);
    }

    #[test]
    fn round_trip_every_errno_code() {
        for &(v, name, errno, _) in TABLE {
            let e = PlfsError(v);
            if errno != 0 {
                assert_eq!(PlfsError::from_errno(e.to_errno()), e, "{name}");
            } else if v != 0 {
                assert_eq!(e.to_errno(), libc::EIO, "{name}");
            }
        }
        assert_eq!(PlfsError(12345).to_errno(), libc::EIO);
        assert_eq!(PlfsError(12345).message(), c"Unknown error");
    }

    #[test]
    fn values_are_unique_and_sequential_up_to_48() {
        let vals: Vec<c_int> = TABLE.iter().map(|e| e.0).collect();
        let expect: Vec<c_int> = (0..=48).chain([300]).collect();
        assert_eq!(vals, expect);
    }

    #[test]
    fn core_errors_map_through_raw_errno() {
        assert_eq!(to_plfs_error(&Error::NotFound(PathBuf::from("/x"))), PlfsError::ENOENT);
        assert_eq!(to_plfs_error(&Error::Exists(PathBuf::from("/x"))), PlfsError::EEXIST);
        assert_eq!(to_plfs_error(&Error::corrupt("/x", "bad")), PlfsError::EIO);
        assert_eq!(to_plfs_error(&Error::errno(Errno::NOTEMPTY, "x")), PlfsError::ENOTEMPTY);
        assert_eq!(to_plfs_error(&Error::Unsupported("x".into())), PlfsError(40));
    }
}
