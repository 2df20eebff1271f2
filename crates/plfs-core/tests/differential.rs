//! Differential test of the N-1 read/write paths: random sequences of operations by several
//! writers (separate handles with distinct pids, O_WRONLY and O_RDWR, some opened with O_TRUNC)
//! are applied to a PLFS file and to a plain file at the same time; every read must return the
//! same bytes and every size the same value. After the sequence (and at random points in it) every
//! handle is closed and a *fresh* `Plfs` instance, as another process would, must report the same
//! size through stat and read the same bytes: that checks the on-disk state, not only the
//! in-memory one. One variant spreads the handles over two live instances (two "processes") that
//! see each other's writes through sync and refresh.
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

/// One operation. `slot` picks a handle slot; `inst` a PLFS instance for path operations.
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
        inst: usize,
        size: u64,
    },
    Sync {
        slot: usize,
    },
    Close {
        slot: usize,
    },
    /// stat by path, fstat and size of every open handle.
    Stat {
        inst: usize,
    },
    /// Close everything (and optionally flatten the index), check with a fresh instance, and go
    /// on with fresh instances.
    Remount {
        flatten: bool,
    },
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
        1 => (0..2usize, trunc_size()).prop_map(|(inst, size)| Op::TruncPath { inst, size }),
        1 => slot.clone().prop_map(|slot| Op::Sync { slot }),
        2 => slot.clone().prop_map(|slot| Op::Close { slot }),
        2 => (0..2usize).prop_map(|inst| Op::Stat { inst }),
        1 => any::<bool>().prop_map(|flatten| Op::Remount { flatten }),
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

/// The state of one run: the PLFS side and the plain-file side.
///
/// With several PLFS instances (as several processes would have), slot `s` belongs to instance
/// `s % n`. Before an instance observes the file (read, stat, append), every handle of the other
/// instances is synced and the observer's handles are refreshed: the documented cross-process
/// visibility contract. With one instance nothing is ever synced or refreshed implicitly.
struct Run<'a> {
    fx: &'a Fixture,
    plfs: Vec<Plfs>,
    path: PathBuf,
    slots: Vec<Option<(OpenFile, Access)>>,
    next_pid: u32,
    plain: File,
}

impl<'a> Run<'a> {
    fn new(fx: &'a Fixture, instances: usize) -> Result<Self, TestCaseError> {
        let plfs: Vec<Plfs> = (0..instances).map(|_| fx.plfs()).collect();
        let path = fx.path("f");
        ok(
            ok(plfs[0].open(&path, common::wo_create(), 0o644, 1), "create")?.close(),
            "close after create",
        )?;
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

    fn inst_of(&self, slot: usize) -> usize {
        slot % self.plfs.len()
    }

    /// Makes everything written through the other instances visible to instance `inst`.
    fn settle(&self, inst: usize) -> Result<(), TestCaseError> {
        if self.plfs.len() == 1 {
            return Ok(());
        }
        for (s, h) in self.slots.iter().enumerate() {
            if let Some((f, access)) = h {
                if self.inst_of(s) != inst && *access != Access::ReadOnly {
                    ok(f.sync(), "sync (settle)")?;
                }
            }
        }
        for (s, h) in self.slots.iter().enumerate() {
            if let Some((f, _)) = h {
                if self.inst_of(s) == inst {
                    ok(f.refresh(), "refresh (settle)")?;
                }
            }
        }
        Ok(())
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
        let inst = self.inst_of(slot);
        let f = ok(
            self.plfs[inst].open(&self.path, access.flags(trunc), 0, self.next_pid),
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
        let inst = self.inst_of(slot);
        self.settle(inst)?;
        let want = self.plain_read(off, len);
        let mut buf = vec![0xa5u8; len];
        let readable = (0..SLOTS)
            .map(|i| (slot + i) % SLOTS)
            .filter(|&i| self.inst_of(i) == inst)
            .find(|&i| matches!(self.slots[i], Some((_, Access::ReadOnly | Access::ReadWrite))));
        let n = match readable {
            Some(i) => ok(self.slots[i].as_ref().unwrap().0.read(&mut buf, off), "read")?,
            None => {
                self.next_pid += 1;
                let f = ok(
                    self.plfs[inst].open(&self.path, common::ro(), 0, self.next_pid),
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
                "read({off}, {len}) through instance {inst}: got {n} bytes, want {}; first difference at {:?}",
                want.len(),
                common::first_diff(&buf, &want)
            )));
        }
        Ok(())
    }

    fn stat(&self, inst: usize) -> Result<(), TestCaseError> {
        let inst = inst % self.plfs.len();
        self.settle(inst)?;
        let want = self.plain_len();
        let st = ok(self.plfs[inst].stat(&self.path), "stat")?;
        prop_assert_eq!(st.size, want, "stat size (instance {})", inst);
        for (s, h) in self.slots.iter().enumerate() {
            if let Some((f, _)) = h.as_ref().filter(|_| self.inst_of(s) == inst) {
                prop_assert_eq!(ok(f.size(), "size")?, want, "OpenFile::size of slot {}", s);
                prop_assert_eq!(
                    ok(self.plfs[inst].fstat(f), "fstat")?.size,
                    want,
                    "fstat size of slot {}",
                    s
                );
            }
        }
        Ok(())
    }

    /// Closes every handle (then writes a flattened index if `flatten`) and checks stat and the
    /// whole contents with a fresh instance; fresh instances then replace the current ones.
    fn remount(&mut self, flatten: bool) -> Result<(), TestCaseError> {
        for s in 0..SLOTS {
            self.close_slot(s)?;
        }
        if flatten {
            ok(plfs_core::tools::flatten(&self.fx.plfs(), &self.path), "flatten")?;
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
        self.plfs = (0..self.plfs.len()).map(|_| self.fx.plfs()).collect();
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
                self.writable(slot)?;
                self.settle(self.inst_of(slot))?;
                let end = self.plain_len();
                let data = pattern(seed, end, len);
                let (at, n) = ok(self.writable(slot)?.append(&data), "append")?;
                prop_assert_eq!((at, n), (end, len), "append offset");
                self.plain.write_all_at(&data, end).unwrap();
            }
            Op::Read { slot, off, len } => self.read(slot, off, len)?,
            Op::TruncHandle { slot, size } => {
                ok(self.writable(slot)?.truncate(size), "ftruncate")?;
                self.plain.set_len(size).unwrap();
            }
            Op::TruncPath { inst, size } => {
                let inst = inst % self.plfs.len();
                ok(self.plfs[inst].truncate(&self.path, size), "truncate")?;
                self.plain.set_len(size).unwrap();
            }
            Op::Sync { slot } => {
                if let Some((f, _)) = &self.slots[slot] {
                    ok(f.sync(), "sync")?;
                }
            }
            Op::Close { slot } => self.close_slot(slot)?,
            Op::Stat { inst } => self.stat(inst)?,
            Op::Remount { flatten } => self.remount(flatten)?,
        }
        Ok(())
    }
}

fn run_case(fx: &Fixture, instances: usize, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut run = Run::new(fx, instances)?;
    for (i, op) in ops.iter().enumerate() {
        run.apply(op)
            .map_err(|e| TestCaseError::fail(format!("op #{i} {op:?}: {e}")))?;
    }
    for i in 0..instances {
        run.stat(i)?;
    }
    run.remount(false)
}

/// Runs the property with a fresh fixture per case.
fn check(tag: &str, ncanon: usize, nshadow: usize, instances: usize, global: GlobalParams) {
    let mut runner = proptest::test_runner::TestRunner::new(pt_config());
    let r = runner.run(&ops(30), |ops| {
        let fx = Fixture::new(tag, ncanon, nshadow, global.clone());
        run_case(&fx, instances, &ops)
    });
    if let Err(e) = r {
        panic!("{tag}: {e}");
    }
}

fn params(f: impl FnOnce(&mut GlobalParams)) -> GlobalParams {
    let mut g = GlobalParams::default();
    f(&mut g);
    g
}

#[test]
fn differential_one_backend() {
    check("diff1", 1, 0, 1, GlobalParams::default());
}

#[test]
fn differential_two_canonical_one_shadow() {
    check("diff-shadow", 2, 1, 1, GlobalParams::default());
}

#[test]
fn differential_three_backends_few_hostdirs_few_descriptors() {
    check(
        "diff3",
        3,
        0,
        1,
        params(|g| {
            g.num_hostdirs = 2;
            g.max_open_data_logs = 1;
            g.threadpool_size = 3;
        }),
    );
}

#[test]
fn differential_index_buffer_one_record() {
    check(
        "diff-buf1",
        1,
        0,
        1,
        params(|g| {
            g.index_buffer_records = 1;
            g.threadpool_size = 1;
        }),
    );
}

#[test]
fn differential_large_index_buffer_with_checksums() {
    check(
        "diff-bigbuf",
        2,
        0,
        1,
        params(|g| {
            g.index_buffer_records = 1 << 20;
            g.data_checksums = true;
        }),
    );
}

#[test]
fn differential_two_instances() {
    check("diff-2inst", 2, 0, 2, params(|g| g.index_buffer_records = 4));
}

/// A fixed sequence touching every operation, so a regression shows up with a readable failure
/// even before proptest shrinks anything.
#[test]
fn differential_fixed_sequence() {
    use Access::*;
    let open = |slot, access, trunc| Op::Open { slot, access, trunc };
    let write = |slot, off, len, seed, other_pid| Op::Write {
        slot,
        off,
        len,
        seed,
        other_pid,
    };
    let read = |slot, off, len| Op::Read { slot, off, len };
    let seq = vec![
        open(0, WriteOnly, false),
        write(0, 0, 1000, 1, false),
        open(1, ReadWrite, false),
        write(1, 500, 1000, 2, false),
        write(0, 1 << 20, 10, 3, true),
        read(1, 0, 4000),
        Op::TruncHandle { slot: 1, size: 700 },
        Op::Stat { inst: 0 },
        write(0, 650, 100, 4, false),
        Op::Sync { slot: 0 },
        Op::TruncPath { inst: 1, size: 5000 },
        read(3, 600, 10_000),
        Op::Append {
            slot: 2,
            len: 33,
            seed: 5,
        },
        Op::Remount { flatten: true },
        open(2, WriteOnly, true),
        write(2, 3, 3, 6, false),
        Op::Stat { inst: 1 },
        Op::Close { slot: 2 },
        Op::TruncPath { inst: 0, size: 0 },
        write(3, 10, 0, 7, false),
        Op::Stat { inst: 0 },
    ];
    for instances in [1, 2] {
        let fx = Fixture::simple("diff-fixed");
        if let Err(e) = run_case(&fx, instances, &seq) {
            panic!("{instances} instance(s): {e}");
        }
        let got = common::read_fresh(&fx, &fx.path("f")).unwrap();
        let plain = std::fs::read(fx.dir.path().join("plain")).unwrap();
        assert_bytes_eq(&got, &plain, "final contents");
    }
}

/// Cross-instance truncates: an instance that loaded a truncate-only index must notice when a
/// truncate to zero by another instance wipes the container.
#[test]
fn differential_wipe_seen_by_other_instance() {
    let seq = vec![
        Op::Open {
            slot: 1,
            access: Access::ReadOnly,
            trunc: false,
        },
        Op::TruncPath { inst: 0, size: 100 },
        Op::Read {
            slot: 1,
            off: 0,
            len: 200,
        },
        Op::TruncPath { inst: 0, size: 0 },
        Op::Stat { inst: 1 },
        Op::Read {
            slot: 1,
            off: 0,
            len: 200,
        },
    ];
    let fx = Fixture::simple("diff-wipe");
    if let Err(e) = run_case(&fx, 2, &seq) {
        panic!("{e}");
    }
}

/// Found by `differential_two_instances` in CI: a process truncates the file to 1 byte while it
/// has it open (a truncate dropping), then another process opens it with `O_TRUNC` while nobody
/// has written, which wipes the container (the dropping too). The first process kept its own
/// truncate in its merged index and went on reporting 1 byte: a truncate it made itself was not
/// among the droppings whose disappearance means a wipe.
#[test]
fn differential_a_wipe_drops_this_process_s_own_truncate() {
    let fx = Fixture::new("diff-wipe-own-trunc", 2, 0, params(|g| g.index_buffer_records = 4));
    let ops = vec![
        Op::TruncHandle { slot: 2, size: 0 },
        Op::Append {
            slot: 0,
            len: 0,
            seed: 0,
        },
        Op::TruncHandle { slot: 2, size: 1 },
        Op::Open {
            slot: 1,
            access: Access::WriteOnly,
            trunc: true,
        },
    ];
    run_case(&fx, 2, &ops).unwrap();
}

/// Found by `differential_two_instances` in CI (2026-12-02): one byte appended and closed, an
/// empty write, the file opened for reading in one process, then opened with `O_TRUNC` by
/// another (no writer open: the container is wiped); the first process's stat said 1 byte.
#[test]
fn differential_a_wipe_seen_by_a_process_holding_the_file_open_for_reading() {
    let fx = Fixture::new("diff-wipe-reader", 2, 0, params(|g| g.index_buffer_records = 4));
    let ops = vec![
        Op::Append {
            slot: 0,
            len: 1,
            seed: 0,
        },
        Op::Write {
            slot: 2,
            off: 0,
            len: 0,
            seed: 0,
            other_pid: false,
        },
        Op::Open {
            slot: 0,
            access: Access::ReadOnly,
            trunc: false,
        },
        Op::Open {
            slot: 1,
            access: Access::WriteOnly,
            trunc: true,
        },
        Op::Sync { slot: 0 },
    ];
    run_case(&fx, 2, &ops).unwrap();
}
