//! The packed logs a committed compaction retired (docs/design.md, "Compaction"): once its
//! journal is committed, readers replay the new log without them, so their deletion, one by one,
//! never shows a mix (a log holding a file's UNLINK gone while the log holding its CREATE is
//! still read would bring the file back).

use crate::error::Result;
use crate::format::compact::{self as cf, Journal};
use crate::sys::{Access, Dir};
use std::collections::HashSet;

/// Names of the logs retired by the committed journal in `store`, if there is one. A journal
/// that does not decode retires nothing (fsck reports it).
pub(crate) fn retired(store: &Dir) -> Result<HashSet<String>> {
    let Some(f) = store.open_file_opt(cf::JOURNAL_NAME, Access::Read)? else {
        return Ok(HashSet::new());
    };
    match Journal::decode(&store.sub(cf::JOURNAL_NAME), &f.read_from(0)?) {
        Ok(j) if j.state == cf::STATE_COMMITTED && j.names(cf::E_NEW_LOG).next().is_some() => {
            Ok(j.names(cf::E_RETIRED).map(str::to_string).collect())
        }
        Ok(_) => Ok(HashSet::new()),
        Err(e) => {
            crate::warn!("{e}; ignored");
            Ok(HashSet::new())
        }
    }
}
