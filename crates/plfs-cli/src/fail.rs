//! Errors as the user sees them. A [`Failure`] says what could not be done to which path, once
//! ("cannot stat /mnt/plfs/x: No such file or directory"), and keeps the core's own message, which
//! may name backend files (`.plfstmp.*`, hostdirs, logs), as a detail shown only under
//! `-v`/`--verbose`. Under `--json` a failure is one line of JSON on standard error:
//! `{"error": "...", "path": "...", "errno": N, "exit_code": N}` (plus `"detail"` with `-v`).

use crate::out;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// A failed operation, ready to be shown.
#[derive(Debug, Clone)]
pub struct Failure {
    /// The message: names the logical (or plain) path once, never a backend path.
    pub msg: String,
    /// The path the operation was about.
    pub path: Option<PathBuf>,
    /// The errno behind it, when there is one.
    pub errno: Option<i32>,
    /// The underlying message, which may name backend files (shown with `-v`).
    pub detail: Option<String>,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.msg)
    }
}

impl std::error::Error for Failure {}

/// Marks an error that was already reported (a command that went on after some failures).
#[derive(Debug)]
pub struct Reported;

impl fmt::Display for Reported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("errors were reported")
    }
}

impl std::error::Error for Reported {}

/// Backend locations of the configuration in use: a message naming one of them is a detail.
static BACKENDS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Records the backend locations of the configuration (called when PLFS is initialised).
pub fn set_backends(locs: impl IntoIterator<Item = PathBuf>) {
    let mut b = BACKENDS.lock().unwrap_or_else(|p| p.into_inner());
    b.extend(
        locs.into_iter()
            .map(|p| p.display().to_string())
            .filter(|s| s.len() > 1),
    );
}

/// True if `s` names something inside a backend or a PLFS temporary name.
fn leaks(s: &str) -> bool {
    if s.contains(plfs_core::TMP_PREFIX) {
        return true;
    }
    let b = BACKENDS.lock().unwrap_or_else(|p| p.into_inner());
    b.iter().any(|loc| s.contains(loc.as_str()))
}

/// The C library's text for an errno, without Rust's " (os error N)" suffix.
pub fn strerror(errno: i32) -> String {
    let s = std::io::Error::from_raw_os_error(errno).to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// `s` without Rust's ` (os error N)` suffixes (the C library's text stays).
fn without_os_error(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find(" (os error ") {
        let tail = &rest[i + " (os error ".len()..];
        let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && tail[digits..].starts_with(')') {
            out.push_str(&rest[..i]);
            rest = &tail[digits + 1..];
        } else {
            out.push_str(&rest[..i + 1]);
            rest = &rest[i + 1..];
        }
    }
    out.push_str(rest);
    out
}

/// An error and its causes joined by `: `, as `{:#}` prints them, but a cause is left out when the
/// text before it already ends with it (an error that prints its source itself), and without
/// ` (os error N)`: `mounting /m: mount point /m: No such file or directory`, once.
fn chain_text(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for c in e.chain() {
        let t = without_os_error(&c.to_string());
        if t.is_empty() || out.ends_with(&t) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&t);
    }
    out
}

/// True if `named` mentions the path `p` itself (not only a longer path beginning with it).
fn mentions(named: &str, p: &str) -> bool {
    named
        .match_indices(p)
        .any(|(i, _)| !named[i + p.len()..].starts_with('/'))
}

/// Splits a leading absolute path off a core message: `"/a/b: rest"` → `("/a/b", "rest")`.
fn split_path(m: &str) -> Option<(&str, &str)> {
    if !m.starts_with('/') {
        return None;
    }
    let i = m.find(": ")?;
    Some((&m[..i], &m[i + 2..]))
}

/// The short text of a core error in a message that already names `named` (the logical path),
/// and the core's full message as a detail when the short text leaves something out.
fn describe(e: &plfs_core::Error, named: &str) -> (String, Option<String>) {
    use plfs_core::Error as E;
    let errno = e.raw_errno();
    let full = e.to_string();
    let se = strerror(errno);
    match e {
        E::Io { .. } => (se, Some(full)),
        E::NotFound(p) | E::Exists(p) => {
            let ps = p.display().to_string();
            if mentions(named, &ps) || leaks(&ps) {
                (se, None)
            } else {
                // Another path than the one named (mkdir: the missing parent).
                (format!("{ps}: {se}"), None)
            }
        }
        E::Corruption { what, .. } => {
            let short = format!("damaged file ({what}); `plfs fsck` checks it");
            if leaks(&short) {
                (format!("{se}: damaged file; `plfs fsck` checks it"), Some(full))
            } else {
                (short, Some(full))
            }
        }
        E::Config(_) => (full, None),
        _ => {
            let mut m = full.as_str();
            if let Some((p, rest)) = split_path(m) {
                if mentions(named, p) {
                    m = rest;
                }
            }
            if leaks(m) {
                (se, Some(full.clone()))
            } else {
                (m.to_string(), None)
            }
        }
    }
}

impl Failure {
    /// `"{action} {path}: {what went wrong}"` for a core error.
    pub fn core(action: &str, path: &Path, e: plfs_core::Error) -> Failure {
        let named = path.display().to_string();
        let (short, detail) = describe(&e, &named);
        Failure {
            msg: format!("{action} {named}: {short}"),
            path: Some(path.to_path_buf()),
            errno: Some(e.raw_errno()),
            detail,
        }
    }

    /// A core error under a free-form context (which names the path if there is one).
    pub fn core_ctx(what: String, e: plfs_core::Error) -> Failure {
        let (short, detail) = describe(&e, &what);
        Failure {
            msg: format!("{what}: {short}"),
            path: None,
            errno: Some(e.raw_errno()),
            detail,
        }
    }

    /// `"{action} {path}: {strerror}"` for an error on a plain file.
    pub fn io(action: &str, path: &Path, e: &std::io::Error) -> Failure {
        let errno = e.raw_os_error();
        let short = errno.map_or_else(|| e.to_string(), strerror);
        Failure {
            msg: format!("{action} {}: {short}", path.display()),
            path: Some(path.to_path_buf()),
            errno,
            detail: None,
        }
    }

    /// A failure with its own message about `path`.
    pub fn new(path: &Path, errno: i32, msg: impl Into<String>) -> Failure {
        Failure {
            msg: msg.into(),
            path: Some(path.to_path_buf()),
            errno: Some(errno),
            detail: None,
        }
    }
}

/// Converts core results into [`Failure`]s.
pub trait CoreContext<T> {
    /// `"{action} {path}: ..."`.
    fn at(self, action: &str, path: &Path) -> anyhow::Result<T>;
    /// A free-form context naming the path.
    fn ctx(self, what: impl FnOnce() -> String) -> anyhow::Result<T>;
}

impl<T> CoreContext<T> for plfs_core::Result<T> {
    fn at(self, action: &str, path: &Path) -> anyhow::Result<T> {
        self.map_err(|e| Failure::core(action, path, e).into())
    }
    fn ctx(self, what: impl FnOnce() -> String) -> anyhow::Result<T> {
        self.map_err(|e| Failure::core_ctx(what(), e).into())
    }
}

/// Converts plain-file results into [`Failure`]s.
pub trait IoContext<T> {
    /// `"{action} {path}: {strerror}"`.
    fn at(self, action: &str, path: &Path) -> anyhow::Result<T>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn at(self, action: &str, path: &Path) -> anyhow::Result<T> {
        self.map_err(|e| Failure::io(action, path, &e).into())
    }
}

/// Shows an error on standard error: text, or one line of JSON under `--json`.
pub fn report(e: &anyhow::Error, exit_code: i32) {
    out::flush();
    let f = e.chain().find_map(|c| c.downcast_ref::<Failure>());
    // Contexts added around a Failure (outermost first) are kept in the text.
    let text = match f {
        Some(f) => {
            let outer: Vec<String> = e
                .chain()
                .take_while(|c| c.downcast_ref::<Failure>().is_none())
                .map(|c| c.to_string())
                .collect();
            if outer.is_empty() {
                f.msg.clone()
            } else {
                format!("{}: {}", outer.join(": "), f.msg)
            }
        }
        None => chain_text(e),
    };
    if out::json_mode() {
        let mut v = serde_json::json!({
            "error": text,
            "path": f.and_then(|f| f.path.as_ref()).map(|p| p.display().to_string()),
            "errno": f.and_then(|f| f.errno),
            "exit_code": exit_code,
        });
        if out::verbose() {
            if let Some(d) = f.and_then(|f| f.detail.as_ref()) {
                v["detail"] = serde_json::json!(d);
            }
        }
        errln!("{v}");
    } else {
        errln!("plfs: error: {text}");
        if out::verbose() {
            if let Some(d) = f.and_then(|f| f.detail.as_ref()) {
                errln!("plfs: detail: {d}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cause_already_printed_is_not_printed_again() {
        let io = std::io::Error::from_raw_os_error(2);
        #[derive(Debug)]
        struct Wraps(std::io::Error);
        impl fmt::Display for Wraps {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "mount point /m: {}", self.0)
            }
        }
        impl std::error::Error for Wraps {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }
        let e = anyhow::Error::new(Wraps(io)).context("mounting /m");
        assert_eq!(chain_text(&e), "mounting /m: mount point /m: No such file or directory");
        assert_eq!(without_os_error("a (os error 13) b (os error x)"), "a b (os error x)");
    }

    #[test]
    fn messages_name_the_path_once_and_hide_backends() {
        set_backends([PathBuf::from("/srv/backend-x")]);
        let p = Path::new("/mnt/p/x");
        let f = Failure::core("cannot stat", p, plfs_core::Error::NotFound(p.into()));
        assert_eq!(f.msg, "cannot stat /mnt/p/x: No such file or directory");
        let io = plfs_core::Error::io("/srv/backend-x/.plfstmp.d76", "mkdir", rustix::io::Errno::ACCESS);
        let f = Failure::core("cannot create", p, io);
        assert_eq!(f.msg, "cannot create /mnt/p/x: Permission denied");
        assert!(f.detail.unwrap().contains(".plfstmp.d76"));
        let e = plfs_core::Error::errno(rustix::io::Errno::ISDIR, "/mnt/p/x: is a directory");
        assert_eq!(
            Failure::core("cannot open", p, e).msg,
            "cannot open /mnt/p/x: is a directory"
        );
        let e = plfs_core::Error::errno(rustix::io::Errno::BUSY, "/srv/backend-x/c: busy thing");
        let f = Failure::core("cannot flatten", p, e);
        assert_eq!(f.msg, "cannot flatten /mnt/p/x: Device or resource busy");
        // mkdir of a/b with a missing: the missing parent is named.
        let e = plfs_core::Error::NotFound("/mnt/p".into());
        let f = Failure::core("cannot create directory", Path::new("/mnt/p/a/b"), e);
        assert_eq!(
            f.msg,
            "cannot create directory /mnt/p/a/b: /mnt/p: No such file or directory"
        );
    }
}
