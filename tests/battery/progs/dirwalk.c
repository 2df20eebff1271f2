/* Path walks through directory descriptors (issue 17, item 10).
 *   dirwalk ROOT
 * Walks from "/" to the absolute directory ROOT one component at a time with
 * openat(fd, name, O_PATH|O_NOFOLLOW|O_DIRECTORY) and fstatat(fd, name) (as rsync's receiver
 * does), then works inside it only through descriptors: mkdirat, openat (O_PATH and real opens),
 * fstatat, renameat, symlinkat/readlinkat, fchmodat, utimensat, faccessat, fdopendir, unlinkat,
 * and openat2 (the exported symbol when there is one, else syscall(SYS_openat2)).
 * Prints "OK" when everything behaved as on a local file system; else says what did not and
 * exits 1. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static int line;
#define CHECK(x)                                                                          \
    do {                                                                                  \
        line = __LINE__;                                                                  \
        if (!(x)) {                                                                       \
            fprintf(stderr, "line %d: %s failed: %s\n", __LINE__, #x, strerror(errno));   \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

/* openat2 through syscall(SYS_openat2) (via_symbol 0: how programs call it on glibc 2.36), or
 * through the exported openat2 symbol when there is one (1). */
static int via_symbol;
static int do_openat2(int dirfd, const char *path, uint64_t flags, uint64_t mode, uint64_t resolve) {
    struct open_how how = {.flags = flags, .mode = mode, .resolve = resolve};
    int (*fn)(int, const char *, struct open_how *, size_t) =
        (int (*)(int, const char *, struct open_how *, size_t))dlsym(RTLD_DEFAULT, "openat2");
    if (via_symbol && fn) return fn(dirfd, path, &how, sizeof how);
    return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof how);
}

static void read_is(int fd, const char *want) {
    char buf[64] = {0};
    ssize_t n = read(fd, buf, sizeof buf - 1);
    CHECK(n == (ssize_t)strlen(want) && memcmp(buf, want, n) == 0);
}

int main(int argc, char **argv) {
    if (argc != 2 || argv[1][0] != '/') {
        fprintf(stderr, "usage: dirwalk /ABSOLUTE/DIR\n");
        return 2;
    }
    struct stat st;
    char path[4096];
    snprintf(path, sizeof path, "%s", argv[1]);

    /* The walk: "/" then one component at a time, the last one being ROOT (a mount point). */
    int fd = open("/", O_PATH | O_DIRECTORY);
    CHECK(fd >= 0);
    int parent = -1;
    for (char *save, *c = strtok_r(path, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
        CHECK(fstatat(fd, c, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode));
        int next = openat(fd, c, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
        CHECK(next >= 0);
        if (parent >= 0) close(parent);
        parent = fd;
        fd = next;
    }
    CHECK(fstat(fd, &st) == 0 && S_ISDIR(st.st_mode));
    CHECK(fstatat(fd, "", &st, AT_EMPTY_PATH) == 0 && S_ISDIR(st.st_mode));

    /* Namespace calls relative to the walked descriptors. */
    CHECK(mkdirat(fd, "w", 0755) == 0);
    int wfd = openat(fd, "w", O_PATH | O_NOFOLLOW | O_DIRECTORY);
    CHECK(wfd >= 0);
    CHECK(mkdirat(wfd, "sub", 0750) == 0);
    int sfd = openat(wfd, "sub", O_PATH | O_DIRECTORY);
    CHECK(sfd >= 0);
    CHECK(fstatat(wfd, "sub", &st, 0) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0750);
    int f = openat(sfd, "f.txt", O_WRONLY | O_CREAT | O_TRUNC, 0640);
    CHECK(f >= 0);
    CHECK(write(f, "hello", 5) == 5);
    CHECK(close(f) == 0);
    CHECK(fstatat(sfd, "f.txt", &st, 0) == 0 && st.st_size == 5 && (st.st_mode & 0777) == 0640);
    CHECK(renameat(sfd, "f.txt", wfd, "g.txt") == 0);
    CHECK(fstatat(sfd, "f.txt", &st, 0) == -1 && errno == ENOENT);
    CHECK(fstatat(wfd, "g.txt", &st, 0) == 0 && st.st_size == 5);
    f = openat(wfd, "g.txt", O_RDONLY);
    CHECK(f >= 0);
    read_is(f, "hello");
    CHECK(close(f) == 0);
    /* ".." inside the walked tree, from the descriptor of a subdirectory. */
    f = openat(sfd, "../g.txt", O_RDONLY);
    CHECK(f >= 0);
    read_is(f, "hello");
    CHECK(close(f) == 0);
    CHECK(symlinkat("g.txt", wfd, "l") == 0);
    char buf[64] = {0};
    CHECK(readlinkat(wfd, "l", buf, sizeof buf) == 5 && memcmp(buf, "g.txt", 5) == 0);
    CHECK(fstatat(wfd, "l", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode));
    CHECK(fstatat(wfd, "l", &st, 0) == 0 && S_ISREG(st.st_mode) && st.st_size == 5);
    CHECK(fchmodat(wfd, "g.txt", 0604, 0) == 0);
    CHECK(fstatat(wfd, "g.txt", &st, 0) == 0 && (st.st_mode & 0777) == 0604);
    struct timespec ts[2] = {{1000000000, 0}, {1234567890, 0}};
    CHECK(utimensat(wfd, "g.txt", ts, 0) == 0);
    CHECK(fstatat(wfd, "g.txt", &st, 0) == 0 && st.st_mtim.tv_sec == 1234567890);
    CHECK(faccessat(wfd, "g.txt", R_OK, 0) == 0);
    CHECK(faccessat(wfd, "nothing", F_OK, 0) == -1 && errno == ENOENT);

    /* An O_PATH descriptor of a file: stat works, data calls do not. */
    int pfd = openat(wfd, "g.txt", O_PATH);
    CHECK(pfd >= 0);
    CHECK(fstatat(pfd, "", &st, AT_EMPTY_PATH) == 0 && st.st_size == 5);
    CHECK(read(pfd, buf, 1) == -1 && errno == EBADF);
    CHECK(close(pfd) == 0);

    /* Listing through a descriptor opened relative to the walked one. */
    int dfd = openat(wfd, ".", O_RDONLY | O_DIRECTORY);
    CHECK(dfd >= 0);
    DIR *d = fdopendir(dfd);
    CHECK(d != NULL);
    int seen = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, "g.txt")) seen |= 1;
        else if (!strcmp(e->d_name, "l")) seen |= 2;
        else if (!strcmp(e->d_name, "sub")) seen |= 4;
        else if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) seen |= 8;
    }
    CHECK(closedir(d) == 0);
    CHECK(seen == 7);

    /* The mount point seen from its parent's descriptor, and openat2 (both ways of calling it). */
    CHECK(parent >= 0);
    const char *last = strrchr(argv[1], '/') + 1;
    for (via_symbol = 0; via_symbol < 2; via_symbol++) {
        int m = do_openat2(parent, last, O_RDONLY | O_DIRECTORY, 0, 0);
        CHECK(m >= 0);
        CHECK(fstatat(m, "w/g.txt", &st, 0) == 0 && st.st_size == 5);
        CHECK(close(m) == 0);
        f = do_openat2(wfd, "o2.txt", O_WRONLY | O_CREAT | O_EXCL, 0600, RESOLVE_BENEATH);
        CHECK(f >= 0);
        CHECK(write(f, "abc", 3) == 3);
        CHECK(close(f) == 0);
        CHECK(fstatat(wfd, "o2.txt", &st, 0) == 0 && st.st_size == 3 && (st.st_mode & 0777) == 0600);
        f = do_openat2(sfd, "../o2.txt", O_RDONLY, 0, RESOLVE_BENEATH);
        CHECK(f == -1 && errno == EXDEV);
        f = do_openat2(wfd, "l", O_RDONLY, 0, RESOLVE_NO_SYMLINKS);
        CHECK(f == -1 && errno == ELOOP);
        f = do_openat2(wfd, "o2.txt", O_RDONLY, 0644, 0);
        CHECK(f == -1 && errno == EINVAL);
        f = do_openat2(sfd, "/../o2.txt", O_RDONLY, 0, RESOLVE_IN_ROOT);
        CHECK(f == -1 && errno == ENOENT);
        f = do_openat2(wfd, "/sub/../o2.txt", O_RDONLY, 0, RESOLVE_IN_ROOT);
        CHECK(f >= 0);
        read_is(f, "abc");
        CHECK(close(f) == 0);
        CHECK(unlinkat(wfd, "o2.txt", 0) == 0);
    }

    /* Removal through the descriptors. */
    CHECK(unlinkat(wfd, "l", 0) == 0);
    CHECK(unlinkat(wfd, "g.txt", 0) == 0);
    CHECK(unlinkat(wfd, "sub", 0) == -1);
    CHECK(unlinkat(wfd, "sub", AT_REMOVEDIR) == 0);
    CHECK(unlinkat(fd, "w", AT_REMOVEDIR) == 0);
    CHECK(fstatat(fd, "w", &st, 0) == -1 && errno == ENOENT);
    printf("OK\n");
    return 0;
}
