//! Mounting, serving, daemonizing and unmounting.
//!
//! Lifecycle of a daemon: load the configuration, pick the plfsrc mount point to serve, mount
//! (fuser: directly with mount(2) as root, else through `fusermount3`), write a pid file, serve
//! with several threads until the file system is unmounted (`plfs umount`, `fusermount3 -u`, or
//! SIGTERM/SIGINT/SIGHUP, which detach the mount), then close every open file and remove the pid
//! file. [`umount`] waits for that pid file to disappear, so when it returns every writer's
//! droppings are on the backend.

use crate::handlers::{PlfsFs, READAHEAD};
use crate::mountinfo::{comparable, fuse_mount_at};
use crate::{Error, MountOptions, DEFAULT_THREADS};
use fuser::{MountOption, Session, SessionACL};
use plfs_core::{Config, Plfs};
use std::ffi::OsString;
use std::io::{Read, Seek, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long [`spawn_background`] waits for the mount to appear.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long [`umount`] waits for the daemon to finish closing files.
const STOP_TIMEOUT: Duration = Duration::from_secs(120);

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

fn stderr_line(msg: &str) {
    let _ = writeln!(std::io::stderr(), "plfs-fuse: {msg}");
}

/// Picks the plfsrc mount point a FUSE mount at `mnt` serves: the one equal to `mnt`, else the
/// only one. Returns it and, when it differs from `mnt`, a remark for the user.
pub fn select_mount_point(cfg: &Config, mnt: &Path) -> Result<(PathBuf, Option<String>), Error> {
    if let Some(m) = cfg.mounts.iter().find(|m| m.mount_point == mnt) {
        return Ok((m.mount_point.clone(), None));
    }
    let src = cfg
        .files
        .first()
        .map_or_else(|| "the zero-config default".to_string(), |f| f.display().to_string());
    match cfg.mounts.as_slice() {
        [m] => Ok((
            m.mount_point.clone(),
            Some(format!(
                "no mount point in {src} is {}; serving its only mount point, {}, there",
                mnt.display(),
                m.mount_point.display()
            )),
        )),
        ms => Err(Error::Other(format!(
            "{}: not a mount point of {src}; it has {}: {}",
            mnt.display(),
            ms.len(),
            ms.iter()
                .map(|m| m.mount_point.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// The pid file of the daemon serving `mnt`.
pub fn pid_file(mnt: &Path) -> PathBuf {
    let dir = if euid() == 0 {
        PathBuf::from("/run/plfs-fuse")
    } else {
        match std::env::var_os("XDG_RUNTIME_DIR")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
        {
            Some(d) => d.join("plfs-fuse"),
            None => PathBuf::from(format!("/tmp/plfs-fuse-{}", euid())),
        }
    };
    // FNV-1a of the path: fixed length whatever the mount point's length.
    let h = mnt
        .as_os_str()
        .as_bytes()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        });
    dir.join(format!("{h:016x}.pid"))
}

/// Reads a pid file: the daemon's pid if the file names `mnt`.
fn read_pid_file(mnt: &Path) -> Option<u32> {
    let text = std::fs::read_to_string(pid_file(mnt)).ok()?;
    let mut lines = text.lines();
    let pid = lines.next()?.trim().parse().ok()?;
    (lines.next()? == mnt.as_os_str().to_string_lossy()).then_some(pid)
}

fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Raises the kernel's readahead for the mount (root only; best effort): the kernel starts a
/// FUSE mount at the smaller of its default and what the daemon asked for.
fn raise_readahead(mnt: &Path) {
    if euid() != 0 {
        return;
    }
    if let Some(m) = fuse_mount_at(mnt) {
        let p = PathBuf::from(format!("/sys/class/bdi/{}/read_ahead_kb", m.dev));
        if let Err(e) = std::fs::write(&p, format!("{}\n", READAHEAD / 1024)) {
            plfs_core::debug!("{}: {e}", p.display());
        }
    }
}

/// Detaches the mount at `mnt` (lazy unmount: it disappears now, the daemon finishes once the
/// last open file is closed).
fn detach(mnt: &Path) {
    if euid() == 0 {
        if let Ok(c) = std::ffi::CString::new(mnt.as_os_str().as_bytes()) {
            // SAFETY: `c` is a valid NUL-terminated path that outlives the call.
            if unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) } == 0 {
                return;
            }
        }
    }
    let _ = Command::new("fusermount3")
        .arg("-u")
        .arg("-z")
        .arg("--")
        .arg(mnt)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// Blocks the termination signals in the calling thread (and so in every thread it spawns
/// afterwards); returns the previous mask and the set.
fn block_signals() -> (libc::sigset_t, libc::sigset_t) {
    // SAFETY: sigset_t is plain data; sigemptyset/sigaddset initialise it; pthread_sigmask only
    // changes this thread's mask and writes the old one into `old`.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            libc::sigaddset(&mut set, s);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
        (old, set)
    }
}

/// Waits for a termination signal (they are blocked in every thread) and detaches the mount;
/// returns once `done` is set.
fn signal_thread(set: libc::sigset_t, mnt: PathBuf, done: Arc<AtomicBool>) {
    let timeout = libc::timespec {
        tv_sec: 0,
        tv_nsec: 200_000_000,
    };
    while !done.load(Ordering::Relaxed) {
        // SAFETY: `set` is an initialised signal set, `timeout` a valid timespec, and a null
        // siginfo pointer is allowed.
        let sig = unsafe { libc::sigtimedwait(&set, std::ptr::null_mut(), &timeout) };
        if sig > 0 {
            stderr_line(&format!("signal {sig}: unmounting {}", mnt.display()));
            detach(&mnt);
        }
    }
}

/// What a daemon serves, checked before mounting: the absolute mount directory, the
/// configuration and the plfsrc mount point chosen.
struct Prepared {
    mnt: PathBuf,
    cfg: Config,
    mount_point: PathBuf,
    remark: Option<String>,
}

/// Checks the mount directory and loads and checks the configuration.
fn prepare(opts: &MountOptions) -> Result<Prepared, Error> {
    let mnt = comparable(&opts.mountpoint);
    let mut missing = false;
    match std::fs::metadata(&mnt) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(Error::Other(format!("{}: not a directory", mnt.display()))),
        Err(e) if e.raw_os_error() == Some(libc::ENOTCONN) => {
            return Err(Error::Other(format!(
                "{}: a dead FUSE mount is there (run `plfs umount {0}` or `fusermount3 -u {0}`)",
                mnt.display()
            )))
        }
        // A missing mount point is made once the configuration is checked (below).
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => missing = true,
        Err(e) => return Err(Error::io(format!("mount point {}", mnt.display()), e)),
    }
    if fuse_mount_at(&mnt).is_some() {
        return Err(Error::Other(format!(
            "{}: a FUSE file system is already mounted there",
            mnt.display()
        )));
    }
    let cfg = match &opts.config {
        Some(f) => Config::from_file(f)?,
        None => Config::load()?,
    };
    let (mount_point, remark) = select_mount_point(&cfg, &mnt)?;
    let m = cfg
        .mounts
        .iter()
        .find(|m| m.mount_point == mount_point)
        .expect("selected from this config");
    for b in &m.backends {
        if b.location.starts_with(&mnt) || b.location.starts_with(&opts.mountpoint) {
            return Err(Error::Other(format!(
                "backend {} is inside the FUSE mount point {}",
                b.location.display(),
                mnt.display()
            )));
        }
    }
    // Backends must exist (the core checks when it is built).
    Plfs::new(cfg.clone())?;
    // A missing mount point is made, as `mount --mkdir` does (its parents too).
    if missing {
        std::fs::create_dir_all(&mnt).map_err(|e| {
            Error::io(
                format!(
                    "mount point {} is missing and cannot be created (make it with mkdir -p)",
                    mnt.display()
                ),
                e,
            )
        })?;
    }
    Ok(Prepared {
        mnt,
        cfg,
        mount_point,
        remark,
    })
}

/// Mounts PLFS at `opts.mountpoint` and serves it until it is unmounted (blocking). On return
/// every file opened through the mount has been closed.
pub fn mount(opts: MountOptions) -> Result<(), Error> {
    // The daemon runs no user program: its descriptors need not stay out of one's way.
    plfs_core::descriptors_anywhere();
    let opts = opts.absolute()?;
    let Prepared {
        mnt,
        cfg,
        mount_point,
        remark,
    } = prepare(&opts)?;
    if let Some(r) = remark {
        stderr_line(&r);
    }
    // The kernel applies the caller's umask before a create reaches us: ours must not apply again.
    // SAFETY: umask has no preconditions.
    unsafe { libc::umask(0) };
    let plfs = Plfs::with_umask(cfg, 0)?;
    // Open every backend root now, as the daemon: requests then reach the backends through
    // these descriptors, whoever they run as (a caller need not be able to reach the backend
    // directory itself, only what the logical path lets it).
    for m in plfs.mounts().filter(|m| m.cfg.mount_point == mount_point) {
        for b in m.canonical.iter().chain(m.shadows.iter()) {
            b.root()?;
        }
    }
    let default_permissions = opts.default_permissions.unwrap_or(true);
    crate::ident::enable();
    let fs = PlfsFs::new(plfs, &mount_point, default_permissions, opts.direct_io.unwrap_or(false))
        .map_err(|_| Error::Other("the mount point served is not one of the instance's".into()))?;

    let mut fc = fuser::Config::default();
    fc.mount_options = vec![
        MountOption::FSName("plfs".into()),
        MountOption::Subtype("plfs".into()),
        MountOption::CUSTOM(format!("max_read={}", crate::handlers::MAX_IO)),
    ];
    if default_permissions {
        fc.mount_options.push(MountOption::DefaultPermissions);
    }
    fc.acl = if opts.allow_other.unwrap_or(euid() == 0) {
        SessionACL::All
    } else {
        SessionACL::Owner
    };
    fc.n_threads = Some(opts.threads.unwrap_or(DEFAULT_THREADS).max(1));
    fc.clone_fd = true;

    let (old_mask, set) = block_signals();
    let session = match Session::new(fs, &mnt, &fc) {
        Ok(s) => s,
        Err(e) => {
            restore_mask(&old_mask);
            return Err(Error::io(format!("mount {}", mnt.display()), e));
        }
    };
    raise_readahead(&mnt);
    let pf = pid_file(&mnt);
    let wrote_pid = pf.parent().is_some_and(|d| std::fs::create_dir_all(d).is_ok())
        && std::fs::write(&pf, format!("{}\n{}\n", std::process::id(), mnt.display())).is_ok();
    let done = Arc::new(AtomicBool::new(false));
    let sig = {
        let (mnt, done) = (mnt.clone(), done.clone());
        std::thread::Builder::new()
            .name("plfs-fuse-signals".into())
            .spawn(move || signal_thread(set, mnt, done))
    };
    let r = session.run();
    done.store(true, Ordering::Relaxed);
    if let Ok(t) = sig {
        let _ = t.join();
    }
    restore_mask(&old_mask);
    if wrote_pid {
        let _ = std::fs::remove_file(&pf);
    }
    r.map_err(|e| Error::io(format!("serving {}", mnt.display()), e))
}

fn restore_mask(old: &libc::sigset_t) {
    // SAFETY: `old` was filled by pthread_sigmask.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, old, std::ptr::null_mut()) };
}

/// Starts a daemon in the background: re-executes the current executable with `prefix` followed
/// by [`MountOptions::foreground_args`] (so the executable must run [`mount`] for those
/// arguments), in a new session with its standard streams detached, and returns its pid once
/// the mount is live. If the daemon exits first, the error carries what it printed.
pub fn spawn_background(opts: &MountOptions, prefix: &[OsString]) -> Result<u32, Error> {
    let opts = opts.absolute()?;
    // Report bad arguments and configurations here rather than from the daemon.
    let Prepared { mnt, remark, .. } = prepare(&opts)?;
    if let Some(r) = remark {
        stderr_line(&r);
    }
    let exe = std::env::current_exe().map_err(|e| Error::io("finding the current executable", e))?;
    // The daemon's log: an unlinked temporary file we can still read if it fails to start.
    let log_path = std::env::temp_dir().join(format!(
        "plfs-fuse-{}-{:x}.log",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    let mut log = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&log_path)
        .map_err(|e| Error::io(format!("creating {}", log_path.display()), e))?;
    let _ = std::fs::remove_file(&log_path);
    let child_err = log
        .try_clone()
        .map_err(|e| Error::io("duplicating the log descriptor", e))?;
    let mut cmd = Command::new(&exe);
    cmd.args(prefix)
        .args(opts.foreground_args()?)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(child_err)
        .current_dir("/");
    // SAFETY: the closure runs in the child between fork and exec and only calls setsid, which
    // is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| Error::io(format!("starting {}", exe.display()), e))?;
    let start = Instant::now();
    loop {
        if fuse_mount_at(&mnt).is_some_and(|m| m.is_plfs()) {
            return Ok(child.id());
        }
        if let Ok(Some(status)) = child.try_wait() {
            let mut text = String::new();
            let _ = log.rewind();
            let _ = log.read_to_string(&mut text);
            return Err(Error::Other(format!(
                "the daemon for {} exited ({status}) before mounting:\n{}",
                mnt.display(),
                text.trim_end()
            )));
        }
        if start.elapsed() > START_TIMEOUT {
            let _ = child.kill();
            return Err(Error::Other(format!(
                "the daemon for {} did not mount within {:?}",
                mnt.display(),
                START_TIMEOUT
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Unmounts the PLFS FUSE mount at `path` (`fusermount3 -u`, or umount(2) as root) and waits
/// until its daemon has closed every file and exited. Fails if files are still open on it.
pub fn umount(path: &Path) -> Result<(), Error> {
    let mnt = comparable(path);
    if fuse_mount_at(&mnt).is_none() {
        return Err(Error::Other(format!(
            "{}: no FUSE file system is mounted there",
            mnt.display()
        )));
    }
    let pid = read_pid_file(&mnt);
    let out = Command::new("fusermount3")
        .arg("-u")
        .arg("--")
        .arg(&mnt)
        .stdin(Stdio::null())
        .output();
    let ok = matches!(&out, Ok(o) if o.status.success());
    if !ok {
        let why = match &out {
            Ok(o) => String::from_utf8_lossy(&o.stderr).trim().to_string(),
            Err(e) => format!("fusermount3: {e}"),
        };
        let c = std::ffi::CString::new(mnt.as_os_str().as_bytes())
            .map_err(|_| Error::Other(format!("{}: path contains a NUL byte", mnt.display())))?;
        // SAFETY: `c` is a valid NUL-terminated path that outlives the call.
        if euid() != 0 || unsafe { libc::umount(c.as_ptr()) } != 0 {
            let e = std::io::Error::last_os_error();
            let busy = e.raw_os_error() == Some(libc::EBUSY) || why.contains("busy");
            return Err(Error::Other(if busy {
                format!(
                    "{}: busy (files are open on it); close them, or detach it with `fusermount3 -u -z {0}`",
                    mnt.display()
                )
            } else {
                format!("{}: unmount failed: {why}", mnt.display())
            }));
        }
    }
    if let Some(pid) = pid {
        let start = Instant::now();
        while alive(pid) && read_pid_file(&mnt) == Some(pid) {
            if start.elapsed() > STOP_TIMEOUT {
                return Err(Error::Other(format!(
                    "{}: unmounted, but daemon {pid} is still closing files after {:?}",
                    mnt.display(),
                    STOP_TIMEOUT
                )));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selects_the_equal_mount_point_or_the_only_one() {
        let text = "- mount_point: /mnt/a\n  backends:\n  - location: /tmp/b1\n- mount_point: /mnt/b\n  backends:\n  - location: /tmp/b2\n";
        let cfg = Config::from_str(text, Path::new("/nonexistent/plfsrc")).unwrap();
        assert_eq!(
            select_mount_point(&cfg, Path::new("/mnt/b")).unwrap(),
            (PathBuf::from("/mnt/b"), None)
        );
        let e = select_mount_point(&cfg, Path::new("/mnt/c")).unwrap_err().to_string();
        assert!(e.contains("/mnt/a, /mnt/b"), "{e}");
        let one = Config::from_str(
            "- mount_point: /mnt/a\n  backends:\n  - location: /tmp/b1\n",
            Path::new("/x/plfsrc"),
        )
        .unwrap();
        let (mp, remark) = select_mount_point(&one, Path::new("/elsewhere")).unwrap();
        assert_eq!(mp, Path::new("/mnt/a"));
        assert!(remark.unwrap().contains("/elsewhere"));
    }

    #[test]
    fn pid_file_names_are_stable_and_distinct() {
        assert_eq!(pid_file(Path::new("/a/b")), pid_file(Path::new("/a/b")));
        assert_ne!(pid_file(Path::new("/a/b")), pid_file(Path::new("/a/c")));
    }
}
