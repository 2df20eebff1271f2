#!/usr/bin/env python3
"""How often a listing of a directory misses entries while another process renames it: one
process renames a directory of 12 files back and forth between two names, this one lists it
through a descriptor kept across the renames (as a reader of a container does) for 20 s, and
counts the listings that lack an entry. On a local file system: none. On the GlusterFS volume
(DHT over 3 bricks), 822 of 6,806 on 2026-11-28 (docs/design.md, "Listings that miss a server").

Run in a directory on the backend: python3 bench/partial_listing.py DIR [SECONDS]
(on the volume: scripts/glusterfs.sh run sh -c 'python3 bench/partial_listing.py $PLFS_GLUSTER_MOUNT/pl')
"""
import os
import subprocess
import sys
import time

FILES = 12


def main():
    base = sys.argv[1]
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 20.0
    os.makedirs(base)
    a, b, stop = (os.path.join(base, n) for n in ("A", "B", "stop"))
    os.mkdir(a)
    for i in range(FILES):
        open(os.path.join(a, f"f{i}"), "w").close()
    renamer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import os, sys\n"
            "a, b, stop = sys.argv[1:4]\n"
            "n = 0\n"
            "while not os.path.exists(stop):\n"
            "    os.rename(a, b); os.rename(b, a); n += 1\n"
            "print('renames', 2 * n)\n",
            a,
            b,
            stop,
        ]
    )
    held = os.open(a, os.O_PATH | os.O_DIRECTORY)
    listings = partial = 0
    missed = {}
    start = time.time()
    while time.time() - start < seconds:
        fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY, dir_fd=held)
        names = os.listdir(fd)
        os.close(fd)
        listings += 1
        if len(names) != FILES:
            partial += 1
            missed[FILES - len(names)] = missed.get(FILES - len(names), 0) + 1
    open(stop, "w").close()
    renamer.wait()
    print(f"listings {listings} partial {partial} (entries missed: count) {dict(sorted(missed.items()))}")


if __name__ == "__main__":
    main()
