#!/usr/bin/env bash
# A private 3-brick GlusterFS volume on this machine, for tests and benchmarks.
#
#   scripts/glusterfs.sh start        start it (idempotent), wait until the mount answers
#   scripts/glusterfs.sh stop         unmount, kill what `start` started, delete the namespace
#   scripts/glusterfs.sh status       what runs (exit 0 all up, 3 nothing up, 1 partly up)
#   scripts/glusterfs.sh env          shell assignments: eval "$(scripts/glusterfs.sh env)"
#   scripts/glusterfs.sh mount DIR    an extra FUSE client of the volume at DIR (unmounted by stop)
#   scripts/glusterfs.sh umount DIR   unmount such an extra client
#   scripts/glusterfs.sh run CMD...   CMD with the `env` variables exported; starts the volume
#                                     first when none runs, and then (only then) stops it after
#   scripts/glusterfs.sh gluster ARG...  the gluster CLI on the running volume's glusterd, e.g.
#                                     `gluster volume profile plfs info` (brick operation counts)
#
# `start` gives a fresh, empty volume; on a running one it only remounts clients that stopped
# answering (the data stays); with glusterd or a brick gone it stops everything and starts anew.
#
# Needs root and /dev/fuse; installs glusterfs-server and glusterfs-client when missing
# (scripts/install-deps.sh). Every process runs in a private network namespace with a single /32
# address on its loopback (GlusterFS refuses 127.0.0.0/8 brick addresses), so nothing listens
# outside it and a system glusterd on port 24007 cannot collide. Only the FUSE mounts are seen by
# the rest of the machine. All state (bricks, glusterd's working directory, sockets, logs, pid
# files, mount points, the namespace handle) lives under PLFS_GLUSTER_DIR; /var/lib/glusterd,
# /var/run/gluster and /var/log/glusterfs are not touched (glusterd, its bricks and the gluster CLI
# also run in a private mount namespace where the paths they hard-code are bind mounts into it). `stop` kills exactly the processes that
# live in that namespace (only this script enters it), deletes the bricks and keeps the logs.
#
# Settings (environment):
#   PLFS_GLUSTER_DIR      state directory (default /var/tmp/plfs-gluster: on disk, not tmpfs)
#   PLFS_GLUSTER_CLIENTS  FUSE clients mounted by start: 1 or 2 (default 2: mnt and mnt2, two
#                         independent client caches, as two compute nodes would have)
#   PLFS_GLUSTER_IP       the namespace's address (default 10.77.0.1)
#   PLFS_GLUSTER_TIMEOUT  seconds start waits for each step (default 60)
set -euo pipefail

DIR=${PLFS_GLUSTER_DIR:-/var/tmp/plfs-gluster}
IP=${PLFS_GLUSTER_IP:-10.77.0.1}
CLIENTS=${PLFS_GLUSTER_CLIENTS:-2}
TIMEOUT=${PLFS_GLUSTER_TIMEOUT:-60}
VOL=plfs
BRICKS=3
NETNS=$DIR/netns
RUN=$DIR/run
LOG=$DIR/log
WORK=$DIR/glusterd
SOCK=$RUN/glusterd.socket
CLIENT_LIST=$DIR/clients
# With PLFS_GLUSTER_BRICKS_MB set, the bricks live on an ext4 file system of that many MiB of
# their own (an image under $DIR, loop-mounted at $DIR/bricks, removed by stop), so that a test can
# fill them without filling the machine's disk or the volume's logs (scripts/test-full-brick.sh).
BRICKS_MB=${PLFS_GLUSTER_BRICKS_MB:-}
BRICKS_IMG=$DIR/bricks.img
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

say() { echo "glusterfs.sh: $*" >&2; }
die() {
    say "error: $*"
    exit 1
}

# Volume options, each with why (applied by start after `volume create`):
VOLUME_OPTIONS=(
    # Brick and client logs at WARNING: INFO logs every connect and lookup-heal, and tests make many.
    diagnostics.brick-log-level WARNING
    diagnostics.client-log-level WARNING
    # A dead brick makes operations fail after 10 s instead of the default 42 s, so a broken test
    # volume fails a CI job quickly rather than hanging it; bricks on one machine never miss pings.
    network.ping-timeout 10
    # 2 cores: the default 16 io-threads per brick only cost memory (3 bricks) without adding speed.
    performance.io-thread-count 4
    # No self-heal, quota, bitrot or snapshot daemons exist for a plain distribute volume; gNFS is
    # not built in Debian's 10.x but the option is explicit so glusterd never tries to start it.
    nfs.disable on
    # Everything else stays at its default: DHT distribution by name hash over the 3 bricks,
    # write-behind, md-cache (stat/xattr caching for 1 s), quick-read, open-behind and
    # readdir-ahead, as on a typical site's distributed volume. Tests must see that client caching.
)

require_root() {
    [ "$(id -u)" -eq 0 ] || die "must run as root (network namespace, FUSE mounts)"
}

ensure_installed() {
    if ! command -v glusterd >/dev/null || ! command -v gluster >/dev/null || ! command -v glusterfs >/dev/null; then
        "$HERE/install-deps.sh" glusterfs-server glusterfs-client
    fi
    local t
    for t in glusterd gluster glusterfs unshare nsenter ip awk timeout; do
        command -v "$t" >/dev/null || die "$t not found (scripts/install-deps.sh glusterfs-server glusterfs-client)"
    done
    [ -c /dev/fuse ] || die "/dev/fuse is missing (modprobe fuse)"
}

# The namespace's inode number, empty when the handle is not a live namespace.
netns_inode() {
    [ -e "$NETNS" ] || return 0
    local fs
    fs=$(stat -f -L -c %T "$NETNS" 2>/dev/null || true)
    [ "$fs" = nsfs ] || return 0
    stat -L -c %i "$NETNS"
}

# 0 when process $1 exists and is not a zombie (the daemons' parent is init once start returns,
# which may reap them late).
alive() {
    [ -n "$1" ] && [ -e "/proc/$1/status" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null
}

# 0 when process $1 is alive and runs the command $2.
runs() {
    [ "$(cat "/proc/$1/comm" 2>/dev/null)" = "$2" ] && alive "$1"
}

# Pids of every process inside our namespace.
netns_pids() {
    local ino p
    ino=$(netns_inode)
    [ -n "$ino" ] || return 0
    for p in /proc/[0-9]*; do
        [ "$(readlink "$p/ns/net" 2>/dev/null)" = "net:[$ino]" ] && echo "${p#/proc/}"
    done
    return 0
}

# 0 when DIR is a mount point; reads the mount table, so a dead FUSE client's mount (every stat
# fails with ENOTCONN) counts too. Paths with blanks are refused by start, so no unescaping needed.
is_mounted() {
    awk -v m="$1" '$5 == m { found = 1 } END { exit !found }' /proc/self/mountinfo
}

in_ns() { nsenter --net="$NETNS" "$@"; }

# Runs a command in the namespace and in a private mount namespace in which the paths glusterd,
# its bricks and the gluster CLI hard-code (brick sockets in /run/gluster; /var/lib/glusterd's
# ss_brick and geo-replication/) are bind mounts of directories under $DIR, so the system's copies
# stay untouched. For a command started in the background, `spawn_in_sys_ns CMD... &`: the
# background subshell execs, so no shell of this script outlives `start` as the command's parent.
spawn_in_sys_ns() {
    exec unshare --mount --propagation private sh -c '
        mount --bind "$1/sys/run-gluster" /run/gluster &&
        mount --bind "$1/sys/var-lib-glusterd" /var/lib/glusterd &&
        ns=$2 && shift 2 && exec nsenter --net="$ns" "$@"
    ' sh "$DIR" "$NETNS" "$@"
}

in_sys_ns() { (spawn_in_sys_ns "$@"); }

cli() {
    in_sys_ns timeout "$TIMEOUT" gluster --mode=script --glusterd-sock="$SOCK" --log-file="$LOG/cli.log" "$@"
}

client_mounts() {
    [ -f "$CLIENT_LIST" ] && cat "$CLIENT_LIST"
    return 0
}

# Writes a file through the mount and reads it back; 0 when the mount answers.
mount_answers() {
    local m=$1 f out
    is_mounted "$m" || return 1
    f=$m/.glusterfs-sh-probe.$$
    timeout 10 sh -c 'echo plfs-gluster-probe > "$1" && cat "$1"' _ "$f" >"$DIR/.probe.out" 2>/dev/null || return 1
    out=$(cat "$DIR/.probe.out")
    rm -f "$DIR/.probe.out"
    timeout 10 rm -f "$f" || return 1
    [ "$out" = plfs-gluster-probe ]
}

mount_client() {
    local m=$1 name
    name=$(basename "$m")
    mkdir -p "$m"
    if is_mounted "$m"; then
        die "$m is already a mount point"
    fi
    grep -qxF "$m" "$CLIENT_LIST" 2>/dev/null || echo "$m" >>"$CLIENT_LIST"
    # Daemonizes once the volume graph is fetched; the pid file names the client process.
    in_ns glusterfs --process-name fuse --volfile-server="$IP" --volfile-id="$VOL" \
        --log-file="$LOG/client-$name.log" --pid-file="$RUN/client-$name.pid" "$m" ||
        return 1
    local t=0
    until mount_answers "$m"; do
        t=$((t + 1))
        ((t <= TIMEOUT * 2)) || return 1
        sleep 0.5
    done
}

umount_client() {
    local m=$1 t=0
    # A dead client leaves a mount whose every access fails (ENOTCONN): detach it lazily.
    is_mounted "$m" && { umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; }
    while is_mounted "$m" && ((t < 20)); do
        sleep 0.25
        t=$((t + 1))
    done
    is_mounted "$m" && say "warning: $m is still mounted"
    if [ -f "$CLIENT_LIST" ]; then
        grep -vxF "$m" "$CLIENT_LIST" >"$CLIENT_LIST.new" || true
        mv "$CLIENT_LIST.new" "$CLIENT_LIST"
    fi
}

log_tail() {
    local f
    for f in "$LOG"/glusterd.log "$LOG"/bricks/*.log "$LOG"/client-*.log "$LOG"/cli.log; do
        [ -s "$f" ] || continue
        echo "---- ${f#"$DIR"/} (last 15 lines) ----" >&2
        tail -n 15 "$f" >&2
    done
}

fail_start() {
    say "error: $*"
    log_tail
    say "stopping what was started"
    do_stop >/dev/null 2>&1 || true
    exit 1
}

# 0 when glusterd, every brick and every client mount answer.
all_up() {
    [ -n "$(netns_inode)" ] || return 1
    local pid
    pid=$(cat "$RUN/glusterd.pid" 2>/dev/null) || return 1
    runs "$pid" glusterd || return 1
    [ "$(brick_count)" -eq "$BRICKS" ] || return 1
    local m n=0
    while read -r m; do
        mount_answers "$m" || return 1
        n=$((n + 1))
    done < <(client_mounts)
    ((n >= 1))
}

# 0 when glusterd and every brick run.
servers_up() {
    [ -n "$(netns_inode)" ] || return 1
    local pid
    pid=$(cat "$RUN/glusterd.pid" 2>/dev/null) || return 1
    runs "$pid" glusterd || return 1
    [ "$(brick_count)" -eq "$BRICKS" ]
}

# Remounts every listed client mount that does not answer; 0 when all answer afterwards.
repair_clients() {
    local m n=0
    for m in $(client_mounts); do
        n=$((n + 1))
        mount_answers "$m" && continue
        say "the client at $m does not answer: remounting it"
        umount_client "$m"
        mount_client "$m" || return 1
    done
    ((n >= 1))
}

brick_count() {
    local p n=0
    for p in $(netns_pids); do
        runs "$p" glusterfsd && n=$((n + 1))
    done
    echo "$n"
}

do_start() {
    require_root
    ensure_installed
    if all_up; then
        say "already running: volume $VOL at $IP, mounts: $(client_mounts | tr '\n' ' ')"
        return 0
    fi
    if servers_up && repair_clients; then
        say "remounted the clients that did not answer; the volume kept its data"
        return 0
    fi
    if [ -n "$(netns_inode)" ] || [ -n "$(client_mounts)" ]; then
        say "a partly running or stale instance is in $DIR: stopping it, starting an empty volume"
        do_stop
    fi
    case "$CLIENTS" in 1 | 2) ;; *) die "PLFS_GLUSTER_CLIENTS must be 1 or 2" ;; esac
    case "$DIR" in /*) ;; *) die "PLFS_GLUSTER_DIR must be an absolute path: $DIR" ;; esac
    case "$DIR" in *[[:space:]]*) die "PLFS_GLUSTER_DIR must not contain blanks: $DIR" ;; esac
    # Unix socket paths (glusterd's and the bricks' under run/) must fit in 108 bytes.
    ((${#RUN} <= 60)) || die "PLFS_GLUSTER_DIR is too long for unix socket paths: $DIR"
    local t0=$SECONDS
    unmount_bricks
    rm -rf "$DIR/bricks" "$WORK" "$RUN" "$DIR/sys" "$DIR/mnt" "$DIR/mnt2" "$CLIENT_LIST"
    [ -d "$LOG" ] && rm -rf "$LOG.old" && mv "$LOG" "$LOG.old"
    mkdir -p "$DIR/bricks" "$WORK" "$RUN" "$LOG"
    if [ -n "$BRICKS_MB" ]; then
        truncate -s "${BRICKS_MB}M" "$BRICKS_IMG" &&
            mkfs.ext4 -q -F "$BRICKS_IMG" &&
            mount -o loop "$BRICKS_IMG" "$DIR/bricks" ||
            fail_start "cannot make the ${BRICKS_MB} MiB file system of the bricks ($BRICKS_IMG)"
    fi
    local fs
    fs=$(stat -f -c %T "$DIR/bricks")
    [ "$fs" = tmpfs ] && say "warning: the bricks are on tmpfs ($DIR); set PLFS_GLUSTER_DIR to a disk directory"

    touch "$NETNS"
    unshare --net="$NETNS" true || fail_start "cannot create a network namespace at $NETNS"
    in_ns ip link set lo up
    in_ns ip addr add "$IP/32" dev lo

    cat >"$DIR/glusterd.vol" <<EOF
volume management
    type mgmt/glusterd
    option working-directory $WORK
    option run-directory $RUN
    option logging-directory $LOG
    option glusterd-sockfile $SOCK
    option transport-type socket
    option transport.address-family inet
    option transport.socket.bind-address $IP
    option transport.socket.listen-port 24007
    option transport.socket.keepalive-time 10
    option transport.socket.keepalive-interval 2
    option transport.socket.read-fail-log off
    option ping-timeout 0
    option event-threads 1
end-volume
EOF
    # glusterd and the bricks it spawns run in a private mount namespace (in_sys_ns); the FUSE
    # clients stay in the machine's mount namespace so that everyone sees their mounts.
    # -N: glusterd stays in the foreground, so $! is its pid.
    mkdir -p "$DIR/sys/run-gluster" "$DIR/sys/var-lib-glusterd" /run/gluster /var/lib/glusterd
    spawn_in_sys_ns glusterd -N -f "$DIR/glusterd.vol" --log-file="$LOG/glusterd.log" \
        -p "$RUN/glusterd.pid" </dev/null >>"$LOG/glusterd.out" 2>&1 &
    echo $! >"$RUN/glusterd.pid"
    disown
    local t=0
    until [ -S "$SOCK" ] && cli volume list >/dev/null 2>&1; do
        alive "$(cat "$RUN/glusterd.pid")" || fail_start "glusterd exited"
        t=$((t + 1))
        ((t <= TIMEOUT * 4)) || fail_start "glusterd did not answer within ${TIMEOUT}s"
        sleep 0.25
    done

    local bricks=() i
    for i in $(seq 1 $BRICKS); do
        mkdir -p "$DIR/bricks/b$i"
        bricks+=("$IP:$DIR/bricks/b$i")
    done
    # `force`: the bricks sit on the root file system, which glusterd refuses without it.
    cli volume create "$VOL" transport tcp "${bricks[@]}" force >>"$LOG/setup.out" 2>&1 ||
        fail_start "volume create failed"
    for ((i = 0; i < ${#VOLUME_OPTIONS[@]}; i += 2)); do
        cli volume set "$VOL" "${VOLUME_OPTIONS[i]}" "${VOLUME_OPTIONS[i + 1]}" >>"$LOG/setup.out" 2>&1 ||
            fail_start "volume set ${VOLUME_OPTIONS[i]} ${VOLUME_OPTIONS[i + 1]} failed"
    done
    cli volume start "$VOL" >>"$LOG/setup.out" 2>&1 || fail_start "volume start failed"
    t=0
    until [ "$(brick_count)" -eq $BRICKS ]; do
        t=$((t + 1))
        ((t <= TIMEOUT * 4)) || fail_start "the $BRICKS brick processes did not start within ${TIMEOUT}s"
        sleep 0.25
    done

    mount_client "$DIR/mnt" || fail_start "the FUSE client at $DIR/mnt did not answer within ${TIMEOUT}s"
    if [ "$CLIENTS" = 2 ]; then
        mount_client "$DIR/mnt2" || fail_start "the FUSE client at $DIR/mnt2 did not answer within ${TIMEOUT}s"
    fi
    say "started volume $VOL ($BRICKS bricks, distribute) at $IP in $((SECONDS - t0)) s; mounts: $(client_mounts | tr '\n' ' ')"
}

# The file system of PLFS_GLUSTER_BRICKS_MB, if one is mounted (its processes stopped first).
unmount_bricks() {
    if mountpoint -q "$DIR/bricks" 2>/dev/null; then
        umount "$DIR/bricks" 2>/dev/null || umount -l "$DIR/bricks" || true
    fi
    rm -f "$BRICKS_IMG"
}

do_stop() {
    require_root
    local m
    while read -r m; do
        umount_client "$m"
    done < <(client_mounts)
    rm -f "$CLIENT_LIST"
    local pids t=0
    pids=$(netns_pids)
    if [ -n "$pids" ]; then
        # shellcheck disable=SC2086
        kill -TERM $pids 2>/dev/null || true
        while [ -n "$(netns_pids)" ] && ((t < 40)); do
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
    # Never leave a mount behind, even one whose name fell out of the list.
    for m in "$DIR/mnt" "$DIR/mnt2"; do
        is_mounted "$m" && umount_client "$m"
    done
    if [ -e "$NETNS" ]; then
        if [ -n "$(netns_inode)" ]; then
            umount "$NETNS" 2>/dev/null || umount -l "$NETNS" || true
        fi
        rm -f "$NETNS"
    fi
    unmount_bricks
    rm -rf "$DIR/bricks" "$WORK" "$RUN" "$DIR/sys"
    [ -d "$DIR/mnt" ] && rmdir "$DIR/mnt" 2>/dev/null
    [ -d "$DIR/mnt2" ] && rmdir "$DIR/mnt2" 2>/dev/null
    return 0
}

do_status() {
    local rc up=0 down=0 pid m p
    if [ -n "$(netns_inode)" ]; then
        echo "namespace: $NETNS (address $IP)"
        up=$((up + 1))
    else
        echo "namespace: none"
        down=$((down + 1))
    fi
    pid=$(cat "$RUN/glusterd.pid" 2>/dev/null || true)
    if [ -n "$pid" ] && runs "$pid" glusterd; then
        echo "glusterd: pid $pid"
        up=$((up + 1))
    else
        echo "glusterd: not running"
        down=$((down + 1))
    fi
    local bricks=""
    for p in $(netns_pids); do
        runs "$p" glusterfsd && bricks="$bricks $p"
    done
    echo "bricks: $(brick_count) of $BRICKS running${bricks:+ (pids$bricks)}"
    if [ "$(brick_count)" -eq $BRICKS ]; then up=$((up + 1)); else down=$((down + 1)); fi
    local nm=0
    while read -r m; do
        nm=$((nm + 1))
        if mount_answers "$m"; then
            echo "client: $m answers (pid $(cat "$RUN/client-$(basename "$m").pid" 2>/dev/null || echo ?))"
            up=$((up + 1))
        else
            echo "client: $m does not answer"
            down=$((down + 1))
        fi
    done < <(client_mounts)
    ((nm > 0)) || {
        echo "client: none mounted"
        down=$((down + 1))
    }
    if ((down == 0)); then rc=0; elif ((up == 0)); then rc=3; else rc=1; fi
    return $rc
}

do_env() {
    echo "export PLFS_GLUSTER_DIR='$DIR'"
    echo "export PLFS_GLUSTER_VOLUME='$VOL'"
    echo "export PLFS_GLUSTER_SERVER='$IP'"
    echo "export PLFS_GLUSTER_NETNS='$NETNS'"
    echo "export PLFS_GLUSTER_MOUNT='$DIR/mnt'"
    if grep -qxF "$DIR/mnt2" "$CLIENT_LIST" 2>/dev/null || { [ ! -f "$CLIENT_LIST" ] && [ "$CLIENTS" = 2 ]; }; then
        echo "export PLFS_GLUSTER_MOUNT2='$DIR/mnt2'"
    fi
}

# `run CMD...`: what make test-glusterfs and make bench-glusterfs use. A volume started here is
# stopped when CMD ends, however it ends; one that was running is left running.
do_run() {
    local state=0 rc=0
    do_status >/dev/null 2>&1 || state=$?
    if ((state != 0)); then
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
gluster)
    shift
    require_root
    [ -n "$(netns_inode)" ] || die "the volume is not running (start it first)"
    cli "$@"
    ;;
env) do_env ;;
mount)
    [ -n "${2:-}" ] || die "usage: $0 mount DIR"
    require_root
    [ -n "$(netns_inode)" ] || die "the volume is not running (start it first)"
    m=$(realpath -m "$2")
    mount_client "$m" || {
        log_tail
        die "the FUSE client at $m did not answer"
    }
    ;;
umount)
    [ -n "${2:-}" ] || die "usage: $0 umount DIR"
    require_root
    umount_client "$(realpath -m "$2")"
    ;;
*)
    echo "usage: $0 start|stop|status|env|mount DIR|umount DIR|run CMD...|gluster ARG..." >&2
    exit 2
    ;;
esac
