/* A killed MPI-IO job (issue 23): every rank writes N-1 strided records of RECORD bytes with
 * MPI_File_write_at, never syncing, and prints "ACK <rank> <n>" after each write that returned;
 * the test kills the whole job with SIGKILL at a random moment and reads every acknowledged
 * record back. Record k (at offset k*RECORD, k = i*size + rank) holds bytes (k*31 + j) % 251.
 * Usage: mpi_killed PATH RECORD */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 3) {
        if (rank == 0) fprintf(stderr, "usage: %s PATH RECORD\n", argv[0]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long long rec = atoll(argv[2]);
    MPI_File fh;
    if (MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_WRONLY | MPI_MODE_CREATE, MPI_INFO_NULL, &fh) != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: MPI_File_open failed\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    char *buf = malloc(rec);
    for (long long i = 0; i < (1LL << 40) / rec; i++) {
        long long k = i * size + rank;
        for (long long j = 0; j < rec; j++) buf[j] = (char)((k * 31 + j) % 251);
        MPI_Status st;
        if (MPI_File_write_at(fh, (MPI_Offset)(k * rec), buf, (int)rec, MPI_BYTE, &st) != MPI_SUCCESS) {
            fprintf(stderr, "rank %d: MPI_File_write_at failed\n", rank);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        printf("ACK %d %lld\n", rank, i + 1);
        fflush(stdout);
    }
    MPI_File_close(&fh);
    MPI_Finalize();
    return 0;
}
