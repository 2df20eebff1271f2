#!/usr/bin/env bash
# `make bench-moosefs`: what make bench-glusterfs measures, on a live MooseFS (scripts/moosefs.sh:
# a master, 3 chunkservers and two client mounts in a private network namespace). The
# benchmark's bandwidth and metadata sections with the work area on the mount, results in
# bench/results/<date>-moosefs/ as for make bench; then the master's operations per create, stat,
# read, unlink and 4-writer open (bench/mfsops.py, counted by `mfscli -SMO`: the MooseFS profile
# beside GlusterFS's brick operations), saved as mfsops.json; then the system calls per write of
# 4 N-1 writers and the peak RSS of a writer of 1,000,000 64-byte writes (bench/writer_counts.py),
# saved as writer_counts.json; then issue 22's bandwidth protocol (bench/n1_protocol.py: plfs
# against plain N-1 and N-N, read back through the second client mount), saved as
# n1_protocol.txt.
# Runs under `scripts/moosefs.sh run` (starts MooseFS when none runs, stops exactly what it
# started). Needs root, /dev/fuse and network namespaces; expects make build and make -C bench
# programs.
set -euo pipefail
self=$(realpath "$0")
cd "$(dirname "$self")/.."
# shellcheck source=scripts/bench-dfs-common.sh
. scripts/bench-dfs-common.sh
if [ -z "${PLFS_MOOSEFS_MOUNT:-}" ]; then
    exec scripts/moosefs.sh run "$self" "$@"
fi
command -v mfscli >/dev/null || scripts/install-deps.sh moosefs-cli
sections moosefs "$PLFS_MOOSEFS_MOUNT" "$@"
out=$(ls -d bench/results/*-moosefs 2>/dev/null | sort | tail -1)
LIB=$(preload_lib "$@")
${PYTHON:-python3} bench/mfsops.py --save "$out/mfsops.json" "$LIB"
writer_and_protocol "$PLFS_MOOSEFS_MOUNT" "${PLFS_MOOSEFS_MOUNT2:-}" "$out" "MooseFS (PLFS_MOOSEFS_CLIENTS=1)"
