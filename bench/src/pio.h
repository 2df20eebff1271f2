/* pio: an MPI I/O test program for plfs (in the spirit of LANL's MPI-IO Test / fs_test).
 *
 * N processes write records to one shared file (N-1 strided or segmented) or to one file each
 * (N-N), then read them back and check every byte. The same workload runs through POSIX
 * pwrite/pread, MPI-IO independent or collective calls, or (built with -DPIO_PLFS) the PLFS C
 * API. Shared declarations of pio_main.c, pio_io.c and pio_pattern.c.
 */
#ifndef PIO_H
#define PIO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <mpi.h>

#ifdef PIO_PLFS
#include <plfs.h>
#endif

/* How records are placed. Writer w's record i of n, with W writers and record size B, lives at:
 * strided (N-1): offset (i*W + w)*B of the shared file
 * segmented (N-1): offset (w*n + i)*B of the shared file
 * nn (N-N): offset i*B of file "<path>.<w>" */
enum pio_layout { LAYOUT_STRIDED, LAYOUT_SEGMENTED, LAYOUT_NN };

/* Which calls move the bytes. */
enum pio_mode { MODE_POSIX, MODE_MPI_IND, MODE_MPI_COLL, MODE_PLFS };

/* One open file of whichever mode. Exactly one of the handles is live while open. */
struct pio_file {
    enum pio_mode mode;
    int fd;           /* MODE_POSIX */
    MPI_File mfh;     /* MODE_MPI_* */
    int shared;       /* opened collectively on MPI_COMM_WORLD (N-1) rather than MPI_COMM_SELF */
    int writing;      /* opened for writing */
    int rank;         /* the writer id given to the PLFS API */
#ifdef PIO_PLFS
    Plfs_fd *pfd;     /* MODE_PLFS */
    int oflags;
#endif
};

/* Options for opening, fixed for one run. */
struct pio_open_opts {
    MPI_Info info;    /* MPI-IO hints (MPI_INFO_NULL for none) */
};

/* pio_io.c: every function returns 0 or an errno value, and leaves a message in pio_errmsg. */
extern char pio_errmsg[512];
int pio_open(struct pio_file *f, enum pio_mode mode, const char *path, int writing, int shared,
             int rank, const struct pio_open_opts *o);
int pio_pwrite(struct pio_file *f, const void *buf, size_t len, off_t off);
int pio_pread(struct pio_file *f, void *buf, size_t len, off_t off);
/* A zero-length collective call, so that every rank makes the same number of *_all calls. */
int pio_coll_noop(struct pio_file *f, int writing);
int pio_sync(struct pio_file *f);
int pio_close(struct pio_file *f);
/* Removes a file; a missing file is not an error. */
int pio_unlink(enum pio_mode mode, const char *path);
/* File size, or -1 with pio_errmsg set. */
long long pio_size(enum pio_mode mode, const char *path);

/* pio_pattern.c: the fill pattern. Every byte of the logical file is a function of the run's seed
 * and its offset: a per-run pseudo-random block repeated, with the first 16 bytes of every
 * 4 KiB-aligned piece of each record overwritten by a stamp naming its logical offset. So a
 * byte that is wrong, missing, or came from another record or another run is detected. */
struct pio_pattern {
    uint64_t seed;
    size_t len;       /* record size */
    unsigned char *base; /* len pseudo-random bytes, fixed for the run */
};
int pio_pattern_init(struct pio_pattern *p, uint64_t seed, size_t len);
void pio_pattern_free(struct pio_pattern *p);
/* Fills buf (p->len bytes) with the content of the record at logical offset off of file fileno. */
void pio_pattern_fill(const struct pio_pattern *p, unsigned char *buf, uint64_t fileno, uint64_t off);
/* Checks got against the expected content, using scratch (p->len bytes). Returns -1 if equal,
 * else the index of the first differing byte. */
long pio_pattern_check(const struct pio_pattern *p, const unsigned char *got, unsigned char *scratch,
                       uint64_t fileno, uint64_t off);

#endif
