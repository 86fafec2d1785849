/*
 * simtest.h -- builders shared by the engine and scheduler tests: a list of
 * requests run through a scheduler, a counting KV pool and the linear cost
 * model, with the token times copied out.
 */
#ifndef SERVESIM_SIMTEST_H
#define SERVESIM_SIMTEST_H

#include "cost.h"
#include "engine.h"
#include "kv.h"
#include "sched.h"

typedef struct SimSpec {
    double arrival_ms;
    uint32_t prompt, output;
} SimSpec;

typedef struct SimRun {
    Request reqs[64];
    char names[64][8];
    int64_t times[64][64];  /* token times, ns */
    uint32_t n;
    EngineStats st;
    uint64_t kv_used[64];   /* KV blocks in use during each of the first 64 iterations */
    int64_t iter_start[64];
    uint32_t iter_prefill[64], iter_decode[64]; /* items of each kind in each of the first 64 iterations */
    uint64_t n_iters;
    uint64_t sink_tokens;   /* tokens reported to the metrics sink */
    uint64_t sink_done;
    int sink_ordered;       /* sink saw times in non-decreasing order */
    int64_t sink_last_ns;
    int rc;
    Err err;
} SimRun;

/* The chapter's step model: 26.22 ms + 30.4 us/token + 3 ns/pair. */
extern const LinearCostCfg simtest_chapter_cost;

/* Runs specs (sorted by arrival) under sched; kv: capacity (0 = 1 TiB). */
void simtest_run(SimRun *out, const SimSpec *specs, uint32_t n, SchedConfig sched, const LinearCostCfg *cost,
                 KvReserve reserve, double kv_capacity_bytes, double kv_bytes_per_token, uint32_t block_tokens);

double simtest_ms(int64_t ns);

#endif
