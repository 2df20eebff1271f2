//! The record grammars of §2, §3, §4, §12 and §14, field by field: each grammar's fixed-width
//! fields are where its byte table puts them, add up to the structure's size, and every value a
//! grammar fixes (`version u32 = 2`, `magic [4] = "PLFW"`, `flags u32 = 0`) is what the encoder
//! writes.

use super::*;

#[test]
fn marker_grammar_matches_the_encoder() {
    let sec = section("## 2. Marker");
    let g = grammar(sec, "Format:");
    agrees_with_table(&g, &table(sec));
    assert_eq!(fixed_width(&g), MARKER_LEN_V3);
    let m = Marker {
        version: FORMAT_VERSION,
        container_id: u128::MAX / 3,
        created_ns: 0x0102_0304_0506_0708,
    };
    let b = m.encode();
    assert_eq!(check_fixed(&b, &g), 5, "magic, version, flags, reserved, padding");
    assert_eq!(field_value(&b, field(&g, "container_id")), m.container_id);
    assert_eq!(field_value(&b, field(&g, "created_ns")), u128::from(m.created_ns));
}

#[test]
fn frame_grammar_matches_the_encoder() {
    let sec = section("## 3. Data log");
    let g = grammar(&sec[sec.find("Frame (").expect("the frame")..], "Format:");
    agrees_with_table(&g, &table(sec));
    assert_eq!(fixed_width(&g), FRAME_LEN);
    let f = Frame {
        logical_off: 0x1234_5678,
        length: 77,
        ts: 0xfeed_beef,
        data_crc: 0xabcd,
    };
    let b = f.encode();
    assert_eq!(check_fixed(&b, &g), 1, "the magic");
    for (name, v) in [
        ("length", u64::from(f.length)),
        ("logical_off", f.logical_off),
        ("ts", f.ts),
        ("data_crc32c", u64::from(f.data_crc)),
    ] {
        assert_eq!(field_value(&b, field(&g, name)), u128::from(v), "{name}");
    }
    // Framed and unframed data logs start with a header of the size §4.1 gives, magic PLFSDAT.
    for head in ["Format (framed", "Format (unframed"] {
        let log = grammar(sec, head);
        assert_eq!(log[0].name, "header");
        let text = sec[sec.find(head).unwrap()..].lines().next().unwrap();
        assert!(text.contains(&format!("header ({DATA_HEADER_LEN} bytes, magic \"PLFSDAT\\0\")")));
        assert_eq!(&DATA_MAGIC, b"PLFSDAT\0");
    }
    let text = prose(sec);
    assert!(text.contains(&format!(
        "so the first data byte is at physical offset {}",
        DATA_HEADER_LEN + FRAME_LEN
    )));
    assert!(text.contains(&format!("back to back from offset {DATA_HEADER_LEN}")));
    assert!(text.contains(&format!("(1 ..= {FRAME_MAX_DATA:#x};")));
}

#[test]
fn index_log_grammars_match_the_encoders() {
    let sec = section("## 4. Index log");
    // The log: a header, then records.
    let log = grammar(sec, "Format:");
    assert_eq!((log[0].name, log[1].name), ("header", "record"));
    assert!(sec.contains(&format!("header ({INDEX_HEADER_LEN} bytes, magic \"PLFSIDX\\0\")")));
    // §4.1: the header.
    let h41 = section("### 4.1 Log header");
    let g = grammar(h41, "Format:");
    agrees_with_table(&g, &table(h41));
    assert_eq!(fixed_width(&g), INDEX_HEADER_LEN);
    let h = LogHeader {
        magic: INDEX_MAGIC,
        writer_id: 0x0807_0605_0403_0201,
        open_ns: 99,
        pid: 4242,
        flags: LOG_FLAG_FRAMED,
    };
    let b = h.encode();
    assert_eq!(check_fixed(&b, &g), 3, "version, header_len, reserved");
    for (name, v) in [
        ("writer_id", h.writer_id),
        ("open_ns", h.open_ns),
        ("pid", u64::from(h.pid)),
        ("flags", u64::from(h.flags)),
    ] {
        assert_eq!(field_value(&b, field(&g, name)), u128::from(v), "{name}");
    }
    // §4.2: every record's frame.
    let r42 = section("### 4.2 Records");
    let frame = grammar(r42, "Format:");
    let names: Vec<&str> = frame.iter().map(|f| f.name).collect();
    assert_eq!(names, ["kind", "body_len", "body", "crc32c"]);
    assert_eq!(frame[2].ty, Some("[body_len]"));
    let overhead: usize = frame.iter().filter_map(|f| f.size).sum();
    assert_eq!(overhead, REC_FRAME_OVERHEAD);
    // WRITE.
    let write = &r42[r42.find("Kind 1, WRITE").expect("WRITE")..];
    let g = grammar(write, "Format:");
    agrees_with_table(&g, &table(write));
    let rec = WriteRecord {
        logical_off: 1 << 40,
        length: 3,
        physical_off: 96,
        ts: 5,
        data_crc: 6,
    };
    let mut b = Vec::new();
    rec.encode_into(&mut b);
    assert_eq!(check_fixed(&b, &g), 3, "kind, body_len, flags");
    for (name, v) in [
        ("logical_off", rec.logical_off),
        ("length", rec.length),
        ("physical_off", rec.physical_off),
        ("ts", rec.ts),
        ("data_crc32c", u64::from(rec.data_crc)),
    ] {
        assert_eq!(field_value(&b, field(&g, name)), u128::from(v), "{name}");
    }
    pattern_grammar_matches_the_encoder(r42);
}

/// §4.2's PATTERN: its fixed fields, then `count - 1` varints, then the checksum.
fn pattern_grammar_matches_the_encoder(r42: &'static str) {
    let pattern = &r42[r42.find("Kind 2, PATTERN").expect("PATTERN")..];
    let g = grammar(pattern, "Format:");
    let varints = g.iter().position(|f| f.size.is_none()).expect("the varints");
    assert!(g[varints].name.starts_with("(count-1)") && g[varints..].iter().any(|f| f.name == "crc32c"));
    assert_eq!(fixed_width(&g), REC_FRAME_OVERHEAD - 4 + PATTERN_FIXED_LEN);
    let p = PatternRecord {
        logical_start: 1 << 33,
        length: 4096,
        stride: 8192,
        physical_start: 64,
        ts: vec![10, 11, 300, 300],
    };
    let mut b = Vec::new();
    p.encode_into(&mut b);
    assert_eq!(check_fixed(&b, &g), 2, "kind, flags");
    for (name, v) in [
        ("body_len", b.len() as u64 - 8),
        ("logical_start", p.logical_start),
        ("length", p.length),
        ("stride", p.stride),
        ("count", p.ts.len() as u64),
        ("physical_start", p.physical_start),
        ("ts_first", 10),
        ("ts_last", 300),
    ] {
        assert_eq!(field_value(&b, field(&g, name)), u128::from(v), "{name}");
    }
    // The deltas 1, 289, 0 as LEB128, then the checksum of everything before it.
    let end = fixed_width(&g);
    assert_eq!(&b[end..b.len() - 4], &[1, 0xa1, 0x02, 0]);
    assert_eq!(le_u32(&b[b.len() - 4..]), crc32c::crc32c(&b[..b.len() - 4]));
}

#[test]
fn xattr_grammar_matches_the_encoder() {
    let sec = section("## 12. Extended attributes");
    let g = grammar(sec, "Format:");
    let b = xattr::encode(b"some value");
    assert_eq!(check_fixed(&b, &g), 2, "magic, version");
    assert_eq!(fixed_width(&g), 16, "magic, version, value_len");
    assert_eq!(field_value(&b, field(&g, "value_len")), 10);
    assert_eq!(field(&g, "value").ty, Some("[value_len]"));
    assert_eq!(&b[16..26], b"some value");
    assert_eq!(b.len(), 16 + 10 + 4, "then the crc32c");
    assert_eq!(xattr::MAX_FILE, 16 + xattr::MAX_VALUE + 4);
}

#[test]
fn journal_grammar_matches_the_encoder() {
    let sec = section("## 14. Compaction");
    let g = grammar(sec, "Format:");
    assert_eq!(fixed_width(&g), compact::JOURNAL_HEADER_LEN);
    let j = compact::Journal {
        state: compact::STATE_PENDING,
        writer_id: 0xdead_beef,
        created_ns: 17,
        entries: vec![
            (compact::E_NEW_LOG, "data.00000000deadbeef.1.h".into()),
            (compact::E_RETIRED, "data.0000000000000001.2.h".into()),
        ],
    };
    let b = j.encode();
    assert_eq!(check_fixed(&b, &g), 3, "magic, version, reserved");
    for (name, v) in [
        ("state", u64::from(j.state)),
        ("writer_id", j.writer_id),
        ("created_ns", j.created_ns),
        ("nentries", 2),
    ] {
        assert_eq!(field_value(&b, field(&g, name)), u128::from(v), "{name}");
    }
    // The entries, each as `entry:` says, then the checksum of every preceding byte.
    let e = grammar(sec, "entry:");
    let head = fixed_width(&e);
    let mut at = compact::JOURNAL_HEADER_LEN;
    for (kind, name) in &j.entries {
        let rec = &b[at..];
        assert_eq!(check_fixed(rec, &e), 1, "reserved");
        assert_eq!(field_value(rec, field(&e, "kind")), u128::from(*kind));
        assert_eq!(field_value(rec, field(&e, "len")), name.len() as u128);
        assert_eq!(field(&e, "name").ty, Some("[len]"));
        assert_eq!(&rec[head..head + name.len()], name.as_bytes());
        at += head + name.len();
    }
    assert_eq!(le_u32(&b[at..]), crc32c::crc32c(&b[..at]));
    assert_eq!(b.len(), at + 4);
}
