#!/usr/bin/env python3
"""What a writer costs besides its data (issue 22, items 1 and 4), counted: noise cannot move these.

1. System calls per write, by call: W processes (default 4) write one N-1 file through ldplfs,
   rank r writing records of RECORD bytes (default 47008) at offsets (i * W + r) * RECORD; the
   whole run is counted with `strace -f -c` twice, with SHORT and LONG records per rank, and the
   difference divided by W * (LONG - SHORT) writes, so opens and closes cancel out. The budget:
   one pwrite and nothing else (no listing, stat or open of another file while writing).
2. Peak RSS of one writer of many small writes: one process writes COUNT records of 64 bytes
   (default 1,000,000) through ldplfs, and the same to a plain file; ru_maxrss of each. The
   budget: at most 24 MiB through ldplfs (the index buffer, not the number of writes).

usage: bench/writer_counts.py DIR [--json] [--lib target/release/libldplfs.so]
       [--writers 4] [--record 47008] [--short 200] [--long 1000] [--count 1000000]
DIR is where the backend and the plain files go (the GlusterFS mount in make bench-glusterfs).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

WRITER = """
import os, sys
path, rank, writers, record, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
buf = bytes([rank + 65]) * record
fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
for i in range(n):
    os.pwrite(fd, buf, (i * writers + rank) * record)
os.close(fd)
"""

SMALL = """
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
buf = b"x" * 64
for i in range(int(sys.argv[2])):
    os.pwrite(fd, buf, i * 64)
os.close(fd)
"""


def strace_counts(env, argv_list, out):
    """Runs every argv of `argv_list` at once under one `strace -f -c`; returns {call: count}."""
    script = "import subprocess, sys\nps = [subprocess.Popen(a) for a in %r]\nsys.exit(max(p.wait() for p in ps))\n" % (argv_list,)
    r = subprocess.run(
        ["strace", "-f", "-qq", "-c", "-o", out, sys.executable, "-c", script], env=env, capture_output=True
    )
    if r.returncode != 0:
        raise SystemExit(f"writers failed: {r.stderr.decode(errors='replace')}")
    calls = Counter()
    for line in open(out):
        m = re.match(r"\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)\s*$", line)
        if m and m.group(2) != "total":
            calls[m.group(2)] += int(m.group(1))
    return calls


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--lib", default=os.path.join(ROOT, "target/release/libldplfs.so"))
    ap.add_argument("--writers", type=int, default=4)
    ap.add_argument("--record", type=int, default=47008)
    ap.add_argument("--short", type=int, default=200)
    ap.add_argument("--long", type=int, default=1000)
    ap.add_argument("--count", type=int, default=1_000_000)
    a = ap.parse_args()
    if not shutil.which("strace"):
        raise SystemExit("writer_counts: strace is not installed")
    if not os.path.exists(a.lib):
        raise SystemExit(f"writer_counts: {a.lib} missing: make build first")

    work = tempfile.mkdtemp(prefix="writer-counts-", dir=a.dir)
    try:
        be = os.path.join(work, "be")
        os.makedirs(be)
        mnt = f"/plfs-writer-counts-{os.getpid()}"
        rc = os.path.join(work, "plfsrc")
        with open(rc, "w") as f:
            f.write(f"- mount_point: {mnt}\n  backends:\n    - location: {be}\n")
        env = dict(os.environ, PLFSRC=rc, LD_PRELOAD=a.lib)
        env.pop("PLFS_LOG", None)

        # 1. System calls per write.
        runs = {}
        for n in (a.short, a.long):
            argv = [[sys.executable, "-c", WRITER, f"{mnt}/n1.{n}", str(r), str(a.writers), str(a.record), str(n)]
                    for r in range(a.writers)]
            runs[n] = strace_counts(env, argv, os.path.join(work, f"strace.{n}"))
        writes = a.writers * (a.long - a.short)
        per_write = {c: round((runs[a.long][c] - runs[a.short][c]) / writes, 3)
                     for c in set(runs[a.long]) | set(runs[a.short])}
        per_write = {c: v for c, v in sorted(per_write.items(), key=lambda kv: -kv[1]) if abs(v) >= 0.001}
        per_write["(all)"] = round((sum(runs[a.long].values()) - sum(runs[a.short].values())) / writes, 3)

        # 2. Peak RSS of one writer of COUNT 64-byte writes, through ldplfs and plainly: each
        # run from a wrapper whose only child it is (RUSAGE_CHILDREN keeps the largest child).
        def rss_mib(e, path):
            wrap = ("import resource, subprocess, sys\n"
                    "subprocess.run(sys.argv[1:], check=True)\n"
                    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
            clean = {k: v for k, v in e.items() if k != "LD_PRELOAD"}
            # The wrapper runs plainly; the writer gets the preload (if any) through env.
            argv = [sys.executable, "-c", wrap, "env"] + [f"{k}={v}" for k, v in e.items() if k == "LD_PRELOAD"]
            argv += [sys.executable, "-c", SMALL, path, str(a.count)]
            out = subprocess.run(argv, env=clean, check=True, capture_output=True).stdout
            return round(int(out.split()[-1]) / 1024, 1)

        plain_mib = rss_mib({k: v for k, v in env.items() if k != "LD_PRELOAD"}, os.path.join(work, "small.plain"))
        plfs_mib = rss_mib(env, f"{mnt}/small")
        result = {
            "dir": a.dir,
            "writers": a.writers,
            "record": a.record,
            "writes_counted": writes,
            "syscalls_per_write": per_write,
            "small_writes": a.count,
            "peak_rss_mib": {"plain": plain_mib, "plfs": plfs_mib},
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if a.json:
        print(json.dumps(result, indent=1))
    else:
        print(f"system calls per write ({a.writers} writers x {a.record} B, N-1 through ldplfs; budget: 1 pwrite and nothing else)")
        for c, v in per_write.items():
            print(f"  {c:16} {v}")
        r = result["peak_rss_mib"]
        print(f"peak RSS of one writer of {a.count} 64-byte writes: plfs {r['plfs']} MiB, plain {r['plain']} MiB (budget: plfs <= 24 MiB)")


if __name__ == "__main__":
    main()
