/* Reads and fstats racing dup2s and forks on the same descriptor numbers (ldplfs looks
 * descriptors up without a lock: fd/direct.rs). Two files of 4096 'A's and 'B's; five threads
 * pread and fstat descriptors 40-43 while two threads dup2 fresh opens of either file onto
 * them (40-41 one thread, 42-43 the other) and fork a child that reads and closes them. Every read must return one file's bytes
 * whole, every fstat one file's size; anything else, or a crash, fails. The four numbers are
 * ours before the threads start: a number's first dup2 (the kernel's part done, the library's
 * not yet) and a close racing an fstat of its descriptor are left out: for the instant between
 * the library forgetting the number and the kernel closing it, the fstat answers with the
 * placeholder's own stat (a program whose threads do this has a race of its own); so are two
 * threads dup2ing onto the same number at once, whose registrations can land in the other
 * order than the kernel's.
 * Usage: fdrace DIR SECONDS */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define FIRST 40
static char path[2][512];
static volatile int stop;
static long bad, ok;

static void *reader(void *arg) {
    char b[4096];
    long k = (long)arg;
    while (!stop) {
        int fd = FIRST + (int)(k++ % 4);
        ssize_t n = pread(fd, b, sizeof b, 0);
        struct stat st;
        if (n == (ssize_t)sizeof b && (b[0] == 'A' || b[0] == 'B')) {
            int whole = 1;
            for (size_t i = 1; i < sizeof b; i++)
                whole &= b[i] == b[0];
            __sync_fetch_and_add(whole ? &ok : &bad, 1);
        } else {
            fprintf(stderr, "pread of %d: %zd (errno %d)\n", fd, n, errno);
            __sync_fetch_and_add(&bad, 1);
        }
        if (fstat(fd, &st) != 0 || st.st_size != (off_t)sizeof b) {
            fprintf(stderr, "fstat of %d: size %lld\n", fd, (long long)st.st_size);
            __sync_fetch_and_add(&bad, 1);
        }
    }
    return NULL;
}

static void *churn(void *arg) {
    for (long i = 0; !stop; i++) {
        int fd = open(path[i & 1], O_RDONLY);
        int to = FIRST + 2 * (int)(long)arg + (int)(i % 2);
        if (fd < 0 || dup2(fd, to) < 0) {
            perror("open/dup2");
            exit(3);
        }
        close(fd);
        if ((long)arg == 0 && i % 500 == 0) {
            pid_t c = fork();
            if (c == 0) {
                char b[4096];
                for (int k = 0; k < 4; k++) {
                    ssize_t n = pread(FIRST + k, b, sizeof b, 0);
                    if (n != (ssize_t)sizeof b && !(n < 0 && errno == EBADF))
                        _exit(4);
                    close(FIRST + k);
                }
                _exit(0);
            }
            int s;
            if (waitpid(c, &s, 0) != c || !WIFEXITED(s) || WEXITSTATUS(s)) {
                fprintf(stderr, "child: status %d\n", s);
                __sync_fetch_and_add(&bad, 1);
            }
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 3)
        return 2;
    char b[4096];
    for (int f = 0; f < 2; f++) {
        snprintf(path[f], sizeof path[f], "%s/%c", argv[1], f ? 'b' : 'a');
        int fd = open(path[f], O_WRONLY | O_CREAT | O_TRUNC, 0644);
        memset(b, f ? 'B' : 'A', sizeof b);
        if (fd < 0 || write(fd, b, sizeof b) != (ssize_t)sizeof b || close(fd)) {
            perror(path[f]);
            return 3;
        }
    }
    for (int k = 0; k < 4; k++) {
        int fd = open(path[0], O_RDONLY);
        if (fd < 0 || dup2(fd, FIRST + k) < 0 || close(fd)) {
            perror("first dup2");
            return 3;
        }
    }
    pthread_t t[7];
    for (long i = 0; i < 7; i++)
        pthread_create(&t[i], NULL, i < 5 ? reader : churn, (void *)(i < 5 ? i : i - 5));
    sleep((unsigned)atoi(argv[2]));
    stop = 1;
    for (int i = 0; i < 7; i++)
        pthread_join(t[i], NULL);
    printf("ok=%ld bad=%ld\n", ok, bad);
    return bad != 0;
}
