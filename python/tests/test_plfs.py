"""Tests of the Python package against plain-file models, on the three workloads (n-1
containers, n-n plain files, 1-n packed files). PLFSRC points at a private plfsrc (conftest.py);
the package reads it at first use, like every other front end."""

import errno
import io
import os
import pwd
import random
import stat as st
import subprocess
import sys
import textwrap

import pytest

# conftest.py sets PLFSRC to the private plfsrc before plfs is first used, and gives the
# `mount` fixture: a fresh directory under each mount point in turn.
from conftest import MOUNTS, PLFS_BIN, REPO

import plfs


def data(n, seed):
    return random.Random(seed).randbytes(n)


def cli(*args):
    assert PLFS_BIN.exists(), f"{PLFS_BIN} missing: build it first (make build)"
    return subprocess.run([str(PLFS_BIN), *args], capture_output=True, check=True).stdout


def test_binary_round_trip_matches_a_plain_file(mount, tmp_path):
    want = data(3 * 1024 * 1024 + 11, 1)
    path = f"{mount}/f.bin"
    with plfs.open(path, "wb") as f:
        assert isinstance(f, io.BufferedWriter)
        for i in range(0, len(want), 100_000):
            f.write(want[i:i + 100_000])
        assert f.tell() == len(want)
    with plfs.open(path, "rb") as f:
        assert isinstance(f, io.BufferedReader)
        assert f.read() == want
    # The same bytes through a plain file and through the plfs CLI.
    (tmp_path / "plain").write_bytes(want)
    assert (tmp_path / "plain").read_bytes() == cli("cat", path)
    assert plfs.stat(path).st_size == len(want)


def test_seek_tell_readinto_and_partial_reads(mount):
    want = data(200_000, 2)
    path = f"{mount}/s"
    with plfs.open(path, "wb") as f:
        f.write(want)
    with plfs.open(path, "rb", buffering=0) as r:
        assert isinstance(r, plfs.RawFile) and isinstance(r, io.RawIOBase)
        assert r.seek(1000) == 1000
        b = bytearray(5000)
        assert r.readinto(b) == 5000 and bytes(b) == want[1000:6000]
        assert r.tell() == 6000
        assert r.seek(-10, io.SEEK_END) == len(want) - 10
        assert r.read(100) == want[-10:]
        assert r.read(100) == b""
        r.seek(-5, io.SEEK_CUR)
        assert r.read() == want[-5:]
        with pytest.raises(OSError) as e:
            r.seek(-1)
        assert e.value.errno == errno.EINVAL
        with pytest.raises(io.UnsupportedOperation):
            r.write(b"x")
    with plfs.open(path, "rb") as f:
        f.seek(123_456)
        assert f.read(7) == want[123_456:123_463]
        assert f.peek(1)[:1] == want[123_463:123_464]
        assert f.readinto(memoryview(bytearray(10))) == 10


def test_random_updates_match_a_model(mount):
    rng = random.Random(3)
    model = bytearray()
    path = f"{mount}/rw"
    with plfs.open(path, "w+b") as f:
        assert isinstance(f, io.BufferedRandom)
        for i in range(300):
            off = rng.randrange(0, 300_000)
            chunk = data(rng.randrange(1, 5000), i)
            f.seek(off)
            f.write(chunk)
            if len(model) < off:
                model.extend(bytes(off - len(model)))
            model[off:off + len(chunk)] = chunk
            if i % 50 == 0:
                f.seek(rng.randrange(0, len(model)))
                pos = f.tell()
                assert f.read(1000) == bytes(model[pos:pos + 1000])
        f.truncate(250_000)
        del model[250_000:]
    with plfs.open(path, "rb") as f:
        assert f.read() == bytes(model)
    assert cli("cat", path) == bytes(model)


def test_text_append_and_exclusive_modes(mount):
    path = f"{mount}/t.txt"
    with plfs.open(path, "w") as f:
        assert isinstance(f, io.TextIOWrapper)
        f.write("line 1\nligne 2 é\n")
    with plfs.open(path, "a") as f:
        f.write("line 3\n")
    with plfs.open(path) as f:
        assert f.readlines() == ["line 1\n", "ligne 2 é\n", "line 3\n"]
    with pytest.raises(FileExistsError) as e:
        plfs.open(path, "x")
    assert e.value.filename == path
    with plfs.open(f"{mount}/new", "xb") as f:
        f.write(b"x")
    with pytest.raises(ValueError):
        plfs.open(path, "rw")


def test_numpy_frombuffer_and_readinto(mount):
    import numpy as np  # installed by `make test-python`; missing is a failure
    a = np.arange(500_000, dtype="<f8") * 1.5
    path = f"{mount}/arr"
    with plfs.open(path, "wb") as f:
        f.write(a)  # any buffer, no copy to bytes
    with plfs.open(path, "rb") as f:
        b = np.frombuffer(f.read(), dtype="<f8")
    assert np.array_equal(a, b)
    c = np.empty_like(a)
    with plfs.open(path, "rb") as f:
        assert f.readinto(c) == a.nbytes
    assert np.array_equal(a, c)
    # Into a 2-D int32 array, through the raw file.
    m = np.zeros((100, 50), dtype="<i4")
    with plfs.open(path, "rb", buffering=0) as r:
        r.seek(8 * 1000)
        assert r.readinto(m) == m.nbytes
    assert m.tobytes() == a.tobytes()[8000:8000 + m.nbytes]


def test_namespace_calls_and_errors(mount):
    d = f"{mount}/dir"
    plfs.mkdir(d)
    assert st.S_ISDIR(plfs.stat(d).st_mode)
    with pytest.raises(FileExistsError):
        plfs.mkdir(d)
    plfs.makedirs(f"{d}/a/b/c")
    plfs.makedirs(f"{d}/a/b/c", exist_ok=True)
    with plfs.open(f"{d}/f", "wb") as f:
        f.write(b"abc")
    plfs.chmod(f"{d}/f", 0o640)
    s = plfs.stat(f"{d}/f")
    assert (s.st_size, st.S_IMODE(s.st_mode), st.S_ISREG(s.st_mode)) == (3, 0o640, True)
    assert s.st_mtime_ns > 0 and s.st_blksize > 0
    assert plfs.listdir(d) == ["a", "f"]
    plfs.rename(f"{d}/f", f"{d}/g")
    assert plfs.listdir(d) == ["a", "g"]
    assert plfs.exists(f"{d}/g") and not plfs.exists(f"{d}/f")
    with pytest.raises(FileNotFoundError) as e:
        plfs.stat(f"{d}/f")
    assert e.value.errno == errno.ENOENT and e.value.filename == f"{d}/f"
    with pytest.raises(FileNotFoundError):
        plfs.open(f"{d}/f", "rb")
    with pytest.raises(IsADirectoryError):
        plfs.open(d, "rb")
    with pytest.raises(NotADirectoryError):
        plfs.listdir(f"{d}/g")
    with pytest.raises(OSError) as e:
        plfs.rmdir(d)
    assert e.value.errno == errno.ENOTEMPTY
    plfs.unlink(f"{d}/g")
    with pytest.raises(FileNotFoundError):
        plfs.unlink(f"{d}/g")
    for p in ("a/b/c", "a/b", "a"):
        plfs.rmdir(f"{d}/{p}")
    plfs.rmdir(d)
    assert not plfs.exists(d)
    # Relative paths resolve against the working directory, lexically.
    assert plfs.is_plfs_path(f"{mount}/x/../y") and not plfs.is_plfs_path("/etc/passwd")


def test_closed_file_and_io_contract(mount):
    f = plfs.open(f"{mount}/c", "wb", buffering=0)
    assert f.writable() and not f.readable() and f.seekable()
    with pytest.raises(io.UnsupportedOperation):
        f.fileno()
    f.close()
    f.close()
    with pytest.raises(ValueError):
        f.write(b"x")


def test_checkpoint_example_runs():
    ex = REPO / "examples" / "python" / "checkpoint.py"
    out = subprocess.run([sys.executable, str(ex), "--procs", "3", "--mb", "2",
                          "--file", f"{MOUNTS['n-1']}/example-ckpt"],
                         capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert "VERIFIED" in out.stdout, out.stdout
    assert plfs.stat(f"{MOUNTS['n-1']}/example-ckpt").st_size == 3 * 2 * 1024 * 1024


def test_paths_outside_a_mount_and_bad_modes_are_clear(mount):
    """Issue 25, item 13: a path outside every mount point says so; exists() answers False for
    it, as os.path.exists does, instead of raising; a bad mode is named as the caller wrote it."""
    with pytest.raises(OSError) as e:
        plfs.stat("/etc/passwd")
    assert "not under a PLFS mount point" in str(e.value) and e.value.filename == "/etc/passwd"
    assert plfs.exists("/etc/passwd") is False
    assert plfs.exists(f"{mount}/no/such/dir/f") is False
    for bad in ("rw", "rr", "ra", "q", "r++"):
        with pytest.raises(ValueError) as e:
            plfs.open(f"{mount}/m", bad)
        assert repr(bad) in str(e.value), (bad, str(e.value))
    with plfs.open(f"{mount}/m", "w") as f:
        assert f.mode == "w"
    with plfs.open(f"{mount}/m", "br") as f:
        assert f.read() == b""


def test_module_docstring_example_runs_on_the_zero_config_default(tmp_path):
    """The example in plfs.__doc__, as written, in a fresh home directory with no plfsrc: the
    zero-config default's mount point, /tmp/plfs-$USER, from plfs.mount_points()."""
    lines = plfs.__doc__.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("    import "))
    block = []
    for line in lines[start:]:
        if line and not line.startswith("    "):
            break
        block.append(line)
    code = textwrap.dedent("\n".join(block))
    assert "plfs.mount_points()" in code and "/tmp/plfs-me" not in plfs.__doc__
    env = {k: v for k, v in os.environ.items() if k not in ("PLFSRC", "XDG_DATA_HOME")}
    env["HOME"] = str(tmp_path)
    out = subprocess.run([sys.executable, "-c", code + "\nprint('MOUNT', m)\n"], env=env,
                         capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    user = env.get("USER") or pwd.getpwuid(os.getuid()).pw_name
    assert f"MOUNT /tmp/plfs-{user}" in out.stdout, out.stdout
    assert f"/tmp/plfs-{user}/run [] ['ckpt']" in out.stdout, out.stdout
