//! Damaged containers: torn, extended, bit-flipped and emptied index logs, missing and short data
//! logs, stray files, a bad marker. Damage is an error, never a hole: every case where a record
//! the droppings promise is missing, unreadable or inconsistent must fail the read with EIO naming
//! the damaged file, and never panic or return zeros. What is not damage reads back exactly: the
//! torn tail of the index log of a writer that died mid-append (it left its open record), and
//! files PLFS does not know. The reads run in a child process (this binary re-executed) so that
//! its stderr can be checked.
//!
//! Layout used by every case (docs/format.md): writer pid 11 wrote records 0..10 of 100 bytes at
//! logical 0..1000 (pattern seed 1), writer pid 22 records 0..5 at 1000..1500 (seed 2). Index
//! logs are a 64-byte header then 48-byte records; data logs a 64-byte header then the data in
//! write order.

mod common;

use common::{arg, assert_child_ok, child_command, child_lines, Fixture, CHILD_TAG};
use plfs_core::config::GlobalParams;
use plfs_core::{Config, Plfs};
use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

const ENTRY: &str = "child_entry";
const HDR: u64 = 64;
const REC: u64 = 48;
/// A write's frame in a framed data log (format 2): write `k` of 100 bytes by one writer has
/// its data at `data_at(k)`.
const FR: u64 = 32;

fn data_at(k: u64) -> u64 {
    HDR + k * (FR + 100) + FR
}
const W1: u32 = 11;
const W2: u32 = 22;

/// Child entry: `dump` prints the stat size and writes the file's bytes to `OUT`.
#[test]
fn child_entry() {
    let Some(role) = common::child_role() else { return };
    assert_eq!(role, "dump");
    let rc = PathBuf::from(arg("RC"));
    let plfs = Plfs::new(Config::from_file(&rc).expect("config")).expect("Plfs::new");
    let path = PathBuf::from(arg("PATH"));
    match plfs.stat(&path) {
        Ok(st) => println!("{CHILD_TAG} size {}", st.size),
        Err(e) => println!("{CHILD_TAG} staterr {e}"),
    }
    let r = plfs.open(&path, common::ro(), 0, 5).and_then(|f| {
        let v = common::read_all(&f)?;
        f.close()?;
        Ok(v)
    });
    match r {
        Ok(v) => {
            std::fs::write(arg("OUT"), &v).unwrap();
            println!("{CHILD_TAG} read {}", v.len());
        }
        Err(e) => println!("{CHILD_TAG} error {e}"),
    }
}

/// What a reading process saw.
#[derive(Debug)]
struct Dump {
    stat: Result<u64, String>,
    data: Result<Vec<u8>, String>,
    stderr: String,
}

fn dump(fx: &Fixture) -> Dump {
    let out_path = fx.dir.path().join("dump.out");
    let _ = std::fs::remove_file(&out_path);
    let args = [
        ("RC", fx.rc.display().to_string()),
        ("PATH", fx.path("f").display().to_string()),
        ("OUT", out_path.display().to_string()),
    ];
    let out = child_command(ENTRY, "dump", &args).output().unwrap();
    assert_child_ok(&out, "reader");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "reader panicked:\n{stderr}");
    let stat = match (child_lines(&out, "size").pop(), child_lines(&out, "staterr").pop()) {
        (Some(s), None) => Ok(s.parse().unwrap()),
        (None, Some(e)) => Err(e),
        other => panic!("reader printed {other:?}"),
    };
    let data = match (child_lines(&out, "read").pop(), child_lines(&out, "error").pop()) {
        (Some(n), None) => {
            let v = std::fs::read(&out_path).unwrap();
            assert_eq!(v.len().to_string(), n);
            Ok(v)
        }
        (None, Some(e)) => Err(e),
        other => panic!("reader printed {other:?}"),
    };
    Dump { stat, data, stderr }
}

/// Builds the two-writer file described in the module comment.
fn setup(tag: &str) -> Fixture {
    setup_with(tag, GlobalParams::default())
}

/// [`setup`] with other parameters (`index_buffer_records` is always 1).
fn setup_with(tag: &str, g: GlobalParams) -> Fixture {
    let fx = Fixture::new(
        tag,
        1,
        0,
        GlobalParams {
            index_buffer_records: 1,
            ..g
        },
    );
    let p = fx.plfs();
    let path = fx.path("f");
    let a = p.open(&path, common::wo_create(), 0o644, W1).unwrap();
    let b = p.open(&path, common::wo_create(), 0o644, W2).unwrap();
    for i in 0..10u64 {
        a.write(&common::pattern(1, i * 100, 100), i * 100).unwrap();
        if i < 5 {
            b.write(&common::pattern(2, 1000 + i * 100, 100), 1000 + i * 100)
                .unwrap();
        }
    }
    a.close().unwrap();
    b.close().unwrap();
    assert_eq!(dump(&fx).data.unwrap(), expected(10, 5), "intact file");
    fx
}

/// The file's contents when only the first `n1` records of writer 1 and `n2` of writer 2
/// survive; lost ranges inside the file read as zeros, a lost tail shortens it.
fn expected(n1: u64, n2: u64) -> Vec<u8> {
    let mut v = vec![
        0u8;
        if n2 > 0 {
            1000 + n2 as usize * 100
        } else {
            n1 as usize * 100
        }
    ];
    v[..n1 as usize * 100].copy_from_slice(&common::pattern(1, 0, n1 as usize * 100));
    if n2 > 0 {
        v[1000..].copy_from_slice(&common::pattern(2, 1000, n2 as usize * 100));
    }
    v
}

fn name_of(p: &Path) -> String {
    p.file_name().unwrap().to_string_lossy().into_owned()
}

#[track_caller]
fn assert_data(d: &Dump, want: &[u8]) {
    match &d.data {
        Ok(v) => common::assert_bytes_eq(v, want, "surviving bytes"),
        Err(e) => panic!("read failed: {e}\nstderr: {}", d.stderr),
    }
}

/// The read failed with EIO, naming `file`.
#[track_caller]
fn assert_eio(d: &Dump, file: &Path) {
    let n = name_of(file);
    match &d.data {
        Ok(v) => panic!("read {} bytes of a damaged file; expected EIO naming {n}", v.len()),
        Err(e) => {
            assert!(e.contains(&n), "error does not name {n}: {e}");
            assert!(
                e.contains("corrupt") || e.contains("Input/output") || e.contains("I/O"),
                "not EIO: {e}"
            );
        }
    }
}

/// Turns writer `pid`'s close record back into an open record, as if the writer had died after
/// writing (fsck's stale-open case).
fn writer_died(fx: &Fixture, pid: u32) {
    let idx = fx.log_of_pid("f", "index", pid);
    let rest = name_of(&idx).strip_prefix("index.").unwrap().to_string();
    let id = rest.split('.').next().unwrap().to_string();
    let meta = fx.meta_dir("f");
    for e in std::fs::read_dir(&meta).unwrap() {
        let n = e.unwrap().file_name().to_string_lossy().into_owned();
        if n.starts_with(&format!("close.{id}.")) {
            std::fs::remove_file(meta.join(&n)).unwrap();
        }
    }
    std::fs::write(meta.join(format!("open.{rest}")), b"").unwrap();
}

fn set_len(p: &Path, len: u64) {
    OpenOptions::new().write(true).open(p).unwrap().set_len(len).unwrap();
}

#[test]
fn torn_index_tail_of_a_writer_that_died_keeps_whole_records() {
    let fx = setup("c-torn");
    let idx = fx.log_of_pid("f", "index", W1);
    assert_eq!(std::fs::metadata(&idx).unwrap().len(), HDR + 10 * REC);
    set_len(&idx, HDR + 7 * REC + 20);
    writer_died(&fx, W1);
    let d = dump(&fx);
    // The three writes whose records were lost are read from their frames in the data log.
    assert_data(&d, &expected(10, 5));
    assert_eq!(d.stat, Ok(1500));
    // The data log cut in the middle of write 8: writes 0..8 survive, the cut one does not.
    set_len(&fx.log_of_pid("f", "data", W1), data_at(8) + 50);
    let d = dump(&fx);
    let mut want = expected(8, 5);
    want.resize(1500, 0);
    assert_data(&d, &want);
    assert_eq!(d.stat, Ok(1500));
}

#[test]
fn torn_index_tail_of_a_writer_that_closed_is_damage() {
    let fx = setup("c-torn-closed");
    let idx = fx.log_of_pid("f", "index", W1);
    let whole = std::fs::read(&idx).unwrap();
    set_len(&idx, HDR + 7 * REC + 20);
    assert_eio(&dump(&fx), &idx);
    std::fs::write(&idx, &whole).unwrap();
    let idx2 = fx.log_of_pid("f", "index", W2);
    set_len(&idx2, HDR + 3 * REC + 1);
    let d = dump(&fx);
    assert_eio(&d, &idx2);
    // stat holds the eof of writer 2's close dropping to its index log, which no longer
    // reaches it: the index decides, and the damage is EIO there too (issue 50).
    match &d.stat {
        Err(e) => assert!(e.contains(&name_of(&idx2)), "{e}"),
        Ok(s) => panic!("stat says {s} of a file whose last writer's index log is torn"),
    }
}

#[test]
fn garbage_appended_to_index_log() {
    let fx = setup("c-garbage");
    let idx = fx.log_of_pid("f", "index", W1);
    // Zeros decode as a record frame with a wrong checksum.
    OpenOptions::new()
        .append(true)
        .open(&idx)
        .unwrap()
        .write_all(&[0u8; 100])
        .unwrap();
    assert_eio(&dump(&fx), &idx);
    // Random-looking bytes after the last record of a closed writer: torn or not, damage.
    set_len(&idx, HDR + 10 * REC);
    assert_data(&dump(&fx), &expected(10, 5));
    let idx2 = fx.log_of_pid("f", "index", W2);
    OpenOptions::new()
        .append(true)
        .open(&idx2)
        .unwrap()
        .write_all(&common::pattern(99, 0, 77))
        .unwrap();
    assert_eio(&dump(&fx), &idx2);
}

#[test]
fn flipped_bit_in_a_record_is_damage() {
    let fx = setup("c-flip");
    let idx = fx.log_of_pid("f", "index", W1);
    let f = OpenOptions::new().read(true).write(true).open(&idx).unwrap();
    let at = HDR + 3 * REC + 12; // inside record 3's logical offset field
    let mut b = [0u8; 1];
    f.read_exact_at(&mut b, at).unwrap();
    f.write_all_at(&[b[0] ^ 0x10], at).unwrap();
    let d = dump(&fx);
    assert_eio(&d, &idx);
    assert!(d.data.as_ref().unwrap_err().contains("checksum"), "{:?}", d.data);
}

#[test]
fn bad_index_header_is_damage() {
    let fx = setup("c-hdr");
    let idx = fx.log_of_pid("f", "index", W1);
    OpenOptions::new()
        .write(true)
        .open(&idx)
        .unwrap()
        .write_all_at(b"XXXX", 0)
        .unwrap();
    assert_eio(&dump(&fx), &idx);
}

#[test]
fn missing_data_log() {
    let fx = setup("c-nodata");
    let data = fx.log_of_pid("f", "data", W1);
    std::fs::remove_file(&data).unwrap();
    assert_eio(&dump(&fx), &data);
}

#[test]
fn data_log_shorter_than_the_index_says() {
    let fx = setup("c-shortdata");
    let data = fx.log_of_pid("f", "data", W1);
    assert_eq!(std::fs::metadata(&data).unwrap().len(), HDR + 10 * FR + 1000);
    set_len(&data, data_at(4) + 50); // record 4 (bytes 400..500) is cut in the middle
    assert_eio(&dump(&fx), &data);
}

/// In the log of a writer that has not closed, a record whose data is not in the data log yet
/// is a write not visible here yet, not damage: a reader on another GlusterFS client sees the
/// index record before the data when the writer's client sends them in that order. The reader
/// gets the writes before it (the later ones too once the data is there); fsck still names the
/// records as damage, since for a writer that is gone they are writes lost.
#[test]
fn data_log_behind_the_index_of_a_writer_still_open_is_not_damage() {
    let fx = setup("c-behind");
    let data = fx.log_of_pid("f", "data", W1);
    let whole = std::fs::read(&data).unwrap();
    writer_died(&fx, W1);
    set_len(&data, data_at(4) + 50); // write 4 (bytes 400..500) is cut in the middle
    let d = dump(&fx);
    let mut want = expected(4, 5);
    want.resize(1500, 0);
    assert_data(&d, &want);
    let plfs = fx.plfs();
    let rep = plfs_core::fsck::fsck(&plfs, &fx.path("f"), &plfs_core::fsck::Options::default()).unwrap();
    assert_eq!(
        rep.of(plfs_core::fsck::Kind::RecordPastDataEnd).len(),
        1,
        "fsck: {:#?}",
        rep.findings
    );
    // The data arrives: every write is read.
    std::fs::write(&data, &whole).unwrap();
    assert_data(&dump(&fx), &expected(10, 5));
}

fn checksums() -> GlobalParams {
    GlobalParams {
        data_checksums: true,
        ..GlobalParams::default()
    }
}

fn flip(p: &Path, at: u64) {
    let f = OpenOptions::new().read(true).write(true).open(p).unwrap();
    let mut b = [0u8; 1];
    f.read_exact_at(&mut b, at).unwrap();
    f.write_all_at(&[b[0] ^ 0x10], at).unwrap();
}

/// With `data_checksums: true`, a read checks the data it returns against its write's checksum:
/// a flipped byte in a data log is EIO naming the data log and the write, for a read of the
/// whole file and for a read of a few bytes of the damaged write away from the flipped byte;
/// the other writes still read. Without checksums the same flip cannot be seen (`plfs verify`
/// says so: it counts such records as unchecked).
#[test]
fn flipped_data_byte_with_checksums_is_damage() {
    let fx = setup_with("c-datacrc", checksums());
    let data = fx.log_of_pid("f", "data", W1);
    flip(&data, data_at(4) + 50); // in record 4 (logical 400..500)
    let d = dump(&fx);
    assert_eio(&d, &data);
    let e = d.data.unwrap_err();
    assert!(
        e.contains("logical offset 400") && e.contains("/f:"),
        "names the write and the file: {e}"
    );
    let p = fx.plfs();
    let f = p.open(&fx.path("f"), common::ro(), 0, 5).unwrap();
    let mut b = [0u8; 10];
    let e = f.read(&mut b, 410).unwrap_err();
    assert_eq!(e.raw_errno(), libc_eio(), "{e}");
    // The same descriptor again: a damaged write is never taken as checked.
    assert!(f.read(&mut b, 480).is_err());
    let mut good = vec![0u8; 400];
    assert_eq!(f.read(&mut good, 0).unwrap(), 400);
    assert_eq!(good, common::pattern(1, 0, 400));
    let mut good = vec![0u8; 500];
    assert_eq!(f.read(&mut good, 1000).unwrap(), 500);
    assert_eq!(good, common::pattern(2, 1000, 500));
}

/// A flattened index holds no checksums: a reader with `data_checksums: true` reads the index
/// logs instead, and still finds the damage.
#[test]
fn checksums_are_checked_after_flattening() {
    let fx = setup_with("c-datacrc-flat", checksums());
    plfs_core::tools::flatten(&fx.plfs(), &fx.path("f")).unwrap();
    let data = fx.log_of_pid("f", "data", W2);
    flip(&data, data_at(1) + 20); // record 1 of writer 2 (logical 1100..1200)
    let d = dump(&fx);
    assert_eio(&d, &data);
    assert!(d.data.unwrap_err().contains("logical offset 1100"));
}

/// Data this process wrote is checked too: its merged index learns each write's checksum from
/// the write itself, not from the index log.
#[test]
fn own_writes_are_checked() {
    let fx = Fixture::new("c-datacrc-own", 1, 0, checksums());
    let p = fx.plfs();
    let path = fx.path("f");
    let f = p.open(&path, common::rw_create(), 0o644, W1).unwrap();
    f.write(&common::pattern(1, 0, 4096), 0).unwrap();
    let mut b = vec![0u8; 4096];
    assert_eq!(f.read(&mut b, 0).unwrap(), 4096, "intact");
    assert_eq!(b, common::pattern(1, 0, 4096));
    // The index is loaded now: this write goes into it from the write path.
    f.write(&common::pattern(1, 4096, 4096), 4096).unwrap();
    flip(&fx.log_of_pid("f", "data", W1), HDR + 2 * FR + 4096 + 7);
    let e = f.read(&mut b[..16], 4100).unwrap_err();
    assert_eq!(e.raw_errno(), libc_eio(), "{e}");
    assert_eq!(f.read(&mut b[..16], 0).unwrap(), 16);
    // Another process finds it from the index log.
    f.flush().unwrap();
    let q = fx.plfs();
    let g = q.open(&path, common::ro(), 0, W2).unwrap();
    let e = g.read(&mut b[..16], 4100).unwrap_err();
    assert_eq!(e.raw_errno(), libc_eio(), "{e}");
    g.close().unwrap();
    f.close().unwrap();
}

fn libc_eio() -> i32 {
    rustix::io::Errno::IO.raw_os_error()
}

#[test]
fn missing_hostdir_is_damage() {
    // The case: stat still reports the full size from the droppings, so a read that
    // found nothing would return zeros with success.
    let fx = setup("c-nohostdir");
    let idx = fx.log_of_pid("f", "index", W1);
    if idx.parent().unwrap() == fx.container_dir("f") {
        // Format 3 keeps the logs in the container: the writer's logs go instead.
        std::fs::remove_file(fx.log_of_pid("f", "data", W1)).unwrap();
        std::fs::remove_file(&idx).unwrap();
    } else {
        std::fs::remove_dir_all(idx.parent().unwrap()).unwrap();
    }
    let d = dump(&fx);
    assert_eq!(d.stat, Ok(1500));
    match &d.data {
        Ok(v) => panic!("read {} bytes of a file whose logs are gone", v.len()),
        Err(e) => assert!(e.contains("index log is missing"), "{e}"),
    }
}

#[test]
fn stray_files_in_container_and_hostdir() {
    let fx = setup("c-stray");
    let c = fx.container_dir("f");
    let idx = fx.log_of_pid("f", "index", W1);
    let hostdir = idx.parent().unwrap().to_path_buf();
    std::fs::write(c.join("README"), b"not a dropping").unwrap();
    std::fs::create_dir(c.join("hostdir.999")).unwrap();
    std::fs::write(fx.meta_dir("f").join("garbage.name"), b"").unwrap();
    std::fs::write(hostdir.join("junk"), b"junk").unwrap();
    std::fs::write(hostdir.join("index.notalog"), b"junk").unwrap();
    std::fs::write(hostdir.join("data.0000000000000001.3.h"), b"no index for this").unwrap();
    // Files whose names PLFS does not use are ignored.
    let d = dump(&fx);
    assert_data(&d, &expected(10, 5));
    assert_eq!(d.stat, Ok(1500));
    // The directory still lists exactly one file.
    let names: Vec<_> = fx
        .plfs()
        .readdir(Path::new(common::MOUNT))
        .unwrap()
        .into_iter()
        .map(|e| (e.name, e.kind))
        .collect();
    assert_eq!(names, vec![("f".into(), plfs_core::FileKind::File)]);
    // A file named like an index log but with a garbage header is a damaged log.
    let fake = hostdir.join("index.0123456789abcdef.5.strayhost");
    std::fs::write(&fake, common::pattern(7, 0, 200)).unwrap();
    assert_eio(&dump(&fx), &fake);
}

#[test]
fn stray_regular_file_named_like_a_hostdir() {
    let fx = setup("c-stray-hd");
    let stray = fx.container_dir("f").join("hostdir.998");
    std::fs::write(&stray, b"a file, not a directory").unwrap();
    let d = dump(&fx);
    match &d.data {
        Ok(v) => common::assert_bytes_eq(v, &expected(10, 5), "data beside a stray file"),
        Err(e) => assert!(e.contains("hostdir.998"), "error does not name the stray file: {e}"),
    }
}

#[test]
fn header_only_and_empty_index_logs() {
    let fx = setup("c-empty");
    let idx1 = fx.log_of_pid("f", "index", W1);
    let header = std::fs::read(&idx1).unwrap()[..HDR as usize].to_vec();
    set_len(&idx1, HDR);
    let d = dump(&fx);
    assert_eio(&d, &idx1);
    assert!(d.data.as_ref().unwrap_err().contains("holds 0"), "{:?}", d.data);
    set_len(&idx1, 0);
    assert_eio(&dump(&fx), &idx1);
    // A writer that died before appending a record leaves a header-only index log: its writes
    // are read from their frames in the data log.
    std::fs::write(&idx1, &header).unwrap();
    writer_died(&fx, W1);
    assert_data(&dump(&fx), &expected(10, 5));
    // Without its data log's frames, nothing is promised.
    set_len(&fx.log_of_pid("f", "data", W1), HDR);
    assert_data(&dump(&fx), &expected(0, 5));
    let idx2 = fx.log_of_pid("f", "index", W2);
    set_len(&idx2, 10);
    assert_eio(&dump(&fx), &idx2);
}

#[test]
fn bad_marker_magic() {
    let fx = setup("c-marker");
    let marker = fx.container_dir("f").join(".plfscontainer");
    OpenOptions::new()
        .write(true)
        .open(&marker)
        .unwrap()
        .write_all_at(b"JUNK", 0)
        .unwrap();
    let d = dump(&fx);
    match &d.data {
        Ok(v) => common::assert_bytes_eq(v, &expected(10, 5), "data behind a bad marker"),
        Err(e) => assert!(e.contains(".plfscontainer"), "error does not name the marker: {e}"),
    }
    // The fsck-style check must notice it.
    let err = plfs_core::tools::marker(&fx.plfs(), &fx.path("f")).unwrap_err();
    assert!(err.to_string().contains(".plfscontainer"), "{err}");
    assert_eq!(err.raw_errno(), 5, "EIO");
}

/// Sizes in dropping names are not trusted (issue [2/7] item 5): a close dropping whose end of
/// file is beyond any file size does not make stat report it (the index decides), and a truncate
/// dropping to such a size is damage, named, not a file of 2^64 - 1 bytes.
#[test]
fn sizes_in_dropping_names_beyond_off_t() {
    let fx = setup("corrupt-name-size");
    let meta = fx.meta_dir("f");
    let closes: Vec<String> = std::fs::read_dir(&meta)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("close."))
        .collect();
    assert_eq!(closes.len(), 2, "{closes:?}");
    let mut f: Vec<&str> = closes[0].split('.').collect();
    f[4] = "18446744073709551615";
    std::fs::rename(meta.join(&closes[0]), meta.join(f.join("."))).unwrap();
    let d = dump(&fx);
    assert_eq!(d.stat, Ok(1500), "stat must come from the index, not the name");
    assert_data(&d, &expected(10, 5));
    let trunc = format!("trunc.1.{}.{:016x}", u64::MAX, 7);
    std::fs::write(meta.join(&trunc), b"").unwrap();
    let d = dump(&fx);
    assert_eio(&d, &meta.join(&trunc));
    assert!(d.stat != Ok(u64::MAX), "{:?}", d.stat);
}

/// Symbolic links planted in a container are never followed (issue [2/7] item 2): a data log
/// swapped for a link to another file (a root-only secret), or a hostdir swapped for a link to a
/// directory holding a look-alike log, is damage (EIO naming it), and not one byte of the
/// link's target is returned.
#[test]
fn symlinks_planted_in_a_container_are_not_followed() {
    use std::os::unix::fs::symlink;
    let secret = vec![0x5au8; 4000];
    // A data log replaced by a link to a secret file as long as the real log.
    let fx = setup("c-symlink-data");
    let data = fx.log_of_pid("f", "data", W1);
    let len = std::fs::metadata(&data).unwrap().len();
    let target = fx.dir.path().join("secret");
    std::fs::write(&target, &secret[..len as usize]).unwrap();
    std::fs::remove_file(&data).unwrap();
    symlink(&target, &data).unwrap();
    let d = dump(&fx);
    assert_eio(&d, &data);
    // A hostdir replaced by a link to a copy of itself elsewhere, its data log swapped for the
    // secret: the copy is never read.
    let fx = setup("c-symlink-hostdir");
    let data = fx.log_of_pid("f", "data", W1);
    let hostdir = data.parent().unwrap().to_path_buf();
    let elsewhere = fx.dir.path().join("elsewhere");
    std::fs::rename(&hostdir, &elsewhere).unwrap();
    let moved_data = elsewhere.join(data.file_name().unwrap());
    let len = std::fs::metadata(&moved_data).unwrap().len();
    std::fs::write(&moved_data, &secret[..len as usize]).unwrap();
    symlink(&elsewhere, &hostdir).unwrap();
    let d = dump(&fx);
    if let Ok(v) = &d.data {
        assert!(
            !v.windows(64).any(|w| w.iter().all(|&b| b == 0x5a)),
            "secret bytes were served"
        );
        panic!("read {} bytes through a symlinked hostdir", v.len());
    }
}

/// A file of 600,000 B written by one writer in 100,000 B writes (issue 50's case), in a fresh
/// fixture; returns it and its bytes.
fn six_hundred_k(tag: &str) -> (Fixture, Vec<u8>) {
    let fx = Fixture::simple(tag);
    let p = fx.plfs();
    let path = fx.path("f");
    let want = common::pattern(3, 0, 600_000);
    let f = p.open(&path, common::wo_create(), 0o644, W1).unwrap();
    for k in 0..6 {
        f.write(&want[k * 100_000..(k + 1) * 100_000], k as u64 * 100_000)
            .unwrap();
    }
    f.close().unwrap();
    assert_eq!(common::read_fresh(&fx, &path).unwrap(), want);
    (fx, want)
}

/// `r` failed with EIO, naming the marker.
#[track_caller]
fn assert_marker_eio<T: std::fmt::Debug>(r: plfs_core::Result<T>, what: &str) {
    match r {
        Ok(v) => panic!("{what}: {v:?} with success behind a damaged marker"),
        Err(e) => {
            assert_eq!(e.raw_errno(), libc_eio(), "{what}: {e}");
            assert!(
                e.to_string().contains(".plfscontainer"),
                "{what}: does not name the marker: {e}"
            );
        }
    }
}

/// Issue 50, item 3: a version 3 marker cut to any length from 48 to 63 bytes (or grown past
/// 64) made the file look like a version 2 container without `meta/`: stat and read said an
/// empty file with success, verify said OK, and an append built a version 2 layout (`meta/`,
/// a hostdir) beside the version 3 logs. Now stat, open, read, verify and an append answer
/// EIO naming the marker and build nothing; fsck reports it, and --repair rebuilds the marker
/// (the version 3 logs prove its version) so that the file reads back byte for byte.
#[test]
fn a_marker_cut_or_grown_is_damage_and_builds_no_second_layout() {
    for len in [48u64, 50, 56, 63, 65, 80] {
        let (fx, want) = six_hundred_k(&format!("c-marker-cut-{len}"));
        let c = fx.container_dir("f");
        let marker = c.join(".plfscontainer");
        let before: Vec<_> = std::fs::read_dir(&c).unwrap().map(|e| e.unwrap().file_name()).collect();
        if len > 64 {
            OpenOptions::new()
                .append(true)
                .open(&marker)
                .unwrap()
                .write_all(&vec![0x5a; len as usize - 64])
                .unwrap();
        } else {
            set_len(&marker, len);
        }
        let p = fx.plfs();
        let path = fx.path("f");
        assert_marker_eio(p.stat(&path).map(|s| s.size), &format!("stat ({len} B)"));
        assert_marker_eio(p.open(&path, common::ro(), 0, 5).map(drop), &format!("open ({len} B)"));
        let mut append = common::wo_create();
        append.append = true;
        assert_marker_eio(p.open(&path, append, 0o644, W2).map(drop), &format!("append ({len} B)"));
        assert!(
            plfs_core::fsck::verify(&p, &path).map_or(true, |r| r.exit_code() != 0),
            "verify says OK ({len} B)"
        );
        let after: Vec<_> = std::fs::read_dir(&c).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(after, before, "the container changed ({len} B)");
        assert!(!c.join("meta").exists(), "a version 2 layout was built ({len} B)");
        let rep = plfs_core::fsck::fsck(&p, &path, &plfs_core::fsck::Options::default()).unwrap();
        assert_eq!(
            rep.of(plfs_core::fsck::Kind::BadMarker).len(),
            1,
            "{len} B: {:#?}",
            rep.findings
        );
        let opts = plfs_core::fsck::Options {
            repair: true,
            ..Default::default()
        };
        let rep = plfs_core::fsck::fsck(&p, &path, &opts).unwrap();
        assert!(
            rep.findings.iter().all(|f| !f.outstanding()),
            "{len} B: {:#?}",
            rep.findings
        );
        assert_eq!(std::fs::metadata(&marker).unwrap().len(), 64, "{len} B");
        assert_eq!(common::read_fresh(&fx, &path).unwrap(), want, "after repair ({len} B)");
        assert_eq!(fx.plfs().stat(&path).unwrap().size, 600_000);
    }
}

/// The same for a version 2 container: its marker grown to 56 or 64 bytes (64 is a version 3
/// marker's size, which would have it read without `meta/`, its truncates lost) is EIO naming
/// the marker, and fsck --repair rebuilds it from the cid dropping.
#[test]
fn a_version_2_marker_grown_is_damage() {
    for len in [56u64, 64] {
        let fx = Fixture::new(
            &format!("c-marker-v2-{len}"),
            1,
            0,
            GlobalParams {
                container_format: 2,
                ..GlobalParams::default()
            },
        );
        let path = fx.path("f");
        let want = common::pattern(4, 0, 50_000);
        common::put(&fx.plfs(), &path, &want);
        let marker = fx.container_dir("f").join(".plfscontainer");
        assert_eq!(std::fs::metadata(&marker).unwrap().len(), 48);
        set_len(&marker, len);
        let p = fx.plfs();
        assert_marker_eio(p.stat(&path).map(|s| s.size), &format!("stat ({len} B)"));
        let read = p.open(&path, common::ro(), 0, 5).and_then(|f| common::read_all(&f));
        assert_marker_eio(read.map(|v| v.len()), &format!("open and read ({len} B)"));
        let opts = plfs_core::fsck::Options {
            repair: true,
            ..Default::default()
        };
        let rep = plfs_core::fsck::fsck(&p, &path, &opts).unwrap();
        assert_eq!(
            rep.of(plfs_core::fsck::Kind::BadMarker).len(),
            1,
            "{len} B: {:#?}",
            rep.findings
        );
        assert!(
            rep.findings.iter().all(|f| !f.outstanding()),
            "{len} B: {:#?}",
            rep.findings
        );
        assert_eq!(std::fs::metadata(&marker).unwrap().len(), 48);
        assert_eq!(common::read_fresh(&fx, &path).unwrap(), want, "after repair ({len} B)");
    }
}

/// Issue 50, item 4: a flattened file whose index log was renamed (to another writer's name, to
/// a name PLFS does not use) reads right through its flattened index; fsck --repair wrote a
/// close dropping for the "new" writer, which changed the droppings' signature, readers fell
/// back to the index logs and the file answered EIO. fsck now reports that reads need the
/// flattened index and repairs nothing in the container: the file still reads byte for byte.
#[test]
fn fsck_repair_keeps_a_flattened_index_that_reads_need() {
    for newname in ["index.00000000000000ff.11.vm", "index.renamed"] {
        let (fx, want) = six_hundred_k(&format!("c-flat-needed-{}", newname.len()));
        let path = fx.path("f");
        plfs_core::tools::flatten(&fx.plfs(), &path).unwrap();
        let idx = fx.log_of_pid("f", "index", W1);
        std::fs::rename(&idx, idx.parent().unwrap().join(newname)).unwrap();
        assert_eq!(
            common::read_fresh(&fx, &path).unwrap(),
            want,
            "{newname}: before repair"
        );
        let opts = plfs_core::fsck::Options {
            repair: true,
            ..Default::default()
        };
        let rep = plfs_core::fsck::fsck(&fx.plfs(), &path, &opts).unwrap();
        assert_eq!(
            rep.of(plfs_core::fsck::Kind::FlatIndexNeeded).len(),
            1,
            "{newname}: {:#?}",
            rep.findings
        );
        let got = common::read_fresh(&fx, &path);
        assert_eq!(
            got.as_deref().ok(),
            Some(&want[..]),
            "{newname}: after repair: {:?}",
            got.as_ref().err()
        );
        assert_eq!(fx.plfs().stat(&path).unwrap().size, 600_000);
        // With the log back, the flattened index is a cache again: fsck is clean.
        std::fs::rename(idx.parent().unwrap().join(newname), &idx).unwrap();
        let rep = plfs_core::fsck::fsck(&fx.plfs(), &path, &plfs_core::fsck::Options::default()).unwrap();
        assert!(
            rep.of(plfs_core::fsck::Kind::FlatIndexNeeded).is_empty(),
            "{:#?}",
            rep.findings
        );
    }
}

/// Issue 50, item 4: a close dropping renamed to another eof (1,600,000 for a 600,000 B file)
/// made stat report that size (reads, which merge the index, were right). The writer's index
/// log now holds the dropping's eof to its records: stat says 600,000 B, for a larger or a
/// smaller eof, in a version 3 and a version 2 container; fsck still reports the dropping.
#[test]
fn stat_holds_a_close_droppings_eof_to_its_writers_index_log() {
    for (format, eof) in [(3u32, 1_600_000u64), (3, 100_000), (2, 1_600_000)] {
        let fx = Fixture::new(
            &format!("c-close-eof-{format}-{eof}"),
            1,
            0,
            GlobalParams {
                container_format: format,
                ..GlobalParams::default()
            },
        );
        let path = fx.path("f");
        let want = common::pattern(5, 0, 600_000);
        common::put(&fx.plfs(), &path, &want);
        let meta = fx.meta_dir("f");
        let close: String = std::fs::read_dir(&meta)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .find(|n| n.starts_with("close."))
            .unwrap();
        let mut f: Vec<&str> = close.split('.').collect();
        assert_eq!(f[4], "600000", "{close}");
        let eof_s = eof.to_string();
        f[4] = &eof_s;
        std::fs::rename(meta.join(&close), meta.join(f.join("."))).unwrap();
        assert_eq!(
            fx.plfs().stat(&path).unwrap().size,
            600_000,
            "format {format}, eof {eof}"
        );
        assert_eq!(common::read_fresh(&fx, &path).unwrap(), want);
        let rep = plfs_core::fsck::fsck(&fx.plfs(), &path, &plfs_core::fsck::Options::default()).unwrap();
        assert!(
            rep.findings.iter().any(|f| f.problem),
            "format {format}: {:#?}",
            rep.findings
        );
    }
}
