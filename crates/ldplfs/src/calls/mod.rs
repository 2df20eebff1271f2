//! The interposed entry points, one module per family: [`open`] (the open family, openat2),
//! [`fds`] (close, dup, fcntl, ioctl), [`io`] (read/write and friends, lseek, sync), [`mmap`]
//! (mappings), [`stat`], [`ns`] (namespace: unlink, rename, mkdir...), [`attrs`] (chmod, chown,
//! times, xattrs), [`cwd`] (working directory, realpath, mkstemp), [`dirs`] (directory
//! streams), [`stdio`], [`aio`], [`exec`] (the exec family, posix_spawn, dlopen),
//! [`process`] (what exec and spawn do first, vfork, exit; the constructor).
//! Uses `file`, `fd` and `rt`; no module of `calls` is used by a lower layer.

pub mod aio;
pub mod attrs;
pub mod cwd;
pub mod dirs;
pub mod exec;
pub mod fds;
pub mod io;
pub mod mmap;
pub mod ns;
pub mod open;
pub mod process;
pub mod stat;
pub mod stdio;
