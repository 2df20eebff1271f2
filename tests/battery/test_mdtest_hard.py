"""IO500's mdtest-hard, in shape (issue 53, item 4): tests/mpi/mdtest_hard.c under mpirun, np 2
and 4, in one shared directory of a `small_file` (1-N) mount through ldplfs, beside the same run
in a plain directory of the same file system (make test-glusterfs runs the battery with its
backends on the GlusterFS volume). Every rank creates 3,901 B files, then after a barrier stats
and reads its neighbour's (every byte checked), rank 0 lists all of them, and every rank removes
its own: the files a process closed are there, whole, for every other process at once, and
gone for all once removed. And a run that keeps its files leaves the backend holding one packed
log per writer, not a file per create."""
import shutil
import subprocess

import pytest

from conftest import ROOT, plfs_fixture

FILES = 120  # a rank
SIZE = 3901


@pytest.fixture(scope="module")
def mdtest(tmp_path_factory):
    if not shutil.which("mpicc") or not shutil.which("mpirun"):
        pytest.fail("MPICH is needed (scripts/install-deps.sh installs mpich and libmpich-dev)")
    exe = tmp_path_factory.mktemp("mdtest") / "mdtest_hard"
    subprocess.run(["mpicc", "-O2", "-Wall", "-o", str(exe), str(ROOT / "tests" / "mpi" / "mdtest_hard.c")], check=True)
    return exe


@pytest.fixture
def small(preload_lib):
    yield from plfs_fixture("preload", preload_lib, workload="small_file", prefix="plfs-mdhard-")


def phases(out):
    """{phase: rate} from the program's MDHARD lines."""
    rates = {}
    for line in out.splitlines():
        if line.startswith("MDHARD "):
            kv = dict(f.split("=", 1) for f in line.split()[1:])
            rates[kv["phase"]] = float(kv["rate"])
    return rates


@pytest.mark.parametrize("np", [2, 4])
def test_every_rank_sees_its_neighbour_s_files_whole_then_none(small, mdtest, np):
    plain = small.plain / f"np{np}"
    plain.mkdir()
    r = subprocess.run(["mpirun", "-np", str(np), mdtest, plain, str(FILES), str(SIZE)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "OK" in r.stdout, f"plain run failed:\n{r.stdout}\n{r.stderr}"
    d = small.mount / f"np{np}"
    small.sh(f"mkdir '{d}'")
    r = small.run(["mpirun", "-np", str(np), mdtest, d, str(FILES), str(SIZE)], check=False, text=True, timeout=300)
    assert r.returncode == 0 and "OK" in r.stdout, f"plfs run failed:\n{r.stdout}\n{r.stderr}"
    assert set(phases(r.stdout)) == {"create", "stat", "read", "remove"}, r.stdout
    # Gone for a process that comes after, too, and the directory is empty and removable.
    assert small.sh(f"ls -A '{d}'") == ""
    small.sh(f"rmdir '{d}'")


def test_the_files_of_a_run_are_packed_into_one_log_per_writer(small, mdtest):
    d = small.mount / "kept"
    small.sh(f"mkdir '{d}'")
    r = small.run(["mpirun", "-np", "4", mdtest, d, str(FILES), str(SIZE), "keep"], check=False, text=True, timeout=300)
    assert r.returncode == 0 and "OK" in r.stdout, f"plfs run failed:\n{r.stdout}\n{r.stderr}"
    backend = small.backend / "kept"
    # No backend file per logical file: the 480 files are records in the writers' logs.
    names = [p.name for p in backend.iterdir()]
    assert not [n for n in names if n.startswith("file.mdtest.")], names
    logs = [p for p in (backend / ".plfs_small").iterdir() if p.name.startswith("log.")]
    assert 1 <= len(logs) <= 4, [p.name for p in logs]
    assert sum(p.stat().st_size for p in logs) >= 4 * FILES * SIZE
    # And a fresh process lists and reads them all.
    listed = small.sh(f"ls '{d}' | wc -l").strip()
    assert listed == str(4 * FILES)
    sums = small.sh(f"cd '{d}' && cat file.mdtest.3.* | wc -c").strip()
    assert sums == str(FILES * SIZE)
