//! Recovery from descriptors closed behind the core's back (issue 50): a program that closes
//! every descriptor with the raw system call (`close_range(3, ~0U, 0)` or a loop of `close`
//! made with the instruction itself, as static binaries and Go do) closes the backend roots this
//! instance keeps, and before, every later call failed with EBADF, even the open of a new file.

use super::Plfs;
use crate::error::Result;
use rustix::io::Errno;

impl Plfs {
    /// Reopens the backend roots whose descriptors no longer refer to them ([`Backend::refresh`]:
    /// fstat against the identity they were opened with) and forgets what the layouts keep of
    /// those mounts (their directory views hold descriptors that went too). True if anything
    /// was reopened, so that a call that failed with EBADF may be made again. Front ends call it
    /// when they learn that descriptors were closed behind their back; the calls below call it
    /// themselves after an EBADF.
    ///
    /// [`Backend::refresh`]: crate::mount::Backend
    pub fn recover_descriptors(&self) -> bool {
        let mut any = false;
        for (m, layout) in &self.mounts {
            let mut here = false;
            for b in m.canonical.iter().chain(m.shadows.iter()) {
                match b.refresh() {
                    Ok(reopened) => here |= reopened,
                    Err(e) => crate::warn!("{e}"),
                }
            }
            if here {
                layout.forget(&m.cfg.mount_point);
                any = true;
            }
        }
        any
    }

    /// Runs `f`, and once more if it failed with EBADF and [`Plfs::recover_descriptors`] reopened
    /// something. A raw close takes every root at once, so the failed attempt stopped at its
    /// first use of one, before it changed anything (a mkdir over several backends that a raw
    /// close interrupted between two of them may answer EEXIST the second time).
    pub(crate) fn again_if_lost<T>(&self, mut f: impl FnMut() -> Result<T>) -> Result<T> {
        match f() {
            Err(e) if e.raw_errno() == Errno::BADF.raw_os_error() && self.recover_descriptors() => f(),
            r => r,
        }
    }
}
