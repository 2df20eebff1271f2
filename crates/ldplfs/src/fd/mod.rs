//! The descriptor table: which descriptors and paths are PLFS's. [`conf`] (the configuration,
//! the PLFS instance, the pid), [`entry`] (one open PLFS file), [`table`] (descriptor numbers to
//! entries; [`direct`], its look-up without a lock), [`placeholder`] (the memfd behind each PLFS
//! descriptor, adoption after exec), [`paths`] (which paths are under a mount point; the working
//! directory), [`fork`] (the pthread_atfork handlers), [`held`] (container locks held for another
//! process image). Uses only `rt`.

pub mod conf;
pub mod direct;
pub mod entry;
pub mod fork;
pub mod held;
pub mod paths;
pub mod placeholder;
pub mod table;
