//! File-name grammars of a container's logs and `meta/` droppings (docs/format.md §3 and §5),
//! the placement hash, and the stat rule over droppings.

/// Name of a writer's data log: `data.<writer_id hex16>.<pid>.<host>`.
pub fn data_log_name(writer_id: u64, pid: u32, host: &str) -> String {
    format!("data.{writer_id:016x}.{pid}.{host}")
}

/// Name of a writer's index log: `index.<writer_id hex16>.<pid>.<host>`.
pub fn index_log_name(writer_id: u64, pid: u32, host: &str) -> String {
    format!("index.{writer_id:016x}.{pid}.{host}")
}

/// Name of a container's id dropping in `meta/`: `cid.<container id hex32>`.
pub fn cid_dropping_name(cid: u128) -> String {
    format!("cid.{cid:032x}")
}

/// The container id of a `cid.<hex>` dropping name; `None` for any other name.
pub fn parse_cid_dropping(name: &str) -> Option<u128> {
    name.strip_prefix("cid.").and_then(|h| u128::from_str_radix(h, 16).ok())
}

/// Parsed name of a data or index log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogName {
    /// True for an index log, false for a data log.
    pub is_index: bool,
    /// Writer id.
    pub writer_id: u64,
    /// Writer pid.
    pub pid: u32,
    /// Writer host.
    pub host: String,
}

/// Parses `data.<id>.<pid>.<host>` or `index.<id>.<pid>.<host>`; `None` for any other name.
pub fn parse_log_name(name: &str) -> Option<LogName> {
    let (is_index, writer_id, pid, host) = split_log_name(name)?;
    Some(LogName {
        is_index,
        writer_id,
        pid,
        host: host.to_string(),
    })
}

/// Of a name [`parse_log_name`] accepts, whether it is an index log and its writer id, without
/// copying the host: what a listing's judgement and the fast stat ask of every log in it.
pub fn log_writer_of(name: &str) -> Option<(bool, u64)> {
    split_log_name(name).map(|(is_index, writer_id, _, _)| (is_index, writer_id))
}

/// The fields of a log's name: (is an index log, writer id, pid, host).
fn split_log_name(name: &str) -> Option<(bool, u64, u32, &str)> {
    let (is_index, rest) = if let Some(r) = name.strip_prefix("index.") {
        (true, r)
    } else if let Some(r) = name.strip_prefix("data.") {
        (false, r)
    } else {
        return None;
    };
    let mut it = rest.splitn(3, '.');
    let id = it.next()?;
    let pid = it.next()?;
    let host = it.next()?;
    if id.len() != 16 || host.is_empty() {
        return None;
    }
    Some((is_index, u64::from_str_radix(id, 16).ok()?, pid.parse().ok()?, host))
}

/// A metadata dropping in `meta/`, encoded entirely in its (zero-length) file's name so that stat
/// of a closed container is one `readdir` and no open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetaDropping {
    /// `open.<writer_id hex16>.<pid>.<host>`: a writer has the file open.
    Open {
        /// Writer id.
        writer_id: u64,
        /// Writer pid.
        pid: u32,
        /// Writer host.
        host: String,
    },
    /// `close.<writer_id hex16>.<open_ts>.<close_ts>.<eof>.<bytes>.<mtime_ns>`: a writer closed.
    /// `eof` is the end of the highest byte it wrote (0 if none), `bytes` the bytes it wrote.
    Close {
        /// Writer id.
        writer_id: u64,
        /// Timestamp (clock of [`crate::clock`]) taken at open.
        open_ts: u64,
        /// Timestamp taken at close.
        close_ts: u64,
        /// Highest written end offset.
        eof: u64,
        /// Bytes written.
        bytes: u64,
        /// Modification time of the last write, ns since the epoch.
        mtime_ns: u64,
    },
    /// `trunc.<ts>.<size>.<writer_id hex16>`: the file was truncated to `size` at `ts`.
    Trunc {
        /// Timestamp of the truncate.
        ts: u64,
        /// New size.
        size: u64,
        /// Id of the truncating handle (random for path truncates); makes the name unique.
        writer_id: u64,
    },
}

impl MetaDropping {
    /// The file name of this dropping.
    pub fn name(&self) -> String {
        match self {
            MetaDropping::Open { writer_id, pid, host } => format!("open.{writer_id:016x}.{pid}.{host}"),
            MetaDropping::Close {
                writer_id,
                open_ts,
                close_ts,
                eof,
                bytes,
                mtime_ns,
            } => {
                format!("close.{writer_id:016x}.{open_ts}.{close_ts}.{eof}.{bytes}.{mtime_ns}")
            }
            MetaDropping::Trunc { ts, size, writer_id } => format!("trunc.{ts}.{size}.{writer_id:016x}"),
        }
    }

    /// Parses a dropping name; `None` for names that are not droppings.
    pub fn parse(name: &str) -> Option<MetaDropping> {
        if let Some(r) = name.strip_prefix("open.") {
            let mut it = r.splitn(3, '.');
            let id = it.next()?;
            let pid = it.next()?.parse().ok()?;
            let host = it.next()?.to_string();
            if id.len() != 16 || host.is_empty() {
                return None;
            }
            return Some(MetaDropping::Open {
                writer_id: u64::from_str_radix(id, 16).ok()?,
                pid,
                host,
            });
        }
        if let Some(r) = name.strip_prefix(crate::CLOSE_PREFIX) {
            let f: [&str; 6] = fields(r)?;
            if f[0].len() != 16 {
                return None;
            }
            return Some(MetaDropping::Close {
                writer_id: u64::from_str_radix(f[0], 16).ok()?,
                open_ts: f[1].parse().ok()?,
                close_ts: f[2].parse().ok()?,
                eof: f[3].parse().ok()?,
                bytes: f[4].parse().ok()?,
                mtime_ns: f[5].parse().ok()?,
            });
        }
        if let Some(r) = name.strip_prefix("trunc.") {
            let f: [&str; 3] = fields(r)?;
            if f[2].len() != 16 {
                return None;
            }
            return Some(MetaDropping::Trunc {
                ts: f[0].parse().ok()?,
                size: f[1].parse().ok()?,
                writer_id: u64::from_str_radix(f[2], 16).ok()?,
            });
        }
        None
    }
}

/// The `N` fields of `r` separated by dots, `None` unless there are exactly `N` (as
/// `r.split('.')` would give them, without collecting them: a stat parses every dropping of the
/// file's listing, thousands for a file that as many processes wrote).
fn fields<const N: usize>(r: &str) -> Option<[&str; N]> {
    let mut out = [""; N];
    let mut it = r.split('.');
    for slot in &mut out {
        *slot = it.next()?;
    }
    it.next().is_none().then_some(out)
}

/// Hash used to pick a canonical backend (of a logical path), a shadow backend and a hostdir
/// (of a host name): 64-bit FNV-1a. Pinned by a test: changing it moves existing containers.
pub fn hash_str(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in s.as_bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The droppings among the names of a `meta/` listing. Unknown names are skipped (fsck reports
/// them).
pub fn parse_droppings(names: &[std::ffi::OsString]) -> Vec<MetaDropping> {
    names
        .iter()
        .filter_map(|n| n.to_str().and_then(MetaDropping::parse))
        .collect()
}

/// Size and mtime of a closed container from its droppings (the fast stat path, §5). `None`
/// when the droppings cannot decide (a writer is open, or a writer's session straddles a
/// truncate), or when a size in a name is beyond any file size (`off_t`): names are not trusted,
/// the index decides.
pub fn fast_size(droppings: &[MetaDropping]) -> Option<(u64, u64)> {
    const MAX: u64 = i64::MAX as u64;
    let mut last_trunc: Option<(u64, u64)> = None;
    for d in droppings {
        match d {
            MetaDropping::Open { .. } => return None,
            MetaDropping::Trunc { size, .. } | MetaDropping::Close { eof: size, .. } if *size > MAX => return None,
            MetaDropping::Trunc { ts, size, .. } => {
                if last_trunc.is_none_or(|(t, _)| *ts > t) {
                    last_trunc = Some((*ts, *size));
                }
            }
            MetaDropping::Close { .. } => {}
        }
    }
    let (tts, mut size) = last_trunc.unwrap_or((0, 0));
    let mut mtime = tts;
    for d in droppings {
        if let MetaDropping::Close {
            open_ts,
            close_ts,
            eof,
            mtime_ns,
            ..
        } = d
        {
            if *close_ts < tts {
                continue; // wholly before the last truncate: superseded by it
            }
            if *open_ts < tts {
                return None; // straddles the truncate: only the index can tell
            }
            size = size.max(*eof);
            mtime = mtime.max(*mtime_ns);
        }
    }
    Some((size, mtime))
}

/// [`fast_size`] of a container from a listing of the directory holding its droppings: `None`
/// also when an index log in the listing (a one-directory container's) has no open or close
/// dropping of its writer. A writer makes its open dropping before its logs and removes it after
/// its close dropping, so such a log is one whose dropping the listing missed (a distributed file
/// system can return a listing without some entries), or an empty one (its writer wrote
/// nothing): the index decides (format.md §5).
pub fn fast_size_of_listing(names: &[std::ffi::OsString]) -> Option<(u64, u64)> {
    let droppings = parse_droppings(names);
    // A set, not a search of the droppings per log: a file written by thousands of ranks has
    // thousands of each, and this runs at every stat of it.
    let noted: std::collections::HashSet<u64> = droppings
        .iter()
        .filter_map(|d| match *d {
            MetaDropping::Open { writer_id, .. } | MetaDropping::Close { writer_id, .. } => Some(writer_id),
            MetaDropping::Trunc { .. } => None,
        })
        .collect();
    let unnoted = names
        .iter()
        .filter_map(|n| n.to_str().and_then(log_writer_of))
        .any(|(is_index, writer_id)| is_index && !noted.contains(&writer_id));
    if unnoted {
        return None;
    }
    fast_size(&droppings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_logs_writer_is_read_from_the_names_its_full_parse_accepts_and_no_other() {
        let names = [
            "index.00000000000000ff.12.host",
            "data.00000000000000ff.12.host.with.dots",
            "index.00000000000000FF.12.h",
            "data.0000000000000ff.12.host",
            "data.00000000000000ff.x.host",
            "data.00000000000000ff.12.",
            "data.00000000000000ff.12",
            "index.zz000000000000ff.1.h",
            "close.00000000000000ff.1.2.3.4.5",
            "index.",
            "",
        ];
        for n in names {
            let full = parse_log_name(n).map(|l| (l.is_index, l.writer_id));
            assert_eq!(log_writer_of(n), full, "{n}");
        }
        assert_eq!(log_writer_of(names[0]), Some((true, 0xff)));
    }

    #[test]
    fn a_listing_keeps_its_droppings_and_skips_every_other_name() {
        use std::os::unix::ffi::OsStringExt;
        let close = MetaDropping::Close {
            writer_id: 3,
            open_ts: 1,
            close_ts: 2,
            eof: 3,
            bytes: 4,
            mtime_ns: 5,
        };
        let names = [
            std::ffi::OsString::from(cid_dropping_name(7)),
            close.name().into(),
            "close.zz".into(),
            std::ffi::OsString::from_vec(b"open.\xff".to_vec()),
            ".tmp.x".into(),
        ];
        assert_eq!(parse_droppings(&names), vec![close]);
    }

    #[test]
    fn fast_size_rules() {
        let close = |o, c, eof| MetaDropping::Close {
            writer_id: 1,
            open_ts: o,
            close_ts: c,
            eof,
            bytes: eof,
            mtime_ns: c,
        };
        let trunc = |ts, size| MetaDropping::Trunc { ts, size, writer_id: 2 };
        assert_eq!(fast_size(&[]), Some((0, 0)));
        assert_eq!(fast_size(&[close(1, 2, 10), close(3, 4, 30)]), Some((30, 4)));
        assert_eq!(fast_size(&[close(1, 2, 10), trunc(5, 3)]), Some((3, 5)));
        assert_eq!(fast_size(&[close(1, 2, 10), trunc(5, 3), close(6, 7, 4)]), Some((4, 7)));
        assert_eq!(fast_size(&[close(1, 6, 10), trunc(5, 3)]), None);
        assert_eq!(
            fast_size(&[MetaDropping::Open {
                writer_id: 1,
                pid: 1,
                host: "h".into()
            }]),
            None
        );
    }

    #[test]
    fn an_index_log_without_a_dropping_of_its_writer_leaves_the_size_to_the_index() {
        let names = |l: &[&str]| l.iter().map(std::ffi::OsString::from).collect::<Vec<_>>();
        let close = "close.0000000000000001.1.2.10.10.2";
        let index = "index.0000000000000001.7.h";
        let other = "index.0000000000000002.7.h";
        assert_eq!(fast_size_of_listing(&names(&[close, index])), Some((10, 2)));
        assert_eq!(fast_size_of_listing(&names(&[close, index, other])), None);
        assert_eq!(fast_size_of_listing(&names(&[index])), None);
        let open = "open.0000000000000002.7.h";
        assert_eq!(fast_size_of_listing(&names(&[close, index, other, open])), None);
        // Data logs alone (a compaction's retired ones) say nothing.
        assert_eq!(
            fast_size_of_listing(&names(&[close, index, "data.0000000000000003.7.h"])),
            Some((10, 2))
        );
    }
}
