#!/usr/bin/env bash
# Checks scripts/glusterfs.sh on a volume of its own (a fresh PLFS_GLUSTER_DIR, so a volume the
# caller runs is not touched): start answers through both clients, a second start is a no-op, the
# system's glusterd directories stay untouched, a killed client is noticed by status and remounted
# by start (data kept), a killed glusterd makes start begin anew, stop leaves no process, mount or
# namespace behind and may be called twice.
#   scripts/glusterfs-selftest.sh        (root; about 20 s)
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
G=$HERE/glusterfs.sh
export PLFS_GLUSTER_DIR=${PLFS_GLUSTER_SELFTEST_DIR:-/var/tmp/plfs-gluster-selftest}
export PLFS_GLUSTER_CLIENTS=2
fails=0
ok() { echo "ok: $*"; }
bad() {
    echo "FAIL: $*" >&2
    fails=$((fails + 1))
}
check() {
    local what=$1
    shift
    if "$@"; then ok "$what"; else bad "$what"; fi
}
system_state() {
    { find /var/lib/glusterd /run/gluster 2>/dev/null | sort; } || true
}
ns_members() {
    local ino=$1 p
    for p in /proc/[0-9]*; do
        [ "$(readlink "$p/ns/net" 2>/dev/null)" = "net:[$ino]" ] && echo "${p#/proc/}"
    done
    return 0
}
mounted_under() { grep -c " $PLFS_GLUSTER_DIR/" /proc/self/mountinfo || true; }

trap '"$G" stop >/dev/null 2>&1 || true' EXIT
"$G" stop >/dev/null 2>&1 || true
before=$(system_state)

t0=$(date +%s%N)
check "start" "$G" start
echo "start took $((($(date +%s%N) - t0) / 1000000)) ms"
eval "$("$G" env)"
check "env names two mounts" test -n "${PLFS_GLUSTER_MOUNT:-}" -a -n "${PLFS_GLUSTER_MOUNT2:-}"
check "status says all up" "$G" status
check "the mount is a GlusterFS FUSE mount" \
    grep -q " $PLFS_GLUSTER_MOUNT .* - fuse.glusterfs " /proc/self/mountinfo
head -c 300000 /dev/urandom >"$PLFS_GLUSTER_DIR/payload"
cp "$PLFS_GLUSTER_DIR/payload" "$PLFS_GLUSTER_MOUNT/payload"
check "bytes written via one client read back via the other" \
    cmp "$PLFS_GLUSTER_DIR/payload" "$PLFS_GLUSTER_MOUNT2/payload"
bricks_holding=$(find "$PLFS_GLUSTER_DIR"/bricks/b*/ -maxdepth 1 -name payload | wc -l)
check "the file lives on exactly one brick (distribute)" test "$bricks_holding" -eq 1
for i in $(seq 1 30); do : >"$PLFS_GLUSTER_MOUNT/spread.$i"; done
used=0
for b in "$PLFS_GLUSTER_DIR"/bricks/b*; do
    [ -n "$(find "$b" -maxdepth 1 -name 'spread.*' -print -quit)" ] && used=$((used + 1))
done
check "30 files spread over all 3 bricks" test "$used" -eq 3

gpid=$(cat "$PLFS_GLUSTER_DIR/run/glusterd.pid")
out=$("$G" start 2>&1)
check "a second start is a no-op" grep -q "already running" <<<"$out"
check "... keeping the same glusterd" test "$gpid" = "$(cat "$PLFS_GLUSTER_DIR/run/glusterd.pid")"

kill -9 "$(cat "$PLFS_GLUSTER_DIR/run/client-mnt2.pid")"
sleep 0.5
rc=0
"$G" status >/dev/null || rc=$?
check "status notices a dead client (exit 1)" test "$rc" -eq 1
check "start repairs it" "$G" start
check "status says all up again" "$G" status
check "... with the volume's data kept" cmp "$PLFS_GLUSTER_DIR/payload" "$PLFS_GLUSTER_MOUNT2/payload"
kill -9 "$(cat "$PLFS_GLUSTER_DIR/run/glusterd.pid")"
sleep 0.5
rc=0
"$G" status >/dev/null || rc=$?
check "status notices a dead glusterd (exit 1)" test "$rc" -eq 1
check "start restarts everything" "$G" start
check "status says all up again" "$G" status
check "... on an empty volume" test ! -e "$PLFS_GLUSTER_MOUNT/payload"

ino=$(stat -L -c %i "$PLFS_GLUSTER_DIR/netns")
check "stop" "$G" stop
check "no process left in the namespace" test -z "$(ns_members "$ino")"
check "no mount left under $PLFS_GLUSTER_DIR" test "$(mounted_under)" -eq 0
check "the namespace handle is gone" test ! -e "$PLFS_GLUSTER_DIR/netns"
check "a second stop is fine" "$G" stop
rc=0
"$G" status >/dev/null || rc=$?
check "status says nothing runs (exit 3)" test "$rc" -eq 3
check "/var/lib/glusterd and /run/gluster untouched" test "$before" = "$(system_state)"
trap - EXIT
rm -rf "$PLFS_GLUSTER_DIR"
if ((fails > 0)); then
    echo "glusterfs-selftest: $fails failure(s)" >&2
    exit 1
fi
echo "glusterfs-selftest: all checks passed"
