#!/usr/bin/env python3
"""Draws the figure of docs/performance.md, "At scale, on paper": `plfs advise --scale` fed the
Lustre costs of seed 000's Sierra beside the paper's points (left), and fed a probe of a local
directory beside what was measured here (right). The curves come from the binary (the model is
only in Rust, crates/plfs-cli/src/advise/scale.rs); this script only draws them.

usage: bench/model/plot_scale.py [--plfs BIN] [--costs FILE.json] [--local FILE.json]
                                 [--probe DIR] [--out FILE.png]

--probe DIR runs `plfs advise --scale DIR --json --per-writer 64M --record 47008` first and saves
its output as --local (so the figure can be redrawn later without probing again).
"""
import argparse
import json
import os
import subprocess
import sys

try:
    import matplotlib
except ImportError:
    # pyenv or a venv without matplotlib: Debian's python3-matplotlib is in /usr/bin/python3.
    if sys.executable != "/usr/bin/python3" and os.path.exists("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    sys.exit("plot_scale.py: needs matplotlib (apt-get install python3-matplotlib)")

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MB_TO_MIB = 1e6 / 1048576

# What the local probe's workload was measured at (docs/performance.md, "Will plfs help here?",
# local ext4, pio N-1 strided, 64 MiB per process, 47008-byte records, medians; 7fe2baa).
MEASURED_LOCAL = {"np": [2, 4], "plain_n1": [781, 954], "plfs": [872, 1153]}

STYLE = {
    "plain_n1_mibs": dict(color="black", marker="o", label="plain N-1"),
    "plain_nn_mibs": dict(color="gray", marker="s", linestyle="--", label="plain N-N"),
    "plfs_mibs": dict(color="tab:blue", marker="^", label="plfs"),
    "plfs_aggregated_mibs": dict(color="tab:green", marker="D", linestyle=":", label="plfs, {agg} aggregator(s)"),
}


def advise(plfs, args):
    out = subprocess.run([plfs, "advise", "--scale", "--json"] + args, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def curves(ax, v, logy):
    xs = [p["writers"] for p in v["points"]]
    for key, style in STYLE.items():
        style = dict(style, label=style["label"].format(agg=v["aggregators"]))
        ax.plot(xs, [p[key] for p in v["points"]], markersize=4, **style)
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda x, _: f"{x:,.0f}"))
    if logy:
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda y, _: f"{y:,.0f}"))
    ax.set_xlabel("writers")
    ax.set_ylabel("write MiB/s")
    ax.grid(alpha=0.3, which="both")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plfs", default=os.path.join(ROOT, "target", "release", "plfs"))
    ap.add_argument("--costs", default=os.path.join(HERE, "lustre-sierra.json"))
    ap.add_argument("--local", default=os.path.join(HERE, "local-tmp.json"))
    ap.add_argument("--probe", help="probe this directory first and save the result as --local")
    ap.add_argument("--out", default=os.path.join(HERE, "advise_scale.png"))
    a = ap.parse_args()

    sierra = advise(a.plfs, ["--costs", a.costs])
    with open(a.costs) as f:
        paper = json.load(f)["paper"]
    if a.probe:
        local = advise(a.plfs, [a.probe, "--per-writer", "64M", "--record", "47008"])
        with open(a.local, "w") as f:
            json.dump(local, f, indent=1)
            f.write("\n")
    with open(a.local) as f:
        local = json.load(f)

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    curves(left, sierra, True)
    w, mbs = zip(*paper["plfs_mbs"])
    left.plot(w, [x * MB_TO_MIB for x in mbs], "*", color="tab:red", markersize=13, label="paper: PLFS (Fig. 5)")
    w, mbs = zip(*paper["mpiio_mbs"])
    left.plot(w, [x * MB_TO_MIB for x in mbs], "X", color="tab:orange", markersize=10, label="paper: MPI-IO, up to")
    peak = sierra["plfs_peak"]
    left.set_title(
        f"Lustre (Sierra) costs, FLASH-IO: plfs peaks at {peak['mibs']:.0f} MiB/s, {peak['writers']} writers",
        fontsize=9,
    )
    left.legend(fontsize=7, loc="lower right")

    curves(right, local, False)
    right.plot(MEASURED_LOCAL["np"], MEASURED_LOCAL["plain_n1"], "o", color="black", markerfacecolor="none",
               markersize=9, label="measured plain N-1")
    right.plot(MEASURED_LOCAL["np"], MEASURED_LOCAL["plfs"], "^", color="tab:blue", markerfacecolor="none",
               markersize=9, label="measured plfs (ldplfs)")
    right.set_ylim(bottom=0)
    right.set_title(
        f"probe of {local['dir']} (one host), {local['bytes_per_writer'] >> 20} MiB per writer, "
        f"{local['record_bytes']} B writes",
        fontsize=9,
    )
    right.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(a.out, dpi=110)
    print(a.out)


if __name__ == "__main__":
    main()
