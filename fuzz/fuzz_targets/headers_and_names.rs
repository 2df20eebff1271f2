//! Fuzz target: log headers, the container marker and dropping/log file names never panic, and
//! every parsed dropping name round-trips.
#![no_main]

use libfuzzer_sys::fuzz_target;
use plfs_format::{self as format, LogHeader, Marker, MetaDropping};
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let p = Path::new("fuzz");
    let _ = LogHeader::decode(p, data, format::INDEX_MAGIC);
    let _ = LogHeader::decode(p, data, format::DATA_MAGIC);
    let _ = Marker::decode(p, data);
    let s = String::from_utf8_lossy(data);
    if let Some(d) = MetaDropping::parse(&s) {
        assert_eq!(MetaDropping::parse(&d.name()), Some(d));
    }
    let _ = format::parse_log_name(&s);
});
