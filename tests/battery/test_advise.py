"""`plfs advise` held against a short measurement (issue 24: "a test holds a prediction against a
short measurement on local disk and on the GlusterFS volume").

Everything runs in a fresh directory under $PLFS_TEST_ROOT (a directory on the GlusterFS volume
in scripts/test-glusterfs.sh, on MooseFS in scripts/test-moosefs.sh, /tmp in make test-battery). For each cell of MATRIX (W writers,
R-byte records), bench/advise_check.py's own `check_cell` runs REPS repetitions, alternated:
`plfs advise PROBE --quick --json --writers W --record R --per-writer 32M` (in the first
PREDICTIONS repetitions), then pio (bench/src, built by bench/Makefile) writing one shared file N-1
strided, W processes under mpirun, 32 MiB each, fsync at close, once plainly and once through
ldplfs. The prediction is the advise run of median ratio; the measured ratio the median of the
repetitions' plfs / plain ratios.

Asserted:
- every advise JSON has the keys the issue names (plain_n1_mibs, plain_nn_mibs, plfs_mibs,
  recommend, probe), positive bandwidths, ratio_plfs_vs_n1 = plfs_mibs / plain_n1_mibs;
- advise left nothing in the directory it probed (and pio nothing behind it either);
- per cell, predicted / measured ratio within a factor CELL_FACTOR (2: 0.5 .. 2.0), and the advice
  agrees with the measurement wherever the measured ratio is clearly outside BAND 0.8 .. 1.25
  (all repetitions but one above it: "plfs"; below it: "plain"). A cell that misses is measured
  once more from scratch (new probes, new pairs) and must pass then: a wall-clock figure on a
  shared 2-core machine swings by +-40 %, a model error does not go away on a second try;
- over the matrix, the geometric mean of predicted / measured within issue 24's bound, 35 %
  (0.65 .. 1.35).

Why these bounds (docs/performance.md, "The battery's check"): 26 runs of this test's
measurement on local disk (/tmp, ext4, 2 cores shared with other sessions, load average 1.0-4.8),
104 cells: predicted / measured 0.71-2.01 at a first attempt (log standard deviation 0.18). 9 of
the 104 are outside 35 %, all high and all at a load of 3.2 or more, 6 of them the 2-writer
47008 B cell (up to 2.01: under load the quick probe's 2 threads see more N-1 penalty than pio's 2
processes); at load 1.0-2.5 (24 cells) 0.79-1.17. A per-cell 35 % bound would then fail a few per
cent of runs even with the retry, more under load; the factor 2 missed 1 first attempt in 104
(2.01; its retry gave 1.11). So per cell the test catches gross errors (a broken probe, a model
off by more than 2x, advice against a clear measurement), and issue 24's 35 % is held by the
geometric mean over the matrix (0.90-1.21 per run), which a model biased by 35 % or more on this
file system fails. 35 % per cell stays the bench's bound (bench/advise_check.py, 5 repetitions, no
--quick). One advise --quick alone spreads 0.95-1.62 for the 2 x 47008 B cell: the median of 3
probes took the per-cell log standard deviation from 0.20 to 0.14 (the first 8 runs, one probe
against three); 5 pio pairs instead of 3 changed little.

A missing mpicc, mpirun or make fails the test: this is issue 24's check, not optional.
"""

import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import ROOT, TEST_ROOT, plfs_cli

sys.path.insert(0, str(ROOT / "bench"))
import advise_check  # noqa: E402  (bench/advise_check.py: check_cell, describe)

MATRIX = [(1, 47008), (1, 1 << 20), (2, 47008), (2, 1 << 20)]
PER_PROC = "32M"
REPS = 5
PREDICTIONS = 3
CELL_FACTOR = 2.0
ISSUE_BOUND = 0.35
BAND = (0.8, 1.25)
KEYS = ("plain_n1_mibs", "plain_nn_mibs", "plfs_mibs", "recommend", "probe")


@pytest.fixture(scope="module")
def pio(tmp_path_factory):
    """bench's pio (MPI), built by bench/Makefile into a temporary directory."""
    for tool in ("mpicc", "mpirun", "make"):
        if not shutil.which(tool):
            pytest.fail(f"{tool} not installed: issue 24's check needs MPICH (apt-get install mpich libmpich-dev)")
    out = tmp_path_factory.mktemp("pio")
    subprocess.run(["make", "-s", "-C", str(ROOT / "bench"), f"OUT={out}", f"{out}/pio"], check=True)
    return out / "pio"


def misses(row):
    """Why a measured cell does not hold the prediction (empty when it does)."""
    why = []
    q = row["pred_ratio"] / row["meas_ratio"]
    if not 1 / CELL_FACTOR <= q <= CELL_FACTOR:
        why.append(f"predicted / measured {q:.2f} outside {1 / CELL_FACTOR:.2f}-{CELL_FACTOR:.2f}")
    # Clearly outside the band: all repetitions but one on the same side of it (so the median too).
    ratios = [y / x for x, y in zip(row["plain_runs"], row["plfs_runs"])]
    clear = len(ratios) - 1
    if sum(r > BAND[1] for r in ratios) >= clear and row["use"] != "plfs":
        why.append(f"measured {row['meas_ratio']:.2f}, clearly above {BAND[1]}, but the advice is {row['use']}")
    if sum(r < BAND[0] for r in ratios) >= clear and row["use"] != "plain":
        why.append(f"measured {row['meas_ratio']:.2f}, clearly below {BAND[0]}, but the advice is {row['use']}")
    return why


def check_json(adv, writers, record):
    for k in KEYS:
        assert k in adv, f"advise --json lacks {k}: {adv}"
    for k in ("plain_n1_mibs", "plain_nn_mibs", "plfs_mibs"):
        assert adv[k] > 0, adv
    assert adv["recommend"]["use"] in ("plfs", "plain"), adv
    assert isinstance(adv["probe"], dict) and adv["probe"], adv
    assert adv["ratio_plfs_vs_n1"] == pytest.approx(adv["plfs_mibs"] / adv["plain_n1_mibs"], rel=1e-9)
    assert (adv["writers"], adv["record_bytes"]) == (writers, record), adv


def log(row, attempt):
    """Prints a cell (shown by pytest on failure, or with -s); appends it as JSON to
    $PLFS_ADVISE_CHECK_LOG when set (how the bounds above were chosen)."""
    print(f"advise-check attempt {attempt} ({row['seconds']:.1f} s): {advise_check.describe(row)}"
          f"; predicted {[round(a['ratio_plfs_vs_n1'], 2) for a in row['advises']]}"
          f" plain {[round(x) for x in row['plain_runs']]} plfs {[round(x) for x in row['plfs_runs']]}"
          f"; predicted / measured {row['pred_ratio'] / row['meas_ratio']:.2f} {row['why']}", flush=True)
    if os.environ.get("PLFS_ADVISE_CHECK_LOG"):
        keep = {k: v for k, v in row.items() if k not in ("advise", "advises")}
        keep["pred_ratios"] = [a["ratio_plfs_vs_n1"] for a in row["advises"]]
        with open(os.environ["PLFS_ADVISE_CHECK_LOG"], "a") as f:
            f.write(json.dumps(dict(keep, attempt=attempt, load=os.getloadavg()[0])) + "\n")


def test_advise_prediction_holds_against_pio(pio, preload_lib):
    root = Path(tempfile.mkdtemp(prefix="plfs-advise-", dir=TEST_ROOT))
    try:
        probe, backend, plain = root / "probe", root / "backend", root / "plain"
        for d in (probe, backend, plain):
            d.mkdir()
        rc = root / "plfsrc"
        # The mount point does not exist: pio's writes there succeed only through ldplfs.
        rc.write_text(f"- mount_point: {root / 'mnt'}\n  backends:\n    - location: {backend}\n")
        env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "LDPLFS_LOG")}
        env["PLFSRC"] = str(rc)
        final, failed = [], []
        for writers, record in MATRIX:
            tries = []
            for attempt in range(2):
                t0 = time.monotonic()
                row = advise_check.check_cell(plfs_cli(), pio, preload_lib, rc, probe, plain / "f",
                                              root / "mnt" / "f", writers, record, PER_PROC, REPS, quick=True,
                                              env=env, predictions=PREDICTIONS)
                row["seconds"] = time.monotonic() - t0
                for adv in row["advises"]:
                    check_json(adv, writers, record)
                assert list(probe.iterdir()) == [], f"advise left {list(probe.iterdir())} in {probe}"
                # pio removed its files (-u), the container through ldplfs too.
                assert list(plain.iterdir()) == [] and list(backend.iterdir()) == []
                row["why"] = misses(row)
                log(row, attempt)
                tries.append(row)
                if not row["why"]:
                    break
            final.append(tries[-1])
            if tries[-1]["why"]:
                failed += [f"{advise_check.describe(r)}: {r['why']}" for r in tries]
        assert not failed, "prediction does not hold:\n" + "\n".join(failed)
        gmean = math.exp(statistics.mean(math.log(r["pred_ratio"] / r["meas_ratio"]) for r in final))
        print(f"advise-check: geometric mean of predicted / measured {gmean:.3f}")
        assert 1 - ISSUE_BOUND <= gmean <= 1 + ISSUE_BOUND, (
            f"geometric mean of predicted / measured {gmean:.2f} outside issue 24's 35 %:\n"
            + "\n".join(advise_check.describe(r) for r in final)
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)
