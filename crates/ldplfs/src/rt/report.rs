//! `LDPLFS_REPORT=1` (issue 28, item 2): at exit, one summary on stderr of what ldplfs served in
//! this process, so a user can tell that the interception worked: files opened through PLFS,
//! calls served by class, bytes read and written, and the raw system calls (`syscall(2)`) that
//! named a path under a mount point and went to the kernel around ldplfs. Without the variable a
//! served call costs one load and branch here (whether a report is wanted); with it, a relaxed
//! atomic add or two.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// What is counted.
#[derive(Clone, Copy)]
pub enum Count {
    /// A file opened through PLFS.
    Open,
    /// A read served (and its bytes).
    Read,
    /// A write served (and its bytes).
    Write,
    /// A program or library under a mount run or mapped.
    Image,
    /// Any call whose PLFS logic ran (every served call, the above included).
    Served,
}

static OPENS: AtomicU64 = AtomicU64::new(0);
static READS: AtomicU64 = AtomicU64::new(0);
static WRITES: AtomicU64 = AtomicU64::new(0);
static IMAGES: AtomicU64 = AtomicU64::new(0);
static SERVED: AtomicU64 = AtomicU64::new(0);
static READ_BYTES: AtomicU64 = AtomicU64::new(0);
static WRITTEN_BYTES: AtomicU64 = AtomicU64::new(0);
static AROUND: AtomicU64 = AtomicU64::new(0);
/// The first path that went around ldplfs (shown as an example).
static FIRST_AROUND: Mutex<Option<String>> = Mutex::new(None);

/// A forked child starts its own count (it inherited the parent's) and is no tree's first.
pub fn reset() {
    TOP.store(false, Ordering::Relaxed);
    for c in [
        &OPENS,
        &READS,
        &WRITES,
        &IMAGES,
        &SERVED,
        &READ_BYTES,
        &WRITTEN_BYTES,
        &AROUND,
    ] {
        c.store(0, Ordering::Relaxed);
    }
}

/// Counts one `what` (moving `bytes` for a read or a write).
pub fn count(what: Count, bytes: u64) {
    if !wanted() {
        return;
    }
    let c = match what {
        Count::Open => &OPENS,
        Count::Read => {
            READ_BYTES.fetch_add(bytes, Ordering::Relaxed);
            &READS
        }
        Count::Write => {
            WRITTEN_BYTES.fetch_add(bytes, Ordering::Relaxed);
            &WRITES
        }
        Count::Image => &IMAGES,
        Count::Served => &SERVED,
    };
    c.fetch_add(1, Ordering::Relaxed);
}

/// A raw system call `name` named `path`, under a mount point, and went to the kernel.
pub fn went_around(name: &str, path: &[u8]) {
    if AROUND.fetch_add(1, Ordering::Relaxed) == 0 {
        if let Ok(mut g) = FIRST_AROUND.lock() {
            *g = Some(format!("{name}(\"{}\")", String::from_utf8_lossy(path)));
        }
    }
}

/// Whether `LDPLFS_REPORT` asks for a report (set, not empty, not `0`), read once.
pub fn wanted() -> bool {
    static WANTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *WANTED.get_or_init(|| std::env::var_os("LDPLFS_REPORT").is_some_and(|v| !v.is_empty() && v != "0"))
}

fn mib(b: u64) -> String {
    if b < 1 << 20 {
        format!("{b} B")
    } else {
        format!("{:.1} MiB ({b} B)", b as f64 / 1_048_576.0)
    }
}

/// The summary line(s) for `pid` running `program`.
pub fn text(pid: u32, program: &str) -> String {
    let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
    let (opens, reads, writes, served) = (get(&OPENS), get(&READS), get(&WRITES), get(&SERVED));
    let other = served.saturating_sub(reads + writes + opens);
    let mut s = format!(
        "ldplfs report, pid {pid} ({program}): {opens} file{} opened through PLFS; {served} call{} served \
         (open {opens}, read {reads}, write {writes}, other {other}); read {}, written {}",
        if opens == 1 { "" } else { "s" },
        if served == 1 { "" } else { "s" },
        mib(get(&READ_BYTES)),
        mib(get(&WRITTEN_BYTES)),
    );
    let images = get(&IMAGES);
    if images > 0 {
        s.push_str(&format!(
            "; {images} program{} or librar{} under a mount run from memory",
            if images == 1 { "" } else { "s" },
            if images == 1 { "y" } else { "ies" }
        ));
    }
    let around = get(&AROUND);
    if around > 0 {
        let first = FIRST_AROUND.lock().ok().and_then(|g| g.clone()).unwrap_or_default();
        s.push_str(&format!(
            "\nldplfs report, pid {pid}: {around} raw system call{} named a path under a mount point and went to the kernel, around ldplfs (first: syscall {first}); use libc's functions or the FUSE mount",
            if around == 1 { "" } else { "s" }
        ));
    }
    s.push('\n');
    s
}

/// A copy of stderr taken at start-up (close-on-exec, numbered high): programs close fd 2 at
/// exit (coreutils' `close_stdout` does), before the report is written. -1: none.
static STDERR: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);
/// Whether this process is the first of its tree under `LDPLFS_REPORT` (it reports even when it
/// served nothing, so the user learns that; its children report only what they served).
static TOP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// Marks the processes started under a reporting one.
const CHILD_MARK: &str = "LDPLFS_REPORT_CHILD";

/// At start-up, with `LDPLFS_REPORT`: keeps a copy of stderr and learns whether this is the first
/// process of its tree. Runs while the process has one thread (the library's constructor).
pub fn init() {
    if !wanted() {
        return;
    }
    // Not a placeholder (a memfd standing for a PLFS file `2>` led to): its bytes are the
    // record that other images adopt the file by.
    if std::fs::read_link("/proc/self/fd/2").is_ok_and(|l| l.as_os_str().as_encoded_bytes().starts_with(b"/memfd:")) {
        return;
    }
    // SAFETY: plain fcntl on a descriptor number.
    let fd = unsafe { crate::raw_syscall!(libc::SYS_fcntl, 2, libc::F_DUPFD_CLOEXEC, 700) };
    if fd >= 0 {
        STDERR.store(fd as i32, Ordering::Relaxed);
    }
    if std::env::var_os(CHILD_MARK).is_none() {
        TOP.store(true, Ordering::Relaxed);
        // SAFETY: the constructor runs before any other thread of the program exists.
        unsafe { std::env::set_var(CHILD_MARK, "1") };
    }
}

/// Writes the report to the copy of stderr if asked for, once per process: always in the first
/// process of a tree, in the others if they served or missed anything.
pub fn print_if_wanted(pid: u32) {
    static DONE: AtomicU64 = AtomicU64::new(0);
    let fd = STDERR.load(Ordering::Relaxed);
    if !wanted() || fd < 0 || DONE.swap(1, Ordering::Relaxed) != 0 {
        return;
    }
    let quiet = SERVED.load(Ordering::Relaxed) == 0
        && AROUND.load(Ordering::Relaxed) == 0
        && IMAGES.load(Ordering::Relaxed) == 0;
    if quiet && !TOP.load(Ordering::Relaxed) {
        return;
    }
    let program = std::fs::read_link("/proc/self/exe")
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "?".into());
    let t = text(pid, &program);
    let mut b = t.as_bytes();
    while !b.is_empty() {
        // SAFETY: a valid buffer; a plain write(2) to the copy of stderr.
        let n = unsafe { crate::raw_syscall!(libc::SYS_write, fd, b.as_ptr(), b.len()) };
        if n <= 0 {
            break;
        }
        b = &b[n as usize..];
    }
}
