"""Bandwidth runs of the pio program: the Fig. 3 matrix (processes x record sizes x access
methods), the layouts (N-1 strided, N-1 segmented, N-N) and the MPI-IO modes.

Each run is two mpirun jobs: a write job, then a read job of fresh processes that read with a
shifted rank order (reader r reads what writer r+1 wrote) and check every byte. Every method
first gets one untimed warm-up run. Repetitions are interleaved (rep 1 of every method, then
rep 2, ...) with the method order rotated, so slow drift of the machine affects every method
alike."""

import os

from .util import human_bytes, result_lines, run

COLUMNS = ["section", "method", "mode", "layout", "nprocs", "readers", "record", "per_proc",
           "bytes", "phase", "rep", "status", "bw_mib_s", "raw_mib_s", "open_s", "io_s",
           "close_s", "total_s", "cpu_s", "daemon_cpu_s", "cpu_s_gib", "errors", "note"]


class Method:
    """An access method: a binary, an I/O mode, where its files go, extra rank environment."""

    def __init__(self, name, label, binary, dirpath, mode="posix", layout=None, mpi_env=None,
                 daemon_pid=None):
        self.name = name
        self.daemon_pid = daemon_pid  # its CPU time is added to the ranks' (FUSE)
        self.label = label
        self.binary = binary
        self.dir = dirpath
        self.mode = mode
        self.layout = layout          # forces a layout (the N-N baseline); None: the case's
        self.mpi_env = mpi_env or {}


def methods(ws, fronts, bindir):
    """Every access method of the main figure, available or not: (Method or None, reason)."""
    pio = os.path.join(bindir, "pio")
    out = [
        ("plain", Method("plain", "plain shared file (N-1)", pio, ws.plain), None),
        ("nn", Method("nn", "plain N-N (ceiling)", pio, ws.plain, layout="nn"), None),
    ]
    for fe in (fronts["ldplfs"], fronts["fuse"], fronts["api"]):
        if not fe.available:
            out.append((fe.name, None, fe.reason))
            continue
        if fe.name == "api":
            m = Method("api", fe.label, os.path.join(bindir, "pio-plfs"), fe.dir, mode="plfs",
                       mpi_env=fe.mpi_env)
        else:
            m = Method(fe.name, fe.label, pio, fe.dir, mpi_env=fe.mpi_env, daemon_pid=fe.daemon_pid)
        out.append((fe.name, m, None))
    fe = fronts.get("ldplfs_nn")
    if fe is not None and fe.available:
        out.append((fe.name, Method(fe.name, fe.label, pio, fe.dir, mpi_env=fe.mpi_env), None))
    elif fe is not None:
        out.append((fe.name, None, fe.reason))
    return out


def _mpirun(nprocs, method):
    cmd = ["mpirun", "-np", str(nprocs)]
    for k, v in method.mpi_env.items():
        cmd += ["-genv", k, v]
    return cmd + [method.binary]


def run_one(method, case, rep, tag, timeout):
    """Writes then reads one file; returns the CSV rows of both phases."""
    layout = method.layout or case["layout"]
    mode = case.get("mode", "posix") if method.mode == "posix" else method.mode
    path = os.path.join(method.dir, f"{tag}-r{rep}")
    base = {"section": case["section"], "method": method.name, "mode": mode, "layout": layout,
            "nprocs": case["nprocs"], "readers": case.get("readers", case["nprocs"]),
            "record": case["record"], "per_proc": case["per_proc"], "rep": rep}
    common = ["-p", path, "-l", layout, "-m", mode, "-b", str(case["record"]),
              "-s", str(case["per_proc"]), "-q", "-L", method.name]
    if case.get("fsync"):
        common.append("-f")
    d0 = daemon_cpu(method.daemon_pid)
    w = run(_mpirun(case["nprocs"], method) + common + ["-w"], timeout=timeout)
    d1 = daemon_cpu(method.daemon_pid)
    wrow = _row(base, "write", w, d1 - d0)
    if wrow["status"] != "ok":
        return [wrow, dict(base, phase="read", status="skipped", note="write failed")]
    seed = result_lines(w.out, "PIO_RESULT")[0]["seed"]
    readers = base["readers"]
    r = run(_mpirun(readers, method) + common + ["-r", "-x", seed, "-W", str(case["nprocs"]),
                                                 "-S", "1", "-u"], timeout=timeout)
    d2 = daemon_cpu(method.daemon_pid)
    return [wrow, _row(base, "read", r, d2 - d1)]


def daemon_cpu(pid):
    """CPU seconds a daemon's threads have run so far (the kernel's schedstat, in nanoseconds;
    /proc/PID/stat counts 10 ms ticks, too coarse for one run); 0 without a daemon. A thread that
    ended between two readings takes its time with it, so this is a lower bound."""
    if pid is None:
        return 0.0
    total = 0
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    total += int(f.read().split()[0])
            except (OSError, IndexError, ValueError):
                pass
    except OSError:
        return 0.0
    return total / 1e9


def _row(base, phase, res, daemon_s=0.0):
    row = dict(base, phase=phase)
    lines = result_lines(res.out, "PIO_RESULT")
    if not lines:
        row.update(status="fail", note=res.why() if not res.ok else "no PIO_RESULT line")
        return row
    d = lines[-1]
    row.update({k: d.get(k) for k in ("bytes", "bw_mib_s", "raw_mib_s", "open_s", "io_s",
                                      "close_s", "total_s", "cpu_s", "errors")})
    # CPU seconds per GiB moved: the ranks' (less pio's own pattern work) and the daemon's.
    try:
        cpu = float(d.get("cpu_s")) + daemon_s
        row.update(daemon_cpu_s=f"{daemon_s:.3f}", cpu_s_gib=f"{cpu / (int(d['bytes']) / (1 << 30)):.4f}")
    except (TypeError, ValueError, KeyError, ZeroDivisionError):
        pass
    if not res.ok or d.get("errors") != "0":
        row.update(status="fail", note=(res.why() if not res.ok else "") +
                   f" data errors: {d.get('errors')}")
    else:
        row["status"] = "ok"
    return row


def cases(profile):
    """The cases of every bandwidth section for a profile."""
    out = []
    for n in profile["nprocs"]:
        for rec in profile["records"]:
            out.append({"section": "fig3", "layout": "strided", "nprocs": n, "record": rec,
                        "per_proc": profile["per_proc"]})
    n = max(profile["nprocs"])
    for layout in ("segmented", "nn"):
        out.append({"section": "layouts", "layout": layout, "nprocs": n, "record": 47008,
                    "per_proc": profile["per_proc"]})
    for mode in ("mpi-ind", "mpi-coll"):
        for n in profile["mpiio_nprocs"]:
            out.append({"section": "mpiio", "layout": "strided", "mode": mode, "nprocs": n,
                        "record": 47008, "per_proc": profile["mpiio_per_proc"][mode]})
    for extra in profile.get("extra_cases", []):
        out.append(dict(extra))
    return out


def applies(case, method):
    """Whether a method takes part in a case."""
    if method.name == "ldplfs_nn":
        return case["section"] == "layouts" and case["layout"] == "nn"
    if case["section"] == "fuse64k":
        return method.name in ("ldplfs", "fuse")
    if case["section"] == "fig3":
        return True
    if method.name == "nn":
        return False  # the layouts section runs the N-N layout through every method itself
    if case["section"] == "mpiio":
        return method.name != "api"  # the C API has no MPI-IO mode
    return True


def run_all(profile, meths, log, timeout):
    rows = []
    cs = cases(profile)
    avail = [m for _, m, _ in meths if m is not None]
    total = sum(1 for c in cs for m in avail if applies(c, m)) * profile["reps"]
    done = 0
    # One untimed write + read per method first: the first run through a fresh mount or
    # library pays one-time costs (daemon threads, backend directories) that are not its speed.
    warm = {"section": "warmup", "layout": "strided", "nprocs": 1, "record": 47008,
            "per_proc": 4 * (1 << 20)}
    for m in avail:
        w, r = run_one(m, warm, 0, "warmup", timeout)
        log(f"warm-up {m.name:9}: write {_show(w)}  read {_show(r)} (not counted)")
    for rep in range(1, profile["reps"] + 1):
        order = avail[rep % len(avail):] + avail[:rep % len(avail)]
        for i, case in enumerate(cs):
            for m in order:
                if not applies(case, m):
                    continue
                tag = f"c{i}-{case['section']}"
                got = run_one(m, case, rep, tag, timeout)
                rows += got
                done += 1
                w, r = got
                log(f"[{done}/{total}] rep {rep} {case['section']:7} {m.name:6} "
                    f"{w['mode']:8} {w['layout']:9} np={case['nprocs']} "
                    f"{human_bytes(case['record']):>9}: write {_show(w)}  read {_show(r)}")
    return rows


def _show(row):
    if row["status"] == "ok":
        return f"{float(row['bw_mib_s']):8.1f} MiB/s"
    return f"{row['status'].upper()} ({row.get('note', '')})"
