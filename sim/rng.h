/*
 * rng.h -- random streams derived from the run's seed.
 *
 * One gsl_rng (MT19937) per stream; a stream's seed is splitmix64(seed,
 * stream id), so adding a stream or changing one distribution never shifts
 * another stream's draws.  No rand(), no wall clock.
 */
#ifndef SERVESIM_RNG_H
#define SERVESIM_RNG_H

#include <gsl/gsl_rng.h>
#include <stdint.h>

enum {
    RNG_STREAM_ARRIVALS = 1,
    RNG_STREAM_PROMPT = 2,
    RNG_STREAM_OUTPUT = 3,
    RNG_STREAM_CLIENT_JITTER = 30, /* per-request client overhead (scenario.c; workloads use 16..29) */
    RNG_STREAM_END_SPREAD = 31,    /* closed-loop output lengths' spread (scenario.c, engprof.h) */
};

uint64_t rng_mix(uint64_t seed, uint64_t stream);
gsl_rng *rng_stream(uint64_t seed, uint64_t stream);

#endif
