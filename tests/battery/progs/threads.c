/* Many threads write and read one file at once: through one shared descriptor (pwrite) and
 * through descriptors of their own. usage: threads PATH  prints OK on success */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define THREADS 8
#define ROUNDS 32
#define BLOCK 4096
static const char *path;
static int shared_fd;

static void *work(void *arg) {
    long t = (long)arg;
    char buf[BLOCK];
    int own = open(path, O_RDWR);
    if (own < 0) return (void *)1;
    for (int r = 0; r < ROUNDS; r++) {
        off_t off = ((off_t)r * THREADS + t) * BLOCK;
        memset(buf, 'a' + (t + r) % 26, BLOCK);
        int fd = (r % 2) ? own : shared_fd;
        if (pwrite(fd, buf, BLOCK, off) != BLOCK) return (void *)2;
        char back[BLOCK];
        if (pread(fd, back, BLOCK, off) != BLOCK || memcmp(back, buf, BLOCK) != 0) return (void *)3;
    }
    close(own);
    return NULL;
}

int main(int argc, char **argv) {
    (void)argc;
    path = argv[1];
    shared_fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (shared_fd < 0) { perror("open"); return 2; }
    pthread_t th[THREADS];
    for (long t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, work, (void *)t);
    for (int t = 0; t < THREADS; t++) {
        void *r;
        pthread_join(th[t], &r);
        if (r) { fprintf(stderr, "thread %d failed: %ld\n", t, (long)r); return 3; }
    }
    char buf[BLOCK];
    for (int r = 0; r < ROUNDS; r++)
        for (int t = 0; t < THREADS; t++) {
            if (pread(shared_fd, buf, BLOCK, ((off_t)r * THREADS + t) * BLOCK) != BLOCK) return 4;
            for (int i = 0; i < BLOCK; i++)
                if (buf[i] != 'a' + (t + r) % 26) { fprintf(stderr, "bad byte\n"); return 5; }
        }
    close(shared_fd);
    printf("OK\n");
    return 0;
}
