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
    /// `meta/` holds trunc droppings.
    pub has_truncs: bool,
    /// Whether it still runs (asked only when it left an open record).
    pub live: Option<Liveness>,
    /// Its logs and droppings may be changed.
    pub may_touch: bool,
    pub opts: &'a Options,
}
