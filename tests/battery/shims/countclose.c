/* A close(2) that counts its calls: preloaded before libldplfs.so, it sees every call of the
 * symbol `close` in the process, the program's and any made by code inside libldplfs.so (which
 * must make none: the core closes its descriptors with the system call, issue 27). At exit the
 * count is written to the file $COUNTCLOSE_OUT. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

static atomic_ulong calls;

int close(int fd)
{
    static int (*real_close)(int);
    if (!real_close)
        real_close = (int (*)(int))dlsym(RTLD_NEXT, "close");
    atomic_fetch_add(&calls, 1);
    return real_close(fd);
}

__attribute__((destructor)) static void report(void)
{
    const char *out = getenv("COUNTCLOSE_OUT");
    FILE *f = out ? fopen(out, "w") : NULL;
    if (f) {
        fprintf(f, "%lu\n", (unsigned long)atomic_load(&calls));
        fclose(f);
    }
}
