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
