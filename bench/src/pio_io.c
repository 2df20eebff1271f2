/* pio: the I/O modes behind one interface: POSIX pwrite/pread, MPI-IO independent
 * (MPI_File_write_at) and collective (MPI_File_write_at_all) calls, and the PLFS C API. */
#include "pio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char pio_errmsg[512];

static int fail(int err, const char *what, const char *path)
{
    snprintf(pio_errmsg, sizeof pio_errmsg, "%s %s: %s", what, path ? path : "", strerror(err));
    return err ? err : EIO;
}

static int mpi_fail(int rc, const char *what)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    snprintf(pio_errmsg, sizeof pio_errmsg, "%s: %.*s", what, len, msg);
    return EIO;
}

#ifdef PIO_PLFS
static int plfs_fail(plfs_error_t e, const char *what, const char *path)
{
    snprintf(pio_errmsg, sizeof pio_errmsg, "%s %s: %s", what, path ? path : "", strplfserr(e));
    int err = plfs_error_to_errno(e);
    return err > 0 ? err : EIO;
}
#endif

int pio_open(struct pio_file *f, enum pio_mode mode, const char *path, int writing, int shared,
             int rank, const struct pio_open_opts *o)
{
    memset(f, 0, sizeof *f);
    f->mode = mode;
    f->fd = -1;
    f->shared = shared;
    f->writing = writing;
    f->rank = rank;
    switch (mode) {
    case MODE_POSIX: {
        int flags = writing ? O_WRONLY | O_CREAT : O_RDONLY;
        f->fd = open(path, flags, 0644);
        return f->fd < 0 ? fail(errno, "open", path) : 0;
    }
    case MODE_MPI_IND:
    case MODE_MPI_COLL: {
        int amode = writing ? MPI_MODE_WRONLY | MPI_MODE_CREATE : MPI_MODE_RDONLY;
        MPI_Comm comm = shared ? MPI_COMM_WORLD : MPI_COMM_SELF;
        int rc = MPI_File_open(comm, path, amode, o->info, &f->mfh);
        return rc != MPI_SUCCESS ? mpi_fail(rc, "MPI_File_open") : 0;
    }
    case MODE_PLFS:
#ifdef PIO_PLFS
    {
        f->oflags = writing ? O_WRONLY | O_CREAT : O_RDONLY;
        f->pfd = NULL;
        plfs_error_t e = plfs_open(&f->pfd, path, f->oflags, rank, 0644, NULL);
        return e != PLFS_SUCCESS ? plfs_fail(e, "plfs_open", path) : 0;
    }
#else
        return fail(ENOSYS, "PLFS API mode (rebuild with -DPIO_PLFS)", path);
#endif
    }
    return fail(EINVAL, "open: bad mode", path);
}

int pio_pwrite(struct pio_file *f, const void *buf, size_t len, off_t off)
{
    switch (f->mode) {
    case MODE_POSIX: {
        size_t done = 0;
        while (done < len) {
            ssize_t n = pwrite(f->fd, (const char *)buf + done, len - done, off + (off_t)done);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                return fail(n < 0 ? errno : EIO, "pwrite", "");
            done += (size_t)n;
        }
        return 0;
    }
    case MODE_MPI_IND:
    case MODE_MPI_COLL: {
        MPI_Status st;
        int rc = f->mode == MODE_MPI_COLL
                     ? MPI_File_write_at_all(f->mfh, off, buf, (int)len, MPI_BYTE, &st)
                     : MPI_File_write_at(f->mfh, off, buf, (int)len, MPI_BYTE, &st);
        if (rc != MPI_SUCCESS)
            return mpi_fail(rc, "MPI_File_write_at");
        int count = 0;
        MPI_Get_count(&st, MPI_BYTE, &count);
        return (size_t)count == len ? 0 : fail(EIO, "MPI_File_write_at: short write", "");
    }
    case MODE_PLFS:
#ifdef PIO_PLFS
    {
        size_t done = 0;
        while (done < len) {
            ssize_t n = 0;
            plfs_error_t e = plfs_write(f->pfd, (const char *)buf + done, len - done,
                                        off + (off_t)done, f->rank, &n);
            if (e != PLFS_SUCCESS)
                return plfs_fail(e, "plfs_write", "");
            if (n <= 0)
                return fail(EIO, "plfs_write: wrote nothing", "");
            done += (size_t)n;
        }
        return 0;
    }
#else
        break;
#endif
    }
    return fail(ENOSYS, "pwrite: bad mode", "");
}

int pio_pread(struct pio_file *f, void *buf, size_t len, off_t off)
{
    switch (f->mode) {
    case MODE_POSIX: {
        size_t done = 0;
        while (done < len) {
            ssize_t n = pread(f->fd, (char *)buf + done, len - done, off + (off_t)done);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0)
                return fail(errno, "pread", "");
            if (n == 0)
                return fail(EIO, "pread: unexpected end of file", "");
            done += (size_t)n;
        }
        return 0;
    }
    case MODE_MPI_IND:
    case MODE_MPI_COLL: {
        MPI_Status st;
        int rc = f->mode == MODE_MPI_COLL
                     ? MPI_File_read_at_all(f->mfh, off, buf, (int)len, MPI_BYTE, &st)
                     : MPI_File_read_at(f->mfh, off, buf, (int)len, MPI_BYTE, &st);
        if (rc != MPI_SUCCESS)
            return mpi_fail(rc, "MPI_File_read_at");
        int count = 0;
        MPI_Get_count(&st, MPI_BYTE, &count);
        return (size_t)count == len ? 0 : fail(EIO, "MPI_File_read_at: short read", "");
    }
    case MODE_PLFS:
#ifdef PIO_PLFS
    {
        size_t done = 0;
        while (done < len) {
            ssize_t n = 0;
            plfs_error_t e = plfs_read(f->pfd, (char *)buf + done, len - done, off + (off_t)done, &n);
            if (e != PLFS_SUCCESS)
                return plfs_fail(e, "plfs_read", "");
            if (n <= 0)
                return fail(EIO, "plfs_read: unexpected end of file", "");
            done += (size_t)n;
        }
        return 0;
    }
#else
        break;
#endif
    }
    return fail(ENOSYS, "pread: bad mode", "");
}

int pio_coll_noop(struct pio_file *f, int writing)
{
    if (f->mode != MODE_MPI_COLL || !f->shared)
        return 0;
    MPI_Status st;
    char dummy = 0;
    int rc = writing ? MPI_File_write_at_all(f->mfh, 0, &dummy, 0, MPI_BYTE, &st)
                     : MPI_File_read_at_all(f->mfh, 0, &dummy, 0, MPI_BYTE, &st);
    return rc != MPI_SUCCESS ? mpi_fail(rc, "zero-length collective call") : 0;
}

int pio_sync(struct pio_file *f)
{
    switch (f->mode) {
    case MODE_POSIX:
        return fsync(f->fd) != 0 ? fail(errno, "fsync", "") : 0;
    case MODE_MPI_IND:
    case MODE_MPI_COLL: {
        int rc = MPI_File_sync(f->mfh);
        return rc != MPI_SUCCESS ? mpi_fail(rc, "MPI_File_sync") : 0;
    }
    case MODE_PLFS:
#ifdef PIO_PLFS
    {
        plfs_error_t e = plfs_sync(f->pfd);
        return e != PLFS_SUCCESS ? plfs_fail(e, "plfs_sync", "") : 0;
    }
#else
        break;
#endif
    }
    return fail(ENOSYS, "sync: bad mode", "");
}

int pio_close(struct pio_file *f)
{
    switch (f->mode) {
    case MODE_POSIX: {
        int rc = close(f->fd);
        f->fd = -1;
        return rc != 0 ? fail(errno, "close", "") : 0;
    }
    case MODE_MPI_IND:
    case MODE_MPI_COLL: {
        int rc = MPI_File_close(&f->mfh);
        return rc != MPI_SUCCESS ? mpi_fail(rc, "MPI_File_close") : 0;
    }
    case MODE_PLFS:
#ifdef PIO_PLFS
    {
        int refs = 0;
        plfs_error_t e = plfs_close(f->pfd, f->rank, getuid(), f->oflags, NULL, &refs);
        f->pfd = NULL;
        return e != PLFS_SUCCESS ? plfs_fail(e, "plfs_close", "") : 0;
    }
#else
        break;
#endif
    }
    return fail(ENOSYS, "close: bad mode", "");
}

int pio_unlink(enum pio_mode mode, const char *path)
{
#ifdef PIO_PLFS
    if (mode == MODE_PLFS) {
        plfs_error_t e = plfs_unlink(path);
        if (e == PLFS_SUCCESS || plfs_error_to_errno(e) == ENOENT)
            return 0;
        return plfs_fail(e, "plfs_unlink", path);
    }
#else
    (void)mode;
#endif
    if (unlink(path) == 0 || errno == ENOENT)
        return 0;
    return fail(errno, "unlink", path);
}

long long pio_size(enum pio_mode mode, const char *path)
{
    struct stat st;
#ifdef PIO_PLFS
    if (mode == MODE_PLFS) {
        plfs_error_t e = plfs_getattr(NULL, path, &st, 1);
        if (e != PLFS_SUCCESS) {
            plfs_fail(e, "plfs_getattr", path);
            return -1;
        }
        return (long long)st.st_size;
    }
#else
    (void)mode;
#endif
    if (stat(path, &st) != 0) {
        fail(errno, "stat", path);
        return -1;
    }
    return (long long)st.st_size;
}
