#!/usr/bin/env bash
# Installs what the benchmark suite needs (Debian 12): MPICH (mpicc, mpirun), matplotlib for the
# figures, FUSE 3 for the FUSE front end, strace and valgrind (system calls and instructions
# counted), sqlite3 (issue 26's two-writer database). Without root it prints the apt-get line and goes on if
# mpicc is there: the suite then reports what it could not run as "not available".
exec "$(dirname "$0")/../scripts/install-deps.sh" --soft-if mpicc mpich libmpich-dev python3-matplotlib fuse3 coreutils grep strace valgrind sqlite3
