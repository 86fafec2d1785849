/*
 * simtest.c -- see simtest.h.
 */
#include "simtest.h"

#include <stdio.h>
#include <string.h>

const LinearCostCfg simtest_chapter_cost = {26.22e-3, 30.4e-6, 3e-9};

double simtest_ms(int64_t ns)
{
    return (double)ns / 1e6;
}

static void sink_token(void *ctx, const Request *r, uint32_t k, int64_t t_ns)
{
    SimRun *R = ctx;
    (void)r;
    (void)k;
    if (t_ns < R->sink_last_ns) R->sink_ordered = 0;
    R->sink_last_ns = t_ns;
    R->sink_tokens++;
}

static void sink_done(void *ctx, const Request *r)
{
    (void)r;
    ((SimRun *)ctx)->sink_done++;
}

void simtest_run(SimRun *out, const SimSpec *specs, uint32_t n, SchedConfig sched, const LinearCostCfg *cost,
                 KvReserve reserve, double kv_capacity_bytes, double kv_bytes_per_token, uint32_t block_tokens)
{
    memset(out, 0, sizeof *out);
    out->n = n;
    for (uint32_t i = 0; i < n; i++) {
        Request *r = &out->reqs[i];
        request_init(r);
        snprintf(out->names[i], sizeof out->names[i], "r%u", i);
        r->id = out->names[i];
        r->t_arrive_ns = (int64_t)(specs[i].arrival_ms * 1e6 + 0.5);
        r->prompt_tokens = specs[i].prompt;
        r->output_tokens = specs[i].output;
    }
    EngineConfig cfg = {0};
    KvConfig kc = {.capacity_bytes = kv_capacity_bytes > 0 ? kv_capacity_bytes : 1099511627776.0,
                   .block_tokens = block_tokens ? block_tokens : 16,
                   .bytes_per_token = kv_bytes_per_token > 0 ? kv_bytes_per_token : 147456,
                   .reserve = reserve};
    cfg.keep_token_times = 1;
    cfg.keep_iterations = 1;
    out->sink_ordered = 1;
    cfg.sink = (MetricsSink){.ctx = out, .on_token = sink_token, .on_done = sink_done};
    if ((out->rc = sched_new(&sched, &cfg.sched, &out->err)) < 0) return;
    if ((out->rc = kv_pool_new(&kc, &cfg.kv, &out->err)) < 0) return;
    if ((out->rc = cost_linear_new(cost, &cfg.cost, &out->err)) < 0) return;
    Engine *eng = engine_new(out->reqs, n, &cfg, &out->err);
    if (!eng) {
        out->rc = -1;
        return;
    }
    out->rc = engine_run(eng, &out->err);
    const int64_t *tt = engine_token_times(eng);
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t k = 0; k < out->reqs[i].generated && k < 64; k++)
            out->times[i][k] = tt[out->reqs[i].token_off + k];
    out->st = *engine_stats(eng);
    const IterRecord *it = engine_iterations(eng, &out->n_iters);
    for (uint64_t k = 0; k < out->n_iters && k < 64; k++) {
        out->kv_used[k] = it[k].kv_used_blocks;
        out->iter_start[k] = it[k].t_start_ns;
        out->iter_prefill[k] = it[k].n_prefill;
        out->iter_decode[k] = it[k].n_decode;
    }
    engine_free(eng);
}
