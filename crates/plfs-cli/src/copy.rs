//! `plfs cp`, `plfs import` and `plfs export`: copies between plain files and PLFS files, in both
//! directions and within PLFS, of single files or (cp -r) directory trees. Modes are preserved;
//! an existing target file is refused unless `-f` (overwrite) or `-n` (skip) is given. A
//! progress bar is drawn on a terminal for long copies.

use crate::fail::{CoreContext, Failure, IoContext, Reported};
use crate::progress::Progress;
use crate::util::{absolute, open_plfs, require_plfs_path, trailing_slash, BUF_SIZE};
use crate::Cli;
use anyhow::Result;
use clap::Args;
use plfs_core::{FileKind, OpenFile, OpenFlags, Plfs};
use serde_json::json;
use std::ffi::OsString;
use std::os::unix::fs::{DirBuilderExt, FileExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

const EEXIST: i32 = 17;
const EISDIR: i32 = 21;
const ENOTDIR: i32 = 20;
const EINVAL: i32 = 22;

/// Arguments of `plfs cp`.
#[derive(Debug, Args)]
pub struct CpArgs {
    /// Copy directories recursively (symbolic links inside are copied as links).
    #[arg(short = 'r', short_alias = 'R', long)]
    recursive: bool,
    #[command(flatten)]
    policy: PolicyArgs,
    /// Sources, then the destination (a directory when there are several sources). Each may be a
    /// plain path or a path under a PLFS mount point.
    #[arg(required = true, num_args = 2.., value_name = "PATH")]
    paths: Vec<PathBuf>,
}

/// What to do with existing target files.
#[derive(Debug, Args)]
pub struct PolicyArgs {
    /// Overwrite existing target files.
    #[arg(short = 'f', long, conflicts_with = "no_clobber")]
    force: bool,
    /// Skip existing target files (no error).
    #[arg(short = 'n', long)]
    no_clobber: bool,
}

/// Arguments of `plfs import` and `plfs export`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    #[command(flatten)]
    policy: PolicyArgs,
    /// Source file.
    src: PathBuf,
    /// Destination file, or an existing directory to copy into.
    dst: PathBuf,
}

/// What to do with an existing target file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Fail with EEXIST.
    Refuse,
    /// Leave it and go on.
    Skip,
    /// Overwrite it.
    Force,
}

impl PolicyArgs {
    /// The policy the flags select.
    pub fn policy(&self) -> Policy {
        if self.force {
            Policy::Force
        } else if self.no_clobber {
            Policy::Skip
        } else {
            Policy::Refuse
        }
    }
}

/// Kind of a file on either side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Regular file.
    File,
    /// Directory.
    Dir,
    /// Symbolic link.
    Symlink,
    /// Device, fifo, socket.
    Other,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::File => "file",
            Kind::Dir => "directory",
            Kind::Symlink => "symlink",
            Kind::Other => "special file",
        }
    }
}

/// What a copy needs to know about a file.
#[derive(Debug, Clone, Copy)]
pub struct Meta {
    /// Kind.
    pub kind: Kind,
    /// Permission bits.
    pub mode: u32,
    /// Size in bytes.
    pub size: u64,
}

/// Where a path lives: a plain file system, or PLFS.
#[derive(Clone, Copy)]
pub enum Side<'a> {
    /// The kernel's file system.
    Plain,
    /// PLFS.
    Plfs(&'a Plfs),
}

/// An open source file.
enum Reader {
    Plain(std::fs::File),
    Plfs(OpenFile),
}

/// An open target file.
enum Writer {
    Plain(std::fs::File),
    Plfs(OpenFile),
}

const READ: OpenFlags = OpenFlags {
    read: true,
    write: false,
    create: false,
    excl: false,
    trunc: false,
    append: false,
};

fn is_not_found(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::NotFound
}

impl<'a> Side<'a> {
    /// The side of `p` (PLFS if it lies under a mount point), and the path to use on it.
    pub fn of(plfs: &'a Plfs, p: &Path) -> Result<(Side<'a>, PathBuf)> {
        let abs = absolute(p)?;
        Ok(if plfs.is_plfs_path(&abs) {
            // `dir/` keeps its slash: a target that must be a directory.
            let abs = if trailing_slash(p) { abs.join("") } else { abs };
            (Side::Plfs(plfs), abs)
        } else {
            (Side::Plain, p.to_path_buf())
        })
    }

    fn is_plfs(&self) -> bool {
        matches!(self, Side::Plfs(_))
    }

    /// Attributes of `p` without following a final symlink (`follow` follows it on the plain
    /// side); `None` if it does not exist.
    pub fn stat(&self, p: &Path, follow: bool) -> Result<Option<Meta>> {
        match self {
            Side::Plain => {
                let m = if follow {
                    std::fs::metadata(p)
                } else {
                    std::fs::symlink_metadata(p)
                };
                match m {
                    Ok(m) => {
                        let ft = m.file_type();
                        let kind = if ft.is_dir() {
                            Kind::Dir
                        } else if ft.is_file() {
                            Kind::File
                        } else if ft.is_symlink() {
                            Kind::Symlink
                        } else {
                            Kind::Other
                        };
                        Ok(Some(Meta {
                            kind,
                            mode: m.mode() & 0o7777,
                            size: m.len(),
                        }))
                    }
                    Err(e) if is_not_found(&e) => Ok(None),
                    Err(e) => Err(Failure::io("cannot stat", p, &e).into()),
                }
            }
            Side::Plfs(plfs) => match plfs.stat(p) {
                Ok(st) => Ok(Some(Meta {
                    kind: match st.kind {
                        FileKind::File => Kind::File,
                        FileKind::Dir => Kind::Dir,
                        FileKind::Symlink => Kind::Symlink,
                    },
                    mode: st.mode & 0o7777,
                    size: st.size,
                })),
                Err(e) if e.is_not_found() => Ok(None),
                Err(e) => Err(Failure::core("cannot stat", p, e).into()),
            },
        }
    }

    /// Names in a directory, sorted.
    pub fn list(&self, p: &Path) -> Result<Vec<OsString>> {
        match self {
            Side::Plain => {
                let mut v = Vec::new();
                for e in std::fs::read_dir(p).at("cannot read directory", p)? {
                    v.push(e.at("cannot read directory", p)?.file_name());
                }
                v.sort();
                Ok(v)
            }
            Side::Plfs(plfs) => Ok(plfs
                .readdir(p)
                .at("cannot read directory", p)?
                .into_iter()
                .map(|e| e.name)
                .collect()),
        }
    }

    fn mkdir(&self, p: &Path, mode: u32) -> Result<()> {
        match self {
            Side::Plain => std::fs::DirBuilder::new()
                .mode(mode)
                .create(p)
                .at("cannot create directory", p),
            Side::Plfs(plfs) => plfs.mkdir(p, mode).at("cannot create directory", p),
        }
    }

    fn chmod(&self, p: &Path, mode: u32) -> Result<()> {
        match self {
            Side::Plain => {
                std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).at("cannot set the mode of", p)
            }
            Side::Plfs(plfs) => plfs.chmod(p, mode).at("cannot set the mode of", p),
        }
    }

    fn readlink(&self, p: &Path) -> Result<OsString> {
        match self {
            Side::Plain => std::fs::read_link(p)
                .map(PathBuf::into_os_string)
                .at("cannot read link", p),
            Side::Plfs(plfs) => plfs.readlink(p).at("cannot read link", p),
        }
    }

    fn symlink(&self, target: &OsString, p: &Path) -> Result<()> {
        match self {
            Side::Plain => std::os::unix::fs::symlink(target, p).at("cannot create link", p),
            Side::Plfs(plfs) => plfs.symlink(Path::new(target), p).at("cannot create link", p),
        }
    }

    /// Removes a file or symlink.
    pub fn unlink(&self, p: &Path) -> Result<()> {
        match self {
            Side::Plain => std::fs::remove_file(p).at("cannot remove", p),
            Side::Plfs(plfs) => plfs.unlink(p).at("cannot remove", p),
        }
    }

    /// Removes an empty directory.
    pub fn rmdir(&self, p: &Path) -> Result<()> {
        match self {
            Side::Plain => std::fs::remove_dir(p).at("cannot remove directory", p),
            Side::Plfs(plfs) => plfs.rmdir(p).at("cannot remove directory", p),
        }
    }

    fn open_read(&self, p: &Path) -> Result<Reader> {
        match self {
            Side::Plain => Ok(Reader::Plain(std::fs::File::open(p).at("cannot open", p)?)),
            Side::Plfs(plfs) => Ok(Reader::Plfs(
                plfs.open(p, READ, 0, std::process::id()).at("cannot open", p)?,
            )),
        }
    }

    /// Creates (`excl`: the name must not exist) or truncates a file for writing.
    fn create(&self, p: &Path, mode: u32, excl: bool) -> Result<Writer> {
        match self {
            Side::Plain => {
                let mut o = std::fs::OpenOptions::new();
                o.write(true).mode(mode | 0o200);
                if excl {
                    o.create_new(true);
                } else {
                    o.create(true).truncate(true);
                }
                Ok(Writer::Plain(o.open(p).at("cannot create", p)?))
            }
            Side::Plfs(plfs) => {
                let flags = OpenFlags {
                    read: false,
                    write: true,
                    create: true,
                    excl,
                    trunc: true,
                    append: false,
                };
                Ok(Writer::Plfs(
                    plfs.open(p, flags, mode | 0o200, std::process::id())
                        .at("cannot create", p)?,
                ))
            }
        }
    }
}

impl Reader {
    fn read_at(&self, buf: &mut [u8], off: u64, p: &Path) -> Result<usize> {
        loop {
            let r = match self {
                Reader::Plain(f) => f.read_at(buf, off),
                Reader::Plfs(f) => return f.read(buf, off).at("cannot read", p),
            };
            match r {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                r => return r.at("cannot read", p),
            }
        }
    }

    fn close(self, p: &Path) -> Result<()> {
        match self {
            Reader::Plain(_) => Ok(()),
            Reader::Plfs(f) => f.close().at("cannot close", p),
        }
    }
}

impl Writer {
    fn write_all_at(&self, mut buf: &[u8], mut off: u64, p: &Path) -> Result<()> {
        match self {
            Writer::Plain(f) => f.write_all_at(buf, off).at("cannot write", p),
            Writer::Plfs(f) => {
                while !buf.is_empty() {
                    let n = f.write(buf, off).at("cannot write", p)?;
                    if n == 0 {
                        return Err(Failure::new(p, 5, format!("cannot write {}: wrote 0 bytes", p.display())).into());
                    }
                    buf = &buf[n..];
                    off += n as u64;
                }
                Ok(())
            }
        }
    }

    fn close(self, p: &Path) -> Result<()> {
        match self {
            Writer::Plain(f) => {
                drop(f);
                Ok(())
            }
            Writer::Plfs(f) => f.close().at("cannot close", p),
        }
    }
}

/// Counts of one top-level copy.
#[derive(Debug, Default, Clone, Copy)]
pub struct Summary {
    /// Regular files copied.
    pub files: u64,
    /// Directories created or filled.
    pub dirs: u64,
    /// Symbolic links copied.
    pub links: u64,
    /// Bytes copied.
    pub bytes: u64,
    /// Existing targets left alone (-n).
    pub skipped: u64,
}

/// A copy between two sides.
pub struct Copier<'a> {
    /// Source side.
    pub from: Side<'a>,
    /// Target side.
    pub to: Side<'a>,
    /// Existing targets.
    pub policy: Policy,
    /// Copy directories.
    pub recursive: bool,
    /// Progress over the whole operation.
    pub progress: Progress,
    /// Failures were reported (the copy went on).
    pub failed: bool,
}

impl Copier<'_> {
    /// Reports a failure and goes on.
    fn report(&mut self, e: anyhow::Error) {
        crate::fail::report(&e, crate::out::EXIT_FAILURE);
        self.failed = true;
    }

    /// Total bytes of the regular files under `p` (for the progress bar).
    pub fn total_bytes(&self, p: &Path, follow: bool) -> u64 {
        match self.from.stat(p, follow) {
            Ok(Some(m)) if m.kind == Kind::File => m.size,
            Ok(Some(m)) if m.kind == Kind::Dir && self.recursive => self
                .from
                .list(p)
                .unwrap_or_default()
                .iter()
                .map(|n| self.total_bytes(&p.join(n), false))
                .sum(),
            _ => 0,
        }
    }

    /// Copies `src` to `dst` (exactly that name). Failures below a directory are reported and
    /// the copy goes on; the returned error is the failure of `src` itself.
    pub fn copy(&mut self, src: &Path, dst: &Path, follow: bool, sum: &mut Summary) -> Result<()> {
        let m = self.from.stat(src, follow)?.ok_or_else(|| {
            Failure::new(
                src,
                2,
                format!("cannot stat {}: {}", src.display(), crate::fail::strerror(2)),
            )
        })?;
        let existing = self.to.stat(dst, false)?;
        match m.kind {
            Kind::Dir => {
                if !self.recursive {
                    return Err(Failure::new(
                        src,
                        EISDIR,
                        format!("{}: is a directory (use -r to copy a tree)", src.display()),
                    )
                    .into());
                }
                if self.from.is_plfs() == self.to.is_plfs() && absolute(dst)?.starts_with(absolute(src)?) {
                    return Err(Failure::new(
                        dst,
                        EINVAL,
                        format!("cannot copy {} into itself ({})", src.display(), dst.display()),
                    )
                    .into());
                }
                match existing {
                    Some(e) if e.kind != Kind::Dir => {
                        return Err(Failure::new(
                            dst,
                            ENOTDIR,
                            format!(
                                "cannot copy directory {} onto {} {}",
                                src.display(),
                                e.kind.name(),
                                dst.display()
                            ),
                        )
                        .into())
                    }
                    Some(_) => {}
                    // Writable while it is filled; the source's mode is set at the end.
                    None => self.to.mkdir(dst, m.mode | 0o700)?,
                }
                sum.dirs += 1;
                for n in self.from.list(src)? {
                    if let Err(e) = self.copy(&src.join(&n), &dst.join(&n), false, sum) {
                        self.report(e);
                    }
                }
                if existing.is_none() {
                    self.to.chmod(dst, m.mode)?;
                }
                Ok(())
            }
            Kind::File | Kind::Symlink => {
                let excl = match existing {
                    Some(e) if e.kind == Kind::Dir => {
                        return Err(Failure::new(
                            dst,
                            EISDIR,
                            format!("cannot overwrite directory {} with a {}", dst.display(), m.kind.name()),
                        )
                        .into())
                    }
                    Some(_) => match self.policy {
                        Policy::Skip => {
                            sum.skipped += 1;
                            self.progress.inc(if m.kind == Kind::File { m.size } else { 0 });
                            return Ok(());
                        }
                        Policy::Refuse => {
                            return Err(Failure::new(
                                dst,
                                EEXIST,
                                format!(
                                    "{} already exists (use -f to overwrite it, -n to skip it)",
                                    dst.display()
                                ),
                            )
                            .into())
                        }
                        Policy::Force => false,
                    },
                    None => true,
                };
                if self.from.is_plfs() == self.to.is_plfs() && absolute(src)? == absolute(dst)? {
                    return Err(Failure::new(
                        dst,
                        EINVAL,
                        format!("{} and {} are the same file", src.display(), dst.display()),
                    )
                    .into());
                }
                if m.kind == Kind::Symlink {
                    let target = self.from.readlink(src)?;
                    if !excl {
                        self.to.unlink(dst)?;
                    }
                    self.to.symlink(&target, dst)?;
                    sum.links += 1;
                    return Ok(());
                }
                sum.bytes += self.copy_file(src, dst, m.mode, excl)?;
                sum.files += 1;
                Ok(())
            }
            Kind::Other => Err(Failure::new(
                src,
                EINVAL,
                format!("{}: not a regular file, directory or link; not copied", src.display()),
            )
            .into()),
        }
    }

    /// Copies one regular file's bytes and mode; returns the bytes copied.
    fn copy_file(&mut self, src: &Path, dst: &Path, mode: u32, excl: bool) -> Result<u64> {
        self.progress
            .label(&src.file_name().unwrap_or_default().to_string_lossy());
        let r = self.from.open_read(src)?;
        let w = self.to.create(dst, mode, excl)?;
        let mut buf = vec![0u8; BUF_SIZE];
        let mut off = 0u64;
        loop {
            let n = r.read_at(&mut buf, off, src)?;
            if n == 0 {
                break;
            }
            w.write_all_at(&buf[..n], off, dst)?;
            off += n as u64;
            self.progress.inc(n as u64);
        }
        r.close(src)?;
        w.close(dst)?;
        // The umask applied at create: set the exact source mode.
        self.to.chmod(dst, mode)?;
        Ok(off)
    }
}

/// The name of `src` to use inside a target directory.
fn base_name(src: &Path) -> Result<&std::ffi::OsStr> {
    src.file_name().ok_or_else(|| {
        Failure::new(
            src,
            EINVAL,
            format!("{}: has no file name to copy into a directory", src.display()),
        )
        .into()
    })
}

fn summary_json(src: &Path, dst: &Path, s: &Summary) -> serde_json::Value {
    json!({
        "src": src.display().to_string(), "dst": dst.display().to_string(),
        "files": s.files, "dirs": s.dirs, "links": s.links, "bytes": s.bytes, "skipped": s.skipped,
    })
}

fn summary_text(src: &Path, dst: &Path, s: &Summary) {
    if s.dirs == 0 && s.files + s.skipped <= 1 && s.links == 0 {
        if s.skipped > 0 {
            outln!("{} -> {}: exists, skipped", src.display(), dst.display());
        } else {
            outln!("{} -> {} ({} bytes)", src.display(), dst.display(), s.bytes);
        }
        return;
    }
    let mut t = format!("{} files, {} directories", s.files, s.dirs);
    if s.links > 0 {
        t.push_str(&format!(", {} links", s.links));
    }
    t.push_str(&format!(", {} bytes", s.bytes));
    if s.skipped > 0 {
        t.push_str(&format!(", {} existing skipped", s.skipped));
    }
    outln!("{} -> {} ({t})", src.display(), dst.display());
}

/// Runs a copy of `srcs` to `dst` (cp's rules for a directory target).
fn run_copy(plfs: &Plfs, srcs: &[(Side, PathBuf)], to: (Side, PathBuf), policy: Policy, recursive: bool) -> Result<()> {
    let (to_side, dst) = to;
    let dst_meta = to_side.stat(&dst, true)?;
    let dst_is_dir = dst_meta.is_some_and(|m| m.kind == Kind::Dir) || (dst_meta.is_none() && trailing_slash(&dst));
    if srcs.len() > 1 && !dst_is_dir {
        return Err(Failure::new(&dst, ENOTDIR, format!("target {} is not a directory", dst.display())).into());
    }
    let _ = plfs;
    let mut results = Vec::new();
    let mut failed = false;
    for (from, src) in srcs {
        let mut c = Copier {
            from: *from,
            to: to_side,
            policy,
            recursive,
            progress: Progress::bytes(0, ""),
            failed: false,
        };
        let target = if dst_is_dir {
            match base_name(src) {
                Ok(n) => dst.join(n),
                Err(e) => {
                    c.report(e);
                    failed = true;
                    continue;
                }
            }
        } else {
            dst.clone()
        };
        if crate::out::progress_wanted() {
            let total = c.total_bytes(src, true);
            c.progress = Progress::bytes(total, &src.display().to_string());
        }
        let mut sum = Summary::default();
        match c.copy(src, &target, true, &mut sum) {
            Ok(()) => {}
            Err(e) => c.report(e),
        }
        drop(std::mem::replace(&mut c.progress, Progress::bytes(0, "")));
        failed |= c.failed;
        if crate::out::json_mode() {
            results.push(summary_json(src, &target, &sum));
        } else if !c.failed {
            summary_text(src, &target, &sum);
        }
    }
    if crate::out::json_mode() {
        crate::out::json(&json!(results));
    }
    if failed {
        return Err(Reported.into());
    }
    Ok(())
}

/// Runs `plfs cp`.
pub fn cp(cli: &Cli, a: &CpArgs) -> Result<()> {
    let plfs = open_plfs(cli)?;
    let (srcs, dst) = a.paths.split_at(a.paths.len() - 1);
    let srcs = srcs.iter().map(|s| Side::of(&plfs, s)).collect::<Result<Vec<_>>>()?;
    let to = Side::of(&plfs, &dst[0])?;
    run_copy(&plfs, &srcs, to, a.policy.policy(), a.recursive)
}

/// Runs `plfs import SRC DST`: one plain file into PLFS.
pub fn import(cli: &Cli, a: &ImportArgs) -> Result<()> {
    let plfs = open_plfs(cli)?;
    let dst = absolute(&a.dst)?;
    require_plfs_path(&plfs, &dst)?;
    // Keep the trailing slash: `import f dir/` copies into dir.
    let dst = if trailing_slash(&a.dst) { dst.join("") } else { dst };
    let src = (Side::Plain, a.src.clone());
    if std::fs::metadata(&a.src).is_ok_and(|m| m.is_dir()) {
        return Err(Failure::new(
            &a.src,
            EISDIR,
            format!(
                "{}: is a directory (import copies one file; use cp -r)",
                a.src.display()
            ),
        )
        .into());
    }
    run_copy(&plfs, &[src], (Side::Plfs(&plfs), dst), a.policy.policy(), false)
}

/// Runs `plfs export SRC DST`: one PLFS file out to a plain file.
pub fn export(cli: &Cli, a: &ImportArgs) -> Result<()> {
    let plfs = open_plfs(cli)?;
    let src = absolute(&a.src)?;
    require_plfs_path(&plfs, &src)?;
    if plfs.stat(&src).at("cannot stat", &src)?.kind == FileKind::Dir {
        return Err(Failure::new(
            &src,
            EISDIR,
            format!("{}: is a directory (export copies one file; use cp -r)", src.display()),
        )
        .into());
    }
    run_copy(
        &plfs,
        &[(Side::Plfs(&plfs), src)],
        (Side::Plain, a.dst.clone()),
        a.policy.policy(),
        false,
    )
}
