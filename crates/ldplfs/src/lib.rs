//! ldplfs: LD_PRELOAD front end.
