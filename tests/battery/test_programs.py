"""Python, C programs (fork, locks, threads) and MPI-IO through the preload."""

import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from conftest import ROOT, make_data, md5_plain


def test_python_file_api(fs):
    make_data(fs.plain / "src.bin", 2_000_000, 9)
    prog = textwrap.dedent(
        """
        import os, shutil, subprocess, sys
        base = sys.argv[1]
        os.makedirs(base + "/py/sub", exist_ok=True)
        with open(base + "/py/f.bin", "wb") as f:
            f.write(b"A" * 1000)
            f.seek(5000)
            f.write(b"B" * 10)
        with open(base + "/py/f.bin", "r+b") as f:
            f.seek(100); f.write(b"xyz")
            f.seek(0); data = f.read()
            f.seek(-5, os.SEEK_END); tail = f.read()
        print(len(data), data[98:105], tail, os.stat(base + "/py/f.bin").st_size)
        print(sorted(os.listdir(base + "/py")))
        print(sorted((e.name, e.is_dir()) for e in os.scandir(base + "/py")))
        shutil.copy(sys.argv[2], base + "/py/copy.bin")
        shutil.copy(base + "/py/copy.bin", base + "/py/copy2.bin")
        with open(base + "/py/sub.txt", "w") as f:
            f.write("parent\\n"); f.flush()
            subprocess.run(["echo", "from child"], stdout=f, check=True)
        with open(base + "/py/sub.txt", "a") as f:
            subprocess.run(["sh", "-c", "echo from shell"], stdout=f, check=True)
        print(open(base + "/py/sub.txt").read().split("\\n"))
        fd = os.open(base + "/py/os.bin", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        os.pwrite(fd, b"hello", 10); os.write(fd, b"ab"); os.lseek(fd, 0, os.SEEK_SET)
        print(os.read(fd, 100), os.fstat(fd).st_size, oct(os.fstat(fd).st_mode & 0o777))
        os.ftruncate(fd, 3); print(os.fstat(fd).st_size); os.close(fd)
        os.rename(base + "/py/os.bin", base + "/py/sub/moved.bin")
        print(os.path.exists(base + "/py/os.bin"), os.path.getsize(base + "/py/sub/moved.bin"))
        os.remove(base + "/py/sub/moved.bin"); os.rmdir(base + "/py/sub")
        """
    )
    (fs.plain / "p.py").write_text(prog)
    for base in (fs.plain / "ref", fs.mount):
        out = fs.sh(f"python3 {fs.plain}/p.py {base} {fs.plain}/src.bin").replace(str(base), "BASE")
        if base == fs.mount:
            assert out == ref_out
        else:
            ref_out = out
    assert "from child" in ref_out and "from shell" in ref_out
    for name in ("f.bin", "copy.bin", "copy2.bin", "sub.txt"):
        assert fs.md5(fs.mount / "py" / name) == md5_plain(fs.plain / "ref" / "py" / name), name


@pytest.mark.parametrize("how", ["exit", "_exit"])
def test_fork_both_processes_write(fs, progs, how):
    plain = fs.plain / "fork.bin"
    assert subprocess.run([progs["forkwrite"], plain, how], capture_output=True, text=True).stdout == "OK\n"
    out = fs.run([progs["forkwrite"], fs.mount / "fork.bin", how], text=True)
    assert out.stdout == "OK\n", out.stderr
    assert fs.md5(fs.mount / "fork.bin") == md5_plain(plain)
    # Parent and child were distinct writers, each with its own data log.
    assert len(fs.backend_files("data.*")) >= 2


def test_fcntl_locks_across_processes(fs, progs):
    out = fs.run([progs["locktest"], fs.mount / "locked"], text=True, check=False)
    assert out.returncode == 0 and out.stdout == "OK\n", out.stderr


def test_threads(fs, progs):
    plain = fs.plain / "threads.bin"
    assert subprocess.run([progs["threads"], plain], capture_output=True, text=True).stdout == "OK\n"
    out = fs.run([progs["threads"], fs.mount / "threads.bin"], text=True, check=False)
    assert out.returncode == 0 and out.stdout == "OK\n", out.stderr
    assert fs.md5(fs.mount / "threads.bin") == md5_plain(plain)


@pytest.fixture(scope="session")
def mpi_prog(tmp_path_factory):
    if not shutil.which("mpicc") or not shutil.which("mpirun"):
        pytest.skip("MPICH not installed (apt-get install mpich libmpich-dev)")
    exe = tmp_path_factory.mktemp("mpi") / "mpi_strided"
    subprocess.run(["mpicc", "-O2", "-o", str(exe), str(ROOT / "tests" / "mpi" / "mpi_strided.c")], check=True)
    return exe


BLOCKS, BS = 53, 4099


@pytest.mark.parametrize("np", [2, 4])
@pytest.mark.parametrize("mode", ["indep", "coll", "nonblock", "view", "viewcoll"])
def test_mpi_io_n_to_1_strided(fs, mpi_prog, mode, np):
    plain = fs.plain / "mpi.dat"
    r = subprocess.run(["mpirun", "-np", str(np), mpi_prog, plain, mode, str(BLOCKS), str(BS)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.startswith("OK"), r.stderr
    target = fs.mount / f"mpi_{mode}_{np}.dat"
    # mpirun itself runs under the preload; the environment (LD_PRELOAD, PLFSRC) reaches every rank.
    r = fs.run(["mpirun", "-np", str(np), mpi_prog, target, mode, str(BLOCKS), str(BS)], check=False, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.startswith("OK"), r.stdout + r.stderr
    # Every rank wrote its own data log. (view: ROMIO's data sieving read-modify-writes under
    # fcntl locks, so each rank must see the other's data inside the locked range.)
    # viewcoll: two-phase I/O on one node funnels the data through one aggregator rank.
    assert len(fs.backend_files(f"mpi_{mode}_{np}.dat/**/data.*")) >= (1 if mode == "viewcoll" else 2)
    # Read back through the preload by other processes: md5sum and a verifying MPI run with
    # a different number of ranks.
    assert fs.md5(target) == md5_plain(plain)
    other = 6 - np
    r = fs.run(["mpirun", "-np", str(other), mpi_prog, target, "check", str(BLOCKS), str(BS)], check=False, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.startswith("OK"), r.stdout + r.stderr


def test_stdio_streams(fs, progs):
    assert subprocess.run([progs["stdio"], fs.plain], capture_output=True, text=True).stderr == "OK\n"
    fs.sh(f"mkdir {fs.mount}/s")
    r = fs.run([progs["stdio"], fs.mount / "s"], check=False, text=True)
    assert r.returncode == 0 and r.stderr == "OK\n", r.stderr
    for name in ("stdio_a.txt", "stdio_b.txt"):
        assert fs.md5(fs.mount / "s" / name) == md5_plain(fs.plain / name)


def test_posix_spawn_and_vfork_children_inherit(fs):
    prog = textwrap.dedent(
        """
        import os, subprocess, sys
        base = sys.argv[1]
        fd = os.open(base + "/spawn.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(fd, b"parent\\n")
        pid = os.posix_spawn("/bin/sh", ["sh", "-c", "echo spawned; seq 1 3"], os.environ,
                             file_actions=[(os.POSIX_SPAWN_DUP2, fd, 1)])
        os.waitpid(pid, 0)
        # subprocess uses vfork here; the child inherits the placeholder as its stdout.
        subprocess.run(["sh", "-c", "echo vforked"], stdout=fd, check=True)
        os.write(fd, b"end\\n")
        os.close(fd)
        print(open(base + "/spawn.txt").read(), end="")
        """
    )
    (fs.plain / "spawn.py").write_text(prog)
    want = "parent\nspawned\n1\n2\n3\nvforked\nend\n"
    assert fs.sh(f"python3 {fs.plain}/spawn.py {fs.plain}") == want
    assert fs.sh(f"python3 {fs.plain}/spawn.py {fs.mount}") == want
    assert fs.md5(fs.mount / "spawn.txt") == md5_plain(fs.plain / "spawn.txt")


def test_uninterposed_calls_fail_loudly(fs, progs):
    # A raw system call (as a static or Go binary makes) on a placeholder must not touch any
    # file silently: reads fail with EBADF, writes with EPERM.
    if "LD_PRELOAD" not in fs.env:
        pytest.skip("about the preload's placeholders (a FUSE mount serves raw system calls)")
    fs.sh(f"echo data > {fs.mount}/in")
    out = fs.sh(f"{progs['rawcall']} < {fs.mount}/in > {fs.mount}/out 2> {fs.plain}/err; cat {fs.plain}/err")
    assert out == "read EBADF write EPERM\n"
    assert fs.sh(f"stat -c %s {fs.mount}/out").strip() == "0"


def test_fsync_of_a_directory_reaches_the_backends(fs):
    # fsync(2) of a directory makes its entries durable; through ldplfs and FUSE it used to
    # return 0 without syncing anything (found 2026-11-27). Both front ends sync every backend
    # copy of the directory; under the preload, a failing backend fsync is the program's error,
    # which shows the call got there.
    prog = textwrap.dedent(
        """
        import errno, os, sys
        d = sys.argv[1] + "/synced"
        os.makedirs(d, exist_ok=True)
        with open(d + "/f", "wb") as f:
            f.write(b"kept")
        for path in (d, sys.argv[1]):
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(fd)
                print("synced")
            except OSError as e:
                print(errno.errorcode[e.errno])
            finally:
                os.close(fd)
        """
    )
    (fs.plain / "s.py").write_text(prog)
    assert fs.sh(f"python3 {fs.plain}/s.py {fs.mount}").split() == ["synced", "synced"]
    assert fs.sh(f"cat {fs.mount}/synced/f") == "kept"
    if fs.method == "preload":
        out = fs.sh(f"PLFS_FAILPOINTS='sys::fsync=EIO' python3 {fs.plain}/s.py {fs.mount}")
        assert out.split() == ["EIO", "EIO"], out


def test_reads_racing_dup2_and_fork_on_the_same_descriptors(fs, progs):
    # ldplfs looks descriptors up without its table's lock (fd/direct.rs): a read or fstat racing
    # a dup2 onto its descriptor, in threads and across forks, sees one file or the other, never
    # freed memory, a crash or the placeholder behind the number (which the library of e624068
    # showed to about a third of the fstats: a dup2 dropped the old registration before making
    # the new one).
    out = fs.run([progs["fdrace"], fs.mount, "3"], text=True, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    counts = dict(kv.split("=") for kv in out.stdout.split())
    assert int(counts["bad"]) == 0 and int(counts["ok"]) > 100, out.stdout
