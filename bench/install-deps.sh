#!/usr/bin/env bash
# Installs what the benchmark suite needs (Debian 12): MPICH (mpicc, mpirun), matplotlib for the
# figures, FUSE 3 for the FUSE front end. Idempotent. Without root it prints the apt-get line and
# goes on: the suite then reports what it could not run as "not available".
set -euo pipefail
pkgs=(mpich libmpich-dev python3-matplotlib fuse3 coreutils grep)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
    exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    SUDO="sudo"
else
    echo "bench: missing packages: ${missing[*]}" >&2
    echo "bench: install them with: sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
    command -v mpicc >/dev/null || exit 1
    exit 0
fi
echo "bench: installing ${missing[*]}" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
