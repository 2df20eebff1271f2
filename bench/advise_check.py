#!/usr/bin/env python3
"""Holds `plfs advise`'s prediction against a short measurement (issue 24).

For each (np, record): `plfs advise DIR --json` predicts plfs / plain N-1; then pio writes an N-1
strided file (fsync at close) plainly in DIR and through ldplfs (a mount point whose backend is
in DIR), alternated REPS times; prints predicted and measured ratios (medians).

usage: bench/advise_check.py DIR [--plfs BIN] [--pio BIN] [--ldplfs SO] [--np 2,4]
                                 [--records 4096,47008,1048576] [--per-proc 64M] [--reps 3] [--quick]
                                 [--predictions 1]

The functions `advise`, `pio_mibs` and `check_cell` are what the battery's
tests/battery/test_advise.py imports: the same measurement, in CI, on local disk and on the
GlusterFS volume.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys


def advise(plfs, probe_dir, np_, rec, per_proc, quick=False, env=None):
    """`plfs advise PROBE_DIR --json` for np_ writers of rec-byte records, per_proc bytes each:
    the parsed JSON."""
    cmd = [str(plfs), "advise", str(probe_dir), "--json", "--writers", str(np_), "--record", str(rec),
           "--per-writer", str(per_proc)] + (["--quick"] if quick else [])
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout)


def pio_mibs(pio, np_, rec, path, per_proc, ldplfs=None, plfsrc=None, timeout=300):
    """pio's write bandwidth (MiB/s, fsync at close) of np_ processes writing `path` N-1 strided
    in rec-byte records, per_proc bytes each; through ldplfs (LD_PRELOAD=ldplfs, PLFSRC=plfsrc)
    when ldplfs is given. The file is removed after (pio -u)."""
    cmd = ["mpirun", "-np", str(np_)]
    if ldplfs:
        cmd += ["-genv", "LD_PRELOAD", os.path.abspath(ldplfs), "-genv", "PLFSRC", str(plfsrc)]
    cmd += [str(pio), "-p", str(path), "-l", "strided", "-m", "posix", "-b", str(rec), "-s", str(per_proc),
            "-w", "-f", "-u"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=timeout).stdout
    line = next(x for x in out.splitlines() if x.startswith("PIO_RESULT"))
    return float(dict(kv.split("=", 1) for kv in line.split()[1:])["bw_mib_s"])


def check_cell(plfs, pio, ldplfs, plfsrc, probe_dir, plain_file, plfs_file, np_, rec, per_proc, reps,
               quick=False, env=None, predictions=1):
    """One cell: `plfs advise` on probe_dir, pio plain (plain_file) and through ldplfs (plfs_file,
    under plfsrc's mount point), alternated `reps` times; the first `predictions` repetitions
    start with a new `plfs advise`. A row of predicted and measured bandwidths and ratios: the
    prediction is the advise run of median ratio (its advice with it), the measured ratio the
    median of the repetitions' ratios, each of two adjacent runs."""
    advs, p, q = [], [], []
    for i in range(reps):
        if i < predictions:
            advs.append(advise(plfs, probe_dir, np_, rec, per_proc, quick, env))
        p.append(pio_mibs(pio, np_, rec, plain_file, per_proc))
        q.append(pio_mibs(pio, np_, rec, plfs_file, per_proc, ldplfs, plfsrc))
    adv = sorted(advs, key=lambda x: x["ratio_plfs_vs_n1"])[len(advs) // 2]
    ratios = [y / x for x, y in zip(p, q)]
    return dict(np=np_, record=rec, pred_n1=adv["plain_n1_mibs"], pred_plfs=adv["plfs_mibs"],
                pred_ratio=adv["ratio_plfs_vs_n1"], use=adv["recommend"]["use"],
                meas_n1=statistics.median(p), meas_plfs=statistics.median(q),
                meas_ratio=statistics.median(ratios), meas_ratio_min=min(ratios), meas_ratio_max=max(ratios),
                advise=adv, advises=advs, plain_runs=p, plfs_runs=q)


def describe(row):
    """One line of a row, as the script prints it."""
    return (f"np {row['np']} record {row['record']}: predicted plain N-1 {row['pred_n1']:.0f} plfs "
            f"{row['pred_plfs']:.0f} ratio {row['pred_ratio']:.2f} ({row['use']}); measured plain N-1 "
            f"{row['meas_n1']:.0f} plfs {row['meas_plfs']:.0f} ratio {row['meas_ratio']:.2f} "
            f"({row['meas_ratio_min']:.2f}-{row['meas_ratio_max']:.2f})")


def main():
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
    ap.add_argument("--predictions", type=int, default=1,
                    help="plfs advise runs per cell, one before each of the first repetitions (median taken)")
    a = ap.parse_args()

    work = os.path.join(os.path.abspath(a.dir), f"advise-check-{os.getpid()}")
    be, plain = os.path.join(work, "be"), os.path.join(work, "plain")
    mnt = f"/plfs-advise-check-{os.getpid()}"
    os.makedirs(be)
    os.makedirs(plain)
    rc = os.path.join(work, "plfsrc")
    with open(rc, "w") as f:
        f.write(f"- mount_point: {mnt}\n  backends:\n    - location: {be}\n")

    rows = []
    try:
        for np_ in [int(x) for x in a.np.split(",")]:
            for rec in [int(x) for x in a.records.split(",")]:
                row = check_cell(a.plfs, a.pio, a.ldplfs, rc, work, os.path.join(plain, "f"), os.path.join(mnt, "f"),
                                 np_, rec, a.per_proc, a.reps, a.quick, predictions=a.predictions)
                for k in ("advise", "advises", "plain_runs", "plfs_runs"):
                    del row[k]
                rows.append(row)
                print(describe(row), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    json.dump(rows, sys.stdout)
    print()


if __name__ == "__main__":
    main()
