#!/usr/bin/env python3
"""UNIX tools through ldplfs versus the same tools on a plain file (the paper's Table II).

Creates a file (1 GiB by default), then times cat, cp in, cp out, md5sum and grep three times
each (after one warm-up run) on a PLFS file through LD_PRELOAD and on a plain file without it;
also on the plain file with the preload loaded, which measures the pass-through cost. Prints a
table of medians and ratios and writes results/tools_table.csv. A benchmark, not a test.

usage: tools_table.py [--size-mb N] [--runs N] [--dir DIR] [--lib PATH] [--csv PATH]
"""

import argparse
import csv
import os
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def timed(cmd, env):
    """(wall seconds, CPU seconds of the command's processes) of one run."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(["bash", "-c", cmd], env=env, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", default=None, help="work directory (default: a new one under /tmp)")
    ap.add_argument("--lib", default=str(Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "release" / "libldplfs.so"))
    ap.add_argument("--csv", default=str(ROOT / "results" / "tools_table.csv"))
    a = ap.parse_args()
    if not Path(a.lib).exists():
        subprocess.run(["cargo", "build", "--release", "-p", "ldplfs"], cwd=ROOT, check=True)
    work = Path(a.dir or tempfile.mkdtemp(prefix="ldplfs-bench-", dir="/tmp"))
    work.mkdir(parents=True, exist_ok=True)
    backend, mnt, plain = work / "backend", work / "mnt", work / "plain"
    backend.mkdir(exist_ok=True)
    plain.mkdir(exist_ok=True)
    rc = work / "plfsrc"
    rc.write_text(f"- mount_point: {mnt}\n  backends:\n    - location: {backend}\n")
    base = dict(os.environ, PLFSRC=str(rc))
    base.pop("LD_PRELOAD", None)
    pre = dict(base, LD_PRELOAD=a.lib)

    src = plain / "src.bin"
    print(f"creating {a.size_mb} MiB in {work} ...", flush=True)
    # Text lines with a rare match, so grep has real work.
    subprocess.run(
        ["bash", "-c", f"yes 'the quick brown fox jumps over the lazy dog 0123456789' | head -c {a.size_mb}M > {src}"],
        check=True,
    )
    subprocess.run(["cp", str(src), str(plain / "data.bin")], check=True)
    subprocess.run(["cp", str(src), str(mnt / "data.bin")], env=pre, check=True)

    ops = {
        "cat": "cat {f} > /dev/null",
        "cp in": "cp {src} {dst}",
        "cp out": "cp {f} {out}",
        "md5sum": "md5sum {f}",
        "grep": "grep -c needle {f} || true",
    }
    setups = {
        "plfs": (pre, mnt / "data.bin", mnt / "copy.bin"),
        "plain": (base, plain / "data.bin", plain / "copy.bin"),
        "plain+preload": (pre, plain / "data.bin", plain / "copy.bin"),
    }
    rows = []
    for op, tmpl in ops.items():
        med = {}
        for name, (env, f, dst) in setups.items():
            cmd = tmpl.format(f=f, src=src, dst=dst, out=plain / "out.bin")
            timed(cmd, env)
            ts = [timed(cmd, env) for _ in range(a.runs)]
            med[name] = (statistics.median(t[0] for t in ts), statistics.median(t[1] for t in ts))
            for p in (dst, plain / "out.bin"):
                subprocess.run(["rm", "-f", str(p)], env=env, check=True)
        rows.append((op, med["plfs"], med["plain"], med["plain+preload"]))

    print("\nmedians of", a.runs, "runs; wall-clock seconds, and CPU seconds (user+sys) in brackets,")
    print("which are steadier on a shared machine\n")
    hdr = f"{'tool':8} {'PLFS':>16} {'plain':>16} {'ratio':>13} {'plain+preload':>16} {'ratio':>13}"
    print(hdr)
    for op, p, q, r in rows:
        print(
            f"{op:8} {p[0]:7.3f} [{p[1]:6.3f}] {q[0]:7.3f} [{q[1]:6.3f}] {p[0] / q[0]:5.2f} [{p[1] / q[1]:5.2f}]"
            f" {r[0]:7.3f} [{r[1]:6.3f}] {r[0] / q[0]:5.2f} [{r[1] / q[1]:5.2f}]"
        )
    out = Path(a.csv)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(
            ["tool", "plfs_s", "plain_s", "ratio", "plain_preload_s", "preload_ratio",
             "plfs_cpu_s", "plain_cpu_s", "cpu_ratio", "plain_preload_cpu_s", "preload_cpu_ratio", "size_mb", "runs"]
        )
        for op, p, q, r in rows:
            w.writerow(
                [op, f"{p[0]:.4f}", f"{q[0]:.4f}", f"{p[0] / q[0]:.4f}", f"{r[0]:.4f}", f"{r[0] / q[0]:.4f}",
                 f"{p[1]:.4f}", f"{q[1]:.4f}", f"{p[1] / q[1]:.4f}", f"{r[1]:.4f}", f"{r[1] / q[1]:.4f}", a.size_mb, a.runs]
            )
    print(f"\nwrote {out}")
    if not a.dir:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
