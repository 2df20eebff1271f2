//! The model of `plfs advise`: from a [`Probe`] of the backend file system and plfs's own operation
//! counts, predicts the write and read-back bandwidth of plain N-1, plain N-N and plfs N-1 for W
//! writers of records of R bytes, B bytes per writer, and recommends.
//!
//! The shape (docs/performance.md, "Will plfs help here?"):
//! - plain N-1: one create, W opens (a stat each), then W·B bytes at the measured N-1 bandwidth;
//! - plain N-N: W creates in one directory (serialised: latency × W), then W·B at the N-N bandwidth;
//! - plfs: the container's creation, then each writer's open/first-write/close operations, all in
//!   the container's directories, so serialised (latency × count × W); the data at the N-N
//!   bandwidth, plus for every write the probe's measured cost of a write through plfs beyond a
//!   plain one (frames, index records, CPU, the file system's price for the logs' writes), plus
//!   once per writer the measured extra cost of its final sync;
//! - reads: plain = W·B at the measured read bandwidth; plfs adds the read-open (listings, one
//!   open per log, merging every index record) to the same bytes.

use super::probe::Probe;

// plfs's operation counts, in one place. Each comes from the code or the docs as cited.

// Counted from the code (crates/plfs-core/src/container.rs `Container::create` and `finish`,
// layout/n1/writer.rs, layout/n1/shared.rs) and checked with `strace -f` of an `open(O_CREAT)`,
// two 4 KiB `pwrite`s, an `fsync` and a `close` through ldplfs on a local backend (2026-11-26,
// docs/performance.md, "Will plfs help here?"). "Stats" are the small metadata round trips:
// `lstat`s, directory opens, `flock`s, `fchmod`s and `utimensat`s. `plfs advise DIR` charges
// every one a stat's latency (each is a system call into the probed client, a FUSE request on
// GlusterFS and MooseFS). `--scale` counts only the `*_SERVER_STATS` of each step: those that
// reach a metadata server from a client that caches what it just looked up or made (a repeated
// `lstat` of the same name, the open of a directory just made or found are served locally).

/// Container creation (format.md §1, version 3: one directory, claimed by `mkdir` at its final
/// name, no temporary name and no rename since issue 22): the `lstat` of the name, the container
/// opened, the marker and the container `fchmod`ed ...
pub const CREATE_STATS: f64 = 4.0;
/// ... of which the `lstat` of the name and the two `fchmod`s reach a server.
pub const CREATE_SERVER_STATS: f64 = 3.0;
/// ... the marker created with `O_EXCL` (and written: 64 bytes, the container id in it) ...
pub const CREATE_FILES: f64 = 1.0;
/// ... no dropping (format 2 made `meta/cid.*` by `mknod`) ...
pub const CREATE_MKNODS: f64 = 0.0;
/// ... and the container by `mkdir` (format 2 made `meta/` too).
pub const CREATE_MKDIRS: f64 = 1.0;
/// Each writer's open of the existing container: the backend's root `stat`ed and opened (once per
/// process), the name and its marker `lstat`ed, the container opened, its marker `lstat`ed,
/// `flock`ed, the marker `lstat`ed again (format 2 opened `meta/` too).
pub const OPEN_STATS: f64 = 8.0;
/// ... of which the name's and the marker's first `lstat`s and the `flock` reach a server.
pub const OPEN_SERVER_STATS: f64 = 3.0;
/// Each writer's first write (design.md, write step 2) in a one-directory container (format 3,
/// `num_hostdirs: 1`, the default): its logs made in the container itself, then the marker
/// `lstat`ed once they exist (the check against a chmod made meanwhile) ...
pub const FIRST_WRITE_STATS: f64 = 1.0;
/// ... which the client answers from what it looked up at the open.
pub const FIRST_WRITE_SERVER_STATS: f64 = 0.0;
/// ... `open.*` made by `mknod` in the container (format 2: in its `meta/`), shared by every writer ...
pub const FIRST_WRITE_FILES_IN_META: f64 = 1.0;
/// ... and the data log and the index log created with `O_EXCL` in the writer's log directory
/// (the container, or its hostdir; the index log gets its 64-byte header at once).
pub const FIRST_WRITE_FILES_IN_HOSTDIR: f64 = 2.0;
pub const FIRST_WRITE_FILES: f64 = FIRST_WRITE_FILES_IN_META + FIRST_WRITE_FILES_IN_HOSTDIR;
/// With `num_hostdirs` above 1 the logs go to a hostdir inside the container (format.md §1:
/// `hostdir.<fnv1a64(host) % num_hostdirs>`): each writer tries its `mkdir` (`EEXIST` once
/// made), `lstat`s and opens it ...
pub const HOSTDIR_STATS: f64 = 3.0;
/// ... of which the `mkdir` attempt reaches a server ...
pub const HOSTDIR_SERVER_STATS: f64 = 1.0;
/// ... and each hostdir is made once; the model assumes the worst case, one per writer up to
/// `num_hostdirs`.
pub const FIRST_WRITE_MKDIRS_PER_HOSTDIR: f64 = 1.0;
/// Each writer's close (design.md, write step 5): the marker `lstat`ed and its mtime raised
/// (`utimensat`), then the auto-compaction check: the container reopened, `flock`ed (exclusive,
/// non-blocking) and `compact.journal` `lstat`ed ...
pub const CLOSE_STATS: f64 = 5.0;
/// ... of which the `utimensat`, the `flock` and the journal's (negative) `lstat` reach a server.
pub const CLOSE_SERVER_STATS: f64 = 3.0;
/// ... its close dropping made in `meta/` by `mknod` ...
pub const CLOSE_FILES: f64 = 1.0;
/// ... and its `meta/open.*` removed (not a rename since issue 22).
pub const CLOSE_UNLINKS: f64 = 1.0;
/// Bytes of the frame each write adds to its data log (format.md §3; performance.md, issues 22
/// and 23 table: "32 (0.78 % at 4 KiB)").
pub const FRAME_BYTES: f64 = 32.0;
/// Bytes of a WRITE index record (format.md §4: "record 48 bytes").
pub const INDEX_RECORD_BYTES: f64 = 48.0;
/// CPU per write in the writing process: 1,335 instructions per 4 KiB write through ldplfs
/// (performance.md, issues 22 and 23 table), about 0.5 µs at ~3 instructions per ns. Only
/// `--scale` uses it (with a costs file there is no file system to measure); `plfs advise DIR`
/// measures the whole cost of a write through plfs instead ([`Probe::plfs_write_us`]).
pub const PER_WRITE_CPU_US: f64 = 0.5;
/// Read-open (design.md, "Data flow of a read", step 1; format.md §5): the marker `lstat`,
/// readdir of the container (its droppings and logs; format 2 listed `meta/` too), one readdir per
/// hostdir when there are hostdirs, then per writer its index log and data log opened (2 opens,
/// counted as stats).
pub const READ_OPEN_STATS: f64 = 1.0;
pub const READ_OPEN_READDIRS: f64 = 1.0;
pub const READ_OPEN_STATS_PER_WRITER: f64 = 2.0;
/// Merging index records at read-open: "65536 irregular writes take 45–70 ms, about 1.4 million
/// records per second" (performance.md, "Metadata and index"). Strided patterns merge faster;
/// this is the conservative figure.
pub const MERGE_RECORDS_PER_S: f64 = 1.4e6;
/// plfs is recommended only when it predicts at least this ratio against plain N-1: the machines
/// here vary by ±40 % between identical runs (performance.md, noise check), so a smaller gain is
/// not worth the container's other costs (37× slower creates, slower stat).
pub const RECOMMEND_RATIO: f64 = 1.1;

/// The workload to predict.
#[derive(Debug, Clone, Copy)]
pub struct Workload {
    pub writers: u64,
    pub record_bytes: u64,
    pub bytes_per_writer: u64,
}

/// The prediction, bandwidths in MiB/s of logical bytes.
#[derive(Debug, Clone)]
pub struct Prediction {
    pub plain_n1_mibs: f64,
    pub plain_nn_mibs: f64,
    pub plfs_mibs: f64,
    pub read_plain_mibs: f64,
    pub read_plfs_mibs: f64,
    pub ratio_plfs_vs_n1: f64,
    pub use_plfs: bool,
    pub num_hostdirs: u64,
    /// Seconds of the plfs write spent on metadata (open, first write, close, container create).
    pub plfs_metadata_s: f64,
    /// Seconds of each plfs writer's time spent on its writes beyond the plain bytes (the probe's
    /// measured cost per write times the writes).
    pub plfs_index_s: f64,
    pub plfs_read_open_s: f64,
    pub reasons: Vec<String>,
}

/// The smallest prime ≥ sqrt(w) (the original PLFS's rule for `num_hostdirs`; docs/config.md),
/// clamped to the configuration's 1..=1024: the candidate [`choose_hostdirs`] weighs against 1.
pub fn num_hostdirs(w: u64) -> u64 {
    let target = (w as f64).sqrt().ceil().max(2.0) as u64;
    let is_prime = |n: u64| n >= 2 && (2..).take_while(|d| d * d <= n).all(|d| n % d != 0);
    (target..).find(|&n| is_prime(n)).unwrap_or(2).min(1021)
}

/// The `num_hostdirs` to recommend for `w` writers: 1, the default (a writer's logs in the
/// container directory itself, format 3), unless the original PLFS's rule ([`num_hostdirs`]) takes
/// fewer of the seconds `secs` predicts for a number of hostdirs. Hostdirs cost a `mkdir` each
/// and a look-up per writer; they pay only where changes of one directory are serialised and
/// many writers change it at once (`--scale`'s lock chains), never in a model that counts every
/// operation one after the other.
pub fn choose_hostdirs(w: u64, secs: impl Fn(u64) -> f64) -> u64 {
    let rule = num_hostdirs(w);
    if rule > 1 && secs(rule) < secs(1) {
        rule
    } else {
        1
    }
}

/// MiB/s for `bytes` in `s` seconds (0 when nothing moved).
fn mibs(bytes: f64, s: f64) -> f64 {
    if s > 0.0 {
        bytes / 1_048_576.0 / s
    } else {
        0.0
    }
}

/// Seconds to move `bytes` at `mibs` (a bandwidth of 0 counts as 1 MiB/s rather than forever).
fn secs(bytes: f64, mibs: f64) -> f64 {
    bytes / 1_048_576.0 / mibs.max(1.0)
}

/// The cost of one write through plfs beyond a plain write into a file of one's own, in µs: the
/// probe's measurement, never below zero.
pub fn plfs_write_us(p: &Probe) -> f64 {
    if p.plfs_write_us.is_finite() {
        p.plfs_write_us.max(0.0)
    } else {
        0.0
    }
}

/// The extra cost of a writer's final sync through plfs, in µs: the probe's measurement, never
/// below zero.
pub fn plfs_sync_us(p: &Probe) -> f64 {
    if p.plfs_sync_us.is_finite() {
        p.plfs_sync_us.max(0.0)
    } else {
        0.0
    }
}

/// Seconds plfs spends on metadata for `w` writers with `hostdirs` hostdirs (1: none, the logs
/// in the container): the container, then per writer its open, first write and close, serialised.
fn plfs_metadata_s(p: &Probe, w: f64, hostdirs: u64) -> f64 {
    let s = |us: f64| us * 1e-6;
    let create = CREATE_STATS * s(p.stat_us)
        + CREATE_FILES * s(p.create_us)
        + CREATE_MKNODS * s(p.mknod_us)
        + CREATE_MKDIRS * s(p.mkdir_us);
    let (hostdir_stats, mkdirs) = if hostdirs > 1 {
        (
            HOSTDIR_STATS,
            FIRST_WRITE_MKDIRS_PER_HOSTDIR * (hostdirs as f64).min(w) * s(p.mkdir_us),
        )
    } else {
        (0.0, 0.0)
    };
    let per_writer = (OPEN_STATS + FIRST_WRITE_STATS + hostdir_stats + CLOSE_STATS) * s(p.stat_us)
        + FIRST_WRITE_FILES_IN_HOSTDIR * s(p.create_us)
        + (FIRST_WRITE_FILES_IN_META + CLOSE_FILES) * s(p.mknod_us)
        + CLOSE_UNLINKS * s(p.unlink_us);
    create + w * per_writer + mkdirs
}

/// Seconds of a read-open of the file of `w` writers of `writes` records each: the listings, an
/// open per log, the index read and merged.
fn read_open_s(p: &Probe, w: f64, writes: f64, hostdirs: u64) -> f64 {
    let s = |us: f64| us * 1e-6;
    let hostdir_listings = if hostdirs > 1 { (hostdirs as f64).min(w) } else { 0.0 };
    READ_OPEN_STATS * s(p.stat_us)
        + (READ_OPEN_READDIRS + hostdir_listings) * s(p.readdir_us)
        + w * READ_OPEN_STATS_PER_WRITER * s(p.stat_us)
        + secs(w * writes * INDEX_RECORD_BYTES, p.read_mibs)
        + w * writes / MERGE_RECORDS_PER_S
}

/// Predicts the workload on the probed file system and recommends.
pub fn predict(p: &Probe, wl: Workload) -> Prediction {
    let w = wl.writers.max(1) as f64;
    let r = wl.record_bytes.max(1) as f64;
    let b = wl.bytes_per_writer.max(1) as f64;
    let total = w * b;
    let writes = (b / r).ceil();
    let s = |us: f64| us * 1e-6;
    let hostdirs = choose_hostdirs(wl.writers, |k| plfs_metadata_s(p, w, k) + read_open_s(p, w, writes, k));

    // Plain N-1: the first writer creates, every writer opens; then the shared-file bandwidth.
    let n1_meta = s(p.create_us) + w * s(p.stat_us);
    let t_n1 = n1_meta + secs(total, p.n1_write_mibs);
    // Plain N-N: W creates in one directory, serialised; then the file-per-writer bandwidth.
    let t_nn = w * s(p.create_us) + secs(total, p.nn_write_mibs);
    let meta = plfs_metadata_s(p, w, hostdirs);
    // Each write's own cost, measured: the probe wrote the same records through plfs (frames,
    // index records and their appends, the library's CPU, the file system's price for the logs'
    // writes) right after the plain N-N run, and the difference per write is charged to every
    // write of each writer (they run in parallel). Below zero is noise: counted as zero.
    let index = writes * s(plfs_write_us(p));
    // Each writer's final sync costs more through plfs (the index log and two directories are
    // synced too): measured once per writer, as pio's fsync at close.
    let sync = s(plfs_sync_us(p));
    let t_plfs = meta + secs(total, p.nn_write_mibs) + index + sync;

    // Reads: the same bytes at the measured read bandwidth; plfs first opens every log and merges
    // every index record.
    let t_read_plain = s(p.stat_us) + secs(total, p.read_mibs);
    let read_open = read_open_s(p, w, writes, hostdirs);
    let t_read_plfs = read_open + secs(total, p.read_mibs);

    let plain_n1 = mibs(total, t_n1);
    let plain_nn = mibs(total, t_nn);
    let plfs = mibs(total, t_plfs);
    let ratio = if plain_n1 > 0.0 { plfs / plain_n1 } else { 0.0 };
    let use_plfs = ratio >= RECOMMEND_RATIO;

    let penalty = if p.n1_write_mibs > 0.0 {
        p.nn_write_mibs / p.n1_write_mibs
    } else {
        0.0
    };
    let mut reasons = vec![
        format!(
            "N-1 penalty: {} writers into one shared file {:.0} MiB/s, into their own files {:.0} MiB/s ({penalty:.2}x; \
             one writer alone {:.0} MiB/s, fsync {:.1} ms)",
            p.writers,
            p.n1_write_mibs,
            p.nn_write_mibs,
            p.write_1_mibs,
            p.fsync_us / 1e3
        ),
        format!(
            "metadata: create {:.0} us, mkdir {:.0} us, stat {:.0} us, rename {:.0} us; plfs spends {:.1} ms on \
             opens, first writes and closes of {} writers against {:.1} ms for plain N-1",
            p.create_us,
            p.mkdir_us,
            p.stat_us,
            p.rename_us,
            meta * 1e3,
            wl.writers,
            n1_meta * 1e3
        ),
        format!(
            "per write: a {} B write through plfs measured {:.1} us more than a plain one into a file of its own \
             ({} writers: plfs {:.0} MiB/s, plain N-N {:.0}; frames and index records are {:.2} % of the data); \
             {writes:.0} writes per writer add {:.1} ms",
            p.record_bytes,
            p.plfs_write_us,
            p.writers,
            p.plfs_write_mibs,
            p.nn_write_mibs,
            100.0 * (FRAME_BYTES + INDEX_RECORD_BYTES) / r,
            index * 1e3
        ),
        format!(
            "write: predicted plfs {plfs:.0} MiB/s, plain N-1 {plain_n1:.0}, plain N-N {plain_nn:.0} \
             (plfs / N-1 = {ratio:.2}; plfs is advised from {RECOMMEND_RATIO:.2})"
        ),
        format!(
            "read-back: plain {:.0} MiB/s, plfs {:.0} MiB/s (read-open {:.1} ms: listings, {} log opens, index merge)",
            mibs(total, t_read_plain),
            mibs(total, t_read_plfs),
            read_open * 1e3,
            2 * wl.writers
        ),
    ];
    if plain_nn > plfs * RECOMMEND_RATIO {
        reasons.push(format!(
            "if the program can write one file per process, plain N-N ({plain_nn:.0} MiB/s) beats both"
        ));
    }
    Prediction {
        plain_n1_mibs: plain_n1,
        plain_nn_mibs: plain_nn,
        plfs_mibs: plfs,
        read_plain_mibs: mibs(total, t_read_plain),
        read_plfs_mibs: mibs(total, t_read_plfs),
        ratio_plfs_vs_n1: ratio,
        use_plfs,
        num_hostdirs: hostdirs,
        plfs_metadata_s: meta,
        plfs_index_s: index,
        plfs_read_open_s: read_open,
        reasons,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A probe: metadata latencies in µs, N-N and N-1 aggregate bandwidths in MiB/s.
    fn probe(meta_us: f64, nn: f64, n1: f64) -> Probe {
        Probe {
            create_us: meta_us,
            mknod_us: meta_us,
            mkdir_us: meta_us,
            stat_us: meta_us / 4.0,
            readdir_us: meta_us,
            readdir_entries: 64,
            unlink_us: meta_us,
            rename_us: meta_us,
            fsync_us: 1000.0,
            write_1_mibs: nn / 2.0,
            nn_write_mibs: nn,
            n1_write_mibs: n1,
            read_mibs: nn * 2.0,
            plfs_write_mibs: nn,
            plfs_write_us: 0.5,
            plfs_sync_us: 0.0,
            writers: 64,
            record_bytes: 47008,
            bytes_per_writer: 4 << 20,
            metadata_samples: 64,
            bandwidth_reps: 3,
        }
    }

    fn wl(writers: u64, record_bytes: u64) -> Workload {
        Workload {
            writers,
            record_bytes,
            bytes_per_writer: 256 << 20,
        }
    }

    #[test]
    fn expensive_metadata_and_a_big_n1_penalty_recommend_plfs_for_large_records_and_many_writers() {
        // Lustre-like: 2 ms metadata operations, shared file at a tenth of the N-N bandwidth.
        let p = probe(2000.0, 4000.0, 400.0);
        let x = predict(&p, wl(64, 1 << 20));
        assert!(x.use_plfs, "{x:?}");
        assert!(x.ratio_plfs_vs_n1 > 5.0, "{x:?}");
        assert!(x.plfs_mibs < x.plain_nn_mibs, "plfs is N-N plus costs: {x:?}");
        // Every operation counted one after the other: hostdirs only add (a mkdir each, a look-up
        // per writer), so the logs stay in the container, format 3's default.
        assert_eq!(x.num_hostdirs, 1);
    }

    #[test]
    fn no_n1_penalty_recommends_plain() {
        let p = probe(20.0, 1000.0, 1000.0);
        for (w, r) in [(1, 4096), (4, 47008), (64, 1 << 20)] {
            let x = predict(&p, wl(w, r));
            assert!(!x.use_plfs, "{w} {r}: {x:?}");
            assert!(x.ratio_plfs_vs_n1 < 1.0, "{w} {r}: {x:?}");
        }
    }

    #[test]
    fn metadata_so_slow_it_outweighs_the_penalty_recommends_plain() {
        // GlusterFS-like directory operations (tens of ms), a mild penalty, little data per writer.
        let p = probe(20_000.0, 400.0, 350.0);
        let x = predict(
            &p,
            Workload {
                writers: 64,
                record_bytes: 1 << 20,
                bytes_per_writer: 4 << 20,
            },
        );
        assert!(!x.use_plfs, "{x:?}");
        assert!(x.plfs_metadata_s > 1.0, "{x:?}");
    }

    #[test]
    fn small_records_cost_more_index_than_large_ones() {
        let p = probe(50.0, 2000.0, 1000.0);
        let small = predict(&p, wl(4, 512));
        let large = predict(&p, wl(4, 1 << 20));
        assert!(small.plfs_index_s > 100.0 * large.plfs_index_s);
        assert!(small.plfs_mibs < large.plfs_mibs);
        assert!(small.read_plfs_mibs < large.read_plfs_mibs);
    }

    #[test]
    fn every_number_is_finite_and_positive_even_on_a_zero_probe() {
        let mut p = probe(0.0, 0.0, 0.0);
        p.read_mibs = 0.0;
        let x = predict(&p, wl(1, 1));
        for v in [
            x.plain_n1_mibs,
            x.plain_nn_mibs,
            x.plfs_mibs,
            x.read_plain_mibs,
            x.read_plfs_mibs,
        ] {
            assert!(v.is_finite() && v > 0.0, "{x:?}");
        }
    }

    #[test]
    fn the_measured_cost_of_a_plfs_write_is_charged_to_every_write_and_the_sync_once() {
        // No N-1 penalty and free metadata: plfs is plain N-N plus what the probe measured.
        let mut p = probe(0.0, 100.0, 100.0);
        p.plfs_write_us = 0.0;
        let w = Workload {
            writers: 2,
            record_bytes: 4096,
            bytes_per_writer: 4 << 20,
        };
        let free = predict(&p, w);
        // 4 MiB at 100 MiB/s aggregate for 2 writers: 80 ms; 1024 writes each.
        p.plfs_write_us = 40.0;
        let slow = predict(&p, w);
        assert!((slow.plfs_index_s - 1024.0 * 40e-6).abs() < 1e-9, "{slow:?}");
        // Seconds of the plfs write: 8 MiB in all.
        let t = |x: &Prediction| 8.0 / x.plfs_mibs;
        assert!((t(&slow) - t(&free) - 1024.0 * 40e-6).abs() < 1e-6, "{free:?} {slow:?}");
        assert!(slow.ratio_plfs_vs_n1 < 0.7 && !slow.use_plfs, "{slow:?}");
        // Larger records: fewer writes, less of the per-write cost.
        let big = predict(
            &p,
            Workload {
                record_bytes: 1 << 20,
                ..w
            },
        );
        assert!((big.plfs_index_s - 4.0 * 40e-6).abs() < 1e-9, "{big:?}");
        // A negative measurement (noise) counts as nothing, never as a gain.
        p.plfs_write_us = -5.0;
        assert_eq!(predict(&p, w).plfs_mibs, free.plfs_mibs);
        // The sync's extra cost is paid once per writer, whatever the record size.
        p.plfs_write_us = 0.0;
        p.plfs_sync_us = 10_000.0;
        let synced = predict(&p, w);
        assert!((t(&synced) - t(&free) - 0.01).abs() < 1e-6, "{synced:?}");
    }

    #[test]
    fn droppings_cost_a_mknod_and_no_rename_is_counted() {
        let mut p = probe(100.0, 1000.0, 1000.0);
        let base = predict(&p, wl(4, 1 << 20)).plfs_metadata_s;
        p.rename_us = 1e6;
        assert_eq!(
            predict(&p, wl(4, 1 << 20)).plfs_metadata_s,
            base,
            "a container is no longer renamed"
        );
        p.mknod_us += 1000.0;
        let more = predict(&p, wl(4, 1 << 20)).plfs_metadata_s;
        // One cid dropping, then per writer its open and close droppings.
        let want = (CREATE_MKNODS + 4.0 * (FIRST_WRITE_FILES_IN_META + CLOSE_FILES)) * 1000e-6;
        assert!((more - base - want).abs() < 1e-9, "{base} {more}");
    }

    #[test]
    fn hostdirs_follow_the_smallest_prime_at_least_sqrt_w() {
        let got: Vec<u64> = [1, 4, 10, 64, 10_000].iter().map(|&w| num_hostdirs(w)).collect();
        assert_eq!(got, [2, 2, 5, 11, 101]);
    }
}
