//! The file copies of one `plfs cp`, run by a pool of worker threads (`-j N`).
//!
//! The walk of the source tree (in [`super::Copier::copy`]) creates the directories and links
//! and queues one [`Job`] per regular file; [`run`] then hands the jobs to the workers, which take
//! the next one from a shared counter until none is left. Each file is copied as before the pool:
//! under a temporary name beside the target, given its mode (and times), then renamed over it.

use super::side::{Meta, Side, EEXIST};
use crate::fail::Failure;
use crate::progress::Progress;
use crate::util::BUF_SIZE;
use anyhow::Result;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

const EINVAL: i32 = 22;

/// Most workers `-j` picks by default.
pub const MAX_DEFAULT_JOBS: usize = 8;

/// The default of `-j`: the number of CPUs, at most [`MAX_DEFAULT_JOBS`].
pub fn default_jobs() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(MAX_DEFAULT_JOBS)
}

/// One regular file to copy.
pub(super) struct Job<'a> {
    /// The side of the source (operands may lie on different sides).
    pub from: Side<'a>,
    /// The operand it was found under.
    pub op: usize,
    pub src: PathBuf,
    pub dst: PathBuf,
    pub meta: Meta,
    /// The target did not exist when the walk saw it: fail if it appears meanwhile.
    pub excl: bool,
    /// The operand itself (not a file below a directory operand): its failure is the command's.
    pub top: bool,
}

/// What the workers share.
pub(super) struct Shared<'s, 'a> {
    pub to: Side<'a>,
    pub preserve: bool,
    pub progress: &'s Progress,
}

/// Copies every job with `workers` threads; returns, in the jobs' order, the bytes copied or
/// the failure of each.
pub(super) fn run(sh: &Shared, jobs: &[Job<'_>], workers: usize) -> Vec<Result<u64>> {
    let workers = workers.clamp(1, jobs.len().max(1));
    if workers == 1 {
        return jobs.iter().map(|j| copy_file(sh, j)).collect();
    }
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<u64>>>> = Mutex::new(jobs.iter().map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(j) = jobs.get(i) else { break };
                let r = copy_file(sh, j);
                results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err(anyhow::anyhow!("a copy worker stopped"))))
        .collect()
}

/// The start of the temporary name of every copy.
const TEMP_PREFIX: &[u8] = b".plfs-cp.";

/// The temporary name under which process `pid` copies a file named `name`:
/// `.plfs-cp.<pid>.<name>`, with at most 200 bytes of the name so it stays within NAME_MAX.
fn temp_name(name: &OsStr, pid: u32) -> OsString {
    let short = &name.as_bytes()[..name.len().min(200)];
    let mut t = OsString::from(format!(".plfs-cp.{pid}."));
    t.push(OsStr::from_bytes(short));
    t
}

/// If `n` has the form of a copy's temporary name, `.plfs-cp.<pid>.<name>`, the pid of the
/// copy that made it and the (possibly shortened) name of its target.
pub(super) fn parse_temp_name(n: &OsStr) -> Option<(u32, &[u8])> {
    let rest = n.as_bytes().strip_prefix(TEMP_PREFIX)?;
    let dot = rest.iter().position(|&b| b == b'.')?;
    let (digits, name) = (&rest[..dot], &rest[dot + 1..]);
    if digits.is_empty() || digits.len() > 10 || !digits.iter().all(u8::is_ascii_digit) || name.is_empty() {
        return None;
    }
    Some((std::str::from_utf8(digits).ok()?.parse().ok()?, name))
}

/// Whether a temporary file `n` in a target directory was left by a copy that is gone, so
/// that `cp --update` and `plfs sync` may remove it: its pid is this process's (whose own
/// copies have not started while the tree is walked) or no live process's on this host. The
/// process table is read from /proc; without it nothing is taken for stale. A copy running on
/// another host into the same directory cannot be seen.
pub(super) fn is_stale_temp(n: &OsStr) -> bool {
    let Some((pid, _)) = parse_temp_name(n) else {
        return false;
    };
    if pid == std::process::id() {
        return true;
    }
    let proc = Path::new("/proc");
    proc.join("self").exists() && !proc.join(pid.to_string()).exists()
}

/// Whether `tmp` has the form of a temporary file of a copy to a target named `name`.
pub(super) fn is_temp_of(tmp: &OsStr, name: &OsStr) -> bool {
    parse_temp_name(tmp).is_some_and(|(_, n)| n == &name.as_bytes()[..name.len().min(200)])
}

/// Copies one regular file's bytes and mode (and times with `-p`); returns the bytes copied.
/// The copy is atomic (issue 25, item 11): it is written under a temporary name beside `dst`
/// (`.plfs-cp.<pid>.<name>`, as rsync does), given its mode and times, then renamed over
/// `dst`. An interrupted copy leaves no partial file under the name (which `cp -n` or
/// `cp --update` would then skip), only the temporary one; a copy that fails removes it, and
/// a later `cp --update` or `plfs sync` into the directory removes one that was left.
fn copy_file(sh: &Shared, j: &Job<'_>) -> Result<u64> {
    let (src, dst) = (&j.src, &j.dst);
    sh.progress
        .label(&src.file_name().unwrap_or_default().to_string_lossy());
    let name = dst
        .file_name()
        .ok_or_else(|| Failure::new(dst, EINVAL, format!("{}: not a file name", dst.display())))?;
    let tmp = dst.with_file_name(temp_name(name, std::process::id()));
    let copied = match copy_to(sh, j.from, src, &tmp, &j.meta) {
        // One left by an earlier copy that was killed, whose pid this process now has.
        Err(e) if errno_of(&e) == Some(EEXIST) => {
            sh.to.unlink(&tmp)?;
            copy_to(sh, j.from, src, &tmp, &j.meta)
        }
        r => r,
    };
    match copied {
        Ok(n) => {
            // A new file's name is taken only if it is still free: one made meanwhile (by
            // another program) is not replaced.
            let renamed = match j.excl {
                true => sh.to.rename_noreplace(&tmp, dst),
                false => sh.to.rename(&tmp, dst),
            };
            match renamed {
                Ok(()) => Ok(n),
                Err(e) => {
                    let _ = sh.to.unlink(&tmp);
                    match errno_of(&e) {
                        Some(EEXIST) if j.excl => {
                            Err(
                                Failure::new(dst, EEXIST, format!("{}: created while it was copied", dst.display()))
                                    .into(),
                            )
                        }
                        _ => Err(e),
                    }
                }
            }
        }
        Err(e) => {
            let _ = sh.to.unlink(&tmp);
            Err(about(e, &tmp, dst))
        }
    }
}

/// The bytes, mode and (with `-p`) times of `src` into a new file `tmp`. The times are set
/// last, after the data is complete: a file whose size and mtime match its source's is whole.
fn copy_to(sh: &Shared, from: Side<'_>, src: &Path, tmp: &Path, m: &Meta) -> Result<u64> {
    let dst = tmp;
    let r = from.open_read(src)?;
    let w = sh.to.create(dst, m.mode, true)?;
    let mut buf = vec![0u8; BUF_SIZE.min(m.size.max(4096) as usize)];
    let mut off = 0u64;
    loop {
        let n = r.read_at(&mut buf, off, src)?;
        if n == 0 {
            break;
        }
        w.write_all_at(&buf[..n], off, dst)?;
        off += n as u64;
        sh.progress.inc(n as u64);
    }
    r.close(src)?;
    // The umask applied at create: set the exact source mode, unless create gave it already;
    // with `-p` the times too, last. Both through the open file (no look-up by name), before its
    // close, which leaves the times as set.
    if m.mode & 0o200 == 0 || m.mode & !0o777 != 0 || m.mode & plfs_core::umask() != 0 {
        sh.to.set_mode_open(&w, m.mode, dst)?;
    }
    if sh.preserve {
        sh.to.set_times_open(&w, m.atime_ns, m.mtime_ns, dst)?;
    }
    w.close(dst)?;
    Ok(off)
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

/// The errno behind a failure, if it has one.
fn errno_of(e: &anyhow::Error) -> Option<i32> {
    e.chain()
        .find_map(|c| c.downcast_ref::<Failure>())
        .and_then(|f| f.errno)
}
