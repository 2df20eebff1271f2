#!/usr/bin/env python3
"""The files a newcomer's walk crosses (issue 27), counted by the machine: the source files of
this repository whose code runs for one operation through ldplfs.

Each walk is a real program under `LD_PRELOAD=libldplfs.so` and `valgrind --tool=callgrind`, run
twice with SHORT and LONG repetitions of one operation. callgrind charges every instruction to
the source file of its line, inlined code included, so a file whose instruction count grows with
the repetitions holds code that runs for that operation. Opening, closing and starting the
program cancel out. Reported: those files (crates/*/src, by path), and the instructions of each
per operation. A file without a function (a lib.rs that only declares modules) is left out:
callgrind charges it with instructions whose line the debug information lost.

Walks (each a small Python program, so that one interposed call is made per operation):
  write       4 KiB `write`s to a new N-1 file, SHORT or LONG of them (steady state: the first
              write, which makes the logs, cancels out; every `index_buffer_records`-th write
              also appends the index records, so their files show with under one instruction in
              ten per write)
  read        4 KiB `read`s of a closed N-1 file of LONG such writes, SHORT or LONG of them (the
              index load is the same in both runs and cancels out)
  first-read  one 4 KiB `read` against none, after the same open: the first read, which loads
              the index (its per-record work scales with the file, not the walk)
  stat        `stat` of SHORT or LONG closed N-1 files, each written by one process (4 KiB)

Back-and-forths (issue 27's "with no back-and-forth"): the raw profile also gives the edges of
each walk between the files it counts: a call from a line of file A to a function of file B, and
code of B inlined into a function of A (a helper of B, or a closure of B that a function of A
runs). A group of files the walk goes into and comes back out of (a cycle of edges) is a
back-and-forth; an edge from a file of a lower layer into one of a higher layer (the format
crate, then the core's modules in the order of its lib.rs, then ldplfs's rt, fd, file, calls) is
listed apart. The edges follow the machine code: a closure given to a wrapper the compiler did
not inline (456adec's `rt::guard::run`) shows as a back-and-forth; inlined, it does not.

usage: bench/walks.py [--lib target/release/libldplfs.so] [--root CHECKOUT] [--json] [--functions] [--edges] [--min 0.5] [WALK ...]
--min: the instructions per operation below which a file is not counted (default 0.5: a file
whose code runs once in more than two operations, such as the index append of the write walk,
is listed apart as "sometimes"), and the calls or instructions per operation below which an
edge is not.
"""
import argparse
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# The layer order and the cycle search of scripts/check-architecture.py.
_spec = importlib.util.spec_from_file_location("check_architecture", os.path.join(ROOT, "scripts", "check-architecture.py"))
ARCH = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ARCH)
WALKS = ["write", "read", "first-read", "stat"]
SHORT, LONG = 1000, 2000


def need(tool):
    if shutil.which(tool) is None:
        sys.exit(f"walks: {tool} is not installed")


def callgrind(env, argv, work, root):
    """One run of argv under callgrind, read by [`profile`] for the crates of the checkout at
    `root`."""
    out = os.path.join(work, "cg.out")
    subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--log-file=/dev/null"] + argv,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    counts = profile(out, os.path.join(root, "crates") + "/")
    os.unlink(out)
    return counts


NAME = re.compile(r"^(fl|fi|fe|fn|cfi|cfl|cfn)=\((\d+)\)(?: (.*))?$")


def profile(out, crates):
    """What a raw callgrind profile says of the source files of `crates`:
    - instructions by (file, function): each line's own cost, charged to the file of the line
      (inlined code included) and to the function its code ran in (inlined code: the caller's);
    - edges between files, (A, B, how) -> how often code of file A led into code of file B: a
      call from a line of A to a function of B counts its calls ("call"); code of B inlined
      into a function of A (a helper of B, or a closure of B that A's function runs) counts its
      instructions ("inline").
    Names are compressed in the format: `fl=(3) name` the first time, `fl=(3)` after; `fi=`/`fe=`
    name the file of the lines that follow (inlined code), `cfi=`/`cfl=` the file of the
    function the next `calls=` calls (the current file when absent), and the line after
    `calls=` is the call's inclusive cost, not the caller's own."""
    files, fns = {}, {}
    by_file, edges = defaultdict(int), defaultdict(int)
    fn_file = cur = callee = fn = None
    pending_calls = None
    ours = lambda f: f is not None and f.startswith(crates)  # noqa: E731
    with open(out) as f:
        for line in f:
            line = line.rstrip("\n")
            m = NAME.match(line)
            if m:
                kind, ident, name = m.groups()
                table = fns if kind in ("fn", "cfn") else files
                if name is not None:
                    table[ident] = name
                value = table.get(ident)
                if kind == "fl":
                    fn_file = cur = value
                elif kind in ("fi", "fe"):
                    cur = value
                elif kind == "fn":
                    cur, fn = fn_file, value
                elif kind in ("cfi", "cfl"):
                    callee = value
                continue
            if line.startswith("calls="):
                pending_calls = int(line[6:].split()[0])
                continue
            if not line or not (line[0].isdigit() or line[0] in "+-*"):
                continue
            if pending_calls is not None:
                # The cost line of a call: the call site is on the current file's line.
                if ours(cur) and ours(callee) and cur != callee:
                    edges[(os.path.relpath(cur, crates), os.path.relpath(callee, crates), "call")] += pending_calls
                pending_calls = callee = None
                continue
            parts = line.split()
            if len(parts) < 2 or not ours(cur):
                continue
            cost = int(parts[1])
            by_file[(os.path.relpath(cur, crates), fn)] += cost
            if ours(fn_file) and cur != fn_file:
                edges[(os.path.relpath(fn_file, crates), os.path.relpath(cur, crates), "inline")] += cost
    return by_file, edges


# The program each walk runs: one system call interposed per operation and nothing else (dd
# would add its read of /dev/zero, and coreutils' stat its own calls, to every operation).
DRIVER = """
import os, sys
walk, n, paths = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
if walk == "make":
    for p in paths:
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(fd, bytes(4096) * n)
        os.close(fd)
elif walk == "write":
    buf = bytes(4096)
    fd = os.open(paths[0], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for _ in range(n):
        os.write(fd, buf)
    os.close(fd)
elif walk in ("read", "first-read"):
    fd = os.open(paths[0], os.O_RDONLY)
    for _ in range(n):
        os.read(fd, 4096)
    os.close(fd)
elif walk == "stat":
    for p in paths[:n]:
        os.stat(p)
"""


def driver(walk, n, paths):
    return ["/usr/bin/python3", "-c", DRIVER, walk, str(n)] + paths


def runs(walk, env, mnt, work, root):
    """The two runs of a walk: (instructions by file, operations) for each."""
    if walk == "write":
        return [(callgrind(env, driver(walk, n, [f"{mnt}/w{n}"]), work, root), n) for n in (SHORT, LONG)]
    if walk in ("read", "first-read"):
        # One writer's file of LONG writes of 4 KiB.
        subprocess.run(driver("write", LONG, [f"{mnt}/r"]), env=env, check=True)
        counts = (SHORT, LONG) if walk == "read" else (0, 1)
        return [(callgrind(env, driver(walk, n, [f"{mnt}/r"]), work, root), n) for n in counts]
    if walk == "stat":
        names = [f"{mnt}/s{i}" for i in range(LONG)]
        subprocess.run(driver("make", 1, names), env=env, check=True)
        return [(callgrind(env, driver(walk, n, names), work, root), n) for n in (SHORT, LONG)]
    raise ValueError(walk)


def has_code(root, rel):
    """Whether crates/`rel` under `root` defines a function."""
    try:
        with open(os.path.join(root, "crates", rel)) as f:
            return re.search(r"\bfn\s", f.read()) is not None
    except OSError:
        return True


def measure(walk, lib, root, min_per_op):
    need("valgrind")
    with tempfile.TemporaryDirectory(prefix="plfs-walks-") as work:
        mnt, store = os.path.join(work, "mnt"), os.path.join(work, "store")
        os.makedirs(mnt)
        os.makedirs(store)
        rc = os.path.join(work, "plfsrc")
        with open(rc, "w") as f:
            f.write(f"- mount_point: {mnt}\n  backends:\n    - location: {store}\n")
        env = dict(os.environ, PLFSRC=rc, LD_PRELOAD=os.path.abspath(lib))
        ((a, ea), na), ((b, eb), nb) = runs(walk, env, mnt, work, root)
    ops = nb - na
    # A file without a function (a lib.rs that only declares modules) holds no code: callgrind
    # charges it with instructions whose line the debug information lost, and it is not counted.
    per_fn = {k: (b.get(k, 0) - a.get(k, 0)) / ops for k in set(a) | set(b) if has_code(root, k[0])}
    per_op, fns = defaultdict(float), defaultdict(list)
    for (f, fn), v in per_fn.items():
        per_op[f] += v
        if v >= min_per_op:
            fns[f].append((fn, round(v, 1)))
    files = sorted((f for f, v in per_op.items() if v >= min_per_op), key=lambda f: -per_op[f])
    sometimes = sorted(f for f, v in per_op.items() if 0 < v < min_per_op)
    # The edges of the walk between the files it counts (self-edges aside).
    walk_edges = {}
    for k in set(ea) | set(eb):
        v = (eb.get(k, 0) - ea.get(k, 0)) / ops
        if v >= min_per_op and k[0] in per_op and k[1] in per_op and per_op[k[0]] >= min_per_op and per_op[k[1]] >= min_per_op:
            walk_edges[k] = round(v, 1)
    return {
        "walk": walk,
        "files": [(f, round(per_op[f], 1)) for f in files],
        "functions": {f: sorted(fns[f], key=lambda x: -x[1]) for f in files},
        "sometimes": sometimes,
        "instructions_per_op": round(sum(v for v in per_op.values() if v > 0), 1),
        "edges": [f"{a} -> {b} ({how}, {n})" for (a, b, how), n in sorted(walk_edges.items())],
        "back_and_forth": back_and_forth(walk_edges),
        "upward": upward(walk_edges, root),
    }


def back_and_forth(edges):
    """The walk's back-and-forths: each group of files its code goes into and comes back out of
    (a cycle of the graph of `edges`), with the edges inside the group. A walk without them
    reads as a descent: from each file, the code goes on to files it does not come back from."""
    graph = defaultdict(set)
    for a, b, _ in edges:
        graph[a].add(b)
    groups = sorted(sorted(g) for g in ARCH.strong_components(list(graph), graph))
    return [
        {"files": g, "edges": sorted(f"{a} -> {b} ({how}, {n})" for (a, b, how), n in edges.items() if a in g and b in g)}
        for g in groups
    ]


def layer_of(root, rel):
    """The rank of crates/`rel` in the layer order, or None: the format crate lowest, then the
    core's modules in the order its lib.rs declares them (scripts/check-architecture.py's
    order), then ldplfs's `rt`, `fd`, `file`, `calls` (its lib.rs)."""
    parts = rel.split("/")
    if parts[0] == "plfs-format":
        return 0
    if parts[0] == "ldplfs":
        order = ["rt", "fd", "file", "calls"]
        return 1000 + order.index(parts[2]) if len(parts) > 3 and parts[2] in order else None
    if parts[0] != "plfs-core":
        return None
    module = parts[2][:-3] if len(parts) == 3 else parts[2]
    layers = ARCH.core_layers(os.path.join(root, "crates/plfs-core/src"))
    return 1 + layers.index(module) if module in layers else None


def upward(edges, root):
    """Edges of the walk from a file of a lower layer into one of a higher layer."""
    out = []
    for (a, b, how), n in sorted(edges.items()):
        la, lb = layer_of(root, a), layer_of(root, b)
        if la is not None and lb is not None and lb > la:
            out.append(f"{a} -> {b} ({how}, {n})")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("walks", nargs="*", default=WALKS, metavar="WALK")
    ap.add_argument("--lib", default=os.path.join(ROOT, "target/release/libldplfs.so"))
    ap.add_argument("--root", help="the checkout the library was built from, whose crates/ are counted (default: this one)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--functions", action="store_true", help="under each file, the functions its code ran in")
    ap.add_argument("--edges", action="store_true", help="the edges between files: calls (per operation) and inlined code (instructions per operation)")
    ap.add_argument("--min", type=float, default=0.5)
    args = ap.parse_args()
    if not os.path.exists(args.lib):
        sys.exit(f"walks: {args.lib}: no such library (cargo build --release first)")
    # The checkout the library was built from, whose crates/ are the files counted.
    root = os.path.abspath(args.root or ROOT)
    results = [measure(w, args.lib, root, args.min) for w in args.walks or WALKS]
    for r in results:
        if not r["files"]:
            sys.exit(f"walks: no file of {root}/crates ran in the {r['walk']} walk: was {args.lib} built from that checkout (--root)?")
    if args.json:
        print(json.dumps(results, indent=1))
        return
    for r in results:
        print(f"{r['walk']}: {len(r['files'])} files, {r['instructions_per_op']} instructions per operation in them")
        for f, v in r["files"]:
            print(f"  {v:>10}  {f}")
            if args.functions:
                for fn, w in r["functions"][f]:
                    print(f"  {w:>22}  in {fn}")
        if r["sometimes"]:
            print(f"  sometimes (under {args.min} per operation): {', '.join(r['sometimes'])}")
        if args.edges:
            print(f"  edges ({len(r['edges'])}):")
            for e in r["edges"]:
                print(f"    {e}")
        print(f"  back-and-forths: {len(r['back_and_forth'])}")
        for g in r["back_and_forth"]:
            print(f"    {', '.join(g['files'])}")
            for e in g["edges"]:
                print(f"      {e}")
        print(f"  edges into a higher layer: {len(r['upward'])}")
        for e in r["upward"]:
            print(f"    {e}")


if __name__ == "__main__":
    main()
