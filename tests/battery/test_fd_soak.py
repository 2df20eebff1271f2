"""Descriptor soak (issue 17, item 1): long-running processes doing thousands of fstat,
lseek(SEEK_END), fallocate, stat, open/close, read and write calls on PLFS files must keep a
flat descriptor count: equal before and after, bounded during. Through the preload the count is
the program's own; through FUSE it is the daemon's. The files written are checked byte for byte
against the same run on a plain directory."""

import os
import subprocess
import textwrap
import threading
import time
from pathlib import Path

from conftest import md5_plain

ITERATIONS = 3000
# Descriptors a process may hold during the loop for its two open PLFS files (placeholders, the
# core's container, hostdir, log and data descriptors) plus, seen from outside (the FUSE daemon's
# count is sampled while it works), the index logs read at once by the core's 8 reader threads:
# a small constant, never one per call.
BOUND = 20

PY_SOAK = textwrap.dedent(
    """
    import os, sys
    base, iters = sys.argv[1], int(sys.argv[2])
    count = lambda: len(os.listdir("/proc/self/fd")) - 1   # minus listdir's own descriptor

    def cycle(i):
        p = f"{base}/pycycle{i % 4}.txt"
        with open(p, "a+b") as f:
            f.write(f"cycle {i}\\n".encode())
            f.flush()
            os.fstat(f.fileno()); os.stat(p)
            assert os.pread(f.fileno(), 6, 0) == b"cycle "
        assert os.stat(p).st_size > 0

    for i in range(4):
        cycle(i)
    before = count()
    peak = before
    p = f"{base}/pylong.bin"
    fd = os.open(p, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    for i in range(iters):
        end = os.lseek(fd, 0, os.SEEK_END)
        assert os.fstat(fd).st_size == end
        os.write(fd, bytes([97 + i % 26]) * 100)
        os.pwrite(fd, b"P" * 20, (i * 37) % (end + 100))
        os.posix_fallocate(fd, 0, end + 100)
        assert os.stat(p).st_size == end + 100
        os.lseek(fd, -100, os.SEEK_END)
        assert len(os.read(fd, 100)) == 100
        assert len(os.pread(fd, 50, 0)) == 50
        if i % 100 == 99:
            os.posix_fallocate(fd, 0, end + 150)
            os.ftruncate(fd, end + 100)
        if i % 10 == 0:
            cycle(i)
        if i % 50 == 0:
            peak = max(peak, count())
    peak = max(peak, count())
    os.close(fd)
    print(before, peak, count())
    """
)

C_FILES = ["long.bin", "cycle0.bin", "cycle1.bin", "cycle2.bin", "cycle3.bin"]
PY_FILES = ["pylong.bin", "pycycle0.txt", "pycycle1.txt", "pycycle2.txt", "pycycle3.txt"]


def _daemon_pid(mount):
    """Pid of the plfs-fuse daemon serving `mount`."""
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            argv = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"plfs-fuse") and str(mount).encode() in argv:
            return int(d.name)
    raise AssertionError(f"no plfs-fuse daemon for {mount}")


def _nfds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def _soak(fs, argv_plain, argv_plfs, files):
    """Runs the soak on the plain directory and on PLFS; returns the counts through PLFS
    (the program's own with the preload, the daemon's with FUSE)."""
    ref = subprocess.run([str(a) for a in argv_plain], capture_output=True, text=True)
    assert ref.returncode == 0, ref.stderr
    if fs.method == "fuse":
        pid = _daemon_pid(fs.mount)
        # Warm-up through the mount, so what the daemon keeps for its lifetime is counted.
        fs.sh(f"echo warm > {fs.mount}/warm && cat {fs.mount}/warm > /dev/null && rm {fs.mount}/warm")
        before = _nfds(pid)
        peak = [before]
        done = threading.Event()

        def watch():
            while not done.wait(0.05):
                peak[0] = max(peak[0], _nfds(pid))

        t = threading.Thread(target=watch)
        t.start()
        try:
            r = fs.run(argv_plfs, text=True, check=False)
        finally:
            done.set()
            t.join()
        assert r.returncode == 0, r.stderr
        # The kernel sends RELEASE for a closed file asynchronously (after the program has
        # exited), so the daemon's count is read once it has settled, for at most 10 s.
        deadline = time.monotonic() + 10
        after = _nfds(pid)
        while after != before and time.monotonic() < deadline:
            time.sleep(0.05)
            after = _nfds(pid)
        counts = (before, peak[0], after)
    else:
        r = fs.run(argv_plfs, text=True, check=False)
        assert r.returncode == 0, r.stdout + r.stderr
        counts = tuple(int(x) for x in r.stdout.split())
    for name in files:
        assert fs.md5(fs.mount / name) == md5_plain(fs.plain / name), name
    return counts


def _assert_flat(counts, what):
    before, peak, after = counts
    assert after == before, f"{what}: {before} descriptors before, {after} after (peak {peak})"
    assert peak <= before + BOUND, f"{what}: {before} descriptors before, {peak} during the loop"


def test_c_program_descriptor_count_stays_flat(fs, progs):
    exe = progs["fdsoak"]
    counts = _soak(fs, [exe, fs.plain, ITERATIONS], [exe, fs.mount, ITERATIONS], C_FILES)
    _assert_flat(counts, f"fdsoak ({fs.method})")


def test_python_descriptor_count_stays_flat(fs):
    script = fs.plain / "soak.py"
    script.write_text(PY_SOAK)
    argv = ["python3", script]
    counts = _soak(fs, argv + [fs.plain, ITERATIONS], argv + [fs.mount, ITERATIONS], PY_FILES)
    _assert_flat(counts, f"python ({fs.method})")
