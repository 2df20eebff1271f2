//! PLFS 2.5-compatible C API (see include/plfs.h).
