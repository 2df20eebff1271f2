//! Where the core puts what it writes, held to docs/format.md (issue 27): the formulas of §1
//! (the canonical backend of a name, a writer's hostdir and shadow backend) and of §10 and §11
//! (an N-N file, a 1-N writer's log), evaluated with the FNV-1a basis and prime the document
//! gives, and the shadow path of §1 and §7; the container directory and log modes of §1, from
//! its examples. Each test reads the document and looks at the backends.

mod common;

use common::{put, Fixture};
use plfs_core::config::{GlobalParams, Workload};
use plfs_format as format;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

const DOC: &str = include_str!("../../../docs/format.md");

/// The text of the section whose heading starts with `head`, white space runs made one space.
fn section(head: &str) -> String {
    let start = DOC
        .find(&format!("\n{head}"))
        .unwrap_or_else(|| panic!("format.md has {head:?}"));
    let body = &DOC[start + 1 + head.len()..];
    let end = body.find("\n## ").unwrap_or(body.len());
    body[..end].split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The number in hex right after `before` (`0x...`) in `text`.
fn hex_after(text: &str, before: &str) -> u64 {
    let at = text.find(before).unwrap_or_else(|| panic!("no {before:?}")) + before.len();
    let digits: String = text[at..]
        .trim_start_matches("0x")
        .chars()
        .take_while(|c| c.is_ascii_hexdigit())
        .collect();
    u64::from_str_radix(&digits, 16).unwrap()
}

/// §1's `fnv1a64`, with the basis and prime the document gives.
fn fnv1a64(s: &str) -> u64 {
    let tree = section("## 1. The container tree");
    let (basis, prime) = (hex_after(&tree, "offset basis "), hex_after(&tree, "prime "));
    s.bytes().fold(basis, |h, b| (h ^ u64::from(b)).wrapping_mul(prime))
}

/// Asserts `text` states `formula` (so a change of the document's rule fails here too).
fn states(text: &str, formula: &str) {
    assert!(text.contains(formula), "format.md no longer says {formula:?}");
}

/// The entries of `dir` whose names start with `prefix`.
fn entries(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
        .map(|e| e.path())
        .collect();
    v.sort();
    v
}

fn name_of(p: &Path) -> String {
    p.file_name().unwrap().to_string_lossy().into_owned()
}

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
}

/// §10: an N-N file is a plain file at `<canonical[fnv1a64(basename) % n]>/<rel>`, its directory
/// a plain directory on every canonical backend; no container, index or dropping.
#[test]
fn n_n_files_are_where_section_10_puts_them() {
    states(
        &section("## 10. N-N mode"),
        "A logical file is a plain file `<canonical[fnv1a64(basename) % n]>/<rel>`; logical directories are plain directories on every canonical backend",
    );
    let mut fx = Fixture::new("doc-nn", 3, 0, GlobalParams::default());
    fx.config.mounts[0].workload = Workload::FilePerProc;
    let p = fx.plfs();
    p.mkdir(&fx.path("d"), 0o755).unwrap();
    for b in &fx.canonical {
        assert!(b.join("d").is_dir(), "the directory on {}", b.display());
    }
    for i in 0..12 {
        let base = format!("rank.{i}");
        let data = format!("rank {i}'s bytes").into_bytes();
        put(&p, &fx.path(&format!("d/{base}")), &data);
        let home = (fnv1a64(&base) % 3) as usize;
        for (k, b) in fx.canonical.iter().enumerate() {
            let f = b.join("d").join(&base);
            if k == home {
                let md = std::fs::symlink_metadata(&f).unwrap();
                assert!(md.is_file(), "{} is a plain file", f.display());
                assert_eq!(std::fs::read(&f).unwrap(), data);
            } else {
                assert!(!f.exists(), "{base} only on backend {home}, also on {k}");
            }
        }
    }
    for b in &fx.canonical {
        for e in entries(&b.join("d"), "") {
            assert!(!name_of(&e).starts_with('.'), "no container, index or dropping: {e:?}");
        }
    }
}

/// The container id of the container `c`: its marker's (§2), which in a version 2 container is
/// its `meta/cid.*` dropping's too.
fn cid_of(c: &Path) -> u128 {
    let m = std::fs::read(c.join(format::MARKER_NAME)).unwrap();
    let cid = format::Marker::decode(c, &m).unwrap().container_id;
    if c.join(format::META_DIR).is_dir() {
        let cids = entries(&c.join(format::META_DIR), "cid.");
        assert_eq!(cids.len(), 1, "{cids:?}");
        assert_eq!(format::parse_cid_dropping(&name_of(&cids[0])), Some(cid));
    }
    cid
}

/// The data logs of container `c`: in it (format 3), in its hostdirs, and in its hostdirs on
/// `backends` (shadows).
fn data_logs(c: &Path, backends: &[PathBuf]) -> Vec<PathBuf> {
    let shadow = PathBuf::from(format::SHADOW_ROOT).join(format!("{:032x}", cid_of(c)));
    let hostdirs = std::iter::once(c.to_path_buf())
        .chain(backends.iter().map(|b| b.join(&shadow)))
        .flat_map(|d| entries(&d, format::HOSTDIR_PREFIX));
    entries(c, "data.")
        .into_iter()
        .chain(hostdirs.flat_map(|h| entries(&h, "data.")))
        .collect()
}

/// §1 and §7: a container is on `canonical[fnv1a64(basename) % n_canonical]`; a writer's logs
/// are in `hostdir.<K>`, K = fnv1a64(host) % num_hostdirs (the host its log's name ends with),
/// in the container when its shadow backend `shadows[fnv1a64(host) % n_shadows]` is the
/// container's backend, else under `<shadow>/.plfs_shadow/<container id: 32 hex>/`.
#[test]
fn n_1_containers_and_hostdirs_are_where_section_1_puts_them() {
    let tree = section("## 1. The container tree");
    states(&tree, "`canonical[fnv1a64(basename) % n_canonical]`");
    states(&tree, "K = fnv1a64(host) % num_hostdirs");
    states(&tree, "`shadows[fnv1a64(host) % n_shadows]`");
    states(
        &tree,
        "<shadow backend>/.plfs_shadow/<container id: 32 hex>/hostdir.<K>/...",
    );
    states(
        &section("## 7. Shadow backends"),
        "a writer whose shadow backend is not the container's canonical backend keeps its hostdir under `<shadow>/.plfs_shadow/<container id>/`",
    );
    states(&tree, "logs, where `num_hostdirs` > 1 asks for hostdirs");
    // Three backends of both roles, then one canonical backend and three shadow-only ones; with
    // 7 hostdirs, and with 1 (the default: a writer on the container's backend logs in the
    // container itself).
    for (ncanon, nshadow, hostdirs) in [(3, 0, 7), (1, 3, 7), (3, 0, 1), (1, 3, 1)] {
        let global = GlobalParams {
            num_hostdirs: hostdirs,
            ..GlobalParams::default()
        };
        let fx = Fixture::new("doc-n1", ncanon, nshadow, global.clone());
        let shadows = if nshadow == 0 { &fx.canonical } else { &fx.shadows };
        let all: Vec<PathBuf> = fx.canonical.iter().chain(&fx.shadows).cloned().collect();
        let p = fx.plfs();
        for i in 0..9 {
            let base = format!("file{i}.out");
            put(&p, &fx.path(&base), b"bytes");
            let home = (fnv1a64(&base) % ncanon as u64) as usize;
            let c = fx.container_dir(&base);
            assert_eq!(c, fx.canonical[home].join(&base));
            let data = data_logs(&c, &all);
            assert_eq!(data.len(), 1, "{data:?}");
            let log = name_of(&data[0]);
            let host = log.splitn(4, '.').nth(3).expect("data.<id>.<pid>.<host>");
            let shadow = &shadows[(fnv1a64(host) % shadows.len() as u64) as usize];
            let hostdir = format!("{}{}", format::HOSTDIR_PREFIX, fnv1a64(host) % u64::from(hostdirs));
            let dir = if *shadow != fx.canonical[home] {
                shadow
                    .join(format::SHADOW_ROOT)
                    .join(format!("{:032x}", cid_of(&c)))
                    .join(hostdir)
            } else if hostdirs == 1 {
                c.clone()
            } else {
                c.join(hostdir)
            };
            assert_eq!(data[0], dir.join(&log), "{base} ({hostdirs} hostdirs)");
        }
    }
}

/// §1's directory and log modes, from its examples ("a 0600 file's directories are 0711"): the
/// container, its hostdirs and `meta/` get them, the logs the file's read/write bits plus owner
/// `rw`.
#[test]
fn container_modes_match_section_1() {
    let tree = section("## 1. The container tree");
    let examples: Vec<(u32, u32)> = tree
        .split("a 0")
        .skip(1)
        .filter_map(|t| {
            let file = u32::from_str_radix(t.get(..3)?, 8).ok()?;
            let rest = t.get(3..)?;
            let rest = rest
                .strip_prefix(" file's directories are 0")
                .or_else(|| rest.strip_prefix(" file's 0"))?;
            Some((file, u32::from_str_radix(rest.get(..3)?, 8).ok()?))
        })
        .collect();
    assert_eq!(examples, [(0o600, 0o711), (0o644, 0o755)], "§1's examples");
    states(
        &tree,
        "Data and index logs get the logical mode's read/write bits plus owner `rw`",
    );
    let fx = Fixture::simple("doc-modes");
    let p = fx.plfs();
    let mut checked = 0;
    for (file_mode, dir_mode) in examples {
        let name = format!("m{file_mode:o}");
        let f = p.open(&fx.path(&name), common::wo_create(), file_mode, 1).unwrap();
        f.write(b"x", 0).unwrap();
        f.close().unwrap();
        let c = fx.container_dir(&name);
        if mode(&c.join(format::MARKER_NAME)) != file_mode {
            continue; // the umask took bits of the logical mode: not this example
        }
        // A version 3 container is its only directory, its logs in it.
        assert!(entries(&c, format::HOSTDIR_PREFIX).is_empty() && !c.join(format::META_DIR).exists());
        assert_eq!(mode(&c), dir_mode, "{}", c.display());
        let logs: Vec<PathBuf> = entries(&c, "data.").into_iter().chain(entries(&c, "index.")).collect();
        assert_eq!(logs.len(), 2, "{logs:?}");
        for log in logs {
            assert_eq!(mode(&log), file_mode & 0o666 | 0o600, "{}", log.display());
        }
        checked += 1;
    }
    assert!(checked > 0, "the umask took bits of every example's mode");
}

/// §11: a 1-N writer's log `log.<writer id: 16 hex>.<pid>.<host>` is in `<rel>/.plfs_small/` on
/// `canonical[fnv1a64(host) % n]`.
#[test]
fn small_file_logs_are_where_section_11_puts_them() {
    let small = section("## 11. 1-N mode");
    states(
        &small,
        "A writer process appends to one log, `log.<writer id: 16 hex>.<pid>.<host>`, on backend `canonical[fnv1a64(host) % n]`",
    );
    states(&small, "packed into logs in `<canonical backend>/<rel>/.plfs_small/`");
    let fx = Fixture::small("doc-small", 3, GlobalParams::default());
    let p = fx.plfs();
    p.mkdir(&fx.path("d"), 0o755).unwrap();
    put(&p, &fx.path("d/a"), b"bytes");
    let logs: Vec<(usize, PathBuf)> = fx
        .canonical
        .iter()
        .enumerate()
        .flat_map(|(k, b)| {
            entries(&b.join("d").join(format::small::SMALL_DIR), format::small::LOG_PREFIX)
                .into_iter()
                .map(move |l| (k, l))
        })
        .collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
    let (k, log) = &logs[0];
    let parsed = format::small::parse_log_name(&name_of(log)).expect("a log's name");
    assert_eq!(*k as u64, fnv1a64(&parsed.host) % 3, "{}", log.display());
}

/// §4.2: how many records a writer buffers by default.
#[test]
fn index_buffer_default_matches_section_4() {
    let text = section("## 4. Index log");
    let at = text
        .find("(`index_buffer_records`, default ")
        .expect("§4.2 gives the default")
        + "(`index_buffer_records`, default ".len();
    let n: u32 = text[at..].split(')').next().unwrap().parse().unwrap();
    assert_eq!(GlobalParams::default().index_buffer_records, n);
}

/// Writes, by hand, the unframed data and index logs of writer `id` into `hostdir`: each write
/// `(logical offset, timestamp, bytes)` as one WRITE record.
fn hand_logs(hostdir: &Path, id: u64, writes: &[(u64, u64, &[u8])]) {
    let header = |magic| format::LogHeader {
        magic,
        writer_id: id,
        open_ns: 1,
        pid: 7,
        flags: 0,
    };
    let mut data = header(format::DATA_MAGIC).encode().to_vec();
    let mut index = header(format::INDEX_MAGIC).encode().to_vec();
    for &(logical_off, ts, bytes) in writes {
        let rec = format::WriteRecord {
            logical_off,
            length: bytes.len() as u64,
            physical_off: data.len() as u64,
            ts,
            data_crc: 0,
        };
        rec.encode_into(&mut index);
        data.extend_from_slice(bytes);
    }
    std::fs::write(hostdir.join(format::data_log_name(id, 7, "h")), data).unwrap();
    std::fs::write(hostdir.join(format::index_log_name(id, 7, "h")), index).unwrap();
}

/// §8: events apply in `(ts, writer id)` order; equal timestamps are won by the larger writer
/// id; a truncate discards the bytes at or past its size written before it; unwritten ranges
/// below the size read as zeros.
#[test]
fn merge_follows_section_8() {
    let rules = section("## 8. Ordering and merge rules");
    states(&rules, "Every write and truncate has a key `(ts, writer id)`");
    states(&rules, "equal timestamps are broken by the larger writer id winning");
    states(
        &rules,
        "a write overwrites its range; a truncate to S discards every byte at offset ≥ S written before it and sets the size to S. Unwritten ranges below the size read as zeros.",
    );
    let fx = Fixture::simple("doc-merge");
    put(&fx.plfs(), &fx.path("f"), b"");
    let c = fx.container_dir("f");
    let hostdir = c.join(format!("{}0", format::HOSTDIR_PREFIX));
    std::fs::create_dir(&hostdir).unwrap();
    // Writers 0x10 and 0x20 write bytes 0..8 at the same time: 0x20's win. The file is
    // truncated to 2 at 1500; at 2000 writer 0x10 writes 4..8 again.
    hand_logs(&hostdir, 0x10, &[(0, 1000, b"AAAAAAAA"), (4, 2000, b"aaaa")]);
    hand_logs(&hostdir, 0x20, &[(0, 1000, b"BBBBBBBB")]);
    // A version 3 container's droppings are in it; its readers find logs in hostdirs too.
    let meta = c.clone();
    let droppings = [
        format::MetaDropping::Close {
            writer_id: 0x10,
            open_ts: 900,
            close_ts: 2100,
            eof: 8,
            bytes: 12,
            mtime_ns: 2000,
        },
        format::MetaDropping::Close {
            writer_id: 0x20,
            open_ts: 900,
            close_ts: 1100,
            eof: 8,
            bytes: 8,
            mtime_ns: 1000,
        },
        format::MetaDropping::Trunc {
            ts: 1500,
            size: 2,
            writer_id: 0x30,
        },
    ];
    for d in &droppings {
        std::fs::write(meta.join(d.name()), b"").unwrap();
    }
    assert_eq!(common::get(&fx.plfs(), &fx.path("f")), b"BB\0\0aaaa");
}
