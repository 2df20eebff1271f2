//! Helpers shared by the subcommands: loading the configuration, making paths absolute, parsing
//! sizes, and formatting modes, times and byte counts.

use crate::globals::Globals;
use anyhow::{Context, Result};
use plfs_core::config::normalize_path;
use plfs_core::{Config, Plfs};
use std::path::{Path, PathBuf};

/// Buffer size for every bulk copy (cat, import, export, the demo's reads).
pub const BUF_SIZE: usize = 4 << 20;

/// Loads the configuration: `--config FILE` if given, else [`Config::load`].
pub fn load_config(cli: &Globals) -> Result<Config> {
    match &cli.config {
        Some(f) => Config::from_file(f).with_context(|| format!("loading configuration {}", f.display())),
        None => Config::load().context("loading configuration"),
    }
}

/// Loads the configuration and builds a PLFS instance.
pub fn open_plfs(cli: &Globals) -> Result<Plfs> {
    let cfg = load_config(cli)?;
    crate::fail::set_backends(
        cfg.mounts
            .iter()
            .flat_map(|m| m.backends.iter().map(|b| b.location.clone())),
    );
    Plfs::new(cfg).context("initialising PLFS")
}

/// Makes `p` absolute against the current directory and resolves `.` and `..` lexically, as the
/// core normalises every path ([`normalize_path`]): PLFS paths are not visible to the kernel, so
/// they cannot be canonicalised.
pub fn absolute(p: &Path) -> Result<PathBuf> {
    let joined = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()
            .context("getting the current directory")?
            .join(p)
    };
    normalize_path(&joined).with_context(|| format!("{}: not an absolute path", joined.display()))
}

/// Parses a byte count with an optional binary suffix: `47008`, `64K`, `4M`, `1G`, `2KiB`.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    if digits == 0 {
        return Err(format!("{s:?}: expected a number with an optional K, M or G suffix"));
    }
    let n: u64 = t[..digits].parse().map_err(|e| format!("{s:?}: {e}"))?;
    let shift = match t[digits..].to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        other => return Err(format!("{s:?}: unknown size suffix {other:?} (use K, M, G or T)")),
    };
    n.checked_mul(1u64 << shift).ok_or_else(|| format!("{s:?}: too large"))
}

/// Parses a positive count (records, processes), accepting K/M suffixes.
pub fn parse_count(s: &str) -> Result<u64, String> {
    let n = parse_size(s)?;
    if n == 0 {
        return Err(format!("{s:?}: must be at least 1"));
    }
    Ok(n)
}

/// `ls -l`-style permission string for a full `st_mode`.
pub fn mode_string(mode: u32) -> String {
    let t = match mode & 0o170000 {
        0o040000 => 'd',
        0o120000 => 'l',
        0o020000 => 'c',
        0o060000 => 'b',
        0o010000 => 'p',
        0o140000 => 's',
        _ => '-',
    };
    let mut s = String::with_capacity(10);
    s.push(t);
    let special = [(0o4000, 's', 'S'), (0o2000, 's', 'S'), (0o1000, 't', 'T')];
    for (i, shift) in [6u32, 3, 0].into_iter().enumerate() {
        let bits = (mode >> shift) & 7;
        s.push(if bits & 4 != 0 { 'r' } else { '-' });
        s.push(if bits & 2 != 0 { 'w' } else { '-' });
        let (flag, on, off) = special[i];
        s.push(match (bits & 1 != 0, mode & flag != 0) {
            (true, true) => on,
            (false, true) => off,
            (true, false) => 'x',
            (false, false) => '-',
        });
    }
    s
}

/// Formats ns since the epoch as `YYYY-MM-DD HH:MM:SS.nnnnnnnnn UTC`.
pub fn format_time(ns: i64) -> String {
    let secs = ns.div_euclid(1_000_000_000);
    let frac = ns.rem_euclid(1_000_000_000);
    let (days, sod) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}.{frac:09} UTC",
        sod / 3600,
        sod / 60 % 60,
        sod % 60
    )
}

/// Formats ns since the epoch with `fmt` (strftime) in time zone `tz`.
fn format_in(ns: i64, fmt: &str, tz: jiff::tz::TimeZone) -> String {
    match jiff::Timestamp::from_nanosecond(i128::from(ns)) {
        Ok(t) => t.to_zoned_datetime(tz).strftime(fmt).to_string(),
        Err(_) => format_time(ns),
    }
}

/// The local time zone: `$TZ`, else the system's (`/etc/localtime`); UTC if neither is usable.
fn local_zone() -> jiff::tz::TimeZone {
    jiff::tz::TimeZone::system()
}

/// Formats ns since the epoch as `YYYY-MM-DD HH:MM:SS` in local time.
pub fn format_time_local(ns: i64) -> String {
    format_in(ns, "%Y-%m-%d %H:%M:%S", local_zone())
}

/// Formats ns since the epoch as `YYYY-MM-DD HH:MM` in local time, for `ls -l`.
pub fn format_time_short(ns: i64) -> String {
    format_in(ns, "%Y-%m-%d %H:%M", local_zone())
}

/// Days since 1970-01-01 to a proleptic Gregorian (year, month, day) (H. Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Bytes as a short human string (`37.6 MB`, decimal units like the bandwidths).
pub fn human_bytes(n: u64) -> String {
    let units = ["B", "kB", "MB", "GB", "TB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1000.0 && u + 1 < units.len() {
        v /= 1000.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", units[u])
    }
}

/// The name of user `uid` in the system's user database (getpwuid(3): /etc/passwd, LDAP, SSSD...
/// as nsswitch.conf says); the number when it has none.
pub fn user_name(uid: u32) -> String {
    plfs_core::user_name(uid).unwrap_or_else(|| uid.to_string())
}

/// The name of group `gid` in the system's group database (getgrgid(3)); the number when it has
/// none.
pub fn group_name(gid: u32) -> String {
    nix::unistd::Group::from_gid(nix::unistd::Gid::from_raw(gid))
        .ok()
        .flatten()
        .map_or_else(|| gid.to_string(), |g| g.name)
}

/// `n` and the noun, singular for one: `1 file`, `2 files`, `0 files`.
pub fn plural(n: impl Into<u64>, one: &str, many: &str) -> String {
    let n = n.into();
    format!("{n} {}", if n == 1 { one } else { many })
}

/// True if the error chain contains an EPIPE write error.
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Fails unless `path` is under a PLFS mount point of `plfs`.
pub fn require_plfs_path(plfs: &Plfs, path: &Path) -> Result<()> {
    if !plfs.is_plfs_path(path) {
        let mounts: Vec<String> = plfs
            .config()
            .mounts
            .iter()
            .map(|m| m.mount_point.display().to_string())
            .collect();
        return Err(crate::fail::Failure::new(
            path,
            libc_exdev(),
            format!(
                "{}: not under a PLFS mount point (mount points: {})",
                path.display(),
                mounts.join(", ")
            ),
        )
        .into());
    }
    Ok(())
}

/// EXDEV, the errno of a path outside every mount point (as the core reports it).
fn libc_exdev() -> i32 {
    18
}

/// True if the path was given with a trailing slash (`dir/`).
pub fn trailing_slash(p: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    p.as_os_str().as_bytes().ends_with(b"/")
}

/// Bytes as a short human string in binary units, like `ls -h` and `du -h` (`4.0K`, `1.5G`).
pub fn human_iec(n: u64) -> String {
    let units = ["", "K", "M", "G", "T", "P", "E"];
    if n < 1024 {
        return n.to_string();
    }
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    if v < 10.0 {
        format!("{:.1}{}", (v * 10.0).ceil() / 10.0, units[u])
    } else {
        format!("{:.0}{}", v.ceil(), units[u])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("47008"), Ok(47008));
        assert_eq!(parse_size("4K"), Ok(4096));
        assert_eq!(parse_size("4m"), Ok(4 << 20));
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        assert!(parse_size("x").is_err());
        assert!(parse_size("4Q").is_err());
        assert!(parse_size("99999999999999999999").is_err());
        assert!(parse_count("0").is_err());
    }

    #[test]
    fn modes_and_times() {
        assert_eq!(mode_string(0o100644), "-rw-r--r--");
        assert_eq!(mode_string(0o040755), "drwxr-xr-x");
        assert_eq!(mode_string(0o104755), "-rwsr-xr-x");
        assert_eq!(mode_string(0o041777), "drwxrwxrwt");
        assert_eq!(format_time(0), "1970-01-01 00:00:00.000000000 UTC");
        assert_eq!(
            format_time(951_782_400_000_000_123),
            "2000-02-29 00:00:00.000000123 UTC"
        );
        let t = 1_700_000_000_000_000_000;
        assert_eq!(
            format_in(t, "%Y-%m-%d %H:%M", jiff::tz::TimeZone::UTC),
            "2023-11-14 22:13"
        );
        let plus2 = jiff::tz::TimeZone::fixed(jiff::tz::offset(2));
        assert_eq!(format_in(t, "%Y-%m-%d %H:%M", plus2), "2023-11-15 00:13");
        assert_eq!(format_time_short(t).len(), 16);
        assert_eq!(
            (plural(1u64, "file", "files"), plural(0u64, "file", "files")),
            ("1 file".into(), "0 files".into())
        );
        assert_eq!((user_name(0), group_name(0)), ("root".into(), "root".into()));
    }

    #[test]
    fn absolute_paths() {
        assert_eq!(absolute(Path::new("/a/./b/../c")).unwrap(), PathBuf::from("/a/c"));
        assert_eq!(absolute(Path::new("/../x")).unwrap(), PathBuf::from("/x"));
        assert_eq!(human_iec(1000), "1000");
        assert_eq!(human_iec(1024), "1.0K");
        assert_eq!(human_iec(1536), "1.5K");
        assert_eq!(human_iec(10 << 20), "10M");
        assert_eq!(human_iec((9 << 20) + 12345), "9.1M");
    }
}
