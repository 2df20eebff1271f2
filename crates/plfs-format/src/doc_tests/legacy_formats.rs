//! "Legacy formats read": the PLFS 2.x names, made from the document's templates, parse as the
//! document says; its record grammars give the offsets the decoders read (and the encoders the
//! tests build fixtures with write).

use super::*;
use crate::legacy::{self as lg, records, small as lsm};

fn legacy() -> &'static str {
    section("## Legacy formats read")
}

/// `template` with each `<var>` replaced by its value in `vars` (every variable must have one).
fn instantiate(template: &str, vars: &[(&str, &str)]) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('<') {
        out.push_str(&rest[..open]);
        let close = open + rest[open..].find('>').expect("a closing >");
        let var = &rest[open + 1..close];
        let v = vars.iter().find(|(k, _)| *k == var);
        out.push_str(v.unwrap_or_else(|| panic!("no value for <{var}> in {template:?}")).1);
        rest = &rest[close + 1..];
    }
    out + rest
}

/// The first backquoted text of `sec` that starts with `prefix`.
fn quoted(sec: &str, prefix: &str) -> String {
    let text = prose(sec);
    let found = text.split('`').find(|t| t.starts_with(prefix));
    found
        .unwrap_or_else(|| panic!("no `{prefix}...` in the section"))
        .to_string()
}

#[test]
fn legacy_names_match_the_document() {
    let sec = legacy();
    let vars = [
        ("N", "3"),
        ("sec", "1795406057"),
        ("usec", "516889"),
        ("host", "vm.ex"),
        ("pid", "13947"),
        ("release", "2.5.1"),
        ("data", "1.0"),
        ("n", "2510331044"),
        ("last_offset", "40"),
        ("total_bytes", "13"),
    ];
    // The names a container holds.
    for name in [lg::ACCESS_NAME, lg::GLOBAL_INDEX] {
        assert!(prose(sec).contains(&format!("`{name}`")), "{name}");
    }
    assert!(prose(sec).contains(&format!("`{}/<key>`", lg::XATTRS_DIR)));
    assert!(prose(sec).contains(&format!("`{}/`", lg::META_DIR)));
    // An index log in its hostdir, and the data logs its records point into.
    let index = instantiate(&quoted(sec, "hostdir.<N>/dropping.index."), &vars);
    let (hostdir, index) = index.split_once('/').expect("hostdir/log");
    assert_eq!(lg::parse_hostdir(hostdir), Some(3));
    let d = lg::Dropping::parse(index).expect("an index log's name");
    assert!(d.is_index);
    assert_eq!((d.host.as_str(), d.pid), ("vm.ex", 13947));
    let data = quoted(sec, "dropping.data.<same sec.usec.host>");
    let data = instantiate(&data, &[("same sec.usec.host", &d.stamp), ("P", "7")]);
    assert_eq!(d.data_name_for(7), data);
    assert!(!lg::Dropping::parse(&data).expect("a data log's name").is_index);
    // The version tag.
    let tag = instantiate(&quoted(sec, "version-tag."), &vars);
    let tag = lg::VersionTag::parse(&tag).expect("a version tag");
    assert_eq!((tag.release.as_str(), tag.data.as_str()), ("2.5.1", "1.0"));
    // `meta/`: the open records and the size droppings.
    let open = instantiate(&quoted(sec, "meta/open."), &vars);
    let want = lg::Meta::Open {
        host: "vm.ex".into(),
        pid: 13947,
    };
    assert_eq!(lg::Meta::parse(open.strip_prefix("meta/").unwrap()), Some(want));
    let size = instantiate(&quoted(sec, "<last_offset>."), &vars);
    let want = lg::Meta::Size {
        last_offset: 40,
        bytes: 13,
        sec: 1795406057,
        usec: 516889,
        host: "vm.ex".into(),
    };
    assert_eq!(lg::Meta::parse(&size), Some(want));
    // A metalink's text, as the example gives it, with and without its prefix.
    let example = quoted(sec, "23/");
    let (len, backend) = example.split_at(2);
    let link = std::path::Path::new("hostdir.3");
    assert_eq!(
        lg::parse_metalink(link, example.as_bytes()).unwrap(),
        std::path::Path::new(backend)
    );
    let prefixed = format!("{len}posix:{backend}");
    assert!(quoted(sec, "posix:") == "posix:");
    assert_eq!(
        lg::parse_metalink(link, prefixed.as_bytes()).unwrap(),
        std::path::Path::new(backend)
    );
    // A 1-N directory.
    assert!(prose(sec).contains(&format!("`<dir>/{}/`", lsm::SMALL_CONTAINER)));
    assert!(prose(sec).contains(&format!("`{}`", lsm::STAT_FILE)));
    let logs = quoted(sec, "dropping.{name,index,data}.");
    for kind in ["name", "index", "data"] {
        let name = instantiate(&logs.replace("{name,index,data}", kind), &vars);
        assert!(name.starts_with(&format!("dropping.{kind}.")));
        if kind == "name" {
            assert!(name.starts_with(lsm::NAME_PREFIX));
        } else {
            assert_eq!(lg::Dropping::parse(&name).map(|d| d.is_index), Some(kind == "index"));
        }
    }
}

#[test]
fn legacy_index_records_match_the_document() {
    let sec = legacy();
    let at = sec.find("-byte records").expect("the index records");
    let width: usize = sec[..at]
        .rsplit(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|n| n.parse().ok())
        .expect("their size");
    assert_eq!(width, records::HOST_ENTRY_LEN);
    let g = grammar(&sec[at..], "records");
    assert_eq!(fixed_width(&g), records::HOST_ENTRY_LEN);
    assert!(g.iter().all(|f| f.size.is_some()), "{g:?}");
    let e = records::HostEntry {
        logical: 0x0102_0304_0506,
        physical: 0x0708_090a,
        length: 4097,
        begin_ts: 1795406057.25,
        end_ts: 1795406057.5,
        id: 13947,
        extra: 0xfeed,
    };
    let b = records::encode_entry(&e);
    for (name, v) in [
        ("logical_offset", e.logical),
        ("physical_offset", e.physical),
        ("length", e.length),
        ("begin_ts", e.begin_ts.to_bits()),
        ("end_ts", e.end_ts.to_bits()),
        ("pid", u64::from(e.id)),
        ("pad", u64::from(e.extra)),
    ] {
        assert_eq!(field_value(&b, field(&g, name)), u128::from(v), "{name}");
    }
    // A partial record at the end is ignored.
    let p = std::path::Path::new("dropping.index.1.2.h.3");
    let mut log = b.to_vec();
    log.extend_from_slice(&b[..20]);
    assert_eq!(records::decode_index_log(p, &log).unwrap(), (vec![e], 20));
    assert!(prose(sec).contains("A partial record at the end of an index log (a writer died appending) is ignored"));
    // global.index: a count, the entries (the pid field the chunk slot, the pad the writer's
    // pid), the chunk paths each followed by '\n', a NUL.
    let at = sec.find("**`global.index`**").expect("global.index");
    let g = grammar(&sec[at..], "`{");
    assert_eq!((g[0].name, g[0].ty), ("n", Some("u64")));
    assert!(g[1].name == "n" && g[1].ty == Some("×"), "{:?}", g[1]);
    let entries = prose(&sec[at..]);
    assert!(entries.contains(&format!(
        "n × {}-byte entries (the pid field is the chunk slot, the pad the writer pid)",
        records::HOST_ENTRY_LEN
    )));
    assert!(entries.contains("chunk paths, each followed by '\\n' | NUL }"));
    let chunks = [
        "/b//f/hostdir.3//dropping.data.1.2.h.7",
        "/b/f/hostdir.3/dropping.data.1.2.h.8",
    ];
    let mut file = 2u64.to_le_bytes().to_vec();
    for (slot, pid) in [(1u32, 8u32), (0, 7)] {
        file.extend_from_slice(&records::encode_entry(&records::HostEntry {
            id: slot,
            extra: pid,
            ..e
        }));
    }
    for c in chunks {
        file.extend_from_slice(c.as_bytes());
        file.push(b'\n');
    }
    file.push(0);
    let gi = records::decode_global(std::path::Path::new("global.index"), &file).unwrap();
    assert_eq!(gi.chunks, chunks);
    assert_eq!((gi.entries[0].id, gi.entries[0].extra), (1, 8));
}

#[test]
fn legacy_small_records_match_the_document() {
    let sec = legacy();
    let at = sec.find("Name records").expect("the name records");
    let raw = quoted(&sec[at..], "{ length u32");
    // `ts u64 = sec<<32 | usec` has a `|` of its own: the field is `ts u64`, its value below.
    assert!(raw.contains("| ts u64 = sec<<32 | usec |"), "{raw}");
    let body = raw.replace(" = sec<<32 | usec", "");
    let body: &'static str = Box::leak(body.into_boxed_str());
    let g = fields(body.trim_start_matches('{').trim_end_matches('}'));
    let names: Vec<&str> = g.iter().map(|f| f.name).collect();
    assert_eq!(names, ["length", "op", "ts", "name,"]);
    assert_eq!(fixed_width(&g), lsm::NAME_HEADER_LEN);
    // The operations, in the document's words.
    let ops = prose(&sec[at..]);
    let ops = &ops[ops.find("(op ").expect("the operations") + 4..];
    let ops: Vec<(u32, &str)> = ops[..ops.find(')').unwrap()]
        .split(", ")
        .map(|o| {
            let mut w = o.split_whitespace();
            (w.next().unwrap().parse().unwrap(), w.next().unwrap())
        })
        .collect();
    let codes = [
        (lsm::ops::CREATE, "CREATE"),
        (lsm::ops::DELETE, "DELETE"),
        (lsm::ops::OPEN, "OPEN"),
        (lsm::ops::RENAME, "RENAME"),
        (lsm::ops::UTIME, "UTIME"),
    ];
    assert_eq!(ops, codes);
    // A RENAME as the document describes it: `length` counts the header, `from\0to\0`.
    assert!(raw.contains("length u32 (header included)"));
    assert!(prose(sec).contains("4 RENAME with `from\\0to\\0`"));
    let (secs, usec) = (1795406057u64, 516889u64);
    let b = lsm::encode_name(lsm::ops::RENAME, secs << 32 | usec, &["from", "to"]);
    assert_eq!(field_value(&b, field(&g, "length")), b.len() as u128);
    assert_eq!(field_value(&b, field(&g, "op")), u128::from(lsm::ops::RENAME));
    assert_eq!(field_value(&b, field(&g, "ts")), u128::from(secs << 32 | usec));
    assert!(b[lsm::NAME_HEADER_LEN..].starts_with(b"from\0to\0"));
    assert_eq!(
        lsm::ts_ns(secs << 32 | usec),
        (secs * 1_000_000_000 + usec * 1000) as i64
    );
    let r = lsm::decode_names(std::path::Path::new("n"), &b).unwrap();
    assert_eq!((r[0].name.as_str(), r[0].to.as_deref()), ("from", Some("to")));
    // Index records, and the truncate among them.
    let at = sec.find("Index records").expect("the 1-N index records");
    let g = grammar(&sec[at..], "records");
    assert_eq!(fixed_width(&g), lsm::SMALL_INDEX_LEN);
    let b = lsm::encode_small_index(1, 2, 3, 4, Some(5));
    for (i, name) in ["fid", "offset", "length", "ts", "physical"].iter().enumerate() {
        assert_eq!(field_value(&b, field(&g, name)), i as u128 + 1, "{name}");
    }
    assert!(prose(&sec[at..]).contains("(`length 0, physical -1` = truncate to `offset`)"));
    let t = lsm::encode_small_index(1, 77, 0, 4, None);
    assert_eq!(field_value(&t, field(&g, "physical")), u128::from(u64::MAX), "-1");
    let d = lsm::decode_small_index(std::path::Path::new("i"), &t).unwrap();
    assert_eq!((d[0].offset, d[0].length, d[0].physical), (77, 0, None));
}
