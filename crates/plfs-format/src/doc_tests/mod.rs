//! Tests that read docs/format.md (issue 27: every section is held to the code by a test that
//! reads the document, not by a test that restates it). Each byte table (`| offset | size |
//! field |`) must tile its structure exactly, and the encoder must put each field's value where
//! the table says; each name grammar of §1 must match the names the code makes. The frame (§3),
//! the flattened index (§6) and the journal's entries (§14) are read by the tests of their own
//! modules. Every record grammar (`Format: { ... }`) gives each field its offset and width, and
//! the values it fixes (`= 0`, `= "PLFW"`) must be in the encoder's bytes ([`fixed`]); the 1-N
//! log ([`small_log`]), the PLFS 2.x formats ([`legacy_formats`]) and the names of §1, §5, §12
//! and §13 ([`more_names`]) have modules of their own. Where the core puts what it writes (§1's
//! placement and modes, §7, §8, §10, §11) is read by crates/plfs-core/tests/format_doc.rs.

use super::*;

mod fixed;
mod legacy_formats;
mod more_names;
mod small_log;

const DOC: &str = include_str!("../../../../docs/format.md");

/// The text under the heading that starts with `head`, up to the next heading of the same or a
/// higher level.
fn section(head: &str) -> &'static str {
    let start = DOC
        .find(&format!("\n{head}"))
        .unwrap_or_else(|| panic!("format.md has {head:?}"))
        + 1;
    let level = head.chars().take_while(|&c| c == '#').count();
    let body = &DOC[start + head.len()..];
    let mut at = 0;
    for line in body.split_inclusive('\n') {
        let h = line.chars().take_while(|&c| c == '#').count();
        if at > 0 && h > 0 && h <= level && line[h..].starts_with(' ') {
            return &body[..at];
        }
        at += line.len();
    }
    body
}

/// `text` with every run of white space (line breaks included) made one space, so that a
/// sentence is found wherever the document wraps it.
fn prose(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A row of a byte table.
#[derive(Debug)]
struct Row {
    off: usize,
    size: usize,
    field: &'static str,
}

/// The first `| offset | size | field |` table of `sec`.
fn table(sec: &'static str) -> Vec<Row> {
    let rows: Vec<Row> = sec
        .lines()
        .skip_while(|l| !l.starts_with("| offset | size | field |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split('|').map(str::trim).collect();
            let num = |c: &str| c.parse::<usize>().unwrap_or_else(|_| panic!("row {l:?}"));
            Row {
                off: num(cells[0]),
                size: num(cells[1]),
                field: cells[2],
            }
        })
        .collect();
    assert!(!rows.is_empty(), "no byte table in {sec:.60?}");
    rows
}

/// Asserts that the rows tile `0..len` in order, without gap or overlap.
fn tiles(rows: &[Row], len: usize) {
    let mut end = 0;
    for r in rows {
        assert_eq!(r.off, end, "{r:?} does not follow the row before it");
        end = r.off + r.size;
    }
    assert_eq!(end, len, "the table covers {end} bytes, the structure has {len}");
}

/// The one row whose field starts with `name`.
fn row<'a>(rows: &'a [Row], name: &str) -> &'a Row {
    let mut found = rows.iter().filter(|r| r.field.starts_with(name));
    let r = found.next().unwrap_or_else(|| panic!("no field {name:?} in {rows:?}"));
    assert!(found.next().is_none(), "two fields start with {name:?}");
    r
}

/// The little-endian value of a row's bytes in `b`. A field wider than 16 bytes (reserved
/// bytes) reads as 0 when all its bytes are zero, else as `u128::MAX`.
fn value(b: &[u8], r: &Row) -> u128 {
    if r.size > 16 {
        return if b[r.off..r.off + r.size].iter().all(|&c| c == 0) {
            0
        } else {
            u128::MAX
        };
    }
    let mut v = [0u8; 16];
    v[..r.size].copy_from_slice(&b[r.off..r.off + r.size]);
    u128::from_le_bytes(v)
}

/// Checks every row of `rows` against the encoded `b`: the named fields hold `want`, and the
/// row `crc32c of bytes 0..N` holds the checksum of exactly the bytes before it.
fn check(b: &[u8], rows: &[Row], want: &[(&str, u128)]) {
    for (name, v) in want {
        assert_eq!(value(b, row(rows, name)), *v, "field {name:?}");
    }
    let crc = row(rows, "crc32c of bytes 0..");
    let upto: usize = crc.field["crc32c of bytes 0..".len()..]
        .parse()
        .unwrap_or_else(|_| panic!("{crc:?}"));
    assert_eq!(upto, crc.off, "the checksum covers the bytes before it");
    assert_eq!(value(b, crc), u128::from(crc32c::crc32c(&b[..upto])));
}

/// The sum of the widths of the fields of the first `Format: { ... }` grammar in `sec`
/// (fixed-size structures only).
fn grammar_width(sec: &str) -> usize {
    let start = sec.find("Format: {").expect("a grammar") + "Format: {".len();
    let body = &sec[start..start + sec[start..].find('}').expect("its end")];
    body.split('|')
        .map(|f| match f.split_whitespace().nth(1) {
            Some("u16") => 2,
            Some("u32") => 4,
            Some("u64") => 8,
            Some("u128") => 16,
            Some(t) if t.starts_with('[') => t[1..t.len() - 1].parse().unwrap_or_else(|_| panic!("{f:?}")),
            _ => panic!("field {f:?}"),
        })
        .sum()
}

/// One field of a record grammar `{ a | b | ... }`.
#[derive(Debug)]
struct Field {
    /// Its name: the first word.
    name: &'static str,
    /// Its type: the second word (`u32`, `[8]`, `bytes`, ...), if there is one.
    ty: Option<&'static str>,
    /// Its byte offset, while every field before it has a fixed width.
    off: Option<usize>,
    /// Its width, for a fixed-width type.
    size: Option<usize>,
    /// The value the grammar gives it (`= 0`, `= "PLFW"`), as written.
    fixed: Option<&'static str>,
}

/// The width of a grammar type (`u8` .. `u128`, `i32`, `i64`, `f64`, `[N]`); `None` for a
/// variable width (`[body_len]`, `bytes`, ...).
fn type_width(ty: &str) -> Option<usize> {
    match ty {
        "u8" => Some(1),
        "u16" => Some(2),
        "u32" | "i32" => Some(4),
        "u64" | "i64" | "f64" => Some(8),
        "u128" => Some(16),
        t => t.strip_prefix('[')?.strip_suffix(']')?.parse().ok(),
    }
}

/// The fields of the grammar that follows the first `head` (`Format:`, `record:`, ...) in `sec`:
/// from the next `{` to the brace that closes it.
fn grammar(sec: &'static str, head: &str) -> Vec<Field> {
    let at = sec
        .find(head)
        .unwrap_or_else(|| panic!("no grammar {head:?} in {sec:.60?}"));
    let start = at + sec[at..].find('{').expect("a grammar opens with {") + 1;
    let mut depth = 0;
    let end = sec[start..]
        .char_indices()
        .find(|&(_, c)| {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => return true,
                '}' => depth -= 1,
                _ => {}
            }
            false
        })
        .expect("the grammar's closing brace")
        .0;
    fields(&sec[start..start + end])
}

/// The fields of a grammar's body `a | b | ...`, with their offsets.
fn fields(body: &'static str) -> Vec<Field> {
    let mut off = Some(0);
    body.split('|')
        .map(|f| {
            let f = f.trim();
            let mut words = f.split_whitespace();
            let name = words.next().unwrap_or_else(|| panic!("an empty field in {body:?}"));
            let ty = words.next();
            let size = ty.and_then(type_width);
            let fixed = f.split_once(" = ").map(|(_, v)| v.trim());
            let field = Field {
                name,
                ty,
                off,
                size,
                fixed,
            };
            off = off.zip(size).map(|(o, s)| o + s);
            field
        })
        .collect()
}

/// The field named `name`.
fn field<'a>(fields: &'a [Field], name: &str) -> &'a Field {
    fields
        .iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("no field {name:?} in {fields:?}"))
}

/// The sum of the widths of the fields before the first one of variable width.
fn fixed_width(fields: &[Field]) -> usize {
    fields.iter().map_while(|f| f.size).sum()
}

/// The bytes of `b` a field with an offset and a width covers.
fn bytes_of<'a>(b: &'a [u8], f: &Field) -> &'a [u8] {
    let off = f.off.unwrap_or_else(|| panic!("{f:?} has no fixed offset"));
    let size = f.size.unwrap_or_else(|| panic!("{f:?} has no fixed width"));
    &b[off..off + size]
}

/// The little-endian value of a field of at most 16 bytes in `b`.
fn field_value(b: &[u8], f: &Field) -> u128 {
    let bytes = bytes_of(b, f);
    let mut v = [0u8; 16];
    v[..bytes.len()].copy_from_slice(bytes);
    u128::from_le_bytes(v)
}

/// Asserts that every field of `fields` the grammar gives a value (`= 2`, `= "PLFW"`, `= 0`) holds
/// it in the encoded `b` (a number little-endian in the field's width, a string with `\0` for a
/// NUL byte); returns how many it checked.
fn check_fixed(b: &[u8], fields: &[Field]) -> usize {
    let mut n = 0;
    for f in fields.iter().filter(|f| f.fixed.is_some()) {
        let v = f.fixed.expect("a value");
        let want = match v.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
            Some(s) => s.replace("\\0", "\0").into_bytes(),
            None => {
                let n: u128 = v.parse().unwrap_or_else(|_| panic!("{f:?}: not a number"));
                let size = f.size.expect("a width");
                assert!(size >= 16 || n >> (8 * size) == 0, "{f:?}: too wide");
                let mut w = n.to_le_bytes().to_vec();
                w.resize(size.max(16), 0);
                w.truncate(size);
                w
            }
        };
        assert_eq!(bytes_of(b, f), &want[..], "format.md gives {f:?}");
        n += 1;
    }
    n
}

/// Asserts that every field of `fields` at a fixed offset has a row of the byte table `rows` at
/// that offset and of its width (the grammar and the table describe one layout).
fn agrees_with_table(fields: &[Field], rows: &[Row]) {
    for f in fields.iter().filter(|f| f.size.is_some()) {
        let off = f.off.expect("an offset");
        assert!(
            rows.iter().any(|r| r.off == off && Some(r.size) == f.size),
            "the grammar's {f:?} has no row at offset {off} in {rows:?}"
        );
    }
}

#[test]
fn marker_matches_section_2() {
    let sec = section("## 2. Marker");
    let rows = table(sec);
    tiles(&rows, MARKER_LEN_V3);
    assert_eq!(grammar_width(sec), MARKER_LEN_V3);
    // The heading names the file and its sizes.
    assert!(
        sec.starts_with(&format!(
            " `{MARKER_NAME}` ({MARKER_LEN_V3} bytes; {MARKER_LEN} before version 3)\n"
        )),
        "{sec:.60?}"
    );
    // A version 2 marker is the first 48 bytes of that table, and its size tells it apart.
    let v2 = Marker {
        version: 2,
        container_id: 7,
        created_ns: 9,
    };
    assert_eq!(v2.encode().len(), MARKER_LEN);
    assert!(!is_flat_marker(MARKER_LEN as u64) && is_flat_marker(MARKER_LEN_V3 as u64));
    assert_eq!(row(&rows, "crc32c of bytes 0..").off + 4, MARKER_LEN);
    let m = Marker {
        version: FORMAT_VERSION,
        container_id: 0x0102_0304_0506_0708_090a_0b0c_0d0e_0f10,
        created_ns: 0x1122_3344_5566_7788,
    };
    let b = m.encode();
    assert_eq!(&b[..8], &MARKER_MAGIC);
    let magic = row(&rows, "magic");
    let hex: String = MARKER_MAGIC.iter().map(|c| format!("{c:02x} ")).collect();
    assert!(magic.field.contains(hex.trim()), "{magic:?}");
    check(
        &b,
        &rows,
        &[
            ("format version", u128::from(FORMAT_VERSION)),
            ("flags", 0),
            ("container id", m.container_id),
            ("creation time", u128::from(m.created_ns)),
            ("reserved", 0),
            ("padding", 0),
        ],
    );
    assert!(row(&rows, "format version")
        .field
        .starts_with(&format!("format version ({FORMAT_VERSION};")));
}

#[test]
fn log_header_matches_section_4_1() {
    let sec = section("### 4.1 Log header");
    let rows = table(sec);
    tiles(&rows, INDEX_HEADER_LEN);
    assert_eq!((INDEX_HEADER_LEN, DATA_HEADER_LEN), (64, 64));
    assert_eq!(grammar_width(sec), INDEX_HEADER_LEN);
    for (magic, name) in [(INDEX_MAGIC, "index"), (DATA_MAGIC, "data")] {
        let text = String::from_utf8_lossy(&magic[..7]).to_string();
        assert!(
            row(&rows, "`PLFSIDX\\0` (index)")
                .field
                .contains(&format!("`{text}\\0` ({name})")),
            "{name} magic"
        );
        let h = LogHeader {
            magic,
            writer_id: 0xa1a2_a3a4_a5a6_a7a8,
            open_ns: 0xb1b2_b3b4_b5b6_b7b8,
            pid: 0xc1c2_c3c4,
            flags: LOG_FLAG_DATA_CRC | LOG_FLAG_FRAMED,
        };
        let b = h.encode();
        assert_eq!(&b[..8], &magic);
        check(
            &b,
            &rows,
            &[
                ("format version", u128::from(LOG_VERSION)),
                ("header length", INDEX_HEADER_LEN as u128),
                ("writer id", u128::from(h.writer_id)),
                ("open timestamp", u128::from(h.open_ns)),
                ("pid", u128::from(h.pid)),
                ("flags", u128::from(h.flags)),
                ("reserved", 0),
            ],
        );
    }
    let flags = row(&rows, "flags").field;
    assert!(flags.contains(&format!(
        "bit {} = records carry data checksums",
        LOG_FLAG_DATA_CRC.trailing_zeros()
    )));
    assert!(flags.contains(&format!(
        "bit {} = the data log is framed",
        LOG_FLAG_FRAMED.trailing_zeros()
    )));
}

#[test]
fn write_record_matches_section_4_2() {
    let sec = section("### 4.2 Records");
    let rows = table(sec);
    tiles(&rows, WRITE_REC_LEN);
    let write = &sec[sec.find("Kind 1, WRITE").expect("the WRITE record")..];
    assert!(write.starts_with(&format!(
        "Kind {REC_WRITE}, WRITE (body {WRITE_BODY_LEN} bytes, record {WRITE_REC_LEN} bytes)"
    )));
    assert_eq!(grammar_width(write), WRITE_REC_LEN);
    let pattern = &sec[sec.find("Kind 2, PATTERN").expect("the PATTERN record")..];
    assert!(pattern.starts_with(&format!(
        "Kind {REC_PATTERN}, PATTERN (body {PATTERN_FIXED_LEN} bytes + varints)"
    )));
    assert!(pattern.contains(&format!("`1 <= count <= {PATTERN_MAX_RUN}`")));
    assert!(pattern.contains(&format!("at least {PATTERN_MIN_RUN} consecutive buffered records")));
    let rec = WriteRecord {
        logical_off: 0x1111_2222_3333_4444,
        length: 0x5555_6666,
        physical_off: 0x7777_8888_9999,
        ts: 0xaaaa_bbbb_cccc_dddd,
        data_crc: 0xeeee_ffff,
    };
    let mut b = Vec::new();
    rec.encode_into(&mut b);
    assert_eq!(b.len(), WRITE_REC_LEN);
    check(
        &b,
        &rows,
        &[
            ("kind", u128::from(REC_WRITE)),
            ("body length", WRITE_BODY_LEN as u128),
            ("logical offset", u128::from(rec.logical_off)),
            ("length", u128::from(rec.length)),
            ("physical offset", u128::from(rec.physical_off)),
            ("timestamp", u128::from(rec.ts)),
            ("crc32c of the data", u128::from(rec.data_crc)),
            ("flags", 0),
        ],
    );
}

/// Whether `name` is what the §1 grammar `template` describes: literal fields equal, `<x: N hex>`
/// and `<N hex>` fields N lowercase hex digits, `<host>` anything non-empty (the last field), other `<x>` fields
/// decimal without leading zeros.
fn matches_grammar(template: &str, name: &str) -> Result<(), String> {
    let fields: Vec<&str> = template.split('.').collect();
    let parts: Vec<&str> = name.splitn(fields.len(), '.').collect();
    if parts.len() != fields.len() {
        return Err(format!(
            "{name:?} has {} fields, {template:?} {}",
            parts.len(),
            fields.len()
        ));
    }
    for (f, p) in fields.iter().zip(&parts) {
        let ok = match f.strip_prefix('<').and_then(|f| f.strip_suffix('>')) {
            None => f == p,
            Some("host") => !p.is_empty(),
            // `<x: N hex ...>` or `<N hex>`: N lowercase hex digits.
            Some(var) => match var.split_once(": ").map_or(var, |(_, w)| w) {
                width if width.split_whitespace().nth(1) == Some("hex") => {
                    let n: usize = width
                        .split_whitespace()
                        .next()
                        .and_then(|w| w.parse().ok())
                        .unwrap_or(0);
                    p.len() == n && p.bytes().all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
                }
                _ => p.bytes().all(|c| c.is_ascii_digit()) && !(p.len() > 1 && p.starts_with('0')),
            },
        };
        if !ok {
            return Err(format!("field {p:?} of {name:?} is not {f:?}"));
        }
    }
    Ok(())
}

/// The grammar of §1's tree that starts with `prefix` (the first word of its line).
fn tree_grammar(prefix: &str) -> &'static str {
    let tree = section("## 1. The container tree");
    tree.lines()
        .map(str::trim_start)
        .find(|l| l.starts_with(prefix))
        // The grammar ends at its last field (the comment beside it has no `>`).
        .and_then(|l| l.rfind('>').map(|e| &l[..=e]))
        .unwrap_or_else(|| panic!("§1 lists no {prefix:?}"))
}

#[test]
fn names_match_the_grammars_of_section_1() {
    let id = 0x00ab_cdef_0123_4567u64;
    let names = [
        ("cid.", cid_dropping_name(0x0abc << 64 | 0x1234)),
        (
            "open.",
            MetaDropping::Open {
                writer_id: id,
                pid: 4321,
                host: "node07".into(),
            }
            .name(),
        ),
        (
            "close.",
            MetaDropping::Close {
                writer_id: id,
                open_ts: 17,
                close_ts: 18,
                eof: 0,
                bytes: 1 << 40,
                mtime_ns: 99,
            }
            .name(),
        ),
        (
            "trunc.",
            MetaDropping::Trunc {
                ts: 5,
                size: 0,
                writer_id: id,
            }
            .name(),
        ),
        ("data.", data_log_name(id, 7, "node07")),
        ("index.", index_log_name(id, 7, "node07")),
    ];
    for (prefix, name) in &names {
        let g = tree_grammar(prefix);
        if let Err(e) = matches_grammar(g, name) {
            panic!("format.md §1 says {g:?}: {e}");
        }
    }
    // §5 lists the same droppings.
    let sec5 = section("## 5. Metadata droppings");
    for prefix in ["cid.", "open.", "close.", "trunc."] {
        assert!(sec5.contains(&format!("- `{prefix}")), "§5 lacks {prefix}");
    }
    assert_eq!(parse_cid_dropping(&names[0].1), Some(0x0abc << 64 | 0x1234));
    // Dots in a host stay in the last field.
    assert_eq!(
        MetaDropping::parse("open.00abcdef01234567.1.a.b.c"),
        Some(MetaDropping::Open {
            writer_id: id,
            pid: 1,
            host: "a.b.c".into()
        })
    );
}

#[test]
fn xattr_file_matches_section_12() {
    let sec = section("## 12. Extended attributes");
    assert!(sec.contains("`x.<lowercase hex of the key's bytes>`"));
    assert_eq!(xattr::file_name(b"user.K").unwrap(), format!("x.{}", "757365722e4b"));
    let grammar = &sec[sec.find("Format: {").expect("the grammar")..];
    let magic = &grammar[grammar.find('"').unwrap() + 1..];
    let magic = &magic[..magic.find('"').unwrap()].replace("\\0", "\0");
    let b = xattr::encode(b"value");
    assert_eq!(&b[..8], magic.as_bytes());
    assert!(grammar.contains("version u32 = 1"));
    assert_eq!(u32::from_le_bytes(b[8..12].try_into().unwrap()), 1);
    assert_eq!(u32::from_le_bytes(b[12..16].try_into().unwrap()), 5);
    assert_eq!(&b[16..21], b"value");
    assert_eq!(
        u32::from_le_bytes(b[21..25].try_into().unwrap()),
        crc32c::crc32c(&b[..21])
    );
    assert_eq!(b.len(), 25);
    assert!(grammar.contains(&format!("value_len <= {}", xattr::MAX_VALUE)));
}
