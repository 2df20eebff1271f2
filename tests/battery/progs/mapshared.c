/* Shared mappings of a small file (issue 17, item 8).
 *   mapshared FILE
 * Maps FILE MAP_SHARED, writes through the mapping and msyncs; a second process (this program
 * again, through exec) reads those bytes with read(2), maps the file too, sees the first one's
 * bytes and writes its own, which the first one sees in its mapping without mapping again; the
 * first one then writes more, including past the end of the file, and unmaps without msync; a
 * third process reads the whole file with read(2): its size is unchanged and it holds every
 * byte written inside it. Prints "OK" (exit 0) when all of that holds, as on a local file. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define SIZE 10000
#define MAPLEN 12288

#define CHECK(x)                                                                          \
    do {                                                                                  \
        if (!(x)) {                                                                       \
            fprintf(stderr, "%s line %d: %s failed: %s\n", role, __LINE__, #x,            \
                    strerror(errno));                                                     \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

static const char *role = "parent";

static void run(const char *self, const char *what, const char *path) {
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        execl(self, self, what, path, (char *)NULL);
        _exit(127);
    }
    int status;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void pread_is(int fd, off_t off, const char *want) {
    char buf[64] = {0};
    size_t n = strlen(want);
    CHECK(pread(fd, buf, n, off) == (ssize_t)n);
    CHECK(memcmp(buf, want, n) == 0);
}

static int child(const char *path) {
    role = "second process";
    int fd = open(path, O_RDWR);
    CHECK(fd >= 0);
    pread_is(fd, 100, "shared-hello"); /* written through the mapping, msync'ed */
    char *p = mmap(NULL, MAPLEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    CHECK(p != MAP_FAILED);
    CHECK(memcmp(p + 100, "shared-hello", 12) == 0 && p[99] == 'a' && p[0] == 'a');
    memcpy(p + 5000, "child-was-here", 14);
    /* A read-only shared mapping of the second page sees the same bytes. */
    char *q = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 4096);
    CHECK(q != MAP_FAILED);
    CHECK(memcmp(q + 5000 - 4096, "child-was-here", 14) == 0);
    CHECK(munmap(q, 4096) == 0);
    CHECK(munmap(p, MAPLEN) == 0);
    CHECK(close(fd) == 0);
    return 0;
}

static int check(const char *path) {
    role = "third process";
    int fd = open(path, O_RDONLY);
    CHECK(fd >= 0);
    struct stat st;
    CHECK(fstat(fd, &st) == 0 && st.st_size == SIZE);
    static char buf[SIZE + 100], want[SIZE];
    ssize_t n = 0, k;
    while ((k = read(fd, buf + n, sizeof buf - n)) > 0) n += k;
    CHECK(k == 0 && n == SIZE);
    memset(want, 'a', SIZE);
    memcpy(want + 100, "shared-hello", 12);
    memcpy(want + 5000, "child-was-here", 14);
    memcpy(want + 9990, "tail", 4);
    memcpy(want + 7000, "no-msync", 8);
    CHECK(memcmp(buf, want, SIZE) == 0);
    CHECK(close(fd) == 0);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "child")) return child(argv[2]);
    if (argc == 3 && !strcmp(argv[1], "check")) return check(argv[2]);
    if (argc != 2) {
        fprintf(stderr, "usage: mapshared FILE\n");
        return 2;
    }
    const char *path = argv[1];
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0);
    static char a[SIZE];
    memset(a, 'a', SIZE);
    CHECK(write(fd, a, SIZE) == SIZE);
    char *p = mmap(NULL, MAPLEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    CHECK(p != MAP_FAILED);
    CHECK(p[0] == 'a' && p[SIZE - 1] == 'a' && p[SIZE] == 0 && p[MAPLEN - 1] == 0);
    memcpy(p + 100, "shared-hello", 12);
    CHECK(msync(p, MAPLEN, MS_SYNC) == 0);
    run(argv[0], "child", path);
    /* The second process's write is in this mapping: one copy of the bytes, shared. */
    CHECK(memcmp(p + 5000, "child-was-here", 14) == 0);
    memcpy(p + 9990, "tail", 4);
    memcpy(p + SIZE + 5, "past-the-end", 12); /* in the last page, past EOF: not written */
    memcpy(p + 7000, "no-msync", 8);
    CHECK(munmap(p, MAPLEN) == 0);
    CHECK(close(fd) == 0);
    run(argv[0], "check", path);
    printf("OK\n");
    return 0;
}
