/*
 * gen_closed.c -- a closed loop: N clients, each sending its next request
 * when its previous one finishes (plus a think time); how concurrency
 * benchmarks (--max-concurrency, aiperf --concurrency) run.  The source
 * wl_source_closed.
 *
 *   {"kind": "closed_loop", "clients": 8, "count": 400, "think_ms": 0 | {dist},
 *    "start_ms": 0, "prompt_tokens": ..., "output_tokens": ..., "dataset_entries": 0,
 *    tenant/class/mix}
 *
 * dataset_entries N > 0: the client's prompts come from a dataset of N
 * entries reused in order (aiperf --num-dataset-entries, default 100, with
 * its default --dataset-sampling-strategy sequential): request i, warm-up
 * ones included, sends entry i mod N -- the same prompt and lengths as
 * request i - N, so a prefix cache may serve it.  0 (the default): every
 * prompt is new.
 *
 * count is the total; request i belongs to client i mod clients (round
 * robin).  Each client's first request arrives at start_ms, each later one
 * is triggered by the client's previous request (Request.triggered,
 * next_req, think_ns).
 *
 * Requests are created in round-robin order: request i is client
 * (i mod clients)'s (i div clients)-th, so client c's k-th request is
 * triggered by its (k-1)-th, index i - clients.  Lengths draw from
 * RNG_STREAM_PROMPT / RNG_STREAM_OUTPUT, think times from WL_STREAM_THINK,
 * mixes from WL_STREAM_MIX, one draw each per request in creation order.
 */
#include "workload.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gen_attr.h"
#include "gen_dist.h"
#include "jsonio.h"
#include "rng.h"
#include "wl_source.h"

#define GEN_CLOSED_MAX_CLIENTS 1000000
#define GEN_CLOSED_MAX_ENTRIES 100000000

/* The prompt content of dataset entry k, as block hashes the prefix cache
 * keys on (request.h hash_ids): equal for every request of the entry,
 * different from every other entry's. */
static void gen_closed_entry_hashes(Workload *w, Request *r, uint64_t k)
{
    uint32_t n = (r->prompt_tokens + WL_HASH_BLOCK_TOKENS - 1) / WL_HASH_BLOCK_TOKENS;
    uint64_t *ids = workload_alloc(w, n * sizeof *ids);
    for (uint32_t q = 0; q < n; q++) ids[q] = 0x5eed0000000000ULL ^ (k << 20) ^ q;
    r->hash_ids = ids;
    r->n_hash_ids = n;
    r->hash_block_tokens = WL_HASH_BLOCK_TOKENS;
}

static int gen_closed_build(const cJSON *wj, const char *where, const char *base_dir, uint64_t seed, Workload *w,
                            Err *e)
{
    static const char *const own[] = {"kind", "clients", "count", "think_ms", "start_ms", "prompt_tokens",
                                      "output_tokens", "warmup_requests", "dataset_entries", NULL};
    if (gen_attr_check_keys(wj, where, own, e) < 0) return -1;
    int64_t clients, count;
    double start_ms = 0;
    if (jsonio_int(wj, "clients", where, 1, 1, GEN_CLOSED_MAX_CLIENTS, &clients, e) < 0) return -1;
    if (jsonio_int(wj, "count", where, 1, 1, INT64_MAX, &count, e) < 0) return -1;
    if ((uint64_t)count > workload_max_requests())
        return err_set(e, "%s.count: got %lld, more than the %u requests a workload may hold; %s", where,
                       (long long)count, workload_max_requests(), WL_MAX_REQUESTS_HINT);
    if (jsonio_num(wj, "start_ms", where, 0, 0, 1e12, &start_ms, e) < 0) return -1;
    /* a benchmark client's warm-up (aiperf --warmup-request-count, vLLM's
     * benchmark): the first `warm` requests run as their own closed loop,
     * and the measured ones start together once every warm-up response
     * has arrived (a barrier) */
    int64_t warm = 0;
    if (jsonio_int(wj, "warmup_requests", where, 0, 0, count - 1, &warm, e) < 0) return -1;
    int64_t entries = 0;
    if (jsonio_int(wj, "dataset_entries", where, 0, 0, GEN_CLOSED_MAX_ENTRIES, &entries, e) < 0) return -1;
    TimeDist think;
    if (gen_dist_time_key(wj, "think_ms", where, &think, e) < 0) return -1;
    LengthDist pd = {0}, od = {0};
    GenAttrs attrs = {0};
    int rc = -1;
    if (gen_dist_len_key(wj, "prompt_tokens", where, base_dir, 1, &pd, e) < 0) goto out;
    if (gen_dist_len_key(wj, "output_tokens", where, base_dir, 1, &od, e) < 0) goto out;
    if (gen_attr_parse(wj, where, base_dir, seed, 1, w, &attrs, e) < 0) goto out;
    gsl_rng *rp = rng_stream(seed, RNG_STREAM_PROMPT);
    gsl_rng *ro = rng_stream(seed, RNG_STREAM_OUTPUT);
    gsl_rng *rt = rng_stream(seed, WL_STREAM_THINK);
    int64_t t0_ns = llround(start_ms * 1e6);
    uint32_t c_n = (uint32_t)clients, wn = (uint32_t)warm;
    for (uint32_t i = 0; i < (uint32_t)count; i++) {
        const GenMix *m = gen_attr_pick(&attrs);
        Request *r = workload_push(w);
        if (entries > 0 && i >= (uint64_t)entries) {
            /* a reused dataset entry: request i - N's prompt and lengths */
            const Request *src = &w->reqs[i - entries];
            r->prompt_tokens = src->prompt_tokens;
            r->output_tokens = src->output_tokens;
        } else {
            r->prompt_tokens = gen_dist_len_draw(m && m->has_prompt ? &m->prompt : &pd, rp);
            r->output_tokens = gen_dist_len_draw(m && m->has_output ? &m->output : &od, ro);
        }
        if (entries > 0) gen_closed_entry_hashes(w, r, (uint64_t)i % (uint64_t)entries);
        r->t_arrive_ns = t0_ns;
        /* position in its phase: warm-up requests 0..wn-1, measured ones after */
        uint32_t j = i < wn ? i : i - wn;
        int64_t think_ns = j >= c_n ? gen_dist_time_draw_ns(&think, rt) : 0;
        if (i < wn) workload_set_id(w, i, "w%u.%u", j % c_n, j / c_n);
        else workload_set_id(w, i, "c%u.%u", j % c_n, j / c_n);
        gen_attr_apply(&attrs, m, w, i);
        if (j >= c_n) {
            workload_link(w, i - c_n, i, think_ns);
        } else if (i >= wn && wn > 0) {
            r = &w->reqs[i];
            r->triggered = 1;
            r->barrier_waiter = 1;
            r->t_arrive_ns = -1;
        }
        if (i < wn) w->reqs[i].barrier_member = 1;
    }
    gsl_rng_free(rp);
    gsl_rng_free(ro);
    gsl_rng_free(rt);
    if (wn)
        snprintf(w->source, sizeof w->source, "closed loop, %u clients, %u requests after %u warm-up ones (barrier)",
                 c_n, w->n - wn, wn);
    else
        snprintf(w->source, sizeof w->source, "closed loop, %u clients, %u requests", c_n, w->n);
    if (entries > 0) {
        size_t l = strlen(w->source);
        snprintf(w->source + l, sizeof w->source - l, ", prompts from %lld dataset entries reused in order",
                 (long long)entries);
    }
    rc = 0;
out:
    gen_dist_len_free(&pd);
    gen_dist_len_free(&od);
    gen_attr_free(&attrs);
    return rc;
}

static const char *const closed_kinds[] = {"closed_loop", NULL};

const WlSource wl_source_closed = {.kinds = closed_kinds, .build = gen_closed_build};
