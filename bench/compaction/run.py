#!/usr/bin/env python3
"""Compaction benchmark (issue 13): bounded space and steady speed for files that are rewritten.

Runnable on its own after `cargo build --release --workspace` (or `make build`):

    python3 bench/compaction/run.py [--ops 20000] [--fuse-ops 20000] [--sqlite-rows 200000]
                                    [--no-fuse] [--no-baseline] [--json FILE]

1. **churn through ldplfs**: `churn.py` (random overwrites, truncates, reads and fstats of one
   file of at most 256 KiB, one descriptor held open, every read checked) under
   LD_PRELOAD=libldplfs.so, with automatic compaction (the default plfsrc) and, for comparison,
   with `auto_compaction: false`. Reported: the container's physical bytes and files in meta/
   after the run, then after an explicit `plfs compact`; the operation rate of each tenth of the
   run and last/first.
2. **churn on the FUSE mount** (`plfs mount`), the same, unless --no-fuse or FUSE is unusable.
3. **sqlite3**: a script inserting N rows into a database on a plain file and on a PLFS file
   through ldplfs (rollback journal, default settings), run alternately three times each; the
   median times and their ratio. Two scripts: all rows in one transaction, and transactions of
   1000 rows (each commit fsyncs the journal and the database: it measures the sync path).

Targets (issue 13): physical <= 2 x logical + 64 KiB and <= 16 files in meta/ after the run and
automatic or explicit compaction; last tenth >= 0.5 x first tenth; sqlite <= 2 x plain.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
REL = os.path.join(ROOT, os.environ.get("CARGO_TARGET_DIR", "target"), "release")
PLFS = os.path.join(REL, "plfs")
LDPLFS = os.path.join(REL, "libldplfs.so")
CHURN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "churn.py")


def tree_bytes(path):
    total, files = 0, 0
    for dp, _, fs in os.walk(path):
        for f in fs:
            try:
                total += os.lstat(os.path.join(dp, f)).st_size
                files += 1
            except FileNotFoundError:
                pass
    return total, files


def container_stats(store, name):
    c = os.path.join(store, name)
    phys, _ = tree_bytes(c)
    shadow = os.path.join(store, ".plfs_shadow")
    if os.path.isdir(shadow):
        phys += tree_bytes(shadow)[0]
    meta = len(os.listdir(os.path.join(c, "meta")))
    return {"physical_bytes": phys, "meta_files": meta}


def write_rc(work, auto, mount):
    store = os.path.join(work, "store-" + ("auto" if auto else "noauto"))
    os.makedirs(store, exist_ok=True)
    rc = os.path.join(work, "plfsrc-" + ("auto" if auto else "noauto"))
    with open(rc, "w") as f:
        f.write("- global_params:\n    auto_compaction: %s\n" % ("true" if auto else "false"))
        f.write("- mount_point: %s\n  workload: n-1\n  backends:\n    - location: %s\n" % (mount, store))
    return rc, store


def run_churn(path, ops, env):
    out = subprocess.run([sys.executable, CHURN, path, "--ops", str(ops)], env=env,
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit("churn failed (%d): %s %s" % (out.returncode, out.stdout, out.stderr))
    return json.loads(out.stdout.strip().splitlines()[-1])


def compact(rc, path):
    env = dict(os.environ, PLFSRC=rc)
    out = subprocess.run([PLFS, "--json", "compact", path], env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit("plfs compact failed: %s" % out.stderr)
    return json.loads(out.stdout)


def churn_case(work, label, auto, ops, fuse):
    mount = os.path.join(work, "mnt-%s-%s" % (label, "auto" if auto else "noauto"))
    rc, store = write_rc(work, auto, mount)
    env = dict(os.environ, PLFSRC=rc)
    fmnt = None
    if fuse:
        fmnt = os.path.join(work, "fuse-" + ("auto" if auto else "noauto"))
        os.makedirs(fmnt, exist_ok=True)
        r = subprocess.run([PLFS, "mount", fmnt, "--config", rc], env=env, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError("plfs mount: " + r.stderr.strip())
        path = os.path.join(fmnt, "churn")
    else:
        env["LD_PRELOAD"] = LDPLFS
        path = os.path.join(mount, "churn")
    try:
        res = run_churn(path, ops, env)
    finally:
        if fmnt:
            subprocess.run([PLFS, "umount", fmnt], env=dict(os.environ, PLFSRC=rc), capture_output=True)
    logical = res["final_size"]
    after_run = container_stats(store, "churn")
    c = compact(rc, os.path.join(mount, "churn"))
    after_compact = container_stats(store, "churn")
    limit = 2 * logical + 64 * 1024
    return {
        "front_end": label, "auto_compaction": auto, "ops": ops,
        "seconds": res["seconds"], "tenth_rates": res["tenth_rates"],
        "last_over_first": res["last_over_first"], "verified": res["verified"],
        "logical_bytes": logical, "after_run": after_run, "after_plfs_compact": after_compact,
        "compact_status": c["paths"][0]["status"] if c["paths"] else None,
        "space_limit_bytes": limit,
        "targets": {
            "space_after_run": after_run["physical_bytes"] <= limit,
            "meta_after_run": after_run["meta_files"] <= 16,
            "space_after_compact": after_compact["physical_bytes"] <= limit,
            "meta_after_compact": after_compact["meta_files"] <= 16,
            "rate": (res["last_over_first"] or 0) >= 0.5,
        },
    }


def sqlite_case(work, rows, per_txn):
    sql = os.path.join(work, "rows-%d.sql" % per_txn)
    with open(sql, "w") as f:
        f.write("CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, value REAL, note TEXT);\n")
        for b in range(0, rows, per_txn):
            f.write("BEGIN;\n")
            for i in range(b, min(rows, b + per_txn)):
                f.write("INSERT INTO t(name, value, note) VALUES('row%d', %d.5, 'some text %d');\n" % (i, i, i * 7))
            f.write("COMMIT;\n")
        f.write("SELECT count(*), sum(value) FROM t;\n")
    mount = os.path.join(work, "mnt-sqlite-%d" % per_txn)
    rc, store = write_rc(work, True, mount)
    plain_dir = os.path.join(work, "plain")
    os.makedirs(plain_dir, exist_ok=True)

    def once(db, preload):
        env = dict(os.environ)
        if preload:
            env.update(PLFSRC=rc, LD_PRELOAD=LDPLFS)
        t = time.perf_counter()
        with open(sql) as inp:
            out = subprocess.run(["sqlite3", db], stdin=inp, env=env, capture_output=True, text=True)
        dt = time.perf_counter() - t
        if out.returncode != 0 or not out.stdout.strip().startswith(str(rows) + "|"):
            raise SystemExit("sqlite3 on %s failed: %s %s" % (db, out.stdout, out.stderr))
        return dt, out.stdout.strip()

    plain_t, plfs_t, results = [], [], set()
    for k in range(3):
        for preload in (False, True):
            db = os.path.join(mount if preload else plain_dir, "db%d-%d.sqlite" % (per_txn, k))
            dt, res = once(db, preload)
            (plfs_t if preload else plain_t).append(dt)
            results.add(res)
    if len(results) != 1:
        raise SystemExit("sqlite results differ between plain and PLFS: %s" % results)
    p, q = statistics.median(plain_t), statistics.median(plfs_t)
    st = container_stats(store, "db%d-2.sqlite" % per_txn)
    return {"rows": rows, "rows_per_transaction": per_txn, "plain_seconds": plain_t, "plfs_seconds": plfs_t,
            "plain_median": round(p, 3), "plfs_median": round(q, 3), "ratio": round(q / p, 3),
            "db_container": st, "same_result": True, "target": q / p <= 2.0}


def fuse_usable():
    return os.path.exists("/dev/fuse") and shutil.which("fusermount3") is not None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ops", type=int, default=20000)
    ap.add_argument("--fuse-ops", type=int, default=20000)
    ap.add_argument("--sqlite-rows", type=int, default=200000)
    ap.add_argument("--no-fuse", action="store_true")
    ap.add_argument("--no-baseline", action="store_true", help="skip the runs without automatic compaction")
    ap.add_argument("--no-sqlite", action="store_true")
    ap.add_argument("--json", help="also write the figures to this file")
    a = ap.parse_args()
    for f in (PLFS, LDPLFS):
        if not os.path.exists(f):
            raise SystemExit("%s is missing: run `cargo build --release --workspace` first" % f)
    work = tempfile.mkdtemp(prefix="plfs-compaction-bench-")
    out = {"churn": [], "machine": os.uname().nodename, "date": time.strftime("%Y-%m-%d %H:%M:%S")}
    try:
        cases = [("ldplfs", True, a.ops, False)]
        if not a.no_baseline:
            cases.append(("ldplfs", False, a.ops, False))
        if not a.no_fuse and fuse_usable():
            cases.append(("fuse", True, a.fuse_ops, True))
            if not a.no_baseline:
                cases.append(("fuse", False, a.fuse_ops, True))
        elif not a.no_fuse:
            print("FUSE is not usable here (/dev/fuse or fusermount3 missing): skipped")
        for label, auto, ops, fuse in cases:
            try:
                r = churn_case(work, label, auto, ops, fuse)
            except RuntimeError as e:
                print("%s: skipped: %s" % (label, e))
                continue
            out["churn"].append(r)
            print("churn %-6s auto_compaction=%-5s %d ops in %.1f s: last/first tenth %.2f, verified=%s"
                  % (label, auto, ops, r["seconds"], r["last_over_first"] or 0, r["verified"]))
            print("    tenth rates (ops/s): %s" % " ".join("%.0f" % x for x in r["tenth_rates"]))
            print("    logical %d bytes (limit 2x+64K = %d): after the run %d bytes, %d files in meta/; "
                  "after plfs compact (%s) %d bytes, %d files in meta/"
                  % (r["logical_bytes"], r["space_limit_bytes"], r["after_run"]["physical_bytes"],
                     r["after_run"]["meta_files"], r["compact_status"],
                     r["after_plfs_compact"]["physical_bytes"], r["after_plfs_compact"]["meta_files"]))
            print("    targets: %s" % r["targets"])
        if not a.no_sqlite and shutil.which("sqlite3"):
            out["sqlite"] = []
            for per_txn in (a.sqlite_rows, 1000):
                s = sqlite_case(work, a.sqlite_rows, per_txn)
                out["sqlite"].append(s)
                print("sqlite3 %d rows, %d per transaction: plain %.2f s, ldplfs %.2f s (medians of 3): "
                      "ratio %.2f (target <= 2); container %d bytes, %d files in meta/"
                      % (s["rows"], per_txn, s["plain_median"], s["plfs_median"], s["ratio"],
                         s["db_container"]["physical_bytes"], s["db_container"]["meta_files"]))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
