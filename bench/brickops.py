#!/usr/bin/env python3
"""Brick operations per file on the GlusterFS volume (issue 22, item 2): what the file system itself
counts (`gluster volume profile`, summed over the bricks) for basic operations on a logical file
made through ldplfs on an N-1 mount, against the same operations on plain files of the volume.
Counts, not times: noise cannot move them.

Each phase runs in a fresh Python process (under LD_PRELOAD for plfs, the same interpreter
without it for plain) on FILES files; the profile is cleared before and read after, and the
counts are divided by FILES:

    create   open(O_CREAT|O_WRONLY), one 4 KiB write, close
    stat     os.stat of a closed file (new process, so nothing cached in it)
    read     open, read it all, close
    unlink   os.unlink
    open4    4 processes open one new N-1 file, each writes 4 KiB at its own offset, close:
             per file, to compare with `create` (the budget: at most 2x one writer's)

Run with the volume up (scripts/glusterfs.sh run python3 bench/brickops.py [--json] [--check] [LIB]).

--check (scripts/test-glusterfs.sh, so CI): fails when a phase of plfs costs more brick operations
than CEILINGS allows, counted without the look-ups and stats (LOOKUP, STAT, FSTAT, STATFS), which
vary from run to run with the kernel's attribute and entry caches (a stat phase measured 0.3-5
LOOKUPs per file in three runs of one build). The rest is what plfs asks of the volume, the same
in every run (within a few tenths per file): a regression pin, not issue 22's budget.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FILES = int(os.environ.get("BRICKOPS_FILES", "20"))
# Client-side bookkeeping the bricks report, not operations a client asked for.
NOT_OPS = {"FORGET"}

PHASES = {
    "create": "for i in range(N):\n"
              "    fd = os.open(f'{D}/f{i}', os.O_CREAT | os.O_WRONLY, 0o644)\n"
              "    os.write(fd, b'x' * 4096)\n"
              "    os.close(fd)\n",
    "stat": "for i in range(N):\n    os.stat(f'{D}/f{i}')\n",
    "read": "for i in range(N):\n"
            "    fd = os.open(f'{D}/f{i}', os.O_RDONLY)\n"
            "    assert os.read(fd, 8192) == b'x' * 4096\n"
            "    os.close(fd)\n",
    "unlink": "for i in range(N):\n    os.unlink(f'{D}/f{i}')\n",
}
# Four writers of one file each: started together, each opens (creating), writes its 4 KiB
# block, closes.
OPEN4 = ("import sys\nk = int(sys.argv[1])\n"
         "for i in range(N):\n"
         "    fd = os.open(f'{D}/g{i}', os.O_CREAT | os.O_WRONLY, 0o644)\n"
         "    os.pwrite(fd, b'x' * 4096, 4096 * k)\n"
         "    os.close(fd)\n")


# Brick operations per file other than look-ups and stats (see --check), measured 2026-11-27 on
# format 3's one-directory containers (create 40.3, stat 12.1, read 31.8, unlink 43.0, open4
# 104.2; format 2 at 395d01c: 65.3, 11.3, 53.4, 98.4, 129.2) plus about 10 %; the read at 20.0
# since a short first read stopped listing the container twice.
# Raised 2026-12-02, measured with 79cd0c0 and this build side by side on one volume (10 files):
# - create 40.6 -> 46.5: every last close lists the container once (READDIRP +5.9) to learn
#   whether 4 or more writers closed and none is open, the flattening at close that makes a
#   restart read cost one index, not one log per writer (layout/n1/flat_close.rs);
# - stat 12.1 -> 16.5: a stat reads the index log of the close dropping that gives the size,
#   so that a renamed dropping cannot make it report another (OPEN, READ, FLUSH, RELEASE: +4);
# - open4 105.4 -> 182.6: each of the 4 closers lists the container (as in create), and the
#   last merges the 4 index logs and writes flat.index (reads of 4 logs, a temporary file
#   written, fsynced, renamed and its mtime set, one more listing to confirm): it was 201.8
#   while the flattening listed the container 4 times, now twice.
CEILINGS = {"create": 51, "stat": 18, "read": 22, "unlink": 48, "open4": 200}
CACHED = {"LOOKUP", "STAT", "FSTAT", "STATFS"}


def gluster(*args, check=True):
    out = subprocess.run([os.path.join(ROOT, "scripts/glusterfs.sh"), "gluster", *args],
                         check=check, capture_output=True, text=True)
    return out.stdout


def profile_counts():
    """Calls per fop, summed over the bricks, since the last clear (cumulative section only)."""
    text = gluster("volume", "profile", os.environ.get("PLFS_GLUSTER_VOLUME", "plfs"), "info", "cumulative")
    calls = Counter()
    for line in text.splitlines():
        m = re.match(r"^\s*[\d.]+\s+[\d.]+ \w+\s+[\d.]+ \w+\s+[\d.]+ \w+\s+(\d+)\s+(\w+)\s*$", line)
        if m and m.group(2) not in NOT_OPS:
            calls[m.group(2)] += int(m.group(1))
    return calls


def clear():
    gluster("volume", "profile", os.environ.get("PLFS_GLUSTER_VOLUME", "plfs"), "info", "clear")


def run_phase(code, d, env, procs=1):
    script = f"import os\nN = {FILES}\nD = {d!r}\n" + code
    ps = [subprocess.Popen([sys.executable, "-c", script, str(k)], env=env) for k in range(procs)]
    for p in ps:
        if p.wait() != 0:
            raise SystemExit(f"phase failed: {code.splitlines()[0]} in {d}")


def measure(d, env):
    out = {}
    for name, code in PHASES.items():
        clear()
        run_phase(code, d, env)
        c = profile_counts()
        out[name] = {"per_file": round(sum(c.values()) / FILES, 1),
                     "by_fop": {k: round(v / FILES, 2) for k, v in c.most_common()}}
    clear()
    run_phase(OPEN4, d, env, procs=4)
    c = profile_counts()
    out["open4"] = {"per_file": round(sum(c.values()) / FILES, 1),
                    "by_fop": {k: round(v / FILES, 2) for k, v in c.most_common()}}
    return out


class Workspace:
    """Plain files and a plfs backend side by side in a new directory of the file system `vol`, an
    N-1 mount point for the backend, and the environments to run the phases in (plain, and
    through `lib`)."""

    def __init__(self, vol, lib, tag):
        self.work = tempfile.mkdtemp(prefix=f"{tag}.", dir=vol)
        self.plain = os.path.join(self.work, "plain")
        backend = os.path.join(self.work, "backend")
        os.mkdir(self.plain)
        os.mkdir(backend)
        self.local = tempfile.mkdtemp(prefix=f"{tag}-rc.")
        rc = os.path.join(self.local, "plfsrc")
        self.mnt = os.path.join(self.local, "mnt")
        with open(rc, "w") as f:
            f.write(f"- mount_point: {self.mnt}\n  backends:\n    - location: {backend}\n")
        self.env_plain = dict(os.environ)
        self.env_plfs = dict(os.environ, LD_PRELOAD=lib, PLFSRC=rc)

    def remove(self):
        subprocess.run(["rm", "-rf", self.work, self.local], check=True)


def main():
    args = [a for a in sys.argv[1:] if a not in ("--json", "--check")]
    lib = os.path.abspath(args[0] if args else os.path.join(ROOT, "target/release/libldplfs.so"))
    vol = os.environ.get("PLFS_GLUSTER_MOUNT")
    if not vol:
        raise SystemExit("brickops: no volume (run under scripts/glusterfs.sh run)")
    # Fails when profiling is already on, which is as good.
    gluster("volume", "profile", os.environ.get("PLFS_GLUSTER_VOLUME", "plfs"), "start", check=False)
    ws = Workspace(vol, lib, "brickops")
    res = {"files": FILES, "plain": measure(ws.plain, ws.env_plain), "plfs": measure(ws.mnt, ws.env_plfs)}
    ws.remove()
    if "--json" in sys.argv:
        print(json.dumps(res, indent=1))
    else:
        report(res)
    if "--check" in sys.argv:
        check(res["plfs"])


def check(plfs):
    """Exits non-zero when a phase's brick operations (look-ups and stats aside) exceed CEILINGS."""
    check_ceilings("brickops", plfs, CEILINGS, lambda p: sum(v for k, v in p["by_fop"].items() if k not in CACHED),
                   "brick operations per file without look-ups", lambda p: p["by_fop"])


def check_ceilings(tool, plfs, ceilings, count, what, detail):
    """Exits non-zero when `count(phase)` of a phase of `plfs` exceeds its ceiling (`ceilings`:
    phase -> ceiling), printing each phase's count (`what` says what it counts) and, for one
    over, `detail(phase)`: the ceilings of brickops.py, cephops.py."""
    over = []
    for ph, ceiling in ceilings.items():
        got = count(plfs[ph])
        print(f"{tool} check: {ph}: {got:.2f} {what} (ceiling {ceiling})", file=sys.stderr)
        if got > ceiling:
            over.append(f"{ph} {got:.2f} > {ceiling}: {detail(plfs[ph])}")
    if over:
        raise SystemExit(f"{tool} check failed (more per file than before):\n  " + "\n  ".join(over))


def options(argv):
    """(LIB, --save FILE or None) of a counting tool's command line (--json and --check aside)."""
    args = list(argv)
    save = None
    if "--save" in args:
        i = args.index("--save")
        save = args[i + 1]
        del args[i:i + 2]
    args = [a for a in args if a not in ("--json", "--check")]
    return os.path.abspath(args[0] if args else os.path.join(ROOT, "target/release/libldplfs.so")), save


def emit(res, save, report):
    """Saves `res` as JSON to `save` (if given), then prints it as JSON (--json) or by `report`."""
    if save:
        with open(save, "w") as f:
            json.dump(res, f, indent=1)
    if "--json" in sys.argv:
        print(json.dumps(res, indent=1))
    else:
        report(res)


def report(res):
    print(f"brick operations per file, summed over the bricks ({FILES} files a phase)")
    print(f"{'phase':8} {'plain':>7} {'plfs':>7}   plfs by fop")
    for ph in list(PHASES) + ["open4"]:
        top = ", ".join(f"{k} {v}" for k, v in list(res["plfs"][ph]["by_fop"].items())[:8])
        print(f"{ph:8} {res['plain'][ph]['per_file']:7} {res['plfs'][ph]['per_file']:7}   {top}")


if __name__ == "__main__":
    main()
