/* A PnetCDF application in shape (a climate or ocean model's history file, as written through
 * PnetCDF's collective API): one CDF-5 file with global attributes, a coordinate variable, a 3-D
 * double variable and a record variable, every rank writing its own block of them.
 *
 *   dims        time (unlimited), z = NZ, y = NY, x = NX (the optional arguments)
 *   global      title, Conventions, model_step (int), grid_spacing (double)
 *   x(x)        double, "units": written by rank 0 alone in independent data mode
 *   temperature(z, y, x)  double, "units", "long_name", "valid_range": every rank its block of a
 *               3-D process grid (MPI_Dims_create), collectively (ncmpi_put_vara_double_all)
 *   pressure(time, y, x)  int, "units": RECORDS records, every rank its block of a 2-D grid, as
 *               nonblocking puts (ncmpi_iput_vara_int) flushed by one collective ncmpi_wait_all
 *
 * The value at every index is a function of the variable and the global index only, so `check`
 * reads the file back (collectively, with this run's decomposition, any number of ranks) and
 * verifies every value and attribute; two runs with any numbers of ranks write the same bytes.
 *
 * Debian 12 builds PnetCDF against OpenMPI, not MPICH: libpnetcdf0d depends on libopenmpi3 and
 * `ldd /usr/lib/x86_64-linux-gnu/libpnetcdf.so` shows libmpi.so.40 (OpenMPI's; MPICH's is
 * libmpich.so.12), so this program is built with mpicc.openmpi and run with mpirun.openmpi,
 * whose MPI-IO is OpenMPI's OMPIO unless OMPI_MCA_io says otherwise.
 *
 * usage: pnetcdf_var PATH write|check [NX NY NZ RECORDS]   (default 23 20 6 3; check needs the same)
 * With PLFS_IO_TIMES set, rank 0 prints the time of the create, enddef, puts and close (iotime.h).
 * Exit status 0 and "PNETCDF OK ..." on rank 0 when all is right; otherwise a message naming the
 * variable and index of the first wrong value, and exit status 1. */
#include <mpi.h>
#include <pnetcdf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iotime.h"
#include "mix64.h"

/* The grid and the number of records: 23 x 20 x 6 and 3 unless the command line says otherwise. */
static int nx = 23, ny = 20, nz = 6, records = 3;
#define MODEL_STEP 1200
#define GRID_SPACING 0.5

static const char *title = "PnetCDF shape: plfs tests/mpi/pnetcdf_var.c";
static int rank, np;
static long long bad;

#define TRY(call)                                                                                             \
    do {                                                                                                      \
        int err_ = (call);                                                                                    \
        if (err_ != NC_NOERR) {                                                                               \
            fprintf(stderr, "pnetcdf_var: rank %d: %s: %s (%s:%d)\n", rank, #call, ncmpi_strerror(err_), __FILE__, __LINE__); \
            MPI_Abort(MPI_COMM_WORLD, 2);                                                                     \
        }                                                                                                     \
    } while (0)

static double temperature(int z, int y, int x) {
    uint64_t h = mix64(((uint64_t)z * 1000003u + (uint64_t)y) * 1000033u + (uint64_t)x + 1);
    return 180.0 + (double)(h & ((1ULL << 40) - 1)) / 8589934592.0; /* 180 + [0, 128) K, exact */
}

static int pressure(int t, int y, int x) { return (int)(mix64(((uint64_t)t * 1000003u + (uint64_t)y) * 1000033u + (uint64_t)x + 7) % 200000u) - 100000; }

static double xcoord(int i) { return GRID_SPACING * i; }

/* The block of one dimension: [*start, *start + *count) of n over p parts, part i. */
static void split(int n, int p, int i, MPI_Offset *start, MPI_Offset *count) {
    int base = n / p, extra = n % p;
    *count = base + (i < extra ? 1 : 0);
    *start = (MPI_Offset)i * base + (i < extra ? i : extra);
}

/* This rank's block of an nd-dimensional array of the given sizes. */
static void block(int nd, const int *sizes, MPI_Offset *start, MPI_Offset *count) {
    int dims[3] = {0, 0, 0};
    MPI_Dims_create(np, nd, dims);
    int r = rank;
    for (int d = nd - 1; d >= 0; d--) {
        split(sizes[d], dims[d], r % dims[d], &start[d], &count[d]);
        r /= dims[d];
    }
}

static void write_file(const char *path) {
    int nc, dt, dz, dy, dx, vx, vt, vp;
    MPI_Info info;
    MPI_Info_create(&info);
    IOTIMED(TRY(ncmpi_create(MPI_COMM_WORLD, path, NC_CLOBBER | NC_64BIT_DATA, info, &nc)));
    MPI_Info_free(&info);
    TRY(ncmpi_def_dim(nc, "time", NC_UNLIMITED, &dt));
    TRY(ncmpi_def_dim(nc, "z", nz, &dz));
    TRY(ncmpi_def_dim(nc, "y", ny, &dy));
    TRY(ncmpi_def_dim(nc, "x", nx, &dx));
    TRY(ncmpi_put_att_text(nc, NC_GLOBAL, "title", strlen(title), title));
    TRY(ncmpi_put_att_text(nc, NC_GLOBAL, "Conventions", 6, "CF-1.8"));
    int step = MODEL_STEP;
    double spacing = GRID_SPACING;
    TRY(ncmpi_put_att_int(nc, NC_GLOBAL, "model_step", NC_INT, 1, &step));
    TRY(ncmpi_put_att_double(nc, NC_GLOBAL, "grid_spacing", NC_DOUBLE, 1, &spacing));
    TRY(ncmpi_def_var(nc, "x", NC_DOUBLE, 1, &dx, &vx));
    TRY(ncmpi_put_att_text(nc, vx, "units", 1, "m"));
    int tdims[3] = {dz, dy, dx};
    TRY(ncmpi_def_var(nc, "temperature", NC_DOUBLE, 3, tdims, &vt));
    TRY(ncmpi_put_att_text(nc, vt, "units", 1, "K"));
    TRY(ncmpi_put_att_text(nc, vt, "long_name", 19, "sea water potential"));
    double range[2] = {180.0, 308.0};
    TRY(ncmpi_put_att_double(nc, vt, "valid_range", NC_DOUBLE, 2, range));
    int pdims[3] = {dt, dy, dx};
    TRY(ncmpi_def_var(nc, "pressure", NC_INT, 3, pdims, &vp));
    TRY(ncmpi_put_att_text(nc, vp, "units", 2, "Pa"));
    IOTIMED(TRY(ncmpi_enddef(nc)));

    /* The coordinate, by rank 0 alone. */
    TRY(ncmpi_begin_indep_data(nc));
    if (rank == 0) {
        double xs[nx];
        for (int i = 0; i < nx; i++) xs[i] = xcoord(i);
        MPI_Offset s = 0, c = nx;
        TRY(ncmpi_put_vara_double(nc, vx, &s, &c, xs));
    }
    TRY(ncmpi_end_indep_data(nc));

    /* temperature: a 3-D block each, one collective put. */
    int tsizes[3] = {nz, ny, nx};
    MPI_Offset ts[3], tc[3];
    block(3, tsizes, ts, tc);
    double *t = malloc(sizeof(double) * (size_t)(tc[0] * tc[1] * tc[2] + 1));
    long long n = 0;
    for (int z = 0; z < tc[0]; z++)
        for (int y = 0; y < tc[1]; y++)
            for (int x = 0; x < tc[2]; x++) t[n++] = temperature((int)ts[0] + z, (int)ts[1] + y, (int)ts[2] + x);
    IOTIMED(TRY(ncmpi_put_vara_double_all(nc, vt, ts, tc, t)));
    free(t);

    /* pressure: a 2-D block of every record, nonblocking, then one collective wait. */
    int psizes[2] = {ny, nx};
    MPI_Offset ps[3], pc[3];
    block(2, psizes, ps + 1, pc + 1);
    long long per = pc[1] * pc[2];
    int *p = malloc(sizeof(int) * (size_t)(records * per + 1));
    int reqs[records], sts[records];
    for (int r = 0; r < records; r++) {
        for (int y = 0; y < pc[1]; y++)
            for (int x = 0; x < pc[2]; x++) p[r * per + y * pc[2] + x] = pressure(r, (int)ps[1] + y, (int)ps[2] + x);
        ps[0] = r;
        pc[0] = 1;
        TRY(ncmpi_iput_vara_int(nc, vp, ps, pc, p + r * per, &reqs[r]));
    }
    IOTIMED(TRY(ncmpi_wait_all(nc, records, reqs, sts)));
    for (int r = 0; r < records; r++) TRY(sts[r]);
    free(p);
    IOTIMED(TRY(ncmpi_close(nc)));
    iotime_report("write");
}

static void wrong(const char *var, const char *index, double got, double want) {
    if (bad < 5) fprintf(stderr, "pnetcdf_var: rank %d: %s%s is %.17g, expected %.17g\n", rank, var, index, got, want);
    bad++;
}

static void check_text_att(int nc, int var, const char *name, const char *want) {
    char buf[256] = {0};
    MPI_Offset len = 0;
    TRY(ncmpi_inq_attlen(nc, var, name, &len));
    if (len < (MPI_Offset)sizeof buf) TRY(ncmpi_get_att_text(nc, var, name, buf));
    if (strcmp(buf, want) != 0) {
        fprintf(stderr, "pnetcdf_var: rank %d: attribute %s is \"%s\", expected \"%s\"\n", rank, name, buf, want);
        bad++;
    }
}

static void check_file(const char *path) {
    int nc, vx, vt, vp, dt;
    TRY(ncmpi_open(MPI_COMM_WORLD, path, NC_NOWRITE, MPI_INFO_NULL, &nc));
    TRY(ncmpi_inq_dimid(nc, "time", &dt));
    MPI_Offset nrec;
    TRY(ncmpi_inq_dimlen(nc, dt, &nrec));
    if (nrec != records) wrong("time", " (records)", (double)nrec, records);
    check_text_att(nc, NC_GLOBAL, "title", title);
    check_text_att(nc, NC_GLOBAL, "Conventions", "CF-1.8");
    int step = 0;
    double spacing = 0;
    TRY(ncmpi_get_att_int(nc, NC_GLOBAL, "model_step", &step));
    TRY(ncmpi_get_att_double(nc, NC_GLOBAL, "grid_spacing", &spacing));
    if (step != MODEL_STEP) wrong("model_step", "", step, MODEL_STEP);
    if (spacing != GRID_SPACING) wrong("grid_spacing", "", spacing, GRID_SPACING);
    TRY(ncmpi_inq_varid(nc, "x", &vx));
    TRY(ncmpi_inq_varid(nc, "temperature", &vt));
    TRY(ncmpi_inq_varid(nc, "pressure", &vp));
    check_text_att(nc, vt, "units", "K");
    check_text_att(nc, vt, "long_name", "sea water potential");
    check_text_att(nc, vp, "units", "Pa");
    check_text_att(nc, vx, "units", "m");

    double xs[nx];
    MPI_Offset s0 = 0, cx = nx;
    TRY(ncmpi_get_vara_double_all(nc, vx, &s0, &cx, xs));
    char idx[96];
    for (int i = 0; i < nx; i++)
        if (xs[i] != xcoord(i)) {
            snprintf(idx, sizeof idx, "[%d]", i);
            wrong("x", idx, xs[i], xcoord(i));
        }

    int tsizes[3] = {nz, ny, nx};
    MPI_Offset ts[3], tc[3];
    block(3, tsizes, ts, tc);
    double *t = malloc(sizeof(double) * (size_t)(tc[0] * tc[1] * tc[2] + 1));
    TRY(ncmpi_get_vara_double_all(nc, vt, ts, tc, t));
    long long n = 0;
    for (int z = 0; z < tc[0]; z++)
        for (int y = 0; y < tc[1]; y++)
            for (int x = 0; x < tc[2]; x++, n++) {
                double want = temperature((int)ts[0] + z, (int)ts[1] + y, (int)ts[2] + x);
                if (t[n] != want) {
                    snprintf(idx, sizeof idx, "[%d][%d][%d]", (int)ts[0] + z, (int)ts[1] + y, (int)ts[2] + x);
                    wrong("temperature", idx, t[n], want);
                }
            }
    free(t);

    int psizes[2] = {ny, nx};
    MPI_Offset ps[3], pc[3];
    block(2, psizes, ps + 1, pc + 1);
    ps[0] = 0;
    pc[0] = records;
    int *p = malloc(sizeof(int) * (size_t)(records * pc[1] * pc[2] + 1));
    TRY(ncmpi_get_vara_int_all(nc, vp, ps, pc, p));
    n = 0;
    for (int r = 0; r < records; r++)
        for (int y = 0; y < pc[1]; y++)
            for (int x = 0; x < pc[2]; x++, n++) {
                int want = pressure(r, (int)ps[1] + y, (int)ps[2] + x);
                if (p[n] != want) {
                    snprintf(idx, sizeof idx, "[%d][%d][%d]", r, (int)ps[1] + y, (int)ps[2] + x);
                    wrong("pressure", idx, p[n], want);
                }
            }
    free(p);
    TRY(ncmpi_close(nc));
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if ((argc != 3 && argc != 7) || (strcmp(argv[2], "write") != 0 && strcmp(argv[2], "check") != 0)) {
        if (rank == 0) fprintf(stderr, "usage: %s PATH write|check [NX NY NZ RECORDS]\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    if (argc == 7) {
        nx = atoi(argv[3]);
        ny = atoi(argv[4]);
        nz = atoi(argv[5]);
        records = atoi(argv[6]);
        if (nx < 1 || ny < 1 || nz < 1 || records < 1 || nx > 4096) {
            if (rank == 0) fprintf(stderr, "%s: NX (1 to 4096), NY, NZ and RECORDS must be positive\n", argv[0]);
            MPI_Finalize();
            return 2;
        }
    }
    int writing = strcmp(argv[2], "write") == 0;
    if (writing)
        write_file(argv[1]);
    else
        check_file(argv[1]);
    long long allbad = 0;
    MPI_Allreduce(&bad, &allbad, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        if (allbad == 0)
            printf("PNETCDF OK %s %s: temperature %dx%dx%d, pressure %d records of %dx%d, %d ranks\n", writing ? "wrote" : "checked",
                   argv[1], nz, ny, nx, records, ny, nx, np);
        else
            printf("PNETCDF FAILED %lld wrong values\n", allbad);
    }
    MPI_Finalize();
    return allbad == 0 ? 0 : 1;
}
