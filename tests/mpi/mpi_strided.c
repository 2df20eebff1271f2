/* N-1 strided MPI-IO test: every rank writes every nprocs-th block of one shared file
 * (MPI_File_write_at, or MPI_File_write_at_all for the collective mode), the file is closed and
 * reopened, and every rank reads the whole file back and checks every byte.
 *
 * usage: mpi_strided PATH MODE BLOCKS BLOCKSIZE
 *   MODE: indep | coll | nonblock   write block by block (write_at, write_at_all, iwrite_at +
 *                                   wait) then verify
 *         view | viewcoll           set a strided file view (a vector type) and write all of the
 *                                   rank's blocks in one MPI_File_write / MPI_File_write_all
 *                                   (ROMIO data sieving with fcntl locks / two-phase I/O)
 *         check          only verify (the file was written by a run with the same BLOCKS,
 *                        BLOCKSIZE and WRITERS given in $MPI_STRIDED_WRITERS)
 * The byte at file offset o is fill(o) below, independent of the number of ranks that wrote it,
 * so a file written with -np 2 and one written with -np 4 are identical.
 * Exit status 0 and "OK" on rank 0 when every byte matched. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char fill(long long o) {
    unsigned long long x = (unsigned long long)o * 0x9E3779B97F4A7C15ULL;
    return (unsigned char)(x >> 56) ^ (unsigned char)(o & 0xff);
}

static void die(const char *what, int err) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(err, msg, &len);
    fprintf(stderr, "mpi_strided: %s: %s\n", what, msg);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (argc != 5) {
        if (rank == 0) fprintf(stderr, "usage: %s PATH indep|coll|nonblock|view|viewcoll|check BLOCKS BLOCKSIZE\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    const char *path = argv[1], *mode = argv[2];
    long long blocks = atoll(argv[3]), bs = atoll(argv[4]);
    long long total = blocks * bs;
    int err;
    MPI_File fh;
    unsigned char *buf = malloc((size_t)bs);
    if (strncmp(mode, "view", 4) == 0) {
        int coll = strcmp(mode, "viewcoll") == 0;
        long long nb = blocks > rank ? (blocks - rank + np - 1) / np : 0;
        unsigned char *all = malloc((size_t)(nb * bs + 1));
        for (long long i = 0; i < nb; i++) {
            long long off = ((i * np) + rank) * bs;
            for (long long j = 0; j < bs; j++) all[i * bs + j] = fill(off + j);
        }
        MPI_Datatype ft;
        MPI_Type_vector(nb > 0 ? (int)nb : 1, (int)bs, (int)(np * bs), MPI_BYTE, &ft);
        MPI_Type_commit(&ft);
        err = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
        if (err != MPI_SUCCESS) die("open for writing", err);
        err = MPI_File_set_view(fh, (MPI_Offset)(rank * bs), MPI_BYTE, ft, "native", MPI_INFO_NULL);
        if (err != MPI_SUCCESS) die("set_view", err);
        MPI_Status st;
        int count = (int)(nb * bs);
        err = coll ? MPI_File_write_all(fh, all, count, MPI_BYTE, &st) : MPI_File_write(fh, all, count, MPI_BYTE, &st);
        if (err != MPI_SUCCESS) die("strided write", err);
        err = MPI_File_close(&fh);
        if (err != MPI_SUCCESS) die("close after writing", err);
        MPI_Type_free(&ft);
        free(all);
        MPI_Barrier(MPI_COMM_WORLD);
    } else if (strcmp(mode, "check") != 0) {
        int coll = strcmp(mode, "coll") == 0, nonblock = strcmp(mode, "nonblock") == 0;
        err = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
        if (err != MPI_SUCCESS) die("open for writing", err);
        /* Blocks are assigned round-robin; every rank makes the same number of collective calls. */
        long long rounds = (blocks + np - 1) / np;
        for (long long r = 0; r < rounds; r++) {
            long long b = r * np + rank;
            MPI_Offset off = (MPI_Offset)(b * bs);
            int count = b < blocks ? (int)bs : 0;
            for (long long j = 0; j < count; j++) buf[j] = fill(off + j);
            MPI_Status st;
            if (coll)
                err = MPI_File_write_at_all(fh, b < blocks ? off : 0, buf, count, MPI_BYTE, &st);
            else if (nonblock && count > 0) {
                MPI_Request req;
                err = MPI_File_iwrite_at(fh, off, buf, count, MPI_BYTE, &req);
                if (err == MPI_SUCCESS) err = MPI_Wait(&req, &st);
            }
            else if (count > 0)
                err = MPI_File_write_at(fh, off, buf, count, MPI_BYTE, &st);
            else
                err = MPI_SUCCESS;
            if (err != MPI_SUCCESS) die("write", err);
        }
        err = MPI_File_close(&fh);
        if (err != MPI_SUCCESS) die("close after writing", err);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    err = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    if (err != MPI_SUCCESS) die("open for reading", err);
    MPI_Offset size;
    MPI_File_get_size(fh, &size);
    long long bad = 0;
    if (size != total) {
        fprintf(stderr, "rank %d: size %lld, expected %lld\n", rank, (long long)size, total);
        bad++;
    }
    /* Every rank reads every block (not just its own). */
    for (long long b = 0; b < blocks && !bad; b++) {
        MPI_Status st;
        MPI_Offset off = (MPI_Offset)(b * bs);
        memset(buf, 0, (size_t)bs);
        err = MPI_File_read_at(fh, off, buf, (int)bs, MPI_BYTE, &st);
        if (err != MPI_SUCCESS) die("read", err);
        for (long long j = 0; j < bs; j++) {
            if (buf[j] != fill(off + j)) {
                if (bad < 5)
                    fprintf(stderr, "rank %d: byte %lld is %d, expected %d\n", rank, (long long)(off + j), buf[j], fill(off + j));
                bad++;
            }
        }
    }
    MPI_File_close(&fh);
    long long allbad = 0;
    MPI_Allreduce(&bad, &allbad, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf(allbad == 0 ? "OK %lld bytes\n" : "FAILED %lld bad bytes\n", allbad == 0 ? total : allbad);
    free(buf);
    MPI_Finalize();
    return allbad == 0 ? 0 : 1;
}
