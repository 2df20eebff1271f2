#!/usr/bin/env python3
"""One N-1 checkpoint written by several processes, read back and verified, through the plfs
Python package (no LD_PRELOAD, no FUSE).

Each of N writer processes (multiprocessing) owns N-1 blocks of the shared file in a strided
pattern: block i of rank r lands at offset (i*N + r) * BLOCK. PLFS gives every writer its own
data and index log, so they never contend. Then N readers, each reading a different stripe than
it wrote, check every byte against the pattern.

    pip install ./python
    python3 examples/python/checkpoint.py --procs 4 --mb 16
"""

import argparse
import hashlib
import multiprocessing as mp
import os
import sys
import time

import plfs

BLOCK = 64 * 1024


def pattern(rank, i):
    """The bytes of block i of rank r: deterministic, different for every block."""
    seed = hashlib.sha256(f"{rank}:{i}".encode()).digest()
    return (seed * (BLOCK // len(seed) + 1))[:BLOCK]


def writer(path, rank, nprocs, blocks):
    # "r+b" on the file the parent created: every writer opens the same logical file.
    with plfs.open(path, "r+b", buffering=0) as f:
        for i in range(blocks):
            f.seek((i * nprocs + rank) * BLOCK)
            f.write(pattern(rank, i))
        f.sync()


def reader(path, rank, nprocs, blocks):
    """Verifies the blocks written by rank (rank + 1) % nprocs; returns the bytes checked."""
    owner = (rank + 1) % nprocs
    buf = bytearray(BLOCK)
    with plfs.open(path, "rb", buffering=0) as f:
        for i in range(blocks):
            f.seek((i * nprocs + owner) * BLOCK)
            n = f.readinto(buf)
            if n != BLOCK or bytes(buf) != pattern(owner, i):
                raise SystemExit(f"MISMATCH in block {i} of rank {owner} (read {n} bytes)")
    return blocks * BLOCK


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--procs", type=int, default=4)
    ap.add_argument("--mb", type=int, default=16, help="MiB written by each process")
    ap.add_argument("--file", help="logical file (default: under the first mount point)")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    path = a.file or f"{plfs.mount_points()[0]}/checkpoint.{os.getpid()}"
    blocks = a.mb * 1024 * 1024 // BLOCK
    total = a.procs * blocks * BLOCK
    with plfs.open(path, "wb"):
        pass
    t0 = time.perf_counter()
    with mp.Pool(a.procs) as pool:
        pool.starmap(writer, [(path, r, a.procs, blocks) for r in range(a.procs)])
    t1 = time.perf_counter()
    size = plfs.stat(path).st_size
    if size != total:
        raise SystemExit(f"size {size}, expected {total}")
    with mp.Pool(a.procs) as pool:
        checked = sum(pool.starmap(reader, [(path, r, a.procs, blocks) for r in range(a.procs)]))
    t2 = time.perf_counter()
    print(f"{a.procs} writers wrote {total} bytes to {path} in {t1 - t0:.2f} s; "
          f"{a.procs} readers checked {checked} bytes in {t2 - t1:.2f} s")
    if not a.keep and not a.file:
        plfs.unlink(path)
    print(f"VERIFIED: N-1 checkpoint of {total} bytes by {a.procs} processes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
