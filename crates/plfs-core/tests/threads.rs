//! Concurrency inside one process: threads writing one N-1 file through one shared handle (one
//! writer pid per thread, as MPI ranks in threads would) or through a handle each, while other
//! threads read. A record must be seen either whole or not at all, and the final file must match
//! the pattern byte for byte, in this process and in a fresh instance.

mod common;

use common::{pattern, Fixture};
use plfs_core::config::GlobalParams;
use plfs_core::OpenFile;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

const SEED: u64 = 0x7777;
const NTHREADS: u64 = 6;
const NRECS: u64 = 60;
const RECSIZE: u64 = 3001;

fn record_offset(rank: u64, i: u64) -> u64 {
    (i * NTHREADS + rank) * RECSIZE
}

/// Reads the whole file and checks that every record slot is either all zeros (not written yet)
/// or exactly its pattern; returns how many records were complete.
fn check_records(f: &OpenFile) -> u64 {
    let size = NTHREADS * NRECS * RECSIZE;
    let mut buf = vec![0u8; size as usize];
    let n = f.read(&mut buf, 0).unwrap();
    buf.truncate(n);
    let mut done = 0;
    for (k, chunk) in buf.chunks(RECSIZE as usize).enumerate() {
        let off = k as u64 * RECSIZE;
        if chunk.iter().all(|&b| b == 0) {
            continue;
        }
        common::assert_bytes_eq(chunk, &pattern(SEED, off, chunk.len()), &format!("record at {off}"));
        if chunk.len() as u64 == RECSIZE {
            done += 1;
        }
    }
    done
}

fn run(shared_handle: bool, global: GlobalParams, tag: &str) {
    let fx = Fixture::new(tag, 2, 0, global);
    let p = Arc::new(fx.plfs());
    let path = fx.path("t");
    let shared = Arc::new(p.open(&path, common::rw_create(), 0o644, 1000).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|i| {
            let (p, path, stop) = (p.clone(), path.clone(), stop.clone());
            std::thread::spawn(move || {
                let r = p.open(&path, common::ro(), 0, 2000 + i).unwrap();
                let mut rounds = 0u32;
                while !stop.load(Ordering::Relaxed) {
                    check_records(&r);
                    rounds += 1;
                }
                r.close().unwrap();
                rounds
            })
        })
        .collect();
    let writers: Vec<_> = (0..NTHREADS)
        .map(|rank| {
            let (p, path, shared) = (p.clone(), path.clone(), shared.clone());
            std::thread::spawn(move || {
                let own = (!shared_handle).then(|| p.open(&path, common::wo_create(), 0, 100 + rank as u32).unwrap());
                for i in 0..NRECS {
                    let off = record_offset(rank, i);
                    let data = pattern(SEED, off, RECSIZE as usize);
                    let n = match &own {
                        Some(f) => f.write(&data, off).unwrap(),
                        None => shared.write_as(&data, off, 100 + rank as u32).unwrap(),
                    };
                    assert_eq!(n as u64, RECSIZE);
                }
                if let Some(f) = own {
                    f.close().unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        r.join().unwrap();
    }
    assert_eq!(check_records(&shared), NTHREADS * NRECS, "every record is complete");
    Arc::try_unwrap(shared).unwrap().close().unwrap();
    let want = pattern(SEED, 0, (NTHREADS * NRECS * RECSIZE) as usize);
    assert_eq!(fx.plfs().stat(&path).unwrap().size, want.len() as u64);
    common::assert_bytes_eq(&common::read_fresh(&fx, &path).unwrap(), &want, "fresh instance");
    // One index log per writer pid.
    let n_logs = fx.logs("t", "index.").len() as u64;
    assert_eq!(n_logs, NTHREADS, "index logs");
}

#[test]
fn threads_share_one_handle() {
    run(true, GlobalParams::default(), "thr-shared");
}

#[test]
fn threads_with_own_handles_small_index_buffer() {
    run(
        false,
        GlobalParams {
            index_buffer_records: 2,
            ..GlobalParams::default()
        },
        "thr-own",
    );
}

/// A refresh reads the index logs of a file on several threads once there are many of them
/// (one thread per 8 logs, up to `threadpool_size`): 40 writers, each with its own logs,
/// interleaved and overwriting each other, read back through a fresh instance, whole and in
/// pieces, against a model.
#[test]
fn many_logs_are_read_on_several_threads() {
    let fx = Fixture::new(
        "thr-manylogs",
        2,
        1,
        GlobalParams {
            threadpool_size: 4,
            ..GlobalParams::default()
        },
    );
    let path = fx.path("m");
    let p = fx.plfs();
    let mut model = vec![0u8; 0];
    for w in 0..40u64 {
        let f = p.open(&path, common::rw_create(), 0o644, 100 + w as u32).unwrap();
        for i in 0..5u64 {
            // Strided by writer, and every fifth record overwrites the previous writer's.
            let off = if i == 4 && w > 0 {
                ((w - 1) * 5 + 2) * 997
            } else {
                (w * 5 + i) * 997
            };
            let d = pattern(SEED + w, off, 997);
            f.write(&d, off).unwrap();
            let end = (off + 997) as usize;
            if model.len() < end {
                model.resize(end, 0);
            }
            model[off as usize..end].copy_from_slice(&d);
        }
        f.close().unwrap();
    }
    drop(p);
    assert!(fx.logs("m", "index.").len() >= 40, "one index log per writer");
    let q = fx.plfs();
    let g = q.open(&path, common::ro(), 0, 1).unwrap();
    let mut all = vec![0u8; model.len() + 10];
    let n = g.read(&mut all, 0).unwrap();
    common::assert_bytes_eq(&all[..n], &model, "whole file");
    for off in (0..model.len() as u64).step_by(1234) {
        let mut b = vec![0u8; 3000];
        let n = g.read(&mut b, off).unwrap();
        let want = &model[off as usize..(off as usize + 3000).min(model.len())];
        common::assert_bytes_eq(&b[..n], want, &format!("read at {off}"));
    }
    g.close().unwrap();
}

/// A write that returned is seen by every read this process starts after it, from any thread,
/// also by the read that loads the merged index while writes go on: a writer keeps the merged
/// index current only while one is loaded (`Shared::write`), and a load flushes what the writers
/// buffered before it reads (issue 26). Many short rounds, so that loads meet writes at many
/// points; one handle shared by both threads, as the threads of a program share a descriptor.
#[test]
fn a_returned_write_is_seen_by_a_later_read_in_another_thread() {
    const REC: u64 = 512;
    const N: u64 = 64;
    let fx = Fixture::simple("thr-seen");
    let p = fx.plfs();
    for round in 0..150u64 {
        let path = fx.path(&format!("f{round}"));
        let f = Arc::new(p.open(&path, common::rw_create(), 0o644, 1).unwrap());
        let done = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let w = {
            let (f, done) = (f.clone(), done.clone());
            std::thread::spawn(move || {
                for i in 0..N {
                    f.write(&pattern(round, i * REC, REC as usize), i * REC).unwrap();
                    done.store(i + 1, Ordering::SeqCst);
                }
            })
        };
        let mut b = vec![0u8; REC as usize];
        loop {
            let d = done.load(Ordering::SeqCst);
            if d == 0 {
                std::thread::yield_now();
                continue;
            }
            let i = d - 1;
            let n = f.read(&mut b, i * REC).unwrap();
            assert_eq!(
                n, REC as usize,
                "round {round}: record {i}, returned before the read, is short"
            );
            assert!(
                b == pattern(round, i * REC, REC as usize),
                "round {round}: record {i} differs"
            );
            if d == N {
                break;
            }
        }
        w.join().unwrap();
        Arc::try_unwrap(f).expect("one handle left").close().unwrap();
    }
}
