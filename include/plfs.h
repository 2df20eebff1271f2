/*
 * plfs.h -- the PLFS C API (libplfs), source-compatible with PLFS 2.5.
 *
 * Programs written for the PLFS 2.5 API (for example LANL's fs_test in `--io plfs` mode)
 * compile against this header and link with -lplfs unchanged:
 *
 *     cc prog.c $(pkg-config --cflags --libs plfs)
 *
 * Conventions
 *   - Every call returns a plfs_error_t: PLFS_SUCCESS (0) or a PLFS_E* code. The codes are
 *     those of PLFS 2.5 (a sequential enum, NOT errno values): use plfs_error_to_errno() to get
 *     an errno and strplfserr() for a message. plfs_last_error() (an extension) returns a
 *     message naming the call and the path of the last failure on the calling thread.
 *   - Paths are logical paths under a mount point of the plfsrc (found in $PLFSRC, else
 *     ~/.plfsrc, else /etc/plfsrc, else the zero-config mount point /tmp/plfs-$USER). The
 *     configuration is read once, at the first call; if it is invalid, the reason is printed to
 *     stderr once and every call returns PLFS_EINVAL. A path under no mount point is
 *     PLFS_EINVAL. A leading "plfs:" (the MPI-IO prefix) is ignored; relative paths are taken
 *     relative to the working directory.
 *   - NULL where a pointer is required gives PLFS_EFAULT; a Plfs_fd or Plfs_dirp that is not
 *     open gives PLFS_EBADF. Calls never crash on bad handles.
 *   - Every call is thread-safe. A process sees its own writes at once; other processes see them
 *     when they (re)open the file after the writer called plfs_sync() or plfs_close().
 *   - Requires a 64-bit off_t (all 64-bit Linux platforms; on 32-bit ones build with
 *     -D_FILE_OFFSET_BITS=64).
 */
#ifndef PLFS_H
#define PLFS_H

#include <stddef.h>
#include <sys/types.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <utime.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The API level this header implements, and the package. */
#define plfs_VERSION_MAJOR 2
#define plfs_VERSION_MINOR 5
#define plfs_VERSION_PATCH 0
#define plfs_package_string "plfs (Rust) C API, PLFS 2.5 compatible"

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
_Static_assert(sizeof(off_t) == 8, "libplfs needs a 64-bit off_t: compile with -D_FILE_OFFSET_BITS=64");
#elif defined(__cplusplus) && __cplusplus >= 201103L
static_assert(sizeof(off_t) == 8, "libplfs needs a 64-bit off_t: compile with -D_FILE_OFFSET_BITS=64");
#endif

/* ---- Errors (values as in PLFS 2.5's plfs_error.h) ------------------------------------------ */

typedef enum {
    PLFS_SUCCESS = 0,
    PLFS_EPERM = 1,
    PLFS_ENOENT = 2,
    PLFS_ESRCH = 3,
    PLFS_EINTR = 4,
    PLFS_EIO = 5,
    PLFS_ENXIO = 6,
    PLFS_E2BIG = 7,
    PLFS_EBADF = 8,
    PLFS_EAGAIN = 9,
    PLFS_ENOMEM = 10,
    PLFS_EACCES = 11,
    PLFS_EFAULT = 12,
    PLFS_EBUSY = 13,
    PLFS_EEXIST = 14,
    PLFS_EXDEV = 15,
    PLFS_ENODEV = 16,
    PLFS_ENOTDIR = 17,
    PLFS_EISDIR = 18,
    PLFS_EINVAL = 19,
    PLFS_ENFILE = 20,
    PLFS_EMFILE = 21,
    PLFS_ENOTTY = 22,
    PLFS_ETXTBSY = 23,
    PLFS_EFBIG = 24,
    PLFS_ENOSPC = 25,
    PLFS_ESPIPE = 26,
    PLFS_EROFS = 27,
    PLFS_EMLINK = 28,
    PLFS_EPIPE = 29,
    PLFS_ERANGE = 30,
    PLFS_EDEADLK = 31,
    PLFS_ENAMETOOLONG = 32,
    PLFS_ENOSYS = 33,
    PLFS_ENOTEMPTY = 34,
    PLFS_ELOOP = 35,
    PLFS_ENODATA = 36,
    PLFS_EOVERFLOW = 37,
    PLFS_EBADFD = 38,
    PLFS_EPROTOTYPE = 39,
    PLFS_ENOTSUP = 40,
    PLFS_EEOF = 41,      /* no errno of its own: plfs_error_to_errno() gives EIO */
    PLFS_SIGSEGV = 42,   /* likewise */
    PLFS_SIGBUS = 43,    /* likewise */
    /* Extensions (not in PLFS 2.5, which reported these errnos as PLFS_TBD). */
    PLFS_EDQUOT = 44,
    PLFS_ESTALE = 45,
    PLFS_ETIMEDOUT = 46,
    PLFS_ENOLCK = 47,
    PLFS_ENOTCONN = 48,
    PLFS_TBD = 300       /* an errno with no code above; plfs_error_to_errno() gives EIO */
} plfs_error_t;

#define PLFS_EWOULDBLOCK PLFS_EAGAIN

/* The errno for a code (0 for PLFS_SUCCESS, EIO for codes without an errno). */
int plfs_error_to_errno(plfs_error_t plfs_err);
/* The code for an errno (a negative errno is accepted too); PLFS_TBD if there is none. */
plfs_error_t errno_to_plfs_error(int errcode);
/* A static message for a code ("Unknown error" for values that are not codes). Never NULL. */
const char *strplfserr(plfs_error_t err);
/* Extension: the last failure on this thread, e.g. "plfs_open: /mnt/plfs/x: no such file or
 * directory". Never NULL; valid until the thread's next failing call. */
const char *plfs_last_error(void);

/* ---- Types --------------------------------------------------------------------------------- */

/* An open file (opaque). Obtain with plfs_open, release with plfs_close. */
typedef struct Plfs_fd Plfs_fd;
/* A directory being listed (opaque). Obtain with plfs_opendir_c, release with plfs_closedir_c. */
typedef struct Plfs_dirp Plfs_dirp;

typedef enum { PLFS_API, PLFS_POSIX, PLFS_MPIIO } plfs_interface;

typedef enum { CONTAINER, FLAT_FILE, SMALL_FILE, PFT_UNKNOWN } plfs_filetype;

/* Index types of a CONTAINER file, from plfs_get_fileinfo (values as in PLFS 2.5). */
#define CI_UNKNOWN   0
#define CI_BYTERANGE 1   /* one record per write */
#define CI_PATTERN   2   /* regular runs of writes compressed into one record each */
#define CI_MDHIM     3   /* never produced by this library */

/* Options for plfs_open. May be NULL; the fields are accepted for compatibility and ignored. */
typedef struct {
    char *index_stream;
    int buffer_index;
    plfs_interface pinter;
    int reopen;
    int uniform_restart_enable;
    pid_t uniform_restart_rank;
} Plfs_open_opt;

/* Options for plfs_close. May be NULL; the fields are accepted for compatibility and ignored
 * (the library keeps its own size metadata). */
typedef struct {
    off_t last_offset;
    size_t total_bytes;
    int valid_meta;
    plfs_interface pinter;
    size_t num_procs;
} Plfs_close_opt;

/* ---- Calls (in alphabetical order, as in PLFS 2.5) ------------------------------------------- */

/* 1 if path lies under a PLFS mount point (whether or not it exists), else 0. */
int is_plfs_path(const char *path);

/* access(2): mask is F_OK or a combination of R_OK, W_OK, X_OK. An ancestor directory of a
 * mount point (e.g. /mnt for /mnt/plfs) is accessible. */
plfs_error_t plfs_access(const char *path, int mask);

plfs_error_t plfs_chmod(const char *path, mode_t mode);

/* (uid_t)-1 / (gid_t)-1 leave an id unchanged. Does not follow a final symbolic link. */
plfs_error_t plfs_chown(const char *path, uid_t uid, gid_t gid);

/* Releases one reference to fd (open_flags: the flags that reference was opened with) and stores
 * the references left in *num_ref (num_ref may be NULL). When none are left the file is closed,
 * its writes become visible to other processes, and fd is invalid. pid, uid and close_opt are
 * accepted and ignored. */
plfs_error_t plfs_close(Plfs_fd *fd, pid_t pid, uid_t uid, int open_flags,
                        Plfs_close_opt *close_opt, int *num_ref);

/* Closes a listing from plfs_opendir_c. */
plfs_error_t plfs_closedir_c(Plfs_dirp *dirp);

/* Creates an empty file (you can also pass O_CREAT to plfs_open). O_EXCL: PLFS_EEXIST if it
 * exists; O_TRUNC: an existing file is emptied. pid is ignored. */
plfs_error_t plfs_create(const char *path, mode_t mode, int flags, pid_t pid);

/* Expands a logical path to the backend path of its container (where it is, or where it would
 * be created) in a malloc()ed string the caller frees. *pmountp and *pbackp (each may be NULL)
 * receive opaque identifiers of the mount point and the backend, valid for the life of the
 * process; do not dereference them. */
plfs_error_t plfs_expand_path(const char *logical, char **physical, void **pmountp, void **pbackp);

/* Writes a flattened index so later opens read one index file instead of every writer's.
 * Uses path if non-NULL, else the path fd was opened with (fd may then be any open handle).
 * PLFS_EBUSY while any writer has the file open. */
plfs_error_t plfs_flatten_index(Plfs_fd *fd, const char *path);

/* Makes the buffered writes of every file this process has open at or under dir visible to
 * other processes (no fsync; see plfs_sync). Files are visible at close anyway. */
plfs_error_t plfs_flush_writes(const char *dir);

/* Attributes of fd (if non-NULL; the size then includes this process's unsynced writes) or of
 * path. Every field is filled even with size_only set. */
plfs_error_t plfs_getattr(Plfs_fd *fd, const char *path, struct stat *st, int size_only);

/* The file type of the mount point holding path (as PLFS 2.5): CONTAINER for n-1, FLAT_FILE for
 * n-n, SMALL_FILE for 1-n; PFT_UNKNOWN outside every mount point. */
plfs_filetype plfs_get_filetype(const char *path);

/* The file type of the mount point holding path (CONTAINER for n-1, FLAT_FILE for n-n,
 * SMALL_FILE for 1-n, PFT_UNKNOWN outside any) and, through ixtypep (may be NULL), the index
 * type of an n-1 file: CI_PATTERN when its index holds pattern-compressed runs, CI_BYTERANGE
 * otherwise (also for a file not yet written, and for files written by PLFS 2.x), CI_UNKNOWN
 * for other file types or a file that cannot be opened for reading. */
plfs_filetype plfs_get_fileinfo(const char *path, int *ixtypep);

/* This host's name as PLFS uses it ($PLFS_HOSTNAME if set, else the node name) in a static
 * string the caller must not free. */
plfs_error_t plfs_gethostname(char **hname);

/* Copies len bytes of extended attribute key of fd's file into value, zero-filled past the
 * stored value (as PLFS 2.5). PLFS_ENOENT: no such attribute; PLFS_ENOTSUP: an n-n or 1-n file
 * (only n-1 files keep attributes). */
plfs_error_t plfs_getxattr(Plfs_fd *fd, void *value, const char *key, size_t len);

/* Drops this process's cached indexes of files at or under dir: the next read through any open
 * handle sees what other processes made visible since. */
plfs_error_t plfs_invalidate_read_cache(const char *dir);

/* Hard links are not supported: always PLFS_ENOSYS (as in PLFS 2.5) for PLFS paths. */
plfs_error_t plfs_link(const char *path, const char *to);

plfs_error_t plfs_mkdir(const char *path, mode_t mode);

/* The st_mode (type and permission bits) of path. */
plfs_error_t plfs_mode(const char *path, mode_t *mode);

/* Opens path. To open a file, set *pfd to NULL and pass its address: on success *pfd is a new
 * handle. To add a reference to an open handle (e.g. another thread or writer pid sharing it),
 * pass the address of the open handle: path is then ignored (it may be NULL) and every
 * reference needs its own plfs_close. flags: O_RDONLY / O_WRONLY / O_RDWR, with O_CREAT, O_EXCL,
 * O_TRUNC (O_APPEND is accepted, but plfs_write always writes at the offset it is given).
 * pid names the writer (e.g. the MPI rank); each pid writing through a handle gets its own data
 * log. open_opt may be NULL (its fields are ignored). */
plfs_error_t plfs_open(Plfs_fd **pfd, const char *path, int flags, pid_t pid, mode_t mode,
                       Plfs_open_opt *open_opt);

/* Lists directory path into a new *pdirp ("." and ".." first, then the names in byte order). */
plfs_error_t plfs_opendir_c(const char *path, Plfs_dirp **pdirp);

/* References of fd open for writing and for reading, bytes written through fd, and lazy_stat
 * (always 0). Any out-pointer may be NULL. */
plfs_error_t plfs_query(Plfs_fd *fd, size_t *writers, size_t *readers, size_t *bytes_written,
                        int *lazy_stat);

/* Reads up to size bytes at offset into buf; *bytes_read is the count, less than size only at
 * end of file. Holes read as zeros. */
plfs_error_t plfs_read(Plfs_fd *fd, char *buf, size_t size, off_t offset, ssize_t *bytes_read);

/* Copies the next entry name, NUL-terminated, into dname; an empty string marks the end. A name
 * of bufsz bytes or more gives PLFS_ENOMEM and is returned again by the next call. */
plfs_error_t plfs_readdir_c(Plfs_dirp *dirp, char *dname, size_t bufsz);

/* plfs_readdir (for C++ callers) is declared at the end of this header. */

/* Copies at most bufsize bytes of the link's contents into buf and zero-fills the rest; *bytes
 * (may be NULL) is the count. NUL-terminated when *bytes < bufsize. */
plfs_error_t plfs_readlink(const char *path, char *buf, size_t bufsize, int *bytes);

/* Renames a file, symbolic link or directory; both paths under one mount point (else
 * PLFS_EXDEV). An existing target file is replaced. */
plfs_error_t plfs_rename(const char *from, const char *to);

plfs_error_t plfs_rmdir(const char *path);

/* Sets extended attribute key (1 to 126 bytes) of fd's file to the len bytes at value (at most
 * 64 KiB). Stored in the file's container: every process and later open sees it. PLFS_ENOTSUP
 * for n-n and 1-n files; PLFS_EROFS for files written by PLFS 2.x. */
plfs_error_t plfs_setxattr(Plfs_fd *fd, const void *value, const char *key, size_t len);

/* Statistics of the backend file system holding the mount point. */
plfs_error_t plfs_statvfs(const char *path, struct statvfs *stbuf);

/* Creates the symbolic link `to` (a PLFS path) containing `from` (any string). */
plfs_error_t plfs_symlink(const char *from, const char *to);

/* Makes every write through fd durable and visible to processes that (re)open the file. */
plfs_error_t plfs_sync(Plfs_fd *fd);

/* Truncates (or extends with zeros) to offset: through fd if non-NULL, else by path.
 * open_file is ignored. */
plfs_error_t plfs_trunc(Plfs_fd *fd, const char *path, off_t offset, int open_file);

/* Removes a file or symbolic link. */
plfs_error_t plfs_unlink(const char *path);

/* Sets access and modification times (both to now if ut is NULL). */
plfs_error_t plfs_utime(const char *path, struct utimbuf *ut);

/* This library's version string, e.g. "0.1.0". */
const char *plfs_version(void);

/* Writes size bytes from buf at offset as writer pid; *bytes_written is the count. */
plfs_error_t plfs_write(Plfs_fd *fd, const char *buf, size_t size, off_t offset, pid_t pid,
                        ssize_t *bytes_written);

#ifdef __cplusplus
}

/* plfs_readdir for C++ callers: adds the names in directory path ("." and ".." included, as
 * plfs_opendir_c lists them) to the container passed as void*. In PLFS 2.5 the header's comment
 * said std::vector<std::string>, but the library cast the argument to std::set<std::string>* and
 * every caller (FUSE, the tools) passed a set: the void* form takes a std::set<std::string>*
 * likewise. Typed overloads take either container. Header-only: libplfs stays a C library. */
#include <set>
#include <string>
#include <vector>

namespace plfs_detail {
template <typename Add>
inline plfs_error_t readdir_each(const char *path, Add add)
{
    Plfs_dirp *d = 0;
    plfs_error_t e = plfs_opendir_c(path, &d);
    if (e != PLFS_SUCCESS) return e;
    std::vector<char> buf(4096);
    for (;;) {
        e = plfs_readdir_c(d, &buf[0], buf.size());
        if (e == PLFS_ENOMEM && buf.size() < (1u << 20)) { buf.resize(buf.size() * 4); continue; }
        if (e != PLFS_SUCCESS || buf[0] == '\0') break;
        add(std::string(&buf[0]));
    }
    plfs_error_t c = plfs_closedir_c(d);
    return e != PLFS_SUCCESS ? e : c;
}
struct add_to_set {
    std::set<std::string> *s;
    void operator()(const std::string &n) const { s->insert(n); }
};
struct add_to_vector {
    std::vector<std::string> *v;
    void operator()(const std::string &n) const { v->push_back(n); }
};
} /* namespace plfs_detail */

inline plfs_error_t plfs_readdir(const char *path, std::set<std::string> *entries)
{
    if (!entries) return PLFS_EFAULT;
    plfs_detail::add_to_set a = {entries};
    return plfs_detail::readdir_each(path, a);
}

inline plfs_error_t plfs_readdir(const char *path, std::vector<std::string> *entries)
{
    if (!entries) return PLFS_EFAULT;
    plfs_detail::add_to_vector a = {entries};
    return plfs_detail::readdir_each(path, a);
}

extern "C" inline plfs_error_t plfs_readdir(const char *path, void *entries)
{
    return plfs_readdir(path, static_cast<std::set<std::string> *>(entries));
}
#endif /* __cplusplus */

#endif /* PLFS_H */
