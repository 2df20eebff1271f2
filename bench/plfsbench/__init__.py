"""plfs benchmark suite: runs the same workloads through a plain file, ldplfs, the FUSE mount
and the C API, and writes CSVs, figures and a markdown summary (see bench/README.md)."""
