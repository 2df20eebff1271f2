/* Raw system calls bypass LD_PRELOAD: on a PLFS placeholder they must fail loudly.
 * usage: rawcall < PLFS_FILE > PLFS_FILE2 ; prints "read EBADF write EPERM" on stderr */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(void) {
    char b[16];
    long r = syscall(SYS_read, 0, b, sizeof b);
    int re = errno;
    long w = syscall(SYS_write, 1, "x", 1);
    int we = errno;
    fprintf(stderr, "read %s write %s\n", r < 0 && re == EBADF ? "EBADF" : "WRONG", w < 0 && we == EPERM ? "EPERM" : "WRONG");
    return 0;
}
