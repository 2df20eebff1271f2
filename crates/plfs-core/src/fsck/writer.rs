//! What fsck gathers about one writer: its logs and its `meta/` records.

use crate::format::MetaDropping;
use crate::sys::Dir;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;

/// An index or data log found in a hostdir.
#[derive(Debug, Clone)]
pub(super) struct LogFile {
    pub dir: Arc<Dir>,
    pub name: OsString,
    pub path: PathBuf,
    pub size: u64,
    /// (st_dev, st_ino), to tell whether a live process holds it open.
    pub ident: (u64, u64),
    pub mtime_ns: i64,
}

/// What one writer left in the container.
#[derive(Debug, Default)]
pub(super) struct WriterState {
    pub pid: u32,
    pub host: String,
    pub index: Option<LogFile>,
    pub data: Option<LogFile>,
    pub opens: Vec<MetaDropping>,
    pub closes: Vec<MetaDropping>,
}
