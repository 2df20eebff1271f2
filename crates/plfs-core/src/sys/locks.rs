//! Who holds flock(2) locks on a file, from `/proc/locks`: a compaction deletes the data logs it
//! retired only when no other process holds the container open (each holds a shared flock on the
//! container directory, docs/design.md "Unlink"), and it must find that out without giving up
//! its own lock (a failed non-blocking conversion to an exclusive lock drops the shared one).
//! Also the flock(2) calls on directories themselves.

use super::dir::Dir;
use crate::error::{Error, Result};
use rustix::fs;
use rustix::io::Errno;
use std::path::Path;

impl Dir {
    /// Takes a shared flock(2) on this directory, waiting while someone holds it exclusively.
    /// Open files hold one on their container, so that a container unlinked by another process
    /// is deleted only once nobody has it open. A backend without flock on directories
    /// (`EOPNOTSUPP`, `ENOLCK`, `EBADF` on NFS) is learned once; the call then succeeds.
    pub fn lock_shared(&self) -> Result<()> {
        self.flock_wait(fs::FlockOperation::LockShared).map(drop)
    }

    /// Takes an exclusive flock(2) on this directory, waiting while anyone else holds one:
    /// `Ok(false)` on a backend without flock on directories.
    pub fn lock_exclusive(&self) -> Result<bool> {
        self.flock_wait(fs::FlockOperation::LockExclusive)
    }

    /// A blocking flock(2): `Ok(false)` when the backend has no flock on directories (learned
    /// once).
    fn flock_wait(&self, op: fs::FlockOperation) -> Result<bool> {
        self.lockable()?;
        if !self.caps.locks() {
            return Ok(false);
        }
        loop {
            match fs::flock(&self.fd, op) {
                Ok(()) => return Ok(true),
                Err(Errno::INTR) => continue,
                Err(e) if lock_unsupported(e) && self.caps.learn_locks(false) => return Ok(false),
                Err(e) => return Err(Error::io(&self.path, "flock", e)),
            }
        }
    }

    /// [`Dir::try_lock_exclusive`], tried again every 10 ms for up to `patience`: for a lock
    /// others hold only for moments (a last close finishing a compaction's journal), which an
    /// explicit `plfs compact` should wait out rather than report as busy.
    pub fn try_lock_exclusive_within(&self, patience: std::time::Duration) -> Result<bool> {
        try_within(patience, || self.try_lock_exclusive())
    }

    /// Lets go of this description's flock(2).
    pub fn unlock(&self) -> Result<()> {
        fs::flock(&self.fd, fs::FlockOperation::Unlock).map_err(|e| Error::io(&self.path, "flock", e))
    }

    /// Tries to take an exclusive flock(2) on this directory without waiting (converting this
    /// descriptor's shared lock): `Ok(true)` if nobody else holds a lock on it (always, on a
    /// backend without flock on directories).
    pub fn try_lock_exclusive(&self) -> Result<bool> {
        self.lockable()?;
        if !self.caps.locks() {
            return Ok(true);
        }
        match fs::flock(&self.fd, fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => Ok(true),
            Err(Errno::WOULDBLOCK) | Err(Errno::INTR) => Ok(false),
            Err(e) if lock_unsupported(e) && self.caps.learn_locks(false) => Ok(true),
            Err(e) => Err(Error::io(&self.path, "flock", e)),
        }
    }
}

impl Dir {
    /// flock(2) on an `O_PATH` descriptor fails with `EBADF`, which would otherwise be taken for
    /// a backend without locks (NFS says `EBADF` too) and learned for the whole backend: refused
    /// here instead, naming the directory. Callers make such a descriptor real first
    /// ([`Dir::make_real`]).
    fn lockable(&self) -> Result<()> {
        if self.path_only {
            return Err(Error::io(&self.path, "flock (a look-up only descriptor)", Errno::BADF));
        }
        Ok(())
    }
}

/// Calls `attempt` every 10 ms until it says `true` or `patience` has passed (then `false`).
pub(crate) fn try_within(patience: std::time::Duration, mut attempt: impl FnMut() -> Result<bool>) -> Result<bool> {
    let until = std::time::Instant::now() + patience;
    loop {
        if attempt()? {
            return Ok(true);
        }
        if std::time::Instant::now() >= until {
            return Ok(false);
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

fn lock_unsupported(e: Errno) -> bool {
    super::unsupported(e) || e == Errno::NOLCK || e == Errno::BADF
}

/// The pids holding a flock(2) lock (granted, not waiting) on the file with identity
/// (`st_dev`, `st_ino`), or `None` if `/proc/locks` cannot be read.
pub fn flock_holders(st_dev: u64, st_ino: u64) -> Option<Vec<u32>> {
    let text = super::read_file(Path::new("/proc/locks")).ok()?;
    let want = format!(
        "{:02x}:{:02x}:{}",
        rustix::fs::major(st_dev),
        rustix::fs::minor(st_dev),
        st_ino
    );
    Some(parse(&String::from_utf8_lossy(&text), &want))
}

/// The pids of the granted FLOCK lines of `/proc/locks` text on the file `dev_ino`
/// (`MAJ:MIN:INODE`, as the kernel prints it).
fn parse(text: &str, dev_ino: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for line in text.lines() {
        // "N: FLOCK  ADVISORY  READ 1234 fe:00:5308694 0 EOF"; waiters have "->" after "N:".
        let mut f = line.split_whitespace().skip(1);
        let Some(class) = f.next() else { continue };
        if class != "FLOCK" {
            continue;
        }
        let fields: Vec<&str> = f.collect();
        // ADVISORY, READ|WRITE, pid, dev:ino, start, end
        if fields.len() < 4 || fields[2].is_empty() {
            continue;
        }
        if fields[3] == dev_ino {
            out.push(fields[2].parse().unwrap_or(0));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_granted_flocks_only() {
        let t = "1: FLOCK  ADVISORY  READ 16333 fe:00:10273799 0 EOF\n\
                 1: -> FLOCK  ADVISORY  WRITE 99 fe:00:10273799 0 EOF\n\
                 2: FLOCK  ADVISORY  WRITE 10880 fe:00:5308694 0 EOF\n\
                 3: POSIX  ADVISORY  WRITE 32147 fe:00:10273799 0 EOF\n\
                 4: FLOCK  ADVISORY  READ 7 fe:00:10273799 0 EOF\n";
        assert_eq!(parse(t, "fe:00:10273799"), vec![16333, 7]);
        assert_eq!(parse(t, "fe:00:1"), Vec::<u32>::new());
    }

    #[test]
    fn sees_our_own_lock() {
        let dir = std::env::temp_dir().join(format!("plfs-locks-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let d = super::super::Dir::open(&dir).unwrap();
        d.lock_shared().unwrap();
        let st = d.fstat().unwrap();
        let holders = flock_holders(st.st_dev, st.st_ino).expect("/proc/locks");
        assert!(holders.contains(&std::process::id()), "{holders:?}");
        drop(d);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
