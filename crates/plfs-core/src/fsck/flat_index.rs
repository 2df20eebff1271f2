//! A flattened index that the file's reads depend on (format.md §6). It is a cache while the
//! index logs it summarises are all there and agree with it; where they do not (a log renamed,
//! lost or damaged after the flatten), readers still read the file right through it, as long as
//! its signature matches the droppings. A repair that changes a dropping (a close dropping
//! written for a log, a stale open record removed) would make readers ignore it, and the file
//! would answer EIO: fsck reports the container and repairs nothing in it.

use super::report::{Kind, Options, Repair, Report};
use crate::container::Container;
use crate::error::Result;
use crate::format;
use crate::index::IndexState;

/// Reports the container's flattened index if reads need it, and then returns the options for
/// the rest of its check: `opts` without repairs. `None`: nothing depends on it.
pub(super) fn reads_need_it(c: &Container, opts: &Options, rep: &mut Report) -> Result<Option<Options>> {
    let backend = &c.mount.canonical[c.backend];
    let Ok(rel) = c.path().strip_prefix(&backend.path) else {
        return Ok(None);
    };
    let logical = c.mount.cfg.mount_point.join(rel);
    let Some(why) = IndexState::flat_needed(c, &logical)? else {
        return Ok(None);
    };
    rep.push(
        Kind::FlatIndexNeeded,
        true,
        c.sub(format::FLAT_NAME),
        format!("reads of {} use it, and {why}", logical.display()),
        Repair::Manual(
            "restore the index logs it summarises (fsck changes nothing in this container while reads need it)".into(),
        ),
    );
    Ok(Some(Options {
        repair: false,
        ..opts.clone()
    }))
}
