#!/usr/bin/env python3
"""An N-1 file at 1 to 256 processes (issue 52): what each writer and each restart reader costs
the backend, and how long the job takes, plfs through ldplfs beside a plain shared file.

For each NP: NP processes (forked, not MPI: this machine has 2 cores) write R strided records of
RECORD bytes each (rank i at (k * NP + i) * RECORD), then NP fresh processes each read a
neighbour's records and check every byte (bench/src/scalerw.c). One run is timed (seconds of the
whole phase, open to close of every process), then the same is run again on a second file under
`strace -f -y`, and every system call whose arguments name a path under DIR (an fd is printed
with its path) is counted per process: what reaches the backend. Counts are what noise cannot
move; the times on this shared machine swing +-40 %, so only their ratios, taken side by side in
one run, are printed.

Per process, `meta` is every backend call except the data transfers (read, pread64, preadv,
write, pwrite64, pwritev) and the descriptor-only calls close and fcntl; `opens` is openat,
openat2 and open.

Where DIR is on the GlusterFS volume of scripts/glusterfs.sh (PLFS_GLUSTER_MOUNT) or the CephFS
of scripts/cephfs.sh (PLFS_CEPHFS_MOUNT), the file system's own counts of the timed runs are added,
per process: brick operations without WRITE, READ and the look-ups and stats (LOOKUP, STAT,
FSTAT, STATFS) that move with the client's caches (bench/brickops.py), or the MDS's client
requests (bench/cephops.py).

usage: bench/scale.py DIR [--np 1,4,16,64] [--records 8] [--record 47008] [--bin DIR]
       [--lib target/release/libldplfs.so] [--json]
DIR holds the backend and the plain files (a GlusterFS or CephFS mount for a distributed run).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DATA = {"read", "pread64", "preadv", "preadv2", "write", "pwrite64", "pwritev", "pwritev2"}
LOCAL = {"close", "fcntl"}
OPENS = {"open", "openat", "openat2"}
CALL = re.compile(r"^\d+\s+([a-z0-9_]+)\(")


def fs_counter(d):
    """(name, snapshot()) of the file system `d` is on, when its counters can be read: GlusterFS's
    brick operations or the Ceph MDS's requests; None elsewhere."""
    d = os.path.realpath(d)
    sys.path.insert(0, HERE)
    g = os.environ.get("PLFS_GLUSTER_MOUNT")
    if g and d.startswith(os.path.realpath(g) + "/"):
        import brickops
        brickops.gluster("volume", "profile", os.environ.get("PLFS_GLUSTER_VOLUME", "plfs"), "start", check=False)
        skip = brickops.CACHED | {"WRITE", "READ"}

        def bricks():
            return Counter({k: v for k, v in brickops.profile_counts().items() if k not in skip})
        # Cumulative counts since the profile started: a phase's are the difference of two snapshots.
        return "brick ops", bricks
    c = os.environ.get("PLFS_CEPHFS_MOUNT")
    if c and d.startswith(os.path.realpath(c) + "/"):
        import cephops

        def mds():
            return Counter({"requests": cephops.counters()["requests"]})
        return "MDS requests", mds
    return None


def counted_phase(counter, np_, *args):
    """run_phase, and the file system's operations it caused per process (None without a counter)."""
    if counter is None:
        return run_phase(*args), None
    before = counter[1]()
    secs = run_phase(*args)
    time.sleep(1.0)  # a close's last requests (cap releases, the size) reach the servers after it
    return secs, round(sum((counter[1]() - before).values()) / np_, 1)


def run_phase(prog, path, np_, records, record, role, env, trace_dir=None):
    """Runs NP processes of one phase at once; returns seconds until the last one ended."""
    procs = []
    t0 = time.monotonic()
    for i in range(np_):
        cmd = [prog, path, str(np_), str(records), str(i), role, str(record)]
        if trace_dir:
            out = os.path.join(trace_dir, f"{role}.{i}")
            cmd = ["strace", "-f", "-qq", "-y", "-o", out] + cmd
        procs.append(subprocess.Popen(cmd, env=env))
    bad = [p.args for p in procs if p.wait() != 0]
    if bad:
        sys.exit(f"scale: {len(bad)} processes failed, e.g. {bad[0]}")
    return time.monotonic() - t0


def backend_calls(trace, root):
    """Calls in one strace output that name a path under `root`, by name."""
    calls = Counter()
    with open(trace, errors="replace") as f:
        for line in f:
            if root not in line:
                continue
            m = CALL.match(line)
            if m:
                calls[m.group(1)] += 1
    return calls


def per_process(trace_dir, role, np_, root):
    """Mean backend calls per process of a phase: meta, opens, data, and every call."""
    total = Counter()
    for i in range(np_):
        total += backend_calls(os.path.join(trace_dir, f"{role}.{i}"), root)
    meta = sum(v for k, v in total.items() if k not in DATA and k not in LOCAL)
    opens = sum(v for k, v in total.items() if k in OPENS)
    data = sum(v for k, v in total.items() if k in DATA)
    return {
        "meta": round(meta / np_, 1),
        "opens": round(opens / np_, 1),
        "data": round(data / np_, 1),
        "calls": {k: round(v / np_, 1) for k, v in sorted(total.items())},
    }


def one_np(args, np_, base):
    prog = os.path.join(args.bin, "scalerw")
    store = os.path.join(base, "store")
    plain = os.path.join(base, "plain")
    os.makedirs(store)
    os.makedirs(plain)
    rc = os.path.join(base, "plfsrc")
    with open(rc, "w") as f:
        f.write(f"- mount_point: /plfs-scale-bench\n  backends: [{store}]\n")
    plfs_env = dict(os.environ, LD_PRELOAD=os.path.abspath(args.lib), PLFSRC=rc)
    kinds = {
        "plain": (plain, dict(os.environ)),
        "plfs": ("/plfs-scale-bench", plfs_env),
    }
    out = {"np": np_}
    counter = fs_counter(base)
    if counter:
        out["fs_counter"] = counter[0]
    for name, (d, env) in kinds.items():
        f1, f2 = os.path.join(d, "timed"), os.path.join(d, "counted")
        out[f"{name}_write_s"], out[f"{name}_writer_fs"] = counted_phase(
            counter, np_, prog, f1, np_, args.records, args.record, "w", env)
        out[f"{name}_read_s"], out[f"{name}_reader_fs"] = counted_phase(
            counter, np_, prog, f1, np_, args.records, args.record, "r", env)
        traces = tempfile.mkdtemp(prefix=f"trace-{name}-", dir=base)
        run_phase(prog, f2, np_, args.records, args.record, "w", env, traces)
        run_phase(prog, f2, np_, args.records, args.record, "r", env, traces)
        root = store if name == "plfs" else plain
        out[f"{name}_writer"] = per_process(traces, "w", np_, root)
        out[f"{name}_reader"] = per_process(traces, "r", np_, root)
        shutil.rmtree(traces)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir")
    ap.add_argument("--np", default="1,4,16,64")
    ap.add_argument("--records", type=int, default=8)
    ap.add_argument("--record", type=int, default=47008)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "bench"))
    ap.add_argument("--lib", default=os.path.join(ROOT, "target", "release", "libldplfs.so"))
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if not shutil.which("strace"):
        sys.exit("scale: strace is needed (scripts/install-deps.sh installs it)")
    for need in (os.path.join(args.bin, "scalerw"), args.lib):
        if not os.path.exists(need):
            sys.exit(f"scale: {need} is missing (make -C bench scalerw; cargo build --release)")
    rows = []
    for np_ in [int(x) for x in args.np.split(",")]:
        base = tempfile.mkdtemp(prefix=f"scale-{np_}-", dir=args.dir)
        try:
            rows.append(one_np(args, np_, base))
        finally:
            shutil.rmtree(base, ignore_errors=True)
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    print(f"# N-1, {args.records} records of {args.record} B a process, in {args.dir}")
    print("# time ratios: plain seconds / plfs seconds (above 1: plfs is faster); backend calls per process: plfs (plain)")
    fs = rows[0].get("fs_counter") if rows else None
    extra = f" {'writer ' + fs:>22} {'reader ' + fs:>22}" if fs else ""
    if fs:
        print(f"# {fs} per process: counted by the file system itself, in the timed runs")
    print(f"{'np':>5} {'write x':>8} {'read x':>7} {'writer meta':>12} {'writer opens':>13} {'reader meta':>12} {'reader opens':>13}{extra}")
    for r in rows:
        pw, pr = r["plfs_writer"], r["plfs_reader"]
        qw, qr = r["plain_writer"], r["plain_reader"]
        line = (
            f"{r['np']:>5} {r['plain_write_s'] / r['plfs_write_s']:>8.2f} {r['plain_read_s'] / r['plfs_read_s']:>7.2f}"
            f" {pw['meta']:>6} ({qw['meta']:>3}) {pw['opens']:>7} ({qw['opens']:>3})"
            f" {pr['meta']:>6} ({qr['meta']:>3}) {pr['opens']:>7} ({qr['opens']:>3})"
        )
        if fs:
            line += (f" {r['plfs_writer_fs']:>14} ({r['plain_writer_fs']:>5})"
                     f" {r['plfs_reader_fs']:>14} ({r['plain_reader_fs']:>5})")
        print(line)


if __name__ == "__main__":
    main()
