"""Children writing to a descriptor they inherited (issue 25, item 2), in every workload mode and
front end. A shell redirects a command group into a new file and runs external commands inside
it; a script opens a descriptor and hands it to a child shell. Before, on 1-N under ldplfs the
parent's CREATE record was still in its buffer when the child opened the file again by name, so
`{ echo a; /bin/echo b; date; echo c; } > f` left "a c" with "/bin/echo: write error: No such
file or directory", and `sh -c 'echo c >&3'` failed with EIO."""

import subprocess

import pytest

from conftest import METHODS, plfs_fixture
from test_legacy import plfs_cli

WORKLOADS = ["n-1", "n-n", "1-n"]


@pytest.fixture(params=[(w, m) for w in WORKLOADS for m in METHODS], ids=lambda p: f"{p[0]}-{p[1]}")
def fs_any(request, preload_lib):
    workload, method = request.param
    yield from plfs_fixture(method, preload_lib, None if workload == "n-1" else workload, "plfs-inherit-")


def test_a_command_group_redirected_into_a_new_file_keeps_every_line(fs_any):
    fs = fs_any
    f = fs.mount / "group.out"
    fs.sh(f"{{ echo a; /bin/echo b; date +%Y >/dev/null; printf 'c\\n'; /usr/bin/env printf 'd\\n'; echo e; }} > '{f}'")
    assert fs.sh(f"cat '{f}'") == "a\nb\nc\nd\ne\n"


def test_a_child_shell_writes_to_an_inherited_descriptor(fs_any):
    fs = fs_any
    f = fs.mount / "fd3.out"
    fs.sh(f"exec 3>'{f}'; echo x >&3; sh -c 'echo c >&3'; bash -c 'echo d >&3'; echo y >&3; exec 3>&-")
    assert fs.sh(f"cat '{f}'") == "x\nc\nd\ny\n"
    # A child appending to a file its parent opened for appending.
    g = fs.mount / "fd4.out"
    fs.sh(f"exec 4>>'{g}'; echo 1 >&4; sh -c 'echo 2 >&4'; echo 3 >&4; exec 4>&-")
    assert fs.sh(f"cat '{g}'") == "1\n2\n3\n"


def test_a_forked_child_closes_the_writer_it_made_at_exit(fs_any, request):
    """A child forked without exec writes through the descriptor it inherited and exits: its
    own writer (opened at its first write) is closed by its exit, so the file is whole and
    `plfs fsck` finds no open writer and no unindexed data left behind. Before the fix of
    2026-11-26 the descriptor table of the child still pointed at the parent's entry, the exit
    closed only the fresh one, and fsck reported the child's writer as stale-open debris (fsck
    checks N-1 containers; the other modes are checked for their bytes)."""
    fs = fs_any
    f = fs.mount / "forked.out"
    prog = (
        "import os, sys\n"
        f"fd = os.open('{f}', os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)\n"
        "os.write(fd, b'A' * 10)\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    os.write(fd, b'B' * 10)\n"
        "    sys.exit(0)\n"
        "os.waitpid(pid, 0)\n"
        "os.write(fd, b'C' * 10)\n"
        "os.close(fd)\n"
    )
    fs.run(["python3", "-c", prog])
    assert fs.sh(f"cat '{f}'") == "A" * 10 + "B" * 10 + "C" * 10
    if request.node.callspec.params["fs_any"] == ("n-1", "preload"):
        env = {k: v for k, v in fs.env.items() if k != "LD_PRELOAD"}
        r = subprocess.run([str(plfs_cli()), "fsck", str(f)], env=env, capture_output=True, text=True)
        assert r.returncode == 0, r.stdout + r.stderr
