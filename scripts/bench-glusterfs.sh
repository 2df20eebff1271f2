#!/usr/bin/env bash
# `make bench-glusterfs`: the benchmark's bandwidth and metadata sections (plain N-1 and N-N files,
# ldplfs, FUSE and the C API; creates, stats, unlinks) with the work area on a live GlusterFS
# volume (scripts/glusterfs.sh), results in bench/results/<date>-glusterfs/ as for make bench;
# then the brick operations per create, stat, read, unlink and 4-writer open (bench/brickops.py,
# counted by `gluster volume profile`), printed and saved beside them as brickops.json; then the
# system calls per write of 4 N-1 writers and the peak RSS of a writer of 1,000,000 64-byte
# writes (bench/writer_counts.py), printed and saved as writer_counts.json; then issue 22's
# bandwidth protocol (bench/n1_protocol.py: plfs against plain N-1 and N-N, read back through
# the volume's second client mount), printed and saved as n1_protocol.txt; then the I/O
# libraries' programs (bench/io_libraries.py: FLASH-IO, BT-IO, PnetCDF), saved as io_libraries.json.
# Runs under `scripts/glusterfs.sh run` (starts the volume when none runs, stops exactly what it
# started). Needs root, /dev/fuse and network namespaces; expects make build and make -C bench
# programs.
set -euo pipefail
self=$(realpath "$0")
cd "$(dirname "$self")/.."
# shellcheck source=scripts/bench-dfs-common.sh
. scripts/bench-dfs-common.sh
if [ -z "${PLFS_GLUSTER_MOUNT:-}" ]; then
    exec scripts/glusterfs.sh run "$self" "$@"
fi
sections glusterfs "$PLFS_GLUSTER_MOUNT" "$@"
out=$(ls -d bench/results/*-glusterfs 2>/dev/null | sort | tail -1)
LIB=$(preload_lib "$@")
${PYTHON:-python3} bench/brickops.py --json "$LIB" > "$out/brickops.json"
${PYTHON:-python3} - "$out/brickops.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"brick operations per file, summed over the bricks ({r['files']} files a phase; budget from issue 22)")
budget = {"create": "<= 30", "stat": "<= 4", "read": "<= 10", "unlink": "<= 30", "open4": "<= 2x create"}
print(f"{'phase':8} {'plain':>7} {'plfs':>7}  budget")
for ph in ["create", "stat", "read", "unlink", "open4"]:
    print(f"{ph:8} {r['plain'][ph]['per_file']:7} {r['plfs'][ph]['per_file']:7}  {budget[ph]}")
PY
writer_and_protocol "$PLFS_GLUSTER_MOUNT" "${PLFS_GLUSTER_MOUNT2:-}" "$out" "the volume (PLFS_GLUSTER_CLIENTS=1)"
# Seed 000's Figs. 4 and 5 (and PnetCDF) on the volume: the I/O libraries' programs, plain
# against plfs (bench/io_libraries.py), saved as io_libraries.json and io_libraries-glusterfs.png.
${PYTHON:-python3} bench/io_libraries.py --mnt "$PLFS_GLUSTER_MOUNT" --lib "$LIB" --label GlusterFS \
    --save "$out/io_libraries.json" --png "$out"
