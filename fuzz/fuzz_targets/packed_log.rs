//! Fuzz target: the 1-N log decoder (docs/format.md §11) never panics, and what it returns
//! covers the body in order: whole records and damaged stretches up to `used`, a torn tail after.
#![no_main]

use libfuzzer_sys::fuzz_target;
use plfs_format::small;

fuzz_target!(|data: &[u8]| {
    let d = small::decode(data, 64);
    assert!(d.used <= data.len());
    assert!(d.tail.is_none() || d.used < data.len());
    let mut end = 64u64;
    for s in &d.damaged {
        assert!(s.at >= end && s.len > 0, "stretches in order");
        end = s.at + s.len;
    }
    assert!(end <= 64 + d.used as u64);
});
