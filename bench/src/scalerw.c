/* One process of bench/scale.py: rank I of N writes (w) or reads back (r) R strided records of
 * B bytes of one N-1 file through plain POSIX calls (ldplfs preloaded or not). A writer writes
 * its records at (k * N + I) * B; a reader reads those of rank (I + 1) % N, a neighbour's, as a
 * restart does, and checks every byte. Exit 1 on any error or wrong byte.
 *
 * usage: scalerw PATH N R I w|r [B] */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void fill(unsigned char *b, size_t n, int rank, int k) {
    for (size_t j = 0; j < n; j++) b[j] = (unsigned char)((rank * 31 + k * 7 + j) & 0xff);
}

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: scalerw PATH N R I w|r [B]\n");
        return 2;
    }
    const char *path = argv[1];
    int n = atoi(argv[2]), r = atoi(argv[3]), i = atoi(argv[4]);
    size_t b = argc > 6 ? (size_t)atol(argv[6]) : 47008;
    unsigned char *buf = malloc(b), *want = malloc(b);
    if (!buf || !want || n < 1 || i < 0 || i >= n) return 2;
    if (argv[5][0] == 'w') {
        int fd = open(path, O_WRONLY | O_CREAT, 0644);
        if (fd < 0) { perror(path); return 1; }
        for (int k = 0; k < r; k++) {
            fill(buf, b, i, k);
            if (pwrite(fd, buf, b, (off_t)((long)k * n + i) * (off_t)b) != (ssize_t)b) { perror("pwrite"); return 1; }
        }
        if (close(fd)) { perror("close"); return 1; }
    } else {
        int j = (i + 1) % n;
        int fd = open(path, O_RDONLY);
        if (fd < 0) { perror(path); return 1; }
        for (int k = 0; k < r; k++) {
            fill(want, b, j, k);
            if (pread(fd, buf, b, (off_t)((long)k * n + j) * (off_t)b) != (ssize_t)b || memcmp(buf, want, b)) {
                fprintf(stderr, "%s: rank %d's record %d reads wrong\n", path, j, k);
                return 1;
            }
        }
        if (close(fd)) { perror("close"); return 1; }
    }
    return 0;
}
