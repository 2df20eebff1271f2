//! Directory streams on PLFS directories: opendir/fdopendir return our own DIR objects (listing
//! logical names: containers are regular files), recognised by address in readdir, closedir,
//! dirfd, rewinddir, telldir and seekdir; scandir is implemented for PLFS paths because glibc's
//! calls its own internal opendir.

use crate::fd::conf::plfs;
use crate::fd::entry::Kind;
use crate::fd::paths::{classify_c, follow, Followed, Target};
use crate::fd::placeholder;
use crate::file::close::close_plfs;
use crate::file::init::{enter, serve_fd};
use crate::rt::errno::{Errno, Res};
use crate::rt::guard::run;
use crate::rt::sync::ForkMutex;
use libc::{c_char, c_int, c_long, c_void, dirent64, DIR};
use plfs_core::FileKind;
use std::collections::BTreeSet;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Addresses of our DIR objects.
static DIRS: ForkMutex<BTreeSet<usize>> = ForkMutex::new(20, BTreeSet::new());
static NDIRS: AtomicUsize = AtomicUsize::new(0);

struct Item {
    name: Vec<u8>,
    dtype: u8,
    ino: u64,
}

/// Our DIR: a placeholder descriptor, the listing, and the dirent handed out by readdir.
struct FakeDir {
    fd: c_int,
    path: PathBuf,
    items: Vec<Item>,
    pos: usize,
    ent: dirent64,
}

fn name_ino(dir: &Path, name: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in dir.as_os_str().as_bytes().iter().chain(b"/").chain(name) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h | 1
}

fn list(p: &Path) -> Res<Vec<Item>> {
    let entries = plfs()?.readdir(p)?;
    let mut items = vec![
        Item {
            name: b".".to_vec(),
            dtype: libc::DT_DIR,
            ino: name_ino(p, b"."),
        },
        Item {
            name: b"..".to_vec(),
            dtype: libc::DT_DIR,
            ino: name_ino(p, b".."),
        },
    ];
    for e in entries {
        let name = e.name.as_bytes().to_vec();
        let dtype = match e.kind {
            FileKind::Dir => libc::DT_DIR,
            FileKind::Symlink => libc::DT_LNK,
            FileKind::File => libc::DT_REG,
        };
        items.push(Item {
            ino: name_ino(p, &name),
            name,
            dtype,
        });
    }
    Ok(items)
}

fn register(fd: c_int, path: PathBuf) -> Res<*mut DIR> {
    let items = list(&path)?;
    // SAFETY: an all-zero dirent64 is valid.
    let ent: dirent64 = unsafe { std::mem::zeroed() };
    let d = Box::into_raw(Box::new(FakeDir {
        fd,
        path,
        items,
        pos: 0,
        ent,
    }));
    let mut set = DIRS.lock();
    set.insert(d as usize);
    NDIRS.store(set.len(), Ordering::Relaxed);
    Ok(d.cast::<DIR>())
}

/// Our DIR behind `d`, if it is one of ours.
fn fake(d: *mut DIR) -> Option<*mut FakeDir> {
    if d.is_null() || NDIRS.load(Ordering::Relaxed) == 0 {
        return None;
    }
    DIRS.lock().contains(&(d as usize)).then_some(d.cast::<FakeDir>())
}

fn opendir_p(p: PathBuf) -> Res<*mut DIR> {
    let p = match follow(p)? {
        Followed::Plfs(p, Some(s)) if s.kind == FileKind::Dir => p,
        Followed::Plfs(_, Some(_)) => return Err(Errno(libc::ENOTDIR)),
        Followed::Plfs(_, None) => return Err(Errno(libc::ENOENT)),
        Followed::Real(c) => {
            let d = crate::real!(opendir(c.as_ptr()): fn(*const c_char) -> *mut DIR);
            return if d.is_null() {
                Err(Errno(crate::rt::errno::errno()))
            } else {
                Ok(d)
            };
        }
    };
    let (fd, _) = placeholder::create(
        Kind::Dir,
        libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        None,
        &p,
    )?;
    match register(fd, p) {
        Ok(d) => Ok(d),
        Err(e) => {
            let _ = close_plfs(fd);
            Err(e)
        }
    }
}

/// opendir(3).
#[no_mangle]
pub unsafe extern "C" fn opendir(path: *const c_char) -> *mut DIR {
    if let Some(_busy) = enter() {
        // SAFETY: the caller's C string.
        match unsafe { classify_c(libc::AT_FDCWD, path) } {
            Target::Plfs(p) => return run(|| opendir_p(p)),
            Target::Real(c) => return crate::real!(opendir(c.as_ptr()): fn(*const c_char) -> *mut DIR),
            Target::Pass => {}
        }
    }
    crate::real!(opendir(path): fn(*const c_char) -> *mut DIR)
}

/// fdopendir(3): takes ownership of a PLFS directory descriptor.
#[no_mangle]
pub extern "C" fn fdopendir(fd: c_int) -> *mut DIR {
    if let Some(r) = serve_fd(fd, |e| {
        if e.kind != Kind::Dir {
            return Err(Errno(libc::ENOTDIR));
        }
        register(fd, e.path.clone())
    }) {
        return r;
    }
    crate::real!(fdopendir(fd): fn(c_int) -> *mut DIR)
}

fn next(d: &mut FakeDir) -> *mut dirent64 {
    let Some(it) = d.items.get(d.pos) else {
        return std::ptr::null_mut();
    };
    d.pos += 1;
    d.ent.d_ino = it.ino;
    d.ent.d_off = d.pos as i64;
    d.ent.d_type = it.dtype;
    let n = it.name.len().min(255);
    d.ent.d_name = [0; 256];
    for (dst, &src) in d.ent.d_name.iter_mut().zip(&it.name[..n]) {
        *dst = src as c_char;
    }
    d.ent.d_reclen = std::mem::size_of::<dirent64>() as u16;
    &mut d.ent
}

/// readdir(3) (struct dirent and dirent64 share a layout on the supported targets).
#[no_mangle]
pub extern "C" fn readdir(d: *mut DIR) -> *mut dirent64 {
    if let Some(_busy) = enter() {
        if let Some(f) = fake(d) {
            // SAFETY: `f` is a live FakeDir we allocated; POSIX forbids concurrent readdir on one DIR.
            return next(unsafe { &mut *f });
        }
    }
    crate::real!(readdir(d): fn(*mut DIR) -> *mut dirent64)
}

/// readdir64(3).
#[no_mangle]
pub extern "C" fn readdir64(d: *mut DIR) -> *mut dirent64 {
    if let Some(_busy) = enter() {
        if let Some(f) = fake(d) {
            // SAFETY: as in readdir.
            return next(unsafe { &mut *f });
        }
    }
    crate::real!(readdir64(d): fn(*mut DIR) -> *mut dirent64)
}

fn readdir_r_impl(f: *mut FakeDir, entry: *mut dirent64, result: *mut *mut dirent64) -> c_int {
    // SAFETY: as in readdir; `entry` and `result` are the caller's buffers.
    unsafe {
        let e = next(&mut *f);
        if e.is_null() {
            *result = std::ptr::null_mut();
        } else {
            *entry = *e;
            *result = entry;
        }
    }
    0
}

/// readdir_r(3).
#[no_mangle]
pub extern "C" fn readdir_r(d: *mut DIR, entry: *mut dirent64, result: *mut *mut dirent64) -> c_int {
    if let Some(_busy) = enter() {
        if let Some(f) = fake(d) {
            return readdir_r_impl(f, entry, result);
        }
    }
    crate::real!(readdir_r(d, entry, result): fn(*mut DIR, *mut dirent64, *mut *mut dirent64) -> c_int)
}

/// readdir64_r(3).
#[no_mangle]
pub extern "C" fn readdir64_r(d: *mut DIR, entry: *mut dirent64, result: *mut *mut dirent64) -> c_int {
    if let Some(_busy) = enter() {
        if let Some(f) = fake(d) {
            return readdir_r_impl(f, entry, result);
        }
    }
    crate::real!(readdir64_r(d, entry, result): fn(*mut DIR, *mut dirent64, *mut *mut dirent64) -> c_int)
}

/// closedir(3).
#[no_mangle]
pub extern "C" fn closedir(d: *mut DIR) -> c_int {
    if let Some(_busy) = enter() {
        if let Some(f) = fake(d) {
            {
                let mut set = DIRS.lock();
                set.remove(&(d as usize));
                NDIRS.store(set.len(), Ordering::Relaxed);
            }
            // SAFETY: `f` came from Box::into_raw in `register` and is now unregistered.
            let fd = unsafe { Box::from_raw(f) }.fd;
            return run(|| close_plfs(fd).map(|()| 0));
        }
    }
    crate::real!(closedir(d): fn(*mut DIR) -> c_int)
}

/// dirfd(3).
#[no_mangle]
pub extern "C" fn dirfd(d: *mut DIR) -> c_int {
    if let Some(_busy) = enter() {
        if let Some(f) = fake(d) {
            // SAFETY: a live FakeDir.
            return unsafe { (*f).fd };
        }
    }
    crate::real!(dirfd(d): fn(*mut DIR) -> c_int)
}

/// rewinddir(3): lists the directory again.
#[no_mangle]
pub extern "C" fn rewinddir(d: *mut DIR) {
    if let Some(_busy) = enter() {
        if let Some(f) = fake(d) {
            // SAFETY: a live FakeDir.
            let f = unsafe { &mut *f };
            if let Ok(items) = list(&f.path) {
                f.items = items;
            }
            f.pos = 0;
            return;
        }
    }
    crate::real!(rewinddir(d): fn(*mut DIR) -> ())
}

/// telldir(3).
#[no_mangle]
pub extern "C" fn telldir(d: *mut DIR) -> c_long {
    if let Some(_busy) = enter() {
        if let Some(f) = fake(d) {
            // SAFETY: a live FakeDir.
            return unsafe { (*f).pos } as c_long;
        }
    }
    crate::real!(telldir(d): fn(*mut DIR) -> c_long)
}

/// seekdir(3).
#[no_mangle]
pub extern "C" fn seekdir(d: *mut DIR, pos: c_long) {
    if let Some(_busy) = enter() {
        if let Some(f) = fake(d) {
            // SAFETY: a live FakeDir.
            unsafe { (*f).pos = pos.max(0) as usize };
            return;
        }
    }
    crate::real!(seekdir(d, pos): fn(*mut DIR, c_long) -> ())
}

type Filter = Option<unsafe extern "C" fn(*const dirent64) -> c_int>;
type Compar = Option<unsafe extern "C" fn(*mut *const dirent64, *mut *const dirent64) -> c_int>;

fn scandir_p(p: PathBuf, out: *mut *mut *mut dirent64, filter: Filter, compar: Compar) -> Res<c_int> {
    let p = match follow(p)? {
        Followed::Plfs(p, Some(s)) if s.kind == FileKind::Dir => p,
        Followed::Plfs(_, Some(_)) => return Err(Errno(libc::ENOTDIR)),
        _ => return Err(Errno(libc::ENOENT)),
    };
    let items = list(&p)?;
    let mut v: Vec<*mut dirent64> = Vec::new();
    for it in &items {
        // SAFETY: malloc'd dirents are freed by the caller with free(3).
        let e = unsafe { libc::calloc(1, std::mem::size_of::<dirent64>()) }.cast::<dirent64>();
        if e.is_null() {
            for x in v {
                // SAFETY: allocated above.
                unsafe { libc::free(x.cast::<c_void>()) };
            }
            return Err(Errno(libc::ENOMEM));
        }
        // SAFETY: `e` is a zeroed dirent64.
        unsafe {
            (*e).d_ino = it.ino;
            (*e).d_type = it.dtype;
            (*e).d_reclen = std::mem::size_of::<dirent64>() as u16;
            for (i, &b) in it.name.iter().take(255).enumerate() {
                (*e).d_name[i] = b as c_char;
            }
        }
        // SAFETY: the caller's filter takes a dirent.
        let keep = filter.is_none_or(|f| unsafe { f(e) } != 0);
        if keep {
            v.push(e);
        } else {
            // SAFETY: allocated above.
            unsafe { libc::free(e.cast::<c_void>()) };
        }
    }
    if let Some(c) = compar {
        v.sort_by(|a, b| {
            let (mut x, mut y) = (*a as *const dirent64, *b as *const dirent64);
            // SAFETY: the caller's comparison function takes pointers to dirent pointers.
            unsafe { c(&mut x, &mut y) }.cmp(&0)
        });
    }
    let n = v.len();
    // SAFETY: the array is freed by the caller with free(3).
    let arr = unsafe { libc::malloc(n.max(1) * std::mem::size_of::<*mut dirent64>()) }.cast::<*mut dirent64>();
    if arr.is_null() {
        return Err(Errno(libc::ENOMEM));
    }
    // SAFETY: `arr` holds n pointers; `out` is the caller's.
    unsafe {
        std::ptr::copy_nonoverlapping(v.as_ptr(), arr, n);
        *out = arr;
    }
    Ok(n as c_int)
}

/// scandir(3).
#[no_mangle]
pub unsafe extern "C" fn scandir(
    path: *const c_char,
    out: *mut *mut *mut dirent64,
    filter: Filter,
    compar: Compar,
) -> c_int {
    if let Some(_busy) = enter() {
        // SAFETY: the caller's C string.
        if let Target::Plfs(p) = unsafe { classify_c(libc::AT_FDCWD, path) } {
            return run(|| scandir_p(p, out, filter, compar));
        }
    }
    crate::real!(scandir(path, out, filter, compar): fn(*const c_char, *mut *mut *mut dirent64, Filter, Compar) -> c_int)
}

/// scandir64(3).
#[no_mangle]
pub unsafe extern "C" fn scandir64(
    path: *const c_char,
    out: *mut *mut *mut dirent64,
    filter: Filter,
    compar: Compar,
) -> c_int {
    // SAFETY: forwarded caller arguments.
    unsafe { scandir(path, out, filter, compar) }
}

/// scandirat(3).
#[no_mangle]
pub unsafe extern "C" fn scandirat(
    dirfd: c_int,
    path: *const c_char,
    out: *mut *mut *mut dirent64,
    filter: Filter,
    compar: Compar,
) -> c_int {
    if let Some(_busy) = enter() {
        // SAFETY: the caller's C string.
        if let Target::Plfs(p) = unsafe { classify_c(dirfd, path) } {
            return run(|| scandir_p(p, out, filter, compar));
        }
    }
    crate::real!(scandirat(dirfd, path, out, filter, compar): fn(c_int, *const c_char, *mut *mut *mut dirent64, Filter, Compar) -> c_int)
}
