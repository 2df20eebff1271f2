#!/usr/bin/env bash
# FUSE against LD_PRELOAD bandwidth for N-1 strided writes of 47008-byte records (the PLFS paper's
# pattern) by 2 and 4 processes. Each configuration runs REPS times, alternating the two front
# ends; the medians and the preload/FUSE ratio are printed, every run goes to the CSV.
#
# usage: crates/plfs-fuse/bench/fuse_vs_preload.sh [--reps N] [--nrec N] [--procs "2 4"]
#        [--recsize BYTES] [--out FILE] [--dir DIR]
#   --nrec      records per process (default 2000: 94 MB per process)
#   --out       CSV (default crates/plfs-fuse/bench/results/fuse_vs_preload.csv)
#   --dir       where the two stores live (default a new directory under /tmp)
# Needs root (FUSE mount), fuse3, a C compiler. Builds plfs-fuse and ldplfs in release mode.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
reps=3 nrec=2000 procs="2 4" recsize=47008 out="$here/results/fuse_vs_preload.csv" dir=""
while (($#)); do
    case "$1" in
        --reps) reps=$2; shift 2 ;;
        --nrec) nrec=$2; shift 2 ;;
        --procs) procs=$2; shift 2 ;;
        --recsize) recsize=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --dir) dir=$2; shift 2 ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done
target="${CARGO_TARGET_DIR:-$root/target}"
(cd "$root" && cargo build --release -q -p plfs-fuse -p ldplfs)
fuse_bin="$target/release/plfs-fuse"
preload_lib="$target/release/libldplfs.so"

work="${dir:-$(mktemp -d /tmp/plfs-fuse-vs-preload.XXXXXX)}"
mkdir -p "$work/fmnt" "$work/fbackend" "$work/pmnt" "$work/pbackend"
cc -O2 -Wall -o "$work/n1_writer" "$here/n1_writer.c"
printf -- "- mount_point: %s\n  backends:\n  - location: %s\n" "$work/fmnt" "$work/fbackend" > "$work/plfsrc-fuse"
printf -- "- mount_point: %s\n  backends:\n  - location: %s\n" "$work/pmnt" "$work/pbackend" > "$work/plfsrc-preload"

"$fuse_bin" "$work/fmnt" --config "$work/plfsrc-fuse"
cleanup() {
    "$fuse_bin" -u "$work/fmnt" 2>/dev/null || umount -l "$work/fmnt" 2>/dev/null || true
    [ -n "$dir" ] || rm -rf "$work"
}
trap cleanup EXIT

pre() { env PLFSRC="$work/plfsrc-preload" LD_PRELOAD="$preload_lib" "$@"; }

mkdir -p "$(dirname "$out")"
echo "method,nprocs,rep,record_bytes,records_per_proc,total_bytes,seconds,mb_per_s" > "$out"
for np in $procs; do
    total=$((np * nrec * recsize))
    for rep in $(seq 1 "$reps"); do
        for method in fuse preload; do
            sync
            if [ "$method" = fuse ]; then
                f="$work/fmnt/n1_${np}_$rep"
                read -r secs mbs < <("$work/n1_writer" "$f" "$np" "$recsize" "$nrec")
                size=$(stat -c %s "$f")
                rm -f "$f"
            else
                f="$work/pmnt/n1_${np}_$rep"
                read -r secs mbs < <(pre "$work/n1_writer" "$f" "$np" "$recsize" "$nrec")
                size=$(pre stat -c %s "$f")
                pre rm -f "$f"
            fi
            if [ "$size" != "$total" ]; then
                echo "$method $np procs: file is $size bytes, expected $total" >&2
                exit 1
            fi
            echo "$method,$np,$rep,$recsize,$nrec,$total,$secs,$mbs" >> "$out"
            printf '%-8s %d procs  rep %d  %8.1f MB/s\n' "$method" "$np" "$rep" "$mbs"
        done
    done
done

python3 - "$out" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
print(f"\nN-1 strided writes, {rows[0]['record_bytes']}-byte records, {rows[0]['records_per_proc']} per process (medians of {max(int(r['rep']) for r in rows)})")
print(f"{'procs':>5} {'FUSE MB/s':>10} {'preload MB/s':>13} {'preload/FUSE':>13}")
for np in sorted({int(r["nprocs"]) for r in rows}):
    med = {m: statistics.median(float(r["mb_per_s"]) for r in rows if r["method"] == m and int(r["nprocs"]) == np) for m in ("fuse", "preload")}
    print(f"{np:>5} {med['fuse']:>10.1f} {med['preload']:>13.1f} {med['preload'] / med['fuse']:>12.2f}x")
PY
echo "runs: $out"
