#!/usr/bin/env python3
"""Churn driver: random overwrites, truncates, reads and fstats of one file of at most MAX bytes,
in the spirit of fsx, every read and size checked against an in-memory model.

Run it on a PLFS path under LD_PRELOAD=libldplfs.so, on a FUSE mount, or on a plain file; it only
uses os.open/pwrite/pread/ftruncate/fstat. One descriptor is held open for the whole run (as fsx
does), so what it measures is a long-lived writer.

    churn.py PATH [--ops 20000] [--max-size 262144] [--max-len 65536] [--seed 1]

Prints one JSON object: ops, per-tenth operation rates, first/last tenth ratio, final size,
and "verified": true when every read matched the model (exit status 3 otherwise).
"""
import argparse
import json
import os
import random
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("path")
    ap.add_argument("--ops", type=int, default=20000)
    ap.add_argument("--max-size", type=int, default=256 * 1024)
    ap.add_argument("--max-len", type=int, default=64 * 1024)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rnd = random.Random(a.seed)
    model = bytearray()
    fd = os.open(a.path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    tenth = max(1, a.ops // 10)
    rates = []
    counts = {"write": 0, "read": 0, "truncate": 0, "fstat": 0}
    t0 = time.perf_counter()
    tstart = t0
    bad = None
    for i in range(a.ops):
        r = rnd.random()
        if r < 0.40:
            n = rnd.randint(1, a.max_len)
            off = rnd.randint(0, a.max_size - n)
            data = rnd.randbytes(n)
            if os.pwrite(fd, data, off) != n:
                bad = f"op {i}: short write"
            if len(model) < off + n:
                model.extend(bytes(off + n - len(model)))
            model[off:off + n] = data
            counts["write"] += 1
        elif r < 0.75:
            n = rnd.randint(1, a.max_len)
            off = rnd.randint(0, a.max_size)
            got = os.pread(fd, n, off)
            want = bytes(model[off:off + n])
            if got != want:
                bad = f"op {i}: read of {n} at {off}: {len(got)} bytes, expected {len(want)} (or different bytes)"
            counts["read"] += 1
        elif r < 0.90:
            size = rnd.randint(0, a.max_size)
            os.ftruncate(fd, size)
            if size < len(model):
                del model[size:]
            else:
                model.extend(bytes(size - len(model)))
            counts["truncate"] += 1
        else:
            st = os.fstat(fd)
            if st.st_size != len(model):
                bad = f"op {i}: fstat size {st.st_size}, expected {len(model)}"
            counts["fstat"] += 1
        if bad:
            break
        if (i + 1) % tenth == 0:
            now = time.perf_counter()
            rates.append(tenth / (now - t0))
            t0 = now
    os.close(fd)
    elapsed = time.perf_counter() - tstart
    if not bad:
        # Read the whole file back through a fresh descriptor.
        fd = os.open(a.path, os.O_RDONLY)
        got = bytearray()
        while True:
            b = os.read(fd, 1 << 20)
            if not b:
                break
            got += b
        os.close(fd)
        if bytes(got) != bytes(model):
            bad = f"final read-back: {len(got)} bytes, expected {len(model)} (or different bytes)"
    out = {
        "path": a.path,
        "ops": a.ops,
        "seconds": round(elapsed, 3),
        "counts": counts,
        "tenth_rates": [round(x, 1) for x in rates],
        "last_over_first": round(rates[-1] / rates[0], 3) if len(rates) >= 2 and rates[0] > 0 else None,
        "final_size": len(model),
        "verified": bad is None,
    }
    if bad:
        out["error"] = bad
    print(json.dumps(out))
    return 0 if bad is None else 3


if __name__ == "__main__":
    sys.exit(main())
