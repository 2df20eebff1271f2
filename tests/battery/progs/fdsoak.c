/* Descriptor soak: thousands of fstat/lseek(SEEK_END)/fallocate/stat/open/close/read/write
 * cycles on files in DIR while counting the entries of /proc/self/fd.
 *   fdsoak DIR ITERATIONS
 * Prints "before MAX after" (descriptor counts with nothing open in DIR, the largest count
 * seen during the loop, the count after everything was closed again) and leaves long.bin and
 * cycle0.bin..cycle3.bin in DIR, whose contents depend only on ITERATIONS (so a run on a plain
 * directory is the reference). Exit status 1 on any failed call. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int count_fds(void) {
    DIR *d = opendir("/proc/self/fd");
    if (!d) {
        perror("opendir /proc/self/fd");
        exit(1);
    }
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n - 1; /* the directory stream's own descriptor */
}

#define CHECK(x)                                                                         \
    do {                                                                                 \
        if (!(x)) {                                                                      \
            fprintf(stderr, "line %d: %s failed: %s (iteration %d)\n", __LINE__, #x,     \
                    strerror(errno), it);                                                \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

static int it = -1;

/* One open/use/close cycle of a short-lived file. */
static void cycle(const char *dir, int i) {
    char path[4096], buf[256];
    snprintf(path, sizeof path, "%s/cycle%d.bin", dir, i % 4);
    int fd = open(path, O_RDWR | O_CREAT, 0644);
    CHECK(fd >= 0);
    int len = snprintf(buf, sizeof buf, "cycle %d\n", i);
    off_t end = lseek(fd, 0, SEEK_END);
    CHECK(end >= 0);
    CHECK(write(fd, buf, len) == len);
    struct stat st;
    CHECK(fstat(fd, &st) == 0 && st.st_size == end + len);
    CHECK(stat(path, &st) == 0 && st.st_size == end + len);
    CHECK(pread(fd, buf, 8, 0) == 8 && memcmp(buf, "cycle ", 6) == 0);
    CHECK(close(fd) == 0);
    CHECK(stat(path, &st) == 0 && st.st_size == end + len);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: fdsoak DIR ITERATIONS\n");
        return 2;
    }
    const char *dir = argv[1];
    int iters = atoi(argv[2]);
    char lpath[4096];
    snprintf(lpath, sizeof lpath, "%s/long.bin", dir);

    /* Warm-up: one of everything, so what a library keeps for the process's lifetime (its
     * configuration, a mount's backend directory) is already counted in `before`. */
    for (int i = 0; i < 4; i++) cycle(dir, i);
    int before = count_fds();
    int max = before;

    int fd = open(lpath, O_RDWR | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0);
    char buf[512], back[512];
    for (it = 0; it < iters; it++) {
        memset(buf, 'a' + it % 26, sizeof buf);
        struct stat st;
        CHECK(fstat(fd, &st) == 0);
        off_t end = lseek(fd, 0, SEEK_END);
        CHECK(end == st.st_size);
        CHECK(write(fd, buf, 100) == 100);
        CHECK(pwrite(fd, buf, 50, (off_t)(it * 37) % (end + 100)) == 50);
        /* Within the size: nothing to allocate, but the size is looked up. */
        CHECK(posix_fallocate(fd, 0, end + 100) == 0);
        CHECK(fallocate(fd, 0, 0, end + 50) == 0 || errno == EOPNOTSUPP);
        CHECK(fstat(fd, &st) == 0 && st.st_size >= end + 100);
        CHECK(stat(lpath, &st) == 0 && st.st_size >= end + 100);
        CHECK(lseek(fd, -100, SEEK_END) >= 0);
        ssize_t n = read(fd, back, 100);
        CHECK(n == 100);
        CHECK(pread(fd, back, 50, 0) == 50);
        if (it % 100 == 99) {
            /* Extend, then cut back (each leaves a truncate record in PLFS). */
            CHECK(fallocate(fd, 0, 0, end + 120) == 0 || errno == EOPNOTSUPP);
            CHECK(ftruncate(fd, end + 100) == 0);
        }
        if (it % 10 == 0) cycle(dir, it);
        if (it % 50 == 0) {
            int c = count_fds();
            if (c > max) max = c;
        }
    }
    int c = count_fds();
    if (c > max) max = c;
    CHECK(close(fd) == 0);
    int after = count_fds();
    printf("%d %d %d\n", before, max, after);
    return 0;
}
