#!/usr/bin/env python3
"""Architecture checks run by `make check` (docs/design.md, "Layers"):

1. The backend I/O seam: outside `crates/plfs-core/src/sys/`, the core makes no file system call
   (no `rustix::fs` function, no `rustix::io` read/write family, no `std::fs`, no `libc`).
2. No module cycle in any crate: modules are files (`a/b.rs` or `a/b/mod.rs` is `a::b`); an
   edge A -> B is any `crate::`, `super::` or `self::` path in A that names B or an item of B.
   A parent's `mod b;` and `pub use b::...` re-exports are not edges (they only publish B).
3. No source file longer than 700 lines before its tests (`#[cfg(test)]`).

Exit status 1 with one line per violation; 0 and a summary otherwise.
"""
import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
MAX_LINES = 700

SEAM_FORBIDDEN = [
    (re.compile(r"\brustix::fs::(?!Stat\b|FileType\b|StatVfs\b|Timespec\b)[a-z_]+"), "rustix::fs call"),
    (re.compile(r"\buse rustix::fs\b"), "rustix::fs import"),
    (re.compile(r"\brustix::io::(read|write|pread|pwrite|readv|writev|preadv|pwritev|fcntl\w*|dup\w*|ioctl\w*)\b"),
     "rustix::io read/write"),
    (re.compile(r"\bstd::fs\b"), "std::fs"),
    (re.compile(r"\blibc::"), "libc"),
]
# Not backend I/O: the logger writes to fd 2.
SEAM_ALLOWED_FILES = {"log.rs"}


def strip_tests(text):
    """The text before the first `#[cfg(test)]` (tests may use std::fs on their temp dirs)."""
    i = text.find("#[cfg(test)]")
    return text if i < 0 else text[:i]


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return "\n".join(re.sub(r"//.*$", "", line) for line in text.split("\n"))


def rust_files(src, tests=False):
    """The `.rs` files under `src`; without `tests`, not the `tests.rs` files (unit tests of their
    parent module, compiled only under `#[cfg(test)]`)."""
    for dirpath, _, files in os.walk(src):
        for f in sorted(files):
            if f.endswith(".rs") and (tests or f != "tests.rs"):
                yield os.path.join(dirpath, f)


def module_of(src, path):
    rel = os.path.relpath(path, src)[:-3].split(os.sep)
    if rel[-1] in ("mod", "lib", "main"):
        rel = rel[:-1]
    return tuple(rel)


def check_seam(problems):
    src = os.path.join(ROOT, "crates/plfs-core/src")
    for path in rust_files(src):
        rel = os.path.relpath(path, src)
        if rel.startswith("sys" + os.sep) or rel in SEAM_ALLOWED_FILES:
            continue
        text = strip_comments(strip_tests(open(path).read()))
        for n, line in enumerate(text.split("\n"), 1):
            for rx, what in SEAM_FORBIDDEN:
                if rx.search(line):
                    problems.append(f"seam: crates/plfs-core/src/{rel}:{n}: {what} outside sys/: {line.strip()}")


PATH_RX = re.compile(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
USE_GROUP_RX = re.compile(r"\buse\s+(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)*)::\{([^;]*)\};", re.S)


def resolve(kind, segs, here, modules):
    """The module a path starting at `kind` (crate/super/self) with segments `segs` names."""
    if kind == "crate":
        base = ()
    elif kind == "self":
        base = here
    else:
        base = here[:-1]
        while segs and segs[0] == "super":
            base = base[:-1]
            segs = segs[1:]
    best = None
    cur = base
    if cur in modules:
        best = cur
    for s in segs:
        cur = cur + (s,)
        if cur in modules:
            best = cur
        else:
            break
    return best


def check_cycles(crate_src, problems):
    files = list(rust_files(crate_src))
    modules = {module_of(crate_src, f): f for f in files}
    edges = {m: set() for m in modules}
    for m, f in modules.items():
        text = strip_comments(strip_tests(open(f).read()))
        # Re-exports of own submodules publish them; they are not dependencies.
        text = re.sub(r"\bpub(\(crate\))?\s+use\s+[a-z_][a-z0-9_]*::[^;]*;", "", text)
        targets = []
        for g in USE_GROUP_RX.finditer(text):
            kind, prefix, body = g.group(1), g.group(2), g.group(3)
            segs = [s for s in prefix.split("::") if s]
            for item in re.split(r"[,{}\s]+", body):
                item = item.split(" as ")[0]
                if item and item != "self":
                    targets.append((kind, segs + [item]))
            targets.append((kind, segs))
        text = USE_GROUP_RX.sub("", text)
        for p in PATH_RX.finditer(text):
            segs = [s for s in p.group(2).split("::") if s]
            targets.append((p.group(1), segs))
        # Bare paths into the module's own children (`walk::run`, `use view::X`).
        children = {c[-1] for c in modules if len(c) == len(m) + 1 and c[: len(m)] == m}
        for p in re.finditer(r"(?<![:\w])([a-z_][a-z0-9_]*)::", text):
            if p.group(1) in children:
                targets.append(("self", [p.group(1)]))
        for kind, segs in targets:
            t = resolve(kind, list(segs), m, modules)
            if t is None or t == m:
                continue
            # A module may use its ancestors' items only through their own files: a child
            # using its parent is an edge too (the parent must then not use the child).
            edges[m].add(t)
    # Tarjan's strongly connected components.
    index, low, on, stack, sccs = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(comp)

    sys.setrecursionlimit(10000)
    for v in modules:
        if v not in index:
            visit(v)
    name = os.path.relpath(crate_src, ROOT)
    for comp in sccs:
        names = sorted("::".join(c) or "crate" for c in comp)
        problems.append(f"cycle in {name}: {' <-> '.join(names)}")
    return len(modules), sum(len(e) for e in edges.values())


def check_sizes(problems):
    for crate in sorted(os.listdir(os.path.join(ROOT, "crates"))):
        src = os.path.join(ROOT, "crates", crate, "src")
        if not os.path.isdir(src):
            continue
        for f in rust_files(src):
            lines = strip_tests(open(f).read()).count("\n")
            if lines > MAX_LINES:
                problems.append(f"size: {os.path.relpath(f, ROOT)}: {lines} lines before its tests (limit {MAX_LINES})")


def main():
    problems = []
    check_seam(problems)
    stats = []
    for crate in sorted(os.listdir(os.path.join(ROOT, "crates"))):
        src = os.path.join(ROOT, "crates", crate, "src")
        if os.path.isdir(src):
            n, e = check_cycles(src, problems)
            stats.append(f"{crate}: {n} modules, {e} edges")
    check_sizes(problems)
    for p in problems:
        print(p)
    if problems:
        print(f"check-architecture: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print("check-architecture: seam clean; no module cycle (" + "; ".join(stats) + f"); no file over {MAX_LINES} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
