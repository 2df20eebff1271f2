#!/usr/bin/env python3
"""What one backend operation costs on the GlusterFS volume, counted by the bricks
(`gluster volume profile`, summed over the bricks, FORGET not counted): the price list that the
container layout is designed against (docs/performance.md, "What a backend operation costs").

Each operation runs in a fresh Python process (no LD_PRELOAD: plain system calls on the volume)
on N directories or files made by the steps before it, and the counts are divided by N.

Run with the volume up: scripts/glusterfs.sh run python3 bench/brickprims.py [--json]
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import brickops  # noqa: E402  (the profile reader and clearer)

N = int(os.environ.get("BRICKOPS_FILES", "10"))
STEPS = [
    ("mkdir", "for i in range(N): os.mkdir(f'{D}/d{i}')"),
    ("open(O_CREAT|O_EXCL) + close", "for i in range(N): os.close(os.open(f'{D}/d{i}/m', os.O_CREAT|os.O_WRONLY|os.O_EXCL, 0o644))"),
    ("create + 4 KiB write + close", "for i in range(N):\n fd = os.open(f'{D}/d{i}/w', os.O_CREAT|os.O_WRONLY|os.O_EXCL, 0o644)\n os.write(fd, b'x' * 4096)\n os.close(fd)"),
    ("mknod (regular file)", "for i in range(N): os.mknod(f'{D}/d{i}/n', 0o100644)"),
    ("open(O_DIRECTORY) + close", "for i in range(N): os.close(os.open(f'{D}/d{i}', os.O_RDONLY|os.O_DIRECTORY))"),
    ("lstat of a directory", "for i in range(N): os.lstat(f'{D}/d{i}')"),
    ("lstat of a file", "for i in range(N): os.lstat(f'{D}/d{i}/m')"),
    ("lstat of a missing name", "for i in range(N):\n try: os.lstat(f'{D}/d{i}/zz')\n except FileNotFoundError: pass"),
    ("readdir (listdir)", "for i in range(N): os.listdir(f'{D}/d{i}')"),
    ("open + read + close", "for i in range(N):\n fd = os.open(f'{D}/d{i}/w', os.O_RDONLY)\n os.read(fd, 8192)\n os.close(fd)"),
    ("rename of a file", "for i in range(N): os.rename(f'{D}/d{i}/n', f'{D}/d{i}/n2')"),
    ("link", "for i in range(N): os.link(f'{D}/d{i}/n2', f'{D}/d{i}/n3')"),
    ("setxattr", "for i in range(N): os.setxattr(f'{D}/d{i}/m', 'user.a', b'123')"),
    ("getxattr", "for i in range(N): os.getxattr(f'{D}/d{i}/m', 'user.a')"),
    ("truncate (by path)", "for i in range(N): os.truncate(f'{D}/d{i}/m', 22345)"),
    ("utimensat (by path)", "for i in range(N): os.utime(f'{D}/d{i}/m', ns=(1, 2))"),
    ("chmod of a directory", "for i in range(N): os.chmod(f'{D}/d{i}', 0o751)"),
    ("rename of a directory", "for i in range(N): os.rename(f'{D}/d{i}', f'{D}/e{i}')"),
    ("unlink", "for i in range(N):\n for n in ('m', 'w', 'n2', 'n3'): os.unlink(f'{D}/e{i}/' + n)"),
    ("rmdir (empty)", "for i in range(N): os.rmdir(f'{D}/e{i}')"),
]
# Steps that act on several names per directory: their count is per name.
PER = {"unlink": 4}


def main():
    vol = os.environ.get("PLFS_GLUSTER_MOUNT")
    if not vol:
        raise SystemExit("brickprims: no volume (run under scripts/glusterfs.sh run)")
    brickops.gluster("volume", "profile", os.environ.get("PLFS_GLUSTER_VOLUME", "plfs"), "start", check=False)
    d = os.path.join(vol, f"brickprims.{os.getpid()}")
    os.mkdir(d)
    res = {}
    try:
        for name, code in STEPS:
            brickops.clear()
            subprocess.run([sys.executable, "-c", f"import os\nN = {N}\nD = {d!r}\n" + code], check=True)
            c = brickops.profile_counts()
            per = N * PER.get(name, 1)
            res[name] = {"per_op": round(sum(c.values()) / per, 1),
                         "by_fop": {k: round(v / per, 1) for k, v in c.most_common()}}
    finally:
        subprocess.run(["rm", "-rf", d], check=True)
    if "--json" in sys.argv:
        print(json.dumps(res, indent=1))
        return
    print(f"brick operations per operation, summed over the bricks ({N} a step)")
    for name, r in res.items():
        top = ", ".join(f"{k} {v}" for k, v in list(r["by_fop"].items())[:6])
        print(f"{name:32} {r['per_op']:6}   {top}")


if __name__ == "__main__":
    main()
