/*
 * wlcmd.h -- `servesim workload`: what a workload looks like before it is
 * simulated (count, duration, rate, burstiness, length percentiles, prefix
 * reuse), and its materialised request list (--out).
 */
#ifndef SERVESIM_WLCMD_H
#define SERVESIM_WLCMD_H

#include <cjson/cJSON.h>
#include <stdio.h>

#include "workload.h"

typedef struct WlLenStats {
    double mean, p50, p90, p99, max;
} WlLenStats;

typedef struct WlStats {
    uint32_t count;              /* requests */
    uint32_t triggered;          /* arrival set by a predecessor: not in duration, rate, CV */
    double duration_s;           /* first to last known arrival */
    double rate_per_s;           /* 1 / mean inter-arrival = (arrivals - 1) / duration */
    double interarrival_mean_s;
    double interarrival_cv;      /* sd / mean of the gaps (GSL, n - 1) */
    WlLenStats prompt, output;   /* tokens (GSL quantiles of the sorted lengths) */
    uint64_t prompt_total, output_total;
    uint32_t block_tokens;       /* 0: no content known (no hash_ids or token_ids) */
    uint64_t blocks_total;       /* prompt blocks (full blocks for token ids) */
    uint64_t blocks_distinct;    /* distinct (tenant, prefix) blocks (estimated when sample_shift > 0) */
    uint32_t sample_shift;       /* distinct counted over the keys whose low sample_shift bits are 0, scaled */
} WlStats;

/* token_block: block size for prefix reuse measured from token ids (hash
 * ids carry their own). */
void wlcmd_stats(const Workload *w, uint32_t token_block, WlStats *st);
/* Keys: count, duration_s, rate_per_s, interarrival_cv, prompt_tokens and
 * output_tokens ({mean, p50, p90, p99, max}), and more. */
cJSON *wlcmd_stats_json(const Workload *w, const WlStats *st);
void wlcmd_stats_print(const Workload *w, const WlStats *st, FILE *f);

/* Loads a scenario's workload, a bare workload object, or a trace file
 * (format: -1 = by extension). */
int wlcmd_load(const char *path, int format, int on_error_skip, int has_seed, uint64_t seed, Workload *w, Err *e);

/* argv[0] is the first argument after "workload". */
int wlcmd_main(int argc, char **argv);

#endif
