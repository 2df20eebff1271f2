//! Generates the golden containers of on-disk format v1 (tests/fixtures/plfs-v1-golden.tar.gz):
//! files written by this version of plfs, with their expected bytes computed by an independent
//! in-memory model, so that every later version can be tested to read them byte-exact
//! (crates/plfs-core/tests/golden.rs). The committed tarballs are what the test reads: the same
//! program run with the first v1 writer made `plfs-v1-golden-first.tar.gz`, and with the layered
//! core `plfs-v1-golden.tar.gz` (a writer that changes what it leaves on disk adds a tarball,
//! never replaces one). How it was made:
//!
//! ```sh
//! cargo run --release -p plfs-core --example make_golden -- /tmp/golden
//! cp /tmp/golden/plfs-v1-golden.tar.gz tests/fixtures/
//! ```
//!
//! Mount points: `/golden/n1` (N-1, backend `store/`) and `/golden/1n` (1-N, backend
//! `store1n/`). Files (N-1): `strided` (4 writers, pattern-compressed, an extended attribute),
//! `overwrites` (3 writers overwriting each other at pseudo-random offsets), `truncated` (shrunk
//! while a writer was open, written again, grown), `flattened` (with a `flat.index`),
//! `checksummed` (written with `data_checksums: true`). 1-N directory `d`: `a`, `b` (renamed
//! from `b0`), `c` (overwritten and truncated); `gone` was unlinked.

use plfs_core::config::{BackendRole, BackendSpec, GlobalParams, MountConfig, Workload};
use plfs_core::{Config, OpenFlags, Plfs};
use std::path::{Path, PathBuf};

fn config(root: &Path, global: GlobalParams) -> Config {
    let m = |mp: &str, dir: &str, workload| MountConfig {
        mount_point: mp.into(),
        workload,
        backends: vec![BackendSpec {
            location: root.join(dir),
            role: BackendRole::Both,
        }],
    };
    Config {
        files: vec![root.join("plfsrc")],
        global,
        mounts: vec![
            m("/golden/n1", "store", Workload::SharedFile),
            m("/golden/1n", "store1n", Workload::SmallFile),
        ],
        warnings: Vec::new(),
    }
}

fn wr() -> OpenFlags {
    OpenFlags {
        write: true,
        create: true,
        ..Default::default()
    }
}

/// A byte model of one file.
#[derive(Default)]
struct Model(Vec<u8>);

impl Model {
    fn write(&mut self, off: u64, data: &[u8]) {
        let end = off as usize + data.len();
        if self.0.len() < end {
            self.0.resize(end, 0);
        }
        self.0[off as usize..end].copy_from_slice(data);
    }
    fn truncate(&mut self, size: u64) {
        self.0.resize(size as usize, 0);
    }
}

fn bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = PathBuf::from(std::env::args().nth(1).ok_or("usage: make_golden OUTDIR")?);
    let root = out.join("golden");
    if root.exists() {
        std::fs::remove_dir_all(&root)?;
    }
    for d in ["store", "store1n", "expected"] {
        std::fs::create_dir_all(root.join(d))?;
    }
    let p = Plfs::new(config(&root, GlobalParams::default()))?;
    let n1 = Path::new("/golden/n1");
    let mut expected: Vec<(String, Vec<u8>)> = Vec::new();

    // strided: 4 writers, 16 records of 500 bytes each, interleaved (pattern-compressed).
    let f = n1.join("strided");
    let mut m = Model::default();
    let hs: Vec<_> = (0..4u32)
        .map(|w| p.open(&f, wr(), 0o640, w))
        .collect::<Result<_, _>>()?;
    for i in 0..16u64 {
        for (w, h) in hs.iter().enumerate() {
            let off = (i * 4 + w as u64) * 500;
            let d = bytes(off + 1, 500);
            h.write(&d, off)?;
            m.write(off, &d);
        }
    }
    hs[0].setxattr(b"user.golden", b"format v1")?;
    for h in hs {
        h.close()?;
    }
    expected.push(("n1/strided".into(), m.0));

    // overwrites: 3 writers overwrite each other at pseudo-random offsets.
    let f = n1.join("overwrites");
    let mut m = Model::default();
    let hs: Vec<_> = (10..13u32)
        .map(|w| p.open(&f, wr(), 0o644, w))
        .collect::<Result<_, _>>()?;
    for i in 0..120u64 {
        let r = bytes(i + 77, 8);
        let off = u64::from(r[0]) * 64 + u64::from(r[1]);
        let len = 1 + usize::from(r[2]);
        let d = bytes(i + 1000, len);
        hs[(i % 3) as usize].write(&d, off)?;
        m.write(off, &d);
    }
    for h in hs {
        h.close()?;
    }
    expected.push(("n1/overwrites".into(), m.0));

    // truncated: shrink while a writer is open (a trunc dropping), write again, grow.
    let f = n1.join("truncated");
    let mut m = Model::default();
    let h = p.open(&f, wr(), 0o600, 20)?;
    let d = bytes(5, 20_000);
    h.write(&d, 0)?;
    m.write(0, &d);
    h.truncate(7_345)?;
    m.truncate(7_345);
    let d = bytes(6, 3000);
    h.write(&d, 12_000)?;
    m.write(12_000, &d);
    h.truncate(30_000)?;
    m.truncate(30_000);
    h.close()?;
    expected.push(("n1/truncated".into(), m.0));

    // flattened: written, then `plfs flatten`.
    let f = n1.join("flattened");
    let mut m = Model::default();
    let h = p.open(&f, wr(), 0o644, 30)?;
    for i in 0..30u64 {
        let off = (29 - i) * 300;
        let d = bytes(i + 300, 400);
        h.write(&d, off)?;
        m.write(off, &d);
    }
    h.close()?;
    plfs_core::tools::flatten(&p, &f)?;
    expected.push(("n1/flattened".into(), m.0));

    // checksummed: written with data checksums on.
    let pc = Plfs::new(config(
        &root,
        GlobalParams {
            data_checksums: true,
            ..GlobalParams::default()
        },
    ))?;
    let f = n1.join("checksummed");
    let mut m = Model::default();
    let h = pc.open(&f, wr(), 0o644, 40)?;
    for i in 0..12u64 {
        let d = bytes(i + 500, 1024);
        h.write(&d, i * 1500)?;
        m.write(i * 1500, &d);
    }
    h.close()?;
    expected.push(("n1/checksummed".into(), m.0));

    // 1-N directory d.
    let d1 = Path::new("/golden/1n/d");
    p.mkdir(d1, 0o755)?;
    let mut models: Vec<(&str, Model)> = Vec::new();
    for (name, seed, len) in [
        ("a", 1u64, 3000usize),
        ("b0", 2, 100),
        ("c", 3, 20_000),
        ("gone", 4, 10),
    ] {
        let h = p.open(&d1.join(name), wr(), 0o644, 50)?;
        let d = bytes(seed + 900, len);
        h.write(&d, 0)?;
        h.close()?;
        let mut m = Model::default();
        m.write(0, &d);
        models.push((name, m));
    }
    let h = p.open(
        &d1.join("c"),
        OpenFlags {
            write: true,
            ..Default::default()
        },
        0,
        51,
    )?;
    let d = bytes(999, 500);
    h.write(&d, 1000)?;
    h.truncate(15_000)?;
    h.close()?;
    models[2].1.write(1000, &d);
    models[2].1.truncate(15_000);
    p.rename(&d1.join("b0"), &d1.join("b"))?;
    p.unlink(&d1.join("gone"))?;
    for (name, m) in models {
        match name {
            "gone" => {}
            "b0" => expected.push(("1n/d/b".into(), m.0)),
            n => expected.push((format!("1n/d/{n}"), m.0)),
        }
    }

    for (name, bytes) in &expected {
        let path = root.join("expected").join(name);
        std::fs::create_dir_all(path.parent().expect("has a parent"))?;
        std::fs::write(path, bytes)?;
    }
    let tarball = out.join("plfs-v1-golden.tar.gz");
    let st = std::process::Command::new("tar")
        .args(["czf"])
        .arg(&tarball)
        .arg("-C")
        .arg(&root)
        .args(["store", "store1n", "expected"])
        .status()?;
    if !st.success() {
        return Err("tar failed".into());
    }
    println!("wrote {} ({} files)", tarball.display(), expected.len());
    Ok(())
}
