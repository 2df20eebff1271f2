"""Medians of the repeated runs and the goals of issue 5, computed from the CSVs of one run
(every ratio compares numbers measured in the same run)."""

from collections import defaultdict

from .util import fnum, median

METHOD_LABELS = {
    "plain": "plain shared file",
    "nn": "plain N-N (ceiling)",
    "ldplfs": "ldplfs",
    "fuse": "FUSE",
    "api": "C API",
    "ldplfs_nn": "ldplfs, file_per_proc mode",
}
TOOL_ORDER = ["cp in", "cat", "grep", "md5sum", "cp out"]


class Cell:
    """The median of one measurement over its repetitions, and how many of them failed."""

    def __init__(self):
        self.values = []
        self.failed = []
        self.na = None

    @property
    def value(self):
        return median(self.values) if self.values and not self.failed else None

    def text(self, fmt="{:.1f}"):
        if self.na:
            return "n/a"
        if self.failed:
            return f"FAILED ({len(self.failed)}/{len(self.failed) + len(self.values)})"
        v = self.value
        return fmt.format(v) if v is not None else "-"


def bandwidth_cells(rows):
    """{(section, method, mode, layout, nprocs, record, phase): Cell of MiB/s}."""
    cells = defaultdict(Cell)
    for r in rows:
        key = (r["section"], r["method"], r["mode"], r["layout"], int(r["nprocs"]),
               int(r["record"]), r["phase"])
        c = cells[key]
        if r["status"] == "ok":
            c.values.append(fnum(r["bw_mib_s"]))
        elif r["status"] != "skipped":
            c.failed.append(r.get("note", ""))
        else:
            c.failed.append("write failed")
    return cells


def simple_cells(rows, key_fields, value_field):
    cells = defaultdict(Cell)
    for r in rows:
        key = tuple(r.get(k) or "" for k in key_fields)
        c = cells[key]
        if r["status"] == "ok":
            c.values.append(fnum(r[value_field]))
        elif r["status"] == "n/a":
            c.na = r.get("note", "not available")
        else:
            c.failed.append(r.get("note", ""))
    return cells


def fig3(cells, method, nprocs, record, phase):
    mode = "plfs" if method == "api" else "posix"
    layout = "nn" if method == "nn" else "strided"
    return cells.get(("fig3", method, mode, layout, nprocs, record, phase))


class Goal:
    def __init__(self, gid, text, target, figure):
        self.gid = gid
        self.text = text
        self.target = target
        self.figure = figure
        self.measured = "-"
        self.status = "not measured"
        self.details = []  # (label, ratio or None, note)

    def judge(self, ok_fn, applicable=None):
        """Sets status from self.details: every applicable ratio must satisfy ok_fn."""
        vals = [(l, r) for l, r, _ in self.details if applicable is None or applicable(l)]
        have = [(l, r) for l, r in vals if r is not None]
        if not vals:
            return
        if not have:
            notes = {n for l, _, n in self.details if applicable is None or applicable(l)}
            self.status = "not run" if notes == {"not run"} else "not available"
            self.measured = self.details[0][2] or "-"
            return
        met = sum(1 for _, r in have if ok_fn(r))
        lo, hi = min(r for _, r in have), max(r for _, r in have)
        self.measured = f"{lo:.2f}" if lo == hi else f"{lo:.2f} .. {hi:.2f}"
        missing = len(vals) - len(have)
        if met == len(vals):
            self.status = "MET"
        else:
            self.status = f"NOT MET ({met}/{len(vals)} met" + (f", {missing} n/a" if missing else "") + ")"


def _ratio(a, b):
    if a is None or b is None or b.value is None or a.value is None or b.value == 0:
        return None
    return a.value / b.value


def _why(*cells):
    for c in cells:
        if c is None:
            return "not run"
        if c.na:
            return c.na
        if c.failed:
            return "failed: " + (c.failed[0] or "?")[:120]
    return ""


def compute(bw_rows, tool_rows, front_notes, profile):
    cells = bandwidth_cells(bw_rows)
    nprocs = profile["nprocs"]
    records = profile["records"]
    tcells = simple_cells(tool_rows, ("section", "tool", "method"), "seconds")
    goals = []

    g = Goal("G1", "Preload/plain time for each UNIX tool (Table II)", "<= 1.05", "fig_tools.png")
    for tool in TOOL_ORDER:
        p, l = tcells.get(("tools", tool, "plain")), tcells.get(("tools", tool, "ldplfs"))
        g.details.append((tool, _ratio(l, p), _why(l, p) or front_notes.get("ldplfs", "")))
    g.judge(lambda r: r <= 1.05)
    goals.append(g)

    def cell_list(method_a, method_b, phase, rec_filter=None):
        out = []
        for n in nprocs:
            for rec in records:
                if rec_filter and rec != rec_filter:
                    continue
                a, b = fig3(cells, method_a, n, rec, phase), fig3(cells, method_b, n, rec, phase)
                note = _why(a, b) if (a is None or b is None or a.value is None or b.value is None) else ""
                if a is None and method_a in front_notes:
                    note = front_notes[method_a]
                if b is None and method_b in front_notes:
                    note = front_notes[method_b]
                out.append((f"np={n} {rec} B", _ratio(a, b), note))
        return out

    g = Goal("G2", "N-1 strided write: ldplfs / plain shared file (N >= 2)", ">= 1.2", "fig3_write.png")
    g.details = cell_list("ldplfs", "plain", "write")
    g.judge(lambda r: r >= 1.2, applicable=lambda label: not label.startswith("np=1 "))
    goals.append(g)

    g = Goal("G3", "N-1 strided write: ldplfs / plain N-N ceiling", ">= 0.9", "fig3_write.png")
    g.details = cell_list("ldplfs", "nn", "write")
    g.judge(lambda r: r >= 0.9)
    goals.append(g)

    g = Goal("G4", "Read-back: ldplfs / plain shared file", ">= 0.8", "fig3_read.png")
    g.details = cell_list("ldplfs", "plain", "read")
    g.judge(lambda r: r >= 0.8)
    goals.append(g)

    g = Goal("G5", "ldplfs / FUSE, 47008 B records (write and read)", ">= 2", "fig3_write.png")
    g.details = [(f"write {l}", r, n) for l, r, n in cell_list("ldplfs", "fuse", "write", 47008)]
    g.details += [(f"read {l}", r, n) for l, r, n in cell_list("ldplfs", "fuse", "read", 47008)]
    g.judge(lambda r: r >= 2)
    goals.append(g)

    g = Goal("G6", "1 GiB sequential write: PLFS / dd bs=1M to a plain file (bandwidth)", ">= 0.9",
             "fig_seqwrite.png")
    plain = tcells.get(("seqwrite", "dd", "plain"))
    for label, key in (("ldplfs dd", ("seqwrite", "dd", "ldplfs")), ("C API", ("seqwrite", "pio", "api")),
                       ("FUSE dd", ("seqwrite", "dd", "fuse"))):
        c = tcells.get(key)
        r = _ratio(plain, c)  # time ratio plain/plfs = bandwidth ratio plfs/plain
        g.details.append((label, r, _why(c, plain) if r is None else ""))
    g.judge(lambda r: r >= 0.9, applicable=lambda label: label != "FUSE dd")
    goals.append(g)
    return cells, tcells, goals
