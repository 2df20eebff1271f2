#!/usr/bin/env python3
"""Metadata cost per file (issue 11, item 4): the system calls of basic file operations through
ldplfs on an N-1 mount against the same command on a plain directory with the preload loaded
(so process start-up counts the same on both sides).

Each scenario runs under `strace -f -qq` and we count (a) every system call and (b) the metadata
operations by class (mkdir, create, open, rename, unlink, stat, readdir, utimes). Counts, not
times: noise cannot move them. Run by `make bench` after the suite, or on its own:

    python3 bench/metaops.py [target/release/libldplfs.so]
"""
import os, subprocess, sys, tempfile, re, collections, json

META = {
    "mkdir": {"mkdir", "mkdirat"},
    "rename": {"rename", "renameat", "renameat2"},
    "unlink": {"unlink", "unlinkat", "rmdir"},
    "stat": {"stat", "lstat", "fstat", "newfstatat", "statx", "fstatat64", "access", "faccessat", "faccessat2"},
    "readdir": {"getdents64", "getdents"},
    "utimes": {"utimensat", "futimesat", "utimes"},
}

def classify(line):
    m = re.match(r"^(?:\[pid\s+\d+\]\s+|\d+\s+)?(\w+)\(", line)
    if not m:
        return None, None
    name = m.group(1)
    if name in ("open", "openat", "openat2", "creat"):
        return name, ("create" if "O_CREAT" in line else "open")
    for k, v in META.items():
        if name in v:
            return name, k
    return name, "other"

def trace(cmd, env):
    with tempfile.NamedTemporaryFile(suffix=".strace", delete=False) as t:
        out = t.name
    subprocess.run(["strace", "-f", "-qq", "-o", out] + cmd, env=env, check=True,
                   stdout=subprocess.DEVNULL)
    total, by = 0, collections.Counter()
    for line in open(out):
        if "resumed>" in line or line.startswith("+++") or "---" in line[:20]:
            continue
        name, cls = classify(line)
        if name is None:
            continue
        total += 1
        by[cls] += 1
    os.unlink(out)
    return total, by

def main(lib=None, quiet=False):
    root = os.path.abspath(os.path.dirname(__file__) + "/..")  # the repository
    if lib is None:
        lib = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "target/release/libldplfs.so")
    work = tempfile.mkdtemp(prefix="metaops-")
    store, mnt, plain = f"{work}/store", f"{work}/mnt", f"{work}/plain"
    for d in (store, mnt, plain):
        os.makedirs(d)
    rc = f"{work}/plfsrc"
    open(rc, "w").write(f"- mount_point: {mnt}\n  workload: n-1\n  backends:\n    - location: {store}\n")
    env = dict(os.environ, PLFSRC=rc)
    penv = dict(env, LD_PRELOAD=lib)
    scen = [
        ("create+write+close (echo hi > F)", lambda d: ["sh", "-c", f"echo hi > {d}/f1"]),
        ("second writer (echo hi >> F)", lambda d: ["sh", "-c", f"echo hi >> {d}/f1"]),
        ("stat of a closed file", lambda d: ["sh", "-c", f"stat {d}/f1 >/dev/null"]),
        ("new file (touch F)", lambda d: ["sh", "-c", f"touch {d}/f2"]),
        ("unlink (rm F)", lambda d: ["sh", "-c", f"rm {d}/f1"]),
    ]
    rows = []
    for name, mk in scen:
        tp, bp = trace(mk(plain), penv)   # plain path, preload loaded (same process startup cost)
        tl, bl = trace(mk(mnt), penv)
        rows.append((name, tp, tl, bp, bl))
        if not quiet:
            print(f"{name:40s} plain {tp:5d}  plfs {tl:5d}  extra {tl-tp:+5d}   "
                  + " ".join(f"{k}:{bp.get(k,0)}/{bl.get(k,0)}" for k in ["mkdir","create","open","rename","unlink","stat","readdir","utimes"]))
    import shutil
    shutil.rmtree(work, ignore_errors=True)
    return rows

if __name__ == "__main__":
    main()
