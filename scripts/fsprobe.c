/* fsprobe: what a backend file system supports of the system calls plfs relies on.
 *
 *   cc -O2 -Wall -o fsprobe scripts/fsprobe.c -lpthread
 *   fsprobe DIR [DIR2]
 *
 * DIR is a directory on the file system to probe. DIR2, when given, is the same directory seen
 * through a second client mount of the same volume (e.g. $PLFS_GLUSTER_MOUNT and
 * $PLFS_GLUSTER_MOUNT2); cross-client facts (visibility, locks, races between clients) are then
 * measured between the two mounts, and otherwise between two processes on DIR. The probe works in
 * a fresh subdirectory fsprobe.PID of DIR and deletes it at the end.
 *
 * Output: one line per fact, "name<TAB>value<TAB>detail", value being "ok", an errno name, or a
 * number; then the median latencies of metadata operations. Exit 0 unless the probe itself could
 * not run (e.g. DIR missing). Results are facts to read, not pass/fail.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

/* main() bounds both to 1024 bytes, so the 4096-byte path buffers below cannot truncate. */
#pragma GCC diagnostic ignored "-Wformat-truncation"

static char A[4096], B[4096]; /* the work directory via mount A and via mount B */
static int two_mounts;

static void report(const char *name, const char *value, const char *fmt, ...)
{
    char detail[512] = "";
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(detail, sizeof detail, fmt, ap);
        va_end(ap);
    }
    printf("%-34s\t%s\t%s\n", name, value, detail);
    fflush(stdout);
}

static const char *ename(int e)
{
    static char buf[32];
    if (e == 0)
        return "ok";
    const char *n = strerrorname_np(e);
    if (n)
        return n;
    snprintf(buf, sizeof buf, "errno%d", e);
    return buf;
}

static void pa(char *out, const char *name) { snprintf(out, 4096, "%s/%s", A, name); }
static void pb(char *out, const char *name) { snprintf(out, 4096, "%s/%s", B, name); }

static int mkfile(const char *path, const char *content)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return errno;
    if (content && write(fd, content, strlen(content)) != (ssize_t)strlen(content)) {
        int e = errno;
        close(fd);
        return e;
    }
    close(fd);
    return 0;
}

static int readfile(const char *path, char *buf, size_t n)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -errno;
    ssize_t r = read(fd, buf, n - 1);
    close(fd);
    if (r < 0)
        return -errno;
    buf[r] = 0;
    return (int)r;
}

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static void sleep_ms(int ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

static int rm_rf(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return 0;
    if (!S_ISDIR(st.st_mode))
        return unlink(path);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    struct dirent *e;
    char sub[4096];
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
        rm_rf(sub);
    }
    closedir(d);
    return rmdir(path);
}

/* ---- renameat2, O_TMPFILE, links ---- */

static void probe_renameat2(void)
{
    char a[4096], b[4096], c[4096], buf[64];
    pa(a, "rn.a"), pa(b, "rn.b"), pa(c, "rn.c");
    mkfile(a, "A"), mkfile(b, "B");
    int r = renameat2(AT_FDCWD, a, AT_FDCWD, c, RENAME_NOREPLACE);
    int e = r ? errno : 0;
    report("renameat2.noreplace.new_name", ename(e), "rename a->c (c absent) with RENAME_NOREPLACE");
    if (e == 0)
        rename(c, a);
    r = renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_NOREPLACE);
    e = r ? errno : 0;
    report("renameat2.noreplace.existing", ename(e), "expected EEXIST where supported");
    mkfile(a, "A"), mkfile(b, "B");
    r = renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE);
    e = r ? errno : 0;
    buf[0] = 0;
    if (e == 0)
        readfile(b, buf, sizeof buf);
    report("renameat2.exchange", ename(e), e == 0 ? "b now holds \"%s\" (expected A)" : "", buf);
    r = renameat2(AT_FDCWD, a, AT_FDCWD, c, RENAME_WHITEOUT);
    e = r ? errno : 0;
    report("renameat2.whiteout", ename(e), NULL);
    unlink(a), unlink(b), unlink(c);
}

static void probe_tmpfile(void)
{
    char t[4096], proc[64];
    int fd = open(A, O_TMPFILE | O_WRONLY, 0644);
    if (fd < 0) {
        report("o_tmpfile", ename(errno), NULL);
        return;
    }
    report("o_tmpfile", "ok", NULL);
    if (write(fd, "tmp", 3) != 3)
        report("o_tmpfile.write", ename(errno), NULL);
    pa(t, "tmpfile.linked");
    int r = linkat(fd, "", AT_FDCWD, t, AT_EMPTY_PATH);
    report("o_tmpfile.linkat_empty_path", ename(r ? errno : 0), "needs CAP_DAC_READ_SEARCH");
    unlink(t);
    close(fd);
    /* a second O_TMPFILE: an inode linked once is not linkable again after its unlink */
    fd = open(A, O_TMPFILE | O_WRONLY, 0644);
    if (fd < 0 || write(fd, "tmp", 3) != 3) {
        report("o_tmpfile.linkat_proc_fd", ename(errno), "second O_TMPFILE failed");
        if (fd >= 0)
            close(fd);
        return;
    }
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    r = linkat(AT_FDCWD, proc, AT_FDCWD, t, AT_SYMLINK_FOLLOW);
    int e = r ? errno : 0;
    char buf[16] = "";
    if (!e)
        readfile(t, buf, sizeof buf);
    report("o_tmpfile.linkat_proc_fd", ename(e), e ? "" : "content \"%s\"", buf);
    close(fd);
    unlink(t);
}

static void probe_links(void)
{
    char a[4096], l[4096], lb[4096];
    struct stat sa, sl, slb;
    pa(a, "hl.a"), pa(l, "hl.b"), pb(lb, "hl.b");
    mkfile(a, "x");
    int r = link(a, l);
    int e = r ? errno : 0;
    if (e) {
        report("link", ename(e), NULL);
        unlink(a);
        return;
    }
    stat(a, &sa), stat(l, &sl);
    report("link", "ok", "nlink %lu, same inode %s", (unsigned long)sa.st_nlink,
           sa.st_ino == sl.st_ino ? "yes" : "no");
    if (stat(lb, &slb) == 0)
        report("link.other_mount_nlink", slb.st_nlink == 2 ? "ok" : "stale", "nlink %lu via mount B",
               (unsigned long)slb.st_nlink);
    r = link(a, l);
    report("link.existing", ename(r ? errno : 0), "expected EEXIST");
    unlink(a), unlink(l);
    char s[4096];
    pa(s, "hl.sym");
    r = symlink("hl.target", s);
    report("symlink", ename(r ? errno : 0), NULL);
    unlink(s);
}

/* ---- readdir d_type ---- */

static void probe_dtype(void)
{
    char f[4096], d[4096], s[4096], dd[4096];
    pa(dd, "dt");
    mkdir(dd, 0755);
    snprintf(f, sizeof f, "%s/file", dd), snprintf(d, sizeof d, "%s/dir", dd),
        snprintf(s, sizeof s, "%s/sym", dd);
    mkfile(f, NULL), mkdir(d, 0755), symlink("file", s);
    DIR *dir = opendir(dd);
    struct dirent *e;
    int reg = -1, di = -1, ln = -1;
    while (dir && (e = readdir(dir))) {
        if (!strcmp(e->d_name, "file"))
            reg = e->d_type;
        else if (!strcmp(e->d_name, "dir"))
            di = e->d_type;
        else if (!strcmp(e->d_name, "sym"))
            ln = e->d_type;
    }
    if (dir)
        closedir(dir);
    int good = reg == DT_REG && di == DT_DIR && ln == DT_LNK;
    int unknown = reg == DT_UNKNOWN || di == DT_UNKNOWN || ln == DT_UNKNOWN;
    report("getdents.d_type", good ? "ok" : unknown ? "DT_UNKNOWN" : "wrong",
           "file=%d dir=%d symlink=%d (DT_REG=8 DT_DIR=4 DT_LNK=10 DT_UNKNOWN=0)", reg, di, ln);
    rm_rf(dd);
}

/* ---- fsync of a directory ---- */

static void probe_dirsync(void)
{
    int fd = open(A, O_RDONLY | O_DIRECTORY);
    int r = fsync(fd);
    report("fsync.directory", ename(r ? errno : 0), "fsync on an O_RDONLY|O_DIRECTORY fd");
    r = fdatasync(fd);
    report("fdatasync.directory", ename(r ? errno : 0), NULL);
    r = syncfs(fd);
    report("syncfs", ename(r ? errno : 0), NULL);
    close(fd);
    char f[4096];
    pa(f, "fsync.file");
    fd = open(f, O_WRONLY | O_CREAT, 0644);
    r = fsync(fd);
    report("fsync.file", ename(r ? errno : 0), NULL);
    close(fd);
    unlink(f);
}

/* ---- mtimes ---- */

static long long ts_ns(struct timespec t) { return t.tv_sec * 1000000000LL + t.tv_nsec; }

static void probe_mtime(void)
{
    char f[4096], fb[4096];
    pa(f, "mt.file"), pb(fb, "mt.file");
    int fd = open(f, O_RDWR | O_CREAT | O_TRUNC, 0644);
    struct stat st, sb;
    /* granularity: write repeatedly and look at the distinct mtimes */
    long long prev = -1, min_step = -1;
    int nonzero_ns = 0, distinct = 0, n = 200;
    for (int i = 0; i < n; i++) {
        if (pwrite(fd, "x", 1, i) != 1)
            break;
        fstat(fd, &st);
        long long t = ts_ns(st.st_mtim);
        if (st.st_mtim.tv_nsec % 1000)
            nonzero_ns++;
        if (prev >= 0 && t != prev) {
            distinct++;
            if (min_step < 0 || t - prev < min_step)
                min_step = t - prev;
        }
        prev = t;
        sleep_ms(1);
    }
    char v[64];
    snprintf(v, sizeof v, "%lld", min_step);
    report("mtime.min_step_ns", v, "%d distinct mtimes over %d writes 1 ms apart; %d with digits below 1 us",
           distinct + 1, n, nonzero_ns);
    /* futimens with a nanosecond value: kept exactly? */
    struct timespec ts[2] = {{1700000000, 123456789}, {1700000000, 987654321}};
    int r = futimens(fd, ts);
    fstat(fd, &st);
    struct stat sp;
    stat(f, &sp);
    snprintf(v, sizeof v, "%s", r ? ename(errno) : st.st_mtim.tv_nsec == 987654321 ? "exact" : "rounded");
    report("mtime.futimens_ns", v, "set .987654321, fstat %ld.%09ld, stat same mount %ld.%09ld",
           (long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec, (long)sp.st_mtim.tv_sec, sp.st_mtim.tv_nsec);
    /* seen by the other mount? and how late */
    double t0 = now_us();
    int seen = 0;
    while (now_us() - t0 < 5e6) {
        if (stat(fb, &sb) == 0 && sb.st_mtim.tv_sec == 1700000000 && sb.st_mtim.tv_nsec == st.st_mtim.tv_nsec) {
            seen = 1;
            break;
        }
        sleep_ms(1);
    }
    snprintf(v, sizeof v, "%s", seen ? (now_us() - t0 < 2000 ? "immediate" : "lagged") : "never");
    report("mtime.futimens.other_mount", v, "after %.0f ms", (now_us() - t0) / 1000);
    /* a write through the fd: stat via path on the same and the other mount, right away */
    sleep_ms(1100);
    stat(fb, &sb); /* prime B's cache with the old value */
    stat(f, &sp);
    if (pwrite(fd, "y", 1, 0) != 1)
        report("mtime.write", ename(errno), NULL);
    fstat(fd, &st);
    struct stat s1, s2;
    stat(f, &s1);
    stat(fb, &s2);
    report("mtime.write.same_mount", ts_ns(s1.st_mtim) == ts_ns(st.st_mtim) ? "immediate" : "stale",
           "fstat %ld.%09ld stat %ld.%09ld (before %ld.%09ld)", (long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
           (long)s1.st_mtim.tv_sec, s1.st_mtim.tv_nsec, (long)sp.st_mtim.tv_sec, sp.st_mtim.tv_nsec);
    t0 = now_us();
    seen = 0;
    while (now_us() - t0 < 5e6) {
        if (stat(fb, &s2) == 0 && ts_ns(s2.st_mtim) == ts_ns(st.st_mtim)) {
            seen = 1;
            break;
        }
        sleep_ms(1);
    }
    snprintf(v, sizeof v, "%s", seen ? (now_us() - t0 < 2000 ? "immediate" : "lagged") : "never");
    report("mtime.write.other_mount", v, "after %.0f ms (fd still open, no fsync)", (now_us() - t0) / 1000);
    close(fd);
    unlink(f);
}

/* ---- size visibility on the other mount ---- */

static void probe_size_visibility(void)
{
    char f[4096], fb[4096];
    pa(f, "sz.file"), pb(fb, "sz.file");
    int fd = open(f, O_RDWR | O_CREAT | O_TRUNC, 0644);
    struct stat sb;
    stat(fb, &sb);
    char buf[4096];
    memset(buf, 'z', sizeof buf);
    if (write(fd, buf, sizeof buf) != (ssize_t)sizeof buf)
        report("size.write", ename(errno), NULL);
    const char *steps[] = {"size.other_mount.after_write", "size.other_mount.after_fsync",
                           "size.other_mount.after_close"};
    for (int step = 0; step < 3; step++) {
        off_t want = 4096 * (step + 1);
        if (step > 0) {
            if (write(fd, buf, sizeof buf) != (ssize_t)sizeof buf)
                report("size.write", ename(errno), NULL);
        }
        if (step == 1)
            fsync(fd);
        if (step == 2)
            close(fd);
        double t0 = now_us();
        int seen = 0;
        while (now_us() - t0 < 5e6) {
            if (stat(fb, &sb) == 0 && sb.st_size == want) {
                seen = 1;
                break;
            }
            sleep_ms(1);
        }
        char v[32];
        snprintf(v, sizeof v, "%s", seen ? (now_us() - t0 < 2000 ? "immediate" : "lagged") : "never");
        report(steps[step], v, "size %lld seen after %.0f ms", (long long)want, (now_us() - t0) / 1000);
    }
    /* reading the other mount's bytes right after a write without fsync */
    fd = open(f, O_RDWR);
    if (pwrite(fd, "ABCD", 4, 0) != 4)
        report("data.write", ename(errno), NULL);
    int fdb = open(fb, O_RDONLY);
    char got[5] = "";
    ssize_t n = pread(fdb, got, 4, 0);
    report("data.other_mount.after_write", n == 4 && !memcmp(got, "ABCD", 4) ? "immediate" : "stale",
           "read \"%.4s\" (no fsync, writer fd open)", got);
    close(fdb);
    close(fd);
    unlink(f);
}

/* ---- openat2, O_NOFOLLOW ---- */

static void probe_openat2(void)
{
    char d[4096], f[4096], s[4096];
    pa(d, "o2"), mkdir(d, 0755);
    snprintf(f, sizeof f, "%s/file", d), mkfile(f, "x");
    snprintf(s, sizeof s, "%s/sym", d), symlink("file", s);
    int dfd = open(d, O_RDONLY | O_DIRECTORY);
    struct open_how how = {.flags = O_RDONLY, .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS};
    long fd = syscall(SYS_openat2, dfd, "file", &how, sizeof how);
    report("openat2.beneath_nosymlinks", ename(fd < 0 ? errno : 0), "plain name");
    if (fd >= 0)
        close(fd);
    fd = syscall(SYS_openat2, dfd, "sym", &how, sizeof how);
    report("openat2.symlink", ename(fd < 0 ? errno : 0), "expected ELOOP");
    if (fd >= 0)
        close(fd);
    fd = syscall(SYS_openat2, dfd, "../o2/file", &how, sizeof how);
    report("openat2.dotdot", ename(fd < 0 ? errno : 0), "expected EXDEV");
    if (fd >= 0)
        close(fd);
    fd = openat(dfd, "sym", O_RDONLY | O_NOFOLLOW);
    report("o_nofollow.symlink", ename(fd < 0 ? errno : 0), "expected ELOOP");
    if (fd >= 0)
        close(fd);
    fd = openat(dfd, "sym", O_PATH | O_NOFOLLOW);
    report("o_path_nofollow.symlink", ename(fd < 0 ? errno : 0), "expected ok (fd on the link)");
    if (fd >= 0)
        close(fd);
    close(dfd);
    rm_rf(d);
}

/* ---- rename, mkdir ---- */

static void probe_rename_mkdir(void)
{
    char a[4096], b[4096], d1[4096], d2[4096], x[4096], buf[16] = "";
    pa(a, "rr.a"), pa(b, "rr.b");
    mkfile(a, "new"), mkfile(b, "old");
    int r = rename(a, b);
    int e = r ? errno : 0;
    if (!e)
        readfile(b, buf, sizeof buf);
    report("rename.over_file", ename(e), e ? "" : "target holds \"%s\"", buf);
    unlink(b);
    pa(d1, "rr.d1"), pa(d2, "rr.d2");
    mkdir(d1, 0755), mkdir(d2, 0755);
    snprintf(x, sizeof x, "%s/x", d2), mkfile(x, "x");
    r = rename(d1, d2);
    report("rename.over_nonempty_dir", ename(r ? errno : 0), "expected ENOTEMPTY or EEXIST");
    r = rmdir(d2);
    report("rmdir.nonempty", ename(r ? errno : 0), "expected ENOTEMPTY");
    unlink(x);
    r = rename(d1, d2);
    report("rename.over_empty_dir", ename(r ? errno : 0), NULL);
    mkfile(a, "f");
    r = rename(a, d2);
    report("rename.file_over_dir", ename(r ? errno : 0), "expected EISDIR");
    unlink(a);
    r = mkdir(d2, 0755);
    report("mkdir.existing", ename(r ? errno : 0), "expected EEXIST");
    rmdir(d1), rmdir(d2);
}

/* ---- fallocate, xattrs ---- */

static void probe_fallocate_xattr(void)
{
    char f[4096], fb[4096];
    pa(f, "fa.file"), pb(fb, "fa.file");
    int fd = open(f, O_RDWR | O_CREAT | O_TRUNC, 0644);
    int r = fallocate(fd, 0, 0, 1 << 20);
    report("fallocate.default", ename(r ? errno : 0), NULL);
    r = fallocate(fd, FALLOC_FL_KEEP_SIZE, 1 << 20, 1 << 20);
    report("fallocate.keep_size", ename(r ? errno : 0), NULL);
    r = fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 65536);
    report("fallocate.punch_hole", ename(r ? errno : 0), NULL);
    r = posix_fallocate(fd, 0, 2 << 20);
    report("posix_fallocate", ename(r), NULL);
    r = fsetxattr(fd, "user.plfs.probe", "v1", 2, 0);
    report("xattr.user.set", ename(r ? errno : 0), NULL);
    char v[16] = "";
    ssize_t n = getxattr(f, "user.plfs.probe", v, sizeof v - 1);
    report("xattr.user.get", n < 0 ? ename(errno) : n == 2 && !memcmp(v, "v1", 2) ? "ok" : "wrong", NULL);
    n = getxattr(fb, "user.plfs.probe", v, sizeof v - 1);
    report("xattr.user.other_mount", n < 0 ? ename(errno) : n == 2 && !memcmp(v, "v1", 2) ? "ok" : "wrong", NULL);
    r = fsetxattr(fd, "user.plfs.probe", "v2", 2, XATTR_CREATE);
    report("xattr.create_existing", ename(r ? errno : 0), "expected EEXIST");
    char list[1024];
    n = flistxattr(fd, list, sizeof list);
    report("xattr.list", n < 0 ? ename(errno) : "ok", "%zd bytes", n);
    r = fremovexattr(fd, "user.plfs.probe");
    report("xattr.remove", ename(r ? errno : 0), NULL);
    struct stat st;
    fstat(fd, &st);
    char bs[32];
    snprintf(bs, sizeof bs, "%ld", (long)st.st_blksize);
    report("st_blksize", bs, NULL);
    close(fd);
    unlink(f);
    struct statfs sf;
    statfs(A, &sf);
    char ft[32];
    snprintf(ft, sizeof ft, "0x%lx", (unsigned long)sf.f_type);
    report("statfs.f_type", ft, "f_bsize %ld f_namelen %ld (EXT4 0xef53, FUSE 0x65735546)", (long)sf.f_bsize,
           (long)sf.f_namelen);
}

/* ---- inode numbers across mounts ---- */

static void probe_inodes(void)
{
    char f[4096], fb[4096];
    pa(f, "ino.file"), pb(fb, "ino.file");
    mkfile(f, "i");
    struct stat sa, sb;
    stat(f, &sa), stat(fb, &sb);
    report("st_ino.same_across_mounts", sa.st_ino == sb.st_ino ? "ok" : "differs", "A %llu B %llu",
           (unsigned long long)sa.st_ino, (unsigned long long)sb.st_ino);
    report("st_dev.same_across_mounts", sa.st_dev == sb.st_dev ? "same" : "differs", NULL);
    unlink(f);
}

/* ---- directory mtime on create ---- */

static void probe_dir_mtime(void)
{
    char d[4096], db[4096];
    pa(d, "dm"), pb(db, "dm");
    mkdir(d, 0755);
    int changed = 0, changed_b = 0, n = 20;
    for (int i = 0; i < n; i++) {
        struct stat s0, s1, sb0, sb1;
        stat(d, &s0);
        stat(db, &sb0);
        sleep_ms(20);
        char f[4200];
        snprintf(f, sizeof f, "%s/f%d", d, i);
        mkfile(f, NULL);
        stat(d, &s1);
        stat(db, &sb1);
        changed += ts_ns(s1.st_mtim) != ts_ns(s0.st_mtim);
        changed_b += ts_ns(sb1.st_mtim) != ts_ns(sb0.st_mtim);
    }
    char v[32];
    snprintf(v, sizeof v, "%d/%d", changed, n);
    report("dir_mtime.changes_on_create", v, "creates 20 ms apart; stat right after, same mount");
    snprintf(v, sizeof v, "%d/%d", changed_b, n);
    report("dir_mtime.other_mount", v, "stat via mount B right after the create via A");
    rm_rf(d);
}

/* ---- visibility of new names on the other mount ---- */

static void probe_name_visibility(void)
{
    char d[4096], db[4096];
    pa(d, "nv"), pb(db, "nv");
    mkdir(d, 0755);
    int n = 50, lookup_now = 0, readdir_now = 0, neg_now = 0;
    double worst_neg = 0;
    for (int i = 0; i < n; i++) {
        char f[4200], fb[4200], name[32];
        snprintf(name, sizeof name, "f%d", i);
        snprintf(f, sizeof f, "%s/%s", d, name);
        snprintf(fb, sizeof fb, "%s/%s", db, name);
        /* a negative lookup via B first (may be cached), then create via A */
        struct stat st;
        stat(fb, &st);
        mkfile(f, NULL);
        if (stat(fb, &st) == 0)
            neg_now++;
        else {
            double t0 = now_us();
            while (stat(fb, &st) != 0 && now_us() - t0 < 5e6)
                sleep_ms(1);
            if ((now_us() - t0) / 1000 > worst_neg)
                worst_neg = (now_us() - t0) / 1000;
        }
        char g[4200], gb[4200], gname[32];
        snprintf(gname, sizeof gname, "g%d", i);
        snprintf(g, sizeof g, "%s/%s", d, gname);
        snprintf(gb, sizeof gb, "%s/%s", db, gname);
        mkfile(g, NULL);
        if (stat(gb, &st) == 0)
            lookup_now++;
        DIR *dir = opendir(db);
        struct dirent *e;
        int found = 0;
        while (dir && (e = readdir(dir)))
            found |= !strcmp(e->d_name, gname);
        if (dir)
            closedir(dir);
        readdir_now += found;
    }
    char v[32];
    snprintf(v, sizeof v, "%d/%d", lookup_now, n);
    report("name.other_mount.stat", v, "created via A, stat via B at once");
    snprintf(v, sizeof v, "%d/%d", readdir_now, n);
    report("name.other_mount.readdir", v, "created via A, listed via B at once");
    snprintf(v, sizeof v, "%d/%d", neg_now, n);
    report("name.other_mount.after_enoent", v, "B looked the name up (ENOENT) before A created it; worst lag %.0f ms",
           worst_neg);
    /* unlink via A after B looked the name up: gone via B at once? how late? */
    int gone = 0;
    double worst = 0;
    for (int i = 0; i < n; i++) {
        char g[4200], gb[4200];
        struct stat st;
        snprintf(g, sizeof g, "%s/g%d", d, i);
        snprintf(gb, sizeof gb, "%s/g%d", db, i);
        stat(gb, &st);
        unlink(g);
        if (stat(gb, &st) != 0) {
            gone++;
            continue;
        }
        double t0 = now_us();
        while (stat(gb, &st) == 0 && now_us() - t0 < 5e6)
            sleep_ms(1);
        if ((now_us() - t0) / 1000 > worst)
            worst = (now_us() - t0) / 1000;
    }
    snprintf(v, sizeof v, "%d/%d", gone, n);
    report("unlink.other_mount.stat", v, "unlinked via A, stat via B fails at once; worst lag %.0f ms", worst);
    /* the same for open(2) via B of a name unlinked via A */
    gone = 0;
    int other = 0;
    for (int i = 0; i < n; i++) {
        char f[4200], fb[4200];
        struct stat st;
        snprintf(f, sizeof f, "%s/u%d", d, i);
        snprintf(fb, sizeof fb, "%s/u%d", db, i);
        mkfile(f, "u");
        stat(fb, &st);
        unlink(f);
        int fd = open(fb, O_RDONLY);
        if (fd < 0)
            gone += errno == ENOENT, other += errno != ENOENT;
        else
            close(fd);
    }
    snprintf(v, sizeof v, "%d/%d", gone, n);
    report("unlink.other_mount.open", v, "unlinked via A, open via B fails with ENOENT at once (%d other errors)",
           other);
    /* rename via A after B looked both names up: old name gone and new name there via B at once? */
    int old_gone = 0, new_there = 0;
    for (int i = 0; i < n; i++) {
        char f[4200], fb[4200], t[4200], tb[4200];
        struct stat st;
        snprintf(f, sizeof f, "%s/r%d", d, i);
        snprintf(fb, sizeof fb, "%s/r%d", db, i);
        snprintf(t, sizeof t, "%s/R%d", d, i);
        snprintf(tb, sizeof tb, "%s/R%d", db, i);
        mkfile(f, "r");
        stat(fb, &st);
        stat(tb, &st);
        rename(f, t);
        old_gone += stat(fb, &st) != 0;
        new_there += stat(tb, &st) == 0;
    }
    snprintf(v, sizeof v, "%d/%d", old_gone, n);
    report("rename.other_mount.old_name", v, "renamed via A, old name fails via B at once");
    snprintf(v, sizeof v, "%d/%d", new_there, n);
    report("rename.other_mount.new_name", v, "renamed via A, new name (looked up before: ENOENT) found via B at once");
    rm_rf(d);
}

/* ---- races between two processes (on A and B) ---- */

enum { MAX_ROUNDS = 10000 };

struct shared {
    pthread_barrier_t bar;
    int won[2][MAX_ROUNDS];
    int err[2][MAX_ROUNDS];
    int stop;
    long missing, reads, other;
    int other_errno;
};

static struct shared *sh;

typedef int (*race_fn)(const char *dir, int round, int who);

static int race_excl(const char *dir, int round, int who)
{
    (void)who;
    char f[4200];
    snprintf(f, sizeof f, "%s/excl.%d", dir, round);
    int fd = open(f, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0)
        return errno;
    close(fd);
    return 0;
}

static int race_mkdir(const char *dir, int round, int who)
{
    (void)who;
    char f[4200];
    snprintf(f, sizeof f, "%s/mkd.%d", dir, round);
    return mkdir(f, 0755) ? errno : 0;
}

static int race_link(const char *dir, int round, int who)
{
    char f[4200], t[4200];
    snprintf(t, sizeof t, "%s/lnk.%d.tmp%d", dir, round, who);
    snprintf(f, sizeof f, "%s/lnk.%d", dir, round);
    return link(t, f) ? errno : 0;
}

static int race_link_prep(const char *dir, int round, int who)
{
    char t[4200];
    snprintf(t, sizeof t, "%s/lnk.%d.tmp%d", dir, round, who);
    return mkfile(t, who ? "1" : "0");
}

/* After a round with two winners: what does the directory hold under that name? */
static void describe_duplicate(const char *da, const char *db, const char *prefix, int round, char *out, size_t n)
{
    char name[64], fa[4200], fb[4200], ca[16] = "", cb[16] = "";
    snprintf(name, sizeof name, "%s.%d", prefix, round);
    int entries = 0;
    DIR *dir = opendir(da);
    struct dirent *e;
    while (dir && (e = readdir(dir)))
        entries += !strcmp(e->d_name, name);
    if (dir)
        closedir(dir);
    snprintf(fa, sizeof fa, "%s/%s", da, name);
    snprintf(fb, sizeof fb, "%s/%s", db, name);
    readfile(fa, ca, sizeof ca);
    readfile(fb, cb, sizeof cb);
    snprintf(out, n, "; first: round %d, %d entries named %s in readdir, content via A \"%s\" via B \"%s\"", round,
             entries, name, ca, cb);
}

static int race_rounds(void)
{
    const char *v = getenv("FSPROBE_RACE_ROUNDS");
    int r = v ? atoi(v) : 200;
    return r < 1 ? 1 : r > MAX_ROUNDS ? MAX_ROUNDS : r;
}

static void run_race(const char *name, const char *prefix, race_fn prep, race_fn fn, const char *da,
                     const char *db)
{
    int rounds = race_rounds();
    memset(sh->won, 0, sizeof sh->won);
    memset(sh->err, 0, sizeof sh->err);
    pthread_barrier_t *bar = &sh->bar;
    pid_t kid = fork();
    int who = kid == 0;
    const char *dir = who ? db : da;
    for (int i = 0; i < rounds; i++) {
        if (prep)
            prep(dir, i, who);
        pthread_barrier_wait(bar);
        int e = fn(dir, i, who);
        sh->won[who][i] = e == 0;
        sh->err[who][i] = e;
    }
    if (kid == 0)
        _exit(0);
    waitpid(kid, NULL, 0);
    int both = 0, none = 0, first_both = -1;
    int errs[200] = {0};
    for (int i = 0; i < rounds; i++) {
        both += sh->won[0][i] && sh->won[1][i];
        if (sh->won[0][i] && sh->won[1][i] && first_both < 0)
            first_both = i;
        none += !sh->won[0][i] && !sh->won[1][i];
        for (int w = 0; w < 2; w++)
            if (sh->err[w][i] && sh->err[w][i] != EEXIST && sh->err[w][i] < 200)
                errs[sh->err[w][i]]++;
    }
    char other[256] = "", dup[512] = "";
    for (int e = 1; e < 200; e++)
        if (errs[e])
            snprintf(other + strlen(other), sizeof other - strlen(other), " %s x%d", ename(e), errs[e]);
    if (first_both >= 0)
        describe_duplicate(da, db, prefix, first_both, dup, sizeof dup);
    report(name, both || none ? "BROKEN" : "ok", "%d rounds: %d with two winners, %d with none; errors other than EEXIST:%s%s%s",
           rounds, both, none, other[0] ? other : " none",
           strcmp(da, db) ? " (one process per mount)" : " (two processes, one mount)", dup);
}

static void probe_races(void)
{
    char da[4096], db[4096];
    pa(da, "race"), pb(db, "race");
    mkdir(da, 0755);
    run_race("race.o_excl", "excl", NULL, race_excl, da, db);
    rm_rf(da), mkdir(da, 0755);
    run_race("race.o_excl.same_mount", "excl", NULL, race_excl, da, da);
    run_race("race.mkdir", "mkd", NULL, race_mkdir, da, db);
    run_race("race.link_publish", "lnk", race_link_prep, race_link, da, db);
    rm_rf(da), mkdir(da, 0755);
    run_race("race.link_publish.same_mount", "lnk", race_link_prep, race_link, da, da);
    rm_rf(da);
}

/* A replaces a name by rename(2) over and over; a reader on mount B (or A) opens it meanwhile and
 * counts the opens that fail. */
static void probe_rename_atomicity(const char *name, const char *reader_base)
{
    char d[4096], dr[4096];
    pa(d, "ra");
    snprintf(dr, sizeof dr, "%s/ra", reader_base);
    mkdir(d, 0755);
    char target[4200], targetr[4200];
    snprintf(target, sizeof target, "%s/target", d);
    snprintf(targetr, sizeof targetr, "%s/target", dr);
    mkfile(target, "0");
    sh->stop = 0, sh->missing = 0, sh->reads = 0, sh->other = 0;
    pid_t kid = fork();
    if (kid == 0) {
        long miss = 0, reads = 0, other = 0;
        int other_errno = 0;
        while (!__atomic_load_n(&sh->stop, __ATOMIC_SEQ_CST)) {
            int fd = open(targetr, O_RDONLY);
            reads++;
            if (fd < 0) {
                miss += errno == ENOENT;
                if (errno != ENOENT)
                    other++, other_errno = errno;
            } else
                close(fd);
        }
        sh->missing = miss, sh->reads = reads, sh->other = other, sh->other_errno = other_errno;
        _exit(0);
    }
    int n = 1000;
    for (int i = 0; i < n; i++) {
        char t[4200];
        snprintf(t, sizeof t, "%s/tmp.%d", d, i);
        mkfile(t, "x");
        if (rename(t, target) != 0) {
            report(name, ename(errno), NULL);
            break;
        }
    }
    __atomic_store_n(&sh->stop, 1, __ATOMIC_SEQ_CST);
    waitpid(kid, NULL, 0);
    report(name, sh->missing || sh->other ? "GAPS" : "ok",
           "%d renames over the target via A; of %ld opens via %s, %ld got ENOENT, %ld another error (%s)", n,
           sh->reads, strcmp(reader_base, A) ? "B" : "A", sh->missing, sh->other,
           sh->other ? ename(sh->other_errno) : "-");
    rm_rf(d);
}

/* ---- locks across mounts ---- */

static void probe_locks(void)
{
    char f[4096], fb[4096];
    pa(f, "lk.file"), pb(fb, "lk.file");
    mkfile(f, "lock");
    int fd = open(f, O_RDWR);
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    int r = fcntl(fd, F_SETLK, &fl);
    report("fcntl.setlk", ename(r ? errno : 0), NULL);
    int fo = open(f, O_RDWR);
    struct flock ofl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    int ro = fcntl(fo, F_OFD_SETLK, &ofl);
    report("fcntl.ofd_conflict_same_process", ename(ro ? errno : 0), "expected EAGAIN: conflicts with the fcntl lock");
    /* fo and ff stay open until the end: closing any fd of the file drops this process's locks */
    int ff = open(f, O_RDWR);
    pid_t kid = fork();
    if (kid == 0) {
        int fd2 = open(fb, O_RDWR);
        struct flock g = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
        int r2 = fcntl(fd2, F_SETLK, &g);
        _exit(r2 ? (errno == EAGAIN || errno == EACCES ? 1 : 2) : 0);
    }
    int st;
    waitpid(kid, &st, 0);
    int code = WEXITSTATUS(st);
    report("fcntl.lock.other_mount", code == 1 ? "ok" : code == 0 ? "NOT_ENFORCED" : "error",
           "a second process via B tries F_SETLK on the locked file: %s",
           code == 1 ? "EAGAIN" : code == 0 ? "granted" : "other error");
    fl.l_type = F_UNLCK;
    fcntl(fd, F_SETLK, &fl);
    r = flock(ff, LOCK_EX | LOCK_NB);
    report("flock", ename(r ? errno : 0), NULL);
    kid = fork();
    if (kid == 0) {
        int fd2 = open(fb, O_RDWR);
        int r2 = flock(fd2, LOCK_EX | LOCK_NB);
        _exit(r2 ? (errno == EWOULDBLOCK ? 1 : 2) : 0);
    }
    waitpid(kid, &st, 0);
    code = WEXITSTATUS(st);
    report("flock.other_mount", code == 1 ? "ok" : code == 0 ? "NOT_ENFORCED" : "error",
           "a second process via B tries flock(LOCK_EX|LOCK_NB): %s",
           code == 1 ? "EWOULDBLOCK" : code == 0 ? "granted" : "other error");
    close(ff);
    close(fo);
    close(fd);
    unlink(f);
}

/* ---- latency of metadata operations ---- */

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void probe_latency(void)
{
    enum { N = 200 };
    static double t[6][N];
    char d[4096];
    pa(d, "lat");
    mkdir(d, 0755);
    for (int i = 0; i < N; i++) {
        char p[4200], q[4200], r[4200];
        snprintf(p, sizeof p, "%s/d%d", d, i);
        snprintf(q, sizeof q, "%s/f%d", d, i);
        snprintf(r, sizeof r, "%s/g%d", d, i);
        double t0 = now_us();
        mkdir(p, 0755);
        double t1 = now_us();
        int fd = open(q, O_WRONLY | O_CREAT | O_EXCL, 0644);
        close(fd);
        double t2 = now_us();
        rename(q, r);
        double t3 = now_us();
        struct stat st;
        stat(r, &st);
        double t4 = now_us();
        unlink(r);
        double t5 = now_us();
        rmdir(p);
        double t6 = now_us();
        t[0][i] = t1 - t0, t[1][i] = t2 - t1, t[2][i] = t3 - t2, t[3][i] = t4 - t3, t[4][i] = t5 - t4,
        t[5][i] = t6 - t5;
    }
    const char *names[6] = {"latency_us.mkdir", "latency_us.create", "latency_us.rename",
                            "latency_us.stat", "latency_us.unlink", "latency_us.rmdir"};
    const char *what[6] = {"mkdir", "open(O_CREAT|O_EXCL)+close", "rename to a new name",
                           "stat of an existing file", "unlink", "rmdir"};
    for (int k = 0; k < 6; k++) {
        char v[32];
        snprintf(v, sizeof v, "%.1f", median(t[k], N));
        report(names[k], v, "median of %d: %s", N, what[k]);
    }
    rm_rf(d);
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: %s DIR [DIR2: the same directory via a second mount]\n", argv[0]);
        return 2;
    }
    if (strlen(argv[1]) > 1000 || (argc == 3 && strlen(argv[2]) > 1000)) {
        fprintf(stderr, "fsprobe: directory paths longer than 1000 bytes are not supported\n");
        return 2;
    }
    snprintf(A, sizeof A, "%s/fsprobe.%d", argv[1], (int)getpid());
    snprintf(B, sizeof B, "%s/fsprobe.%d", argc == 3 ? argv[2] : argv[1], (int)getpid());
    two_mounts = argc == 3 && strcmp(argv[1], argv[2]);
    if (mkdir(A, 0755) != 0) {
        fprintf(stderr, "fsprobe: cannot create %s: %s\n", A, strerror(errno));
        return 1;
    }
    struct stat st;
    if (stat(B, &st) != 0) {
        fprintf(stderr, "fsprobe: %s is not visible as %s: %s\n", A, B, strerror(errno));
        rmdir(A);
        return 1;
    }
    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    pthread_barrierattr_t ba;
    pthread_barrierattr_init(&ba);
    pthread_barrierattr_setpshared(&ba, PTHREAD_PROCESS_SHARED);
    pthread_barrier_init(&sh->bar, &ba, 2);
    printf("# fsprobe %s%s%s\n", argv[1], two_mounts ? " and " : "", two_mounts ? argv[2] : "");
    probe_renameat2();
    probe_tmpfile();
    probe_links();
    probe_dtype();
    probe_dirsync();
    probe_openat2();
    probe_rename_mkdir();
    probe_fallocate_xattr();
    probe_inodes();
    probe_mtime();
    probe_size_visibility();
    probe_dir_mtime();
    probe_name_visibility();
    probe_races();
    probe_rename_atomicity("rename.replace_atomic", B);
    probe_rename_atomicity("rename.replace_atomic.same_mount", A);
    probe_locks();
    probe_latency();
    rm_rf(A);
    return 0;
}
