/* A SIGALRM handler (setitimer, every 200 us) writes a line while the main loop does PLFS I/O
 * (issue 50, item 9: such writes failed with EPERM when the signal landed inside ldplfs).
 * usage: sigwrite DIR LOG [ITERATIONS]
 * The handler writes "tick\n" to LOG (a plain file, or a file under the mount), to stderr and to a
 * pipe. The main loop rewrites 64 blocks of DIR/big at random and reads each back, and creates,
 * writes, reads and removes DIR/small.N every 20 iterations; every read is checked against the
 * pattern written. Prints "ticks T log_ok A log_eagain B log_other C stderr_fail D pipe_fail E
 * pipe_lines F bad_reads G"; exits 2 when a main-loop call fails. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

static int log_fd, pipe_w;
static volatile sig_atomic_t ticks, log_ok, log_eagain, log_other, stderr_fail, pipe_fail;

static void handler(int sig) {
    (void)sig;
    int saved = errno;
    ticks++;
    ssize_t r = write(log_fd, "tick\n", 5);
    if (r == 5)
        log_ok++;
    else if (r < 0 && errno == EAGAIN)
        log_eagain++;
    else
        log_other++;
    if (write(2, "tick\n", 5) != 5) stderr_fail++;
    if (write(pipe_w, "tick\n", 5) != 5) pipe_fail++;
    errno = saved;
}

static void fill(char *b, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++) b[i] = (char)((seed * 2654435761u + i * 40503u) >> 13);
}

int main(int argc, char **argv) {
    if (argc < 3) return 1;
    int iters = argc > 3 ? atoi(argv[3]) : 20000;
    char path[4096], want[4096], got[4096];
    unsigned seeds[64] = {0};
    int p[2];
    if (pipe(p) != 0) return 1;
    fcntl(p[1], F_SETPIPE_SZ, 1 << 20);
    fcntl(p[1], F_SETFL, O_NONBLOCK);
    pipe_w = p[1];
    log_fd = open(argv[2], O_WRONLY | O_CREAT | O_APPEND, 0644);
    snprintf(path, sizeof path, "%s/big", argv[1]);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (log_fd < 0 || fd < 0) { perror("open"); return 2; }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{0, 200}, {0, 200}};
    setitimer(ITIMER_REAL, &it, NULL);
    long bad = 0;
    srand(7);
    for (int i = 1; i <= iters; i++) {
        int blk = rand() % 64;
        seeds[blk] = (unsigned)i;
        fill(want, sizeof want, seeds[blk]);
        if (pwrite(fd, want, sizeof want, (off_t)blk * 4096) != (ssize_t)sizeof want) { perror("pwrite"); return 2; }
        if (pread(fd, got, sizeof got, (off_t)blk * 4096) != (ssize_t)sizeof got) { perror("pread"); return 2; }
        bad += memcmp(want, got, sizeof got) != 0;
        if (i % 20 == 0) {
            snprintf(path, sizeof path, "%s/small.%d", argv[1], i);
            int s = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
            if (s < 0) { perror("open small"); return 2; }
            if (write(s, want, 1000) != 1000) { perror("write small"); return 2; }
            if (pread(s, got, 1000, 0) != 1000) { perror("pread small"); return 2; }
            bad += memcmp(want, got, 1000) != 0;
            if (close(s) != 0 || unlink(path) != 0) { perror("close/unlink small"); return 2; }
        }
    }
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    for (int blk = 0; blk < 64; blk++) {
        if (!seeds[blk]) continue;
        fill(want, sizeof want, seeds[blk]);
        if (pread(fd, got, sizeof got, (off_t)blk * 4096) != (ssize_t)sizeof got) { perror("pread"); return 2; }
        bad += memcmp(want, got, sizeof got) != 0;
    }
    close(fd);
    close(log_fd);
    close(p[1]);
    long lines = 0;
    ssize_t n;
    fcntl(p[0], F_SETFL, O_NONBLOCK);
    while ((n = read(p[0], got, sizeof got)) > 0)
        for (ssize_t k = 0; k < n; k++) lines += got[k] == '\n';
    printf("ticks %d log_ok %d log_eagain %d log_other %d stderr_fail %d pipe_fail %d pipe_lines %ld bad_reads %ld\n",
           (int)ticks, (int)log_ok, (int)log_eagain, (int)log_other, (int)stderr_fail, (int)pipe_fail, lines, bad);
    return 0;
}
