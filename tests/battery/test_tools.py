"""Real coreutils, tar and bash on PLFS files; every result is checked with md5sum against the
same operation on a plain file."""

import errno
import os
import sys
from pathlib import Path

from conftest import make_data, md5_plain

SIZE = 3 * 1024 * 1024 + 12345


def src(fs, name="src.bin", size=SIZE, seed=1):
    p = fs.plain / name
    make_data(p, size, seed)
    return p


def test_cp_into_out_of_and_within(fs):
    s = src(fs)
    m = fs.mount
    fs.sh(f"cp {s} {m}/a.bin && cp {m}/a.bin {m}/b.bin && cp {m}/b.bin {fs.plain}/back.bin")
    want = md5_plain(s)
    assert fs.md5(m / "a.bin") == want
    assert fs.md5(m / "b.bin") == want
    assert md5_plain(fs.plain / "back.bin") == want
    # Overwriting an existing (longer) file truncates it.
    small = src(fs, "small.bin", 1000, seed=2)
    fs.sh(f"cp {small} {m}/a.bin")
    assert fs.md5(m / "a.bin") == md5_plain(small)
    # The data really is in the backend, as a container, not as a plain file.
    assert fs.backend_files("data.*")
    # Without the preload nothing is there (with FUSE the mount point is a real directory).
    assert fs.method == "fuse" or not fs.mount.exists()


def test_cat_grep_md5sum_sha256sum(fs):
    s = src(fs)
    fs.sh(f"cp {s} {fs.mount}/f")
    assert fs.sh(f"cat {fs.mount}/f | md5sum").split()[0] == md5_plain(s)
    fs.sh(f"cat {fs.mount}/f > {fs.plain}/catted")
    assert md5_plain(fs.plain / "catted") == md5_plain(s)
    assert fs.sh(f"grep -a -c needle {fs.mount}/f") == fs.sh(f"grep -a -c needle {s}")
    assert fs.sh(f"grep -a 'needle 7' {fs.mount}/f | md5sum") == fs.sh(f"grep -a 'needle 7' {s} | md5sum")
    assert fs.sh(f"sha256sum < {fs.mount}/f") == fs.sh(f"sha256sum < {s}")
    assert fs.sh(f"sha256sum {fs.mount}/f").split()[0] == fs.sh(f"sha256sum {s}").split()[0]


def test_dd_bs_seek_notrunc(fs):
    s = src(fs)
    for target in (fs.plain / "dd.bin", fs.mount / "dd.bin"):
        fs.sh(
            f"dd if={s} of={target} bs=64k status=none\n"
            f"dd if={s} of={target} bs=1000 seek=7 count=13 conv=notrunc status=none\n"
            f"dd if={s} of={target} bs=4096 skip=3 seek=900 count=5 conv=notrunc status=none\n"
            f"dd if=/dev/zero of={target} bs=1 seek=5000000 count=10 conv=notrunc status=none\n"
        )
    assert fs.md5(fs.mount / "dd.bin") == md5_plain(fs.plain / "dd.bin")
    out = fs.sh(f"dd if={fs.mount}/dd.bin bs=1M skip=1 status=none | md5sum")
    assert out == fs.sh(f"dd if={fs.plain}/dd.bin bs=1M skip=1 status=none | md5sum")
    # Without conv=notrunc dd truncates at the end of what it wrote.
    fs.sh(f"dd if={s} of={fs.mount}/dd.bin bs=1000 count=3 status=none")
    assert fs.sh(f"stat -c %s {fs.mount}/dd.bin").strip() == "3000"


def test_head_tail_wc_sort(fs):
    s = src(fs, size=200_000)
    fs.sh(f"cp {s} {fs.mount}/t")
    for cmd in ("head -c 1000", "head -n 5", "tail -c 777", "tail -n 3", "sort", "sort -r"):
        assert fs.sh(f"{cmd} {fs.mount}/t | md5sum") == fs.sh(f"{cmd} {s} | md5sum"), cmd
    assert fs.sh(f"wc {fs.mount}/t").split()[:3] == fs.sh(f"wc {s}").split()[:3]
    assert fs.sh(f"wc -l < {fs.mount}/t") == fs.sh(f"wc -l < {s}")
    fs.sh(f"sort {fs.mount}/t > {fs.mount}/sorted; sort {s} > {fs.plain}/sorted")
    assert fs.md5(fs.mount / "sorted") == md5_plain(fs.plain / "sorted")


def test_tar_create_and_extract(fs):
    tree = fs.plain / "tree"
    (tree / "sub" / "deeper").mkdir(parents=True)
    make_data(tree / "one.bin", 300_000, 3)
    make_data(tree / "sub" / "two.bin", 1_000_000, 4)
    make_data(tree / "sub" / "deeper" / "three.txt", 5000, 5)
    m = fs.mount
    # Archive into the mount, list it, extract it into the mount.
    fs.sh(f"cd {fs.plain} && tar cf {m}/t.tar tree && tar tf {m}/t.tar >/dev/null && mkdir -p {m}/x && tar xf {m}/t.tar -C {m}/x")
    for rel in ("one.bin", "sub/two.bin", "sub/deeper/three.txt"):
        assert fs.md5(m / "x" / "tree" / rel) == md5_plain(tree / rel), rel
    # Archive out of the mount and extract it as plain files.
    fs.sh(f"cd {m}/x && tar cf {fs.plain}/out.tar tree && mkdir -p {fs.plain}/y && tar xf {fs.plain}/out.tar -C {fs.plain}/y")
    for rel in ("one.bin", "sub/two.bin", "sub/deeper/three.txt"):
        assert md5_plain(fs.plain / "y" / "tree" / rel) == md5_plain(tree / rel), rel
    # Compressed, through a pipe.
    fs.sh(f"cd {fs.plain} && tar czf - tree | cat > {m}/t.tgz && mkdir -p {m}/z && tar xzf {m}/t.tgz -C {m}/z")
    assert fs.md5(m / "z" / "tree" / "sub" / "two.bin") == md5_plain(tree / "sub" / "two.bin")


def test_ls_sizes_and_stat(fs):
    m = fs.mount
    sizes = {"a": 0, "b": 1, "c": 4096, "d": 1_234_567}
    for name, n in sizes.items():
        make_data(fs.plain / name, n, n)
        fs.sh(f"cp {fs.plain}/{name} {m}/{name}")
    fs.sh(f"mkdir {m}/dir")
    listing = fs.sh(f"ls -l {m}")
    for line in listing.splitlines()[1:]:
        parts = line.split()
        name = parts[-1]
        if name == "dir":
            assert parts[0].startswith("d")
        else:
            assert parts[0].startswith("-"), line
            assert int(parts[4]) == sizes[name], line
    assert sorted(fs.sh(f"ls {m}").split()) == ["a", "b", "c", "d", "dir"]
    out = fs.sh(f"stat -c '%s %F %a' {m}/d {m}/dir")
    assert out.splitlines() == ["1234567 regular file 644", f"{out.splitlines()[1].split()[0]} directory 755"]
    assert fs.sh(f"stat -c %s {m}/a").strip() == "0"
    assert fs.sh(f"test -f {m}/d && test -d {m}/dir && test ! -e {m}/nope && echo yes").strip() == "yes"
    assert fs.sh(f"find {m} -type f | sort").split() == [f"{m}/{n}" for n in "abcd"]
    assert fs.sh(f"du -b {m}/d").split()[0] == "1234567"


def test_rm_rm_r_mv_mkdir_p(fs):
    m = fs.mount
    s = src(fs, size=100_000)
    fs.sh(f"mkdir -p {m}/a/b/c && cp {s} {m}/a/b/c/f && cp {s} {m}/a/g")
    assert fs.sh(f"ls {m}/a/b/c").split() == ["f"]
    fs.sh(f"mv {m}/a/g {m}/a/b/h")
    assert fs.md5(m / "a" / "b" / "h") == md5_plain(s)
    assert fs.sh(f"ls {m}/a").split() == ["b"]
    fs.sh(f"mv {m}/a/b/c {m}/a/cc")
    assert fs.md5(m / "a" / "cc" / "f") == md5_plain(s)
    fs.sh(f"rm {m}/a/b/h")
    assert fs.sh(f"ls {m}/a/b").split() == []
    fs.sh(f"rm -r {m}/a")
    assert fs.sh(f"ls -A {m}").split() == []
    assert not fs.backend_files("data.*")
    # mv across the mount boundary copies.
    fs.sh(f"cp {s} {fs.plain}/mv.bin && mv {fs.plain}/mv.bin {m}/in && mv {m}/in {fs.plain}/out")
    assert md5_plain(fs.plain / "out") == md5_plain(s)


def test_mv_n_and_renameat2_noreplace_never_replace(fs):
    """`mv -n` (coreutils 9 calls renameat2 with RENAME_NOREPLACE) and that call itself: a name
    that exists is refused with EEXIST and both files keep their bytes; a free name is taken."""
    m = fs.mount
    a, b = src(fs, "a.bin", 50_000, seed=3), src(fs, "b.bin", 20_000, seed=4)
    fs.sh(f"cp {a} {m}/a && cp {b} {m}/b && mkdir {m}/d")
    fs.sh(f"mv -n {m}/a {m}/b")
    assert fs.md5(m / "a") == md5_plain(a)
    assert fs.md5(m / "b") == md5_plain(b)
    code = (
        "import ctypes, os, sys\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "def rn(x, y):\n"
        "    r = libc.renameat2(-100, x.encode(), -100, y.encode(), 1)\n"
        "    return 0 if r == 0 else ctypes.get_errno()\n"
        "m = sys.argv[1]\n"
        "print(rn(m + '/a', m + '/b'), rn(m + '/a', m + '/d'), rn(m + '/d', m + '/b'), rn(m + '/a', m + '/c'))\n"
    )
    out = fs.run([sys.executable, "-c", code, m]).stdout.decode().split()
    assert out == [str(errno.EEXIST)] * 3 + ["0"], out
    assert fs.md5(m / "c") == md5_plain(a)
    assert fs.md5(m / "b") == md5_plain(b)
    assert fs.sh(f"ls {m}").split() == ["b", "c", "d"]


def test_bash_redirections_and_pipeline(fs):
    m = fs.mount
    script = (
        "D={d}\n"
        "echo hello > $D/r.txt\n"
        "echo world >> $D/r.txt\n"
        "printf 'x%.0s' $(seq 1 5000) >> $D/r.txt\n"
        "ls /nonexistent-ldplfs-test 2> $D/err.txt || true\n"
        "exec 3> $D/fd3.txt\n"
        "echo one >&3\n"
        "seq 1 100 >&3\n"
        "echo two >&3\n"
        "exec 3>&-\n"
        "seq 1 20000 | sort -r | grep 7 | tee $D/tee.txt | wc -l > $D/count.txt\n"
        "cat $D/r.txt | tr a-z A-Z > $D/upper.txt\n"
        "{{ echo block; cat $D/count.txt; }} > $D/group.txt\n"
    )
    fs.sh(script.format(d=fs.plain))
    fs.sh(script.format(d=m))
    for name in ("r.txt", "err.txt", "fd3.txt", "tee.txt", "count.txt", "upper.txt", "group.txt"):
        assert fs.md5(m / name) == md5_plain(fs.plain / name), name
    assert "No such file" in fs.sh(f"cat {m}/err.txt")


def test_cd_into_the_mount(fs):
    m = fs.mount
    fs.sh(f"mkdir -p {m}/w/v && echo hi > {m}/w/v/f")
    out = fs.sh(f"cd {m}/w && pwd && ls && cd v && cat f && cat ../v/./f && ls -l | wc -l && echo new > g && ls")
    assert out.split() == [f"{m}/w", "v", "hi", "hi", "2", "f", "g"]
    assert fs.sh(f"cat {m}/w/v/g").strip() == "new"


def test_more_tools(fs):
    m = fs.mount
    tree = fs.plain / "tree"
    (tree / "x" / "y").mkdir(parents=True)
    for i, rel in enumerate(("a.txt", "x/b.bin", "x/y/c.bin")):
        make_data(tree / rel, 10_000 * (i + 1), i + 10)
    # cp -r / cp -a into the mount, diff -r and find against the plain tree.
    fs.sh(f"cp -r {tree} {m}/r && cp -a {tree} {m}/a && diff -r {tree} {m}/r && diff -r {tree} {m}/a")
    assert fs.sh(f"cd {m}/a && find . | sort") == fs.sh(f"cd {tree} && find . | sort")
    # touch creates and sets times; ln -s and reading through the link; readlink.
    fs.sh(f"touch {m}/t && touch -d 2020-01-02 {m}/t && ln -s a/a.txt {m}/link")
    assert fs.sh(f"stat -c %s {m}/t; date -r {m}/t +%Y-%m-%d").split() == ["0", "2020-01-02"]
    assert fs.sh(f"readlink {m}/link").strip() == "a/a.txt"
    assert fs.sh(f"cat {m}/link | md5sum").split()[0] == md5_plain(tree / "a.txt")
    assert fs.sh(f"ls -l {m}/link").startswith("l")
    # sed -i makes a temporary file next to the target (mkstemp) and renames it over.
    fs.sh(f"printf 'hello world\\n' > {m}/s.txt && sed -i 's/world/there/' {m}/s.txt")
    assert fs.sh(f"cat {m}/s.txt") == "hello there\n"
    # truncate, split, cat of the parts, cmp.
    fs.sh(f"cp {tree}/x/y/c.bin {m}/c && truncate -s 25000 {m}/c && split -b 7000 {m}/c {m}/part. && cat {m}/part.* | cmp - {m}/c")
    assert fs.sh(f"head -c 25000 {tree}/x/y/c.bin | md5sum").split()[0] == fs.md5(m / "c")
    # Python's tempfile and os.walk.
    out = fs.sh(
        "python3 -c 'import tempfile,os,sys\n"
        f"f=tempfile.NamedTemporaryFile(dir=\"{m}\", delete=False); f.write(b\"abc\"); f.close()\n"
        f"d=tempfile.mkdtemp(dir=\"{m}\")\n"
        "print(os.path.getsize(f.name), os.path.isdir(d))\n"
        f"print(sum(len(fs) for _, _, fs in os.walk(\"{m}/a\")))'"
    )
    assert out.split() == ["3", "True", "3"]
    assert fs.method == "fuse" or not fs.mount.exists()


def test_relative_paths_and_dotdot(fs):
    s = src(fs, size=50_000)
    name = fs.mount.name
    # From the mount's parent, from elsewhere through .., and out of the mount through ..
    fs.sh(f"cd {fs.root} && cp plain/src.bin {name}/rel.bin && mkdir {name}/d && cp {name}/rel.bin {name}/d/../d/./x.bin")
    assert fs.sh(f"cd {fs.plain} && md5sum ../{name}/rel.bin ../{name}/d/x.bin").split()[::2] == [md5_plain(s)] * 2
    assert fs.sh(f"cd {fs.mount}/d && md5sum ../../plain/src.bin x.bin ../rel.bin").split()[::2] == [md5_plain(s)] * 3
    assert sorted(fs.sh(f"cd {fs.mount}/d && ls .. && ls ../../plain").split()) == sorted(["d", "rel.bin", "src.bin"])


def test_cp_p_and_tar_keep_timestamps(fs):
    """Times set while a file is open for writing survive its close (issue 25, item 4): cp -p
    and tar x set them before closing, and the close stamped the time of the last write."""
    src = fs.plain / "old"
    src.write_bytes(b"x" * 100000)
    os.utime(src, (1577923200, 1577923200))
    fs.sh(f"cp -p '{src}' '{fs.mount}/cp_p'")
    fs.sh(f"cd '{fs.plain}' && tar cf t.tar old && mkdir -p '{fs.mount}/t' && tar xf t.tar -C '{fs.mount}/t'")
    for f in ["cp_p", "t/old"]:
        assert fs.sh(f"stat -c %Y '{fs.mount}/{f}'").strip() == "1577923200", f
