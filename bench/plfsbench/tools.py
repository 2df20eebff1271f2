"""The UNIX tools table (paper Table II) and the 1 GiB sequential write.

Tools: cp in (plain file -> target), cat, grep, md5sum, cp out (target -> plain file), each timed
on a plain file and on a plfs file through ldplfs (LD_PRELOAD), alternating which goes first.
Every result is checked: md5sum and grep must print the same as on the plain file, cp out must
reproduce the source byte for byte. Sequential write: dd bs=1M from /dev/zero to a plain file,
through ldplfs and through FUSE, and the C API writing 1 MiB records from one process."""

import hashlib
import os
import subprocess

from .util import result_lines, run

COLUMNS = ["section", "tool", "method", "rep", "bytes", "seconds", "mib_s", "status", "note"]
TOOLS = ["cp in", "cat", "grep", "md5sum", "cp out"]
NEEDLE = "needle-7f3a"


def make_source(path, size):
    """A text file of `size` bytes: varied lines, one line per 64 KiB holding NEEDLE. Returns
    (md5 hex, number of NEEDLE lines)."""
    block = []
    n = 0
    while sum(len(x) for x in block) < (1 << 16) - 200:
        block.append(f"{n:08d} the quick brown fox {n * 7919 % 100003:06d} jumps over plfs\n")
        n += 1
    body = "".join(block)
    md5 = hashlib.md5()
    needles = 0
    written = 0
    with open(path, "w") as f:
        i = 0
        while written < size:
            head = f"{i:012d} {NEEDLE}\n"
            chunk = (head + body)[: (1 << 16)]
            chunk = chunk[: size - written]
            if NEEDLE in chunk:
                needles += 1
            f.write(chunk)
            md5.update(chunk.encode())
            written += len(chunk)
            i += 1
    return md5.hexdigest(), needles


def _timed(cmd, env, timeout, stdout=None):
    return run(cmd, env=env, timeout=timeout,
               stdout=subprocess.DEVNULL if stdout == "null" else subprocess.PIPE)


def run_tools(ws, ld, profile, log, timeout):
    """Returns CSV rows; the ldplfs rows say "not available" when ld is not."""
    size = profile["tools_size"]
    src = os.path.join(ws.plain, "tools-src.txt")
    log(f"tools: writing a {size >> 20} MiB source file")
    want_md5, want_needles = make_source(src, size)
    rows = []
    variants = [("plain", dict(os.environ), os.path.join(ws.plain, "tools-copy.txt"))]
    if ld.available:
        variants.append(("ldplfs", ld.env, os.path.join(ld.dir, "tools.txt")))
    else:
        for tool in TOOLS:
            rows.append({"section": "tools", "tool": tool, "method": "ldplfs", "status": "n/a",
                         "note": ld.note()})
    for rep in range(1, profile["tools_reps"] + 1):
        order = variants if rep % 2 else variants[::-1]
        os.sync()  # every repetition starts with no dirty pages of earlier runs to write back
        for tool in TOOLS:
            for name, env, target in order:
                out = os.path.join(ws.plain, f"tools-out-{name}.txt")
                if tool == "cp in":
                    run(["rm", "-f", target], env=env, timeout=timeout)
                    res = _timed(["cp", src, target], env, timeout)
                    check = None
                elif tool == "cat":
                    res = _timed(["cat", target], env, timeout, stdout="null")
                    check = None
                elif tool == "grep":
                    res = _timed(["grep", "-c", NEEDLE, target], env, timeout)
                    check = (res.out.strip(), str(want_needles))
                elif tool == "md5sum":
                    res = _timed(["md5sum", target], env, timeout)
                    check = (res.out.split()[0] if res.out.split() else "", want_md5)
                else:  # cp out
                    res = _timed(["cp", target, out], env, timeout)
                    same = run(["cmp", "-s", src, out], timeout=timeout)
                    check = ("identical" if same.ok else "differs", "identical")
                    if os.path.exists(out):
                        os.remove(out)
                row = {"section": "tools", "tool": tool, "method": name, "rep": rep,
                       "bytes": size, "seconds": f"{res.seconds:.4f}",
                       "mib_s": f"{size / (1 << 20) / res.seconds:.1f}"}
                if not res.ok:
                    row.update(status="fail", note=res.why())
                elif check and check[0] != check[1]:
                    row.update(status="fail", note=f"wrong result: {check[0]!r}, want {check[1]!r}")
                else:
                    row["status"] = "ok"
                rows.append(row)
                log(f"tools rep {rep} {tool:7} {name:7} {res.seconds:7.3f} s  {row['status']}"
                    + (f" ({row.get('note')})" if row["status"] != "ok" else ""))
    for _, env, target in variants:
        run(["rm", "-f", target], env=env, timeout=timeout)
    os.remove(src)
    return rows


def run_seqwrite(ws, fronts, bindir, profile, log, timeout):
    """1 GiB (profile seq_size) written sequentially in 1 MiB pieces by one process."""
    size = profile["seq_size"]
    count = size >> 20
    rows = []
    variants = [("plain", dict(os.environ), ws.plain)]
    for name in ("ldplfs", "fuse"):
        fe = fronts[name]
        if fe.available:
            variants.append((name, fe.env if name == "ldplfs" else dict(os.environ), fe.dir))
        else:
            rows.append({"section": "seqwrite", "tool": "dd", "method": name, "status": "n/a",
                         "note": fe.note()})
    api = fronts["api"]
    if not api.available:
        rows.append({"section": "seqwrite", "tool": "pio", "method": "api", "status": "n/a",
                     "note": api.note()})
    for rep in range(1, profile["seq_reps"] + 1):
        order = variants if rep % 2 else variants[::-1]
        for name, env, d in order:
            os.sync()  # no writer starts with another's dirty pages still to be written back
            target = os.path.join(d, "seq.dat")
            cmd = ["dd", "if=/dev/zero", f"of={target}", "bs=1M", f"count={count}"]
            res = run(cmd, env=env, timeout=timeout)
            size_res = run(["stat", "-c", "%s", target], env=env, timeout=timeout)
            row = {"section": "seqwrite", "tool": "dd", "method": name, "rep": rep, "bytes": size,
                   "seconds": f"{res.seconds:.4f}", "mib_s": f"{size / (1 << 20) / res.seconds:.1f}"}
            if not res.ok:
                row.update(status="fail", note=res.why())
            elif size_res.out.strip() != str(size):
                row.update(status="fail", note=f"size afterwards {size_res.out.strip()!r}")
            else:
                row["status"] = "ok"
            run(["rm", "-f", target], env=env, timeout=timeout)
            rows.append(row)
            log(f"seqwrite rep {rep} dd {name:7} {res.seconds:7.3f} s  {row['status']}")
        if api.available:
            os.sync()
            target = os.path.join(api.dir, "seq.dat")
            cmd = ["mpirun", "-np", "1", "-genv", "PLFSRC", ws.plfsrc, os.path.join(bindir, "pio-plfs"),
                   "-p", target, "-m", "plfs", "-l", "segmented", "-b", "1M", "-s", str(size), "-w",
                   "-q", "-u", "-L", "api"]
            res = run(cmd, env=api.env, timeout=timeout)
            lines = result_lines(res.out, "PIO_RESULT")
            row = {"section": "seqwrite", "tool": "pio", "method": "api", "rep": rep, "bytes": size}
            if res.ok and lines and lines[0].get("errors") == "0":
                secs = float(lines[0]["total_s"])
                row.update(seconds=f"{secs:.4f}", mib_s=f"{size / (1 << 20) / secs:.1f}", status="ok")
            else:
                row.update(status="fail", note=res.why())
            rows.append(row)
            log(f"seqwrite rep {rep} pio api     {row.get('seconds', '-'):>7} s  {row['status']}")
    return rows
