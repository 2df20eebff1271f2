//! `plfs cp`, `plfs import` and `plfs export`: copies between plain files and PLFS files, in both
//! directions and within PLFS, of single files or (cp -r) directory trees. Modes are preserved,
//! and with `-p` the access and modification times; an existing target file is refused unless
//! `-f` (overwrite) or `-n` (skip) is given. A progress bar is drawn on a terminal for long
//! copies.

use crate::fail::{CoreContext, Failure, Reported};
use crate::globals::Globals;
use crate::progress::Progress;
use crate::util::{absolute, open_plfs, plural, require_plfs_path, trailing_slash, BUF_SIZE};
use anyhow::Result;
use clap::Args;
use plfs_core::{FileKind, Plfs};
use serde_json::json;
use std::path::{Path, PathBuf};

const EEXIST: i32 = 17;
const EISDIR: i32 = 21;
const ENOTDIR: i32 = 20;
const EINVAL: i32 = 22;

mod side;

pub use side::{Kind, Side};

/// Arguments of `plfs cp`.
#[derive(Debug, Args)]
pub struct CpArgs {
    /// Copy directories recursively (symbolic links inside are copied as links).
    #[arg(short = 'r', short_alias = 'R', long)]
    recursive: bool,
    /// Keep the access and modification times (the mode is always kept).
    #[arg(short = 'p', long)]
    preserve: bool,
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
    /// Keep access and modification times (`cp -p`, and `mv` across file systems).
    pub preserve: bool,
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
                if self.preserve {
                    // Last: filling the directory changed its times.
                    self.to.set_times(dst, m.atime_ns, m.mtime_ns)?;
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
                sum.bytes += self.copy_file(src, dst, &m, excl)?;
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

    /// Copies one regular file's bytes and mode (and times with `-p`); returns the bytes copied.
    /// The copy is atomic (issue 25, item 11): it is written under a temporary name beside `dst`
    /// (`.plfs-cp.<pid>.<name>`, as rsync does), given its mode and times, then renamed over
    /// `dst`. An interrupted copy leaves no partial file under the name (which `cp -n` would
    /// then skip), only the temporary one; a copy that fails removes it.
    fn copy_file(&mut self, src: &Path, dst: &Path, m: &side::Meta, excl: bool) -> Result<u64> {
        self.progress
            .label(&src.file_name().unwrap_or_default().to_string_lossy());
        let name = dst
            .file_name()
            .ok_or_else(|| Failure::new(dst, EINVAL, format!("{}: not a file name", dst.display())))?;
        // At most 200 bytes of the name, so the temporary one stays within NAME_MAX.
        use std::os::unix::ffi::OsStrExt;
        let short = &name.as_bytes()[..name.len().min(200)];
        let mut tmp_name = std::ffi::OsString::from(format!(".plfs-cp.{}.", std::process::id()));
        tmp_name.push(std::ffi::OsStr::from_bytes(short));
        let tmp = dst.with_file_name(tmp_name);
        // One left by an earlier copy that was killed, whose pid this process now has.
        if self.to.stat(&tmp, false)?.is_some() {
            self.to.unlink(&tmp)?;
        }
        let r = self.copy_to(src, &tmp, m);
        match r {
            Ok(n) => {
                if excl && self.to.stat(dst, false)?.is_some() {
                    let _ = self.to.unlink(&tmp);
                    return Err(
                        Failure::new(dst, 17, format!("{}: created while it was copied", dst.display())).into(),
                    );
                }
                if let Err(e) = self.to.rename(&tmp, dst) {
                    let _ = self.to.unlink(&tmp);
                    return Err(e);
                }
                Ok(n)
            }
            Err(e) => {
                let _ = self.to.unlink(&tmp);
                Err(about(e, &tmp, dst))
            }
        }
    }

    /// The bytes, mode and (with `-p`) times of `src` into a new file `tmp`.
    fn copy_to(&mut self, src: &Path, tmp: &Path, m: &side::Meta) -> Result<u64> {
        let (dst, excl) = (tmp, true);
        let r = self.from.open_read(src)?;
        let w = self.to.create(dst, m.mode, excl)?;
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
        self.to.chmod(dst, m.mode)?;
        if self.preserve {
            self.to.set_times(dst, m.atime_ns, m.mtime_ns)?;
        }
        Ok(off)
    }
}

/// An error about the temporary file of a copy, told about the file the user named.
fn about(e: anyhow::Error, tmp: &Path, dst: &Path) -> anyhow::Error {
    match e.downcast::<Failure>() {
        Ok(mut f) => {
            let (t, d) = (tmp.display().to_string(), dst.display().to_string());
            f.msg = f.msg.replace(&t, &d);
            if f.path.as_deref() == Some(tmp) {
                f.path = Some(dst.to_path_buf());
            }
            f.into()
        }
        Err(e) => e,
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
            outln!(
                "{} -> {} ({})",
                src.display(),
                dst.display(),
                plural(s.bytes, "byte", "bytes")
            );
        }
        return;
    }
    let mut t = format!(
        "{}, {}",
        plural(s.files, "file", "files"),
        plural(s.dirs, "directory", "directories")
    );
    if s.links > 0 {
        t.push_str(&format!(", {}", plural(s.links, "link", "links")));
    }
    t.push_str(&format!(", {}", plural(s.bytes, "byte", "bytes")));
    if s.skipped > 0 {
        t.push_str(&format!(", {} existing skipped", s.skipped));
    }
    outln!("{} -> {} ({t})", src.display(), dst.display());
}

/// Runs a copy of `srcs` to `dst` (cp's rules for a directory target).
fn run_copy(
    plfs: &Plfs,
    srcs: &[(Side, PathBuf)],
    to: (Side, PathBuf),
    policy: Policy,
    (recursive, preserve): (bool, bool),
) -> Result<()> {
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
            preserve,
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
pub fn cp(cli: &Globals, a: &CpArgs) -> Result<()> {
    let plfs = open_plfs(cli)?;
    let (srcs, dst) = a.paths.split_at(a.paths.len() - 1);
    let srcs = srcs.iter().map(|s| Side::of(&plfs, s)).collect::<Result<Vec<_>>>()?;
    let to = Side::of(&plfs, &dst[0])?;
    run_copy(&plfs, &srcs, to, a.policy.policy(), (a.recursive, a.preserve))
}

/// Runs `plfs import SRC DST`: one plain file into PLFS.
pub fn import(cli: &Globals, a: &ImportArgs) -> Result<()> {
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
    run_copy(
        &plfs,
        &[src],
        (Side::Plfs(&plfs), dst),
        a.policy.policy(),
        (false, false),
    )
}

/// Runs `plfs export SRC DST`: one PLFS file out to a plain file.
pub fn export(cli: &Globals, a: &ImportArgs) -> Result<()> {
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
        (false, false),
    )
}
