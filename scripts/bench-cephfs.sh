#!/usr/bin/env bash
# `make bench-cephfs`: what make bench-glusterfs measures, on a live CephFS (scripts/cephfs.sh: a
# mon, a mgr, two memstore OSDs, an MDS and two ceph-fuse clients of one file system). The
# benchmark's bandwidth and metadata sections with the work area on the first client's mount,
# results in bench/results/<date>-cephfs/ as for make bench; then the MDS requests and OSD
# operations per create, stat, read, unlink and 4-writer open (bench/cephops.py, counted by the
# daemons' `perf dump`), saved as cephops.json; then the system calls per write of 4 N-1 writers
# and the peak RSS of a writer of 1,000,000 64-byte writes (bench/writer_counts.py), saved as
# writer_counts.json; then issue 22's bandwidth protocol with the ranks split between the two
# clients, without and with an fsync before close (bench/n1_protocol.py --split --fsync no,yes:
# plfs against plain N-1 and N-N, each rank reading records the other client wrote), saved as
# n1_protocol.txt; then the I/O libraries' programs with the ranks split the same way
# (bench/io_libraries.py --split: FLASH-IO, BT-IO, PnetCDF), saved as io_libraries.json.
# Runs under `scripts/cephfs.sh run` (starts the cluster when none runs, stops exactly what it
# started). Needs root and /dev/fuse; expects make build and make -C bench programs.
set -euo pipefail
self=$(realpath "$0")
cd "$(dirname "$self")/.."
# shellcheck source=scripts/bench-dfs-common.sh
. scripts/bench-dfs-common.sh
if [ -z "${PLFS_CEPHFS_MOUNT:-}" ]; then
    exec scripts/cephfs.sh run "$self" "$@"
fi
[ -n "${PLFS_CEPHFS_MOUNT2:-}" ] || { echo "bench-cephfs: no second client (PLFS_CEPHFS_CLIENTS=1?)" >&2; exit 1; }
sections cephfs "$PLFS_CEPHFS_MOUNT" "$@"
out=$(ls -d bench/results/*-cephfs 2>/dev/null | sort | tail -1)
LIB=$(preload_lib "$@")
${PYTHON:-python3} bench/cephops.py --save "$out/cephops.json" "$LIB"
N1_PROTOCOL_ARGS="--split --fsync no,yes" writer_and_protocol "$PLFS_CEPHFS_MOUNT" "$PLFS_CEPHFS_MOUNT2" "$out" "CephFS"
# Seed 000's Figs. 4 and 5 (and PnetCDF) with the ranks split between the two clients: the I/O
# libraries' programs, plain against plfs (bench/io_libraries.py), saved as io_libraries.json and
# io_libraries-cephfs.png.
${PYTHON:-python3} bench/io_libraries.py --mnt "$PLFS_CEPHFS_MOUNT" --mnt2 "$PLFS_CEPHFS_MOUNT2" --split --lib "$LIB" \
    --label CephFS --save "$out/io_libraries.json" --png "$out"
