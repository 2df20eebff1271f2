#!/usr/bin/env python3
"""Holds `plfs advise`'s prediction against a short measurement (issue 24).

For each (np, record): `plfs advise DIR --json` predicts plfs / plain N-1; then pio writes an N-1
strided file (fsync at close) plainly in DIR and through ldplfs (a mount point whose backend is
in DIR), alternated REPS times; prints predicted and measured ratios (medians).

usage: bench/advise_check.py DIR [--plfs BIN] [--pio BIN] [--ldplfs SO] [--np 2,4]
                                 [--records 4096,47008,1048576] [--per-proc 64M] [--reps 3] [--quick]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys

ap = argparse.ArgumentParser()
ap.add_argument("dir")
ap.add_argument("--plfs", default="target/release/plfs")
ap.add_argument("--pio", default="target/bench/pio")
ap.add_argument("--ldplfs", default="target/release/libldplfs.so")
ap.add_argument("--np", default="2,4")
ap.add_argument("--records", default="4096,47008,1048576")
ap.add_argument("--per-proc", default="64M")
ap.add_argument("--reps", type=int, default=3)
ap.add_argument("--quick", action="store_true", help="probe with --quick")
a = ap.parse_args()

work = os.path.join(os.path.abspath(a.dir), f"advise-check-{os.getpid()}")
be, plain = os.path.join(work, "be"), os.path.join(work, "plain")
mnt = f"/plfs-advise-check-{os.getpid()}"
os.makedirs(be)
os.makedirs(plain)
rc = os.path.join(work, "plfsrc")
with open(rc, "w") as f:
    f.write(f"- mount_point: {mnt}\n  backends:\n    - location: {be}\n")


def pio(np_, rec, path, preload):
    cmd = ["mpirun", "-np", str(np_)]
    if preload:
        cmd += ["-genv", "LD_PRELOAD", os.path.abspath(a.ldplfs), "-genv", "PLFSRC", rc]
    cmd += [a.pio, "-p", path, "-l", "strided", "-m", "posix", "-b", str(rec), "-s", a.per_proc, "-w", "-f", "-u"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=300).stdout
    line = next(x for x in out.splitlines() if x.startswith("PIO_RESULT"))
    return float(dict(kv.split("=", 1) for kv in line.split()[1:])["bw_mib_s"])


rows = []
try:
    for np_ in [int(x) for x in a.np.split(",")]:
        for rec in [int(x) for x in a.records.split(",")]:
            cmd = [a.plfs, "advise", work, "--json", "--writers", str(np_), "--record", str(rec),
                   "--per-writer", a.per_proc] + (["--quick"] if a.quick else [])
            adv = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
            p, q = [], []
            for _ in range(a.reps):
                p.append(pio(np_, rec, os.path.join(plain, "f"), False))
                q.append(pio(np_, rec, os.path.join(mnt, "f"), True))
            ratios = [y / x for x, y in zip(p, q)]
            row = dict(np=np_, record=rec, pred_n1=adv["plain_n1_mibs"], pred_plfs=adv["plfs_mibs"],
                       pred_ratio=adv["ratio_plfs_vs_n1"], use=adv["recommend"]["use"],
                       meas_n1=statistics.median(p), meas_plfs=statistics.median(q),
                       meas_ratio=statistics.median(ratios), meas_ratio_min=min(ratios), meas_ratio_max=max(ratios))
            rows.append(row)
            print(f"np {np_} record {rec}: predicted plain N-1 {row['pred_n1']:.0f} plfs {row['pred_plfs']:.0f} "
                  f"ratio {row['pred_ratio']:.2f} ({row['use']}); measured plain N-1 {row['meas_n1']:.0f} plfs "
                  f"{row['meas_plfs']:.0f} ratio {row['meas_ratio']:.2f} ({row['meas_ratio_min']:.2f}-"
                  f"{row['meas_ratio_max']:.2f})", flush=True)
finally:
    shutil.rmtree(work, ignore_errors=True)
json.dump(rows, sys.stdout)
print()
