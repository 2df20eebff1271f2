"""The markdown summary: machine, front ends, the goals table, then each figure next to the goal
it serves, with the numbers behind it, and every failure."""

import os

from .goals import METHOD_LABELS, TOOL_ORDER, fig3
from .util import human_bytes

FIG3_METHODS = ["plain", "nn", "ldplfs", "fuse", "api"]


def _img(name, figures):
    if name and name in figures:
        return f"![{name}]({name})\n"
    return f"*(figure {name} not drawn: no data, or matplotlib missing)*\n"


def goals_table(goals):
    out = ["| goal | what | target | measured (ratio) | status |", "|---|---|---|---|---|"]
    for g in goals:
        out.append(f"| {g.gid} | {g.text} | {g.target} | {g.measured} | **{g.status}** |")
    return "\n".join(out) + "\n"


def _goal_details(g):
    out = [f"| {g.gid} case | measured | note |", "|---|---|---|"]
    for label, r, note in g.details:
        out.append(f"| {label} | {'-' if r is None else f'{r:.2f}' if abs(r) < 1000 else f'{r:.0f}'} | {note} |")
    return "\n".join(out) + "\n"


def _fig3_table(cells, profile, phase, fmt="{:.1f}"):
    head = "| processes | record | " + " | ".join(METHOD_LABELS[m] for m in FIG3_METHODS) + " |"
    out = [head, "|---|---|" + "---|" * len(FIG3_METHODS)]
    for n in profile["nprocs"]:
        for rec in profile["records"]:
            vals = []
            for m in FIG3_METHODS:
                c = fig3(cells, m, n, rec, phase)
                vals.append(c.text(fmt) if c is not None else "n/a")
            out.append(f"| {n} | {human_bytes(rec)} | " + " | ".join(vals) + " |")
    return "\n".join(out) + "\n"


def _noise_line(cells, profile):
    """At one process the plain N-1 and N-N runs do the same thing: their ratio shows how much
    two identical measurements of this run differ."""
    parts = []
    for phase in ("write", "read"):
        for rec in profile["records"]:
            a, b = fig3(cells, "plain", 1, rec, phase), fig3(cells, "nn", 1, rec, phase)
            if a is not None and b is not None and a.value and b.value:
                parts.append(f"{phase} {human_bytes(rec)} {a.value / b.value:.2f}")
    if not parts:
        return ""
    return ("Noise check: with one process the plain N-1 and N-N runs are the same workload; "
            "their ratio in this run (ideally 1.00): " + ", ".join(parts) + ".\n")


def _tools_table(tcells):
    out = ["| tool | plain file (s) | plfs via ldplfs (s) | ldplfs / plain |", "|---|---|---|---|"]
    for tool in TOOL_ORDER:
        p, l = tcells.get(("tools", tool, "plain")), tcells.get(("tools", tool, "ldplfs"))
        ratio = "-"
        if p and l and p.value and l.value:
            ratio = f"{l.value / p.value:.3f}"
        out.append(f"| {tool} | {p.text('{:.3f}') if p else '-'} | {l.text('{:.3f}') if l else 'n/a'} | {ratio} |")
    return "\n".join(out) + "\n"


def _seq_table(tcells):
    out = ["| writer | seconds | MiB/s |", "|---|---|---|"]
    for label, key in (("dd bs=1M, plain file", ("seqwrite", "dd", "plain")),
                       ("dd bs=1M via ldplfs", ("seqwrite", "dd", "ldplfs")),
                       ("dd bs=1M via FUSE", ("seqwrite", "dd", "fuse")),
                       ("C API, 1 MiB plfs_write", ("seqwrite", "pio", "api"))):
        c = tcells.get(key)
        if c is None:
            out.append(f"| {label} | not run | |")
        elif c.value is None:
            out.append(f"| {label} | {c.text()} | {c.na or ''} |")
        else:
            out.append(f"| {label} | {c.value:.3f} | {1024 / c.value:.0f} |")
    return "\n".join(out) + "\n"


def _layouts_table(cells, profile):
    n = max(profile["nprocs"])
    out = ["| layout | phase | plain | ldplfs | FUSE | C API | ldplfs, file_per_proc mode |",
           "|---|---|---|---|---|---|---|"]
    for lay in ("strided", "segmented", "nn"):
        for phase in ("write", "read"):
            vals = []
            for m in ("plain", "ldplfs", "fuse", "api", "ldplfs_nn"):
                mode = "plfs" if m == "api" else "posix"
                c = fig3(cells, m, n, 47008, phase) if lay == "strided" else \
                    cells.get(("layouts", m, mode, lay, n, 47008, phase))
                vals.append(c.text() if c is not None else "n/a")
            out.append(f"| {lay} | {phase} | " + " | ".join(vals) + " |")
    return "\n".join(out) + "\n"


def _mpiio_table(cells, profile):
    out = ["| mode | processes | phase | plain | ldplfs | FUSE |", "|---|---|---|---|---|---|"]
    for mode in ("mpi-ind", "mpi-coll"):
        for n in profile["mpiio_nprocs"]:
            for phase in ("write", "read"):
                vals = []
                for m in ("plain", "ldplfs", "fuse"):
                    c = cells.get(("mpiio", m, mode, "strided", n, 47008, phase))
                    vals.append(c.text() if c is not None else "n/a")
                out.append(f"| {mode} | {n} | {phase} | " + " | ".join(vals) + " |")
    return "\n".join(out) + "\n"


def _other_table(cells):
    keys = sorted(k for k in cells if k[0] not in ("fig3", "layouts", "mpiio"))
    if not keys:
        return ""
    out = ["| section | method | mode | layout | processes | record | phase | MiB/s |",
           "|---|---|---|---|---|---|---|---|"]
    for k in keys:
        out.append("| " + " | ".join(str(x) for x in k) + f" | {cells[k].text()} |")
    return "\n## Other cases\n\n" + "\n".join(out) + "\n"


def _meta_tables(mcells, meta_rows):
    out = ["| writers | plfs open (ms) | plfs closed (ms) | plain open (ms) | plain closed (ms) |",
           "|---|---|---|---|---|"]
    writers = sorted({int(k[3]) for k in mcells if k[0] == "stat" and k[3]})
    for w in writers:
        vals = []
        for iface in ("plfs", "plain"):
            for state in ("open", "closed"):
                c = mcells.get(("stat", iface, state, str(w), ""))
                vals.append(f"{c.value * 1e3:.3f}" if c and c.value is not None else (c.text() if c else "-"))
        out.append(f"| {w} | " + " | ".join(vals) + " |")
    if not writers:
        out.append("| " + " | ".join(["not available"] * 5) + " |")
    out += ["", "| creates (open O_CREAT + close, one process) | files/s | note |", "|---|---|---|"]
    for r in meta_rows:
        if r.get("test") == "create":
            per = r.get("per_s") if r.get("status") == "ok" else r.get("status")
            out.append(f"| {r.get('iface')} | {per} | {r.get('note', '') or ''} |")
    out += ["", "| writes | writers | index records | merge (ms) | flattened (ms) | merged records/s | "
            "flattened records/s |", "|---|---|---|---|---|---|---|"]
    for kind in ("strided", "irregular"):
        for w in sorted({int(k[3]) for k in mcells if k[0] == "index" and k[2] == kind and k[3]}):
            a = mcells.get(("index", "plfs", kind, str(w), "0"))
            b = mcells.get(("index", "plfs", kind, str(w), "1"))
            recs = next((int(r["records"]) for r in meta_rows if r.get("test") == "index"
                         and r.get("state") == kind and r.get("writers") == str(w)
                         and r.get("records")), None)

            def ms(c):
                return f"{c.value * 1e3:.1f}" if c and c.value else (c.text() if c else "-")

            def rate(c):
                return f"{recs / c.value / 1e6:.2f} M" if c and c.value and recs else "-"
            out.append(f"| {kind} | {w} | {recs} | {ms(a)} | {ms(b)} | {rate(a)} | {rate(b)} |")
    return "\n".join(out) + "\n"


def _cpu_note():
    return ("CPU seconds per GiB moved (user + system of every rank during the timed span, less "
            "pio's own pattern generation and checking, plus the FUSE daemon's): a figure that "
            "load moves far less than time.\n")


def _counts_tables(rows):
    if not rows:
        return "Not run (section `counts`).\n"
    by = {}
    for r in rows:
        by.setdefault(r["test"], []).append(r)

    def val(r):
        return r["value"] if r["status"] == "ok" else f"{r['status']}: {r.get('note', '')}"

    def plain_vs_ldplfs(title, head, rows):
        """A table of one row per `what`: the plain and ldplfs values and their ratio."""
        if not rows:
            return []
        table = [title, "", f"| {head} | plain file | ldplfs | ldplfs / plain |", "|---|---|---|---|"]
        for what in dict.fromkeys(r["what"] for r in rows):
            p = next((r for r in rows if r["what"] == what and r["method"] == "plain"), None)
            l = next((r for r in rows if r["what"] == what and r["method"] == "ldplfs"), None)
            ratio = "-"
            try:
                ratio = f"{float(l['value']) / float(p['value']):.2f}"
            except (TypeError, ValueError, ZeroDivisionError):
                pass
            table.append(f"| {what} | {val(p) if p else '-'} | {val(l) if l else '-'} | {ratio} |")
        return table
    out = plain_vs_ldplfs("### System calls of whole commands (`strace -f -c`)", "command",
                          by.get("syscalls", []))
    ps = by.get("pio_syscalls", [])
    if ps:
        methods = list(dict.fromkeys(r["method"] for r in ps))
        out += ["", "### System calls per record, pio at one process (N-1 strided)", "",
                "The difference of two runs of different lengths: start-up, MPI and open/close "
                "cancel out. FUSE counts the client's and the daemon's calls.", "",
                "| record | phase | " + " | ".join(METHOD_LABELS.get(m, m) for m in methods) + " |",
                "|---|---|" + "---|" * len(methods)]
        for what in dict.fromkeys(r["what"] for r in ps):
            rec, phase = what.split()
            cells = []
            for m in methods:
                r = next((x for x in ps if x["what"] == what and x["method"] == m), None)
                cells.append((val(r) + (f" ({r['note']})" if r and r["status"] == "ok" and r.get("note") else ""))
                             if r else "-")
            out.append(f"| {human_bytes(int(rec))} | {phase} | " + " | ".join(cells) + " |")
    me = by.get("meta", [])
    if me:
        out += ["", "### Metadata, one process, files per second (medians of alternated runs)", "",
                "| mount | create | stat | unlink |", "|---|---|---|---|"]
        for m in dict.fromkeys(r["method"] for r in me):
            vals = [next((val(r) for r in me if r["method"] == m and r["what"] == k), "-")
                    for k in ("create", "stat", "unlink")]
            out.append(f"| {m} | " + " | ".join(vals) + " |")
    mo = by.get("metaops", [])
    if mo:
        out += ["", "### Extra system calls per metadata operation through ldplfs (`bench/metaops.py`)", "",
                "| operation | extra calls over a plain directory |", "|---|---|"]
        out += [f"| {r['what']} | {val(r)} |" for r in mo]
    ix = by.get("index", [])
    if ix:
        note = next((r.get("note") for r in ix if r.get("note")), "")
        out += ["", f"### Index at scale (`plfs-index-bench`, {note} of 64 B by 4 writers)", "",
                "| index | open + stat + first read (ms) | index memory (KiB) | peak RSS (KiB) | "
                "small reads/s |", "|---|---|---|---|---|"]
        for v in dict.fromkeys(r["method"] for r in ix):
            g = {r["what"]: r for r in ix if r["method"] == v}
            if "open_ms" not in g:
                out.append(f"| {v} | {val(next(iter(g.values())))} | | | |")
                continue
            mem = f"{int(g['index_mem']['value']) / 1024:.0f}" if g.get("index_mem") else "-"
            out.append(f"| {v} | {g['open_ms']['value']} | {mem} | {g['peak_rss']['value']} | "
                       f"{g['reads_per_s']['value']} |")
    out += [""] + plain_vs_ldplfs(
        "### Instructions per 4 KiB record (callgrind; count=20000 minus count=10000, / 10000; issue 26)",
        "record", by.get("instructions", []))
    out += [""] + plain_vs_ldplfs(
        "### sqlite3: 2 writers at once, one INSERT per transaction, rollback journal, seconds (issue 26)",
        "workload", by.get("sqlite", []))
    out += ["", "Issue 26's other rows come from the sections above in this same run: CPU s/GiB and "
            "MiB/s at 4 KiB (Fig. 3 tables), FUSE at 4 x 64 KiB (other cases), 1-N creates "
            "(metadata, and the files/s table above), touch and rm (the metaops table above)."]
    return "\n".join(out) + "\n"


def _failures(all_rows):
    bad = [r for r in all_rows if r.get("status") == "fail"]
    if not bad:
        return "No run failed; every read-back matched the written bytes.\n"
    out = [f"{len(bad)} runs failed (their numbers are not used):", ""]
    seen = set()
    for r in bad:
        what = " ".join(str(r.get(k)) for k in ("section", "method", "tool", "test", "mode", "layout",
                                                 "nprocs", "record", "phase") if r.get(k))
        key = (what, r.get("note"))
        if key in seen:
            continue
        seen.add(key)
        out.append(f"- {what}: {r.get('note')}")
    return "\n".join(out) + "\n"


def write(path, info, fronts, profile, goals, cells, tcells, mcells, meta_rows, all_rows, figures,
          t_goals=(), ccells=None, counts_rows=(), u_goals=()):
    f = []
    f.append(f"# plfs benchmark summary — profile `{profile['name']}`, {info.get('date', '')}\n")
    f.append("Reproduces Fig. 3 and Table II of the LDPLFS paper (shared/seeds/000) on this machine, "
             "plus the PLFS layout, metadata and index figures. Method: docs/performance.md.\n")
    f.append("## Machine\n")
    f.append("| | |\n|---|---|")
    for k in ("nproc", "cpu", "memory", "kernel", "os", "filesystem", "free_space", "tmpdir", "mpi",
              "git", "loadavg_start", "loadavg_end", "duration"):
        if k in info:
            f.append(f"| {k} | {info[k]} |")
    f.append("")
    f.append("## Front ends\n")
    f.append("| front end | status |\n|---|---|")
    for name, note in fronts.items():
        f.append(f"| {name} | {note} |")
    f.append("")
    per = human_bytes(profile["per_proc"])
    f.append(f"Workload: each process writes {per} in records of "
             f"{', '.join(human_bytes(r) for r in profile['records'])}; "
             f"{', '.join(map(str, profile['nprocs']))} processes; {profile['reps']} repetitions, "
             "medians shown; reads by fresh processes in shifted rank order, every byte checked.\n")
    f.append("## Goals\n")
    f.append(goals_table(goals))
    f.append("\n" + _noise_line(cells, profile))
    for title, group in (("Issue 14 targets (speed where users feel it)", t_goals),
                         ("Issue 26 and 28 targets (every row measured side by side in this run)", u_goals)):
        if group:
            f.append(f"\n## {title}\n")
            f.append(goals_table(group))
            for t in group:
                f.append("\n" + _goal_details(t))
    g = {x.gid: x for x in goals}
    f.append("\n## G1 — UNIX tools through ldplfs (Table II)\n")
    f.append(_img(figures.get("tools"), figures.values()))
    f.append(_tools_table(tcells))
    f.append("\n## G2, G3, G5 — N-1 strided write (Fig. 3), MiB/s\n")
    f.append(_img(figures.get("fig3_write"), figures.values()))
    f.append(_fig3_table(cells, profile, "write"))
    if ccells:
        f.append("\n" + _cpu_note() + "\n" + _fig3_table(ccells, profile, "write", "{:.3f}"))
    f.append("\n" + _goal_details(g["G2"]) + "\n" + _goal_details(g["G3"]))
    f.append("\n## G4, G5 — read-back (Fig. 3), MiB/s\n")
    f.append(_img(figures.get("fig3_read"), figures.values()))
    f.append(_fig3_table(cells, profile, "read"))
    if ccells:
        f.append("\n" + _cpu_note() + "\n" + _fig3_table(ccells, profile, "read", "{:.3f}"))
    f.append("\n" + _goal_details(g["G4"]) + "\n" + _goal_details(g["G5"]))
    f.append("\n## G6 — 1 GiB sequential write\n")
    f.append(_img(figures.get("seqwrite"), figures.values()))
    f.append(_seq_table(tcells))
    f.append("\n## PLFS layouts: N-1 strided, N-1 segmented, N-N (MiB/s)\n")
    f.append(_img(figures.get("layouts"), figures.values()))
    f.append(_layouts_table(cells, profile))
    mp = profile["mpiio_per_proc"]
    f.append(f"\n## MPI-IO independent ({human_bytes(mp['mpi-ind'])} per process) and collective "
             f"({human_bytes(mp['mpi-coll'])} per process), N-1 strided, MiB/s\n")
    f.append(_img(figures.get("mpiio"), figures.values()))
    f.append(_mpiio_table(cells, profile))
    f.append(_other_table(cells))
    f.append("\n## Metadata and index\n")
    f.append(_img(figures.get("stat"), figures.values()))
    f.append(_img(figures.get("index"), figures.values()))
    f.append(_meta_tables(mcells, meta_rows))
    f.append("\n## Counts: system calls, metadata, index (issue 14)\n")
    f.append(_counts_tables(list(counts_rows)))
    f.append("\n## Failures\n")
    f.append(_failures(all_rows))
    with open(path, "w") as out:
        out.write("\n".join(f))
    return os.path.basename(path)
