//! FUSE daemon serving a plfs mount point.
