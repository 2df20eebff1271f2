//! Names, ids and owners of new packed files.

use crate::clock;
use crate::error::{Error, Result};
use crate::format;
use crate::format::small::SMALL_DIR;
use rustix::io::Errno;

/// This process's effective uid and gid, read once (owners of the files it creates).
pub(super) fn effective_ids() -> (u32, u32) {
    static IDS: std::sync::OnceLock<(u32, u32)> = std::sync::OnceLock::new();
    *IDS.get_or_init(|| (rustix::process::geteuid().as_raw(), rustix::process::getegid().as_raw()))
}

/// A new file id: unique without a system call per file (a per-process random base, a counter,
/// and a bijective mix so ids of different processes do not collide in practice).
pub(super) fn new_file_id() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static BASE: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let base = *BASE.get_or_init(clock::random_u64);
    let mut z = base.wrapping_add(NEXT.fetch_add(1, Ordering::Relaxed).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)).max(1)
}

/// Checks a name for a packed file: one path component, no NUL, not `.`/`..`.
pub fn check_name(name: &str) -> Result<()> {
    if name.is_empty() || name == "." || name == ".." || name.contains('/') || name.contains('\0') {
        return Err(Error::InvalidArgument(format!("{name:?}: not a valid file name")));
    }
    if name.len() > 255 {
        return Err(Error::errno(Errno::NAMETOOLONG, format!("{name}: file name too long")));
    }
    if name.starts_with(SMALL_DIR) || name.starts_with(format::TMP_PREFIX) {
        return Err(Error::InvalidArgument(format!("{name}: reserved name")));
    }
    Ok(())
}

pub(super) fn le(fields: &[u64]) -> Vec<u8> {
    fields.iter().flat_map(|v| v.to_le_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(check_name("a/b").is_err());
        assert!(check_name("..").is_err());
        assert!(check_name("a\0").is_err());
        assert!(check_name("ok.txt").is_ok());
    }
}
