/* File positions and descriptor bookkeeping that the preload keeps without system calls.
 *   positions DIR REAL_DIR
 * DIR is where the files under test go (a PLFS directory, or a plain one for the reference);
 * REAL_DIR is always a plain directory. Prints OK on success, else what went wrong (exit 1).
 *
 * 1. lseek/read/write/dup share one position; errors leave it unchanged.
 * 2. The position survives execl, execle and execlp (variadic calls): each image writes one
 *    byte at the inherited position of descriptor 3 and execs the next; the last checks.
 * 3. A descriptor closed or replaced behind the library's back (syscall(SYS_close),
 *    syscall(SYS_dup3)) is never taken for the PLFS file any more: bytes written through the
 *    number land in the real file that now has it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

extern char **environ;

static void fail(const char *what) {
    printf("FAIL %s (errno %d)\n", what, errno);
    exit(1);
}

static void expect_pos(int fd, off_t want, const char *what) {
    off_t p = lseek(fd, 0, SEEK_CUR);
    if (p != want) {
        printf("FAIL %s: position %lld, want %lld\n", what, (long long)p, (long long)want);
        exit(1);
    }
}

static void put(int fd, const char *s) {
    if (write(fd, s, strlen(s)) != (ssize_t)strlen(s)) fail("write");
}

static void contents(const char *path, const char *want) {
    char buf[256];
    int fd = open(path, O_RDONLY);
    if (fd < 0) fail("open for check");
    ssize_t n = read(fd, buf, sizeof buf - 1);
    if (n < 0) fail("read for check");
    buf[n] = 0;
    close(fd);
    if (strcmp(buf, want) != 0) {
        printf("FAIL %s holds \"%s\", want \"%s\"\n", path, buf, want);
        exit(1);
    }
}

static void positions(const char *dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/pos.bin", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) fail("open pos.bin");
    expect_pos(fd, 0, "new file");
    put(fd, "0123456789");
    expect_pos(fd, 10, "after write");
    int d = dup(fd);
    put(d, "abc");
    expect_pos(fd, 13, "dup shares the position");
    if (lseek(fd, 4, SEEK_SET) != 4) fail("SEEK_SET");
    char b[4] = {0};
    if (read(d, b, 3) != 3 || memcmp(b, "456", 3) != 0) fail("read at the position");
    expect_pos(fd, 7, "after read");
    if (lseek(fd, -2, SEEK_CUR) != 5) fail("SEEK_CUR back");
    if (lseek(fd, -100, SEEK_CUR) != -1 || errno != EINVAL) fail("negative SEEK_CUR is EINVAL");
    if (lseek(fd, -1, SEEK_SET) != -1 || errno != EINVAL) fail("negative SEEK_SET is EINVAL");
    expect_pos(fd, 5, "after failed lseeks");
    if (lseek(fd, 0, SEEK_END) != 13) fail("SEEK_END");
    if (read(fd, b, 3) != 0) fail("read at the end");
    expect_pos(fd, 13, "after reading nothing");
    if (lseek(fd, 20, SEEK_SET) != 20) fail("SEEK_SET past the end");
    put(fd, "z");
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size != 21) fail("size after a write past the end");
    if (pwrite(fd, "P", 1, 0) != 1) fail("pwrite");
    expect_pos(d, 21, "pwrite leaves the position");
    close(d);
    close(fd);
    int a = open(path, O_WRONLY | O_APPEND);
    if (a < 0) fail("open O_APPEND");
    put(a, "Z");
    expect_pos(a, 22, "append moves the position to the end");
    close(a);
}

/* Stage k of the exec chain: write its digit at the inherited position of descriptor 3. */
static int stage(const char *self, const char *path, int k) {
    char digit[2] = {(char)('0' + k), 0};
    expect_pos(3, k - 1, "inherited through exec");
    put(3, digit);
    char next[2] = {(char)('0' + k + 1), 0};
    switch (k) {
    case 1:
        execl(self, self, "stage", path, next, (char *)NULL);
        fail("execl");
    case 2:
        execle(self, self, "stage", path, next, (char *)NULL, environ);
        fail("execle");
    case 3:
        execlp(self, self, "stage", path, next, (char *)NULL);
        fail("execlp");
    default:
        expect_pos(3, 4, "end of the chain");
        close(3);
        contents(path, "1234");
        printf("OK\n");
        return 0;
    }
}

static void behind_our_back(const char *dir, const char *real) {
    char p1[4096], p2[4096], r1[4096], r2[4096];
    snprintf(p1, sizeof p1, "%s/raw1.bin", dir);
    snprintf(p2, sizeof p2, "%s/raw2.bin", dir);
    snprintf(r1, sizeof r1, "%s/real1.txt", real);
    snprintf(r2, sizeof r2, "%s/real2.txt", real);
    int p = open(p1, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (p < 0) fail("open raw1");
    put(p, "plfs");
    if (syscall(SYS_close, p) != 0) fail("raw close");
    int r = open(r1, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (r != p) {
        printf("FAIL the kernel gave %d, not the closed %d\n", r, p);
        exit(1);
    }
    put(r, "real");
    close(r);
    contents(r1, "real");
    contents(p1, "plfs");

    int q = open(p2, O_RDWR | O_CREAT | O_TRUNC, 0644);
    int s = open(r2, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (q < 0 || s < 0) fail("open raw2/real2");
    put(q, "plfs");
    if (syscall(SYS_dup3, s, q, 0) != q) fail("raw dup3");
    put(q, "real");
    close(q);
    close(s);
    contents(r2, "real");
    contents(p2, "plfs");
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "stage") == 0) return stage(argv[0], argv[2], atoi(argv[3]));
    if (argc != 3) {
        fprintf(stderr, "usage: positions DIR REAL_DIR\n");
        return 2;
    }
    positions(argv[1]);
    behind_our_back(argv[1], argv[2]);
    char path[4096];
    snprintf(path, sizeof path, "%s/chain.bin", argv[1]);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) fail("open chain.bin");
    if (dup2(fd, 3) != 3) fail("dup2 onto 3");
    if (fd != 3) close(fd);
    return stage(argv[0], path, 1);
}
