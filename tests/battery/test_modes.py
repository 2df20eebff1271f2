"""The real-tool battery in the N-N (file_per_proc) and 1-N (small_file) workload modes.

A tree of 10,000 small files is copied into the mount with cp -r, extracted there from a tar
archive, checked file by file with md5sum against the plain tree, copied back out, listed with
ls, and removed with rm -r, through each front end.
"""

import os
import random
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import METHODS, ROOT, TEST_ROOT, PlfsFixture, _target_dir
from fuse_method import fuse_available, fuse_bin, fuse_mount

WORKLOADS = ["n-n", "1-n"]
DIRS, FILES_PER_DIR = 100, 100


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """A plain tree of DIRS*FILES_PER_DIR small files (0..4 KiB, some empty)."""
    root = tmp_path_factory.mktemp("tree") / "tree"
    rnd = random.Random(6)
    for d in range(DIRS):
        sub = root / f"d{d:03}"
        sub.mkdir(parents=True)
        for f in range(FILES_PER_DIR):
            (sub / f"f{f:03}.dat").write_bytes(rnd.randbytes(rnd.choice([0, 1, 100, 1024, 4096, rnd.randrange(4096)])))
    return root


@pytest.fixture(params=[(w, m) for w in WORKLOADS for m in METHODS], ids=lambda p: f"{p[0]}-{p[1]}")
def fs_mode(request, preload_lib):
    workload, method = request.param
    root = Path(tempfile.mkdtemp(prefix=f"plfs-modes-{workload}-", dir=TEST_ROOT))
    backends = [root / "b0", root / "b1", root / "b2"]
    for b in backends:
        b.mkdir()
    (root / "plain").mkdir()
    rc = root / "plfsrc"
    locs = "".join(f"    - location: {b}\n" for b in backends)
    rc.write_text(f"- mount_point: {root / 'mnt'}\n  workload: {workload}\n  backends:\n{locs}")
    env = dict(os.environ)
    env["PLFSRC"] = str(rc)
    if method == "preload":
        env["LD_PRELOAD"] = str(preload_lib)
        yield PlfsFixture(root, env), workload
    else:
        why = fuse_available()
        if why:
            pytest.skip(why)
        with fuse_mount(fuse_bin(ROOT, _target_dir()), root / "mnt", rc, env):
            yield PlfsFixture(root, {k: v for k, v in env.items() if k != "LD_PRELOAD"}, method), workload
    shutil.rmtree(root, ignore_errors=True)


def md5_list(fs, top, through_plfs):
    """Sorted 'md5  relative-path' lines of every file under top."""
    script = f"cd '{top}' && find . -type f -print0 | sort -z | xargs -0 md5sum"
    if through_plfs:
        return fs.sh(script).splitlines()
    return subprocess.run(["bash", "-c", script], capture_output=True, check=True).stdout.decode().splitlines()


def test_small_file_tree_round_trip(fs_mode, tree):
    fs, workload = fs_mode
    want = md5_list(fs, tree, False)
    assert len(want) == DIRS * FILES_PER_DIR
    # cp -r into the mount, then md5sum of every file through PLFS.
    fs.sh(f"cp -r '{tree}' '{fs.mount}/tree'")
    assert md5_list(fs, fs.mount / "tree", True) == want
    # ls sees every name with its size.
    listing = fs.sh(f"ls -l '{fs.mount}/tree/d007'").splitlines()[1:]
    sizes = {line.split()[-1]: int(line.split()[4]) for line in listing}
    assert sizes == {p.name: p.stat().st_size for p in (tree / "d007").iterdir()}
    # tar x into the mount from an archive made outside it.
    archive = fs.plain / "tree.tar"
    subprocess.run(["tar", "cf", str(archive), "-C", str(tree.parent), "tree"], check=True)
    fs.sh(f"mkdir '{fs.mount}/x' && tar xf '{archive}' -C '{fs.mount}/x'")
    assert md5_list(fs, fs.mount / "x" / "tree", True) == want
    # cp -r back out of the mount, compared without PLFS.
    fs.sh(f"cp -r '{fs.mount}/tree' '{fs.plain}/out'")
    assert md5_list(fs, fs.plain / "out", False) == want
    # The mode really is in effect on the backends.
    files_on_backends = sum(1 for b in ("b0", "b1", "b2") for p in (fs.root / b).rglob("*") if p.is_file())
    if workload == "1-n":
        assert files_on_backends < 1000, f"{files_on_backends} backend files for 20,000 packed files"
    else:
        used = [b for b in ("b0", "b1", "b2") if any(p.is_file() for p in (fs.root / b).rglob("*"))]
        assert len(used) == 3, f"n-n files only on {used}"
    # rm -r removes everything.
    fs.sh(f"rm -r '{fs.mount}/tree' '{fs.mount}/x'")
    assert fs.sh(f"ls -A '{fs.mount}'").split() == []
