//! What a reader and a writer of an N-1 file cost in backend calls does not grow with the
//! number of writers (issue 52): after N writers closed (each its own instance, as N processes
//! are), the last close wrote the flattened index, so a fresh reader that reads one writer's
//! records opens the same files at 4 writers and at 64 (the container, the flattened index and
//! the one data log its reads touch), where before it opened every writer's index log.

mod common;

use common::{pattern, read_all, ro, wo_create, Fixture};
use plfs_core::config::GlobalParams;
use std::path::Path;

const REC: usize = 47008;
const RECORDS: u64 = 4;

fn offset(n: u64, w: u64, k: u64) -> u64 {
    (k * n + w) * REC as u64
}

/// `n` writers (one instance each, all open at once) write `RECORDS` strided records each;
/// returns the listings of backend directories their closes made.
fn write_n(fx: &Fixture, path: &Path, n: u64) -> u64 {
    let ws: Vec<_> = (0..n)
        .map(|w| {
            let p = fx.plfs();
            let f = p.open(path, wo_create(), 0o644, 100 + w as u32).unwrap();
            (p, f)
        })
        .collect();
    for (w, (_, f)) in ws.iter().enumerate() {
        for k in 0..RECORDS {
            let off = offset(n, w as u64, k);
            f.write(&pattern(w as u64, off, REC), off).unwrap();
        }
    }
    let listings = common::call_counter(fx, "sys::readdir");
    let before = listings();
    for (p, f) in ws {
        f.close().unwrap();
        drop(p);
    }
    listings() - before
}

/// Opens of backend files by a fresh reader of writer 1's records (every byte checked).
fn reader_opens(fx: &Fixture, path: &Path, n: u64) -> u64 {
    let opens = common::call_counter(fx, "sys::open");
    let before = opens();
    let p = fx.plfs();
    let f = p.open(path, ro(), 0, 7).unwrap();
    for k in 0..RECORDS {
        let off = offset(n, 1, k);
        let mut b = vec![0u8; REC];
        assert_eq!(f.read(&mut b, off).unwrap(), REC);
        common::assert_bytes_eq(&b, &pattern(1, off, REC), &format!("{n} writers: record {k}"));
    }
    f.close().unwrap();
    drop(p);
    opens() - before
}

#[test]
fn a_reader_opens_the_same_files_at_4_and_at_64_writers() {
    let mut seen = Vec::new();
    for n in [4u64, 16, 64] {
        let fx = Fixture::new(&format!("scale-read-{n}"), 1, 0, GlobalParams::default());
        let path = fx.path("ckpt");
        let listed = write_n(&fx, &path, n);
        // Each close lists the container once (is any writer still open?); the last also
        // lists it after merging the logs (did anything change meanwhile?). No more: the merge
        // reads the logs of the listing that decided it.
        assert_eq!(listed, n + 1, "{n} writers: listings made by their closes");
        assert!(
            fx.canonical[0].join("ckpt/flat.index").exists(),
            "{n} writers: the last close wrote no flattened index"
        );
        seen.push((n, reader_opens(&fx, &path, n)));
        // And the whole file reads back, as the merge of the logs would.
        let all = read_all(&fx.plfs().open(&path, ro(), 0, 8).unwrap()).unwrap();
        for w in 0..n {
            for k in 0..RECORDS {
                let off = offset(n, w, k) as usize;
                common::assert_bytes_eq(&all[off..off + REC], &pattern(w, off as u64, REC), "whole file");
            }
        }
    }
    eprintln!("backend opens of a reader of one writer's records, by writers: {seen:?}");
    let first = seen[0].1;
    assert!(
        seen.iter().all(|&(_, o)| o == first),
        "opens grow with the writers: {seen:?}"
    );
    assert!(first <= 4, "a reader opens {first} backend files");
}

/// Below 4 writers nothing is flattened (a reader's few index logs cost what one flattened
/// index does), and a writer still open stops it: its writes must be read from its logs.
#[test]
fn no_flattened_index_for_few_writers_or_while_one_is_open() {
    let fx = Fixture::new("scale-few", 1, 0, GlobalParams::default());
    let path = fx.path("few");
    write_n(&fx, &path, 3);
    assert!(!fx.canonical[0].join("few/flat.index").exists());
    let path = fx.path("held");
    let p = fx.plfs();
    let held = p.open(&path, wo_create(), 0o644, 99).unwrap();
    // Past what the 8 writers write.
    let at = offset(8, 0, RECORDS) + 10;
    held.write(b"held", at).unwrap();
    write_n(&fx, &path, 8);
    assert!(
        !fx.canonical[0].join("held/flat.index").exists(),
        "flattened while a writer is open"
    );
    held.close().unwrap();
    drop(p);
    // The last close (the held writer's) flattens, and the file reads the held writer's bytes.
    assert!(fx.canonical[0].join("held/flat.index").exists());
    let all = read_all(&fx.plfs().open(&path, ro(), 0, 8).unwrap()).unwrap();
    assert_eq!(all.len() as u64, at + 4);
    assert_eq!(&all[at as usize..], b"held");
    assert_eq!(&all[..REC], pattern(0, 0, REC).as_slice());
}

/// Writers that close together may each find no writer open: one flattens, under a
/// non-blocking exclusive flock of the marker, and a closer that finds it held leaves the
/// flattening to the holder (at 64 writers on CephFS a dozen closers each merged every log:
/// 16 index reads a writer against 2 at 4 writers). Here the test holds the lock, as a closer
/// that is flattening would: the last of 8 closes writes no flattened index and waits for
/// nothing; the next last close, with the lock free, flattens, and the file reads whole.
#[test]
fn a_closer_leaves_the_flattening_to_one_that_holds_the_marker_s_lock() {
    use std::os::fd::AsFd;
    let fx = Fixture::new("scale-turn", 1, 0, GlobalParams::default());
    let path = fx.path("ckpt");
    // Made, not written: no writer, no dropping.
    let p = fx.plfs();
    p.open(&path, wo_create(), 0o644, 90).unwrap().close().unwrap();
    drop(p);
    let marker = std::fs::File::open(fx.canonical[0].join("ckpt/.plfscontainer")).unwrap();
    rustix::fs::flock(marker.as_fd(), rustix::fs::FlockOperation::NonBlockingLockExclusive).unwrap();
    let t0 = std::time::Instant::now();
    write_n(&fx, &path, 8);
    assert!(
        t0.elapsed() < std::time::Duration::from_secs(20),
        "a close waited for the lock"
    );
    let flat = fx.canonical[0].join("ckpt/flat.index");
    assert!(
        !flat.exists(),
        "a closer flattened while another held the marker's lock"
    );
    drop(marker);
    // One more writer, past the 8 writers' records; its close is the last, and flattens.
    let at = offset(8, 0, RECORDS) + 10;
    let p = fx.plfs();
    let f = p.open(&path, wo_create(), 0o644, 91).unwrap();
    f.write(b"last", at).unwrap();
    f.close().unwrap();
    drop(p);
    assert!(
        flat.exists(),
        "the last close with the lock free wrote no flattened index"
    );
    let all = read_all(&fx.plfs().open(&path, ro(), 0, 8).unwrap()).unwrap();
    assert_eq!(all.len() as u64, at + 4);
    assert_eq!(&all[at as usize..], b"last");
    for w in 0..8u64 {
        for k in 0..RECORDS {
            let off = offset(8, w, k) as usize;
            common::assert_bytes_eq(
                &all[off..off + REC],
                &pattern(w, off as u64, REC),
                &format!("writer {w} record {k}"),
            );
        }
    }
}

/// A log that processes append to one after another (`echo ... >> job.log` from a shell loop:
/// each append its own writer) is flattened at every 4th close, not at each, and each
/// flattening and each append reads the last flattened index and the few logs after it, not
/// every log (before, an append after 40 others opened every writer's index log). A flattening
/// at close is seen as a new flattened index (written aside, then renamed: a new inode).
#[test]
fn appends_one_after_another_flatten_every_few_closes_and_read_few_logs() {
    use std::os::unix::fs::MetadataExt;
    let fx = Fixture::new("scale-appends", 1, 0, GlobalParams::default());
    let path = fx.path("job.log");
    let flat = fx.canonical[0].join("job.log/flat.index");
    let mut flattened_at = Vec::new();
    let mut last_ino = None;
    let mut want = Vec::new();
    let opens = common::call_counter(&fx, "sys::open");
    let mut opened = Vec::new();
    for i in 0..40u32 {
        let before = opens();
        let p = fx.plfs();
        let mut fl = wo_create();
        fl.append = true;
        let f = p.open(&path, fl, 0o644, 100 + i).unwrap();
        let line = format!("line {i}\n");
        f.append(line.as_bytes()).unwrap();
        want.extend_from_slice(line.as_bytes());
        f.close().unwrap();
        drop(p);
        opened.push(opens() - before);
        let ino = std::fs::metadata(&flat).ok().map(|m| m.ino());
        if ino.is_some() && ino != last_ino {
            flattened_at.push(i + 1);
            last_ino = ino;
        }
    }
    assert_eq!(
        flattened_at,
        (1..=10).map(|k| 4 * k).collect::<Vec<u32>>(),
        "closes after which the index was flattened"
    );
    // Backend files an append opens (its open, the append, its close and any flattening it
    // does): the same at the 40th as at the 8th, where every index log was read before.
    eprintln!("backend opens per append: {opened:?}");
    let early = *opened[4..12].iter().max().unwrap();
    let late = *opened[28..].iter().max().unwrap();
    assert!(late <= early, "appends open more files as the log grows: {opened:?}");
    let all = read_all(&fx.plfs().open(&path, ro(), 0, 8).unwrap()).unwrap();
    common::assert_bytes_eq(&all, &want, "the appended lines");
}

/// The whole file as `n` writers of `write_n` left it.
fn model(n: u64) -> Vec<u8> {
    let mut want = vec![0u8; (n * RECORDS) as usize * REC];
    for w in 0..n {
        for k in 0..RECORDS {
            let off = offset(n, w, k);
            want[off as usize..off as usize + REC].copy_from_slice(&pattern(w, off, REC));
        }
    }
    want
}

/// A writer after the flattening (a rank that writes again, an append) is read from its own
/// index log beside the flattened index, which still answers for the writers it covers: a
/// fresh reader opens the same few files as before it (where it opened every index log), its
/// writes win over the older ones they overlap, and a truncate after it cuts both.
#[test]
fn a_writer_after_the_flattening_is_read_from_its_log_beside_the_flattened_index() {
    let seen: Vec<u64> = [16, 64].into_iter().map(writer_after).collect();
    eprintln!("backend opens of a reader of writer 1's records with a writer after, at 16 and 64 writers: {seen:?}");
    assert_eq!(
        seen[0], seen[1],
        "opens grow with the writers the flattened index covers"
    );
}

/// [`a_writer_after_the_flattening_is_read_from_its_log_beside_the_flattened_index`] at `n`
/// writers: the opens of the reader of writer 1's records.
fn writer_after(n: u64) -> u64 {
    let fx = Fixture::new(&format!("scale-after-{n}"), 1, 0, GlobalParams::default());
    let path = fx.path("ckpt");
    write_n(&fx, &path, n);
    assert!(fx.canonical[0].join("ckpt/flat.index").exists());
    let flattened = reader_opens(&fx, &path, n);
    let mut want = model(n);
    // Over writer 1's first record, and past the end.
    let over = offset(n, 1, 0) + 100;
    let end = want.len() as u64 + 10;
    let p = fx.plfs();
    let f = p.open(&path, wo_create(), 0o644, 300).unwrap();
    f.write(b"NEWER", over).unwrap();
    f.write(b"tail", end).unwrap();
    f.close().unwrap();
    drop(p);
    want[over as usize..over as usize + 5].copy_from_slice(b"NEWER");
    want.resize(end as usize, 0);
    want.extend_from_slice(b"tail");
    // Writer 1's records read through both: one index log and one data log more.
    let opens = common::call_counter(&fx, "sys::open");
    let before = opens();
    let p = fx.plfs();
    let r = p.open(&path, ro(), 0, 7).unwrap();
    for k in 0..RECORDS {
        let off = offset(n, 1, k);
        let mut b = vec![0u8; REC];
        assert_eq!(r.read(&mut b, off).unwrap(), REC);
        common::assert_bytes_eq(&b, &want[off as usize..off as usize + REC], &format!("record {k}"));
    }
    r.close().unwrap();
    drop(p);
    let after = opens() - before;
    assert!(
        after < n,
        "{n} writers: {after} opens with one writer after the flattening, {flattened} without"
    );
    let all = read_all(&fx.plfs().open(&path, ro(), 0, 8).unwrap()).unwrap();
    common::assert_bytes_eq(&all, &want, "the whole file");
    // A truncate after both cuts both.
    let cut = over + 3;
    fx.plfs().truncate(&path, cut).unwrap();
    let all = read_all(&fx.plfs().open(&path, ro(), 0, 9).unwrap()).unwrap();
    common::assert_bytes_eq(&all, &want[..cut as usize], "after the truncate");
    after
}
