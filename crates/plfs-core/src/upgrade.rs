//! `plfs upgrade`: converts files written by PLFS 2.x, and version 2 containers of this library
//! ([`v2`]), into this format, in place and crash-safe.
//!
//! An N-1 container ([`upgrade`]):
//!
//! 1. The legacy container is locked (an exclusive `flock` on its directory: one upgrade at a
//!    time) and its index loaded (every record and data log checked).
//! 2. A new container is built beside it under `.plfstmp.upgrade.<16 hex>` (readers ignore
//!    `.plfstmp.*` names): every data extent is copied at its logical offset, holes stay holes, a
//!    size beyond the last data byte is set by a truncate; mode, owner and times are copied.
//! 3. The new container is re-read from disk by a fresh reader and compared byte for byte with
//!    the legacy file.
//! 4. Only then are the two swapped with one `renameat2(RENAME_EXCHANGE)`, so the name always
//!    holds a complete file. On a backend without it, the fallback of every rename over a file
//!    (docs/design.md, "Backends"): the original records its name, is moved aside to
//!    `.plfstmp.rp.*`, the new container is moved in (the original back if that fails).
//! 5. The superseded original and its shadow hostdirs are removed last.
//!
//! A crash before the swap leaves the original intact beside a partial copy; after it, the new
//! container in place beside the superseded original. `plfs fsck` reports either as
//! `upgrade-debris` (or, for the fallback, `trash-debris`: the original is moved back if the
//! name is free) and `--repair` removes the leftover; rerunning `plfs upgrade` also works.
//!
//! A PLFS 2.x 1-N directory ([`upgrade_small_dir`]) converts whole, since its logs are shared by
//! all its files: each file is copied into the directory's own 1-N logs (where it then takes
//! precedence over the old one) and read back and compared; only when every file has been are
//! the old stores renamed to `.plfstmp.upgrade.*` and removed. A crash leaves the old stores in
//! place: rerunning converts every file again.

use crate::container::Container;
use crate::container::DirExt;
use crate::error::{Error, Result};
use crate::format::{self, legacy::small::SMALL_CONTAINER};
use crate::layout::n1::{ContainerNode, Registry};
use crate::layout::small::{Small, StagedAttrs};
use crate::layout::Layout;
use crate::legacy::{self, LegacyContainer, LegacyFile, LegacySmallDir};
use crate::mount::{Loc, Probe};
use crate::namespace::Plfs;
use crate::sys::{Dir, TimeSpec};
use rustix::io::Errno;
use std::ffi::OsStr;
use std::path::PathBuf;
use std::sync::Arc;

mod transfer;
mod v2;

pub use transfer::Upgraded;
use transfer::{beside, compare, discard, ro, swap, Transfer, CHUNK};

/// What a path holds that `plfs upgrade` converts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A PLFS 2.x N-1 container, or a version 2 container of this library.
    Container(PathBuf),
    /// A PLFS 2.x 1-N directory (converted whole).
    SmallDir(PathBuf),
}

/// Runs of contiguous data `(offset, length)` of a legacy file (holes between runs).
fn data_runs(f: &LegacyFile) -> Vec<(u64, u64)> {
    let mut runs: Vec<(u64, u64)> = Vec::new();
    for e in f.index.map_entries() {
        match runs.last_mut() {
            Some((o, l)) if *o + *l == e.logical => *l += e.length,
            _ => runs.push((e.logical, e.length)),
        }
    }
    runs
}

/// Converts the PLFS 2.x N-1 file, or the version 2 container, `path` to this format.
/// `progress(done, total)` is called as data is copied and verified (`total` counts each data
/// byte once copied and each byte once compared).
pub fn upgrade(plfs: &Plfs, path: &std::path::Path, progress: &mut dyn FnMut(u64, u64)) -> Result<Upgraded> {
    let loc = plfs.resolve(path)?;
    let found = loc.find()?;
    if found.probe == Probe::Container {
        return v2::upgrade(loc, found.backend, progress);
    }
    if found.probe != Probe::Legacy {
        return Err(loc.err(Errno::INVAL, "not a file written by PLFS 2.x or in format 2"));
    }
    let b = found.backend;
    let lc = LegacyContainer::open(&loc.mount, b, &loc.rel)?;
    if !lc.dir.try_lock_exclusive()? {
        return Err(loc.err(Errno::BUSY, "another `plfs upgrade` is converting it"));
    }
    let lst = legacy::stat(&lc)?;
    let lf = LegacyFile::open(lc)?;
    let size = lf.index.size();
    let runs = data_runs(&lf);
    let data: u64 = runs.iter().map(|r| r.1).sum();
    let total = data + size;
    let parent = loc.parent_dir(b)?;
    let tmp = format::tmp_name(format::UPGRADE_PREFIX, crate::clock::random_u64());
    let a = &lst.access;
    let c = Container::create(
        &loc.mount,
        b,
        &parent,
        OsStr::new(&tmp),
        a.st_mode & 0o777,
        Some((a.st_uid, a.st_gid)),
    )?
    .ok_or_else(|| Error::Exists(parent.sub(&tmp)))?;
    let marker = c.marker;
    drop(c);
    let tmploc = beside(&loc, &tmp);
    let fail = |e: Error| {
        discard(&loc, b, &parent, &tmp);
        e
    };
    // A private table of open containers: the new one is open nowhere else.
    let node = |reg: Registry| ContainerNode::new(Arc::new(reg), tmploc.clone(), b, marker);
    let buf = vec![0u8; CHUNK.min(size.max(1)) as usize];
    let mut read_old = |b: &mut [u8], off: u64| lf.index.read(b, off);
    let mut t = Transfer {
        old: &mut read_old,
        old_path: lf.container.path().to_path_buf(),
        size,
        total,
        done: 0,
        mine: vec![0u8; buf.len()],
        buf,
        progress,
    };
    let a = &lst.access;
    let atime = TimeSpec::At(a.st_atime, a.st_atime_nsec as i64);
    t.copy(&node, &runs, atime, lst.mtime_ns).map_err(fail)?;
    // Verify, through a fresh reader of what is on disk.
    t.verify(&node, &parent.sub(&tmp)).map_err(fail)?;
    let old = swap(&parent, &tmp, loc.name(), &lf.container.dir).map_err(fail)?;
    if let Err(e) = parent.fsync() {
        crate::warn!("{e}: upgraded, but the directory could not be synced");
    }
    remove_superseded(&loc, &parent, &old, lf);
    Ok(Upgraded {
        logical: loc.logical,
        size,
        copied: data,
    })
}

/// Removes the superseded PLFS 2.x tree (renamed `old` in `parent` by the swap) and the shadow
/// hostdirs of `lf`, which is closed first (best effort: warnings).
fn remove_superseded(loc: &Loc, parent: &Dir, old: &str, lf: LegacyFile) {
    // The superseded PLFS 2.x tree (now under `old`) and its shadow hostdirs.
    let hostdirs: Vec<_> = lf.index.hostdirs().cloned().collect();
    drop(lf);
    for h in hostdirs {
        let Some(shadow) = &h.shadow else { continue };
        let r = shadow.dir(&loc.rel).and_then(|d| d.remove_tree(&h.name));
        if let Err(e) = r {
            crate::warn!("{e}: upgraded, but a PLFS 2.x shadow hostdir could not be removed");
        }
        // Its container directory on the shadow backend, now empty but for the empty `meta/`
        // the original made there too (rmdir removes only empty directories). Left behind, it
        // would be a directory of the file's name.
        if let Ok(d) = shadow.dir(&loc.rel) {
            let _ = d.rmdir(crate::format::legacy::META_DIR);
        }
        if let Ok(d) = shadow.dir(loc.parent_rel()) {
            let _ = d.rmdir(loc.name());
        }
    }
    if let Err(e) = parent.remove_tree(old) {
        crate::warn!(
            "{e}: upgraded, but the old PLFS 2.x container could not be removed (plfs fsck --repair removes it)"
        );
    }
}

/// What `path` holds that `plfs upgrade` converts: a PLFS 2.x N-1 container or a version 2
/// container of this library, a file of a PLFS 2.x 1-N directory (its directory), or nothing.
pub fn target(plfs: &Plfs, path: &std::path::Path) -> Result<Option<Target>> {
    Ok(match plfs.storage(path)? {
        crate::types::Storage::Legacy(_) => Some(Target::Container(path.to_path_buf())),
        crate::types::Storage::Container(_) => match plfs.file_format(path)? {
            Some(crate::types::FileFormat::Container { version }) if version < format::FORMAT_VERSION => {
                Some(Target::Container(path.to_path_buf()))
            }
            _ => None,
        },
        crate::types::Storage::LegacyPacked => {
            let loc = plfs.resolve(path)?;
            Some(Target::SmallDir(loc.parent().logical))
        }
        _ => None,
    })
}

/// The file `name` of the directory `dir`.
fn dir_file(dir: &Loc, name: &str) -> Loc {
    Loc {
        mount: dir.mount.clone(),
        idx: dir.idx,
        rel: dir.rel.join(name),
        logical: dir.logical.join(name),
    }
}

/// Converts every file of the PLFS 2.x 1-N directory `path` (or the directory holding file
/// `path`) to this format's 1-N logs, then retires the directory's `SMALLFILECONTAINER`s.
pub fn upgrade_small_dir(
    plfs: &Plfs,
    path: &std::path::Path,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Vec<Upgraded>> {
    let loc = plfs.resolve(path)?;
    let dir = if loc.is_root() || loc.find()?.probe == Probe::Dir {
        loc
    } else {
        loc.parent()
    };
    let not_one = || dir.err(Errno::INVAL, "not a PLFS 2.x 1-N directory");
    if dir.mount.cfg.workload != crate::config::Workload::SmallFile {
        return Err(not_one());
    }
    let Some(ld) = LegacySmallDir::open(&dir.mount, &dir.rel)? else {
        return Err(not_one());
    };
    // Private views: this process's own would show the old files, which they now replace.
    let layout = Small::new(crate::sys::Umask::Given(0));
    // Every file is copied into one new log that no reader sees until it is renamed into place
    // (a crash before leaves every old file as it was, and a log fsck removes); after it, each
    // name reads the converted file. A file this format already holds under an old name was
    // converted by an upgrade that died before retiring the old stores (or made since): it stays.
    let mut staged = layout.stage(&dir)?;
    let have: std::collections::HashSet<String> = staged.names()?.into_iter().collect();
    let names: Vec<String> = ld.names().filter(|n| !have.contains(*n)).cloned().collect();
    let stats: Vec<_> = names.iter().filter_map(|n| ld.stat(n)).collect();
    let total: u64 = stats.iter().map(|s| s.size * 2).sum();
    let mut done = 0u64;
    let mut buf = vec![0u8; CHUNK as usize];
    let mut mine = vec![0u8; CHUNK as usize];
    let pid = std::process::id();
    for (name, st) in names.iter().zip(&stats) {
        let attrs = StagedAttrs {
            mode: st.access.st_mode & 0o777,
            uid: st.access.st_uid,
            gid: st.access.st_gid,
            mtime_ns: st.mtime_ns,
        };
        let floc = dir_file(&dir, name);
        staged.add(name, st.size, attrs, CHUNK as usize, &mut |b: &mut [u8], pos: u64| {
            if ld.read(name, b, pos)? != b.len() {
                return Err(Error::corrupt(floc.on(0), format!("short read at {pos}")));
            }
            done += b.len() as u64;
            progress(done, total);
            Ok(())
        })?;
    }
    let published = if names.is_empty() {
        None
    } else {
        Some(staged.publish()?)
    };
    // Verify through a fresh view of the logs; a difference takes the new log away again.
    let checked = (|| -> Result<Vec<Upgraded>> {
        let fresh = Small::new(crate::sys::Umask::Given(0));
        let mut out = Vec::new();
        for (name, st) in names.iter().zip(&stats) {
            let floc = dir_file(&dir, name);
            let r = fresh
                .lookup_missing(&floc)?
                .ok_or_else(|| floc.not_found())?
                .open(ro(), pid, true)?;
            if r.size()? != st.size {
                return Err(Error::corrupt(floc.on(0), "the converted copy has the wrong size"));
            }
            let mut pos = 0u64;
            while pos < st.size {
                let k = (st.size - pos).min(CHUNK) as usize;
                let old = |b: &mut [u8]| ld.read(name, b, pos);
                compare(&floc.logical, pos, &mut buf[..k], &mut mine[..k], old, &r)?;
                pos += k as u64;
                done += k as u64;
                progress(done, total);
            }
            out.push(Upgraded {
                logical: floc.logical.clone(),
                size: st.size,
                copied: st.size,
            });
        }
        Ok(out)
    })();
    let out = match checked {
        Ok(v) => v,
        Err(e) => {
            if let Some(p) = published {
                p.revoke()?;
            }
            plfs.invalidate_read_cache(&dir.logical)?;
            return Err(e);
        }
    };
    // Every file is converted: retire the old stores, the one holding the stat file (which a
    // reader of the old stores needs) last, so that a crash in between leaves stores that read.
    let mut stores: Vec<(usize, bool)> = Vec::new();
    for (b, store) in &ld.stores {
        stores.push((*b, store.stat_opt(crate::format::legacy::small::STAT_FILE)?.is_some()));
    }
    stores.sort_by_key(|&(_, stat_file)| stat_file);
    for (b, _) in &stores {
        let parent = dir.mount.canonical[*b].dir(&dir.rel)?;
        let tmp = format::tmp_name(format::UPGRADE_PREFIX, crate::clock::random_u64());
        parent.rename(SMALL_CONTAINER, &parent, &tmp)?;
        if let Err(e) = parent.remove_tree(&tmp) {
            crate::warn!(
                "{e}: upgraded, but the old PLFS 2.x 1-N logs could not be removed (plfs fsck --repair removes them)"
            );
        }
    }
    plfs.invalidate_read_cache(&dir.logical)?;
    Ok(out)
}
