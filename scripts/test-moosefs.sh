#!/usr/bin/env bash
# The tests whose answer depends on the distributed file system, again with their backends on a
# live MooseFS (master + 3 chunkservers + two mfsmounts, goal 1; scripts/moosefs.sh): processes
# that write and read one file (also a reader on the second client), writers killed at random
# points, fsck, the 1-N visibility rule (its timestamp window on a file system whose clock is a
# server's), sequential reads, and
# `plfs advise`'s prediction against pio plain and through ldplfs on it (issue 24: the third
# file system it is validated on, beside local disk and GlusterFS).
#
#   scripts/test-moosefs.sh            (make test-moosefs; part of make test)
#
# Starts MooseFS when none runs and stops exactly what it started (moosefs.sh stop kills the
# processes of its own network namespace and deletes its data); one already running (moosefs.sh
# start) is used and left running. Needs root, /dev/fuse and network namespaces; moosefs.sh
# installs moosefs-master, moosefs-chunkserver and moosefs-client when missing. Expects a release
# build (make build).
set -euo pipefail
cd "$(dirname "$(realpath "$0")")/.."
started=0
if ! scripts/moosefs.sh status >/dev/null 2>&1; then
    scripts/moosefs.sh start
    started=1
fi
eval "$(scripts/moosefs.sh env)"
ROOT=$PLFS_MOOSEFS_MOUNT/plfs-tests.$$
cleanup() {
    rm -rf "$ROOT" || true
    if [ "$started" = 1 ]; then
        scripts/moosefs.sh stop
    fi
}
trap cleanup EXIT
mkdir -p "$ROOT"
chmod 755 "$ROOT"
export PLFS_TEST_ROOT=$ROOT
# The same directory through the second client (moosefs.sh mounts two unless told otherwise):
# tests that read on another client than the writer's use it (Fixture::plfs_other_client).
if [ -n "${PLFS_MOOSEFS_MOUNT2:-}" ]; then
    export PLFS_TEST_ROOT2=$PLFS_MOOSEFS_MOUNT2/plfs-tests.$$
else
    echo "test-moosefs: no second client (PLFS_MOOSEFS_CLIENTS=1): cross-client reads are not tested" >&2
fi
echo "test-moosefs: backends under $ROOT (MooseFS, mount $PLFS_MOOSEFS_MOUNT)" >&2

# `--workspace` keeps the features of make build's, so nothing is compiled again. tests/crash.rs
# and multiprocess_live's fresh readers are the tests that found MooseFS's stale page cache
# (docs/backends.md, "MooseFS").
cargo test --release --workspace \
    --test backends --test multiprocess --test multiprocess_live --test crash --test fsck \
    --test small_visibility --test sequential_reads --test threads

python3 -m pytest tests/battery/test_advise.py -q -p no:cacheprovider
