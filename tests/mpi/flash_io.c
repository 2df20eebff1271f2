/* FLASH-IO in shape (the I/O kernel of the FLASH astrophysics code, its HDF5 checkpoint and plot
 * files) with parallel HDF5 over MPI-IO. Every rank owns a few AMR blocks of NXB x NYB x NZB
 * zones (an unequal number per rank, as after FLASH's load balancing), kept in memory with
 * NGUARD guard zones on every side, and the global block numbers run on from rank to rank.
 *
 *   BASE_hdf5_chk_0000   the checkpoint: file attributes; "unknown names" (written by rank 0
 *                        alone); the per-block "refine level", "node type", "coordinates",
 *                        "block size" and "bounding box"; and NVAR double variables, each a
 *                        dataset [blocks][NZB][NYB][NXB] with "minimum" and "maximum"
 *                        attributes. Every rank selects its blocks in the file (a hyperslab of
 *                        the block dimension) and their interiors in its guard-celled memory (a
 *                        hyperslab that skips the guard zones), and writes COLLECTIVELY
 *                        (H5FD_MPIO_COLLECTIVE), metadata included (H5Pset_coll_metadata_write).
 *   BASE_hdf5_plt_cnt_0000  the plot file: the same attributes and NPLOT variables stored as
 *                        32-bit floats (HDF5 converts from the doubles in memory), written
 *                        INDEPENDENTLY (H5FD_MPIO_INDEPENDENT), each rank its own hyperslab.
 *
 * The value of a zone is a function of the variable and the zone's global index only (the block's
 * global number and the zone in it), so files are checked for every value whatever the number of
 * ranks that wrote or read them; guard zones hold a poison value that must never reach a file.
 * Dataset modification times are off (H5Pset_obj_track_times), so two runs with the same number
 * of ranks write the same bytes.
 *
 * usage: flash_io DIR write|check BASE [BLOCKS]
 *   write   create both files under DIR; rank r owns BLOCKS + (7r mod 4) blocks (default BLOCKS 5;
 *           FLASH-IO's own runs have about 80 a rank); with PLFS_IO_TIMES set, rank 0 prints
 *           the time of each file's create, writes and close (iotime.h): IOTIME write_chk/write_plt
 *   check   read both files back (collectively the checkpoint, independently the plot file),
 *           the blocks split evenly over this run's ranks, and check every attribute and value
 * Exit status 0 and "FLASHIO OK ..." on rank 0 when all is right; otherwise a message naming the
 * file, the variable and the index of the first wrong value, and exit status 1. */
#include <hdf5.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iotime.h"
#include "mix64.h"

#define NXB 8
#define NYB 8
#define NZB 8
#define NGUARD 4
#define GX (NXB + 2 * NGUARD)
#define GY (NYB + 2 * NGUARD)
#define GZ (NZB + 2 * NGUARD)
#define ZONES (NXB * NYB * NZB)
#define NVAR 6
#define NPLOT 2
#define POISON -7.5e300

static const char *unk_names[NVAR] = {"dens", "velx", "vely", "velz", "pres", "temp"};
static const int plot_vars[NPLOT] = {0, 5}; /* dens, temp */
static const char *run_comment = "FLASH-IO shape: plfs tests/mpi/flash_io.c";
#define FILE_FORMAT_VERSION 8
#define NSTEPS 42
#define SIM_TIME 0.125

static int rank, np;

#define TRY(call)                                                                        \
    do {                                                                                     \
        if ((call) < 0) {                                                                    \
            fprintf(stderr, "flash_io: rank %d: %s failed (%s:%d)\n", rank, #call, __FILE__, __LINE__); \
            MPI_Abort(MPI_COMM_WORLD, 2);                                                    \
        }                                                                                    \
    } while (0)

/* Zone (z, y, x) of global block b of variable v: an exact double (a 52-bit integer over 2^20)
 * of a hash. */
static double zone_value(int v, long long b, int z, int y, int x) {
    uint64_t h = ((((uint64_t)v * 1000003u + (uint64_t)b) * 1000033u + (uint64_t)z) * 1000037u + (uint64_t)y) * 1000039u + (uint64_t)x;
    h = mix64(h);
    return (double)(h & ((1ULL << 52) - 1)) / 1048576.0 - 2.0e9;
}

static int refine_level(long long b) { return 1 + (int)(b % 4); }
static int node_type(long long b) { return b % 3 == 0 ? 2 : 1; }
static double coordinate(long long b, int d) { return (double)((b >> (2 * d)) % 4) + 0.5 + 0.0625 * d; }
static double block_size(long long b, int d) { return 1.0 / (double)(1 << (refine_level(b) - 1)) + 0.25 * d; }
static double bounding_box(long long b, int d, int side) { return coordinate(b, d) + (side ? 0.5 : -0.5) * block_size(b, d); }

static const char *base_dir, *base_name;
static char chk_path[4096], plt_path[4096];

/* The blocks of this rank: [first, first + count) of total. */
static long long first, count, total;

static hid_t open_fapl(int coll_metadata) {
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    TRY(H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL));
    if (coll_metadata) {
        TRY(H5Pset_coll_metadata_write(fapl, 1));
        TRY(H5Pset_all_coll_metadata_ops(fapl, 1));
    }
    return fapl;
}

static void write_attr(hid_t loc, const char *name, hid_t type, const void *value) {
    hid_t space = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(loc, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
    TRY(a);
    TRY(H5Awrite(a, type, value));
    H5Aclose(a);
    H5Sclose(space);
}

static void write_file_attrs(hid_t f) {
    int version = FILE_FORMAT_VERSION, nsteps = NSTEPS, tot = (int)total;
    double time = SIM_TIME;
    write_attr(f, "file format version", H5T_NATIVE_INT, &version);
    write_attr(f, "total blocks", H5T_NATIVE_INT, &tot);
    write_attr(f, "nsteps", H5T_NATIVE_INT, &nsteps);
    write_attr(f, "time", H5T_NATIVE_DOUBLE, &time);
    hid_t str = H5Tcopy(H5T_C_S1);
    H5Tset_size(str, strlen(run_comment) + 1);
    write_attr(f, "run comment", str, run_comment);
    H5Tclose(str);
}

/* "unknown names": n 4-character strings, created by all, written by rank 0 alone. */
static void write_names(hid_t f, int n, const int *vars, hid_t dcpl) {
    hid_t str = H5Tcopy(H5T_C_S1);
    H5Tset_size(str, 4);
    H5Tset_strpad(str, H5T_STR_NULLPAD);
    hsize_t dims[2] = {(hsize_t)n, 1};
    hid_t space = H5Screate_simple(2, dims, NULL);
    hid_t d = H5Dcreate2(f, "unknown names", str, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    TRY(d);
    if (rank == 0) {
        char buf[NVAR][4];
        for (int i = 0; i < n; i++) memcpy(buf[i], unk_names[vars ? vars[i] : i], 4);
        TRY(H5Dwrite(d, str, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf));
    }
    H5Dclose(d);
    H5Sclose(space);
    H5Tclose(str);
}

/* The file and memory dataspaces of this rank's blocks of a [total][rest...] dataset. */
static hid_t block_file_space(int rank_n, const hsize_t *rest, hid_t *filespace) {
    hsize_t dims[5], start[5] = {0}, cnt[5];
    dims[0] = (hsize_t)total;
    cnt[0] = (hsize_t)count;
    start[0] = (hsize_t)first;
    for (int i = 1; i < rank_n; i++) dims[i] = cnt[i] = rest[i - 1];
    *filespace = H5Screate_simple(rank_n, dims, NULL);
    if (count > 0)
        TRY(H5Sselect_hyperslab(*filespace, H5S_SELECT_SET, start, NULL, cnt, NULL));
    else
        TRY(H5Sselect_none(*filespace));
    hsize_t mdims[5];
    mdims[0] = (hsize_t)(count > 0 ? count : 1);
    for (int i = 1; i < rank_n; i++) mdims[i] = rest[i - 1];
    hid_t mem = H5Screate_simple(rank_n, mdims, NULL);
    if (count == 0) TRY(H5Sselect_none(mem));
    return mem;
}

/* A per-block dataset [total][rest...] of `type`, from `buf` (count blocks), collectively. */
static void write_block_dataset(hid_t f, const char *name, hid_t type, hid_t memtype, int rank_n, const hsize_t *rest, const void *buf,
                                hid_t dcpl, hid_t dxpl) {
    hid_t filespace, mem = block_file_space(rank_n, rest, &filespace);
    hid_t d = H5Dcreate2(f, name, type, filespace, H5P_DEFAULT, dcpl, H5P_DEFAULT); /* its extent, not its selection */
    TRY(d);
    TRY(H5Dwrite(d, memtype, mem, filespace, dxpl, buf));
    H5Dclose(d);
    H5Sclose(mem);
    H5Sclose(filespace);
}

/* The guard-celled memory of one variable for this rank's blocks: [count][GZ][GY][GX]. */
static double *fill_unk(int v) {
    double *u = malloc(sizeof(double) * (size_t)(count > 0 ? count : 1) * GZ * GY * GX);
    for (long long i = 0; i < (count > 0 ? count : 1) * GZ * GY * GX; i++) u[i] = POISON;
    for (long long lb = 0; lb < count; lb++)
        for (int z = 0; z < NZB; z++)
            for (int y = 0; y < NYB; y++)
                for (int x = 0; x < NXB; x++)
                    u[((lb * GZ + z + NGUARD) * GY + y + NGUARD) * GX + x + NGUARD] = zone_value(v, first + lb, z, y, x);
    return u;
}

/* A variable [total][NZB][NYB][NXB] stored as `filetype` from the interiors of the guard-celled
 * doubles u, with the attributes "minimum" and "maximum" (over all ranks' zones). */
static void write_variable(hid_t f, const char *name, hid_t filetype, const double *u, hid_t dcpl, hid_t dxpl) {
    hsize_t dims[4] = {(hsize_t)total, NZB, NYB, NXB};
    hid_t all = H5Screate_simple(4, dims, NULL);
    hid_t filespace = H5Screate_simple(4, dims, NULL);
    hsize_t mdims[4] = {(hsize_t)(count > 0 ? count : 1), GZ, GY, GX};
    hid_t mem = H5Screate_simple(4, mdims, NULL);
    if (count > 0) {
        hsize_t fstart[4] = {(hsize_t)first, 0, 0, 0}, cnt[4] = {(hsize_t)count, NZB, NYB, NXB};
        hsize_t mstart[4] = {0, NGUARD, NGUARD, NGUARD};
        TRY(H5Sselect_hyperslab(filespace, H5S_SELECT_SET, fstart, NULL, cnt, NULL));
        TRY(H5Sselect_hyperslab(mem, H5S_SELECT_SET, mstart, NULL, cnt, NULL));
    } else {
        TRY(H5Sselect_none(filespace));
        TRY(H5Sselect_none(mem));
    }
    hid_t d = H5Dcreate2(f, name, filetype, all, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    TRY(d);
    TRY(H5Dwrite(d, H5T_NATIVE_DOUBLE, mem, filespace, dxpl, u));
    double lo = 1e300, hi = -1e300;
    for (long long lb = 0; lb < count; lb++)
        for (int z = 0; z < NZB; z++)
            for (int y = 0; y < NYB; y++)
                for (int x = 0; x < NXB; x++) {
                    double val = u[((lb * GZ + z + NGUARD) * GY + y + NGUARD) * GX + x + NGUARD];
                    if (filetype == H5T_IEEE_F32LE) val = (float)val;
                    if (val < lo) lo = val;
                    if (val > hi) hi = val;
                }
    double gmin, gmax;
    MPI_Allreduce(&lo, &gmin, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&hi, &gmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    write_attr(d, "minimum", H5T_NATIVE_DOUBLE, &gmin);
    write_attr(d, "maximum", H5T_NATIVE_DOUBLE, &gmax);
    H5Dclose(d);
    H5Sclose(mem);
    H5Sclose(filespace);
    H5Sclose(all);
}

static void write_files(void) {
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    TRY(H5Pset_obj_track_times(dcpl, 0));
    hid_t coll = H5Pcreate(H5P_DATASET_XFER), indep = H5Pcreate(H5P_DATASET_XFER);
    TRY(H5Pset_dxpl_mpio(coll, H5FD_MPIO_COLLECTIVE));
    TRY(H5Pset_dxpl_mpio(indep, H5FD_MPIO_INDEPENDENT));

    /* Every variable's values first: the timed part is the library's and the file system's. */
    double *unk[NVAR];
    for (int v = 0; v < NVAR; v++) unk[v] = fill_unk(v);

    /* The checkpoint, collectively. */
    hid_t fapl = open_fapl(1);
    hid_t f;
    IOTIMED(f = H5Fcreate(chk_path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl));
    TRY(f);
    IOTIMED(write_file_attrs(f); write_names(f, NVAR, NULL, dcpl));
    long long n = count > 0 ? count : 1;
    int *lref = malloc(sizeof(int) * (size_t)n), *ntype = malloc(sizeof(int) * (size_t)n);
    double *coord = malloc(sizeof(double) * (size_t)n * 3), *bsize = malloc(sizeof(double) * (size_t)n * 3);
    double *bbox = malloc(sizeof(double) * (size_t)n * 6);
    for (long long lb = 0; lb < count; lb++) {
        lref[lb] = refine_level(first + lb);
        ntype[lb] = node_type(first + lb);
        for (int d = 0; d < 3; d++) {
            coord[lb * 3 + d] = coordinate(first + lb, d);
            bsize[lb * 3 + d] = block_size(first + lb, d);
            bbox[(lb * 3 + d) * 2] = bounding_box(first + lb, d, 0);
            bbox[(lb * 3 + d) * 2 + 1] = bounding_box(first + lb, d, 1);
        }
    }
    hsize_t none[1] = {0}, three[1] = {3}, three_two[2] = {3, 2};
    IOTIMED({
        write_block_dataset(f, "refine level", H5T_STD_I32LE, H5T_NATIVE_INT, 1, none, lref, dcpl, coll);
        write_block_dataset(f, "node type", H5T_STD_I32LE, H5T_NATIVE_INT, 1, none, ntype, dcpl, coll);
        write_block_dataset(f, "coordinates", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 2, three, coord, dcpl, coll);
        write_block_dataset(f, "block size", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 2, three, bsize, dcpl, coll);
        write_block_dataset(f, "bounding box", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 3, three_two, bbox, dcpl, coll);
        for (int v = 0; v < NVAR; v++) write_variable(f, unk_names[v], H5T_IEEE_F64LE, unk[v], dcpl, coll);
    });
    IOTIMED(TRY(H5Fclose(f)));
    H5Pclose(fapl);
    iotime_report("write_chk");

    /* The plot file: floats, independently. */
    fapl = open_fapl(0);
    IOTIMED(f = H5Fcreate(plt_path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl));
    TRY(f);
    IOTIMED({
        write_file_attrs(f);
        write_names(f, NPLOT, plot_vars, dcpl);
        write_block_dataset(f, "refine level", H5T_STD_I32LE, H5T_NATIVE_INT, 1, none, lref, dcpl, indep);
        for (int p = 0; p < NPLOT; p++) write_variable(f, unk_names[plot_vars[p]], H5T_IEEE_F32LE, unk[plot_vars[p]], dcpl, indep);
    });
    IOTIMED(TRY(H5Fclose(f)));
    H5Pclose(fapl);
    iotime_report("write_plt");
    for (int v = 0; v < NVAR; v++) free(unk[v]);
    free(lref);
    free(ntype);
    free(coord);
    free(bsize);
    free(bbox);
    H5Pclose(dcpl);
    H5Pclose(coll);
    H5Pclose(indep);
}

static long long bad;

static void report(const char *file, const char *what, long long b, long long i, double got, double want) {
    if (bad < 5)
        fprintf(stderr, "flash_io: rank %d: %s: \"%s\" block %lld index %lld is %.17g, expected %.17g\n", rank, file, what, b, i, got,
                want);
    bad++;
}

static void check_attr(hid_t loc, const char *file, const char *name, hid_t memtype, double want) {
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
    TRY(a);
    double got = 0;
    if (memtype == H5T_NATIVE_INT) {
        int i = 0;
        TRY(H5Aread(a, H5T_NATIVE_INT, &i));
        got = i;
    } else {
        TRY(H5Aread(a, H5T_NATIVE_DOUBLE, &got));
    }
    if (got != want) report(file, name, -1, -1, got, want);
    H5Aclose(a);
}

static void check_file_attrs(hid_t f, const char *file) {
    check_attr(f, file, "file format version", H5T_NATIVE_INT, FILE_FORMAT_VERSION);
    check_attr(f, file, "total blocks", H5T_NATIVE_INT, (double)total);
    check_attr(f, file, "nsteps", H5T_NATIVE_INT, NSTEPS);
    check_attr(f, file, "time", H5T_NATIVE_DOUBLE, SIM_TIME);
    hid_t a = H5Aopen(f, "run comment", H5P_DEFAULT);
    TRY(a);
    hid_t t = H5Aget_type(a);
    char buf[256] = {0};
    if (H5Tget_size(t) < sizeof buf) TRY(H5Aread(a, t, buf));
    if (strcmp(buf, run_comment) != 0) {
        fprintf(stderr, "flash_io: rank %d: %s: \"run comment\" is \"%s\"\n", rank, file, buf);
        bad++;
    }
    H5Tclose(t);
    H5Aclose(a);
}

static void check_names(hid_t f, const char *file, int n, const int *vars) {
    hid_t d = H5Dopen2(f, "unknown names", H5P_DEFAULT);
    TRY(d);
    hid_t str = H5Tcopy(H5T_C_S1);
    H5Tset_size(str, 4);
    H5Tset_strpad(str, H5T_STR_NULLPAD);
    char buf[NVAR][4];
    TRY(H5Dread(d, str, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf));
    for (int i = 0; i < n; i++)
        if (memcmp(buf[i], unk_names[vars ? vars[i] : i], 4) != 0) {
            fprintf(stderr, "flash_io: rank %d: %s: \"unknown names\" %d is \"%.4s\", expected \"%s\"\n", rank, file, i, buf[i],
                    unk_names[vars ? vars[i] : i]);
            bad++;
        }
    H5Tclose(str);
    H5Dclose(d);
}

/* Reads this rank's blocks of dataset `name` (per block `per` values) as doubles. */
static double *read_blocks(hid_t f, const char *name, int rank_n, const hsize_t *rest, long long per, hid_t dxpl) {
    double *buf = malloc(sizeof(double) * (size_t)((count > 0 ? count : 1) * per));
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    TRY(d);
    hid_t space = H5Dget_space(d);
    hsize_t dims[5];
    if (H5Sget_simple_extent_ndims(space) != rank_n || (H5Sget_simple_extent_dims(space, dims, NULL), dims[0] != (hsize_t)total)) {
        fprintf(stderr, "flash_io: rank %d: \"%s\" has the wrong shape\n", rank, name);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    H5Sclose(space);
    hid_t filespace, mem = block_file_space(rank_n, rest, &filespace);
    TRY(H5Dread(d, H5T_NATIVE_DOUBLE, mem, filespace, dxpl, buf));
    H5Sclose(mem);
    H5Sclose(filespace);
    H5Dclose(d);
    return buf;
}

static void check_variable(hid_t f, const char *file, int v, int as_float, hid_t dxpl) {
    hsize_t rest[3] = {NZB, NYB, NXB};
    double *u = read_blocks(f, unk_names[v], 4, rest, ZONES, dxpl);
    double lo = 1e300, hi = -1e300;
    for (long long lb = 0; lb < count; lb++)
        for (int z = 0; z < NZB; z++)
            for (int y = 0; y < NYB; y++)
                for (int x = 0; x < NXB; x++) {
                    double want = zone_value(v, first + lb, z, y, x);
                    if (as_float) want = (float)want;
                    long long i = (lb * NZB + z) * NYB * NXB + y * NXB + x;
                    if (u[i] != want) report(file, unk_names[v], first + lb, i - lb * ZONES, u[i], want);
                    if (want < lo) lo = want;
                    if (want > hi) hi = want;
                }
    free(u);
    double gmin, gmax;
    MPI_Allreduce(&lo, &gmin, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&hi, &gmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    hid_t d = H5Dopen2(f, unk_names[v], H5P_DEFAULT);
    TRY(d);
    check_attr(d, file, "minimum", H5T_NATIVE_DOUBLE, gmin);
    check_attr(d, file, "maximum", H5T_NATIVE_DOUBLE, gmax);
    H5Dclose(d);
}

static void check_files(void) {
    hid_t coll = H5Pcreate(H5P_DATASET_XFER), indep = H5Pcreate(H5P_DATASET_XFER);
    TRY(H5Pset_dxpl_mpio(coll, H5FD_MPIO_COLLECTIVE));
    TRY(H5Pset_dxpl_mpio(indep, H5FD_MPIO_INDEPENDENT));
    hid_t fapl = open_fapl(1);
    hid_t f = H5Fopen(chk_path, H5F_ACC_RDONLY, fapl);
    TRY(f);
    hid_t a = H5Aopen(f, "total blocks", H5P_DEFAULT);
    TRY(a);
    int tot = 0;
    TRY(H5Aread(a, H5T_NATIVE_INT, &tot));
    H5Aclose(a);
    total = tot;
    count = total / np + (rank < total % np ? 1 : 0);
    first = rank * (total / np) + (rank < total % np ? rank : total % np);

    check_file_attrs(f, "checkpoint");
    check_names(f, "checkpoint", NVAR, NULL);
    hsize_t none[1] = {0}, three[1] = {3}, three_two[2] = {3, 2};
    double *lref = read_blocks(f, "refine level", 1, none, 1, coll);
    double *ntype = read_blocks(f, "node type", 1, none, 1, coll);
    double *coord = read_blocks(f, "coordinates", 2, three, 3, coll);
    double *bsize = read_blocks(f, "block size", 2, three, 3, coll);
    double *bbox = read_blocks(f, "bounding box", 3, three_two, 6, coll);
    for (long long lb = 0; lb < count; lb++) {
        long long b = first + lb;
        if (lref[lb] != refine_level(b)) report("checkpoint", "refine level", b, 0, lref[lb], refine_level(b));
        if (ntype[lb] != node_type(b)) report("checkpoint", "node type", b, 0, ntype[lb], node_type(b));
        for (int d = 0; d < 3; d++) {
            if (coord[lb * 3 + d] != coordinate(b, d)) report("checkpoint", "coordinates", b, d, coord[lb * 3 + d], coordinate(b, d));
            if (bsize[lb * 3 + d] != block_size(b, d)) report("checkpoint", "block size", b, d, bsize[lb * 3 + d], block_size(b, d));
            for (int s = 0; s < 2; s++)
                if (bbox[(lb * 3 + d) * 2 + s] != bounding_box(b, d, s))
                    report("checkpoint", "bounding box", b, d * 2 + s, bbox[(lb * 3 + d) * 2 + s], bounding_box(b, d, s));
        }
    }
    free(lref);
    free(ntype);
    free(coord);
    free(bsize);
    free(bbox);
    for (int v = 0; v < NVAR; v++) check_variable(f, "checkpoint", v, 0, coll);
    TRY(H5Fclose(f));
    H5Pclose(fapl);

    fapl = open_fapl(0);
    f = H5Fopen(plt_path, H5F_ACC_RDONLY, fapl);
    TRY(f);
    check_file_attrs(f, "plot file");
    check_names(f, "plot file", NPLOT, plot_vars);
    lref = read_blocks(f, "refine level", 1, none, 1, indep);
    for (long long lb = 0; lb < count; lb++)
        if (lref[lb] != refine_level(first + lb)) report("plot file", "refine level", first + lb, 0, lref[lb], refine_level(first + lb));
    free(lref);
    for (int p = 0; p < NPLOT; p++) check_variable(f, "plot file", plot_vars[p], 1, indep);
    TRY(H5Fclose(f));
    H5Pclose(fapl);
    H5Pclose(coll);
    H5Pclose(indep);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if ((argc != 4 && argc != 5) || (strcmp(argv[2], "write") != 0 && strcmp(argv[2], "check") != 0) ||
        (argc == 5 && atoi(argv[4]) < 1)) {
        if (rank == 0) fprintf(stderr, "usage: %s DIR write|check BASE [BLOCKS]\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    base_dir = argv[1];
    base_name = argv[3];
    snprintf(chk_path, sizeof chk_path, "%s/%s_hdf5_chk_0000", base_dir, base_name);
    snprintf(plt_path, sizeof plt_path, "%s/%s_hdf5_plt_cnt_0000", base_dir, base_name);
    int writing = strcmp(argv[2], "write") == 0;
    if (writing) {
        count = (argc == 5 ? atoi(argv[4]) : 5) + (7 * rank) % 4;
        MPI_Exscan(&count, &first, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
        if (rank == 0) first = 0;
        MPI_Allreduce(&count, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
        write_files();
    } else {
        check_files();
    }
    long long allbad = 0;
    MPI_Allreduce(&bad, &allbad, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        if (allbad == 0)
            printf("FLASHIO OK %s %lld blocks of %dx%dx%d zones, %d variables, %d plot variables, %d ranks\n",
                   writing ? "wrote" : "checked", total, NXB, NYB, NZB, NVAR, NPLOT, np);
        else
            printf("FLASHIO FAILED %lld wrong values\n", allbad);
    }
    MPI_Finalize();
    return allbad == 0 ? 0 : 1;
}
