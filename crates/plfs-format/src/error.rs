//! The format's error type: what a decoder or a name check found wrong, with the file it concerns.
//! The core turns it into its own error (`plfs_core::Error`, the same variant and message), so a
//! front end never sees this type.

use std::path::PathBuf;

/// Result alias used throughout the format crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What is wrong with some bytes or a name.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A persistent file does not match the format specification (docs/format.md).
    #[error("{path}: corrupt: {what}")]
    Corruption {
        /// The file that is corrupt.
        path: PathBuf,
        /// What is wrong with it.
        what: String,
    },
    /// An argument is invalid (e.g. an extended attribute's name that cannot be stored).
    #[error("{0}")]
    InvalidArgument(String),
}

impl Error {
    /// Builds an [`Error::Corruption`].
    pub fn corrupt(path: impl Into<PathBuf>, what: impl Into<String>) -> Self {
        Error::Corruption {
            path: path.into(),
            what: what.into(),
        }
    }
}
