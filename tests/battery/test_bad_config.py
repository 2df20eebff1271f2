"""A plfsrc that does not load must never send user data elsewhere (issue 50, item 5).

Before: with `num_hostdir:` misspelt, ldplfs warned and passed every call to libc, so
`echo important > MOUNT/result` exited 0 and wrote a real file into the directory at the mount
point's path, where no plfs tool ever looks. Now ldplfs reads the file leniently for its
`mount_point:` lines, every call under those mount points fails with EIO, a message naming the
file and its error is printed once, and paths elsewhere still pass through. The plfs tool refuses
to run, naming the file and the error."""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import TEST_ROOT, plfs_cli

# Each: (name, plfsrc text with MNT, BACKEND and DIR to fill in, what the error names).
BAD = [
    ("typo", "- global_params:\n    num_hostdir: 4\n- mount_point: MNT\n  backends:\n    - location: BACKEND\n",
     'unknown key "num_hostdir"'),
    ("range", "- global_params:\n    num_hostdirs: 5000\n- mount_point: MNT\n  backends:\n    - location: BACKEND\n",
     "out of range"),
    ("workload", "- mount_point: MNT # ours\n  workload: n-2\n  backends:\n    - location: BACKEND\n",
     'unknown workload "n-2"'),
    ("not-yaml", "- mount_point: 'MNT'\n  backends: [ { location: BACKEND\n", "invalid YAML"),
    ("mapping", "mount_point: MNT\nbackends:\n  - location: BACKEND\n", "not a mapping"),
    ("mount-key-typo", "- mount_point: MNT\n  backend:\n    - location: BACKEND\n", 'unknown key "backend"'),
    ("include", "- include: DIR/more.yml\n", 'unknown key "locaton"'),
]
MORE = "- mount_point: MNT\n  backends:\n    - locaton: BACKEND\n"

# Under LD_PRELOAD: what each call under the mount answers (an errno name, or "ok").
PROBE = r"""
import errno, os, sys
m = sys.argv[1]
def name(f):
    try:
        f()
        return "ok"
    except OSError as e:
        return errno.errorcode[e.errno]
out = {
    "create": name(lambda: os.close(os.open(m + "/result", os.O_WRONLY | os.O_CREAT, 0o644))),
    "stat": name(lambda: os.stat(m)),
    "list": name(lambda: os.listdir(m)),
    "mkdir": name(lambda: os.mkdir(m + "/d")),
    "chdir": name(lambda: os.chdir(m)),
    "outside": name(lambda: open(sys.argv[2], "w").write("plain")),
}
print(" ".join(f"{k}={v}" for k, v in out.items()))
"""


@pytest.fixture
def place():
    root = Path(tempfile.mkdtemp(prefix="plfs-badrc-", dir=TEST_ROOT))
    (root / "mnt").mkdir()  # a real directory there: what a pass-through would write into
    (root / "backend").mkdir()
    yield root
    shutil.rmtree(root, ignore_errors=True)


def write_rc(root, text):
    fill = lambda t: t.replace("MNT", str(root / "mnt")).replace("BACKEND", str(root / "backend")).replace(
        "DIR", str(root))
    (root / "more.yml").write_text(fill(MORE))
    rc = root / "plfsrc"
    rc.write_text(fill(text))
    return rc


def env_for(rc, preload_lib=None):
    env = dict(os.environ)
    env["PLFSRC"] = str(rc)
    env.pop("LDPLFS_LOG", None)
    if preload_lib:
        env["LD_PRELOAD"] = str(preload_lib)
    return env


@pytest.mark.parametrize("case", BAD, ids=[c[0] for c in BAD])
def test_calls_under_the_mount_fail_with_eio_and_nothing_lands_in_the_real_directory(place, preload_lib, case):
    _, text, why = case
    rc = write_rc(place, text)
    p = subprocess.run([sys.executable, "-c", PROBE, str(place / "mnt"), str(place / "outside")],
                       env=env_for(rc, preload_lib), capture_output=True)
    err = p.stderr.decode()
    assert p.returncode == 0, err
    assert p.stdout.decode().split() == [
        "create=EIO", "stat=EIO", "list=EIO", "mkdir=EIO", "chdir=EIO", "outside=ok"], (p.stdout, err)
    assert os.listdir(place / "mnt") == [], "a call under the mount reached the real directory"
    assert os.listdir(place / "backend") == []
    assert (place / "outside").read_text() == "plain"
    # One message, naming the file (the included one for an error there), the error and the mount.
    lines = [line for line in err.splitlines() if "cannot use the plfsrc" in line]
    assert len(lines) == 1, err
    assert str(rc) in lines[0] and why in lines[0] and str(place / "mnt") in lines[0], lines[0]
    if case[0] == "include":
        assert str(place / "more.yml") in lines[0], lines[0]


def test_a_shell_redirection_fails_instead_of_writing_a_real_file(place, preload_lib):
    rc = write_rc(place, BAD[0][1])
    target = place / "mnt" / "result"
    p = subprocess.run(["bash", "-c", f"echo important > '{target}'"], env=env_for(rc, preload_lib),
                       capture_output=True)
    assert p.returncode != 0
    assert "Input/output error" in p.stderr.decode(), p.stderr
    assert not target.exists()


def test_with_no_mount_point_to_read_everything_passes_through_with_a_warning(place, preload_lib):
    rc = write_rc(place, "- global_params:\n    num_hostdir: 4\n")
    p = subprocess.run([sys.executable, "-c", PROBE, str(place / "mnt"), str(place / "outside")],
                       env=env_for(rc, preload_lib), capture_output=True)
    assert p.stdout.decode().split()[-1] == "outside=ok", p
    assert "PLFS disabled, every call passes through to libc" in p.stderr.decode(), p.stderr


@pytest.mark.parametrize("case", BAD, ids=[c[0] for c in BAD])
def test_the_plfs_tool_refuses_naming_the_file(place, case):
    _, text, why = case
    rc = write_rc(place, text)
    src = place / "src"
    src.write_bytes(b"important\n")
    for argv in (["ls", place / "mnt"], ["import", src, place / "mnt" / "f"], ["check-config"]):
        p = subprocess.run([str(plfs_cli())] + [str(a) for a in argv], env=env_for(rc), capture_output=True)
        err = p.stderr.decode()
        assert p.returncode != 0, (argv, err)
        assert why in err and ("more.yml" in err if case[0] == "include" else str(rc) in err), (argv, err)
    assert os.listdir(place / "mnt") == [] and os.listdir(place / "backend") == []
