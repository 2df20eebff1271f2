/* The time a test program spends in its file's I/O calls (open, writes or reads, close: not the
 * computing of the values), for bench/io_libraries.py. Each rank adds up its own; a report
 * prints the slowest rank's sum on rank 0's standard error as "IOTIME WHAT SECONDS", only when
 * PLFS_IO_TIMES is set (the tests compare standard output between runs). */
#ifndef PLFS_TEST_IOTIME_H
#define PLFS_TEST_IOTIME_H
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static double iotime_secs;

#define IOTIMED(...)                           \
    do {                                       \
        double iotime_t0_ = MPI_Wtime();       \
        __VA_ARGS__;                           \
        iotime_secs += MPI_Wtime() - iotime_t0_; \
    } while (0)

/* Collective: every rank calls it. Starts the next sum at zero. */
static void iotime_report(const char *what) {
    double worst = 0;
    int me;
    MPI_Reduce(&iotime_secs, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (me == 0 && getenv("PLFS_IO_TIMES")) fprintf(stderr, "IOTIME %s %.6f\n", what, worst);
    iotime_secs = 0;
}

#endif
