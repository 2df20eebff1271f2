"""Fixtures of the real-tool acceptance battery.

Every test gets a `fs` object: a fresh PLFS configuration (a backend and a mount point under a
temporary directory), the environment that makes programs see it, and a plain directory for the
reference copies that every result is checked against with md5sum.

`method` selects the front end. "preload" runs programs with LD_PRELOAD=libldplfs.so; "fuse"
mounts the plfs-fuse daemon on `fs.mount` (fuse_method.py) and runs programs without LD_PRELOAD.
"""

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from fuse_method import fuse_available, fuse_bin, fuse_mount

ROOT = Path(__file__).resolve().parents[2]
METHODS = ["preload", "fuse"]
# Where the fixtures put their backends, plain copies and mount points: $PLFS_TEST_ROOT when set
# and not empty (e.g. a directory on a GlusterFS mount, to run the battery on that backend).
TEST_ROOT = os.environ.get("PLFS_TEST_ROOT") or "/tmp"
# test_cross_client.py needs two client mounts of one distributed file system: it is collected only
# when scripts/test-cephfs.sh says they are there (PLFS_CROSS_CLIENT=1, with PLFS_TEST_ROOT and
# PLFS_TEST_ROOT2), and then fails unless they are; plain make test-battery does not collect it.
collect_ignore = [] if os.environ.get("PLFS_CROSS_CLIENT") else ["test_cross_client.py"]


def _target_dir():
    return Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))


def plfs_cli():
    """The plfs binary (the release build, built if missing)."""
    exe = _target_dir() / "release" / "plfs"
    if not exe.exists():
        subprocess.run(["cargo", "build", "--release", "-p", "plfs-cli"], cwd=ROOT, check=True)
    return exe


@pytest.fixture(scope="session")
def preload_lib():
    """Path of libldplfs.so ($LDPLFS_LIB, else the release build, built if missing)."""
    lib = os.environ.get("LDPLFS_LIB")
    if lib:
        return Path(lib)
    lib = _target_dir() / "release" / "libldplfs.so"
    if not lib.exists():
        subprocess.run(["cargo", "build", "--release", "-p", "ldplfs"], cwd=ROOT, check=True)
    return lib


@pytest.fixture(scope="session")
def progs(tmp_path_factory):
    """C helper programs of tests/battery/progs, compiled once."""
    out = tmp_path_factory.mktemp("progs")
    built = {}
    for src in sorted((Path(__file__).parent / "progs").glob("*.c")):
        exe = out / src.stem
        subprocess.run(["cc", "-O2", "-Wall", "-o", str(exe), str(src), "-lpthread"], check=True)
        built[src.stem] = exe
    return built


class PlfsFixture:
    """A mount point, its backend, a plain reference directory and the environment to use."""

    def __init__(self, root, env, method="preload"):
        self.method = method
        self.root = root
        self.mount = root / "mnt"
        self.backend = root / "backend"
        self.plain = root / "plain"
        self.env = env

    def sh(self, script, check=True, cwd=None, input=None):
        """Runs a bash script with PLFS visible; returns stdout (stderr is kept for errors)."""
        p = subprocess.run(
            ["bash", "-c", "set -eo pipefail\n" + script],
            env=self.env,
            cwd=str(cwd or self.root),
            capture_output=True,
            input=input,
        )
        if check and p.returncode != 0:
            raise AssertionError(
                f"script failed ({p.returncode}):\n{script}\nstdout:\n{p.stdout.decode(errors='replace')}\nstderr:\n{p.stderr.decode(errors='replace')}"
            )
        return p.stdout.decode(errors="replace")

    def run(self, argv, check=True, **kw):
        """Runs a program with PLFS visible."""
        return subprocess.run([str(a) for a in argv], env=self.env, check=check, capture_output=True, **kw)

    def md5(self, path):
        """md5sum of a file read through PLFS (by the md5sum program)."""
        return self.sh(f"md5sum '{path}'").split()[0]

    def backend_files(self, pattern):
        return sorted(self.backend.rglob(pattern))


def md5_plain(path):
    """md5 of a plain file read without PLFS."""
    return hashlib.md5(Path(path).read_bytes()).hexdigest()


def make_data(path, size, seed=1):
    """A file of pseudo-random bytes with some text lines (so grep, sort and wc have work)."""
    rnd = hashlib.sha256(str(seed).encode()).digest()
    chunks = []
    n = 0
    i = 0
    while n < size:
        if i % 7 == 0:
            line = f"line {i} needle {i * 7919 % 1000}\n".encode()
        else:
            rnd = hashlib.sha256(rnd).digest()
            line = rnd
        chunks.append(line)
        n += len(line)
        i += 1
    Path(path).write_bytes(b"".join(chunks)[:size])


@pytest.fixture(params=METHODS)
def method(request):
    return request.param


@pytest.fixture
def fs(method, preload_lib):
    yield from plfs_fixture(method, preload_lib)


def plfs_fixture(method, preload_lib, workload=None, prefix="plfs-battery-", backend_setup=None, global_params=None):
    """A fresh mount (one backend; `workload` in the plfsrc when given) through front end
    `method`: yields its PlfsFixture, then removes everything. `backend_setup` is called with the
    backend directory before anything uses it (to mount a small file system there);
    `global_params` (a dict) goes into the plfsrc's global_params."""
    root = Path(tempfile.mkdtemp(prefix=prefix, dir=TEST_ROOT))
    backend = root / "backend"
    backend.mkdir()
    if backend_setup:
        backend_setup(backend)
    (root / "plain").mkdir()
    rc = root / "plfsrc"
    wl = f"  workload: {workload}\n" if workload else ""
    gp = "".join(f"    {k}: {v}\n" for k, v in (global_params or {}).items())
    gp = f"- global_params:\n{gp}" if gp else ""
    rc.write_text(f"{gp}- mount_point: {root / 'mnt'}\n{wl}  backends:\n    - location: {backend}\n")
    env = dict(os.environ)
    env["PLFSRC"] = str(rc)
    env.pop("LDPLFS_LOG", None)
    if method == "preload":
        env["LD_PRELOAD"] = str(preload_lib)
        yield PlfsFixture(root, env)
    elif method == "fuse":
        why = fuse_available()
        if why:
            pytest.skip(why)
        with fuse_mount(fuse_bin(ROOT, _target_dir()), root / "mnt", rc, env):
            yield PlfsFixture(root, {k: v for k, v in env.items() if k != "LD_PRELOAD"}, method)
    else:
        pytest.skip(f"front end {method} not available")
    shutil.rmtree(root, ignore_errors=True)
