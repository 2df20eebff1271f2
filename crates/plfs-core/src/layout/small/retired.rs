//! The packed logs a committed compaction retired (docs/design.md, "Compaction"): once its
//! journal is committed, readers replay the new log without them, so their deletion, one by one,
//! never shows a mix (a log holding a file's UNLINK gone while the log holding its CREATE is
//! still read would bring the file back). The journal commits before the new log is published:
//! until the roll-forward renames it, readers read the new log under its temporary name.

use crate::error::Result;
use crate::format::compact::{self as cf, Journal};
use crate::sys::{Access, Dir};
use std::collections::HashSet;
use std::ffi::OsString;

/// Each store of a directory (its directory, its listing, its committed journal), and the logs
/// the journals retire.
pub(crate) type Stores = (Vec<(Dir, Vec<OsString>, Committed)>, HashSet<String>);

/// What the committed journal of one store says readers replay instead of what they list.
#[derive(Debug, Default)]
pub(crate) struct Committed {
    /// Names of the logs it retires (on any backend's store).
    pub(crate) retired: HashSet<String>,
    /// Its new log's final name and the temporary name it is built under, in this store.
    pub(crate) new_log: Option<(String, String)>,
    /// The journal does not decode, and the new log it named may be published (no compaction's
    /// temporary log is in the store): which logs it retired is lost, so nothing the store's
    /// logs say can be trusted (the journal's path, its length, why).
    pub(crate) damaged: Option<(std::path::PathBuf, usize, String)>,
}

impl Committed {
    /// The name a reader replays the store's entry `name` under: its own, or the new log's final
    /// name for the new log still under its temporary one; `None` for a retired log.
    pub(crate) fn replayed_as<'a>(&'a self, name: &'a str) -> Option<&'a str> {
        match &self.new_log {
            Some((fin, tmp)) if tmp == name => Some(fin),
            _ if self.retired.contains(name) => None,
            _ => Some(name),
        }
    }
}

/// The committed journal in `store`, given the store's listing `names`. One whose new log is in
/// the store under neither of its names retires nothing (abandoned: the roll-forward removes
/// it). The temporary name is kept only while the final one is not listed (the rename is the
/// publication). A journal that does not decode retires nothing if a compaction's temporary
/// log is listed (its compaction never published, and the roll-forward deletes old logs only
/// after the publication, so every old log is there); otherwise it is damage ([`Committed::
/// damaged`]): replayed beside the old logs the roll-forward has not deleted yet, the published
/// new log would not read the same. fsck reports both.
pub(crate) fn committed(store: &Dir, names: &[OsString]) -> Result<Committed> {
    let Some(f) = store.open_file_opt(cf::JOURNAL_NAME, Access::Read)? else {
        return Ok(Committed::default());
    };
    let bytes = f.read_from(0)?;
    let j = match Journal::decode(&store.sub(cf::JOURNAL_NAME), &bytes) {
        Ok(j) if j.state == cf::STATE_COMMITTED => j,
        Ok(_) => return Ok(Committed::default()),
        Err(e) => {
            if unpublished(names) {
                crate::warn!("{e}; ignored (its compaction never published its new log)");
                return Ok(Committed::default());
            }
            return Ok(Committed {
                damaged: Some((
                    store.sub(cf::JOURNAL_NAME),
                    bytes.len(),
                    format!("{e}: which logs its compaction retired is lost"),
                )),
                ..Committed::default()
            });
        }
    };
    let Some(fin) = j.names(cf::E_NEW_LOG).next() else {
        return Ok(Committed::default());
    };
    let tmp = cf::tmp_log_name(j.writer_id);
    let listed = |n: &str| names.iter().any(|x| x.to_str() == Some(n));
    let (has_fin, has_tmp) = (listed(fin), listed(&tmp));
    if !has_fin && !has_tmp {
        return Ok(Committed::default());
    }
    Ok(Committed {
        retired: j.names(cf::E_RETIRED).map(str::to_string).collect(),
        new_log: (!has_fin).then(|| (fin.to_string(), tmp)),
        damaged: None,
    })
}

/// Whether the store listing `names` holds a compaction's temporary (unpublished) log.
pub(crate) fn unpublished(names: &[OsString]) -> bool {
    names
        .iter()
        .any(|n| n.to_str().is_some_and(|s| cf::parse_tmp_name(s).is_some()))
}
