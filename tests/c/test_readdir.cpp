/*
 * test_readdir.cpp -- plfs_readdir for C++ callers (include/plfs.h): the PLFS 2.5 void* form,
 * which takes a std::set<std::string>* as the original library did, and the typed overloads for
 * std::set and std::vector. Each listing must equal the one plfs_opendir_c/plfs_readdir_c give.
 * Usage: test_readdir DIR (a logical directory; PLFSRC names the configuration). Prints
 * "N passed, M failed".
 */
#include <plfs.h>

#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <set>
#include <string>
#include <unistd.h>
#include <vector>

static int passed, failed;

#define CHECK(cond, what)                                                        \
    do {                                                                         \
        if (cond) {                                                              \
            passed++;                                                            \
        } else {                                                                 \
            failed++;                                                            \
            std::fprintf(stderr, "FAIL %s:%d: %s (%s) [%s]\n", __FILE__, __LINE__, \
                         #cond, what, plfs_last_error());                        \
        }                                                                        \
    } while (0)

int main(int argc, char **argv)
{
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    std::string dir = argv[1];
    CHECK(plfs_mkdir(dir.c_str(), 0755) == PLFS_SUCCESS, "mkdir");
    std::set<std::string> made;
    made.insert(".");
    made.insert("..");
    for (int i = 0; i < 40; i++) {
        char name[64];
        std::snprintf(name, sizeof name, "file-%02d%s", i, i % 7 == 0 ? "-with-a-much-longer-name" : "");
        std::string p = dir + "/" + name;
        Plfs_fd *fd = 0;
        int refs;
        CHECK(plfs_open(&fd, p.c_str(), O_CREAT | O_WRONLY, getpid(), 0644, 0) == PLFS_SUCCESS, name);
        if (fd) plfs_close(fd, getpid(), getuid(), O_WRONLY, 0, &refs);
        made.insert(name);
    }
    CHECK(plfs_mkdir((dir + "/subdir").c_str(), 0755) == PLFS_SUCCESS, "mkdir subdir");
    made.insert("subdir");

    /* The C listing. */
    std::vector<std::string> c_names;
    Plfs_dirp *d = 0;
    CHECK(plfs_opendir_c(dir.c_str(), &d) == PLFS_SUCCESS, "opendir_c");
    char buf[256];
    while (d && plfs_readdir_c(d, buf, sizeof buf) == PLFS_SUCCESS && buf[0]) c_names.push_back(buf);
    if (d) plfs_closedir_c(d);
    CHECK(std::set<std::string>(c_names.begin(), c_names.end()) == made, "C listing");

    /* PLFS 2.5's form: void* to a std::set<std::string>. */
    std::set<std::string> s;
    void *vp = &s;
    CHECK(plfs_readdir(dir.c_str(), vp) == PLFS_SUCCESS, "void* form");
    CHECK(s == made, "void* form lists every entry");
    /* Entries are added to what the container already holds. */
    std::set<std::string> s2;
    s2.insert("already-there");
    CHECK(plfs_readdir(dir.c_str(), &s2) == PLFS_SUCCESS, "set overload");
    CHECK(s2.size() == made.size() + 1 && s2.count("already-there") == 1, "set overload adds");
    std::vector<std::string> v;
    CHECK(plfs_readdir(dir.c_str(), &v) == PLFS_SUCCESS, "vector overload");
    CHECK(v == c_names, "vector overload: same names, same order as plfs_readdir_c");

    /* Errors. */
    std::set<std::string> e;
    CHECK(plfs_readdir((dir + "/missing").c_str(), &e) == PLFS_ENOENT && e.empty(), "missing directory");
    CHECK(plfs_readdir((dir + "/file-01").c_str(), &e) == PLFS_ENOTDIR, "a file");
    CHECK(plfs_readdir("/etc", &e) == PLFS_EINVAL, "outside every mount point");
    CHECK(plfs_readdir(dir.c_str(), static_cast<std::set<std::string> *>(0)) == PLFS_EFAULT, "NULL set");
    CHECK(plfs_readdir(dir.c_str(), static_cast<void *>(0)) == PLFS_EFAULT, "NULL void*");

    std::printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
