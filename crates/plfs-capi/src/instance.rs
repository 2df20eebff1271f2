//! The process-wide [`Plfs`] instance behind every C call, the panic guard every export runs in,
//! and the helpers that turn C arguments into Rust values (paths, out-pointers).
//!
//! Invariant: no panic unwinds out of this library. Every `extern "C"` function runs its body in
//! [`guard`], which turns a panic into `PLFS_EIO`.

use crate::error::{to_plfs_error, PlfsError};
use plfs_core::{Error, Plfs};
use std::cell::RefCell;
use std::ffi::{c_char, CStr, CString};
use std::os::unix::ffi::OsStrExt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The instance, built at the first call from [`plfs_core::Config::load`]; or the reason it could
/// not be built (then every call fails with `PLFS_EINVAL`).
static INSTANCE: OnceLock<Result<Plfs, String>> = OnceLock::new();

thread_local! {
    /// The message of the last error a call on this thread returned (see `plfs_last_error`).
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// The result type of the C API internals: a code and, for the caller's diagnostics, a message.
pub type CResult<T> = Result<T, Failure>;

/// A failed call: the code returned to C, and the message stored for `plfs_last_error`.
#[derive(Debug)]
pub struct Failure {
    /// What C sees.
    pub code: PlfsError,
    /// What `plfs_last_error` returns.
    pub msg: String,
}

impl Failure {
    /// A failure with an explicit code.
    pub fn new(code: PlfsError, msg: impl Into<String>) -> Failure {
        Failure { code, msg: msg.into() }
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        Failure {
            code: to_plfs_error(&e),
            msg: e.to_string(),
        }
    }
}

/// The process-wide instance, creating it on first use. A configuration error is printed to
/// stderr once (when it first happens) and then returned to every call as `PLFS_EINVAL`.
pub fn plfs() -> CResult<&'static Plfs> {
    let r = INSTANCE.get_or_init(|| {
        let built = Plfs::from_env().map_err(|e| e.to_string());
        if let Err(msg) = &built {
            eprintln!("plfs: {msg}");
        }
        built
    });
    r.as_ref().map_err(|msg| Failure::new(PlfsError::EINVAL, msg.clone()))
}

/// Runs an export's body, catching panics (`PLFS_EIO`) and recording the message of a failure
/// for `plfs_last_error`.
pub fn guard(name: &str, f: impl FnOnce() -> CResult<()>) -> PlfsError {
    let r = catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| {
        let what = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        Err(Failure::new(PlfsError::EIO, format!("internal error (panic): {what}")))
    });
    match r {
        Ok(()) => PlfsError::SUCCESS,
        Err(f) => {
            set_last_error(&format!("{name}: {}", f.msg));
            f.code
        }
    }
}

/// Like [`guard`] for exports that return a plain value; a panic returns `on_panic`.
pub fn guard_value<T>(on_panic: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(on_panic)
}

fn set_last_error(msg: &str) {
    let c = CString::new(msg.replace('\0', "\\0")).unwrap_or_default();
    LAST_ERROR.with(|l| *l.borrow_mut() = c);
}

/// A pointer to this thread's last error message; valid until this thread's next failing call.
pub fn last_error_ptr() -> *const c_char {
    LAST_ERROR.with(|l| l.borrow().as_ptr())
}

/// Fails with `PLFS_EFAULT` when a required pointer argument is NULL.
pub fn non_null<T>(p: *const T, what: &str) -> CResult<()> {
    if p.is_null() {
        Err(Failure::new(PlfsError::EFAULT, format!("{what} is NULL")))
    } else {
        Ok(())
    }
}

/// The bytes of a C string argument (`PLFS_EFAULT` if NULL).
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string that outlives the call.
pub unsafe fn c_str<'a>(p: *const c_char, what: &str) -> CResult<&'a [u8]> {
    non_null(p, what)?;
    // SAFETY: non-NULL, and the caller guarantees a NUL-terminated string valid for the call.
    Ok(unsafe { CStr::from_ptr(p) }.to_bytes())
}

/// A logical path argument, made absolute: a leading `plfs:` (the MPI-IO prefix, stripped by
/// PLFS 2.5 too) is removed, and a relative path is taken relative to the working directory.
///
/// # Safety
/// As [`c_str`].
pub unsafe fn c_path(p: *const c_char, what: &str) -> CResult<PathBuf> {
    // SAFETY: forwarded from our caller.
    let bytes = unsafe { c_str(p, what) }?;
    let bytes = bytes.strip_prefix(b"plfs:").unwrap_or(bytes);
    if bytes.is_empty() {
        return Err(Failure::new(PlfsError::ENOENT, format!("{what} is empty")));
    }
    let path = Path::new(std::ffi::OsStr::from_bytes(bytes));
    if path.is_absolute() {
        return Ok(path.to_path_buf());
    }
    let cwd = std::env::current_dir().map_err(|e| {
        let code = PlfsError::from_errno(e.raw_os_error().unwrap_or(libc::EIO));
        Failure::new(code, format!("{}: cannot resolve a relative path: {e}", path.display()))
    })?;
    Ok(cwd.join(path))
}

/// A path argument that must lie under a PLFS mount point. As in PLFS 2.5, a path under no mount
/// point is `PLFS_EINVAL`.
///
/// # Safety
/// As [`c_str`].
pub unsafe fn plfs_path(plfs: &Plfs, p: *const c_char, what: &str) -> CResult<PathBuf> {
    // SAFETY: forwarded from our caller.
    let path = unsafe { c_path(p, what) }?;
    if !plfs.is_plfs_path(&path) {
        return Err(Failure::new(
            PlfsError::EINVAL,
            format!("{}: not under a PLFS mount point", path.display()),
        ));
    }
    Ok(path)
}

/// Stores `v` through an optional out-pointer (NULL: nothing is stored).
///
/// # Safety
/// `p` is NULL or valid for a write of `T`.
pub unsafe fn put_opt<T>(p: *mut T, v: T) {
    if !p.is_null() {
        // SAFETY: non-NULL and, by the caller's contract, writable.
        unsafe { p.write(v) };
    }
}

/// Stores `v` through a required out-pointer (`PLFS_EFAULT` if NULL).
///
/// # Safety
/// As [`put_opt`].
pub unsafe fn put<T>(p: *mut T, v: T, what: &str) -> CResult<()> {
    non_null(p, what)?;
    // SAFETY: checked non-NULL; writable by the caller's contract.
    unsafe { p.write(v) };
    Ok(())
}

/// A non-negative `off_t` argument as u64 (`PLFS_EINVAL` otherwise).
pub fn offset(off: libc::off_t, what: &str) -> CResult<u64> {
    u64::try_from(off).map_err(|_| Failure::new(PlfsError::EINVAL, format!("negative {what} {off}")))
}
