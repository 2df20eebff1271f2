/* The variadic execs, which glibc turns into its internal execve (no interposer sees that):
 * `execl PROG ARG` runs execl(PROG, "prog", ARG, NULL); `execlp NAME ARG` runs execlp. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: execl l|p PROG ARG\n");
        return 2;
    }
    if (strcmp(argv[1], "p") == 0)
        execlp(argv[2], "prog", argv[3], (char *)NULL);
    else
        execl(argv[2], "prog", argv[3], (char *)NULL);
    perror("exec");
    return 1;
}
