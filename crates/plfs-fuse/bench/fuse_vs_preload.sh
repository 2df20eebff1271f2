#!/usr/bin/env bash
# FUSE against LD_PRELOAD bandwidth for N-1 strided writes and their read-back (issue 14's target:
# FUSE >= 0.5x ldplfs, write and read, 4 processes x 64 KiB records). Each configuration runs REPS
# times, alternating the front ends (so load swings hit them alike); every run is checked (file
# size after writing, every byte when reading). Printed per front end and phase: the median
# MB/s, the median of the per-repetition ratios to the preload run beside it, and figures load
# cannot move: CPU seconds per GiB of the client processes plus the daemon (utime + stime, from
# getrusage and /proc/<pid>/stat around each run).
#
# usage: crates/plfs-fuse/bench/fuse_vs_preload.sh [--reps N] [--nrec N] [--procs "4"]
#        [--recsize BYTES] [--out FILE] [--dir DIR] [--base PLFS_FUSE_BINARY] [--threads N]
#        [--direct-io] [--pio PIO_BINARY]
#   --nrec      records per process (default 1600: 100 MiB per process at 64 KiB)
#   --recsize   record size (default 65536; the PLFS paper's pattern is 47008)
#   --out       CSV (default crates/plfs-fuse/bench/results/fuse_vs_preload.csv)
#   --dir       where the stores live (default a new directory under /tmp)
#   --base      a second plfs-fuse binary (e.g. a build of an older commit) measured side by side
#               as front end `fuse-base`
#   --threads   daemon threads (default: the daemon's default)
#   --direct-io also measure front end `fuse-dio`: the daemon mounted with --direct-io
#   --pio       run bench/'s pio program under mpirun (as `make bench` does) instead of
#               n1_writer.c (the client CPU then includes mpirun's and MPI's start-up)
# Needs root (FUSE mount), fuse3, a C compiler. Builds plfs-fuse and ldplfs in release mode.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
reps=3 nrec=1600 procs="4" recsize=65536 out="$here/results/fuse_vs_preload.csv" dir="" base="" threads=""
dio=0 pio=""
while (($#)); do
    case "$1" in
        --reps) reps=$2; shift 2 ;;
        --nrec) nrec=$2; shift 2 ;;
        --procs) procs=$2; shift 2 ;;
        --recsize) recsize=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --dir) dir=$2; shift 2 ;;
        --base) base=$2; shift 2 ;;
        --threads) threads=$2; shift 2 ;;
        --direct-io) dio=1; shift ;;
        --pio) pio=$2; shift 2 ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done
target="${CARGO_TARGET_DIR:-$root/target}"
(cd "$root" && cargo build --release -q -p plfs-fuse -p ldplfs)
fuse_bin="$target/release/plfs-fuse"
preload_lib="$target/release/libldplfs.so"

work="${dir:-$(mktemp -d /tmp/plfs-fuse-vs-preload.XXXXXX)}"
cc -O2 -Wall -o "$work/n1_writer" "$here/n1_writer.c"
methods="fuse"
[ "$dio" = 1 ] && methods="$methods fuse-dio"
[ -n "$base" ] && methods="fuse-base $methods"
methods="$methods preload"
declare -A daemon_pid
for m in $methods; do
    mkdir -p "$work/$m-mnt" "$work/$m-backend"
    printf -- "- mount_point: %s\n  backends:\n  - location: %s\n" "$work/$m-mnt" "$work/$m-backend" > "$work/plfsrc-$m"
done
mount_fuse() { # method binary [args]
    local m=$1 bin=$2
    shift 2
    "$bin" "$work/$m-mnt" --config "$work/plfsrc-$m" --foreground ${threads:+--threads "$threads"} "$@" \
        2> "$work/$m.log" &
    daemon_pid[$m]=$!
    for _ in $(seq 200); do grep -q " $work/$m-mnt " /proc/self/mountinfo && return; sleep 0.05; done
    echo "$m: mount failed: $(cat "$work/$m.log")" >&2; exit 1
}
cleanup() {
    for m in fuse fuse-dio fuse-base; do
        grep -q " $work/$m-mnt " /proc/self/mountinfo 2>/dev/null &&
            { "$fuse_bin" -u "$work/$m-mnt" 2>/dev/null || umount -l "$work/$m-mnt" 2>/dev/null || true; }
    done
    wait
    [ -n "$dir" ] || rm -rf "$work"
}
trap cleanup EXIT
mount_fuse fuse "$fuse_bin"
[ "$dio" = 1 ] && mount_fuse fuse-dio "$fuse_bin" --direct-io
[ -n "$base" ] && mount_fuse fuse-base "$base"

pre() { env PLFSRC="$work/plfsrc-preload" LD_PRELOAD="$preload_lib" "$@"; }
# CPU seconds (utime + stime) a process has used so far.
cpu_of() { awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$1/stat"; }
# One phase (w or r) of one method on file $1 with $2 processes: prints "seconds MB/s client_cpu".
run_phase() {
    local method=$1 f=$2 np=$3 phase=$4
    if [ -z "$pio" ]; then
        if [ "$method" = preload ]; then pre "$work/n1_writer" "$f" "$np" "$recsize" "$nrec" "$phase"
        else "$work/n1_writer" "$f" "$np" "$recsize" "$nrec" "$phase"; fi
        return
    fi
    local env=() args=(-p "$f" -l strided -m posix -b "$recsize" -n "$nrec" -q) line
    [ "$method" = preload ] && env=(-genv PLFSRC "$work/plfsrc-preload" -genv LD_PRELOAD "$preload_lib")
    local tm=(/usr/bin/time -o "$work/cpu" -f "%U %S")
    if [ "$phase" = w ]; then
        line=$("${tm[@]}" mpirun -np "$np" "${env[@]}" "$pio" "${args[@]}" -w | grep PIO_RESULT)
        echo "$line" | sed 's/.*seed=\([^ ]*\).*/\1/' > "$work/seed"
    else
        line=$("${tm[@]}" mpirun -np "$np" "${env[@]}" "$pio" "${args[@]}" -r -x "$(cat "$work/seed")" -W "$np" -S 1 -u | grep PIO_RESULT)
    fi
    echo "$line" | grep -q ' errors=0 ' || { echo "$method $phase: pio failed: $line" >&2; exit 1; }
    local s mib
    s=$(echo "$line" | sed 's/.* total_s=\([^ ]*\).*/\1/')
    mib=$(echo "$line" | sed 's/.* bw_mib_s=\([^ ]*\).*/\1/')
    awk -v s="$s" -v m="$mib" -v cpu="$(cat "$work/cpu")" 'BEGIN { split(cpu, c, " "); printf "%s %.1f %.4f\n", s, m * 1.048576, c[1] + c[2] }'
}

mkdir -p "$(dirname "$out")"
echo "method,phase,nprocs,rep,record_bytes,records_per_proc,total_bytes,seconds,mb_per_s,client_cpu_s,daemon_cpu_s" > "$out"
for np in $procs; do
    total=$((np * nrec * recsize))
    for rep in $(seq 1 "$reps"); do
        for method in $methods; do
            f="$work/$method-mnt/n1_${np}_$rep"
            for phase in w r; do
                sync
                d0=0
                [ "$method" != preload ] && d0=$(cpu_of "${daemon_pid[$method]}")
                read -r secs mbs ccpu < <(run_phase "$method" "$f" "$np" "$phase")
                dcpu=0
                [ "$method" != preload ] && dcpu=$(awk -v a="$(cpu_of "${daemon_pid[$method]}")" -v b="$d0" 'BEGIN { print a - b }')
                if [ "$phase" = w ]; then
                    if [ "$method" = preload ]; then size=$(pre stat -c %s "$f"); else size=$(stat -c %s "$f"); fi
                    if [ "$size" != "$total" ]; then
                        echo "$method $np procs: file is $size bytes, expected $total" >&2
                        exit 1
                    fi
                fi
                echo "$method,$phase,$np,$rep,$recsize,$nrec,$total,$secs,$mbs,$ccpu,$dcpu" >> "$out"
                printf '%-9s %s %d procs  rep %d  %8.1f MB/s  client %.2f s  daemon %.2f s\n' \
                    "$method" "$phase" "$np" "$rep" "$mbs" "$ccpu" "$dcpu"
            done
            if [ "$method" = preload ]; then pre rm -f "$f"; else rm -f "$f"; fi
        done
    done
done

python3 - "$out" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
methods = [m for m in ("fuse-base", "fuse", "fuse-dio", "preload") if any(r["method"] == m for r in rows)]
print(f"\nN-1 strided, {rows[0]['record_bytes']}-byte records, {rows[0]['records_per_proc']} per process, "
      f"medians of {max(int(r['rep']) for r in rows)}; x preload = median of the per-repetition ratios; "
      "CPU s/GiB = client + daemon")
print(f"{'procs':>5} {'phase':>5} {'method':>10} {'MB/s':>9} {'x preload':>10} {'CPU s/GiB':>10}")
for np in sorted({int(r["nprocs"]) for r in rows}):
    for phase in ("w", "r"):
        sel = {m: {int(r["rep"]): r for r in rows if r["method"] == m and int(r["nprocs"]) == np and r["phase"] == phase}
               for m in methods}
        for m in methods:
            mbs = statistics.median(float(r["mb_per_s"]) for r in sel[m].values())
            ratio = statistics.median(float(r["mb_per_s"]) / float(sel["preload"][k]["mb_per_s"]) for k, r in sel[m].items())
            cpu = statistics.median((float(r["client_cpu_s"]) + float(r["daemon_cpu_s"])) / (int(r["total_bytes"]) / 2**30)
                                    for r in sel[m].values())
            print(f"{np:>5} {phase:>5} {m:>10} {mbs:>9.1f} {ratio:>9.2f}x {cpu:>10.2f}")
PY
echo "runs: $out"
