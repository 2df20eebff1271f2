#!/usr/bin/env bash
# Installs the system packages plfs needs (Debian 12): by default those of the test suite; or the
# packages named as arguments. Idempotent; installs only what is missing. Needs root (or
# passwordless sudo); otherwise prints the command to run and fails, unless `--soft-if CMD` is
# given and CMD is on the PATH (the caller can do without the rest).
#   scripts/install-deps.sh [--soft-if CMD] [PACKAGE|GROUP...]
# A GROUP names the packages of a distributed file system that the tests start (make test):
#   glusterfs  glusterfs-server glusterfs-client          (scripts/glusterfs.sh)
#   moosefs    moosefs-master moosefs-chunkserver moosefs-client     (scripts/moosefs.sh)
#   cephfs     ceph-mon ceph-mgr ceph-osd ceph-mds ceph-fuse ceph-common   (scripts/cephfs.sh)
set -euo pipefail
soft=""
if [ "${1:-}" = "--soft-if" ]; then
    soft="$2"
    shift 2
fi
if (($# > 0)); then
    pkgs=()
    for a in "$@"; do
        case "$a" in
        glusterfs) pkgs+=(glusterfs-server glusterfs-client) ;;
        moosefs) pkgs+=(moosefs-master moosefs-chunkserver moosefs-client) ;;
        cephfs) pkgs+=(ceph-mon ceph-mgr ceph-osd ceph-mds ceph-fuse ceph-common) ;;
        *) pkgs+=("$a") ;;
        esac
    done
else
    pkgs=(build-essential pkg-config mpich libmpich-dev fuse3 python3 python3-dev python3-pytest python3-venv coreutils tar strace rsync sqlite3 man-db)
fi
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
    echo "missing packages: ${missing[*]}" >&2
    echo "install them with: sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
    if [ -n "$soft" ] && command -v "$soft" >/dev/null; then
        exit 0
    fi
    exit 1
fi
echo "installing: ${missing[*]}" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
