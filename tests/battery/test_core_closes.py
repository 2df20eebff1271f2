"""The core inside libldplfs.so closes its own descriptors with the close system call, never
through libc's `close` (issue 27; `scripts/check-architecture.py` rule 9 holds the source to
it). libc's `close` is interposable: a library preloaded before libldplfs.so sees every call of
it, and so did libldplfs.so's own `close`, once for each directory a stat looked through and
each log a read opened (the library's guard then sent it on to libc).

A shim that counts calls of `close` (shims/countclose.c) is preloaded before libldplfs.so while a
Python program stats, reads and writes PLFS files, SHORT and then LONG of them; the difference
is what each file costs. Only the program's own closes may be counted: none for a stat, one per
file opened."""

import subprocess
from pathlib import Path

import pytest

SHORT, LONG = 20, 60

PROGRAM = """
import os, sys
what, n, mnt = sys.argv[1], int(sys.argv[2]), sys.argv[3]
for i in range(n):
    p = f"{mnt}/f{i}"
    if what == "stat":
        os.stat(p)
    elif what == "read":
        fd = os.open(p, os.O_RDONLY)
        assert os.read(fd, 8192) == bytes([i % 251]) * 4096
        os.close(fd)
    elif what == "write":
        fd = os.open(f"{mnt}/w{i}", os.O_WRONLY | os.O_CREAT, 0o644)
        os.write(fd, bytes(4096))
        os.close(fd)
"""


@pytest.fixture(scope="module")
def shim(tmp_path_factory):
    out = tmp_path_factory.mktemp("shim") / "libcountclose.so"
    src = Path(__file__).parent / "shims" / "countclose.c"
    subprocess.run(["cc", "-O2", "-Wall", "-shared", "-fPIC", "-o", str(out), str(src), "-ldl"], check=True)
    return out


def closes(fs, shim, what, n):
    out = fs.root / f"closes.{what}.{n}"
    env = dict(fs.env, LD_PRELOAD=f"{shim} {fs.env['LD_PRELOAD']}", COUNTCLOSE_OUT=str(out))
    subprocess.run(["/usr/bin/python3", "-c", PROGRAM, what, str(n), str(fs.mount)], env=env, check=True)
    return int(out.read_text())


@pytest.mark.parametrize("method", ["preload"])
def test_the_core_never_closes_through_libc(fs, shim):
    # The files stat and read look at: N-1 containers, each of one writer's 4096 bytes.
    for i in range(LONG):
        fs.sh(f"head -c 4096 /dev/zero | tr '\\0' '\\{i % 251:03o}' > {fs.mount}/f{i}")
    assert fs.backend_files("f0/*"), "the files are not PLFS containers"
    per_file = {}
    for what, program_closes in (("stat", 0), ("read", 1), ("write", 1)):
        short, long = closes(fs, shim, what, SHORT), closes(fs, shim, what, LONG)
        per_file[what] = (long - short) / (LONG - SHORT)
        print(f"{what}: {per_file[what]} calls of libc's close per file ({short} for {SHORT}, {long} for {LONG})")
        assert per_file[what] == program_closes, (
            f"{what}: {per_file[what]} calls of libc's close per file where the program makes "
            f"{program_closes}: the library closed descriptors of its own through libc"
        )
