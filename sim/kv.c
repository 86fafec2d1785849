/*
 * kv.c -- counting block pool behind the KvPolicy interface (see kv.h).
 *
 * The pool does not track physical block ids: without sharing, only the
 * count matters for admission and preemption.  Block identity arrives with
 * prefix caching, which replaces this policy.
 */
#include "kv.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct KvPool {
    KvConfig cfg;
    uint64_t total;
    uint64_t used;
    uint32_t *held;     /* blocks each request holds here, by Request.idx */
    uint32_t cap;
} KvPool;

/* This pool's count for r: its own, not Request.kv_blocks, so that two
 * pools (a disaggregated prefill and decode replica) can hold one request
 * at once. */
static uint32_t *held(KvPool *p, const Request *r)
{
    if (r->idx >= p->cap) {
        uint32_t cap = p->cap ? p->cap : 64;
        while (cap <= r->idx) cap *= 2;
        p->held = xrealloc(p->held, cap * sizeof *p->held);
        memset(p->held + p->cap, 0, (cap - p->cap) * sizeof *p->held);
        p->cap = cap;
    }
    return &p->held[r->idx];
}

const char *kv_reserve_name(KvReserve mode)
{
    switch (mode) {
    case KV_RESERVE_MAX: return "max";
    case KV_RESERVE_FINAL: return "final";
    case KV_RESERVE_ON_DEMAND: return "on_demand";
    }
    return "?";
}

uint64_t kv_reserve_tokens(KvReserve mode, const Request *r, uint32_t max_tokens)
{
    switch (mode) {
    case KV_RESERVE_MAX: {
        uint64_t t = (uint64_t)r->prompt_tokens + r->max_output_tokens;
        if (r->max_output_tokens == 0 && max_tokens) t = max_tokens;
        return t;
    }
    case KV_RESERVE_FINAL:
        /* Recompute after preemption feeds prompt + generated, never more
         * than the final length. */
        return (uint64_t)r->prompt_tokens + r->output_tokens - 1;
    case KV_RESERVE_ON_DEMAND:
        return 0;
    }
    return 0;
}

double kv_block_bytes(const KvConfig *cfg)
{
    double per = cfg->bytes_per_token;
    if (cfg->snapshot_tokens && cfg->snapshot_bytes > 0) per += cfg->snapshot_bytes / cfg->snapshot_tokens;
    return (double)cfg->block_tokens * per;
}

uint64_t kv_seq_blocks(const KvConfig *cfg, uint64_t tokens)
{
    uint64_t b = kv_blocks_for(tokens, cfg->block_tokens);
    if (tokens == 0 || (cfg->window_bytes_per_token <= 0 && cfg->fixed_bytes <= 0)) return b;
    double win = tokens < cfg->window_tokens ? (double)tokens : (double)cfg->window_tokens;
    double extra = win * cfg->window_bytes_per_token + cfg->fixed_bytes;
    return b + (uint64_t)ceil(extra / kv_block_bytes(cfg));
}

static uint64_t pool_need(void *ctx, const Request *r)
{
    KvPool *p = ctx;
    /* on_demand grows to the final length before the request finishes:
     * a request whose final length exceeds the pool can never complete. */
    KvReserve mode = p->cfg.reserve == KV_RESERVE_ON_DEMAND ? KV_RESERVE_FINAL : p->cfg.reserve;
    return kv_seq_blocks(&p->cfg, kv_reserve_tokens(mode, r, p->cfg.max_tokens));
}

static int pool_take(KvPool *p, const Request *r, uint64_t want_blocks)
{
    uint32_t *h = held(p, r);
    if (want_blocks <= *h) return 1;
    uint64_t extra = want_blocks - *h;
    if (!p->cfg.unbounded && p->used + extra > p->total) return 0;
    p->used += extra;
    *h = (uint32_t)want_blocks;
    return 1;
}

static int pool_admit(void *ctx, Request *r, uint32_t first_chunk)
{
    KvPool *p = ctx;
    uint64_t tokens = p->cfg.reserve == KV_RESERVE_ON_DEMAND
                          ? (uint64_t)r->kv_len + first_chunk
                          : kv_reserve_tokens(p->cfg.reserve, r, p->cfg.max_tokens);
    return pool_take(p, r, kv_seq_blocks(&p->cfg, tokens));
}

static int pool_grow(void *ctx, Request *r, uint32_t kv_len)
{
    KvPool *p = ctx;
    return pool_take(p, r, kv_seq_blocks(&p->cfg, kv_len));
}

static void pool_release(void *ctx, Request *r)
{
    KvPool *p = ctx;
    uint32_t *h = held(p, r);
    if (NEVER(*h > p->used)) p->used = *h;
    p->used -= *h;
    *h = 0;
}

static uint32_t pool_blocks_of(void *ctx, const Request *r)
{
    const KvPool *p = ctx;
    return r->idx < p->cap ? p->held[r->idx] : *held(ctx, r);
}

static int pool_fork(void *ctx, Request *parent, Request *child)
{
    KvPool *p = ctx;
    if (!pool_take(p, child, *held(p, parent))) return 0;
    child->kv_len = parent->kv_len;
    return 1;
}

static uint64_t pool_used(void *ctx) { return ((KvPool *)ctx)->used; }
static uint64_t pool_total(void *ctx) { return ((KvPool *)ctx)->total; }
static void pool_destroy(void *ctx)
{
    free(((KvPool *)ctx)->held);
    free(ctx);
}

int kv_pool_new(const KvConfig *cfg, KvPolicy *out, Err *e)
{
    if (cfg->block_tokens == 0) return err_set(e, "kv.block_tokens: must be >= 1");
    if (!(cfg->bytes_per_token > 0)) return err_set(e, "kv: bytes per token must be > 0");
    double block_bytes = kv_block_bytes(cfg);
    double blocks = floor(cfg->capacity_bytes / block_bytes);
    if (!cfg->unbounded && blocks < 1)
        return err_set(e, "kv: capacity %.0f B holds no block of %u tokens (%.0f B); "
                          "give kv.capacity_gib or a larger GPU",
                       cfg->capacity_bytes, cfg->block_tokens, block_bytes);
    KvPool *p = xcalloc(1, sizeof *p);
    p->cfg = *cfg;
    p->total = cfg->unbounded ? UINT64_MAX / 4 : (uint64_t)blocks;
    *out = (KvPolicy){
        .name = "blocks",
        .ctx = p,
        .admit = pool_admit,
        .grow = pool_grow,
        .release = pool_release,
        .blocks_of = pool_blocks_of,
        .fork = pool_fork,
        .need_blocks = pool_need,
        .used_blocks = pool_used,
        .total_blocks = pool_total,
        .destroy = pool_destroy,
        /* ceil(len / B) blocks, nothing else, when no window or fixed bytes */
        .grow_block_tokens = cfg->window_bytes_per_token <= 0 && cfg->fixed_bytes <= 0 ? cfg->block_tokens : 0,
    };
    return 0;
}

int kv_admit_whole_prompt(KvPolicy *kv, Request *r)
{
    if (!kv->admit(kv->ctx, r, r->prefill_target)) return 0;
    if (!kv->grow(kv->ctx, r, r->prefill_target)) return 0;
    r->kv_len = r->prefill_target;
    kv->commit(kv->ctx, r);
    return 1;
}
