#!/usr/bin/env python3
"""Seed 000's Figs. 3-5 at this machine's scale: what an application's I/O library gets from plfs
(ldplfs, default settings, an N-1 mount) against a plain shared file on the same volume, with the
programs of tests/battery/test_io_libraries.py on Debian 12's libraries:

  FLASH-IO (Fig. 5)  tests/mpi/flash_io.c: a parallel HDF5 checkpoint written collectively (and a
                     plot file written independently), BLOCKS+(7r mod 4) AMR blocks a rank
  BT-IO (Fig. 4)     tests/mpi/btio.c: NAS BT-IO's appended steps through subarray file views and
                     collective MPI-IO (MPICH's ROMIO, every rank an aggregator), then read back by
                     a fresh job
  PnetCDF            tests/mpi/pnetcdf_var.c: a 3-D variable and a record variable through
                     PnetCDF's collective and nonblocking API (Open MPI's ROMIO: Debian builds
                     PnetCDF against Open MPI only)

    python3 bench/io_libraries.py --mnt MNT [--mnt2 MNT2 --split] [--np 2,4] [--reps 5]
                                  [--save FILE.json] [--png DIR] [--lib LIB]

Fig. 3's program, the LANL MPI-IO Test, is our pio (bench/n1_protocol.py, make bench). Every
repetition runs plain and plfs in turn (the order alternating between repetitions, so that a
slow moment of the shared machine hits both), each job's data checked by the program's own
`check` run, with other processes; the figures are the medians. A program's time is the slowest
rank's time in its file calls (tests/mpi/iotime.h: open, writes or reads, close; not the
computing of the values), its bandwidth the file's size over that time. The programs write one
shared file each, as the applications do, so there is no N-N cell.

--split (CephFS with two clients, where a shared file pays): even ranks run on the first client
(MNT) and odd ranks on the second (MNT2), an MPMD launch with each rank's own path (plain) or
plfsrc (plfs: the same backend directory through each client's mount).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
LIB = os.path.join(ROOT, "target/release/libldplfs.so")
MPI_SRC = os.path.join(ROOT, "tests/mpi")
MOUNT_POINT = "/plfs-iolib"
# Every rank a collective-buffering aggregator, as with one aggregator a node on a cluster.
AGGREGATORS = ["cb_config_list=*:*", "cb_buffer_size=1048576"]
OMPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMPI_MCA_io": "romio321",
            "PNETCDF_HINTS": ";".join(AGGREGATORS)}


def build(out):
    """Compiles the three programs into `out`; returns {name: path}."""
    hdf5 = subprocess.run(["pkg-config", "--cflags", "--libs", "hdf5-mpich"], capture_output=True, text=True, check=True)
    exes = {n: os.path.join(out, n) for n in ("flash_io", "btio", "pnetcdf_var")}
    for cmd in (["mpicc", "-O2", "-o", exes["flash_io"], f"{MPI_SRC}/flash_io.c", *hdf5.stdout.split()],
                ["mpicc", "-O2", "-o", exes["btio"], f"{MPI_SRC}/btio.c"],
                ["mpicc.openmpi", "-O2", "-o", exes["pnetcdf_var"], f"{MPI_SRC}/pnetcdf_var.c", "-lpnetcdf"]):
        subprocess.run(cmd, check=True)
    return exes


def launch(openmpi, ranks, base_env, timeout=900, may_fail=False):
    """Runs one MPMD job: `ranks` is one (env, argv) a rank. Returns {what: seconds} of the
    IOTIME lines; exits with the job's output when it fails, or with `may_fail` returns None."""
    cmd = ["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe"] if openmpi else ["mpirun"]
    for i, (renv, argv) in enumerate(ranks):
        if i:
            cmd.append(":")
        cmd += ["-np", "1"]
        for k, v in renv.items():
            cmd += ["-x", f"{k}={v}"] if openmpi else ["-env", k, v]
        cmd += argv
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "PLFSRC")}
    env.update(base_env)
    env["PLFS_IO_TIMES"] = "1"
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0 or " OK " not in r.stdout:
        if may_fail:
            return None
        raise SystemExit(f"failed ({' '.join(cmd)}):\n{r.stdout}\n{r.stderr}")
    return {w[1]: float(w[2]) for w in (line.split() for line in r.stderr.splitlines()) if w[:1] == ["IOTIME"]}


class Side:
    """Where one method's files go for one rank: a directory and the environment of its rank."""

    def __init__(self, directory, env):
        self.dir, self.env = directory, env


def sides(a, work, tmp):
    """{method: [Side of even ranks, Side of odd ranks]}."""
    dirs = [os.path.join(a.mnt, work)] + ([os.path.join(a.mnt2, work)] if a.split else [])
    os.makedirs(os.path.join(dirs[0], "plain"))
    os.makedirs(os.path.join(dirs[0], "backend"))
    plain, plfs = [], []
    for i, d in enumerate(dirs):
        rc = os.path.join(tmp, f"client{i + 1}.plfsrc")
        with open(rc, "w") as f:
            f.write(f"- mount_point: {MOUNT_POINT}\n  backends: [{os.path.join(d, 'backend')}]\n")
        plain.append(Side(os.path.join(d, "plain"), {}))
        plfs.append(Side(MOUNT_POINT, {"LD_PRELOAD": a.lib, "PLFSRC": rc}))
    return {"plain": plain * (2 // len(plain)), "plfs": plfs * (2 // len(plfs))}


def programs(a, exes):
    """(name, openmpi, argv of a rank given its directory, phase and repetition, [(IOTIME name,
    file of a repetition)], base environment). Every repetition writes new files, as FLASH
    writes chk_0000, chk_0001, ...: an O_TRUNC rewrite of a plfs file last written through
    another ceph-fuse client waits seconds for one unlink (docs/backends.md), which would hide
    the writes' own time."""
    bt = [str(x) for x in a.btio]
    return [
        ("FLASH-IO", False, lambda d, ph, k: [exes["flash_io"], d, ph, f"fio{k}", str(a.flash_blocks)],
         [("write_chk", lambda k: f"fio{k}_hdf5_chk_0000"), ("write_plt", lambda k: f"fio{k}_hdf5_plt_cnt_0000")], {}),
        ("BT-IO", False, lambda d, ph, k: [exes["btio"], os.path.join(d, f"btio{k}.out"), ph, *bt, *AGGREGATORS],
         [("write", lambda k: f"btio{k}.out"), ("read", lambda k: f"btio{k}.out")], {}),
        ("PnetCDF", True, lambda d, ph, k: [exes["pnetcdf_var"], os.path.join(d, f"history{k}.nc"), ph, *map(str, a.pnetcdf)],
         [("write", lambda k: f"history{k}.nc")], OMPI_ENV),
    ]


def run_once(np, prog, side, method, rep):
    """Writes with `np` ranks, checks (and for BT-IO times the read) with a fresh job of np ranks;
    returns {IOTIME name: seconds}, with "wrong": 1 when a plain file failed its check (plfs
    failing it ends the run: plfs is never wrong). Plain files written with ranks on two ceph-fuse
    clients fail it (docs/backends.md)."""
    name, openmpi, argv, _, env = prog
    ranks = [(side[k % 2].env, argv(side[k % 2].dir, "write", rep)) for k in range(np)]
    times = launch(openmpi, ranks, env)
    # The check reads every value back; BT-IO's (a fresh job) is its read time. The writers'
    # own read-back in BT-IO's write job is left out.
    times.pop("read", None)
    ranks = [(side[(k + 1) % 2].env, argv(side[(k + 1) % 2].dir, "check", rep)) for k in range(np)]
    checked = launch(openmpi, ranks, env, may_fail=method == "plain")
    if checked is None:
        times["wrong"] = 1
    else:
        times.update({k: v for k, v in checked.items() if k == "read"})
    return times


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mnt", required=True, help="the volume (a client mount)")
    ap.add_argument("--mnt2", help="the same volume through a second client (with --split)")
    ap.add_argument("--split", action="store_true", help="even ranks on MNT, odd ranks on MNT2")
    ap.add_argument("--np", default="2,4")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--flash-blocks", type=int, default=80, help="FLASH-IO's blocks a rank (its own runs: about 80)")
    ap.add_argument("--btio", type=int, nargs=4, default=[64, 64, 64, 4], metavar=("NX", "NY", "NZ", "STEPS"))
    ap.add_argument("--pnetcdf", type=int, nargs=4, default=[256, 256, 32, 8], metavar=("NX", "NY", "NZ", "RECORDS"))
    ap.add_argument("--lib", default=LIB)
    ap.add_argument("--save", help="write the rows as JSON here")
    ap.add_argument("--png", help="draw the figure (io_libraries.png) in this directory")
    ap.add_argument("--label", default="", help="the volume's name in the figure's title")
    a = ap.parse_args()
    if a.split and not a.mnt2:
        ap.error("--split needs --mnt2")
    tmp = tempfile.mkdtemp(prefix="iolib-bench-")
    work = f"plfs-iolib.{os.getpid()}"
    rows = []
    try:
        exes = build(tmp)
        where = sides(a, work, tmp)
        for prog in programs(a, exes):
            for np in map(int, a.np.split(",")):
                reps = []
                for rep in range(a.reps):
                    order = ["plain", "plfs"] if rep % 2 == 0 else ["plfs", "plain"]
                    reps.append({m: run_once(np, prog, where[m], m, f"{np}.{rep}") for m in order})
                plain_dir = where["plain"][0].dir
                wrong = sum(r["plain"].get("wrong", 0) for r in reps)
                for what, fname in prog[3]:
                    if not all(what in r[m] for r in reps for m in ("plain", "plfs")):
                        continue  # a read of a plain file that failed its check
                    size = os.stat(os.path.join(plain_dir, fname(f"{np}.0"))).st_size
                    med = {m: statistics.median(r[m][what] for r in reps) for m in ("plain", "plfs")}
                    row = {"program": prog[0], "phase": what, "np": np, "bytes": size, "split": a.split,
                           "plain_wrong": wrong,
                           "plain_mbs": round(size / med["plain"] / 1e6, 1), "plfs_mbs": round(size / med["plfs"] / 1e6, 1),
                           "plain_s": [round(r["plain"][what], 4) for r in reps], "plfs_s": [round(r["plfs"][what], 4) for r in reps]}
                    row["plfs_vs_plain"] = round(med["plain"] / med["plfs"], 2)
                    rows.append(row)
                    print(f"{prog[0]:9} {what:9} np {np}  {size / 1e6:6.1f} MB: plain {row['plain_mbs']:7} MB/s  "
                          f"plfs {row['plfs_mbs']:7} MB/s  plfs/plain {row['plfs_vs_plain']:5}"
                          + (f"  (plain file wrong in {wrong} of {a.reps})" if wrong else ""), flush=True)
    finally:
        for d in {os.path.join(m, work) for m in (a.mnt, a.mnt2) if m}:
            shutil.rmtree(d, ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)
    if a.save:
        with open(a.save, "w") as f:
            json.dump({"reps": a.reps, "split": a.split, "label": a.label, "rows": rows}, f, indent=1)
    if a.png:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from plfsbench.plots import io_libraries_plot

        print("figure:", os.path.join(a.png, io_libraries_plot(rows, a.label, a.png)))


if __name__ == "__main__":
    main()
