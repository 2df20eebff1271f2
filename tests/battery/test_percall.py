"""Per-call cost of the preload (issue 14), asserted as system-call counts: a count per operation
does not move with the machine's load, unlike a time. `strace -f -c` counts every system call of
a command (start-up included) into a plain file and into a PLFS file, both under the preload;
the PLFS run may make at most a fixed factor more. The data written and read is checked against
the plain copy. Also checked here: the file position, kept in the process while nobody else
shares the descriptor, behaves as the kernel's would (dups, lseek errors, exec through the
variadic execl family, descriptors closed behind the library's back)."""

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import md5_plain

BLOCKS = 2000


def syscalls(fs, argv, extra_env=None):
    """(total, {name: count}, stdout) of the system calls of `argv` and its children, run under
    the preload (strace itself runs without it), with `extra_env` added to the environment."""
    assert shutil.which("strace"), "strace is needed (scripts/install-deps.sh installs it)"
    env = {k: v for k, v in fs.env.items() if k != "LD_PRELOAD"}
    env.update(extra_env or {})
    with tempfile.NamedTemporaryFile(prefix="strace-", dir=fs.root) as out:
        r = subprocess.run(
            ["strace", "-f", "-c", "-o", out.name, "-E", f"LD_PRELOAD={fs.env['LD_PRELOAD']}"] + [str(a) for a in argv],
            env=env, check=True, capture_output=True,
        )
        text = Path(out.name).read_text()
    total, table = None, {}
    for line in text.splitlines():
        f = line.split()
        # "% time  seconds  usecs/call  calls  [errors]  syscall"
        if len(f) >= 5 and f[0].replace(".", "").isdigit() and f[3].isdigit():
            if f[-1] == "total":
                total = int(f[3])
            else:
                table[f[-1]] = int(f[3])
    assert total, text
    return total, table, r.stdout.decode()


@pytest.mark.parametrize("method", ["preload"])
def test_dd_4k_write_within_125_percent_of_plain(fs):
    dd = ["dd", "if=/dev/zero", "bs=4k", f"count={BLOCKS}", "status=none"]
    plain, _, _ = syscalls(fs, dd + [f"of={fs.plain}/dd.bin"])
    plfs, calls, _ = syscalls(fs, dd + [f"of={fs.mount}/dd.bin"])
    print(f"dd bs=4k count={BLOCKS}: {plain} system calls into a plain file, {plfs} into PLFS")
    assert plfs <= 1.25 * plain, f"{plfs} system calls into PLFS vs {plain} into a plain file: {calls}"
    # Nothing per write but the data: no position or validation call per block.
    for name in ("lseek", "fstat", "newfstatat", "statx"):
        assert calls.get(name, 0) < BLOCKS // 10, f"{calls.get(name)} {name} calls for {BLOCKS} writes"
    assert fs.md5(fs.mount / "dd.bin") == md5_plain(fs.plain / "dd.bin")
    assert fs.backend_files("dd.bin/**/data.*"), "the writes did not reach a PLFS data log"


@pytest.mark.parametrize("method", ["preload"])
def test_cat_within_150_percent_of_plain(fs):
    # 80 MB written in 4 KiB records (20,000 index records), read back by cat.
    fs.sh(f"dd if=/dev/urandom of={fs.plain}/src.bin bs=4k count=20000 status=none")
    fs.sh(f"dd if={fs.plain}/src.bin of={fs.mount}/src.bin bs=4k status=none")
    # Into a pipe (a plain file as the output would let cat use copy_file_range from a plain
    # input, which a PLFS file refuses: read/write is what is compared).
    plain, _, want = syscalls(fs, ["sh", "-c", f"cat {fs.plain}/src.bin | md5sum"])
    plfs, calls, got = syscalls(fs, ["sh", "-c", f"cat {fs.mount}/src.bin | md5sum"])
    print(f"cat of 80 MB into md5sum: {plain} system calls from a plain file, {plfs} from PLFS")
    assert plfs <= 1.5 * plain, f"{plfs} system calls from PLFS vs {plain} from a plain file: {calls}"
    assert got == want and want.split()[0] == md5_plain(fs.plain / "src.bin")


@pytest.mark.parametrize("method", ["preload"])
def test_rm_of_a_file_costs_at_most_40_calls_more_than_plain(fs):
    # Issue 26's U9: 38 more on 2026-11-27 (46 with the library of 45cdb56, before the umask was
    # read lazily and an unlink stopped duplicating the backend root and opening the container
    # twice). The file's container: marker, meta/ (cid and a close record), a hostdir, two logs.
    for d in (fs.plain, fs.mount):
        fs.sh(f"echo hi > {d}/f")
    plain, _, _ = syscalls(fs, ["rm", fs.plain / "f"])
    plfs, calls, _ = syscalls(fs, ["rm", fs.mount / "f"])
    print(f"rm: {plain} system calls for a plain file, {plfs} for a PLFS file")
    assert plfs - plain <= 40, f"{plfs} system calls for a PLFS file vs {plain} for a plain file: {calls}"
    assert fs.sh(f"ls -A {fs.mount}") == "" and not fs.backend_files("f"), "not removed"


@pytest.mark.parametrize("method", ["preload"])
def test_touch_of_a_new_file_costs_at_most_31_calls_more_than_plain(fs):
    # Issue 26's U9 (goal +20): 35 more on 2026-11-27, 31 after the backend root's stat went (its
    # open says the same), the umask was read in one read instead of two, and the library's own
    # closes and dup3s stopped going through its `syscall` wrapper (which made the table confirm
    # every descriptor again, the new one included, by fstat); 29 once a writer was made at its
    # first write, not at the open (its id and host name). What is left: the backend root's open
    # (3), the look-up (1), the umask (3), the container's mkdir and open (4), its id and flock
    # (2), the marker (5), the placeholder (6 more than an open) and the close (5). 31 on
    # 2026-12-02: two fstats more (touch through ldplfs: fstat 3 before issue 50, 5 after), from
    # the raw-close recovery (item 10: descriptors identified by dev and inode) and the
    # discard by directory identity (item 7); not yet taken back.
    plain, _, _ = syscalls(fs, ["touch", fs.plain / "t"])
    plfs, calls, _ = syscalls(fs, ["touch", fs.mount / "t"])
    print(f"touch: {plain} system calls for a plain file, {plfs} for a PLFS file")
    assert plfs - plain <= 31, f"{plfs} system calls for a PLFS file vs {plain} for a plain file: {calls}"
    assert fs.sh(f"ls {fs.mount}") == "t\n" and fs.sh(f"wc -c < {fs.mount}/t") == "0\n"


@pytest.mark.parametrize("method", ["preload"])
def test_opening_a_file_leaves_the_other_open_descriptors_trusted(fs):
    # Each descriptor of the table is confirmed by fstat only after something may have changed
    # it behind the library's back. The library's own close and dup3 inside an open (the
    # placeholder's) once went through its `syscall` wrapper and counted as such: every open of a
    # PLFS file cost each other open PLFS descriptor an fstat at its next use.
    assert shutil.which("strace"), "strace is needed (scripts/install-deps.sh installs it)"
    env = {k: v for k, v in fs.env.items() if k != "LD_PRELOAD"}
    script = (f"exec 3>{fs.mount}/f1; echo a >&3; exec 4>{fs.mount}/f2; echo b >&3; echo c >&4; "
              f"exec 5>{fs.mount}/f3; echo d >&3; echo e >&4; exec 3>&- 4>&- 5>&-")
    with tempfile.NamedTemporaryFile(prefix="strace-", dir=fs.root) as out:
        subprocess.run(["strace", "-f", "-qq", "-o", out.name, "-E", f"LD_PRELOAD={fs.env['LD_PRELOAD']}",
                        "bash", "-c", script], env=env, check=True)
        trace = Path(out.name).read_text().splitlines()
    placeholders = sum("memfd_create(" in line for line in trace)
    # A placeholder is a sealed memfd: mode 0777, the only regular files of that mode here.
    confirmations = [line for line in trace if "fstat(" in line and "S_IFREG|0777" in line]
    assert placeholders == 3, trace
    assert len(confirmations) == placeholders, f"placeholders checked again: {confirmations}"
    assert fs.sh(f"cat {fs.mount}/f1 {fs.mount}/f2 {fs.mount}/f3") == "a\nb\nd\nc\ne\n"


@pytest.mark.parametrize("method", ["preload"])
def test_stat_of_a_closed_file_costs_at_most_14_calls_more_than_plain(fs):
    # 9 more on 2026-11-27, 12 before the size of a closed file came from listing meta/ by its
    # path: the look-up's two lstats, the listing's open, two getdents and a close. 14 since
    # 2026-12-02: the size a close dropping's name gives is held to its writer's index log (issue
    # 50, item 4: a renamed dropping made stat report 1,600,000 B for a 600,000 B file), an
    # openat, fstat, pread and close (6 calls at first: a read to the end with a second pread
    # and fstat), and that first read of a backend file asks its statfs whether its page cache
    # can be trusted (ceph-fuse, MooseFS; issue 51). The stat's answer is checked too.
    for d in (fs.plain, fs.mount):
        fs.sh(f"head -c 5000 /dev/zero > {d}/f")
    plain, _, out_plain = syscalls(fs, ["stat", "-c", "%s %F", fs.plain / "f"])
    plfs, calls, out = syscalls(fs, ["stat", "-c", "%s %F", fs.mount / "f"])
    print(f"stat: {plain} system calls for a plain file, {plfs} for a PLFS file")
    assert out == out_plain == "5000 regular file\n", (out, out_plain)
    assert plfs - plain <= 14, f"{plfs} system calls for a PLFS file vs {plain} for a plain file: {calls}"


@pytest.mark.parametrize("method", ["preload"])
def test_a_short_read_looks_for_more_only_with_an_index_loaded_before_it(fs):
    # ldplfs looks for what other processes wrote when a read comes back short, by listing the
    # container again. The first read of a file loads the index (one listing) during the call: a
    # second listing in the same call could find nothing that the first missed. So a read of a
    # 4 KiB file with a larger buffer lists once, and a later read at the end lists once more
    # (issue 22: 12 brick operations per read-open on the GlusterFS volume).
    #
    # Where a stat of the container directory can be trusted (a local file system, the default
    # here) the read at the end lists nothing: the directory kept the stamp of the first listing
    # (design.md, "Data flow of a read", step 3). With that stamp disabled, as on a FUSE or
    # network backend, it lists once, which is the unit the first read is measured in.
    fs.sh(f"head -c 4096 /dev/urandom > {fs.mount}/f")
    body = "import os, sys\nfd = os.open(sys.argv[1], os.O_RDONLY)\n{}os.close(fd)\n"
    first = "b = os.read(fd, 8192)\nassert len(b) == 4096, len(b)\n"
    again = "assert os.read(fd, 8192) == b''\n"
    for extra in ({"PLFS_CAPS_DISABLE": "local_clock"}, {}):
        listings = []
        for reads in ("", first, first + again):
            _, calls, _ = syscalls(fs, ["/usr/bin/python3", "-c", body.format(reads), fs.mount / "f"], extra)
            listings.append(calls.get("getdents64", 0))
        none, one, two = listings
        print(f"{extra}: getdents64 calls: open+close {none}, one short read {one}, then a read at the end {two}")
        assert one - none > 0, listings
        if extra:
            assert one - none == two - one, f"a short first read listed more than once: {listings}"
        else:
            assert two == one, f"a read at the end of a file that kept its stamp listed it: {listings}"


@pytest.mark.parametrize("method", ["preload"])
def test_positions_exec_chain_and_descriptors_closed_behind_our_back(fs, progs):
    (fs.plain / "ref").mkdir()
    (fs.plain / "real").mkdir()
    r = subprocess.run([progs["positions"], fs.plain / "ref", fs.plain / "real"], capture_output=True, text=True)
    assert r.stdout == "OK\n", r.stdout + r.stderr
    fs.sh(f"mkdir {fs.mount}/pos")
    r = fs.run([progs["positions"], fs.mount / "pos", fs.plain / "real"], check=False, text=True)
    assert r.returncode == 0 and r.stdout == "OK\n", r.stdout + r.stderr
    for name in ("pos.bin", "chain.bin", "raw1.bin", "raw2.bin"):
        assert fs.md5(fs.mount / "pos" / name) == md5_plain(fs.plain / "ref" / name), name
    assert fs.backend_files("pos/chain.bin/**/data.*"), "the exec chain did not write PLFS"


@pytest.mark.parametrize("method", ["preload"])
def test_shared_descriptor_position_across_processes(fs):
    # One description shared by the shell and its children (adopted after exec): every reader
    # continues where the previous one stopped, short reads at the end give the rest back.
    fs.sh(f"seq 1 20000 > {fs.plain}/in.txt; cp {fs.plain}/in.txt {fs.mount}/in.txt")
    script = "{{ read -r a; head -c 7; echo \"[$a]\"; cat; head -c 5; echo end; }} < {d}/in.txt > {o}/out.txt"
    fs.sh(script.format(d=fs.plain, o=fs.plain))
    fs.sh(script.format(d=fs.mount, o=fs.mount))
    assert fs.md5(fs.mount / "out.txt") == md5_plain(fs.plain / "out.txt")


@pytest.mark.parametrize("method", ["preload"])
def test_descriptor_table_is_grown_before_main(fs):
    # The core keeps its descriptors at 512 and up. Growing the descriptor table to hold them in
    # a process that already runs several threads (an MPI rank) waits for an RCU grace period,
    # 6 ms at the first open here; the preload grows it in its constructor instead.
    r = fs.run(["grep", "^FDSize:", "/proc/self/status"], text=True)
    size = int(r.stdout.split()[1])
    assert size > 512, f"descriptor table of {size} under the preload: not grown before main"
