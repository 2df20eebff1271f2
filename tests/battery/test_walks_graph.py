"""bench/walks.py's reading of a raw callgrind profile (issue 27): the instructions by file and
the edges between files it reads, the cycles it finds among the edges and the layer order it
holds them to, checked on inputs whose answers are known. (The walks themselves run under
valgrind in `make bench`.)"""

import importlib.util

from conftest import ROOT

_spec = importlib.util.spec_from_file_location("walks", ROOT / "bench" / "walks.py")
walks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(walks)

CRATES = "/src/crates/"

# A raw profile in callgrind's format, names compressed as valgrind writes them: `fn` of
# index/mod.rs inlines format code, then calls into sys/dir.rs; the function of sys/dir.rs runs
# a closure of index/mod.rs inlined into it (a back-and-forth, and an edge into a higher layer)
# and calls std (not counted).
PROFILE = f"""# callgrind format
version: 1
positions: line
events: Ir

ob=(1) /lib/libldplfs.so
fl=(1) {CRATES}plfs-core/src/index/mod.rs
fn=(1) plfs_core::index::IndexState::refresh
10 5
fi=(2) {CRATES}plfs-format/src/names.rs
20 7
+1 3
fe=(1)
12 1
cfi=(3) {CRATES}plfs-core/src/sys/dir.rs
cfn=(2) plfs_core::sys::dir::Dir::list
calls=4 30
13 400

fl=(3)
fn=(2)
30 8
fi=(1)
40 11
fe=(3)
31 2
cfi=(4) /rustc/library/alloc/src/vec/mod.rs
cfn=(3) alloc::vec::Vec::push
calls=2 5
32 20
"""


def test_a_raw_profile_read(tmp_path):
    p = tmp_path / "cg.out"
    p.write_text(PROFILE)
    by_file, e = walks.profile(str(p), CRATES)
    # Each line's own cost, by its file and the function it ran in; a call's inclusive cost is
    # the callee's, and std's lines are not counted.
    assert by_file == {
        ("plfs-core/src/index/mod.rs", "plfs_core::index::IndexState::refresh"): 6,
        ("plfs-format/src/names.rs", "plfs_core::index::IndexState::refresh"): 10,
        ("plfs-core/src/sys/dir.rs", "plfs_core::sys::dir::Dir::list"): 10,
        ("plfs-core/src/index/mod.rs", "plfs_core::sys::dir::Dir::list"): 11,
    }
    assert e == {
        ("plfs-core/src/index/mod.rs", "plfs-format/src/names.rs", "inline"): 10,
        ("plfs-core/src/index/mod.rs", "plfs-core/src/sys/dir.rs", "call"): 4,
        ("plfs-core/src/sys/dir.rs", "plfs-core/src/index/mod.rs", "inline"): 11,
    }


def test_a_cycle_is_a_back_and_forth():
    edges = {
        ("a.rs", "b.rs", "call"): 1.0,
        ("b.rs", "c.rs", "call"): 1.0,
        ("c.rs", "a.rs", "inline"): 3.0,
        ("c.rs", "d.rs", "call"): 2.0,
        ("d.rs", "e.rs", "call"): 1.0,
    }
    assert walks.back_and_forth(edges) == [
        {
            "files": ["a.rs", "b.rs", "c.rs"],
            "edges": ["a.rs -> b.rs (call, 1.0)", "b.rs -> c.rs (call, 1.0)", "c.rs -> a.rs (inline, 3.0)"],
        }
    ]


def test_a_descent_has_none():
    edges = {("a.rs", "b.rs", "call"): 1.0, ("a.rs", "c.rs", "call"): 1.0, ("b.rs", "c.rs", "inline"): 4.0}
    assert walks.back_and_forth(edges) == []


def test_layers_follow_the_crates_and_lib_rs():
    rank = lambda rel: walks.layer_of(str(ROOT), rel)  # noqa: E731
    order = [
        "plfs-format/src/names.rs",
        "plfs-core/src/sys/dir.rs",
        "plfs-core/src/extent/mod.rs",
        "plfs-core/src/container/places.rs",
        "plfs-core/src/index/read.rs",
        "plfs-core/src/layout/n1/shared.rs",
        "plfs-core/src/namespace/mod.rs",
        "ldplfs/src/rt/guard.rs",
        "ldplfs/src/fd/table.rs",
        "ldplfs/src/file/io.rs",
        "ldplfs/src/calls/io.rs",
    ]
    ranks = [rank(f) for f in order]
    assert None not in ranks, dict(zip(order, ranks))
    assert ranks == sorted(ranks) and len(set(ranks)) == len(ranks), dict(zip(order, ranks))
    # The files of one module: its rank.
    assert rank("plfs-core/src/index/mod.rs") == rank("plfs-core/src/index/read.rs") == rank("plfs-core/src/index.rs")
    assert rank("plfs-fuse/src/main.rs") is None


def test_an_edge_into_a_higher_layer_is_listed():
    edges = {
        ("plfs-core/src/sys/dir.rs", "plfs-core/src/index/mod.rs", "inline"): 11.0,
        ("plfs-core/src/index/mod.rs", "plfs-core/src/sys/dir.rs", "call"): 4.0,
        ("ldplfs/src/calls/io.rs", "plfs-core/src/layout/file.rs", "call"): 1.0,
    }
    assert walks.upward(edges, str(ROOT)) == ["plfs-core/src/sys/dir.rs -> plfs-core/src/index/mod.rs (inline, 11.0)"]
