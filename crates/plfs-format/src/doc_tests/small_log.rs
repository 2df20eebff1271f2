//! §11, the 1-N log: its store and log names, its header, the frame every record has, and each
//! kind's body as the table gives it: a record built field by field from the document's words
//! decodes to those values, and the encoder frames it as the grammar says.

use super::*;
use crate::small::{self as sm, Rec};

/// A row of §11's kind table: kind number, name, body fields.
fn kinds(sec: &'static str) -> Vec<(u16, &'static str, Vec<Field>)> {
    let rows: Vec<_> = sec
        .lines()
        .skip_while(|l| !l.starts_with("| kind | name | body |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            // `| 1 | CREATE | `ts u64 | ...` (a note) |`: the body is in backquotes, with `|`s of its own.
            let mut cells = l[1..].splitn(3, '|').map(str::trim);
            let kind = cells.next().and_then(|c| c.parse().ok());
            let name = cells.next().expect("a name");
            let rest = cells.next().expect("a body");
            let body = rest.split('`').nth(1).unwrap_or_else(|| panic!("row {l:?}"));
            (kind.unwrap_or_else(|| panic!("row {l:?}")), name, fields(body))
        })
        .collect();
    assert_eq!(rows.len(), 6, "six kinds");
    rows
}

/// The value this test gives the field `name` of a body: a number, or the bytes of a name.
fn sample(name: &str) -> Result<u64, &'static [u8]> {
    Ok(match name {
        "ts" => 0x1111_2222_3333_4444,
        "file_id" => 0x5555_6666_7777_8888,
        "mode" => 0o100_640,
        "uid" => 1001,
        "gid" => 1002,
        "offset" => 1 << 35,
        "size" => 12_345,
        "mask" => 0b10110,
        "atime_ns" => -5i64 as u64,
        "mtime_ns" => 1 << 62,
        "from_len" => 3,
        "name" => return Err(b"a file"),
        "data" => return Err(b"some data"),
        "from" => return Err(b"old"),
        "to" => return Err(b"new"),
        other => panic!("§11 has a field {other:?} this test does not know"),
    })
}

/// The record the decoder must return for kind `name` with the sample values (a WRITE's data at
/// log offset `data`).
fn expected(name: &str, data: u64) -> Rec {
    let n = |f: &str| sample(f).expect("a number");
    let s = |f: &str| String::from_utf8(sample(f).expect_err("bytes").to_vec()).expect("UTF-8");
    let (ts, id) = (n("ts"), n("file_id"));
    match name {
        "CREATE" => Rec::Create {
            ts,
            id,
            mode: n("mode") as u32,
            uid: n("uid") as u32,
            gid: n("gid") as u32,
            name: s("name"),
        },
        "WRITE" => Rec::Write {
            ts,
            id,
            off: n("offset"),
            len: s("data").len() as u64,
            phys: data,
        },
        "TRUNC" => Rec::Trunc {
            ts,
            id,
            size: n("size"),
        },
        "UNLINK" => Rec::Unlink {
            ts,
            id,
            name: s("name"),
        },
        "RENAME" => Rec::Rename {
            ts,
            id,
            from: s("from"),
            to: s("to"),
        },
        "SETATTR" => Rec::SetAttr {
            ts,
            id,
            mask: n("mask") as u32,
            mode: n("mode") as u32,
            uid: n("uid") as u32,
            gid: n("gid") as u32,
            atime: n("atime_ns") as i64,
            mtime: n("mtime_ns") as i64,
        },
        other => panic!("kind {other}"),
    }
}

#[test]
fn records_match_section_11() {
    let sec = section("## 11. 1-N mode");
    let frame = grammar(sec, "record:");
    let names: Vec<&str> = frame.iter().map(|f| f.name).collect();
    assert_eq!(names, ["kind", "flags", "body_len", "body", "crc32c"]);
    assert_eq!(frame[3].ty, Some("[body_len]"));
    assert_eq!(frame.iter().filter_map(|f| f.size).sum::<usize>(), sm::SMALL_FRAME);
    let consts = [
        ("CREATE", sm::K_CREATE),
        ("WRITE", sm::K_WRITE),
        ("TRUNC", sm::K_TRUNC),
        ("UNLINK", sm::K_UNLINK),
        ("RENAME", sm::K_RENAME),
        ("SETATTR", sm::K_SETATTR),
    ];
    // A WRITE's data: at its record's offset plus the frame's head and the body's fixed part.
    let text = prose(sec);
    let data_at: u64 = text
        .split("its log offset is the record's offset + ")
        .nth(1)
        .and_then(|t| t.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .expect("§11 says where a WRITE's data is");
    // One log holding a record of each kind, built from the table's words.
    let base = INDEX_HEADER_LEN as u64;
    let (mut log, mut want) = (Vec::new(), Vec::new());
    for (kind, name, body_fields) in kinds(sec) {
        let k = consts
            .iter()
            .find(|c| c.0 == name)
            .unwrap_or_else(|| panic!("{name}"))
            .1;
        assert_eq!(kind, k, "{name}'s kind number");
        let mut body = Vec::new();
        for f in &body_fields {
            match (sample(f.name), f.size) {
                (Ok(v), Some(w)) => body.extend_from_slice(&v.to_le_bytes()[..w]),
                (Err(bytes), None) => {
                    assert_eq!(f.ty, Some("bytes"), "{f:?}");
                    body.extend_from_slice(bytes);
                }
                _ => panic!("{name}: {f:?}"),
            }
        }
        let at = log.len();
        sm::encode(&mut log, kind, &body, &[]);
        let rec = &log[at..];
        assert_eq!(check_fixed(rec, &frame), 1, "flags");
        assert_eq!(field_value(rec, field(&frame, "kind")), u128::from(kind));
        assert_eq!(field_value(rec, field(&frame, "body_len")), body.len() as u128);
        let start = fixed_width(&frame);
        assert_eq!(&rec[start..start + body.len()], &body[..]);
        assert_eq!(
            le_u32(&rec[start + body.len()..]),
            crc32c::crc32c(&rec[..start + body.len()])
        );
        want.push(expected(name, base + at as u64 + data_at));
    }
    let d = sm::decode(&log, base);
    assert_eq!((d.tail, d.damaged), (None, vec![]));
    assert_eq!(d.used, log.len());
    assert_eq!(d.recs, want);
    // The words beside the table.
    assert!(text.contains(&format!("`body_len` is at most {} MiB", sm::SMALL_MAX_BODY >> 20)));
    let all = kinds(sec);
    let setattr = &all.iter().find(|k| k.1 == "SETATTR").expect("SETATTR").2;
    let mask = field(setattr, "mask");
    assert_eq!(mask.ty, Some("u32"));
    let list = &text[text.find("mask u32 (").expect("the mask's bits") + "mask u32 (".len()..];
    let list = &list[..list.find(')').expect("their end")];
    let bits = [
        (sm::SET_MODE, "mode"),
        (sm::SET_UID, "uid"),
        (sm::SET_GID, "gid"),
        (sm::SET_ATIME, "atime"),
        (sm::SET_MTIME, "mtime"),
    ];
    let want: Vec<String> = bits.iter().map(|(bit, what)| format!("{bit} {what}")).collect();
    assert_eq!(list, want.join(", "), "SETATTR's mask bits");
}

#[test]
fn store_and_log_names_match_section_11() {
    let sec = section("## 11. 1-N mode");
    let text = prose(sec);
    assert!(text.contains(&format!("`<canonical backend>/<rel>/{}/`", sm::SMALL_DIR)));
    // The log's name, made by the code, against the grammar.
    let log_grammar = text
        .split('`')
        .find(|t| t.starts_with("log."))
        .expect("§11 names the log");
    let name = sm::log_name(0x00ab_0000_0000_00cd, 4321, "node.7");
    if let Err(e) = matches_grammar(log_grammar, &name) {
        panic!("format.md §11 says {log_grammar:?}: {e}");
    }
    let parsed = sm::parse_log_name(&name).expect("the code parses its own name");
    assert_eq!(
        (parsed.writer_id, parsed.pid, parsed.host.as_str()),
        (0x00ab_0000_0000_00cd, 4321, "node.7")
    );
    assert!(name.starts_with(sm::LOG_PREFIX));
    // The header: §4.1's, with the small-file magic.
    let log = grammar(sec, "Format:");
    assert_eq!(log[0].name, "header");
    assert!(text.contains(&format!(
        "header ({INDEX_HEADER_LEN} bytes, as §4.1 with magic \"PLFSSML\\0\")"
    )));
    assert_eq!(&sm::SMALL_MAGIC, b"PLFSSML\0");
    // A record longer than the document allows is not a record.
    let mut big = Vec::new();
    sm::encode(&mut big, sm::K_TRUNC, &[0; 24], &[]);
    big[4..8].copy_from_slice(&(sm::SMALL_MAX_BODY as u32 + 1).to_le_bytes());
    let d = sm::decode(&big, 64);
    assert!(d.recs.is_empty() && d.damaged.len() == 1, "{d:?}");
    // The compaction's leftovers (§14) in the store.
    assert!(text.contains(&format!("`{}/{}`", sm::SMALL_DIR, compact::JOURNAL_NAME)));
    assert!(text.contains(&format!(
        "`{}/{}<writer id>.log`",
        sm::SMALL_DIR,
        compact::CMP_TMP_PREFIX
    )));
    assert!(compact::tmp_log_name(7).ends_with(".log"));
}
