#!/usr/bin/env bash
# `make bench-glusterfs`: the benchmark's bandwidth and metadata sections (plain N-1 and N-N files,
# ldplfs, FUSE and the C API; creates, stats, unlinks) with the work area on a live GlusterFS
# volume (scripts/glusterfs.sh), results in bench/results/<date>-glusterfs/ as for make bench.
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
