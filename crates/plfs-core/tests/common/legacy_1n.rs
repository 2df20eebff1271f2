//! PLFS 2.x 1-N directories made by hand from the documented format (there is no fixture from
//! the original): what `legacy.rs` reads and `upgrade_crash.rs` converts.

use plfs_format::legacy::small::{encode_name, encode_small_index, ops};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// One writer's log triple in `<backend>/<dir>/SMALLFILECONTAINER/`.
pub struct W {
    dir: PathBuf,
    suffix: String,
    names: Vec<u8>,
    index: Vec<u8>,
    data: Vec<u8>,
}

const fn ts(sec: u64, usec: u64) -> u64 {
    (sec << 32) | usec
}

impl W {
    fn new(backend: &Path, dir: &str, pid: u32) -> W {
        let dir = backend.join(dir).join("SMALLFILECONTAINER");
        std::fs::create_dir_all(&dir).unwrap();
        W {
            dir,
            suffix: format!("1700000000.123456.host.{pid}"),
            names: Vec::new(),
            index: Vec::new(),
            data: Vec::new(),
        }
    }
    /// Appends a name record; returns its offset (the fid of an OPEN).
    fn name(&mut self, op: u32, t: u64, names: &[&str]) -> u64 {
        let off = self.names.len() as u64;
        self.names.extend_from_slice(&encode_name(op, t, names));
        off
    }
    fn write(&mut self, fid: u64, off: u64, bytes: &[u8], t: u64) {
        let phys = self.data.len() as u64;
        self.data.extend_from_slice(bytes);
        self.index
            .extend_from_slice(&encode_small_index(fid, off, bytes.len() as u64, t, Some(phys)));
    }
    fn trunc(&mut self, fid: u64, size: u64, t: u64) {
        self.index.extend_from_slice(&encode_small_index(fid, size, 0, t, None));
    }
    fn save(&self) {
        let f = |p: &str| self.dir.join(format!("dropping.{p}.{}", self.suffix));
        std::fs::write(f("name"), &self.names).unwrap();
        std::fs::write(f("index"), &self.index).unwrap();
        std::fs::write(f("data"), &self.data).unwrap();
    }
}

/// The PLFS 2.x 1-N directory `<dir>` on the two backends `b`: files f1 (25 bytes: a write,
/// an overwrite, a truncate, and a second writer's write past a hole on the other backend), f2,
/// f3 (created as `tmp`, renamed), and `gone` (created, written, deleted); `d`'s store holds
/// `meta-file-for-stat-operation` mode 0640.
pub fn build(b: &[PathBuf], dir: &str) {
    let mut a = W::new(&b[0], dir, 7);
    std::fs::write(a.dir.join("meta-file-for-stat-operation"), b"").unwrap();
    std::fs::set_permissions(
        a.dir.join("meta-file-for-stat-operation"),
        std::fs::Permissions::from_mode(0o640),
    )
    .unwrap();
    let mut w2 = W::new(&b[1], dir, 8);
    a.name(ops::CREATE, ts(100, 1), &["f1"]);
    let f1 = a.name(ops::OPEN, ts(100, 2), &["f1"]);
    a.name(ops::CREATE, ts(100, 3), &["f2"]);
    let f2 = a.name(ops::OPEN, ts(100, 4), &["f2"]);
    a.name(ops::CREATE, ts(100, 5), &["tmp"]);
    let f3 = a.name(ops::OPEN, ts(100, 6), &["tmp"]);
    a.name(ops::RENAME, ts(100, 7), &["tmp", "f3"]);
    a.name(ops::CREATE, ts(100, 8), &["gone"]);
    let g = a.name(ops::OPEN, ts(100, 9), &["gone"]);
    a.name(ops::DELETE, ts(100, 10), &["gone"]);
    a.write(f1, 0, b"AAAAAAAAAA", ts(101, 1));
    a.write(f2, 0, b"22222", ts(101, 2));
    a.write(f1, 5, b"BBB", ts(101, 3));
    a.write(f3, 0, b"3333", ts(101, 4));
    a.write(g, 0, b"gone", ts(101, 5));
    a.trunc(f1, 9, ts(101, 6));
    // A second writer, on the other backend, opens f1 and writes past a hole.
    let f1b = w2.name(ops::OPEN, ts(102, 0), &["f1"]);
    w2.write(f1b, 20, b"CCCCC", ts(102, 1));
    a.save();
    w2.save();
}
