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
# The default list has the I/O libraries of tests/battery/test_io_libraries.py: parallel HDF5
# built against MPICH (libhdf5-mpich-dev, h5dump/h5diff from hdf5-tools) and PnetCDF, which Debian
# builds against OpenMPI only (libpnetcdf-dev, ncmpidump from pnetcdf-bin, mpicc.openmpi and
# mpirun.openmpi from libopenmpi-dev and openmpi-bin). OpenMPI's alternatives have the higher
# priority, so installing it would turn plain mpicc and mpirun (which every other MPI test uses)
# into OpenMPI's: whenever MPICH is installed this script pins the `mpi` and `mpirun`
# alternatives back to it, and checks that `mpicc -show` is MPICH's.
# And Environment Modules (environment-modules), with which tests/battery/test_site.py loads the
# module file docs/site.md installs.
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
    pkgs=(build-essential pkg-config mpich libmpich-dev fuse3 python3 python3-dev python3-pytest python3-venv coreutils tar strace rsync sqlite3 man-db
        libhdf5-mpich-dev hdf5-tools libpnetcdf-dev pnetcdf-bin libopenmpi-dev openmpi-bin environment-modules)
fi
# Plain mpicc and mpirun are MPICH's, whatever else is installed (see above). Idempotent: an
# alternative already on MPICH is left alone.
pin_mpich() {
    [ -x /usr/bin/mpicc.mpich ] || return 0
    local name target
    for name in mpi:/usr/bin/mpicc.mpich mpirun:/usr/bin/mpirun.mpich; do
        target=${name#*:}
        name=${name%%:*}
        [ -x "$target" ] || continue
        if [ "$(readlink -f "/etc/alternatives/$name")" != "$(readlink -f "$target")" ]; then
            if [ -z "${SUDO+set}" ]; then
                echo "the '$name' alternative is not MPICH's; fix it with: sudo update-alternatives --set $name $target" >&2
                exit 1
            fi
            $SUDO update-alternatives --quiet --set "$name" "$target"
        fi
    done
    if ! mpicc -show 2>/dev/null | grep -q mpich; then
        echo "mpicc is not MPICH's after pinning the alternatives: $(mpicc -show 2>&1)" >&2
        exit 1
    fi
}
if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    SUDO="sudo"
fi
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
    pin_mpich
    exit 0
fi
if [ -z "${SUDO+set}" ]; then
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
pin_mpich
