//! Open PLFS files: what several interposer families do to them. [`io`] (reads, writes, the
//! position, sync), [`shm`] (shared mappings), [`locks`] (fcntl byte-range locks), [`close`]
//! (the end of a descriptor and of an open file), [`streams`] (cookie streams and the standard
//! streams), [`open`] (opening, dups), [`init`] (initialisation and the entry of every
//! interposer). Uses `fd` and `rt`.

pub mod close;
pub mod image;
pub mod init;
pub mod io;
pub mod locks;
pub mod open;
pub mod shm;
pub mod streams;
