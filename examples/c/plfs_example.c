/*
 * plfs_example.c -- write a file through the PLFS C API, read it back, and stat it.
 *
 *   cc plfs_example.c $(pkg-config --cflags --libs plfs) -o plfs_example
 *   ./plfs_example [logical-path]
 *
 * The default path lies under the zero-config mount point /tmp/plfs-$USER (with USER unset, the
 * login name of the user database, or the uid: what the library uses); set PLFSRC to use another
 * configuration.
 */
#define _POSIX_C_SOURCE 200809L
#include <plfs.h>

#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Prints a failed call and returns 1 (for `return fail(...)` in main). */
static int fail(const char *what, plfs_error_t err)
{
    fprintf(stderr, "plfs_example: %s: %s (%s)\n", what, strplfserr(err), plfs_last_error());
    return 1;
}

int main(int argc, char **argv)
{
    char path[4096];
    if (argc > 1) {
        snprintf(path, sizeof path, "%s", argv[1]);
    } else {
        const char *user = getenv("USER");
        if (user && *user && !strchr(user, '/')) {
            snprintf(path, sizeof path, "/tmp/plfs-%s/plfs_example.txt", user);
        } else {
            const struct passwd *pw = getpwuid(getuid());
            if (pw)
                snprintf(path, sizeof path, "/tmp/plfs-%s/plfs_example.txt", pw->pw_name);
            else
                snprintf(path, sizeof path, "/tmp/plfs-%u/plfs_example.txt", (unsigned)getuid());
        }
    }
    const char msg[] = "Hello from the PLFS C API!\n";
    const size_t len = sizeof msg - 1;
    pid_t pid = getpid();
    Plfs_fd *fd = NULL;
    ssize_t n = 0;
    int refs = 0;
    plfs_error_t err;

    /* Write. */
    err = plfs_open(&fd, path, O_CREAT | O_TRUNC | O_WRONLY, pid, 0644, NULL);
    if (err != PLFS_SUCCESS) return fail("open for writing", err);
    err = plfs_write(fd, msg, len, 0, pid, &n);
    if (err != PLFS_SUCCESS) return fail("write", err);
    err = plfs_close(fd, pid, getuid(), O_CREAT | O_TRUNC | O_WRONLY, NULL, &refs);
    if (err != PLFS_SUCCESS) return fail("close after writing", err);

    /* Read back. */
    fd = NULL;
    char buf[sizeof msg] = {0};
    err = plfs_open(&fd, path, O_RDONLY, pid, 0, NULL);
    if (err != PLFS_SUCCESS) return fail("open for reading", err);
    err = plfs_read(fd, buf, sizeof buf - 1, 0, &n);
    if (err != PLFS_SUCCESS) return fail("read", err);

    struct stat st;
    err = plfs_getattr(fd, path, &st, 0);
    if (err != PLFS_SUCCESS) return fail("getattr", err);
    err = plfs_close(fd, pid, getuid(), O_RDONLY, NULL, &refs);
    if (err != PLFS_SUCCESS) return fail("close after reading", err);

    if ((size_t)n != len || memcmp(buf, msg, len) != 0 || (size_t)st.st_size != len) {
        fprintf(stderr, "plfs_example: read back %zd bytes, size %lld: data differs\n", n,
                (long long)st.st_size);
        return 1;
    }
    printf("%s: %lld bytes, mode %o, libplfs %s\n%s", path, (long long)st.st_size,
           (unsigned)(st.st_mode & 07777), plfs_version(), buf);
    return 0;
}
