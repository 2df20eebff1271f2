#!/usr/bin/env python3
"""A write that a network file system accepted and then could not keep is reported, never lost.

On GlusterFS (default settings: write-behind on) a `write` returns once the client holds the
bytes; if the brick then cannot store them (a full disk), the error comes with a later write or
with `close`. A program writing a plain file hears of it there; through ldplfs it must hear of it
the same way, and the file must read back as the bytes that landed, never as `EIO`, never with
bytes it did not write. Before 2026-11-29 plfs closed its logs without looking at close(2)'s
answer: every write and the close succeeded while the data log missed the last writes, and the
N-1 file then read as damage (`EIO`), the 1-N and N-N files short, with nothing said.

Run by scripts/test-full-brick.sh on a GlusterFS volume whose bricks share a small file system of
their own (PLFS_GLUSTER_BRICKS_MB): before each case the bricks' file system is filled to leave
FREE_KB, then one process writes N records of 64 KiB (a plain file on the volume, then through
ldplfs an N-1, an N-N and a 1-N file, then an N-1 and a 1-N file through the FUSE daemon, whose
FLUSH is the program's close) and closes, and a fresh process reads the file back. Every case checks:
  - the read raises nothing (no EIO), and each byte it returns is the byte written there or 0;
  - a writer told of no error gets back every byte it wrote, exactly.
After an error the bytes past the failure are the backend's: GlusterFS can keep a later write
and not an earlier one, which reads as a hole (zeros), in a plain N-N file as in a data log,
whose frame scan then reads a frame whose bytes did not land as zeros (design.md, "Crash
semantics", power loss).
Over the cases of each front end there must be one that fit and one that ran out of space, and
over all of them one where every write returned and only the close said ENOSPC (the case that
write-behind makes), or the check did not test what it is for.

    python3 scripts/full_brick.py LIB           (under scripts/glusterfs.sh run, which exports
                                                 PLFS_GLUSTER_MOUNT and PLFS_GLUSTER_DIR)
"""
import contextlib
import errno
import os
import shutil
import subprocess
import sys
import signal
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "battery"))
# The battery's FUSE mount: a fresh daemon for each case, which knows nothing of the previous
# case's file, removed behind it. It tells a mount by /proc/self/mountinfo: on 2026-11-29 this
# script's own helper asked os.path.ismount, which is False for a mount whose root answers with
# an error (the daemon's backend was the volume's client, dead and mounted again), so the mount
# stayed behind and the next case could not mount there (FileExistsError).
from fuse_method import fuse_mount  # noqa: E402

REC = 65536
FREE_KB = 3000
# Records per case: from what fits in FREE_KB to well past it (frames and records included).
COUNTS = [40, 44, 46, 47, 48, 50, 56]
# A writer or reader that has not finished after this long is stuck in the volume's client.
STUCK_S = 60
# ext4 keeps this many blocks (of 1 KiB here) for its own metadata: fallocate never takes them.
EXT4_OWN_KB = 4096

WRITER = r"""
import os, sys
path, n = sys.argv[1], int(sys.argv[2])
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
wrote, werr, cerr = 0, 0, 0
for k in range(n):
    try:
        wrote += os.write(fd, (b"%08d" % k) * (65536 // 8))
    except OSError as e:
        werr = e.errno
        break
try:
    os.close(fd)
except OSError as e:
    cerr = e.errno
print(wrote, werr, cerr)
"""

READER = r"""
import sys
with open(sys.argv[1], "rb") as f:
    sys.stdout.buffer.write(f.read())
"""


def model(n):
    return b"".join((b"%08d" % k) * (REC // 8) for k in range(n))


def fill(brickfs, free_kb):
    """Leaves about free_kb of the bricks' file system to the bricks."""
    filler = os.path.join(brickfs, "filler")
    if os.path.exists(filler):
        os.unlink(filler)
    os.sync()
    st = os.statvfs(brickfs)
    want = st.f_bfree * st.f_frsize // 1024 - EXT4_OWN_KB - free_kb
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while want > 0:
            try:
                os.posix_fallocate(fd, 0, want * 1024)
                break
            except OSError as e:
                if e.errno != errno.ENOSPC:
                    raise
                want -= 256
    finally:
        os.close(fd)
    os.sync()


def kill_client():
    """Kills the volume's FUSE client: the kernel then fails every request still waiting on it
    (ENOTCONN), so that a process stuck in one returns."""
    pidfile = os.path.join(os.environ["PLFS_GLUSTER_DIR"], "run", "client-mnt.pid")
    try:
        with open(pidfile) as f:
            os.kill(int(f.read().strip()), signal.SIGKILL)
    except (OSError, ValueError):
        pass


def alive(mnt):
    """Whether the client mount answers; if it does not, it is mounted again. GlusterFS 10.3's
    client can die or hang once a brick is full (SIGSEGV in its write-behind after a FLUSH
    answered ENOSPC with a WRITE still pending; a write that never returns), on a plain file as
    on plfs's logs: that is the volume's own bug, and what the bricks hold is read again through
    a new client. Returns False after a remount."""
    try:
        ok = subprocess.run(["stat", "-f", mnt], capture_output=True, timeout=20).returncode == 0
    except subprocess.TimeoutExpired:
        ok = False
    if ok:
        return True
    kill_client()
    subprocess.run(["scripts/glusterfs.sh", "start"], check=True, timeout=300)
    return False


def run(cmd, env, mnt):
    """cmd's CompletedProcess, or None if it hung on the volume (its client is then killed and
    mounted again, and the case says nothing)."""
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = p.communicate(timeout=STUCK_S)
        return subprocess.CompletedProcess(cmd, p.returncode, out, err)
    except subprocess.TimeoutExpired:
        kill_client()
        p.kill()
        p.communicate()
        alive(mnt)
        return None


def unfill(brickfs):
    filler = os.path.join(brickfs, "filler")
    if os.path.exists(filler):
        os.unlink(filler)


def case(mode, n, path, env, mnt, brickfs, failures, seen, hung):
    """One case: the writer, then a fresh reader. Returns (remounts of the volume's client,
    1 if every write returned and only the close reported an error)."""
    remounts = 0
    w = run([sys.executable, "-c", WRITER, path, str(n)], env, mnt)
    if w is None:
        hung.append(f"{mode} n={n} (writing)")
        return 1, 0
    if w.returncode != 0:
        failures.append(f"{mode} n={n}: the writer failed: {w.stderr.decode().strip()}")
        return 0, 0
    wrote, werr, cerr = map(int, w.stdout.split())
    unfill(brickfs)
    if not alive(mnt):
        remounts += 1
    r = run([sys.executable, "-c", READER, path], env, mnt)
    if r is not None and r.returncode != 0 and not alive(mnt):
        remounts += 1
        r = run([sys.executable, "-c", READER, path], env, mnt)
    if r is None or (remounts and mode.startswith("FUSE")):
        # The daemon's descriptors on the volume died with its client.
        hung.append(f"{mode} n={n} (reading)")
        return remounts, 0
    told = (f"writes returned {wrote} of {n * REC} bytes, write error "
            f"{errno.errorcode.get(werr, werr) if werr else 'none'}, close error "
            f"{errno.errorcode.get(cerr, cerr) if cerr else 'none'}")
    if r.returncode != 0:
        failures.append(f"{mode} n={n}: {told}; the read failed: "
                        f"{r.stderr.decode(errors='replace').strip()[-300:]}")
        return remounts, 0
    got, want = r.stdout, model(n)
    print(f"full_brick: {mode:8} n={n}: {told}; read back {len(got)} bytes")
    if len(got) > len(want) or any(g != w and g != 0 for g, w in zip(got, want)):
        failures.append(f"{mode} n={n}: read back {len(got)} bytes that are neither what "
                        "was written nor a hole")
    if not werr and not cerr:
        seen[mode].add("fit")
        if got != want or wrote != len(want):
            failures.append(f"{mode} n={n}: {told}, but read back {len(got)} bytes: "
                            "a write was lost without an error")
        return remounts, 0
    seen[mode].add("full")
    return remounts, int(not werr and wrote == len(want))


def main():
    lib = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "target/release/libldplfs.so")
    mnt = os.environ["PLFS_GLUSTER_MOUNT"]
    brickfs = os.path.join(os.environ["PLFS_GLUSTER_DIR"], "bricks")
    if not os.path.ismount(brickfs):
        sys.exit(f"full_brick: {brickfs} is not a file system of its own (PLFS_GLUSTER_BRICKS_MB unset?)")
    if not os.path.exists(lib):
        sys.exit(f"full_brick: {lib} is missing (make build)")
    work = tempfile.mkdtemp(prefix="plfs-full-brick.")
    store = os.path.join(mnt, "store")
    front = os.path.join(work, "mnt")
    fuse = os.path.join(os.path.dirname(lib), "plfs-fuse")
    if not os.path.exists(fuse):
        sys.exit(f"full_brick: {fuse} is missing (make build)")
    # N-1 and 1-N once more through the FUSE daemon: a close(2) there is the daemon's FLUSH.
    modes = {"plain": None, "N-1": None, "N-N": "file_per_proc", "1-N": "small_file", "FUSE N-1": None,
             "FUSE 1-N": "small_file"}
    failures, seen = [], {m: set() for m in modes}
    close_only = remounts = 0
    hung = []
    try:
        for mode, workload in modes.items():
            env = dict(os.environ)
            if mode != "plain":
                rc = os.path.join(work, f"plfsrc-{mode}")
                with open(rc, "w") as f:
                    f.write(f"- mount_point: {front}\n")
                    if workload:
                        f.write(f"  workload: {workload}\n")
                    f.write(f"  backends:\n    - location: {store}\n")
                if mode.startswith("FUSE"):
                    env.pop("LD_PRELOAD", None)
                else:
                    env.update(PLFSRC=rc, LD_PRELOAD=lib)
                path = os.path.join(front, "f")
            else:
                env.pop("LD_PRELOAD", None)
                path = os.path.join(store, "f")
            for n in COUNTS:
                if not alive(mnt):
                    remounts += 1
                unfill(brickfs)
                shutil.rmtree(store, ignore_errors=True)
                os.makedirs(store)
                fill(brickfs, FREE_KB)
                with contextlib.ExitStack() as daemon:
                    if mode.startswith("FUSE"):
                        daemon.enter_context(fuse_mount(fuse, front, rc, os.environ))
                    counts = case(mode, n, path, env, mnt, brickfs, failures, seen, hung)
                remounts += counts[0]
                close_only += counts[1]
        for mode, s in seen.items():
            for what in ("fit", "full"):
                if what not in s:
                    failures.append(f"{mode}: no case {'fitted' if what == 'fit' else 'ran out of space'}: "
                                    "the check did not test what it is for")
        if close_only == 0:
            failures.append("no case where every write returned and the close reported the error "
                            "(the write-behind case this check is for)")
    finally:
        unfill(brickfs)
        shutil.rmtree(store, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
    if hung:
        print(f"full_brick: the volume's client hung in {len(hung)} cases, which say nothing: "
              + ", ".join(hung))
    if failures:
        print(f"full_brick: FAILED (the GlusterFS client was mounted again {remounts} times)\n  "
              + "\n  ".join(failures), file=sys.stderr)
        return 1
    print(f"full_brick: ok ({close_only} cases where only the close reported the error; the "
          f"GlusterFS client was mounted again {remounts} times after it died)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
