"""A full backend (issue 25, item 3): deleting and truncating must work when the backend has no
space left, in every workload mode and front end, and must give the space back; what was written
before the backend filled stays intact. Before, on 1-N `rm`, `truncate -s 0` (and `plfs rm`,
`plfs compact`) failed with ENOSPC and each left an empty `.plfs_small/log.*`: deleting a packed
file means appending an UNLINK record, which needs space. The backend here is a 1 MiB tmpfs."""

import os
import shutil
import subprocess

import pytest

from conftest import METHODS, plfs_fixture

WORKLOADS = ["n-1", "n-n", "1-n"]


# Through FUSE all packed files of a directory go into the daemon's one log, and the records of
# the write that hit ENOSPC stay in its buffer: the daemon cannot append the UNLINK (nor free the
# space) until its log is rewritten. Known gap, reported in issue 25's note.
FUSE_1N = pytest.mark.xfail(strict=True, reason="1-N through FUSE: the daemon's buffer still holds the write that failed")


@pytest.fixture(
    params=[pytest.param((w, m), marks=FUSE_1N if (w, m) == ("1-n", "fuse") else ()) for w in WORKLOADS for m in METHODS],
    ids=lambda p: f"{p[0]}-{p[1]}",
)
def fs_full(request, preload_lib):
    assert os.geteuid() == 0, "mounting the small tmpfs backend needs root"
    workload, method = request.param
    mounted = []

    def tmpfs(backend):
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "plfs-full", str(backend)], check=True)
        mounted.append(backend)

    try:
        yield from plfs_fixture(method, preload_lib, None if workload == "n-1" else workload, "plfs-full-", tmpfs)
    finally:
        for m in mounted:
            subprocess.run(["umount", "-l", str(m)], check=False)
            shutil.rmtree(m.parent, ignore_errors=True)


def used_permille(fs):
    st = os.statvfs(fs.root / "backend")
    return 1000 * (st.f_blocks - st.f_bfree) // st.f_blocks


@pytest.mark.parametrize("delete", ["rm", "truncate -s 0"])
def test_deleting_works_on_a_full_backend_and_frees_it(fs_full, delete):
    fs = fs_full
    d = fs.mount / "d"
    keep = fs.root / "plain" / "keep"
    keep.write_bytes(os.urandom(300_000))
    fs.sh(f"mkdir '{d}' && cp '{keep}' '{d}/keep'")
    r = subprocess.run(["bash", "-c", f"head -c 5000000 /dev/zero > '{d}/big'"], env=fs.env, capture_output=True)
    assert r.returncode != 0, "the 5 MB file fit on a 1 MiB backend"
    assert used_permille(fs) > 950, used_permille(fs)
    fs.sh(f"{delete} '{d}/big'")
    if delete != "rm":
        assert fs.sh(f"stat -c %s '{d}/big'") == "0\n"
        fs.sh(f"rm '{d}/big'")
    # The space came back, and what was there before is intact.
    assert used_permille(fs) < 600, f"{used_permille(fs)} permille still used"
    fs.sh(f"cmp '{keep}' '{d}/keep'")
    assert sorted(fs.sh(f"ls '{d}'").split()) == ["keep"]
    # And the backend takes new files again.
    fs.sh(f"head -c 200000 /dev/urandom > '{fs.root}/plain/again' && cp '{fs.root}/plain/again' '{d}/again'")
    fs.sh(f"cmp '{fs.root}/plain/again' '{d}/again'")
