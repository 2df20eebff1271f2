#!/usr/bin/env python3
"""Master operations per file on MooseFS (issue 22, item 4: the MooseFS profile of
bench/brickops.py): what the file system itself counts for basic operations on a logical file
made through ldplfs on an N-1 mount, against the same operations on plain files of the same
mount. MooseFS's master keeps, per client session, a count of each metadata operation it served
in the current hour (`mfscli -SMO -m 1`: statfs, getattr, setattr, lookup, mkdir, rmdir, symlink,
readlink, mknod, unlink, rename, link, readdir, open, read, write); the read and write counts are
the client asking where a chunk is, not the bytes. Counts, not times: noise cannot move them.

The phases are brickops.py's (create, stat, read, unlink of MFSOPS_FILES files, default 20, each
in a fresh Python process; open4: 4 processes write one new file each), run on the first client
mount; the counter of that mount is read before and after each phase and the difference divided
by the files. getattr and lookup move with mfsmount's attribute and entry caches, as LOOKUP and
STAT do on GlusterFS; the rest is what plfs asks of the master.

Run with MooseFS up (scripts/moosefs.sh run python3 bench/mfsops.py [--json] [--save FILE.json]
[LIB]: --save writes the JSON to FILE and prints the table); needs mfscli
(package moosefs-cli, installed by make bench-moosefs).
"""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import brickops  # noqa: E402  (its phases and its way of running them)

ROOT = brickops.ROOT
FILES = int(os.environ.get("MFSOPS_FILES", "20"))
brickops.FILES = FILES
OPS = ["statfs", "getattr", "setattr", "lookup", "mkdir", "rmdir", "symlink", "readlink", "mknod",
       "unlink", "rename", "link", "readdir", "open", "read", "write"]
CACHED = {"getattr", "lookup", "statfs"}


def counters(mount):
    """This hour's operation counts of the client session mounted at `mount`."""
    out = subprocess.run(
        ["nsenter", f"--net={os.environ['PLFS_MOOSEFS_DIR']}/netns", "mfscli", "-H",
         os.environ["PLFS_MOOSEFS_SERVER"], "-SMO", "-m", "1", "-p"],
        check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        f = line.split("\t")
        if len(f) >= 3 + len(OPS) and f[2] == mount:
            return dict(zip(OPS, map(int, f[3:3 + len(OPS)])))
    raise SystemExit(f"mfsops: no session of {mount} in mfscli -SMO:\n{out}")


def counted(mount, run):
    """Operations `run()` made the master serve for `mount`'s session. The master counts by the
    hour: a phase that straddles the hour is run again (the counts restart at zero)."""
    for _ in range(3):
        hour = time.gmtime().tm_hour
        before = counters(mount)
        run()
        # The master takes its counts from the client's requests as it serves them; let the last
        # ones (a close's release) arrive.
        time.sleep(0.5)
        after = counters(mount)
        if time.gmtime().tm_hour == hour and all(after[k] >= before[k] for k in OPS):
            return {k: after[k] - before[k] for k in OPS if after[k] != before[k]}
    raise SystemExit("mfsops: the hour turned three times during one phase")


def measure(mount, d, env):
    out = {}
    phases = list(brickops.PHASES.items()) + [("open4", brickops.OPEN4)]
    for name, code in phases:
        procs = 4 if name == "open4" else 1
        c = counted(mount, lambda: brickops.run_phase(code, d, env, procs=procs))
        out[name] = {"per_file": round(sum(c.values()) / FILES, 1),
                     "by_op": {k: round(v / FILES, 2) for k, v in sorted(c.items(), key=lambda kv: -kv[1])}}
    return out


def main():
    lib, save = brickops.options(sys.argv[1:])
    mount = os.environ.get("PLFS_MOOSEFS_MOUNT")
    if not mount:
        raise SystemExit("mfsops: no MooseFS (run under scripts/moosefs.sh run)")
    ws = brickops.Workspace(mount, lib, "mfsops")
    res = {"files": FILES, "plain": measure(mount, ws.plain, ws.env_plain),
           "plfs": measure(mount, ws.mnt, ws.env_plfs)}
    ws.remove()
    brickops.emit(res, save, report)


def report(res):
    print(f"MooseFS master operations per file ({res['files']} files a phase; getattr, lookup and "
          f"statfs move with the client's caches)")
    print(f"{'phase':8} {'plain':>7} {'plfs':>7} {'plfs w/o cached':>16}   plfs by operation")
    for ph in list(brickops.PHASES) + ["open4"]:
        p = res["plfs"][ph]
        rest = sum(v for k, v in p["by_op"].items() if k not in CACHED)
        top = ", ".join(f"{k} {v}" for k, v in p["by_op"].items())
        print(f"{ph:8} {res['plain'][ph]['per_file']:7} {p['per_file']:7} {rest:16.1f}   {top}")


if __name__ == "__main__":
    main()
