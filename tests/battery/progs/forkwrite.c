/* Parent and forked child both write one file through a shared descriptor (the offset is shared
 * by the kernel) and with pwrite; the parent then reads everything back and checks it.
 * usage: forkwrite PATH [exit|_exit]   (how the child leaves)   prints OK on success */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void put(int fd, char c, size_t n, off_t at) {
    char buf[4096];
    memset(buf, c, sizeof buf);
    ssize_t r = at < 0 ? write(fd, buf, n) : pwrite(fd, buf, n, at);
    if (r != (ssize_t)n) { perror("write"); exit(3); }
}

int main(int argc, char **argv) {
    int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) { perror("open"); return 2; }
    put(fd, 'P', 100, -1);
    pid_t pid = fork();
    if (pid == 0) {
        put(fd, 'C', 100, -1);          /* at 100: the shared offset */
        put(fd, 'c', 4096, 1000);
        if (argc > 2 && strcmp(argv[2], "_exit") == 0) _exit(0);
        exit(0);
    }
    int st;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) { fprintf(stderr, "child failed\n"); return 4; }
    put(fd, 'Q', 100, -1);              /* at 200: the child moved the shared offset */
    put(fd, 'R', 50, 5096);
    char expect[5146], got[5146 + 10];
    memset(expect, 0, sizeof expect);
    memset(expect, 'P', 100);
    memset(expect + 100, 'C', 100);
    memset(expect + 200, 'Q', 100);
    memset(expect + 1000, 'c', 4096);
    memset(expect + 5096, 'R', 50);
    if (lseek(fd, 0, SEEK_SET) != 0) { perror("lseek"); return 5; }
    ssize_t n = 0, r;
    while ((r = read(fd, got + n, sizeof got - n)) > 0) n += r;
    if (n != (ssize_t)sizeof expect || memcmp(got, expect, sizeof expect) != 0) {
        fprintf(stderr, "mismatch: read %zd bytes\n", n);
        return 6;
    }
    if (close(fd) != 0) { perror("close"); return 7; }
    printf("OK\n");
    return 0;
}
