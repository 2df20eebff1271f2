#!/usr/bin/env bash
# A write that GlusterFS accepted and then could not keep (a full brick) is reported through
# ldplfs as it is for a plain file, and the file reads back as the bytes that landed
# (scripts/full_brick.py says what is checked). Starts a GlusterFS volume of its own, 3 bricks on
# a 200 MiB ext4 file system of their own (PLFS_GLUSTER_BRICKS_MB) with one client, and stops it
# after; run by make test-glusterfs after the main volume's tests. Needs root, /dev/fuse, network
# namespaces and loop devices; expects a release build (make build).
#
#   scripts/test-full-brick.sh
set -euo pipefail
cd "$(dirname "$(realpath "$0")")/.."
export PLFS_GLUSTER_DIR=${PLFS_FULL_BRICK_DIR:-/var/tmp/plfs-full-brick}
export PLFS_GLUSTER_IP=${PLFS_FULL_BRICK_IP:-10.77.0.2}
export PLFS_GLUSTER_CLIENTS=1
export PLFS_GLUSTER_BRICKS_MB=200
# The brick refuses writes below `storage.reserve` (1 % by default) on its own schedule, checked
# every few seconds; at 0 the file system itself answers, at once.
exec scripts/glusterfs.sh run bash -c \
    'scripts/glusterfs.sh gluster volume set plfs storage.reserve 0 >/dev/null &&
     python3 scripts/full_brick.py "$1"' full-brick "$(pwd)/target/release/libldplfs.so"
