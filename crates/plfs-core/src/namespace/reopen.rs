//! Opening again a file an earlier open had open, by its identity ([`OpenFile::ident`]): what a
//! descriptor inherited across exec needs, since POSIX keeps an unlinked file open through it.

use super::Logical;
use super::{Entry, Plfs};
use crate::error::Result;
use crate::layout::{n1, OpenFile};
use crate::types::OpenFlags;
use rustix::io::Errno;

impl Plfs {
    /// Opens the file that an open of `path` reported identity `ident` for ([`OpenFile::ident`],
    /// in this process or another), as `flags` allow (never creating or truncating): under its
    /// name if the name still is that file; else, if it was unlinked (or replaced by a rename)
    /// while another process had it open, where it was moved aside, as an unlinked file
    /// (`st_nlink` 0; its last closer deletes it). `ENOENT` if neither is found: the file is
    /// gone, or another file has its name. Never opens a file of another identity.
    pub fn reopen(
        &self,
        path: &(impl Logical + ?Sized),
        flags: OpenFlags,
        pid: u32,
        ident: (u64, u64),
    ) -> Result<OpenFile> {
        let flags = OpenFlags {
            create: false,
            excl: false,
            trunc: false,
            ..flags
        };
        let loc = path.locate(self)?;
        if loc.is_root() {
            return Err(loc.err(Errno::ISDIR, "is a directory"));
        }
        let named = match self.lookup(&loc) {
            Ok(Entry::File(n)) if n.ident() == Some(ident) => match n.open(flags, pid, false) {
                Ok(f) => Some(f),
                // Unlinked between the look-up and the open: look where it went.
                Err(e) if e.is_not_found() => None,
                Err(e) => return Err(e),
            },
            Ok(_) => None,
            Err(e) if e.is_not_found() => None,
            Err(e) => return Err(e),
        };
        match named {
            Some(f) if f.ident() == Some(ident) => return Ok(f),
            // Replaced between the look-up and the open: not the file asked for.
            Some(f) => {
                let _ = f.close();
            }
            None => {}
        }
        match n1::open_trashed(&self.reg, &loc, ident, flags, pid)? {
            Some(f) if f.ident() == Some(ident) => Ok(f),
            Some(f) => {
                let _ = f.close();
                Err(loc.not_found())
            }
            None => Err(loc.not_found()),
        }
    }
}
