/* pio: the verifiable fill pattern (see pio.h). Filling costs one memcpy per record plus a
 * 16-byte stamp per 4 KiB, so it does not distort the bandwidth being measured. */
#include "pio.h"

#include <stdlib.h>
#include <string.h>

#define STAMP_EVERY 4096
#define STAMP_LEN 16

/* splitmix64: a fast, well-mixed 64-bit generator. */
static uint64_t mix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

int pio_pattern_init(struct pio_pattern *p, uint64_t seed, size_t len)
{
    p->seed = seed;
    p->len = len;
    p->base = malloc(len ? len : 1);
    if (!p->base)
        return -1;
    uint64_t st = seed;
    for (size_t i = 0; i < len; i += 8) {
        uint64_t v = mix64(&st);
        size_t n = len - i < 8 ? len - i : 8;
        memcpy(p->base + i, &v, n);
    }
    return 0;
}

void pio_pattern_free(struct pio_pattern *p)
{
    free(p->base);
    p->base = NULL;
}

/* The stamp of the 4 KiB piece at logical offset off of file fileno: offset, file and seed mixed
 * so that a stamp can only match at its own place in its own run. */
static void stamp(const struct pio_pattern *p, unsigned char out[STAMP_LEN], uint64_t fileno, uint64_t off)
{
    uint64_t st = p->seed ^ (fileno * 0xd6e8feb86659fd93ULL);
    uint64_t a = off;
    uint64_t b = mix64(&st) ^ off;
    memcpy(out, &a, 8);
    memcpy(out + 8, &b, 8);
}

void pio_pattern_fill(const struct pio_pattern *p, unsigned char *buf, uint64_t fileno, uint64_t off)
{
    memcpy(buf, p->base, p->len);
    for (size_t i = 0; i < p->len; i += STAMP_EVERY) {
        unsigned char s[STAMP_LEN];
        size_t n = p->len - i < STAMP_LEN ? p->len - i : STAMP_LEN;
        stamp(p, s, fileno, off + i);
        memcpy(buf + i, s, n);
    }
}

long pio_pattern_check(const struct pio_pattern *p, const unsigned char *got, unsigned char *scratch,
                       uint64_t fileno, uint64_t off)
{
    pio_pattern_fill(p, scratch, fileno, off);
    if (memcmp(got, scratch, p->len) == 0)
        return -1;
    for (size_t i = 0; i < p->len; i++)
        if (got[i] != scratch[i])
            return (long)i;
    return -1;
}
