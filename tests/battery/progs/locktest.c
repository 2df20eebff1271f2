/* fcntl byte-range locks across processes on one file.
 * usage: locktest PATH   prints OK on success */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static int lk(int fd, int cmd, short type, off_t start, off_t len, struct flock *out) {
    struct flock fl = {.l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = len};
    int r = fcntl(fd, cmd, &fl);
    if (out) *out = fl;
    return r;
}

int main(int argc, char **argv) {
    (void)argc;
    int fd = open(argv[1], O_RDWR | O_CREAT, 0644);
    if (fd < 0 || write(fd, "0123456789", 10) != 10) { perror("open/write"); return 2; }
    if (lk(fd, F_SETLK, F_WRLCK, 0, 100, NULL) != 0) { perror("parent lock"); return 3; }
    int to_child[2], to_parent[2];
    if (pipe(to_child) || pipe(to_parent)) return 4;
    pid_t pid = fork();
    if (pid == 0) {
        int cfd = open(argv[1], O_RDWR);
        struct flock fl;
        if (lk(cfd, F_SETLK, F_WRLCK, 50, 10, NULL) == 0 || (errno != EAGAIN && errno != EACCES)) { fprintf(stderr, "child got a held lock\n"); _exit(10); }
        if (lk(cfd, F_GETLK, F_WRLCK, 50, 10, &fl) != 0 || fl.l_type != F_WRLCK || fl.l_pid != getppid()) { fprintf(stderr, "F_GETLK did not report the parent\n"); _exit(11); }
        if (lk(cfd, F_SETLK, F_WRLCK, 200, 10, NULL) != 0) { perror("child free range"); _exit(12); }
        if (write(to_parent[1], "x", 1) != 1) _exit(13);
        char c;
        if (read(to_child[0], &c, 1) != 1) _exit(14);
        /* The parent released [0,100): a blocking lock now succeeds. */
        if (lk(cfd, F_SETLKW, F_WRLCK, 0, 100, NULL) != 0) { perror("child SETLKW"); _exit(15); }
        close(cfd);
        _exit(0);
    }
    char c;
    if (read(to_parent[0], &c, 1) != 1) return 5;
    /* The child holds [200,210). */
    if (lk(fd, F_SETLK, F_WRLCK, 205, 1, NULL) == 0) { fprintf(stderr, "parent got the child's lock\n"); return 6; }
    if (lk(fd, F_SETLK, F_UNLCK, 0, 100, NULL) != 0) { perror("unlock"); return 7; }
    if (write(to_child[1], "x", 1) != 1) return 8;
    int st;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) { fprintf(stderr, "child status %d\n", WEXITSTATUS(st)); return 9; }
    printf("OK\n");
    return 0;
}
