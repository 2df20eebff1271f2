//! `plfs stats` and `plfs map --writer/--rank`, run as a user would: the real binary with its
//! own plfsrc, on files written through the library with a known pattern (4 ranks writing 10
//! strided 47008-byte records each, an overlapping writer, a segmented file, a packed 1-N
//! file), checked against what was written.

mod common;

use common::{rw, N1AndSmall as Env};
use plfs_core::Plfs;
use serde_json::Value;
use std::path::Path;

const RANKS: u64 = 4;
const RECORDS: u64 = 10;
const REC: u64 = 47008;

/// N-1 strided: rank r writes record i at ((i * RANKS) + r) * REC, the ranks taking turns.
fn write_strided(p: &Plfs, path: &Path) {
    let handles: Vec<_> = (0..RANKS)
        .map(|r| p.open(path, rw(), 0o644, r as u32).unwrap())
        .collect();
    let buf = vec![7u8; REC as usize];
    for i in 0..RECORDS {
        for (r, h) in handles.iter().enumerate() {
            h.write(&buf, (i * RANKS + r as u64) * REC).unwrap();
        }
    }
    for h in handles {
        h.close().unwrap();
    }
}

fn s(path: &Path) -> String {
    path.display().to_string()
}

#[test]
fn a_strided_n1_file_is_characterised_exactly() {
    let env = Env::new("stats", "strided");
    let f = env.n1.join("ckpt");
    write_strided(&env.plfs(), &f);
    let v = env.json(&["stats", &s(&f)]);
    let ws = v["writers"].as_array().unwrap();
    assert_eq!(ws.len(), RANKS as usize, "{v:#}");
    for (r, w) in ws.iter().enumerate() {
        assert_eq!(w["pid"], r as u64, "{v:#}");
        assert_eq!(w["bytes"], RECORDS * REC);
        assert_eq!(w["writes"], RECORDS);
        assert_eq!(w["pattern"], "strided");
        assert_eq!(w["stride"], RANKS * REC);
        assert_eq!(w["writer_id"].as_str().unwrap().len(), 16);
        assert!(w["host"].as_str().is_some_and(|h| !h.is_empty()));
        assert!(w["first_ns"].as_u64().unwrap() <= w["last_ns"].as_u64().unwrap());
        // 47008 bytes: the 32 KiB..64 KiB bucket.
        assert_eq!(
            w["sizes"],
            serde_json::json!([{ "from": 32768, "to": 65536, "count": RECORDS }])
        );
    }
    assert_eq!(v["bytes"], RANKS * RECORDS * REC);
    assert_eq!(v["writes"], RANKS * RECORDS);
    assert_eq!(v["size"], RANKS * RECORDS * REC);
    assert_eq!(v["pattern"]["kind"], "strided", "{v:#}");
    assert_eq!(v["pattern"]["stride"], RANKS * REC);
    assert_eq!(v["pattern"]["record_size"], REC);
    assert_eq!(v["pattern"]["overlap_bytes"], 0);
    assert!(v["span_s"].as_f64().unwrap() > 0.0, "{v:#}");
    assert!(v["bandwidth_mibs"].as_f64().unwrap() > 0.0);

    // The table: one line per writer, every line within 80 columns.
    let text = env.ok(&["stats", &s(&f)]);
    assert!(text.lines().all(|l| l.len() <= 80 || l.starts_with(&s(&f))), "{text}");
    assert!(
        text.contains("pattern   strided, record 47008, stride 188032, overlap 0 bytes"),
        "{text}"
    );
    assert!(text.contains("4 writers, 40 writes"), "{text}");
    let rows: Vec<&str> = text.lines().filter(|l| l.contains("32K-64K:10")).collect();
    assert_eq!(rows.len(), RANKS as usize, "{text}");

    // The map filtered by rank and by writer (a prefix of its id, as the table shows it).
    let map = env.ok(&["map", &s(&f), "--rank", "2"]);
    let lines: Vec<&str> = map.lines().filter(|l| !l.starts_with('#')).collect();
    assert!(map.starts_with(&format!("# {}: 10 of 40 extents\n", s(&f))), "{map}");
    let offsets: Vec<u64> = lines
        .iter()
        .map(|l| l.split_whitespace().next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(offsets, (0..RECORDS).map(|i| (i * RANKS + 2) * REC).collect::<Vec<_>>());
    for l in &lines {
        let cols: Vec<&str> = l.split_whitespace().collect();
        assert_eq!((cols[1], cols[3]), ("47008", "2"), "{l}");
    }
    let id = ws[2]["writer_id"].as_str().unwrap();
    assert_eq!(env.ok(&["map", &s(&f), "--writer", &id[..8]]), map);
    assert_eq!(env.ok(&["map", &s(&f), "--writer", id]), map);
    let j = env.json(&["map", &s(&f), "--rank", "1"]);
    let j = j.as_array().unwrap();
    assert_eq!(j.len(), RECORDS as usize);
    assert!(j.iter().all(|e| e["pid"] == 1 && e["length"] == REC));
    let none = env.ok(&["map", &s(&f), "--rank", "9"]);
    assert_eq!(
        none,
        format!("# {}: 0 of 40 extents\n{}", s(&f), map.lines().nth(1).unwrap()) + "\n"
    );
    let bad = env.run(&["map", &s(&f), "--writer", "xyz"]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn overlap_segments_directories_and_errors() {
    let env = Env::new("stats", "mixed");
    let p = env.plfs();
    let dir = env.n1.join("run");
    p.mkdir(&dir, 0o755).unwrap();
    // One writer: 0..1000, then 500..1500 again: 500 bytes written twice, sequential otherwise.
    let h = p.open(&dir.join("over"), rw(), 0o644, 5).unwrap();
    h.write(&[1u8; 1000], 0).unwrap();
    h.write(&[2u8; 1000], 500).unwrap();
    h.close().unwrap();
    let v = env.json(&["stats", &s(&dir.join("over"))]);
    assert_eq!((v["bytes"].as_u64(), v["writes"].as_u64()), (Some(2000), Some(2)));
    assert_eq!(v["pattern"]["overlap_bytes"], 500, "{v:#}");
    assert_eq!(v["size"], 1500);
    // Three ranks, each 8 sequential 4096-byte writes in its own 32 KiB segment.
    let hs: Vec<_> = (0..3u64)
        .map(|r| p.open(&dir.join("seg"), rw(), 0o644, r as u32).unwrap())
        .collect();
    for i in 0..8u64 {
        for (r, h) in hs.iter().enumerate() {
            h.write(&[3u8; 4096], r as u64 * 32768 + i * 4096).unwrap();
        }
    }
    hs.into_iter().for_each(|h| h.close().unwrap());
    let v = env.json(&["stats", &s(&dir.join("seg"))]);
    assert_eq!(v["pattern"]["kind"], "segmented", "{v:#}");
    assert_eq!(v["pattern"]["record_size"], 4096);
    assert_eq!(v["pattern"]["stride"], Value::Null);
    assert!(v["writers"]
        .as_array()
        .unwrap()
        .iter()
        .all(|w| w["pattern"] == "sequential"));
    // A directory: one summary per directory.
    let sub = dir.join("sub");
    p.mkdir(&sub, 0o755).unwrap();
    write_strided(&p, &sub.join("ckpt"));
    let d = env.json(&["stats", &s(&dir)]);
    let dirs = d["directories"].as_array().unwrap();
    assert_eq!(dirs.len(), 2, "{d:#}");
    assert_eq!(dirs[0]["path"], s(&dir));
    assert_eq!(
        (dirs[0]["files"].as_u64(), dirs[0]["bytes"].as_u64()),
        (Some(2), Some(2000 + 3 * 8 * 4096))
    );
    assert_eq!(dirs[0]["writers"], 4);
    assert_eq!(dirs[1]["path"], s(&sub));
    assert_eq!(
        (dirs[1]["files"].as_u64(), dirs[1]["writers"].as_u64()),
        (Some(1), Some(RANKS))
    );
    assert_eq!(dirs[1]["bytes"], RANKS * RECORDS * REC);
    assert_eq!(dirs[1]["patterns"]["strided"], 1);
    let text = env.ok(&["stats", &s(&dir)]);
    assert!(text.lines().next().unwrap().ends_with("directory"), "{text}");
    assert!(text.contains(&format!("strided     {}", s(&sub))), "{text}");

    // Errors name the path and exit 1.
    for (path, what) in [
        (dir.join("missing"), "No such file or directory"),
        (env.dir.join("b1"), "not under a PLFS mount point"),
    ] {
        let o = env.run(&["stats", &s(&path)]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(err.contains(&s(&path)) && err.contains(what), "{err}");
    }
    // A packed 1-N file is not an N-1 file.
    let small = env.small.join("tiny");
    let h = p.open(&small, rw(), 0o644, 1).unwrap();
    h.write(b"hello", 0).unwrap();
    h.close().unwrap();
    let o = env.run(&["stats", &s(&small)]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains(&s(&small)) && err.contains("not an N-1 file"), "{err}");
}
