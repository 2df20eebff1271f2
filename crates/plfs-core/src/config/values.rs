//! Helpers of the plfsrc loader: the pairs of a mapping, paths, backend locations and the keys.

use super::*;
use std::rc::Rc;

/// One `key: value` pair of a mapping whose keys are strings.
#[derive(Clone, Copy)]
pub(super) struct Pair<'a> {
    /// The key.
    pub(super) name: &'a str,
    /// The key's node (for its line).
    pub(super) key: &'a Node,
    pub(super) value: &'a Node,
}

/// The pairs of a mapping, in order; Err with the first key that is not a string.
pub(super) fn string_keys(m: &[(Rc<Node>, Rc<Node>)]) -> std::result::Result<Vec<Pair<'_>>, &Node> {
    m.iter()
        .map(|(k, v)| k.as_str().map(|name| Pair { name, key: k, value: v }).ok_or(&**k))
        .collect()
}

/// Expands a leading `~` or `~/` with `$HOME`.
pub(super) fn expand_tilde(s: &str) -> std::result::Result<PathBuf, String> {
    if s != "~" && !s.starts_with("~/") {
        return Ok(PathBuf::from(s));
    }
    let Some(mut home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) else {
        return Err(format!("{s:?} starts with ~ but $HOME is not set"));
    };
    if let Some(rest) = s.strip_prefix("~/") {
        home.push("/");
        home.push(rest);
    }
    Ok(PathBuf::from(home))
}

/// An absolute path (after `~` expansion), lexically normalised.
pub(super) fn abs_path(s: &str) -> std::result::Result<PathBuf, String> {
    if s.is_empty() {
        return Err("empty path; expected an absolute path".into());
    }
    let p = expand_tilde(s)?;
    normalize_path(&p).ok_or_else(|| format!("{s:?} is not an absolute path"))
}

/// A backend location: `posix://` / `posix:` prefixes are stripped, other URL-like schemes are
/// rejected, and the rest must be an absolute directory.
pub(super) fn location(raw: &str) -> std::result::Result<PathBuf, String> {
    let rest = if let Some(r) = raw.strip_prefix("posix://") {
        r
    } else if let Some(r) = raw.strip_prefix("posix:") {
        r
    } else {
        if let Some((scheme, _)) = raw.split_once(':') {
            let scheme_like = !scheme.is_empty()
                && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
            if scheme_like {
                return Err(format!(
                    "backend type \"{scheme}\" (in {raw:?}) is not supported; only POSIX directories \
                     (a plain path, posix:// or posix:) are"
                ));
            }
        }
        raw
    };
    abs_path(rest).map_err(|m| if rest == raw { m } else { format!("{m} (in {raw:?})") })
}

/// The keys that start an entry.
pub(super) const ENTRY_KEYS: &[&str] = &["global_params", "include", "mount_point"];

/// Keys of a mount_point entry that have an effect.
pub(super) const MOUNT_KEYS: &[&str] = &["mount_point", "workload", "backends"];

/// Keys of a backends entry.
pub(super) const BACKEND_KEYS: &[&str] = &["location", "type"];

/// Keys of global_params that are read (the last five are accepted for compatibility, their
/// values checked, with no effect).
pub(super) const GLOBAL_KEYS: &[&str] = &[
    "num_hostdirs",
    "container_format",
    "threadpool_size",
    "index_buffer_records",
    "max_open_data_logs",
    "data_checksums",
    "index_compression",
    "auto_compaction",
    "compaction_dead_ratio",
    "compaction_min_bytes",
    "lazy_stat",
    "lazy_droppings",
    "compress_contiguous",
    "index_buffer_mbs",
    "read_buffer_mbs",
];

/// Every key a plfsrc may hold, as (where, key): `entry` for the keys that start an entry,
/// `global_params`, `mount_point` and `backends` for the keys inside one. Keys accepted for
/// compatibility with no effect are included. For documentation (plfsrc(5)) and its checks.
pub fn known_keys() -> Vec<(&'static str, &'static str)> {
    let mut v = Vec::new();
    for (section, keys) in [
        ("entry", ENTRY_KEYS),
        ("global_params", GLOBAL_KEYS),
        ("global_params", IGNORED_GLOBAL_KEYS),
        ("mount_point", MOUNT_KEYS),
        ("mount_point", IGNORED_MOUNT_KEYS),
        ("backends", BACKEND_KEYS),
    ] {
        v.extend(keys.iter().map(|k| (section, *k)));
    }
    v
}

/// `; did you mean "x"?` when a known key is within a small edit distance of `k` (a typo), else
/// nothing.
pub(crate) fn did_you_mean(k: &str, known: &[&str]) -> String {
    let limit = (k.chars().count() / 3).clamp(1, 3);
    known
        .iter()
        .map(|c| (edit_distance(k, c), *c))
        .filter(|&(d, _)| d <= limit)
        .min()
        .map_or_else(String::new, |(_, c)| format!("; did you mean \"{c}\"?"))
}

/// Levenshtein distance (ASCII-case-insensitive).
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().map(|c| c.to_ascii_lowercase()).collect();
    let b: Vec<char> = b.chars().map(|c| c.to_ascii_lowercase()).collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != cb)).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}
