//! Fuzz target: the index-log record decoder must never panic, and what it accepts must fit in
//! its input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use plfs_format as format;

fuzz_target!(|data: &[u8]| {
    let d = format::decode_records(data);
    assert!(d.valid_len <= data.len());
    assert!(d.tail_error.is_some() || d.valid_len == data.len());
});
