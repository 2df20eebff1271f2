//! Files written by the original PLFS 2.x as nodes of the namespace, read-only: an N-1 container
//! ([`LegacyNode`], found by the look-up's probe) and a file of a 1-N directory
//! ([`LegacyPackedNode`], found by the 1-N layout through [`LegacyDirs`] where its own logs have
//! nothing), each a node as [`ReadOnly`] makes it. They read, stat and list like any file; every
//! change (an open for writing, truncate, unlink, rename from or onto, chmod, chown, utimens,
//! setxattr, `access(W_OK)`) fails with `EROFS` naming `plfs upgrade`, which converts them.

use crate::error::{Error, Result};
use crate::format::legacy::ACCESS_NAME;
use crate::format::xattr::MAX_VALUE;
use crate::layout::{check_mode, Handle, Node, OpenFile};
use crate::legacy::{self, LegacyContainer, LegacyFile, LegacySmallDir, LegacyStat, SmallStat};
use crate::mount::Loc;
use crate::sys::{Dir, TimeSpec};
use crate::types::{DirEntry, FileFormat, FileKind, IndexStats, OpenFlags, Stat, BLKSIZE};
use rustix::io::Errno;
use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The logical stat of a legacy container. Only the permission bits of the access file count
/// (set-id and sticky bits from a container are not trusted).
fn legacy_stat(l: &LegacyStat, ident: (u64, u64)) -> Stat {
    let mut st = Stat::from_raw(&l.access, FileKind::File).as_file(l.size);
    st.mode = (l.access.st_mode & 0o777) | 0o100000;
    st.blocks = l.blocks;
    st.mtime_ns = l.mtime_ns;
    (st.dev, st.ino) = ident;
    st
}

/// The logical stat of a file of a PLFS 2.x 1-N directory: mode and owner from its directory's
/// stat file, the inode number a hash of its logical path.
fn small_stat(l: &SmallStat, logical: &Path) -> Stat {
    let mut st = Stat::from_raw(&l.access, FileKind::File).as_file(l.size);
    st.mode = (l.access.st_mode & 0o777) | 0o100000;
    st.blocks = l.bytes.div_ceil(512);
    st.blksize = BLKSIZE;
    st.mtime_ns = l.mtime_ns;
    st.ino = crate::format::hash_str(&logical.to_string_lossy());
    st
}

/// A file written by PLFS 2.x as a node of the namespace: it answers what it can itself
/// ([`ReadOnlyFile`]), and every change (an open for writing or truncating, truncate, unlink,
/// chmod, chown, utimens, `access(W_OK)`, a rename from or onto it) is refused here, once for
/// every kind of such file, with `EROFS` naming `plfs upgrade`.
#[derive(Debug)]
pub struct ReadOnly<F>(pub F);

/// What a file written by PLFS 2.x answers itself, as a [`ReadOnly`] node.
pub trait ReadOnlyFile: std::fmt::Debug {
    /// Where it is in the namespace.
    fn loc(&self) -> &Loc;
    /// Its attributes.
    fn stat(&self) -> Result<Stat>;
    /// Opens it for reading (an open for writing or truncating was refused before).
    fn open_read(&self, flags: OpenFlags, pid: u32) -> Result<OpenFile>;
    /// access(2) with the real ids, without `W_OK` (refused before).
    fn access_read(&self, mode: u32) -> Result<()>;
    /// How it is stored, and in which format.
    fn format(&self) -> Result<FileFormat>;
}

impl<F: ReadOnlyFile> ReadOnly<F> {
    fn refuse(&self) -> Error {
        legacy::read_only(&self.0.loc().logical)
    }
}

impl<F: ReadOnlyFile> Node for ReadOnly<F> {
    fn stat(&self) -> Result<Stat> {
        self.0.stat()
    }

    fn open(&self, flags: OpenFlags, pid: u32, _created: bool) -> Result<OpenFile> {
        if flags.write || flags.trunc {
            return Err(self.refuse());
        }
        self.0.open_read(flags, pid)
    }

    fn truncate(&self, _size: u64) -> Result<()> {
        Err(self.refuse())
    }

    fn unlink(&self) -> Result<()> {
        Err(self.refuse())
    }

    fn chmod(&self, _mode: u32) -> Result<()> {
        Err(self.refuse())
    }

    fn chown(&self, _uid: u32, _gid: u32) -> Result<()> {
        Err(self.refuse())
    }

    fn utimens(&self, _atime: TimeSpec, _mtime: TimeSpec) -> Result<()> {
        Err(self.refuse())
    }

    fn access(&self, mode: u32) -> Result<()> {
        if mode & 2 != 0 {
            return Err(self.refuse());
        }
        self.0.access_read(mode)
    }

    fn replace_by(&self, _from_parent: &Dir, _from_name: &OsStr) -> Result<()> {
        Err(self.refuse())
    }

    fn rename_within(&self, _to: &Loc) -> Option<Result<()>> {
        Some(Err(self.refuse()))
    }

    fn check_writable(&self) -> Result<()> {
        Err(self.refuse())
    }

    fn format(&self) -> Result<FileFormat> {
        self.0.format()
    }
}

/// A PLFS 2.x N-1 container found in the namespace.
#[derive(Debug)]
pub struct LegacyNode {
    loc: Loc,
    b: usize,
}

impl LegacyNode {
    /// The legacy container at `loc` on canonical backend `b`.
    pub fn new(loc: Loc, b: usize) -> LegacyNode {
        LegacyNode { loc, b }
    }

    fn container(&self) -> Result<LegacyContainer> {
        LegacyContainer::open(&self.loc.mount, self.b, &self.loc.rel)
    }

    /// access(2) of the access file (which holds the logical file's mode and owner).
    fn check_access(&self, c: &LegacyContainer, mode: u32) -> Result<()> {
        c.dir.access(ACCESS_NAME, mode).map_err(|e| match e {
            Error::Io { errno, .. } => self.loc.err(errno, &errno.to_string()),
            e => e,
        })
    }
}

impl ReadOnlyFile for LegacyNode {
    fn loc(&self) -> &Loc {
        &self.loc
    }

    fn stat(&self) -> Result<Stat> {
        let c = self.container()?;
        Ok(legacy_stat(&legacy::stat(&c)?, c.ident))
    }

    fn open_read(&self, flags: OpenFlags, pid: u32) -> Result<OpenFile> {
        let c = self.container()?;
        if flags.read && rustix::process::geteuid().as_raw() != 0 {
            self.check_access(&c, 4)
                .map_err(|_| self.loc.err(Errno::ACCESS, "permission denied"))?;
        }
        let h = LegacyHandle {
            file: LegacyFile::open(c)?,
            logical: self.loc.logical.clone(),
        };
        Ok(OpenFile::new(Box::new(h), self.loc.logical.clone(), flags, pid))
    }

    fn access_read(&self, mode: u32) -> Result<()> {
        self.check_access(&self.container()?, mode)
    }

    fn format(&self) -> Result<FileFormat> {
        Ok(FileFormat::Legacy {
            release: self.container()?.release()?,
        })
    }
}

/// An open PLFS 2.x N-1 file.
#[derive(Debug)]
struct LegacyHandle {
    file: LegacyFile,
    logical: PathBuf,
}

impl Handle for LegacyHandle {
    fn write_as(&self, _buf: &[u8], _off: u64, _pid: u32) -> Result<usize> {
        Err(legacy::read_only(&self.logical))
    }

    fn append(&self, _buf: &[u8], _pid: u32) -> Result<(u64, usize)> {
        Err(legacy::read_only(&self.logical))
    }

    fn read(&self, buf: &mut [u8], off: u64) -> Result<usize> {
        self.file.index.read(buf, off)
    }

    fn refresh(&self) -> Result<()> {
        Ok(())
    }

    fn flush(&self) -> Result<()> {
        Ok(())
    }

    fn sync(&self) -> Result<()> {
        Ok(())
    }

    fn truncate(&self, _size: u64) -> Result<()> {
        Err(legacy::read_only(&self.logical))
    }

    fn size(&self) -> Result<u64> {
        Ok(self.file.index.size())
    }

    fn stat(&self) -> Result<Stat> {
        Ok(legacy_stat(&self.file.stat()?, self.file.container.ident))
    }

    fn close(&self) -> Result<()> {
        Ok(())
    }

    fn backend_path(&self) -> PathBuf {
        self.file.container.path().to_path_buf()
    }

    fn index_stats(&self) -> Result<IndexStats> {
        Ok(IndexStats {
            pieces: self.file.index.map_entries().len(),
            records_read: self.file.index.records,
            ..IndexStats::default()
        })
    }

    fn getxattr(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.file.container.xattr(key, MAX_VALUE)
    }

    fn setxattr(&self, _key: &[u8], _value: &[u8]) -> Result<()> {
        Err(legacy::read_only(&self.logical))
    }
}

/// This process's PLFS 2.x 1-N directories, by logical directory (`None`: the directory has no
/// `SMALLFILECONTAINER`), loaded once. A loaded directory is checked to still be there before
/// it is used (`plfs upgrade` retires it).
#[derive(Debug, Default)]
pub struct LegacyDirs {
    dirs: Mutex<HashMap<PathBuf, Option<Arc<LegacySmallDir>>>>,
}

/// Directories kept cached.
const CACHE: usize = 256;

impl LegacyDirs {
    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, Option<Arc<LegacySmallDir>>>> {
        self.dirs.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The PLFS 2.x 1-N directory at logical directory `dir`, if it is one.
    pub fn dir(&self, dir: &Loc) -> Result<Option<Arc<LegacySmallDir>>> {
        let cached = self.table().get(&dir.logical).cloned();
        match cached {
            Some(None) => return Ok(None),
            Some(Some(d)) if d.still_there(&dir.mount, &dir.rel)? => return Ok(Some(d)),
            _ => {}
        }
        let d = LegacySmallDir::open(&dir.mount, &dir.rel)?.map(Arc::new);
        let mut t = self.table();
        if t.len() >= CACHE {
            t.clear();
        }
        t.insert(dir.logical.clone(), d.clone());
        Ok(d)
    }

    /// Whether logical directory `dir` is known (cached) to hold no PLFS 2.x 1-N store.
    pub fn known_plain(&self, dir: &Path) -> bool {
        matches!(self.table().get(dir), Some(None))
    }

    /// The file at `loc`, if its directory is a PLFS 2.x 1-N directory holding one of that name.
    pub fn lookup(&self, loc: &Loc) -> Result<Option<Box<dyn Node>>> {
        let Some(name) = loc.name().to_str().filter(|_| !loc.is_root()) else {
            return Ok(None);
        };
        let Some(dir) = self.dir(&loc.parent())? else {
            return Ok(None);
        };
        Ok(dir.stat(name).map(|st| {
            Box::new(ReadOnly(LegacyPackedNode {
                loc: loc.clone(),
                st: small_stat(&st, &loc.logical),
                dir: dir.clone(),
                name: name.to_string(),
            })) as Box<dyn Node>
        }))
    }

    /// Adds the files of directory `loc`'s PLFS 2.x 1-N store, if it has one.
    pub fn list(&self, loc: &Loc, out: &mut Vec<DirEntry>) -> Result<()> {
        if let Some(d) = self.dir(loc)? {
            out.extend(d.names().map(|n| DirEntry {
                name: OsString::from(n),
                kind: FileKind::File,
            }));
        }
        Ok(())
    }

    /// Forgets the directories at or under logical path `logical`.
    pub fn forget(&self, logical: &Path) {
        self.table().retain(|k, _| !k.starts_with(logical));
    }
}

/// A file of a PLFS 2.x 1-N directory found in the namespace.
#[derive(Debug)]
pub struct LegacyPackedNode {
    loc: Loc,
    st: Stat,
    dir: Arc<LegacySmallDir>,
    name: String,
}

impl ReadOnlyFile for LegacyPackedNode {
    fn loc(&self) -> &Loc {
        &self.loc
    }

    fn stat(&self) -> Result<Stat> {
        Ok(self.st)
    }

    fn open_read(&self, flags: OpenFlags, pid: u32) -> Result<OpenFile> {
        if !check_mode(&self.st, flags.access_mask()) {
            return Err(self.loc.err(Errno::ACCESS, "permission denied"));
        }
        let h = LegacyPackedHandle {
            dir: self.dir.clone(),
            name: self.name.clone(),
            st: self.st,
            logical: self.loc.logical.clone(),
        };
        Ok(OpenFile::new(Box::new(h), self.loc.logical.clone(), flags, pid))
    }

    fn access_read(&self, mode: u32) -> Result<()> {
        if check_mode(&self.st, mode) {
            Ok(())
        } else {
            Err(self.loc.err(Errno::ACCESS, "permission denied"))
        }
    }

    fn format(&self) -> Result<FileFormat> {
        Ok(FileFormat::LegacyPacked)
    }
}

/// An open file of a PLFS 2.x 1-N directory.
#[derive(Debug)]
struct LegacyPackedHandle {
    dir: Arc<LegacySmallDir>,
    name: String,
    st: Stat,
    logical: PathBuf,
}

impl Handle for LegacyPackedHandle {
    fn write_as(&self, _buf: &[u8], _off: u64, _pid: u32) -> Result<usize> {
        Err(legacy::read_only(&self.logical))
    }

    fn append(&self, _buf: &[u8], _pid: u32) -> Result<(u64, usize)> {
        Err(legacy::read_only(&self.logical))
    }

    fn read(&self, buf: &mut [u8], off: u64) -> Result<usize> {
        if off >= self.st.size {
            return Ok(0);
        }
        let len = (buf.len() as u64).min(self.st.size - off) as usize;
        self.dir.read(&self.name, &mut buf[..len], off)
    }

    fn refresh(&self) -> Result<()> {
        Ok(())
    }

    fn flush(&self) -> Result<()> {
        Ok(())
    }

    fn sync(&self) -> Result<()> {
        Ok(())
    }

    fn truncate(&self, _size: u64) -> Result<()> {
        Err(legacy::read_only(&self.logical))
    }

    fn size(&self) -> Result<u64> {
        Ok(self.st.size)
    }

    fn stat(&self) -> Result<Stat> {
        Ok(self.st)
    }

    fn close(&self) -> Result<()> {
        Ok(())
    }

    fn backend_path(&self) -> PathBuf {
        self.dir
            .stores
            .first()
            .map_or_else(PathBuf::new, |(_, d)| d.path().to_path_buf())
    }
}
