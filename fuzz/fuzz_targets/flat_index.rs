//! Fuzz target: the flattened-index decoder never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let _ = plfs_format::flat::Flat::decode(Path::new("fuzz"), data);
});
