//! Differential test of the N-1 read/write paths: random sequences of operations by several
//! writers (separate handles with distinct pids, O_WRONLY and O_RDWR, some opened with O_TRUNC)
//! are applied to a PLFS file and to a plain file at the same time; every read must return the
//! same bytes and every size the same value. After the sequence (and at random points in it) every
//! handle is closed and a *fresh* `Plfs` instance, as another process would, must report the same
//! size through stat and read the same bytes: that checks the on-disk state, not only the
//! in-memory one.
//!
//! `PLFS_DIFF_CASES` sets the number of cases per variant (default 256).

mod common;

use common::{assert_bytes_eq, pattern, Fixture};
use plfs_core::config::GlobalParams;
use plfs_core::{OpenFile, OpenFlags, Plfs};
use proptest::prelude::*;
use proptest::test_runner::{Config as PtConfig, TestCaseError};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

/// Handle slots: each holds at most one open handle.
const SLOTS: usize = 4;
/// Largest write or read length.
const MAX_LEN: usize = 64 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    ReadOnly,
    WriteOnly,
    ReadWrite,
}

impl Access {
    fn flags(self, trunc: bool) -> OpenFlags {
        let (read, write) = match self {
            Access::ReadOnly => (true, false),
            Access::WriteOnly => (false, true),
            Access::ReadWrite => (true, true),
        };
        OpenFlags {
            read,
            write,
            trunc: trunc && write,
            ..Default::default()
        }
    }
}

#[derive(Debug, Clone)]
enum Op {
    /// (Re)open a slot (closing what it held).
    Open {
        slot: usize,
        access: Access,
        trunc: bool,
    },
    /// pwrite through a writable handle (the slot is reopened O_RDWR if it is not writable);
    /// `other_pid` writes as a second writer pid of the same handle.
    Write {
        slot: usize,
        off: u64,
        len: usize,
        seed: u64,
        other_pid: bool,
    },
    /// Append at the end of file.
    Append {
        slot: usize,
        len: usize,
        seed: u64,
    },
    /// pread through a readable handle (any open readable one, else a temporary one).
    Read {
        slot: usize,
        off: u64,
        len: usize,
    },
    /// ftruncate through a writable handle.
    TruncHandle {
        slot: usize,
        size: u64,
    },
    /// truncate by path.
    TruncPath {
        size: u64,
    },
    Sync {
        slot: usize,
    },
    Close {
        slot: usize,
    },
    /// stat by path, fstat and size of every open handle.
    Stat,
    /// Close everything, check with a fresh instance, and go on with that instance.
    Remount,
}

fn offset() -> impl Strategy<Value = u64> {
    prop_oneof![
        8 => 0u64..256 * 1024,
        2 => 0u64..2 * 1024 * 1024,
        1 => 8u64 * 1024 * 1024..16 * 1024 * 1024,
    ]
}

fn length() -> impl Strategy<Value = usize> {
    prop_oneof![1 => Just(0usize), 3 => 1usize..64, 4 => 1usize..=MAX_LEN]
}

fn trunc_size() -> impl Strategy<Value = u64> {
    prop_oneof![2 => Just(0u64), 6 => 0u64..300 * 1024, 1 => 0u64..16 * 1024 * 1024]
}

fn access() -> impl Strategy<Value = Access> {
    prop_oneof![Just(Access::ReadOnly), Just(Access::WriteOnly), Just(Access::ReadWrite)]
}

fn op() -> impl Strategy<Value = Op> {
    let slot = 0..SLOTS;
    prop_oneof![
        3 => (slot.clone(), access(), proptest::bool::weighted(0.2))
            .prop_map(|(slot, access, trunc)| Op::Open { slot, access, trunc }),
        10 => (slot.clone(), offset(), length(), any::<u64>(), proptest::bool::weighted(0.15))
            .prop_map(|(slot, off, len, seed, other_pid)| Op::Write { slot, off, len, seed, other_pid }),
        1 => (slot.clone(), length(), any::<u64>()).prop_map(|(slot, len, seed)| Op::Append { slot, len, seed }),
        6 => (slot.clone(), offset(), prop_oneof![length(), Just(2 * MAX_LEN)])
            .prop_map(|(slot, off, len)| Op::Read { slot, off, len }),
        1 => (slot.clone(), trunc_size()).prop_map(|(slot, size)| Op::TruncHandle { slot, size }),
        1 => trunc_size().prop_map(|size| Op::TruncPath { size }),
        1 => slot.clone().prop_map(|slot| Op::Sync { slot }),
        2 => slot.clone().prop_map(|slot| Op::Close { slot }),
        2 => Just(Op::Stat),
        1 => Just(Op::Remount),
    ]
}

fn ops(max: usize) -> impl Strategy<Value = Vec<Op>> {
    proptest::collection::vec(op(), 1..=max)
}

fn cases() -> u32 {
    std::env::var("PLFS_DIFF_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

fn pt_config() -> PtConfig {
    PtConfig {
        cases: cases(),
        failure_persistence: None,
        max_shrink_iters: 2048,
        ..PtConfig::default()
    }
}

/// Turns a PLFS error into a test failure naming the operation.
fn ok<T>(r: plfs_core::Result<T>, what: &str) -> Result<T, TestCaseError> {
    r.map_err(|e| TestCaseError::fail(format!("{what}: {e}")))
}

/// The state of one run: PLFS side and plain-file side.
struct Run<'a> {
    fx: &'a Fixture,
    plfs: Plfs,
    path: PathBuf,
    slots: Vec<Option<(OpenFile, Access)>>,
    next_pid: u32,
    plain: File,
}

impl<'a> Run<'a> {
    fn new(fx: &'a Fixture) -> Result<Self, TestCaseError> {
        let plfs = fx.plfs();
        let path = fx.path("f");
        let f = ok(plfs.open(&path, common::wo_create(), 0o644, 1), "create")?;
        ok(f.close(), "close after create")?;
        let plain = File::options()
            .read(true)
            .write(true)
            .create_new(true)
            .open(fx.dir.path().join("plain"))
            .unwrap();
        Ok(Run {
            fx,
            plfs,
            path,
            slots: (0..SLOTS).map(|_| None).collect(),
            next_pid: 100,
            plain,
        })
    }

    fn plain_len(&self) -> u64 {
        self.plain.metadata().unwrap().len()
    }

    fn plain_read(&self, off: u64, len: usize) -> Vec<u8> {
        let mut buf = vec![0u8; len];
        let mut n = 0;
        while n < len {
            let k = self.plain.read_at(&mut buf[n..], off + n as u64).unwrap();
            if k == 0 {
                break;
            }
            n += k;
        }
        buf.truncate(n);
        buf
    }

    fn close_slot(&mut self, slot: usize) -> Result<(), TestCaseError> {
        if let Some((f, _)) = self.slots[slot].take() {
            ok(f.close(), "close")?;
        }
        Ok(())
    }

    fn open_slot(&mut self, slot: usize, access: Access, trunc: bool) -> Result<(), TestCaseError> {
        self.close_slot(slot)?;
        self.next_pid += 1;
        let f = ok(
            self.plfs.open(&self.path, access.flags(trunc), 0, self.next_pid),
            "open",
        )?;
        if trunc && access != Access::ReadOnly {
            self.plain.set_len(0).unwrap();
        }
        self.slots[slot] = Some((f, access));
        Ok(())
    }

    /// A writable handle in `slot`, reopening the slot O_RDWR if needed.
    fn writable(&mut self, slot: usize) -> Result<&OpenFile, TestCaseError> {
        if !matches!(self.slots[slot], Some((_, Access::WriteOnly | Access::ReadWrite))) {
            self.open_slot(slot, Access::ReadWrite, false)?;
        }
        Ok(&self.slots[slot].as_ref().unwrap().0)
    }

    fn read(&mut self, slot: usize, off: u64, len: usize) -> Result<(), TestCaseError> {
        let want = self.plain_read(off, len);
        let mut buf = vec![0xa5u8; len];
        let readable = (0..SLOTS)
            .map(|i| (slot + i) % SLOTS)
            .find(|&i| matches!(self.slots[i], Some((_, Access::ReadOnly | Access::ReadWrite))));
        let n = match readable {
            Some(i) => ok(self.slots[i].as_ref().unwrap().0.read(&mut buf, off), "read")?,
            None => {
                self.next_pid += 1;
                let f = ok(
                    self.plfs.open(&self.path, common::ro(), 0, self.next_pid),
                    "open for read",
                )?;
                let n = ok(f.read(&mut buf, off), "read (temporary handle)")?;
                ok(f.close(), "close (temporary handle)")?;
                n
            }
        };
        buf.truncate(n);
        if buf != want {
            return Err(TestCaseError::fail(format!(
                "read({off}, {len}): got {n} bytes, want {}; first difference at {:?}",
                want.len(),
                common::first_diff(&buf, &want)
            )));
        }
        Ok(())
    }

    fn stat(&self) -> Result<(), TestCaseError> {
        let want = self.plain_len();
        let st = ok(self.plfs.stat(&self.path), "stat")?;
        prop_assert_eq!(st.size, want, "stat size");
        for (f, _) in self.slots.iter().flatten() {
            prop_assert_eq!(ok(f.size(), "size")?, want, "OpenFile::size");
            prop_assert_eq!(ok(self.plfs.fstat(f), "fstat")?.size, want, "fstat size");
        }
        Ok(())
    }

    /// Closes every handle and checks stat and the whole contents with a fresh instance, which
    /// then replaces the current one.
    fn remount(&mut self) -> Result<(), TestCaseError> {
        for s in 0..SLOTS {
            self.close_slot(s)?;
        }
        let fresh = self.fx.plfs();
        let want_len = self.plain_len();
        let st = ok(fresh.stat(&self.path), "fresh stat")?;
        prop_assert_eq!(st.size, want_len, "size seen by a fresh instance (stat fast path)");
        let f = ok(fresh.open(&self.path, common::ro(), 0, 7), "fresh open")?;
        let got = ok(common::read_all(&f), "fresh read")?;
        ok(f.close(), "fresh close")?;
        let want = self.plain_read(0, want_len as usize);
        if let Some(i) = common::first_diff(&got, &want) {
            return Err(TestCaseError::fail(format!(
                "fresh instance reads {} bytes, plain file has {}; first difference at {i}",
                got.len(),
                want.len()
            )));
        }
        self.plfs = fresh;
        Ok(())
    }

    fn apply(&mut self, op: &Op) -> Result<(), TestCaseError> {
        match *op {
            Op::Open { slot, access, trunc } => self.open_slot(slot, access, trunc)?,
            Op::Write {
                slot,
                off,
                len,
                seed,
                other_pid,
            } => {
                let data = pattern(seed, off, len);
                let f = self.writable(slot)?;
                let n = if other_pid {
                    ok(f.write_as(&data, off, 50_000 + slot as u32), "write_as")?
                } else {
                    ok(f.write(&data, off), "write")?
                };
                prop_assert_eq!(n, len);
                self.plain.write_all_at(&data, off).unwrap();
            }
            Op::Append { slot, len, seed } => {
                let end = self.plain_len();
                let data = pattern(seed, end, len);
                let f = self.writable(slot)?;
                let (at, n) = ok(f.append(&data), "append")?;
                prop_assert_eq!((at, n), (end, len), "append offset");
                self.plain.write_all_at(&data, end).unwrap();
            }
            Op::Read { slot, off, len } => self.read(slot, off, len)?,
            Op::TruncHandle { slot, size } => {
                ok(self.writable(slot)?.truncate(size), "ftruncate")?;
                self.plain.set_len(size).unwrap();
            }
            Op::TruncPath { size } => {
                ok(self.plfs.truncate(&self.path, size), "truncate")?;
                self.plain.set_len(size).unwrap();
            }
            Op::Sync { slot } => {
                if let Some((f, _)) = &self.slots[slot] {
                    ok(f.sync(), "sync")?;
                }
            }
            Op::Close { slot } => self.close_slot(slot)?,
            Op::Stat => self.stat()?,
            Op::Remount => self.remount()?,
        }
        Ok(())
    }
}

fn run_case(fx: &Fixture, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut run = Run::new(fx)?;
    for (i, op) in ops.iter().enumerate() {
        run.apply(op)
            .map_err(|e| TestCaseError::fail(format!("op #{i} {op:?}: {e}")))?;
    }
    run.stat()?;
    run.remount()
}

/// Runs the property with a fresh fixture per case.
fn check(tag: &str, ncanon: usize, nshadow: usize, global: GlobalParams) {
    let mut runner = proptest::test_runner::TestRunner::new(pt_config());
    let r = runner.run(&ops(30), |ops| {
        let fx = Fixture::new(tag, ncanon, nshadow, global.clone());
        run_case(&fx, &ops)
    });
    if let Err(e) = r {
        panic!("{tag}: {e}");
    }
}

#[test]
fn differential_one_backend() {
    check("diff1", 1, 0, GlobalParams::default());
}

#[test]
fn differential_two_canonical_one_shadow() {
    check("diff-shadow", 2, 1, GlobalParams::default());
}

#[test]
fn differential_three_backends_few_hostdirs() {
    check(
        "diff3",
        3,
        0,
        GlobalParams {
            num_hostdirs: 2,
            ..GlobalParams::default()
        },
    );
}

#[test]
fn differential_index_buffer_one_record() {
    check(
        "diff-buf1",
        1,
        0,
        GlobalParams {
            index_buffer_records: 1,
            ..GlobalParams::default()
        },
    );
}

#[test]
fn differential_large_index_buffer_with_checksums() {
    let g = GlobalParams {
        index_buffer_records: 1 << 20,
        data_checksums: true,
        ..GlobalParams::default()
    };
    check("diff-bigbuf", 2, 0, g);
}

/// A fixed sequence touching every operation, so a regression shows up with a readable failure
/// even before proptest shrinks anything.
#[test]
fn differential_fixed_sequence() {
    let fx = Fixture::simple("diff-fixed");
    let seq = vec![
        Op::Open {
            slot: 0,
            access: Access::WriteOnly,
            trunc: false,
        },
        Op::Write {
            slot: 0,
            off: 0,
            len: 1000,
            seed: 1,
            other_pid: false,
        },
        Op::Open {
            slot: 1,
            access: Access::ReadWrite,
            trunc: false,
        },
        Op::Write {
            slot: 1,
            off: 500,
            len: 1000,
            seed: 2,
            other_pid: false,
        },
        Op::Write {
            slot: 0,
            off: 1 << 20,
            len: 10,
            seed: 3,
            other_pid: true,
        },
        Op::Read {
            slot: 1,
            off: 0,
            len: 4000,
        },
        Op::TruncHandle { slot: 1, size: 700 },
        Op::Stat,
        Op::Write {
            slot: 0,
            off: 650,
            len: 100,
            seed: 4,
            other_pid: false,
        },
        Op::Sync { slot: 0 },
        Op::TruncPath { size: 5000 },
        Op::Read {
            slot: 3,
            off: 600,
            len: 10_000,
        },
        Op::Append {
            slot: 2,
            len: 33,
            seed: 5,
        },
        Op::Remount,
        Op::Open {
            slot: 2,
            access: Access::WriteOnly,
            trunc: true,
        },
        Op::Write {
            slot: 2,
            off: 3,
            len: 3,
            seed: 6,
            other_pid: false,
        },
        Op::Stat,
        Op::Close { slot: 2 },
        Op::TruncPath { size: 0 },
        Op::Write {
            slot: 3,
            off: 10,
            len: 0,
            seed: 7,
            other_pid: false,
        },
        Op::Stat,
    ];
    if let Err(e) = run_case(&fx, &seq) {
        panic!("{e}");
    }
    // The same bytes through the plain helpers as through the property's own check.
    let got = common::read_fresh(&fx, &fx.path("f")).unwrap();
    let plain = std::fs::read(fx.dir.path().join("plain")).unwrap();
    assert_bytes_eq(&got, &plain, "final contents");
}
