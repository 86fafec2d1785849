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

typedef struct KvPool {
    KvConfig cfg;
    uint64_t total;
    uint64_t used;
} KvPool;

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

static uint64_t pool_need(void *ctx, const Request *r)
{
    KvPool *p = ctx;
    /* on_demand grows to the final length before the request finishes:
     * a request whose final length exceeds the pool can never complete. */
    KvReserve mode = p->cfg.reserve == KV_RESERVE_ON_DEMAND ? KV_RESERVE_FINAL : p->cfg.reserve;
    return kv_blocks_for(kv_reserve_tokens(mode, r, p->cfg.max_tokens), p->cfg.block_tokens);
}

static int pool_take(KvPool *p, Request *r, uint64_t want_blocks)
{
    if (want_blocks <= r->kv_blocks) return 1;
    uint64_t extra = want_blocks - r->kv_blocks;
    if (!p->cfg.unbounded && p->used + extra > p->total) return 0;
    p->used += extra;
    r->kv_blocks = (uint32_t)want_blocks;
    return 1;
}

static int pool_admit(void *ctx, Request *r, uint32_t first_chunk)
{
    KvPool *p = ctx;
    uint64_t tokens = p->cfg.reserve == KV_RESERVE_ON_DEMAND
                          ? (uint64_t)r->kv_len + first_chunk
                          : kv_reserve_tokens(p->cfg.reserve, r, p->cfg.max_tokens);
    return pool_take(p, r, kv_blocks_for(tokens, p->cfg.block_tokens));
}

static int pool_grow(void *ctx, Request *r, uint32_t kv_len)
{
    KvPool *p = ctx;
    return pool_take(p, r, kv_blocks_for(kv_len, p->cfg.block_tokens));
}

static void pool_release(void *ctx, Request *r)
{
    KvPool *p = ctx;
    if (NEVER(r->kv_blocks > p->used)) p->used = r->kv_blocks;
    p->used -= r->kv_blocks;
    r->kv_blocks = 0;
}

static int pool_fork(void *ctx, Request *parent, Request *child)
{
    KvPool *p = ctx;
    if (!pool_take(p, child, parent->kv_blocks)) return 0;
    child->kv_len = parent->kv_len;
    return 1;
}

static uint64_t pool_used(void *ctx) { return ((KvPool *)ctx)->used; }
static uint64_t pool_total(void *ctx) { return ((KvPool *)ctx)->total; }
static void pool_destroy(void *ctx) { free(ctx); }

int kv_pool_new(const KvConfig *cfg, KvPolicy *out, Err *e)
{
    if (cfg->block_tokens == 0) return err_set(e, "kv.block_tokens: must be >= 1");
    if (!(cfg->bytes_per_token > 0)) return err_set(e, "kv: bytes per token must be > 0");
    double block_bytes = (double)cfg->block_tokens * cfg->bytes_per_token;
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
        .fork = pool_fork,
        .need_blocks = pool_need,
        .used_blocks = pool_used,
        .total_blocks = pool_total,
        .destroy = pool_destroy,
    };
    return 0;
}
