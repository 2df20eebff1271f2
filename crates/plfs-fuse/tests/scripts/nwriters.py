#!/usr/bin/env python3
"""N-1 strided writes: NPROC processes each open TARGET themselves and pwrite NREC records of
RECSIZE bytes at offsets (i * NPROC + rank) * RECSIZE, all starting together. With --model FILE the
same bytes also go to a plain file, for a byte-for-byte comparison. Prints the elapsed seconds of
the write phase (open to close, slowest process)."""
import argparse
import multiprocessing as mp
import os
import queue
import time


def record(rank, i, size):
    head = f"rank {rank:04d} rec {i:08d} ".encode()
    body = bytes(((rank * 131 + i * 7 + j) & 0xFF) for j in range(min(size, 251)))
    rep = (head + body) * (size // (len(head) + len(body)) + 1)
    return rep[:size]


def worker(path, rank, nproc, size, nrec, barrier, out, fsync):
    recs = [record(rank, i, size) for i in range(nrec)]
    barrier.wait()
    t0 = time.monotonic()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    for i, r in enumerate(recs):
        off = (i * nproc + rank) * size
        if os.pwrite(fd, r, off) != size:
            raise SystemExit(f"short write at {off}")
    if fsync:
        os.fsync(fd)
    os.close(fd)
    out.put(time.monotonic() - t0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("target")
    ap.add_argument("nproc", type=int)
    ap.add_argument("recsize", type=int)
    ap.add_argument("nrec", type=int)
    ap.add_argument("--model")
    ap.add_argument("--fsync", action="store_true")
    a = ap.parse_args()
    ctx = mp.get_context("fork")
    barrier = ctx.Barrier(a.nproc)
    out = ctx.Queue()
    ps = [ctx.Process(target=worker, args=(a.target, r, a.nproc, a.recsize, a.nrec, barrier, out, a.fsync)) for r in range(a.nproc)]
    for p in ps:
        p.start()
    # A writer that fails never reports a time: fail with its exit code instead of waiting forever.
    times = []
    while len(times) < len(ps):
        try:
            times.append(out.get(timeout=1))
        except queue.Empty:
            failed = [p.exitcode for p in ps if p.exitcode not in (None, 0)]
            if failed:
                for p in ps:
                    p.terminate()
                raise SystemExit(f"writer exited with {failed[0]}")
    for p in ps:
        p.join()
        if p.exitcode != 0:
            raise SystemExit(f"writer exited with {p.exitcode}")
    if a.model:
        with open(a.model, "wb") as f:
            for i in range(a.nrec):
                for r in range(a.nproc):
                    f.seek((i * a.nproc + r) * a.recsize)
                    f.write(record(r, i, a.recsize))
    print(f"{max(times):.6f}")


if __name__ == "__main__":
    main()
