//! Directory listings ([`Dir::list`]): `getdents64` into one 32 KiB buffer, from the directory's
//! own descriptor when nothing has read it yet, else from a new description of it. And whether
//! a listing taken now could miss an entry that leaves the directory's mtime unchanged
//! ([`Dir::listing_may_miss`]: on a local file system until the coarse clock leaves the mtime's
//! tick, elsewhere within [`Dir::timestamp_window_ns`]), which says when a listing can be
//! skipped.

use super::dir::{fresh, Dir, DIR_FLAGS};
use super::failpoint::hit;
use super::fd;
use crate::error::{Error, Result};
use rustix::fd::{AsFd, BorrowedFd};
use rustix::fs::{self, Mode, RawDir};
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;
use std::sync::atomic::Ordering;

/// File systems whose timestamps this machine's kernel sets from its own clock, in ticks of at
/// most 10 ms (one jiffy at HZ >= 100): ext2/3/4, XFS, Btrfs, tmpfs (`statfs` `f_type`).
const LOCAL_FS: [i64; 4] = [0xEF53, 0x5846_5342, 0x9123_683E, 0x0102_1994];

/// [`Dir::timestamp_window_ns`] on a local file system: two ticks.
pub const LOCAL_WINDOW_NS: i128 = 20_000_000;

/// [`Dir::timestamp_window_ns`] elsewhere: timestamps set by a server, in ticks up to a second,
/// by a clock that may be off from this machine's.
pub const REMOTE_WINDOW_NS: i128 = 2_000_000_000;

/// Bytes of directory entries asked for per `getdents64`: a container's directories (and a
/// 1-N store's) fit in one call, and its end is one more.
const LIST_BUF: usize = 32 * 1024;

impl Dir {
    /// Lists the directory (without `.` and `..`). Entry types are never taken from `d_type`
    /// (some backends report `DT_UNKNOWN`). The first listing of a directory opened by name
    /// reads its descriptor in place (its description is its own, at the start); later ones read
    /// a new description (`openat(".")`), so no position is shared or left behind.
    pub fn list(&self) -> Result<Vec<OsString>> {
        self.read_listing(|name, _| name)
    }

    /// [`Dir::list`], each name with whether its `d_type` says directory: a hint for a caller
    /// that tries the likelier of two operations first (`remove.rs`), never taken as the type
    /// (`DT_UNKNOWN` says no, and an entry may be replaced after the listing).
    pub(super) fn list_hinted(&self) -> Result<Vec<(OsString, bool)>> {
        self.read_listing(|name, dir| (name, dir))
    }

    /// The listing, each entry (its name, and whether `d_type` says directory) made into a `T`.
    fn read_listing<T>(&self, each: impl Fn(OsString, bool) -> T) -> Result<Vec<T>> {
        hit("sys::readdir", "readdir", &self.path)?;
        if self.unread.swap(false, Ordering::Relaxed) {
            return read_names(self.fd.as_fd(), &self.path, each);
        }
        let fd = fresh(|| fd::openat(&self.fd, ".", DIR_FLAGS, Mode::empty()))
            .map_err(|e| Error::io(&self.path, "opendir", e))?;
        read_names(fd.as_fd(), &self.path, each)
    }

    /// How long (ns, either way, against this machine's clock) after a directory's mtime an
    /// entry may be added without changing it: the timestamp tick, plus the skew of the clock
    /// that sets it. A listing taken that long after the mtime it was taken with sees every
    /// entry that does not change the mtime; a later entry does. `LOCAL_WINDOW_NS` on a local
    /// file system, `REMOTE_WINDOW_NS` on any other (and with `PLFS_CAPS_DISABLE=local_clock`).
    pub fn timestamp_window_ns(&self) -> i128 {
        if self.has_local_clock() {
            LOCAL_WINDOW_NS
        } else {
            REMOTE_WINDOW_NS
        }
    }

    /// Whether a listing taken after `now_ns` (this machine's clock) and `coarse_ns` (its coarse
    /// clock, [`crate::clock::coarse_now_ns`]), both read before it, could miss an entry created
    /// later that leaves the directory's mtime at `mtime_ns`.
    ///
    /// On a local file system the kernel stamps a change with its coarse clock (or, with
    /// multigrain timestamps, a finer one never below it): once that clock has passed the mtime,
    /// every later change stamps a later time, so the listing can miss nothing (a directory
    /// whose mtime lies beyond [`LOCAL_WINDOW_NS`] ahead was given it by hand, and a change
    /// stamped now moves it back). That takes one tick (4 ms at HZ=250) where
    /// [`Dir::timestamp_window_ns`]'s two ticks took 20 ms. Elsewhere, the window either way.
    pub fn listing_may_miss(&self, mtime_ns: i128, now_ns: i128, coarse_ns: i128) -> bool {
        if self.has_local_clock() {
            coarse_ns <= mtime_ns && mtime_ns - coarse_ns < LOCAL_WINDOW_NS
        } else {
            (now_ns - mtime_ns).abs() < REMOTE_WINDOW_NS
        }
    }

    /// Whether this directory's file system takes its timestamps from this kernel's clock (and
    /// so a stat of it is never stale: a local file system's, by `statfs`).
    pub fn has_local_clock(&self) -> bool {
        self.caps.local_clock(|| self.is_local_fs())
    }

    /// Whether the backend is one of [`LOCAL_FS`], by its `statfs` type (asked once per process).
    fn is_local_fs(&self) -> bool {
        LOCAL_FS.contains(&self.fs_type())
    }

    /// Whether close(2) of a file written here can report the error of a write that had
    /// returned ([`super::File::close_errors`]): anything but a local file system (GlusterFS's
    /// write-behind, NFS's write-back send what they hold at the close). The kind is asked of
    /// the backend once per process.
    pub fn close_may_fail(&self) -> bool {
        !self.is_local_fs()
    }

    /// [`Dir::has_local_clock`] where this process has asked it of the backend before, without
    /// a `statfs`: `None` before.
    pub fn local_clock_if_known(&self) -> Option<bool> {
        self.caps.local_clock_known()
    }

    /// The `statfs` `f_type` of this directory's backend, asked once per backend.
    pub(super) fn fs_type(&self) -> i64 {
        self.caps.fs_type(|| {
            hit("sys::statfs", "statfs", &self.path).ok()?;
            #[allow(clippy::unnecessary_cast)] // f_type's width differs between targets
            fs::fstatfs(&self.fd).ok().map(|s| s.f_type as i64)
        })
    }
}

/// The entries of a directory read from `fd`'s position to its end, each (its name, and whether
/// its `d_type` says directory) made into a `T` by `each`.
fn read_names<T>(fd: BorrowedFd<'_>, path: &Path, each: impl Fn(OsString, bool) -> T) -> Result<Vec<T>> {
    let mut buf: Vec<u8> = Vec::with_capacity(LIST_BUF);
    let mut dir = RawDir::new(fd, buf.spare_capacity_mut());
    let mut out = Vec::new();
    while let Some(ent) = dir.next() {
        let ent = ent.map_err(|e| Error::io(path, "readdir", e))?;
        let n = ent.file_name().to_bytes();
        if n != b"." && n != b".." {
            if super::failpoint::armed() && super::failpoint::left_out(&path.join(OsStr::from_bytes(n))) {
                continue;
            }
            out.push(each(
                OsString::from_vec(n.to_vec()),
                ent.file_type() == fs::FileType::Directory,
            ));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On a local file system a listing can miss a later entry only while the coarse clock is
    /// still in the tick of the mtime (or the mtime lies just ahead of it); on any other, within
    /// the two-second window either way.
    #[test]
    fn a_listing_may_miss_only_within_the_mtimes_tick() {
        let base = std::env::temp_dir();
        let d = Dir::open_root(&base).unwrap();
        let now = i128::from(crate::clock::now_ns());
        let c = crate::clock::coarse_now_ns();
        let fs_type = fs::statfs(&base).unwrap().f_type as i64;
        if LOCAL_FS.contains(&fs_type) {
            assert!(d.listing_may_miss(c, now, c), "the mtime's own tick");
            assert!(d.listing_may_miss(c + 1_000_000, now, c), "a mtime just ahead");
            assert!(
                !d.listing_may_miss(c - 1, now, c),
                "the clock has left the mtime's tick"
            );
            assert!(!d.listing_may_miss(c - 5_000_000, now, c));
            assert!(
                !d.listing_may_miss(c + LOCAL_WINDOW_NS, now, c),
                "a mtime set far ahead by hand"
            );
        }
        // A directory whose backend was found not to stamp with this kernel's clock.
        let r = Dir::open_root(&base).unwrap();
        assert!(!r.caps.local_clock(|| false));
        assert!(
            r.listing_may_miss(now - 1_000_000_000, now, c),
            "within the remote window"
        );
        assert!(r.listing_may_miss(now + 1_000_000_000, now, c), "either way");
        assert!(!r.listing_may_miss(now - 3_000_000_000, now, c));
    }
}
