//! The formats of the original PLFS 2.x (2.0 to 2.5.1), read (never written) by this library:
//! the names inside an N-1 container (the access file, `version-tag.*`, `hostdir.<N>`,
//! `dropping.{data,index}.<sec>.<usec>.<host>.<pid>`, the `meta/` droppings), the text of a
//! metalink ([`parse_metalink`]), the 48-byte index records and `global.index` ([`records`]) and
//! the logs of a 1-N directory ([`small`]). docs/format.md, "Legacy formats read", describes them.
//! Every number in a name is checked; a name that does not parse is `None`; a record that cannot
//! be right is a corruption error naming its file.

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

pub mod records;
pub mod small;

/// The file whose presence makes a directory a PLFS 2.x container (`ACCESSFILE`); its inode holds
/// the logical file's mode, owner and times.
pub const ACCESS_NAME: &str = ".plfsaccess113918400";
/// Metadata droppings directory.
pub const META_DIR: &str = "meta";
/// Hostdir prefix: `hostdir.<N>`.
pub const HOSTDIR_PREFIX: &str = "hostdir.";
/// The flattened index written by `plfs_flatten_index`.
pub const GLOBAL_INDEX: &str = "global.index";
/// Prefix of the empty file naming the release and data version that created the container.
pub const VERSION_TAG_PREFIX: &str = "version-tag.";
/// Extended attributes directory (one file per key).
pub const XATTRS_DIR: &str = "xattrs";
/// Index log prefix.
pub const INDEX_PREFIX: &str = "dropping.index.";
/// Data log prefix.
pub const DATA_PREFIX: &str = "dropping.data.";
/// Open-for-write record prefix in `meta/`.
pub const OPEN_PREFIX: &str = "open.";

/// The directory PLFS 2.x used for open records before 2.0 (folded into `meta/` since).
pub const OPENHOSTS_DIR: &str = "openhosts";

/// Whether `name` can be a directory inside a PLFS 2.x container (`meta`, `hostdir.<N>`,
/// `xattrs`, `openhosts`).
pub fn is_container_subdir(name: &[u8]) -> bool {
    name == META_DIR.as_bytes()
        || name == XATTRS_DIR.as_bytes()
        || name == OPENHOSTS_DIR.as_bytes()
        || name.starts_with(HOSTDIR_PREFIX.as_bytes())
}

/// Whether `name` can be an entry of a PLFS 2.x container: lets a look-up tell, without a system
/// call, which paths may go through a legacy file (only those are checked for one).
pub fn is_container_entry(name: &[u8]) -> bool {
    is_container_subdir(name)
        || name == ACCESS_NAME.as_bytes()
        || name == GLOBAL_INDEX.as_bytes()
        || name.starts_with(VERSION_TAG_PREFIX.as_bytes())
}

fn decimal(s: &str) -> Option<u64> {
    if s.is_empty() || s.len() > 19 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// A number that must fit an `off_t` (the original wrote them from signed 64-bit values).
fn off_t(s: &str) -> Option<u64> {
    decimal(s).filter(|&v| v <= i64::MAX as u64)
}

/// A pid: a non-negative `pid_t`.
fn pid(s: &str) -> Option<u32> {
    decimal(s).filter(|&v| v <= i32::MAX as u64).map(|v| v as u32)
}

/// A host name as it appears in a name: non-empty, no `/`, no NUL.
fn host(s: &str) -> Option<&str> {
    (!s.is_empty() && !s.contains(['/', '\0'])).then_some(s)
}

/// `hostdir.<N>` → N.
pub fn parse_hostdir(name: &str) -> Option<u32> {
    decimal(name.strip_prefix(HOSTDIR_PREFIX)?)
        .filter(|&v| v <= u32::MAX as u64)
        .map(|v| v as u32)
}

/// A parsed data or index dropping name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropping {
    /// True for `dropping.index.*`, false for `dropping.data.*`.
    pub is_index: bool,
    /// `<sec>.<usec>.<host>` exactly as in the name (the open time and host of the writer).
    pub stamp: String,
    /// The host part of the stamp.
    pub host: String,
    /// The trailing pid.
    pub pid: u32,
}

impl Dropping {
    /// Parses `dropping.{data,index}.<sec>.<usec>.<host>.<pid>` (the host may contain dots).
    pub fn parse(name: &str) -> Option<Dropping> {
        let (is_index, rest) = match name.strip_prefix(INDEX_PREFIX) {
            Some(r) => (true, r),
            None => (false, name.strip_prefix(DATA_PREFIX)?),
        };
        let (stamp, p) = rest.rsplit_once('.')?;
        let mut it = stamp.splitn(3, '.');
        decimal(it.next()?)?;
        decimal(it.next()?)?;
        let h = host(it.next()?)?;
        Some(Dropping {
            is_index,
            stamp: stamp.to_string(),
            host: h.to_string(),
            pid: pid(p)?,
        })
    }

    /// The data log that records of this index log written by `pid` point into (the original's
    /// `indexpath2chunkpath`: same stamp, the record's pid).
    pub fn data_name_for(&self, pid: u32) -> String {
        format!("{DATA_PREFIX}{}.{pid}", self.stamp)
    }
}

/// A parsed `meta/` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Meta {
    /// `open.<host>.<pid>`: a writer on `host` has (or had, if it crashed) the file open.
    Open {
        /// Host.
        host: String,
        /// Pid.
        pid: u32,
    },
    /// `<last_offset>.<total_bytes>.<sec>.<usec>.<host>`, left at every close of a writer.
    Size {
        /// End of file as that writer (or, under MPI, the job) saw it.
        last_offset: u64,
        /// Bytes written.
        bytes: u64,
        /// Close time, seconds.
        sec: u64,
        /// Close time, microseconds (not zero-padded).
        usec: u64,
        /// Host.
        host: String,
    },
}

impl Meta {
    /// Parses a `meta/` entry name.
    pub fn parse(name: &str) -> Option<Meta> {
        if let Some(rest) = name.strip_prefix(OPEN_PREFIX) {
            let (h, p) = rest.rsplit_once('.')?;
            return Some(Meta::Open {
                host: host(h)?.to_string(),
                pid: pid(p)?,
            });
        }
        let mut it = name.splitn(5, '.');
        let last_offset = off_t(it.next()?)?;
        let bytes = off_t(it.next()?)?;
        let sec = decimal(it.next()?)?;
        let usec = decimal(it.next()?)?;
        if usec >= 1_000_000 {
            return None;
        }
        Some(Meta::Size {
            last_offset,
            bytes,
            sec,
            usec,
            host: host(it.next()?)?.to_string(),
        })
    }
}

/// The release and data version in `version-tag.<release>-dat.<data>-chk.<n>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionTag {
    /// The PLFS release that created the container, e.g. `2.5.1`.
    pub release: String,
    /// The data format version, e.g. `1.0`.
    pub data: String,
}

impl VersionTag {
    /// Parses a version-tag file name.
    pub fn parse(name: &str) -> Option<VersionTag> {
        let rest = name.strip_prefix(VERSION_TAG_PREFIX)?;
        let (release, rest) = rest.split_once("-dat.")?;
        let data = rest.split_once("-chk.").map_or(rest, |(d, _)| d);
        let ok = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit() || b == b'.');
        (ok(release) && ok(data)).then(|| VersionTag {
            release: release.to_string(),
            data: data.to_string(),
        })
    }
}

/// Longest metalink text the original wrote (`METALINK_MAX`).
const METALINK_MAX: usize = 2048;

/// The backend a metalink names. A metalink is a hostdir slot of a canonical container that is a
/// symbolic link whose text is `<length><backend spec>`, e.g. `23/pana/volume12/.plfs_store`: the
/// length of the canonical backend's path, then the shadow backend (an optional `posix:` prefix
/// and its path); the hostdir then lives at `<shadow>/<container path>/hostdir.N`. Returns the
/// backend path, not yet checked against the configuration (the reader does that).
pub fn parse_metalink(link: &Path, text: &[u8]) -> Result<PathBuf> {
    let bad = |why: &str| Error::corrupt(link, format!("metalink: {why}"));
    if text.is_empty() || text.len() > METALINK_MAX {
        return Err(bad("empty or too long"));
    }
    let digits = text.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || digits > 6 {
        return Err(bad("does not start with the canonical backend's length"));
    }
    let spec = std::str::from_utf8(&text[digits..]).map_err(|_| bad("not UTF-8"))?;
    let spec = spec.strip_prefix("posix:").unwrap_or(spec);
    if !spec.starts_with('/') || spec.contains('\0') {
        return Err(bad(&format!("{spec:?} is not a local backend path")));
    }
    Ok(PathBuf::from(spec))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn droppings() {
        let d = Dropping::parse("dropping.index.1795406057.516889.vm.ex.13947").unwrap();
        assert!(d.is_index);
        assert_eq!(
            (d.stamp.as_str(), d.host.as_str(), d.pid),
            ("1795406057.516889.vm.ex", "vm.ex", 13947)
        );
        assert_eq!(d.data_name_for(7), "dropping.data.1795406057.516889.vm.ex.7");
        assert!(!Dropping::parse("dropping.data.1.2.h.3").unwrap().is_index);
        for bad in [
            "dropping.index.1.2.h",
            "dropping.index.x.2.h.3",
            "dropping.index.1.2..3",
            "dropping.index.1.2.h.-3",
            "dropping.index.1.2.h.99999999999",
            "dropping.other.1.2.h.3",
        ] {
            assert_eq!(Dropping::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn meta_and_tags() {
        assert_eq!(
            Meta::parse("40.13.1795317045.5882.vm.a"),
            Some(Meta::Size {
                last_offset: 40,
                bytes: 13,
                sec: 1795317045,
                usec: 5882,
                host: "vm.a".into()
            })
        );
        assert_eq!(
            Meta::parse("open.vm.x.12"),
            Some(Meta::Open {
                host: "vm.x".into(),
                pid: 12
            })
        );
        assert_eq!(Meta::parse("99999999999999999999.1.1.1.h"), None);
        assert_eq!(Meta::parse("9223372036854775808.1.1.1.h"), None);
        assert_eq!(Meta::parse("1.1.1.1000000.h"), None);
        assert_eq!(Meta::parse("1.1.1.1"), None);
        assert_eq!(parse_hostdir("hostdir.23"), Some(23));
        assert_eq!(parse_hostdir("hostdir.x"), None);
        assert_eq!(
            VersionTag::parse("version-tag.2.5.1-dat.1.0-chk.2510331044"),
            Some(VersionTag {
                release: "2.5.1".into(),
                data: "1.0".into()
            })
        );
        assert_eq!(VersionTag::parse("version-tag.x-dat.1.0"), None);
    }

    #[test]
    fn metalink_text() {
        let l = Path::new("/b/f/hostdir.3");
        assert_eq!(
            parse_metalink(l, b"23/pana/volume12/.plfs_store").unwrap(),
            Path::new("/pana/volume12/.plfs_store")
        );
        assert_eq!(parse_metalink(l, b"5posix:/s").unwrap(), Path::new("/s"));
        assert!(parse_metalink(l, b"/s").is_err());
        assert!(parse_metalink(l, b"5hdfs://h:1/s").is_err());
        assert!(parse_metalink(l, b"").is_err());
    }

    /// Random and mutated inputs never panic any decoder (the fuzz target `legacy_formats` does
    /// the same at length).
    #[test]
    fn decoders_never_panic() {
        let p = Path::new("t");
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let valid_entry = records::encode_entry(&records::HostEntry {
            logical: 10,
            physical: 0,
            length: 5,
            begin_ts: 1.0,
            end_ts: 2.0,
            id: 3,
            extra: 0,
        });
        let valid_name = small::encode_name(small::ops::RENAME, 7, &["a", "b"]);
        for round in 0..3000 {
            let len = (next() % 200) as usize;
            let mut b: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            if round % 3 == 0 {
                let mut g = ((len / 48) as u64).to_le_bytes().to_vec();
                g.extend_from_slice(&valid_entry);
                g.extend_from_slice(&b);
                b = g;
            } else if round % 3 == 1 {
                let mut v = valid_name.clone();
                let i = (next() as usize) % v.len();
                v[i] = next() as u8;
                b = v;
            }
            let _ = records::decode_index_log(p, &b);
            let _ = records::decode_global(p, &b);
            let _ = small::decode_names(p, &b);
            let _ = small::decode_small_index(p, &b);
            let _ = parse_metalink(p, &b);
            let _ = crate::xattr::decode(p, &b);
            let s = String::from_utf8_lossy(&b);
            let _ = Dropping::parse(&s);
            let _ = Meta::parse(&s);
            let _ = VersionTag::parse(&s);
        }
    }
}
