#!/usr/bin/env bash
# The tests that matter on a distributed file system, run with their backends on a live
# GlusterFS volume (3 bricks, two FUSE clients; scripts/glusterfs.sh): concurrent creators,
# renames over readers and the portable fallbacks (GlusterFS refuses RENAME_NOREPLACE to an absent
# name, RENAME_EXCHANGE and O_TMPFILE), processes that write and read one file, crashes, fsck,
# compaction, the namespace, and the real-tool battery (coreutils, bash, python, sqlite, MPI)
# through the preload and FUSE.
#
#   scripts/test-glusterfs.sh            (make test-glusterfs; part of make test)
#
# Runs under `scripts/glusterfs.sh run`: starts the volume when none runs and stops exactly what
# it started; a volume already running (scripts/glusterfs.sh start, then eval "$(... env)") is
# used and left running. Needs root, /dev/fuse and network namespaces; glusterfs.sh installs
# glusterfs-server and glusterfs-client when missing. Expects a release build (make build).
set -euo pipefail
self=$(realpath "$0")
cd "$(dirname "$self")/.."
if [ -z "${PLFS_GLUSTER_MOUNT:-}" ]; then
    exec scripts/glusterfs.sh run "$self" "$@"
fi
ROOT=$PLFS_GLUSTER_MOUNT/plfs-tests.$$
trap 'rm -rf "$ROOT" || true' EXIT
mkdir -p "$ROOT"
chmod 755 "$ROOT"
export PLFS_TEST_ROOT=$ROOT
# The same directory through the second client (glusterfs.sh mounts two unless told otherwise):
# tests that read on another client than the writer's use it (Fixture::plfs_other_client).
if [ -n "${PLFS_GLUSTER_MOUNT2:-}" ]; then
    export PLFS_TEST_ROOT2=$PLFS_GLUSTER_MOUNT2/plfs-tests.$$
else
    echo "test-glusterfs: no second client (PLFS_GLUSTER_CLIENTS=1): cross-client reads are not tested" >&2
fi
echo "test-glusterfs: backends under $ROOT (GlusterFS volume, client $PLFS_GLUSTER_MOUNT)" >&2

# The core's tests of concurrency, crashes, repair and compaction, on the volume. `--workspace`
# keeps the features of make build's, so nothing is compiled again. The million-record and the
# property test of compaction test its logic, not the backend (minutes on the volume): they run on
# local disk in make test.
cargo test --release --workspace \
    --test backends --test multiprocess --test multiprocess_live --test small_visibility \
    --test crash --test fsck --test namespace --test open_handles --test corruption \
    --test compaction --test legacy --test reopen \
    -- --skip compaction_of_a_million_records --skip model_property

# The real tools through the preload and FUSE, on the volume (coreutils, tar, bash, python, MPI-IO
# N-1 strided at np 2 and 4 read back by another rank count, sqlite3 in WAL mode with two writers,
# rsync, crash trials, unlink while open, PLFS 2.5.1 fixtures, and test_advise: plfs advise's
# prediction against pio plain and through ldplfs on the volume, issue 24). Left to local disk in
# make test: test_modes (trees of 10,000 small files copied, extracted, checked and removed through
# each front end: tens of minutes at GlusterFS's 2-6 ms per create, rename or mkdir), and the
# descriptor soak and system-call budget of the preload (test_fd_soak, test_percall: what they count
# does not depend on the backend, and 3,000-iteration loops of stat and fallocate take minutes
# there). test_signals stays on local disk too, as a known defect (2026-12-02): on the volume its
# writer of 12,000 lines, some from a signal handler, ran for over 90 minutes at full CPU until
# killed (a handler's write on a plfs descriptor answers EAGAIN and the program retries; on the
# volume the interrupted write is slow enough that the retries never end). Not yet understood.
python3 -m pytest tests/battery -q -p no:cacheprovider \
    --ignore=tests/battery/test_modes.py --ignore=tests/battery/test_fd_soak.py \
    --ignore=tests/battery/test_percall.py --ignore=tests/battery/test_signals.py

# What the volume itself counts (issue 22): brick operations per create, stat, read, unlink and
# per file of four writers, through ldplfs, against ceilings a little above today's figures, so a
# change that brings back a directory open or a listing fails here (bench/brickops.py --check).
BRICKOPS_FILES=10 python3 bench/brickops.py --check
