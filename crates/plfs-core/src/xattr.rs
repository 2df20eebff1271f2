//! Extended attributes of N-1 files (`plfs_getxattr` / `plfs_setxattr`): one framed file per key
//! in the container's `xattrs/` directory (docs/format.md §12, [`crate::format::xattr`]). A value
//! is replaced atomically (temporary file, rename); the directory and files get the modes of the
//! container and its logs, so an attribute is readable by exactly those who may read the file.

use crate::container::{container_dir_mode, log_mode, Container};
use crate::error::{Error, Result};
use crate::format::xattr::{self as fmt, MAX_FILE, MAX_VALUE, XATTR_DIR};
use crate::sys::{Access, Create};

/// Sets `key` to `value` on the container.
pub fn set(c: &Container, key: &[u8], value: &[u8]) -> Result<()> {
    if value.len() > MAX_VALUE {
        return Err(Error::InvalidArgument(format!(
            "extended attribute value of {} bytes (at most {MAX_VALUE})",
            value.len()
        )));
    }
    let name = fmt::file_name(key)?;
    let mode = c.marker.st_mode & 0o7777;
    if c.dir.mkdir_ok(XATTR_DIR, container_dir_mode(mode))? {
        // mkdir applied the umask: set the mode exactly.
        c.dir.chmod(XATTR_DIR, container_dir_mode(mode))?;
    }
    let d = c.dir.open_dir(XATTR_DIR)?;
    // Replaced atomically: a temporary file (a short name: the key's may be near NAME_MAX),
    // fsync, rename over the key's file.
    let tmp = crate::format::tmp_name(crate::format::TMP_PREFIX, crate::clock::random_u64());
    let f = d.create_file(&tmp, log_mode(mode), Create::Excl)?;
    let r = f
        .chmod(log_mode(mode))
        .and_then(|()| f.pwrite_all(&fmt::encode(value), 0))
        .and_then(|()| f.fsync())
        .and_then(|()| d.rename(&tmp, &d, &name));
    if r.is_err() {
        let _ = d.unlink_opt(&tmp);
    }
    r
}

/// The value of `key`, or `None` if the container has no such attribute.
pub fn get(c: &Container, key: &[u8]) -> Result<Option<Vec<u8>>> {
    let name = fmt::file_name(key)?;
    let Some(d) = c.dir.open_dir_opt(XATTR_DIR)? else {
        return Ok(None);
    };
    let Some(f) = d.open_file_opt(&name, Access::Read)? else {
        return Ok(None);
    };
    // At most one byte more than the largest attribute file: a larger file is not one.
    let mut b = vec![0u8; MAX_FILE + 1];
    let n = f.pread_full(&mut b, 0)?;
    if n > MAX_FILE {
        return Err(Error::corrupt(f.path(), "not an extended attribute file (too large)"));
    }
    b.truncate(n);
    Ok(Some(fmt::decode(f.path(), &b)?))
}
