//! Which calls PLFS serves: path classification (absolute, cwd-relative, dirfd-relative, with
//! `.`/`..` resolved lexically), the logical working directory, and symlink following inside a
//! mount.
//!
//! Fast path: an absolute path without `.`/`//` components costs one prefix compare per mount
//! point; a relative path costs one atomic load unless the working directory is inside (or
//! above) a mount point or the path contains `..`.
//!
//! Working directory: `chdir` into a PLFS directory makes the kernel cwd the directory's backend
//! directory and remembers the logical path; a new process (exec) maps a kernel cwd inside a
//! canonical backend back to the logical path, so `cd /plfs/dir && ls` works without creating
//! anything at the mount point.

use crate::fd::conf::{self, plfs};
use crate::fd::table;
use crate::rt::errno::{Errno, Res};
use plfs_core::config::normalize_path;
use plfs_core::FileKind;
use std::ffi::{CStr, CString, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// What a path argument means.
#[derive(Debug, Clone)]
pub enum Target {
    /// Not ours: call libc with the original arguments.
    Pass,
    /// Not ours, but only this absolute path means the same thing to the kernel (a relative path
    /// against a logical cwd or a PLFS directory descriptor that `..` led out of the mount).
    Real(CString),
    /// A normalised logical path under a mount point.
    Plfs(PathBuf),
}

struct Cwd {
    /// Logical working directory when it is inside a mount.
    logical: Option<PathBuf>,
    /// Kernel working directory (as last seen).
    real: Option<PathBuf>,
}

static CWD: Mutex<Cwd> = Mutex::new(Cwd {
    logical: None,
    real: None,
});
/// True when relative paths may resolve into a mount (cwd inside or above a mount point).
static CWD_RELEVANT: AtomicBool = AtomicBool::new(false);

fn cwd() -> std::sync::MutexGuard<'static, Cwd> {
    CWD.lock().unwrap_or_else(|p| p.into_inner())
}

/// Component-wise prefix test on bytes.
fn under(path: &[u8], mount: &[u8]) -> bool {
    path.starts_with(mount) && (path.len() == mount.len() || path[mount.len()] == b'/' || mount == b"/")
}

/// True if `p` (absolute, normalised) is under a mount point.
pub fn is_mounted(p: &Path) -> bool {
    let b = p.as_os_str().as_bytes();
    conf::conf().is_some_and(|c| c.mounts.iter().any(|m| under(b, m)))
}

fn needs_norm(b: &[u8]) -> bool {
    b.windows(2).any(|w| w == b"//" || w == b"/.") || (b.len() > 1 && b.ends_with(b"/"))
}

fn classify_abs(b: &[u8]) -> Target {
    let Some(c) = conf::conf() else { return Target::Pass };
    if !needs_norm(b) {
        if c.mounts.iter().any(|m| under(b, m)) {
            return Target::Plfs(PathBuf::from(OsStr::from_bytes(b)));
        }
        return Target::Pass;
    }
    let Some(n) = normalize_path(Path::new(OsStr::from_bytes(b))) else {
        return Target::Pass;
    };
    if is_mounted(&n) {
        return Target::Plfs(n);
    }
    // `..` led out of a mount point that may not exist on disk: give the kernel the clean path.
    if c.mounts.iter().any(|m| under(b, m)) {
        return real(n);
    }
    Target::Pass
}

fn real(p: PathBuf) -> Target {
    match CString::new(p.into_os_string().into_vec()) {
        Ok(c) => Target::Real(c),
        Err(_) => Target::Pass,
    }
}

use std::os::unix::ffi::OsStringExt;

fn join_classify(base: &Path, rel: &[u8], base_is_plfs: bool) -> Target {
    let Some(n) = normalize_path(&base.join(OsStr::from_bytes(rel))) else {
        return Target::Pass;
    };
    if is_mounted(&n) {
        Target::Plfs(n)
    } else if base_is_plfs {
        real(n)
    } else {
        Target::Pass
    }
}

/// Classifies `path` relative to `dirfd` (AT_FDCWD or a descriptor).
pub fn classify_at(dirfd: i32, path: &[u8]) -> Target {
    if path.is_empty() || !conf::enabled() {
        return Target::Pass;
    }
    if path[0] == b'/' {
        return classify_abs(path);
    }
    if dirfd == libc::AT_FDCWD {
        let dotdot = path.windows(2).any(|w| w == b"..");
        if !CWD_RELEVANT.load(Ordering::Relaxed) && !dotdot {
            return Target::Pass;
        }
        let (base, is_plfs) = {
            let c = cwd();
            match (&c.logical, &c.real) {
                (Some(l), _) => (l.clone(), true),
                (None, Some(r)) => (r.clone(), false),
                (None, None) => return Target::Pass,
            }
        };
        return join_classify(&base, path, is_plfs);
    }
    match table::ours(dirfd) {
        Some(e) => join_classify(&e.path, path, true),
        None => classify_real_dirfd(dirfd, path),
    }
}

/// `path` relative to a real directory descriptor. A walk that opens each component from `/`
/// with `openat(dirfd, name, O_PATH|O_NOFOLLOW|O_DIRECTORY)` (rsync's receiver) holds a real
/// descriptor of the mount point's parent when it takes the step into the mount: the directory's
/// path (from /proc/self/fd) joined with `path` says where it leads. Looked up only when a
/// component of `path` is a component of a mount point, so the `*at` calls of programs that never
/// go near a mount cost no system call.
fn classify_real_dirfd(dirfd: i32, path: &[u8]) -> Target {
    if dirfd < 0 {
        return Target::Pass;
    }
    let Some(c) = conf::conf() else { return Target::Pass };
    if !path
        .split(|&b| b == b'/')
        .any(|comp| c.mount_names.binary_search_by(|m| m.as_slice().cmp(comp)).is_ok())
    {
        return Target::Pass;
    }
    let Ok(link) = rustix::fs::readlinkat(rustix::fs::CWD, format!("/proc/self/fd/{dirfd}").as_str(), Vec::new())
    else {
        return Target::Pass;
    };
    let base = link.as_bytes();
    if !base.starts_with(b"/") {
        // Not a directory of the file system (a pipe, a socket, an anonymous inode).
        return Target::Pass;
    }
    join_classify(Path::new(OsStr::from_bytes(base)), path, false)
}

/// Classifies a C path argument.
///
/// # Safety
/// `path` must be NULL or a NUL-terminated string.
pub unsafe fn classify_c(dirfd: i32, path: *const libc::c_char) -> Target {
    if path.is_null() {
        return Target::Pass;
    }
    // SAFETY: the caller guarantees a NUL-terminated string.
    classify_at(dirfd, unsafe { CStr::from_ptr(path) }.to_bytes())
}

/// The PLFS descriptor of this process that `path` names through the kernel's descriptor links
/// (`/dev/fd/N`, `/proc/self/fd/N`, `/proc/thread-self/fd/N`, `/proc/<own pid>/fd/N`):
/// following such a link reaches the descriptor's own file, which for a PLFS descriptor is the
/// PLFS file, not its placeholder. Costs two prefix compares for other paths.
///
/// # Safety
/// `path` must be NULL or a NUL-terminated string.
pub unsafe fn fd_link_c(path: *const libc::c_char) -> Option<std::sync::Arc<crate::fd::entry::Entry>> {
    if path.is_null() {
        return None;
    }
    // SAFETY: the caller guarantees a NUL-terminated string.
    fd_link(unsafe { CStr::from_ptr(path) }.to_bytes()).and_then(table::ours)
}

/// The descriptor number a descriptor link names (see [`fd_link_c`]).
fn fd_link(b: &[u8]) -> Option<i32> {
    let num = if let Some(r) = b.strip_prefix(b"/dev/fd/") {
        r
    } else {
        let r = b.strip_prefix(b"/proc/")?;
        let slash = r.iter().position(|&c| c == b'/')?;
        let who = &r[..slash];
        let mine = who == b"self"
            || who == b"thread-self"
            || std::str::from_utf8(who).ok().and_then(|w| w.parse::<u32>().ok()) == Some(conf::my_pid());
        if !mine {
            return None;
        }
        r[slash + 1..].strip_prefix(b"fd/")?
    };
    if num.is_empty() || num.len() > 9 || !num.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(num).ok()?.parse().ok()
}

/// Where a path leads after following symbolic links inside the mount.
pub enum Followed {
    /// A PLFS object and its attributes (None: it does not exist; the path is where it would be).
    Plfs(PathBuf, Option<plfs_core::Stat>),
    /// A path outside the mount (a link pointed out of it).
    Real(CString),
}

/// Follows symbolic links in the final component (up to 40), as stat/open do.
pub fn follow(p: PathBuf) -> Res<Followed> {
    follow_with(plfs()?, p)
}

/// [`follow`] with a given instance.
pub fn follow_with(plfs: &plfs_core::Plfs, mut p: PathBuf) -> Res<Followed> {
    for _ in 0..40 {
        let st = match plfs.stat(&p) {
            Ok(st) => st,
            Err(e) if e.is_not_found() => return Ok(Followed::Plfs(p, None)),
            Err(e) => return Err(e.into()),
        };
        if st.kind != FileKind::Symlink {
            return Ok(Followed::Plfs(p, Some(st)));
        }
        let target = plfs.readlink(&p)?;
        let base = p.parent().unwrap_or(Path::new("/")).to_path_buf();
        let next = normalize_path(&base.join(&target)).ok_or(Errno(libc::ENOENT))?;
        if !is_mounted(&next) {
            return CString::new(next.into_os_string().into_vec())
                .map(Followed::Real)
                .map_err(|_| Errno(libc::EINVAL));
        }
        p = next;
    }
    Err(Errno(libc::ELOOP))
}

fn relevant(c: &Cwd) -> bool {
    if c.logical.is_some() {
        return true;
    }
    let Some(r) = &c.real else { return false };
    let rb = r.as_os_str().as_bytes();
    // Inside a mount point that also exists on disk, or above one.
    conf::conf().is_some_and(|conf| conf.mounts.iter().any(|m| under(m, rb) || under(rb, m)))
}

/// Reads the kernel cwd at start-up; a cwd inside a canonical backend directory means a logical
/// cwd inside its mount point (set by `chdir` in the process that exec'd us).
pub fn init_cwd() {
    let Ok(real) = rustix::process::getcwd(Vec::new()) else {
        return;
    };
    let real = PathBuf::from(OsStr::from_bytes(real.as_bytes()));
    let mut logical = None;
    if let Some(c) = conf::conf() {
        for (backend, mount) in &c.backends {
            if let Ok(rel) = real.strip_prefix(backend) {
                logical = Some(if rel.as_os_str().is_empty() {
                    mount.clone()
                } else {
                    mount.join(rel)
                });
                break;
            }
        }
    }
    let mut c = cwd();
    c.real = Some(real);
    c.logical = logical;
    CWD_RELEVANT.store(relevant(&c), Ordering::Relaxed);
}

/// Records a successful real chdir (to a non-PLFS directory).
pub fn set_real_cwd() {
    let real = rustix::process::getcwd(Vec::new())
        .ok()
        .map(|r| PathBuf::from(OsStr::from_bytes(r.as_bytes())));
    let mut c = cwd();
    c.real = real;
    c.logical = None;
    CWD_RELEVANT.store(relevant(&c), Ordering::Relaxed);
}

/// Records a chdir into PLFS directory `logical` whose backend directory is now the kernel cwd.
pub fn set_logical_cwd(logical: PathBuf) {
    let real = rustix::process::getcwd(Vec::new())
        .ok()
        .map(|r| PathBuf::from(OsStr::from_bytes(r.as_bytes())));
    let mut c = cwd();
    c.real = real;
    c.logical = Some(logical);
    CWD_RELEVANT.store(true, Ordering::Relaxed);
}

/// The logical cwd, if inside a mount.
pub fn logical_cwd() -> Option<PathBuf> {
    if !CWD_RELEVANT.load(Ordering::Relaxed) {
        return None;
    }
    cwd().logical.clone()
}

/// A C string from a path.
pub fn cstring(p: &Path) -> Res<CString> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| Errno(libc::EINVAL))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptor_links() {
        assert_eq!(fd_link(b"/dev/fd/3"), Some(3));
        assert_eq!(fd_link(b"/proc/self/fd/12"), Some(12));
        assert_eq!(fd_link(b"/proc/thread-self/fd/0"), Some(0));
        assert_eq!(fd_link(b"/dev/fd/"), None);
        assert_eq!(fd_link(b"/dev/fd/3/x"), None);
        assert_eq!(fd_link(b"/dev/fd/-1"), None);
        assert_eq!(fd_link(b"/proc/self/fdinfo/3"), None);
        assert_eq!(fd_link(b"/proc/1/fd/3x"), None);
        assert_eq!(fd_link(b"/dev/fdx/3"), None);
    }

    #[test]
    fn prefix_is_component_wise() {
        assert!(under(b"/mnt/plfs", b"/mnt/plfs"));
        assert!(under(b"/mnt/plfs/a", b"/mnt/plfs"));
        assert!(!under(b"/mnt/plfsx", b"/mnt/plfs"));
        assert!(!under(b"/mnt", b"/mnt/plfs"));
        assert!(under(b"/anything", b"/"));
    }

    #[test]
    fn only_unclean_paths_are_normalised() {
        assert!(!needs_norm(b"/mnt/plfs/a/b"));
        assert!(!needs_norm(b"/"));
        for p in [
            &b"/mnt//plfs"[..],
            b"/mnt/./plfs",
            b"/mnt/plfs/..",
            b"/mnt/plfs/",
            b"/a/.hidden",
        ] {
            assert!(needs_norm(p), "{}", String::from_utf8_lossy(p));
        }
    }
}
