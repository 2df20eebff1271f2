//! What fsck gathers about one writer: its logs and its `meta/` records.

use super::liveness::Liveness;
use super::report::Options;
use crate::container::Container;
use crate::format::{LogHeader, MetaDropping};
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

impl LogFile {
    /// Whether the log holds a byte at `off`, read rather than taken from `size`: a network file
    /// system's cached size can lag behind the bytes (`crate::index::scan_frames`).
    pub fn holds_byte(&self, off: u64) -> crate::error::Result<bool> {
        let f = self.dir.open_file(&self.name, crate::sys::Access::Read)?;
        crate::index::holds_byte(&f, off)
    }

    /// Whether the log holds nothing past its first `header` bytes. Its size says so first; a
    /// size that says so is checked against the data, and a log that cannot be read counts as
    /// holding data (this answer decides whether fsck removes it).
    pub fn empty_past(&self, header: u64) -> bool {
        self.size <= header && !self.holds_byte(header).unwrap_or(true)
    }
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

/// One writer being checked: its container, what it left, and what fsck may do to it.
pub(super) struct WriterCheck<'a> {
    pub c: &'a Container,
    pub id: u64,
    pub w: &'a WriterState,
    /// How the findings name it: `writer <id> (pid <pid> on <host>)`.
    pub wname: String,
    /// Its data log's header, if it has a readable one.
    pub data_header: Option<LogHeader>,
    /// When it opened the file, from its logs' headers.
    pub opened_ns: Option<u64>,
    /// The timestamps of the trunc droppings.
    pub truncs: &'a [u64],
    /// Whether it still runs (asked only when it left an open record).
    pub live: Option<Liveness>,
    /// Its logs and droppings may be changed.
    pub may_touch: bool,
    pub opts: &'a Options,
}
