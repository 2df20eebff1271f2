"""The "fuse" access method of the battery: a real FUSE mount of the test's plfsrc, served by the
plfs-fuse daemon in the foreground, unmounted (waiting for the daemon to close every file) at
teardown, even when the test failed, so no stale mount is left behind."""

import contextlib
import os
import subprocess
import time
from pathlib import Path


def fuse_bin(root, target_dir):
    """Path of the plfs-fuse binary ($PLFS_FUSE_BIN, else the release build, built if missing)."""
    exe = os.environ.get("PLFS_FUSE_BIN")
    if exe:
        return Path(exe)
    exe = Path(target_dir) / "release" / "plfs-fuse"
    if not exe.exists():
        subprocess.run(["cargo", "build", "--release", "-p", "plfs-fuse"], cwd=root, check=True)
    return exe


def fuse_available():
    """Why FUSE cannot run here, or None."""
    if os.geteuid() != 0:
        return "FUSE battery runs as root"
    if not Path("/dev/fuse").exists():
        return "/dev/fuse missing"
    return None


def is_mounted(path):
    """True if a FUSE file system is mounted at `path` (per /proc/self/mountinfo)."""
    want = str(path).replace("\\", "\\134").replace(" ", "\\040").replace("\t", "\\011").replace("\n", "\\012")
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split(" ")
            if len(fields) > 4 and fields[4] == want:
                rest = line.split(" - ", 1)
                if len(rest) == 2 and rest[1].startswith("fuse"):
                    return True
    return False


@contextlib.contextmanager
def fuse_mount(exe, mnt, plfsrc, env, timeout=20):
    """Mounts PLFS at `mnt` for the duration of the block."""
    mnt = Path(mnt)
    mnt.mkdir(exist_ok=True)
    log_path = mnt.parent / "plfs-fuse.log"
    env = {k: v for k, v in env.items() if k != "LD_PRELOAD"}
    with open(log_path, "wb") as log:
        daemon = subprocess.Popen(
            [str(exe), str(mnt), "--config", str(plfsrc), "--foreground"],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
        )
    try:
        deadline = time.monotonic() + timeout
        while not is_mounted(mnt):
            if daemon.poll() is not None:
                raise RuntimeError(f"plfs-fuse exited ({daemon.returncode}) before mounting:\n{log_path.read_text()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"plfs-fuse did not mount {mnt} within {timeout} s")
            time.sleep(0.01)
        yield mnt
    finally:
        if is_mounted(mnt):
            r = subprocess.run([str(exe), "-u", str(mnt)], capture_output=True)
            if r.returncode != 0:
                subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
        try:
            daemon.wait(timeout=60)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()
