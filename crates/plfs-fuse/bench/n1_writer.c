/* n1_writer: N-1 strided writes (the PLFS paper's checkpoint pattern) and their read-back.
 *
 * usage: n1_writer PATH NPROCS RECSIZE NREC [w|r]
 *
 * Forks NPROCS processes; each builds its records, reports ready, waits for a common start, then
 * opens PATH itself and, in phase `w` (default), pwrites NREC records of RECSIZE bytes at offsets
 * (i * NPROCS + rank) * RECSIZE (O_WRONLY|O_CREAT), or in phase `r` preads, O_RDONLY, the NREC
 * records writer (rank + 1) % NPROCS wrote and checks every byte of them; then it closes it.
 * The time is from the start to the exit of the last process (open, I/O and close included).
 * Prints: seconds MB/s cpu_seconds (MB = 1e6 bytes; cpu = user + system time of the processes,
 * from getrusage). Works the same on a FUSE mount and under LD_PRELOAD=libldplfs.so. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* Record i of writer `rank`: a stamp (i) then a pattern of the writer. */
static void fill(char *buf, size_t rec, int rank, long i) {
    for (size_t j = 0; j < rec; j++) buf[j] = (char)(rank * 31 + j);
    memcpy(buf, &i, sizeof i);
}

static void child(const char *path, int rank, int n, size_t rec, long nrec, int reading, int ready, int go) {
    char *buf = malloc(rec), *want = malloc(rec);
    if (!buf || !want) _exit(10);
    int src = reading ? (rank + 1) % n : rank;
    fill(buf, rec, src, 0);
    fill(want, rec, src, 0);
    char c = 'r';
    if (write(ready, &c, 1) != 1) _exit(11);
    if (read(go, &c, 1) < 0) _exit(12); /* EOF when the parent closes: start */
    int fd = reading ? open(path, O_RDONLY) : open(path, O_WRONLY | O_CREAT, 0644);
    if (fd < 0) { perror(path); _exit(13); }
    for (long i = 0; i < nrec; i++) {
        off_t off = ((off_t)i * n + src) * (off_t)rec;
        if (reading) {
            ssize_t got = pread(fd, buf, rec, off);
            if (got != (ssize_t)rec) { fprintf(stderr, "pread at %lld: %zd\n", (long long)off, got); _exit(14); }
            memcpy(want, &i, sizeof i);
            if (memcmp(buf, want, rec) != 0) { fprintf(stderr, "wrong data at %lld\n", (long long)off); _exit(16); }
        } else {
            memcpy(buf, &i, sizeof i);
            if (pwrite(fd, buf, rec, off) != (ssize_t)rec) { perror("pwrite"); _exit(14); }
        }
    }
    if (close(fd) != 0) { perror("close"); _exit(15); }
    _exit(0);
}

int main(int argc, char **argv) {
    if (argc != 5 && argc != 6) {
        fprintf(stderr, "usage: %s PATH NPROCS RECSIZE NREC [w|r]\n", argv[0]);
        return 2;
    }
    int n = atoi(argv[2]);
    size_t rec = strtoul(argv[3], NULL, 10);
    long nrec = atol(argv[4]);
    int reading = argc == 6 && argv[5][0] == 'r';
    int ready[2], go[2];
    if (n < 1 || rec < sizeof(long) || nrec < 1 || pipe(ready) || pipe(go)) return 2;
    pid_t *pids = calloc(n, sizeof *pids);
    for (int r = 0; r < n; r++) {
        pids[r] = fork();
        if (pids[r] < 0) { perror("fork"); return 1; }
        if (pids[r] == 0) {
            close(ready[0]);
            close(go[1]);
            child(argv[1], r, n, rec, nrec, reading, ready[1], go[0]);
        }
    }
    close(ready[1]);
    close(go[0]);
    for (int r = 0; r < n; r++) {
        char c;
        if (read(ready[0], &c, 1) != 1) { fprintf(stderr, "a process died before starting\n"); return 1; }
    }
    double t0 = now();
    close(go[1]);
    int bad = 0;
    for (int r = 0; r < n; r++) {
        int st;
        if (waitpid(pids[r], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) bad++;
    }
    double dt = now() - t0;
    if (bad) { fprintf(stderr, "%d process(es) failed\n", bad); return 1; }
    struct rusage ru;
    getrusage(RUSAGE_CHILDREN, &ru);
    double cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
    double bytes = (double)n * nrec * rec;
    printf("%.6f %.1f %.4f\n", dt, bytes / dt / 1e6, cpu);
    return 0;
}
