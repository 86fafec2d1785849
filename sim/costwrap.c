/*
 * costwrap.c -- padding and conversion costs around a cost model (see
 * costwrap.h).  The padded batch is built in a buffer owned by the wrapper,
 * grown by doubling: no allocation per iteration once warm.
 */
#include "costwrap.h"

#include <stdlib.h>
#include <string.h>

typedef struct CostWrap {
    CostWrapCfg cfg;
    CostModel inner;
    BatchItem *buf;
    uint32_t cap;
} CostWrap;

/* The smallest captured size >= n (the sizes ascend; up to
 * COSTWRAP_SIZES_MAX of them, so a binary search: this runs every
 * iteration), or n when none is. */
uint32_t costwrap_padded(const CostWrapCfg *cfg, uint32_t n)
{
    uint32_t lo = 0, hi = cfg->n_sizes;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (cfg->graph_sizes[mid] >= n) hi = mid;
        else lo = mid + 1;
    }
    return lo < cfg->n_sizes ? cfg->graph_sizes[lo] : n;
}

/* The exposed all-reduce of an iteration of `tokens` new tokens, added
 * to the communication and total time. */
static void wrap_allreduce(const CostWrap *w, double tokens, CostBreakdown *out)
{
    if (w->cfg.ar_s_per_token > 0 && tokens > w->cfg.ar_above_tokens) {
        double t = tokens * w->cfg.ar_s_per_token;
        out->comm_s += t;
        out->t_s += t;
    }
}

static int wrap_time(void *ctx, const BatchItem *items, uint32_t n, CostBreakdown *out)
{
    CostWrap *w = ctx;
    const BatchItem *use = items;
    uint32_t m = n;
    int decode_only = n > 0;
    uint32_t rows = 0;
    double tokens = 0; /* new tokens: prompt chunks and decode rows */
    for (uint32_t i = 0; i < n; i++) {
        tokens += items[i].c;
        if (items[i].kind == ITEM_PREFILL) decode_only = 0;
        else rows += items[i].c;
    }
    if ((decode_only || (w->cfg.mixed_graphs && rows > 0)) && w->cfg.n_sizes) {
        /* graphs are captured by rows: a verify round of m + 1 positions
         * takes m + 1 of them */
        m = n + costwrap_padded(&w->cfg, rows) - rows;
        if (m > n) {
            if (m > w->cap) {
                w->cap = m * 2;
                w->buf = xrealloc(w->buf, w->cap * sizeof *w->buf);
            }
            memcpy(w->buf, items, n * sizeof *items);
            for (uint32_t i = n; i < m; i++)
                w->buf[i] = (BatchItem){.req = UINT32_MAX, .c = 1, .h = 1, .kind = ITEM_DECODE, .samples = 1};
            use = w->buf;
        }
    }
    if (w->inner.iter_time(w->inner.ctx, use, m, out) != 0) return -1;
    wrap_allreduce(w, tokens, out);
    if (w->cfg.conversion_s_per_token > 0) {
        double read = 0;
        for (uint32_t i = 0; i < n; i++) read += (double)items[i].h + items[i].c;
        double t = read * w->cfg.conversion_s_per_token;
        out->attn_s += t;
        out->t_s += t;
    }
    if (w->cfg.has_host) {
        double host = w->cfg.host_base_s + w->cfg.host_per_seq_s * n;
        double t = w->cfg.overlap ? (out->t_s > host ? out->t_s : host) : out->t_s + host;
        out->overhead_s += t - out->t_s;
        out->t_s = t;
    }
    return 0;
}

/* wrap_time of a decode-only batch from its sums: the padded rows (one
 * cached token each) join the sums, the conversion reads sum_h + n tokens
 * (integers: the loop's sum, exact), the host time counts n sequences. */
static int wrap_decode(void *ctx, const CostDecodeAgg *agg, const BatchItem *items, uint32_t n,
                       CostBreakdown *out)
{
    CostWrap *w = ctx;
    if (!w->inner.decode_time) return 1;
    for (uint32_t i = 0; i < n; i++)
        if (items[i].kind != ITEM_PREFILL) return 1;
    CostDecodeAgg in = *agg;
    /* wrap_time pads a decode-only batch, or with mixed_graphs a mixed one,
     * by its decode rows: agg's */
    if (w->cfg.n_sizes && agg->n > 0 && (n == 0 || w->cfg.mixed_graphs)) {
        uint32_t m = costwrap_padded(&w->cfg, agg->n);
        if (m > agg->n) {
            in.sum_h += m - agg->n;
            in.n = m;
            if (in.min_h > 1) in.min_h = 1;
            if (in.max_h < 1) in.max_h = 1;
        }
    }
    int rc = w->inner.decode_time(w->inner.ctx, &in, items, n, out);
    if (rc != 0) return rc;
    if (w->cfg.ar_s_per_token > 0) {
        double tokens = agg->n;
        for (uint32_t i = 0; i < n; i++) tokens += items[i].c;
        wrap_allreduce(w, tokens, out);
    }
    if (w->cfg.conversion_s_per_token > 0) {
        double read = (double)agg->sum_h + agg->n;
        for (uint32_t i = 0; i < n; i++) read += (double)items[i].h + items[i].c;
        double t = read * w->cfg.conversion_s_per_token;
        out->attn_s += t;
        out->t_s += t;
    }
    if (w->cfg.has_host) {
        double host = w->cfg.host_base_s + w->cfg.host_per_seq_s * (agg->n + n);
        double t = w->cfg.overlap ? (out->t_s > host ? out->t_s : host) : out->t_s + host;
        out->overhead_s += t - out->t_s;
        out->t_s = t;
    }
    return 0;
}

static void wrap_destroy(void *ctx)
{
    CostWrap *w = ctx;
    if (w->inner.destroy) w->inner.destroy(w->inner.ctx);
    free(w->buf);
    free(w);
}

int costwrap_new(const CostWrapCfg *cfg, CostModel inner, CostModel *out, Err *e)
{
    for (uint32_t i = 0; i < cfg->n_sizes; i++)
        if (cfg->graph_sizes[i] < 1 || (i && cfg->graph_sizes[i] <= cfg->graph_sizes[i - 1]))
            return err_set(e, "engine.cuda_graph_sizes: expected ascending sizes >= 1 (entry %u is %u)", i,
                           cfg->graph_sizes[i]);
    if (!(cfg->conversion_s_per_token >= 0)) return err_set(e, "kv.conversion_ns_per_token: must be >= 0");
    if (!(cfg->ar_s_per_token >= 0)) return err_set(e, "engine.large_allreduce: the time per token must be >= 0");
    CostWrap *w = xcalloc(1, sizeof *w);
    w->cfg = *cfg;
    w->inner = inner;
    *out = (CostModel){.name = inner.name, .ctx = w, .iter_time = wrap_time, .destroy = wrap_destroy,
                       .decode_time = wrap_decode};
    return 0;
}
