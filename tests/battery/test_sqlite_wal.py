"""SQLite in WAL mode and shared mappings of small files (issue 17, item 8).

SQLite's WAL index (`-shm`) is shared memory that every connection maps MAP_SHARED. Through the
preload such a mapping is served from a per-node copy of the file in /dev/shm (crates/ldplfs
README, "Shared mappings"), so two writer processes, one the sqlite3 CLI and one Python's
sqlite3, commit 1000 transactions each concurrently, and the database ends up identical (by
`.dump`) to the same run on a plain directory."""

import os
import subprocess
import textwrap
from pathlib import Path

import pytest

N = 1000
SCHEMA = "PRAGMA journal_mode=WAL; CREATE TABLE t(id INTEGER PRIMARY KEY, w, i, s); CREATE TABLE c(n); INSERT INTO c VALUES (0);"

PY_WRITER = textwrap.dedent(
    """
    import sqlite3, sys
    db, wid, n, sync = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    c = sqlite3.connect(db, timeout=300, isolation_level=None)
    c.execute("PRAGMA synchronous=" + sync)
    for i in range(n):
        c.execute("BEGIN IMMEDIATE")
        c.execute("INSERT INTO t VALUES (?, ?, ?, ?)", (wid * 100000 + i, wid, i, f"w{wid}-{i}-" + "x" * (i % 97)))
        c.execute("UPDATE c SET n = n + 1")
        c.execute("COMMIT")
    assert c.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    c.close()
    print("committed", n)
    """
)


def _cli_script(wid, n, sync):
    lines = [".timeout 300000", f"PRAGMA synchronous={sync};"]
    for i in range(n):
        s = f"w{wid}-{i}-" + "x" * (i % 97)
        lines.append(
            f"BEGIN IMMEDIATE; INSERT INTO t VALUES ({wid * 100000 + i}, {wid}, {i}, '{s}'); "
            "UPDATE c SET n = n + 1; COMMIT;"
        )
    return "\n".join(lines) + "\n"


def _shm_copies():
    d = Path(f"/dev/shm/ldplfs-{os.geteuid()}")
    return sorted(p.name for p in d.glob("*.map")) if d.is_dir() else []


def _two_writers(fs, dirpath, env, sync):
    """Creates a WAL database in `dirpath` and runs the two writers at once; returns its dump."""
    db = f"{dirpath}/db.sqlite"
    writer = fs.plain / "writer.py"
    writer.write_text(PY_WRITER)
    run = lambda argv, **kw: subprocess.run([str(a) for a in argv], env=env, capture_output=True, text=True, **kw)
    r = run(["sqlite3", db, SCHEMA])
    assert r.returncode == 0 and r.stdout == "wal\n", r.stdout + r.stderr
    py = subprocess.Popen(["python3", str(writer), db, "1", str(N), sync], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    cli = subprocess.Popen(["sqlite3", "-bail", db], env=env, stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    cli_out, cli_err = cli.communicate(_cli_script(2, N, sync), timeout=900)
    py_out, py_err = py.communicate(timeout=900)
    assert py.returncode == 0 and py_out == f"committed {N}\n", py_err
    assert cli.returncode == 0, cli_out + cli_err
    r = run(["sqlite3", db, "SELECT count(*), (SELECT n FROM c) FROM t; PRAGMA integrity_check; PRAGMA journal_mode;"])
    assert r.returncode == 0 and r.stdout == f"{2 * N}|{2 * N}\nok\nwal\n", r.stdout + r.stderr
    r = run(["sqlite3", db, ".dump"])
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.mark.parametrize("sync", ["FULL", "NORMAL"])
def test_sqlite_wal_two_writers(fs, sync):
    plain_env = {k: v for k, v in fs.env.items() if k != "LD_PRELOAD"}
    want = _two_writers(fs, fs.plain, plain_env, sync)
    assert want.count("INSERT INTO t VALUES") == 2 * N
    before = _shm_copies()
    got = _two_writers(fs, fs.mount, fs.env, sync)
    assert got == want
    # Every process has let go of the -shm copy: none is left behind in /dev/shm.
    assert _shm_copies() == before
    # The database stays in WAL mode and opens again, through PLFS, in a new process.
    py = "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print(c.execute('PRAGMA journal_mode').fetchone()[0], c.execute('SELECT count(*) FROM t').fetchone()[0], c.execute('PRAGMA integrity_check').fetchone()[0])"
    assert fs.run(["python3", "-c", py, fs.mount / "db.sqlite"], text=True).stdout == f"wal {2 * N} ok\n"
    if fs.method == "preload":
        # Without the preload the mount point is not there: sqlite3 cannot open the database
        # (it creates nothing either), and the database is untouched.
        r = subprocess.run(["sqlite3", fs.mount / "db.sqlite", "SELECT count(*) FROM t;"], env=plain_env, capture_output=True, text=True)
        assert r.returncode != 0 and "unable to open database" in r.stderr, r.stdout + r.stderr
        assert not fs.mount.exists()
        assert fs.sh(f"sqlite3 {fs.mount}/db.sqlite .dump") == want


def test_shared_mapping_of_a_small_file(fs, progs):
    r = subprocess.run([progs["mapshared"], fs.plain / "m.bin"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout == "OK\n", r.stderr
    r = fs.run([progs["mapshared"], fs.mount / "m.bin"], check=False, text=True)
    assert r.returncode == 0 and r.stdout == "OK\n", r.stderr
    assert fs.md5(fs.mount / "m.bin") == fs.sh(f"md5sum < {fs.plain}/m.bin").split()[0]
