//! The rest of §1 (the tree's other names, the build mode, the hash), §5's fast-stat rule, §6's
//! signature, and the names of §12 and §13: made by the code, held to the document's
//! words and grammars.

use super::*;

/// The first backquoted text of `sec` that starts with `prefix`.
fn quoted(sec: &str, prefix: &str) -> String {
    let text = prose(sec);
    let found = text.split('`').find(|t| t.starts_with(prefix));
    found
        .unwrap_or_else(|| panic!("no `{prefix}...` in {sec:.50?}"))
        .to_string()
}

/// The number written in `base` (`0x...`, or octal with a leading 0) right after `before` in `text`.
fn number_after(text: &str, before: &str, radix: u32) -> u64 {
    let at = text.find(before).unwrap_or_else(|| panic!("no {before:?}")) + before.len();
    let digits: String = text[at..]
        .trim_start_matches("0x")
        .chars()
        .take_while(|c| c.is_digit(radix))
        .collect();
    u64::from_str_radix(&digits, radix).unwrap_or_else(|_| panic!("no number after {before:?}"))
}

#[test]
fn tree_and_hash_match_section_1() {
    let sec = section("## 1. The container tree");
    let text = prose(sec);
    // The trees list every name the format crate defines for a container: the first one a
    // version 3 container's (one directory), the second one a version 2 container's.
    let tree = &sec[sec.find("```").unwrap()..];
    let tree = &tree[..tree[3..].find("```").unwrap()];
    let v2 = &sec[sec.find("Version 2 (and 1)").expect("the version 2 tree")..];
    let v2 = &v2[v2.find("```").unwrap()..];
    let v2 = &v2[..v2[3..].find("```").unwrap()];
    let listed_in = |t: &str, name: &str| t.lines().any(|l| l.trim_start().starts_with(name));
    let listed = |name: &str| listed_in(tree, name);
    let journal = compact::JOURNAL_NAME;
    let xattr = format!("{}/{}", xattr::XATTR_DIR, &xattr::file_name(b"k").unwrap()[..2]);
    for name in [
        MARKER_NAME,
        FLAT_NAME,
        journal,
        &xattr,
        HOSTDIR_PREFIX,
        compact::LOCK_NAME,
    ] {
        assert!(listed(name), "§1's tree lacks {name:?}");
    }
    assert!(!listed(META_DIR), "a version 3 container has no {META_DIR}/");
    for name in [MARKER_NAME, META_DIR, FLAT_NAME, journal, HOSTDIR_PREFIX] {
        assert!(listed_in(v2, name), "§1's version 2 tree lacks {name:?}");
    }
    // A version 3 container's droppings and logs are at its top level, and parse as such.
    for prefix in ["open.", "close.", "trunc.", "data.", "index."] {
        let top = tree.lines().any(|l| l.starts_with(&format!("    {prefix}")));
        assert!(top, "§1's tree lacks {prefix}* at the container's top level");
    }
    assert!(parse_droppings(&[cid_dropping_name(1).into()]).is_empty());
    let cmp = tree
        .lines()
        .map(str::trim_start)
        .find(|l| l.starts_with(compact::CMP_TMP_PREFIX))
        .and_then(|l| l.split("  ").next())
        .expect("the compaction's new logs");
    let cmp = cmp.replace("<writer id>", &format!("{:016x}", 77));
    let (data, index) = cmp.split_once('|').expect("data|.index");
    assert_eq!(compact::tmp_data_name(77), data);
    assert_eq!(compact::tmp_index_name(77), data.replace(".data", index));
    assert!(tree.contains(&format!("/{SHADOW_ROOT}/<container id: 32 hex>/{HOSTDIR_PREFIX}<K>/")));
    assert!(text.contains(&format!("Entries whose names start with `{TMP_PREFIX}` are temporary")));
    // FNV-1a with the document's constants is hash_str.
    let basis = number_after(&text, "offset basis ", 16);
    let prime = number_after(&text, "prime ", 16);
    for s in ["", "a", "node07", "file.with.dots", "ü"] {
        let h = s.bytes().fold(basis, |h, b| (h ^ u64::from(b)).wrapping_mul(prime));
        assert_eq!(hash_str(s), h, "{s:?}");
    }
    // The build mode, and the test that tells it.
    assert_eq!(number_after(&text, "**build mode** `", 8), u64::from(BUILD_DIR_MODE));
    let mask = number_after(&text, "`mode & ", 8) as u32;
    let want = number_after(&text, &format!("`mode & {mask:05o} == "), 8) as u32;
    for m in 0..0o10000 {
        assert_eq!(is_build_mode(m), m & mask == want, "{m:o}");
    }
    assert!(text.contains(&format!("or a marker shorter than its {MARKER_LEN} bytes")));
    assert!(is_published(MARKER_LEN as u64, BUILD_DIR_MODE) && !is_published(0, BUILD_DIR_MODE));
}

#[test]
fn fast_stat_matches_section_5() {
    let text = prose(section("## 5. Metadata droppings"));
    let close = |open_ts, close_ts, eof| MetaDropping::Close {
        writer_id: 1,
        open_ts,
        close_ts,
        eof,
        bytes: eof,
        mtime_ns: close_ts,
    };
    let trunc = |ts, size| MetaDropping::Trunc { ts, size, writer_id: 2 };
    let size = |d: &[MetaDropping]| fast_size(d).map(|(s, _)| s);
    assert!(text.contains("If any `open.*` exists, the size comes from the merged index (slow path)"));
    let open = MetaDropping::Open {
        writer_id: 3,
        pid: 1,
        host: "h".into(),
    };
    assert_eq!(size(&[close(1, 2, 10), open]), None);
    assert!(text.contains("let T be the trunc dropping with the greatest `ts` (size 0 at ts 0 if none)"));
    assert_eq!(size(&[]), Some(0));
    assert_eq!(size(&[trunc(5, 7), trunc(9, 3), trunc(7, 100)]), Some(3));
    assert!(text.contains("Close droppings with `close_ts < T.ts` are superseded by T"));
    assert_eq!(size(&[close(1, 4, 50), trunc(5, 7)]), Some(7));
    assert!(text.contains(
        "if one has `open_ts < T.ts <= close_ts` (its session straddles the truncate) the slow path is taken"
    ));
    assert_eq!(size(&[close(1, 5, 50), trunc(5, 7)]), None);
    assert_eq!(size(&[close(1, 6, 50), trunc(5, 7)]), None);
    assert!(text.contains("otherwise size = max(T.size, eof of the rest)"));
    assert_eq!(size(&[close(5, 6, 50), trunc(5, 7)]), Some(50));
    assert_eq!(size(&[close(6, 8, 5), trunc(5, 7)]), Some(7));
    // Sizes in names are not trusted: above 2^63 - 1, the slow path.
    let limit = text.find("above 2^").expect("the largest size") + "above 2^".len();
    let exp: u32 = text[limit..].split(' ').next().unwrap().parse().unwrap();
    assert!(text[limit..].starts_with(&format!("{exp} - 1 (no file is that long)")));
    let max = (1u64 << exp) - 1;
    assert_eq!(size(&[close(1, 2, max)]), Some(max));
    assert_eq!(size(&[close(1, 2, max + 1)]), None);
    assert_eq!(size(&[trunc(1, max + 1)]), None);
}

#[test]
fn flat_signature_matches_section_6() {
    let text = prose(section("## 6. Flattened index"));
    let rule = "Signature = `fnv1a64(sorted dropping names joined by \"/\") XOR (number of names)` over the `close.*` and `trunc.*` droppings";
    assert!(text.contains(rule), "§6 states the signature");
    assert!(text.contains("no `open.*` dropping exists"));
    let d = [
        MetaDropping::Trunc {
            ts: 9,
            size: 4,
            writer_id: 1,
        },
        MetaDropping::Close {
            writer_id: 2,
            open_ts: 1,
            close_ts: 2,
            eof: 3,
            bytes: 3,
            mtime_ns: 2,
        },
        MetaDropping::Close {
            writer_id: 1,
            open_ts: 3,
            close_ts: 4,
            eof: 5,
            bytes: 5,
            mtime_ns: 4,
        },
    ];
    let mut names: Vec<String> = d.iter().map(MetaDropping::name).collect();
    names.sort();
    let want = hash_str(&names.join("/")) ^ names.len() as u64;
    assert_eq!(flat::signature(&d), Some(want));
    let mut reversed = d.to_vec();
    reversed.reverse();
    assert_eq!(flat::signature(&reversed), Some(want), "sorted");
    let open = MetaDropping::Open {
        writer_id: 3,
        pid: 1,
        host: "h".into(),
    };
    assert_eq!(flat::signature(&[d[0].clone(), open]), None);
}

#[test]
fn xattr_names_match_section_12() {
    let sec = section("## 12. Extended attributes");
    let text = prose(sec);
    assert!(sec.starts_with(&format!(" (`{}/`)\n", xattr::XATTR_DIR)));
    let max = number_after(&text, "any key (up to ", 10) as usize;
    assert_eq!(max, xattr::MAX_KEY);
    assert!(text.contains("which keeps the name within NAME_MAX"));
    assert!(xattr::file_name(&vec![b'k'; max]).unwrap().len() <= 255);
    assert!(xattr::file_name(&vec![b'k'; max + 1]).is_err());
    let tmp = quoted(sec, TMP_PREFIX);
    let name = tmp_name(TMP_PREFIX, 0xfeed);
    if let Err(e) = matches_grammar(&tmp, &name) {
        panic!("format.md §12 says {tmp:?}: {e}");
    }
}

#[test]
fn upgrade_temporaries_match_section_13() {
    let sec = section("## 13. `plfs upgrade` temporaries");
    for (template, prefix) in [
        (".plfstmp.upgrade.", UPGRADE_PREFIX),
        (".plfstmp.rp.", RENAME_TRASH_PREFIX),
    ] {
        let grammar = quoted(sec, template);
        let name = tmp_name(prefix, 0x0123_4567_89ab_cdef);
        if let Err(e) = matches_grammar(&grammar, &name) {
            panic!("format.md §13 says {grammar:?}: {e}");
        }
        assert!(name.starts_with(TMP_PREFIX));
    }
    assert!(prose(sec).contains(&format!("(a `{TMP_PREFIX}` name: never a logical entry)")));
    assert_eq!(quoted(sec, ".plfstmp.name"), RENAME_NAME_FILE);
    // What tells a partial copy from a superseded original.
    assert_eq!(quoted(sec, ".plfscontainer"), MARKER_NAME);
    assert_eq!(quoted(sec, ".plfsaccess"), legacy::ACCESS_NAME);
    assert_eq!(quoted(sec, "SMALLFILE"), legacy::small::SMALL_CONTAINER);
    assert_eq!(quoted(sec, "meta-file"), legacy::small::STAT_FILE);
}
