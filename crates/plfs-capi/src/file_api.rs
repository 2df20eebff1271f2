//! Calls on open files: `plfs_open`, `plfs_close`, `plfs_read`, `plfs_write`, `plfs_sync`,
//! `plfs_trunc`, `plfs_getattr`, `plfs_query`, `plfs_flatten_index`.

use crate::error::PlfsError;
use crate::handles::{add_written, Fd, PlfsFdC, FDS};
use crate::instance::{guard, non_null, offset, plfs, plfs_path, put, put_opt, CResult, Failure};
use crate::stat::fill_stat;
use plfs_core::OpenFlags;
use std::ffi::{c_char, c_int, c_void};
use std::path::PathBuf;
use std::sync::atomic::Ordering;

fn fd_of(fd: *mut PlfsFdC) -> CResult<std::sync::Arc<Fd>> {
    FDS.get(fd as usize)
}

/// `plfs_error_t plfs_open(Plfs_fd **pfd, const char *path, int flags, pid_t pid, mode_t mode,
/// Plfs_open_opt *open_opt)`.
///
/// With `*pfd == NULL` opens the file and stores a new handle in `*pfd`. With `*pfd` an open
/// handle, adds a reference to it (`path` may then be NULL); each reference is released by one
/// `plfs_close`. `pid` names the writer (e.g. the MPI rank). `open_opt` may be NULL; its fields
/// are accepted and ignored.
///
/// # Safety
/// `pfd` is NULL or valid for reads and writes; `path` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn plfs_open(
    pfd: *mut *mut PlfsFdC,
    path: *const c_char,
    flags: c_int,
    pid: libc::pid_t,
    mode: libc::mode_t,
    _open_opt: *mut c_void,
) -> PlfsError {
    guard("plfs_open", || {
        non_null(pfd, "pfd")?;
        let p = plfs()?;
        let oflags = OpenFlags::from_posix(flags)?;
        // SAFETY: pfd is non-NULL and readable by the caller's contract.
        let existing = unsafe { pfd.read() };
        if !existing.is_null() {
            fd_of(existing)?.add_ref(p, oflags, mode, pid as u32)?;
            return Ok(());
        }
        // SAFETY: path is NULL or NUL-terminated (caller's contract).
        let path = unsafe { plfs_path(p, path, "path") }?;
        let fd = Fd::open(p, path, oflags, mode, pid as u32)?;
        let (key, _) = FDS.insert(fd);
        // SAFETY: as above, pfd is writable.
        unsafe { pfd.write(key as *mut PlfsFdC) };
        Ok(())
    })
}

/// `plfs_error_t plfs_close(Plfs_fd *fd, pid_t pid, uid_t uid, int open_flags,
/// Plfs_close_opt *close_opt, int *num_ref)`.
///
/// Releases one reference (`open_flags` are the flags it was opened with) and stores the
/// references left in `*num_ref` (may be NULL). At 0 the file is closed (every writer's index
/// is written) and `fd` becomes invalid.
///
/// # Safety
/// `num_ref` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn plfs_close(
    fd: *mut PlfsFdC,
    _pid: libc::pid_t,
    _uid: libc::uid_t,
    open_flags: c_int,
    _close_opt: *mut c_void,
    num_ref: *mut c_int,
) -> PlfsError {
    guard("plfs_close", || {
        let f = fd_of(fd)?;
        let oflags = OpenFlags::from_posix(open_flags).unwrap_or_default();
        let mut st = f.write();
        st.refs = st.refs.saturating_sub(1);
        if oflags.write {
            st.writers = st.writers.saturating_sub(1);
        }
        if oflags.read {
            st.readers = st.readers.saturating_sub(1);
        }
        let left = st.refs;
        // SAFETY: num_ref is NULL or writable (caller's contract).
        unsafe { put_opt(num_ref, c_int::try_from(left).unwrap_or(c_int::MAX)) };
        if left > 0 {
            return Ok(());
        }
        FDS.remove(fd as usize);
        let mut first = Ok(());
        for h in st.handles.drain(..) {
            if let Err(e) = h.close() {
                if first.is_ok() {
                    first = Err(Failure::from(e));
                }
            }
        }
        first
    })
}

/// `plfs_error_t plfs_read(Plfs_fd *fd, char *buf, size_t size, off_t offset, ssize_t *bytes_read)`.
/// Reads up to `size` bytes; fewer only at end of file. Holes read as zeros.
///
/// # Safety
/// `buf` is valid for `size` bytes of writes; `bytes_read` is writable.
#[no_mangle]
pub unsafe extern "C" fn plfs_read(
    fd: *mut PlfsFdC,
    buf: *mut c_char,
    size: libc::size_t,
    off: libc::off_t,
    bytes_read: *mut libc::ssize_t,
) -> PlfsError {
    guard("plfs_read", || {
        non_null(bytes_read, "bytes_read")?;
        let f = fd_of(fd)?;
        let off = offset(off, "offset")?;
        check_len(size)?;
        let n = if size == 0 {
            0
        } else {
            non_null(buf, "buf")?;
            // SAFETY: buf is non-NULL and valid for `size` bytes (caller's contract); size <= isize::MAX.
            let dst = unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), size) };
            f.read().reader()?.read(dst, off)?
        };
        // SAFETY: checked non-NULL above; writable by contract.
        unsafe { put(bytes_read, n as libc::ssize_t, "bytes_read") }
    })
}

/// `plfs_error_t plfs_write(Plfs_fd *fd, const char *buf, size_t size, off_t offset, pid_t pid,
/// ssize_t *bytes_written)`. Writes as writer `pid`: each pid has its own data and index log.
///
/// # Safety
/// `buf` is valid for `size` bytes of reads; `bytes_written` is writable.
#[no_mangle]
pub unsafe extern "C" fn plfs_write(
    fd: *mut PlfsFdC,
    buf: *const c_char,
    size: libc::size_t,
    off: libc::off_t,
    pid: libc::pid_t,
    bytes_written: *mut libc::ssize_t,
) -> PlfsError {
    guard("plfs_write", || {
        non_null(bytes_written, "bytes_written")?;
        let f = fd_of(fd)?;
        let off = offset(off, "offset")?;
        check_len(size)?;
        let n = if size == 0 {
            0
        } else {
            non_null(buf, "buf")?;
            // SAFETY: buf is non-NULL and valid for `size` bytes (caller's contract); size <= isize::MAX.
            let src = unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), size) };
            let n = f.read().writer()?.write_as(src, off, pid as u32)?;
            add_written(&f, n);
            n
        };
        // SAFETY: checked non-NULL above; writable by contract.
        unsafe { put(bytes_written, n as libc::ssize_t, "bytes_written") }
    })
}

fn check_len(size: usize) -> CResult<()> {
    if size > isize::MAX as usize {
        return Err(Failure::new(
            PlfsError::EINVAL,
            format!("size {size} is larger than SSIZE_MAX"),
        ));
    }
    Ok(())
}

/// `plfs_error_t plfs_sync(Plfs_fd *fd)`: makes every write through `fd` durable and visible to
/// other processes that (re)open the file.
#[no_mangle]
pub extern "C" fn plfs_sync(fd: *mut PlfsFdC) -> PlfsError {
    guard("plfs_sync", || {
        let f = fd_of(fd)?;
        let st = f.read();
        st.any()?;
        for h in &st.handles {
            h.sync()?;
        }
        Ok(())
    })
}

/// `plfs_error_t plfs_trunc(Plfs_fd *fd, const char *path, off_t offset, int open_file)`.
/// Truncates (or extends with zeros) to `offset`: through `fd` when it is non-NULL, else by
/// `path`. `open_file` is accepted and ignored.
///
/// # Safety
/// `path` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn plfs_trunc(
    fd: *mut PlfsFdC,
    path: *const c_char,
    off: libc::off_t,
    _open_file: c_int,
) -> PlfsError {
    guard("plfs_trunc", || {
        let p = plfs()?;
        let size = offset(off, "length")?;
        if fd.is_null() {
            // SAFETY: path is NULL or NUL-terminated (caller's contract).
            let path = unsafe { plfs_path(p, path, "path") }?;
            return Ok(p.truncate(&path, size)?);
        }
        let f = fd_of(fd)?;
        let st = f.read();
        match st.writer() {
            Ok(h) => Ok(h.truncate(size)?),
            // A handle open only for reading: truncate the file it names (as FUSE's truncate does).
            Err(_) => {
                st.any()?;
                Ok(p.truncate(&f.path, size)?)
            }
        }
    })
}

/// `plfs_error_t plfs_getattr(Plfs_fd *fd, const char *path, struct stat *st, int size_only)`.
/// With a non-NULL `fd` the size includes this process's writes not yet synced. Every field is
/// filled even when `size_only` is set.
///
/// # Safety
/// `path` is NULL or NUL-terminated; `st` is writable.
#[no_mangle]
pub unsafe extern "C" fn plfs_getattr(
    fd: *mut PlfsFdC,
    path: *const c_char,
    st: *mut libc::stat,
    _size_only: c_int,
) -> PlfsError {
    guard("plfs_getattr", || {
        non_null(st, "st")?;
        let p = plfs()?;
        let s = if fd.is_null() {
            // SAFETY: path is NULL or NUL-terminated (caller's contract).
            let path = unsafe { plfs_path(p, path, "path") }?;
            p.stat(&path)?
        } else {
            let f = fd_of(fd)?;
            let g = f.read();
            p.fstat(g.any()?)?
        };
        // SAFETY: st is non-NULL and writable (caller's contract).
        unsafe { st.write(fill_stat(&s)) };
        Ok(())
    })
}

/// `plfs_error_t plfs_query(Plfs_fd *fd, size_t *writers, size_t *readers, size_t *bytes_written,
/// int *lazy_stat)`: the open references for writing and reading, the bytes written through
/// `fd`, and `lazy_stat` (always 0: close ignores `Plfs_close_opt` metadata, so callers need not
/// gather it). Any out-pointer may be NULL.
///
/// # Safety
/// Each out-pointer is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn plfs_query(
    fd: *mut PlfsFdC,
    writers: *mut libc::size_t,
    readers: *mut libc::size_t,
    bytes_written: *mut libc::size_t,
    lazy_stat: *mut c_int,
) -> PlfsError {
    guard("plfs_query", || {
        let f = fd_of(fd)?;
        let st = f.read();
        st.any()?;
        // SAFETY: each pointer is NULL or writable (caller's contract).
        unsafe {
            put_opt(writers, st.writers);
            put_opt(readers, st.readers);
            put_opt(bytes_written, f.bytes_written.load(Ordering::Relaxed) as usize);
            put_opt(lazy_stat, 0);
        }
        Ok(())
    })
}

/// `plfs_error_t plfs_flatten_index(Plfs_fd *fd, const char *path)`: writes a flattened index so
/// later opens read one file instead of every index log. Uses `path` if non-NULL, else the path
/// `fd` was opened with. Fails with `PLFS_EBUSY` while any writer has the file open (including
/// through `fd`).
///
/// # Safety
/// `path` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn plfs_flatten_index(fd: *mut PlfsFdC, path: *const c_char) -> PlfsError {
    guard("plfs_flatten_index", || {
        let p = plfs()?;
        let path: PathBuf = if !path.is_null() {
            // SAFETY: path is non-NULL and NUL-terminated (caller's contract).
            unsafe { plfs_path(p, path, "path") }?
        } else {
            fd_of(fd)?.path.clone()
        };
        // stat first, so a missing file is PLFS_ENOENT (`Plfs::container` says EINVAL).
        p.stat(&path)?;
        plfs_core::tools::flatten(p, &path)?;
        Ok(())
    })
}
