"""Figures that load cannot move, beside the wall-clock ratios (issue 14): system calls per
operation of every front end, the metadata costs of ldplfs, and the index at scale.

- `syscalls`: `strace -f -c` of whole commands. `dd bs=4k` writing a file and `cat` reading it,
  plain against ldplfs; and pio at one process for each record size and access method, run with
  two record counts so that the difference gives the system calls of one more record (start-up,
  MPI and open/close cancel out). For FUSE the daemon is traced too (`strace -f -p`), and its
  calls count with the client's.
- `meta`: create (open O_CREAT + write + close), stat and unlink of many files by one process
  through ldplfs on the N-1 mount and on the 1-N (small_file) mount, against a plain directory;
  times (medians of alternated repetitions) and the system calls of `bench/metaops.py`.
- `index`: `plfs-index-bench` (raw, pattern-compressed and flattened indexes, irregular writes
  merged and flattened): open time, index memory, peak RSS, small reads per second.
- `instructions` (issue 26): user-space instructions per 4 KiB record, counted by callgrind, of
  `dd bs=4k` writing a file and of `dd bs=4k` reading it to /dev/null; the difference of
  count=20000 and count=10000 divided by 10000 (start-up, open and close cancel out); plain libc
  against ldplfs.
- `copy` (issue 28): `cp -r` of a tree of small files between plain directories, and `plfs cp
  -r` into the N-1 mount with its worker pool and with one worker; medians of alternated runs.
- `sqlite` (issue 26): two sqlite3 processes at once, each committing N transactions of one
  INSERT into one database in rollback-journal mode; wall seconds, plain directory against
  ldplfs on the N-1 mount, every row checked afterwards.

Rows: test, method, what, value, unit, status, note (counts.csv)."""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from .util import median, result_lines, run

COLUMNS = ["test", "method", "what", "value", "unit", "status", "note"]


def _row(test, method, what, value, unit, status="ok", note=""):
    return {"test": test, "method": method, "what": what, "value": value, "unit": unit,
            "status": status, "note": note}


def strace_total(path):
    """Total calls of an `strace -c` summary file."""
    with open(path) as f:
        for line in f:
            if line.rstrip().endswith("total"):
                return int(line.split()[3])  # % time, seconds, usecs/call, calls, errors
    raise ValueError(f"no total line in {path}")


def traced(cmd, env, timeout, daemon_pid=None):
    """Runs cmd under `strace -f -c`; with daemon_pid, that process (all its threads) is traced
    for the duration too. Returns (CmdResult, calls of cmd, calls of the daemon)."""
    fd, out = tempfile.mkstemp(suffix=".strace")
    os.close(fd)
    dpath, dproc = None, None
    if daemon_pid is not None:
        fd, dpath = tempfile.mkstemp(suffix=".strace-daemon")
        os.close(fd)
        dproc = subprocess.Popen(["strace", "-f", "-c", "-o", dpath, "-p", str(daemon_pid)],
                                 stderr=subprocess.PIPE, text=True)
        # strace reports each attached thread; the first line means tracing has begun.
        dproc.stderr.readline()
        time.sleep(0.2)
    try:
        res = run(["strace", "-f", "-c", "-o", out] + cmd, env=env, timeout=timeout)
        calls = strace_total(out) if res.ok else None
        dcalls = 0
        if dproc is not None:
            dproc.send_signal(signal.SIGINT)
            dproc.wait(timeout=60)
            dcalls = strace_total(dpath)
        return res, calls, dcalls
    finally:
        for p in (out, dpath):
            if p:
                os.unlink(p)


def _sides(ws, ldplfs):
    """(method, directory, environment) of a plain directory without the preload, and of ldplfs
    on the N-1 mount."""
    plain_env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    return [("plain", ws.plain, plain_env), ("ldplfs", ldplfs.dir, ldplfs.env)]


def tool_syscalls(ws, ldplfs, log, timeout):
    rows = []
    if not ldplfs.available:
        return [_row("syscalls", "ldplfs", w, "", "calls", "n/a", ldplfs.note()) for w in ("dd", "cat")]
    for method, d, env in _sides(ws, ldplfs):
        f = os.path.join(d, "counts-dd")
        for what, cmd in (("dd bs=4k count=20000 (write)", f"dd if=/dev/zero of={f} bs=4k count=20000 status=none"),
                          ("cat of that file", f"cat {f} > /dev/null")):
            res, calls, _ = traced(["sh", "-c", cmd], env, timeout)
            rows.append(_row("syscalls", method, what, calls if res.ok else "", "calls",
                             "ok" if res.ok else "fail", "" if res.ok else res.why()))
            log(f"counts: {method:7} {what}: {calls} system calls")
        run(["rm", "-f", f], env=env, timeout=60)
    return rows


def pio_syscalls(meths, profile, log, timeout):
    """System calls per record of pio at one process, write and read, per method and record."""
    rows = []
    for name, m, why in meths:
        if name not in ("plain", "ldplfs", "api", "fuse"):
            continue
        for rec in profile["records"]:
            if m is None:
                rows.append(_row("pio_syscalls", name, f"{rec} write", "", "calls/record", "n/a", why))
                continue
            n1, n2 = (16, 48) if rec >= (1 << 20) else (64, 192)
            got = {}
            for n in (n1, n2):
                path = os.path.join(m.dir, f"counts-{rec}-{n}")
                base = ["mpirun", "-np", "1"]
                for k, v in m.mpi_env.items():
                    base += ["-genv", k, v]
                base += [m.binary, "-p", path, "-l", "strided", "-m", m.mode, "-b", str(rec),
                         "-n", str(n), "-q", "-L", name]
                env = dict(os.environ)
                w, wc, wd = traced(base + ["-w"], env, timeout, m.daemon_pid)
                lines = result_lines(w.out, "PIO_RESULT") if w.ok else []
                if not lines:
                    got = None
                    note = w.why()
                    break
                seed = lines[0]["seed"]
                r, rc_, rd = traced(base + ["-r", "-x", seed, "-W", "1", "-S", "0", "-u"], env, timeout,
                                    m.daemon_pid)
                if not r.ok:
                    got = None
                    note = r.why()
                    break
                got[n] = (wc + wd, rc_ + rd, wd, rd)
            for i, phase in enumerate(("write", "read")):
                if got is None:
                    rows.append(_row("pio_syscalls", name, f"{rec} {phase}", "", "calls/record", "fail", note))
                    continue
                per = (got[n2][i] - got[n1][i]) / (n2 - n1)
                dper = (got[n2][i + 2] - got[n1][i + 2]) / (n2 - n1)
                rows.append(_row("pio_syscalls", name, f"{rec} {phase}", f"{per:.2f}", "calls/record",
                                 note=f"daemon {dper:.2f}" if m.daemon_pid else ""))
                log(f"counts: pio {name:7} {rec:>8} B {phase:5}: {per:.2f} system calls per record"
                    + (f" ({dper:.2f} in the daemon)" if m.daemon_pid else ""))
    return rows


META_SCRIPT = r"""
import os, sys, time
d, n = sys.argv[1], int(sys.argv[2])
os.makedirs(d, exist_ok=True)
names = [os.path.join(d, f"m{i}") for i in range(n)]
t0 = time.perf_counter()
for p in names:
    fd = os.open(p, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    os.write(fd, b"hi\n")
    os.close(fd)
t1 = time.perf_counter()
for p in names:
    if os.stat(p).st_size != 3:
        sys.exit(f"{p}: wrong size")
t2 = time.perf_counter()
for p in names:
    os.unlink(p)
t3 = time.perf_counter()
print(f"META create={n / (t1 - t0):.1f} stat={n / (t2 - t1):.1f} unlink={n / (t3 - t2):.1f}")
"""


def meta_ops(ws, ldplfs, profile, log, timeout):
    """Files per second for create, stat and unlink: ldplfs on the N-1 and 1-N mounts against a
    plain directory (no preload), alternated repetitions, medians."""
    rows = []
    if not ldplfs.available:
        return [_row("meta", "ldplfs", "create", "", "files/s", "n/a", ldplfs.note())]
    lib = ldplfs.env["LD_PRELOAD"]
    plain_env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    n1 = profile.get("meta_files", 300)
    sides = [
        ("plain", os.path.join(ws.plain, "metaops"), plain_env, n1),
        ("ldplfs", os.path.join(ws.plfs_mnt, "metaops"), dict(plain_env, LD_PRELOAD=lib, PLFSRC=ws.plfsrc), n1),
        ("plain-small", os.path.join(ws.plain, "metaops-small"), plain_env, 4 * n1),
        ("ldplfs-small", os.path.join(ws.small_mnt, "metaops"),
         dict(plain_env, LD_PRELOAD=lib, PLFSRC=ws.plfsrc_small), 4 * n1),
    ]
    # A logical directory of an N-1 mount is a directory on its backend.
    os.makedirs(os.path.join(ws.store, "metaops"), exist_ok=True)
    got = {s[0]: {"create": [], "stat": [], "unlink": []} for s in sides}
    for rep in range(profile.get("meta_reps", 3)):
        order = sides[rep % 2:] + sides[:rep % 2]
        for name, d, env, n in order:
            res = run([sys.executable, "-c", META_SCRIPT, d, str(n)], env=env, timeout=timeout)
            line = result_lines(res.out, "META") if res.ok else []
            if not line:
                rows.append(_row("meta", name, "create", "", "files/s", "fail", res.why()))
                continue
            for k in ("create", "stat", "unlink"):
                got[name][k].append(float(line[0][k]))
    for name, vals in got.items():
        for k, v in vals.items():
            if v:
                rows.append(_row("meta", name, k, f"{median(v):.1f}", "files/s"))
                log(f"counts: {name:12} {k:6}: {median(v):10.1f} files/s")
    try:
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        import metaops
        for scen, tp, tl, _, _ in metaops.main(lib, quiet=True):
            rows.append(_row("metaops", "ldplfs", scen, tl - tp, "extra calls"))
            log(f"counts: metaops {scen}: {tl - tp:+d} system calls over a plain directory")
    except Exception as e:  # strace missing or a failed scenario: say so in the table
        rows.append(_row("metaops", "ldplfs", "all", "", "extra calls", "fail", str(e)[:200]))
    return rows


def index_at_scale(ws, profile, log, timeout):
    exe = os.path.join(ws.release, "plfs-index-bench")
    writes = profile.get("index_bench_writes", 200000)
    if not os.path.exists(exe):
        return [_row("index", "core", "all", "", "", "n/a", f"{exe} not built")]
    csv_path = os.path.join(ws.root, "index-bench.csv")
    res = run([exe, "--writes", str(writes), "--writers", "4", "--record", "64", "--dir",
               os.path.join(ws.root, "index-bench"), "--csv", csv_path], timeout=timeout)
    if not res.ok:
        return [_row("index", "core", "all", "", "", "fail", res.why())]
    rows = []
    with open(csv_path) as f:
        head = f.readline().strip().split(",")
        for line in f:
            d = dict(zip(head, line.strip().split(",")))
            v = d["variant"]
            rows.append(_row("index", v, "open_ms", d["open_stat_read_ms"], "ms", note=f"{writes} writes"))
            rows.append(_row("index", v, "index_mem", d["index_mem_bytes"], "bytes"))
            rows.append(_row("index", v, "peak_rss", d["peak_rss_kib"], "KiB"))
            rows.append(_row("index", v, "reads_per_s", d["reads_per_s"], "reads/s"))
    for line in res.out.splitlines():
        log(f"counts: {line}")
    return rows


INSTR_WHATS = ("4 KiB write (dd bs=4k)", "4 KiB read (dd bs=4k to /dev/null)")
INSTR_COUNTS = (10000, 20000)


def callgrind(cmd, env, timeout):
    """(instructions, why): the user-space instructions of cmd (every thread), from callgrind's
    `Collected : N` line; None and the reason when the run failed."""
    fd, logp = tempfile.mkstemp(suffix=".callgrind")
    os.close(fd)
    try:
        res = run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", f"--log-file={logp}"]
                  + cmd, env=env, timeout=timeout)
        if not res.ok:
            return None, res.why()
        with open(logp) as f:
            for line in f:
                if "Collected :" in line:
                    return int(line.rsplit(":", 1)[1]), ""
        return None, "callgrind printed no total"
    finally:
        os.unlink(logp)


def instructions(ws, ldplfs, log, timeout):
    """Instructions per 4 KiB record written and read by dd, plain libc and ldplfs (issue 26)."""
    if not shutil.which("valgrind"):
        log("counts: valgrind is missing (apt-get install valgrind): no instruction counts")
        return [_row("instructions", m, w, "", "instructions/record", "n/a", "valgrind not installed")
                for m in ("plain", "ldplfs") for w in INSTR_WHATS]
    rows = []
    sides = _sides(ws, ldplfs)
    if not ldplfs.available:
        rows += [_row("instructions", "ldplfs", w, "", "instructions/record", "n/a", ldplfs.note())
                 for w in INSTR_WHATS]
        sides = sides[:1]
    lo, hi = INSTR_COUNTS
    for method, d, env in sides:
        got = {w: {} for w in INSTR_WHATS}
        for n in INSTR_COUNTS:
            f = os.path.join(d, f"instr-{n}")
            write, read = INSTR_WHATS
            got[write][n] = callgrind(["dd", "if=/dev/zero", f"of={f}", "bs=4k", f"count={n}", "status=none"],
                                      env, timeout)
            got[read][n] = callgrind(["dd", f"if={f}", "of=/dev/null", "bs=4k", "status=none"], env, timeout)
            run(["rm", "-f", f], env=env, timeout=60)
        for what, by_n in got.items():
            (a, why_a), (b, why_b) = by_n[lo], by_n[hi]
            if a is None or b is None:
                rows.append(_row("instructions", method, what, "", "instructions/record", "fail", why_a or why_b))
                continue
            per = (b - a) / (hi - lo)
            rows.append(_row("instructions", method, what, f"{per:.0f}", "instructions/record",
                             note=f"count={lo}: {a}, count={hi}: {b}"))
            log(f"counts: {method:7} {what}: {per:.0f} instructions per record")
    return rows


SQLITE_TXN = "BEGIN IMMEDIATE; INSERT INTO t VALUES({w}, {i}, 'row {i} of writer {w}'); COMMIT;\n"


def _sqlite_pair(db, scripts, env, want, timeout):
    """Creates db, then runs one sqlite3 per script at once; (wall seconds of the pair, why)."""
    r = run(["sqlite3", "-bail", db, "PRAGMA journal_mode=DELETE; CREATE TABLE t(w INTEGER, i INTEGER, note TEXT);"],
            env=env, timeout=60)
    if not r.ok:
        return None, r.why()
    t0 = time.perf_counter()
    procs = []
    for sql in scripts:
        with open(sql) as inp:
            procs.append(subprocess.Popen(["sqlite3", "-bail", db], stdin=inp, env=env, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.PIPE, text=True, start_new_session=True))
    errs = []
    for p in procs:
        try:
            _, err = p.communicate(timeout=max(1, timeout - (time.perf_counter() - t0)))
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            _, err = p.communicate()
            err = "timed out"
        if p.returncode != 0:
            errs.append(f"exit {p.returncode}: {(err or '').strip()[-200:]}")
    secs = time.perf_counter() - t0
    if errs:
        return None, errs[0]
    r = run(["sqlite3", db, "SELECT count(*) FROM t;"], env=env, timeout=60)
    if not r.ok or r.out.strip() != str(want):
        return None, r.why() if not r.ok else f"{r.out.strip()} rows afterwards, want {want}"
    return secs, ""


def sqlite_writers(ws, ldplfs, profile, log, timeout):
    """Two sqlite3 writers of N one-INSERT transactions each into one database, rollback journal,
    at once: plain directory against ldplfs (issue 26)."""
    n = profile.get("sqlite_txns", 500)
    what = f"2 writers x {n} transactions"
    if not shutil.which("sqlite3"):
        log("counts: sqlite3 is missing (apt-get install sqlite3): no sqlite figure")
        return [_row("sqlite", m, what, "", "s", "n/a", "sqlite3 not installed") for m in ("plain", "ldplfs")]
    rows = []
    sides = _sides(ws, ldplfs)
    if not ldplfs.available:
        rows.append(_row("sqlite", "ldplfs", what, "", "s", "n/a", ldplfs.note()))
        sides = sides[:1]
    scripts = []
    for w in (0, 1):
        scripts.append(os.path.join(ws.root, f"sqlite-writer{w}.sql"))
        with open(scripts[-1], "w") as f:
            f.write(".timeout 600000\n")
            f.writelines(SQLITE_TXN.format(w=w, i=i) for i in range(n))
    for method, d, env in sides:
        db = os.path.join(d, "sqlite26.db")
        secs, why = _sqlite_pair(db, scripts, env, 2 * n, timeout)
        run(["rm", "-f", db, db + "-journal"], env=env, timeout=60)
        if secs is None:
            rows.append(_row("sqlite", method, what, "", "s", "fail", why))
            log(f"counts: sqlite {method:7} {what}: FAILED ({why})")
            continue
        rows.append(_row("sqlite", method, what, f"{secs:.3f}", "s", note=f"{2 * n / secs:.0f} transactions/s"))
        log(f"counts: sqlite {method:7} {what}: {secs:.2f} s")
    return rows


COPY_METHODS = ("plain", "plfs", "plfs -j 1")


def _copy_cmd(ws, method, src, dst):
    """The copy command of a method: plain cp -r between plain directories, or plfs cp -r into
    the N-1 mount with the worker pool (the default -j) or one worker."""
    if method == "plain":
        return ["cp", "-r", src, dst]
    jobs = ["-j", "1"] if method.endswith("-j 1") else []
    return [_cli(ws), "cp", *jobs, "-r", src, dst]


def _cli(ws):
    """The plfs command of the release build."""
    return os.path.join(ws.release, "plfs")


def copies(ws, profile, log, timeout):
    """Copies of a tree of N files of 4 KiB (issue 28): plain cp -r, plfs cp -r with its worker
    pool and with one worker (-j 1), alternated, medians of the repetitions. A plfs copy counts
    only when it reports every file and byte copied, and a sample file reads back equal."""
    n = profile.get("copy_files", 1000)
    what = f"cp -r of {n} files of 4 KiB"
    src = os.path.join(ws.root, "copy-src")
    os.makedirs(src, exist_ok=True)
    for i in range(n):
        with open(os.path.join(src, f"f{i}"), "wb") as f:
            f.write(os.urandom(4096))
    env = dict(os.environ, PLFSRC=ws.plfsrc)
    times = {m: [] for m in COPY_METHODS}
    why = {}
    # Each copy goes to a new directory, all removed at the end: removing thousands of backend
    # entries between two copies slowed the next ones on this machine's ext4 4-7x for a minute.
    dests = []
    for rep in range(profile.get("reps", 3)):
        for m in COPY_METHODS:
            if m in why:
                continue
            top = ws.plain if m == "plain" else ws.plfs_mnt
            dst = os.path.join(top, f"copy-{rep}-{m.replace(' ', '')}")
            dests.append((m, dst))
            r = run(_copy_cmd(ws, m, src, dst), env=env, timeout=timeout)
            if not r.ok:
                why[m] = r.why()
            elif m != "plain" and f"({n} files, 1 directory, {4096 * n} bytes)" not in r.out:
                why[m] = f"plfs cp did not report {n} files: {r.out.strip()[-160:]}"
            elif not _same_sample(ws, env, os.path.join(src, "f0"), os.path.join(dst, "f0"), m):
                why[m] = "a copied file differs from its source"
            else:
                times[m].append(r.seconds)
    for m, dst in dests:
        rm = ["rm", "-rf", dst] if m == "plain" else [_cli(ws), "rm", "-r", "-f", dst]
        run(rm, env=env, timeout=timeout)
    rows = []
    for m in COPY_METHODS:
        if m in why or not times[m]:
            rows.append(_row("copy", m, what, "", "s", "fail", why.get(m, "not run")))
            continue
        v = median(times[m])
        rows.append(_row("copy", m, what, f"{v:.3f}", "s", note=" ".join(f"{t:.3f}" for t in times[m])))
        log(f"counts: copy {m:10} {what}: {v:.2f} s")
    return rows


def _same_sample(ws, env, src, dst, method):
    """Whether dst reads back equal to src (through the plfs CLI for a plfs copy)."""
    if method == "plain":
        with open(src, "rb") as a, open(dst, "rb") as b:
            return a.read() == b.read()
    r = subprocess.run([_cli(ws), "cat", dst], env=env, capture_output=True, timeout=60)
    with open(src, "rb") as a:
        return r.returncode == 0 and r.stdout == a.read()


def run_counts(ws, fronts, meths, profile, log, timeout):
    if not shutil.which("strace"):
        log("counts: strace is missing (apt-get install strace): no system-call counts")
        rows = [_row("syscalls", "all", "all", "", "calls", "n/a", "strace not installed")]
    else:
        rows = tool_syscalls(ws, fronts["ldplfs"], log, timeout)
        rows += pio_syscalls(meths, profile, log, timeout)
    rows += meta_ops(ws, fronts["ldplfs"], profile, log, timeout)
    rows += index_at_scale(ws, profile, log, max(timeout, 900))
    t0 = time.perf_counter()
    rows += instructions(ws, fronts["ldplfs"], log, timeout)
    t1 = time.perf_counter()
    rows += sqlite_writers(ws, fronts["ldplfs"], profile, log, timeout)
    log(f"counts: issue 26's instructions took {t1 - t0:.0f} s, its sqlite writers {time.perf_counter() - t1:.0f} s")
    t2 = time.perf_counter()
    rows += copies(ws, profile, log, timeout)
    log(f"counts: issue 28's copies took {time.perf_counter() - t2:.0f} s")
    return rows
