//! `plfs cp`, `plfs sync`, `plfs import` and `plfs export`: copies between plain files and PLFS
//! files, in both directions and within PLFS, of single files or (cp -r) directory trees. Modes
//! are preserved, and with `-p` the access and modification times; an existing target file is
//! refused unless `-f` (overwrite), `-n` (skip) or `-u` (skip it if complete: same size and
//! mtime; copy it again otherwise) is given. The walk makes directories and links and queues the
//! regular files, which a pool of `-j N` workers copies ([`pool`]). A progress bar is drawn on a
//! terminal for long copies.

use crate::fail::{CoreContext, Failure, Reported};
use crate::globals::Globals;
use crate::progress::Progress;
use crate::util::{absolute, open_plfs, plural, require_plfs_path, trailing_slash};
use anyhow::Result;
use clap::Args;
use plfs_core::FileKind;
use serde_json::json;
use side::EEXIST;
use std::path::{Path, PathBuf};

const EISDIR: i32 = 21;
const ENOTDIR: i32 = 20;
const EINVAL: i32 = 22;

mod pool;
mod side;

pub use pool::default_jobs;
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
    /// Skip target files that are complete (same size and modification time as the source) and
    /// copy the others again, times kept: a copy that was interrupted is finished by running it
    /// again, and the temporary files it left in the target directories are removed. Implies -p.
    #[arg(short = 'u', long, conflicts_with = "no_clobber")]
    update: bool,
    /// Copy N files at a time (default: the number of CPUs, at most 8).
    #[arg(short = 'j', long = "jobs", value_name = "N", value_parser = clap::value_parser!(u32).range(1..=256))]
    jobs: Option<u32>,
    #[command(flatten)]
    policy: PolicyArgs,
    /// Sources, then the destination (a directory when there are several sources). Each may be a
    /// plain path or a path under a PLFS mount point.
    #[arg(required = true, num_args = 2.., value_name = "PATH")]
    paths: Vec<PathBuf>,
}

/// Arguments of `plfs sync`.
#[derive(Debug, Args)]
pub struct SyncArgs {
    /// Copy N files at a time (default: the number of CPUs, at most 8).
    #[arg(short = 'j', long = "jobs", value_name = "N", value_parser = clap::value_parser!(u32).range(1..=256))]
    jobs: Option<u32>,
    /// Source file or directory tree (plain or under a PLFS mount point).
    src: PathBuf,
    /// The copy of SRC: created, or brought up to date (never a directory to copy SRC into).
    dst: PathBuf,
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
    /// Existing targets left alone (-n, or complete ones with --update).
    pub skipped: u64,
    /// Temporary files of earlier, interrupted copies removed (--update, sync).
    pub stale: u64,
    /// Failures under this operand were reported.
    pub failed: bool,
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
    /// Skip complete targets (same size and mtime), overwrite the others (`cp --update`).
    pub update: bool,
    /// Files copied at a time.
    pub workers: usize,
    /// Progress over the whole operation.
    pub progress: Progress,
    /// Failures were reported (the copy went on).
    pub failed: bool,
    /// The operand being walked (an index into the summaries of [`Copier::finish`]).
    op: usize,
    /// Regular files the walk found, copied by [`Copier::finish`].
    queue: Vec<pool::Job<'a>>,
    /// Directories to give their mode (`true`) and, with `-p`, times once their files are
    /// copied, with their operand; children before parents.
    fixups: Vec<(PathBuf, side::Meta, bool, usize)>,
}

impl<'a> Copier<'a> {
    /// A copy from `from` to `to`, one file at a time until `workers` is set.
    pub fn new(from: Side<'a>, to: Side<'a>, policy: Policy, recursive: bool, preserve: bool) -> Copier<'a> {
        Copier {
            from,
            to,
            policy,
            recursive,
            preserve,
            update: false,
            workers: 1,
            progress: Progress::bytes(0, ""),
            failed: false,
            op: 0,
            queue: Vec::new(),
            fixups: Vec::new(),
        }
    }

    /// Copies `src` to `dst` (exactly that name): the walk, then the files by the pool, then
    /// the directories' modes and times. Failures below a directory are reported and the copy
    /// goes on; the returned error is the failure of `src` itself.
    pub fn run(&mut self, src: &Path, dst: &Path, follow: bool, sum: &mut Summary) -> Result<()> {
        self.op = 0;
        let walked = self.copy(src, dst, follow, sum, true);
        let mut sums = [std::mem::take(sum)];
        let mut tops = self.finish(&mut sums);
        *sum = sums[0];
        sum.failed |= self.failed;
        walked?;
        tops.pop().map_or(Ok(()), |(_, e)| Err(e))
    }

    /// Copies the queued files with the pool and then fixes the directories up, counting into
    /// `sums` (one per operand). Failures below an operand are reported; those of an operand
    /// itself (a file named on the command line) are returned, with their operand.
    fn finish(&mut self, sums: &mut [Summary]) -> Vec<(usize, anyhow::Error)> {
        let jobs = std::mem::take(&mut self.queue);
        let sh = pool::Shared {
            to: self.to,
            preserve: self.preserve,
            progress: &self.progress,
        };
        let mut tops = Vec::new();
        for (j, r) in jobs.iter().zip(pool::run(&sh, &jobs, self.workers)) {
            match r {
                Ok(n) => {
                    sums[j.op].bytes += n;
                    sums[j.op].files += 1;
                }
                Err(e) if j.top => tops.push((j.op, e)),
                Err(e) => {
                    self.report(e);
                    sums[j.op].failed = true;
                }
            }
        }
        for (dst, m, set_mode, op) in std::mem::take(&mut self.fixups) {
            let r = if set_mode { self.to.chmod(&dst, m.mode) } else { Ok(()) };
            // Last: filling the directory changed its times.
            let r = r.and_then(|()| {
                if self.preserve {
                    self.to.set_times(&dst, m.atime_ns, m.mtime_ns)
                } else {
                    Ok(())
                }
            });
            if let Err(e) = r {
                self.report(e);
                sums[op].failed = true;
            }
        }
        tops
    }

    /// Reports a failure and goes on.
    fn report(&mut self, e: anyhow::Error) {
        crate::fail::report(&e, crate::out::EXIT_FAILURE);
        self.failed = true;
    }

    /// Removes from the target directory `dir` the temporary files that interrupted copies left
    /// (`.plfs-cp.<pid>.<name>` of a process that is gone, see [`pool::is_stale_temp`]), only
    /// those of target `name` if given; counts them into `sum`. `cp --update` and `plfs sync`
    /// do this in the directories they copy into, which the copy they finish would otherwise
    /// leave cluttered. Best effort: what cannot be listed or removed stays, and the copy itself
    /// reports any real problem with the directory.
    fn remove_stale_temps(&self, dir: &Path, name: Option<&std::ffi::OsStr>, sum: &mut Summary) {
        let Ok(names) = self.to.list(dir) else { return };
        for n in names {
            if !pool::is_stale_temp(&n) || name.is_some_and(|name| !pool::is_temp_of(&n, name)) {
                continue;
            }
            let p = dir.join(&n);
            // Only a regular file: a copy's temporary is never a directory or a link.
            if matches!(self.to.stat(&p, false), Ok(Some(m)) if m.kind == Kind::File) && self.to.unlink(&p).is_ok() {
                sum.stale += 1;
            }
        }
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

    /// Walks `src` to copy it to `dst` (exactly that name): makes directories and links, and
    /// queues regular files. Failures below a directory are reported and the walk goes on; the
    /// returned error is the failure of `src` itself.
    fn copy(&mut self, src: &Path, dst: &Path, follow: bool, sum: &mut Summary, top: bool) -> Result<()> {
        let m = self.from.stat(src, follow)?.ok_or_else(|| {
            Failure::new(
                src,
                2,
                format!("cannot stat {}: {}", src.display(), crate::fail::strerror(2)),
            )
        })?;
        let existing = self.to.stat(dst, false)?;
        let e = Entry { src, dst, m, existing };
        match m.kind {
            Kind::Dir => self.copy_dir(&e, sum),
            Kind::File | Kind::Symlink => self.copy_leaf(&e, sum, top),
            Kind::Other => Err(Failure::new(
                src,
                EINVAL,
                format!("{}: not a regular file, directory or link; not copied", src.display()),
            )
            .into()),
        }
    }

    /// Copies a directory: makes it, walks its entries, and queues the fixing up of its mode and
    /// times.
    fn copy_dir(&mut self, e: &Entry, sum: &mut Summary) -> Result<()> {
        let Entry { src, dst, m, existing } = *e;
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
            Some(_) if self.update => self.remove_stale_temps(dst, None, sum),
            Some(_) => {}
            // Writable while it is filled; the source's mode is set at the end.
            None => self.to.mkdir(dst, m.mode | 0o700)?,
        }
        sum.dirs += 1;
        for n in self.from.list(src)? {
            if let Err(e) = self.copy(&src.join(&n), &dst.join(&n), false, sum, false) {
                self.report(e);
            }
        }
        self.fixups.push((dst.to_path_buf(), m, existing.is_none(), self.op));
        Ok(())
    }

    /// Copies a regular file or a symbolic link: makes a link at once, queues a file for the pool.
    fn copy_leaf(&mut self, e: &Entry, sum: &mut Summary, top: bool) -> Result<()> {
        let Entry { src, dst, m, .. } = *e;
        let Some(excl) = self.may_write(e, sum)? else {
            return Ok(());
        };
        if self.from.is_plfs() == self.to.is_plfs() && absolute(src)? == absolute(dst)? {
            return Err(Failure::new(
                dst,
                EINVAL,
                format!("{} and {} are the same file", src.display(), dst.display()),
            )
            .into());
        }
        // A file named on the command line: the directory it goes into is not walked,
        // so its own leftovers are looked for there.
        if top && self.update && m.kind == Kind::File {
            if let (Some(dir), Some(name)) = (dst.parent(), dst.file_name()) {
                let dir = if dir.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    dir
                };
                self.remove_stale_temps(dir, Some(name), sum);
            }
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
        self.queue.push(pool::Job {
            from: self.from,
            op: self.op,
            src: src.to_path_buf(),
            dst: dst.to_path_buf(),
            meta: m,
            excl,
            top,
        });
        Ok(())
    }

    /// Whether a file or link may be written at its target, by the options: `Some(true)` to
    /// create it, `Some(false)` to replace what is there, `None` to skip it (counted into `sum`);
    /// an error if it may not.
    fn may_write(&mut self, e: &Entry, sum: &mut Summary) -> Result<Option<bool>> {
        let Entry { dst, m, existing, .. } = *e;
        let excl = match existing {
            Some(e) if e.kind == Kind::Dir => {
                return Err(Failure::new(
                    dst,
                    EISDIR,
                    format!("cannot overwrite directory {} with a {}", dst.display(), m.kind.name()),
                )
                .into())
            }
            Some(e) if self.update && m.kind == Kind::File && complete(&e, &m) => {
                sum.skipped += 1;
                self.progress.inc(m.size);
                return Ok(None);
            }
            Some(_) if self.update => false,
            Some(_) => match self.policy {
                Policy::Skip => {
                    sum.skipped += 1;
                    self.progress.inc(if m.kind == Kind::File { m.size } else { 0 });
                    return Ok(None);
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
        Ok(Some(excl))
    }
}

/// One entry of the walk: a source, the target it is copied to, and what each is.
struct Entry<'p> {
    src: &'p Path,
    dst: &'p Path,
    /// The source.
    m: side::Meta,
    /// The target, if it exists.
    existing: Option<side::Meta>,
}

/// A target file that a finished copy of the source left: a regular file of the same size and
/// modification time (set only once its data was complete).
fn complete(target: &side::Meta, src: &side::Meta) -> bool {
    target.kind == Kind::File && target.size == src.size && target.mtime_ns == src.mtime_ns
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
        "stale_removed": s.stale,
    })
}

fn summary_text(src: &Path, dst: &Path, s: &Summary) {
    let stale = if s.stale > 0 {
        format!(
            ", {} of an interrupted copy removed",
            plural(s.stale, "temporary file", "temporary files")
        )
    } else {
        String::new()
    };
    if s.dirs == 0 && s.files + s.skipped <= 1 && s.links == 0 {
        if s.skipped > 0 {
            outln!("{} -> {}: exists, skipped{stale}", src.display(), dst.display());
        } else {
            outln!(
                "{} -> {} ({}{stale})",
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
    t.push_str(&stale);
    outln!("{} -> {} ({t})", src.display(), dst.display());
}

/// How a copy runs: `(recursive, preserve, update, workers)`.
type Mode = (bool, bool, bool, usize);

/// Runs a copy of `srcs` to `dst` (cp's rules for a directory target; `exact`: `dst` is the
/// copy of the only source even if it is a directory, as `plfs sync` wants).
fn run_copy(srcs: &[(Side, PathBuf)], to: (Side, PathBuf), policy: Policy, mode: Mode, exact: bool) -> Result<()> {
    let (to_side, dst) = to;
    let (recursive, preserve, update, workers) = mode;
    let dst_meta = to_side.stat(&dst, true)?;
    let dst_is_dir =
        !exact && (dst_meta.is_some_and(|m| m.kind == Kind::Dir) || (dst_meta.is_none() && trailing_slash(&dst)));
    if srcs.len() > 1 && !dst_is_dir {
        return Err(Failure::new(&dst, ENOTDIR, format!("target {} is not a directory", dst.display())).into());
    }
    let mut c = Copier::new(to_side, to_side, policy, recursive, preserve || update);
    c.update = update;
    c.workers = workers;
    if crate::out::progress_wanted() {
        let total = srcs.iter().map(|(from, src)| {
            c.from = *from;
            c.total_bytes(src, true)
        });
        let total = total.sum();
        let label = match srcs {
            [(_, one)] => one.display().to_string(),
            _ => dst.display().to_string(),
        };
        c.progress = Progress::bytes(total, &label);
    }
    let mut sums = vec![Summary::default(); srcs.len()];
    let mut targets = Vec::with_capacity(srcs.len());
    for (k, (from, src)) in srcs.iter().enumerate() {
        (c.from, c.op, c.failed) = (*from, k, false);
        let target = if dst_is_dir {
            match base_name(src) {
                Ok(n) => dst.join(n),
                Err(e) => {
                    c.report(e);
                    sums[k].failed = true;
                    targets.push(None);
                    continue;
                }
            }
        } else {
            dst.clone()
        };
        if let Err(e) = c.copy(src, &target, true, &mut sums[k], true) {
            c.report(e);
        }
        sums[k].failed |= c.failed;
        targets.push(Some(target));
    }
    for (k, e) in c.finish(&mut sums) {
        c.report(e);
        sums[k].failed = true;
    }
    drop(std::mem::replace(&mut c.progress, Progress::bytes(0, "")));
    let mut results = Vec::new();
    for (((_, src), target), sum) in srcs.iter().zip(&targets).zip(&sums) {
        let Some(target) = target else { continue };
        if crate::out::json_mode() {
            results.push(summary_json(src, target, sum));
        } else if !sum.failed {
            summary_text(src, target, sum);
        }
    }
    if crate::out::json_mode() {
        crate::out::json(&json!(results));
    }
    if sums.iter().any(|s| s.failed) {
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
    let workers = a.jobs.map_or_else(pool::default_jobs, |j| j as usize);
    let mode = (a.recursive, a.preserve, a.update, workers);
    run_copy(&srcs, to, a.policy.policy(), mode, false)
}

/// Runs `plfs sync SRC DST`: `cp -r --update` onto DST itself.
pub fn sync(cli: &Globals, a: &SyncArgs) -> Result<()> {
    let plfs = open_plfs(cli)?;
    let src = Side::of(&plfs, &a.src)?;
    let to = Side::of(&plfs, &a.dst)?;
    let workers = a.jobs.map_or_else(pool::default_jobs, |j| j as usize);
    run_copy(&[src], to, Policy::Force, (true, true, true, workers), true)
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
        &[src],
        (Side::Plfs(&plfs), dst),
        a.policy.policy(),
        (false, false, false, 1),
        false,
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
        &[(Side::Plfs(&plfs), src)],
        (Side::Plain, a.dst.clone()),
        a.policy.policy(),
        (false, false, false, 1),
        false,
    )
}
