#!/usr/bin/env python3
"""plfs benchmark suite (issue 5): the same workloads through a plain file, ldplfs, the FUSE
mount and the C API; the UNIX tools table; metadata and index timings. Writes CSVs, PNG figures
and summary.md into a results folder. See bench/README.md and docs/performance.md.

    python3 bench/run.py --profile quick --bin target/bench --release target/release
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from plfsbench import bandwidth, counts, meta, tools  # noqa: E402
from plfsbench.env import Workspace, machine_info  # noqa: E402
from plfsbench.util import write_csv  # noqa: E402

MiB = 1 << 20
# Issue 14's FUSE target: 4 processes writing and reading 64 KiB records, FUSE against ldplfs.
FUSE_64K = {"section": "fuse64k", "layout": "strided", "nprocs": 4, "record": 65536, "per_proc": 32 * MiB}
PROFILES = {
    # `make bench`: under 10 minutes on a 2-core machine.
    "quick": {
        "reps": 3, "nprocs": [1, 2, 4], "records": [4096, 47008, MiB], "per_proc": 32 * MiB,
        "mpiio_per_proc": {"mpi-ind": 16 * MiB, "mpi-coll": 1 * MiB}, "mpiio_nprocs": [1, 2],
        "tools_size": 1024 * MiB, "tools_reps": 3, "seq_size": 1024 * MiB, "seq_reps": 3,
        "meta_writers": [1, 2, 4, 8, 16, 32, 64], "meta_records": 16, "meta_reps": 5,
        "creates": 2000, "index_writers": [1, 4, 16, 64], "index_records": 65536,
        "meta_files": 300, "index_bench_writes": 200000, "timeout": 300,
        "extra_cases": [FUSE_64K], "sqlite_txns": 500,
    },
    # A seconds-long run of every section, to check the suite itself (`make -C bench smoke`).
    "smoke": {
        "reps": 1, "nprocs": [1, 2], "records": [4096, 47008, MiB], "per_proc": 2 * MiB,
        "mpiio_per_proc": {"mpi-ind": 1 * MiB, "mpi-coll": 1 * MiB}, "mpiio_nprocs": [1, 2],
        "tools_size": 16 * MiB, "tools_reps": 1, "seq_size": 16 * MiB, "seq_reps": 1,
        "meta_writers": [1, 4], "meta_records": 4, "meta_reps": 3, "creates": 100,
        "index_writers": [1, 4], "index_records": 4096, "meta_files": 30,
        "index_bench_writes": 20000, "timeout": 120, "sqlite_txns": 20, "copy_files": 100,
    },
    # `make bench-glusterfs`: the work area on a live GlusterFS volume (scripts/bench-glusterfs.sh);
    # the bandwidth and metadata sections, files small enough for a volume on one disk, medians of
    # 5 alternated repetitions.
    "glusterfs": {
        "reps": 5, "nprocs": [1, 2, 4], "records": [4096, 47008, MiB], "per_proc": 8 * MiB,
        "mpiio_per_proc": {"mpi-ind": 4 * MiB, "mpi-coll": 1 * MiB}, "mpiio_nprocs": [1, 2],
        "tools_size": 64 * MiB, "tools_reps": 3, "seq_size": 64 * MiB, "seq_reps": 3,
        "meta_writers": [1, 4, 16], "meta_records": 16, "meta_reps": 5,
        "creates": 300, "index_writers": [1, 4, 16], "index_records": 16384,
        "meta_files": 100, "index_bench_writes": 50000, "timeout": 900,
    },
    # `make bench-moosefs`: the same on a live MooseFS (scripts/bench-moosefs.sh).
    "moosefs": {
        "reps": 5, "nprocs": [1, 2, 4], "records": [4096, 47008, MiB], "per_proc": 8 * MiB,
        "mpiio_per_proc": {"mpi-ind": 4 * MiB, "mpi-coll": 1 * MiB}, "mpiio_nprocs": [1, 2],
        "tools_size": 64 * MiB, "tools_reps": 3, "seq_size": 64 * MiB, "seq_reps": 3,
        "meta_writers": [1, 4, 16], "meta_records": 16, "meta_reps": 5,
        "creates": 300, "index_writers": [1, 4, 16], "index_records": 16384,
        "meta_files": 100, "index_bench_writes": 50000, "timeout": 900,
    },
    # `make bench-full`: bigger files, more repetitions, 8 processes, 8 MiB records, fsync,
    # and a read-back with a different process count.
    "full": {
        "reps": 5, "nprocs": [1, 2, 4, 8], "records": [4096, 47008, MiB, 8 * MiB],
        "per_proc": 256 * MiB, "mpiio_per_proc": {"mpi-ind": 64 * MiB, "mpi-coll": 8 * MiB},
        "mpiio_nprocs": [1, 2, 4, 8],
        "tools_size": 1024 * MiB, "tools_reps": 5, "seq_size": 1024 * MiB, "seq_reps": 5,
        "meta_writers": [1, 2, 4, 8, 16, 32, 64, 128], "meta_records": 64, "meta_reps": 9,
        "creates": 20000, "index_writers": [1, 4, 16, 64, 256], "index_records": 1 << 20,
        "meta_files": 1000, "index_bench_writes": 1000000, "timeout": 1800, "sqlite_txns": 5000,
        "extra_cases": [FUSE_64K] + [
            {"section": "fsync", "layout": "strided", "nprocs": n, "record": 47008,
             "per_proc": 64 * MiB, "fsync": True} for n in (1, 2, 4)
        ] + [
            {"section": f"read-by-{r}", "layout": "strided", "nprocs": 4, "readers": r,
             "record": 47008, "per_proc": 64 * MiB} for r in (1, 2)
        ],
    },
}
SECTIONS = ["bandwidth", "tools", "seqwrite", "meta", "counts"]

# `make bench-cephfs`: the same as on MooseFS, on a live CephFS (scripts/bench-cephfs.sh).
PROFILES["cephfs"] = dict(PROFILES["moosefs"])


def find_plot_python():
    """An interpreter that can import matplotlib (this one first), or None."""
    candidates = [sys.executable, "/usr/bin/python3", shutil.which("python3") or ""]
    for py in candidates:
        if py and os.path.exists(py):
            r = subprocess.run([py, "-c", "import matplotlib"], capture_output=True)
            if r.returncode == 0:
                return py
    return None


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", choices=sorted(PROFILES), default="quick")
    ap.add_argument("--bin", default=os.path.join(root, "target", "bench"),
                    help="where pio, pio-plfs and metabench are")
    ap.add_argument("--release", default=os.path.join(root, "target", "release"),
                    help="where libldplfs.so, libplfs.so, plfs and plfs-fuse are")
    ap.add_argument("--results", default=os.path.join(here, "results"))
    ap.add_argument("--tmpdir", default=os.environ.get("PLFS_BENCH_TMPDIR", "/tmp"),
                    help="where the temporary files, backends and mount points go")
    ap.add_argument("--only", default=",".join(SECTIONS),
                    help="comma-separated sections: " + ",".join(SECTIONS))
    ap.add_argument("--reps", type=int, help="override the repetitions")
    args = ap.parse_args()
    profile = dict(PROFILES[args.profile], name=args.profile)
    if args.reps:
        profile["reps"] = profile["tools_reps"] = profile["seq_reps"] = args.reps
    only = set(args.only.split(","))
    bindir, release = os.path.abspath(args.bin), os.path.abspath(args.release)

    outdir = os.path.join(os.path.abspath(args.results), time.strftime("%Y%m%d-%H%M%S-") + args.profile)
    os.makedirs(outdir)
    latest = os.path.join(os.path.abspath(args.results), "latest")
    if os.path.islink(latest) or not os.path.exists(latest):
        if os.path.islink(latest):
            os.remove(latest)
        os.symlink(os.path.basename(outdir), latest)
    logf = open(os.path.join(outdir, "log.txt"), "w")

    def log(msg):
        line = f"{time.strftime('%H:%M:%S')} {msg}"
        print(line, flush=True)
        logf.write(line + "\n")
        logf.flush()

    t0 = time.time()
    ws = Workspace(args.tmpdir, release, bindir)
    info = machine_info(ws.root, root)
    log(f"bench: profile {args.profile}, results in {outdir}, work area {ws.root}")
    fronts = {}
    try:
        fronts["ldplfs"] = ws.ldplfs()
        fronts["ldplfs_nn"] = ws.ldplfs(nn_mode=True)
        fronts["api"] = ws.capi()
        fronts["fuse"] = ws.fuse()
        for fe in fronts.values():
            log(f"front end {fe.name}: {fe.note()}")
        run_info = {"profile": profile, "machine": info,
                    "frontends": {fe.name: fe.note() for fe in fronts.values()}}

        def save_json():
            with open(os.path.join(outdir, "run.json"), "w") as f:
                json.dump(run_info, f, indent=1)
        save_json()
        tmo = profile["timeout"]
        meths = bandwidth.methods(ws, fronts, bindir)
        if "bandwidth" in only:
            rows = bandwidth.run_all(profile, meths, log, tmo)
            write_csv(os.path.join(outdir, "bandwidth.csv"), rows, bandwidth.COLUMNS)
        trows = []
        if "tools" in only:
            trows += tools.run_tools(ws, fronts["ldplfs"], profile, log, tmo)
            write_csv(os.path.join(outdir, "tools.csv"), trows, tools.COLUMNS)
        if "seqwrite" in only:
            trows += tools.run_seqwrite(ws, fronts, bindir, profile, log, tmo)
            write_csv(os.path.join(outdir, "tools.csv"), trows, tools.COLUMNS)
        if "meta" in only:
            mrows = meta.run_meta(ws, fronts["api"], bindir, profile, log, tmo)
            write_csv(os.path.join(outdir, "meta.csv"), mrows, meta.COLUMNS)
        if "counts" in only:
            crows = counts.run_counts(ws, fronts, meths, profile, log, tmo)
            write_csv(os.path.join(outdir, "counts.csv"), crows, counts.COLUMNS)
    finally:
        ws.cleanup()
    info["loadavg_end"] = " ".join(open("/proc/loadavg").read().split()[:3])
    info["duration"] = f"{time.time() - t0:.0f} s"
    save_json()

    py = find_plot_python()
    if py and py != sys.executable:
        log(f"report: drawing the figures with {py} (has matplotlib)")
        subprocess.run([py, os.path.join(here, "report.py"), outdir], check=True)
    else:
        from plfsbench import report
        report.make(outdir, log)
    log(f"bench: done in {time.time() - t0:.0f} s; summary: {os.path.join(outdir, 'summary.md')}")
    print(open(os.path.join(outdir, "goals.md")).read())


if __name__ == "__main__":
    main()
