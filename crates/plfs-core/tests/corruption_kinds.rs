//! Every kind of file in an N-1 container, damaged every way (issue 50, deliverable 2): the
//! marker, the close and trunc droppings, the index logs, the data logs, the flattened index
//! and the compaction journal, each cut to every length class (0, inside its header, its header
//! exactly, mid-record, one byte short of whole, whole and garbage after it) and with a byte
//! changed at every offset of its header, records and frames (docs/format.md §2-§6, §14: every
//! field is covered byte by byte); a dropping's name with each number changed and bytes
//! written into it. What a fresh reader then says is judged against the model: the exact file,
//! or EIO, never a shorter or different file with success (stat's size included); a damage read
//! through exactly must be found by `plfs fsck`; and `fsck --repair` of a file that read right
//! leaves it reading right, byte for byte.
//!
//! Data bytes are changed only where the writers stored data checksums (`data_checksums: true`):
//! without them a changed data byte cannot be seen (format.md §3; `plfs verify` says so).

mod common;

use common::{read_all, ro, Fixture};
use plfs_core::config::GlobalParams;
use plfs_core::fsck::{self, Options as FsckOptions};
use plfs_core::Plfs;
use std::path::{Path, PathBuf};

const EIO: i32 = 5;

/// What a fresh reader said.
#[derive(Debug, Clone, PartialEq)]
enum Seen {
    Exact,
    Eio,
    /// A wrong answer with success, or an error other than EIO.
    Wrong(String),
}

fn look(p: &Plfs, path: &Path, want: &[u8]) -> Seen {
    let st = p.stat(path);
    let data = p.open(path, ro(), 0, 3).and_then(|f| {
        let v = read_all(&f);
        let _ = f.close();
        v
    });
    let mut eio = false;
    match &st {
        Ok(s) if s.size != want.len() as u64 => return Seen::Wrong(format!("stat size {}", s.size)),
        Ok(_) => {}
        Err(e) if e.raw_errno() == EIO => eio = true,
        Err(e) => return Seen::Wrong(format!("stat: {e}")),
    }
    match &data {
        Ok(v) if v[..] != want[..] => {
            let at = common::first_diff(v, want);
            return Seen::Wrong(format!("read {} bytes, first difference at {at:?}", v.len()));
        }
        Ok(_) => {}
        Err(e) if e.raw_errno() == EIO => eio = true,
        Err(e) => return Seen::Wrong(format!("read: {e}")),
    }
    if eio {
        Seen::Eio
    } else {
        Seen::Exact
    }
}

/// A built container, saved so that every trial starts from it.
struct Case {
    fx: Fixture,
    path: PathBuf,
    want: Vec<u8>,
    container: PathBuf,
    saved: PathBuf,
    /// The problems fsck reports of the intact container (a compaction's journal is one): a
    /// damage is found only by a problem beyond them.
    baseline: Vec<(fsck::Kind, String)>,
}

/// The problems of a report, by kind and the file they name.
fn problems(r: &fsck::Report) -> Vec<(fsck::Kind, String)> {
    r.findings
        .iter()
        .filter(|f| f.problem)
        .map(|f| {
            (
                f.kind,
                f.path.file_name().unwrap_or_default().to_string_lossy().into_owned(),
            )
        })
        .collect()
}

impl Case {
    fn new(fx: Fixture, want: Vec<u8>) -> Case {
        let path = fx.path("f");
        let container = fx.container_dir("f");
        let saved = fx.dir.path().join("saved");
        cp(&container, &saved);
        let baseline = problems(&fsck::fsck(&fx.plfs(), &path, &FsckOptions::default()).unwrap());
        let c = Case {
            fx,
            path,
            want,
            container,
            saved,
            baseline,
        };
        assert_eq!(look(&c.fx.plfs(), &c.path, &c.want), Seen::Exact, "the intact file");
        // That read may have changed it (a reader finishes a compaction's roll-forward).
        c.restore();
        c
    }

    fn restore(&self) {
        std::fs::remove_dir_all(&self.container).unwrap();
        cp(&self.saved, &self.container);
    }

    /// The files of the saved container whose names start with `prefix`.
    fn files(&self, prefix: &str) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(&self.saved)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(prefix))
            .collect();
        v.sort();
        v
    }
}

fn cp(from: &Path, to: &Path) {
    let st = std::process::Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .unwrap();
    assert!(st.success(), "cp -a {} {}", from.display(), to.display());
}

/// What the trials found: a line per wrong answer.
#[derive(Default)]
struct Tally {
    trials: u32,
    eio: u32,
    exact_found: u32,
    wrong: Vec<String>,
    /// What damage nothing in the container can prove gave, where it was wrong (see
    /// [`damage_dropping`]).
    unprovable: Vec<String>,
}

impl Tally {
    /// A damage that no file in the container can prove (a number in a dropping's name that
    /// nothing else records): its wrong answers are counted apart, not failed on.
    fn judge_unprovable(&mut self, case: &Case, what: &str) {
        let before = self.wrong.len();
        self.judge(case, what);
        let extra: Vec<String> = self.wrong.drain(before..).collect();
        self.unprovable.extend(extra);
    }

    /// One damage, done to the case's container (described by `what`): judged, then undone.
    fn judge(&mut self, case: &Case, what: &str) {
        self.trials += 1;
        let seen = look(&case.fx.plfs(), &case.path, &case.want);
        let rep = fsck::fsck(&case.fx.plfs(), &case.path, &FsckOptions::default());
        let mut found = match &rep {
            Ok(r) => problems(r).iter().any(|p| !case.baseline.contains(p)),
            Err(e) => e.raw_errno() == EIO,
        };
        // `plfs verify` checks what fsck does not: the data against its checksums.
        found |= fsck::verify(&case.fx.plfs(), &case.path).map_or(true, |r| r.exit_code() != 0);
        match &seen {
            Seen::Wrong(w) => self.wrong.push(format!("{what}: {w} (fsck finds it: {found})")),
            Seen::Eio => self.eio += 1,
            Seen::Exact if !found => self.wrong.push(format!("{what}: reads exactly, fsck finds nothing")),
            Seen::Exact => self.exact_found += 1,
        }
        if seen == Seen::Exact {
            let opts = FsckOptions {
                repair: true,
                ..Default::default()
            };
            if let Err(e) = fsck::fsck(&case.fx.plfs(), &case.path, &opts) {
                self.wrong.push(format!("{what}: fsck --repair failed: {e}"));
            }
            match look(&case.fx.plfs(), &case.path, &case.want) {
                Seen::Exact => {}
                s => self
                    .wrong
                    .push(format!("{what}: read exactly, after fsck --repair {s:?}")),
            }
        }
        case.restore();
    }

    fn check(&self, name: &str) {
        eprintln!(
            "{name}: {} trials, {} EIO, {} read exactly and found by fsck, {} wrong",
            self.trials,
            self.eio,
            self.exact_found,
            self.wrong.len()
        );
        if !self.unprovable.is_empty() {
            eprintln!(
                "{name}: {} wrong answers to damage nothing in the container can prove (left alone):\n{}",
                self.unprovable.len(),
                self.unprovable.join("\n")
            );
        }
        assert!(
            self.wrong.is_empty(),
            "{name}: wrong answers:\n{}",
            self.wrong.join("\n")
        );
    }
}

fn write_at(p: &Path, off: u64, b: &[u8]) {
    use std::os::unix::fs::FileExt;
    std::fs::OpenOptions::new()
        .write(true)
        .open(p)
        .unwrap()
        .write_all_at(b, off)
        .unwrap();
}

fn set_len(p: &Path, len: u64) {
    std::fs::OpenOptions::new()
        .write(true)
        .open(p)
        .unwrap()
        .set_len(len)
        .unwrap();
}

/// The length classes of a file of `len` bytes with a header of `hdr` bytes and records of
/// `rec` bytes after it (0 where it has none): 0, inside the header, the header exactly,
/// mid-record, one byte short of whole.
fn cut_lengths(len: u64, hdr: u64, rec: u64) -> Vec<u64> {
    let mut v = vec![0, hdr / 2, hdr];
    if rec > 0 && hdr + rec < len {
        v.push(hdr + rec + rec / 2);
    }
    v.push(len - 1);
    v.retain(|&l| l < len);
    v.dedup();
    v
}

/// Cuts, garbage after the end, and a changed byte at each offset `flips` gives, of the case's
/// file `name`.
fn damage_file(t: &mut Tally, case: &Case, name: &str, hdr: u64, rec: u64, flips: impl Iterator<Item = u64>) {
    let p = case.container.join(name);
    let whole = std::fs::read(&p).unwrap();
    let len = whole.len() as u64;
    for cut in cut_lengths(len, hdr, rec) {
        set_len(&p, cut);
        t.judge(case, &format!("{name} cut to {cut} of {len} B"));
    }
    for garbage in [&[0u8; 48][..], &common::pattern(9, 0, 61)[..]] {
        let mut b = whole.clone();
        b.extend_from_slice(garbage);
        std::fs::write(&p, &b).unwrap();
        let what = format!("{name} with {} B after its end", garbage.len());
        // Bytes after a data log's last write are what a writer killed mid-write leaves, and
        // stay after fsck --repair closes it: no file tells them from damage (readers never
        // see them, fsck reports them as unindexed data, for information).
        if name.starts_with("data.") {
            t.judge_unprovable(case, &what);
        } else {
            t.judge(case, &what);
        }
    }
    for at in flips {
        if at >= len {
            continue;
        }
        for x in [0x01u8, 0x80] {
            write_at(&p, at, &[whole[at as usize] ^ x]);
            t.judge(case, &format!("{name} byte {at} ^ {x:#x}"));
        }
    }
}

/// A dropping's name with each of its dot-separated numbers changed, and bytes written into it.
/// A close dropping's writer id, `eof` and `bytes` are held to its writer's logs; its
/// timestamps (`open_ts`, `close_ts`, `mtime_ns`) and every number of a trunc dropping (the
/// only record of its truncate) are recorded nowhere else: changing them is unprovable without a
/// checksum in the name (a format change), and their wrong answers are counted apart.
fn damage_dropping(t: &mut Tally, case: &Case, name: &str) {
    let trunc = name.starts_with("trunc.");
    let fields: Vec<&str> = name.split('.').collect();
    let p = case.container.join(name);
    for i in 1..fields.len() {
        let hex = fields[i].len() == 16 && fields[i].bytes().all(|b| b.is_ascii_hexdigit());
        let n = if hex {
            u64::from_str_radix(fields[i], 16).unwrap()
        } else {
            fields[i].parse().unwrap()
        };
        for m in [n.wrapping_add(1), n.wrapping_sub(1), n.wrapping_mul(3), n / 3] {
            if m == n {
                continue;
            }
            let mut f: Vec<String> = fields.iter().map(|s| s.to_string()).collect();
            f[i] = if hex { format!("{m:016x}") } else { m.to_string() };
            let to = f.join(".");
            std::fs::rename(&p, case.container.join(&to)).unwrap();
            if trunc || matches!(i, 2 | 3 | 6) {
                t.judge_unprovable(case, &format!("{name} renamed to {to}"));
            } else {
                t.judge(case, &format!("{name} renamed to {to}"));
            }
        }
    }
    std::fs::write(&p, b"not empty").unwrap();
    t.judge(case, &format!("{name} holding 9 bytes"));
}

const W1: u32 = 11;
const W2: u32 = 22;

/// Two writers, then a truncate to a non-zero size (a trunc dropping), then a flatten:
/// writer 1 wrote 5 × 100 B at 0..500, writer 2 3 × 100 B at 500..800, the file was cut to 700.
fn build(tag: &str, g: GlobalParams) -> (Fixture, Vec<u8>) {
    let fx = Fixture::new(
        tag,
        1,
        0,
        GlobalParams {
            auto_compaction: false,
            ..g
        },
    );
    let p = fx.plfs();
    let path = fx.path("f");
    let a = p.open(&path, common::wo_create(), 0o644, W1).unwrap();
    let b = p.open(&path, common::wo_create(), 0o644, W2).unwrap();
    for k in 0..5u64 {
        a.write(&common::pattern(1, k * 100, 100), k * 100).unwrap();
    }
    for k in 5..8u64 {
        b.write(&common::pattern(2, k * 100, 100), k * 100).unwrap();
    }
    a.close().unwrap();
    b.close().unwrap();
    p.truncate(&path, 700).unwrap();
    let mut want = common::pattern(1, 0, 500);
    want.extend_from_slice(&common::pattern(2, 500, 200));
    (fx, want)
}

fn logs(case: &Case, kind: &str) -> Vec<String> {
    case.files(&format!("{kind}."))
}

/// The marker, the droppings, the index logs, the data logs' headers and frames and the
/// flattened index of a flattened two-writer file.
#[test]
fn every_kind_of_file_damaged_every_way() {
    let (fx, want) = build("kinds", GlobalParams::default());
    plfs_core::tools::flatten(&fx.plfs(), &fx.path("f")).unwrap();
    let case = Case::new(fx, want);
    let mut t = Tally::default();
    damage_file(&mut t, &case, ".plfscontainer", 48, 0, 0..64);
    for d in case.files("close.").iter().chain(&case.files("trunc.")) {
        damage_dropping(&mut t, &case, d);
    }
    for ix in logs(&case, "index") {
        damage_file(&mut t, &case, &ix, 64, 48, 0..64 + 3 * 48);
    }
    for dl in logs(&case, "data") {
        // The header and the first two frames, every byte.
        let frames = (0..64).chain((0..2).flat_map(|k| (64 + k * 132)..(64 + k * 132 + 32)));
        damage_file(&mut t, &case, &dl, 64, 132, frames);
    }
    let flat_len = std::fs::metadata(case.saved.join("flat.index")).unwrap().len();
    damage_file(&mut t, &case, "flat.index", 48, 44, 0..flat_len);
    t.check("kinds");
}

/// With data checksums, a changed data byte is found too.
#[test]
fn data_bytes_damaged_with_checksums() {
    let (fx, want) = build(
        "kinds-crc",
        GlobalParams {
            data_checksums: true,
            ..GlobalParams::default()
        },
    );
    let case = Case::new(fx, want);
    let mut t = Tally::default();
    for dl in logs(&case, "data") {
        let len = std::fs::metadata(case.saved.join(&dl)).unwrap().len();
        let data = (64..len).filter(|o| (o - 64) % 132 >= 32).step_by(7);
        damage_file(&mut t, &case, &dl, 64, 132, data);
    }
    t.check("kinds-crc");
}

/// A committed compaction's journal, left by a compaction whose retirement of the old logs
/// failed (every unlink in the fixture answering EIO), damaged every way.
#[test]
fn a_compaction_journal_damaged_every_way() {
    let (fx, want) = build("kinds-journal", GlobalParams::default());
    let path = fx.path("f");
    let tag = fx.dir.path().display().to_string();
    plfs_core::failpoint::set(plfs_core::failpoint::Spec {
        name: "sys::unlink".into(),
        filter: tag.clone(),
        action: plfs_core::failpoint::Action::Errno(rustix::io::Errno::IO),
        after: 0,
        times: None,
    });
    let r = plfs_core::compact::compact(&fx.plfs(), &path, &Default::default());
    plfs_core::failpoint::clear_for("sys::unlink", &tag);
    let journal = fx.container_dir("f").join("compact.journal");
    assert!(
        journal.exists(),
        "no journal left by a compaction whose unlinks failed ({r:?})"
    );
    let case = Case::new(fx, want);
    let mut t = Tally::default();
    let len = std::fs::metadata(case.saved.join("compact.journal")).unwrap().len();
    damage_file(&mut t, &case, "compact.journal", 40, 0, 0..len);
    t.check("kinds-journal");
}
