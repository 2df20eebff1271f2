"""plfs.walk and plfs.scandir against os.walk and os.scandir over the same tree, and
plfs.exists (issue 28, item 6)."""

import errno
import os
import stat as st

import pytest

import plfs


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
