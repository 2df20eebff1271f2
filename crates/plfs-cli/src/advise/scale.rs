//! `plfs advise --scale`: the predicted write bandwidth of plain N-1, plain N-N, plfs, and plfs
//! behind a few aggregators, for 1 to 10,000 writers, from a probe of a directory or from a JSON
//! file of costs (issue 24, item 4; docs/performance.md, "At scale, on paper").
//!
//! A bottleneck model (the asymptotic bounds of operational analysis of a closed queueing
//! network): a job runs in phases the application separates (create, open, write, close), and a
//! phase lasts as long as its busiest resource needs.
//!
//! - The metadata server (MDS) serves `mds_concurrency` operations at a time, `mds_op_us` each:
//!   a phase needs at least its operations' work divided by the concurrency.
//! - Changes of one directory (or inode) are serialised by its lock, and each change of a
//!   directory that m client nodes have looked into costs the MDS `lock_callback_us` more per
//!   other client (their cached locks are called back, and taken again at their next look-up): a
//!   phase needs at least its longest such chain. That chain grows as writers × clients, so as
//!   writers² at a fixed number of writers per client, faster than the data: plfs, which changes
//!   the shared `meta/` and marker twice per writer, peaks and then collapses.
//! - One writer's own operations run one after the other.
//! - Data: a writer streams at most `stream_mibs`, a client node's link carries `client_mibs`,
//!   the fabric `fabric_mibs` (0: no limit), and the `servers` data servers `server_mibs` each,
//!   less a fraction `server_stream_penalty` per extra concurrent stream (file) a server serves.
//! - A plain shared file (N-1) lives on `n1_stripes` servers; a write to a stripe whose lock another
//!   writer holds pays `n1_lock_us` (the lock's round trip and the holder's flush).
//!
//! plfs's operations per container and per writer are the constants of [`super::model`], which
//! cite the code and the docs; nothing here counts them again.

use super::model::{
    choose_hostdirs, Workload, CLOSE_FILES, CLOSE_SERVER_STATS, CLOSE_UNLINKS, CREATE_FILES, CREATE_MKDIRS,
    CREATE_MKNODS, CREATE_SERVER_STATS, FIRST_WRITE_FILES, FIRST_WRITE_FILES_IN_HOSTDIR, FIRST_WRITE_FILES_IN_META,
    FIRST_WRITE_MKDIRS_PER_HOSTDIR, FIRST_WRITE_SERVER_STATS, FRAME_BYTES, HOSTDIR_SERVER_STATS, INDEX_RECORD_BYTES,
    OPEN_SERVER_STATS, PER_WRITE_CPU_US, RECOMMEND_RATIO,
};
use super::probe::Probe;
use serde_json::{json, Map, Value};

/// The writer counts of a curve: the powers of two from 1 to 8192, then 10,000.
pub fn writer_counts() -> Vec<u64> {
    (0..14).map(|i| 1u64 << i).chain(std::iter::once(10_000)).collect()
}

/// What the model needs to know about a file system (units in the names: µs, MiB/s).
#[derive(Debug, Clone, PartialEq)]
pub struct Costs {
    /// Service time of one metadata operation at the MDS.
    pub mds_op_us: f64,
    /// Operations the MDS serves at the same time.
    pub mds_concurrency: f64,
    /// MDS work per other client node that caches a directory, for each change of it.
    pub lock_callback_us: f64,
    /// Data servers (OSTs, bricks).
    pub servers: f64,
    /// Bandwidth of one data server.
    pub server_mibs: f64,
    /// Fraction of a server's bandwidth lost per concurrent stream beyond the first.
    pub server_stream_penalty: f64,
    /// Bandwidth of the fabric between all clients and all servers (0: no such limit).
    pub fabric_mibs: f64,
    /// Bandwidth of one client node's link.
    pub client_mibs: f64,
    /// Writers per client node (0: every writer on one client).
    pub writers_per_client: f64,
    /// Bandwidth one writer can stream.
    pub stream_mibs: f64,
    /// Extra time of a write to a shared file's stripe whose lock another writer holds.
    pub n1_lock_us: f64,
    /// Servers a plain shared file is striped over.
    pub n1_stripes: f64,
}

/// The keys of a costs file: name, default when absent (`None`: required), smallest value allowed.
const KEYS: [(&str, Option<f64>, f64); 12] = [
    ("mds_op_us", None, 0.0),
    ("mds_concurrency", None, 1.0),
    ("lock_callback_us", Some(0.0), 0.0),
    ("servers", None, 1.0),
    ("server_mibs", None, 1e-3),
    ("server_stream_penalty", Some(0.0), 0.0),
    ("fabric_mibs", Some(0.0), 0.0),
    ("client_mibs", None, 1e-3),
    ("writers_per_client", Some(1.0), 0.0),
    ("stream_mibs", None, 1e-3),
    ("n1_lock_us", None, 0.0),
    ("n1_stripes", Some(1.0), 1.0),
];

impl Costs {
    fn values(&self) -> [f64; 12] {
        [
            self.mds_op_us,
            self.mds_concurrency,
            self.lock_callback_us,
            self.servers,
            self.server_mibs,
            self.server_stream_penalty,
            self.fabric_mibs,
            self.client_mibs,
            self.writers_per_client,
            self.stream_mibs,
            self.n1_lock_us,
            self.n1_stripes,
        ]
    }

    /// The costs of a costs file (a JSON object; other keys, such as `sources`, are ignored), and
    /// its `workload` (`bytes_per_writer`, `record_bytes`) when it has one. The error names the key.
    pub fn from_json(v: &Value) -> Result<(Costs, Option<(u64, u64)>), String> {
        let obj = v.as_object().ok_or("not a JSON object")?;
        let mut got = [0.0; 12];
        for (slot, (key, default, min)) in got.iter_mut().zip(KEYS) {
            let x = match (obj.get(key), default) {
                (Some(x), _) => x.as_f64().ok_or_else(|| format!("\"{key}\" is not a number"))?,
                (None, Some(d)) => d,
                (None, None) => return Err(format!("\"{key}\" is missing")),
            };
            if !x.is_finite() || x < min {
                return Err(format!("\"{key}\" is {x}: must be at least {min}"));
            }
            *slot = x;
        }
        let [mds_op_us, mds_concurrency, lock_callback_us, servers, server_mibs, server_stream_penalty, fabric_mibs, client_mibs, writers_per_client, stream_mibs, n1_lock_us, n1_stripes] =
            got;
        let workload = match obj.get("workload") {
            None => None,
            Some(w) => {
                let n = |k: &str| {
                    w.get(k)
                        .and_then(Value::as_f64)
                        .filter(|x| x.is_finite() && *x >= 1.0)
                        .map(|x| x.round() as u64)
                        .ok_or_else(|| format!("\"workload\".\"{k}\" must be a number of bytes, at least 1"))
                };
                Some((n("bytes_per_writer")?, n("record_bytes")?))
            }
        };
        let c = Costs {
            mds_op_us,
            mds_concurrency,
            lock_callback_us,
            servers,
            server_mibs,
            server_stream_penalty,
            fabric_mibs,
            client_mibs,
            writers_per_client,
            stream_mibs,
            n1_lock_us,
            n1_stripes,
        };
        Ok((c, workload))
    }

    /// The costs as a JSON object (the keys of a costs file).
    pub fn to_json(&self) -> Value {
        let m: Map<String, Value> = KEYS
            .iter()
            .zip(self.values())
            .map(|((k, _, _), v)| ((*k).to_string(), json!(v)))
            .collect();
        Value::Object(m)
    }

    /// The costs a probe of one host measured: its create latency served one at a time (the
    /// probe's metadata runs in one thread, in one directory), no other client to call back, one
    /// "server" with the N-N bandwidth the probe's threads got, which is also the host's link; a
    /// writer streams at the one-writer bandwidth; the N-1 lock cost is what makes the probe's
    /// shared file slower than its files per writer, per record.
    pub fn from_probe(p: &Probe) -> Costs {
        let nn = p.nn_write_mibs.max(1e-3);
        let n1 = p.n1_write_mibs.max(1e-3);
        let r = p.record_bytes.max(1) as f64 / MIB;
        let threads = p.writers as f64;
        let n1_lock_us = if threads >= 2.0 {
            ((r / n1 - r / nn) / (1.0 - 1.0 / threads)).max(0.0) * 1e6
        } else {
            0.0
        };
        Costs {
            mds_op_us: p.create_us.max(0.0),
            mds_concurrency: 1.0,
            lock_callback_us: 0.0,
            servers: 1.0,
            server_mibs: nn,
            server_stream_penalty: 0.0,
            fabric_mibs: 0.0,
            client_mibs: nn,
            writers_per_client: 0.0,
            stream_mibs: p.write_1_mibs.max(1e-3),
            n1_lock_us,
            n1_stripes: 1.0,
        }
    }

    /// Client nodes of `w` writers.
    fn clients(&self, w: f64) -> f64 {
        if self.writers_per_client > 0.0 {
            (w / self.writers_per_client).ceil().max(1.0)
        } else {
            1.0
        }
    }
}

const MIB: f64 = 1_048_576.0;

/// One point of a curve: `writers` writers, bandwidths in MiB/s of the bytes the application wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub writers: u64,
    pub clients: u64,
    /// `num_hostdirs` of the plfs container: 1, or the smallest prime ≥ √writers where the model
    /// predicts that faster ([`choose_hostdirs`]).
    pub hostdirs: u64,
    pub plain_n1_mibs: f64,
    pub plain_nn_mibs: f64,
    pub plfs_mibs: f64,
    /// plfs when the writers hand their data to `aggregators` processes that alone write logs.
    pub plfs_aggregated_mibs: f64,
    /// Seconds plfs spends on metadata (container, opens, first writes, closes) ...
    pub plfs_metadata_s: f64,
    /// ... and on data.
    pub plfs_data_s: f64,
    pub plain_nn_metadata_s: f64,
}

/// A metadata phase: the MDS's work, the longest chain of changes under one lock, and the
/// operations of one writer, in µs.
#[derive(Default)]
struct Burst {
    work_us: f64,
    chain_us: f64,
    own_us: f64,
}

impl Burst {
    /// `n` operations that change nothing shared (look-ups, opens of existing files).
    fn lookups(&mut self, c: &Costs, n: f64) {
        self.work_us += n * c.mds_op_us;
    }

    /// `n` changes spread evenly over `dirs` directories (or inodes), each looked into by
    /// `sharers` client nodes.
    fn changes(&mut self, c: &Costs, n: f64, dirs: f64, sharers: f64) {
        let each = c.mds_op_us + c.lock_callback_us * (sharers - 1.0).max(0.0);
        self.work_us += n * each;
        self.chain_us = self.chain_us.max(n / dirs.max(1.0) * each);
    }

    /// `ops` operations of one writer, one after the other.
    fn own(&mut self, c: &Costs, ops: f64) {
        self.own_us += ops * c.mds_op_us;
    }

    fn secs(&self, c: &Costs) -> f64 {
        (self.work_us / c.mds_concurrency).max(self.chain_us).max(self.own_us) * 1e-6
    }
}

/// Seconds of plfs metadata for `w` writers (or aggregators) on `clients` client nodes, with
/// `hostdirs` hostdirs (1: none, every writer's logs in the container directory, format 3).
fn plfs_metadata(c: &Costs, w: f64, clients: f64, hostdirs: u64) -> f64 {
    let mut create = Burst::default();
    create.own(c, CREATE_SERVER_STATS + CREATE_FILES + CREATE_MKNODS + CREATE_MKDIRS);
    let mut open = Burst::default();
    let own = OPEN_SERVER_STATS + FIRST_WRITE_SERVER_STATS + FIRST_WRITE_FILES;
    if hostdirs > 1 {
        // One hostdir per host name's hash: a client's writers share one, several clients may.
        let used = (hostdirs as f64).min(clients);
        let per_hostdir = (clients / used).ceil();
        open.lookups(
            c,
            (OPEN_SERVER_STATS + FIRST_WRITE_SERVER_STATS + HOSTDIR_SERVER_STATS) * w,
        );
        open.changes(c, FIRST_WRITE_FILES_IN_META * w, 1.0, clients);
        open.changes(c, FIRST_WRITE_FILES_IN_HOSTDIR * w, used, per_hostdir);
        open.changes(c, FIRST_WRITE_MKDIRS_PER_HOSTDIR * used, 1.0, used);
        open.own(c, own + HOSTDIR_SERVER_STATS + FIRST_WRITE_MKDIRS_PER_HOSTDIR);
    } else {
        // The open droppings and the logs are all entries of the container: one chain.
        open.lookups(c, (OPEN_SERVER_STATS + FIRST_WRITE_SERVER_STATS) * w);
        open.changes(c, FIRST_WRITE_FILES * w, 1.0, clients);
        open.own(c, own);
    }
    let mut close = Burst::default();
    close.changes(c, CLOSE_SERVER_STATS * w, 1.0, clients);
    close.changes(c, (CLOSE_FILES + CLOSE_UNLINKS) * w, 1.0, clients);
    close.own(c, CLOSE_SERVER_STATS + CLOSE_FILES + CLOSE_UNLINKS);
    create.secs(c) + open.secs(c) + close.secs(c)
}

/// [`plfs_metadata`] with the `num_hostdirs` [`choose_hostdirs`] picks, and that number.
fn plfs_metadata_best(c: &Costs, w: f64, clients: f64) -> (f64, u64) {
    let k = choose_hostdirs(w as u64, |k| plfs_metadata(c, w, clients, k));
    (plfs_metadata(c, w, clients, k), k)
}

/// Seconds to move `total` MiB written by `producers` writers (`per_writer_s` each at least)
/// into `files` files, through the links of `clients` client nodes.
fn data_secs(c: &Costs, total: f64, per_writer_s: f64, files: f64, clients: f64) -> f64 {
    let used = files.min(c.servers).max(1.0);
    let streams = files / used;
    let eff = 1.0 / (1.0 + c.server_stream_penalty * (streams - 1.0).max(0.0));
    let fabric = if c.fabric_mibs > 0.0 {
        total / c.fabric_mibs
    } else {
        0.0
    };
    per_writer_s
        .max(total / (clients * c.client_mibs))
        .max(fabric)
        .max(total / (used * c.server_mibs * eff))
}

/// The bandwidths of `wl.writers` writers; `aggregators` for the aggregated plfs.
pub fn point(c: &Costs, wl: Workload, aggregators: u64) -> Point {
    let w = wl.writers.max(1) as f64;
    let b = wl.bytes_per_writer.max(1) as f64 / MIB;
    let r = wl.record_bytes.max(1) as f64 / MIB;
    let writes = (b / r).ceil();
    let total = w * b;
    let clients = c.clients(w);
    let stream_s = b / c.stream_mibs;

    // Plain N-1: one create, every writer opens; each stripe's lock bounces between writers.
    let mut n1_meta = Burst::default();
    n1_meta.changes(c, 1.0, 1.0, 1.0);
    n1_meta.lookups(c, w);
    n1_meta.own(c, 2.0);
    let stripes = c.n1_stripes.min(c.servers);
    let bounce = 1.0 - 1.0 / w;
    let per_stripe = r / (r / c.server_mibs + c.n1_lock_us * 1e-6 * bounce);
    let fabric = if c.fabric_mibs > 0.0 {
        total / c.fabric_mibs
    } else {
        0.0
    };
    let n1_data = stream_s
        .max(total / (clients * c.client_mibs))
        .max(fabric)
        .max(total / (stripes * per_stripe));
    let t_n1 = n1_meta.secs(c) + n1_data;

    // Plain N-N: every writer creates its file in one directory.
    let mut nn_meta = Burst::default();
    nn_meta.changes(c, w, 1.0, clients);
    nn_meta.own(c, 1.0);
    let nn_meta_s = nn_meta.secs(c);
    let t_nn = nn_meta_s + data_secs(c, total, stream_s, w, clients);

    // plfs: the metadata above; the data plus frames and index records, a log per writer.
    let overhead = 1.0 + (FRAME_BYTES + INDEX_RECORD_BYTES) / (r * MIB);
    let per_writer_s = stream_s * overhead + writes * PER_WRITE_CPU_US * 1e-6;
    let (plfs_meta, hostdirs) = plfs_metadata_best(c, w, clients);
    let plfs_data = data_secs(c, total * overhead, per_writer_s, w, clients);

    // Aggregated plfs: `a` aggregators on as many client nodes (at most all of them) receive the
    // writers' data and alone open, write and close logs.
    let a = (aggregators.max(1) as f64).min(w);
    let agg_clients = a.min(clients);
    let agg_t = plfs_metadata_best(c, a, agg_clients).0 + data_secs(c, total * overhead, per_writer_s, a, agg_clients);

    Point {
        writers: wl.writers,
        clients: clients as u64,
        hostdirs,
        plain_n1_mibs: total / t_n1,
        plain_nn_mibs: total / t_nn,
        plfs_mibs: total / (plfs_meta + plfs_data),
        plfs_aggregated_mibs: total / agg_t,
        plfs_metadata_s: plfs_meta,
        plfs_data_s: plfs_data,
        plain_nn_metadata_s: nn_meta_s,
    }
}

/// The curve: one [`Point`] per writer count of [`writer_counts`].
pub fn curve(c: &Costs, bytes_per_writer: u64, record_bytes: u64, aggregators: u64) -> Vec<Point> {
    writer_counts()
        .into_iter()
        .map(|writers| {
            let wl = Workload {
                writers,
                record_bytes,
                bytes_per_writer,
            };
            point(c, wl, aggregators)
        })
        .collect()
}

/// What a curve says, in writer counts of the curve.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Where plfs's bandwidth is highest, and that bandwidth.
    pub peak_writers: u64,
    pub peak_mibs: f64,
    /// The first and last writer counts where plfs makes at least [`RECOMMEND_RATIO`] times plain
    /// N-1 (`None`: nowhere).
    pub helps_from: Option<u64>,
    pub helps_up_to: Option<u64>,
    /// From this writer count on, plfs is slower than plain N-1 at every larger count.
    pub below_n1_from: Option<u64>,
    /// From this writer count on, the aggregated plfs beats plfs at every larger count.
    pub aggregated_wins_from: Option<u64>,
}

/// The smallest writer count from which `pred` holds at every larger count of `pts`.
fn holds_from(pts: &[Point], pred: impl Fn(&Point) -> bool) -> Option<u64> {
    let n = pts.iter().rev().take_while(|p| pred(p)).count();
    (n > 0).then(|| pts[pts.len() - n].writers)
}

pub fn summarize(pts: &[Point]) -> Summary {
    let peak = pts
        .iter()
        .max_by(|a, b| a.plfs_mibs.total_cmp(&b.plfs_mibs))
        .expect("a curve has points");
    let helps = |p: &&Point| p.plfs_mibs >= RECOMMEND_RATIO * p.plain_n1_mibs;
    Summary {
        peak_writers: peak.writers,
        peak_mibs: peak.plfs_mibs,
        helps_from: pts.iter().find(helps).map(|p| p.writers),
        helps_up_to: pts.iter().rev().find(helps).map(|p| p.writers),
        below_n1_from: holds_from(pts, |p| p.plfs_mibs < p.plain_n1_mibs),
        aggregated_wins_from: holds_from(pts, |p| p.plfs_aggregated_mibs > p.plfs_mibs),
    }
}

/// A curve as JSON: `points` (one object per writer count) and the summary's keys.
pub fn to_json(pts: &[Point], s: &Summary) -> Value {
    let points: Vec<Value> = pts
        .iter()
        .map(|p| {
            json!({
                "writers": p.writers,
                "clients": p.clients,
                "hostdirs": p.hostdirs,
                "plain_n1_mibs": p.plain_n1_mibs,
                "plain_nn_mibs": p.plain_nn_mibs,
                "plfs_mibs": p.plfs_mibs,
                "plfs_aggregated_mibs": p.plfs_aggregated_mibs,
                "ratio_plfs_vs_n1": p.plfs_mibs / p.plain_n1_mibs,
                "plfs_metadata_s": p.plfs_metadata_s,
                "plfs_data_s": p.plfs_data_s,
                "plain_nn_metadata_s": p.plain_nn_metadata_s,
            })
        })
        .collect();
    json!({
        "points": points,
        "plfs_peak": {"writers": s.peak_writers, "mibs": s.peak_mibs},
        "plfs_helps_from": s.helps_from,
        "plfs_helps_up_to": s.helps_up_to,
        "plfs_below_n1_from": s.below_n1_from,
        "aggregated_wins_from": s.aggregated_wins_from,
    })
}

/// The curve as text: a table, then what it says in a few lines.
pub fn text(pts: &[Point], s: &Summary, aggregators: u64) -> Vec<String> {
    let mut out = vec![format!(
        "{:>7} {:>7} {:>10} {:>10} {:>10} {:>10} {:>8} {:>9}",
        "writers",
        "clients",
        "plain N-1",
        "plain N-N",
        "plfs",
        format!("plfs/{aggregators}agg"),
        "plfs/N-1",
        "plfs meta"
    )];
    for p in pts {
        out.push(format!(
            "{:>7} {:>7} {:>10.0} {:>10.0} {:>10.0} {:>10.0} {:>8.2} {:>8.1}s",
            p.writers,
            p.clients,
            p.plain_n1_mibs,
            p.plain_nn_mibs,
            p.plfs_mibs,
            p.plfs_aggregated_mibs,
            p.plfs_mibs / p.plain_n1_mibs,
            p.plfs_metadata_s
        ));
    }
    out.push("(write bandwidth in MiB/s of the application's bytes; plfs meta: seconds of plfs metadata)".into());
    let last = pts.last().expect("a curve has points");
    let peak = if s.peak_writers == last.writers {
        format!(
            "plfs is fastest at the largest count, {:.0} MiB/s (no peak inside the range)",
            s.peak_mibs
        )
    } else {
        format!("plfs peaks at {:.0} MiB/s with {} writers", s.peak_mibs, s.peak_writers)
    };
    out.push(format!(
        "{peak}; at {} writers it spends {:.1} s on metadata and {:.1} s on data",
        last.writers, last.plfs_metadata_s, last.plfs_data_s
    ));
    out.push(match (s.helps_from, s.helps_up_to) {
        (Some(a), Some(b)) => format!(
            "plfs makes at least {RECOMMEND_RATIO:.2}x plain N-1 from {a} to {b} writers{}",
            if b == last.writers {
                " (and still at the largest count)"
            } else {
                ""
            }
        ),
        _ => format!("plfs never makes {RECOMMEND_RATIO:.2}x plain N-1 here"),
    });
    let first = pts.first().expect("a curve has points").writers;
    out.push(match s.below_n1_from {
        Some(w) if w == first => "plfs is slower than plain N-1 at every count: it does not help here".into(),
        Some(w) => format!("plfs is slower than plain N-1 from {w} writers on: there it stops helping"),
        None => "plfs is not slower than plain N-1 at the largest count".into(),
    });
    let agg = if aggregators == 1 {
        "1 aggregator".to_string()
    } else {
        format!("{aggregators} aggregators")
    };
    out.push(match s.aggregated_wins_from {
        Some(w) => format!("plfs behind {agg} beats every writer writing its own logs from {w} writers on"),
        None => format!("plfs behind {agg} does not beat every writer writing its own logs at the largest count"),
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Lustre costs of docs/performance.md ("At scale, on paper"): the committed file itself.
    const SIERRA: &str = include_str!("../../../../bench/model/lustre-sierra.json");

    fn sierra() -> (Costs, u64, u64, Value) {
        let v: Value = serde_json::from_str(SIERRA).unwrap();
        let (c, wl) = Costs::from_json(&v).unwrap();
        let (b, r) = wl.expect("the file has a workload");
        (c, b, r, v)
    }

    fn at(pts: &[Point], w: u64) -> &Point {
        pts.iter().find(|p| p.writers == w).unwrap()
    }

    fn curve_at(c: &Costs, b: u64, r: u64, writers: &[u64], aggregators: u64) -> Vec<Point> {
        writers
            .iter()
            .map(|&writers| {
                point(
                    c,
                    Workload {
                        writers,
                        record_bytes: r,
                        bytes_per_writer: b,
                    },
                    aggregators,
                )
            })
            .collect()
    }

    /// MB/s as the paper prints them, in MiB/s.
    fn paper_mibs(mbs: f64) -> f64 {
        mbs * 1e6 / MIB
    }

    #[test]
    fn hostdirs_are_recommended_only_where_they_are_predicted_faster() {
        let (c, b, r, _) = sierra();
        let pts = curve(&c, b, r, 1);
        for p in &pts {
            let w = p.writers as f64;
            let clients = c.clients(w);
            let one = plfs_metadata(&c, w, clients, 1);
            let rule = plfs_metadata(&c, w, clients, super::super::model::num_hostdirs(p.writers));
            assert_eq!(p.plfs_metadata_s, one.min(rule), "{p:?}");
            assert_eq!(p.hostdirs == 1, one <= rule, "{p:?}");
        }
        // One or two writers: the logs stay in the container (format 3's default). Many writers
        // on Lustre-like costs, where one directory's lock serialises its changes and calls back
        // every client's cached lock: hostdirs split the longest chain (from 4 writers here, the
        // open droppings in the container and the logs in a hostdir already make two chains).
        assert_eq!((at(&pts, 1).hostdirs, at(&pts, 2).hostdirs), (1, 1));
        assert!(
            pts.iter().filter(|p| p.writers >= 16).all(|p| p.hostdirs > 1),
            "{pts:?}"
        );
    }

    #[test]
    fn the_curve_runs_from_1_to_10000_writers_log_spaced() {
        let w = writer_counts();
        assert_eq!((w[0], w[1], w[13], w[14], w.len()), (1, 2, 8192, 10_000, 15));
    }

    #[test]
    fn lustre_costs_reproduce_the_shape_of_seed_000_fig_5() {
        // FLASH-IO through PLFS on Sierra's Lustre: ~1,650 MB/s at 192 cores, ~210 MB/s at 3,072;
        // MPI-IO (plain N-1) rises gently to ~550 MB/s. The paper's core counts, 12 per node.
        let (c, b, r, _) = sierra();
        let cores = [12, 24, 48, 96, 192, 384, 768, 1536, 3072];
        let pts = curve_at(&c, b, r, &cores, c.servers as u64);
        let peak = pts.iter().max_by(|a, b| a.plfs_mibs.total_cmp(&b.plfs_mibs)).unwrap();
        // An interior peak, at a writer count within a factor of 2 of the paper's 192 ...
        assert!(peak.writers > 12 && peak.writers < 3072, "{peak:?}");
        assert!((96..=384).contains(&peak.writers), "{peak:?}");
        // ... of a bandwidth within a factor of 2 of 1,650 MB/s ...
        let want = paper_mibs(1650.0);
        assert!(peak.plfs_mibs > want / 2.0 && peak.plfs_mibs < want * 2.0, "{peak:?}");
        // ... falling at 3,072 to within a factor of 2 of 210 MB/s, well below the peak and below
        // plain N-1, because metadata grew faster than data.
        let end = at(&pts, 3072);
        let want = paper_mibs(210.0);
        assert!(end.plfs_mibs > want / 2.0 && end.plfs_mibs < want * 2.0, "{end:?}");
        assert!(end.plfs_mibs < peak.plfs_mibs / 4.0, "{end:?} {peak:?}");
        assert!(end.plfs_mibs < end.plain_n1_mibs, "{end:?}");
        assert!(end.plfs_metadata_s > 10.0 * end.plfs_data_s, "{end:?}");
        let p192 = at(&pts, 192);
        assert!(p192.plfs_metadata_s < p192.plfs_data_s * 2.0, "{p192:?}");
        // Every step after the peak loses bandwidth: a collapse, not noise.
        let after: Vec<f64> = pts
            .iter()
            .filter(|p| p.writers >= peak.writers)
            .map(|p| p.plfs_mibs)
            .collect();
        assert!(after.windows(2).all(|x| x[1] < x[0]), "{after:?}");
        // Plain N-1 levels off within a factor of 2 of the paper's 550 MB/s and never collapses.
        let n1 = at(&pts, 3072).plain_n1_mibs;
        assert!(n1 > paper_mibs(550.0) / 2.0 && n1 < paper_mibs(550.0) * 2.0, "{n1}");
        assert!(pts.windows(2).all(|x| x[1].plain_n1_mibs >= x[0].plain_n1_mibs * 0.95));
        // At the peak plfs beats plain N-1 by the kind of margin the paper shows.
        assert!(peak.plfs_mibs > 2.0 * peak.plain_n1_mibs, "{peak:?}");
    }

    #[test]
    fn fewer_aggregators_beat_every_writer_at_scale_as_in_seed_002() {
        let (c, b, r, _) = sierra();
        let pts = curve_at(&c, b, r, &[3072, 8192, 10_000], c.servers as u64);
        for p in &pts {
            assert!(p.plfs_aggregated_mibs > 4.0 * p.plfs_mibs, "{p:?}");
        }
        // Even with metadata free, streams alone: a server serving many files loses to one
        // serving one, so aggregators matched to the servers beat all writers at 10,000.
        let free = Costs {
            mds_op_us: 0.0,
            lock_callback_us: 0.0,
            stream_mibs: 1e6,
            ..c.clone()
        };
        let p = &curve_at(&free, b, r, &[10_000], c.servers as u64)[0];
        assert!(p.plfs_aggregated_mibs > 1.5 * p.plfs_mibs, "{p:?}");
        let s = summarize(&curve(&c, b, r, c.servers as u64));
        assert!(s.aggregated_wins_from.is_some_and(|w| w <= 1024), "{s:?}");
    }

    #[test]
    fn metadata_grows_faster_than_data() {
        // The model's mechanism, on its own: quadrupling writers at a fixed number per client
        // multiplies plfs's metadata time by well over 4 and its data time by at most 4.
        let (c, b, r, _) = sierra();
        let pts = curve_at(&c, b, r, &[768, 3072], 24);
        assert!(pts[1].plfs_metadata_s > 12.0 * pts[0].plfs_metadata_s, "{pts:?}");
        assert!(pts[1].plfs_data_s <= 4.0 * pts[0].plfs_data_s + 1e-9, "{pts:?}");
        // Without callbacks (one client, or none cached) metadata is only linear: no collapse.
        let flat = Costs {
            lock_callback_us: 0.0,
            ..c
        };
        let pts = curve_at(&flat, b, r, &[768, 3072], 24);
        assert!(pts[1].plfs_metadata_s < 4.5 * pts[0].plfs_metadata_s, "{pts:?}");
    }

    #[test]
    fn the_summary_says_where_plfs_stops_helping() {
        let (c, b, r, _) = sierra();
        let pts = curve(&c, b, r, 24);
        let s = summarize(&pts);
        assert!((128..=512).contains(&s.peak_writers), "{s:?}");
        let (from, to) = (s.helps_from.unwrap(), s.helps_up_to.unwrap());
        assert!(from < s.peak_writers && to > s.peak_writers && to < 3072, "{s:?}");
        assert!(s.below_n1_from.is_some_and(|w| w > to && w <= 4096), "{s:?}");
        let v = to_json(&pts, &s);
        assert_eq!(v["points"].as_array().unwrap().len(), 15);
        assert_eq!(v["plfs_peak"]["writers"], s.peak_writers);
        assert!(text(&pts, &s, 24).iter().any(|l| l.contains("stops helping")));
    }

    #[test]
    fn costs_files_round_trip_and_errors_name_the_key() {
        let (c, _, _, v) = sierra();
        let (back, wl) = Costs::from_json(&c.to_json()).unwrap();
        assert_eq!(back, c);
        assert!(wl.is_none());
        assert!(v["sources"]
            .as_object()
            .is_some_and(|s| KEYS.iter().all(|(k, _, _)| s.contains_key(*k))));
        let mut missing = c.to_json();
        missing.as_object_mut().unwrap().remove("stream_mibs");
        assert!(Costs::from_json(&missing).unwrap_err().contains("stream_mibs"));
        let mut bad = c.to_json();
        bad["servers"] = json!(0);
        assert!(Costs::from_json(&bad).unwrap_err().contains("servers"));
        bad["servers"] = json!("many");
        assert!(Costs::from_json(&bad).unwrap_err().contains("servers"));
        // Optional keys take their defaults.
        let mut minimal = c.to_json();
        for k in [
            "lock_callback_us",
            "server_stream_penalty",
            "fabric_mibs",
            "writers_per_client",
            "n1_stripes",
        ] {
            minimal.as_object_mut().unwrap().remove(k);
        }
        let (m, _) = Costs::from_json(&minimal).unwrap();
        assert_eq!(
            (m.lock_callback_us, m.writers_per_client, m.n1_stripes),
            (0.0, 1.0, 1.0)
        );
        assert!(Costs::from_json(&json!([1])).is_err());
    }

    fn probe(create_us: f64, nn: f64, n1: f64) -> Probe {
        Probe {
            create_us,
            mknod_us: create_us,
            mkdir_us: create_us,
            stat_us: create_us / 4.0,
            readdir_us: create_us,
            readdir_entries: 64,
            unlink_us: create_us,
            rename_us: create_us,
            fsync_us: 1000.0,
            write_1_mibs: nn / 2.0,
            nn_write_mibs: nn,
            n1_write_mibs: n1,
            read_mibs: nn * 2.0,
            plfs_write_mibs: nn,
            plfs_write_us: 0.5,
            plfs_sync_us: 0.0,
            writers: 4,
            record_bytes: 47008,
            bytes_per_writer: 4 << 20,
            metadata_samples: 64,
            bandwidth_reps: 3,
        }
    }

    #[test]
    fn a_probe_reproduces_itself_at_its_own_writer_count() {
        let p = probe(20.0, 1000.0, 400.0);
        let c = Costs::from_probe(&p);
        assert!(c.n1_lock_us > 0.0 && c.lock_callback_us == 0.0 && c.writers_per_client == 0.0);
        let x = &curve_at(&c, 1 << 30, 47008, &[4], 1)[0];
        assert!((x.plain_n1_mibs / 400.0 - 1.0).abs() < 0.02, "{x:?}");
        assert!((x.plain_nn_mibs / 1000.0 - 1.0).abs() < 0.02, "{x:?}");
        // One host: no callbacks, metadata linear, so the ratio levels off instead of collapsing.
        let pts = curve(&c, 256 << 20, 47008, 1);
        let r: Vec<f64> = pts.iter().map(|p| p.plfs_mibs / p.plain_n1_mibs).collect();
        assert!(r[13] > 0.8 * r[5] && r[14] > 0.8 * r[5], "{r:?}");
        for p in &pts {
            for v in [p.plain_n1_mibs, p.plain_nn_mibs, p.plfs_mibs, p.plfs_aggregated_mibs] {
                assert!(v.is_finite() && v > 0.0, "{p:?}");
            }
        }
        // A zero probe stays finite.
        let z = Costs::from_probe(&probe(0.0, 0.0, 0.0));
        let x = &curve_at(&z, 1, 1, &[1, 10_000], 1)[1];
        assert!(x.plfs_mibs.is_finite() && x.plfs_mibs > 0.0, "{x:?}");
    }
}
