//! Programs and libraries stored under a mount point (issue 25, item 10). The kernel cannot
//! exec or map a logical path: only this process knows it. So the bytes of such a file are
//! copied into an anonymous memory file (memfd), sealed against change and reopened read-only
//! (an executable must have no writer, or exec fails with ETXTBSY), and the kernel is handed
//! `/proc/self/fd/N`. An ELF program runs from that; a script (`#!`) is run as the kernel would
//! run it, its interpreter with the script's logical path, which the interpreter opens through
//! ldplfs (it inherits the preload). `dlopen` maps libraries the same way, one memfd per path
//! for the life of the process, so a second `dlopen` of a path finds the library already loaded.
//!
//! What cannot work: the dynamic loader finding a library under a mount by itself (a DT_NEEDED
//! entry, `LD_LIBRARY_PATH`, an RPATH pointing into the mount), since it runs before and below
//! any interposer; README, Limits, says so.

use crate::fd::conf::{foreign_child, my_pid, plfs, private_plfs};
use crate::fd::paths::{classify_at, follow, follow_with, Followed, Target};
use crate::rt::errno::{Errno, Res};
use crate::rt::real::sys::check;
use plfs_core::Plfs;
use plfs_core::{FileKind, OpenFlags};
use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// How an exec of a path goes on.
pub enum Exec {
    /// Not a path under a mount: libc with the caller's arguments.
    Pass,
    /// A path outside the mount that this one means (a logical cwd, or a link out of the mount).
    Real(CString),
    /// A program copied into a memfd: exec `path` (`/proc/self/fd/N`); `fd` is closed on exec
    /// and must be closed by the caller if the exec fails.
    Image {
        /// The read-only descriptor of the memfd.
        fd: i32,
        /// `/proc/self/fd/<fd>`.
        path: CString,
    },
    /// A script: exec `interp` with `args` (interpreter, its optional argument, the script's
    /// path) followed by the caller's arguments after argv[0].
    Script {
        /// The interpreter named on the `#!` line.
        interp: CString,
        /// The leading arguments.
        args: Vec<CString>,
    },
}

/// The longest `#!` line the kernel reads (BINPRM_BUF_SIZE).
const SHEBANG_MAX: usize = 256;

/// What an exec of `path` (relative to `dirfd`) must do. Checks what the kernel would: the
/// file exists, is a regular file and is executable by the caller.
pub fn for_exec(dirfd: i32, path: &[u8]) -> Res<Exec> {
    for_exec_with(dirfd, path, false)
}

/// As [`for_exec`], for a caller that can only swap the path (the variadic execs): a script too
/// is copied into a memfd, left open across the exec, since its interpreter opens
/// `/proc/self/fd/N` (its `$0` then shows that name).
pub fn for_exec_inline(dirfd: i32, path: &[u8]) -> Res<Exec> {
    for_exec_with(dirfd, path, true)
}

fn for_exec_with(dirfd: i32, path: &[u8], inline: bool) -> Res<Exec> {
    let p = match classify_at(dirfd, path) {
        Target::Pass => return Ok(Exec::Pass),
        Target::Real(c) => return Ok(Exec::Real(c)),
        Target::Plfs(p) => p,
    };
    let plfs = instance()?;
    let p = match follow_with(plfs, p)? {
        Followed::Real(c) => return Ok(Exec::Real(c)),
        Followed::Plfs(_, None) => return Err(Errno(libc::ENOENT)),
        Followed::Plfs(_, Some(st)) if st.kind != FileKind::File => return Err(Errno(libc::EACCES)),
        Followed::Plfs(p, Some(_)) => p,
    };
    plfs.access(&p, libc::X_OK as u32)?;
    let f = plfs.open(&p, OpenFlags::from_posix(libc::O_RDONLY)?, 0, my_pid())?;
    let mut head = [0u8; SHEBANG_MAX];
    let n = read_full(&f, &mut head, 0)?;
    let script = shebang(&head[..n]);
    if let Some((interp, arg)) = script.clone().filter(|_| !inline) {
        let _ = f.close();
        let mut args = vec![interp.clone()];
        args.extend(arg);
        args.push(CString::new(path).map_err(|_| Errno(libc::EINVAL))?);
        crate::rt::report::count(crate::rt::report::Count::Image, 0);
        return Ok(Exec::Script { interp, args });
    }
    let fd = copy_to_memfd(&f, &p, script.is_none());
    let _ = f.close();
    let fd = fd?;
    crate::rt::report::count(crate::rt::report::Count::Image, 0);
    Ok(Exec::Image {
        fd,
        path: proc_path(fd),
    })
}

/// The instance an exec uses: in a vfork child (Python's subprocess, posix_spawn) a private one,
/// since the program has often closed every descriptor before its exec (the shared instance's
/// too) and the memory is the parent's.
fn instance() -> Res<&'static Plfs> {
    if foreign_child() {
        private_plfs()
    } else {
        plfs()
    }
}

/// The path to run for an exec that searches `PATH` (execvp, execvpe, execlp, posix_spawnp):
/// None when `file` names no PLFS program before any other (libc searches then, finding the same
/// first match), else the logical path to exec. A name with a slash is not searched.
pub fn search(file: &[u8], path_env: Option<&[u8]>) -> Option<Vec<u8>> {
    if file.is_empty() || file.contains(&b'/') {
        return None;
    }
    // glibc's default search path when PATH is unset.
    let dirs = path_env.unwrap_or(b"/bin:/usr/bin");
    let mut inst = None;
    for dir in dirs.split(|&b| b == b':') {
        let dir: &[u8] = if dir.is_empty() { b"." } else { dir };
        let mut cand = dir.to_vec();
        cand.push(b'/');
        cand.extend_from_slice(file);
        match classify_at(libc::AT_FDCWD, &cand) {
            Target::Plfs(p) => {
                let plfs = *inst.get_or_insert_with(instance);
                let ok = plfs.is_ok_and(|plfs| {
                    plfs.stat(&p).is_ok_and(|st| st.kind == FileKind::File)
                        && plfs.access(&p, libc::X_OK as u32).is_ok()
                });
                if ok {
                    return Some(cand);
                }
            }
            Target::Real(c) => {
                if real_executable(&c) {
                    return None;
                }
            }
            Target::Pass => {
                if CString::new(cand).is_ok_and(|c| real_executable(&c)) {
                    return None;
                }
            }
        }
    }
    None
}

fn real_executable(c: &CStr) -> bool {
    // SAFETY: a valid C string; faccessat is a plain system call here.
    unsafe { crate::raw_syscall!(libc::SYS_faccessat, libc::AT_FDCWD, c.as_ptr(), libc::X_OK, 0) == 0 }
}

/// The libraries mapped so far: logical path → `/proc/self/fd/N` of its memfd, kept open for
/// the life of the process (the loader knows a library by that name).
static LIBRARIES: Mutex<Option<HashMap<PathBuf, CString>>> = Mutex::new(None);

/// The name `dlopen` must be given for `name`: None when it is not under a mount (libc goes on
/// unchanged), else `/proc/self/fd/N` of a memfd holding the library, as a C string that lives
/// as long as the process.
pub fn for_dlopen(name: &[u8]) -> Res<Option<*const libc::c_char>> {
    if !name.contains(&b'/') {
        return Ok(None);
    }
    let p = match classify_at(libc::AT_FDCWD, name) {
        Target::Pass | Target::Real(_) => return Ok(None),
        Target::Plfs(p) => p,
    };
    let p = match follow(p)? {
        Followed::Real(_) => return Ok(None),
        Followed::Plfs(_, None) => return Err(Errno(libc::ENOENT)),
        Followed::Plfs(_, Some(st)) if st.kind != FileKind::File => return Err(Errno(libc::EISDIR)),
        Followed::Plfs(p, Some(_)) => p,
    };
    let mut libs = LIBRARIES.lock().unwrap_or_else(|e| e.into_inner());
    let libs = libs.get_or_insert_with(HashMap::new);
    if let Some(c) = libs.get(&p) {
        // A CString's bytes stay where they are while the table grows.
        return Ok(Some(c.as_ptr()));
    }
    let plfs = plfs()?;
    let f = plfs.open(&p, OpenFlags::from_posix(libc::O_RDONLY)?, 0, my_pid())?;
    let fd = copy_to_memfd(&f, &p, true);
    let _ = f.close();
    let path = proc_path(fd?);
    let ptr = path.as_ptr();
    libs.insert(p, path);
    crate::rt::report::count(crate::rt::report::Count::Image, 0);
    Ok(Some(ptr))
}

/// Reads from `off` until `buf` is full or the file ends.
fn read_full(f: &plfs_core::OpenFile, buf: &mut [u8], mut off: u64) -> Res<usize> {
    let mut got = 0;
    while got < buf.len() {
        match f.read(&mut buf[got..], off)? {
            0 => break,
            n => {
                got += n;
                off += n as u64;
            }
        }
    }
    Ok(got)
}

/// `#!interp [arg]` → the interpreter and its one optional argument, as the kernel splits the
/// line (the rest after the first run of blanks is one argument, trailing blanks dropped).
fn shebang(head: &[u8]) -> Option<(CString, Option<CString>)> {
    let line = head.strip_prefix(b"#!")?;
    let line = &line[..line.iter().position(|&b| b == b'\n').unwrap_or(line.len())];
    let blank = |b: &u8| *b == b' ' || *b == b'\t';
    let start = line.iter().position(|b| !blank(b))?;
    let line = &line[start..];
    let end = line.iter().rposition(|b| !blank(b))? + 1;
    let line = &line[..end];
    let (interp, arg) = match line.iter().position(blank) {
        Some(i) => {
            let rest = &line[i..];
            let j = rest.iter().position(|b| !blank(b)).unwrap_or(rest.len());
            (&line[..i], Some(&rest[j..]).filter(|a| !a.is_empty()))
        }
        None => (line, None),
    };
    let interp = CString::new(interp).ok()?;
    let arg = match arg {
        Some(a) => Some(CString::new(a).ok()?),
        None => None,
    };
    Some((interp, arg))
}

fn proc_path(fd: i32) -> CString {
    CString::new(format!("/proc/self/fd/{fd}")).expect("no NUL in a number")
}

/// Copies the logical file into a new memfd, seals it and returns a read-only descriptor of it,
/// closed on exec if `cloexec`.
fn copy_to_memfd(f: &plfs_core::OpenFile, p: &Path, cloexec: bool) -> Res<i32> {
    let name = p.file_name().map_or(&b"plfs"[..], |n| n.as_bytes());
    let name = CString::new(name).map_err(|_| Errno(libc::EINVAL))?;
    let flags = libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING;
    // SAFETY: a valid C string and integer flags.
    let w = check(unsafe { crate::raw_syscall!(libc::SYS_memfd_create, name.as_ptr(), flags) })? as i32;
    let r = fill_and_reopen(f, w, cloexec);
    let _ = crate::rt::real::sys::close(w);
    r
}

fn fill_and_reopen(f: &plfs_core::OpenFile, w: i32, cloexec: bool) -> Res<i32> {
    let mut buf = vec![0u8; 1 << 20];
    let mut off = 0u64;
    loop {
        let n = read_full(f, &mut buf, off)?;
        let mut done = 0;
        while done < n {
            let chunk = &buf[done..n];
            // SAFETY: `chunk` is valid for reading for its length.
            let k =
                unsafe { crate::raw_syscall!(libc::SYS_pwrite64, w, chunk.as_ptr(), chunk.len(), off + done as u64) };
            done += check(k)? as usize;
        }
        off += n as u64;
        if n < buf.len() {
            break;
        }
    }
    let seals = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE | libc::F_SEAL_SEAL;
    crate::rt::real::sys::fcntl_int(w, libc::F_ADD_SEALS, seals as libc::c_long)?;
    let path = proc_path(w);
    let flags = libc::O_RDONLY | if cloexec { libc::O_CLOEXEC } else { 0 };
    // SAFETY: a valid C string and integer flags.
    Ok(check(unsafe { crate::raw_syscall!(libc::SYS_openat, libc::AT_FDCWD, path.as_ptr(), flags) })? as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shebang_lines_split_as_the_kernel_does() {
        let s = |h: &[u8]| shebang(h).map(|(i, a)| (i.into_string().unwrap(), a.map(|a| a.into_string().unwrap())));
        assert_eq!(s(b"#!/bin/sh\necho"), Some(("/bin/sh".into(), None)));
        assert_eq!(
            s(b"#! /usr/bin/env  python3 -u \nx"),
            Some(("/usr/bin/env".into(), Some("python3 -u".into())))
        );
        assert_eq!(s(b"#!/bin/bash -e"), Some(("/bin/bash".into(), Some("-e".into()))));
        assert_eq!(s(b"#!   \n"), None);
        assert_eq!(s(b"\x7fELF"), None);
    }
}
