#!/usr/bin/env python3
"""Issue 22's bandwidth protocol on a live two-client volume: plfs (ldplfs, default settings)
against plain N-1 (the floor) and plain N-N (the ceiling), with `pio` under MPICH.

    python3 bench/n1_protocol.py --mnt MNT --mnt2 MNT2 [--reps 3] [--mb 104] [--json] [--lib LIB]
                                 [--split] [--fsync no,yes]

For each mode (POSIX, MPI-IO independent), process count (2, 4) and record size (47008 B,
1 MiB), every repetition writes one file by each method in turn (alternated, so that a slow
moment of the shared machine hits all three), then reads it back with fresh processes through
the second client mount `MNT2` (another client of the same volume: its cache holds nothing the
writers wrote). Each run moves at least `--mb` MB. Prints the medians and the ratios
plfs / plain N-1, plfs / plain N-N (write) and plfs / plain N-1 (read).

--split (issue 51: two client nodes sharing one file, where a shared file really hurts): the ranks
alternate between the two mounts, even ranks writing through MNT and odd ranks through MNT2 (an
MPMD launch, each rank with its own path or plfsrc), and the readers do the same, so that reader r,
which reads writer r+1's records (pio -S 1), reads bytes the other client wrote. --fsync no,yes
runs each case without and with an fsync before close (pio -f).

The volume: `scripts/glusterfs.sh start` with PLFS_GLUSTER_CLIENTS=2 (then `eval "$(scripts/
glusterfs.sh env)"` gives PLFS_GLUSTER_MOUNT and PLFS_GLUSTER_MOUNT2), or `scripts/moosefs.sh`.
Needs target/bench/pio (`make -C bench programs`) and the release libldplfs.so.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
PIO = os.path.join(ROOT, "target/bench/pio")
LIB = os.path.join(ROOT, "target/release/libldplfs.so")
MOUNT_POINT = "/plfs-protocol"


def plfsrc(path, backend):
    """A plfsrc whose one mount point keeps its containers under `backend` (default settings
    otherwise: what a new user gets)."""
    with open(path, "w") as f:
        f.write(f"- mount_point: {MOUNT_POINT}\n  backends: [{backend}]\n")


def pio(np, env, args, timeout=900, ranks=None):
    """Runs pio on `np` ranks with `env` and `args`; with `ranks` (one (env, args) a rank, an MPMD
    launch: rank k is the k-th block), each rank gets its own instead."""
    cmd = ["mpirun"]
    if ranks is None:
        cmd += ["-np", str(np)]
        for k, v in env.items():
            cmd += ["-genv", k, v]
        cmd += [PIO] + args
    else:
        for i, (renv, rargs) in enumerate(ranks):
            if i:
                cmd.append(":")
            cmd += ["-np", "1"]
            for k, v in renv.items():
                cmd += ["-env", k, v]
            cmd += [PIO] + rargs
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise SystemExit(f"pio failed ({' '.join(cmd)}):\n{r.stdout}\n{r.stderr}")
    for line in r.stdout.splitlines():
        if line.startswith("PIO_RESULT "):
            return dict(kv.split("=", 1) for kv in line.split()[1:])
    raise SystemExit(f"no PIO_RESULT in:\n{r.stdout}")


def run_case(a, mode, np, record, fsync, rep, wdir, rdir, rc_w, rc_r):
    """One repetition of one case: every method writes, then reads back through the second mount
    (with --split: each rank through its own, see the module's comment)."""
    per_proc = -(-a.mb * 1_000_000 // np // record) * record
    out = {}
    methods = [("plain_n1", "strided", {}), ("plain_nn", "nn", {}), ("plfs", "strided", None)]
    # Alternate the order between repetitions.
    if rep % 2:
        methods.reverse()
    for name, layout, env in methods:
        tag = f"{name}-{mode}-{np}-{record}-{rep}"
        if env is None:
            wpath, rpath = f"{MOUNT_POINT}/{tag}", f"{MOUNT_POINT}/{tag}"
            wenv = {"LD_PRELOAD": a.lib, "PLFSRC": rc_w}
            renv = {"LD_PRELOAD": a.lib, "PLFSRC": rc_r}
        else:
            wpath, rpath = os.path.join(wdir, tag), os.path.join(rdir, tag)
            wenv, renv = {}, {}
        common = ["-l", layout, "-m", mode, "-b", str(record), "-s", str(per_proc), "-q", "-L", name]
        if fsync:
            common.append("-f")
        wargs = ["-w"] + common
        if not a.split:
            w = pio(np, wenv, ["-p", wpath] + wargs)
        else:
            # Even ranks on the first client, odd ranks on the second: the path (plain) or the
            # plfsrc (plfs) of the client a rank runs on.
            sides = [(wpath, wenv), (rpath, renv)]
            w = pio(np, None, None, ranks=[(sides[k % 2][1], ["-p", sides[k % 2][0]] + wargs) for k in range(np)])
        rargs = ["-r", "-x", w["seed"], "-W", str(np), "-S", "1", "-u"] + common
        if not a.split:
            r = pio(np, renv, ["-p", rpath] + rargs)
        else:
            r = pio(np, None, None, ranks=[(sides[k % 2][1], ["-p", sides[k % 2][0]] + rargs) for k in range(np)])
        out[name] = (float(w["bw_mib_s"]), float(r["bw_mib_s"]))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mnt", required=True, help="the volume, first client mount (writers)")
    ap.add_argument("--mnt2", required=True, help="the same volume, second client mount (readers)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--mb", type=int, default=104, help="MB moved per run (issue 22: >= 100)")
    ap.add_argument("--modes", default="posix,mpi-ind")
    ap.add_argument("--nprocs", default="2,4")
    ap.add_argument("--records", default="47008,1048576")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--lib", default=LIB, help="the libldplfs.so to measure (default: the release build's)")
    ap.add_argument("--split", action="store_true", help="ranks alternate between the two client mounts")
    ap.add_argument("--fsync", default="no", help="no, yes or no,yes: an fsync before close")
    a = ap.parse_args()
    work = f"plfs-protocol.{os.getpid()}"
    wdir, rdir = os.path.join(a.mnt, work), os.path.join(a.mnt2, work)
    os.makedirs(wdir)
    tmp = tempfile.mkdtemp(prefix="n1proto-")
    rc_w, rc_r = os.path.join(tmp, "w.plfsrc"), os.path.join(tmp, "r.plfsrc")
    os.makedirs(os.path.join(wdir, "backend"))
    plfsrc(rc_w, os.path.join(wdir, "backend"))
    plfsrc(rc_r, os.path.join(rdir, "backend"))
    rows = []
    try:
        for mode in a.modes.split(","):
            for np, record, fsync in [(n, r, f == "yes") for n in map(int, a.nprocs.split(","))
                                      for r in map(int, a.records.split(",")) for f in a.fsync.split(",")]:
                reps = [run_case(a, mode, np, record, fsync, k, wdir, rdir, rc_w, rc_r) for k in range(a.reps)]
                med = {m: (statistics.median(r[m][0] for r in reps), statistics.median(r[m][1] for r in reps))
                       for m in reps[0]}
                row = {"mode": mode, "np": np, "record": record, "fsync": fsync, "split": a.split,
                       **{f"{m}_{ph}_mibs": round(med[m][i], 1) for m in med for i, ph in enumerate(("write", "read"))},
                       "plfs_vs_n1_write": round(med["plfs"][0] / med["plain_n1"][0], 2),
                       "plfs_vs_nn_write": round(med["plfs"][0] / med["plain_nn"][0], 2),
                       "plfs_vs_n1_read": round(med["plfs"][1] / med["plain_n1"][1], 2)}
                rows.append(row)
                if not a.json:
                    print(f"{mode:8} np {np} {record:>8} B{' fsync' if fsync else '      '}: write MiB/s n1 {row['plain_n1_write_mibs']:7} "
                          f"nn {row['plain_nn_write_mibs']:7} plfs {row['plfs_write_mibs']:7} | "
                          f"plfs/n1 {row['plfs_vs_n1_write']:5} plfs/nn {row['plfs_vs_nn_write']:5} | "
                          f"read n1 {row['plain_n1_read_mibs']:7} plfs {row['plfs_read_mibs']:7} "
                          f"plfs/n1 {row['plfs_vs_n1_read']:5}", flush=True)
    finally:
        subprocess.run(["rm", "-rf", wdir, tmp])
    if a.json:
        json.dump({"reps": a.reps, "mb_per_run": a.mb, "rows": rows}, sys.stdout, indent=1)
        print()


if __name__ == "__main__":
    main()
