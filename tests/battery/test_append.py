"""Appends from several processes (issue 25, item 1): O_APPEND writes of concurrent processes are
atomic and complete in every workload mode and front end, as on a local file system. Before,
ldplfs lost records on N-1 (each process took the end of file from its cached index) and N-N (a
size then a write): four shell loops doing `echo ... >> log` 300 times each kept 397 of 1,200
lines on N-1."""

import subprocess

import pytest

from conftest import METHODS, plfs_fixture

WORKLOADS = ["n-1", "n-n", "1-n"]
LOOPS, LINES = 4, 300


@pytest.fixture(params=[(w, m) for w in WORKLOADS for m in METHODS], ids=lambda p: f"{p[0]}-{p[1]}")
def fs_append(request, preload_lib):
    workload, method = request.param
    yield from plfs_fixture(method, preload_lib, None if workload == "n-1" else workload, "plfs-append-")


def test_shell_loops_appending_to_one_log_keep_every_line(fs_append):
    fs = fs_append
    log = fs.mount / "job.log"
    loops = [
        subprocess.Popen(
            ["bash", "-c", f"for i in $(seq {LINES}); do echo \"loop {n} line $i\" >> '{log}'; done"],
            env=fs.env,
        )
        for n in range(LOOPS)
    ]
    for p in loops:
        assert p.wait() == 0
    lines = fs.sh(f"cat '{log}'").splitlines()
    want = sorted(f"loop {n} line {i}" for n in range(LOOPS) for i in range(1, LINES + 1))
    assert sorted(lines) == want, f"{len(lines)} lines of {len(want)}, {len(set(lines))} distinct"
    # Each loop's lines are in its own order.
    for n in range(LOOPS):
        mine = [int(l.split()[-1]) for l in lines if l.startswith(f"loop {n} ")]
        assert mine == list(range(1, LINES + 1)), f"loop {n}'s lines out of order"
    assert int(fs.sh(f"stat -c %s '{log}'")) == sum(len(l) + 1 for l in want)


def test_noclobber_lock_files_have_one_winner_each(fs_append):
    """`set -C` (O_CREAT|O_EXCL) lock files raced by four processes: each name has exactly one
    winner and holds the winner's line. Before, on 1-N two processes could both create a name
    (neither saw the other's record yet), and the name kept only one of the files."""
    fs = fs_append
    names = 40
    script = (
        f"set -C; for i in $(seq {names}); do "
        f"if echo \"owner $N\" > '{fs.mount}/lock.'$i 2>/dev/null; then echo \"won $i\"; fi; done"
    )
    racers = [
        subprocess.Popen(["bash", "-c", script], env={**fs.env, "N": str(n)}, stdout=subprocess.PIPE, text=True)
        for n in range(LOOPS)
    ]
    won = {}
    for n, p in enumerate(racers):
        out, _ = p.communicate()
        assert p.returncode == 0
        for line in out.splitlines():
            won.setdefault(int(line.split()[1]), []).append(n)
    assert sorted(won) == list(range(1, names + 1)), f"names nobody won: {set(range(1, names + 1)) - set(won)}"
    twice = {i: w for i, w in won.items() if len(w) != 1}
    assert not twice, f"names won by more than one process: {twice}"
    for i, (n,) in won.items():
        assert fs.sh(f"cat '{fs.mount}/lock.{i}'") == f"owner {n}\n", f"lock.{i}"
