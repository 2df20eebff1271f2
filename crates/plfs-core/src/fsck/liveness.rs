//! Is the writer behind an open record still running? Only a writer on this host can be checked,
//! through /proc: its pid must exist, must not have been reused (the process must have started
//! before the writer opened the file), and, once the writer has logs, must hold one of them open.
//! Anything in between is "unknown", which fsck never repairs without `--force-stale`.

use crate::clock;
use crate::sys;
use std::path::{Path, PathBuf};

/// The state of a writer that has an open record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Liveness {
    /// Running; why we think so.
    Live(String),
    /// Gone; why we think so.
    Dead(String),
    /// Cannot tell from here; why.
    Unknown(String),
}

/// Judges the writer `pid` on `host` that opened the file at `opened_ns` (wall clock, if known)
/// and owns the logs whose (st_dev, st_ino) are `idents` (those that exist).
pub fn writer_liveness(pid: u32, host: &str, opened_ns: Option<u64>, idents: &[(u64, u64)]) -> Liveness {
    let me = clock::hostname();
    if host != me {
        return Liveness::Unknown(format!("writer ran on host {host}, this is {me}"));
    }
    if pid == 0 {
        return Liveness::Unknown("writer pid is 0 (an MPI rank, not a process id)".into());
    }
    let proc_dir = PathBuf::from(format!("/proc/{pid}"));
    match sys::lstat_opt(&proc_dir) {
        Ok(None) => return Liveness::Dead(format!("process {pid} no longer exists")),
        Ok(Some(_)) => {}
        Err(e) => return Liveness::Unknown(format!("cannot check process {pid}: {e}")),
    }
    if let (Some(open), Some(start)) = (opened_ns, process_start_ns(pid)) {
        // btime has a resolution of one second and clock ticks of 10 ms: allow 2 s of slack.
        if start > open.saturating_add(2_000_000_000) {
            return Liveness::Dead(format!(
                "pid {pid} was reused: that process started after the writer opened the file"
            ));
        }
    }
    if idents.is_empty() {
        return Liveness::Live(format!("process {pid} is running (the writer has no logs yet)"));
    }
    match holds_open(pid, idents) {
        Some(true) => Liveness::Live(format!("process {pid} holds the writer's logs open")),
        Some(false) => Liveness::Unknown(format!(
            "process {pid} is running but does not hold the writer's logs open (a reused pid, or an MPI rank?)"
        )),
        None => Liveness::Unknown(format!("process {pid} is running; its open files cannot be read")),
    }
}

/// Whether process `pid` has one of the files `idents` (dev, ino) open; `None` if its
/// descriptor table cannot be read.
fn holds_open(pid: u32, idents: &[(u64, u64)]) -> Option<bool> {
    Some(sys::open_file_idents(pid)?.iter().any(|i| idents.contains(i)))
}

/// When process `pid` started, in ns since the epoch (from /proc/<pid>/stat and the boot time).
fn process_start_ns(pid: u32) -> Option<u64> {
    let stat = sys::read_file(Path::new(&format!("/proc/{pid}/stat"))).ok()?;
    let stat = String::from_utf8_lossy(&stat);
    // Fields after the command name (which may contain spaces) start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    // rest starts at field 3 (state); starttime is field 22.
    let ticks: u64 = rest.split_whitespace().nth(19)?.parse().ok()?;
    let boot = sys::read_file(Path::new("/proc/stat")).ok()?;
    let boot = String::from_utf8_lossy(&boot);
    let btime: u64 = boot
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    // USER_HZ is 100 on every Linux ABI.
    Some(btime * 1_000_000_000 + ticks * 10_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_process_and_dead_pid() {
        let me = clock::pid();
        let exe = sys::stat_follow(Path::new("/proc/self/exe"))
            .map(|s| (s.st_dev, s.st_ino))
            .unwrap();
        // This process holds no log; it is alive and older than "now".
        match writer_liveness(me, clock::hostname(), Some(clock::now_ns()), &[]) {
            Liveness::Live(_) => {}
            other => panic!("own process: {other:?}"),
        }
        // Opened long before this process started: the pid must have been reused.
        match writer_liveness(me, clock::hostname(), Some(1_000_000_000), &[exe]) {
            Liveness::Dead(m) => assert!(m.contains("reused"), "{m}"),
            other => panic!("reused pid: {other:?}"),
        }
        // pid_max is at most 2^22: this pid cannot exist.
        assert!(matches!(
            writer_liveness(u32::MAX - 1, clock::hostname(), None, &[]),
            Liveness::Dead(_)
        ));
        assert!(matches!(
            writer_liveness(me, "some-other-host-xyz", None, &[]),
            Liveness::Unknown(_)
        ));
        assert!(process_start_ns(me).unwrap() <= clock::now_ns());
    }
}
