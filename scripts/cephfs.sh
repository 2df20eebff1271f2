#!/usr/bin/env bash
# A private single-machine Ceph cluster with CephFS on this machine, for tests and benchmarks: one
# mon, one mgr, two OSDs whose object store is memstore (the data in RAM), one MDS, pools of
# size 1, and two independent ceph-fuse clients of the one file system (mnt and mnt2: two client
# sessions with their own caches and capabilities, as two compute nodes would have).
#
#   scripts/cephfs.sh start|stop|status|env
#   scripts/cephfs.sh run CMD [ARG...]    (starts it if none runs, runs CMD with `env`'s variables,
#                                          stops what it started however CMD ends)
#   scripts/cephfs.sh ceph ARG...         the ceph CLI on the running cluster (`ceph -s`, `ceph
#                                          daemon mds.a perf dump`: the MDS's request counts)
#
# Needs root and /dev/fuse; installs ceph-mon, ceph-mgr, ceph-osd, ceph-mds, ceph-fuse and
# ceph-common when missing (scripts/install-deps.sh). Everything binds to 127.0.0.1, the mon to
# PLFS_CEPHFS_PORT and the other daemons to ports just above it (not Ceph's defaults, so a system
# cluster cannot collide), and every path (ceph.conf, the keyring, the daemons' data, logs, admin
# sockets, pid files, the mount points) lives under PLFS_CEPHFS_DIR; /etc/ceph, /var/lib/ceph,
# /var/log/ceph and /var/run/ceph are not used. `start` gives a fresh, empty file system (on a
# running one: "already running"); `stop` unmounts the clients and kills exactly the processes
# that run with this directory's ceph.conf (found in /proc by their command line, so an MDS that
# respawned under a new pid is found too), then deletes the data and keeps the logs.
#
# Why the settings (ceph.conf below says each): memstore keeps objects in the OSD's memory, so a
# start takes seconds and nothing is written to disk (an OSD grows with the data stored: the
# tests' few hundred MiB); `stop` uses SIGKILL, since a memstore OSD asked to stop writes its
# whole store to disk first and the MDS may ignore SIGTERM (it hangs in "shutting down" or
# respawns), and the cluster is thrown away anyway. Daemons start in a session of their own with
# only /dev/null and a log file as descriptors: one that inherited the caller's pipe (pytest's,
# CI's) would keep it open and hang the caller.
#
# Settings (environment):
#   PLFS_CEPHFS_DIR      state directory (default /var/tmp/plfs-cephfs)
#   PLFS_CEPHFS_PORT     the mon's port on 127.0.0.1 (default 13300; daemons use the next 100)
#   PLFS_CEPHFS_CLIENTS  ceph-fuse clients mounted by start: 1 or 2 (default 2: mnt and mnt2)
#   PLFS_CEPHFS_OSD_MB   memstore capacity of each OSD in MiB (default 2560)
#   PLFS_CEPHFS_TIMEOUT  seconds start waits for each step (default 60)
set -euo pipefail

DIR=${PLFS_CEPHFS_DIR:-/var/tmp/plfs-cephfs}
PORT=${PLFS_CEPHFS_PORT:-13300}
CLIENTS=${PLFS_CEPHFS_CLIENTS:-2}
OSD_MB=${PLFS_CEPHFS_OSD_MB:-2560}
TIMEOUT=${PLFS_CEPHFS_TIMEOUT:-60}
OSDS=2
CONF=$DIR/ceph.conf
KEYRING=$DIR/keyring
RUN=$DIR/run
LOG=$DIR/log
MNT=$DIR/mnt
MNT2=$DIR/mnt2
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

say() { echo "cephfs.sh: $*" >&2; }
die() {
    say "error: $*"
    exit 1
}

require_root() { [ "$(id -u)" -eq 0 ] || die "must run as root (FUSE mounts)"; }

ensure_installed() {
    local t missing=0
    for t in ceph-mon ceph-mgr ceph-osd ceph-mds ceph-fuse ceph monmaptool ceph-authtool; do
        command -v "$t" >/dev/null || missing=1
    done
    if [ "$missing" = 1 ]; then
        "$HERE/install-deps.sh" cephfs
    fi
    for t in ceph-mon ceph-mgr ceph-osd ceph-mds ceph-fuse ceph monmaptool ceph-authtool setsid grep timeout awk; do
        command -v "$t" >/dev/null || die "$t not found (scripts/install-deps.sh cephfs)"
    done
    [ -c /dev/fuse ] || die "/dev/fuse is missing (modprobe fuse)"
}

# The pids of the processes started with this directory's ceph.conf (`-c $CONF` in their argv).
own_pids() {
    local f p
    for f in $(grep -lzxF -f <(printf "%s\n" "$CONF") /proc/[0-9]*/cmdline 2>/dev/null); do
        p=${f#/proc/}
        p=${p%/cmdline}
        grep -q '^State:[[:space:]]*Z' "/proc/$p/status" 2>/dev/null || echo "$p"
    done
    return 0
}

# How many of our processes run program $1.
count_comm() {
    local p n=0
    for p in $(own_pids); do
        [ "$(cat "/proc/$p/comm" 2>/dev/null)" = "$1" ] && n=$((n + 1))
    done
    echo "$n"
}

is_mounted() { awk -v m="$1" '$5 == m { found = 1 } END { exit !found }' /proc/self/mountinfo; }

# The ceph CLI on this cluster, as client.admin, never waiting long.
cephcli() { timeout 30 ceph -c "$CONF" --connect-timeout 20 "$@"; }

# Whether the client mounted at $1 (default the first) writes and reads back a file.
mount_answers() {
    local m=${1:-$MNT}
    is_mounted "$m" || return 1
    local f=$m/.cephfs-sh-probe.$$ out
    out=$(timeout 10 sh -c 'echo plfs-cephfs-probe > "$1" && cat "$1"' _ "$f" 2>/dev/null) || return 1
    timeout 10 rm -f "$f" || return 1
    [ "$out" = plfs-cephfs-probe ]
}

# Whether the second client is mounted and answers (and the first sees what it wrote).
second_answers() {
    mount_answers "$MNT2" || return 1
    local f=.cephfs-sh-probe2.$$ out
    timeout 10 sh -c 'echo two > "$1"' _ "$MNT2/$f" || return 1
    out=$(timeout 10 cat "$MNT/$f" 2>/dev/null)
    timeout 10 rm -f "$MNT2/$f"
    [ "$out" = two ]
}

all_up() {
    [ -f "$CONF" ] && [ "$(count_comm ceph-mon)" -eq 1 ] && [ "$(count_comm ceph-osd)" -eq $OSDS ] &&
        [ "$(count_comm ceph-mds)" -ge 1 ] && mount_answers && { [ "$CLIENTS" = 1 ] || second_answers; }
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
    local what=$1 end=$((SECONDS + TIMEOUT))
    shift
    until "$@"; do
        ((SECONDS < end)) || fail_start "$what did not happen within ${TIMEOUT}s"
        sleep 0.1
    done
}

# Runs a daemon in a session of its own, its descriptors /dev/null and its log file only (every
# other descriptor of this shell closed), in the background: `spawn LOGNAME CMD...`.
spawn() {
    local name=$1
    shift
    (
        local fd
        for fd in /proc/self/fd/*; do
            fd=${fd##*/}
            ((fd > 2)) && eval "exec $fd>&-" 2>/dev/null
        done
        exec setsid "$@" </dev/null >>"$LOG/$name.out" 2>&1
    ) &
    disown
}

write_conf() {
    local fsid=$1
    cat >"$CONF" <<EOF
# Written by scripts/cephfs.sh: a private cluster, everything under $DIR.
[global]
fsid = $fsid
mon host = v2:127.0.0.1:$PORT
mon initial members = a
public addr = 127.0.0.1
# daemons listen just above the mon's port, not on Ceph's 6800-7300
ms bind port min = $((PORT + 1))
ms bind port max = $((PORT + 100))
ms bind ipv6 = false
ms bind msgr1 = false
keyring = $KEYRING
run dir = $RUN
admin socket = $RUN/\$name.asok
pid file = $RUN/\$name.pid
log file = $LOG/\$name.log
mon cluster log file = $LOG/cluster.log
crash dir = $DIR/crash
log to stderr = false
err to stderr = false
log to syslog = false
# one machine, pools of one copy: no host-level placement, no warnings about redundancy
osd crush chooseleaf type = 0
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
mon allow pool size one = true
mon warn on pool no redundancy = false
mon allow pool delete = true
auth allow insecure global id reclaim = false
# the state directory shares a disk with everything else: warn below 1 % free, not 30 %
mon data avail warn = 1
mon data avail crit = 0
# proposals every 0.1 s instead of 1 s: pools, the file system and the OSDs appear sooner
paxos propose interval = 0.1
mon osd full ratio = 0.97
mon osd backfillfull ratio = 0.96
mon osd nearfull ratio = 0.95

[mon]
mon data = $DIR/mon.\$id

[mgr]
mgr data = $DIR/mgr.\$id

[osd]
osd data = $DIR/osd.\$id
osd objectstore = memstore
memstore device bytes = $((OSD_MB << 20))
osd memory target = 939524096

[mds]
mds data = $DIR/mds.\$id

[client]
# two clients of one name would share these: \$name is client.c1 or client.c2
admin socket = $RUN/\$name.asok
pid file = $RUN/\$name.pid
log file = $LOG/\$name.log
# a directory's st_size is its number of entries, as on a local file system, not CephFS's
# recursive byte count, which changes (lazily) as files below it grow: tar said "file changed as we
# read it" of a directory whose files were all written, and rsync's listings differed in it
client dirsize rbytes = false
EOF
}

write_keyring() {
    local e
    ceph-authtool --create-keyring "$KEYRING" --gen-key -n mon. --cap mon 'allow *' >/dev/null
    for e in client.admin client.c1 client.c2; do
        ceph-authtool "$KEYRING" --gen-key -n "$e" --cap mon 'allow *' --cap osd 'allow *' \
            --cap mds 'allow *' --cap mgr 'allow *' >/dev/null
    done
    ceph-authtool "$KEYRING" --gen-key -n mgr.x --cap mon 'allow profile mgr' --cap osd 'allow *' \
        --cap mds 'allow *' >/dev/null
    for e in $(seq 0 $((OSDS - 1))); do
        ceph-authtool "$KEYRING" --gen-key -n "osd.$e" --cap mon 'allow profile osd' \
            --cap mgr 'allow profile osd' --cap osd 'allow *' >/dev/null
    done
    ceph-authtool "$KEYRING" --gen-key -n mds.a --cap mon 'allow profile mds' --cap osd 'allow *' \
        --cap mds 'allow *' --cap mgr 'allow profile mds' >/dev/null
    chmod 600 "$KEYRING"
}

mds_active() { cephcli mds stat 2>/dev/null | grep -q '=up:active'; }
osds_up() { [ "$(cephcli osd stat -f json 2>/dev/null | sed -n 's/.*"num_up_osds":\([0-9]*\).*/\1/p')" = $OSDS ]; }

# Mounts client c$1 at $2.
mount_client() {
    mkdir -p "$2"
    spawn "ceph-fuse.c$1" ceph-fuse -f -c "$CONF" --id "c$1" --client_fs cephfs "$2"
}

do_start() {
    require_root
    ensure_installed
    if all_up; then
        say "already running: mon at 127.0.0.1:$PORT, mount $MNT"
        return 0
    fi
    if [ -n "$(own_pids)" ] || is_mounted "$MNT" || is_mounted "$MNT2"; then
        say "a partly running or stale instance is in $DIR: stopping it, starting an empty one"
        do_stop
    fi
    case "$DIR" in /*) ;; *) die "PLFS_CEPHFS_DIR must be an absolute path: $DIR" ;; esac
    case "$CLIENTS" in 1 | 2) ;; *) die "PLFS_CEPHFS_CLIENTS must be 1 or 2" ;; esac
    local t0=$SECONDS i uuid id
    rm -rf "$DIR"/mon.* "$DIR"/mgr.* "$DIR"/osd.* "$DIR"/mds.* "$RUN" "$DIR/crash" "$CONF" "$KEYRING" "$DIR/monmap"
    [ -d "$LOG" ] && rm -rf "$LOG.old" && mv "$LOG" "$LOG.old"
    mkdir -p "$DIR" "$RUN" "$LOG" "$DIR/crash" "$DIR/mon.a" "$DIR/mgr.x" "$DIR/mds.a"
    write_conf "$(cat /proc/sys/kernel/random/uuid)"
    write_keyring
    monmaptool --create --addv a "[v2:127.0.0.1:$PORT]" --fsid "$(awk '$1 == "fsid" { print $3 }' "$CONF")" \
        "$DIR/monmap" >"$LOG/setup.log" 2>&1 || fail_start "monmaptool failed"
    ceph-mon -c "$CONF" --mkfs -i a --monmap "$DIR/monmap" --keyring "$KEYRING" >>"$LOG/setup.log" 2>&1 ||
        fail_start "ceph-mon --mkfs failed"
    spawn mon.a ceph-mon -f -c "$CONF" -i a
    wait_for "the mon answering" cephcli mon stat >/dev/null
    spawn mgr.x ceph-mgr -f -c "$CONF" -i x
    for i in $(seq 0 $((OSDS - 1))); do
        uuid=$(cat /proc/sys/kernel/random/uuid)
        id=$(cephcli osd new "$uuid" 2>>"$LOG/setup.log") || fail_start "ceph osd new failed"
        [ "$id" = "$i" ] || fail_start "ceph osd new gave id $id, not $i"
        mkdir -p "$DIR/osd.$i"
        ceph-osd -c "$CONF" -i "$i" --mkfs --osd-uuid "$uuid" >>"$LOG/setup.log" 2>&1 ||
            fail_start "ceph-osd --mkfs of osd.$i failed"
        spawn "osd.$i" ceph-osd -f -c "$CONF" -i "$i"
    done
    {
        cephcli osd pool create cephfs_metadata 8 &&
            cephcli osd pool create cephfs_data 8 &&
            cephcli fs new cephfs cephfs_metadata cephfs_data
    } >>"$LOG/setup.log" 2>&1 || fail_start "creating the pools and the file system failed"
    spawn mds.a ceph-mds -f -c "$CONF" -i a
    wait_for "$OSDS OSDs up" osds_up
    wait_for "the MDS active" mds_active
    mount_client 1 "$MNT"
    wait_for "the mount answering" mount_answers
    local mounts=$MNT
    if [ "$CLIENTS" = 2 ]; then
        mount_client 2 "$MNT2"
        wait_for "the second mount answering" second_answers
        mounts="$MNT $MNT2"
    fi
    say "started Ceph (mon, mgr, $OSDS memstore OSDs, MDS) at 127.0.0.1:$PORT in $((SECONDS - t0)) s; mounts $mounts"
}

do_stop() {
    require_root
    local m pids t=0
    for m in "$MNT" "$MNT2"; do
        if is_mounted "$m"; then
            timeout 20 umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
        fi
    done
    # ceph-fuse exits once its mount is gone; the daemons are killed outright (see the header)
    while [ "$(count_comm ceph-fuse)" -gt 0 ] && ((t < 40)); do
        sleep 0.1
        t=$((t + 1))
    done
    t=0
    pids=$(own_pids)
    while [ -n "$pids" ] && ((t < 50)); do
        # shellcheck disable=SC2086
        kill -KILL $pids 2>/dev/null || true
        sleep 0.1
        pids=$(own_pids)
        t=$((t + 1))
    done
    [ -z "$pids" ] || say "warning: still running after SIGKILL: $pids"
    for m in "$MNT" "$MNT2"; do
        is_mounted "$m" && umount -l "$m" 2>/dev/null
        [ -d "$m" ] && rmdir "$m" 2>/dev/null
    done
    rm -rf "$DIR"/mon.* "$DIR"/mgr.* "$DIR"/osd.* "$DIR"/mds.* "$RUN" "$DIR/crash" "$CONF" "$KEYRING" "$DIR/monmap"
    return 0
}

do_status() {
    local up=0 down=0 name want n
    for name in ceph-mon:1 ceph-mgr:1 ceph-osd:$OSDS ceph-mds:1; do
        want=${name#*:}
        n=$(count_comm "${name%:*}")
        echo "${name%:*}: $n of $want running"
        ((n >= want)) && up=$((up + 1)) || down=$((down + 1))
    done
    if mount_answers; then
        echo "client: $MNT answers"
        up=$((up + 1))
    else
        echo "client: $MNT does not answer"
        down=$((down + 1))
    fi
    if is_mounted "$MNT2"; then
        if second_answers; then echo "client: $MNT2 answers"; else echo "client: $MNT2 does not answer"; fi
    fi
    if ((down == 0)); then return 0; elif ((up == 0)); then return 3; else return 1; fi
}

do_env() {
    echo "export PLFS_CEPHFS_DIR='$DIR'"
    echo "export PLFS_CEPHFS_CONF='$CONF'"
    echo "export PLFS_CEPHFS_MOUNT='$MNT'"
    if is_mounted "$MNT2"; then
        echo "export PLFS_CEPHFS_MOUNT2='$MNT2'"
    fi
}

# `run CMD...`: a cluster started here is stopped when CMD ends, however it ends; one that was
# running is left running.
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
ceph)
    shift
    [ -f "$CONF" ] || die "no cluster in $DIR"
    exec ceph -c "$CONF" "$@"
    ;;
*)
    echo "usage: $0 start|stop|status|env|run CMD [ARG...]|ceph ARG..." >&2
    exit 2
    ;;
esac
