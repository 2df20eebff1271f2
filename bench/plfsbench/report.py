"""Turns one results folder (CSVs + run.json) into figures and summary.md. Runs inside the suite
or alone, to redraw: python3 bench/report.py bench/results/latest"""

import json
import os

from .goals import compute, cpu_cells, issue14, issue26, issue28, simple_cells
from .summary import goals_table, write
from .util import read_csv, write_csv


def medians_csv(path, cells, tcells, mcells):
    rows = []
    for (section, method, mode, layout, n, rec, phase), c in sorted(cells.items()):
        rows.append({"kind": "bandwidth", "section": section, "method": method, "mode": mode,
                     "layout": layout, "nprocs": n, "record": rec, "phase": phase,
                     "median": c.value, "unit": "MiB/s", "ok_runs": len(c.values),
                     "failed_runs": len(c.failed)})
    for (section, tool, method), c in sorted(tcells.items()):
        rows.append({"kind": section, "method": method, "phase": tool, "median": c.value,
                     "unit": "s", "ok_runs": len(c.values), "failed_runs": len(c.failed)})
    for (test, iface, state, writers, flat), c in sorted(mcells.items()):
        rows.append({"kind": "meta", "section": test, "method": iface, "phase": state or flat,
                     "nprocs": writers, "median": c.value, "unit": "s", "ok_runs": len(c.values),
                     "failed_runs": len(c.failed)})
    write_csv(path, rows, ["kind", "section", "method", "mode", "layout", "nprocs", "record",
                           "phase", "median", "unit", "ok_runs", "failed_runs"])


def make(outdir, log=print):
    with open(os.path.join(outdir, "run.json")) as f:
        run = json.load(f)
    profile, info, fronts = run["profile"], run["machine"], run["frontends"]
    bw_rows = read_csv(os.path.join(outdir, "bandwidth.csv"))
    tool_rows = read_csv(os.path.join(outdir, "tools.csv"))
    meta_rows = read_csv(os.path.join(outdir, "meta.csv"))
    counts_rows = read_csv(os.path.join(outdir, "counts.csv"))
    notes = {k: v for k, v in fronts.items() if not v.startswith("available")}
    cells, tcells, goals = compute(bw_rows, tool_rows, notes, profile)
    t_goals = issue14(cells, counts_rows, meta_rows)
    ccells = cpu_cells(bw_rows)
    u_goals = issue26(cells, ccells, counts_rows, t_goals) + issue28(counts_rows)
    mkey = ("test", "iface", "state", "writers", "flattened")
    mcells = simple_cells(meta_rows, mkey, "seconds")
    rcells = simple_cells(meta_rows, mkey, "per_s")
    medians_csv(os.path.join(outdir, "medians.csv"), cells, tcells, mcells)
    figures = {}
    try:
        from . import plots
    except ImportError as e:
        log(f"report: no figures ({e}); install python3-matplotlib")
        plots = None
    if plots is not None:
        figures = {
            "fig3_write": plots.fig3_plot(cells, profile, "write", outdir),
            "fig3_read": plots.fig3_plot(cells, profile, "read", outdir),
            "layouts": plots.layouts_plot(cells, profile, outdir),
            "mpiio": plots.mpiio_plot(cells, profile, outdir),
            "tools": plots.tools_plot(tcells, outdir),
            "seqwrite": plots.seqwrite_plot(tcells, outdir),
            "stat": plots.stat_plot(mcells, outdir),
            "index": plots.index_plot(rcells, outdir),
        }
        figures = {k: v for k, v in figures.items() if v}
    all_rows = bw_rows + tool_rows + meta_rows + counts_rows
    write(os.path.join(outdir, "summary.md"), info, fronts, profile, goals, cells, tcells, mcells,
          meta_rows, all_rows, figures, t_goals, ccells, counts_rows, u_goals)
    with open(os.path.join(outdir, "goals.md"), "w") as f:
        f.write(goals_table(goals) + "\n" + goals_table(t_goals) + "\n" + goals_table(u_goals))
    return goals, figures

