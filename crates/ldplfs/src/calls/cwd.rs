//! realpath and the working directory: chdir/fchdir into a PLFS directory, getcwd reporting the
//! logical path.

use crate::calls::open::opened;
use crate::fd::conf;
use crate::fd::entry::Kind;
use crate::fd::paths::{self, classify_c, follow, Followed, Target};
use crate::fd::table::ours;
use crate::file::init::enter;
use crate::file::open::open_plfs;
use crate::rt::errno::{Errno, Res};
use crate::rt::guard::run;
use libc::{c_char, c_int, size_t};
use plfs_core::FileKind;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

fn plfs() -> Res<&'static plfs_core::Plfs> {
    conf::plfs()
}

/// Copies `s` into `buf` (or a malloc'd buffer when `buf` is NULL).
fn out_string(s: &[u8], buf: *mut c_char, size: Option<usize>) -> Res<*mut c_char> {
    let need = s.len() + 1;
    let dst = if buf.is_null() {
        // SAFETY: malloc of a positive size.
        let p = unsafe { libc::malloc(need.max(size.unwrap_or(0))) }.cast::<c_char>();
        if p.is_null() {
            return Err(Errno(libc::ENOMEM));
        }
        p
    } else {
        if size.is_some_and(|n| n < need) {
            return Err(Errno(libc::ERANGE));
        }
        buf
    };
    // SAFETY: `dst` holds at least `need` bytes.
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr(), dst.cast::<u8>(), s.len());
        *dst.add(s.len()) = 0;
    }
    Ok(dst)
}

fn realpath_p(p: PathBuf, buf: *mut c_char) -> Res<*mut c_char> {
    match follow(p)? {
        Followed::Plfs(p, Some(_)) => out_string(p.as_os_str().as_bytes(), buf, None),
        Followed::Plfs(_, None) => Err(Errno(libc::ENOENT)),
        Followed::Real(c) => {
            let r = crate::real!(realpath(c.as_ptr(), buf): fn(*const c_char, *mut c_char) -> *mut c_char);
            if r.is_null() {
                Err(Errno(crate::rt::errno::errno()))
            } else {
                Ok(r)
            }
        }
    }
}

/// realpath(3) (links inside the mount are followed in the final component; the rest is lexical).
#[no_mangle]
pub unsafe extern "C" fn realpath(path: *const c_char, buf: *mut c_char) -> *mut c_char {
    if let Some(_busy) = enter() {
        // SAFETY: the caller's C string.
        match unsafe { classify_c(libc::AT_FDCWD, path) } {
            Target::Plfs(p) => return run(|| realpath_p(p, buf)),
            Target::Real(c) => {
                return crate::real!(realpath(c.as_ptr(), buf): fn(*const c_char, *mut c_char) -> *mut c_char)
            }
            Target::Pass => {}
        }
    }
    crate::real!(realpath(path, buf): fn(*const c_char, *mut c_char) -> *mut c_char)
}

/// _FORTIFY_SOURCE realpath.
#[no_mangle]
pub unsafe extern "C" fn __realpath_chk(path: *const c_char, buf: *mut c_char, _len: size_t) -> *mut c_char {
    // SAFETY: forwarded caller arguments.
    unsafe { realpath(path, buf) }
}

/// canonicalize_file_name(3).
#[no_mangle]
pub unsafe extern "C" fn canonicalize_file_name(path: *const c_char) -> *mut c_char {
    // SAFETY: forwarded caller arguments.
    unsafe { realpath(path, std::ptr::null_mut()) }
}

/// chdir into PLFS directory `p`: the kernel cwd becomes its backend directory.
fn chdir_p(p: PathBuf) -> Res<c_int> {
    let p = match follow(p)? {
        Followed::Plfs(p, Some(s)) if s.kind == FileKind::Dir => p,
        Followed::Plfs(_, Some(_)) => return Err(Errno(libc::ENOTDIR)),
        Followed::Plfs(_, None) => return Err(Errno(libc::ENOENT)),
        Followed::Real(c) => {
            return match crate::real!(chdir(c.as_ptr()): fn(*const c_char) -> c_int) {
                0 => {
                    paths::set_real_cwd();
                    Ok(0)
                }
                _ => Err(Errno(crate::rt::errno::errno())),
            }
        }
    };
    for d in plfs()?.backend_dirs(&p)? {
        let dir = paths::cstring(&d)?;
        // SAFETY: a valid C string.
        if unsafe { crate::raw_syscall!(libc::SYS_chdir, dir.as_ptr()) } == 0 {
            paths::set_logical_cwd(p);
            return Ok(0);
        }
    }
    Err(Errno(libc::ENOENT))
}

/// chdir(2).
#[no_mangle]
pub unsafe extern "C" fn chdir(path: *const c_char) -> c_int {
    if let Some(_busy) = enter() {
        // SAFETY: the caller's C string.
        let t = unsafe { classify_c(libc::AT_FDCWD, path) };
        let r = match t {
            Target::Plfs(p) => return run(|| chdir_p(p)),
            Target::Real(c) => crate::real!(chdir(c.as_ptr()): fn(*const c_char) -> c_int),
            Target::Pass => crate::real!(chdir(path): fn(*const c_char) -> c_int),
        };
        if r == 0 && conf::enabled() {
            paths::set_real_cwd();
        }
        return r;
    }
    crate::real!(chdir(path): fn(*const c_char) -> c_int)
}

/// fchdir(2).
#[no_mangle]
pub extern "C" fn fchdir(fd: c_int) -> c_int {
    if let Some(_busy) = enter() {
        if let Some(e) = ours(fd) {
            if e.kind == Kind::File {
                return run(|| Err::<c_int, _>(Errno(libc::ENOTDIR)));
            }
            return run(|| chdir_p(e.path.clone()));
        }
        let r = crate::real!(fchdir(fd): fn(c_int) -> c_int);
        if r == 0 && conf::enabled() {
            paths::set_real_cwd();
        }
        return r;
    }
    crate::real!(fchdir(fd): fn(c_int) -> c_int)
}

/// getcwd(3): the logical directory when inside a mount.
#[no_mangle]
pub unsafe extern "C" fn getcwd(buf: *mut c_char, size: size_t) -> *mut c_char {
    if let Some(_busy) = enter() {
        if let Some(l) = paths::logical_cwd() {
            return run(|| {
                if !buf.is_null() && size == 0 {
                    return Err(Errno(libc::EINVAL));
                }
                out_string(l.as_os_str().as_bytes(), buf, Some(size))
            });
        }
    }
    crate::real!(getcwd(buf, size): fn(*mut c_char, size_t) -> *mut c_char)
}

/// _FORTIFY_SOURCE getcwd.
#[no_mangle]
pub unsafe extern "C" fn __getcwd_chk(buf: *mut c_char, size: size_t, _buflen: size_t) -> *mut c_char {
    // SAFETY: forwarded caller arguments.
    unsafe { getcwd(buf, size) }
}

/// get_current_dir_name(3).
#[no_mangle]
pub unsafe extern "C" fn get_current_dir_name() -> *mut c_char {
    if let Some(_busy) = enter() {
        if let Some(l) = paths::logical_cwd() {
            return run(|| out_string(l.as_os_str().as_bytes(), std::ptr::null_mut(), None));
        }
    }
    crate::real!(get_current_dir_name(): fn() -> *mut c_char)
}

/// Fills the `XXXXXX` before a suffix of `suffix` bytes in `tmpl` with random characters and
/// calls `make` until it does not fail with EEXIST. Returns its result.
fn fill_template<T>(tmpl: *mut c_char, suffix: c_int, mut make: impl FnMut(PathBuf) -> Res<T>) -> Res<T> {
    if tmpl.is_null() || suffix < 0 {
        return Err(Errno(libc::EINVAL));
    }
    // SAFETY: the caller's writable, NUL-terminated template.
    let len = unsafe { libc::strlen(tmpl) };
    let suffix = suffix as usize;
    if len < 6 + suffix {
        return Err(Errno(libc::EINVAL));
    }
    let start = len - suffix - 6;
    // SAFETY: `tmpl` holds `len` bytes.
    let bytes = unsafe { std::slice::from_raw_parts_mut(tmpl.cast::<u8>(), len) };
    if &bytes[start..start + 6] != b"XXXXXX" {
        return Err(Errno(libc::EINVAL));
    }
    const CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    for _ in 0..1000 {
        let mut r = plfs_core::random_u64();
        for b in &mut bytes[start..start + 6] {
            *b = CHARS[(r % CHARS.len() as u64) as usize];
            r /= CHARS.len() as u64;
        }
        let p = PathBuf::from(std::ffi::OsStr::from_bytes(bytes));
        let p = match paths::classify_at(libc::AT_FDCWD, p.as_os_str().as_bytes()) {
            Target::Plfs(p) => p,
            _ => return Err(Errno(libc::EINVAL)),
        };
        match make(p) {
            Err(Errno(libc::EEXIST)) => continue,
            r => return r,
        }
    }
    Err(Errno(libc::EEXIST))
}

fn mkstemp_p(tmpl: *mut c_char, suffix: c_int, flags: c_int) -> Res<c_int> {
    let flags = (flags & !libc::O_ACCMODE) | libc::O_RDWR | libc::O_CREAT | libc::O_EXCL;
    fill_template(tmpl, suffix, |p| open_plfs(p, flags, 0o600))
}

/// True if a template names a PLFS path.
fn plfs_template(tmpl: *const c_char) -> bool {
    // SAFETY: the caller's C string (NULL is handled by classify_c).
    matches!(unsafe { classify_c(libc::AT_FDCWD, tmpl) }, Target::Plfs(_))
}

macro_rules! mkstemp_names {
    ($($(#[$m:meta])* fn $name:ident($($a:ident: $t:ty),*) => ($suffix:expr, $flags:expr);)*) => {$(
        $(#[$m])*
        #[no_mangle]
        pub unsafe extern "C" fn $name(tmpl: *mut c_char $(, $a: $t)*) -> c_int {
            if let Some(_busy) = enter() {
                if plfs_template(tmpl) {
                    return run(|| mkstemp_p(tmpl, $suffix, $flags));
                }
            }
            opened(crate::real!($name(tmpl $(, $a)*): fn(*mut c_char $(, $t)*) -> c_int))
        }
    )*};
}

mkstemp_names! {
    /// mkstemp(3): glibc creates the file with an internal open, so PLFS templates are done here.
    fn mkstemp() => (0, 0);
    /// mkstemp64.
    fn mkstemp64() => (0, 0);
    /// mkostemp(3).
    fn mkostemp(flags: c_int) => (0, flags);
    /// mkostemp64.
    fn mkostemp64(flags: c_int) => (0, flags);
    /// mkstemps(3).
    fn mkstemps(suffix: c_int) => (suffix, 0);
    /// mkstemps64.
    fn mkstemps64(suffix: c_int) => (suffix, 0);
    /// mkostemps(3).
    fn mkostemps(suffix: c_int, flags: c_int) => (suffix, flags);
    /// mkostemps64.
    fn mkostemps64(suffix: c_int, flags: c_int) => (suffix, flags);
}

/// mkdtemp(3).
#[no_mangle]
pub unsafe extern "C" fn mkdtemp(tmpl: *mut c_char) -> *mut c_char {
    if let Some(_busy) = enter() {
        if plfs_template(tmpl) {
            return run(|| {
                fill_template(tmpl, 0, |p| {
                    conf::plfs()?.mkdir(&p, 0o700)?;
                    Ok(tmpl)
                })
            });
        }
    }
    crate::real!(mkdtemp(tmpl): fn(*mut c_char) -> *mut c_char)
}
