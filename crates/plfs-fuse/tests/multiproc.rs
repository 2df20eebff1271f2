//! Several processes through one mount: N-1 writes make one data log per process, large
//! transfers arrive in 1 MiB requests, a random-operation stress test agrees with plain files,
//! and unmounting closes every writer.

mod common;

use common::{fuse_available, scripts, sh, sh_out, Mounted};
use std::path::Path;

/// Data logs of a file, as the `plfs query` tool lists them (they may live in shadow dirs).
fn data_logs_of(m: &Mounted, name: &str) -> usize {
    plfs_core::tools::query(&m.plfs(), &m.p(name))
        .unwrap()
        .iter()
        .filter(|p| p.kind == "data log")
        .count()
}

#[test]
fn n_processes_writing_one_file_make_n_data_logs() {
    if !fuse_available() {
        return;
    }
    let m = Mounted::with("nto1", 2, "");
    let plain = m.dir.join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    for n in [1usize, 2, 4, 7] {
        let name = format!("nto1_{n}");
        let model = plain.join(&name);
        sh(&format!(
            "python3 {} {} {n} 47008 40 --model {}",
            scripts().join("nwriters.py").display(),
            m.p(&name).display(),
            model.display()
        ));
        assert_eq!(
            std::fs::read(m.p(&name)).unwrap(),
            std::fs::read(&model).unwrap(),
            "{n} writers: contents"
        );
        assert_eq!(data_logs_of(&m, &name), n, "{n} writers: one data log each");
        let pids: std::collections::BTreeSet<u32> = plfs_core::tools::map(&m.plfs(), &m.p(&name))
            .unwrap()
            .iter()
            .map(|e| e.pid)
            .collect();
        assert_eq!(pids.len(), n, "{n} writers: index records name {n} pids");
        // Once the writers closed, a PLFS instance outside the daemon reads everything.
        let outside = m.plfs();
        let f = outside
            .open(
                &m.p(&name),
                plfs_core::OpenFlags {
                    read: true,
                    ..Default::default()
                },
                0,
                1,
            )
            .unwrap();
        let want = std::fs::read(&model).unwrap();
        let mut got = vec![0u8; want.len() + 10];
        assert_eq!(f.read(&mut got, 0).unwrap(), want.len());
        assert!(got[..want.len()] == want[..], "{n} writers: read outside the daemon");
    }
    // A writable descriptor inherited across fork: the child writes under its own pid.
    let model = plain.join("forked");
    sh(&format!(
        "python3 -c \"
import os
fd = os.open('{f}', os.O_WRONLY | os.O_CREAT, 0o644)
os.pwrite(fd, b'parent', 0)
pid = os.fork()
if pid == 0:
    os.pwrite(fd, b'child!', 6)
    os._exit(0)
os.waitpid(pid, 0)
os.close(fd)
\"",
        f = m.p("forked").display()
    ));
    std::fs::write(&model, b"parentchild!").unwrap();
    assert_eq!(std::fs::read(m.p("forked")).unwrap(), b"parentchild!");
    assert_eq!(data_logs_of(&m, "forked"), 2);
}

#[test]
fn large_transfers_use_one_mebibyte_requests() {
    if !fuse_available() {
        return;
    }
    let m = Mounted::new("large");
    let src = m.dir.join("src");
    std::fs::write(&src, common::pattern(3, 16 << 20)).unwrap();
    sh(&format!(
        "dd if={} of={} bs=4M status=none",
        src.display(),
        m.p("big").display()
    ));
    let map = plfs_core::tools::map(&m.plfs(), &m.p("big")).unwrap();
    let max = map.iter().map(|e| e.length).max().unwrap();
    assert_eq!(max, 1 << 20, "write requests of 1 MiB: {map:?}");
    assert!(map.len() <= 17, "16 MiB in about 16 requests, got {}", map.len());
    sh(&format!("cmp {} {}", src.display(), m.p("big").display()));
    // Requests are served by several threads.
    let workers = std::fs::read_dir(format!("/proc/{}/task", m.daemon_pid()))
        .unwrap()
        .filter(|t| {
            let comm = std::fs::read_to_string(t.as_ref().unwrap().path().join("comm")).unwrap_or_default();
            comm.starts_with("fuser-")
        })
        .count();
    assert_eq!(workers, plfs_fuse::DEFAULT_THREADS, "request-serving threads");
    // The mount's readahead was raised.
    let dev = plfs_fuse::mountinfo::fuse_mount_at(&m.mnt).unwrap().dev;
    let ra: u32 = std::fs::read_to_string(format!("/sys/class/bdi/{dev}/read_ahead_kb"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(ra >= 1024, "readahead {ra} KiB");
    // And reads of 4 MiB come back whole.
    let out = sh_out(&format!(
        "dd if={} bs=4M status=none | md5sum; md5sum < {}",
        m.p("big").display(),
        src.display()
    ));
    let l: Vec<&str> = out.lines().collect();
    assert_eq!(l[0], l[1]);
}

#[test]
fn random_operations_from_several_processes_match_plain_files() {
    if !fuse_available() {
        return;
    }
    // Small index buffers so records reach the index logs mid-run too.
    let m = Mounted::with("stress", 2, "  index_buffer_records: 8");
    let plain = m.dir.join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    for seed in [1, 2] {
        let sub = format!("s{seed}");
        std::fs::create_dir_all(m.p(&sub)).unwrap();
        std::fs::create_dir_all(plain.join(&sub)).unwrap();
        let out = sh_out(&format!(
            "timeout 600 python3 {} {} {} 4 250 25 {seed}",
            scripts().join("stress.py").display(),
            m.p(&sub).display(),
            plain.join(&sub).display()
        ));
        assert_eq!(out.trim(), "ok");
    }
    // The same files read back by a fresh daemon agree too.
    let mut m = m;
    m.unmount();
    let m2 = Mounted::remount(m);
    for seed in [1, 2] {
        for f in ["priv0", "priv1", "priv2", "priv3", "shared"] {
            let rel = format!("s{seed}/{f}");
            assert_eq!(
                std::fs::read(m2.p(&rel)).unwrap(),
                std::fs::read(m2.dir.join("plain").join(&rel)).unwrap(),
                "{rel} after remount"
            );
        }
    }
}

#[test]
fn unmount_closes_every_writer() {
    if !fuse_available() {
        return;
    }
    let mut m = Mounted::new("close");
    sh(&format!(
        "timeout 300 python3 {} {} 4 4096 100",
        scripts().join("nwriters.py").display(),
        m.p("f").display()
    ));
    sh(&format!("for i in 1 2 3; do echo $i >> {}; done", m.p("g").display()));
    let st = m.unmount();
    assert!(st.success(), "daemon exit status {st}");
    assert!(!plfs_fuse::is_mounted(&m.mnt));
    let open = m.backend_files("open.");
    assert!(open.is_empty(), "open droppings left: {open:?}");
    let q = plfs_core::tools::query(&m.plfs(), &m.p("f")).unwrap();
    let closes = q
        .iter()
        .filter(|p| p.path.file_name().unwrap().to_string_lossy().starts_with("close."))
        .count();
    assert_eq!(closes, 4, "one close dropping per writer: {q:?}");
    let p = m.plfs();
    assert_eq!(p.stat(&m.p("f")).unwrap().size, 4 * 4096 * 100);
    assert_eq!(p.stat(&m.p("g")).unwrap().size, 6);
}

#[test]
fn sigterm_unmounts_and_the_daemon_exits() {
    if !fuse_available() {
        return;
    }
    let mut m = Mounted::new("sigterm");
    std::fs::write(m.p("x"), b"data").unwrap();
    // SAFETY: kill with a valid pid and signal number has no memory-safety preconditions.
    assert_eq!(unsafe { libc::kill(m.daemon_pid() as i32, libc::SIGTERM) }, 0);
    let st = m.wait_daemon();
    assert!(st.success(), "{st}");
    assert!(!plfs_fuse::is_mounted(&m.mnt));
    assert_eq!(m.plfs().stat(&m.p("x")).unwrap().size, 4);
}

#[test]
fn posix_locks_conflict_between_processes() {
    if !fuse_available() {
        return;
    }
    let m = Mounted::new("locks");
    std::fs::write(m.p("l"), b"0123456789").unwrap();
    let script = format!(
        "
import fcntl, os, sys, time
f = open('{p}', 'r+')
fcntl.lockf(f, fcntl.LOCK_EX, 5, 0)
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    g = open('{p}', 'r+')
    try:
        fcntl.lockf(g, fcntl.LOCK_EX | fcntl.LOCK_NB, 5, 0)
        os.write(w, b'locked')
    except OSError:
        os.write(w, b'conflict')
    fcntl.lockf(g, fcntl.LOCK_EX | fcntl.LOCK_NB, 5, 5)
    os._exit(0)
os.waitpid(pid, 0)
print(os.read(r, 100).decode())
",
        p = m.p("l").display()
    );
    let out = sh_out(&format!("timeout 60 python3 -c \"{script}\""));
    assert_eq!(out.trim(), "conflict", "a second process cannot take a held lock");
    assert!(Path::new(&m.p("l")).exists());
}

/// Writes of several processes to one file are served at the same time: the daemon opens
/// writable files with FOPEN_PARALLEL_DIRECT_WRITES, without which the kernel holds the file's
/// lock across each write's round trip and the writers of an N-1 file take turns. Seen from
/// the daemon (strace, which also widens each call): two threads' pwrites into the data logs
/// overlap in time, which the kernel's exclusive lock makes impossible. The file is sized
/// first: writes that extend a file are still serialised by the kernel.
#[test]
fn writes_to_one_file_are_served_in_parallel() {
    if !fuse_available() {
        return;
    }
    let m = Mounted::new("parallel");
    let (rec, n) = (65536usize, 300usize);
    let f = m.p("f");
    std::fs::File::create(&f)
        .unwrap()
        .set_len((2 * n * rec) as u64)
        .unwrap();
    let trace = m.dir.join("strace.txt");
    let mut overlaps = 0;
    for attempt in 0..5 {
        let mut st = std::process::Command::new("strace")
            .args(["-f", "-ttt", "-T", "-e", "trace=pwrite64,pwritev", "-o"])
            .arg(&trace)
            .args(["-p", &m.daemon_pid().to_string()])
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("strace");
        std::thread::sleep(std::time::Duration::from_millis(500));
        // Both writers open the file, then wait for a common start (a line on stdin).
        let script = format!(
            "import os, sys\nr = int(sys.argv[1])\nfd = os.open('{}', os.O_WRONLY)\nb = bytes([65 + r]) * {rec}\n\
             sys.stdin.readline()\nfor i in range({n}):\n    os.pwrite(fd, b, (2 * i + r) * {rec})\nos.close(fd)\n",
            f.display()
        );
        let mut writers: Vec<_> = (0..2)
            .map(|r| {
                std::process::Command::new("python3")
                    .args(["-c", &script, &r.to_string()])
                    .stdin(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        std::thread::sleep(std::time::Duration::from_millis(300));
        for w in &mut writers {
            std::io::Write::write_all(w.stdin.as_mut().unwrap(), b"go\n").unwrap();
        }
        for mut w in writers {
            assert!(w.wait().unwrap().success());
        }
        // SAFETY: kill(2) on the pid of a child we spawned and have not reaped.
        unsafe { libc::kill(st.id() as i32, libc::SIGINT) };
        st.wait().unwrap();
        // "TID START pwrite64(FD, ..., 65536, OFF) = 65536 <DURATION>", or, when another
        // thread's call came in between, "TID START pwrite64(FD, ..., 65536, OFF <unfinished ...>"
        // then "TID TIME <... pwrite64 resumed>) = 65536 <DURATION>".
        let text = std::fs::read_to_string(&trace).unwrap();
        let mut open: std::collections::HashMap<u32, f64> = Default::default();
        let mut calls: Vec<(f64, f64, u32)> = Vec::new();
        for l in text.lines() {
            let mut w = l.split_whitespace();
            let (Some(Ok(tid)), Some(Ok(at))) = (w.next().map(str::parse::<u32>), w.next().map(str::parse::<f64>))
            else {
                continue;
            };
            let dur = || l.rsplit('<').next()?.trim_end_matches('>').parse::<f64>().ok();
            // A write goes out as one pwritev of its frame and its bytes (format 2).
            let data_write = (l.contains("pwrite64(") && l.contains(&format!(", {rec}, ")))
                || (l.contains("pwritev(") && l.contains(&format!("iov_len={rec}}}")));
            if data_write {
                if l.ends_with("<unfinished ...>") {
                    open.insert(tid, at);
                } else if let Some(d) = dur() {
                    calls.push((at, at + d, tid));
                }
            } else if l.contains("<... pwrite64 resumed>") || l.contains("<... pwritev resumed>") {
                if let (Some(start), Some(d)) = (open.remove(&tid), dur()) {
                    calls.push((start, start + d, tid));
                }
            }
        }
        calls.sort_by(|a, b| a.0.total_cmp(&b.0));
        assert!(
            calls.len() >= n,
            "attempt {attempt}: {} data-log writes traced",
            calls.len()
        );
        overlaps = calls.windows(2).filter(|w| w[0].2 != w[1].2 && w[1].0 < w[0].1).count();
        if overlaps > 0 {
            break;
        }
    }
    assert!(
        overlaps > 0,
        "no two writes to one file were ever served at the same time"
    );
    let data = std::fs::read(&f).unwrap();
    for (i, chunk) in data.chunks(rec).enumerate() {
        assert!(chunk.iter().all(|&b| b == 65 + (i % 2) as u8), "record {i}");
    }
}

/// Read-only opens use the page cache and readahead by default (a 4 KiB read(2) fetches much
/// more), and bypass it with `--direct-io` (each read(2) is one request of its own size), where
/// mmap still works. Seen from the daemon: the sizes of its reads from the data log.
#[test]
fn direct_io_mounts_read_without_the_page_cache() {
    if !fuse_available() {
        return;
    }
    for direct in [false, true] {
        let args: &[&str] = if direct { &["--direct-io"] } else { &[] };
        let m = Mounted::with_args("directio", 1, "", args);
        let body = common::pattern(5, 4 << 20);
        std::fs::write(m.p("f"), &body).unwrap();
        let trace = m.dir.join("strace.txt");
        let mut st = std::process::Command::new("strace")
            .args(["-f", "-e", "trace=pread64", "-o"])
            .arg(&trace)
            .args(["-p", &m.daemon_pid().to_string()])
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("strace");
        std::thread::sleep(std::time::Duration::from_millis(500));
        let out = sh_out(&format!(
            "dd if={} bs=4096 skip=100 count=16 status=none | md5sum",
            m.p("f").display()
        ));
        // SAFETY: kill(2) on the pid of a child we spawned and have not reaped.
        unsafe { libc::kill(st.id() as i32, libc::SIGINT) };
        st.wait().unwrap();
        let sizes: Vec<usize> = std::fs::read_to_string(&trace)
            .unwrap()
            .lines()
            .filter(|l| l.contains("pread64(") && l.contains(") = ") && !l.contains("PLFSIDX")) // not the index log
            .filter_map(|l| l.rsplit(") = ").next()?.trim().parse().ok())
            .collect();
        assert!(!sizes.is_empty(), "direct {direct}: no reads traced");
        if direct {
            assert!(sizes.iter().all(|&s| s == 4096), "direct I/O: {sizes:?}");
        } else {
            assert!(sizes.iter().any(|&s| s > 4096), "page cache and readahead: {sizes:?}");
        }
        let mut expect = std::process::Command::new("md5sum")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(expect.stdin.as_mut().unwrap(), &body[100 * 4096..116 * 4096]).unwrap();
        let expect = String::from_utf8(expect.wait_with_output().unwrap().stdout).unwrap();
        assert_eq!(out, expect, "direct {direct}: the bytes read");
        let mapped = sh_out(&format!(
            "python3 -c \"import mmap; f = open('{}', 'rb'); m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ); \
             import hashlib; print(hashlib.md5(m[:]).hexdigest())\"",
            m.p("f").display()
        ));
        let whole = sh_out(&format!("md5sum < {}", m.p("f").display()));
        assert_eq!(
            mapped.trim(),
            whole.split_whitespace().next().unwrap(),
            "direct {direct}: mmap"
        );
    }
}
