#!/usr/bin/env python3
"""Where an N-1 file's time goes per process, beside the writes: NP processes (started together,
a barrier before each file) open one new file, write RECORDS records of RECSIZE bytes each at
their strided offsets, and close it, for FILES files; the medians (and 90th percentiles) of the
open, the first write (which makes a plfs writer's logs and open dropping), the other writes and
the close. Run once on a plain directory and once through ldplfs on an N-1 mount (LD_PRELOAD and
PLFSRC in the environment) of the same volume to compare: issue 22's 1 MiB cells are where open
and close are a large part of a run.

    python3 bench/open_close_latency.py DIR [--files 20] [--np 4] [--records 4] [--recsize 1048576]
"""
import argparse
import multiprocessing as mp
import os
import statistics
import time

PHASES = ("open", "first write", "other writes", "close")


def rank(k, a, bar, q):
    buf = b"x" * a.recsize
    out = []
    for i in range(a.files):
        bar.wait()
        t0 = time.perf_counter()
        fd = os.open(os.path.join(a.dir, f"f{i}"), os.O_CREAT | os.O_WRONLY, 0o644)
        t1 = time.perf_counter()
        os.pwrite(fd, buf, k * a.recsize)
        t2 = time.perf_counter()
        for j in range(1, a.records):
            os.pwrite(fd, buf, (j * a.np + k) * a.recsize)
        t3 = time.perf_counter()
        os.close(fd)
        t4 = time.perf_counter()
        out.append((t1 - t0, t2 - t1, t3 - t2, t4 - t3))
    q.put(out)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("dir")
    p.add_argument("--files", type=int, default=20)
    p.add_argument("--np", type=int, default=4)
    p.add_argument("--records", type=int, default=4)
    p.add_argument("--recsize", type=int, default=1 << 20)
    a = p.parse_args()
    bar, q = mp.Barrier(a.np), mp.Queue()
    procs = [mp.Process(target=rank, args=(k, a, bar, q)) for k in range(a.np)]
    for pr in procs:
        pr.start()
    times = [t for _ in procs for t in q.get()]
    for pr in procs:
        pr.join()
        if pr.exitcode != 0:
            raise SystemExit(f"a rank failed ({pr.exitcode})")
    for n, phase in enumerate(PHASES):
        v = sorted(t[n] * 1000 for t in times)
        print(f"{phase:>12}: median {statistics.median(v):6.1f} ms, p90 {v[int(len(v) * 0.9)]:6.1f} ms")


if __name__ == "__main__":
    main()
