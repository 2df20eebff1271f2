//! A PLFS 2.x container on a backend: its access file, `meta/` droppings, hostdirs (metalinks
//! resolved) and extended attributes.

use super::metalink;
use crate::error::{Error, Result};
use crate::format::legacy::{self as names, Meta, VersionTag};
use crate::mount::{Backend, Mount};
use crate::sys::{self, Access, Dir, RawStat};
use rustix::io::Errno;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// An open legacy container. Everything in it is reached relative to its directory descriptor,
/// one component at a time with `O_NOFOLLOW`, so no symbolic link inside it is followed except
/// metalinks, which [`metalink`] resolves against the configured backends.
#[derive(Debug)]
pub struct LegacyContainer {
    /// The container directory (its display path is its backend path).
    pub dir: Dir,
    /// Its path below its backend (where a metalink's shadow hostdir lives on the shadow backend).
    rel: PathBuf,
    /// Its mount point: the only backends a metalink may lead to.
    mount: Arc<Mount>,
    /// (st_dev, st_ino) of the container directory.
    pub ident: (u64, u64),
}

/// One hostdir of a container.
#[derive(Debug, Clone)]
pub struct Hostdir {
    /// Its name in the container (`hostdir.<N>`).
    pub name: String,
    /// The directory (on a shadow backend for a metalink; its display path says where).
    pub dir: Arc<Dir>,
    /// The shadow backend it is on, if it was reached through a metalink (it is then
    /// `<that backend>/<the container's path>/<name>`).
    pub shadow: Option<Arc<Backend>>,
}

impl Hostdir {
    /// True if it was reached through a metalink.
    pub fn metalink(&self) -> bool {
        self.shadow.is_some()
    }
}

/// The `meta/` droppings, parsed.
#[derive(Debug, Clone, Default)]
pub struct MetaInfo {
    /// `(last_offset, bytes, close time ns, host)` of every size dropping.
    pub sizes: Vec<(u64, u64, i64, String)>,
    /// `(host, pid)` of every open record.
    pub open: Vec<(String, u32)>,
    /// Names that do not parse.
    pub unparsed: Vec<String>,
}

/// `ELOOP` (a symbolic link refused by `O_NOFOLLOW`) and `ENOTDIR` as corruption naming the file;
/// other errors unchanged.
pub(super) fn not_followed(e: Error, what: &str) -> Error {
    match e {
        Error::Io {
            path,
            errno: Errno::LOOP,
            ..
        } => Error::corrupt(path, format!("a symbolic link where {what} must be (not followed)")),
        Error::Io {
            path,
            errno: Errno::NOTDIR,
            ..
        } => Error::corrupt(path, format!("not {what}")),
        e => e,
    }
}

/// Reads a whole regular file `name` of `dir` (never a link, FIFO or device: refused before any
/// read), to its end (not to a size a network file system may report late).
pub(super) fn read_reg(dir: &Dir, name: &str) -> Result<Vec<u8>> {
    let f = dir
        .open_file(name, Access::Read)
        .map_err(|e| not_followed(e, "a file"))?;
    f.read_to_end_from(0, f.size()?)
}

impl LegacyContainer {
    /// Opens the container at `rel` on canonical backend `backend` of `mount`.
    pub fn open(mount: &Arc<Mount>, backend: usize, rel: &Path) -> Result<LegacyContainer> {
        let dir = mount.canonical[backend].dir(rel)?;
        LegacyContainer::from_dir(mount, rel, dir)
    }

    /// The container in the open directory `dir`, at `rel` below its backend.
    pub fn from_dir(mount: &Arc<Mount>, rel: &Path, dir: Dir) -> Result<LegacyContainer> {
        let st = dir.fstat()?;
        let c = LegacyContainer {
            dir: dir.kept(),
            rel: rel.to_path_buf(),
            mount: mount.clone(),
            ident: (st.st_dev, st.st_ino),
        };
        c.access_stat()?;
        Ok(c)
    }

    /// Its backend path.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// lstat of the access file, which must be a regular file.
    pub fn access_stat(&self) -> Result<RawStat> {
        match self.dir.stat_opt(names::ACCESS_NAME)? {
            Some(st) if sys::is_file(&st) => Ok(st),
            Some(_) => Err(Error::corrupt(
                self.dir.sub(names::ACCESS_NAME),
                "the PLFS 2.x access file is not a regular file",
            )),
            None => Err(Error::corrupt(
                self.dir.sub(names::ACCESS_NAME),
                "the PLFS 2.x access file is missing",
            )),
        }
    }

    /// The `version-tag.*` of the container, if it has one.
    pub fn version(&self) -> Result<Option<VersionTag>> {
        Ok(self
            .dir
            .list()?
            .iter()
            .filter_map(|n| n.to_str().and_then(VersionTag::parse))
            .next())
    }

    /// The release that wrote it (`2.x` when it has no version tag).
    pub fn release(&self) -> Result<String> {
        Ok(self.version()?.map_or_else(|| "2.x".to_string(), |v| v.release))
    }

    /// Lists and parses `meta/` (a missing `meta/` is empty).
    pub fn meta(&self) -> Result<MetaInfo> {
        let Some(d) = self
            .dir
            .open_dir_opt(names::META_DIR)
            .map_err(|e| not_followed(e, "a directory"))?
        else {
            return Ok(MetaInfo::default());
        };
        let mut m = MetaInfo::default();
        for n in d.list()? {
            match n.to_str().and_then(Meta::parse) {
                Some(Meta::Open { host, pid }) => m.open.push((host, pid)),
                Some(Meta::Size {
                    last_offset,
                    bytes,
                    sec,
                    usec,
                    host,
                }) => {
                    let ns = (sec as i64)
                        .saturating_mul(1_000_000_000)
                        .saturating_add(usec as i64 * 1000);
                    m.sizes.push((last_offset, bytes, ns, host));
                }
                None => m.unparsed.push(n.to_string_lossy().into_owned()),
            }
        }
        Ok(m)
    }

    /// Every hostdir: directories named `hostdir.<N>` in the container, and metalinks resolved to
    /// their shadow hostdirs. A metalink that cannot be resolved is an error naming it.
    pub fn hostdirs(&self) -> Result<Vec<Hostdir>> {
        let mut found: Vec<String> = self
            .dir
            .list()?
            .into_iter()
            .filter_map(|n| {
                n.to_str()
                    .filter(|s| names::parse_hostdir(s).is_some())
                    .map(str::to_string)
            })
            .collect();
        found.sort();
        let mut out = Vec::new();
        for name in found {
            let Some(st) = self.dir.stat_opt(&name)? else {
                continue;
            };
            if sys::is_dir(&st) {
                let d = self.dir.open_dir(&name).map_err(|e| not_followed(e, "a directory"))?;
                out.push(Hostdir {
                    name,
                    dir: Arc::new(d.kept()),
                    shadow: None,
                });
            } else if sys::is_symlink(&st) {
                let text = self.dir.readlink(&name)?;
                let link = self.dir.sub(&name);
                let (b, d) = metalink::open_target(&link, text.as_bytes(), &self.mount, &self.rel, &name)?;
                out.push(Hostdir {
                    name,
                    dir: Arc::new(d),
                    shadow: Some(b),
                });
            } else {
                return Err(Error::corrupt(
                    self.dir.sub(&name),
                    "hostdir is neither a directory nor a metalink",
                ));
            }
        }
        Ok(out)
    }

    /// Extended attribute `key` (a file in `xattrs/`, as PLFS 2.x kept them: the raw value,
    /// named by the key), at most `max` bytes; `None` if there is no such attribute.
    pub fn xattr(&self, key: &[u8], max: usize) -> Result<Option<Vec<u8>>> {
        let bad = key.is_empty() || key.contains(&b'/') || key.contains(&0) || key == b"." || key == b"..";
        let Some(key) = std::str::from_utf8(key).ok().filter(|_| !bad) else {
            return Ok(None);
        };
        let Some(d) = self
            .dir
            .open_dir_opt(names::XATTRS_DIR)
            .map_err(|e| not_followed(e, "a directory"))?
        else {
            return Ok(None);
        };
        let Some(f) = d
            .open_file_opt(key, Access::Read)
            .map_err(|e| not_followed(e, "an attribute file"))?
        else {
            return Ok(None);
        };
        let mut buf = vec![0u8; max];
        let n = f.pread_full(&mut buf, 0)?;
        buf.truncate(n);
        Ok(Some(buf))
    }
}
