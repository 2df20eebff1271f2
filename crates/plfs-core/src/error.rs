//! The core's error type. Every error carries an errno (mapped in one place, [`Error::errno`]) and,
//! where one exists, the path or file it concerns, so front ends can report it and return an errno.

use std::path::PathBuf;

/// Result alias used throughout the core.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An error from the PLFS core.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A system call on a backend file failed.
    #[error("{path}: {op}: {errno}")]
    Io {
        /// The backend path (or logical path) the call was made on.
        path: PathBuf,
        /// The operation that failed, e.g. `open`, `pwrite`.
        op: &'static str,
        /// The error the kernel returned.
        errno: rustix::io::Errno,
    },
    /// A persistent file does not match the format specification (docs/format.md).
    #[error("{path}: corrupt: {what}")]
    Corruption {
        /// The file that is corrupt.
        path: PathBuf,
        /// What is wrong with it.
        what: String,
    },
    /// The configuration is invalid. `what` names the file, line and key.
    #[error("configuration error: {0}")]
    Config(String),
    /// An argument is invalid (bad flags, negative offset, path not under a mount point...).
    #[error("{0}")]
    InvalidArgument(String),
    /// A logical path does not exist.
    #[error("{0}: no such file or directory")]
    NotFound(PathBuf),
    /// A logical path already exists (O_CREAT|O_EXCL, mkdir).
    #[error("{0}: file exists")]
    Exists(PathBuf),
    /// The operation is not supported (hard links, unsupported workload...).
    #[error("{0}")]
    Unsupported(String),
    /// Any other error that maps to a specific errno.
    #[error("{msg}")]
    Errno {
        /// Human-readable description.
        msg: String,
        /// The errno to return to callers.
        errno: rustix::io::Errno,
    },
}

impl Error {
    /// Builds an [`Error::Io`].
    pub fn io(path: impl Into<PathBuf>, op: &'static str, errno: rustix::io::Errno) -> Self {
        Error::Io {
            path: path.into(),
            op,
            errno,
        }
    }

    /// Builds an [`Error::Corruption`].
    pub fn corrupt(path: impl Into<PathBuf>, what: impl Into<String>) -> Self {
        Error::Corruption {
            path: path.into(),
            what: what.into(),
        }
    }

    /// Builds an [`Error::Errno`].
    pub fn errno(errno: rustix::io::Errno, msg: impl Into<String>) -> Self {
        Error::Errno { msg: msg.into(), errno }
    }

    /// The errno a POSIX caller should see for this error. The only errno mapping in the core.
    pub fn raw_errno(&self) -> i32 {
        use rustix::io::Errno as E;
        let e = match self {
            Error::Io { errno, .. } | Error::Errno { errno, .. } => *errno,
            Error::Corruption { .. } => E::IO,
            Error::Config(_) => E::INVAL,
            Error::InvalidArgument(_) => E::INVAL,
            Error::NotFound(_) => E::NOENT,
            Error::Exists(_) => E::EXIST,
            Error::Unsupported(_) => E::NOTSUP,
        };
        e.raw_os_error()
    }

    /// True when the error is "no such file or directory".
    pub fn is_not_found(&self) -> bool {
        self.raw_errno() == rustix::io::Errno::NOENT.raw_os_error()
    }
}

/// A decoder's or a name check's error from the format crate: the same variant, message and errno
/// as the core's own.
impl From<plfs_format::Error> for Error {
    fn from(e: plfs_format::Error) -> Self {
        match e {
            plfs_format::Error::Corruption { path, what } => Error::Corruption { path, what },
            plfs_format::Error::InvalidArgument(m) => Error::InvalidArgument(m),
        }
    }
}
