/* Writes 4 KiB records forever at offset i*4096 (record i's bytes are (i*31 + j) % 251), fsyncs
 * after every 8 records and only then prints "ACK n" (records 0..n-1 are durable). Killed by the
 * crash test at a random moment. Usage: crashwriter FILE
 *
 * crashwriter FILE RECORD WRITERS RANK: one of WRITERS N-1 strided writers of RECORD-byte records
 * that never syncs: its i-th record is record k = i*WRITERS + RANK of the file, at offset k*RECORD
 * (bytes (k*31 + j) % 251), and "ACK i+1" is printed after each write that returned. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int strided(const char *path, long rec, long writers, long rank) {
    int fd = open(path, O_WRONLY | O_CREAT, 0644);
    if (fd < 0) {
        perror("open");
        return 1;
    }
    printf("OPEN\n");
    fflush(stdout);
    char *buf = malloc(rec);
    if (!buf) return 1;
    for (long i = 0;; i++) {
        long k = i * writers + rank;
        for (long j = 0; j < rec; j++) buf[j] = (char)((k * 31 + j) % 251);
        if (pwrite(fd, buf, rec, k * rec) != (ssize_t)rec) {
            perror("pwrite");
            return 1;
        }
        printf("ACK %ld\n", i + 1);
        fflush(stdout);
    }
}

int main(int argc, char **argv) {
    if (argc == 5) return strided(argv[1], atol(argv[2]), atol(argv[3]), atol(argv[4]));
    if (argc != 2) {
        fprintf(stderr, "usage: crashwriter FILE [RECORD WRITERS RANK]\n");
        return 2;
    }
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        perror("open");
        return 1;
    }
    printf("OPEN\n");
    fflush(stdout);
    char buf[4096];
    for (long i = 0;; i++) {
        for (int j = 0; j < 4096; j++) buf[j] = (char)((i * 31 + j) % 251);
        if (pwrite(fd, buf, sizeof buf, i * 4096L) != (ssize_t)sizeof buf) {
            perror("pwrite");
            return 1;
        }
        if (i % 8 == 7) {
            if (fsync(fd) != 0) {
                perror("fsync");
                return 1;
            }
            printf("ACK %ld\n", i + 1);
            fflush(stdout);
        }
    }
}
