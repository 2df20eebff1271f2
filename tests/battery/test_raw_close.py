"""A raw close of every descriptor must not disable PLFS for the process (issue 50, item 10).

progs/rawclose.c writes a file, keeps another open, then closes every descriptor from 3 up with
the close_range system call, writes and reads back 20 new files, closes every number from 3 to
4095 with the close system call, writes and reads back 20 more, and reads the first file again.
Before, every PLFS open after the first raw close failed with EBADF (the library's own
descriptors, the backend root's among them, were gone). Made through syscall(3) the calls are
now served as close and close_range; made with the instruction itself (what nothing can see)
the core finds its root descriptor closed at the first EBADF, reopens it and makes the call
again. The file open at the raw close may fail (EBADF), as ldplfs(8) says; it must not crash.
Every file is checked byte for byte through the plfs tool afterwards."""

import platform

import pytest

from conftest import plfs_fixture, plfs_cli


@pytest.fixture(params=[None, "small_file"], ids=["n-1", "1-n"])
def pre(request, preload_lib):
    yield from plfs_fixture("preload", preload_lib, request.param, "plfs-rawclose-")


def expected(i):
    return bytes((i * 131 + j * 7) & 255 for j in range(1000 * i + 17))


@pytest.mark.parametrize("how", ["libc", "asm"])
def test_new_files_work_after_a_raw_close_of_every_descriptor(pre, progs, how):
    if how == "asm" and platform.machine() not in ("x86_64", "aarch64"):
        pytest.skip("inline system call written for x86_64 and aarch64 only")
    p = pre.run([progs["rawclose"], pre.mount, how, 20], check=False)
    out, err = p.stdout.decode(), p.stderr.decode()
    assert p.returncode == 0, (out, err)
    assert "close_range 0: 0 of 20 new files failed, before ok" in out, (out, err)
    assert "close loop: 0 of 20 new files failed, before ok" in out, (out, err)
    assert "held: " in out, out  # reached the end without crashing
    for prefix in ("a", "b"):
        for i in range(1, 21):
            got = pre.run([plfs_cli(), "cat", pre.mount / f"{prefix}.{i}"]).stdout
            assert got == expected(i), (prefix, i, len(got))
    assert pre.run([plfs_cli(), "cat", pre.mount / "before"]).stdout == b"before\n"
    # The file open at the raw close could not be closed cleanly behind closed descriptors when
    # the raw call went around ldplfs: it is what a writer killed there leaves, an N-1 file
    # whose records are recovered from its data log, a 1-N file that never reached its log
    # (a 1-N file is there from its close). Nothing else may have a problem.
    held = pre.run([plfs_cli(), "cat", pre.mount / "held"], check=False)
    if how == "asm" and "small_file" in (pre.root / "plfsrc").read_text():
        assert held.returncode != 0 or held.stdout == b"held\n", held
    else:
        assert held.returncode == 0 and held.stdout == b"held\n", held
    fsck = pre.run([plfs_cli(), "fsck", pre.mount], check=False).stdout.decode()
    problems = [line for line in fsck.splitlines() if line.startswith("PROBLEM")]
    assert all(f"{pre.backend}/held" in line for line in problems), fsck
    if how == "libc":
        assert problems == [], fsck
