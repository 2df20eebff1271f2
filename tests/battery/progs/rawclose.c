/* Closes every descriptor from 3 up behind ldplfs's back, twice, then uses PLFS again
 * (issue 50, item 10: every later PLFS open failed with EBADF).
 * usage: rawclose DIR libc|asm [FILES]
 * Writes DIR/before, keeps DIR/held open, then: a close_range(3, ~0U, 0) system call, new files
 * DIR/a.I written and read back, a close system call of every number from 3 to 4095, new files
 * DIR/b.I written and read back, DIR/before read again. `libc` makes the two system calls through
 * syscall(3) (which ldplfs sees); `asm` with the instruction itself (which nothing can see, like
 * a static binary or Go). File I of a round has 1000 * I + 17 bytes, byte J being
 * (I * 131 + J * 7) & 255. Prints one line per round; exits 3 when a new file fails. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int use_asm;

static long raw3(long n, long a, long b, long c) {
    if (!use_asm) return syscall(n, a, b, c);
#if defined(__x86_64__)
    long r;
    __asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return r;
#elif defined(__aarch64__)
    register long x8 __asm__("x8") = n;
    register long x0 __asm__("x0") = a;
    register long x1 __asm__("x1") = b;
    register long x2 __asm__("x2") = c;
    __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2) : "memory");
    return x0;
#else
    return syscall(n, a, b, c);
#endif
}

static void fill(unsigned char *b, size_t n, int i) {
    for (size_t j = 0; j < n; j++) b[j] = (unsigned char)((i * 131 + j * 7) & 255);
}

/* Writes and reads back FILES new files DIR/PREFIX.I; returns how many failed. */
static int round_of(const char *dir, const char *prefix, int files) {
    static unsigned char want[64 * 1024], got[64 * 1024];
    char path[4096];
    int failed = 0;
    for (int i = 1; i <= files; i++) {
        size_t n = 1000 * (size_t)i + 17;
        fill(want, n, i);
        snprintf(path, sizeof path, "%s/%s.%d", dir, prefix, i);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0) { fprintf(stderr, "open %s: %s\n", path, strerror(errno)); failed++; continue; }
        if (write(fd, want, n) != (ssize_t)n) { fprintf(stderr, "write %s: %s\n", path, strerror(errno)); failed++; }
        if (close(fd) != 0) { fprintf(stderr, "close %s: %s\n", path, strerror(errno)); failed++; }
        fd = open(path, O_RDONLY);
        if (fd < 0) { fprintf(stderr, "reopen %s: %s\n", path, strerror(errno)); failed++; continue; }
        ssize_t r = read(fd, got, sizeof got);
        if (r != (ssize_t)n || memcmp(want, got, n) != 0) { fprintf(stderr, "read %s: %zd bytes, wrong\n", path, r); failed++; }
        close(fd);
    }
    return failed;
}

static int check_before(const char *dir) {
    char path[4096], got[64];
    snprintf(path, sizeof path, "%s/before", dir);
    int fd = open(path, O_RDONLY);
    if (fd < 0) return 1;
    ssize_t r = read(fd, got, sizeof got);
    close(fd);
    return !(r == 7 && memcmp(got, "before\n", 7) == 0);
}

int main(int argc, char **argv) {
    if (argc < 3) return 1;
    const char *dir = argv[1];
    use_asm = strcmp(argv[2], "asm") == 0;
    int files = argc > 3 ? atoi(argv[3]) : 20;
    char path[4096];
    snprintf(path, sizeof path, "%s/before", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, "before\n", 7) != 7 || close(fd) != 0) { perror("before"); return 2; }
    snprintf(path, sizeof path, "%s/held", dir);
    int held = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (held < 0 || write(held, "held\n", 5) != 5) { perror("held"); return 2; }

    long r = raw3(SYS_close_range, 3, ~0U, 0);
    int a = round_of(dir, "a", files);
    printf("close_range %ld: %d of %d new files failed, before %s\n", r, a, files, check_before(dir) ? "WRONG" : "ok");
    for (int i = 3; i < 4096; i++) raw3(SYS_close, i, 0, 0);
    int b = round_of(dir, "b", files);
    printf("close loop: %d of %d new files failed, before %s\n", b, files, check_before(dir) ? "WRONG" : "ok");
    /* The file open at the raw close: whatever it answers, no crash. */
    errno = 0;
    int w = (int)write(held, "more\n", 5);
    int e = errno;
    int c = close(held);
    printf("held: write %d (%s), close %d\n", w, strerror(e), c);
    fflush(stdout);
    return a || b || check_before(dir) ? 3 : 0;
}
