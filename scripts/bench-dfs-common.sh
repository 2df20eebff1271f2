# Sourced by scripts/bench-glusterfs.sh, bench-moosefs.sh and bench-cephfs.sh: the parts of their runs that
# do not depend on the file system.

# `sections PROFILE MOUNT [RUN.PY ARGS...]`: the benchmark's bandwidth and metadata sections with
# the work area in a new directory of MOUNT (removed at exit), results in
# bench/results/<date>-PROFILE/.
sections() {
    local profile=$1 mnt=$2
    shift 2
    WORK=$mnt/plfs-bench.$$
    trap 'rm -rf "$WORK" || true' EXIT
    mkdir -p "$WORK"
    chmod 755 "$WORK"
    ${PYTHON:-python3} bench/run.py --profile "$profile" --only bandwidth,meta --tmpdir "$WORK" "$@"
}

# `preload_lib [RUN.PY ARGS...]`: the libldplfs.so the run measures: in the directory given by
# `--release DIR`, else the release build's.
preload_lib() {
    local dir=target/release
    while (($# > 0)); do
        if [ "$1" = --release ] && (($# > 1)); then
            dir=$2
        fi
        shift
    done
    realpath "$dir/libldplfs.so"
}

# `writer_and_protocol MOUNT MOUNT2 OUT NAME` (through $LIB): the system calls per write of 4 N-1 writers and the
# peak RSS of a writer of 1,000,000 64-byte writes (bench/writer_counts.py) with the work area on
# MOUNT, printed and saved as OUT/writer_counts.json; then issue 22's bandwidth protocol
# (bench/n1_protocol.py, read back through MOUNT2, the same file system's second client), printed
# and saved as OUT/n1_protocol.txt; skipped, saying so, when MOUNT2 is empty. NAME names the
# file system in that message. N1_PROTOCOL_ARGS, when set, is added to n1_protocol.py's arguments
# (bench-cephfs.sh: --split --fsync no,yes).
writer_and_protocol() {
    local mnt=$1 mnt2=$2 out=$3 name=$4
    ${PYTHON:-python3} bench/writer_counts.py "$mnt" --json --lib "$LIB" >"$out/writer_counts.json"
    ${PYTHON:-python3} - "$out/writer_counts.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"system calls per write, {r['writers']} N-1 writers of {r['record']} B through ldplfs (budget: 1 pwrite, nothing else)")
for c, v in r["syscalls_per_write"].items():
    print(f"  {c:16} {v}")
m = r["peak_rss_mib"]
print(f"peak RSS of a writer of {r['small_writes']} 64-byte writes: plfs {m['plfs']} MiB, plain {m['plain']} MiB (budget: plfs <= 24 MiB)")
PY
    if [ -n "$mnt2" ]; then
        echo "issue 22's bandwidth protocol (bench/n1_protocol.py; medians of 3, 104 MB a run)"
        # shellcheck disable=SC2086 # N1_PROTOCOL_ARGS is a list of words
        ${PYTHON:-python3} bench/n1_protocol.py --mnt "$mnt" --mnt2 "$mnt2" --lib "$LIB" ${N1_PROTOCOL_ARGS:-} | tee "$out/n1_protocol.txt"
    else
        echo "n1_protocol: skipped, $name has one client mount" >&2
    fi
}
