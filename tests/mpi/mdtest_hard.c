/* The shape of IO500's mdtest-hard (mdtest -n N -t -w 3901 -e 3901 -P -N 1 -F in one shared
 * directory), written here: every rank creates N files of SIZE bytes (3,901 by default) in DIR,
 * then, phase after phase with a barrier between, stats its neighbour's files (rank + 1), reads
 * them back and checks every byte, lists the directory (rank 0: all NP * N names), and removes
 * its own files; rank 0 then lists the directory again (none of them left). Each phase is timed
 * from the barrier before it to the barrier after it.
 *
 * usage: mdtest_hard DIR N [SIZE] [keep]
 *   keep: no remove phase (the files stay, for a look at the backend)
 * Prints one "MDHARD phase=P files=F secs=S rate=R" line a phase on rank 0, and "OK" when every
 * check of every rank passed; exit status 1 (and what failed, on the rank's stderr) otherwise. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int rank, np;
static long errors;

static unsigned char fill(int owner, int i, size_t j) {
    unsigned long long x = ((unsigned long long)owner << 40) ^ ((unsigned long long)i << 20) ^ j;
    x *= 0x9E3779B97F4A7C15ULL;
    return (unsigned char)(x >> 56);
}

static void name(char *out, size_t cap, const char *dir, int owner, int i) {
    snprintf(out, cap, "%s/file.mdtest.%d.%d", dir, owner, i);
}

static void fail(const char *what, const char *path, int err) {
    fprintf(stderr, "mdtest_hard: rank %d: %s %s: %s\n", rank, what, path, err ? strerror(err) : "wrong");
    errors++;
}

static double phase_start(void) {
    MPI_Barrier(MPI_COMM_WORLD);
    return MPI_Wtime();
}

static void phase_end(const char *phase, double t0, long files) {
    MPI_Barrier(MPI_COMM_WORLD);
    double secs = MPI_Wtime() - t0;
    if (rank == 0)
        printf("MDHARD phase=%s files=%ld secs=%.6f rate=%.1f\n", phase, files, secs, secs > 0 ? files / secs : 0.0);
}

static void create_own(const char *dir, int n, size_t size, unsigned char *buf) {
    char path[4096];
    for (int i = 0; i < n; i++) {
        name(path, sizeof path, dir, rank, i);
        for (size_t j = 0; j < size; j++)
            buf[j] = fill(rank, i, j);
        int fd = open(path, O_CREAT | O_WRONLY, 0644);
        if (fd < 0) {
            fail("create", path, errno);
            continue;
        }
        size_t done = 0;
        while (done < size) {
            ssize_t w = write(fd, buf + done, size - done);
            if (w <= 0) {
                fail("write", path, w < 0 ? errno : 0);
                break;
            }
            done += (size_t)w;
        }
        if (close(fd) != 0)
            fail("close", path, errno);
    }
}

static void stat_neighbour(const char *dir, int n, size_t size) {
    char path[4096];
    int nb = (rank + 1) % np;
    for (int i = 0; i < n; i++) {
        struct stat st;
        name(path, sizeof path, dir, nb, i);
        if (stat(path, &st) != 0)
            fail("stat", path, errno);
        else if (!S_ISREG(st.st_mode) || (size_t)st.st_size != size) {
            fprintf(stderr, "mdtest_hard: rank %d: stat %s: mode %o size %lld, want a file of %zu\n", rank, path,
                    (unsigned)st.st_mode, (long long)st.st_size, size);
            errors++;
        }
    }
}

static void read_neighbour(const char *dir, int n, size_t size, unsigned char *buf) {
    char path[4096];
    int nb = (rank + 1) % np;
    for (int i = 0; i < n; i++) {
        name(path, sizeof path, dir, nb, i);
        int fd = open(path, O_RDONLY);
        if (fd < 0) {
            fail("open", path, errno);
            continue;
        }
        /* One byte more than the file: a read must end exactly at its size. */
        size_t got = 0;
        for (;;) {
            ssize_t r = read(fd, buf + got, size + 1 - got);
            if (r < 0) {
                fail("read", path, errno);
                break;
            }
            if (r == 0 || got + (size_t)r > size) {
                got += (size_t)(r > 0 ? r : 0);
                break;
            }
            got += (size_t)r;
        }
        if (got != size) {
            fprintf(stderr, "mdtest_hard: rank %d: read %s: %zu bytes, want %zu\n", rank, path, got, size);
            errors++;
        } else {
            for (size_t j = 0; j < size; j++)
                if (buf[j] != fill(nb, i, j)) {
                    fprintf(stderr, "mdtest_hard: rank %d: read %s: byte %zu differs\n", rank, path, j);
                    errors++;
                    break;
                }
        }
        close(fd);
    }
}

/* Names in DIR that start with "file.mdtest.". */
static long count_listed(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) {
        fail("opendir", dir, errno);
        return -1;
    }
    long k = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strncmp(e->d_name, "file.mdtest.", 12) == 0)
            k++;
    closedir(d);
    return k;
}

static void remove_own(const char *dir, int n) {
    char path[4096];
    for (int i = 0; i < n; i++) {
        name(path, sizeof path, dir, rank, i);
        if (unlink(path) != 0)
            fail("unlink", path, errno);
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (argc < 3) {
        if (rank == 0)
            fprintf(stderr, "usage: mdtest_hard DIR N [SIZE] [keep]\n");
        MPI_Finalize();
        return 2;
    }
    const char *dir = argv[1];
    int n = atoi(argv[2]);
    size_t size = argc > 3 ? (size_t)atol(argv[3]) : 3901;
    int keep = argc > 4 && strcmp(argv[4], "keep") == 0;
    unsigned char *buf = malloc(size + 1);
    long files = (long)n * np;

    double t = phase_start();
    create_own(dir, n, size, buf);
    phase_end("create", t, files);

    t = phase_start();
    stat_neighbour(dir, n, size);
    phase_end("stat", t, files);

    t = phase_start();
    read_neighbour(dir, n, size, buf);
    phase_end("read", t, files);

    if (rank == 0) {
        long k = count_listed(dir);
        if (k != files) {
            fprintf(stderr, "mdtest_hard: readdir %s: %ld files, want %ld\n", dir, k, files);
            errors++;
        }
    }
    if (!keep) {
        t = phase_start();
        remove_own(dir, n);
        phase_end("remove", t, files);
        if (rank == 0) {
            long k = count_listed(dir);
            if (k != 0) {
                fprintf(stderr, "mdtest_hard: readdir %s after the removes: %ld files, want 0\n", dir, k);
                errors++;
            }
        }
    }
    long all = 0;
    MPI_Allreduce(&errors, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && all == 0)
        printf("OK\n");
    free(buf);
    MPI_Finalize();
    return all == 0 ? 0 : 1;
}
