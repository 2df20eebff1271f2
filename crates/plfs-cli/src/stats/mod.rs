//! `plfs stats FILE|DIR`: an I/O characterisation of N-1 files from their index logs and
//! droppings, in the spirit of darshan-parser. For a file: per writer its bytes, writes, first
//! and last write, access sizes and pattern; for the file its pattern, record size, stride,
//! overlap, span and bandwidth ([`analyze`] says how each is worked out). For a directory tree:
//! one summary line per directory.

mod analyze;

use crate::fail::{CoreContext, Failure, Reported};
use crate::globals::Globals;
use crate::util::{absolute, human_iec, open_plfs, plural, require_plfs_path};
use analyze::{analyze, bucket_range, FileStats, Histogram};
use anyhow::Result;
use clap::Args;
use plfs_core::{tools, FileKind, Plfs, Storage};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

/// Arguments of `plfs stats`.
#[derive(Debug, Args)]
pub struct StatsArgs {
    /// An N-1 file, or a directory (every file under it, summarised per directory).
    path: PathBuf,
}

/// `2^k` bytes, short: `512`, `32K`, `1M`.
fn pow2_label(k: i32) -> String {
    if k < 0 {
        return "0".into();
    }
    let units = ["", "K", "M", "G", "T", "P", "E"];
    let u = (k / 10) as usize;
    format!("{}{}", 1u64 << (k % 10), units[u.min(units.len() - 1)])
}

/// A bucket as `32K-64K` (sizes from 32 KiB up to, not including, 64 KiB).
fn bucket_label(k: i32) -> String {
    if k < 0 {
        "0".into()
    } else {
        format!("{}-{}", pow2_label(k), pow2_label(k + 1))
    }
}

fn sizes_json(h: &Histogram) -> Value {
    json!(h
        .iter()
        .map(|&(k, n)| {
            let (from, to) = bucket_range(k);
            json!({ "from": from, "to": to, "count": n })
        })
        .collect::<Vec<_>>())
}

fn file_json(path: &Path, size: u64, s: &FileStats) -> Value {
    let writers: Vec<Value> = s
        .writers
        .iter()
        .map(|w| {
            json!({
                "writer_id": format!("{:016x}", w.writer_id), "host": w.host, "pid": w.pid,
                "bytes": w.bytes, "writes": w.writes, "first_ns": w.first_ns, "last_ns": w.last_ns,
                "open_ns": w.open_ns, "close_ns": w.close_ns, "end_ns": w.end_ns,
                "pattern": w.pattern.name(), "stride": w.stride, "sizes": sizes_json(&w.sizes),
            })
        })
        .collect();
    json!({
        "path": path.display().to_string(), "size": size,
        "bytes": s.bytes, "writes": s.writes,
        "pattern": {
            "kind": s.pattern.name(), "stride": s.stride, "record_size": s.record_size,
            "overlap_bytes": s.overlap_bytes,
        },
        "first_ns": s.first_ns, "end_ns": s.end_ns,
        "span_s": s.span_s(), "bandwidth_mibs": s.bandwidth_mibs(),
        "sizes": sizes_json(&s.sizes), "writers": writers,
    })
}

/// Seconds since `t0`, for the table (`-` when unknown).
fn rel_s(t: Option<u64>, t0: Option<u64>) -> String {
    match (t, t0) {
        (Some(t), Some(t0)) => format!("{:.3}", t.saturating_sub(t0) as f64 / 1e9),
        _ => "-".into(),
    }
}

/// The histogram as `32K-64K:10 1K-2K:3`, most common first, at most `max` buckets then `+N`.
fn sizes_text(h: &Histogram, max: usize) -> String {
    let mut v: Vec<&(i32, u64)> = h.iter().collect();
    v.sort_by_key(|&&(k, n)| (std::cmp::Reverse(n), k));
    let mut parts: Vec<String> = v
        .iter()
        .take(max)
        .map(|&&(k, n)| format!("{}:{n}", bucket_label(k)))
        .collect();
    if v.len() > max {
        parts.push(format!("+{}", v.len() - max));
    }
    parts.join(" ")
}

fn print_file(path: &Path, size: u64, s: &FileStats) {
    outln!(
        "{}: {}, {}, {} written ({} bytes), size {}",
        path.display(),
        plural(s.writers.len() as u64, "writer", "writers"),
        plural(s.writes, "write", "writes"),
        human_iec(s.bytes),
        s.bytes,
        human_iec(size)
    );
    let mut pat = s.pattern.name().to_string();
    if let Some(r) = s.record_size {
        pat.push_str(&format!(", record {r}"));
    }
    if let Some(st) = s.stride {
        pat.push_str(&format!(", stride {st}"));
    }
    pat.push_str(&format!(", overlap {} bytes", s.overlap_bytes));
    outln!("pattern   {pat}");
    match (s.span_s(), s.bandwidth_mibs(), s.first_ns) {
        (Some(span), Some(bw), Some(t0)) => outln!(
            "span      {span:.3} s from {} (local time), {bw:.1} MiB/s",
            crate::util::format_time_local(t0 as i64)
        ),
        _ => outln!("span      - (fewer than two points in time)"),
    }
    outln!("sizes     {}", sizes_text(&s.sizes, 5));
    outln!(
        "{:<8}  {:<12} {:>6} {:>7} {:>8} {:>8} {:>8}  {}",
        "writer",
        "host",
        "rank",
        "writes",
        "bytes",
        "first s",
        "last s",
        "sizes"
    );
    for w in &s.writers {
        let host: String = w.host.chars().take(12).collect();
        outln!(
            "{:<8}  {:<12} {:>6} {:>7} {:>8} {:>8} {:>8}  {}",
            format!("{:016x}", w.writer_id)[..8].to_string(),
            host,
            w.pid,
            w.writes,
            human_iec(w.bytes),
            rel_s(w.first_ns, s.first_ns),
            rel_s(w.last_ns, s.first_ns),
            sizes_text(&w.sizes, 1)
        );
    }
}

/// The failure for a file `plfs stats` cannot characterise.
fn not_n1(path: &Path, what: &str) -> anyhow::Error {
    Failure::new(
        path,
        22,
        format!(
            "{}: {what}, not an N-1 file: `plfs stats` reads the index of N-1 files",
            path.display()
        ),
    )
    .into()
}

/// The characterisation of one file, or why there is none.
fn file_stats(plfs: &Plfs, path: &Path) -> Result<FileStats> {
    match plfs.storage(path).at("cannot read", path)? {
        Storage::Container(_) | Storage::Legacy(_) => {}
        Storage::Plain(_) => return Err(not_n1(path, "a plain (N-N) file")),
        Storage::Symlink(_) => return Err(not_n1(path, "a symbolic link")),
        _ => return Err(not_n1(path, "a packed (1-N) file")),
    }
    let ws = tools::writes(plfs, path).at("cannot read the index of", path)?;
    Ok(analyze(&ws))
}

/// One directory's files, summed.
#[derive(Debug, Default)]
struct DirSum {
    files: u64,
    other: u64,
    bytes: u64,
    writes: u64,
    writers: u64,
    hosts: HashSet<String>,
    patterns: BTreeMap<&'static str, u64>,
    first_ns: Option<u64>,
    end_ns: Option<u64>,
}

impl DirSum {
    fn add(&mut self, s: &FileStats) {
        self.files += 1;
        self.bytes += s.bytes;
        self.writes += s.writes;
        self.writers += s.writers.len() as u64;
        self.hosts.extend(s.writers.iter().map(|w| w.host.clone()));
        *self.patterns.entry(s.pattern.name()).or_default() += 1;
        self.first_ns = self.first_ns.into_iter().chain(s.first_ns).min();
        self.end_ns = self.end_ns.into_iter().chain(s.end_ns).max();
    }

    fn json(&self, path: &Path) -> Value {
        json!({
            "path": path.display().to_string(), "files": self.files, "other_files": self.other,
            "bytes": self.bytes, "writes": self.writes, "writers": self.writers,
            "hosts": self.hosts.len(), "patterns": self.patterns,
            "first_ns": self.first_ns, "end_ns": self.end_ns,
        })
    }
}

struct Walk<'a> {
    plfs: &'a Plfs,
    dirs: Vec<(PathBuf, DirSum)>,
    failed: bool,
}

impl Walk<'_> {
    /// Sums the files of directory `path`, then visits its subdirectories.
    fn visit(&mut self, path: &Path) -> Result<()> {
        let entries = self.plfs.readdir(path).at("cannot read directory", path)?;
        let mut sum = DirSum::default();
        let mut subdirs = Vec::new();
        for e in entries {
            let p = path.join(&e.name);
            match e.kind {
                FileKind::Dir => subdirs.push(p),
                FileKind::Symlink => sum.other += 1,
                FileKind::File => match self.plfs.storage(&p).at("cannot read", &p)? {
                    Storage::Container(_) | Storage::Legacy(_) => match file_stats(self.plfs, &p) {
                        Ok(s) => sum.add(&s),
                        Err(err) => {
                            crate::fail::report(&err, crate::out::EXIT_FAILURE);
                            self.failed = true;
                        }
                    },
                    _ => sum.other += 1,
                },
            }
        }
        self.dirs.push((path.to_path_buf(), sum));
        subdirs.sort();
        for d in subdirs {
            if let Err(err) = self.visit(&d) {
                crate::fail::report(&err, crate::out::EXIT_FAILURE);
                self.failed = true;
            }
        }
        Ok(())
    }
}

/// The pattern the directory's files share, `mixed` if they differ, `-` without files.
fn patterns_text(p: &BTreeMap<&'static str, u64>) -> &'static str {
    match p.len() {
        0 => "-",
        1 => p.keys().next().copied().unwrap_or("-"),
        _ => "mixed",
    }
}

fn print_dirs(dirs: &[(PathBuf, DirSum)]) {
    outln!(
        "{:>6} {:>7} {:>8} {:>8} {:>8}  {:<10}  directory",
        "files",
        "writers",
        "writes",
        "bytes",
        "MiB/s",
        "patterns"
    );
    for (p, d) in dirs {
        let bw = match (d.first_ns, d.end_ns) {
            (Some(a), Some(b)) if b > a => format!("{:.1}", d.bytes as f64 / 1048576.0 / ((b - a) as f64 / 1e9)),
            _ => "-".into(),
        };
        outln!(
            "{:>6} {:>7} {:>8} {:>8} {:>8}  {:<10}  {}",
            d.files,
            d.writers,
            d.writes,
            human_iec(d.bytes),
            bw,
            patterns_text(&d.patterns),
            p.display()
        );
    }
}

/// Runs `plfs stats`.
pub fn stats(cli: &Globals, a: &StatsArgs) -> Result<()> {
    let plfs = open_plfs(cli)?;
    let path = absolute(&a.path)?;
    require_plfs_path(&plfs, &path)?;
    let st = plfs.stat(&path).at("cannot stat", &path)?;
    if st.kind != FileKind::Dir {
        let s = file_stats(&plfs, &path)?;
        if crate::out::json_mode() {
            crate::out::json(&file_json(&path, st.size, &s));
        } else {
            print_file(&path, st.size, &s);
        }
        return Ok(());
    }
    let mut w = Walk {
        plfs: &plfs,
        dirs: Vec::new(),
        failed: false,
    };
    w.visit(&path)?;
    if crate::out::json_mode() {
        let dirs: Vec<Value> = w.dirs.iter().map(|(p, d)| d.json(p)).collect();
        crate::out::json(&json!({ "path": path.display().to_string(), "directories": dirs }));
    } else {
        print_dirs(&w.dirs);
    }
    if w.failed {
        return Err(Reported.into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels() {
        assert_eq!(pow2_label(0), "1");
        assert_eq!(pow2_label(9), "512");
        assert_eq!(pow2_label(15), "32K");
        assert_eq!(pow2_label(20), "1M");
        assert_eq!(bucket_label(15), "32K-64K");
        assert_eq!(bucket_label(-1), "0");
        let h: Histogram = vec![(3, 1), (15, 40), (20, 2)];
        assert_eq!(sizes_text(&h, 1), "32K-64K:40 +2");
        assert_eq!(sizes_text(&h, 5), "32K-64K:40 1M-2M:2 8-16:1");
        assert_eq!(analyze::Kind::Segmented.name(), "segmented");
    }
}
