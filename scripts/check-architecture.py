#!/usr/bin/env python3
"""Architecture checks run by `make check` (docs/design.md, "Layers"):

1. The backend I/O seam: outside `crates/plfs-core/src/sys/`, the core makes no file system call
   (no `rustix::fs` function, no `rustix::io` read/write family, no `std::fs`, no `libc`).
2. No module cycle in any crate: modules are files (`a/b.rs` or `a/b/mod.rs` is `a::b`); an
   edge A -> B is any `crate::`, `super::` or `self::` path in A that names B or an item of B.
   A parent's `mod b;` and `pub use b::...` re-exports are not edges (they only publish B).
   `CYCLE_EXCEPTIONS` lists the known cycles, each with its reason.
3. The layers of the core: `crates/plfs-core/src/lib.rs` declares its modules bottom layer first
   (the picture in docs/design.md, "Inside the core", read upwards), and a module (with
   everything under it) may only use the modules declared before it. `LAYER_EXCEPTIONS` lists
   the known violations, each with its reason. A known cycle or violation that no longer occurs
   is reported, to be taken off its list.
4. No source file longer than 700 lines before its tests.
5. No function longer than 120 lines (from its `fn` line to its closing brace, comments
   included) in product code.
6. The on-disk format is its own crate, `crates/plfs-format`, and does no I/O: its Cargo.toml
   depends only on `FORMAT_DEPENDENCIES` (no rustix, libc, nix), its product code names no file,
   process, network or terminal call (`FORMAT_FORBIDDEN`: `std::fs`, `File`, `OpenOptions`,
   `std::io` readers and writers, `std::env`, `std::process`, `std::net`, `print!`...), and the
   fuzz targets (`fuzz/Cargo.toml`) depend on it alone (with libfuzzer-sys).
7. The I/O seam knows no names in containers: nothing under `crates/plfs-core/src/sys/` names the
   format (`plfs_format`, `format::`).
8. The core's API: `crates/plfs-core/src/lib.rs` declares `pub` only the modules in
   `PUBLIC_MODULES`; `sys`, `clock` and the format (`use plfs_format as format`) are crate-private
   and not re-exported whole. Front ends get what they need of them from named items
   (`frontend.rs`, re-exported at the root).
9. The core's descriptors are closed by the system call: inside the seam only `sys/fd.rs` makes
   a descriptor (`FD_MAKERS`: rustix's `open`, `openat`, `openat2`, `fcntl_dupfd*`, `dup*`, its
   `Dir`, `OwnedFd`), and wraps it in `sys::Fd`, whose drop closes it without libc's `close`,
   an interposable symbol that the LD_PRELOAD library would see (issue 27).

Product code is a crate's `src/` without its `tests.rs` files and its `#[cfg(test)]` items.
Comments, string and character literals are blanked before code is matched or braces counted.

Exit status 1 with one line per violation; 0 and a summary otherwise.
"""
import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
CORE_SRC = os.path.join(ROOT, "crates/plfs-core/src")
MAX_LINES = 700
MAX_FN_LINES = 120

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

# The format crate (rule 6): its only dependencies, and what its product code must not name.
FORMAT_CRATE = os.path.join(ROOT, "crates/plfs-format")
FORMAT_DEPENDENCIES = {"crc32c", "thiserror"}
FORMAT_FORBIDDEN = [
    (re.compile(r"\bstd::fs\b"), "std::fs"),
    (re.compile(r"\bFile\b|\bOpenOptions\b"), "a file type"),
    (re.compile(r"\bstd::io::(?!Error\b|ErrorKind\b|Result\b)[A-Za-z_{]"), "std::io other than its error types"),
    (re.compile(r"\b(?:Read|Write|Seek|BufRead)\s*(?:for\b|[,}])|\bimpl\s+(?:Read|Write|Seek|BufRead)\b"), "an I/O trait"),
    (re.compile(r"\bstd::(?:env|process|net|thread|time)\b"), "the environment, processes, network or clock"),
    (re.compile(r"\b(?:rustix|libc|nix)::"), "system calls"),
    (re.compile(r"\be?print(?:ln)?!|\bdbg!"), "terminal output"),
]
# What makes a descriptor (rule 9): only sys/fd.rs may name it.
FD_MAKERS = [
    (re.compile(r"\b(?:rustix::)?fs::(?:open|openat|openat2|Dir|memfd_create)\b"), "a rustix call that makes a descriptor"),
    (re.compile(r"\bfcntl_dupfd\w*|\b(?:rustix::)?io::dup\w*"), "a rustix dup"),
    (re.compile(r"\bOwnedFd\b"), "OwnedFd (closed by libc's close)"),
]
FD_FILE = "sys/fd.rs"
FUZZ_DEPENDENCIES = {"libfuzzer-sys", "plfs-format"}
# The modules the core's lib.rs may declare `pub` (rule 8); every other module is crate-private.
PUBLIC_MODULES = {"error", "log", "types", "config", "compact", "fsck", "tools", "upgrade", "testing"}
PRIVATE_LAYERS = ("sys", "clock", "format", "plfs_format")

# Known violations, each waiting to be removed (not a rule); one that no longer occurs is
# reported, so that it is taken off the list.
# Uses of a module that the core's lib.rs declares later: (user, used) -> why.
LAYER_EXCEPTIONS = {}
# Cycles: (crate, the modules of the cycle) -> why.
CYCLE_EXCEPTIONS = {
    ("plfs-core", frozenset({"config", "config::load"})): "config/mod.rs calls the loader "
    "(config/load.rs), which builds the types config/mod.rs defines (seen once config/mod.rs was "
    "read past its `#[cfg(test)] mod tests;`)",
}


def blank(text):
    """`text` with its comments, string and character literals replaced by spaces (newlines
    kept, so that line numbers stay and braces can be counted)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        after_ident = i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_")
        raw = None if after_ident else re.match(r'[bc]?r(#*)"', text[i : i + 300])
        char = re.match(r"'(?:\\u\{[0-9a-fA-F]+\}|\\.|[^\\'])'", text[i : i + 12]) if c == "'" else None
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif text.startswith("/*", i):
            # Block comments nest.
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
        elif raw:
            close = '"' + raw.group(1)
            j = text.find(close, i + len(raw.group(0)))
            j = n if j < 0 else j + len(close)
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
        elif char:
            j = i + len(char.group(0))
        else:
            # Code, a lifetime or a loop label.
            out.append(c)
            i += 1
            continue
        out.append(re.sub(r"[^\n]", " ", text[i:j]))
        i = j
    return "".join(out)


def block_end(t, i):
    """In blanked text `t`, the index of the brace that closes the one at `i`."""
    depth = 0
    for k in range(i, len(t)):
        if t[k] == "{":
            depth += 1
        elif t[k] == "}":
            depth -= 1
            if depth == 0:
                return k
    return len(t) - 1


def item_end(t, i):
    """In blanked text `t`, where the item starting at `i` ends: past its `;` (a declaration) or
    past the `}` of its body (a `;` or `{` inside parentheses or brackets is not the end). An
    item that is an argument of a macro (`fd_wrapper!(fn read(...) -> isize, ...)`) ends where
    the macro's parenthesis closes."""
    depth = 0
    for k in range(i, len(t)):
        ch = t[k]
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
            if depth < 0:
                return k
        elif depth == 0 and ch == ";":
            return k + 1
        elif depth == 0 and ch == "{":
            return block_end(t, k) + 1
    return len(t)


def test_spans(t):
    """In blanked text `t`, the spans of the `#[cfg(test)]` items (attribute included)."""
    spans = []
    for m in re.finditer(r"#\[cfg\(test\)\]", t):
        if not spans or m.start() >= spans[-1][1]:
            spans.append((m.start(), item_end(t, m.end())))
    return spans


def product(text):
    """The product code of a file's `text`: blanked, with its `#[cfg(test)]` items blanked too.
    Line numbers are those of `text`."""
    t = blank(text)
    for a, b in reversed(test_spans(t)):
        t = t[:a] + re.sub(r"[^\n]", " ", t[a:b]) + t[b:]
    return t


def product_lines(text):
    """The number of lines of `text` outside its `#[cfg(test)]` items."""
    t = blank(text)
    return t.count("\n") - sum(t.count("\n", a, b + 1) for a, b in test_spans(t))


FN_RX = re.compile(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)")


def function_lengths(t):
    """(name, line, length in lines) of every function with a body in blanked text `t`, from
    the line of its `fn` to the line of its closing brace. A function inside another is measured
    on its own too (and counts in the outer one's length); a `fn` in a macro's arguments is not
    a function."""
    out = []
    # Parenthesis and bracket depth at each `fn`: one inside them is a macro's argument.
    depth, at = 0, 0
    for m in FN_RX.finditer(t):
        for ch in t[at : m.start()]:
            depth += (ch in "([") - (ch in ")]")
        at = m.start()
        if depth > 0:
            continue
        end = item_end(t, m.end())
        if t[end - 1] != "}":
            continue  # no body: declared in a trait or an `extern` block, or a macro's argument
        first = t.count("\n", 0, m.start()) + 1
        last = t.count("\n", 0, end - 1) + 1
        out.append((m.group(1), first, last - first + 1))
    return out


def rust_files(src, tests=False):
    """The `.rs` files under `src`; without `tests`, not the `tests.rs` files (unit tests of their
    parent module, compiled only under `#[cfg(test)]`)."""
    for dirpath, _, files in os.walk(src):
        for f in sorted(files):
            if f.endswith(".rs") and (tests or f != "tests.rs"):
                yield os.path.join(dirpath, f)


def crate_sources():
    """The `src/` directory of every crate."""
    for crate in sorted(os.listdir(os.path.join(ROOT, "crates"))):
        src = os.path.join(ROOT, "crates", crate, "src")
        if os.path.isdir(src):
            yield crate, src


def read(path):
    with open(path) as f:
        return f.read()


def module_of(src, path):
    rel = os.path.relpath(path, src)[:-3].split(os.sep)
    if rel[-1] in ("mod", "lib", "main"):
        rel = rel[:-1]
    return tuple(rel)


def check_seam(problems):
    for path in rust_files(CORE_SRC):
        rel = os.path.relpath(path, CORE_SRC)
        if rel.startswith("sys" + os.sep) or rel in SEAM_ALLOWED_FILES:
            continue
        text = product(read(path))
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


def module_graph(crate_src):
    """The modules of a crate (module path -> file) and the edges between them (module -> the
    modules it uses)."""
    files = list(rust_files(crate_src))
    modules = {module_of(crate_src, f): f for f in files}
    edges = {m: set() for m in modules}
    for m, f in modules.items():
        text = product(read(f))
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
    return modules, edges


def strong_components(nodes, edges):
    """The cycles of a directed graph: its strongly connected components of more than one node
    (Tarjan's algorithm). `edges[v]`: the nodes `v` has an edge to. Also used by bench/walks.py,
    for the cycles of a walk's files."""
    index, low, on, stack, sccs = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
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
    for v in nodes:
        if v not in index:
            visit(v)
    return sccs


def check_cycles(crate, crate_src, modules, edges, problems):
    sccs = strong_components(modules, edges)
    name = os.path.relpath(crate_src, ROOT)
    found = set()
    for comp in sccs:
        names = sorted("::".join(c) or "crate" for c in comp)
        if (crate, frozenset(names)) in CYCLE_EXCEPTIONS:
            found.add((crate, frozenset(names)))
            continue
        problems.append(f"cycle in {name}: {' <-> '.join(names)}")
    for c, names in sorted(k for k in CYCLE_EXCEPTIONS if k[0] == crate and k not in found):
        problems.append(f"cycle in {name}: {' <-> '.join(sorted(names))} is gone: remove it from CYCLE_EXCEPTIONS")


MOD_DECL_RX = re.compile(r"^[ \t]*(?:pub(?:\([a-z]+\))?[ \t]+)?mod[ \t]+([a-z_][a-z0-9_]*)[ \t]*;", re.M)


def core_layers(core_src=CORE_SRC):
    """The core's top-level modules in the order its lib.rs declares them: the layer order, lowest
    first (also used by bench/walks.py)."""
    return MOD_DECL_RX.findall(product(read(os.path.join(core_src, "lib.rs"))))


def check_layers(modules, edges, problems):
    """Every use of a module of the core by one that lib.rs declares before it (a top-level
    module stands for everything under it). Returns the modules in their order."""
    declared = core_layers()
    order = {name: i for i, name in enumerate(declared)}
    used = set()
    for m in sorted(modules):
        for t in sorted(edges[m]):
            if not m or not t or m[0] == t[0] or m[0] not in order or t[0] not in order:
                continue
            if order[m[0]] > order[t[0]]:
                continue
            if (m[0], t[0]) in LAYER_EXCEPTIONS:
                used.add((m[0], t[0]))
                continue
            f = os.path.relpath(modules[m], ROOT)
            problems.append(
                f"layer: {f}: {'::'.join(m)} uses {'::'.join(t)}, which lib.rs declares after {m[0]} "
                "(a module may only use the modules declared before it)"
            )
    for a, b in sorted(set(LAYER_EXCEPTIONS) - used):
        problems.append(f"layer: {a} no longer uses {b}: remove the exception from LAYER_EXCEPTIONS")
    return declared


def check_sizes(problems):
    for _, src in crate_sources():
        for f in rust_files(src):
            lines = product_lines(read(f))
            if lines > MAX_LINES:
                problems.append(f"size: {os.path.relpath(f, ROOT)}: {lines} lines before its tests (limit {MAX_LINES})")


def check_functions(problems):
    n = 0
    for _, src in crate_sources():
        for f in rust_files(src):
            for name, line, length in function_lengths(product(read(f))):
                n += 1
                if length > MAX_FN_LINES:
                    problems.append(
                        f"length: {os.path.relpath(f, ROOT)}:{line}: fn {name} is {length} lines (limit {MAX_FN_LINES})"
                    )
    return n


def dependencies(cargo_toml):
    """The names in the `[dependencies]` table of a Cargo.toml (not dev- or build-dependencies)."""
    names, on = set(), False
    for line in read(cargo_toml).splitlines():
        line = line.split("#")[0].strip()
        if line.startswith("["):
            on = line == "[dependencies]"
        elif on and "=" in line:
            names.add(line.split("=")[0].strip().split(".")[0].strip('"'))
    return names


def check_format_crate(problems):
    """Rule 6: the format crate does no I/O, and the fuzz targets depend on it alone."""
    toml = os.path.join(FORMAT_CRATE, "Cargo.toml")
    if not os.path.isfile(toml):
        problems.append("format: crates/plfs-format/Cargo.toml is missing (the on-disk format is its own crate)")
        return
    for d in sorted(dependencies(toml) - FORMAT_DEPENDENCIES):
        problems.append(f"format: crates/plfs-format/Cargo.toml depends on {d} (allowed: {sorted(FORMAT_DEPENDENCIES)})")
    for path in rust_files(os.path.join(FORMAT_CRATE, "src")):
        rel = os.path.relpath(path, ROOT)
        for n, line in enumerate(product(read(path)).split("\n"), 1):
            for rx, what in FORMAT_FORBIDDEN:
                if rx.search(line):
                    problems.append(f"format: {rel}:{n}: {what} in the format crate (no I/O): {line.strip()}")
    fuzz = os.path.join(ROOT, "fuzz/Cargo.toml")
    if os.path.isfile(fuzz):
        for d in sorted(dependencies(fuzz) - FUZZ_DEPENDENCIES):
            problems.append(f"format: fuzz/Cargo.toml depends on {d} (the fuzz targets use plfs-format alone)")


def check_sys_names(problems):
    """Rule 7: the I/O seam does not name the format."""
    rx = re.compile(r"\bplfs_format\b|\bformat::")
    for path in rust_files(os.path.join(CORE_SRC, "sys"), tests=True):
        for n, line in enumerate(product(read(path)).split("\n"), 1):
            if rx.search(line):
                problems.append(
                    f"seam: {os.path.relpath(path, ROOT)}:{n}: the I/O seam names the format "
                    f"(it knows no names in containers: the caller passes them in): {line.strip()}"
                )


def check_fd_makers(problems):
    for path in rust_files(CORE_SRC):
        rel = os.path.relpath(path, CORE_SRC)
        if rel == FD_FILE:
            continue
        for n, line in enumerate(product(read(path)).split("\n"), 1):
            for rx, what in FD_MAKERS:
                if rx.search(line):
                    problems.append(f"fd: crates/plfs-core/src/{rel}:{n}: {what} outside {FD_FILE}: {line.strip()}")


def check_api(problems):
    """Rule 8: the modules the core's lib.rs makes public. Returns them."""
    text = product(read(os.path.join(CORE_SRC, "lib.rs")))
    public = []
    for m in re.finditer(r"^[ \t]*pub(\([a-z]+\))?[ \t]+mod[ \t]+([a-z_][a-z0-9_]*)", text, re.M):
        vis, name = m.group(1), m.group(2)
        if vis:
            continue
        public.append(name)
        if name not in PUBLIC_MODULES:
            problems.append(
                f"api: crates/plfs-core/src/lib.rs: `pub mod {name}`: not in PUBLIC_MODULES "
                f"(make it pub(crate) and export what front ends need by name)"
            )
    for m in re.finditer(r"^[ \t]*pub(\([a-z]+\))?[ \t]+use[ \t]+([^;]*);", text, re.M):
        if m.group(1):
            continue
        body = re.sub(r"\s+", " ", m.group(2))
        for item in re.split(r"[{},]", body):
            item = item.strip()
            path = item.split(" as ")[0].strip()
            if path.split("::")[0] == "crate":
                path = path[len("crate::"):]
            if path in PRIVATE_LAYERS or (path.startswith("plfs_format") and "::" not in path):
                problems.append(
                    f"api: crates/plfs-core/src/lib.rs: `pub use {body}` makes {path} public "
                    f"(sys, clock and the format are crate-private)"
                )
    for name in ("sys", "clock"):
        if not re.search(rf"^[ \t]*(?:pub\(crate\)[ \t]+)?mod[ \t]+{name}[ \t]*;", text, re.M):
            problems.append(f"api: crates/plfs-core/src/lib.rs: `{name}` must be declared `pub(crate) mod {name};`")
    return public


def main():
    problems = []
    check_seam(problems)
    check_format_crate(problems)
    check_sys_names(problems)
    check_fd_makers(problems)
    public = check_api(problems)
    stats = []
    layers = []
    for crate, src in crate_sources():
        modules, edges = module_graph(src)
        check_cycles(crate, src, modules, edges, problems)
        stats.append(f"{crate}: {len(modules)} modules, {sum(len(e) for e in edges.values())} edges")
        if src == CORE_SRC:
            layers = check_layers(modules, edges, problems)
    check_sizes(problems)
    functions = check_functions(problems)
    for p in problems:
        print(p)
    if problems:
        print(f"check-architecture: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print(
        "check-architecture: seam clean; no module cycle ("
        + "; ".join(stats)
        + f"; {len(CYCLE_EXCEPTIONS)} known); the core's {len(layers)} modules in the layer order of lib.rs"
        + f" ({len(LAYER_EXCEPTIONS)} known exception); no file over {MAX_LINES} lines;"
        + f" no function over {MAX_FN_LINES} lines ({functions} functions); the format crate does no I/O"
        + f" and the seam names no format; descriptors are made in {FD_FILE} only; the core's public modules: {', '.join(public)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
