"""The PNG figures (matplotlib, Agg backend). Each returns the file name it wrote, or None when
there is nothing to plot."""

import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from .goals import METHOD_LABELS, TOOL_ORDER, fig3  # noqa: E402
from .util import human_bytes  # noqa: E402

STYLE = {
    "plain": dict(color="black", marker="o"),
    "nn": dict(color="gray", marker="s", linestyle="--"),
    "ldplfs": dict(color="tab:blue", marker="^"),
    "fuse": dict(color="tab:red", marker="v"),
    "api": dict(color="tab:green", marker="D"),
    "ldplfs_nn": dict(color="tab:cyan", marker="x"),
}
FIG3_METHODS = ["plain", "nn", "ldplfs", "fuse", "api"]


def _save(fig, outdir, name):
    fig.tight_layout()
    fig.savefig(os.path.join(outdir, name), dpi=110)
    plt.close(fig)
    return name


def fig3_plot(cells, profile, phase, outdir):
    """Bandwidth against processes, one line per access method, one panel per record size."""
    records = profile["records"]
    nprocs = profile["nprocs"]
    fig, axes = plt.subplots(1, len(records), figsize=(4.2 * len(records), 3.8), squeeze=False)
    any_line = False
    for ax, rec in zip(axes[0], records):
        for m in FIG3_METHODS:
            xs, ys = [], []
            for n in nprocs:
                c = fig3(cells, m, n, rec, phase)
                if c is not None and c.value is not None:
                    xs.append(n)
                    ys.append(c.value)
            if xs:
                any_line = True
                ax.plot(xs, ys, label=METHOD_LABELS[m], **STYLE[m])
        ax.set_title(f"{phase}, N-1 strided, {human_bytes(rec)} records")
        ax.set_xlabel("processes")
        ax.set_ylabel("MiB/s")
        ax.set_xscale("log", base=2)
        ax.set_xticks(nprocs)
        ax.set_xticklabels([str(n) for n in nprocs])
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    if not any_line:
        plt.close(fig)
        return None
    axes[0][0].legend(fontsize=8)
    return _save(fig, outdir, f"fig3_{phase}.png")


def layouts_plot(cells, profile, outdir):
    n = max(profile["nprocs"])
    rec = 47008
    methods = ["plain", "ldplfs", "fuse", "api", "ldplfs_nn"]
    layouts = ["strided", "segmented", "nn"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    plotted = False
    for ax, phase in zip(axes, ("write", "read")):
        width = 0.8 / len(methods)
        for j, m in enumerate(methods):
            ys = []
            for i, lay in enumerate(layouts):
                mode = "plfs" if m == "api" else "posix"
                if lay == "strided":
                    c = fig3(cells, m, n, rec, phase)
                else:
                    c = cells.get(("layouts", m, mode, lay, n, rec, phase))
                ys.append(c.value if c is not None and c.value is not None else 0)
            if any(ys):
                plotted = True
                ax.bar([i + j * width for i in range(len(layouts))], ys, width,
                       label=METHOD_LABELS[m], color=STYLE[m]["color"])
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(layouts))])  # group centres
        ax.set_xticklabels(["N-1 strided", "N-1 segmented", "N-N"])
        ax.set_ylabel("MiB/s")
        ax.set_title(f"{phase}, {n} processes, {rec} B records")
        ax.grid(axis="y", alpha=0.3)
    if not plotted:
        plt.close(fig)
        return None
    axes[0].legend(fontsize=8)
    return _save(fig, outdir, "fig_layouts.png")


def mpiio_plot(cells, profile, outdir):
    nprocs = profile["mpiio_nprocs"]
    fig, axes = plt.subplots(2, 2, figsize=(9, 7), squeeze=False)
    plotted = False
    for col, mode in enumerate(("mpi-ind", "mpi-coll")):
        for row, phase in enumerate(("write", "read")):
            ax = axes[row][col]
            for m in ("plain", "ldplfs", "fuse"):
                xs, ys = [], []
                for n in nprocs:
                    c = cells.get(("mpiio", m, mode, "strided", n, 47008, phase))
                    if c is not None and c.value is not None:
                        xs.append(n)
                        ys.append(c.value)
                if xs:
                    plotted = True
                    ax.plot(xs, ys, label=METHOD_LABELS[m], **STYLE[m])
            kind = "independent" if mode == "mpi-ind" else "collective"
            ax.set_title(f"MPI-IO {kind} {phase}, 47008 B")
            ax.set_xlabel("processes")
            ax.set_ylabel("MiB/s")
            ax.set_xscale("log", base=2)
            ax.set_xticks(nprocs)
            ax.set_xticklabels([str(n) for n in nprocs])
            ax.set_ylim(bottom=0)
            ax.grid(alpha=0.3)
    if not plotted:
        plt.close(fig)
        return None
    axes[0][0].legend(fontsize=8)
    return _save(fig, outdir, "fig_mpiio.png")


def tools_plot(tcells, outdir):
    fig, ax = plt.subplots(figsize=(8, 3.8))
    width = 0.38
    plotted = False
    for j, m in enumerate(("plain", "ldplfs")):
        ys = []
        for tool in TOOL_ORDER:
            c = tcells.get(("tools", tool, m))
            ys.append(c.value if c is not None and c.value is not None else 0)
        if any(ys):
            plotted = True
            bars = ax.bar([i + j * width for i in range(len(TOOL_ORDER))], ys, width,
                          label="plain file" if m == "plain" else "plfs via ldplfs",
                          color=STYLE[m]["color"] if m != "plain" else "0.4")
            ax.bar_label(bars, fmt="%.2f", fontsize=7)
    if not plotted:
        plt.close(fig)
        return None
    ax.set_xticks([i + width / 2 for i in range(len(TOOL_ORDER))])
    ax.set_xticklabels(TOOL_ORDER)
    ax.set_ylabel("seconds (median)")
    ax.set_title("UNIX tools on a 1 GiB file (Table II)")
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, outdir, "fig_tools.png")


def seqwrite_plot(tcells, outdir):
    items = [("dd plain file", ("seqwrite", "dd", "plain"), "0.4"),
             ("dd via ldplfs", ("seqwrite", "dd", "ldplfs"), STYLE["ldplfs"]["color"]),
             ("dd via FUSE", ("seqwrite", "dd", "fuse"), STYLE["fuse"]["color"]),
             ("C API (1 MiB writes)", ("seqwrite", "pio", "api"), STYLE["api"]["color"])]
    labels, ys, colors = [], [], []
    for label, key, color in items:
        c = tcells.get(key)
        if c is not None and c.value:
            labels.append(label)
            ys.append(1024.0 / c.value)  # 1 GiB in MiB / seconds
            colors.append(color)
    if not ys:
        return None
    fig, ax = plt.subplots(figsize=(7, 3.5))
    bars = ax.bar(labels, ys, color=colors)
    ax.bar_label(bars, fmt="%.0f", fontsize=8)
    ax.set_ylabel("MiB/s (median)")
    ax.set_title("1 GiB sequential write, 1 MiB pieces, one process")
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, outdir, "fig_seqwrite.png")


def stat_plot(mcells, outdir):
    fig, ax = plt.subplots(figsize=(7, 4))
    plotted = False
    for iface, state, style in (("plfs", "open", dict(color="tab:blue", marker="^")),
                                ("plfs", "closed", dict(color="tab:blue", marker="o", linestyle="--")),
                                ("plain", "open", dict(color="black", marker="^")),
                                ("plain", "closed", dict(color="black", marker="o", linestyle="--"))):
        pts = sorted((int(k[3]), c.value) for k, c in mcells.items()
                     if k[0] == "stat" and k[1] == iface and k[2] == state and c.value)
        if pts:
            plotted = True
            ax.plot([p[0] for p in pts], [p[1] * 1e3 for p in pts], label=f"{iface}, {state}", **style)
    if not plotted:
        plt.close(fig)
        return None
    _plain_log2_ticks(ax, sorted({int(k[3]) for k in mcells if k[0] == "stat" and k[3]}))
    ax.set_yscale("log")
    ax.set_xlabel("writer processes")
    ax.set_ylabel("stat latency, ms (median)")
    ax.set_title("stat of a file open for writing vs closed")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, which="both")
    return _save(fig, outdir, "fig_stat.png")


def _plain_log2_ticks(ax, xs):
    ax.set_xscale("log", base=2)
    ax.set_xticks(xs)
    ax.set_xticklabels([str(x) for x in xs])
    ax.minorticks_off()


def index_plot(rcells, outdir):
    """rcells: index records merged per second, keyed like the metadata cells."""
    fig, ax = plt.subplots(figsize=(7, 4))
    plotted = False
    for kind, flat, style, label in (
            ("strided", "0", dict(color="tab:blue", marker="o"), "strided writes, merged"),
            ("strided", "1", dict(color="tab:blue", marker="s", linestyle="--"), "strided writes, flattened"),
            ("irregular", "0", dict(color="tab:orange", marker="o"), "irregular writes, merged"),
            ("irregular", "1", dict(color="tab:orange", marker="s", linestyle="--"),
             "irregular writes, flattened")):
        pts = sorted((int(k[3]), c.value) for k, c in rcells.items()
                     if k[0] == "index" and k[2] == kind and k[4] == flat and c.value)
        if pts:
            plotted = True
            ax.plot([p[0] for p in pts], [p[1] / 1e6 for p in pts], label=label, **style)
    if not plotted:
        plt.close(fig)
        return None
    _plain_log2_ticks(ax, sorted({int(k[3]) for k in rcells if k[0] == "index" and k[3]}))
    ax.set_xlabel("writers (index logs)")
    ax.set_ylabel("million index records / s (median)")
    ax.set_title("reader open + first read: index merge rate")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return _save(fig, outdir, "fig_index.png")


def io_libraries_plot(rows, label, outdir):
    """Seed 000's Figs. 4 and 5 (and PnetCDF) redrawn: for each program, phase and process count,
    a plain shared file's bandwidth beside plfs's (bench/io_libraries.py)."""
    if not rows:
        return None
    names = [f"{r['program']}\n{r['phase']} np {r['np']}" for r in rows]
    xs = range(len(rows))
    fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(rows)), 4.0))
    width = 0.4
    ax.bar([x - width / 2 for x in xs], [r["plain_mbs"] for r in rows], width, label="plain shared file", color="black")
    ax.bar([x + width / 2 for x in xs], [r["plfs_mbs"] for r in rows], width, label="plfs (ldplfs)", color="tab:blue")
    for x, r in zip(xs, rows):
        ax.annotate(f"{r['plfs_vs_plain']}x", (x + width / 2, r["plfs_mbs"]), ha="center", va="bottom", fontsize=7)
        if r.get("plain_wrong"):
            # The plain file failed the program's check: its bandwidth bought a wrong file.
            ax.annotate("wrong\nfile", (x - width / 2, r["plain_mbs"]), ha="center", va="bottom", fontsize=6, color="red")
    ax.set_xticks(list(xs))
    ax.set_xticklabels(names, fontsize=7)
    ax.set_ylabel("MB/s (slowest rank's file calls)")
    split = " (ranks split between two clients)" if rows[0].get("split") else ""
    ax.set_title(f"I/O libraries through plfs, {label}{split}", fontsize=9)
    ax.legend(fontsize=8)
    return _save(fig, outdir, f"io_libraries{'-' + label.lower() if label else ''}.png")
