#!/usr/bin/env bash
# A private MooseFS (master + 3 chunkservers + mfsmount) on this machine, for benchmarks; the
# same scheme as scripts/glusterfs.sh, whose header explains the private network namespace.
#
#   scripts/moosefs.sh start|stop|status|env
#   scripts/moosefs.sh run CMD [ARG...]   (starts it if none runs, runs CMD with `env`'s variables,
#                                          stops what it started however CMD ends)
#
# Needs root and /dev/fuse; installs moosefs-master, moosefs-chunkserver and moosefs-client when
# missing. All state (metadata, chunk directories, configuration, logs, the mount point, the
# namespace handle) lives under PLFS_MOOSEFS_DIR (default /var/tmp/plfs-moosefs); /etc/mfs and
# /var/lib/mfs are not used. `start` gives a fresh, empty file system (on a running one: "already
# running"); `stop` kills exactly the processes in its namespace and deletes the data.
# Settings: the mount's root gets trash time 0 (an unlink frees its chunks at once instead of
# keeping them 24 h, so repeated benchmark runs do not fill the disk) and goal 1 (one copy per
# chunk, spread over the 3 chunkservers: distributed, not replicated, like the GlusterFS volume).
# The mfs tools (mfssettrashtime, mfsgetgoal, ...) talk to the master directly: run them through
# `nsenter --net=$PLFS_MOOSEFS_DIR/netns`.
#   PLFS_MOOSEFS_DIR, PLFS_MOOSEFS_IP (default 10.77.0.2), PLFS_MOOSEFS_TIMEOUT (default 60 s),
#   PLFS_MOOSEFS_CLIENTS: mfsmounts made by start, 1 or 2 (default 2: mnt and mnt2, two client
#   sessions with their own caches, as two compute nodes would have; as scripts/glusterfs.sh)
set -euo pipefail

DIR=${PLFS_MOOSEFS_DIR:-/var/tmp/plfs-moosefs}
IP=${PLFS_MOOSEFS_IP:-10.77.0.2}
TIMEOUT=${PLFS_MOOSEFS_TIMEOUT:-60}
CLIENTS=${PLFS_MOOSEFS_CLIENTS:-2}
NETNS=$DIR/netns
MNT=$DIR/mnt
MNT2=$DIR/mnt2
LOG=$DIR/log
ETC=$DIR/etc
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CHUNKSERVERS=3

say() { echo "moosefs.sh: $*" >&2; }
die() {
    say "error: $*"
    exit 1
}

require_root() { [ "$(id -u)" -eq 0 ] || die "must run as root (network namespace, FUSE mounts)"; }

ensure_installed() {
    if ! command -v mfsmaster >/dev/null || ! command -v mfschunkserver >/dev/null || ! command -v mfsmount >/dev/null; then
        "$HERE/install-deps.sh" moosefs-master moosefs-chunkserver moosefs-client
    fi
    local t
    for t in mfsmaster mfschunkserver mfsmount mfssettrashtime mfssetgoal unshare nsenter ip awk timeout; do
        command -v "$t" >/dev/null || die "$t not found (scripts/install-deps.sh moosefs-master moosefs-chunkserver moosefs-client)"
    done
    [ -c /dev/fuse ] || die "/dev/fuse is missing (modprobe fuse)"
}

netns_inode() {
    [ -e "$NETNS" ] || return 0
    [ "$(stat -f -L -c %T "$NETNS" 2>/dev/null || true)" = nsfs ] || return 0
    stat -L -c %i "$NETNS"
}

netns_pids() {
    local ino p
    ino=$(netns_inode)
    [ -n "$ino" ] || return 0
    for p in /proc/[0-9]*; do
        [ "$(readlink "$p/ns/net" 2>/dev/null)" = "net:[$ino]" ] && echo "${p#/proc/}"
    done
    return 0
}

count_comm() {
    local p n=0
    for p in $(netns_pids); do
        [ "$(cat "/proc/$p/comm" 2>/dev/null)" = "$1" ] &&
            ! grep -q '^State:[[:space:]]*Z' "/proc/$p/status" 2>/dev/null && n=$((n + 1))
    done
    echo "$n"
}

is_mounted() { awk -v m="$1" '$5 == m { found = 1 } END { exit !found }' /proc/self/mountinfo; }

# Whether the client mounted at $1 (default the first) writes and reads back a file.
mount_answers() {
    local m=${1:-$MNT}
    is_mounted "$m" || return 1
    local f=$m/.moosefs-sh-probe.$$ out
    out=$(timeout 10 sh -c 'echo plfs-moosefs-probe > "$1" && cat "$1"' _ "$f" 2>/dev/null) || return 1
    timeout 10 rm -f "$f" || return 1
    [ "$out" = plfs-moosefs-probe ]
}

# Whether the second client is mounted and answers (and the first sees what it wrote).
second_answers() {
    mount_answers "$MNT2" || return 1
    local f=.moosefs-sh-probe2.$$ out
    echo two >"$MNT2/$f" || return 1
    out=$(cat "$MNT/$f" 2>/dev/null)
    rm -f "$MNT2/$f"
    [ "$out" = two ]
}

all_up() {
    [ "$(count_comm mfsmaster)" -ge 1 ] && [ "$(count_comm mfschunkserver)" -eq $CHUNKSERVERS ] && mount_answers &&
        { [ "$CLIENTS" = 1 ] || second_answers; }
}

log_tail() {
    local f
    for f in "$LOG"/*.log; do
        [ -s "$f" ] || continue
        echo "---- ${f#"$DIR"/} (last 10 lines) ----" >&2
        tail -n 10 "$f" >&2
    done
}

fail_start() {
    say "error: $*"
    log_tail
    say "stopping what was started"
    do_stop >/dev/null 2>&1 || true
    exit 1
}

wait_for() {
    local what=$1 t=0
    shift
    until "$@"; do
        t=$((t + 1))
        ((t <= TIMEOUT * 4)) || fail_start "$what did not happen within ${TIMEOUT}s"
        sleep 0.25
    done
}

# Settings common to the daemons: run as root, no nice/oom/mlock changes to the machine.
common_cfg() {
    printf '%s\n' "WORKING_USER = root" "WORKING_GROUP = root" "NICE_LEVEL = 0" "LOCK_MEMORY = 0" \
        "DISABLE_OOM_KILLER = 0" "SYSLOG_IDENT = plfs-$1"
}

do_start() {
    require_root
    ensure_installed
    if all_up; then
        say "already running: master at $IP, mount $MNT"
        return 0
    fi
    if [ -n "$(netns_inode)" ] || is_mounted "$MNT"; then
        say "a partly running or stale instance is in $DIR: stopping it, starting an empty one"
        do_stop
    fi
    case "$DIR" in /* ) ;; *) die "PLFS_MOOSEFS_DIR must be an absolute path: $DIR" ;; esac
    case "$CLIENTS" in 1 | 2) ;; *) die "PLFS_MOOSEFS_CLIENTS must be 1 or 2" ;; esac
    local t0=$SECONDS i
    rm -rf "$DIR/master" "$DIR"/cs* "$ETC" "$MNT" "$MNT2"
    [ -d "$LOG" ] && rm -rf "$LOG.old" && mv "$LOG" "$LOG.old"
    mkdir -p "$DIR/master" "$ETC" "$LOG" "$MNT"
    cp /var/lib/mfs/metadata.mfs.empty "$DIR/master/metadata.mfs"
    echo "* / rw,alldirs,admin,maproot=0:0" >"$ETC/mfsexports.cfg"
    : >"$ETC/mfstopology.cfg"
    {
        common_cfg mfsmaster
        echo "DATA_PATH = $DIR/master"
        echo "EXPORTS_FILENAME = $ETC/mfsexports.cfg"
        echo "TOPOLOGY_FILENAME = $ETC/mfstopology.cfg"
        echo "MATOML_LISTEN_HOST = $IP"
        echo "MATOCS_LISTEN_HOST = $IP"
        echo "MATOCL_LISTEN_HOST = $IP"
        # chunkservers registered within 1 s are enough to write: no 60 s replication hold-off
        echo "REPLICATIONS_DELAY_INIT = 0"
        # the default queues of 1,000,000 endangered/undergoal chunks cost the master ~100 MiB
        echo "PRIORITY_QUEUES_LENGTH = 10000"
        echo "MISSING_LOG_CAPACITY = 1000"
    } >"$ETC/mfsmaster.cfg"

    touch "$NETNS"
    unshare --net="$NETNS" true || fail_start "cannot create a network namespace at $NETNS"
    nsenter --net="$NETNS" ip link set lo up
    nsenter --net="$NETNS" ip addr add "$IP/32" dev lo

    nsenter --net="$NETNS" mfsmaster -f -c "$ETC/mfsmaster.cfg" </dev/null >"$LOG/master.log" 2>&1 &
    disown
    wait_for "the master listening" sh -c "nsenter --net='$NETNS' ss -ltn | grep -q ':9421 '"
    for i in $(seq 1 $CHUNKSERVERS); do
        mkdir -p "$DIR/cs$i/data" "$DIR/cs$i/hdd"
        echo "$DIR/cs$i/hdd" >"$ETC/mfshdd$i.cfg"
        {
            common_cfg "mfschunkserver$i"
            echo "DATA_PATH = $DIR/cs$i/data"
            echo "HDD_CONF_FILENAME = $ETC/mfshdd$i.cfg"
            echo "BIND_HOST = $IP"
            echo "MASTER_HOST = $IP"
            echo "CSSERV_LISTEN_HOST = $IP"
            echo "CSSERV_LISTEN_PORT = $((9412 + 10 * i))"
            # the chunk directories share one disk with everything else: keep only 64 MiB free
            echo "HDD_LEAVE_SPACE_DEFAULT = 64MiB"
        } >"$ETC/mfschunkserver$i.cfg"
        nsenter --net="$NETNS" mfschunkserver -f -c "$ETC/mfschunkserver$i.cfg" </dev/null >"$LOG/chunkserver$i.log" 2>&1 &
        disown
    done
    wait_for "$CHUNKSERVERS chunkservers running" test "$(count_comm mfschunkserver)" -eq $CHUNKSERVERS
    nsenter --net="$NETNS" mfsmount "$MNT" -H "$IP" -P 9421 </dev/null >"$LOG/mount.log" 2>&1 ||
        fail_start "mfsmount failed"
    wait_for "the mount answering" mount_answers
    nsenter --net="$NETNS" mfssettrashtime -r 0 "$MNT" >>"$LOG/setup.log" 2>&1 || fail_start "mfssettrashtime failed"
    nsenter --net="$NETNS" mfssetgoal -r 1 "$MNT" >>"$LOG/setup.log" 2>&1 || fail_start "mfssetgoal failed"
    local mounts=$MNT
    if [ "$CLIENTS" = 2 ]; then
        mkdir -p "$MNT2"
        nsenter --net="$NETNS" mfsmount "$MNT2" -H "$IP" -P 9421 </dev/null >"$LOG/mount2.log" 2>&1 ||
            fail_start "the second mfsmount failed"
        wait_for "the second mount answering" second_answers
        mounts="$MNT $MNT2"
    fi
    say "started MooseFS (master + $CHUNKSERVERS chunkservers) at $IP in $((SECONDS - t0)) s; mounts $mounts"
}

do_stop() {
    require_root
    local m
    for m in "$MNT" "$MNT2"; do
        if is_mounted "$m"; then
            umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
        fi
    done
    local pids t=0
    pids=$(netns_pids)
    if [ -n "$pids" ]; then
        # shellcheck disable=SC2086
        kill -TERM $pids 2>/dev/null || true
        while [ -n "$(netns_pids)" ] && ((t < 60)); do
            sleep 0.25
            t=$((t + 1))
        done
        pids=$(netns_pids)
        if [ -n "$pids" ]; then
            say "killing what did not stop on SIGTERM: $pids"
            # shellcheck disable=SC2086
            kill -KILL $pids 2>/dev/null || true
            sleep 0.5
        fi
    fi
    for m in "$MNT" "$MNT2"; do
        is_mounted "$m" && umount -l "$m" 2>/dev/null
    done
    if [ -e "$NETNS" ]; then
        [ -n "$(netns_inode)" ] && { umount "$NETNS" 2>/dev/null || umount -l "$NETNS" || true; }
        rm -f "$NETNS"
    fi
    rm -rf "$DIR/master" "$DIR"/cs* "$ETC"
    for m in "$MNT" "$MNT2"; do
        [ -d "$m" ] && rmdir "$m" 2>/dev/null
    done
    return 0
}

do_status() {
    local m c up=0 down=0
    m=$(count_comm mfsmaster)
    c=$(count_comm mfschunkserver)
    echo "namespace: $([ -n "$(netns_inode)" ] && echo "$NETNS (address $IP)" || echo none)"
    echo "master: $((m > 0 ? 1 : 0)) running"
    echo "chunkservers: $c of $CHUNKSERVERS running"
    if mount_answers; then echo "client: $MNT answers"; else echo "client: $MNT does not answer"; fi
    if is_mounted "$MNT2"; then
        if second_answers; then echo "client: $MNT2 answers"; else echo "client: $MNT2 does not answer"; fi
    fi
    ((m >= 1)) && up=$((up + 1)) || down=$((down + 1))
    ((c == CHUNKSERVERS)) && up=$((up + 1)) || down=$((down + 1))
    mount_answers && up=$((up + 1)) || down=$((down + 1))
    if ((down == 0)); then return 0; elif ((up == 0)); then return 3; else return 1; fi
}

do_env() {
    echo "export PLFS_MOOSEFS_DIR='$DIR'"
    echo "export PLFS_MOOSEFS_SERVER='$IP'"
    echo "export PLFS_MOOSEFS_MOUNT='$MNT'"
    if is_mounted "$MNT2"; then
        echo "export PLFS_MOOSEFS_MOUNT2='$MNT2'"
    fi
}

# `run CMD...`: what make bench-moosefs uses. A file system started here is stopped when CMD
# ends, however it ends; one that was running is left running.
do_run() {
    local rc=0
    if ! all_up; then
        trap 'rc=$?; do_stop || rc=1; exit $rc' EXIT
        do_start
    fi
    eval "$(do_env)"
    "$@" || rc=$?
    return $rc
}

case "${1:-}" in
start) do_start ;;
run)
    shift
    (($# > 0)) || die "usage: $0 run CMD [ARG...]"
    do_run "$@"
    ;;
stop) do_stop ;;
status) do_status ;;
env) do_env ;;
*)
    echo "usage: $0 start|stop|status|env|run CMD [ARG...]" >&2
    exit 2
    ;;
esac
