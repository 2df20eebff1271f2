/* metabench: metadata and index timings of plfs through its C API, beside a plain file.
 *
 *   metabench stat  PATH WRITERS RECORDS REPS   stat of a file while WRITERS processes hold it
 *                                               open for writing, then after they closed it
 *   metabench create DIR COUNT                  files created (open O_CREAT + close) per second
 *   metabench index PATH WRITERS RECORDS REPS [irregular]
 *                                               time for a fresh reader to merge the index of
 *                                               WRITERS*RECORDS writes (constant stride, or
 *                                               irregular: no pattern to compress), then the
 *                                               same after plfs_flatten_index
 *
 * A path under a plfs mount point goes through the PLFS API; any other path through POSIX calls
 * (the plain-file baseline). Each timing of a stat or an index merge runs in a fresh process
 * (fork + exec of this program), after one warm-up call on another path, so no per-process
 * cache of an earlier measurement helps it. Output: one "META_RESULT key=value ..." line per measurement. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <plfs.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what, const char *path, const char *why)
{
    fprintf(stderr, "metabench: %s %s: %s\n", what, path, why);
    exit(1);
}

static void check(plfs_error_t e, const char *what, const char *path)
{
    if (e != PLFS_SUCCESS)
        die(what, path, plfs_last_error());
}

static int use_plfs(const char *path)
{
    return is_plfs_path(path) == 1;
}

/* stat through whichever interface the path needs; returns the size. */
static long long any_stat(const char *path)
{
    struct stat st;
    if (use_plfs(path))
        check(plfs_getattr(NULL, path, &st, 0), "plfs_getattr", path);
    else if (stat(path, &st) != 0)
        die("stat", path, strerror(errno));
    return (long long)st.st_size;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* This program's own executable, for timing children. */
static char self_exe[4096];

/* Runs "metabench _time KIND PATH WARM" in a fresh process (fork + exec: nothing of this
 * process's plfs state is inherited) and returns the seconds it measured there. */
static double timed_in_child(const char *kind, const char *path, const char *warm)
{
    int p[2];
    if (pipe(p) != 0)
        die("pipe", "", strerror(errno));
    pid_t pid = fork();
    if (pid < 0)
        die("fork", "", strerror(errno));
    if (pid == 0) {
        close(p[0]);
        if (dup2(p[1], 1) < 0)
            _exit(126);
        execl(self_exe, self_exe, "_time", kind, path, warm, (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    char buf[128] = {0};
    size_t got = 0;
    ssize_t n;
    while (got < sizeof buf - 1 && (n = read(p[0], buf + got, sizeof buf - 1 - got)) > 0)
        got += (size_t)n;
    close(p[0]);
    int status;
    waitpid(pid, &status, 0);
    char *end = NULL;
    double t = strtod(buf, &end);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || end == buf)
        die("timing child for", path, "failed");
    return t;
}

static double median_in_children(const char *kind, const char *path, const char *warm, int reps)
{
    double *t = calloc((size_t)reps, sizeof *t);
    for (int i = 0; i < reps; i++)
        t[i] = timed_in_child(kind, path, warm);
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    double m = reps % 2 ? t[reps / 2] : (t[reps / 2 - 1] + t[reps / 2]) / 2;
    free(t);
    return m;
}

static double time_stat(const char *path)
{
    double t0 = now();
    any_stat(path);
    return now() - t0;
}

/* One writer process: opens path, writes records of 4 KiB (strided with the other writers),
 * syncs, reports ready on `ready`, waits for a byte on `go`, closes. */
static void writer(const char *path, int w, int writers, int records, int ready, int go)
{
    char buf[4096];
    memset(buf, 'a' + w % 26, sizeof buf);
    if (use_plfs(path)) {
        Plfs_fd *fd = NULL;
        check(plfs_open(&fd, path, O_WRONLY | O_CREAT, getpid(), 0644, NULL), "plfs_open", path);
        for (int i = 0; i < records; i++) {
            ssize_t n;
            off_t off = ((off_t)i * writers + w) * (off_t)sizeof buf;
            check(plfs_write(fd, buf, sizeof buf, off, getpid(), &n), "plfs_write", path);
        }
        check(plfs_sync(fd), "plfs_sync", path);
        char c = 1;
        if (write(ready, &c, 1) != 1 || read(go, &c, 1) != 1)
            _exit(1);
        int refs;
        check(plfs_close(fd, getpid(), getuid(), O_WRONLY | O_CREAT, NULL, &refs), "plfs_close", path);
    } else {
        int fd = open(path, O_WRONLY | O_CREAT, 0644);
        if (fd < 0)
            die("open", path, strerror(errno));
        for (int i = 0; i < records; i++)
            if (pwrite(fd, buf, sizeof buf, ((off_t)i * writers + w) * (off_t)sizeof buf) != (ssize_t)sizeof buf)
                die("pwrite", path, strerror(errno));
        char c = 1;
        if (write(ready, &c, 1) != 1 || read(go, &c, 1) != 1)
            _exit(1);
        close(fd);
    }
    _exit(0);
}

static void remove_file(const char *path)
{
    if (use_plfs(path)) {
        plfs_error_t e = plfs_unlink(path);
        if (e != PLFS_SUCCESS && plfs_error_to_errno(e) != ENOENT)
            die("plfs_unlink", path, plfs_last_error());
    } else if (unlink(path) != 0 && errno != ENOENT) {
        die("unlink", path, strerror(errno));
    }
}

static int cmd_stat(const char *path, int writers, int records, int reps)
{
    if (writers < 1 || writers > 1024 || records < 1 || reps < 1)
        die("stat", path, "WRITERS must be 1..1024, RECORDS and REPS at least 1");
    char dirbuf[4096];
    snprintf(dirbuf, sizeof dirbuf, "%s", path);
    const char *warm = dirname(dirbuf);
    int ready[2], go[2];
    if (pipe(ready) || pipe(go))
        die("pipe", "", strerror(errno));
    /* The parent makes no plfs call before forking the writers. */
    for (int w = 0; w < writers; w++) {
        pid_t pid = fork();
        if (pid < 0)
            die("fork", "", strerror(errno));
        if (pid == 0) {
            close(ready[0]);
            close(go[1]);
            writer(path, w, writers, records, ready[1], go[0]);
        }
    }
    close(ready[1]);
    close(go[0]);
    for (int w = 0; w < writers; w++) {
        char c;
        if (read(ready[0], &c, 1) != 1)
            die("writers", path, "a writer died before it was ready");
    }
    long long want = (long long)writers * records * 4096;
    double open_t = median_in_children("stat", path, warm, reps);
    long long open_size = any_stat(path);
    char c[1024] = {0};
    if (write(go[1], c, (size_t)writers) != writers)
        die("writers", path, "could not tell them to close");
    while (wait(NULL) > 0)
        ;
    double closed_t = median_in_children("stat", path, warm, reps);
    long long closed_size = any_stat(path);
    const char *iface = use_plfs(path) ? "plfs" : "plain";
    printf("META_RESULT test=stat iface=%s state=open writers=%d records=%d seconds=%.9f size=%lld want_size=%lld\n",
           iface, writers, records, open_t, open_size, want);
    printf("META_RESULT test=stat iface=%s state=closed writers=%d records=%d seconds=%.9f size=%lld want_size=%lld\n",
           iface, writers, records, closed_t, closed_size, want);
    remove_file(path);
    return open_size != want || closed_size != want;
}

static int cmd_create(const char *dir, int count)
{
    char path[4096];
    int plfs = use_plfs(dir);
    double t0 = now();
    for (int i = 0; i < count; i++) {
        snprintf(path, sizeof path, "%s/f%07d", dir, i);
        if (plfs) {
            Plfs_fd *fd = NULL;
            int refs;
            check(plfs_open(&fd, path, O_WRONLY | O_CREAT, getpid(), 0644, NULL), "plfs_open", path);
            check(plfs_close(fd, getpid(), getuid(), O_WRONLY | O_CREAT, NULL, &refs), "plfs_close", path);
        } else {
            int fd = open(path, O_WRONLY | O_CREAT, 0644);
            if (fd < 0 || close(fd) != 0)
                die("create", path, strerror(errno));
        }
    }
    double t = now() - t0;
    printf("META_RESULT test=create iface=%s count=%d seconds=%.6f per_s=%.1f\n", plfs ? "plfs" : "plain",
           count, t, count / t);
    return 0;
}

/* A fresh reader's first read of one byte: for plfs this merges every index log (or loads the
 * flattened index). */
static double time_first_read(const char *path)
{
    double t0 = now();
    char b;
    Plfs_fd *fd = NULL;
    ssize_t n = 0;
    check(plfs_open(&fd, path, O_RDONLY, getpid(), 0, NULL), "plfs_open", path);
    check(plfs_read(fd, &b, 1, 0, &n), "plfs_read", path);
    int refs;
    check(plfs_close(fd, getpid(), getuid(), O_RDONLY, NULL, &refs), "plfs_close", path);
    return now() - t0;
}

static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* irregular: offsets and lengths vary, so that no run of a writer's records forms an arithmetic
 * pattern and every record stays a record of its own in the index. */
static int cmd_index(const char *path, int writers, int records, int reps, int irregular)
{
    if (!use_plfs(path))
        die("index", path, "is not under a plfs mount point");
    char dirbuf[4096];
    snprintf(dirbuf, sizeof dirbuf, "%s", path);
    const char *warm = dirname(dirbuf);
    /* One process writes as WRITERS writer ids (each its own data and index log). Record i of
     * writer w lives in the 64-byte slot i*WRITERS + w, so no two records of a writer are
     * contiguous: regular ones are 16 bytes at the slot start (a constant stride, which the
     * index may store as one pattern), irregular ones 8..23 bytes at a varying place in it. */
    char buf[32];
    memset(buf, 'x', sizeof buf);
    Plfs_fd *fd = NULL;
    check(plfs_open(&fd, path, O_WRONLY | O_CREAT, 0, 0644, NULL), "plfs_open", path);
    for (int i = 0; i < records; i++)
        for (int w = 0; w < writers; w++) {
            ssize_t n;
            off_t off = ((off_t)i * writers + w) * 64;
            size_t len = 16;
            if (irregular) {
                uint64_t h = mix((uint64_t)i * 1000003u + (uint64_t)w);
                len = 8 + h % 16;
                off += (off_t)((h >> 8) % 40);
            }
            check(plfs_write(fd, buf, len, off, w, &n), "plfs_write", path);
        }
    int refs;
    check(plfs_close(fd, 0, getuid(), O_WRONLY | O_CREAT, NULL, &refs), "plfs_close", path);
    long long total = (long long)writers * records;
    double t = median_in_children("read", path, warm, reps);
    const char *kind = irregular ? "irregular" : "strided";
    printf("META_RESULT test=index iface=plfs state=%s flattened=0 writers=%d records=%lld seconds=%.6f per_s=%.1f\n",
           kind, writers, total, t, total / t);
    fd = NULL;
    check(plfs_open(&fd, path, O_RDONLY, 0, 0, NULL), "plfs_open", path);
    check(plfs_flatten_index(fd, path), "plfs_flatten_index", path);
    check(plfs_close(fd, 0, getuid(), O_RDONLY, NULL, &refs), "plfs_close", path);
    t = median_in_children("read", path, warm, reps);
    printf("META_RESULT test=index iface=plfs state=%s flattened=1 writers=%d records=%lld seconds=%.6f per_s=%.1f\n",
           kind, writers, total, t, total / t);
    remove_file(path);
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    ssize_t len = readlink("/proc/self/exe", self_exe, sizeof self_exe - 1);
    if (len <= 0)
        die("readlink", "/proc/self/exe", strerror(errno));
    self_exe[len] = 0;
    if (argc == 5 && !strcmp(argv[1], "_time")) { /* a timing child (see timed_in_child) */
        any_stat(argv[4]);
        double t = !strcmp(argv[2], "stat") ? time_stat(argv[3]) : time_first_read(argv[3]);
        printf("%.9f\n", t);
        return 0;
    }
    if (argc == 6 && !strcmp(argv[1], "stat"))
        return cmd_stat(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]));
    if (argc == 4 && !strcmp(argv[1], "create"))
        return cmd_create(argv[2], atoi(argv[3]));
    if ((argc == 6 || argc == 7) && !strcmp(argv[1], "index"))
        return cmd_index(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]),
                         argc == 7 && !strcmp(argv[6], "irregular"));
    fprintf(stderr, "usage: metabench stat PATH WRITERS RECORDS REPS | create DIR COUNT |\n"
                    "                 index PATH WRITERS RECORDS REPS [irregular]\n");
    return 2;
}
