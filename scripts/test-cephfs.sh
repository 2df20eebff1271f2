#!/usr/bin/env bash
# The tests whose answer depends on the distributed file system, again with their backends on a
# live CephFS (one mon, one mgr, two memstore OSDs, one MDS, two ceph-fuse clients; scripts/cephfs.sh):
# what make test-glusterfs and make test-moosefs run on their volumes (the core's concurrency,
# crash, fsck, compaction, namespace, 1-N visibility, sequential-read and thread tests, and the
# real-tool battery through the preload and FUSE: coreutils, bash, python, sqlite, MPI-IO N-1,
# plfs advise's check), and the cross-client tests (tests/battery/test_cross_client.py: a file
# closed through one ceph-fuse client is exact through the other at once, and two clients
# writing one N-1 file), and the MDS requests per operation held to their ceilings (bench/cephops.py
# --check).
#
#   scripts/test-cephfs.sh            (make test-cephfs: by hand, about 22 minutes)
#   scripts/test-cephfs.sh --ci       (make test-cephfs-ci, part of make test: the tests whose
#                                     answer depends on two clients of one file system, a few minutes)
#
# Runs under `scripts/cephfs.sh run`: starts the cluster when none runs and stops exactly what it
# started; one already running (scripts/cephfs.sh start) is used and left running. Needs root and
# /dev/fuse; cephfs.sh installs the ceph packages when missing. Expects a release build (make build).
# Fails when the second client is missing: the cross-client tests are the point of this file system.
set -euo pipefail
self=$(realpath "$0")
cd "$(dirname "$self")/.."
if [ -z "${PLFS_CEPHFS_MOUNT:-}" ]; then
    exec scripts/cephfs.sh run "$self" "$@"
fi
if [ -z "${PLFS_CEPHFS_MOUNT2:-}" ]; then
    echo "test-cephfs: no second ceph-fuse client (PLFS_CEPHFS_CLIENTS=1?): the cross-client tests need two" >&2
    exit 1
fi
ROOT=$PLFS_CEPHFS_MOUNT/plfs-tests.$$
trap 'rm -rf "$ROOT" || true' EXIT
mkdir -p "$ROOT"
chmod 755 "$ROOT"
export PLFS_TEST_ROOT=$ROOT
# The same directory through the second client: the core's tests that read on another client
# than the writer's use it (Fixture::plfs_other_client), and test_cross_client.py, which is
# collected only when PLFS_CROSS_CLIENT is set and fails unless the two roots are one directory
# seen through two different mounts.
export PLFS_TEST_ROOT2=$PLFS_CEPHFS_MOUNT2/plfs-tests.$$
export PLFS_CROSS_CLIENT=1
# A reader on the second client makes each write of multiprocess_live's appender a synchronous OSD
# write: 5,000 records of its fresh-reader test instead of 30,000 (over 120 s here).
export PLFS_TEST_FRESH_RECORDS=5000
echo "test-cephfs: backends under $ROOT (CephFS, clients $PLFS_CEPHFS_MOUNT and $PLFS_CEPHFS_MOUNT2)" >&2

if [ "${1:-}" = --ci ]; then
    # What only a second client can show, and the N-1 basics on this file system: the core's
    # multi-process tests (fresh readers on the other client, appends, visibility of 1-N files),
    # and the battery's cross-client tests, appends of several processes, MPI-IO N-1, and the
    # application-shaped programs on parallel HDF5, MPI-IO subarrays and PnetCDF (one client, and
    # BT-IO and FLASH-IO with their ranks split between the two clients).
    cargo test --release --workspace \
        --test backends --test multiprocess --test multiprocess_live --test small_visibility
    python3 -m pytest -q -p no:cacheprovider tests/battery/test_cross_client.py \
        tests/battery/test_append.py tests/battery/test_programs.py tests/battery/test_mdtest_hard.py \
        tests/battery/test_io_libraries.py \
        -k "cross or append or shell or mpi or neighbour or packed"
    # The MDS requests per create, stat, read, unlink and 4-writer open, as the MDS counts them,
    # held to their ceilings (a regression pin, as bench/brickops.py --check on GlusterFS).
    CEPHOPS_FILES=10 python3 bench/cephops.py --check
    exit 0
fi

# The union of test-glusterfs.sh's and test-moosefs.sh's core tests. `--workspace` keeps the
# features of make build's, so nothing is compiled again. The million-record and the property
# test of compaction test its logic, not the backend: they run on local disk in make test.
cargo test --release --workspace \
    --test backends --test multiprocess --test multiprocess_live --test small_visibility \
    --test crash --test fsck --test namespace --test open_handles --test corruption \
    --test compaction --test legacy --test reopen --test sequential_reads --test threads \
    -- --skip compaction_of_a_million_records --skip model_property

# The real tools through the preload and FUSE, as test-glusterfs.sh runs them (it says why
# test_modes, test_fd_soak and test_percall stay on local disk), with test_cross_client.py.
python3 -m pytest tests/battery -q -p no:cacheprovider \
    --ignore=tests/battery/test_modes.py --ignore=tests/battery/test_fd_soak.py \
    --ignore=tests/battery/test_percall.py --ignore=tests/battery/test_signals.py
CEPHOPS_FILES=10 python3 bench/cephops.py --check
