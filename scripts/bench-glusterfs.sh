#!/usr/bin/env bash
# `make bench-glusterfs`: the benchmark's bandwidth and metadata sections (plain N-1 and N-N files,
# ldplfs, FUSE and the C API; creates, stats, unlinks) with the work area on a live GlusterFS
# volume (scripts/glusterfs.sh), results in bench/results/<date>-glusterfs/ as for make bench.
# Starts the volume when none runs and stops exactly what it started. Needs root, /dev/fuse and
# network namespaces; expects make build and make -C bench programs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh glusterfs-server glusterfs-client

started=""
cleanup() {
    local rc=$?
    if [ -n "${WORK:-}" ] && [ -d "$WORK" ]; then
        rm -rf "$WORK" || true
    fi
    if [ -n "$started" ]; then
        scripts/glusterfs.sh stop || rc=1
    fi
    exit $rc
}
trap cleanup EXIT

status=0
scripts/glusterfs.sh status >/dev/null 2>&1 || status=$?
if [ "$status" -ne 0 ]; then
    started=1
    scripts/glusterfs.sh start
fi
eval "$(scripts/glusterfs.sh env)"
WORK=$PLFS_GLUSTER_MOUNT/plfs-bench.$$
mkdir -p "$WORK"
chmod 755 "$WORK"
${PYTHON:-python3} bench/run.py --profile glusterfs --only bandwidth,meta --tmpdir "$WORK" "$@"
