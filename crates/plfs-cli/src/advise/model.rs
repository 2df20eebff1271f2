//! The model of `plfs advise`: from a [`Probe`] of the backend file system and plfs's own operation
//! counts, predicts the write and read-back bandwidth of plain N-1, plain N-N and plfs N-1 for W
//! writers of records of R bytes, B bytes per writer, and recommends.
//!
//! The shape (docs/performance.md, "Will plfs help here?"):
//! - plain N-1: one create, W opens (a stat each), then W·B bytes at the measured N-1 bandwidth;
//! - plain N-N: W creates in one directory (serialised: latency × W), then W·B at the N-N bandwidth;
//! - plfs: the container's creation, then each writer's open/first-write/close operations, all in
//!   the container's directories, so serialised (latency × count × W); the data plus its 32-byte
//!   frames plus its 48-byte index records go to per-writer logs at the N-N bandwidth, the records
//!   in batches of `index_buffer_records`, each batch one more write; a small CPU cost per write;
//! - reads: plain = W·B at the measured read bandwidth; plfs adds the read-open (listings, one
//!   open per log, merging every index record) to the same bytes.

use super::probe::Probe;

// plfs's operation counts, in one place. Each comes from the code or the docs as cited.

/// Container creation (design.md, "Data flow of a write", step 1; format.md §1): `lstat` of the
/// name and of its marker, then marker + `meta/cid.*` created and `meta/` plus the temporary
/// container made, renamed into place. performance.md ("creates per second") names the same
/// steps: "directory, access file, rename, `meta/`".
pub const CREATE_STATS: f64 = 2.0;
pub const CREATE_FILES: f64 = 2.0;
pub const CREATE_MKDIRS: f64 = 2.0;
pub const CREATE_RENAMES: f64 = 1.0;
/// Each writer's open: the two `lstat`s of the look-up (design.md, write step 1), the container
/// directory opened and `flock`ed (counted as one stat).
pub const OPEN_STATS: f64 = 3.0;
/// Each writer's first write (design.md, write step 2): `meta/open.*`, the data log, the index log.
pub const FIRST_WRITE_FILES: f64 = FIRST_WRITE_FILES_IN_META + FIRST_WRITE_FILES_IN_HOSTDIR;
/// ... of which one (`meta/open.*`) in the container's `meta/`, shared by every writer ...
pub const FIRST_WRITE_FILES_IN_META: f64 = 1.0;
/// ... and two (the data log and the index log) in the writer's hostdir.
pub const FIRST_WRITE_FILES_IN_HOSTDIR: f64 = 2.0;
/// ... and its hostdir, created once per hostdir (format.md §1: `hostdir.<fnv1a64(host) %
/// num_hostdirs>`); the model assumes the worst case, one per writer up to `num_hostdirs`.
pub const FIRST_WRITE_MKDIRS_PER_HOSTDIR: f64 = 1.0;
/// Each writer's close (design.md, write step 5): the marker's mtime raised (a metadata update,
/// counted as one stat; a change of the one marker every writer shares), its close dropping made
/// in `meta/` and its `meta/open.*` removed (two changes of `meta/`; a rename before issue 22).
pub const CLOSE_STATS: f64 = 1.0;
pub const CLOSE_FILES: f64 = 1.0;
pub const CLOSE_UNLINKS: f64 = 1.0;
/// Bytes of the frame each write adds to its data log (format.md §3; performance.md, issues 22
/// and 23 table: "32 (0.78 % at 4 KiB)").
pub const FRAME_BYTES: f64 = 32.0;
/// Bytes of a WRITE index record (format.md §4: "record 48 bytes").
pub const INDEX_RECORD_BYTES: f64 = 48.0;
/// Records buffered before an append to the index log (format.md §4, `index_buffer_records`,
/// default 1024; `Config` in plfs-core/src/config/mod.rs).
pub const INDEX_BUFFER_RECORDS: f64 = 1024.0;
/// CPU per write in the writing process: 1,335 instructions per 4 KiB write through ldplfs
/// (performance.md, issues 22 and 23 table), about 0.5 µs at ~3 instructions per ns.
pub const PER_WRITE_CPU_US: f64 = 0.5;
/// Read-open (design.md, "Data flow of a read", step 1; format.md §5): the marker `lstat`,
/// readdir of `meta/` and of the container, one readdir per hostdir, then per writer its index
/// log and data log opened (2 opens, counted as stats).
pub const READ_OPEN_STATS: f64 = 1.0;
pub const READ_OPEN_READDIRS: f64 = 2.0;
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
    /// Seconds of the plfs write spent on index records and per-write CPU.
    pub plfs_index_s: f64,
    pub plfs_read_open_s: f64,
    pub reasons: Vec<String>,
}

/// The smallest prime ≥ sqrt(w) (the original PLFS's rule for `num_hostdirs`; docs/config.md),
/// clamped to the configuration's 1..=1024.
pub fn num_hostdirs(w: u64) -> u64 {
    let target = (w as f64).sqrt().ceil().max(2.0) as u64;
    let is_prime = |n: u64| n >= 2 && (2..).take_while(|d| d * d <= n).all(|d| n % d != 0);
    (target..).find(|&n| is_prime(n)).unwrap_or(2).min(1021)
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

/// Predicts the workload on the probed file system and recommends.
pub fn predict(p: &Probe, wl: Workload) -> Prediction {
    let w = wl.writers.max(1) as f64;
    let r = wl.record_bytes.max(1) as f64;
    let b = wl.bytes_per_writer.max(1) as f64;
    let total = w * b;
    let writes = (b / r).ceil();
    let s = |us: f64| us * 1e-6;
    let hostdirs = num_hostdirs(wl.writers);

    // Plain N-1: the first writer creates, every writer opens; then the shared-file bandwidth.
    let n1_meta = s(p.create_us) + w * s(p.stat_us);
    let t_n1 = n1_meta + secs(total, p.n1_write_mibs);
    // Plain N-N: W creates in one directory, serialised; then the file-per-writer bandwidth.
    let t_nn = w * s(p.create_us) + secs(total, p.nn_write_mibs);
    // plfs: the container, then per writer its open, first write and close, serialised.
    let create = CREATE_STATS * s(p.stat_us)
        + CREATE_FILES * s(p.create_us)
        + CREATE_MKDIRS * s(p.mkdir_us)
        + CREATE_RENAMES * s(p.rename_us);
    let per_writer = (OPEN_STATS + CLOSE_STATS) * s(p.stat_us)
        + (FIRST_WRITE_FILES + CLOSE_FILES) * s(p.create_us)
        + CLOSE_UNLINKS * s(p.unlink_us);
    let mkdirs = FIRST_WRITE_MKDIRS_PER_HOSTDIR * (hostdirs as f64).min(w) * s(p.mkdir_us);
    let meta = create + w * per_writer + mkdirs;
    let index_bytes = w * writes * INDEX_RECORD_BYTES;
    // One more append per batch of records, each about a small write: its share of an fsync-free
    // write is negligible beside the bytes; the bytes go at the N-N bandwidth with the data.
    let batches = (writes / INDEX_BUFFER_RECORDS).ceil().max(1.0);
    let index = secs(index_bytes, p.nn_write_mibs) + writes * s(PER_WRITE_CPU_US) + batches * s(p.stat_us);
    let t_plfs = meta + secs(total + w * writes * FRAME_BYTES, p.nn_write_mibs) + index;

    // Reads: the same bytes at the measured read bandwidth; plfs first opens every log and merges
    // every index record.
    let t_read_plain = s(p.stat_us) + secs(total, p.read_mibs);
    let read_open = READ_OPEN_STATS * s(p.stat_us)
        + (READ_OPEN_READDIRS + (hostdirs as f64).min(w)) * s(p.readdir_us)
        + w * READ_OPEN_STATS_PER_WRITER * s(p.stat_us)
        + secs(index_bytes, p.read_mibs)
        + w * writes / MERGE_RECORDS_PER_S;
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
            "index: {writes:.0} writes of {} B per writer add {:.2} MiB of frames and records and {:.1} ms ({:.2} % of \
             the data)",
            wl.record_bytes,
            w * writes * (FRAME_BYTES + INDEX_RECORD_BYTES) / 1_048_576.0,
            index * 1e3,
            100.0 * (FRAME_BYTES + INDEX_RECORD_BYTES) / r
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
        assert_eq!(x.num_hostdirs, 11);
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
    fn hostdirs_follow_the_smallest_prime_at_least_sqrt_w() {
        let got: Vec<u64> = [1, 4, 10, 64, 10_000].iter().map(|&w| num_hostdirs(w)).collect();
        assert_eq!(got, [2, 2, 5, 11, 101]);
    }
}
