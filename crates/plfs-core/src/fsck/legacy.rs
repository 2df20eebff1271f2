//! fsck of files written by PLFS 2.x: containers and 1-N directories are recognised and reported
//! as such (information), their index and data logs checked by loading them; damage is reported
//! for a person to decide (a read-only legacy file is never repaired in place). Also the
//! leftovers of an interrupted `plfs upgrade`.

use super::report::{Kind, Options, Repair, Report};
use crate::error::Result;
use crate::format::{self, legacy::ACCESS_NAME};
use crate::legacy::{self, LegacyContainer, LegacyIndex, LegacySmallDir};
use crate::mount::Mount;
use crate::sys::Dir;
use std::ffi::OsStr;
use std::path::Path;
use std::sync::Arc;

const RESTORE: &str = "restore the named file from a backup; it is not repaired in place";

/// Checks the PLFS 2.x container `dir` (at `rel` below its canonical backend).
pub(super) fn check(mount: &Arc<Mount>, rel: &Path, dir: Dir, rep: &mut Report) -> Result<()> {
    rep.containers += 1;
    rep.legacy += 1;
    let path = dir.path().to_path_buf();
    let loaded = LegacyContainer::from_dir(mount, rel, dir).and_then(|c| {
        let release = c.release()?;
        let st = legacy::stat(&c)?;
        let idx = LegacyIndex::load(&c)?;
        Ok((release, st, idx))
    });
    let (release, st, idx) = match loaded {
        Ok(x) => x,
        Err(e) => {
            let msg = format!("PLFS 2.x container cannot be read: {e}");
            rep.push(Kind::LegacyDamage, true, &path, msg, Repair::Manual(RESTORE.into()));
            return Ok(());
        }
    };
    rep.writers += idx.chunks.len();
    rep.records += idx.records;
    let msg = format!(
        "written by PLFS {release} (legacy, read-only): {} bytes, {} index records{}; \
         `plfs upgrade` converts it to this format",
        st.size,
        idx.records,
        if idx.from_global { ", flattened" } else { "" }
    );
    rep.push(Kind::LegacyContainer, false, &path, msg, Repair::None);
    if !st.from_index && st.size != idx.size() {
        let msg = format!(
            "meta droppings give size {} but the index ends at {}; readers read {} bytes",
            st.size,
            idx.size(),
            idx.size()
        );
        let fix = "`plfs upgrade` rewrites it with the index's size";
        rep.push(Kind::LegacyDamage, true, &path, msg, Repair::Manual(fix.into()));
    }
    Ok(())
}

/// Reports the PLFS 2.x 1-N directory at `rel` whose store was found on canonical backend `b`,
/// once per logical directory (with its first backend's store), and checks that its logs load.
pub(super) fn check_small(mount: &Arc<Mount>, b: usize, rel: &Path, rep: &mut Report) -> Result<()> {
    let srel = rel.join(format::legacy::small::SMALL_CONTAINER);
    for be in mount.canonical.iter().take(b) {
        if be.root()?.stat_beneath_opt(&srel)?.is_some() {
            return Ok(()); // reported with the directory's first store
        }
    }
    rep.legacy += 1;
    let store = mount.canonical[b].path.join(&srel);
    match LegacySmallDir::open(mount, rel) {
        Ok(d) => {
            let n = d.as_ref().map_or(0, |d| d.names().count());
            let msg = format!("PLFS 2.x 1-N directory (legacy, read-only): {n} files; `plfs upgrade` converts it");
            rep.push(Kind::LegacyContainer, false, store, msg, Repair::None);
        }
        Err(e) => {
            let msg = format!("PLFS 2.x 1-N directory cannot be read: {e}");
            rep.push(Kind::LegacyDamage, true, store, msg, Repair::Manual(RESTORE.into()));
        }
    }
    Ok(())
}

/// Whether directory `d` is a PLFS 2.x container.
pub(super) fn is_container(d: &Dir) -> Result<bool> {
    Ok(d.stat_opt(ACCESS_NAME)?.is_some())
}

/// `.plfstmp.upgrade.*` entry `name` of `parent`: left by a `plfs upgrade` that did not finish.
/// Either the superseded original, of PLFS 2.x or a version 2 container (the swap happened: the
/// file is converted and in place), or a partial new container, of version 3 (the original is
/// intact). Removed by `--repair` once older than `tmp_min_age`.
pub(super) fn upgrade_debris(parent: &Dir, name: &OsStr, opts: &Options, rep: &mut Report) -> Result<()> {
    let Some(st) = parent.stat_opt(name)? else {
        return Ok(());
    };
    let superseded = match parent.open_dir_opt(name) {
        Ok(Some(d)) => match d.stat_opt(format::MARKER_NAME)? {
            // A version 2 container (a 48-byte marker): only ever the original.
            Some(m) => (m.st_size as u64) >= format::MARKER_LEN as u64 && !format::is_flat_marker(m.st_size as u64),
            None => d.stat_opt(ACCESS_NAME)?.is_some() || d.stat_opt(format::legacy::small::STAT_FILE)?.is_some(),
        },
        _ => false,
    };
    let repair = super::debris::remove_when_old(parent, name, &st, opts, "an upgrade");
    let msg = if superseded {
        "half-done `plfs upgrade`: the original, superseded (the file was converted and is in place)"
    } else {
        "half-done `plfs upgrade`: a partial copy (the original is intact; rerun `plfs upgrade`)"
    };
    rep.push(Kind::UpgradeDebris, true, parent.sub(name), msg.into(), repair);
    Ok(())
}
