/* opendir DIR, read every name, unlink DIR/victim, rewinddir, read again: prints "first N" and
 * "again M" and whether "victim" is still listed after the rewind (plfs-regression readdir_ops).
 * Usage: rewinddir DIR */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int count(DIR *d, int *victim) {
    int n = 0;
    struct dirent *e;
    *victim = 0;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        if (strcmp(e->d_name, "victim") == 0) *victim = 1;
        n++;
    }
    return n;
}

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    DIR *d = opendir(argv[1]);
    if (!d) {
        perror("opendir");
        return 1;
    }
    int victim;
    int n = count(d, &victim);
    printf("first %d victim %d\n", n, victim);
    char path[4096];
    snprintf(path, sizeof path, "%s/victim", argv[1]);
    if (unlink(path) != 0) {
        perror("unlink");
        return 1;
    }
    rewinddir(d);
    n = count(d, &victim);
    printf("again %d victim %d\n", n, victim);
    closedir(d);
    return 0;
}
