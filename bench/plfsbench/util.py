"""Small helpers: running commands with a time limit, medians, CSV files, key=value lines."""

import csv
import os
import signal
import statistics
import subprocess
import time


class CmdResult:
    """What one command did: exit code (None on timeout), output, wall seconds."""

    def __init__(self, rc, out, err, seconds):
        self.rc = rc
        self.out = out
        self.err = err
        self.seconds = seconds

    @property
    def ok(self):
        return self.rc == 0

    def why(self):
        """A one-line reason for a failure, for the CSV and the summary."""
        if self.rc is None:
            return "timed out"
        tail = (self.err or self.out or "").strip().splitlines()
        tail = [t for t in tail if t.strip()]
        msg = tail[-1] if tail else ""
        return f"exit {self.rc}: {msg[:200]}"


def run(cmd, env=None, timeout=300, stdout=subprocess.PIPE, cwd=None):
    """Runs cmd in its own process group and returns a CmdResult. On timeout the whole group
    (e.g. mpirun and its ranks) is killed."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, stdout=stdout, stderr=subprocess.PIPE, text=True,
                         start_new_session=True, cwd=cwd)
    try:
        out, err = p.communicate(timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = p.communicate()
        rc = None
    return CmdResult(rc, out if isinstance(out, str) else "", err or "", time.perf_counter() - t0)


def parse_kv(line):
    """'TAG a=1 b=x' -> {'a': '1', 'b': 'x'}."""
    fields = {}
    for tok in line.split()[1:]:
        if "=" in tok:
            k, v = tok.split("=", 1)
            fields[k] = v
    return fields


def result_lines(text, tag):
    return [parse_kv(l) for l in (text or "").splitlines() if l.startswith(tag + " ")]


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def write_csv(path, rows, columns):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow(r)


def read_csv(path):
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def fnum(v):
    """A CSV cell as a float, or None."""
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def human_bytes(n):
    n = int(n)
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} B"
