/*
 * cost.c -- linear and roofline iteration cost models (see cost.h).
 *
 * Both are pure functions of the batch: no state changes between calls, so
 * the engine may call them in any order and runs stay deterministic.
 */
#include "cost.h"

#include <math.h>
#include <stdlib.h>

/* ----------------------------------------------------------------- linear */

static int linear_time(void *ctx, const BatchItem *items, uint32_t n, CostBreakdown *out)
{
    const LinearCostCfg *c = ctx;
    double tokens = 0, pairs = 0;
    for (uint32_t i = 0; i < n; i++) {
        tokens += items[i].c;
        pairs += batch_pairs(items[i].c, items[i].h);
    }
    *out = (CostBreakdown){0};
    out->overhead_s = c->fixed_s;
    out->gemm_s = c->per_token_s * tokens;
    out->attn_s = c->per_pair_s * pairs;
    out->t_s = out->overhead_s + out->gemm_s + out->attn_s;
    return 0;
}

int cost_linear_new(const LinearCostCfg *cfg, CostModel *out, Err *e)
{
    if (!(cfg->fixed_s >= 0) || !(cfg->per_token_s >= 0) || !(cfg->per_pair_s >= 0))
        return err_set(e, "cost_model: linear coefficients must be >= 0");
    if (cfg->fixed_s + cfg->per_token_s + cfg->per_pair_s <= 0)
        return err_set(e, "cost_model: linear coefficients are all zero; iterations would take no time");
    LinearCostCfg *c = xmalloc(sizeof *c);
    *c = *cfg;
    *out = (CostModel){.name = "linear", .ctx = c, .iter_time = linear_time, .destroy = free};
    return 0;
}

/* --------------------------------------------------------------- roofline */

typedef struct Roofline {
    RooflineCfg cfg;
    double peak;          /* FLOP/s for the compute dtype */
    double layer_w_bytes; /* all decoder layers' weights, per GPU */
    double head_w_bytes;  /* LM head (+ final norm), per GPU */
} Roofline;

double cost_flops(const ModelDesc *m, const BatchItem *items, uint32_t n)
{
    double tokens = 0, pairs = 0, samples = 0;
    for (uint32_t i = 0; i < n; i++) {
        tokens += items[i].c;
        pairs += batch_pairs(items[i].c, items[i].h);
        samples += items[i].kind == ITEM_VERIFY ? items[i].c : items[i].samples;
    }
    return m->flops_per_token * tokens + m->flops_per_pair * pairs + m->lm_head_flops * samples;
}

static double roof(double flops, double peak_eff, double bytes, double bw_eff)
{
    double tc = flops > 0 ? flops / peak_eff : 0;
    double tm = bytes > 0 ? bytes / bw_eff : 0;
    return tc > tm ? tc : tm;
}

static int roofline_time(void *ctx, const BatchItem *items, uint32_t n, CostBreakdown *out)
{
    const Roofline *r = ctx;
    const ModelDesc *m = &r->cfg.model;
    const HwDesc *h = &r->cfg.hw;
    const double tp = r->cfg.tp, k = r->cfg.kv_bytes_per_token;
    double tokens = 0, samples = 0;
    double pp = 0, pre_read = 0, pre_write = 0; /* prefill attention */
    double dp = 0, dec_read = 0, dec_write = 0; /* decode/verify attention */
    for (uint32_t i = 0; i < n; i++) {
        const BatchItem *it = &items[i];
        double c = it->c, pairs = batch_pairs(it->c, it->h);
        tokens += c;
        samples += it->kind == ITEM_VERIFY ? c : it->samples;
        if (it->kind == ITEM_PREFILL) {
            pp += pairs;
            pre_read += ((double)it->h + c) * k;
            pre_write += c * k;
        } else {
            dp += pairs;
            dec_read += ((double)it->h + c) * k;
            dec_write += c * k;
        }
    }
    *out = (CostBreakdown){0};
    if (n == 0) return 0;
    const double bw = h->mem_bw_bytes_per_s;
    double gemm_eff = effcurve_at(&h->gemm_compute_eff, tokens);

    double f_gemm = m->flops_per_token * tokens / tp;
    out->gemm_s = roof(f_gemm, r->peak * gemm_eff, r->layer_w_bytes, bw * h->mem_eff);

    double f_pre = m->flops_per_pair * pp / tp, b_pre = (pre_read + pre_write) / tp;
    double f_dec = m->flops_per_pair * dp / tp, b_dec = (dec_read + dec_write) / tp;
    out->attn_s = roof(f_pre, r->peak * h->attn_compute_eff, b_pre, bw * h->attn_mem_eff) +
                  roof(f_dec, r->peak * h->attn_compute_eff, b_dec, bw * h->attn_mem_eff);

    double f_head = m->lm_head_flops * samples / tp;
    if (samples > 0)
        out->lm_head_s = roof(f_head, r->peak * effcurve_at(&h->gemm_compute_eff, samples),
                              r->head_w_bytes, bw * h->mem_eff);

    if (r->cfg.tp > 1) {
        /* Ring all-reduce of the step's hidden states, twice per layer:
         * 2 (tp-1)/tp of the payload crosses each link. */
        double payload = tokens * m->hidden * r->cfg.act_bytes;
        double one = h->link_latency_s + 2.0 * (tp - 1) / tp * payload / h->link_bw_bytes_per_s;
        out->comm_s = 2.0 * m->layers * one;
    }
    out->overhead_s = h->iter_overhead_s;
    out->t_s = out->gemm_s + out->attn_s + out->lm_head_s + out->comm_s + out->overhead_s;
    out->flops = (f_gemm + f_pre + f_dec + f_head) * tp;
    out->bytes = (r->layer_w_bytes + (samples > 0 ? r->head_w_bytes : 0)) * tp + pre_read + pre_write +
                 dec_read + dec_write;
    return 0;
}

int cost_roofline_new(const RooflineCfg *cfg, CostModel *out, Err *e)
{
    const HwDesc *h = &cfg->hw;
    double peak = h->peak_flops[cfg->compute_dtype];
    if (!(peak > 0))
        return err_set(e, "hardware %s: no peak FLOP/s for compute dtype %s", h->name,
                       dtype_name(cfg->compute_dtype));
    if (cfg->tp < 1) return err_set(e, "tp: got %d, expected >= 1", cfg->tp);
    if (cfg->tp > 1 && !(h->link_bw_bytes_per_s > 0))
        return err_set(e, "hardware %s: tp %d needs link_bw_bytes_per_s > 0", h->name, cfg->tp);
    if (!(h->mem_bw_bytes_per_s > 0) || !(h->mem_eff > 0) || !(h->attn_mem_eff > 0) ||
        !(h->attn_compute_eff > 0))
        return err_set(e, "hardware %s: bandwidth and efficiencies must be > 0", h->name);
    Roofline *r = xcalloc(1, sizeof *r);
    r->cfg = *cfg;
    r->peak = peak;
    const ModelDesc *m = &cfg->model;
    double head_params = (double)m->lm_head_params + m->hidden;
    r->head_w_bytes = dtype_bytes(m->weight_dtype, head_params) / cfg->tp;
    r->layer_w_bytes = (m->weights_read_bytes - dtype_bytes(m->weight_dtype, head_params)) / cfg->tp;
    *out = (CostModel){.name = "roofline", .ctx = r, .iter_time = roofline_time, .destroy = free};
    return 0;
}

/* ------------------------------------------------------- analytic helpers */

double cost_bytes_per_output_token(const ModelDesc *m, double kv_bytes_per_token, double b, double L)
{
    return m->weights_read_bytes / b + L * kv_bytes_per_token;
}

uint64_t cost_kv_crossover_batch(const ModelDesc *m, double kv_bytes_per_token, double L)
{
    return (uint64_t)ceil(m->weights_read_bytes / (L * kv_bytes_per_token));
}
