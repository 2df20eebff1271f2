//! The probe of `plfs advise`: measures, in a fresh temporary directory of a plain (backend) file
//! system, what the model needs: metadata latencies, fsync, and streaming bandwidth for one
//! writer, N writers into N files (N-N) and N writers strided into one shared file (N-1), plus the
//! read-back of the shared file; and what a write through plfs itself costs there: N writers
//! strided into one plfs file (plfs-core's own write path, the one ldplfs and FUSE call) in a
//! private mount over a backend directory in the probe's scratch directory, against the N-N run
//! of the same bytes.
//!
//! Every phase has a deadline derived from the budget (30 s, or 5 s with `--quick`; the bandwidth
//! phases end by 80 % of it, leaving the rest for the last fsyncs and the clean-up): loops stop
//! early when it passes, so a slow file system gets fewer samples, never a longer run. Everything
//! is created under one directory that a [`Scratch`] guard removes on drop, also on error.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// What the probe measured. Latencies in microseconds (medians), bandwidths in MiB/s (medians of
/// the repetitions, each the bytes moved divided by the wall time of the slowest writer, fsync
/// included for writes).
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    pub create_us: f64,
    /// `mknod` of a regular file (how plfs makes its zero-length droppings: `Dir::touch`).
    pub mknod_us: f64,
    pub mkdir_us: f64,
    pub stat_us: f64,
    pub readdir_us: f64,
    pub readdir_entries: usize,
    pub unlink_us: f64,
    pub rename_us: f64,
    pub fsync_us: f64,
    /// One writer, one file.
    pub write_1_mibs: f64,
    /// `writers` writers, each into its own file (aggregate).
    pub nn_write_mibs: f64,
    /// `writers` writers strided into one shared file at the record size (aggregate).
    pub n1_write_mibs: f64,
    /// `writers` readers of the shared file, strided as written (aggregate; likely the page cache).
    pub read_mibs: f64,
    /// `writers` writers strided into one plfs file (each its own `Plfs` instance, as separate
    /// processes would be; open and close untimed, sync timed as the plain runs' fsync) over a
    /// backend in the probe's directory (aggregate of logical bytes).
    pub plfs_write_mibs: f64,
    /// What a write through plfs costs beyond a plain write of the same bytes into a file of one's
    /// own, in µs per write of each writer: the median over repetitions of the plfs run's time
    /// less the N-N run's (adjacent, same records), over the records each writer wrote. Frames,
    /// index records and their appends, the library's CPU and whatever the file system charges
    /// for the logs' unaligned writes are all in it. Negative when plfs ran faster (noise).
    /// Only the write calls are compared; the final sync is [`Probe::plfs_sync_us`].
    pub plfs_write_us: f64,
    /// What a writer's final sync through plfs costs beyond a plain `fsync` of the same bytes, in
    /// µs (median of the same pairs): the index log's and the directories' syncs, once per
    /// writer, not per write.
    pub plfs_sync_us: f64,
    /// Threads the bandwidth phases used.
    pub writers: usize,
    pub record_bytes: u64,
    pub bytes_per_writer: u64,
    pub metadata_samples: usize,
    pub bandwidth_reps: usize,
}

/// How much the probe may do.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    pub total: Duration,
    /// At most this many files for the metadata phase.
    pub max_files: usize,
    /// Bytes each writer writes in one bandwidth run (rounded to whole records, at least one).
    pub bytes_per_writer: u64,
    /// ... and all writers together at most this many (many writers write less each).
    pub bytes_per_run: u64,
    pub reps: usize,
}

impl Budget {
    pub fn new(quick: bool) -> Budget {
        if quick {
            Budget {
                total: Duration::from_secs(5),
                max_files: 64,
                bytes_per_writer: 4 << 20,
                bytes_per_run: 64 << 20,
                reps: 15,
            }
        } else {
            Budget {
                total: Duration::from_secs(30),
                max_files: 256,
                bytes_per_writer: 4 << 20,
                bytes_per_run: 256 << 20,
                reps: 41,
            }
        }
    }
}

/// The temporary directory of one probe; removed with everything in it when dropped.
pub struct Scratch {
    pub path: PathBuf,
}

impl Scratch {
    /// Creates `DIR/.plfs-advise.<pid>.<nanos>` (mkdir fails if it exists: never reuse anything).
    pub fn new(dir: &Path) -> io::Result<Scratch> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let path = dir.join(format!(".plfs-advise.{}.{nanos}", std::process::id()));
        std::fs::create_dir(&path)?;
        Ok(Scratch { path })
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// The median of `v` (0 when empty).
pub fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Times `f` once, in microseconds.
fn timed(f: impl FnOnce() -> io::Result<()>) -> io::Result<f64> {
    let t = Instant::now();
    f()?;
    Ok(us(t.elapsed()))
}

/// Runs the whole probe in `scratch` (an empty directory) for `writers` writers of `record` bytes
/// (at most `budget.bytes_per_writer`, and at most `budget.bytes_per_run` over all writers).
pub fn run(scratch: &Path, writers: usize, record: u64, budget: Budget) -> io::Result<Probe> {
    let start = Instant::now();
    let at = |frac: f64| start + budget.total.mul_f64(frac);
    let meta = metadata(scratch, budget.max_files, at(0.35))?;
    let fsync_us = fsync(scratch, at(0.42))?;

    // Records above the per-writer amount are probed at that size (one write per writer): the
    // probe's memory and bytes stay bounded whatever `--record` says.
    let per_writer = budget
        .bytes_per_writer
        .min(budget.bytes_per_run / writers.max(1) as u64)
        .max(64 << 10);
    let rec = record.clamp(1, per_writer);
    let recs = per_writer.div_ceil(rec).max(1);
    let buf: Arc<Vec<u8>> = Arc::new((0..rec).map(|i| (i % 251) as u8).collect());
    let (mut w1, mut nn, mut n1, mut rd) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut pl, mut pl_us, mut pl_sync) = (Vec::new(), Vec::new(), Vec::new());
    let mut reps = 0;
    for rep in 0..budget.reps {
        let now = Instant::now();
        let end = at(0.8);
        if now >= end {
            break;
        }
        // Five phases share what is left of this repetition's slice of the budget.
        let slice = (end - now) / u32::try_from(budget.reps - rep).unwrap_or(1);
        let phase = slice / 5;
        let dir = scratch.join(format!("bw.{rep}"));
        std::fs::create_dir(&dir)?;
        w1.push(write_run(&dir, "one", 1, false, &buf, recs, Instant::now() + phase)?.mibs);
        let nn_run = write_run(&dir, "nn", writers, false, &buf, recs, Instant::now() + phase)?;
        // plfs right after N-N, as many records as N-N wrote (plus a first, untimed): their
        // difference is plfs's cost per write (the writes) and per writer (the final sync). Its
        // deadline runs from its first timed write (its container and logs are made before)
        // and is twice the phase, so that a slower plfs still writes them all.
        let same = (nn_run.recs.ceil() as u64).clamp(1, recs) + 1;
        let plfs_run = plfs_write_run(&dir, writers, &buf, same, phase * 2)?;
        nn.push(nn_run.mibs);
        pl.push(plfs_run.mibs);
        let (per_write, per_sync) = extra_us(&nn_run, &plfs_run);
        pl_us.push(per_write);
        pl_sync.push(per_sync);
        n1.push(write_run(&dir, "n1", writers, true, &buf, recs, Instant::now() + phase)?.mibs);
        rd.push(read_run(&dir.join("n1.0"), writers, rec, recs, Instant::now() + phase)?);
        std::fs::remove_dir_all(&dir)?;
        reps += 1;
    }
    Ok(Probe {
        create_us: meta.create,
        mknod_us: meta.mknod,
        mkdir_us: meta.mkdir,
        stat_us: meta.stat,
        readdir_us: meta.readdir,
        readdir_entries: meta.entries,
        unlink_us: meta.unlink,
        rename_us: meta.rename,
        fsync_us,
        write_1_mibs: median(&mut w1),
        nn_write_mibs: median(&mut nn),
        n1_write_mibs: median(&mut n1),
        read_mibs: median(&mut rd),
        plfs_write_mibs: median(&mut pl),
        plfs_write_us: median(&mut pl_us),
        plfs_sync_us: median(&mut pl_sync),
        writers,
        record_bytes: rec,
        bytes_per_writer: recs * rec,
        metadata_samples: meta.samples,
        bandwidth_reps: reps,
    })
}

struct Meta {
    create: f64,
    mknod: f64,
    mkdir: f64,
    stat: f64,
    readdir: f64,
    entries: usize,
    unlink: f64,
    rename: f64,
    samples: usize,
}

/// Metadata latencies: create, stat, readdir, rename, unlink of up to `max` files, mkdir of as
/// many directories and mknod of as many files, each operation getting an equal share of the time left until `end`.
fn metadata(scratch: &Path, max: usize, end: Instant) -> io::Result<Meta> {
    let dir = scratch.join("meta");
    std::fs::create_dir(&dir)?;
    let share = end.saturating_duration_since(Instant::now()) / 7;
    let f = |i: usize| dir.join(format!("f.{i}"));
    let r = |i: usize| dir.join(format!("r.{i}"));

    let mut create = Vec::new();
    let until = Instant::now() + share;
    // At least a few samples even past the deadline: one op each is never the cost that matters.
    while create.len() < max && (create.len() < 3 || Instant::now() < until) {
        let p = f(create.len());
        create.push(timed(|| {
            OpenOptions::new().write(true).create_new(true).open(&p).map(drop)
        })?);
    }
    let n = create.len();
    let mut stat = Vec::new();
    let until = Instant::now() + share;
    while stat.len() < n && (stat.len() < 3 || Instant::now() < until) {
        let p = f(stat.len());
        stat.push(timed(|| std::fs::symlink_metadata(&p).map(drop))?);
    }
    let mut readdir = Vec::new();
    let mut entries = 0;
    let until = Instant::now() + share;
    while readdir.len() < 9 && (readdir.is_empty() || Instant::now() < until) {
        readdir.push(timed(|| {
            entries = std::fs::read_dir(&dir)?.try_fold(0, |k, e| e.map(|_| k + 1))?;
            Ok(())
        })?);
    }
    let mut rename = Vec::new();
    let until = Instant::now() + share;
    while rename.len() < n && (rename.len() < 3 || Instant::now() < until) {
        let i = rename.len();
        rename.push(timed(|| std::fs::rename(f(i), r(i)))?);
    }
    let mut unlink = Vec::new();
    let until = Instant::now() + share;
    while unlink.len() < rename.len() && (unlink.len() < 3 || Instant::now() < until) {
        let i = unlink.len();
        unlink.push(timed(|| std::fs::remove_file(r(i)))?);
    }
    let mut mkdir = Vec::new();
    let until = Instant::now() + share;
    while mkdir.len() < max && (mkdir.len() < 3 || Instant::now() < until) {
        let p = dir.join(format!("d.{}", mkdir.len()));
        mkdir.push(timed(|| std::fs::create_dir(&p))?);
    }
    let mut mknod = Vec::new();
    let until = Instant::now() + share;
    while mknod.len() < max && (mknod.len() < 3 || Instant::now() < until) {
        let p = dir.join(format!("m.{}", mknod.len()));
        mknod.push(timed(|| {
            nix::sys::stat::mknod(
                &p,
                nix::sys::stat::SFlag::S_IFREG,
                nix::sys::stat::Mode::from_bits_truncate(0o644),
                0,
            )
            .map_err(io::Error::from)
        })?);
    }
    let samples = n;
    Ok(Meta {
        create: median(&mut create),
        mknod: median(&mut mknod),
        mkdir: median(&mut mkdir),
        stat: median(&mut stat),
        readdir: median(&mut readdir),
        entries,
        unlink: median(&mut unlink),
        rename: median(&mut rename),
        samples,
    })
}

/// The cost of an fsync after a 4 KiB write (median of up to 10).
fn fsync(scratch: &Path, end: Instant) -> io::Result<f64> {
    let file = File::create(scratch.join("fsync"))?;
    let block = [7u8; 4096];
    let mut v = Vec::new();
    while v.len() < 10 && (v.len() < 2 || Instant::now() < end) {
        let off = v.len() as u64 * 4096;
        file.write_all_at(&block, off)?;
        v.push(timed(|| file.sync_data())?);
    }
    Ok(median(&mut v))
}

/// `writers` threads write `recs` records each (stopping at `end`) with pwrite, into `name.<w>`
/// each, or (`shared`) strided into `name.0`, then fsync; returns the aggregate MiB/s.
fn write_run(
    dir: &Path,
    name: &str,
    writers: usize,
    shared: bool,
    buf: &Arc<Vec<u8>>,
    recs: u64,
    end: Instant,
) -> io::Result<Run> {
    let files: Vec<Arc<File>> = if shared {
        let f = Arc::new(File::create(dir.join(format!("{name}.0")))?);
        vec![f; writers]
    } else {
        (0..writers)
            .map(|w| File::create(dir.join(format!("{name}.{w}"))).map(Arc::new))
            .collect::<io::Result<_>>()?
    };
    let barrier = Arc::new(Barrier::new(writers + 1));
    let rec = buf.len() as u64;
    let w_count = writers as u64;
    let handles: Vec<_> = files
        .into_iter()
        .enumerate()
        .map(|(w, file)| {
            let (buf, barrier) = (Arc::clone(buf), Arc::clone(&barrier));
            std::thread::spawn(move || -> io::Result<Timing> {
                barrier.wait();
                let t = Instant::now();
                let mut done = 0;
                for k in 0..recs {
                    if k > 0 && Instant::now() >= end {
                        break;
                    }
                    let off = if shared {
                        (k * w_count + w as u64) * rec
                    } else {
                        k * rec
                    };
                    file.write_all_at(&buf, off)?;
                    done += 1;
                }
                let wrote = t.elapsed();
                file.sync_data()?;
                Ok((done * rec, done, wrote, t.elapsed() - wrote))
            })
        })
        .collect();
    barrier.wait();
    let t = Instant::now();
    let timings = join_timings(handles)?;
    Ok(run_of(&timings, t.elapsed()))
}

/// A run's figures from its writers' timings and its wall time.
fn run_of(timings: &[Timing], wall: Duration) -> Run {
    let n = timings.len().max(1) as f64;
    let bytes = timings.iter().map(|t| t.0).sum();
    Run {
        mibs: mibs(bytes, wall),
        recs: timings.iter().map(|t| t.1 as f64).sum::<f64>() / n,
        write_s: timings.iter().map(|t| t.2.as_secs_f64()).sum::<f64>() / n,
        sync_s: timings.iter().map(|t| t.3.as_secs_f64()).sum::<f64>() / n,
    }
}

/// What one write run took: aggregate MiB/s over the wall time (slowest writer, sync included),
/// and the writers' means of the time in their write calls, of the time in their final sync and of
/// the records each wrote.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Run {
    pub mibs: f64,
    pub write_s: f64,
    pub sync_s: f64,
    pub recs: f64,
}

/// One writer's share of a run: bytes, records, time in the write calls, time in the sync.
type Timing = (u64, u64, Duration, Duration);

/// The extra cost of plfs over plain N-N from a pair of runs of the same records, in µs: per
/// write (the write calls' time over the records each writer wrote) and per writer (its sync).
pub fn extra_us(nn: &Run, plfs: &Run) -> (f64, f64) {
    let per_write = |r: &Run| if r.recs > 0.0 { r.write_s / r.recs } else { 0.0 };
    ((per_write(plfs) - per_write(nn)) * 1e6, (plfs.sync_s - nn.sync_s) * 1e6)
}

fn plfs_err(e: plfs_core::Error) -> io::Error {
    io::Error::other(format!("plfs: {e}"))
}

/// `writers` threads write `recs` records each (the first untimed; stopping `limit` after the
/// second) strided into one plfs file, as
/// pio's N-1 strided run does through ldplfs: a private configuration (one mount, its one backend
/// `dir/plfs`, the defaults otherwise: an N-1 container, index records buffered as configured),
/// one `Plfs` instance per thread as one per process, the open and the first record (which makes
/// the writer's logs) before and the close after the timed part (the model counts those
/// operations itself), `sync` in it as `fsync` in the plain runs. Returns the aggregate MiB/s of logical bytes.
fn plfs_write_run(dir: &Path, writers: usize, buf: &Arc<Vec<u8>>, recs: u64, limit: Duration) -> io::Result<Run> {
    let backend = dir.join("plfs");
    std::fs::create_dir(&backend)?;
    let quote = |p: &Path| format!("'{}'", p.display().to_string().replace('\'', "''"));
    let mount = PathBuf::from(format!(
        "/plfs-advise-probe.{}.{}",
        std::process::id(),
        dir.file_name().and_then(|n| n.to_str()).unwrap_or("bw")
    ));
    let text = format!(
        "- mount_point: {}\n  backends:\n    - location: {}\n",
        quote(&mount),
        quote(&backend)
    );
    let cfg = plfs_core::Config::from_str(&text, &dir.join("plfsrc")).map_err(plfs_err)?;
    let file = mount.join("f");
    let flags = plfs_core::OpenFlags {
        write: true,
        create: true,
        ..Default::default()
    };
    let barrier = Arc::new(Barrier::new(writers + 1));
    let rec = buf.len() as u64;
    let w_count = writers as u64;
    let handles: Vec<_> = (0..writers)
        .map(|w| {
            let (buf, barrier, cfg, file) = (Arc::clone(buf), Arc::clone(&barrier), cfg.clone(), file.clone());
            std::thread::spawn(move || -> io::Result<Timing> {
                // The open and the first write (which makes the writer's open record, hostdir and
                // logs) are untimed: the model counts their metadata operations itself.
                let first = |f: &plfs_core::OpenFile| -> plfs_core::Result<()> {
                    let mut at = 0;
                    while at < buf.len() {
                        at += f.write(&buf[at..], w as u64 * rec + at as u64)?;
                    }
                    Ok(())
                };
                let opened = plfs_core::Plfs::new(cfg).and_then(|p| {
                    let f = p.open(&file, flags, 0o644, 1 + w as u32)?;
                    first(&f)?;
                    Ok((p, f))
                });
                // Every thread reaches both barriers, also after a failed open: none waits forever.
                barrier.wait();
                let t = Instant::now();
                let end = t + limit;
                let mut done = 0;
                let mut write_time = Duration::ZERO;
                let wrote = match &opened {
                    Ok((_, f)) => (|| -> plfs_core::Result<()> {
                        for k in 1..recs.max(2) {
                            if k > 1 && Instant::now() >= end {
                                break;
                            }
                            let off = (k * w_count + w as u64) * rec;
                            let mut at = 0;
                            while at < buf.len() {
                                at += f.write(&buf[at..], off + at as u64)?;
                            }
                            done += 1;
                        }
                        write_time = t.elapsed();
                        f.sync()
                    })(),
                    Err(_) => Ok(()),
                };
                let total = t.elapsed();
                barrier.wait();
                let (plfs, f) = opened.map_err(plfs_err)?;
                let closed = f.close();
                drop(plfs);
                wrote.and(closed).map_err(plfs_err)?;
                Ok((done * rec, done, write_time, total.saturating_sub(write_time)))
            })
        })
        .collect();
    barrier.wait();
    let t = Instant::now();
    barrier.wait();
    let elapsed = t.elapsed();
    let timings = join_timings(handles)?;
    Ok(run_of(&timings, elapsed))
}

/// `readers` threads read the shared file strided as it was written; aggregate MiB/s.
fn read_run(path: &Path, readers: usize, rec: u64, recs: u64, end: Instant) -> io::Result<f64> {
    let file = Arc::new(File::open(path)?);
    let len = file.metadata()?.len();
    let barrier = Arc::new(Barrier::new(readers + 1));
    let n = readers as u64;
    let handles: Vec<_> = (0..readers)
        .map(|w| {
            let (file, barrier) = (Arc::clone(&file), Arc::clone(&barrier));
            std::thread::spawn(move || -> io::Result<u64> {
                // A record is read in pieces of at most 1 MiB: 64 readers of 4 MiB records need
                // no 256 MiB of buffers.
                let mut buf = vec![0u8; usize::try_from(rec.min(1 << 20)).unwrap_or(1 << 20)];
                barrier.wait();
                let mut done = 0;
                for k in 0..recs {
                    let off = (k * n + w as u64) * rec;
                    if off >= len || (k > 0 && Instant::now() >= end) {
                        break;
                    }
                    let mut at = 0;
                    while at < rec {
                        let want = usize::try_from((rec - at).min(buf.len() as u64)).unwrap_or(buf.len());
                        let got = file.read_at(&mut buf[..want], off + at)? as u64;
                        if got == 0 {
                            break;
                        }
                        at += got;
                    }
                    done += at;
                }
                Ok(done)
            })
        })
        .collect();
    barrier.wait();
    let t = Instant::now();
    let bytes = join_all(handles)?;
    Ok(mibs(bytes, t.elapsed()))
}

fn join_all(handles: Vec<std::thread::JoinHandle<io::Result<u64>>>) -> io::Result<u64> {
    Ok(join_timings(handles)?.iter().sum())
}

/// Joins every thread (also after one failed), returning their results or the first error.
fn join_timings<T>(handles: Vec<std::thread::JoinHandle<io::Result<T>>>) -> io::Result<Vec<T>> {
    let mut total = Vec::new();
    let mut first_err = None;
    for h in handles {
        match h.join() {
            Ok(Ok(b)) => total.push(b),
            Ok(Err(e)) => first_err = first_err.or(Some(e)),
            Err(_) => first_err = first_err.or_else(|| Some(io::Error::other("a probe thread panicked"))),
        }
    }
    first_err.map_or(Ok(total), Err)
}

fn mibs(bytes: u64, d: Duration) -> f64 {
    bytes as f64 / 1_048_576.0 / d.as_secs_f64().max(1e-9)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(&mut []), 0.0);
    }

    #[test]
    fn a_quick_probe_measures_everything_and_the_guard_cleans_up() {
        let base = std::env::temp_dir().join(format!("plfs-advise-unit-{}", std::process::id()));
        std::fs::create_dir_all(&base).unwrap();
        let budget = Budget {
            total: Duration::from_secs(2),
            max_files: 16,
            bytes_per_writer: 1 << 18,
            bytes_per_run: 1 << 20,
            reps: 1,
        };
        let p = {
            let s = Scratch::new(&base).unwrap();
            run(&s.path, 2, 4096, budget).unwrap()
        };
        assert_eq!(std::fs::read_dir(&base).unwrap().count(), 0);
        std::fs::remove_dir(&base).unwrap();
        for v in [
            p.create_us,
            p.mknod_us,
            p.stat_us,
            p.readdir_us,
            p.rename_us,
            p.unlink_us,
            p.mkdir_us,
            p.write_1_mibs,
        ] {
            assert!(v.is_finite() && v > 0.0, "{p:?}");
        }
        assert!(
            p.nn_write_mibs > 0.0 && p.n1_write_mibs > 0.0 && p.read_mibs > 0.0 && p.plfs_write_mibs > 0.0,
            "{p:?}"
        );
        assert!(p.plfs_write_us.is_finite() && p.plfs_sync_us.is_finite(), "{p:?}");
    }

    #[test]
    fn many_writers_and_large_records_stay_near_a_short_budget() {
        let base = std::env::temp_dir().join(format!("plfs-advise-unit-big-{}", std::process::id()));
        std::fs::create_dir_all(&base).unwrap();
        let budget = Budget {
            total: Duration::from_millis(500),
            max_files: 256,
            bytes_per_writer: 4 << 20,
            bytes_per_run: 32 << 20,
            reps: 41,
        };
        let t = Instant::now();
        let p = {
            let s = Scratch::new(&base).unwrap();
            run(&s.path, 16, 8 << 20, budget).unwrap()
        };
        // Loose on purpose (a shared, noisy machine): the point is "bounded", not "exactly 0.5 s".
        assert!(t.elapsed() < Duration::from_secs(8), "{:?}", t.elapsed());
        assert_eq!(
            p.record_bytes,
            2 << 20,
            "records are probed at the per-writer limit, 32 MiB / 16"
        );
        assert!(p.bandwidth_reps >= 1 && p.read_mibs > 0.0, "{p:?}");
        assert_eq!(std::fs::read_dir(&base).unwrap().count(), 0);
        std::fs::remove_dir(&base).unwrap();
    }
}
