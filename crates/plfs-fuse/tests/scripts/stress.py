#!/usr/bin/env python3
"""Random-operation stress test through a mount, checked against plain files.

Phase A: NPROC processes at once, each on its own file under MNT and its plain model under PLAIN,
do OPS random operations: pwrite at random offsets and lengths, ftruncate, pread (compared with
the model), fsync, close and reopen, reading through a second descriptor.
Phase B: NPROC processes share one file for ROUNDS rounds; in each round every process writes
random pieces of the blocks it owns (block k belongs to process k % NPROC), mirrored into a plain
model; after a barrier one process may truncate both; after another barrier everybody reads random
ranges and the whole file and compares with the model.
Exits 1 with a description at the first mismatch."""
import multiprocessing as mp
import os
import random
import sys

MAXSIZE = 3 << 20


def fail(msg):
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()
    os._exit(1)


def data(rng, n):
    return rng.randbytes(n)


def check_range(fa, fb, off, n, what):
    a = os.pread(fa, n, off)
    b = os.pread(fb, n, off)
    if a != b:
        first = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))
        fail(f"{what}: pread({off}, {n}) differs: got {len(a)} bytes, expected {len(b)}, first difference at +{first}")


def whole(path):
    with open(path, "rb") as f:
        return f.read()


def phase_a(mnt, plain, rank, ops, seed):
    rng = random.Random(seed * 1000 + rank)
    pa, pb = os.path.join(mnt, f"priv{rank}"), os.path.join(plain, f"priv{rank}")
    flags = os.O_RDWR | os.O_CREAT
    fa, fb = os.open(pa, flags, 0o644), os.open(pb, flags, 0o644)
    for k in range(ops):
        r = rng.random()
        what = f"proc {rank} op {k}"
        if r < 0.55:
            off = rng.randrange(0, MAXSIZE)
            n = rng.choice([1, 7, 512, 4096, 47008, rng.randrange(1, 300000), rng.randrange(1, 1 << 21)])
            d = data(rng, n)
            if os.pwrite(fa, d, off) != n or os.pwrite(fb, d, off) != n:
                fail(f"{what}: short write")
        elif r < 0.65:
            size = rng.randrange(0, MAXSIZE)
            os.ftruncate(fa, size)
            os.ftruncate(fb, size)
        elif r < 0.85:
            off = rng.randrange(0, MAXSIZE)
            check_range(fa, fb, off, rng.randrange(1, 1 << 20), what)
        elif r < 0.90:
            os.fsync(fa)
        elif r < 0.95:
            os.close(fa)
            fa = os.open(pa, os.O_RDWR)
        else:
            g = os.open(pa, os.O_RDONLY)
            check_range(g, fb, 0, MAXSIZE, what + " (second descriptor)")
            os.close(g)
        if os.fstat(fa).st_size != os.fstat(fb).st_size:
            fail(f"{what}: size {os.fstat(fa).st_size}, expected {os.fstat(fb).st_size}")
    os.close(fa)
    os.close(fb)
    if whole(pa) != whole(pb):
        fail(f"proc {rank}: final contents differ")


BLOCK = 65536


def phase_b(mnt, plain, rank, nproc, rounds, seed, barrier):
    rng = random.Random(seed * 7777 + rank)
    pa, pb = os.path.join(mnt, "shared"), os.path.join(plain, "shared")
    fa = os.open(pa, os.O_RDWR | os.O_CREAT, 0o644)
    fb = os.open(pb, os.O_RDWR | os.O_CREAT, 0o644)
    nblocks = 48
    for rd in range(rounds):
        mine = [b for b in range(nblocks) if b % nproc == rank]
        for _ in range(rng.randrange(1, 12)):
            b = rng.choice(mine)
            start = rng.randrange(0, BLOCK)
            n = rng.randrange(1, BLOCK - start + 1)
            d = data(rng, n)
            off = b * BLOCK + start
            os.pwrite(fa, d, off)
            os.pwrite(fb, d, off)
        barrier.wait()
        if rank == 0 and rng.random() < 0.3:
            size = rng.randrange(0, nblocks * BLOCK)
            os.ftruncate(fa, size)
            os.ftruncate(fb, size)
        barrier.wait()
        for _ in range(4):
            off = rng.randrange(0, nblocks * BLOCK)
            check_range(fa, fb, off, rng.randrange(1, 200000), f"proc {rank} round {rd}")
        if os.fstat(fa).st_size != os.fstat(fb).st_size:
            fail(f"proc {rank} round {rd}: size {os.fstat(fa).st_size}, expected {os.fstat(fb).st_size}")
        barrier.wait()
    os.close(fa)
    os.close(fb)


def run(target, args):
    ctx = mp.get_context("fork")
    ps = [ctx.Process(target=target, args=a) for a in args]
    for p in ps:
        p.start()
    for p in ps:
        p.join()
    bad = [p.exitcode for p in ps if p.exitcode != 0]
    if bad:
        sys.exit(f"{len(bad)} process(es) failed")


def main():
    mnt, plain, nproc, ops, rounds, seed = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:7])
    run(phase_a, [(mnt, plain, r, ops, seed) for r in range(nproc)])
    barrier = mp.get_context("fork").Barrier(nproc)
    run(phase_b, [(mnt, plain, r, nproc, rounds, seed, barrier) for r in range(nproc)])
    if whole(os.path.join(mnt, "shared")) != whole(os.path.join(plain, "shared")):
        sys.exit("shared file: final contents differ")
    print("ok")


if __name__ == "__main__":
    main()
