//! Whether a backend's page cache can show a reader bytes older than what another process on the
//! same machine has already written, and so whether logs are read with `O_DIRECT`
//! ([`Dir::open_file_sized`](super::Dir::open_file_sized), [`super::caps::Caps::direct_reads`]).
//!
//! PLFS's readers rely on one ordering: a writer appends its data before the index record (or
//! frame) that points at it, so a reader that sees the record sees the data. Local file systems
//! and the GlusterFS client keep that across processes. The MooseFS client (mfsmount 3.0, its
//! default `mfscachemode=AUTO`) does not: its writers' data bypasses the kernel's page cache,
//! while a reader's cached pages are kept across opens. A page a reader cached while a log ended
//! inside it keeps zeros where the writer appended afterwards, and a later read of the same log
//! returns those zeros although the record that points there is visible. Measured here
//! (`docs/backends.md`, "MooseFS"): one process appending 48-byte records to a file and then
//! each new length to a second file, another reading the length and then the first file's last
//! 8 KiB: 3,328 of 10,106 reads saw zeros where the length said data was; with `O_DIRECT`
//! reads, 0 of 4,475. An fsync by the writer before it wrote the length did not help (the
//! stale pages are the reader's); neither did `POSIX_FADV_DONTNEED` before each read (35 bad).
//!
//! The CephFS FUSE client (ceph-fuse 16.2) breaks the same ordering across clients: with a
//! writer appending through one ceph-fuse mount and a reader on another, a look-up of a data
//! log by name gave a size past the end of the records the reader had just read in the index
//! log, and the buffered `pread` that followed ended at 96 bytes, the log's header (the reader's
//! kernel had an older size by then); `O_DIRECT` reads, which ceph-fuse answers itself, read the
//! records' bytes (`tests/multiprocess_live.rs`, `fresh_readers_never_see_unwritten_bytes_under_records`
//! with `PLFS_TEST_ROOT2`: EIO at its 3rd-8th read before, 90 reads right after; docs/backends.md,
//! "CephFS"). The kernel CephFS client (`ceph`, not FUSE) was not tested and is left as it is.
//!
//! The FUSE kernel client takes `O_DIRECT` reads at any offset and length, so the reads need
//! no alignment there.

use rustix::fd::BorrowedFd;
use rustix::fs;

/// `statfs` `f_type` of every FUSE file system.
const FUSE_SUPER_MAGIC: i64 = 0x6573_5546;

/// Whether the file system of `fd` is one whose page cache a reader cannot trust while other
/// processes write (see the module comment): a FUSE mount of MooseFS, of its fork LizardFS, or
/// of CephFS (ceph-fuse).
/// `fs_type` is the backend's `statfs` `f_type`; on FUSE this costs one `fstat` and a read of
/// `/proc/self/mountinfo`.
pub(super) fn stale_page_cache(fd: BorrowedFd<'_>, fs_type: i64) -> bool {
    if fs_type != FUSE_SUPER_MAGIC {
        return false;
    }
    let Ok(st) = fs::fstat(fd) else { return false };
    let Ok(info) = super::read_file(std::path::Path::new("/proc/self/mountinfo")) else {
        return false;
    };
    let dev = (fs::major(st.st_dev), fs::minor(st.st_dev));
    mount_of(&String::from_utf8_lossy(&info), dev).is_some_and(|(fstype, source)| needs_direct_reads(fstype, source))
}

/// The file system type and source of the mount of device `dev` (major, minor) in the text of
/// a `/proc/PID/mountinfo` (proc(5): `ID PARENT MAJ:MIN ROOT POINT OPTIONS [TAGS...] - TYPE
/// SOURCE SUPER`).
fn mount_of(info: &str, dev: (u32, u32)) -> Option<(&str, &str)> {
    let want = format!("{}:{}", dev.0, dev.1);
    info.lines().find_map(|line| {
        let mut fields = line.split(' ');
        if fields.nth(2)? != want {
            return None;
        }
        let mut after = fields.skip_while(|f| *f != "-").skip(1);
        Some((after.next()?, after.next()?))
    })
}

/// Whether a mount of type `fstype` from `source` (as mountinfo spells them, `#` escaped as
/// `\043`) is one whose readers need `O_DIRECT`: MooseFS or LizardFS (mfsmount names its mounts
/// `mfs#HOST:PORT`, and newer clients set the subtype: `fuse.mfs`, `fuse.lizardfs`), or
/// ceph-fuse (`fuse.ceph-fuse`, source `ceph-fuse`).
fn needs_direct_reads(fstype: &str, source: &str) -> bool {
    matches!(fstype, "fuse.mfs" | "fuse.moosefs" | "fuse.lizardfs" | "fuse.ceph-fuse")
        || (fstype.starts_with("fuse") && (source.starts_with("mfs#") || source.starts_with("mfs\\043")))
        || (fstype == "fuse" && source == "ceph-fuse")
}

#[cfg(test)]
mod tests {
    use super::*;

    const INFO: &str = "\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
43 27 0:39 / /var/tmp/m/mnt rw,nosuid,nodev,relatime - fuse mfs\\04310.77.0.2:9421 rw,user_id=0
44 27 0:40 / /mnt/g rw,relatime shared:7 - fuse.glusterfs 10.78.0.1:/plfs rw,user_id=0
45 27 0:41 / /mnt/l rw - fuse.lizardfs mfs#master:9421 rw
46 27 0:42 / /var/tmp/plfs-cephfs/mnt rw,nosuid,nodev,relatime - fuse.ceph-fuse ceph-fuse rw,user_id=0
47 27 0:43 / /mnt/k rw,relatime - ceph 127.0.0.1:13300:/ rw,name=admin
";

    /// A device is found by its major:minor, past optional tags, and only MooseFS-like FUSE
    /// mounts count.
    #[test]
    fn moosefs_and_ceph_fuse_mounts_are_recognised_from_mountinfo() {
        assert_eq!(mount_of(INFO, (8, 1)), Some(("ext4", "/dev/sda1")));
        assert_eq!(mount_of(INFO, (0, 39)), Some(("fuse", "mfs\\04310.77.0.2:9421")));
        assert_eq!(mount_of(INFO, (0, 99)), None);
        let direct = |dev| mount_of(INFO, dev).is_some_and(|(t, s)| needs_direct_reads(t, s));
        assert!(direct((0, 39)));
        assert!(direct((0, 41)));
        assert!(direct((0, 42)), "ceph-fuse");
        assert!(needs_direct_reads("fuse", "ceph-fuse"), "ceph-fuse without its subtype");
        assert!(
            !direct((0, 43)),
            "the kernel CephFS client is not FUSE (and not tested)"
        );
        assert!(!direct((0, 40)), "GlusterFS keeps readers coherent");
        assert!(!direct((8, 1)));
        assert!(!needs_direct_reads("ext4", "mfs#x"), "only a FUSE mount");
    }
}
