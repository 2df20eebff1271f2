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
pub struct Fd(ManuallyDrop<OwnedFd>);

impl Fd {
    /// Takes over `fd` (from rustix, which made it).
    fn new(fd: OwnedFd) -> Fd {
        Fd(ManuallyDrop::new(fd))
    }

    /// Closes the descriptor and returns what close(2) answered. On a network file system that
    /// answer carries the errors of writes that had returned (design.md, "Crash semantics",
    /// `close`); dropping the `Fd` throws it away.
    pub(crate) fn close(self) -> Result<()> {
        // The drop below must not close it again.
        let this = ManuallyDrop::new(self);
        close_raw(this.0.as_raw_fd())
    }
}

impl Drop for Fd {
    fn drop(&mut self) {
        let _ = close_raw(self.0.as_raw_fd());
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
        self.0.as_fd()
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
