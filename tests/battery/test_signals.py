"""write() from a signal handler while the main thread is inside ldplfs (issue 50, item 9).

A SIGALRM handler (setitimer, every 200 us) writes a line to a log, to stderr and to a pipe
while the main loop does PLFS I/O (progs/sigwrite.c). A write to a descriptor that is not a PLFS
one always reaches the kernel; a write to a PLFS descriptor that lands while the main thread is
inside the library cannot be served there (the interrupted code may hold the locks it needs) and
fails with EAGAIN, as ldplfs(8) says. Before, it went to libc and met the placeholder: EPERM,
9,557 of 9,837 times."""

import pytest

from conftest import plfs_fixture, plfs_cli


@pytest.fixture(params=[None, "small_file"], ids=["n-1", "1-n"])
def pre(request, preload_lib):
    yield from plfs_fixture("preload", preload_lib, request.param, "plfs-signals-")


def counts(out):
    words = out.split()
    return {words[i]: int(words[i + 1]) for i in range(0, len(words), 2)}


def run(fs, progs, log):
    p = fs.run([progs["sigwrite"], fs.mount, log, 12000])
    c = counts(p.stdout.decode())
    assert c["ticks"] > 200, c  # the handler ran often enough to land inside the library
    assert c["stderr_fail"] == 0 and c["pipe_fail"] == 0 and c["pipe_lines"] == c["ticks"], c
    assert p.stderr.decode().count("tick\n") == c["ticks"], c
    assert c["bad_reads"] == 0, c
    return c


def test_a_handler_writing_to_plain_descriptors_never_fails(pre, progs):
    log = pre.plain / "log"
    c = run(pre, progs, log)
    assert c["log_ok"] == c["ticks"] and c["log_eagain"] == 0 and c["log_other"] == 0, c
    assert log.read_bytes() == b"tick\n" * c["ticks"]


def test_a_handler_writing_to_a_plfs_descriptor_gets_its_bytes_in_or_eagain(pre, progs):
    log = pre.mount / "log"
    c = run(pre, progs, log)
    # Never EPERM (the placeholder) or anything else: written whole, or EAGAIN.
    assert c["log_other"] == 0, c
    assert c["log_ok"] + c["log_eagain"] == c["ticks"], c
    got = pre.run([plfs_cli(), "cat", log]).stdout
    assert got == b"tick\n" * c["log_ok"], (len(got), c)
