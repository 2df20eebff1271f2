//! Damage in a 1-N directory's logs (docs/format.md §11, "Damage"): stretches of a log that are
//! not whole records, followed by whole records, found by the replay. A reader cannot know what
//! a damaged record said, so it never answers as if it had not been there: a file it may have
//! changed gives `EIO` (its stat, open and reads), and where it may have created, renamed or
//! unlinked a name, a name the view does not hold gives `EIO` instead of `ENOENT`. The file id
//! its frame names decides which file: the file of that id, or, if no file has it, the one
//! whose id differs from it in one or two bytes (damage of a byte or two in the id itself);
//! failing both, every file of the directory. A WRITE, TRUNC or SETATTR damages that file only;
//! anything else (a CREATE, RENAME or UNLINK, or a frame too damaged to say) damages the
//! directory's names too. Neither kind nor id is trusted to be right: they only narrow what
//! answers with `EIO`.

use crate::error::Error;
use crate::format::small::{self as fmt, Damaged};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// One damaged stretch of one log.
#[derive(Debug, Clone)]
pub(crate) struct Stretch {
    /// The log it is in.
    pub(crate) log: PathBuf,
    /// What its decoder said (offset, length, kind and file id its frame would name).
    pub(crate) at: Damaged,
    /// The file of the view it may have changed (canonical id), if its frame names one.
    pub(crate) file: Option<u64>,
    /// Whether it may have changed the directory's names.
    pub(crate) names: bool,
}

impl Stretch {
    /// What the stretch is, for messages.
    pub(crate) fn describe(&self) -> String {
        format!(
            "{}: {} damaged bytes at byte {} ({})",
            self.log.display(),
            self.at.len,
            self.at.at,
            self.at.why
        )
    }
}

/// The damage of the last replay: every stretch, and what each may have changed.
#[derive(Debug, Default)]
pub(crate) struct Damage {
    pub(crate) stretches: Vec<Stretch>,
    /// Logs that end in a torn record (an append cut short): the log, and where the torn bytes
    /// start. Readers take the log up to there, as after a crash; fsck reports it.
    pub(crate) torn: Vec<(PathBuf, u64)>,
    /// File (canonical id) → the first stretch that may have changed it.
    files: HashMap<u64, usize>,
    /// The first stretch that may have changed the names.
    names: Option<usize>,
    /// The first stretch that may have changed any file (its file id names none).
    any_file: Option<usize>,
}

/// What `plfs fsck` learns of a directory's damage: each stretch with the current name of the
/// file it may have changed, and each torn tail (log, where it starts).
pub(crate) type Report = (Vec<(Stretch, Option<String>)>, Vec<(PathBuf, u64)>);

/// The file among `files` (canonical ids) a damaged frame's id `id` names: that id's file
/// (`canonical` maps an id to its file's), else the one file whose id differs from it in at
/// most two bytes.
fn file_named(canonical: &dyn Fn(u64) -> u64, files: &[u64], id: u64) -> Option<u64> {
    let exact = canonical(id);
    if files.contains(&exact) {
        return Some(exact);
    }
    let near = |f: &&u64| (0..8).filter(|i| (**f ^ id) >> (8 * i) & 0xff != 0).count() <= 2;
    let mut close = files.iter().filter(near);
    match (close.next(), close.next()) {
        (Some(&f), None) => Some(f),
        _ => None,
    }
}

impl Damage {
    /// Notes the stretches of one log, to be judged by [`Damage::attribute`], and where its torn
    /// tail starts, if it has one.
    pub(super) fn note(&mut self, log: &Path, found: Vec<Damaged>, torn_at: Option<u64>) {
        self.torn.extend(torn_at.map(|at| (log.to_path_buf(), at)));
        for at in found {
            self.stretches.push(Stretch {
                log: log.to_path_buf(),
                at,
                file: None,
                names: true,
            });
        }
    }

    /// Decides, once every record is replayed, what each stretch may have changed: `files` are
    /// the view's files (canonical ids), `canonical` maps a file id to its file's.
    pub(super) fn attribute(&mut self, canonical: &dyn Fn(u64) -> u64, files: &[u64]) {
        let d = self;
        for (i, s) in d.stretches.iter_mut().enumerate() {
            s.file = s.at.id.and_then(|id| file_named(canonical, files, id));
            let data_only = matches!(s.at.kind, Some(fmt::K_WRITE | fmt::K_TRUNC | fmt::K_SETATTR));
            s.names = !(data_only && s.file.is_some());
            match s.file {
                Some(f) => {
                    d.files.entry(f).or_insert(i);
                }
                // A damaged CREATE names a file no record made; any other frame, any file.
                None if s.at.kind != Some(fmt::K_CREATE) => {
                    d.any_file.get_or_insert(i);
                }
                None => {}
            }
            if s.names && d.names.is_none() {
                d.names = Some(i);
            }
        }
    }

    /// `EIO` for file `id` (canonical), named `path`, if a damaged record may have changed it.
    pub(super) fn check_file(&self, id: u64, path: &Path) -> Result<(), Error> {
        match self.files.get(&id).or(self.any_file.as_ref()) {
            Some(&i) => Err(Error::corrupt(
                path,
                format!(
                    "a damaged record may have changed this file ({}); see plfs fsck",
                    self.stretches[i].describe()
                ),
            )),
            None => Ok(()),
        }
    }

    /// `EIO` for a name the view does not hold, `path`, if a damaged record may have made it.
    pub(super) fn check_missing(&self, path: &Path) -> Result<(), Error> {
        match self.names {
            Some(i) => Err(Error::corrupt(
                path,
                format!(
                    "not in the directory's logs, but a damaged record may have created or renamed it ({}); see plfs fsck",
                    self.stretches[i].describe()
                ),
            )),
            None => Ok(()),
        }
    }

    /// Whether the damage only hit files that no longer have a name: a compaction, which copies
    /// named files only, then loses nothing by leaving it behind.
    pub(super) fn only_unnamed(&self, named: impl Fn(u64) -> bool) -> bool {
        self.names.is_none() && self.any_file.is_none() && self.files.keys().all(|&id| !named(id))
    }

    pub(super) fn is_empty(&self) -> bool {
        self.stretches.is_empty()
    }
}

/// Looks a log found damaged by [`read_log`] gets again, and the first pause before one (doubled
/// each time: 1 + 2 + 4 + 8 ms in all).
const SETTLE_TRIES: u32 = 4;
const SETTLE_FIRST_PAUSE: std::time::Duration = std::time::Duration::from_millis(1);

/// Reads a 1-N log whole and decodes its records after its header (`None` when the log is
/// shorter than its header). Damage it finds is looked at again a few times ([`SETTLE_TRIES`])
/// before it counts: a log its writer is appending to can read torn while it does. Through
/// ceph-fuse, 2 processes of tests/mpi/mdtest_hard.c on one client, creating files in one
/// directory and each reading the other's log whole, read stretches of one to five records,
/// mostly zeros, followed by whole records (bytes appended later seen before bytes appended
/// earlier), and a create failed with `EIO` 1 to 6 times in 400, while the log on disk was whole;
/// a second look 1 ms later found every such stretch whole (docs/backends.md, "CephFS"). Damage
/// that stays through the looks is damage.
pub(super) fn read_log(file: &crate::sys::File) -> crate::error::Result<(Vec<u8>, Option<fmt::Decoded>)> {
    let hdr = crate::format::INDEX_HEADER_LEN;
    let mut pause = SETTLE_FIRST_PAUSE;
    let mut tries = 0;
    loop {
        let bytes = file.read_to_end_from(0, 0)?;
        if bytes.len() < hdr {
            return Ok((bytes, None));
        }
        let d = fmt::decode(&bytes[hdr..], hdr as u64);
        if d.damaged.is_empty() || tries == SETTLE_TRIES {
            if tries > 0 && d.damaged.is_empty() {
                crate::debug!(
                    "{}: damage read at first was gone at look {}",
                    file.path().display(),
                    tries + 1
                );
            }
            return Ok((bytes, Some(d)));
        }
        std::thread::sleep(pause);
        pause *= 2;
        tries += 1;
    }
}
