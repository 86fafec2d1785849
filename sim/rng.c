/*
 * rng.c -- seeded GSL streams (see rng.h).
 */
#include "rng.h"

#include <gsl/gsl_errno.h>

#include "common.h"

uint64_t rng_mix(uint64_t seed, uint64_t stream)
{
    /* splitmix64 finaliser over seed and stream id */
    uint64_t z = seed + 0x9E3779B97F4A7C15ULL * (stream + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

gsl_rng *rng_stream(uint64_t seed, uint64_t stream)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    if (!r) {
        xmalloc((size_t)-1); /* reports out of memory and aborts */
    }
    /* MT19937 treats seed 0 as its default seed; keep 32 bits so the stream
     * is the same on every platform's unsigned long. */
    unsigned long s = (unsigned long)(rng_mix(seed, stream) & 0xffffffffUL);
    gsl_rng_set(r, s ? s : 1);
    return r;
}
