//! The rest of the PLFS 2.5 API: `plfs_getxattr`, `plfs_setxattr`, `plfs_flush_writes`,
//! `plfs_invalidate_read_cache`, `plfs_get_fileinfo`, `plfs_expand_path`, `plfs_gethostname`.
//! (`plfs_readdir`, whose argument is a C++ container, is an inline function in plfs.h over
//! `plfs_opendir_c` / `plfs_readdir_c`.)

use crate::error::PlfsError;
use crate::handles::{PlfsFdC, FDS};
use crate::instance::{c_str, guard, guard_value, non_null, plfs, plfs_path, put, put_opt, Failure};
use plfs_core::config::Workload;
use plfs_core::OpenFlags;
use std::ffi::{c_char, c_int, c_void, CString};
use std::os::unix::ffi::OsStrExt;
use std::sync::OnceLock;

/// Index types of `plfs_get_fileinfo` (PLFS 2.5's `CI_*`).
pub const CI_UNKNOWN: c_int = 0;
/// Byte-range index: one record per write.
pub const CI_BYTERANGE: c_int = 1;
/// Pattern index: regular runs of writes kept as one record each.
pub const CI_PATTERN: c_int = 2;
/// MDHIM index (never produced here).
pub const CI_MDHIM: c_int = 3;

/// `plfs_error_t plfs_getxattr(Plfs_fd *fd, void *value, const char *key, size_t len)`: copies
/// `len` bytes of attribute `key` into `value`, zero-filled past the stored value's end (as PLFS
/// 2.5). `PLFS_ENOENT` if the file has no such attribute; `PLFS_ENOTSUP` for N-N and 1-N files.
///
/// # Safety
/// `value` is valid for `len` bytes of writes; `key` is NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn plfs_getxattr(
    fd: *mut PlfsFdC,
    value: *mut c_void,
    key: *const c_char,
    len: libc::size_t,
) -> PlfsError {
    guard("plfs_getxattr", || {
        // SAFETY: key is NULL or NUL-terminated (caller's contract).
        let key = unsafe { c_str(key, "key") }?;
        if len > 0 {
            non_null(value, "value")?;
        }
        let f = FDS.get(fd as usize)?;
        let st = f.read();
        let v = st.any()?.getxattr(key)?;
        if len > 0 {
            // SAFETY: value is non-NULL and valid for len bytes (caller's contract).
            let dst = unsafe { std::slice::from_raw_parts_mut(value.cast::<u8>(), len) };
            let n = v.len().min(len);
            dst[..n].copy_from_slice(&v[..n]);
            dst[n..].fill(0);
        }
        Ok(())
    })
}

/// `plfs_error_t plfs_setxattr(Plfs_fd *fd, const void *value, const char *key, size_t len)`:
/// sets attribute `key` (1 to 126 bytes) to the `len` bytes at `value` (at most 64 KiB); stored
/// in the container (docs/format.md §12), so every process and later open sees it.
/// `PLFS_ENOTSUP` for N-N and 1-N files, `PLFS_EROFS` for files written by PLFS 2.x.
///
/// # Safety
/// `value` is valid for `len` bytes of reads; `key` is NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn plfs_setxattr(
    fd: *mut PlfsFdC,
    value: *const c_void,
    key: *const c_char,
    len: libc::size_t,
) -> PlfsError {
    guard("plfs_setxattr", || {
        // SAFETY: key is NULL or NUL-terminated (caller's contract).
        let key = unsafe { c_str(key, "key") }?;
        let v: &[u8] = if len == 0 {
            &[]
        } else {
            non_null(value, "value")?;
            if len > plfs_core::MAX_XATTR_VALUE {
                return Err(Failure::new(
                    PlfsError::EINVAL,
                    format!("value of {len} bytes is too large"),
                ));
            }
            // SAFETY: value is non-NULL and valid for len bytes of reads (caller's contract).
            unsafe { std::slice::from_raw_parts(value.cast::<u8>(), len) }
        };
        let f = FDS.get(fd as usize)?;
        let st = f.read();
        st.any()?.setxattr(key, v)?;
        Ok(())
    })
}

/// `plfs_error_t plfs_flush_writes(const char *dir)`: makes the buffered writes of every file
/// this process has open at or under `dir` visible to other processes (no fsync: see
/// `plfs_sync`). Files are visible at close anyway; this is for readers of files still open.
///
/// # Safety
/// `dir` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn plfs_flush_writes(dir: *const c_char) -> PlfsError {
    guard("plfs_flush_writes", || {
        let p = plfs()?;
        // SAFETY: forwarded caller contract.
        let path = unsafe { plfs_path(p, dir, "dir") }?;
        Ok(p.flush_writes(&path)?)
    })
}

/// `plfs_error_t plfs_invalidate_read_cache(const char *dir)`: drops this process's cached
/// indexes of files at or under `dir`, so that the next read through any open handle sees
/// what other processes made visible since.
///
/// # Safety
/// `dir` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn plfs_invalidate_read_cache(dir: *const c_char) -> PlfsError {
    guard("plfs_invalidate_read_cache", || {
        let p = plfs()?;
        // SAFETY: forwarded caller contract.
        let path = unsafe { plfs_path(p, dir, "dir") }?;
        Ok(p.invalidate_read_cache(&path)?)
    })
}

/// The file type of the mount point holding `path` (0 CONTAINER, 1 FLAT_FILE, 2 SMALL_FILE,
/// 3 PFT_UNKNOWN) and, under a mount point, the path and its workload.
///
/// # Safety
/// `path` is NULL or NUL-terminated.
pub unsafe fn mount_filetype(path: *const c_char) -> (c_int, Option<(std::path::PathBuf, Workload)>) {
    let Ok(p) = plfs() else { return (3, None) };
    // SAFETY: forwarded caller contract.
    let Ok(path) = (unsafe { plfs_path(p, path, "path") }) else {
        return (3, None);
    };
    let Some((m, _)) = p.config().mount_for(&path) else {
        return (3, None);
    };
    let ft = match m.workload {
        Workload::SharedFile => 0,
        Workload::FilePerProc => 1,
        Workload::SmallFile => 2,
    };
    let w = m.workload;
    (ft, Some((path, w)))
}

/// `plfs_filetype plfs_get_fileinfo(const char *path, int *ixtypep)`: the file type of the
/// mount point holding `path` (`CONTAINER`, `FLAT_FILE`, `SMALL_FILE`; `PFT_UNKNOWN` outside any)
/// and, through `ixtypep` (may be NULL), the index type of an N-1 file: `CI_PATTERN` when its
/// index holds pattern-compressed runs, `CI_BYTERANGE` otherwise (also for files not yet
/// written and files written by PLFS 2.x); `CI_UNKNOWN` for other file types or when the file
/// cannot be opened for reading.
///
/// # Safety
/// `path` is NULL or NUL-terminated; `ixtypep` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn plfs_get_fileinfo(path: *const c_char, ixtypep: *mut c_int) -> c_int {
    guard_value(3, || {
        // SAFETY: forwarded caller contract.
        let (ft, found) = unsafe { mount_filetype(path) };
        let mut ix = CI_UNKNOWN;
        if let (Some((path, Workload::SharedFile)), Ok(p)) = (found, plfs()) {
            ix = match p.stat(&path) {
                Err(e) if e.is_not_found() => CI_BYTERANGE,
                Err(_) => CI_UNKNOWN,
                Ok(_) => {
                    let ro = OpenFlags {
                        read: true,
                        ..Default::default()
                    };
                    match p.open(&path, ro, 0, 0).and_then(|f| f.index_stats()) {
                        Ok(s) if s.patterns > 0 => CI_PATTERN,
                        Ok(_) => CI_BYTERANGE,
                        Err(_) => CI_UNKNOWN,
                    }
                }
            };
        }
        // SAFETY: ixtypep is NULL or writable (caller's contract).
        unsafe { put_opt(ixtypep, ix) };
        ft
    })
}

/// `plfs_error_t plfs_expand_path(const char *logical, char **physical, void **pmountp,
/// void **pbackp)`: the backend path of `logical`'s container (where it is, or where it would
/// be created), in a `malloc`ed string the caller frees. `*pmountp` and `*pbackp` (each may be
/// NULL) receive opaque identifiers of the mount point and the backend, equal for equal mounts
/// and backends and valid for the life of the process; they are not to be dereferenced.
///
/// # Safety
/// `logical` is NULL or NUL-terminated; `physical` is writable; `pmountp` and `pbackp` are NULL
/// or writable.
#[no_mangle]
pub unsafe extern "C" fn plfs_expand_path(
    logical: *const c_char,
    physical: *mut *mut c_char,
    pmountp: *mut *mut c_void,
    pbackp: *mut *mut c_void,
) -> PlfsError {
    guard("plfs_expand_path", || {
        non_null(physical, "physical")?;
        let p = plfs()?;
        // SAFETY: forwarded caller contract.
        let path = unsafe { plfs_path(p, logical, "logical") }?;
        let (physical_path, m, b) = p.expand_path(&path)?;
        let mount = p
            .mounts()
            .nth(m)
            .ok_or_else(|| Failure::new(PlfsError::EINVAL, "no such mount"))?;
        let bytes = physical_path.as_os_str().as_bytes().to_vec();
        // SAFETY: malloc of len+1 bytes; checked for NULL below.
        let out = unsafe { libc::malloc(bytes.len() + 1) }.cast::<u8>();
        if out.is_null() {
            return Err(Failure::new(PlfsError::ENOMEM, "malloc failed"));
        }
        // SAFETY: out holds len+1 bytes; the source does not overlap a fresh allocation.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), out, bytes.len());
            out.add(bytes.len()).write(0);
        }
        // SAFETY: physical is non-NULL and writable; pmountp/pbackp are NULL or writable.
        unsafe {
            put(physical, out.cast::<c_char>(), "physical")?;
            put_opt(pmountp, std::sync::Arc::as_ptr(mount).cast_mut().cast::<c_void>());
            put_opt(
                pbackp,
                std::sync::Arc::as_ptr(&mount.canonical[b]).cast_mut().cast::<c_void>(),
            );
        }
        Ok(())
    })
}

/// The host name, NUL-terminated, for the life of the process.
static HOSTNAME: OnceLock<CString> = OnceLock::new();

/// `plfs_error_t plfs_gethostname(char **hname)`: this host's name as PLFS uses it in log names
/// (`$PLFS_HOSTNAME` if set, else the kernel's node name), in a static string the caller must
/// not free (as in PLFS 2.5).
///
/// # Safety
/// `hname` is writable.
#[no_mangle]
pub unsafe extern "C" fn plfs_gethostname(hname: *mut *mut c_char) -> PlfsError {
    guard("plfs_gethostname", || {
        let h = HOSTNAME.get_or_init(|| CString::new(plfs_core::hostname().replace('\0', "_")).unwrap_or_default());
        // SAFETY: hname is writable (caller's contract); the string lives in a static.
        unsafe { put(hname, h.as_ptr().cast_mut(), "hname") }
    })
}
