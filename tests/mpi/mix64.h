/* The 64-bit finalizer of MurmurHash3 (as in SplitMix64): the test programs' values are
 * mix64 of where the value is (variable, step, index), so that every byte of a file depends on
 * its place and a misplaced, stale or missing byte is found. */
#ifndef PLFS_TEST_MIX64_H
#define PLFS_TEST_MIX64_H
#include <stdint.h>

static inline uint64_t mix64(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

#endif
