/*
 * test_capi.c -- exercises every call of the PLFS C API (include/plfs.h) against a real backend.
 *
 * It writes its own plfsrc (a mount point and two backends in a fresh temporary directory),
 * points PLFSRC at it before the first call, and compares every byte read with an in-memory
 * model of the file. Prints "N passed, M failed" and exits nonzero if anything failed; the
 * temporary directory is removed only when everything passed.
 *
 *   cc -std=c11 -Wall -Wextra -Iinclude tests/c/test_capi.c -Ltarget/debug -lplfs -lpthread
 */
#define _XOPEN_SOURCE 700
#include <plfs.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int passed, failed;

/* Declares `char name[]` holding the logical path of `rel`. */
#define KEEP(name, rel) char name[2048]; snprintf(name, sizeof name, "%s", P(rel))
static char base[1024], mnt[1100], nnmnt[1100], legacymnt[1100];

#define CHECK(cond, ...)                                                                  \
    do {                                                                                  \
        if (cond) {                                                                       \
            passed++;                                                                     \
        } else {                                                                          \
            failed++;                                                                     \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);               \
            fprintf(stderr, __VA_ARGS__);                                                 \
            fprintf(stderr, " [plfs_last_error: %s]\n", plfs_last_error());               \
        }                                                                                 \
    } while (0)

/* A call must return `want`. */
#define EXPECT(call, want)                                                                \
    do {                                                                                  \
        plfs_error_t got_ = (call);                                                       \
        CHECK(got_ == (want), "%s returned %d (%s), expected %d (%s)", #call, (int)got_,  \
              strplfserr(got_), (int)(want), strplfserr(want));                           \
    } while (0)
#define OK(call) EXPECT(call, PLFS_SUCCESS)

/* A logical path under the test mount point, in one of 16 rotating static buffers: keep a path
 * that must outlive 16 more calls in a buffer of its own (see KEEP). */
static const char *P(const char *rel)
{
    static char bufs[16][2048];
    static int next;
    char *b = bufs[next++ % 16];
    snprintf(b, sizeof bufs[0], "%s/%s", mnt, rel);
    return b;
}

/* ---- the model: what the file must contain ---------------------------------------------- */

#define MODEL_MAX (1 << 20)
static unsigned char model[MODEL_MAX];
static size_t model_len;

static void model_write(const unsigned char *buf, size_t n, size_t off)
{
    memcpy(model + off, buf, n);
    if (off + n > model_len) model_len = off + n;
}

static void model_trunc(size_t len)
{
    if (len > model_len) memset(model + model_len, 0, len - model_len);
    model_len = len;
}

static void fill(unsigned char *buf, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) buf[i] = (unsigned char)((seed * 131u + i * 7u + (i >> 8)) % 251u);
}

/* Writes a seeded pattern through fd as `pid` and into the model. */
static void put(Plfs_fd *fd, size_t off, size_t n, unsigned seed, pid_t pid)
{
    static unsigned char buf[MODEL_MAX];
    fill(buf, n, seed);
    ssize_t w = -1;
    OK(plfs_write(fd, (const char *)buf, n, (off_t)off, pid, &w));
    CHECK(w == (ssize_t)n, "wrote %zd of %zu bytes at %zu", w, n, off);
    model_write(buf, n, off);
}

/* Reads the whole file through fd in odd-sized chunks and compares it with the model. */
static void check_fd(Plfs_fd *fd, const char *what)
{
    static unsigned char got[MODEL_MAX + 8192];
    size_t off = 0;
    for (;;) {
        ssize_t n = -1;
        plfs_error_t e = plfs_read(fd, (char *)got + off, 7919, (off_t)off, &n);
        if (e != PLFS_SUCCESS || n < 0) {
            CHECK(0, "%s: read at %zu: %s", what, off, strplfserr(e));
            return;
        }
        if (n == 0) break;
        off += (size_t)n;
        if (off > MODEL_MAX) break;
    }
    CHECK(off == model_len, "%s: read %zu bytes, model has %zu", what, off, model_len);
    size_t i = 0;
    while (i < off && i < model_len && got[i] == model[i]) i++;
    CHECK(i == model_len || i == off, "%s: first difference at byte %zu (got %u, want %u)", what, i,
          got[i], model[i]);
    struct stat st;
    OK(plfs_getattr(fd, NULL, &st, 1));
    CHECK((size_t)st.st_size == model_len, "%s: getattr(fd) size %lld, model %zu", what,
          (long long)st.st_size, model_len);
}

/* Opens path read-only, compares it with the model, and checks getattr by path. */
static void check_path(const char *path, const char *what)
{
    Plfs_fd *fd = NULL;
    int refs = -1;
    OK(plfs_open(&fd, path, O_RDONLY, getpid(), 0, NULL));
    if (!fd) return;
    check_fd(fd, what);
    OK(plfs_close(fd, getpid(), getuid(), O_RDONLY, NULL, &refs));
    CHECK(refs == 0, "%s: %d references left", what, refs);
    struct stat st;
    OK(plfs_getattr(NULL, path, &st, 0));
    CHECK((size_t)st.st_size == model_len, "%s: getattr(path) size %lld, model %zu", what,
          (long long)st.st_size, model_len);
    CHECK(S_ISREG(st.st_mode), "%s: mode %o is not a regular file", what, (unsigned)st.st_mode);
}

/* ---- setup -------------------------------------------------------------------------------- */

static void setup(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(base, sizeof base, "%s/plfs-capi-test-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(base)) { perror("mkdtemp"); exit(2); }
    snprintf(mnt, sizeof mnt, "%s/mnt", base);
    char b1[1200], b2[1200], rc[1200];
    snprintf(b1, sizeof b1, "%s/backend1", base);
    snprintf(b2, sizeof b2, "%s/backend2", base);
    snprintf(rc, sizeof rc, "%s/plfsrc", base);
    char b3[1200];
    snprintf(b3, sizeof b3, "%s/backend3", base);
    snprintf(nnmnt, sizeof nnmnt, "%s/nn", base);
    snprintf(legacymnt, sizeof legacymnt, "%s/legacy", base);
    if (mkdir(b1, 0700) || mkdir(b2, 0700) || mkdir(b3, 0700)) { perror("mkdir backend"); exit(2); }
    FILE *f = fopen(rc, "w");
    if (!f) { perror("fopen plfsrc"); exit(2); }
    fprintf(f, "# written by test_capi.c\n- mount_point: %s\n  backends:\n    - location: %s\n"
               "    - location: %s\n", mnt, b1, b2);
    fprintf(f, "- mount_point: %s\n  workload: n-n\n  backends:\n    - location: %s\n", nnmnt, b3);
    /* Containers written by PLFS 2.5.1 (the harness extracts tests/fixtures/...tar.gz). */
    const char *store = getenv("PLFS_TEST_LEGACY_STORE");
    if (store && *store)
        fprintf(f, "- mount_point: %s\n  backends:\n    - location: %s\n", legacymnt, store);
    fclose(f);
    setenv("PLFSRC", rc, 1);
    umask(022);
}

static int rm_entry(const char *p, const struct stat *s, int flag, struct FTW *ftw)
{
    (void)s; (void)flag; (void)ftw;
    return remove(p);
}

/* ---- tests ---------------------------------------------------------------------------------- */

static void test_errors(void)
{
    CHECK(PLFS_SUCCESS == 0 && PLFS_ENOENT == 2 && PLFS_EBADF == 8 && PLFS_EINVAL == 19 &&
          PLFS_ENOSYS == 33 && PLFS_ENOTSUP == 40 && PLFS_TBD == 300, "enum values differ from PLFS 2.5");
    CHECK(strcmp(strplfserr(PLFS_ENOENT), "No such file or directory") == 0, "%s", strplfserr(PLFS_ENOENT));
    CHECK(strcmp(strplfserr(PLFS_SUCCESS), "Success") == 0, "%s", strplfserr(PLFS_SUCCESS));
    CHECK(strcmp(strplfserr((plfs_error_t)999), "Unknown error") == 0, "%s", strplfserr((plfs_error_t)999));
    static const int errnos[] = {EPERM, ENOENT, ESRCH, EINTR, EIO, ENXIO, E2BIG, EBADF, EAGAIN,
        ENOMEM, EACCES, EFAULT, EBUSY, EEXIST, EXDEV, ENODEV, ENOTDIR, EISDIR, EINVAL, ENFILE,
        EMFILE, ENOTTY, ETXTBSY, EFBIG, ENOSPC, ESPIPE, EROFS, EMLINK, EPIPE, ERANGE, EDEADLK,
        ENAMETOOLONG, ENOSYS, ENOTEMPTY, ELOOP, ENODATA, EOVERFLOW, EBADFD, EPROTOTYPE, ENOTSUP,
        EDQUOT, ESTALE, ETIMEDOUT, ENOLCK, ENOTCONN};
    int bad = 0;
    for (size_t i = 0; i < sizeof errnos / sizeof errnos[0]; i++) {
        plfs_error_t e = errno_to_plfs_error(errnos[i]);
        if (e == PLFS_TBD || plfs_error_to_errno(e) != errnos[i] ||
            strcmp(strplfserr(e), strerror(errnos[i])) != 0) {
            fprintf(stderr, "errno %d -> %d -> %d (%s / %s)\n", errnos[i], e, plfs_error_to_errno(e),
                    strplfserr(e), strerror(errnos[i]));
            bad++;
        }
    }
    CHECK(bad == 0, "%d errnos do not round-trip", bad);
    CHECK(errno_to_plfs_error(ENOENT) == PLFS_ENOENT && errno_to_plfs_error(EINVAL) == PLFS_EINVAL,
          "errno_to_plfs_error");
    CHECK(errno_to_plfs_error(0) == PLFS_SUCCESS && plfs_error_to_errno(PLFS_SUCCESS) == 0, "success");
    CHECK(errno_to_plfs_error(-EEXIST) == PLFS_EEXIST, "negative errno");
    CHECK(errno_to_plfs_error(EHOSTDOWN) == PLFS_TBD, "unnamed errno");
    CHECK(plfs_error_to_errno(PLFS_TBD) == EIO && plfs_error_to_errno(PLFS_EEOF) == EIO, "no-errno codes");
    CHECK(plfs_version() && *plfs_version(), "plfs_version");
}

static void test_paths_and_null_checks(void)
{
    CHECK(is_plfs_path(P("anything")) == 1, "%s", P("anything"));
    CHECK(is_plfs_path(mnt) == 1, "mount point itself");
    CHECK(is_plfs_path("/etc/passwd") == 0, "/etc/passwd");
    CHECK(is_plfs_path(NULL) == 0, "NULL");
    char prefixed[4200];
    snprintf(prefixed, sizeof prefixed, "plfs:%s/x", mnt);
    CHECK(is_plfs_path(prefixed) == 1, "plfs: prefix");
    CHECK(plfs_get_filetype(P("x")) == CONTAINER, "filetype");
    CHECK(plfs_get_filetype("/etc") == PFT_UNKNOWN, "filetype outside");

    Plfs_fd *fd = NULL;
    EXPECT(plfs_open(NULL, P("f"), O_RDONLY, 1, 0, NULL), PLFS_EFAULT);
    EXPECT(plfs_open(&fd, NULL, O_RDONLY, 1, 0, NULL), PLFS_EFAULT);
    EXPECT(plfs_open(&fd, "/etc/hostname", O_RDONLY, 1, 0, NULL), PLFS_EINVAL);
    EXPECT(plfs_open(&fd, P("missing"), O_RDONLY, 1, 0, NULL), PLFS_ENOENT);
    CHECK(strstr(plfs_last_error(), "missing") != NULL, "last error %s names the path", plfs_last_error());
    CHECK(fd == NULL, "failed open set fd");
    EXPECT(plfs_open(&fd, P("f"), O_WRONLY | O_RDWR, 1, 0, NULL), PLFS_EINVAL);

    char buf[16];
    ssize_t n;
    Plfs_fd *bogus = (Plfs_fd *)(uintptr_t)0x1234;
    EXPECT(plfs_read(bogus, buf, sizeof buf, 0, &n), PLFS_EBADF);
    EXPECT(plfs_write(NULL, buf, sizeof buf, 0, 1, &n), PLFS_EBADF);
    EXPECT(plfs_sync(bogus), PLFS_EBADF);
    EXPECT(plfs_close(bogus, 1, 0, O_RDONLY, NULL, NULL), PLFS_EBADF);
    EXPECT(plfs_query(bogus, NULL, NULL, NULL, NULL), PLFS_EBADF);
    struct stat st;
    EXPECT(plfs_getattr(NULL, P("missing"), &st, 0), PLFS_ENOENT);
    EXPECT(plfs_getattr(NULL, P("missing"), NULL, 0), PLFS_EFAULT);
    EXPECT(plfs_unlink(P("missing")), PLFS_ENOENT);
    EXPECT(plfs_unlink(NULL), PLFS_EFAULT);
    EXPECT(plfs_access(P("missing"), F_OK), PLFS_ENOENT);
    EXPECT(plfs_trunc(NULL, P("missing"), 0, 0), PLFS_ENOENT);
    EXPECT(plfs_mkdir("/etc/plfs-not-here", 0755), PLFS_EINVAL);
    EXPECT(plfs_link(P("a"), P("b")), PLFS_ENOSYS);
    OK(plfs_access(base, F_OK)); /* an ancestor of the mount point */
}

/* N-1 through one Plfs_fd: two writer pids sharing a handle, overlapping writes, a hole. */
static void test_n1_one_fd(void)
{
    KEEP(path, "n1");
    const size_t blk = 4096;
    Plfs_fd *fd = NULL, *again;
    int refs = -1;
    model_len = 0;
    OK(plfs_open(&fd, path, O_CREAT | O_RDWR, 100, 0640, NULL));
    if (!fd) return;
    again = fd;
    OK(plfs_open(&again, NULL, O_RDWR, 101, 0, NULL)); /* a second reference */
    CHECK(again == fd, "adding a reference changed the handle");
    size_t writers = 0, readers = 0, bytes = 99;
    int lazy = -1;
    OK(plfs_query(fd, &writers, &readers, &bytes, &lazy));
    CHECK(writers == 2 && readers == 2 && bytes == 0 && lazy == 0, "query: %zu writers %zu readers %zu bytes %d",
          writers, readers, bytes, lazy);

    for (unsigned i = 0; i < 16; i++) put(fd, i * blk, blk, i, 100 + (i % 2)); /* strided N-1 */
    put(fd, 3000, 6000, 77, 101);                                             /* overlaps blocks 0-2 */
    put(fd, 5000, 100, 78, 100);                                              /* inside the last one */
    put(fd, 16 * blk + 5000, 10, 79, 100);                                    /* beyond a hole */
    put(fd, 0, 1, 80, 101);
    check_fd(fd, "n1 open");
    OK(plfs_query(fd, NULL, NULL, &bytes, NULL));
    CHECK(bytes == 16 * blk + 6000 + 100 + 10 + 1, "query bytes_written %zu", bytes);

    char tail[64];
    ssize_t n = -1;
    OK(plfs_read(fd, tail, sizeof tail, (off_t)model_len - 4, &n));
    CHECK(n == 4, "read across EOF gave %zd bytes", n);
    OK(plfs_read(fd, tail, sizeof tail, (off_t)model_len + 100, &n));
    CHECK(n == 0, "read beyond EOF gave %zd bytes", n);
    OK(plfs_read(fd, tail, 0, 0, &n));
    CHECK(n == 0, "zero-length read gave %zd", n);
    EXPECT(plfs_read(fd, tail, sizeof tail, -1, &n), PLFS_EINVAL);
    EXPECT(plfs_read(fd, tail, sizeof tail, 0, NULL), PLFS_EFAULT);
    EXPECT(plfs_write(fd, tail, sizeof tail, -5, 100, &n), PLFS_EINVAL);

    OK(plfs_close(fd, 101, getuid(), O_RDWR, NULL, &refs));
    CHECK(refs == 1, "after the first close %d references", refs);
    check_fd(fd, "n1 after one close"); /* still open */
    OK(plfs_sync(fd));
    OK(plfs_close(fd, 100, getuid(), O_RDWR, NULL, &refs));
    CHECK(refs == 0, "after the last close %d references", refs);
    EXPECT(plfs_read(fd, tail, sizeof tail, 0, &n), PLFS_EBADF); /* the handle is gone */
    check_path(path, "n1 reopened");

    /* A read-only handle refuses writes; a reference adding write access makes them work. */
    fd = NULL;
    OK(plfs_open(&fd, path, O_RDONLY, 102, 0, NULL));
    EXPECT(plfs_write(fd, tail, 4, 0, 102, &n), PLFS_EBADF);
    again = fd;
    OK(plfs_open(&again, path, O_WRONLY, 103, 0, NULL));
    put(fd, 10, 20, 81, 103);
    check_fd(fd, "n1 after upgrade");
    OK(plfs_close(fd, 103, getuid(), O_WRONLY, NULL, &refs));
    OK(plfs_close(fd, 102, getuid(), O_RDONLY, NULL, &refs));
    CHECK(refs == 0, "%d references", refs);
    check_path(path, "n1 after upgrade, reopened");
}

struct thread_arg {
    Plfs_fd *fd;
    int rank, nthreads;
    size_t blk, blocks;
    plfs_error_t err;
};

/* Each thread adds its own reference, writes its strided blocks as pid 200+rank, and closes. */
static void *writer_thread(void *p)
{
    struct thread_arg *a = p;
    Plfs_fd *fd = a->fd;
    unsigned char *buf = malloc(a->blk);
    a->err = plfs_open(&fd, NULL, O_WRONLY, 200 + a->rank, 0, NULL);
    for (size_t b = (size_t)a->rank; a->err == PLFS_SUCCESS && b < a->blocks; b += (size_t)a->nthreads) {
        ssize_t n;
        fill(buf, a->blk, 1000 + (unsigned)b);
        a->err = plfs_write(fd, (const char *)buf, a->blk, (off_t)(b * a->blk), 200 + a->rank, &n);
    }
    if (a->err == PLFS_SUCCESS) a->err = plfs_close(fd, 200 + a->rank, getuid(), O_WRONLY, NULL, NULL);
    free(buf);
    return NULL;
}

static void test_threads(void)
{
    KEEP(path, "threads");
    enum { T = 4 };
    Plfs_fd *fd = NULL;
    int refs = -1;
    OK(plfs_open(&fd, path, O_CREAT | O_WRONLY | O_TRUNC, 199, 0644, NULL));
    if (!fd) return;
    struct thread_arg args[T];
    pthread_t th[T];
    for (int t = 0; t < T; t++) {
        args[t] = (struct thread_arg){fd, t, T, 3000, 40, PLFS_SUCCESS};
        pthread_create(&th[t], NULL, writer_thread, &args[t]);
    }
    for (int t = 0; t < T; t++) {
        pthread_join(th[t], NULL);
        EXPECT(args[t].err, PLFS_SUCCESS);
    }
    OK(plfs_close(fd, 199, getuid(), O_WRONLY, NULL, &refs));
    CHECK(refs == 0, "%d references left", refs);
    model_len = 0;
    static unsigned char buf[3000];
    for (unsigned b = 0; b < 40; b++) {
        fill(buf, sizeof buf, 1000 + b);
        model_write(buf, sizeof buf, b * sizeof buf);
    }
    check_path(path, "threads");
}

static void test_trunc(void)
{
    KEEP(path, "trunc");
    Plfs_fd *fd = NULL;
    int refs;
    model_len = 0;
    OK(plfs_open(&fd, path, O_CREAT | O_RDWR, 300, 0644, NULL));
    if (!fd) return;
    put(fd, 0, 30000, 5, 300);
    OK(plfs_trunc(fd, NULL, 5000, 1)); /* shrink an open file */
    model_trunc(5000);
    check_fd(fd, "trunc shrink (open)");
    OK(plfs_trunc(fd, NULL, 20000, 1)); /* grow: zeros */
    model_trunc(20000);
    check_fd(fd, "trunc grow (open)");
    put(fd, 19000, 2000, 6, 300);
    check_fd(fd, "write after trunc");
    EXPECT(plfs_trunc(fd, NULL, -1, 1), PLFS_EINVAL);
    OK(plfs_close(fd, 300, getuid(), O_RDWR, NULL, &refs));
    check_path(path, "trunc reopened");

    OK(plfs_trunc(NULL, path, 1234, 0)); /* by path */
    model_trunc(1234);
    check_path(path, "trunc shrink (path)");
    OK(plfs_trunc(NULL, path, 3000, 0));
    model_trunc(3000);
    check_path(path, "trunc grow (path)");

    fd = NULL; /* a read-only handle truncates the file it names */
    OK(plfs_open(&fd, path, O_RDONLY, 301, 0, NULL));
    OK(plfs_trunc(fd, NULL, 1000, 1));
    model_trunc(1000);
    OK(plfs_close(fd, 301, getuid(), O_RDONLY, NULL, &refs));
    check_path(path, "trunc through a read-only handle");

    fd = NULL; /* O_TRUNC */
    OK(plfs_open(&fd, path, O_WRONLY | O_TRUNC, 302, 0, NULL));
    OK(plfs_close(fd, 302, getuid(), O_WRONLY | O_TRUNC, NULL, &refs));
    model_trunc(0);
    check_path(path, "O_TRUNC");
}

static void test_create_rename_unlink(void)
{
    KEEP(a, "a");
    KEEP(b, "b");
    KEEP(c, "c");
    Plfs_fd *fd = NULL;
    int refs;
    OK(plfs_create(a, 0644, O_CREAT | O_EXCL, 400));
    EXPECT(plfs_create(a, 0644, O_CREAT | O_EXCL, 400), PLFS_EEXIST);
    OK(plfs_create(a, 0644, O_CREAT, 400));
    EXPECT(plfs_open(&fd, a, O_CREAT | O_EXCL | O_WRONLY, 400, 0644, NULL), PLFS_EEXIST);
    CHECK(fd == NULL, "failed O_EXCL open set fd");

    model_len = 0;
    OK(plfs_open(&fd, a, O_WRONLY, 400, 0, NULL));
    put(fd, 0, 5555, 9, 400);
    OK(plfs_close(fd, 400, getuid(), O_WRONLY, NULL, &refs));
    OK(plfs_rename(a, b));
    struct stat st;
    EXPECT(plfs_getattr(NULL, a, &st, 0), PLFS_ENOENT);
    check_path(b, "renamed");

    /* Rename over an existing file replaces it. */
    fd = NULL;
    OK(plfs_open(&fd, c, O_CREAT | O_WRONLY, 401, 0644, NULL));
    ssize_t n;
    OK(plfs_write(fd, "old contents", 12, 0, 401, &n));
    OK(plfs_close(fd, 401, getuid(), O_WRONLY, NULL, &refs));
    OK(plfs_rename(b, c));
    check_path(c, "renamed over an existing file");
    EXPECT(plfs_rename(c, "/tmp/outside-plfs"), PLFS_EINVAL);
    EXPECT(plfs_rename(P("missing"), P("missing2")), PLFS_ENOENT);

    OK(plfs_unlink(c));
    EXPECT(plfs_getattr(NULL, c, &st, 0), PLFS_ENOENT);
    EXPECT(plfs_unlink(c), PLFS_ENOENT);
}

/* Reads a whole listing into names (joined with '/'). */
static void list_dir(const char *path, char *out, size_t outsz)
{
    Plfs_dirp *d = NULL;
    out[0] = 0;
    OK(plfs_opendir_c(path, &d));
    if (!d) return;
    char name[256];
    for (int i = 0; i < 100; i++) {
        plfs_error_t e = plfs_readdir_c(d, name, sizeof name);
        if (e != PLFS_SUCCESS) { CHECK(0, "readdir_c: %s", strplfserr(e)); break; }
        if (name[0] == 0) break;
        strncat(out, name, outsz - strlen(out) - 2);
        strcat(out, "/");
    }
    OK(plfs_closedir_c(d));
    EXPECT(plfs_closedir_c(d), PLFS_EBADF);
}

static void test_dirs_and_links(void)
{
    KEEP(d, "dir");
    char listing[1024];
    struct stat st;
    int refs;
    OK(plfs_mkdir(d, 0755));
    EXPECT(plfs_mkdir(d, 0755), PLFS_EEXIST);
    OK(plfs_getattr(NULL, d, &st, 0));
    CHECK(S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0755, "dir mode %o", (unsigned)st.st_mode);
    OK(plfs_create(P("dir/f1"), 0644, O_CREAT, 1));
    OK(plfs_create(P("dir/f2"), 0644, O_CREAT, 1));
    OK(plfs_mkdir(P("dir/sub"), 0700));
    OK(plfs_symlink("../some/target", P("dir/lnk")));
    EXPECT(plfs_symlink("x", P("dir/lnk")), PLFS_EEXIST);
    list_dir(d, listing, sizeof listing);
    CHECK(strcmp(listing, "./../f1/f2/lnk/sub/") == 0, "listing %s", listing);

    Plfs_dirp *dp = NULL; /* a name that does not fit: ENOMEM, then the same name again */
    char small[2], big[64];
    OK(plfs_opendir_c(d, &dp));
    OK(plfs_readdir_c(dp, big, sizeof big));
    OK(plfs_readdir_c(dp, big, sizeof big));
    EXPECT(plfs_readdir_c(dp, small, sizeof small), PLFS_ENOMEM);
    OK(plfs_readdir_c(dp, big, sizeof big));
    CHECK(strcmp(big, "f1") == 0, "after ENOMEM got %s", big);
    OK(plfs_closedir_c(dp));
    EXPECT(plfs_opendir_c(P("missing"), &dp), PLFS_ENOENT);
    EXPECT(plfs_opendir_c(P("dir/f1"), &dp), PLFS_ENOTDIR);

    char buf[64];
    int bytes = -1;
    OK(plfs_readlink(P("dir/lnk"), buf, sizeof buf, &bytes));
    CHECK(bytes == 14 && strcmp(buf, "../some/target") == 0, "readlink %d %s", bytes, buf);
    OK(plfs_readlink(P("dir/lnk"), buf, 4, &bytes));
    CHECK(bytes == 4 && memcmp(buf, "../s", 4) == 0, "truncated readlink %d", bytes);
    EXPECT(plfs_readlink(P("dir/f1"), buf, sizeof buf, &bytes), PLFS_EINVAL);
    OK(plfs_getattr(NULL, P("dir/lnk"), &st, 0));
    CHECK(S_ISLNK(st.st_mode), "symlink mode %o", (unsigned)st.st_mode);

    EXPECT(plfs_rmdir(d), PLFS_ENOTEMPTY);
    EXPECT(plfs_rmdir(P("dir/f1")), PLFS_ENOTDIR);
    EXPECT(plfs_unlink(P("dir/sub")), PLFS_EISDIR);
    OK(plfs_rename(P("dir/f2"), P("dir/sub/f2"))); /* into a subdirectory */
    list_dir(P("dir/sub"), listing, sizeof listing);
    CHECK(strcmp(listing, "./../f2/") == 0, "sub listing %s", listing);
    Plfs_fd *fd = NULL;
    OK(plfs_open(&fd, P("dir/sub/f2"), O_RDONLY, 1, 0, NULL));
    OK(plfs_close(fd, 1, getuid(), O_RDONLY, NULL, &refs));
    OK(plfs_unlink(P("dir/sub/f2")));
    OK(plfs_rmdir(P("dir/sub")));
    OK(plfs_unlink(P("dir/f1")));
    OK(plfs_unlink(P("dir/lnk")));
    list_dir(d, listing, sizeof listing);
    CHECK(strcmp(listing, "./../") == 0, "emptied listing %s", listing);
    OK(plfs_rmdir(d));
    EXPECT(plfs_getattr(NULL, d, &st, 0), PLFS_ENOENT);
}

static void test_metadata(void)
{
    KEEP(f, "meta");
    struct stat st;
    mode_t mode = 0;
    OK(plfs_create(f, 0640, O_CREAT, 1));
    OK(plfs_access(f, R_OK | W_OK));
    OK(plfs_access(f, F_OK));
    OK(plfs_mode(f, &mode));
    CHECK(mode == (S_IFREG | 0640), "plfs_mode %o", (unsigned)mode);
    EXPECT(plfs_mode(f, NULL), PLFS_EFAULT);

    OK(plfs_chmod(f, 0400));
    OK(plfs_getattr(NULL, f, &st, 0));
    CHECK((st.st_mode & 07777) == 0400 && S_ISREG(st.st_mode), "mode after chmod %o", (unsigned)st.st_mode);
    if (geteuid() != 0) {
        EXPECT(plfs_access(f, W_OK), PLFS_EACCES);
    } else {
        OK(plfs_access(f, W_OK)); /* root may write anything */
    }
    OK(plfs_chmod(f, 0644));

    OK(plfs_chown(f, (uid_t)-1, (gid_t)-1));
    OK(plfs_chown(f, getuid(), getgid()));
    OK(plfs_getattr(NULL, f, &st, 0));
    CHECK(st.st_uid == getuid() && st.st_gid == getgid(), "owner %u:%u", (unsigned)st.st_uid, (unsigned)st.st_gid);

    struct utimbuf ut = {1000000000, 1234567890};
    OK(plfs_utime(f, &ut));
    OK(plfs_getattr(NULL, f, &st, 0));
    CHECK(st.st_atime == 1000000000 && st.st_mtime == 1234567890, "times %lld %lld",
          (long long)st.st_atime, (long long)st.st_mtime);
    time_t now = time(NULL);
    OK(plfs_utime(f, NULL));
    OK(plfs_getattr(NULL, f, &st, 0));
    CHECK(st.st_mtime >= now - 5 && st.st_mtime <= now + 5, "mtime %lld, now %lld", (long long)st.st_mtime,
          (long long)now);

    struct statvfs v, real;
    char b1[4200];
    snprintf(b1, sizeof b1, "%s/backend1", base);
    OK(plfs_statvfs(mnt, &v));
    CHECK(statvfs(b1, &real) == 0, "statvfs(%s)", b1);
    CHECK(v.f_bsize > 0 && v.f_blocks == real.f_blocks && v.f_namemax == real.f_namemax,
          "statvfs bsize %lu blocks %llu (backend %llu)", (unsigned long)v.f_bsize,
          (unsigned long long)v.f_blocks, (unsigned long long)real.f_blocks);
    EXPECT(plfs_statvfs(mnt, NULL), PLFS_EFAULT);
    OK(plfs_unlink(f));
}

static void test_flatten(void)
{
    KEEP(path, "flat");
    Plfs_fd *fd = NULL;
    int refs;
    model_len = 0;
    OK(plfs_open(&fd, path, O_CREAT | O_WRONLY, 500, 0644, NULL));
    if (!fd) return;
    for (unsigned i = 0; i < 20; i++) put(fd, (19 - i) * 1000, 1500, i, 500 + (i % 3));
    EXPECT(plfs_flatten_index(fd, NULL), PLFS_EBUSY); /* still open for writing */
    OK(plfs_close(fd, 500, getuid(), O_WRONLY, NULL, &refs));
    OK(plfs_flatten_index(NULL, path));
    check_path(path, "flattened");
    fd = NULL;
    OK(plfs_open(&fd, path, O_RDONLY, 501, 0, NULL));
    OK(plfs_flatten_index(fd, NULL)); /* through a read-only handle */
    check_fd(fd, "flattened, read-only handle");
    OK(plfs_close(fd, 501, getuid(), O_RDONLY, NULL, &refs));
    EXPECT(plfs_flatten_index(NULL, P("missing")), PLFS_ENOENT);
}

/* ---- the rest of the PLFS 2.5 API ---------------------------------------------------------- */

static void test_xattrs(void)
{
    KEEP(path, "xa");
    Plfs_fd *fd = NULL;
    int refs;
    char buf[64];
    OK(plfs_open(&fd, path, O_CREAT | O_RDWR, 600, 0644, NULL));
    if (!fd) return;
    const char v1[] = "checkpoint-17";
    OK(plfs_setxattr(fd, v1, "user.step", sizeof v1 - 1));
    OK(plfs_setxattr(fd, "\x01\x02", "odd/key..", 2));
    memset(buf, 'z', sizeof buf);
    OK(plfs_getxattr(fd, buf, "user.step", sizeof buf));
    CHECK(memcmp(buf, v1, sizeof v1 - 1) == 0, "value read back: %.13s", buf);
    CHECK(buf[sizeof v1 - 1] == 0 && buf[63] == 0, "zero-filled past the value");
    memset(buf, 'z', sizeof buf);
    OK(plfs_getxattr(fd, buf, "user.step", 4));
    CHECK(memcmp(buf, "chec", 4) == 0 && buf[4] == 'z', "only len bytes copied");
    EXPECT(plfs_getxattr(fd, buf, "user.missing", sizeof buf), PLFS_ENOENT);
    OK(plfs_setxattr(fd, "v2", "user.step", 2)); /* replaced */
    OK(plfs_close(fd, 600, getuid(), O_RDWR, NULL, &refs));
    /* Another handle, read-only, sees both; the file's data is untouched. */
    fd = NULL;
    OK(plfs_open(&fd, path, O_RDONLY, 601, 0, NULL));
    if (!fd) return;
    memset(buf, 'z', sizeof buf);
    OK(plfs_getxattr(fd, buf, "user.step", 8));
    CHECK(memcmp(buf, "v2\0\0\0\0\0\0", 8) == 0, "replaced value");
    OK(plfs_getxattr(fd, buf, "odd/key..", 2));
    CHECK(buf[0] == 1 && buf[1] == 2, "binary value under a key with '/' and '..'");
    EXPECT(plfs_setxattr(fd, "x", "", 1), PLFS_EINVAL);
    static char big[70000];
    EXPECT(plfs_setxattr(fd, big, "k", sizeof big), PLFS_EINVAL);
    EXPECT(plfs_getxattr(fd, buf, NULL, 1), PLFS_EFAULT);
    EXPECT(plfs_getxattr(NULL, buf, "k", 1), PLFS_EBADF);
    struct stat st;
    OK(plfs_getattr(fd, NULL, &st, 0));
    CHECK(st.st_size == 0, "attributes are not data: size %lld", (long long)st.st_size);
    OK(plfs_close(fd, 601, getuid(), O_RDONLY, NULL, &refs));
    /* n-n files keep no attributes. */
    char nnpath[1200];
    snprintf(nnpath, sizeof nnpath, "%s/plain", nnmnt);
    fd = NULL;
    OK(plfs_open(&fd, nnpath, O_CREAT | O_RDWR, 602, 0644, NULL));
    if (!fd) return;
    EXPECT(plfs_setxattr(fd, "v", "user.k", 1), PLFS_ENOTSUP);
    EXPECT(plfs_getxattr(fd, buf, "user.k", 1), PLFS_ENOTSUP);
    OK(plfs_close(fd, 602, getuid(), O_RDWR, NULL, &refs));
}

static long index_bytes_sum;
static int add_index_bytes(const char *p, const struct stat *s, int flag, struct FTW *ftw)
{
    (void)flag;
    if (strncmp(p + ftw->base, "index.", 6) == 0) index_bytes_sum += (long)s->st_size;
    return 0;
}

/* Bytes in every index log of the n-1 backends. */
static long index_bytes(void)
{
    char b[1200];
    index_bytes_sum = 0;
    snprintf(b, sizeof b, "%s/backend1", base);
    nftw(b, add_index_bytes, 16, FTW_PHYS);
    snprintf(b, sizeof b, "%s/backend2", base);
    nftw(b, add_index_bytes, 16, FTW_PHYS);
    return index_bytes_sum;
}

static void test_flush_and_invalidate(void)
{
    KEEP(dir, "fl");
    KEEP(path, "fl/f");
    OK(plfs_mkdir(dir, 0755));
    Plfs_fd *w = NULL, *r = NULL;
    int refs;
    ssize_t n = -1;
    char buf[32];
    OK(plfs_open(&w, path, O_CREAT | O_WRONLY, 700, 0644, NULL));
    if (!w) return;
    OK(plfs_write(w, "abcdefgh", 8, 0, 700, &n));
    long before = index_bytes();
    OK(plfs_flush_writes(dir));
    long after = index_bytes();
    CHECK(after == before + 48, "flush_writes appended the buffered record: %ld -> %ld", before, after);
    OK(plfs_flush_writes(dir)); /* nothing more buffered */
    CHECK(index_bytes() == after, "a second flush adds nothing");
    EXPECT(plfs_flush_writes("/etc"), PLFS_EINVAL);

    /* A reader's view is fixed until its cache is invalidated. */
    OK(plfs_open(&r, path, O_RDONLY, 701, 0, NULL));
    if (!r) return;
    OK(plfs_read(r, buf, sizeof buf, 0, &n));
    CHECK(n == 8, "read %zd bytes", n);
    pid_t child = fork();
    if (child == 0) {
        /* Another process extends the file and closes it. */
        Plfs_fd *w2 = NULL;
        ssize_t m = -1;
        int rr;
        if (plfs_open(&w2, path, O_WRONLY, 702, 0, NULL) != PLFS_SUCCESS) _exit(3);
        if (plfs_write(w2, "XYZ", 3, 8, 702, &m) != PLFS_SUCCESS || m != 3) _exit(4);
        if (plfs_close(w2, 702, getuid(), O_WRONLY, NULL, &rr) != PLFS_SUCCESS) _exit(5);
        _exit(0);
    }
    int status = -1;
    waitpid(child, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "writer child: status %d", status);
    memset(buf, 0, sizeof buf);
    OK(plfs_read(r, buf, sizeof buf, 0, &n));
    CHECK(n == 8, "before invalidation the cached view holds: read %zd bytes", n);
    OK(plfs_invalidate_read_cache(dir));
    memset(buf, 0, sizeof buf);
    OK(plfs_read(r, buf, sizeof buf, 0, &n));
    CHECK(n == 11 && memcmp(buf, "abcdefghXYZ", 11) == 0, "after invalidation: %zd bytes %.11s", n, buf);
    EXPECT(plfs_invalidate_read_cache(NULL), PLFS_EFAULT);
    OK(plfs_close(r, 701, getuid(), O_RDONLY, NULL, &refs));
    OK(plfs_close(w, 700, getuid(), O_WRONLY, NULL, &refs));
}

static void test_fileinfo_expand_hostname(void)
{
    KEEP(pat, "strided");
    KEEP(br, "irregular");
    Plfs_fd *fd = NULL;
    int refs, ix = -1;
    char rec[100];
    ssize_t n;
    memset(rec, 'p', sizeof rec);
    OK(plfs_open(&fd, pat, O_CREAT | O_WRONLY, 800, 0644, NULL));
    if (!fd) return;
    for (int i = 0; i < 16; i++) OK(plfs_write(fd, rec, sizeof rec, (off_t)i * 300, 800, &n));
    OK(plfs_close(fd, 800, getuid(), O_WRONLY, NULL, &refs));
    fd = NULL;
    OK(plfs_open(&fd, br, O_CREAT | O_WRONLY, 801, 0644, NULL));
    if (!fd) return;
    for (int i = 0; i < 5; i++) OK(plfs_write(fd, rec, (size_t)(10 + i * 7), (off_t)(1000 - i * 150), 801, &n));
    OK(plfs_close(fd, 801, getuid(), O_WRONLY, NULL, &refs));
    CHECK(plfs_get_fileinfo(pat, &ix) == CONTAINER && ix == CI_PATTERN, "strided file: index type %d", ix);
    CHECK(plfs_get_fileinfo(br, &ix) == CONTAINER && ix == CI_BYTERANGE, "irregular file: index type %d", ix);
    CHECK(plfs_get_fileinfo(P("not-yet"), &ix) == CONTAINER && ix == CI_BYTERANGE, "new file: %d", ix);
    CHECK(plfs_get_fileinfo(pat, NULL) == CONTAINER, "NULL ixtypep");
    ix = -1;
    CHECK(plfs_get_fileinfo("/etc/passwd", &ix) == PFT_UNKNOWN && ix == CI_UNKNOWN, "outside: %d", ix);
    char nnpath[1200];
    snprintf(nnpath, sizeof nnpath, "%s/plain", nnmnt);
    CHECK(plfs_get_fileinfo(nnpath, &ix) == FLAT_FILE && ix == CI_UNKNOWN, "n-n: %d", ix);
    CHECK(plfs_get_filetype(nnpath) == FLAT_FILE && plfs_get_filetype(pat) == CONTAINER, "get_filetype");

    char *phys = NULL, *phys2 = NULL;
    void *m1 = NULL, *b1 = NULL, *m2 = NULL, *b2 = NULL;
    OK(plfs_expand_path(pat, &phys, &m1, &b1));
    CHECK(phys && strncmp(phys, base, strlen(base)) == 0 && strcmp(phys + strlen(phys) - 8, "/strided") == 0,
          "physical path %s", phys ? phys : "(null)");
    if (phys) {
        char marker[2048];
        struct stat st;
        snprintf(marker, sizeof marker, "%s/.plfscontainer", phys);
        CHECK(stat(marker, &st) == 0 && S_ISREG(st.st_mode), "%s is the container", phys);
    }
    char prefixed[2100];
    snprintf(prefixed, sizeof prefixed, "plfs:%s", pat);
    OK(plfs_expand_path(prefixed, &phys2, &m2, &b2));
    CHECK(phys && phys2 && strcmp(phys, phys2) == 0 && m1 == m2 && b1 == b2 && m1 != NULL && b1 != NULL,
          "plfs: prefix, same mount and backend");
    free(phys);
    free(phys2);
    phys = NULL;
    OK(plfs_expand_path(nnpath, &phys, &m2, NULL));
    CHECK(m2 != m1, "another mount point, another identifier");
    free(phys);
    EXPECT(plfs_expand_path("/etc/passwd", &phys, NULL, NULL), PLFS_EINVAL);
    EXPECT(plfs_expand_path(pat, NULL, NULL, NULL), PLFS_EFAULT);

    char *h = NULL, *h2 = NULL;
    OK(plfs_gethostname(&h));
    OK(plfs_gethostname(&h2));
    const char *env = getenv("PLFS_HOSTNAME");
    struct utsname u;
    uname(&u);
    const char *want = env && *env ? env : u.nodename;
    CHECK(h && strcmp(h, want) == 0, "hostname %s, expected %s", h ? h : "(null)", want);
    CHECK(h == h2, "a static string");
    EXPECT(plfs_gethostname(NULL), PLFS_EFAULT);
}

/* Containers written by the original PLFS 2.5.1: byte-exact, read-only. */
static void test_legacy(void)
{
    const char *exp = getenv("PLFS_TEST_LEGACY_EXPECTED");
    CHECK(exp && *exp, "PLFS_TEST_LEGACY_EXPECTED and PLFS_TEST_LEGACY_STORE are set");
    if (!exp || !*exp) return;
    const char *names[] = {"empty", "n1_flat", "n1_holes", "n1_strided"};
    static char want[2 << 20], got[2 << 20];
    for (int k = 0; k < 4; k++) {
        char path[1300], ef[1300];
        snprintf(path, sizeof path, "%s/%s", legacymnt, names[k]);
        snprintf(ef, sizeof ef, "%s/%s.expected", exp, names[k]);
        FILE *f = fopen(ef, "rb");
        CHECK(f != NULL, "open %s", ef);
        if (!f) continue;
        size_t wl = fread(want, 1, sizeof want, f);
        fclose(f);
        Plfs_fd *fd = NULL;
        int refs;
        OK(plfs_open(&fd, path, O_RDONLY, 900, 0, NULL));
        if (!fd) continue;
        size_t off = 0;
        for (;;) {
            ssize_t n = -1;
            if (plfs_read(fd, got + off, 65521, (off_t)off, &n) != PLFS_SUCCESS || n <= 0) break;
            off += (size_t)n;
        }
        CHECK(off == wl && memcmp(got, want, wl) == 0, "%s: %zu bytes read, %zu expected", names[k], off, wl);
        struct stat st;
        OK(plfs_getattr(NULL, path, &st, 0));
        CHECK((size_t)st.st_size == wl && st.st_mode == (S_IFREG | 0600), "%s: size %lld mode %o", names[k],
              (long long)st.st_size, (unsigned)st.st_mode);
        char v[4];
        EXPECT(plfs_getxattr(fd, v, "user.none", sizeof v), PLFS_ENOENT);
        EXPECT(plfs_setxattr(fd, "v", "user.k", 1), PLFS_EROFS);
        int ix = -1;
        CHECK(plfs_get_fileinfo(path, &ix) == CONTAINER && ix == CI_BYTERANGE, "%s: index type %d", names[k], ix);
        OK(plfs_close(fd, 900, getuid(), O_RDONLY, NULL, &refs));
        fd = NULL;
        EXPECT(plfs_open(&fd, path, O_WRONLY, 901, 0, NULL), PLFS_EROFS);
        CHECK(strstr(plfs_last_error(), "written by PLFS 2.5") && strstr(plfs_last_error(), "plfs upgrade"),
              "message: %s", plfs_last_error());
        EXPECT(plfs_trunc(NULL, path, 0, 0), PLFS_EROFS);
        EXPECT(plfs_unlink(path), PLFS_EROFS);
    }
    char listing[4096];
    list_dir(legacymnt, listing, sizeof listing);
    CHECK(strcmp(listing, "./../empty/n1_flat/n1_holes/n1_strided/") == 0, "listing %s", listing);
}

int main(void)
{
    setup();
    test_errors();
    test_paths_and_null_checks();
    test_n1_one_fd();
    test_threads();
    test_trunc();
    test_create_rename_unlink();
    test_dirs_and_links();
    test_metadata();
    test_flatten();
    test_xattrs();
    test_flush_and_invalidate();
    test_fileinfo_expand_hostname();
    test_legacy();
    printf("%d passed, %d failed\n", passed, failed);
    if (failed == 0) {
        nftw(base, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    } else {
        fprintf(stderr, "test files kept in %s\n", base);
    }
    return failed == 0 ? 0 : 1;
}
