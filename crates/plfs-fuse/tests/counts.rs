//! Counts that load cannot move (issue 26, the FUSE row): the daemon's system calls per 64 KiB
//! write request and its data-log reads per 1 MiB read request of an N-1 strided file, from
//! `strace -c` of the daemon while only those requests arrive.

mod common;

use common::{fuse_available, Mounted};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;

const REC: usize = 65536;
const WRITERS: usize = 4;
/// Records per writer: 16 x 4 writers x 64 KiB = a 4 MiB file.
const NREC: usize = 16;

/// A python process driven line by line: it says "ready" after its set-up and runs each
/// further step when sent a line.
struct Driven {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Driven {
    fn spawn(script: &str, arg: usize) -> Driven {
        let mut child = Command::new("python3")
            .args(["-c", script, &arg.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut d = Driven { child, stdin, stdout };
        d.expect("ready");
        d
    }

    fn expect(&mut self, what: &str) {
        let mut l = String::new();
        self.stdout.read_line(&mut l).unwrap();
        assert_eq!(l.trim(), what);
    }

    fn step(&mut self, then: &str) {
        self.stdin.write_all(b"go\n").unwrap();
        self.stdin.flush().unwrap();
        self.expect(then);
    }

    fn finish(mut self) {
        self.stdin.write_all(b"go\n").unwrap();
        drop(self.stdin);
        assert!(self.child.wait().unwrap().success());
    }
}

/// `strace -c -f` of the daemon around `f`: calls per system call name.
fn syscalls_during(m: &Mounted, f: impl FnOnce()) -> HashMap<String, u64> {
    let out = m.dir.join("strace-c.txt");
    let mut st = Command::new("strace")
        .args(["-f", "-c", "-o"])
        .arg(&out)
        .args(["-p", &m.daemon_pid().to_string()])
        .stderr(Stdio::null())
        .spawn()
        .expect("strace");
    std::thread::sleep(Duration::from_millis(700));
    f();
    std::thread::sleep(Duration::from_millis(200));
    // SAFETY: kill(2) on the pid of a child we spawned and have not reaped.
    unsafe { libc::kill(st.id() as i32, libc::SIGINT) };
    st.wait().unwrap();
    // "% time  seconds  usecs/call  calls  [errors]  syscall"
    std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let calls = w.get(3)?.parse().ok()?;
            let name = *w.last()?;
            (w.len() >= 5 && name != "total").then(|| (name.to_string(), calls))
        })
        .collect()
}

/// Four processes write one N-1 file in 64 KiB records, strided; then one process reads it
/// back in 1 MiB reads. The mount uses direct I/O for reads too, so each read(2) is one request.
/// - Each 64 KiB write request costs the daemon exactly one data-log write (a `pwritev` of the
///   record's frame and bytes), one read of `/dev/fuse` and one reply: 3 calls, and at most
///   3.25 with everything else counted (lock waits).
/// - Each 1 MiB read request covers 16 records, 4 of each writer, lying back to back in that
///   writer's data log: 4 data-log reads (one `preadv` per log), not 16.
#[test]
fn requests_cost_a_fixed_number_of_system_calls() {
    if !fuse_available() {
        return;
    }
    let m = Mounted::with_args("counts", 1, "", &["--direct-io"]);
    let f = m.p("n1");
    // Record i of writer r at (i * WRITERS + r) * REC; the first before "ready", so its data
    // log and index exist before the counted writes.
    let writer = format!(
        "import os, sys\nr = int(sys.argv[1])\nfd = os.open('{}', os.O_WRONLY | os.O_CREAT, 0o644)\n\
         rec = lambda i: bytes([(i * {WRITERS} + r) % 251]) * {REC}\n\
         os.pwrite(fd, rec(0), r * {REC})\nprint('ready', flush=True)\nsys.stdin.readline()\n\
         for i in range(1, {NREC}):\n    os.pwrite(fd, rec(i), (i * {WRITERS} + r) * {REC})\n\
         print('done', flush=True)\nsys.stdin.readline()\nos.close(fd)\n",
        f.display()
    );
    let mut ws: Vec<Driven> = (0..WRITERS).map(|r| Driven::spawn(&writer, r)).collect();
    let counted = (WRITERS * (NREC - 1)) as u64;
    let w = syscalls_during(&m, || {
        for d in &mut ws {
            d.step("done");
        }
    });
    ws.into_iter().for_each(Driven::finish);
    let get = |c: &HashMap<String, u64>, n: &str| c.get(n).copied().unwrap_or(0);
    let total: u64 = w.values().sum();
    assert_eq!(
        get(&w, "pwritev") + get(&w, "pwrite64"),
        counted,
        "one data-log write per request: {w:?}"
    );
    assert_eq!(get(&w, "read"), counted, "one read of /dev/fuse per request: {w:?}");
    assert_eq!(get(&w, "writev"), counted, "one reply per request: {w:?}");
    assert!(
        total as f64 <= 3.25 * counted as f64,
        "{total} calls for {counted} write requests: {w:?}"
    );

    // The first 1 MiB read loads the index (before "ready"); 3 more are counted. The buffer is
    // page-aligned (an anonymous map): an unaligned one spans 257 pages, two requests.
    let reader = format!(
        "import mmap, os, sys\nfd = os.open('{}', os.O_RDONLY)\nm = mmap.mmap(-1, 1 << 20)\n\
         def get(k):\n    assert os.preadv(fd, [m], k << 20) == 1 << 20\n    return m[:]\n\
         b = get(0)\nprint('ready', flush=True)\nsys.stdin.readline()\nfor k in range(1, 4):\n    b += get(k)\n\
         print('done', flush=True)\nsys.stdin.readline()\n\
         ok = all(b[i * {REC}:(i + 1) * {REC}] == bytes([i % 251]) * {REC} for i in range({NREC} * {WRITERS}))\n\
         sys.exit(0 if ok and len(b) == 4 << 20 else 1)\n",
        f.display()
    );
    let mut rd = Driven::spawn(&reader, 0);
    let r = syscalls_during(&m, || rd.step("done"));
    rd.finish();
    let data_reads = get(&r, "preadv") + get(&r, "pread64");
    assert_eq!(get(&r, "read"), 3, "three read requests: {r:?}");
    assert_eq!(
        data_reads,
        3 * WRITERS as u64,
        "one data-log read per writer per request: {r:?}"
    );
}
