#!/usr/bin/env bash
# Checks pio's own checker: a file written by pio reads back clean; after one byte of it is
# changed, the read phase reports exactly one bad record and exits 3; a record copied onto
# another record's place is caught too. Usage: bench/selftest.sh [BINDIR]
set -euo pipefail
bin=${1:-$(dirname "$0")/../target/bench}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
f=$dir/f
for layout in strided segmented; do
    out=$(mpirun -np 2 "$bin/pio" -p "$f" -l "$layout" -b 47008 -n 8 -w -q)
    seed=$(sed -n 's/.*seed=\(0x[0-9a-f]*\).*/\1/p' <<<"$out")
    mpirun -np 2 "$bin/pio" -p "$f" -l "$layout" -b 47008 -n 8 -r -x "$seed" -q >/dev/null
    # one byte changed in the middle of record 5
    printf 'Z' | dd of="$f" bs=1 seek=$((5 * 47008 + 20000)) conv=notrunc status=none
    set +e
    err=$(mpirun -np 2 "$bin/pio" -p "$f" -l "$layout" -b 47008 -n 8 -r -x "$seed" -q 2>&1 >/dev/null)
    rc=$?
    set -e
    [ "$rc" -ne 0 ] || { echo "selftest: a changed byte went unnoticed ($layout)"; exit 1; }
    [ "$(grep -c 'DATA ERROR' <<<"$err")" -eq 1 ] || { echo "selftest: want 1 data error: $err"; exit 1; }
    # record 1 copied over record 2: the same bytes, at the wrong place
    mpirun -np 2 "$bin/pio" -p "$f" -l "$layout" -b 47008 -n 8 -w -x "$seed" -q >/dev/null
    dd if="$f" of="$f" bs=47008 skip=1 seek=2 count=1 conv=notrunc status=none
    set +e
    mpirun -np 2 "$bin/pio" -p "$f" -l "$layout" -b 47008 -n 8 -r -x "$seed" -q >/dev/null 2>&1
    rc=$?
    set -e
    [ "$rc" -eq 3 ] || { echo "selftest: a misplaced record went unnoticed ($layout, rc $rc)"; exit 1; }
done
echo "selftest: 6 passed, 0 failed"
