"""plfs:// through fsspec (pandas and pyarrow on top), plfs.walk and plfs.scandir against
os.walk and os.scandir, and plfs.exists (issue 28, item 6). fsspec, pandas and pyarrow are in
the package's `test` extra, which `make test-python` installs: a missing one fails these tests,
it does not skip them."""

import datetime
import errno
import os
import random
import stat as st
import subprocess
import sys

# Installed by `make test-python` (the `test` extra): a missing one fails the collection.
import fsspec
import pandas as pd
import pyarrow.parquet as pq
import pytest

# conftest.py sets PLFSRC to the private plfsrc before plfs is first used.
from conftest import MOUNTS

import plfs


def frame():
    """A DataFrame of several column types, with nothing time-dependent in it."""
    rng = random.Random(28)
    n = 5000
    return pd.DataFrame({
        "i": pd.array(range(n), dtype="int64"),
        "x": [rng.random() for _ in range(n)],
        "s": [f"row-{rng.randrange(100)}" for _ in range(n)],
        "t": pd.date_range("2026-01-01", periods=n, freq="s"),
        "c": pd.Categorical(rng.choice("abc") for _ in range(n)),
        "b": [i % 3 == 0 for i in range(n)],
    })


def test_pandas_writes_and_reads_parquet_through_plfs_urls(mount, tmp_path):
    df = frame()
    url = f"plfs://{mount}/run/a.parquet"
    plfs.makedirs(f"{mount}/run")
    df.to_parquet(url)
    back = pd.read_parquet(url)
    assert back.equals(df)
    # The bytes are those pandas writes to a plain file: pyarrow's parquet writer embeds its
    # version and the pandas schema, nothing time-dependent.
    plain = tmp_path / "a.parquet"
    df.to_parquet(plain)
    with plfs.open(f"{mount}/run/a.parquet", "rb") as f:
        assert f.read() == plain.read_bytes()
    # pyarrow straight on the fsspec filesystem, and fsspec.open.
    fs = fsspec.filesystem("plfs")
    assert pq.read_table(f"{mount}/run/a.parquet", filesystem=fs).to_pandas().equals(df)
    with fsspec.open(url, "rb") as f:
        assert f.read(4) == b"PAR1"
    # The three-slash form the docs show and the two-slash form name the same file.
    assert pd.read_parquet("plfs://" + f"{mount}/run/a.parquet".lstrip("/")).equals(df)


def test_the_protocol_is_registered_without_importing_plfs_and_plfs_does_not_import_fsspec():
    code = (
        "import sys, fsspec\n"
        "assert 'plfs' not in sys.modules\n"
        "fs = fsspec.filesystem('plfs')\n"
        "print(type(fs).__module__, type(fs).__name__, fs.protocol)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["plfs.fsspec", "PlfsFileSystem", "plfs"]
    code = ("import sys, plfs\n"
            "print(sorted(m for m in ('fsspec', 'pandas', 'pyarrow') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_strip_protocol():
    fs = fsspec.filesystem("plfs")
    m = MOUNTS["n-1"]
    assert fs._strip_protocol(f"plfs://{m}/a/b/") == f"{m}/a/b"
    assert fs._strip_protocol(f"plfs://{m[1:]}/a") == f"{m}/a"
    assert fs._strip_protocol(f"{m}/a/./c/../b") == f"{m}/a/b"
    assert fs._strip_protocol("plfs:///") == "/"
    assert fs._strip_protocol([f"plfs://{m}/x", f"{m}/y"]) == [f"{m}/x", f"{m}/y"]
    assert fs.unstrip_protocol(f"{m}/x") == f"plfs://{m}/x"
    assert fs._parent(f"plfs://{m}/a/b") == f"{m}/a"
    got, path = fsspec.core.url_to_fs(f"plfs://{m}/q")
    assert got is fs and path == f"{m}/q"


def test_fsspec_ls_info_exists_rm_mv_cp(mount):
    fs = fsspec.filesystem("plfs")
    d = f"{mount}/fs"
    fs.mkdir(f"plfs://{d}/sub/deeper")
    with pytest.raises(FileExistsError):
        fs.mkdir(d)
    fs.makedirs(d, exist_ok=True)
    fs.pipe_file(f"plfs://{d}/f1", b"x" * 1234)
    with fs.open(f"{d}/sub/f2", "w") as f:  # text mode, wrapped by fsspec
        f.write("hello\n")
    plfs.symlink("f1", f"{d}/ln")

    assert fs.ls(d, detail=False) == [f"{d}/f1", f"{d}/ln", f"{d}/sub"]
    infos = {i["name"]: i for i in fs.ls(f"plfs://{d}")}
    assert infos[f"{d}/f1"]["type"] == "file" and infos[f"{d}/f1"]["size"] == 1234
    assert infos[f"{d}/sub"]["type"] == "directory"
    assert infos[f"{d}/ln"]["islink"] and infos[f"{d}/ln"]["destination"] == "f1"
    assert infos[f"{d}/ln"]["type"] == "file" and infos[f"{d}/ln"]["size"] == 1234
    assert fs.ls(f"{d}/f1") == [fs.info(f"{d}/f1")]

    i = fs.info(f"plfs://{d}/sub/f2")
    s = plfs.stat(f"{d}/sub/f2")
    assert (i["name"], i["size"], i["type"], i["mtime"]) == (f"{d}/sub/f2", 6, "file", s.st_mtime)
    assert i["mode"] == s.st_mode and not i["islink"]
    utc = datetime.timezone.utc
    assert fs.modified(f"{d}/sub/f2") == datetime.datetime.fromtimestamp(s.st_mtime, utc)
    assert fs.created(f"{d}/sub/f2").tzinfo is datetime.timezone.utc
    assert fs.cat_file(f"{d}/sub/f2") == b"hello\n"
    assert fs.isdir(f"{d}/sub") and fs.isfile(f"{d}/f1") and not fs.isdir(f"{d}/f1")

    assert fs.exists(f"plfs://{d}/f1") and fs.exists(f"{d}/sub")
    assert not fs.exists(f"{d}/nope") and not fs.exists(f"{d}/nope/deeper")
    assert not fs.exists("/etc/passwd") and not fs.exists("plfs:///etc/passwd")
    with pytest.raises(FileNotFoundError) as e:
        fs.info(f"{d}/nope")
    assert e.value.filename == f"{d}/nope"
    with pytest.raises(OSError) as e:
        fs.info("/etc/passwd")
    assert "not under a PLFS mount point" in str(e.value) and e.value.filename == "/etc/passwd"

    assert sorted(fs.find(d)) == [f"{d}/f1", f"{d}/ln", f"{d}/sub/f2"]
    fs.cp_file(f"{d}/f1", f"{d}/sub/f1copy")
    assert fs.cat_file(f"{d}/sub/f1copy") == b"x" * 1234
    fs.mv(f"{d}/sub/f1copy", f"{d}/moved")
    assert fs.exists(f"{d}/moved") and not fs.exists(f"{d}/sub/f1copy")
    fs.mv(f"{d}/moved", f"{d}/sub")  # into an existing directory
    assert fs.exists(f"{d}/sub/moved")
    fs.rename(f"{d}/sub/deeper", f"{d}/deeper2")
    assert fs.isdir(f"{d}/deeper2")

    fs.rm(f"{d}/ln")
    assert not fs.lexists(f"{d}/ln") and fs.exists(f"{d}/f1")
    fs.rm_file(f"plfs://{d}/f1")
    assert not fs.exists(f"{d}/f1")
    with pytest.raises(IsADirectoryError) as e:
        fs.rm(f"{d}/sub")
    assert e.value.filename == f"{d}/sub"
    fs.rmdir(f"{d}/deeper2")
    fs.rm(f"plfs://{d}", recursive=True)
    assert not fs.exists(d)
    with pytest.raises(FileNotFoundError):
        fs.rm(d)


def make_tree(root, mkdir, write, symlink):
    """The same small tree, through os or plfs: nested and empty directories, files, a link to
    a directory, a link to a file and a dangling link."""
    for d in ("a", "a/b", "a/b/c", "empty", "z"):
        mkdir(f"{root}/{d}")
    for f, n in (("top.txt", 10), ("a/f1", 0), ("a/b/f2", 300), ("a/b/c/f3", 7), ("z/last", 1)):
        write(f"{root}/{f}", b"y" * n)
    symlink("a", f"{root}/link-dir")
    symlink("top.txt", f"{root}/link-file")
    symlink("missing", f"{root}/link-dangling")


def plain_write(p, data):
    with open(p, "wb") as f:
        f.write(data)


def plfs_write(p, data):
    with plfs.open(p, "wb") as f:
        f.write(data)


def relative(triples, top):
    """walk output with paths relative to top and sorted names (os.walk does not sort)."""
    return [(os.path.relpath(p, top), sorted(ds), sorted(fs)) for p, ds, fs in triples]


@pytest.mark.parametrize("topdown", [True, False])
@pytest.mark.parametrize("followlinks", [False, True])
def test_walk_matches_os_walk(mount, tmp_path, topdown, followlinks):
    make_tree(tmp_path, os.mkdir, plain_write, os.symlink)
    make_tree(mount, plfs.mkdir, plfs_write, plfs.symlink)

    if topdown:
        # The same triples in the same order: both go depth first, in the order of dirnames
        # (sorted here, as os.walk does not sort).
        want = relative(_sorted_walk(os.walk, tmp_path, followlinks), tmp_path)
        got = relative(_sorted_walk(plfs.walk, mount, followlinks), mount)
        assert got == want
    else:
        want = relative(os.walk(tmp_path, topdown=False, followlinks=followlinks), tmp_path)
        got = relative(plfs.walk(mount, topdown=False, followlinks=followlinks), mount)
        assert sorted(got) == sorted(want)
        # Bottom-up: every directory after all those below it that were entered.
        seen = set()
        for p, ds, _ in got:
            for dname in ds:
                if followlinks or dname != "link-dir":
                    assert os.path.normpath(os.path.join(p, dname)) in seen, (p, dname)
            seen.add(p)


def _sorted_walk(walker, top, followlinks):
    for p, ds, fs in walker(top, followlinks=followlinks):
        ds.sort()
        yield p, list(ds), fs


def test_walk_pruning_bytes_and_errors(mount):
    make_tree(mount, plfs.mkdir, plfs_write, plfs.symlink)
    seen = []
    for p, ds, _ in plfs.walk(mount):
        seen.append(os.path.relpath(p, mount))
        if "b" in ds:
            ds.remove("b")
    assert seen == [".", "a", "empty", "z"]
    # bytes in, bytes out.
    first = next(plfs.walk(os.fsencode(mount)))
    assert first[0] == os.fsencode(mount) and b"a" in first[1] and b"top.txt" in first[2]
    # A directory that cannot be listed goes to onerror, named.
    errors = []
    assert list(plfs.walk(f"{mount}/nope", onerror=errors.append)) == []
    assert isinstance(errors[0], FileNotFoundError) and errors[0].filename == f"{mount}/nope"
    assert list(plfs.walk(f"{mount}/top.txt", onerror=errors.append)) == []
    assert isinstance(errors[1], NotADirectoryError) and errors[1].filename == f"{mount}/top.txt"
    assert list(plfs.walk(f"{mount}/nope")) == []


def test_scandir_matches_os_scandir(mount, tmp_path):
    make_tree(tmp_path, os.mkdir, plain_write, os.symlink)
    make_tree(mount, plfs.mkdir, plfs_write, plfs.symlink)

    def describe(entries, top):
        out = []
        for e in sorted(entries, key=lambda e: e.name):
            size = e.stat().st_size if e.is_file() else None
            out.append((e.name, os.path.relpath(e.path, top), e.is_dir(), e.is_file(),
                        e.is_symlink(), e.is_dir(follow_symlinks=False),
                        e.is_file(follow_symlinks=False), size,
                        st.S_IFMT(e.stat(follow_symlinks=False).st_mode)))
        return out

    with os.scandir(tmp_path) as it:
        want = describe(list(it), tmp_path)
    with plfs.scandir(mount) as it:
        entries = list(it)
    assert [e.name for e in entries] == sorted(e.name for e in entries)
    assert describe(entries, mount) == want
    e = next(e for e in entries if e.name == "a")
    assert os.fspath(e) == f"{mount}/a" and e.inode() == plfs.stat(f"{mount}/a").st_ino
    assert repr(e) == "<plfs.DirEntry 'a'>"
    # Through a symlink to a directory, as os.scandir follows it.
    assert [x.name for x in plfs.scandir(f"{mount}/link-dir")] == ["b", "f1"]
    dangling = next(e for e in entries if e.name == "link-dangling")
    with pytest.raises(FileNotFoundError):
        dangling.stat()
    with pytest.raises(NotADirectoryError) as err:
        plfs.scandir(f"{mount}/top.txt")
    assert err.value.filename == f"{mount}/top.txt"


def test_exists_is_false_for_missing_and_non_plfs_paths(mount):
    plfs_write(f"{mount}/here", b"1")
    plfs.symlink("here", f"{mount}/to-here")
    plfs.symlink("gone", f"{mount}/to-gone")
    assert plfs.exists(f"{mount}/here") and plfs.exists(mount)
    assert plfs.exists(f"{mount}/to-here")
    assert plfs.exists(f"{mount}/nope") is False
    assert plfs.exists(f"{mount}/nope/deeper") is False
    assert plfs.exists(f"{mount}/here/below") is False  # a file is not a directory
    assert plfs.exists(f"{mount}/to-gone") is False  # as os.path.exists: the link is followed
    # Outside every mount point, even a path that exists on the plain file system.
    assert plfs.exists("/etc/passwd") is False
    assert plfs.exists("/") is False
    assert plfs.exists("/no/such/path") is False
    assert plfs.exists(f"{mount}/bad\0name") is False
    # What stat and readlink say meanwhile.
    assert st.S_ISLNK(plfs.stat(f"{mount}/to-here").st_mode)
    assert st.S_ISREG(plfs.stat(f"{mount}/to-here", follow_symlinks=True).st_mode)
    assert plfs.readlink(f"{mount}/to-gone") == "gone"
    with pytest.raises(FileNotFoundError) as e:
        plfs.stat(f"{mount}/to-gone", follow_symlinks=True)
    with pytest.raises(OSError) as e:
        plfs.stat("/etc/passwd", follow_symlinks=True)
    assert "not under a PLFS mount point" in str(e.value) and e.value.filename == "/etc/passwd"
    with pytest.raises(FileExistsError) as e:
        plfs.symlink("x", f"{mount}/here")
    assert e.value.filename == f"{mount}/here"
    with pytest.raises(OSError) as e:
        plfs.readlink(f"{mount}/here")
    assert e.value.errno == errno.EINVAL and e.value.filename == f"{mount}/here"
