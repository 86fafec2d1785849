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

#include <gsl/gsl_randist.h>
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

/* The generator both ways share: gen_closed_build drains it into a
 * workload; a stream (ClosedStream) makes request i when it is first
 * needed, always in creation order, so both make the same draws. */
typedef struct ClosedGen {
    int64_t count, warm, entries;
    uint32_t c_n, wn;
    int64_t t0_ns;
    TimeDist think;
    LengthDist pd, od;
    GenAttrs attrs;
    gsl_rng *rp, *ro, *rt;
    uint64_t i;                 /* requests made */
} ClosedGen;

/* Request i as the generator makes it. */
typedef struct ClosedReq {
    uint32_t prompt, output;
    uint32_t max_output;        /* an engine profile's end spread sets it (0: none) */
    int64_t cancel_after_ns;    /* a stream's "cancel" draw (the build's is gen_attr_apply's) */
    int64_t think_ns;           /* after the client's previous request (0 for its first) */
    const GenMix *m;
    uint32_t adapter;           /* its LoRA adapter (its pick's) */
} ClosedReq;

static void closed_gen_free(ClosedGen *g)
{
    gen_dist_len_free(&g->pd);
    gen_dist_len_free(&g->od);
    gen_attr_free(&g->attrs);
    if (g->rp) gsl_rng_free(g->rp);
    if (g->ro) gsl_rng_free(g->ro);
    if (g->rt) gsl_rng_free(g->rt);
    memset(g, 0, sizeof *g);
}

static int closed_gen_init(ClosedGen *g, const cJSON *wj, const char *where, const char *base_dir, uint64_t seed,
                           Workload *w, uint64_t max_requests, Err *e)
{
    static const char *const own[] = {"kind", "clients", "count", "think_ms", "start_ms", "prompt_tokens",
                                      "output_tokens", "warmup_requests", "dataset_entries", NULL};
    memset(g, 0, sizeof *g);
    if (gen_attr_check_keys(wj, where, own, e) < 0) return -1;
    int64_t clients;
    double start_ms = 0;
    if (jsonio_int(wj, "clients", where, 1, 1, GEN_CLOSED_MAX_CLIENTS, &clients, e) < 0) return -1;
    if (jsonio_int(wj, "count", where, 1, 1, INT64_MAX, &g->count, e) < 0) return -1;
    if ((uint64_t)g->count > max_requests)
        return err_set(e, "%s.count: got %lld, more than the %llu requests a workload may hold; %s", where,
                       (long long)g->count, (unsigned long long)max_requests,
                       max_requests == WL_STREAM_MAX_REQUESTS ? WL_STREAM_MAX_HINT : WL_MAX_REQUESTS_HINT);
    if (jsonio_num(wj, "start_ms", where, 0, 0, 1e12, &start_ms, e) < 0) return -1;
    /* a benchmark client's warm-up (aiperf --warmup-request-count, vLLM's
     * benchmark): the first `warm` requests run as their own closed loop,
     * and the measured ones start together once every warm-up response
     * has arrived (a barrier) */
    if (jsonio_int(wj, "warmup_requests", where, 0, 0, g->count - 1, &g->warm, e) < 0) return -1;
    if (jsonio_int(wj, "dataset_entries", where, 0, 0, GEN_CLOSED_MAX_ENTRIES, &g->entries, e) < 0) return -1;
    if (gen_dist_time_key(wj, "think_ms", where, &g->think, e) < 0) return -1;
    if (gen_dist_len_key(wj, "prompt_tokens", where, base_dir, 1, &g->pd, e) < 0) return -1;
    if (gen_dist_len_key(wj, "output_tokens", where, base_dir, 1, &g->od, e) < 0) return -1;
    if (gen_attr_parse(wj, where, base_dir, seed, 1, w, &g->attrs, e) < 0) return -1;
    g->rp = rng_stream(seed, RNG_STREAM_PROMPT);
    g->ro = rng_stream(seed, RNG_STREAM_OUTPUT);
    g->rt = rng_stream(seed, WL_STREAM_THINK);
    g->t0_ns = llround(start_ms * 1e6);
    g->c_n = (uint32_t)clients;
    g->wn = (uint32_t)g->warm;
    return 0;
}

/* Request g->i into *q.  src: request i - entries's lengths when i
 * reuses a dataset entry (NULL otherwise). */
static void closed_gen_next(ClosedGen *g, const ClosedReq *src, ClosedReq *q)
{
    uint64_t i = g->i++;
    const GenMix *m = q->m = gen_attr_pick(&g->attrs);
    q->adapter = g->attrs.adapter;
    if (src) {
        /* a reused dataset entry: request i - N's prompt and lengths */
        q->prompt = src->prompt;
        q->output = src->output;
    } else {
        q->prompt = gen_dist_len_draw(m && m->has_prompt ? &m->prompt : &g->pd, g->rp);
        q->output = gen_dist_len_draw(m && m->has_output ? &m->output : &g->od, g->ro);
    }
    /* position in its phase: warm-up requests 0..wn-1, measured ones after */
    uint64_t j = i < g->wn ? i : i - g->wn;
    q->think_ns = j >= g->c_n ? gen_dist_time_draw_ns(&g->think, g->rt) : 0;
}

static int gen_closed_build(const cJSON *wj, const char *where, const char *base_dir, uint64_t seed, Workload *w,
                            Err *e)
{
    ClosedGen g;
    int rc = closed_gen_init(&g, wj, where, base_dir, seed, w, workload_max_requests(), e);
    if (rc < 0) {
        closed_gen_free(&g);
        return -1;
    }
    uint32_t c_n = g.c_n, wn = g.wn;
    int64_t entries = g.entries;
    for (uint32_t i = 0; i < (uint32_t)g.count; i++) {
        ClosedReq q, src;
        if (entries > 0 && i >= (uint64_t)entries)
            src = (ClosedReq){.prompt = w->reqs[i - entries].prompt_tokens, .output = w->reqs[i - entries].output_tokens};
        closed_gen_next(&g, entries > 0 && i >= (uint64_t)entries ? &src : NULL, &q);
        Request *r = workload_push(w);
        r->prompt_tokens = q.prompt;
        r->output_tokens = q.output;
        if (entries > 0) gen_closed_entry_hashes(w, r, (uint64_t)i % (uint64_t)entries);
        r->t_arrive_ns = g.t0_ns;
        uint32_t j = i < wn ? i : i - wn;
        if (i < wn) workload_set_id(w, i, "w%u.%u", j % c_n, j / c_n);
        else workload_set_id(w, i, "c%u.%u", j % c_n, j / c_n);
        gen_attr_apply(&g.attrs, q.m, w, i);
        if (j >= c_n) {
            workload_link(w, i - c_n, i, q.think_ns);
        } else if (i >= wn && wn > 0) {
            r = &w->reqs[i];
            r->triggered = 1;
            r->barrier_waiter = 1;
            r->t_arrive_ns = -1;
        }
        if (i < wn) w->reqs[i].barrier_member = 1;
    }
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
    closed_gen_free(&g);
    return 0;
}

/* ------------------------------------------------------------ streaming */


/* A stream's requests made but not yet taken: request i (creation order)
 * is made when it is first needed -- its predecessor leaving asks for its
 * think time -- and every earlier one with it, so the draws stay in
 * creation order; the ring holds them from the first one not yet taken
 * (lo) to the last one made (hi).  The client's first requests arrive at
 * start_ms; client c's k-th request is index k * clients + c, its seq. */
struct ClosedStream {
    ClosedGen g;
    char where[512];
    ClosedReq *ring;
    uint8_t *taken;
    uint64_t cap, lo, hi;       /* cap a power of two */
    ClosedReq *ent;             /* dataset entries: the lengths of the last `entries` requests (by i mod entries) */
    uint64_t *hash;             /* one request's block hashes (valid until the next call) */
    uint32_t hash_cap;
    uint64_t n_first;           /* the clients' first requests pulled */
    /* an engine profile's client (workload_stream_client), applied as
     * each request is made, in creation order (= workload order) */
    gsl_rng *rs, *rj;
    uint32_t end_spread;
    double jitter_s, jitter_per_token_s;
    uint32_t *prev_out;         /* per client: the output of its last request made in this phase */
    char id[48];
    int flat;
};

ClosedStream *closed_stream_open(const cJSON *wj, const char *where, const char *base_dir, uint64_t seed,
                                 Workload *names, Err *e)
{
    ClosedStream *cs = xcalloc(1, sizeof *cs);
    snprintf(cs->where, sizeof cs->where, "%s", where);
    if (closed_gen_init(&cs->g, wj, where, base_dir, seed, names, WL_STREAM_MAX_REQUESTS, e) < 0) {
        closed_stream_free(cs);
        return NULL;
    }
    if (cs->g.entries > 0) {
        /* the dataset's lengths, 8 B an entry (as many as the run makes):
         * the dataset the workload declares, at most 10^8 entries */
        uint64_t n = (uint64_t)cs->g.entries < (uint64_t)cs->g.count ? (uint64_t)cs->g.entries : (uint64_t)cs->g.count;
        cs->ent = xcalloc(n, sizeof *cs->ent);
    }
    return cs;
}

void closed_stream_flat(ClosedStream *cs) { cs->flat = 1; }
int closed_stream_may_cancel(const ClosedStream *cs) { return cs->g.attrs.rc != NULL; }

void closed_stream_client(ClosedStream *cs, uint64_t seed, uint32_t end_spread, double jitter_s,
                          double jitter_per_token_s)
{
    cs->end_spread = end_spread;
    if (end_spread && !cs->rs) cs->rs = rng_stream(seed, RNG_STREAM_END_SPREAD);
    if (jitter_s > 0 || jitter_per_token_s > 0) {
        cs->jitter_s = jitter_s;
        cs->jitter_per_token_s = jitter_per_token_s;
        if (!cs->rj) cs->rj = rng_stream(seed, RNG_STREAM_CLIENT_JITTER);
        if (!cs->prev_out) cs->prev_out = xcalloc(cs->g.c_n, sizeof *cs->prev_out);
    }
}

/* The engine profile's client on request i, just made (scenario.c's two
 * passes, each in workload order, which is creation order here). */
static void closed_client(ClosedStream *cs, uint64_t i, ClosedReq *q)
{
    ClosedGen *g = &cs->g;
    if (cs->rs) {
        int64_t d = cs->end_spread;
        int64_t k = (int64_t)gsl_rng_uniform_int(cs->rs, (unsigned long)(2 * d + 1)) - d;
        int64_t out = (int64_t)q->output + k;
        if (out < 1) out = 1;
        if (out > WL_LEN_MAX) out = WL_LEN_MAX;
        q->output = q->max_output = (uint32_t)out;
    }
    if (!cs->rj) return;
    int warm = i < g->wn;
    uint64_t j = warm ? i : i - g->wn;
    uint32_t c = (uint32_t)(j % g->c_n);
    /* triggered: all but the clients' first requests of the first phase;
     * a barrier waiter's mean takes its own output */
    int untriggered = j < g->c_n && (warm || g->wn == 0);
    if (!untriggered) {
        double toks = j < g->c_n ? q->output : cs->prev_out[c];
        double mean = cs->jitter_s + cs->jitter_per_token_s * toks;
        q->think_ns += mean > 0 ? llround(gsl_ran_exponential(cs->rj, mean) * 1e9) : 0;
    }
    cs->prev_out[c] = q->output;
}

void closed_stream_free(ClosedStream *cs)
{
    if (!cs) return;
    closed_gen_free(&cs->g);
    if (cs->rs) gsl_rng_free(cs->rs);
    if (cs->rj) gsl_rng_free(cs->rj);
    free(cs->prev_out);
    free(cs->ring);
    free(cs->taken);
    free(cs->ent);
    free(cs->hash);
    free(cs);
}

/* Makes every request up to index i (< count) and returns i's. */
static ClosedReq *closed_make_to(ClosedStream *cs, uint64_t i)
{
    ClosedGen *g = &cs->g;
    while (cs->hi <= i) {
        if (cs->hi - cs->lo == cs->cap) {
            uint64_t cap = cs->cap ? 2 * cs->cap : 1024;
            ClosedReq *ring = xmalloc(cap * sizeof *ring);
            uint8_t *taken = xmalloc(cap);
            for (uint64_t k = cs->lo; k < cs->hi; k++) {
                ring[k & (cap - 1)] = cs->ring[k & (cs->cap - 1)];
                taken[k & (cap - 1)] = cs->taken[k & (cs->cap - 1)];
            }
            free(cs->ring);
            free(cs->taken);
            cs->ring = ring;
            cs->taken = taken;
            cs->cap = cap;
        }
        uint64_t k = cs->hi++, e = (uint64_t)g->entries;
        ClosedReq *q = &cs->ring[k & (cs->cap - 1)];
        const ClosedReq *src = e > 0 && k >= e ? &cs->ent[k % e] : NULL;
        closed_gen_next(g, src, q);
        q->max_output = 0;
        q->cancel_after_ns = cs->flat ? 0 : gen_attr_cancel(&g->attrs);
        if (e > 0) cs->ent[k % e] = *q; /* the lengths before the spread, as the dataset's */
        closed_client(cs, k, q);
        cs->taken[k & (cs->cap - 1)] = 0;
    }
    return &cs->ring[i & (cs->cap - 1)];
}

/* Request i into r; it leaves the ring. */
static void closed_fill(ClosedStream *cs, uint64_t i, Request *r)
{
    ClosedGen *g = &cs->g;
    const ClosedReq *q = closed_make_to(cs, i);
    const GenAttrs *a = &g->attrs;
    const GenMix *m = q->m;
    request_init(r);
    r->prompt_tokens = q->prompt;
    r->output_tokens = q->output;
    r->max_output_tokens = q->max_output;
    r->cancel_after_ns = q->cancel_after_ns;
    /* warm-up requests 0..wn-1 are a closed loop of their own; the
     * measured ones are positioned after them (gen_closed_build) */
    int warm = i < g->wn;
    uint64_t j = warm ? i : i - g->wn;
    uint32_t c = (uint32_t)(j % g->c_n);
    uint64_t k = j / g->c_n;
    snprintf(cs->id, sizeof cs->id, "%c%u.%llu", warm ? 'w' : 'c', c, (unsigned long long)k);
    r->id = cs->id;
    r->tenant = m ? m->tenant : a->tenant;
    r->cls = m ? m->cls : a->cls;
    r->priority = m ? m->priority : a->priority;
    r->adapter = q->adapter;
    int64_t d = m ? m->deadline_ns : a->deadline_ns;
    if (k == 0 && (warm || g->wn == 0)) {
        r->t_arrive_ns = g->t0_ns;
        if (d >= 0) r->deadline_ns = r->t_arrive_ns + d;
    } else {
        r->think_ns = q->think_ns;
        r->deadline_after_ns = d;
    }
    if (g->entries > 0) {
        /* the dataset entry's block hashes, as gen_closed_entry_hashes makes them */
        uint32_t n = (r->prompt_tokens + WL_HASH_BLOCK_TOKENS - 1) / WL_HASH_BLOCK_TOKENS;
        if (n > cs->hash_cap) {
            cs->hash = xrealloc(cs->hash, n * sizeof *cs->hash);
            cs->hash_cap = n;
        }
        uint64_t ent = i % (uint64_t)g->entries;
        for (uint32_t b = 0; b < n; b++) cs->hash[b] = 0x5eed0000000000ULL ^ (ent << 20) ^ b;
        r->hash_ids = cs->hash;
        r->n_hash_ids = n;
        r->hash_block_tokens = WL_HASH_BLOCK_TOKENS;
    }
    /* tasks: the warm-up clients' chains, then the measured clients' (a
     * barrier waiter starts one); chain: the index of the request this
     * one triggers */
    uint64_t end = warm ? g->wn : (uint64_t)g->count, n_warm = g->wn < g->c_n ? g->wn : g->c_n;
    r->seq = i;
    r->task = (uint32_t)(warm ? c : n_warm + c);
    r->task_link = (uint32_t)k;
    r->task_last = i + g->c_n >= end;
    r->chain = r->task_last ? REQ_NONE : (uint32_t)(i + g->c_n);
    r->barrier_member = (uint8_t)warm;
    cs->taken[i & (cs->cap - 1)] = 1;
    while (cs->lo < cs->hi && cs->taken[cs->lo & (cs->cap - 1)]) cs->lo++;
}

int closed_stream_next(ClosedStream *cs, Request *r, Err *e)
{
    (void)e;
    ClosedGen *g = &cs->g;
    /* the clients' first requests (all at start_ms), or every request
     * in creation order for a pass that only sums */
    uint64_t i = cs->flat ? cs->hi : cs->n_first, n_first = g->wn ? g->wn : (uint64_t)g->count;
    if (n_first > g->c_n) n_first = g->c_n;
    if (i >= (uint64_t)g->count || (!cs->flat && i >= n_first)) return 0;
    cs->n_first++;
    closed_fill(cs, i, r);
    if (cs->flat) r->chain = REQ_NONE;
    return 1;
}

int closed_stream_follow(ClosedStream *cs, const Request *pred, int64_t *think_ns)
{
    if (pred->chain == REQ_NONE || pred->chain >= (uint64_t)cs->g.count || pred->chain < cs->lo) return 0;
    *think_ns = closed_make_to(cs, pred->chain)->think_ns;
    return 1;
}

int closed_stream_pull_follow(ClosedStream *cs, uint32_t chain, Request *r, Err *e)
{
    if (chain >= cs->hi || chain < cs->lo || cs->taken[chain & (cs->cap - 1)])
        return err_set(e, "internal: %s: request %u is not waiting to be made", cs->where, chain);
    closed_fill(cs, chain, r);
    return 1;
}

uint32_t closed_stream_barrier(const ClosedStream *cs, uint32_t *first_waiter, uint32_t *n_waiters)
{
    const ClosedGen *g = &cs->g;
    uint64_t left = (uint64_t)g->count - g->wn;
    *first_waiter = g->wn;
    *n_waiters = g->wn ? (uint32_t)(left < g->c_n ? left : g->c_n) : 0;
    return g->wn;
}

static const char *const closed_kinds[] = {"closed_loop", NULL};

const WlSource wl_source_closed = {.kinds = closed_kinds, .build = gen_closed_build};
