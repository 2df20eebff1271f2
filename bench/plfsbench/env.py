"""The machine, the temporary work area and the front ends (ldplfs, FUSE, C API).

Every front end is smoke-tested before use: a file written through it must come back intact
and must have become a plfs container in the backend. A front end that fails this is reported
as "not available" with the reason; no number is ever produced for it."""

import os
import platform
import shutil
import subprocess
import tempfile
import time

from .util import run


def _read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def _mount_of(path):
    """(fstype, source, mount point) of the file system holding path, from mountinfo."""
    best = ("?", "?", "/")
    real = os.path.realpath(path)
    for line in _read("/proc/self/mountinfo").splitlines():
        left, _, right = line.partition(" - ")
        parts, rparts = left.split(), right.split()
        if len(parts) < 5 or len(rparts) < 2:
            continue
        mnt = parts[4].replace("\\040", " ")
        if (real == mnt or real.startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(best[2]):
            best = (rparts[0], rparts[1], mnt)
    return best


def is_mounted(path):
    real = os.path.realpath(path)
    for line in _read("/proc/self/mountinfo").splitlines():
        parts = line.split()
        if len(parts) > 4 and parts[4] == real:
            return True
    return False


def machine_info(tmpdir, root_dir):
    """Facts recorded beside every result."""
    cpu = "?"
    for line in _read("/proc/cpuinfo").splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem_kib = 0
    for line in _read("/proc/meminfo").splitlines():
        if line.startswith("MemTotal:"):
            mem_kib = int(line.split()[1])
    fstype, source, mnt = _mount_of(tmpdir)
    st = os.statvfs(tmpdir)
    mpi = run(["mpichversion"], timeout=10)
    facts = {}
    for line in mpi.out.splitlines() if mpi.ok else []:
        key, _, val = line.partition(":")
        facts[key.strip()] = val.strip()
    mpi_ver = f"MPICH {facts.get('MPICH Version', '?')} ({facts.get('MPICH Device', '?')})"
    git = run(["git", "-C", root_dir, "describe", "--always", "--dirty"], timeout=10)
    return {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "nproc": str(os.cpu_count()),
        "cpu": cpu,
        "memory": f"{mem_kib / (1 << 20):.1f} GiB",
        "kernel": platform.release(),
        "os": _os_name(),
        "tmpdir": tmpdir,
        "filesystem": f"{fstype} on {source} (mounted at {mnt})",
        "free_space": f"{st.f_bavail * st.f_frsize / (1 << 30):.0f} GiB",
        "loadavg_start": " ".join(_read("/proc/loadavg").split()[:3]),
        "mpi": mpi_ver,
        "git": git.out.strip() if git.ok else "?",
    }


def _os_name():
    for line in _read("/etc/os-release").splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip('"')
    return platform.system()


def plfsrc_text(mount, backend, workload=None):
    lines = ["# written by bench/run.py", "- global_params:", "    num_hostdirs: 32",
             f"- mount_point: {mount}"]
    if workload:
        lines.append(f"  workload: {workload}")
    lines += ["  backends:", f"    - location: {backend}", ""]
    return "\n".join(lines)


class Frontend:
    """One way into plfs. `available` is True only after a passing smoke test."""

    def __init__(self, name, label):
        self.name = name
        self.label = label
        self.available = False
        self.reason = "not tried"
        self.env = dict(os.environ)
        self.mpi_env = {}      # passed to the ranks with mpirun -genv
        self.dir = None        # where its files go
        self.store = None      # its backend directory
        self.daemon_pid = None # a daemon doing its work (FUSE), whose CPU time counts too

    def note(self):
        return "available" if self.available else f"not available: {self.reason}"


class Workspace:
    """A temporary directory holding the plain-file area, the backends and the mount points,
    all on one file system so that comparisons are fair."""

    def __init__(self, base, release, bindir):
        os.makedirs(base, exist_ok=True)
        self.root = tempfile.mkdtemp(prefix="plfs-bench-", dir=base)
        self.release = release
        self.bindir = bindir
        self.plain = self._mk("plain")
        self.plfs_mnt = os.path.join(self.root, "plfs")      # ldplfs and the C API
        self.store = self._mk("store")
        self.fuse_mnt = self._mk("fuse")
        self.fuse_store = self._mk("store-fuse")
        self.nn_mnt = os.path.join(self.root, "plfs-nn")
        self.nn_store = self._mk("store-nn")
        self.small_mnt = os.path.join(self.root, "plfs-small")
        self.small_store = self._mk("store-small")
        self.plfsrc = self._write("plfsrc", plfsrc_text(self.plfs_mnt, self.store))
        self.plfsrc_fuse = self._write("plfsrc-fuse", plfsrc_text(self.fuse_mnt, self.fuse_store))
        self.plfsrc_nn = self._write("plfsrc-nn", plfsrc_text(self.nn_mnt, self.nn_store, "file_per_proc"))
        self.plfsrc_small = self._write("plfsrc-small",
                                        plfsrc_text(self.small_mnt, self.small_store, "small_file"))
        self.fuse_proc = None

    def _mk(self, name):
        p = os.path.join(self.root, name)
        os.makedirs(p, exist_ok=True)
        return p

    def _write(self, name, text):
        p = os.path.join(self.root, name)
        with open(p, "w") as f:
            f.write(text)
        return p

    # ---- front ends -------------------------------------------------------------------------

    def ldplfs(self, nn_mode=False):
        """ldplfs on the shared_file (N-1) mount, or with nn_mode on the file_per_proc mount."""
        if nn_mode:
            fe = Frontend("ldplfs_nn", "ldplfs, file_per_proc mode")
            mnt, store, rc = self.nn_mnt, self.nn_store, self.plfsrc_nn
        else:
            fe = Frontend("ldplfs", "ldplfs (LD_PRELOAD)")
            mnt, store, rc = self.plfs_mnt, self.store, self.plfsrc
        lib = os.path.join(self.release, "libldplfs.so")
        fe.dir, fe.store = os.path.join(mnt, "ld"), store
        if not os.path.exists(lib):
            fe.reason = f"{lib} not built"
            return fe
        fe.env.update(LD_PRELOAD=lib, PLFSRC=rc)
        fe.mpi_env = {"LD_PRELOAD": lib, "PLFSRC": rc}
        smoke = os.path.join(fe.dir, "smoke")
        r = run(["sh", "-c", f'mkdir -p "{fe.dir}" && printf plfs-smoke > "{smoke}" && cat "{smoke}"'],
                env=fe.env, timeout=60)
        stored = os.path.join(store, "ld", "smoke")
        # N-1 mode makes a container (a directory); N-N mode a plain file in the backend.
        landed = os.path.isfile(stored) if nn_mode else os.path.isdir(stored)
        if not r.ok or r.out != "plfs-smoke":
            fe.reason = f"smoke test failed ({r.why() if not r.ok else 'read back ' + repr(r.out[:40])})"
        elif not landed or os.path.exists(smoke):
            fe.reason = "smoke test did not land in the backend (not interposed?)"
        else:
            fe.available = True
        run(["rm", "-f", smoke], env=fe.env, timeout=60)
        return fe

    def capi(self):
        fe = Frontend("api", "C API (libplfs)")
        fe.dir, fe.store = os.path.join(self.plfs_mnt, "api"), self.store
        binary = os.path.join(self.bindir, "pio-plfs")
        metab = os.path.join(self.bindir, "metabench")
        if not os.path.exists(binary):
            fe.reason = f"{binary} not built (needs {self.release}/libplfs.so and include/plfs.h)"
            return fe
        fe.env.update(PLFSRC=self.plfsrc)
        fe.mpi_env = {"PLFSRC": self.plfsrc}
        # A logical directory is a plain directory on every backend (docs/design.md).
        os.makedirs(os.path.join(fe.store, os.path.basename(fe.dir)), exist_ok=True)
        r = run(["mpirun", "-np", "1", "-genv", "PLFSRC", self.plfsrc, binary, "-p",
                 os.path.join(self.plfs_mnt, "api-smoke"), "-m", "plfs", "-b", "4096", "-n", "4", "-q"],
                env=fe.env, timeout=120)
        if not r.ok:
            fe.reason = f"smoke test failed ({r.why()})"
        elif not self._is_container(self.store, "api-smoke"):
            fe.reason = "smoke test wrote no plfs container in the backend"
        else:
            fe.available = True
            fe.metabench = metab if os.path.exists(metab) else None
        shutil.rmtree(os.path.join(self.store, "api-smoke"), ignore_errors=True)
        return fe

    def fuse(self):
        fe = Frontend("fuse", "FUSE mount")
        fe.dir, fe.store = os.path.join(self.fuse_mnt, "f"), self.fuse_store
        cmd = self._fuse_command()
        if isinstance(cmd, str):
            fe.reason = cmd
            return fe
        env = dict(os.environ, PLFSRC=self.plfsrc_fuse)
        log = open(os.path.join(self.root, "fuse.log"), "w")
        self.fuse_proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                          start_new_session=True)
        deadline = time.time() + 20
        while time.time() < deadline and not is_mounted(self.fuse_mnt):
            if self.fuse_proc.poll() not in (None, 0):
                break
            time.sleep(0.1)
        if not is_mounted(self.fuse_mnt):
            log.close()
            tail = _read(os.path.join(self.root, "fuse.log")).strip().splitlines()[-1:] or [""]
            fe.reason = f"`{' '.join(cmd[:2])} ...` did not mount ({tail[0][:160]})"
            self.unmount_fuse()
            return fe
        smoke = os.path.join(fe.dir, "smoke")
        r = run(["sh", "-c", f'mkdir -p "{fe.dir}" && printf plfs-smoke > "{smoke}" && cat "{smoke}"'],
                timeout=60)
        if not r.ok or r.out != "plfs-smoke":
            fe.reason = f"smoke test failed ({r.why() if not r.ok else 'read back ' + repr(r.out[:40])})"
        elif not self._is_container(self.fuse_store, "f/smoke"):
            fe.reason = "smoke test wrote no plfs container in the backend"
        else:
            fe.available = True
            fe.daemon_pid = self.fuse_proc.pid  # `--foreground`: the daemon itself
        run(["rm", "-f", smoke], timeout=60)
        return fe

    def _fuse_command(self):
        """The command that mounts plfs with FUSE, or a string saying why there is none."""
        if not os.path.exists("/dev/fuse"):
            return "/dev/fuse is missing"
        if not shutil.which("fusermount3") and not shutil.which("fusermount"):
            return "fusermount3 not installed (apt-get install fuse3)"
        cli = os.path.join(self.release, "plfs")
        if os.path.exists(cli) and run([cli, "mount", "--help"], timeout=20).ok:
            return [cli, "mount", self.fuse_mnt, "--config", self.plfsrc_fuse, "--foreground"]
        daemon = os.path.join(self.release, "plfs-fuse")
        if os.path.exists(daemon):
            return [daemon, self.fuse_mnt, "--config", self.plfsrc_fuse, "--foreground"]
        return "no FUSE daemon built (`plfs mount` not wired, no plfs-fuse binary)"

    def unmount_fuse(self):
        if is_mounted(self.fuse_mnt):
            for tool in ("fusermount3", "fusermount"):
                if shutil.which(tool) and run([tool, "-u", self.fuse_mnt], timeout=30).ok:
                    break
            else:
                run(["umount", "-l", self.fuse_mnt], timeout=30)
        if self.fuse_proc is not None:
            try:
                self.fuse_proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.fuse_proc.pid, 9)
                self.fuse_proc.wait()
            self.fuse_proc = None

    @staticmethod
    def _is_container(store, rel):
        """True when store/rel is a directory (a plfs container), not a plain file."""
        return os.path.isdir(os.path.join(store, rel))

    def cleanup(self):
        self.unmount_fuse()
        shutil.rmtree(self.root, ignore_errors=True)
