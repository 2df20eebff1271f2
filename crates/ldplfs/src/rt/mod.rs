//! The runtime: what every interposed call needs before it knows anything about PLFS files.
//! [`log`] (diagnostics), [`errno`] (errors and C failure values), [`real`] (libc's own
//! functions and raw system calls), [`guard`] (reentrancy and the FFI boundary), [`sync`]
//! (mutexes held across fork), [`report`] (the counts `LDPLFS_REPORT=1` prints at exit). Nothing here uses a module outside `rt`.

pub mod errno;
pub mod guard;
pub mod log;
pub mod real;
pub mod report;
pub mod sync;
