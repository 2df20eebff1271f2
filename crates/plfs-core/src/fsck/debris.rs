//! Debris outside a container's logs: `.plfstmp.*` leftovers of interrupted creates, unlinks
//! and atomic writes, and logs stranded in a shadow directory readers do not look at.

use super::report::{repair_step, Kind, Options, Repair, Report};
use crate::container::DirExt;
use crate::container::{examine_build, remove_shadow_dir, shadow_rel, Build, Container};
use crate::error::{Error, Result};
use crate::format;
use crate::mount::Mount;
use crate::sys::{self, Dir};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;

/// The container id named by a `meta/cid.*` dropping in directory `dir`, if any.
pub(super) fn meta_cid(dir: &Dir) -> Option<u128> {
    dir.open_dir_opt(format::META_DIR)
        .ok()??
        .list()
        .ok()?
        .iter()
        .find_map(|n| n.to_str().and_then(format::parse_cid_dropping))
}

/// Reports (and removes when safe) a `.plfstmp.*` entry `name` found in `parent` (a container).
pub(super) fn tmp_debris(parent: &Dir, name: &OsStr, opts: &Options, rep: &mut Report) -> Result<()> {
    tmp_debris_with_mount(parent, name, None, opts, rep).map(drop)
}

/// `.plfstmp.rm.*`: a container renamed aside by an unlink that did not finish; the unlink has
/// committed, so it and its shadow directories are removed. `.plfstmp.rp.*`: a container displaced
/// by a rename onto its name (on a backend without `RENAME_EXCHANGE`) that did not finish: if
/// the new file took the name the rename committed and the old container is removed, else it is
/// moved back under the name it records. Any other `.plfstmp.*`: a create or an atomic write that
/// did not finish; removed once older than `tmp_min_age`. Returns the cid of a trash container
/// (its shadow directories are accounted for).
pub(super) fn tmp_debris_with_mount(
    parent: &Dir,
    name: &OsStr,
    mount: Option<&Arc<Mount>>,
    opts: &Options,
    rep: &mut Report,
) -> Result<Option<u128>> {
    let Some(st) = parent.stat_opt(name)? else {
        return Ok(None);
    };
    let p = parent.sub(name);
    let n = name.to_string_lossy();
    let unlinked = n.starts_with(format::TRASH_PREFIX);
    let displaced = n.starts_with(format::RENAME_TRASH_PREFIX);
    if (unlinked || displaced) && sys::is_dir(&st) {
        let dir = parent.open_dir_opt(name)?;
        let cid = dir
            .as_ref()
            .and_then(|d| meta_cid(d).or_else(|| crate::container::read_marker(d).ok().map(|m| m.container_id)));
        if displaced {
            let old = dir
                .as_ref()
                .and_then(|d| d.open_file(format::RENAME_NAME_FILE, sys::Access::Read).ok())
                .and_then(|f| f.read_from(0).ok())
                .map(|b| std::ffi::OsString::from(std::ffi::OsStr::from_bytes(&b)));
            let free = match &old {
                Some(o) => parent.stat_opt(o)?.is_none(),
                None => false,
            };
            if let (Some(o), true) = (old, free) {
                let repair = repair_step(opts, format!("moved it back to {}", parent.sub(&o).display()), || {
                    parent.rename(name, parent, &o)?;
                    parent.open_dir(&o)?.unlink_opt(format::RENAME_NAME_FILE).map(drop)
                });
                let msg = "a file displaced by a rename that did not finish; its name is free".to_string();
                rep.push(Kind::TrashDebris, true, &p, msg, repair);
                return Ok(cid);
            }
        }
        let repair = repair_step(opts, "removed it and its shadow directories", || {
            if let (Some(m), Some(cid)) = (mount, cid) {
                for s in &m.shadows {
                    remove_shadow_dir(s, &shadow_rel(cid))?;
                }
            }
            parent.remove_tree(name)
        });
        let msg = if unlinked {
            "a deleted file's container whose removal was interrupted"
        } else {
            "a container replaced by a rename whose removal was interrupted"
        };
        rep.push(Kind::TrashDebris, true, &p, msg.to_string(), repair);
        return Ok(cid);
    }
    let repair = remove_when_old(parent, name, &st, opts, "a create");
    let msg = "debris of an interrupted create or atomic write".to_string();
    rep.push(Kind::TmpDebris, true, &p, msg, repair);
    Ok(None)
}

/// Removing `name` (stat `st`) from `parent` once it is older than `tmp_min_age`; before that
/// `what` ("a create", "an upgrade") may still be running.
pub(super) fn remove_when_old(parent: &Dir, name: &OsStr, st: &sys::RawStat, opts: &Options, what: &str) -> Repair {
    let age = crate::clock::age_ns(sys::mtime_ns(st));
    if u128::from(age) >= opts.tmp_min_age.as_nanos() {
        repair_step(opts, "removed it", || parent.remove_tree(name))
    } else {
        Repair::Manual(format!(
            "younger than {} s: {what} may still be running; rerun later",
            opts.tmp_min_age.as_secs()
        ))
    }
}

/// A directory in the build mode without a marker (format.md §1): a file being created, or one
/// whose creator died between its `mkdir` and its marker. Readers take the name for absent; a
/// creator of the same name finishes it after `container::BUILD_PATIENCE`. Its creator holds
/// its lock while it builds (`container::examine_build`): repair removes one nobody holds at
/// once, and leaves one whose creator is at it; on a backend without flock, it goes by age
/// (older than `tmp_min_age`), as before.
pub(super) fn build_debris(
    parent: &Dir,
    name: &OsStr,
    st: &sys::RawStat,
    opts: &Options,
    rep: &mut Report,
) -> Result<()> {
    let p = parent.sub(name);
    let repair = if !parent.caps().locks() {
        remove_when_old(parent, name, st, opts, "its create")
    } else {
        match examine_build(parent, name, false)? {
            Build::Live => {
                Repair::Manual("its creator is still making it (it holds its lock); rerun later".to_string())
            }
            _ => repair_step(opts, "removed it (its creator is gone)", || {
                match examine_build(parent, name, true)? {
                    Build::Live => Err(Error::errno(
                        rustix::io::Errno::BUSY,
                        format!("{}: its creator came back", p.display()),
                    )),
                    _ => Ok(()),
                }
            }),
        }
    };
    let msg = "a file whose create stopped before its marker was written (invisible)".to_string();
    rep.push(Kind::TmpDebris, true, &p, msg, repair);
    Ok(())
}

/// Logs under `<own canonical backend>/.plfs_shadow/<cid>/`, which readers of a container on that
/// backend do not look at (the backend's writers log inside the container). Repair moves them
/// into the container's own hostdirs, where readers find them.
pub(super) fn stranded_shadow(c: &Container, seen: &[Arc<Dir>], opts: &Options, rep: &mut Report) -> Result<()> {
    let own = &c.mount.canonical[c.backend];
    if !c.mount.shadows.iter().any(|s| Arc::ptr_eq(s, own)) {
        return Ok(());
    }
    let rel = c.shadow_rel()?;
    let Some(sdir) = own.dir_opt(&rel)? else { return Ok(()) };
    if seen.iter().any(|d| d.path().starts_with(sdir.path())) {
        return Ok(());
    }
    let mut logs = Vec::new();
    for h in sdir.list()? {
        if let Some(hd) = sdir.open_dir_opt(&h)? {
            for l in hd.list()? {
                logs.push((h.clone(), l));
            }
        }
    }
    if logs.is_empty() {
        return Ok(());
    }
    let repair = repair_step(opts, format!("moved {} logs into the container", logs.len()), || {
        for (h, l) in &logs {
            c.dir.mkdir_ok(h, 0o755)?;
            let target = c.dir.open_dir(h)?;
            sdir.open_dir(h)?.rename_noreplace(l, &target, l)?;
        }
        remove_shadow_dir(own, &rel)
    });
    let msg = format!(
        "{} logs of this container sit in a shadow directory on its own backend, where readers do not look",
        logs.len()
    );
    rep.push(Kind::StrandedShadow, true, sdir.path(), msg, repair);
    Ok(())
}
