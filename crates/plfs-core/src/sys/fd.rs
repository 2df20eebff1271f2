//! [`Fd`]: a descriptor the core owns, closed with the `close` system call itself.
//!
//! rustix hands out std's `OwnedFd`, whose drop calls libc's `close`: an interposable symbol.
//! Inside `libldplfs.so` every descriptor the core let go (a directory it looked through, a
//! log it read, one a stat opened) went through the preload's own `close`, whose guard sent it on
//! to libc (about 50 instructions and two more files on every walk that opens one, issue 27), and
//! a close on a thread the guard does not know would have been taken for the program's. Every
//! descriptor the seam opens is wrapped at once, so the core's own I/O never reaches a libc
//! symbol, as `sys`'s first rule says.

use rustix::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::io::Result;
use rustix::path::Arg;
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicU32, Ordering};

// The seam's only ways to make a descriptor (`scripts/check-architecture.py` holds the rest of
// `sys` to them): each wraps what rustix made at once.

/// open(2) of an absolute path.
pub(super) fn open<P: Arg>(path: P, flags: OFlags, mode: Mode) -> Result<Fd> {
    rustix::fs::open(path, flags, mode).map(Fd::new)
}

/// openat(2).
pub(super) fn openat<P: Arg>(dir: impl AsFd, path: P, flags: OFlags, mode: Mode) -> Result<Fd> {
    rustix::fs::openat(dir, path, flags, mode).map(Fd::new)
}

/// openat2(2).
pub(super) fn openat2<P: Arg>(dir: impl AsFd, path: P, flags: OFlags, mode: Mode, how: ResolveFlags) -> Result<Fd> {
    rustix::fs::openat2(dir, path, flags, mode, how).map(Fd::new)
}

/// fcntl(F_DUPFD_CLOEXEC): a duplicate numbered `min` or above.
pub(super) fn dupfd_cloexec(fd: impl AsFd, min: RawFd) -> Result<Fd> {
    rustix::io::fcntl_dupfd_cloexec(fd, min).map(Fd::new)
}

/// A descriptor the core owns. Dropping it closes it with the system call; [`Fd::close`] closes
/// it and returns close(2)'s answer.
pub struct Fd(ManuallyDrop<OwnedFd>, u32);

/// How many times the core found that a descriptor it keeps had been closed behind its back (a
/// raw `close_range`/`close` system call that no front end saw: [`lost`]). A descriptor made
/// before the latest such finding is never closed by the core: its number may be another
/// file's by now (the program's, or the one the core reopened in its place, which the kernel
/// numbers with the lowest free number, often the very one).
static LOST: AtomicU32 = AtomicU32::new(0);

/// Records that descriptors the core kept were closed behind its back (see [`LOST`]): from now
/// on, every [`Fd`] made before is left open when dropped (a descriptor that the raw close did
/// not reach is then never closed; its number is not trusted).
/// `dead` (made by the caller after the raw close, so that it did not take it) is what those
/// descriptors stand for from now on (see `AsFd for Fd`).
pub(super) fn lost(dead: impl FnOnce() -> Option<Fd>) {
    let n = LOST.fetch_add(1, Ordering::AcqRel) + 1;
    if let Some(slot) = DEAD.get(n as usize) {
        if let Some(d) = dead() {
            let _ = slot.set(d);
        }
    }
}

/// Descriptors of nothing usable (`O_PATH` of /dev/null: read, write, truncate, sync, list and
/// lock fail with EBADF, `*at` calls with ENOTDIR), one made at each [`lost`] (index: [`LOST`]),
/// never closed: an [`Fd`] made before the latest one is used as this descriptor, so that the
/// core never reads, writes or creates through a number that may be another file's now.
static DEAD: [std::sync::OnceLock<Fd>; 17] = [const { std::sync::OnceLock::new() }; 17];

impl Fd {
    /// Takes over `fd` (from rustix, which made it).
    fn new(fd: OwnedFd) -> Fd {
        Fd(ManuallyDrop::new(fd), LOST.load(Ordering::Acquire))
    }

    /// Whether the number may still be this descriptor's (see [`LOST`]).
    pub(super) fn trusted(&self) -> bool {
        self.1 == LOST.load(Ordering::Acquire)
    }

    /// Closes the descriptor and returns what close(2) answered. On a network file system that
    /// answer carries the errors of writes that had returned (design.md, "Crash semantics",
    /// `close`); dropping the `Fd` throws it away.
    pub(crate) fn close(self) -> Result<()> {
        // The drop below must not close it again.
        let this = ManuallyDrop::new(self);
        if !this.trusted() {
            return Err(rustix::io::Errno::BADF);
        }
        close_raw(this.0.as_raw_fd())
    }
}

impl Drop for Fd {
    fn drop(&mut self) {
        if self.trusted() {
            let _ = close_raw(self.0.as_raw_fd());
        }
    }
}

/// The one `unsafe` of the core (design.md, "Layers"): the close system call of a descriptor.
/// Its two callers above hand over the descriptor of an [`Fd`] that is going away (dropped, or
/// consumed by [`Fd::close`]), whose `OwnedFd` is never dropped (`ManuallyDrop`), so nothing
/// else closes the descriptor and nothing uses it after this call.
fn close_raw(raw: RawFd) -> Result<()> {
    // SAFETY: see above: `raw` is owned by the `Fd` being closed and is used by nothing after.
    unsafe { rustix::io::try_close(raw) }
}

impl AsFd for Fd {
    #[inline]
    fn as_fd(&self) -> BorrowedFd<'_> {
        if self.trusted() {
            return self.0.as_fd();
        }
        // Made before descriptors were found closed behind the core's back: see `DEAD`.
        let dead = DEAD.get(LOST.load(Ordering::Acquire) as usize).and_then(|d| d.get());
        match dead {
            Some(d) => d.0.as_fd(),
            None => self.0.as_fd(),
        }
    }
}

impl AsRawFd for Fd {
    #[inline]
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

impl std::fmt::Debug for Fd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Fd({})", self.0.as_raw_fd())
    }
}
