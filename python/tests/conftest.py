"""The private plfsrc every test of the package runs against: three mount points (n-1
containers, n-n plain files, 1-n packed files) over backends in a temporary directory. PLFSRC
is set here, before any test module imports plfs: the package reads the configuration once per
process, at first use."""

import os
import random
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PLFS_BIN = Path(os.environ.get("PLFS_BIN", REPO / "target" / "release" / "plfs"))
BASE = Path(os.environ.get("TMPDIR", "/tmp")) / f"plfs-pytest-{os.getpid()}"
MOUNTS = {w: f"/plfs-pytest-{os.getpid()}-{w}" for w in ("n-1", "n-n", "1-n")}


def _write_config():
    for b in ("b1", "b2", "b3", "b4"):
        (BASE / b).mkdir(parents=True, exist_ok=True)
    rc = BASE / "plfsrc"
    rc.write_text(
        "- global_params:\n    num_hostdirs: 4\n"
        f"- mount_point: {MOUNTS['n-1']}\n  workload: n-1\n  backends:\n"
        f"    - location: {BASE / 'b1'}\n    - location: {BASE / 'b2'}\n      type: shadow\n"
        f"- mount_point: {MOUNTS['n-n']}\n  workload: n-n\n  backends:\n    - location: {BASE / 'b3'}\n"
        f"- mount_point: {MOUNTS['1-n']}\n  workload: 1-n\n  backends:\n    - location: {BASE / 'b4'}\n"
    )
    return rc


os.environ["PLFSRC"] = str(_write_config())
os.environ.setdefault("PLFS_LOG", "off")


@pytest.fixture(scope="session", autouse=True)
def _cleanup():
    yield
    shutil.rmtree(BASE, ignore_errors=True)


@pytest.fixture(params=sorted(MOUNTS))
def mount(request):
    """A fresh directory under each mount point in turn."""
    import plfs

    d = f"{MOUNTS[request.param]}/t{random.getrandbits(40):x}"
    plfs.mkdir(d)
    return d
