"""Path walks through directory descriptors (issue 17, item 10): rsync 3.2+ walks its destination
from `/` with openat(O_PATH|O_NOFOLLOW|O_DIRECTORY) and fstatat relative to each descriptor, so
the step from the mount point's parent into the mount must be served by PLFS, and so must every
*at call relative to a descriptor inside the mount (O_PATH ones included) and openat2."""

import os
import subprocess

from conftest import make_data

# Needs rsync (scripts/install-deps.sh installs it); a missing rsync fails the test.
RSYNC = "rsync"


def _tree(root):
    """A tree with files of several sizes (empty, small, > 1 MiB), nested directories, a
    symbolic link, several modes and old modification times."""
    (root / "d1" / "d2" / "d3").mkdir(parents=True)
    (root / "empty_dir").mkdir()
    make_data(root / "big.bin", 3 * 1024 * 1024 + 17, seed=3)
    make_data(root / "d1" / "mid.bin", 70_001, seed=4)
    make_data(root / "d1" / "d2" / "small.txt", 100, seed=5)
    make_data(root / "d1" / "d2" / "d3" / "deep.bin", 1024 * 1024 + 1, seed=6)
    (root / "empty").write_bytes(b"")
    (root / "d1" / "link").symlink_to("mid.bin")
    (root / "dangling").symlink_to("nowhere/at/all")
    os.chmod(root / "d1" / "mid.bin", 0o600)
    os.chmod(root / "big.bin", 0o755)
    os.chmod(root / "d1" / "d2", 0o700)
    os.chmod(root / "empty", 0o444)
    t = 1_500_000_000
    for i, p in enumerate(sorted(root.rglob("*"), reverse=True)):
        os.utime(p, (t + i, t + 1000 * i + 7), follow_symlinks=False)
    os.utime(root, (t, t))


def _listing(fs, root, through_plfs):
    """Names, types, modes, sizes, mtimes and link targets of everything under `root`."""
    script = f"cd '{root}' && find . -printf '%p %y %m %s %T@ %l\\n' | LC_ALL=C sort"
    if through_plfs:
        return fs.sh(script)
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True).stdout


def _same_bytes(fs, a, b):
    """Every regular file under `a` (through PLFS) equals its twin under the plain `b`."""
    out = fs.sh(f"cd '{a}' && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 md5sum")
    ref = subprocess.run(
        ["bash", "-c", f"cd '{b}' && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 md5sum"],
        capture_output=True, text=True, check=True,
    ).stdout
    assert out == ref
    assert out.count("\n") == 5


def test_rsync_into_and_out_of_a_mount_round_trips(fs):
    src = fs.plain / "src"
    _tree(src)
    want = _listing(fs, src, False)
    dst = fs.mount / "dst"
    fs.sh(f"mkdir {dst}")
    r = fs.run([RSYNC, "-a", f"{src}/", f"{dst}/"], check=False, text=True)
    assert r.returncode == 0, r.stderr
    _same_bytes(fs, dst, src)
    assert _listing(fs, dst, True) == want
    # A second run finds nothing to do (sizes and mtimes read back through PLFS match).
    r = fs.run([RSYNC, "-ai", f"{src}/", f"{dst}/"], check=False, text=True)
    assert r.returncode == 0 and r.stdout == "", r.stdout + r.stderr
    # Out of the mount into a plain directory: byte-exact, same metadata.
    back = fs.plain / "back"
    r = fs.run([RSYNC, "-a", f"{dst}/", f"{back}/"], check=False, text=True)
    assert r.returncode == 0, r.stderr
    _same_bytes(fs, back, src)
    assert _listing(fs, back, False) == want
    # A changed file is updated in place of the old one (rsync writes a temporary file in the
    # destination directory and renames it over the old one).
    make_data(src / "d1" / "d2" / "small.txt", 5000, seed=9)
    os.utime(src / "d1" / "d2" / "small.txt", (1_600_000_000, 1_600_000_000))
    r = fs.run([RSYNC, "-a", "--delete", f"{src}/", f"{dst}/"], check=False, text=True)
    assert r.returncode == 0, r.stderr
    _same_bytes(fs, dst, src)
    assert _listing(fs, dst, True) == _listing(fs, src, False)


def test_openat_chains_from_root_into_a_mount(fs, progs):
    (fs.plain / "walk").mkdir()
    r = subprocess.run([progs["dirwalk"], fs.plain / "walk"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout == "OK\n", r.stderr
    r = fs.run([progs["dirwalk"], fs.mount], check=False, text=True)
    assert r.returncode == 0 and r.stdout == "OK\n", r.stderr


def test_rewinddir_shows_the_directory_as_it_is_now(fs, progs):
    """Issue 25, item 6: after rewinddir, readdir lists the directory as it is now, as on a local
    file system: an entry unlinked since opendir is gone (the FUSE daemon served the listing it
    took at opendir again; plfs-regression readdir_ops)."""
    d = fs.mount / "rd"
    fs.sh(f"mkdir '{d}' && for f in a b c victim; do echo $f > '{d}'/$f; done")
    out = fs.run([progs["rewinddir"], d]).stdout.decode().split("\n")
    assert out[0] == "first 4 victim 1", out
    assert out[1] == "again 3 victim 0", out
