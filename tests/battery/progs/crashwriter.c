/* Writes 4 KiB records forever at offset i*4096 (record i's bytes are (i*31 + j) % 251), fsyncs
 * after every 8 records and only then prints "ACK n" (records 0..n-1 are durable). Killed by the
 * crash test at a random moment. Usage: crashwriter FILE */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: crashwriter FILE\n");
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
