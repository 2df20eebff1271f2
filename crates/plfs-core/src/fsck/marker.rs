//! Rewriting a container's damaged marker (format.md §2), in the layout what the container
//! holds proves (`container::proven_layout`).

use crate::container::DirExt;
use crate::error::Result;
use crate::format;
use crate::sys::{Access, Dir, TimeSpec};

/// The container id of a damaged marker whose first 48 bytes are still whole (magic and checksum
/// right: a marker cut after them, grown or with damaged padding), else `None`.
pub(super) fn salvage_id(dir: &Dir) -> Option<u128> {
    let f = dir.open_file(format::MARKER_NAME, Access::Read).ok()?;
    let mut b = [0u8; format::MARKER_LEN];
    let n = f.pread_full(&mut b, 0).ok()?;
    let crc_ok = u32::from_le_bytes(b[44..48].try_into().ok()?) == format::crc::crc32c(&b[..44]);
    let id = u128::from_le_bytes(b[16..32].try_into().ok()?);
    (n == b.len() && b[..8] == format::MARKER_MAGIC && crc_ok).then_some(id)
}

/// Rewrites the marker in `dir` for container id `cid`, of the version its layout has (`flat`:
/// one directory, version 3), keeping the old file's mode, owner and times.
pub(super) fn rewrite_marker(dir: &Dir, cid: u128, flat: bool) -> Result<()> {
    let old = dir.stat_opt(format::MARKER_NAME)?;
    let m = format::Marker {
        version: if flat { format::FORMAT_VERSION } else { 2 },
        container_id: cid,
        created_ns: crate::clock::now_ns(),
    };
    let mode = old.as_ref().map_or(0o644, |s| s.st_mode & 0o7777);
    dir.write_atomic(format::MARKER_NAME, &m.encode(), mode)?;
    dir.chmod(format::MARKER_NAME, mode)?;
    if let Some(s) = old {
        dir.chown(format::MARKER_NAME, s.st_uid, s.st_gid)?;
        dir.set_times(
            format::MARKER_NAME,
            TimeSpec::At(s.st_atime, s.st_atime_nsec as i64),
            TimeSpec::At(s.st_mtime, s.st_mtime_nsec as i64),
        )?;
    }
    Ok(())
}
