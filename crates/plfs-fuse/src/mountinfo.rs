//! Reading `/proc/self/mountinfo`: is a FUSE file system mounted at a path, and with which
//! device number (the kernel names the mount's readahead settings after it).
//!
//! Format (proc(5)): `id parent major:minor root mountpoint options [optional...] - fstype
//! source superoptions`, with space, tab, newline and backslash in paths escaped as `\ooo`.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

/// One mount.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountEntry {
    /// `major:minor` of the mounted file system.
    pub dev: String,
    /// Where it is mounted.
    pub mountpoint: PathBuf,
    /// File system type, e.g. `fuse.plfs`.
    pub fstype: String,
    /// Mount source, e.g. `plfs`.
    pub source: String,
}

impl MountEntry {
    /// True for a mount made by this daemon (type `fuse.plfs` through fusermount3, or type
    /// `fuse` with source `plfs` when mounted directly by root).
    pub fn is_plfs(&self) -> bool {
        self.fstype == "fuse.plfs" || (self.fstype == "fuse" && self.source == "plfs")
    }
}

/// Undoes mountinfo's octal escapes.
fn unescape(s: &str) -> OsString {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c)) {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    OsString::from_vec(out)
}

/// Parses mountinfo text; malformed lines are skipped.
pub fn parse(text: &str) -> Vec<MountEntry> {
    let mut out = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        let Some(sep) = f.iter().position(|x| *x == "-") else {
            continue;
        };
        if f.len() < sep + 3 || sep < 6 {
            continue;
        }
        out.push(MountEntry {
            dev: f[2].to_string(),
            mountpoint: PathBuf::from(unescape(f[4])),
            fstype: f[sep + 1].to_string(),
            source: unescape(f[sep + 2]).to_string_lossy().into_owned(),
        });
    }
    out
}

/// The mounts of this process's mount namespace.
pub fn mounts() -> Vec<MountEntry> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .map(|t| parse(&t))
        .unwrap_or_default()
}

/// The FUSE mount at `path` (the topmost, if several are stacked), if any. `path` is compared
/// after resolving symbolic links in its parent (never touching the mount itself, which may be
/// dead).
pub fn fuse_mount_at(path: &Path) -> Option<MountEntry> {
    let want = comparable(path);
    mounts()
        .into_iter()
        .rev()
        .find(|m| m.mountpoint == want && m.fstype.starts_with("fuse"))
}

/// True if a FUSE file system is mounted at `path`.
pub fn is_mounted(path: &Path) -> bool {
    fuse_mount_at(path).is_some()
}

/// `path` with its parent directory canonicalised (the last component is kept as is, so a dead
/// mount point is never stat-ed).
pub fn comparable(path: &Path) -> PathBuf {
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|c| c.join(path))
            .unwrap_or_else(|_| path.to_path_buf())
    };
    let abs = plfs_core::config::normalize_path(&abs).unwrap_or(abs);
    match (abs.parent(), abs.file_name()) {
        (Some(p), Some(n)) => std::fs::canonicalize(p).map(|p| p.join(n)).unwrap_or(abs),
        _ => abs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_escapes_and_optional_fields() {
        let t = "36 35 98:0 /mnt1 /mnt/a\\040b rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n\
                 99 1 0:55 / /tmp/x rw,nosuid,nodev shared:5 peer:3 - fuse.plfs plfs rw,user_id=0\n\
                 garbage line\n";
        let m = parse(t);
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].mountpoint, Path::new("/mnt/a b"));
        assert_eq!(m[0].fstype, "ext3");
        assert_eq!(m[1].dev, "0:55");
        assert_eq!(m[1].fstype, "fuse.plfs");
        assert_eq!(m[1].source, "plfs");
        assert_eq!(unescape("a\\134b\\011"), OsString::from("a\\b\t"));
    }

    #[test]
    fn root_is_not_a_fuse_mount() {
        assert!(!is_mounted(Path::new("/")));
        assert!(!mounts().is_empty());
    }
}
