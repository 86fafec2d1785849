/*
 * cost.c -- linear and roofline iteration cost models (see cost.h).
 *
 * Both are pure functions of the batch: the only state that changes
 * between calls is a profile-driven roofline's memo of per-row GEMM times
 * (a cache of the same pure function) and its extrapolation counters,
 * which are observations and never feed back into a time; so the engine
 * may call them in any order and runs stay deterministic.
 *
 * Units: seconds, FLOPs, bytes.
 */
#include "cost.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* ------------------------------------------------------------------ table */

double cost_table_at(const TableCostCfg *c, double x)
{
    /* the segment holding x, or the end segment beyond the table */
    int i = 1;
    while (i < c->n - 1 && x > c->x[i]) i++;
    double x0 = c->x[i - 1], x1 = c->x[i], t0 = c->t_s[i - 1], t1 = c->t_s[i];
    double t = t0 + (x - x0) * (t1 - t0) / (x1 - x0);
    return t > 0 ? t : 0;
}

static int table_time(void *ctx, const BatchItem *items, uint32_t n, CostBreakdown *out)
{
    const TableCostCfg *c = ctx;
    double tokens = 0, kv_tokens = 0;
    for (uint32_t i = 0; i < n; i++) {
        tokens += items[i].c;
        kv_tokens += (double)items[i].h + items[i].c;
    }
    double bytes = n ? model_weights_read_bytes_tokens(&c->model, tokens) + kv_tokens * c->kv_bytes_per_token : 0;
    *out = (CostBreakdown){0};
    out->bytes = bytes;
    out->flops = cost_flops(&c->model, items, n);
    /* a measured step is not split into classes: all of it is overhead */
    out->overhead_s = n ? cost_table_at(c, c->by_tokens ? tokens : bytes) : 0;
    out->t_s = out->overhead_s;
    return 0;
}

int cost_table_new(const TableCostCfg *cfg, CostModel *out, Err *e)
{
    if (cfg->n < 2 || cfg->n > COST_TABLE_MAX)
        return err_set(e, "cost_model.points: got %d points, expected 2 to %d", cfg->n, COST_TABLE_MAX);
    for (int i = 0; i < cfg->n; i++) {
        if (!(cfg->t_s[i] >= 0) || !isfinite(cfg->x[i]) || cfg->x[i] < 0)
            return err_set(e, "cost_model.points[%d]: got [%.6g, %.6g ms], expected x >= 0 and a time >= 0", i,
                           cfg->x[i], cfg->t_s[i] * 1e3);
        if (i > 0 && !(cfg->x[i] > cfg->x[i - 1]))
            return err_set(e, "cost_model.points[%d]: x %.6g does not exceed the previous point's %.6g (points must "
                              "ascend in %s)", i, cfg->x[i], cfg->x[i - 1], cfg->by_tokens ? "tokens" : "bytes");
    }
    TableCostCfg *c = xmalloc(sizeof *c);
    *c = *cfg;
    *out = (CostModel){.name = "table", .ctx = c, .iter_time = table_time, .destroy = free};
    return 0;
}

/* --------------------------------------------------------------- roofline */

/* One kind of GEMM in a decoder layer, per GPU after tensor parallelism. */
typedef struct RoofGemm {
    double n, k;
    int moe;       /* 1: an expert matrix, run once per touched expert */
} RoofGemm;

#define ROOF_GEMMS 6
#define ROOF_CACHE 16384 /* memoised layer-GEMM times for m = 1 .. this */

typedef struct Roofline {
    RooflineCfg cfg;
    double peak;          /* FLOP/s for the compute dtype */
    double layer_w_bytes; /* all decoder layers' weights, per GPU */
    double head_w_bytes;  /* LM head (+ final norm), per GPU */
    /* ---- profile-driven timing (cfg.hw.profile) ---- */
    int prof;                 /* 1 when the profile times GEMMs and attention */
    const ProfOp *gemm, *pre, *dec, *ar;
    const ProfOp *gemm_static; /* per-tensor FP8 with static scales: the BF16 class at FP8's bytes (below) */
    const ProfOp *head;       /* the LM head's class: gemm_bf16 (checkpoints keep it in BF16) */
    int n_gemm;
    RoofGemm g[ROOF_GEMMS];
    double head_n;            /* LM head output features per GPU */
    double in_b, w_b;         /* layer GEMM activation / weight bytes per element */
    double head_in_b, head_w_b; /* the LM head's */
    int fallback;             /* 1: the compute dtype's class is missing; r->gemm is the nearest */
    double qh, kvh, hd;       /* attention heads per GPU */
    double kv_b;              /* KV bytes per element (block formats included) */
    double experts, active;   /* MoE */
    double *gemm_t, *gemm_r;  /* memo: one layer's GEMM time and extrapolation at m rows; NAN unknown */
    double *head_t, *head_r;  /* memo: the LM head's, at m sampled rows */
    ProfSeq *seq;             /* attention launch buffer, grown by doubling */
    uint32_t seq_cap;
    CostExtrap ex;
} Roofline;

double cost_flops(const ModelDesc *m, const BatchItem *items, uint32_t n)
{
    double tokens = 0, pairs = 0, samples = 0, attn = 0;
    /* MLA decodes absorbed; sliding and recurrent layers by their own
     * counts (model_attn_flops).  A plain GQA model sums pairs as before. */
    const int own = m->attn == MODEL_ATTN_MLA || m->n_sliding > 0 || m->n_linear > 0;
    for (uint32_t i = 0; i < n; i++) {
        tokens += items[i].c;
        if (own)
            attn += model_attn_flops(m, items[i].c, items[i].h,
                                     m->attn == MODEL_ATTN_MLA && items[i].kind != ITEM_PREFILL);
        else
            pairs += batch_pairs(items[i].c, items[i].h);
        samples += items[i].kind == ITEM_VERIFY ? items[i].c : items[i].samples;
    }
    return m->flops_per_token * tokens + (own ? attn : m->flops_per_pair * pairs) + m->lm_head_flops * samples;
}

static double roof(double flops, double peak_eff, double bytes, double bw_eff)
{
    double tc = flops > 0 ? flops / peak_eff : 0;
    double tm = bytes > 0 ? bytes / bw_eff : 0;
    return tc > tm ? tc : tm;
}

/* Records how far one operator shape lay outside the profile's grid. */
static void cost_roof_note(Roofline *r, const ProfOp *op, const char *what, int feat, double ratio, double *worst)
{
    if (!(ratio > 1 + 1e-9)) return;
    if (ratio > *worst) *worst = ratio;
    if (ratio <= r->ex.worst_ratio) return;
    r->ex.worst_ratio = ratio;
    double lo = 0, hi = 0;
    for (int i = 0; i < op->n_grid; i++)
        if (op->grid_feat[i] == feat) {
            lo = op->grid_lo[i];
            hi = op->grid_hi[i];
        }
    snprintf(r->ex.worst, sizeof r->ex.worst, "%s: %s outside the measured %.6g .. %.6g (x%.3g)", what,
             profile_feat_name(feat), lo, hi, ratio);
}

/* One GEMM of class op at (m, n, k); *ratio its extrapolation.  A GEMM
 * wider than any measured one (Qwen3's 151,936-entry LM head against
 * NVIDIA's widest n = 65,536) is priced as ceil(n / n_max) GEMMs of equal
 * width inside the grid, summed: what a vocabulary-parallel or chunked LM
 * head runs, and no longer an extrapolation of the curves. */
static double cost_roof_gemm_one(const ProfOp *op, double m, double n, double k, double in_b, double w_b,
                                 double *ratio, int *which)
{
    double parts = 1;
    for (int i = 0; i < op->n_grid; i++)
        if (op->grid_feat[i] == PF_N && n > op->grid_hi[i]) parts = ceil(n / op->grid_hi[i]);
    double feat[PF_COUNT], f, b;
    profile_gemm_shape(m, n / parts, k, in_b, w_b, 2, feat, &f, &b);
    int w;
    double x = profile_extrapolation(op, feat, &w);
    if (x > *ratio) {
        *ratio = x;
        *which = w;
    }
    return parts * profile_op_time(op, feat, f, b);
}

/* One decoder layer's GEMMs at m token rows (memoised for m <= ROOF_CACHE). */
static double cost_roof_layer_gemm(Roofline *r, uint64_t m, double *ratio, int *which)
{
    if (m >= 1 && m <= ROOF_CACHE && !isnan(r->gemm_t[m - 1])) {
        *ratio = r->gemm_r[m - 1];
        *which = (int)r->gemm_r[ROOF_CACHE + m - 1];
        return r->gemm_t[m - 1];
    }
    double t = 0, worst = 1;
    int w = PF_NONE;
    for (int i = 0; i < r->n_gemm; i++) {
        double ratio1 = 1, rows = (double)m, times = 1;
        int w1 = PF_NONE;
        if (r->g[i].moe) {
            /* Tokens spread over the experts they pick; each touched
             * expert is one GEMM over its share of the rows. */
            double assigned = rows * r->active;
            times = assigned < r->experts ? assigned : r->experts;
            rows = assigned / times;
        }
        double t1 = cost_roof_gemm_one(r->gemm, rows, r->g[i].n, r->g[i].k, r->in_b, r->w_b, &ratio1, &w1);
        if (r->gemm_static) {
            /* An FP8 checkpoint with static activation scales (NVIDIA's
             * ModelOpt FP8 checkpoints) fuses the activation quantisation
             * into the op before the GEMM; the FP8 tables time a separate
             * dynamic-quantisation kernel with every call, which makes
             * small-m FP8 GEMMs slower than BF16 ones.  Such a GEMM takes
             * no longer than the BF16 kernel moving FP8's bytes. */
            double r2 = 1;
            int w2 = PF_NONE;
            double t2 = cost_roof_gemm_one(r->gemm_static, rows, r->g[i].n, r->g[i].k, r->in_b, r->w_b, &r2, &w2);
            if (t2 < t1) t1 = t2;
        }
        t += times * t1;
        if (ratio1 > worst) {
            worst = ratio1;
            w = w1;
        }
    }
    if (m >= 1 && m <= ROOF_CACHE) {
        r->gemm_t[m - 1] = t;
        r->gemm_r[m - 1] = worst;
        r->gemm_r[ROOF_CACHE + m - 1] = w;
    }
    *ratio = worst;
    *which = w;
    return t;
}

static ProfSeq *cost_roof_seq(Roofline *r, uint32_t n)
{
    if (n > r->seq_cap) {
        r->seq_cap = n > 2 * r->seq_cap ? n : 2 * r->seq_cap;
        r->seq = xrealloc(r->seq, r->seq_cap * sizeof *r->seq);
    }
    return r->seq;
}

/* Profile-driven times of the GEMM, attention, LM-head and all-reduce
 * classes; fills out's times (not FLOPs/bytes). */
static void cost_roof_profile_time(Roofline *r, const BatchItem *items, uint32_t n, double tokens, double samples,
                              CostBreakdown *out)
{
    const double layers = r->cfg.model.layers;
    double worst = 1, ratio;
    int which;
    out->gemm_s = layers * cost_roof_layer_gemm(r, (uint64_t)tokens, &ratio, &which);
    cost_roof_note(r, r->gemm, "layer GEMMs", which, ratio, &worst);
    if (r->fallback) worst = HUGE_VAL; /* every query priced by another class (ex.fallback) */
    if (samples > 0) {
        uint64_t ms = (uint64_t)samples;
        if (ms >= 1 && ms <= ROOF_CACHE && !isnan(r->head_t[ms - 1])) {
            out->lm_head_s = r->head_t[ms - 1];
            ratio = r->head_r[ms - 1];
            which = (int)r->head_r[ROOF_CACHE + ms - 1];
        } else {
            ratio = 1;
            which = PF_NONE;
            out->lm_head_s = cost_roof_gemm_one(r->head, samples, r->head_n, r->cfg.model.hidden, r->head_in_b,
                                                r->head_w_b, &ratio, &which);
            if (ms >= 1 && ms <= ROOF_CACHE) {
                r->head_t[ms - 1] = out->lm_head_s;
                r->head_r[ms - 1] = ratio;
                r->head_r[ROOF_CACHE + ms - 1] = which;
            }
        }
        cost_roof_note(r, r->head, "LM head", which, ratio, &worst);
    }
    /* Prefill chunks and speculative verify rows run in one varlen
     * FlashAttention launch per layer; single-token decodes in one paged
     * decode launch. */
    ProfSeq *s = cost_roof_seq(r, n);
    uint32_t np = 0;
    for (uint32_t i = 0; i < n; i++)
        if (items[i].kind != ITEM_DECODE) s[np++] = (ProfSeq){items[i].c, items[i].h};
    double attn = 0;
    if (np) {
        attn += profile_attn_time(r->pre, s, np, r->qh, r->kvh, r->hd, 2, r->kv_b, &ratio, &which);
        cost_roof_note(r, r->pre, "prefill attention", which, ratio, &worst);
    }
    uint32_t nd = 0;
    for (uint32_t i = 0; i < n; i++)
        if (items[i].kind == ITEM_DECODE) s[nd++] = (ProfSeq){items[i].c, items[i].h};
    if (nd) {
        attn += profile_attn_time(r->dec, s, nd, r->qh, r->kvh, r->hd, 2, r->kv_b, &ratio, &which);
        cost_roof_note(r, r->dec, "decode attention", which, ratio, &worst);
    }
    const ModelDesc *m = &r->cfg.model;
    if (m->n_sliding == 0 && m->n_linear == 0) {
        out->attn_s = layers * attn;
    } else {
        /* Hybrid models (issue 17): the measured launches price the full
         * layers; sliding layers run the same launches over at most the
         * window of cached keys; recurrent layers are priced by their
         * FLOPs and state traffic at the hardware file's attention
         * efficiencies (the profile has no such operator). */
        out->attn_s = m->n_full * attn;
        const double w = m->sliding_window;
        for (int kind = 0; m->n_sliding && kind < 2; kind++) {
            uint32_t ns = 0;
            for (uint32_t i = 0; i < n; i++)
                if ((items[i].kind == ITEM_DECODE) == kind)
                    s[ns++] = (ProfSeq){items[i].c, (double)items[i].h < w ? items[i].h : w};
            if (ns)
                out->attn_s += m->n_sliding * profile_attn_time(kind ? r->dec : r->pre, s, ns, r->qh, r->kvh, r->hd,
                                                                2, r->kv_b, &ratio, &which);
        }
        if (m->n_linear) {
            const HwDesc *h = &r->cfg.hw;
            double f = m->linear_flops_per_token * tokens / r->cfg.tp, b = 2.0 * n * m->linear_state_bytes / r->cfg.tp;
            out->attn_s += roof(f, r->peak * h->attn_compute_eff, b, h->mem_bw_bytes_per_s * h->attn_mem_eff);
        }
    }
    if (r->cfg.tp > 1 && r->ar) {
        double feat[PF_COUNT], f, b;
        profile_comm_shape(tokens * r->cfg.model.hidden * r->cfg.act_bytes, r->cfg.tp, feat, &f, &b);
        out->comm_s = 2.0 * layers * profile_op_time(r->ar, feat, f, b);
        int w;
        double x = profile_extrapolation(r->ar, feat, &w);
        cost_roof_note(r, r->ar, "all-reduce", w, x, &worst);
    }
    r->ex.queries++;
    if (worst > 1 + 1e-9) r->ex.outside++;
}

static int roofline_time(void *ctx, const BatchItem *items, uint32_t n, CostBreakdown *out)
{
    Roofline *r = ctx;
    const ModelDesc *m = &r->cfg.model;
    const HwDesc *h = &r->cfg.hw;
    const double tp = r->cfg.tp, k = r->cfg.kv_bytes_per_token;
    double tokens = 0, samples = 0;
    double pp = 0, pre_read = 0, pre_write = 0; /* prefill attention */
    double dp = 0, dec_read = 0, dec_write = 0; /* decode/verify attention */
    /* Hybrid models (issue 17): sliding layers' windowed pairs and KV (the
     * same bytes per layer as a full one), recurrent layers' per-token
     * FLOPs and their state read and written once per sequence and step. */
    const int hybrid = m->n_sliding > 0 || m->n_linear > 0;
    const double wk = hybrid && m->n_full > 0 ? k * m->n_sliding / m->n_full : 0;
    double hf_pre = 0, hf_dec = 0;
    for (uint32_t i = 0; i < n; i++) {
        const BatchItem *it = &items[i];
        double c = it->c, pairs = batch_pairs(it->c, it->h);
        tokens += c;
        samples += it->kind == ITEM_VERIFY ? c : it->samples;
        double xf = 0, xb = 0;
        if (hybrid) {
            double hw = m->sliding_window > 0 && (double)it->h + c > m->sliding_window ? m->sliding_window
                                                                                       : (double)it->h + c;
            xf = model_attn_flops(m, c, it->h, 0) - m->flops_per_pair * pairs;
            xb = hw * wk + c * wk + 2.0 * m->linear_state_bytes;
        }
        if (it->kind == ITEM_PREFILL) {
            pp += pairs;
            pre_read += ((double)it->h + c) * k + xb;
            pre_write += c * k;
            hf_pre += xf;
        } else {
            dp += pairs;
            dec_read += ((double)it->h + c) * k + xb;
            dec_write += c * k;
            hf_dec += xf;
        }
    }
    *out = (CostBreakdown){0};
    if (n == 0) return 0;
    const double bw = h->mem_bw_bytes_per_s;
    double f_gemm = m->flops_per_token * tokens / tp;
    double f_pre = m->flops_per_pair * pp / tp, b_pre = (pre_read + pre_write) / tp;
    double f_dec = m->flops_per_pair * dp / tp, b_dec = (dec_read + dec_write) / tp;
    if (m->attn == MODEL_ATTN_MLA) f_dec = m->flops_per_pair_absorbed * dp / tp; /* decode runs absorbed */
    if (hybrid) {
        f_pre += hf_pre / tp;
        f_dec += hf_dec / tp;
    }
    double f_head = m->lm_head_flops * samples / tp;

    if (r->prof) {
        cost_roof_profile_time(r, items, n, tokens, samples, out);
    } else {
        double gemm_eff = effcurve_at(&h->gemm_compute_eff, tokens);
        out->gemm_s = roof(f_gemm, r->peak * gemm_eff, r->layer_w_bytes, bw * h->mem_eff);
        out->attn_s = roof(f_pre, r->peak * h->attn_compute_eff, b_pre, bw * h->attn_mem_eff) +
                      roof(f_dec, r->peak * h->attn_compute_eff, b_dec, bw * h->attn_mem_eff);
        if (samples > 0)
            out->lm_head_s = roof(f_head, r->peak * effcurve_at(&h->gemm_compute_eff, samples),
                                  r->head_w_bytes, bw * h->mem_eff);
    }
    if (r->cfg.tp > 1 && !(r->prof && r->ar)) {
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

static void cost_roofline_free(void *ctx)
{
    Roofline *r = ctx;
    free(r->gemm_t);
    free(r->gemm_r);
    free(r->head_t);
    free(r->head_r);
    free(r->seq);
    free(r);
}

/* The GEMM class that prices compute dtype t, or the nearest the profile
 * has: block-scaled FP8 -> per-tensor FP8 -> BF16, NVFP4 -> block-scaled
 * FP8 -> ...  Each step is a kernel at least as slow per FLOP, so a
 * fallback overestimates rather than flatters; it is counted in every
 * query's extrapolation (cost_extrapolation: outside, fallback).  -1 when
 * nothing in the chain is there. */
static int cost_roof_gemm_class(const Profile *p, Dtype t, int *fallback)
{
    static const int chain[4] = {PROF_GEMM_NVFP4, PROF_GEMM_FP8_BLOCK, PROF_GEMM_FP8, PROF_GEMM_BF16};
    int want = profile_gemm_op(t), i = 0;
    *fallback = 0;
    if (want < 0) want = PROF_GEMM_BF16; /* NEVER: compute dtypes are checked by the caller */
    while (chain[i] != want) i++;
    for (; i < 4; i++)
        if (p->op[chain[i]].present) {
            *fallback = chain[i] != want;
            return chain[i];
        }
    return -1;
}

/* Shapes for the profile path: the layer's GEMMs per GPU, heads per GPU. */
static int cost_roof_profile_setup(Roofline *r, Err *e)
{
    const Profile *p = &r->cfg.hw.profile;
    const ModelDesc *m = &r->cfg.model;
    const Dtype cd = r->cfg.compute_dtype;
    const int want = profile_gemm_op(cd);
    if (want < 0)
        return err_set(e, "profile %s: compute dtype %s has no GEMM class (expected bf16, fp16, fp8, fp8_block or "
                          "nvfp4)", p->name, dtype_name(cd));
    int fb = 0, gk = cost_roof_gemm_class(p, cd, &fb);
    /* per KV element: kv_bytes_per_token covers the full-attention layers (all of them
     * in a plain model) */
    const double kv_b = r->cfg.kv_bytes_per_token / (2.0 * (m->n_full > 0 ? m->n_full : m->layers) * m->kv_heads * m->head_dim);
    /* An FP8 KV cache runs other attention kernels; a profile with their
     * classes prices them, one without scales the 16-bit ones by bytes. */
    const int fp8kv = kv_b == 1.0;
    int kp = fp8kv && p->op[PROF_ATTN_PREFILL_FP8KV].present ? PROF_ATTN_PREFILL_FP8KV : PROF_ATTN_PREFILL;
    int kd = fp8kv && p->op[PROF_ATTN_DECODE_FP8KV].present ? PROF_ATTN_DECODE_FP8KV : PROF_ATTN_DECODE;
    if (gk < 0 || !p->op[kp].present || !p->op[kd].present) {
        char missing[96] = "";
        const int need[3] = {gk < 0 ? want : gk, kp, kd};
        for (int i = 0; i < 3; i++)
            if (need[i] < 0 || !p->op[need[i]].present) {
                size_t len = strlen(missing);
                snprintf(missing + len, sizeof missing - len, "%s%s", len ? ", " : "", profile_op_name(need[i]));
            }
        return err_set(e, "profile %s: no %s model; a roofline with compute dtype %s needs %s, attn_prefill and "
                          "attn_decode (fit them, or detach the profile with \"profile\": \"none\")",
                       p->name, missing, dtype_name(cd), profile_op_name(want));
    }
    r->gemm = &p->op[gk];
    r->gemm_static = gk == PROF_GEMM_FP8 && p->op[PROF_GEMM_BF16].present ? &p->op[PROF_GEMM_BF16] : NULL;
    r->fallback = fb;
    r->head = p->op[PROF_GEMM_BF16].present ? &p->op[PROF_GEMM_BF16] : r->gemm;
    r->pre = &p->op[kp];
    r->dec = &p->op[kd];
    r->ar = p->op[PROF_ALLREDUCE].present ? &p->op[PROF_ALLREDUCE] : NULL;
    /* Operand bytes are the priced class's format (a BF16 checkpoint run
     * with FP8 compute is quantized on load); a fallback class keeps the
     * requested format's bytes, so memory-bound GEMMs scale by them.  GGML
     * block formats and FP32 weights (not in any kernel table) keep the
     * model's own bytes. */
    double out_b;
    profile_gemm_bytes(want, &r->in_b, &r->w_b, &out_b);
    const Dtype wd = m->weight_dtype;
    if (wd == DTYPE_Q8_0 || wd == DTYPE_Q4_0 || wd == DTYPE_FP32) r->w_b = dtype_bytes(wd, 1024) / 1024;
    if (r->head == &p->op[PROF_GEMM_BF16]) profile_gemm_bytes(PROF_GEMM_BF16, &r->head_in_b, &r->head_w_b, &out_b);
    else {
        r->head_in_b = r->in_b;
        r->head_w_b = r->w_b;
    }
    if (fb) {
        snprintf(r->ex.fallback, sizeof r->ex.fallback, "%s priced by %s (profile %s has no %s)",
                 profile_op_name(want), profile_op_name(gk), p->name, profile_op_name(want));
        snprintf(r->ex.worst, sizeof r->ex.worst, "%s", r->ex.fallback);
    }
    const double tp = r->cfg.tp, h = m->hidden, hd = m->head_dim;
    r->qh = (double)m->q_heads / tp;
    r->kvh = m->kv_heads >= r->cfg.tp ? (double)m->kv_heads / tp : 1; /* replicated below one per GPU */
    r->hd = hd;
    r->kv_b = kv_b;
    r->head_n = m->vocab / tp;
    double mats_up = m->gated_mlp ? 2.0 : 1.0;
    int g = 0;
    r->g[g++] = (RoofGemm){(r->qh + 2 * r->kvh) * hd, h, 0}; /* QKV */
    r->g[g++] = (RoofGemm){h, r->qh * hd, 0};                /* O */
    if (m->experts > 0) {
        r->experts = m->experts;
        r->active = m->active_experts;
        r->g[g++] = (RoofGemm){m->experts, h, 0};                     /* router */
        r->g[g++] = (RoofGemm){mats_up * m->expert_ffn / tp, h, 1};   /* expert gate/up */
        r->g[g++] = (RoofGemm){h, m->expert_ffn / tp, 1};             /* expert down */
    } else {
        r->g[g++] = (RoofGemm){mats_up * m->ffn / tp, h, 0}; /* gate/up */
        r->g[g++] = (RoofGemm){h, m->ffn / tp, 0};           /* down */
    }
    r->n_gemm = g;
    r->gemm_t = xmalloc(ROOF_CACHE * sizeof *r->gemm_t);
    r->gemm_r = xmalloc(2 * ROOF_CACHE * sizeof *r->gemm_r);
    r->head_t = xmalloc(ROOF_CACHE * sizeof *r->head_t);
    r->head_r = xmalloc(2 * ROOF_CACHE * sizeof *r->head_r);
    for (int i = 0; i < ROOF_CACHE; i++) r->gemm_t[i] = r->head_t[i] = NAN;
    r->ex.worst_ratio = 1;
    r->prof = 1;
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
    if (cfg->weights_separate) {
        if (h->profile.present) {
            cost_roofline_free(r);
            return err_set(e, "weights_separate_memory: the calibrated profile %s includes weight reads in its GEMM "
                              "times; use the analytic roofline", h->profile_name);
        }
        r->layer_w_bytes = r->head_w_bytes = 0;
        /* a GEMM efficiency curve's small-row values reproduce weight
         * streaming from HBM; with the weights elsewhere the GEMMs run at the
         * curve's best (compute-bound) efficiency */
        EffCurve *g = &r->cfg.hw.gemm_compute_eff;
        double best = g->flat;
        for (int i = 0; i < g->n; i++) best = g->eff[i] > best ? g->eff[i] : best;
        *g = (EffCurve){.flat = best, .n = 0};
    }
    if (h->profile.present && cost_roof_profile_setup(r, e) < 0) {
        cost_roofline_free(r);
        return -1;
    }
    *out = (CostModel){.name = "roofline", .ctx = r, .iter_time = roofline_time, .destroy = cost_roofline_free};
    return 0;
}

int cost_extrapolation(const CostModel *cm, CostExtrap *out)
{
    memset(out, 0, sizeof *out);
    out->worst_ratio = 1;
    if (!cm || cm->iter_time != roofline_time || !cm->ctx) return -1;
    const Roofline *r = cm->ctx;
    if (!r->prof) return -1;
    *out = r->ex;
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
