/* n1_writer: N-1 strided writes, the PLFS paper's checkpoint pattern.
 *
 * usage: n1_writer PATH NPROCS RECSIZE NREC
 *
 * Forks NPROCS processes; each builds its records, reports ready, waits for a common start, then
 * opens PATH (O_WRONLY|O_CREAT) itself, pwrites NREC records of RECSIZE bytes at offsets
 * (i * NPROCS + rank) * RECSIZE and closes it. The time is from the start to the exit of the
 * last process (open, writes and close included). Prints: seconds MB/s (MB = 1e6 bytes).
 * Works the same on a FUSE mount and under LD_PRELOAD=libldplfs.so. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void child(const char *path, int rank, int n, size_t rec, long nrec, int ready, int go) {
    char *buf = malloc(rec);
    if (!buf) _exit(10);
    for (size_t j = 0; j < rec; j++) buf[j] = (char)(rank * 31 + j);
    char c = 'r';
    if (write(ready, &c, 1) != 1) _exit(11);
    if (read(go, &c, 1) < 0) _exit(12); /* EOF when the parent closes: start */
    int fd = open(path, O_WRONLY | O_CREAT, 0644);
    if (fd < 0) { perror(path); _exit(13); }
    for (long i = 0; i < nrec; i++) {
        memcpy(buf, &i, sizeof i);
        off_t off = ((off_t)i * n + rank) * (off_t)rec;
        if (pwrite(fd, buf, rec, off) != (ssize_t)rec) { perror("pwrite"); _exit(14); }
    }
    if (close(fd) != 0) { perror("close"); _exit(15); }
    _exit(0);
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s PATH NPROCS RECSIZE NREC\n", argv[0]);
        return 2;
    }
    int n = atoi(argv[2]);
    size_t rec = strtoul(argv[3], NULL, 10);
    long nrec = atol(argv[4]);
    int ready[2], go[2];
    if (n < 1 || rec < sizeof(long) || nrec < 1 || pipe(ready) || pipe(go)) return 2;
    pid_t *pids = calloc(n, sizeof *pids);
    for (int r = 0; r < n; r++) {
        pids[r] = fork();
        if (pids[r] < 0) { perror("fork"); return 1; }
        if (pids[r] == 0) {
            close(ready[0]);
            close(go[1]);
            child(argv[1], r, n, rec, nrec, ready[1], go[0]);
        }
    }
    close(ready[1]);
    close(go[0]);
    for (int r = 0; r < n; r++) {
        char c;
        if (read(ready[0], &c, 1) != 1) { fprintf(stderr, "a writer died before starting\n"); return 1; }
    }
    double t0 = now();
    close(go[1]);
    int bad = 0;
    for (int r = 0; r < n; r++) {
        int st;
        if (waitpid(pids[r], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) bad++;
    }
    double dt = now() - t0;
    if (bad) { fprintf(stderr, "%d writer(s) failed\n", bad); return 1; }
    double bytes = (double)n * nrec * rec;
    printf("%.6f %.1f\n", dt, bytes / dt / 1e6);
    return 0;
}
