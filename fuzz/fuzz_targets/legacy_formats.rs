//! Fuzz target: the PLFS 2.x decoders (index records, global.index, 1-N name and index logs,
//! metalinks, dropping and meta names) and the extended-attribute frame never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use plfs_format::legacy::{self as names, records, small};
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let p = Path::new("fuzz");
    let _ = records::decode_index_log(p, data);
    let _ = records::decode_global(p, data);
    let _ = small::decode_names(p, data);
    let _ = small::decode_small_index(p, data);
    let _ = names::parse_metalink(p, data);
    let _ = plfs_format::xattr::decode(p, data);
    if let Ok(s) = std::str::from_utf8(data) {
        let _ = names::Dropping::parse(s);
        let _ = names::Meta::parse(s);
        let _ = names::VersionTag::parse(s);
        let _ = names::parse_hostdir(s);
    }
});
