#!/usr/bin/env python3
"""What one client of a network file system sees of another client's change, at once and after a
pause: the measurement behind docs/backends.md's "What another client sees" and design.md's
argument for the listing in a stat (issue 22).

Two mounts of one volume (MNT1, MNT2: two clients, such as `scripts/glusterfs.sh`'s mnt and
mnt2, or `scripts/moosefs.sh`'s). For each of FILES files, client 2 first reads and stats the
file (so its caches hold it), client 1 then changes it, and client 2 looks again at once (and,
for the plain files, again after each PAUSE):

  plain, attributes   client 1 rewrites the file longer and links it: client 2's size and nlink
  plain, content      client 2's bytes (buffered, and O_DIRECT)
  plain, listing      a name client 1 made: in client 2's listing?
  plfs, stat / read   the same rewrite of a plfs file (N-1 mount, through ldplfs; its backend the
                      same directory through each client): client 2's size and bytes

Counts of stale answers out of FILES. Run with two mounts of a volume up:

    python3 bench/coherence.py MNT1 MNT2 [LIB] [--files N]
    scripts/glusterfs.sh run sh -c 'python3 bench/coherence.py $PLFS_GLUSTER_MOUNT $PLFS_GLUSTER_MOUNT2'
"""
import mmap
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PAUSES = (0.0, 0.5, 1.1, 2.0)
OLD, NEW = b"o" * 4096, b"n" * 8192


def plain(m1, m2, files, pause):
    """Stale answers of client 2 after client 1's change, `pause` seconds later."""
    d1 = tempfile.mkdtemp(dir=m1, prefix="coh.")
    d2 = os.path.join(m2, os.path.basename(d1))
    stale = {"size": 0, "nlink": 0, "bytes": 0, "bytes O_DIRECT": 0, "new name listed": 0}
    buf = mmap.mmap(-1, len(NEW))
    for i in range(files):
        a, b = os.path.join(d1, f"f{i}"), os.path.join(d2, f"f{i}")
        with open(a, "wb") as f:
            f.write(OLD)
        with open(b, "rb") as f:
            f.read()
        os.stat(b)
        os.listdir(d2)
        with open(a, "wb") as f:
            f.write(NEW)
        os.link(a, a + ".link")
        time.sleep(pause)
        st = os.stat(b)
        stale["size"] += st.st_size != len(NEW)
        stale["nlink"] += st.st_nlink != 2
        with open(b, "rb") as f:
            stale["bytes"] += f.read() != NEW
        fd = os.open(b, os.O_RDONLY | os.O_DIRECT)
        try:
            n = os.preadv(fd, [buf], 0)
        finally:
            os.close(fd)
        stale["bytes O_DIRECT"] += buf[:n] != NEW
        stale["new name listed"] += f"f{i}.link" not in os.listdir(d2)
    subprocess.run(["rm", "-rf", d1], check=True)
    return stale


# Run under ldplfs with two N-1 mount points whose backends are one directory through each client.
PLFS_SIDE = r"""
import os, sys
m1, m2, files = sys.argv[1], sys.argv[2], int(sys.argv[3])
OLD, NEW = b"o" * 4096, b"n" * 8192
size = data = 0
for i in range(files):
    a, b = f"{m1}/f{i}", f"{m2}/f{i}"
    with open(a, "wb") as f: f.write(OLD)
    with open(b, "rb") as f: f.read()
    os.stat(b)
    with open(a, "wb") as f: f.write(NEW)
    size += os.stat(b).st_size != len(NEW)
    with open(b, "rb") as f: data += f.read() != NEW
print(size, data)
"""


def plfs(m1, m2, files, lib):
    work = tempfile.mkdtemp(dir=m1, prefix="coh-plfs.")
    be1, be2 = work, os.path.join(m2, os.path.basename(work))
    local = tempfile.mkdtemp(prefix="coh-rc.")
    rc = os.path.join(local, "plfsrc")
    with open(rc, "w") as f:
        for name, be in (("m1", be1), ("m2", be2)):
            f.write(f"- mount_point: {local}/{name}\n  backends:\n    - location: {be}\n")
    env = dict(os.environ, LD_PRELOAD=lib, PLFSRC=rc)
    out = subprocess.run([sys.executable, "-c", PLFS_SIDE, f"{local}/m1", f"{local}/m2", str(files)],
                         env=env, check=True, capture_output=True, text=True).stdout.split()
    subprocess.run(["rm", "-rf", work, local], check=True)
    return {"stat size": int(out[0]), "bytes read": int(out[1])}


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    files = 50
    if "--files" in sys.argv:
        files = int(sys.argv[sys.argv.index("--files") + 1])
        args.remove(str(files))
    if len(args) < 2:
        raise SystemExit(__doc__)
    m1, m2 = args[0], args[1]
    lib = os.path.abspath(args[2] if len(args) > 2 else os.path.join(HERE, "..", "target/release/libldplfs.so"))
    print(f"stale answers on client 2 of {files} changes made on client 1")
    for pause in PAUSES:
        s = plain(m1, m2, files, pause)
        print(f"plain, {pause:.1f} s later: " + ", ".join(f"{k} {v}" for k, v in s.items()))
    s = plfs(m1, m2, files, lib)
    print("plfs through ldplfs, at once: " + ", ".join(f"{k} {v}" for k, v in s.items()))


if __name__ == "__main__":
    main()
