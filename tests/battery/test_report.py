"""LDPLFS_REPORT=1 (issue 28, item 2): at exit each process that ldplfs served prints one summary
on stderr (files opened through PLFS, calls by class, bytes read and written), the first
process of a tree always (so a user learns that nothing went through PLFS), and a raw
syscall() that named a path under a mount point is reported as gone around ldplfs. Checked
against runs whose counts are known."""

import os
import re
import subprocess
import sys

import pytest

from conftest import plfs_fixture


@pytest.fixture
def pre(preload_lib):
    yield from plfs_fixture("preload", preload_lib, None, "plfs-report-")


def run(fs, argv, report=True):
    env = dict(fs.env)
    if report:
        env["LDPLFS_REPORT"] = "1"
    else:
        env.pop("LDPLFS_REPORT", None)
    env.pop("LDPLFS_REPORT_CHILD", None)
    p = subprocess.run([str(a) for a in argv], env=env, capture_output=True, check=True)
    return [line for line in p.stderr.decode().splitlines() if line.startswith("ldplfs report")]


def test_the_report_counts_what_a_copy_and_a_read_did(pre):
    fs = pre
    data = fs.plain / "data"
    data.write_bytes(os.urandom(3_000_000))
    f = fs.mount / "data"
    lines = run(fs, ["cp", data, f])
    assert len(lines) == 1, lines
    assert "(/usr/bin/cp): 1 file opened through PLFS" in lines[0], lines[0]
    assert "read 0 B, written 2.9 MiB (3000000 B)" in lines[0], lines[0]
    lines = run(fs, ["cat", f])
    assert len(lines) == 1 and "(/usr/bin/cat): 1 file opened through PLFS" in lines[0], lines
    assert "read 2.9 MiB (3000000 B), written 0 B" in lines[0], lines[0]
    m = re.search(r"(\d+) calls served \(open (\d+), read (\d+), write (\d+), other (\d+)\)", lines[0])
    assert m and int(m[1]) == sum(int(m[i]) for i in (2, 3, 4, 5)) and int(m[3]) >= 1, lines[0]
    # Without the variable: nothing.
    assert run(fs, ["cat", f], report=False) == []


def test_the_first_process_always_reports_and_quiet_children_do_not(pre):
    fs = pre
    lines = run(fs, ["bash", "-c", f"ls /etc > /dev/null; echo x > '{fs.mount}/y'; (cat '{fs.mount}/y' > /dev/null)"])
    # bash (it opened y), and the subshell's cat; ls served nothing and says nothing.
    assert len(lines) == 2, lines
    assert any("(/usr/bin/bash): 1 file opened through PLFS" in line and "written 2 B" in line for line in lines), lines
    assert any("(/usr/bin/cat): 1 file opened through PLFS" in line and "read 2 B" in line for line in lines), lines
    lines = run(fs, ["ls", "/etc"])
    assert len(lines) == 1 and "0 files opened through PLFS; 0 calls served" in lines[0], lines


def test_a_raw_system_call_that_went_around_is_named(pre):
    fs = pre
    f = fs.mount / "raw"
    fs.sh(f"echo data > '{f}'")
    code = (
        "import ctypes, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        f"libc.syscall(257 if os.uname().machine == 'x86_64' else 56, -100, b'{f}', 0)\n"
    )
    lines = run(fs, [sys.executable, "-c", code])
    assert len(lines) == 2, lines
    assert "1 raw system call named a path under a mount point" in lines[1], lines
    assert f'openat("{f}")' in lines[1], lines
