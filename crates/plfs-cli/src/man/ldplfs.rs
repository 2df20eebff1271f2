//! `ldplfs(8)`: the LD_PRELOAD library, from crates/ldplfs/README.md: how to use it, what it
//! intercepts, its environment and its limits.

use super::roff::Page;

/// The variables ldplfs reads (plfs(1) lists them too).
pub const ENV: &[(&str, &str)] = &[
    (
        "LDPLFS_LOG",
        "What ldplfs itself prints on standard error: `warn` (or 1) its warnings, `debug` (or 2, `trace`) one line \
         per event, `off` nothing at all. Unset: nothing, except damage found in a container (which the program sees \
         only as EIO) and the one warning about an unusable plfsrc. The library's own messages follow PLFS_LOG.",
    ),
    (
        "LDPLFS_REPORT",
        "Set and not 0: each process says, when it exits, what ldplfs served it, on one line on standard error: \
         files opened through PLFS, calls by class (open, read, write, other), bytes read and written, programs or \
         libraries under a mount run from memory; and a second line if a raw syscall() named a path under a mount \
         point (the kernel got it, around ldplfs). The first process always reports; the processes it starts \
         report only when they served or missed something.",
    ),
    (
        "LDPLFS_REPORT_CHILD",
        "Set by ldplfs in the processes started under LDPLFS_REPORT (so that they report only when they have \
         something to say). Do not set it yourself.",
    ),
];

/// The page.
pub fn page() -> Page {
    let mut p = Page::new("ldplfs", 8);
    p.sh("Name");
    p.raw("ldplfs \\- PLFS for unmodified programs, through LD_PRELOAD");
    p.sh("Synopsis");
    p.raw(".PP\n\\fBLD_PRELOAD\\fR=\\fIPREFIX\\fR/lib/libldplfs.so \\fIprogram\\fR [\\fIargs\\fR]");
    p.sh("Description");
    p.p(
        "libldplfs.so, loaded with LD_PRELOAD, serves every path under a mount point of the plfsrc (see plfsrc(5)) \
         through PLFS, inside the program's own process: absolute paths, paths relative to the working directory, \
         and paths relative to a directory descriptor in the *at calls, with `.` and `..` resolved lexically. \
         Every other call goes straight to libc; a program that never touches a mount point pays one prefix \
         comparison per path call. No mount, no daemon and no root are needed: cp, cat, tar, rsync, bash, python, \
         SQLite and MPI jobs (MPICH's ROMIO) read and write PLFS files.",
    );
    p.p(
        "Each open PLFS file is backed by a real descriptor (a small sealed memfd), so descriptor numbers, dup, \
         fork, exec and O_CLOEXEC behave as the kernel makes them behave; redirections such as `cmd > /mnt/plfs/f` \
         work across exec. A forked child that writes gets its own data log. A process sees its own writes at once, \
         and writes of other processes at open, at a read past what it knows, after fork or wait, after taking an \
         fcntl lock and after fsync. Programs and scripts stored under a mount run from a sealed copy in memory.",
    );
    p.p(
        "If the plfsrc cannot be loaded, ldplfs prints one warning naming the file, its error and the mount points \
         its mount_point: lines still name (read leniently); every call under those mount points then fails with \
         EIO, so that nothing is written into the real directories at their paths, and other paths pass through. \
         Only when no mount point can be read from it does everything pass through. Setuid and setgid \
         programs are left alone (every call goes to libc).",
    );
    p.sh("What is intercepted");
    p.p(
        "The open family (open, openat, creat, openat2, and syscall(SYS_openat2)); close, close_range, closefrom; \
         read, write, pread, pwrite and their vector forms; lseek; stat, lstat, fstat, fstatat, statx, statfs, \
         statvfs; dup, dup2, dup3, fcntl (locks included); truncate, ftruncate, fsync, fdatasync, fallocate, \
         posix_fadvise; unlink, rename, mkdir, rmdir, link, symlink, readlink, access, chmod, chown, utimensat and \
         their *at forms; realpath, chdir, fchdir, getcwd; the xattr family; opendir, fdopendir, readdir, scandir \
         and the rest of the DIR family; fopen, fdopen, freopen, fileno (stdio streams on PLFS files); mmap, munmap, \
         msync; the exec family, posix_spawn, vfork, system, popen, dlopen; wait and exit; mkstemp and friends; the \
         POSIX AIO calls. The full list of symbols is in crates/ldplfs/README.md.",
    );
    p.p(
        "fchmod, fchown, futimens, futimes and utimensat of a descriptor change the file it has open, also after          the file was renamed or unlinked, as on a local file system (for a 1-N file, and a file written by PLFS          2.x, they go by the name it was opened with).",
    );
    p.p(
        "copy_file_range on a PLFS descriptor fails with EXDEV, sendfile, splice and tee with EINVAL, FICLONE with \
         EOPNOTSUPP, so tools fall back to read and write. mmap with MAP_PRIVATE gives a private copy; MAP_SHARED \
         maps a per-node copy in /dev/shm shared by every process of the node that maps the file, written back at \
         msync, munmap, close and exit.",
    );
    p.sh("Environment");
    for (k, v) in ENV {
        p.tp(k, v);
    }
    p.tp(
        "PLFSRC, PLFS_LOG, PLFS_HOSTNAME",
        "The configuration, the library's messages and the writer's host name, as for every front end: see plfs(1).",
    );
    p.sh("Files");
    p.tp(
        "PREFIX/lib/libldplfs.so",
        "The library (`make install`; in a build tree target/release/libldplfs.so).",
    );
    p.tp(
        "/dev/shm/ldplfs-EUID/",
        "The user's private directory (mode 0700) of fcntl lock files (HASH.lock) and shared-mapping copies \
         (HASH.map), one per container.",
    );
    limits(&mut p);
    p.sh("Examples");
    p.pre(
        "L=/usr/local/lib/libldplfs.so\n\
         LD_PRELOAD=$L cp big.dat /mnt/plfs/\n\
         LD_PRELOAD=$L mpirun -np 64 ./app /mnt/plfs/ckpt\n\
         LDPLFS_REPORT=1 LD_PRELOAD=$L md5sum /mnt/plfs/ckpt\n\
         LD_PRELOAD=$L bash     # everything started from it sees PLFS",
    );
    p.see_also(&[
        "plfs(1)".into(),
        "plfsrc(5)".into(),
        "plfs-mount(1)".into(),
        "plfs-stats(1)".into(),
    ]);
    p
}

/// The Limits section.
fn limits(p: &mut Page) {
    p.sh("Limits");
    p.p(
        "Only dynamically linked programs that call libc are reached. Static binaries and programs that make raw \
         system calls (Go programs, anything statically linked, io_uring) bypass ldplfs: use the FUSE mount, \
         plfs-mount(1). LDPLFS_REPORT counts the raw syscall() calls that named a path under a mount point.",
    );
    p.p(
        "A program that closes every descriptor with a raw system call: made through syscall(3) \
         (syscall(SYS_close_range, 3, ~0U, 0), or SYS_close in a loop), the call is served as close_range or \
         close, which leave ldplfs's own descriptors alone (its open PLFS files are closed first). Made with the \
         instruction itself (a static binary, Go, inline assembly), it cannot be seen: it closes the library's \
         descriptors too. The next call that finds a backend's root descriptor closed (EBADF) opens the root \
         again and is made again, so new files open, read and write as before (after the 15th such reopening \
         in one process every call fails with EBADF, saying why once with PLFS_LOG=warn). Files that were open \
         through PLFS at that moment are lost to the process: their calls fail (EBADF), and what their close \
         could not write is what a writer killed there leaves (plfs-fsck(1); a 1-N file not yet closed is not \
         there). Descriptors the library held then are never closed or used again, since their numbers may be \
         another file's by now; ldplfs keeps its descriptors at 512 and above, so a loop that closes the low \
         numbers does not reach them.",
    );
    p.p(
        "Paths are resolved lexically: a symbolic link outside the mount that points into it is not followed into \
         PLFS. glibc's glob(3), ftw(3), nftw(3) and posix_spawn file actions that open a PLFS path make internal \
         calls that are not seen. The mount point does not appear in a listing of its parent directory.",
    );
    p.p(
        "The dynamic loader cannot find a library under a mount by itself (DT_NEEDED through LD_LIBRARY_PATH or an \
         RPATH into the mount); fexecve of a PLFS descriptor fails; /proc/self/exe of a program run from a mount \
         names its memory copy.",
    );
    p.p(
        "Locks and shared mappings are shared between the processes of one node and one user, not across nodes. \
         O_APPEND writes of several processes land whole, one after another, at the end of the file (on a backend \
         without flock, only those of one process are ordered). Hard links are \
         not supported (EPERM); extended attributes give ENOTSUP. A process made by glibc's clone() wrapper shares \
         descriptors without their positions being written back first.",
    );
    p.p(
        "Signal handlers: a call from a handler on a descriptor that is not a PLFS one (stderr, a plain file, a \
         pipe, a socket) goes straight to the kernel, as without ldplfs. A call on a PLFS descriptor (write, read \
         and the rest) from a handler that interrupted the same thread inside ldplfs fails with EAGAIN: the \
         interrupted call may hold the locks it would need, and waiting for them would deadlock (EAGAIN rather \
         than EINTR, which handlers often retry in a loop that could never end). From a handler that interrupted \
         the program outside ldplfs it is served like any other call, which takes locks and allocates memory: \
         like malloc, that is not async-signal-safe. Threads that ldplfs starts itself block asynchronous \
         signals, so a process-directed signal is handled on one of the program's threads.",
    );
    p.p(
        "A process killed by a signal keeps every write that returned (each write's bytes carry a frame that \
         describes them); only the index records it had not written out are lost, and readers recover them from \
         those frames.",
    );
}
