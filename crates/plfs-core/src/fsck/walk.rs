//! The fsck walk: from a logical file or directory to every container below it on every
//! canonical backend, plus the debris that lives outside containers (`.plfstmp.*` creation and
//! deletion leftovers, directories that lost their marker, shadow directories of no container).

use super::{container, repair_step, Kind, Options, Repair, Report};
use crate::container::{Container, Probe};
use crate::error::{Error, Result};
use crate::format;
use crate::fs::{Mount, Plfs};
use crate::sys;
use rustix::fd::OwnedFd;
use std::collections::HashSet;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Entry point of [`super::fsck`].
pub(super) fn run(plfs: &Plfs, path: &Path, opts: &Options) -> Result<Report> {
    let loc = plfs.resolve(path)?;
    let mut rep = Report::default();
    let (b, p) = loc.find()?;
    match p {
        Probe::Container => {
            container::check(&loc.mount, b, &loc.on(b), opts, &mut rep)?;
        }
        Probe::Dir => {
            let mut cids = HashSet::new();
            for i in 0..loc.mount.canonical.len() {
                walk_dir(&loc.mount, i, &loc.on(i), opts, &mut rep, &mut cids)?;
            }
            if loc.rel.as_os_str().is_empty() {
                orphan_shadows(&loc.mount, &cids, opts, &mut rep)?;
            }
        }
        Probe::Missing => return Err(Error::NotFound(loc.logical.clone())),
        Probe::Symlink | Probe::Other => {
            return Err(Error::errno(
                rustix::io::Errno::INVAL,
                format!(
                    "{}: not a PLFS container (a symlink, or a plain N-N file)",
                    loc.logical.display()
                ),
            ))
        }
    }
    Ok(rep)
}

fn is_dir(path: &Path) -> Result<bool> {
    Ok(sys::lstat_opt(path)?.is_some_and(|s| sys::FileType::from_raw_mode(s.st_mode) == sys::FileType::Directory))
}

/// The container id named by a `meta/cid.*` dropping under `dir`, if any.
fn cid_of(dir: &Path) -> Option<u128> {
    sys::read_dir_opt(&dir.join(format::META_DIR))
        .ok()?
        .iter()
        .find_map(|n| {
            n.to_str()
                .and_then(|s| s.strip_prefix("cid."))
                .and_then(|h| u128::from_str_radix(h, 16).ok())
        })
}

fn walk_dir(
    mount: &Arc<Mount>,
    b: usize,
    dir: &Path,
    opts: &Options,
    rep: &mut Report,
    cids: &mut HashSet<u128>,
) -> Result<()> {
    if !is_dir(dir)? {
        return Ok(());
    }
    if let Some(cid) = cid_of(dir) {
        // Container metadata but no marker (the walk only gets here for marker-less ones).
        cids.insert(cid);
        let marker = dir.join(format::MARKER_NAME);
        let repair = repair_step(opts, "recreated the marker from the cid dropping", || {
            let (dmode, uid, gid) = container::dir_mode_owner(dir)?;
            let m = format::Marker {
                version: format::FORMAT_VERSION,
                container_id: cid,
                created_ns: crate::clock::now_ns(),
            };
            sys::write_atomic(&marker, &m.encode(), dmode & 0o666)?;
            sys::chmod(&marker, dmode & 0o666)?;
            sys::lchown(&marker, uid, gid)
        });
        let msg = "a container's metadata without its marker: the file is invisible (it lists as a directory)";
        rep.push(Kind::MissingMarker, true, dir, msg.into(), repair);
        if opts.repair {
            cids.insert(container::check(mount, b, dir, opts, rep)?);
        }
        return Ok(());
    }
    let mut names = match sys::read_dir(dir) {
        Ok(n) => n,
        Err(e) => {
            rep.push(
                Kind::Unreadable,
                true,
                dir,
                e.to_string(),
                Repair::Manual("check permissions".into()),
            );
            return Ok(());
        }
    };
    names.sort();
    for n in names {
        let p = dir.join(&n);
        let nb = n.as_bytes();
        if nb.starts_with(format::TMP_PREFIX.as_bytes()) {
            if let Some(cid) = tmp_debris_with_mount(&p, Some(mount), opts, rep)? {
                cids.insert(cid);
            }
            continue;
        }
        if nb == format::SHADOW_ROOT.as_bytes() || nb == crate::smallfile::SMALL_DIR.as_bytes() {
            continue;
        }
        match crate::container::probe(&p)? {
            Probe::Container => {
                cids.insert(container::check(mount, b, &p, opts, rep)?);
            }
            Probe::Dir => walk_dir(mount, b, &p, opts, rep, cids)?,
            _ => {}
        }
    }
    Ok(())
}

/// Reports (and removes when safe) a `.plfstmp.*` entry found inside a container.
pub(super) fn tmp_debris(p: &Path, opts: &Options, rep: &mut Report) -> Result<()> {
    tmp_debris_with_mount(p, None, opts, rep).map(drop)
}

/// `.plfstmp.rm.*`: a container renamed aside by an unlink that did not finish; the unlink has
/// committed, so it and its shadow directories are removed. Any other `.plfstmp.*`: a create or
/// an atomic write that did not finish; removed once older than `tmp_min_age`. Returns the cid
/// of a trash container (its shadow directories are accounted for).
fn tmp_debris_with_mount(
    p: &Path,
    mount: Option<&Arc<Mount>>,
    opts: &Options,
    rep: &mut Report,
) -> Result<Option<u128>> {
    let Some(st) = sys::lstat_opt(p)? else { return Ok(None) };
    let name = p
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let trash = name.starts_with(&format!("{}rm.", format::TMP_PREFIX));
    if trash {
        let cid = cid_of(p);
        let shadows: Vec<PathBuf> = match (mount, cid) {
            (Some(m), Some(cid)) => m
                .shadows
                .iter()
                .map(|s| s.join(format::SHADOW_ROOT).join(format!("{cid:032x}")))
                .collect(),
            _ => Vec::new(),
        };
        let repair = repair_step(opts, "removed it and its shadow directories", || {
            shadows.iter().try_for_each(|s| sys::remove_tree(s))?;
            sys::remove_tree(p)
        });
        let msg = "a deleted file's container whose removal was interrupted".to_string();
        rep.push(Kind::TrashDebris, true, p, msg, repair);
        return Ok(cid);
    }
    let age = crate::clock::now_ns()
        .saturating_sub((st.st_mtime.max(0) as u64).saturating_mul(1_000_000_000) + st.st_mtime_nsec);
    let old_enough = u128::from(age) >= opts.tmp_min_age.as_nanos();
    let repair = if old_enough {
        repair_step(opts, "removed it", || sys::remove_tree(p))
    } else {
        Repair::Manual(format!(
            "younger than {} s: a create may still be running; rerun later",
            opts.tmp_min_age.as_secs()
        ))
    };
    let msg = "debris of an interrupted create or atomic write".to_string();
    rep.push(Kind::TmpDebris, true, p, msg, repair);
    Ok(None)
}

/// Shadow directories under every shadow backend's `.plfs_shadow/` whose cid no container has.
fn orphan_shadows(mount: &Arc<Mount>, cids: &HashSet<u128>, opts: &Options, rep: &mut Report) -> Result<()> {
    for s in &mount.shadows {
        let root = s.join(format::SHADOW_ROOT);
        for n in sys::read_dir_opt(&root)? {
            let p = root.join(&n);
            let cid = n.to_str().and_then(|h| u128::from_str_radix(h, 16).ok());
            if cid.is_some_and(|c| cids.contains(&c)) {
                continue;
            }
            let bytes = data_bytes(&p)?;
            let repair = if bytes == 0 {
                repair_step(opts, "removed it (it holds no data)", || sys::remove_tree(&p))
            } else {
                Repair::Manual(format!("kept: it holds {bytes} bytes of logged data"))
            };
            let msg = "shadow directory of no existing container".to_string();
            rep.push(Kind::OrphanShadow, true, &p, msg, repair);
        }
    }
    Ok(())
}

/// Bytes of data (beyond log headers) in the data logs under `dir`, recursively.
fn data_bytes(dir: &Path) -> Result<u64> {
    let mut total = 0;
    for n in sys::read_dir_opt(dir)? {
        let p = dir.join(&n);
        let Some(st) = sys::lstat_opt(&p)? else { continue };
        if sys::FileType::from_raw_mode(st.st_mode) == sys::FileType::Directory {
            total += data_bytes(&p)?;
        } else if n.as_bytes().starts_with(b"data.") {
            total += (st.st_size as u64).saturating_sub(format::DATA_HEADER_LEN as u64);
        } else if !n.as_bytes().starts_with(b"index.") {
            total += st.st_size as u64;
        }
    }
    Ok(total)
}

/// Logs under `<own canonical backend>/.plfs_shadow/<cid>/`, which readers of a container on that
/// backend do not look at (the backend's writers log inside the container). Repair moves them
/// into the container's own hostdirs, where readers find them.
pub(super) fn stranded_shadow(
    c: &Container,
    seen: &[(PathBuf, OwnedFd)],
    opts: &Options,
    rep: &mut Report,
) -> Result<()> {
    let own = &c.mount.canonical[c.backend];
    if !c.mount.shadows.contains(own) {
        return Ok(());
    }
    let sdir = c.shadow_dir(own);
    if !is_dir(&sdir)? || seen.iter().any(|(p, _)| p.starts_with(&sdir)) {
        return Ok(());
    }
    let mut logs = Vec::new();
    for h in sys::read_dir_opt(&sdir)? {
        for l in sys::read_dir_opt(&sdir.join(&h))? {
            logs.push((h.clone(), l));
        }
    }
    if logs.is_empty() {
        return Ok(());
    }
    let dir = c.current_path();
    let repair = repair_step(opts, format!("moved {} logs into the container", logs.len()), || {
        for (h, l) in &logs {
            let target = dir.join(h);
            sys::mkdir_exist_ok(&target, 0o755)?;
            sys::rename_noreplace(&sdir.join(h).join(l), &target.join(l))?;
        }
        sys::remove_tree(&sdir)
    });
    let msg = format!(
        "{} logs of this container sit in a shadow directory on its own backend, where readers do not look",
        logs.len()
    );
    rep.push(Kind::StrandedShadow, true, &sdir, msg, repair);
    Ok(())
}
