//! Calls on paths: create, unlink, rename, directories, permissions, times, links, statvfs, and
//! the queries `is_plfs_path`, `plfs_mode`, `plfs_get_filetype`, `plfs_version`.

use crate::error::PlfsError;
use crate::handles::{Dir, PlfsDirpC, DIRS};
use crate::instance::{
    c_path, c_str, guard, guard_value, last_error_ptr, non_null, plfs, plfs_path, put, put_opt, Failure,
};
use crate::stat::fill_statvfs;
use plfs_core::TimeSpec;
use std::ffi::{c_char, c_int, CStr, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Mutex;

/// `int is_plfs_path(const char *path)`: 1 if `path` lies under a PLFS mount point (whether or
/// not it exists), else 0 (also for NULL and when the configuration is invalid).
///
/// # Safety
/// `path` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn is_plfs_path(path: *const c_char) -> c_int {
    guard_value(0, || {
        let Ok(p) = plfs() else { return 0 };
        // SAFETY: path is NULL or NUL-terminated (caller's contract).
        match unsafe { c_path(path, "path") } {
            Ok(path) => p.is_plfs_path(&path) as c_int,
            Err(_) => 0,
        }
    })
}

/// `plfs_error_t plfs_create(const char *path, mode_t mode, int flags, pid_t pid)`: creates an
/// empty file. With O_EXCL an existing file is `PLFS_EEXIST`; with O_TRUNC an existing file is
/// emptied.
///
/// # Safety
/// `path` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn plfs_create(
    path: *const c_char,
    mode: libc::mode_t,
    flags: c_int,
    _pid: libc::pid_t,
) -> PlfsError {
    guard("plfs_create", || {
        let p = plfs()?;
        // SAFETY: forwarded caller contract.
        let path = unsafe { plfs_path(p, path, "path") }?;
        let created = p.create(&path, mode, flags & libc::O_EXCL != 0)?;
        if !created && flags & libc::O_TRUNC != 0 {
            p.truncate(&path, 0)?;
        }
        Ok(())
    })
}

/// Defines an export taking one path and calling `$body(plfs, path)`.
macro_rules! path_call {
    ($(#[$doc:meta])* $name:ident ( $($arg:ident : $ty:ty),* ) => |$p:ident, $path:ident| $body:expr) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// `path` is NULL or NUL-terminated.
        #[no_mangle]
        pub unsafe extern "C" fn $name(path: *const c_char $(, $arg: $ty)*) -> PlfsError {
            guard(stringify!($name), || {
                let $p = plfs()?;
                // SAFETY: forwarded caller contract.
                let $path = unsafe { plfs_path($p, path, "path") }?;
                Ok($body?)
            })
        }
    };
}

path_call!(
    /// `plfs_error_t plfs_unlink(const char *path)`: removes a file or symbolic link.
    plfs_unlink() => |p, path| p.unlink(&path)
);
path_call!(
    /// `plfs_error_t plfs_mkdir(const char *path, mode_t mode)`.
    plfs_mkdir(mode: libc::mode_t) => |p, path| p.mkdir(&path, mode)
);
path_call!(
    /// `plfs_error_t plfs_rmdir(const char *path)`: removes an empty directory.
    plfs_rmdir() => |p, path| p.rmdir(&path)
);
path_call!(
    /// `plfs_error_t plfs_chmod(const char *path, mode_t mode)`.
    plfs_chmod(mode: libc::mode_t) => |p, path| p.chmod(&path, mode)
);
path_call!(
    /// `plfs_error_t plfs_chown(const char *path, uid_t uid, gid_t gid)`: -1 leaves an id as is.
    /// Does not follow a final symbolic link.
    plfs_chown(uid: libc::uid_t, gid: libc::gid_t) => |p, path| p.chown(&path, uid, gid)
);

/// `plfs_error_t plfs_access(const char *path, int mask)`: access(2) with mask R_OK|W_OK|X_OK or
/// F_OK. As in PLFS 2.5, an ancestor directory of a mount point (e.g. `/mnt` for mount point
/// `/mnt/plfs`) is accessible even though it lies outside PLFS.
///
/// # Safety
/// `path` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn plfs_access(path: *const c_char, mask: c_int) -> PlfsError {
    guard("plfs_access", || {
        let p = plfs()?;
        // SAFETY: forwarded caller contract.
        let path = unsafe { c_path(path, "path") }?;
        if !p.is_plfs_path(&path) {
            let ancestor = plfs_core::config::normalize_path(&path)
                .is_some_and(|n| p.config().mounts.iter().any(|m| m.mount_point.starts_with(&n)));
            if ancestor {
                return Ok(());
            }
            return Err(Failure::new(
                PlfsError::EINVAL,
                format!("{}: not under a PLFS mount point", path.display()),
            ));
        }
        let mask =
            u32::try_from(mask).map_err(|_| Failure::new(PlfsError::EINVAL, format!("bad access mask {mask}")))?;
        Ok(p.access(&path, mask)?)
    })
}

/// `plfs_error_t plfs_rename(const char *from, const char *to)`. Both must lie under the same
/// mount point (else `PLFS_EXDEV`).
///
/// # Safety
/// `from` and `to` are NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn plfs_rename(from: *const c_char, to: *const c_char) -> PlfsError {
    guard("plfs_rename", || {
        let p = plfs()?;
        // SAFETY: forwarded caller contract.
        let (from, to) = unsafe { (plfs_path(p, from, "from")?, plfs_path(p, to, "to")?) };
        Ok(p.rename(&from, &to)?)
    })
}

/// `plfs_error_t plfs_link(const char *path, const char *to)`: hard links are not supported
/// (`PLFS_ENOSYS`, as in PLFS 2.5).
///
/// # Safety
/// `path` and `to` are NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn plfs_link(path: *const c_char, to: *const c_char) -> PlfsError {
    guard("plfs_link", || {
        let p = plfs()?;
        // SAFETY: forwarded caller contract.
        let (from, to) = unsafe { (plfs_path(p, path, "path")?, plfs_path(p, to, "to")?) };
        Err(Failure::new(
            PlfsError::ENOSYS,
            format!("{} -> {}: hard links are not supported", from.display(), to.display()),
        ))
    })
}

/// `plfs_error_t plfs_symlink(const char *from, const char *to)`: creates the symbolic link `to`
/// (under PLFS) containing `from` (any string, stored verbatim).
///
/// # Safety
/// `from` and `to` are NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn plfs_symlink(from: *const c_char, to: *const c_char) -> PlfsError {
    guard("plfs_symlink", || {
        let p = plfs()?;
        // SAFETY: forwarded caller contract.
        let target = unsafe { c_str(from, "from") }?;
        // SAFETY: forwarded caller contract.
        let link = unsafe { plfs_path(p, to, "to") }?;
        Ok(p.symlink(Path::new(OsStr::from_bytes(target)), &link)?)
    })
}

/// `plfs_error_t plfs_readlink(const char *path, char *buf, size_t bufsize, int *bytes)`: copies
/// at most `bufsize` bytes of the link's contents into `buf`, zero-fills the rest of `buf`, and
/// stores the bytes copied in `*bytes` (may be NULL). The result is NUL-terminated when
/// `*bytes < bufsize`, as with readlink(2) a longer link is silently truncated.
///
/// # Safety
/// `path` is NULL or NUL-terminated; `buf` is valid for `bufsize` bytes of writes.
#[no_mangle]
pub unsafe extern "C" fn plfs_readlink(
    path: *const c_char,
    buf: *mut c_char,
    bufsize: libc::size_t,
    bytes: *mut c_int,
) -> PlfsError {
    guard("plfs_readlink", || {
        non_null(buf, "buf")?;
        if bufsize == 0 || bufsize > isize::MAX as usize {
            return Err(Failure::new(PlfsError::EINVAL, format!("bad bufsize {bufsize}")));
        }
        let p = plfs()?;
        // SAFETY: forwarded caller contract.
        let path = unsafe { plfs_path(p, path, "path") }?;
        let target = p.readlink(&path)?;
        let target = target.as_bytes();
        // SAFETY: buf is non-NULL and valid for bufsize bytes (caller's contract).
        let dst = unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), bufsize) };
        let n = target.len().min(bufsize);
        dst[..n].copy_from_slice(&target[..n]);
        dst[n..].fill(0);
        // SAFETY: bytes is NULL or writable (caller's contract).
        unsafe { put_opt(bytes, c_int::try_from(n).unwrap_or(c_int::MAX)) };
        Ok(())
    })
}

/// `plfs_error_t plfs_utime(const char *path, struct utimbuf *ut)`: sets the access and
/// modification times (both to now if `ut` is NULL). Does not follow a final symbolic link.
///
/// # Safety
/// `path` is NULL or NUL-terminated; `ut` is NULL or readable.
#[no_mangle]
pub unsafe extern "C" fn plfs_utime(path: *const c_char, ut: *const libc::utimbuf) -> PlfsError {
    guard("plfs_utime", || {
        let p = plfs()?;
        // SAFETY: forwarded caller contract.
        let path = unsafe { plfs_path(p, path, "path") }?;
        let (a, m) = if ut.is_null() {
            (TimeSpec::Now, TimeSpec::Now)
        } else {
            // SAFETY: non-NULL and readable (caller's contract).
            let ut = unsafe { ut.read() };
            // time_t is narrower than i64 on some targets.
            #[allow(clippy::unnecessary_cast)]
            let (atime, mtime) = (ut.actime as i64, ut.modtime as i64);
            (TimeSpec::At(atime, 0), TimeSpec::At(mtime, 0))
        };
        Ok(p.utimens(&path, a, m)?)
    })
}

/// `plfs_error_t plfs_statvfs(const char *path, struct statvfs *stbuf)`: statistics of the
/// backend file system holding the mount point's first canonical backend.
///
/// # Safety
/// `path` is NULL or NUL-terminated; `stbuf` is writable.
#[no_mangle]
pub unsafe extern "C" fn plfs_statvfs(path: *const c_char, stbuf: *mut libc::statvfs) -> PlfsError {
    guard("plfs_statvfs", || {
        let p = plfs()?;
        // SAFETY: forwarded caller contract.
        let path = unsafe { plfs_path(p, path, "path") }?;
        let v = p.statvfs(&path)?;
        // SAFETY: stbuf is writable (caller's contract).
        unsafe { put(stbuf, fill_statvfs(&v), "stbuf") }
    })
}

/// `plfs_error_t plfs_mode(const char *path, mode_t *mode)`: the file's `st_mode` (type and
/// permission bits).
///
/// # Safety
/// `path` is NULL or NUL-terminated; `mode` is writable.
#[no_mangle]
pub unsafe extern "C" fn plfs_mode(path: *const c_char, mode: *mut libc::mode_t) -> PlfsError {
    guard("plfs_mode", || {
        non_null(mode, "mode")?;
        let p = plfs()?;
        // SAFETY: forwarded caller contract.
        let path = unsafe { plfs_path(p, path, "path") }?;
        let st = p.stat(&path)?;
        // SAFETY: mode is writable (caller's contract).
        unsafe { put(mode, st.mode as libc::mode_t, "mode") }
    })
}

/// `plfs_filetype plfs_get_filetype(const char *path)`: the file type of the mount point holding
/// `path` (as PLFS 2.5): `CONTAINER` (0) for n-1, `FLAT_FILE` (1) for n-n, `SMALL_FILE` (2) for
/// 1-n; `PFT_UNKNOWN` (3) outside every mount point.
///
/// # Safety
/// `path` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn plfs_get_filetype(path: *const c_char) -> c_int {
    // SAFETY: forwarded caller contract.
    guard_value(3, || unsafe { crate::extra_api::mount_filetype(path) }.0)
}

/// `plfs_error_t plfs_opendir_c(const char *path, Plfs_dirp **pdirp)`: lists a directory (the
/// listing is taken now; `.` and `..` come first, then the names in byte order).
///
/// # Safety
/// `path` is NULL or NUL-terminated; `pdirp` is writable.
#[no_mangle]
pub unsafe extern "C" fn plfs_opendir_c(path: *const c_char, pdirp: *mut *mut PlfsDirpC) -> PlfsError {
    guard("plfs_opendir_c", || {
        non_null(pdirp, "pdirp")?;
        let p = plfs()?;
        // SAFETY: forwarded caller contract.
        let path = unsafe { plfs_path(p, path, "path") }?;
        let entries = p.readdir(&path)?;
        let mut names: Vec<Vec<u8>> = vec![b".".to_vec(), b"..".to_vec()];
        names.extend(entries.into_iter().map(|e| e.name.as_bytes().to_vec()));
        let (key, _) = DIRS.insert(Mutex::new(Dir { path, names, next: 0 }));
        // SAFETY: pdirp is writable (caller's contract).
        unsafe { put(pdirp, key as *mut PlfsDirpC, "pdirp") }
    })
}

/// `plfs_error_t plfs_readdir_c(Plfs_dirp *dirp, char *dname, size_t bufsz)`: copies the next
/// name, NUL-terminated, into `dname`; an empty string marks the end. A name that does not fit
/// is `PLFS_ENOMEM` (as in PLFS 2.5) and is returned again by the next call.
///
/// # Safety
/// `dname` is valid for `bufsz` bytes of writes.
#[no_mangle]
pub unsafe extern "C" fn plfs_readdir_c(dirp: *mut PlfsDirpC, dname: *mut c_char, bufsz: libc::size_t) -> PlfsError {
    guard("plfs_readdir_c", || {
        non_null(dname, "dname")?;
        if bufsz == 0 || bufsz > isize::MAX as usize {
            return Err(Failure::new(PlfsError::EINVAL, format!("bad bufsz {bufsz}")));
        }
        let d = DIRS.get(dirp as usize)?;
        let mut d = d.lock().unwrap_or_else(|p| p.into_inner());
        // SAFETY: dname is non-NULL and valid for bufsz bytes (caller's contract).
        let dst = unsafe { std::slice::from_raw_parts_mut(dname.cast::<u8>(), bufsz) };
        dst[0] = 0;
        let Some(name) = d.names.get(d.next) else { return Ok(()) };
        if name.len() >= bufsz {
            let msg = format!(
                "{}: entry of {} bytes does not fit in {bufsz}",
                d.path.display(),
                name.len()
            );
            return Err(Failure::new(PlfsError::ENOMEM, msg));
        }
        dst[..name.len()].copy_from_slice(name);
        dst[name.len()] = 0;
        d.next += 1;
        Ok(())
    })
}

/// `plfs_error_t plfs_closedir_c(Plfs_dirp *dirp)`.
#[no_mangle]
pub extern "C" fn plfs_closedir_c(dirp: *mut PlfsDirpC) -> PlfsError {
    guard("plfs_closedir_c", || {
        DIRS.remove(dirp as usize)
            .map(|_| ())
            .ok_or_else(|| Failure::new(PlfsError::EBADF, "Plfs_dirp is not open"))
    })
}

/// `const char *plfs_version(void)`: this library's version, e.g. "0.1.0" (static).
#[no_mangle]
pub extern "C" fn plfs_version() -> *const c_char {
    const V: &CStr = match CStr::from_bytes_with_nul(concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes()) {
        Ok(v) => v,
        Err(_) => panic!("version contains a NUL"),
    };
    V.as_ptr()
}

/// `const char *plfs_last_error(void)` (an extension): the message of the last call that failed
/// on this thread, naming the call and the path, e.g. `plfs_open: /mnt/plfs/x: no such file or
/// directory`. Never NULL; valid until this thread's next failing call.
#[no_mangle]
pub extern "C" fn plfs_last_error() -> *const c_char {
    guard_value(c"".as_ptr(), last_error_ptr)
}
