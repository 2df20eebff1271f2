/* pio: command line, the write and read phases, timing and reporting (see pio.h).
 *
 *   mpirun -np 4 pio -p /mnt/plfs/f -l strided -m posix -b 47008 -n 1000 [-w] [-r]
 *
 * Timing: every rank starts a phase after a common barrier; open, I/O and close are timed on
 * each rank and the slowest rank's times are reported. The effective bandwidth counts the whole
 * open..close span (as fs_test does); the raw bandwidth only the I/O calls. The read phase
 * excludes the time spent checking the data. */
#include "pio.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct opts {
    const char *path;
    const char *label;
    enum pio_layout layout;
    enum pio_mode mode;
    size_t record;
    uint64_t nrec;       /* records per writer */
    int do_write, do_read;
    int writers;         /* processes that wrote the file (read phase); 0: the current count */
    int shift;           /* reader r reads the share of (r + shift) % nprocs */
    int fsync;
    int check;
    int unlink_after;
    int have_seed;
    uint64_t seed;
    int quiet;
    MPI_Info info;
};

static int rank, nprocs;

static const char *layout_name[] = {"strided", "segmented", "nn"};
static const char *mode_name[] = {"posix", "mpi-ind", "mpi-coll", "plfs"};

static void die(const char *fmt, const char *arg)
{
    fprintf(stderr, "pio[%d]: ", rank);
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

static void usage(void)
{
    if (rank == 0)
        fprintf(stderr,
                "usage: pio -p PATH [-l strided|segmented|nn] [-m posix|mpi-ind|mpi-coll|plfs]\n"
                "           [-b RECORD_SIZE] [-n RECORDS_PER_PROC | -s BYTES_PER_PROC] [-w] [-r]\n"
                "           [-W WRITERS] [-S SHIFT] [-x SEED] [-f] [-C] [-u] [-H key=value] [-L LABEL] [-q]\n"
                "  -w/-r   write and/or read phase (default both)     -f  fsync before close\n"
                "  -W      processes that wrote the file (read only)  -S  read shift (default 1)\n"
                "  -x      fill seed (required for a read-only run)   -C  do not check the data\n"
                "  -u      remove the file(s) at the end              -H  MPI-IO hint\n"
                "Sizes take K, M, G suffixes (powers of 1024).\n");
    MPI_Finalize();
    exit(2);
}

static uint64_t parse_size(const char *s)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || end == s)
        die("bad size \"%s\"", s);
    switch (*end) {
    case 'k': case 'K': v <<= 10; end++; break;
    case 'm': case 'M': v <<= 20; end++; break;
    case 'g': case 'G': v <<= 30; end++; break;
    default: break;
    }
    if (*end == 'i' && end[1] == 'B')
        end += 2;
    else if (*end == 'B')
        end++;
    if (*end)
        die("bad size \"%s\"", s);
    return v;
}

/* A barrier that sleeps instead of spinning: with more ranks than cores, spinning ranks would
 * steal the CPU from ranks still doing I/O. */
static void quiet_barrier(void)
{
    MPI_Request req;
    int done = 0;
    MPI_Ibarrier(MPI_COMM_WORLD, &req);
    struct timespec ts = {0, 20000};
    for (;;) {
        MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        if (done)
            break;
        nanosleep(&ts, NULL);
    }
}

static void file_path(const struct opts *o, int fileno, char *out, size_t n)
{
    if (o->layout == LAYOUT_NN)
        snprintf(out, n, "%s.%d", o->path, fileno);
    else
        snprintf(out, n, "%s", o->path);
}

/* Where writer w's record i of n lives, with W writers: the file number and the offset. */
static void place(const struct opts *o, int W, int w, uint64_t i, int *fileno, uint64_t *off)
{
    switch (o->layout) {
    case LAYOUT_STRIDED: *fileno = 0; *off = (i * (uint64_t)W + (uint64_t)w) * o->record; break;
    case LAYOUT_SEGMENTED: *fileno = 0; *off = ((uint64_t)w * o->nrec + i) * o->record; break;
    case LAYOUT_NN: *fileno = w; *off = i * o->record; break;
    }
}

struct times { double open, io, close, total; };

/* CPU seconds (user + system, every thread) of this process so far. */
static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU seconds that n pattern fills (check = 0) or checks (check = 1) of a record cost, measured
 * on 32 of them (after one to warm the buffers) outside the timed span and scaled: subtracted
 * from the span's CPU time, so that cpu_s is the I/O layer's (and the kernel's) work, not pio's
 * own. */
static double pattern_cpu(const struct pio_pattern *pat, unsigned char *buf, unsigned char *scratch,
                          uint64_t n, int check)
{
    const uint64_t k = 32;
    if (n == 0)
        return 0;
    pio_pattern_fill(pat, buf, 0, 0);
    if (check)
        (void)pio_pattern_check(pat, buf, scratch, 0, 0);
    double c0 = cpu_now();
    for (uint64_t i = 0; i < k; i++) {
        pio_pattern_fill(pat, buf, 0, i * 4096);
        if (check)
            (void)pio_pattern_check(pat, buf, scratch, 0, i * 4096);
    }
    double per = (cpu_now() - c0) / (double)k;
    if (check) { /* the check's own cost: measured fills and checks, less the fills */
        double f0 = cpu_now();
        for (uint64_t i = 0; i < k; i++)
            pio_pattern_fill(pat, buf, 0, i * 4096);
        per -= (cpu_now() - f0) / (double)k;
    }
    return per > 0 ? per * (double)n : 0;
}

/* The sum over ranks of this rank's CPU seconds (to rank 0). */
static double cpu_sum(double mine)
{
    double all = 0;
    MPI_Reduce(&mine, &all, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    return all;
}

static void report(const struct opts *o, const char *phase, int W, uint64_t bytes, struct times t,
                   double cpu, long long errors, long long size, long long want_size)
{
    double mib = (double)bytes / (1024.0 * 1024.0);
    double bw = t.total > 0 ? mib / t.total : 0;
    double raw = t.io > 0 ? mib / t.io : 0;
    if (!o->quiet)
        printf("%-5s %s %s np=%d writers=%d record=%zu: %.1f MiB in %.3f s = %.1f MiB/s "
               "(I/O only %.1f MiB/s; open %.4f s, close %.4f s)%s\n",
               phase, layout_name[o->layout], mode_name[o->mode], nprocs, W, o->record, mib,
               t.total, bw, raw, t.open, t.close, errors ? "  DATA ERRORS" : "");
    printf("PIO_RESULT phase=%s label=%s mode=%s layout=%s nprocs=%d writers=%d record=%zu "
           "nrec=%" PRIu64 " bytes=%" PRIu64 " open_s=%.6f io_s=%.6f close_s=%.6f total_s=%.6f "
           "bw_mib_s=%.3f raw_mib_s=%.3f cpu_s=%.6f fsync=%d checked=%d errors=%lld size=%lld "
           "want_size=%lld seed=0x%016" PRIx64 "\n",
           phase, o->label, mode_name[o->mode], layout_name[o->layout], nprocs, W, o->record,
           o->nrec, bytes, t.open, t.io, t.close, t.total, bw, raw, cpu, o->fsync, o->check, errors,
           size, want_size, o->seed);
    fflush(stdout);
}

/* The slowest rank's times. */
static struct times slowest(struct times mine)
{
    double in[4] = {mine.open, mine.io, mine.close, mine.total}, out[4];
    MPI_Reduce(in, out, 4, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    struct times t = {out[0], out[1], out[2], out[3]};
    return t;
}

static void check_rc(int rc, const char *what)
{
    if (rc)
        die("%s", pio_errmsg[0] ? pio_errmsg : what);
}

static int write_phase(struct opts *o, unsigned char *buf)
{
    struct pio_pattern pat;
    char path[4096];
    int shared = o->layout != LAYOUT_NN;
    struct pio_open_opts oo = {o->info};
    if (pio_pattern_init(&pat, o->seed, o->record))
        die("out of memory for a %s-byte record", "record");
    file_path(o, rank, path, sizeof path);
    if (!shared || rank == 0)
        check_rc(pio_unlink(o->mode, path), "unlink");
    quiet_barrier();

    struct pio_file f;
    double fills = pattern_cpu(&pat, buf, NULL, o->nrec, 0);
    double c0 = cpu_now();
    double t0 = MPI_Wtime();
    check_rc(pio_open(&f, o->mode, path, 1, shared, rank, &oo), "open");
    double t1 = MPI_Wtime();
    for (uint64_t i = 0; i < o->nrec; i++) {
        int fileno = 0;
        uint64_t off = 0;
        place(o, nprocs, rank, i, &fileno, &off);
        pio_pattern_fill(&pat, buf, (uint64_t)fileno, off);
        check_rc(pio_pwrite(&f, buf, o->record, (off_t)off), "write");
    }
    if (o->fsync)
        check_rc(pio_sync(&f), "sync");
    double t2 = MPI_Wtime();
    check_rc(pio_close(&f), "close");
    double t3 = MPI_Wtime();
    double cpu = cpu_now() - c0 - fills;
    struct times t = slowest((struct times){t1 - t0, t2 - t1, t3 - t2, t3 - t0});
    cpu = cpu_sum(cpu > 0 ? cpu : 0);
    quiet_barrier();

    /* The size every file should have now, checked outside the timed span. */
    long long want = (long long)(o->record * o->nrec * (shared ? (uint64_t)nprocs : 1));
    long long size = pio_size(o->mode, path);
    long long bad = size != want, badsum = 0;
    if (bad)
        fprintf(stderr, "pio[%d]: %s has size %lld, expected %lld%s%s\n", rank, path, size, want,
                size < 0 ? ": " : "", size < 0 ? pio_errmsg : "");
    MPI_Reduce(&bad, &badsum, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        report(o, "write", nprocs, o->record * o->nrec * (uint64_t)nprocs, t, cpu, badsum, size, want);
    pio_pattern_free(&pat);
    return badsum != 0;
}

static int read_phase(struct opts *o, unsigned char *buf, unsigned char *scratch)
{
    struct pio_pattern pat;
    int W = o->writers ? o->writers : nprocs;
    int shared = o->layout != LAYOUT_NN;
    struct pio_open_opts oo = {o->info};
    if (pio_pattern_init(&pat, o->seed, o->record))
        die("out of memory for a %s-byte record", "record");
    /* Records are numbered writer by writer (g = w*nrec + i); reader r takes the contiguous
     * share number (r + shift) % nprocs, so with as many readers as writers it reads exactly
     * what writer (r + shift) % W wrote. */
    uint64_t total = (uint64_t)W * o->nrec;
    int share = (int)(((long)rank + o->shift) % nprocs);
    if (share < 0)
        share += nprocs;
    uint64_t g0 = total * (uint64_t)share / (uint64_t)nprocs;
    uint64_t g1 = total * (uint64_t)(share + 1) / (uint64_t)nprocs;
    uint64_t most = (total + (uint64_t)nprocs - 1) / (uint64_t)nprocs;
    char path[4096];
    int fileno0 = 0;
    uint64_t off0 = 0;
    if (g1 > g0)
        place(o, W, (int)(g0 / o->nrec), g0 % o->nrec, &fileno0, &off0);
    file_path(o, fileno0, path, sizeof path);
    quiet_barrier();

    struct pio_file f;
    int cur = fileno0;
    double checks = o->check ? pattern_cpu(&pat, buf, scratch, g1 > g0 ? g1 - g0 : 0, 1) : 0;
    double c0 = cpu_now();
    double t0 = MPI_Wtime(), tcheck = 0;
    long long errors = 0;
    check_rc(pio_open(&f, o->mode, path, 0, shared, rank, &oo), "open");
    double t1 = MPI_Wtime();
    for (uint64_t k = 0; k < most; k++) {
        uint64_t g = g0 + k;
        if (g >= g1) {
            check_rc(pio_coll_noop(&f, 0), "read");
            continue;
        }
        int fileno = 0;
        uint64_t off = 0;
        place(o, W, (int)(g / o->nrec), g % o->nrec, &fileno, &off);
        if (fileno != cur) { /* N-N with a different reader count: the next writer's file */
            check_rc(pio_close(&f), "close");
            file_path(o, fileno, path, sizeof path);
            check_rc(pio_open(&f, o->mode, path, 0, shared, rank, &oo), "open");
            cur = fileno;
        }
        check_rc(pio_pread(&f, buf, o->record, (off_t)off), "read");
        if (o->check) {
            double c0 = MPI_Wtime();
            long at = pio_pattern_check(&pat, buf, scratch, (uint64_t)fileno, off);
            if (at >= 0) {
                if (errors < 5)
                    fprintf(stderr, "pio[%d]: DATA ERROR in file %d at offset %" PRIu64 "\n", rank,
                            fileno, off + (uint64_t)at);
                errors++;
            }
            tcheck += MPI_Wtime() - c0;
        }
    }
    double t2 = MPI_Wtime();
    check_rc(pio_close(&f), "close");
    double t3 = MPI_Wtime();
    double cpu = cpu_now() - c0 - checks;
    struct times t = slowest((struct times){t1 - t0, t2 - t1 - tcheck, t3 - t2, t3 - t0 - tcheck});
    cpu = cpu_sum(cpu > 0 ? cpu : 0);
    long long errsum = 0;
    MPI_Reduce(&errors, &errsum, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        report(o, "read", W, total * o->record, t, cpu, errsum, -1, -1);
    pio_pattern_free(&pat);
    return errsum != 0;
}

static void parse(int argc, char **argv, struct opts *o)
{
    uint64_t per_proc = 0;
    int c;
    memset(o, 0, sizeof *o);
    o->label = "-";
    o->record = 47008;
    o->nrec = 100;
    o->shift = 1;
    o->check = 1;
    o->info = MPI_INFO_NULL;
    while ((c = getopt(argc, argv, "p:l:m:b:n:s:wrW:S:x:fCuH:L:qh")) != -1) {
        switch (c) {
        case 'p': o->path = optarg; break;
        case 'l':
            if (!strcmp(optarg, "strided")) o->layout = LAYOUT_STRIDED;
            else if (!strcmp(optarg, "segmented")) o->layout = LAYOUT_SEGMENTED;
            else if (!strcmp(optarg, "nn") || !strcmp(optarg, "n-n")) o->layout = LAYOUT_NN;
            else die("unknown layout \"%s\" (strided, segmented, nn)", optarg);
            break;
        case 'm':
            if (!strcmp(optarg, "posix")) o->mode = MODE_POSIX;
            else if (!strcmp(optarg, "mpi-ind")) o->mode = MODE_MPI_IND;
            else if (!strcmp(optarg, "mpi-coll")) o->mode = MODE_MPI_COLL;
            else if (!strcmp(optarg, "plfs")) o->mode = MODE_PLFS;
            else die("unknown mode \"%s\" (posix, mpi-ind, mpi-coll, plfs)", optarg);
            break;
        case 'b': o->record = (size_t)parse_size(optarg); break;
        case 'n': o->nrec = parse_size(optarg); break;
        case 's': per_proc = parse_size(optarg); break;
        case 'w': o->do_write = 1; break;
        case 'r': o->do_read = 1; break;
        case 'W': o->writers = atoi(optarg); break;
        case 'S': o->shift = atoi(optarg); break;
        case 'x': o->seed = strtoull(optarg, NULL, 0); o->have_seed = 1; break;
        case 'f': o->fsync = 1; break;
        case 'C': o->check = 0; break;
        case 'u': o->unlink_after = 1; break;
        case 'H': {
            char *eq = strchr(optarg, '=');
            if (!eq)
                die("hint \"%s\" is not key=value", optarg);
            *eq = 0;
            if (o->info == MPI_INFO_NULL)
                MPI_Info_create(&o->info);
            MPI_Info_set(o->info, optarg, eq + 1);
            break;
        }
        case 'L': o->label = optarg; break;
        case 'q': o->quiet = 1; break;
        default: usage();
        }
    }
    if (!o->path || optind != argc)
        usage();
    if (o->record == 0 || o->record > (1u << 30))
        die("record size must be 1 B .. 1 GiB (got %s)", "out of range");
    if (per_proc)
        o->nrec = per_proc / o->record ? per_proc / o->record : 1;
    if (!o->do_write && !o->do_read)
        o->do_write = o->do_read = 1;
    if (o->do_read && !o->do_write && !o->have_seed)
        die("a read-only run needs the writer's seed: %s", "-x SEED (printed as seed=...)");
    if (o->writers < 0 || (o->writers && o->do_write && o->writers != nprocs))
        die("-W %s: must equal the process count when writing", "WRITERS");
#ifndef PIO_PLFS
    if (o->mode == MODE_PLFS)
        die("mode %s needs the PLFS API build (pio-plfs)", "plfs");
#endif
}

int main(int argc, char **argv)
{
    struct opts o;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    parse(argc, argv, &o);
    if (!o.have_seed) {
        o.seed = ((uint64_t)time(NULL) << 20) ^ (uint64_t)getpid() ^ 0x9e3779b97f4a7c15ULL;
        MPI_Bcast(&o.seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    }
    unsigned char *buf = NULL, *scratch = NULL;
    if (posix_memalign((void **)&buf, 4096, o.record) || posix_memalign((void **)&scratch, 4096, o.record))
        die("out of memory for a record of %s", "that size");
    int bad = 0;
    if (o.do_write)
        bad |= write_phase(&o, buf);
    if (o.do_read)
        bad |= read_phase(&o, buf, scratch);
    if (o.unlink_after) {
        quiet_barrier();
        char path[4096];
        int W = o.writers ? o.writers : nprocs;
        for (int w = 0; w < (o.layout == LAYOUT_NN ? W : 1); w++)
            if (w % nprocs == rank) {
                file_path(&o, w, path, sizeof path);
                if (pio_unlink(o.mode, path))
                    fprintf(stderr, "pio[%d]: %s\n", rank, pio_errmsg);
            }
    }
    free(buf);
    free(scratch);
    if (o.info != MPI_INFO_NULL)
        MPI_Info_free(&o.info);
    MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return bad ? 3 : 0;
}
