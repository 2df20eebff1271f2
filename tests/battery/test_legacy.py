"""Containers written by the original PLFS 2.5.1 (tests/fixtures/plfs-2.5.1-containers.tar.gz,
extracted into the backend at test time), read by real tools through each front end: md5sum,
cmp, dd and cp give exactly each `.expected`; ls/stat/find see regular files with their sizes;
a write is refused with EROFS and changes nothing."""

import subprocess
from pathlib import Path

from conftest import ROOT, md5_plain, plfs_cli

NAMES = ["empty", "n1_flat", "n1_holes", "n1_strided"]


def extract(fs):
    """Unpacks the fixtures: the containers into the backend; returns the `.expected` directory."""
    x = fs.root / "legacy"
    x.mkdir()
    tarball = ROOT / "tests" / "fixtures" / "plfs-2.5.1-containers.tar.gz"
    subprocess.run(["tar", "xzf", str(tarball), "-C", str(x)], check=True)
    for e in sorted((x / "store").iterdir()):
        e.rename(fs.backend / e.name)
    return x


def test_legacy_fixtures_read_byte_exact_by_real_tools(fs):
    x = extract(fs)
    m = fs.mount
    assert fs.sh(f"ls {m}").split() == NAMES
    assert fs.sh(f"cd {m} && find . -type f | sort").split() == [f"./{n}" for n in NAMES]
    for name in NAMES:
        exp = x / f"{name}.expected"
        size = exp.stat().st_size
        assert fs.md5(m / name) == md5_plain(exp), name
        fs.sh(f"cmp {m}/{name} {exp}")
        kind = "regular empty file" if size == 0 else "regular file"
        assert fs.sh(f"stat -c '%F|%s|%a' {m}/{name}").strip() == f"{kind}|{size}|600", name
        # Odd block sizes and offsets (dd reads with read(2) at whatever it asks for).
        got = fs.sh(f"dd if={m}/{name} bs=4097 skip=3 status=none | md5sum").split()[0]
        want = fs.sh(f"dd if={exp} bs=4097 skip=3 status=none | md5sum").split()[0]
        assert got == want, name
        fs.sh(f"cp {m}/{name} {fs.plain}/{name}")
        assert md5_plain(fs.plain / name) == md5_plain(exp), name
    # Holes read as zeros: n1_holes has none of its bytes in [24588, 100000).
    assert fs.sh(f"dd if={m}/n1_holes bs=1000 skip=30 count=60 status=none | tr -d '\\000' | wc -c").strip() == "0"


def test_legacy_writes_refused(fs):
    x = extract(fs)
    m = fs.mount
    for script in (
        f"echo more >> {m}/n1_flat",
        f"echo new > {m}/n1_flat",
        f"truncate -s 10 {m}/n1_flat",
        f"dd if=/dev/zero of={m}/n1_flat bs=1 count=1 conv=notrunc status=none",
    ):
        p = subprocess.run(["bash", "-c", script], env=fs.env, capture_output=True)
        assert p.returncode != 0, script
        assert b"Read-only file system" in p.stderr, (script, p.stderr)
    py = f"import errno\ntry:\n open('{m}/n1_flat', 'r+b')\nexcept OSError as e:\n print(errno.errorcode[e.errno])\n"
    assert fs.sh(f"python3 -c \"{py}\"").strip() == "EROFS"
    assert fs.md5(m / "n1_flat") == md5_plain(x / "n1_flat.expected")
    assert fs.sh(f"stat -c %s {m}/n1_flat").strip() == str((x / "n1_flat.expected").stat().st_size)


def test_legacy_upgrade_then_write_through_the_front_end(fs):
    """`plfs upgrade` converts the fixtures in place while the front end is up; then the same
    tools append to and overwrite them, and the bytes are those of a plain copy treated alike."""
    x = extract(fs)
    m = fs.mount
    env = {k: v for k, v in fs.env.items() if k != "LD_PRELOAD"}
    p = subprocess.run([str(plfs_cli()), "upgrade", str(m)], env=env, capture_output=True)
    assert p.returncode == 0, p.stderr
    assert p.stdout.decode().count("upgraded to format v3") == 4, p.stdout
    for name in NAMES:
        ref = fs.plain / name
        ref.write_bytes((x / f"{name}.expected").read_bytes())
        assert fs.md5(m / name) == md5_plain(ref), name
        fs.sh(f"echo appended >> {m}/{name}")
        fs.sh(f"printf XYZ | dd of={m}/{name} bs=1 seek=2 conv=notrunc status=none")
        subprocess.run(["bash", "-c", f"echo appended >> {ref}; printf XYZ | dd of={ref} bs=1 seek=2 conv=notrunc status=none"], check=True)
        assert fs.md5(m / name) == md5_plain(ref), name
    assert not [e.name for e in fs.backend.iterdir() if e.name.startswith(".plfstmp")]
