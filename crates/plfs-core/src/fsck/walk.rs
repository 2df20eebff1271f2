//! The fsck walk: from a logical file or directory to every container below it on every
//! canonical backend, plus the debris that lives outside containers (`.plfstmp.*` creation and
//! deletion leftovers, directories that lost their marker, shadow directories of no container).

use super::container;
use super::debris::{meta_cid, tmp_debris_with_mount};
use super::legacy;
use super::report::{repair_step, Kind, Options, Repair, Report};
use crate::container::DirExt;
use crate::error::{Error, Result};
use crate::format;
use crate::mount::{Mount, Probe};
use crate::namespace::Plfs;
use crate::sys::{self, Dir};
use rustix::io::Errno;
use std::collections::HashSet;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Arc;

/// Entry point of [`super::fsck`].
pub(super) fn run(plfs: &Plfs, path: &Path, opts: &Options) -> Result<Report> {
    let loc = plfs.resolve(path)?;
    let mut rep = Report::default();
    let f = loc.find()?;
    match f.probe {
        Probe::Container => {
            let dir = loc.mount.canonical[f.backend].dir(&loc.rel)?;
            container::check(&loc.mount, f.backend, dir, opts, &mut rep)?;
        }
        Probe::Dir => {
            let mut cids = HashSet::new();
            for (i, b) in loc.mount.canonical.iter().enumerate() {
                if let Some(d) = b.dir_opt(&loc.rel)? {
                    walk_dir(&loc.mount, i, &loc.rel, &d, opts, &mut rep, &mut cids)?;
                }
            }
            if loc.is_root() {
                orphan_shadows(&loc.mount, &cids, opts, &mut rep)?;
            }
        }
        Probe::Legacy => {
            let dir = loc.mount.canonical[f.backend].dir(&loc.rel)?;
            legacy::check(&loc.mount, &loc.rel, dir, &mut rep)?;
        }
        Probe::Missing => return Err(Error::NotFound(loc.logical.clone())),
        Probe::Symlink | Probe::Other => {
            return Err(loc.err(Errno::INVAL, "not a PLFS container (a symlink, or a plain N-N file)"))
        }
    }
    Ok(rep)
}

fn walk_dir(
    mount: &Arc<Mount>,
    b: usize,
    rel: &Path,
    dir: &Dir,
    opts: &Options,
    rep: &mut Report,
    cids: &mut HashSet<u128>,
) -> Result<()> {
    if let Some(cid) = meta_cid(dir) {
        // Container metadata but no marker (the walk only gets here for marker-less ones).
        cids.insert(cid);
        let repair = repair_step(opts, "recreated the marker from the cid dropping", || {
            let st = dir.fstat()?;
            let m = format::Marker {
                version: 2, // the layout with `meta/`, where the cid dropping is
                container_id: cid,
                created_ns: crate::clock::now_ns(),
            };
            let mode = st.st_mode & 0o666;
            dir.write_atomic(format::MARKER_NAME, &m.encode(), mode)?;
            dir.chmod(format::MARKER_NAME, mode)?;
            dir.chown(format::MARKER_NAME, st.st_uid, st.st_gid)
        });
        let msg = "a container's metadata without its marker: the file is invisible (it lists as a directory)";
        rep.push(Kind::MissingMarker, true, dir.path(), msg.into(), repair);
        if opts.repair {
            cids.insert(container::check(mount, b, dir.try_clone()?, opts, rep)?);
        }
        return Ok(());
    }
    let mut names = match dir.list() {
        Ok(n) => n,
        Err(e) => {
            rep.push(
                Kind::Unreadable,
                true,
                dir.path(),
                e.to_string(),
                Repair::Manual("check permissions".into()),
            );
            return Ok(());
        }
    };
    names.sort();
    for n in names {
        let nb = n.as_bytes();
        if nb.starts_with(format::UPGRADE_PREFIX.as_bytes()) {
            legacy::upgrade_debris(dir, &n, opts, rep)?;
            continue;
        }
        if nb.starts_with(format::TMP_PREFIX.as_bytes()) {
            if let Some(cid) = tmp_debris_with_mount(dir, &n, Some(mount), opts, rep)? {
                cids.insert(cid);
            }
            continue;
        }
        if nb == format::small::SMALL_DIR.as_bytes() {
            super::compaction::check_store(mount, b, dir, opts, rep)?;
            continue;
        }
        if nb == format::SHADOW_ROOT.as_bytes() {
            continue;
        }
        if nb == format::legacy::small::SMALL_CONTAINER.as_bytes() {
            legacy::check_small(mount, b, rel, rep)?;
            continue;
        }
        let Some(st) = dir.stat_opt(&n)? else { continue };
        if !sys::is_dir(&st) {
            continue;
        }
        let sub = dir.open_dir(&n)?;
        let srel = rel.join(&n);
        let marker = sub.stat_opt(format::MARKER_NAME)?;
        if marker.is_some_and(|m| format::is_published(m.st_size as u64, st.st_mode)) {
            cids.insert(container::check(mount, b, sub, opts, rep)?);
        } else if format::is_build_mode(st.st_mode) {
            super::debris::build_debris(dir, &n, &st, opts, rep)?;
        } else if legacy::is_container(&sub)? {
            legacy::check(mount, &srel, sub, rep)?;
        } else {
            walk_dir(mount, b, &srel, &sub, opts, rep, cids)?;
        }
    }
    Ok(())
}

/// Shadow directories under every shadow backend's `.plfs_shadow/` whose cid no container has.
fn orphan_shadows(mount: &Arc<Mount>, cids: &HashSet<u128>, opts: &Options, rep: &mut Report) -> Result<()> {
    if cids.contains(&container::UNREADABLE) {
        // A container this user may not read has an unknown id: any shadow directory may be its.
        return Ok(());
    }
    for s in &mount.shadows {
        let Some(root) = s.dir_opt(Path::new(format::SHADOW_ROOT))? else {
            continue;
        };
        for n in root.list()? {
            let cid = n.to_str().and_then(|h| u128::from_str_radix(h, 16).ok());
            if cid.is_some_and(|c| cids.contains(&c)) {
                continue;
            }
            let bytes = match root.open_dir_opt(&n)? {
                Some(d) => data_bytes(&d)?,
                None => 0,
            };
            let repair = if bytes == 0 {
                repair_step(opts, "removed it (it holds no data)", || root.remove_tree(&n))
            } else {
                Repair::Manual(format!("kept: it holds {bytes} bytes of logged data"))
            };
            let msg = "shadow directory of no existing container".to_string();
            rep.push(Kind::OrphanShadow, true, root.sub(&n), msg, repair);
        }
    }
    Ok(())
}

/// Bytes of data (beyond log headers) in the data logs under `dir`, recursively.
fn data_bytes(dir: &Dir) -> Result<u64> {
    let mut total = 0;
    for n in dir.list()? {
        let Some(st) = dir.stat_opt(&n)? else { continue };
        if sys::is_dir(&st) {
            if let Some(d) = dir.open_dir_opt(&n)? {
                total += data_bytes(&d)?;
            }
        } else if n.as_bytes().starts_with(b"data.") {
            total += (st.st_size.max(0) as u64).saturating_sub(format::DATA_HEADER_LEN as u64);
        } else if !n.as_bytes().starts_with(b"index.") {
            total += st.st_size.max(0) as u64;
        }
    }
    Ok(total)
}
