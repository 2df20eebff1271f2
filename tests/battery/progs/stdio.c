/* stdio on a PLFS file: fopen/fprintf/fileno()+write()/fseek/fread, fdopen, freopen of stdout,
 * and opendir listing. usage: stdio DIR   (DIR exists; prints OK on success) */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    (void)argc;
    char a[4096], b[4096];
    snprintf(a, sizeof a, "%s/stdio_a.txt", argv[1]);
    snprintf(b, sizeof b, "%s/stdio_b.txt", argv[1]);
    FILE *f = fopen(a, "w+");
    if (!f) { perror("fopen"); return 2; }
    fprintf(f, "line %d\n", 1);
    fflush(f);
    int fd = fileno(f);
    if (fd < 0 || write(fd, "raw\n", 4) != 4) { perror("fileno+write"); return 3; }
    fseek(f, 0, SEEK_END);
    fputs("tail\n", f);
    fseek(f, 0, SEEK_SET);
    char buf[64] = {0};
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    if (n != 16 || strcmp(buf, "line 1\nraw\ntail\n") != 0) { fprintf(stderr, "read back %zu: %s\n", n, buf); return 4; }
    if (fclose(f) != 0) { perror("fclose"); return 5; }
    int d = open(b, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    FILE *g = fdopen(d, "w");
    if (!g) { perror("fdopen"); return 6; }
    fprintf(g, "via fdopen\n");
    fclose(g);
    fflush(stdout);
    if (!freopen(b, "a", stdout)) { perror("freopen"); return 7; }
    printf("via freopen\n");
    fflush(stdout);
    f = fopen(b, "r");
    if (!f || !fgets(buf, sizeof buf, f) || strcmp(buf, "via fdopen\n") != 0) { fprintf(stderr, "fdopen line\n"); return 8; }
    if (!fgets(buf, sizeof buf, f) || strcmp(buf, "via freopen\n") != 0) { fprintf(stderr, "freopen line: %s\n", buf); return 9; }
    fclose(f);
    DIR *dir = opendir(argv[1]);
    int seen = 0;
    struct dirent *e;
    while (dir && (e = readdir(dir)))
        if (strncmp(e->d_name, "stdio_", 6) == 0 && e->d_type == DT_REG) seen++;
    if (!dir || seen != 2) { fprintf(stderr, "readdir saw %d\n", seen); return 10; }
    closedir(dir);
    fprintf(stderr, "OK\n");
    return 0;
}
