//! The mount points of a plfsrc that does not load: a front end that cannot serve them must still
//! know them, so that a call under one fails (EIO) instead of reaching the real directory at the
//! mount point's path, where no plfs tool would ever look for the data (issue 50: one misspelt
//! key turned ldplfs into a pass-through and `echo x > MOUNT/f` wrote a real file there).
//!
//! The reading is deliberately lenient: each line that looks like `[- ]mount_point: PATH` (a YAML
//! comment or quotes around the path allowed) names a mount point, and `[- ]include: FILE` lines
//! are followed the same way. Nothing else of the file matters, so a typo anywhere else, bad
//! indentation, or text that is not YAML at all still gives the mount points it names.

use super::values::abs_path;
use super::*;

/// A configuration that could not be loaded, and what could still be read from it.
#[derive(Debug)]
pub struct Unusable {
    /// The file that was chosen by the search ([`Config::load`]), if one was.
    pub file: Option<PathBuf>,
    /// Why it cannot be used (names the file, the line and the key).
    pub error: Error,
    /// The mount points its lines name (normalised, each once, in file order; includes
    /// followed), found by [`mount_points_in`]. Empty when none could be read.
    pub mount_points: Vec<PathBuf>,
}

impl Config {
    /// [`Config::load`], and when the configuration cannot be used, the mount points it names
    /// (read leniently, see the module documentation), so that a front end can refuse calls under
    /// them rather than pass them to the real file system.
    pub fn load_or_mount_points() -> std::result::Result<Config, Unusable> {
        let (plfsrc, home) = (std::env::var_os("PLFSRC"), std::env::var_os("HOME"));
        load_or_mount_points_from(plfsrc, home, Path::new("/etc/plfsrc"))
    }
}

/// [`Config::load_or_mount_points`] with its inputs explicit (for tests).
pub(super) fn load_or_mount_points_from(
    plfsrc: Option<OsString>,
    home: Option<OsString>,
    etc: &Path,
) -> std::result::Result<Config, Unusable> {
    let file = match locate(plfsrc, home, etc) {
        Ok(Some(f)) => f,
        Ok(None) => return Ok(Config::zero_config()),
        Err(error) => {
            return Err(Unusable {
                file: None,
                error,
                mount_points: Vec::new(),
            })
        }
    };
    Config::from_file(&file).map_err(|error| Unusable {
        mount_points: mount_points_in(&file),
        file: Some(file),
        error,
    })
}

/// The mount points that the lines of plfsrc `path` (and of the files it includes) name, read
/// leniently. Unreadable files, and values that are not absolute paths, are skipped.
pub fn mount_points_in(path: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    scan(path, &mut Vec::new(), &mut out, 0);
    out
}

fn scan(path: &Path, seen: &mut Vec<PathBuf>, out: &mut Vec<PathBuf>, depth: usize) {
    if depth > MAX_INCLUDE_DEPTH || seen.iter().any(|s| s == path) {
        return;
    }
    seen.push(path.to_path_buf());
    let Ok((bytes, _)) = read_file(path) else { return };
    let text = String::from_utf8_lossy(&bytes);
    for line in text.lines() {
        let Some((key, value)) = key_value(line) else { continue };
        match key {
            "mount_point" => {
                if let Ok(p) = abs_path(value) {
                    if !out.contains(&p) {
                        out.push(p);
                    }
                }
            }
            "include" if !value.is_empty() => {
                let inc = Path::new(value);
                let inc = match path.parent() {
                    Some(dir) if inc.is_relative() => dir.join(inc),
                    _ => inc.to_path_buf(),
                };
                scan(&inc, seen, out, depth + 1);
            }
            _ => {}
        }
    }
}

/// `key` and `value` of a line `[- ]*key: value [# comment]`, the value unquoted.
fn key_value(line: &str) -> Option<(&str, &str)> {
    let mut s = line.trim_start();
    while let Some(r) = s.strip_prefix('-') {
        s = r.trim_start();
    }
    let (key, value) = s.split_once(':')?;
    let key = unquote(key.trim());
    let value = value.trim();
    let value = if value.starts_with(['"', '\'']) {
        // A quoted value ends at its closing quote (a `#` inside is part of it).
        let q = value.as_bytes()[0] as char;
        match value[1..].find(q) {
            Some(end) => &value[1..1 + end],
            None => &value[1..],
        }
    } else {
        // A comment starts at a `#` at the start or after white space.
        let cut = value
            .char_indices()
            .find(|&(i, c)| c == '#' && (i == 0 || value[..i].ends_with([' ', '\t'])))
            .map_or(value.len(), |(i, _)| i);
        value[..cut].trim_end()
    };
    Some((key, value))
}

fn unquote(s: &str) -> &str {
    for q in ['"', '\''] {
        if let Some(inner) = s.strip_prefix(q).and_then(|r| r.strip_suffix(q)) {
            return inner;
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::super::tests::{tempdir, write};
    use super::*;

    #[test]
    fn lines_are_read_leniently() {
        assert_eq!(key_value("- mount_point: /mnt/a"), Some(("mount_point", "/mnt/a")));
        assert_eq!(
            key_value("  mount_point:   /mnt/a   # the main one"),
            Some(("mount_point", "/mnt/a"))
        );
        assert_eq!(
            key_value("- \"mount_point\": '/mnt/a b#c'"),
            Some(("mount_point", "/mnt/a b#c"))
        );
        assert_eq!(key_value("mount_point: /mnt/a#b"), Some(("mount_point", "/mnt/a#b")));
        assert_eq!(key_value("    - location: /b"), Some(("location", "/b")));
        assert_eq!(key_value("just text"), None);
    }

    #[test]
    fn a_typo_keeps_the_mount_points_and_the_error() {
        let d = tempdir("lenient");
        let inc = write(
            d.as_path(),
            "more",
            "- mount_point: /mnt/two//x/\n  backends:\n    - location: /b2\n",
        );
        let rc = write(
            d.as_path(),
            "plfsrc",
            &format!(
                "- global_params:\n    num_hostdir: 4\n- mount_point: /mnt/one # here\n  backends:\n    \
                 - location: /b1\n- include: {}\n- mount_point: not/absolute\n- mount_point: /mnt/one\n",
                inc.file_name().unwrap().to_str().unwrap()
            ),
        );
        let u = load_or_mount_points_from(Some(rc.clone().into()), None, Path::new("/nonexistent")).unwrap_err();
        assert_eq!(u.file.as_deref(), Some(rc.as_path()));
        let msg = u.error.to_string();
        assert!(
            msg.contains(&rc.display().to_string()) && msg.contains("num_hostdir"),
            "{msg}"
        );
        assert_eq!(
            u.mount_points,
            vec![PathBuf::from("/mnt/one"), PathBuf::from("/mnt/two/x")]
        );
    }

    #[test]
    fn not_yaml_at_all_and_include_cycles() {
        let d = tempdir("lenient");
        let a = d.as_path().join("a");
        write(
            d.as_path(),
            "b",
            &format!("- include: {}\nmount_point: /mnt/b\n", a.display()),
        );
        write(d.as_path(), "a", "{{{ [\n- include: b\n\t- mount_point: \"/mnt/a\"\n");
        assert_eq!(
            mount_points_in(&a),
            vec![PathBuf::from("/mnt/b"), PathBuf::from("/mnt/a")]
        );
        assert!(mount_points_in(&d.as_path().join("missing")).is_empty());
    }

    #[test]
    fn a_good_file_loads_and_a_missing_plfsrc_names_no_mount_point() {
        let d = tempdir("lenient");
        let rc = write(
            d.as_path(),
            "rc",
            "- mount_point: /mnt/g\n  backends:\n    - location: /b\n",
        );
        let c = load_or_mount_points_from(Some(rc.into()), None, Path::new("/nonexistent")).unwrap();
        assert_eq!(c.mounts[0].mount_point, PathBuf::from("/mnt/g"));
        let u = load_or_mount_points_from(Some(d.as_path().join("nope").into()), None, Path::new("/nonexistent"))
            .unwrap_err();
        assert!(u.file.is_none() && u.mount_points.is_empty());
    }
}
