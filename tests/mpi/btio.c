/* NAS BT-IO in shape ("full" MPI-IO subtype, NPB's btio/full_mpiio.f): the solution array of BT,
 * NX x NY x NZ cells of 5 doubles, block-decomposed over the ranks (MPI_Dims_create), is appended
 * to one shared file after every one of STEPS time steps: step s is the whole global array at
 * file offset s * (global array size), in C order [z][y][x][5]. Each rank's part is a 4-D
 * subarray (MPI_Type_create_subarray) used as the file view's filetype, and written with a
 * collective call: even steps set the view at the step's offset and call MPI_File_write_all (as
 * BT-IO does), odd steps keep a view at 0 and call MPI_File_write_at_all with the step's offset in
 * elementary types (s tiles of the rank's own cells). Then, as BT-IO's verification, the file is closed, reopened read-only, and
 * every step is read back collectively (MPI_File_read_all through the same views) and checked
 * value by value.
 *
 * usage: btio PATH write|check NX NY NZ STEPS [HINT=VALUE...]
 *   write   MPI_File_delete, then write every step, then read back and check
 *   check   only read back and check (a file written by any number of ranks: the value of a cell
 *           depends only on the step and its global index, never on the decomposition)
 *   HINT=VALUE  MPI_Info hints for the open (e.g. cb_config_list=*:* makes every rank a
 *               collective-buffering aggregator: several writers of the one file)
 * Exit status 0 and "BTIO OK ..." on rank 0 when every value matched; otherwise a message naming
 * the first bad step, cell and component, and exit status 1. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iotime.h"
#include "mix64.h"

#define NCOMP 5

/* The value of component m of cell (x, y, z) at step s: an exact double (a 52-bit integer over
 * 2^20) of a hash, so that every byte of the file depends on where the value is. */
static double value(int s, long long x, long long y, long long z, int m) {
    uint64_t h = ((((uint64_t)s * 1000003u + (uint64_t)z) * 1000033u + (uint64_t)y) * 1000037u + (uint64_t)x) * 8u + (uint64_t)m;
    h = mix64(h);
    return (double)(h & ((1ULL << 52) - 1)) / 1048576.0 - 2.0e9;
}

static void die(const char *what, int err) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(err, msg, &len);
    fprintf(stderr, "btio: %s: %s\n", what, msg);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

/* The rank's block of one dimension: cells [*start, *start + *count) of n over p parts. */
static void split(int n, int p, int i, int *start, int *count) {
    int base = n / p, extra = n % p;
    *count = base + (i < extra ? 1 : 0);
    *start = i * base + (i < extra ? i : extra);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (argc < 7 || (strcmp(argv[2], "write") != 0 && strcmp(argv[2], "check") != 0)) {
        if (rank == 0) fprintf(stderr, "usage: %s PATH write|check NX NY NZ STEPS [HINT=VALUE...]\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    const char *path = argv[1];
    int writing = strcmp(argv[2], "write") == 0;
    int gsize[3] = {atoi(argv[5]), atoi(argv[4]), atoi(argv[3])}; /* z, y, x */
    int steps = atoi(argv[6]);
    MPI_Info info;
    MPI_Info_create(&info);
    for (int a = 7; a < argc; a++) {
        char *eq = strchr(argv[a], '=');
        if (!eq) continue;
        *eq = '\0';
        MPI_Info_set(info, argv[a], eq + 1);
    }

    /* The process grid and this rank's block of cells. */
    int dims[3] = {0, 0, 0}, periods[3] = {0, 0, 0}, coords[3];
    MPI_Dims_create(np, 3, dims);
    MPI_Comm grid;
    MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 0, &grid);
    MPI_Cart_coords(grid, rank, 3, coords);
    int start[3], count[3];
    for (int d = 0; d < 3; d++) split(gsize[d], dims[d], coords[d], &start[d], &count[d]);
    long long cells = (long long)count[0] * count[1] * count[2];
    long long gdoubles = (long long)gsize[0] * gsize[1] * gsize[2] * NCOMP;
    MPI_Offset step_bytes = (MPI_Offset)gdoubles * (MPI_Offset)sizeof(double);

    /* The filetype: this rank's cells in the global [z][y][x][5] array. */
    int fsizes[4] = {gsize[0], gsize[1], gsize[2], NCOMP};
    int fsub[4] = {count[0], count[1], count[2], NCOMP};
    int fstart[4] = {start[0], start[1], start[2], 0};
    MPI_Datatype ftype;
    MPI_Type_create_subarray(4, fsizes, fsub, fstart, MPI_ORDER_C, MPI_DOUBLE, &ftype);
    MPI_Type_commit(&ftype);

    double *u = malloc((size_t)(cells * NCOMP + 1) * sizeof(double));
    int err;
    MPI_File fh;
    MPI_Status st;
    if (writing) {
        if (rank == 0) MPI_File_delete(path, MPI_INFO_NULL); /* BT-IO starts afresh; absent is fine */
        MPI_Barrier(MPI_COMM_WORLD);
        IOTIMED(err = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE, info, &fh));
        if (err != MPI_SUCCESS) die("open for writing", err);
        for (int s = 0; s < steps; s++) {
            long long n = 0;
            for (int z = 0; z < count[0]; z++)
                for (int y = 0; y < count[1]; y++)
                    for (int x = 0; x < count[2]; x++)
                        for (int m = 0; m < NCOMP; m++)
                            u[n++] = value(s, start[2] + x, start[1] + y, start[0] + z, m);
            if (s % 2 == 0) {
                err = MPI_File_set_view(fh, (MPI_Offset)s * step_bytes, MPI_DOUBLE, ftype, "native", info);
                if (err != MPI_SUCCESS) die("set_view", err);
                IOTIMED(err = MPI_File_write_all(fh, u, (int)(cells * NCOMP), MPI_DOUBLE, &st));
                if (err != MPI_SUCCESS) die("write_all", err);
            } else {
                err = MPI_File_set_view(fh, 0, MPI_DOUBLE, ftype, "native", info);
                if (err != MPI_SUCCESS) die("set_view", err);
                /* The offset counts the etypes the view shows, this rank's: s tiles of them. */
                IOTIMED(err = MPI_File_write_at_all(fh, (MPI_Offset)s * cells * NCOMP, u, (int)(cells * NCOMP), MPI_DOUBLE, &st));
                if (err != MPI_SUCCESS) die("write_at_all", err);
            }
        }
        IOTIMED(err = MPI_File_close(&fh));
        if (err != MPI_SUCCESS) die("close after writing", err);
        iotime_report("write");
    }

    /* Verification: reopen, read every step back collectively, check every value. */
    IOTIMED(err = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, info, &fh));
    if (err != MPI_SUCCESS) die("open for reading", err);
    MPI_Offset size;
    MPI_File_get_size(fh, &size);
    long long bad = 0;
    if (size != (MPI_Offset)steps * step_bytes) {
        if (rank == 0)
            fprintf(stderr, "btio: file size %lld, expected %lld (%d steps of %lld bytes)\n", (long long)size,
                    (long long)steps * (long long)step_bytes, steps, (long long)step_bytes);
        bad++;
    }
    for (int s = 0; s < steps; s++) {
        err = MPI_File_set_view(fh, (MPI_Offset)s * step_bytes, MPI_DOUBLE, ftype, "native", info);
        if (err != MPI_SUCCESS) die("set_view for reading", err);
        for (long long i = 0; i < cells * NCOMP; i++) u[i] = -1.0;
        IOTIMED(err = MPI_File_read_all(fh, u, (int)(cells * NCOMP), MPI_DOUBLE, &st));
        if (err != MPI_SUCCESS) die("read_all", err);
        long long n = 0;
        for (int z = 0; z < count[0]; z++)
            for (int y = 0; y < count[1]; y++)
                for (int x = 0; x < count[2]; x++)
                    for (int m = 0; m < NCOMP; m++, n++) {
                        double want = value(s, start[2] + x, start[1] + y, start[0] + z, m);
                        if (u[n] != want) {
                            if (bad < 5)
                                fprintf(stderr, "btio: rank %d: step %d cell (x=%d, y=%d, z=%d) component %d is %.17g, expected %.17g\n",
                                        rank, s, start[2] + x, start[1] + y, start[0] + z, m, u[n], want);
                            bad++;
                        }
                    }
    }
    IOTIMED(err = MPI_File_close(&fh));
    if (err != MPI_SUCCESS) die("close after reading", err);
    iotime_report("read");

    long long allbad = 0;
    MPI_Allreduce(&bad, &allbad, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        if (allbad == 0)
            printf("BTIO OK %s %dx%dx%d cells, %d steps, %lld bytes, grid %dx%dx%d\n", writing ? "wrote and checked" : "checked",
                   gsize[2], gsize[1], gsize[0], steps, (long long)steps * (long long)step_bytes, dims[2], dims[1], dims[0]);
        else
            printf("BTIO FAILED %lld bad values\n", allbad);
    }
    free(u);
    MPI_Type_free(&ftype);
    MPI_Info_free(&info);
    MPI_Comm_free(&grid);
    MPI_Finalize();
    return allbad == 0 ? 0 : 1;
}
