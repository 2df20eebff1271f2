#!/usr/bin/env bash
# `make bench-glusterfs`: the benchmark's bandwidth and metadata sections (plain N-1 and N-N files,
# ldplfs, FUSE and the C API; creates, stats, unlinks) with the work area on a live GlusterFS
# volume (scripts/glusterfs.sh), results in bench/results/<date>-glusterfs/ as for make bench;
# then the brick operations per create, stat, read, unlink and 4-writer open (bench/brickops.py,
# counted by `gluster volume profile`), printed and saved beside them as brickops.json; then the
# system calls per write of 4 N-1 writers and the peak RSS of a writer of 1,000,000 64-byte
# writes (bench/writer_counts.py), printed and saved as writer_counts.json; then issue 22's
# bandwidth protocol (bench/n1_protocol.py: plfs against plain N-1 and N-N, read back through
# the volume's second client mount), printed and saved as n1_protocol.txt.
# Runs under `scripts/glusterfs.sh run` (starts the volume when none runs, stops exactly what it
# started). Needs root, /dev/fuse and network namespaces; expects make build and make -C bench
# programs.
set -euo pipefail
self=$(realpath "$0")
cd "$(dirname "$self")/.."
if [ -z "${PLFS_GLUSTER_MOUNT:-}" ]; then
    exec scripts/glusterfs.sh run "$self" "$@"
fi
WORK=$PLFS_GLUSTER_MOUNT/plfs-bench.$$
trap 'rm -rf "$WORK" || true' EXIT
mkdir -p "$WORK"
chmod 755 "$WORK"
${PYTHON:-python3} bench/run.py --profile glusterfs --only bandwidth,meta --tmpdir "$WORK" "$@"
# The newest results folder is the one run.py just made.
out=$(ls -d bench/results/*-glusterfs 2>/dev/null | sort | tail -1)
${PYTHON:-python3} bench/brickops.py --json > "$out/brickops.json"
${PYTHON:-python3} - "$out/brickops.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"brick operations per file, summed over the bricks ({r['files']} files a phase; budget from issue 22)")
budget = {"create": "<= 30", "stat": "<= 4", "read": "<= 10", "unlink": "<= 30", "open4": "<= 2x create"}
print(f"{'phase':8} {'plain':>7} {'plfs':>7}  budget")
for ph in ["create", "stat", "read", "unlink", "open4"]:
    print(f"{ph:8} {r['plain'][ph]['per_file']:7} {r['plfs'][ph]['per_file']:7}  {budget[ph]}")
PY
${PYTHON:-python3} bench/writer_counts.py "$PLFS_GLUSTER_MOUNT" --json > "$out/writer_counts.json"
${PYTHON:-python3} - "$out/writer_counts.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"system calls per write, {r['writers']} N-1 writers of {r['record']} B through ldplfs (budget: 1 pwrite, nothing else)")
for c, v in r["syscalls_per_write"].items():
    print(f"  {c:16} {v}")
m = r["peak_rss_mib"]
print(f"peak RSS of a writer of {r['small_writes']} 64-byte writes: plfs {m['plfs']} MiB, plain {m['plain']} MiB (budget: plfs <= 24 MiB)")
PY
if [ -n "${PLFS_GLUSTER_MOUNT2:-}" ]; then
    echo "issue 22's bandwidth protocol (bench/n1_protocol.py; medians of 3, 104 MB a run)"
    ${PYTHON:-python3} bench/n1_protocol.py --mnt "$PLFS_GLUSTER_MOUNT" --mnt2 "$PLFS_GLUSTER_MOUNT2" | tee "$out/n1_protocol.txt"
else
    echo "n1_protocol: skipped, the volume has one client mount (PLFS_GLUSTER_CLIENTS=1)" >&2
fi
