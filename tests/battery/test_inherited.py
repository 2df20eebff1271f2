"""Children writing to a descriptor they inherited (issue 25, item 2), in every workload mode and
front end. A shell redirects a command group into a new file and runs external commands inside
it; a script opens a descriptor and hands it to a child shell. Before, on 1-N under ldplfs the
parent's CREATE record was still in its buffer when the child opened the file again by name, so
`{ echo a; /bin/echo b; date; echo c; } > f` left "a c" with "/bin/echo: write error: No such
file or directory", and `sh -c 'echo c >&3'` failed with EIO."""

import pytest

from conftest import METHODS, plfs_fixture

WORKLOADS = ["n-1", "n-n", "1-n"]


@pytest.fixture(params=[(w, m) for w in WORKLOADS for m in METHODS], ids=lambda p: f"{p[0]}-{p[1]}")
def fs_any(request, preload_lib):
    workload, method = request.param
    yield from plfs_fixture(method, preload_lib, None if workload == "n-1" else workload, "plfs-inherit-")


def test_a_command_group_redirected_into_a_new_file_keeps_every_line(fs_any):
    fs = fs_any
    f = fs.mount / "group.out"
    fs.sh(f"{{ echo a; /bin/echo b; date +%Y >/dev/null; printf 'c\\n'; /usr/bin/env printf 'd\\n'; echo e; }} > '{f}'")
    assert fs.sh(f"cat '{f}'") == "a\nb\nc\nd\ne\n"


def test_a_child_shell_writes_to_an_inherited_descriptor(fs_any):
    fs = fs_any
    f = fs.mount / "fd3.out"
    fs.sh(f"exec 3>'{f}'; echo x >&3; sh -c 'echo c >&3'; bash -c 'echo d >&3'; echo y >&3; exec 3>&-")
    assert fs.sh(f"cat '{f}'") == "x\nc\nd\ny\n"
    # A child appending to a file its parent opened for appending.
    g = fs.mount / "fd4.out"
    fs.sh(f"exec 4>>'{g}'; echo 1 >&4; sh -c 'echo 2 >&4'; echo 3 >&4; exec 4>&-")
    assert fs.sh(f"cat '{g}'") == "1\n2\n3\n"
