"""Application-shaped programs on Debian 12's real parallel I/O libraries, under mpirun through
ldplfs on an N-1 (shared_file) mount, checked byte for byte against the same program's output to a
plain directory (issue 56, item 1):

  tests/mpi/flash_io.c     FLASH-IO's checkpoint (collective) and plot file (independent) with
                           parallel HDF5 (libhdf5-mpich-dev, MPICH): h5dump of both files equal,
                           h5diff plain vs plfs exits 0, the same bytes, and the program's check
                           reading the plfs files back with another number of ranks
  tests/mpi/btio.c         NAS BT-IO's appended solution steps through subarray file views and
                           collective MPI-IO (MPICH's ROMIO): the same bytes, and the check
  tests/mpi/pnetcdf_var.c  a PnetCDF history file (libpnetcdf-dev, built against OpenMPI: run with
                           mpirun.openmpi, through OMPIO and through ROMIO): ncmpidump equal, the
                           same bytes, and the check

With np 2 and 4. Through ROMIO every rank is made a collective-buffering aggregator (cb_config_list
*:*), as on a cluster with one aggregator a node, so the collective writes of one file come from
several processes (OMPIO runs with the aggregators it chooses: see the PnetCDF test); each logical
file must be a PLFS container of the backend, not a plain file. A missing library or tool fails (scripts/install-deps.sh installs them all and
keeps plain mpicc and mpirun MPICH's), never skips.

Under CephFS with two clients (scripts/test-cephfs.sh, PLFS_CROSS_CLIENT set) BT-IO and FLASH-IO
also run with half of their ranks on each client: MPMD ranks with a plfsrc whose backend is the
same directory through the other ceph-fuse mount.
"""
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import ROOT, md5_plain, plfs_fixture

MPI = ROOT / "tests" / "mpi"
DEPS = "scripts/install-deps.sh installs them"
BT = ["23", "20", "17", "6"]  # NX NY NZ STEPS: 6 steps of 312,800 bytes
# Every rank an aggregator, each with a 64 KiB collective buffer: many rounds of two-phase I/O.
AGGREGATORS = ["cb_config_list=*:*", "cb_buffer_size=65536"]
# Open MPI refuses root without these; the pytest process may be root (CI is).
OMPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def need(*tools):
    for t in tools:
        if not shutil.which(t):
            pytest.fail(f"{t} is missing ({DEPS})")


def compile_(argv):
    p = subprocess.run([str(a) for a in argv], capture_output=True, text=True)
    if p.returncode != 0:
        pytest.fail(f"compiling failed ({DEPS}): {' '.join(map(str, argv))}\n{p.stdout}{p.stderr}")


@pytest.fixture(scope="module")
def mpich():
    """Plain mpicc and mpirun must be MPICH's (installing Open MPI for PnetCDF can switch them)."""
    need("mpicc", "mpirun", "pkg-config")
    show = subprocess.run(["mpicc", "-show"], capture_output=True, text=True).stdout
    version = subprocess.run(["mpirun", "--version"], capture_output=True, text=True).stdout
    if "mpich" not in show or "HYDRA" not in version:
        pytest.fail(f"mpicc/mpirun are not MPICH's ({show.strip()!r}); scripts/install-deps.sh pins the "
                    "alternatives back: update-alternatives --set mpi /usr/bin/mpicc.mpich, --set mpirun /usr/bin/mpirun.mpich")


@pytest.fixture(scope="module")
def exes(tmp_path_factory, mpich):
    """The three programs, compiled once: {name: path}."""
    out = tmp_path_factory.mktemp("iolib")
    need("h5dump", "h5diff", "mpicc.openmpi", "mpirun.openmpi", "ncmpidump")
    hdf5 = subprocess.run(["pkg-config", "--cflags", "--libs", "hdf5-mpich"], capture_output=True, text=True)
    if hdf5.returncode != 0:
        pytest.fail(f"parallel HDF5 for MPICH is missing (libhdf5-mpich-dev; {DEPS}): {hdf5.stderr}")
    built = {n: out / n for n in ("flash_io", "btio", "pnetcdf_var")}
    compile_(["mpicc", "-O2", "-Wall", "-o", built["flash_io"], MPI / "flash_io.c", *hdf5.stdout.split()])
    compile_(["mpicc", "-O2", "-Wall", "-o", built["btio"], MPI / "btio.c"])
    compile_(["mpicc.openmpi", "-O2", "-Wall", "-o", built["pnetcdf_var"], MPI / "pnetcdf_var.c", "-lpnetcdf"])
    return built


@pytest.fixture
def fs(preload_lib):
    """A fresh N-1 mount (the default workload) through ldplfs."""
    yield from plfs_fixture("preload", preload_lib, prefix="plfs-iolib-")


def plain_env():
    """This process's environment without the preload and the plfsrc: a job on plain files."""
    return {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "PLFSRC")}


def mpirun(argv, env=None, timeout=300):
    """Runs an MPI job (with `env` when given, else without PLFS); returns its stdout; fails with
    its output unless it exits 0."""
    if env is None:
        env = plain_env()
    r = subprocess.run([str(a) for a in argv], env=env, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"{' '.join(map(str, argv))} exited {r.returncode}:\n{r.stdout}{r.stderr}"
    return r.stdout


def romio_hints(directory):
    """A ROMIO_HINTS file in `directory` making every rank an aggregator (HDF5 passes no hints of
    its own): the environment that names it."""
    hints = directory / "romio_hints"
    hints.write_text("".join(h.replace("=", " ") + "\n" for h in AGGREGATORS))
    return {"ROMIO_HINTS": str(hints)}


def assert_container(fs, name, writers=1):
    """The backend holds `name` as a PLFS container with data logs of at least `writers` writers."""
    c = fs.backend / name
    assert c.is_dir(), f"{c} is not a PLFS container (a plain file or nothing: {c.exists()})"
    logs = sorted(p.name for p in c.rglob("data.*"))
    assert len(logs) >= writers, f"{name}: data logs {logs}, expected at least {writers} writers"


def without_name_line(dump, first):
    """A dump without its first line (it names the file), which must start with `first`."""
    head, _, rest = dump.partition("\n")
    assert head.startswith(first), head
    return rest


@pytest.mark.parametrize("np", [2, 4])
def test_mpi_flash_io_hdf5_checkpoint_and_plot_file(fs, exes, np):
    names = ("fio_hdf5_chk_0000", "fio_hdf5_plt_cnt_0000")
    env = romio_hints(fs.root)
    plain = mpirun(["mpirun", "-np", np, exes["flash_io"], fs.plain, "write", "fio"],
                   env={**plain_env(), **env})
    assert "FLASHIO OK wrote" in plain, plain
    out = mpirun(["mpirun", "-np", np, exes["flash_io"], fs.mount, "write", "fio"], env={**fs.env, **env})
    assert out == plain.replace(str(fs.plain), str(fs.mount)), out
    # The checkpoint's collective writes came from every aggregator; the plot file's independent
    # ones from every rank.
    assert_container(fs, names[0], writers=2)
    assert_container(fs, names[1], writers=np)
    for n in names:
        p, m = fs.plain / n, fs.mount / n
        # Every value, printed exactly (%.17g), and every attribute, dumped through ldplfs.
        want = subprocess.run(["h5dump", "-m", "%.17g", str(p)], capture_output=True, text=True, check=True).stdout
        got = fs.sh(f"h5dump -m %.17g '{m}'")
        assert without_name_line(got, 'HDF5 "') == without_name_line(want, 'HDF5 "'), f"h5dump of {n} differs"
        # h5diff compares exactly (no delta) and exits 0 only when nothing differs.
        fs.sh(f"h5diff '{p}' '{m}'")
        # The files are byte-deterministic (no modification times): the same bytes.
        assert fs.md5(m) == md5_plain(p), n
    # Read back by another number of ranks, collectively and independently, every value checked.
    out = mpirun(["mpirun", "-np", 6 - np, exes["flash_io"], fs.mount, "check", "fio"], env=fs.env)
    assert "FLASHIO OK checked" in out, out


@pytest.mark.parametrize("np", [2, 4])
def test_mpi_btio_appended_steps_through_subarray_views(fs, exes, np):
    plain = mpirun(["mpirun", "-np", np, exes["btio"], fs.plain / "btio.out", "write", *BT, *AGGREGATORS])
    assert "BTIO OK wrote and checked" in plain, plain
    target = fs.mount / "btio.out"
    out = mpirun(["mpirun", "-np", np, exes["btio"], target, "write", *BT, *AGGREGATORS], env=fs.env)
    assert "BTIO OK wrote and checked" in out, out
    assert_container(fs, "btio.out", writers=np)
    assert fs.md5(target) == md5_plain(fs.plain / "btio.out")
    out = mpirun(["mpirun", "-np", 6 - np, exes["btio"], target, "check", *BT], env=fs.env)
    assert "BTIO OK checked" in out, out


@pytest.mark.parametrize("io", ["ompio", "romio321"])
@pytest.mark.parametrize("np", [2, 4])
def test_mpi_pnetcdf_collective_variables_openmpi(fs, exes, np, io):
    # Open MPI's own MPI-IO (OMPIO, with the aggregators it chooses: one at this size) or its ROMIO
    # (every rank an aggregator, through PnetCDF's PNETCDF_HINTS). Not OMPIO with as many
    # aggregators as ranks (OMPI_MCA_io_ompio_num_aggregators=4): with it, Debian 12's Open MPI
    # 4.1.4 and PnetCDF 1.12.3 wrote a wrong file to plain ext4 in 5 of 30 runs at np 4, with
    # zeros in the record variable (rank 0 reads the records' whole extent back and writes it
    # again while the other aggregators are still writing their parts of it: strace -f shows
    # its pread beginning before their pwrites return), in 0 of 30 with OMPIO's own choice and
    # in 0 of 30 through ROMIO with every rank an aggregator.
    ompi = {**OMPI_ENV, "OMPI_MCA_io": io}
    if io == "romio321":
        ompi["PNETCDF_HINTS"] = ";".join(AGGREGATORS)
    base = plain_env()
    run = ["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe", "-np", str(np), exes["pnetcdf_var"]]
    plain = fs.plain / "history.nc"
    assert "PNETCDF OK wrote" in mpirun([*run, plain, "write"], env={**base, **ompi})
    target = fs.mount / "history.nc"
    assert "PNETCDF OK wrote" in mpirun([*run, target, "write"], env={**fs.env, **ompi})
    assert_container(fs, "history.nc", writers=2 if io == "romio321" else 1)
    want = subprocess.run(["ncmpidump", str(plain)], capture_output=True, text=True, check=True).stdout
    got = fs.sh(f"ncmpidump '{target}'")
    assert without_name_line(got, "netcdf ") == without_name_line(want, "netcdf "), "ncmpidump differs"
    assert "temperature:valid_range" in got and "pressure =" in got, got[:2000]
    assert fs.md5(target) == md5_plain(plain)
    run[4] = str(6 - np)
    out = mpirun([*run, target, "check"], env={**fs.env, **ompi})
    assert "PNETCDF OK checked" in out, out


if os.environ.get("PLFS_CROSS_CLIENT"):
    from test_cross_client import ROOT1, ROOT2, two_clients_or_fail

    @pytest.fixture
    def two_clients(preload_lib):
        """(a plain directory, the logical directory, plfsrc of client 1, of client 2, the backend
        through client 1): one N-1 mount point whose backend is one CephFS directory through each
        ceph-fuse mount."""
        two_clients_or_fail()
        shared = Path(tempfile.mkdtemp(prefix="plfs-iolib-xc-", dir=ROOT1))
        local = Path(tempfile.mkdtemp(prefix="plfs-iolib-xc-local-"))
        (shared / "store").mkdir()
        (local / "plain").mkdir()
        rcs = []
        for i, root in ((1, Path(ROOT1)), (2, Path(ROOT2))):
            rc = local / f"plfsrc{i}"
            rc.write_text(f"- mount_point: {local / 'plfs'}\n  backends:\n    - location: {root / shared.name / 'store'}\n")
            rcs.append(rc)
        try:
            yield local / "plain", local / "plfs", rcs[0], rcs[1], shared / "store"
        finally:
            subprocess.run(["rm", "-rf", str(shared), str(local)], check=False)

    def mpmd(np, rc1, rc2, argv):
        """MPICH's MPMD line: ranks 0 .. np/2-1 with client 1's plfsrc, the others with client 2's."""
        half = np // 2
        return ["mpirun", "-np", half, "-env", "PLFSRC", rc1, *argv, ":", "-np", np - half, "-env", "PLFSRC", rc2, *argv]

    @pytest.mark.parametrize("np", [2, 4])
    def test_mpi_cross_client_btio_and_flash_io_ranks_on_two_clients(two_clients, exes, preload_lib, np):
        plain, logical, rc1, rc2, store = two_clients
        base = plain_env()
        env = {**base, "LD_PRELOAD": str(preload_lib)}
        hints = romio_hints(plain.parent)
        env.update(hints)
        mpirun(["mpirun", "-np", np, exes["btio"], plain / "btio.out", "write", *BT, *AGGREGATORS], env=base)
        out = mpirun(mpmd(np, rc1, rc2, [exes["btio"], logical / "btio.out", "write", *BT, *AGGREGATORS]), env=env)
        assert "BTIO OK wrote and checked" in out, out
        mpirun(["mpirun", "-np", np, exes["flash_io"], plain, "write", "fio"], env={**base, **hints})
        out = mpirun(mpmd(np, rc1, rc2, [exes["flash_io"], logical, "write", "fio"]), env=env)
        assert "FLASHIO OK wrote" in out, out
        # Read back on each client alone, by another number of ranks and by md5sum.
        for rc in (rc1, rc2):
            one = {**env, "PLFSRC": str(rc)}
            out = mpirun(["mpirun", "-np", 6 - np, exes["btio"], logical / "btio.out", "check", *BT], env=one)
            assert "BTIO OK checked" in out, out
            out = mpirun(["mpirun", "-np", 6 - np, exes["flash_io"], logical, "check", "fio"], env=one)
            assert "FLASHIO OK checked" in out, out
            for n in ("btio.out", "fio_hdf5_chk_0000", "fio_hdf5_plt_cnt_0000"):
                got = subprocess.run(["md5sum", str(logical / n)], env=one, capture_output=True, text=True, check=True)
                assert got.stdout.split()[0] == md5_plain(plain / n), f"{n} read through {rc.name}"
        for n in ("btio.out", "fio_hdf5_chk_0000", "fio_hdf5_plt_cnt_0000"):
            assert (store / n).is_dir(), f"{n} is not a PLFS container in {store}"
