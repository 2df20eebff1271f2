//! Data calls on PLFS descriptors: read/write and their positional and vector forms, lseek,
//! truncate, sync, allocation hints, and the zero-copy calls that must fail so tools fall back
//! to read/write. The operations themselves are in [`crate::file::io`].

use crate::fd::entry::{file_of, Entry, Kind};
use crate::fd::table::ours;
use crate::file::init::{enter, serve_fd};
use crate::file::io::{read_at, seek, sync_entry, write_at};
use crate::rt::errno::{Errno, Res};
use crate::rt::guard::run;
use libc::{c_int, c_uint, c_void, iovec, off64_t, off_t, size_t, ssize_t};

fn slice_mut<'a>(buf: *mut c_void, n: size_t) -> Res<&'a mut [u8]> {
    if n == 0 {
        return Ok(&mut []);
    }
    if buf.is_null() {
        return Err(Errno(libc::EFAULT));
    }
    // SAFETY: the caller of read(2) passed a writable buffer of n bytes.
    Ok(unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), n) })
}

fn slice<'a>(buf: *const c_void, n: size_t) -> Res<&'a [u8]> {
    if n == 0 {
        return Ok(&[]);
    }
    if buf.is_null() {
        return Err(Errno(libc::EFAULT));
    }
    // SAFETY: the caller of write(2) passed a readable buffer of n bytes.
    Ok(unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), n) })
}

fn iovs<'a>(iov: *const iovec, cnt: c_int) -> Res<&'a [iovec]> {
    if !(0..=1024).contains(&cnt) {
        return Err(Errno(libc::EINVAL));
    }
    if cnt == 0 {
        return Ok(&[]);
    }
    if iov.is_null() {
        return Err(Errno(libc::EFAULT));
    }
    // SAFETY: the caller passed `cnt` iovecs.
    Ok(unsafe { std::slice::from_raw_parts(iov, cnt as usize) })
}

fn readv_at(e: &Entry, fd: i32, v: &[iovec], at: Option<u64>) -> Res<usize> {
    let total: usize = v.iter().map(|x| x.iov_len).sum();
    let mut tmp = vec![0u8; total];
    let n = read_at(e, fd, &mut tmp, at)?;
    let mut done = 0;
    for x in v {
        if done >= n {
            break;
        }
        let k = x.iov_len.min(n - done);
        slice_mut(x.iov_base, k)?.copy_from_slice(&tmp[done..done + k]);
        done += k;
    }
    Ok(n)
}

fn writev_at(e: &Entry, fd: i32, v: &[iovec], at: Option<u64>) -> Res<usize> {
    let mut tmp = Vec::with_capacity(v.iter().map(|x| x.iov_len).sum());
    for x in v {
        tmp.extend_from_slice(slice(x.iov_base, x.iov_len)?);
    }
    write_at(e, fd, &tmp, at)
}

fn off(o: i64) -> Res<Option<u64>> {
    if o < 0 {
        Err(Errno(libc::EINVAL))
    } else {
        Ok(Some(o as u64))
    }
}

macro_rules! fd_wrapper {
    ($(#[$m:meta])* fn $name:ident($fd:ident: c_int $(, $a:ident: $t:ty)*) -> $r:ty, |$e:ident| $body:expr) => {
        $(#[$m])*
        #[no_mangle]
        pub unsafe extern "C" fn $name($fd: c_int $(, $a: $t)*) -> $r {
            if let Some(r) = serve_fd($fd, |$e| $body) {
                return r;
            }
            $crate::real!($name($fd $(, $a)*): fn(c_int $(, $t)*) -> $r)
        }
    };
}

fd_wrapper!(/// read(2).
    fn read(fd: c_int, buf: *mut c_void, n: size_t) -> ssize_t, |e| Ok(read_at(&e, fd, slice_mut(buf, n)?, None)? as ssize_t));
fd_wrapper!(/// _FORTIFY_SOURCE read.
    fn __read_chk(fd: c_int, buf: *mut c_void, n: size_t, _buflen: size_t) -> ssize_t, |e| Ok(read_at(&e, fd, slice_mut(buf, n)?, None)? as ssize_t));
fd_wrapper!(/// write(2).
    fn write(fd: c_int, buf: *const c_void, n: size_t) -> ssize_t, |e| Ok(write_at(&e, fd, slice(buf, n)?, None)? as ssize_t));
fd_wrapper!(/// pread(2).
    fn pread(fd: c_int, buf: *mut c_void, n: size_t, o: off_t) -> ssize_t, |e| Ok(read_at(&e, fd, slice_mut(buf, n)?, off(o)?)? as ssize_t));
fd_wrapper!(/// pread64.
    fn pread64(fd: c_int, buf: *mut c_void, n: size_t, o: off64_t) -> ssize_t, |e| Ok(read_at(&e, fd, slice_mut(buf, n)?, off(o)?)? as ssize_t));
fd_wrapper!(/// glibc alias of pread64.
    fn __pread64(fd: c_int, buf: *mut c_void, n: size_t, o: off64_t) -> ssize_t, |e| Ok(read_at(&e, fd, slice_mut(buf, n)?, off(o)?)? as ssize_t));
fd_wrapper!(/// _FORTIFY_SOURCE pread.
    fn __pread_chk(fd: c_int, buf: *mut c_void, n: size_t, o: off_t, _l: size_t) -> ssize_t, |e| Ok(read_at(&e, fd, slice_mut(buf, n)?, off(o)?)? as ssize_t));
fd_wrapper!(/// _FORTIFY_SOURCE pread64.
    fn __pread64_chk(fd: c_int, buf: *mut c_void, n: size_t, o: off64_t, _l: size_t) -> ssize_t, |e| Ok(read_at(&e, fd, slice_mut(buf, n)?, off(o)?)? as ssize_t));
fd_wrapper!(/// pwrite(2).
    fn pwrite(fd: c_int, buf: *const c_void, n: size_t, o: off_t) -> ssize_t, |e| Ok(write_at(&e, fd, slice(buf, n)?, off(o)?)? as ssize_t));
fd_wrapper!(/// pwrite64.
    fn pwrite64(fd: c_int, buf: *const c_void, n: size_t, o: off64_t) -> ssize_t, |e| Ok(write_at(&e, fd, slice(buf, n)?, off(o)?)? as ssize_t));
fd_wrapper!(/// glibc alias of pwrite64.
    fn __pwrite64(fd: c_int, buf: *const c_void, n: size_t, o: off64_t) -> ssize_t, |e| Ok(write_at(&e, fd, slice(buf, n)?, off(o)?)? as ssize_t));
fd_wrapper!(/// readv(2).
    fn readv(fd: c_int, v: *const iovec, c: c_int) -> ssize_t, |e| Ok(readv_at(&e, fd, iovs(v, c)?, None)? as ssize_t));
fd_wrapper!(/// writev(2).
    fn writev(fd: c_int, v: *const iovec, c: c_int) -> ssize_t, |e| Ok(writev_at(&e, fd, iovs(v, c)?, None)? as ssize_t));
fd_wrapper!(/// preadv(2).
    fn preadv(fd: c_int, v: *const iovec, c: c_int, o: off_t) -> ssize_t, |e| Ok(readv_at(&e, fd, iovs(v, c)?, off(o)?)? as ssize_t));
fd_wrapper!(/// preadv64.
    fn preadv64(fd: c_int, v: *const iovec, c: c_int, o: off64_t) -> ssize_t, |e| Ok(readv_at(&e, fd, iovs(v, c)?, off(o)?)? as ssize_t));
fd_wrapper!(/// pwritev(2).
    fn pwritev(fd: c_int, v: *const iovec, c: c_int, o: off_t) -> ssize_t, |e| Ok(writev_at(&e, fd, iovs(v, c)?, off(o)?)? as ssize_t));
fd_wrapper!(/// pwritev64.
    fn pwritev64(fd: c_int, v: *const iovec, c: c_int, o: off64_t) -> ssize_t, |e| Ok(writev_at(&e, fd, iovs(v, c)?, off(o)?)? as ssize_t));
fd_wrapper!(/// preadv2(2) (offset -1: the file position; flags ignored).
    fn preadv2(fd: c_int, v: *const iovec, c: c_int, o: off_t, _fl: c_int) -> ssize_t,
    |e| Ok(readv_at(&e, fd, iovs(v, c)?, if o == -1 { None } else { off(o)? })? as ssize_t));
fd_wrapper!(/// preadv64v2.
    fn preadv64v2(fd: c_int, v: *const iovec, c: c_int, o: off64_t, _fl: c_int) -> ssize_t,
    |e| Ok(readv_at(&e, fd, iovs(v, c)?, if o == -1 { None } else { off(o)? })? as ssize_t));
fd_wrapper!(/// pwritev2(2).
    fn pwritev2(fd: c_int, v: *const iovec, c: c_int, o: off_t, _fl: c_int) -> ssize_t,
    |e| Ok(writev_at(&e, fd, iovs(v, c)?, if o == -1 { None } else { off(o)? })? as ssize_t));
fd_wrapper!(/// pwritev64v2.
    fn pwritev64v2(fd: c_int, v: *const iovec, c: c_int, o: off64_t, _fl: c_int) -> ssize_t,
    |e| Ok(writev_at(&e, fd, iovs(v, c)?, if o == -1 { None } else { off(o)? })? as ssize_t));

fd_wrapper!(/// lseek(2).
    fn lseek(fd: c_int, o: off_t, w: c_int) -> off_t, |e| seek(&e, fd, o, w));
fd_wrapper!(/// lseek64.
    fn lseek64(fd: c_int, o: off64_t, w: c_int) -> off64_t, |e| seek(&e, fd, o, w));

fn ftrunc(e: &Entry, len: i64) -> Res<c_int> {
    if len < 0 {
        return Err(Errno(libc::EINVAL));
    }
    if e.kind != Kind::File || e.flags() & libc::O_ACCMODE == libc::O_RDONLY {
        return Err(Errno(libc::EINVAL));
    }
    let mut st = e.lock();
    file_of(e, &mut st)?.truncate(len as u64)?;
    Ok(0)
}

fd_wrapper!(/// ftruncate(2).
    fn ftruncate(fd: c_int, len: off_t) -> c_int, |e| ftrunc(&e, len));
fd_wrapper!(/// ftruncate64.
    fn ftruncate64(fd: c_int, len: off64_t) -> c_int, |e| ftrunc(&e, len));

fd_wrapper!(/// fsync(2): data then index records are durable.
    fn fsync(fd: c_int) -> c_int, |e| sync_entry(&e));
fd_wrapper!(/// fdatasync(2).
    fn fdatasync(fd: c_int) -> c_int, |e| sync_entry(&e));

/// posix_fallocate semantics: make the file at least `o + len` long. Returns an error number.
fn allocate(e: &Entry, o: i64, len: i64) -> c_int {
    if o < 0 || len <= 0 {
        return libc::EINVAL;
    }
    if e.kind != Kind::File || e.flags() & libc::O_ACCMODE == libc::O_RDONLY {
        return libc::EBADF;
    }
    let r: Res<()> = (|| {
        let mut st = e.lock();
        let f = file_of(e, &mut st)?;
        let want = (o as u64).checked_add(len as u64).ok_or(Errno(libc::EFBIG))?;
        if f.size()? < want {
            f.truncate(want)?;
        }
        Ok(())
    })();
    match r {
        Ok(()) => 0,
        Err(Errno(x)) => x,
    }
}

macro_rules! errnum_wrapper {
    ($(#[$m:meta])* fn $name:ident($fd:ident: c_int $(, $a:ident: $t:ty)*), |$e:ident| $body:expr) => {
        $(#[$m])*
        #[no_mangle]
        pub unsafe extern "C" fn $name($fd: c_int $(, $a: $t)*) -> c_int {
            if let Some(_busy) = enter() {
                if let Some($e) = ours($fd) {
                    return std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| $body)).unwrap_or(libc::EIO);
                }
            }
            $crate::real!($name($fd $(, $a)*): fn(c_int $(, $t)*) -> c_int)
        }
    };
}

errnum_wrapper!(/// posix_fadvise: a hint; accepted.
    fn posix_fadvise(fd: c_int, _o: off_t, _l: off_t, _adv: c_int), |e| { let _ = e; 0 });
errnum_wrapper!(/// posix_fadvise64.
    fn posix_fadvise64(fd: c_int, _o: off64_t, _l: off64_t, _adv: c_int), |e| { let _ = e; 0 });
errnum_wrapper!(/// posix_fallocate: extends the logical size.
    fn posix_fallocate(fd: c_int, o: off_t, l: off_t), |e| allocate(&e, o, l));
errnum_wrapper!(/// posix_fallocate64.
    fn posix_fallocate64(fd: c_int, o: off64_t, l: off64_t), |e| allocate(&e, o, l));

fn fallocate_impl(e: &Entry, mode: c_int, o: i64, l: i64) -> Res<c_int> {
    match mode {
        0 => match allocate(e, o, l) {
            0 => Ok(0),
            x => Err(Errno(x)),
        },
        libc::FALLOC_FL_KEEP_SIZE => Ok(0),
        _ => Err(Errno(libc::EOPNOTSUPP)),
    }
}

fd_wrapper!(/// fallocate(2): mode 0 extends, KEEP_SIZE is a no-op, hole punching is EOPNOTSUPP.
    fn fallocate(fd: c_int, mode: c_int, o: off_t, l: off_t) -> c_int, |e| fallocate_impl(&e, mode, o, l));
fd_wrapper!(/// fallocate64.
    fn fallocate64(fd: c_int, mode: c_int, o: off64_t, l: off64_t) -> c_int, |e| fallocate_impl(&e, mode, o, l));

/// copy_file_range(2): EXDEV when an end is a PLFS file (cp and cat fall back to read/write).
#[no_mangle]
pub unsafe extern "C" fn copy_file_range(
    fi: c_int,
    oi: *mut off64_t,
    fo: c_int,
    oo: *mut off64_t,
    len: size_t,
    flags: c_uint,
) -> ssize_t {
    if let Some(_busy) = enter() {
        if ours(fi).is_some() || ours(fo).is_some() {
            return run(|| Err::<ssize_t, _>(Errno(libc::EXDEV)));
        }
    }
    crate::real!(copy_file_range(fi, oi, fo, oo, len, flags): fn(c_int, *mut off64_t, c_int, *mut off64_t, size_t, c_uint) -> ssize_t)
}

/// sendfile(2): EINVAL when an end is a PLFS file (callers fall back to read/write).
#[no_mangle]
pub unsafe extern "C" fn sendfile(out: c_int, inp: c_int, o: *mut off_t, n: size_t) -> ssize_t {
    if let Some(_busy) = enter() {
        if ours(out).is_some() || ours(inp).is_some() {
            return run(|| Err::<ssize_t, _>(Errno(libc::EINVAL)));
        }
    }
    crate::real!(sendfile(out, inp, o, n): fn(c_int, c_int, *mut off_t, size_t) -> ssize_t)
}

/// sendfile64.
#[no_mangle]
pub unsafe extern "C" fn sendfile64(out: c_int, inp: c_int, o: *mut off64_t, n: size_t) -> ssize_t {
    if let Some(_busy) = enter() {
        if ours(out).is_some() || ours(inp).is_some() {
            return run(|| Err::<ssize_t, _>(Errno(libc::EINVAL)));
        }
    }
    crate::real!(sendfile64(out, inp, o, n): fn(c_int, c_int, *mut off64_t, size_t) -> ssize_t)
}

/// splice(2): EINVAL when an end is a PLFS file.
#[no_mangle]
pub unsafe extern "C" fn splice(
    fi: c_int,
    oi: *mut off64_t,
    fo: c_int,
    oo: *mut off64_t,
    len: size_t,
    flags: c_uint,
) -> ssize_t {
    if let Some(_busy) = enter() {
        if ours(fi).is_some() || ours(fo).is_some() {
            return run(|| Err::<ssize_t, _>(Errno(libc::EINVAL)));
        }
    }
    crate::real!(splice(fi, oi, fo, oo, len, flags): fn(c_int, *mut off64_t, c_int, *mut off64_t, size_t, c_uint) -> ssize_t)
}

/// tee(2): EINVAL when an end is a PLFS file.
#[no_mangle]
pub unsafe extern "C" fn tee(fi: c_int, fo: c_int, len: size_t, flags: c_uint) -> ssize_t {
    if let Some(_busy) = enter() {
        if ours(fi).is_some() || ours(fo).is_some() {
            return run(|| Err::<ssize_t, _>(Errno(libc::EINVAL)));
        }
    }
    crate::real!(tee(fi, fo, len, flags): fn(c_int, c_int, size_t, c_uint) -> ssize_t)
}
