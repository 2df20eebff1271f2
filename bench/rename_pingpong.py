#!/usr/bin/env python3
"""Reads of a plfs file through ldplfs while another process renames it back and forth: counts
the reads that are not the whole file (wrong bytes) and the opens that fail other than with
ENOENT (the name is free half the time, which is not counted as a failure). Before 87e28f1 an
open on the GlusterFS volume failed with EISDIR now and then (18 of 29,671); after it, 0 of 22,346
(docs/design.md, "Backends").

Run: python3 bench/rename_pingpong.py LIBLDPLFS DIR [SECONDS]
(on the volume: scripts/glusterfs.sh run sh -c 'python3 bench/rename_pingpong.py target/release/libldplfs.so $PLFS_GLUSTER_MOUNT 40')
"""
import os
import subprocess
import sys
import tempfile

RENAMER = """
import os, sys
a, b, stop = sys.argv[1:4]
n = 0
while not os.path.exists(stop):
    os.rename(a, b); os.rename(b, a); n += 2
print('renames', n)
"""

READER = """
import os, sys, time
a, b, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
want = bytes(range(256)) * 64
reads = wrong = 0
errors = {}
start = time.time()
while time.time() - start < seconds:
    for name in (a, b):
        try:
            with open(name, 'rb') as f:
                got = f.read()
        except FileNotFoundError:
            continue
        except OSError as e:
            errors[e.strerror] = errors.get(e.strerror, 0) + 1
            continue
        reads += 1
        wrong += got != want
print('reads', reads, 'wrong', wrong, 'failed opens', errors)
"""


def main():
    lib, vol = os.path.abspath(sys.argv[1]), sys.argv[2]
    seconds = sys.argv[3] if len(sys.argv) > 3 else "40"
    work = tempfile.mkdtemp(prefix="pingpong.", dir=vol)
    backend = os.path.join(work, "backend")
    os.mkdir(backend)
    local = tempfile.mkdtemp(prefix="pingpong-rc.")
    rc, mnt = os.path.join(local, "plfsrc"), os.path.join(local, "mnt")
    with open(rc, "w") as f:
        f.write(f"- mount_point: {mnt}\n  backends:\n    - location: {backend}\n")
    env = dict(os.environ, LD_PRELOAD=lib, PLFSRC=rc)
    a, b, stop = (os.path.join(mnt, n) for n in ("A", "B", "stop"))
    py = sys.executable
    subprocess.run([py, "-c", "import sys; open(sys.argv[1], 'wb').write(bytes(range(256)) * 64)", a], env=env, check=True)
    renamer = subprocess.Popen([py, "-c", RENAMER, a, b, stop], env=env)
    reader = subprocess.run([py, "-c", READER, a, b, seconds], env=env, capture_output=True, text=True)
    subprocess.run([py, "-c", "import sys; open(sys.argv[1], 'w').close()", stop], env=env, check=True)
    renamer.wait()
    print(reader.stdout.strip() or reader.stderr.strip())
    subprocess.run(["rm", "-rf", work, local], check=True)


if __name__ == "__main__":
    main()
