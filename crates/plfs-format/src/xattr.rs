//! Extended attributes of N-1 files (`plfs_getxattr` / `plfs_setxattr`, docs/format.md §12): one
//! file per key in the container's `xattrs/` directory, as PLFS 2.5 kept them, but named by the
//! key's hex encoding (so any key is a valid, unambiguous file name) and framed with a magic, a
//! version and a checksum.

use crate::error::{Error, Result};

/// The attributes directory in a container.
pub const XATTR_DIR: &str = "xattrs";
/// Magic of an attribute file.
pub const XATTR_MAGIC: [u8; 8] = *b"PLFSXAT\0";
/// Format version of an attribute file.
pub const XATTR_VERSION: u32 = 1;
/// Longest key in bytes (its file name, `x.` + 2 hex digits per byte, fits NAME_MAX).
pub const MAX_KEY: usize = 126;
/// Largest value in bytes.
pub const MAX_VALUE: usize = 64 << 10;
/// Header length: magic, version, value length.
const HEADER: usize = 16;

/// The file name of `key`: `x.<lowercase hex of its bytes>`.
pub fn file_name(key: &[u8]) -> Result<String> {
    if key.is_empty() || key.len() > MAX_KEY {
        return Err(Error::InvalidArgument(format!(
            "extended attribute key of {} bytes (1 to {MAX_KEY} allowed)",
            key.len()
        )));
    }
    Ok(format!(
        "x.{}",
        key.iter().map(|b| format!("{b:02x}")).collect::<String>()
    ))
}

/// Encodes an attribute file.
///
/// Format: { magic [8] = "PLFSXAT\0" | version u32 = 1 | value_len u32 | value | crc32c u32 }
/// (the crc32c covers every preceding byte)
pub fn encode(value: &[u8]) -> Vec<u8> {
    let mut b = Vec::with_capacity(HEADER + value.len() + 4);
    b.extend_from_slice(&XATTR_MAGIC);
    b.extend_from_slice(&XATTR_VERSION.to_le_bytes());
    b.extend_from_slice(&(value.len() as u32).to_le_bytes());
    b.extend_from_slice(value);
    let crc = crate::crc::crc32c(&b);
    b.extend_from_slice(&crc.to_le_bytes());
    b
}

/// Decodes an attribute file (`path` names it in errors).
pub fn decode(path: &std::path::Path, b: &[u8]) -> Result<Vec<u8>> {
    let bad = |what: &str| Error::corrupt(path, what.to_string());
    if b.len() < HEADER + 4 || b[..8] != XATTR_MAGIC {
        return Err(bad("not an extended attribute file (bad magic or too short)"));
    }
    let version = u32::from_le_bytes(b[8..12].try_into().expect("4 bytes"));
    if version != XATTR_VERSION {
        return Err(bad(&format!("unsupported attribute file version {version}")));
    }
    let len = u32::from_le_bytes(b[12..16].try_into().expect("4 bytes")) as usize;
    if len > MAX_VALUE || b.len() != HEADER + len + 4 {
        return Err(bad("value length does not match the file size"));
    }
    let crc = u32::from_le_bytes(b[HEADER + len..].try_into().expect("4 bytes"));
    if crc != crate::crc::crc32c(&b[..HEADER + len]) {
        return Err(bad("checksum mismatch"));
    }
    Ok(b[HEADER..HEADER + len].to_vec())
}

/// Largest attribute file: header, the largest value, checksum.
pub const MAX_FILE: usize = HEADER + MAX_VALUE + 4;

/// True for names a container may hold for attributes (fsck and readers skip them).
pub fn is_xattr_dir(name: &[u8]) -> bool {
    name == XATTR_DIR.as_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_frames() {
        assert_eq!(file_name(b"user.a/b").unwrap(), "x.757365722e612f62");
        assert!(file_name(b"").is_err());
        assert!(file_name(&[b'k'; MAX_KEY + 1]).is_err());
        assert!(format!("x.{}", "ff".repeat(MAX_KEY)).len() <= 255);
        let p = std::path::Path::new("/c/xattrs/x.61");
        let e = encode(b"value");
        assert_eq!(e.len(), 16 + 5 + 4);
        assert_eq!(decode(p, &e).unwrap(), b"value");
        let mut bad = e.clone();
        bad[17] ^= 1;
        assert!(decode(p, &bad).unwrap_err().to_string().contains("checksum"));
        assert!(decode(p, &e[..e.len() - 1]).is_err());
    }
}
