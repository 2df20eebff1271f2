#!/usr/bin/env python3
"""Per-call cost of ldplfs: figures that noise cannot move, and wall-clock ratios side by side.

For each workload the same command runs on a plain file without the preload and on a PLFS file
through it (and, where it tells something, on the plain file with the preload loaded: the
pass-through cost):

1. system calls (strace -f -c): `dd bs=4k` writing a file, `cat` reading it, `dd bs=1M`;
2. CPU seconds per GiB (user + system of the command, from getrusage), medians of --runs;
3. instructions (valgrind --tool=callgrind, total Ir of the process) of `dd bs=4k count=2000`;
4. wall-clock ratios of pio (bench/src, built with `make -C bench pio`), runs alternated
   plain/ldplfs so that load hits both: 1 process N-1 strided with 1 MiB and 47008 B records,
   4 processes N-1 strided against the plain N-N ceiling, and read-back against the plain
   shared file.

Sections whose tool is missing (strace, valgrind, pio/mpirun) are reported as skipped.
A benchmark, not a test: tests/battery/test_percall.py asserts the system-call budget.

usage: percall.py [--lib PATH] [--lib-base PATH] [--runs N] [--size-mb N] [--only SECTION,...]
"""

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))


class Area:
    """A backend, a mount point and a plain directory under one temporary directory."""

    def __init__(self, lib):
        self.root = Path(tempfile.mkdtemp(prefix="ldplfs-percall-", dir=os.environ.get("PLFS_BENCH_TMPDIR", "/tmp")))
        self.backend, self.mnt, self.plain = self.root / "backend", self.root / "mnt", self.root / "plain"
        self.backend.mkdir()
        self.plain.mkdir()
        rc = self.root / "plfsrc"
        rc.write_text(f"- mount_point: {self.mnt}\n  backends:\n    - location: {self.backend}\n")
        self.env = dict(os.environ, PLFSRC=str(rc))
        self.env.pop("LD_PRELOAD", None)
        self.pre = dict(self.env, LD_PRELOAD=str(lib))
        self.lib = lib

    def close(self):
        shutil.rmtree(self.root, ignore_errors=True)


def sh(cmd, env, check=True):
    return subprocess.run(["bash", "-c", cmd], env=env, check=check, capture_output=True, text=True)


def strace_calls(cmd, env):
    """Total system calls of `cmd` and its children (strace -f -c), and the per-call table."""
    out = Path(tempfile.mktemp(prefix="strace-", dir="/tmp"))
    # strace itself runs without the preload; the traced command gets it through `env`.
    tracer_env = dict(env)
    pre = tracer_env.pop("LD_PRELOAD", None)
    argv = ["strace", "-f", "-c", "-o", str(out)]
    if pre:
        argv += ["-E", f"LD_PRELOAD={pre}"]
    subprocess.run(argv + ["bash", "-c", cmd], env=tracer_env, check=True, capture_output=True)
    text = out.read_text()
    out.unlink()
    total, table = None, {}
    for line in text.splitlines():
        # "% time  seconds  usecs/call  calls  [errors]  syscall": calls is the 4th column.
        f = line.split()
        if len(f) >= 5 and re.match(r"^[0-9.]+$", f[0]) and f[3].isdigit():
            if f[-1] == "total":
                total = int(f[3])
            else:
                table[f[-1]] = int(f[3])
    if total is None:
        raise RuntimeError(f"no total in strace output:\n{text}")
    return total, table


def cpu_of(cmd, env, runs):
    """Median (wall seconds, CPU seconds) of `runs` runs of `cmd`."""
    walls, cpus = [], []
    for _ in range(runs):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        subprocess.run(["bash", "-c", cmd], env=env, check=True, stdout=subprocess.DEVNULL)
        walls.append(time.perf_counter() - t)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append((r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime))
    return statistics.median(walls), statistics.median(cpus)


def callgrind_ir(cmd, env):
    """Instructions executed by the process (callgrind's total Ir), children not followed."""
    out = Path(tempfile.mktemp(prefix="callgrind-", dir="/tmp"))
    tracer_env = dict(env)
    r = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--trace-children=no"]
                       + cmd, env=tracer_env, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(r.stderr[-2000:])
    m = re.search(r"Collected\s*:\s*(\d+)", r.stderr)
    out.unlink(missing_ok=True)
    if not m:
        raise RuntimeError(r.stderr[-2000:])
    return int(m.group(1))


def section_syscalls(a, libs, args):
    print("\n## System calls (strace -f -c), whole command incl. start-up")
    print("| workload | plain | plain + preload | PLFS via " + " | PLFS via ".join(n for n, _ in libs)
          + " | ratio PLFS/plain |")
    print("|---|---|---|" + "---|" * len(libs) + "---|")
    n4k = args.count
    plain_f, plfs_f = a.plain / "f", a.mnt / "f"
    rows = [
        ("dd bs=4k count=%d (write)" % n4k, "dd if=/dev/zero of={f} bs=4k count=%d status=none" % n4k),
        ("cat of that file", "cat {f} > /dev/null"),
        ("dd bs=1M count=%d (write)" % (n4k // 256), "dd if=/dev/zero of={f} bs=1M count=%d status=none" % (n4k // 256)),
        ("dd bs=4k read", "dd if={f} of=/dev/null bs=4k status=none"),
    ]
    for label, cmd in rows:
        plain, _ = strace_calls(cmd.format(f=plain_f), a.env)
        passthru, _ = strace_calls(cmd.format(f=plain_f), dict(a.env, LD_PRELOAD=str(libs[-1][1])))
        cells = []
        for _, lib in libs:
            if "cat" in label or "read" in label:
                # The PLFS file to read was written by the previous row with this library.
                sh(f"dd if=/dev/zero of={plfs_f} bs=4k count={n4k} status=none", dict(a.env, LD_PRELOAD=str(lib)))
            t, _ = strace_calls(cmd.format(f=plfs_f), dict(a.env, LD_PRELOAD=str(lib)))
            cells.append(t)
        print(f"| {label} | {plain} | {passthru} | " + " | ".join(str(c) for c in cells)
              + f" | {cells[-1] / plain:.2f}x |")


def section_cpu(a, libs, args):
    print(f"\n## CPU seconds per GiB (user + system, median of {args.runs})")
    mb = args.size_mb
    print("| workload | plain | PLFS via " + " | PLFS via ".join(n for n, _ in libs) + " |")
    print("|---|---|" + "---|" * len(libs))
    rows = [
        ("write dd bs=4k", f"dd if=/dev/zero of={{f}} bs=4k count={mb * 256} status=none"),
        ("write dd bs=1M", f"dd if=/dev/zero of={{f}} bs=1M count={mb} status=none"),
        ("read cat", "cat {f} > /dev/null"),
    ]
    for label, cmd in rows:
        _, cpu = cpu_of(cmd.format(f=a.plain / "c"), a.env, args.runs)
        cells = []
        for _, lib in libs:
            env = dict(a.env, LD_PRELOAD=str(lib))
            if label.startswith("read"):
                sh(f"dd if=/dev/zero of={a.mnt / 'c'} bs=1M count={mb} status=none", env)
            _, c = cpu_of(cmd.format(f=a.mnt / "c"), env, args.runs)
            cells.append(c)
        per = lambda c: f"{c * 1024 / mb:.2f}"
        print(f"| {label} | {per(cpu)} | " + " | ".join(per(c) for c in cells) + " |")


def section_callgrind(a, libs, args):
    print("\n## Instructions (callgrind, dd bs=4k count=2000, whole process)")
    print("| workload | plain | PLFS via " + " | PLFS via ".join(n for n, _ in libs) + " | per 4 KiB write, extra over plain |")
    print("|---|---|" + "---|" * len(libs) + "---|")
    cmd = ["dd", "if=/dev/zero", "bs=4k", "count=2000", "status=none"]
    plain = callgrind_ir(cmd + [f"of={a.plain / 'g'}"], a.env)
    cells = [callgrind_ir(cmd + [f"of={a.mnt / 'g'}"], dict(a.env, LD_PRELOAD=str(lib))) for _, lib in libs]
    print(f"| write | {plain:,} | " + " | ".join(f"{c:,}" for c in cells) + " | "
          + " / ".join(f"{(c - plain) / 2000:,.0f}" for c in cells) + " |")
    rcmd = ["dd", "of=/dev/null", "bs=4k", "status=none"]
    plain = callgrind_ir(rcmd + [f"if={a.plain / 'g'}"], a.env)
    cells = [callgrind_ir(rcmd + [f"if={a.mnt / 'g'}"], dict(a.env, LD_PRELOAD=str(lib))) for _, lib in libs]
    print(f"| read | {plain:,} | " + " | ".join(f"{c:,}" for c in cells) + " | "
          + " / ".join(f"{(c - plain) / 2000:,.0f}" for c in cells) + " |")


def pio_run(pio, env, nprocs, path, layout, record, per_proc, phase, extra=()):
    cmd = ["mpirun", "-np", str(nprocs)]
    for k in ("LD_PRELOAD", "PLFSRC"):
        if k in env:
            cmd += ["-genv", k, env[k]]
    cmd += [str(pio), "-p", str(path), "-l", layout, "-m", "posix", "-b", str(record), "-s", str(per_proc),
            "-q", phase, *extra]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    lines = [l for l in r.stdout.splitlines() if l.startswith("PIO_RESULT")]
    if r.returncode != 0 or not lines:
        raise RuntimeError(f"pio failed: {r.stdout[-1000:]} {r.stderr[-1000:]}")
    d = dict(kv.split("=", 1) for kv in lines[-1].split()[1:] if "=" in kv)
    if d.get("errors") != "0":
        raise RuntimeError(f"pio data errors: {lines[-1]}")
    return float(d["bw_mib_s"]), d.get("seed")


def section_pio(a, libs, args):
    pio = Path(args.pio)
    if not pio.exists() or not shutil.which("mpirun"):
        print(f"\n## pio: skipped ({pio} or mpirun missing; `make -C bench pio`)")
        return
    per = args.pio_mb << 20
    print(f"\n## Wall-clock ratios, pio, {args.pio_mb} MiB per process, medians of {args.runs} runs, "
          "plain and each library alternated")
    print("| case | plain MiB/s | " + " | ".join(f"ldplfs ({n}) MiB/s | ratio" for n, _ in libs) + " | target |")
    print("|---|---|" + "---|---|" * len(libs) + "---|")
    cases = [
        ("1 proc, 1 MiB, write", 1, 1 << 20, "strided", "strided", "write", 0.9),
        ("1 proc, 47008 B, write", 1, 47008, "strided", "strided", "write", 0.8),
        ("4 procs, 47008 B, write vs plain N-N", 4, 47008, "strided", "nn", "write", 0.9),
        ("4 procs, 47008 B, read-back vs plain shared", 4, 47008, "strided", "strided", "read", 0.8),
    ]
    envs = [("plain", a.env, None)] + [(n, dict(a.env, LD_PRELOAD=str(lib)), lib) for n, lib in libs]
    for label, n, rec, layout, plain_layout, phase, target in cases:
        bws = {name: [] for name, _, _ in envs}
        for rep in range(args.runs):
            order = envs if rep % 2 == 0 else envs[::-1]
            for name, env, lib in order:
                lay = plain_layout if lib is None else layout
                path = (a.plain if lib is None else a.mnt) / f"pio-{name}-{rep}"
                bw, seed = pio_run(pio, env, n, path, lay, rec, per, "-w")
                if phase == "read":
                    bw, _ = pio_run(pio, env, n, path, lay, rec, per, "-r",
                                    ("-x", seed, "-W", str(n), "-S", "1", "-u"))
                bws[name].append(bw)
                sh(f"rm -rf {path}*", env, check=False)
        p = statistics.median(bws["plain"])
        cells = []
        for name, _ in libs:
            l = statistics.median(bws[name])
            cells.append(f"{l:.0f} | {l / p:.2f}x")
        print(f"| {label} | {p:.0f} | " + " | ".join(cells) + f" | >= {target} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lib", default=str(TARGET / "release" / "libldplfs.so"))
    ap.add_argument("--lib-base", default=None, help="a second library to compare (e.g. a build of main)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--count", type=int, default=20000, help="4 KiB blocks of the strace dd")
    ap.add_argument("--size-mb", type=int, default=256, help="MiB moved per CPU measurement")
    ap.add_argument("--pio", default=str(TARGET / "bench" / "pio"))
    ap.add_argument("--pio-mb", type=int, default=64)
    ap.add_argument("--only", default="syscalls,cpu,callgrind,pio")
    args = ap.parse_args()
    libs = ([("base", Path(args.lib_base))] if args.lib_base else []) + [("this", Path(args.lib))]
    for _, l in libs:
        if not l.exists():
            sys.exit(f"{l} missing (cargo build --release -p ldplfs)")
    only = set(args.only.split(","))
    a = Area(libs[-1][1])
    try:
        for name, fn, tool in (("syscalls", section_syscalls, "strace"), ("cpu", section_cpu, None),
                               ("callgrind", section_callgrind, "valgrind"), ("pio", section_pio, None)):
            if name not in only:
                continue
            if tool and not shutil.which(tool):
                print(f"\n## {name}: skipped ({tool} not installed)")
                continue
            fn(a, libs, args)
            sys.stdout.flush()
    finally:
        a.close()


if __name__ == "__main__":
    main()
