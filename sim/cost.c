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

/* linear_time of a decode-only batch from its sums (integers: exact). */
static int linear_decode(void *ctx, const CostDecodeAgg *agg, const BatchItem *items, uint32_t n,
                         CostBreakdown *out)
{
    const LinearCostCfg *c = ctx;
    double pairs = (double)agg->sum_h + agg->n, tokens = agg->n;
    for (uint32_t i = 0; i < n; i++) {
        tokens += items[i].c;
        pairs += batch_pairs(items[i].c, items[i].h);
    }
    if (!(pairs < 9007199254740992.0)) return 1;
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
    *out = (CostModel){.name = "linear", .ctx = c, .iter_time = linear_time, .destroy = free,
                       .decode_time = linear_decode};
    return 0;
}

/* ------------------------------------------------------------------ phase */

typedef struct PhaseCost {
    double prefill_s, round_s;
} PhaseCost;

static int phase_time(void *ctx, const BatchItem *items, uint32_t n, CostBreakdown *out)
{
    const PhaseCost *c = ctx;
    int prefill = 0;
    for (uint32_t i = 0; i < n; i++) prefill |= items[i].kind == ITEM_PREFILL;
    *out = (CostBreakdown){0};
    out->t_s = prefill ? c->prefill_s : c->round_s;
    return 0;
}

int cost_phase_new(double prefill_s, double round_s, CostModel *out, Err *e)
{
    if (!(prefill_s > 0) || !(round_s > 0))
        return err_set(e, "cost_model: phase times must be > 0 (got prefill %g s, round %g s)", prefill_s, round_s);
    PhaseCost *c = xmalloc(sizeof *c);
    *c = (PhaseCost){prefill_s, round_s};
    *out = (CostModel){.name = "phase", .ctx = c, .iter_time = phase_time, .destroy = free};
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
    double layers; /* the MoE layout's path: layers running it (0 on the old path: every layer) */
} RoofGemm;

#define ROOF_GEMMS 10
#define ROOF_CACHE 16384 /* memoised layer-GEMM times for m = 1 .. this */
#define ROOF_PRE1 4096   /* memoised one-sequence prefill launches (direct-mapped by c, h) */

/* One prefill attention launch of a single sequence: c new over h cached
 * (whole numbers, from a BatchItem), its time and extrapolation. */
typedef struct RoofPre1 {
    double c, h, t, ratio;
    int which, used;
} RoofPre1;

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
    RoofPre1 *pre1;           /* ROOF_PRE1 entries: profile_attn_time of one prefill sequence */
    uint32_t seq_cap;
    CostExtrap ex;
    /* ---- MoE layout (cost_roof_moe_setup): routed experts priced apart ---- */
    int moe_on;               /* 1: r->g holds no expert matrices; cost_roof_moe_time prices them */
    const ProfOp *moe;        /* the fused-MoE class of the experts' dtype, or NULL: grouped GEMMs */
    const ProfOp *a2a;        /* the all-to-all class, or NULL: the link's bandwidth/latency */
    double ep, moe_tp, adp;   /* layout (cost.h) */
    double local, inter;      /* experts and expert FFN width per GPU */
    double moe_in_b, moe_w_b; /* expert operand bytes */
    double moe_layers;        /* layers with routed experts */
    int shared_gi;            /* index in g of the shared experts' gate/up GEMM (the down one follows), or -1 */
    double *moe_t, *moe_r;    /* memo by this replica's tokens: expert time, extrapolation */
    /* ---- attention variants (model.h, issue 17) ---- */
    int mla;                  /* MLA attention: cost_roof_mla_extra, the mla_* classes */
    const ProfOp *mla_pre, *mla_dec; /* MLA classes, or the GQA ones at MLA's launch shape */
    double mla_pre_qh, mla_pre_kvh, mla_pre_hd, mla_pre_kvb; /* profile_mla_dims */
    double mla_dec_qh, mla_dec_kvh, mla_dec_hd, mla_dec_kvb;
    RoofGemm mla_kvb, mla_bmm_pre, mla_bmm_post; /* prefill decompression, decode's absorbed BMMs */
    double n_full, n_slide, window; /* layers with full and sliding-window attention */
    /* ---- roofline_decode (issue 16): the batch by its sums while set ---- */
    const CostDecodeAgg *agg;
    double agg_attn, agg_ratio; /* the profile's decode attention of agg, and its extrapolation */
    ProfAttnMemo agg_memo;      /* the decode op's flags and curve values between calls */
    int agg_which;
    int dec_sums;               /* 1: the model and layout let roofline_decode price from sums */
    int dec_plain;              /* 1: ... and a decode-only step by roofline_decode_plain */
    int dec_prepared;           /* 1: agg_memo is set up for r->dec (profile_attn_decode_prepare) */
    /* ---- roofline_decode_plain: what depends on the batch size alone, for size dn_n (0: none) ---- */
    uint32_t dn_n;
    double dn_gemm_s, dn_gemm_ratio, dn_head_s, dn_head_ratio, dn_comm_s, dn_ar_ratio;
    int dn_gemm_which, dn_head_which, dn_ar_which;
    double dn_f_gemm, dn_f_pre, dn_f_head; /* FLOPs per GPU */
    double dn_w_bytes;                     /* weights read: the layers' and the LM head's */
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

/* Records how far one operator shape lay outside the profile's grid
 * (cost_roof_note: inside it, the usual case, nothing to record). */
static void cost_roof_note_out(Roofline *r, const ProfOp *op, const char *what, int feat, double ratio,
                               double *worst)
{
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

static inline void cost_roof_note(Roofline *r, const ProfOp *op, const char *what, int feat, double ratio,
                                  double *worst)
{
    if (ratio > 1 + 1e-9) cost_roof_note_out(r, op, what, feat, ratio, worst);
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
        if (r->moe_on) t1 *= r->g[i].layers;
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

/* One MoE layer's routed experts on one GPU for T tokens entering it (every
 * attention replica's): the fused-MoE class when the profile has one for
 * the experts' dtype (profile_moe_shape), otherwise grouped GEMMs -- each
 * touched local expert one gate/up and one down GEMM over its share of the
 * rows, weights read for touched experts only. */
static double cost_roof_moe_time(Roofline *r, double T, double *ratio, int *which)
{
    const double h = r->cfg.model.hidden;
    *ratio = 1;
    *which = PF_NONE;
    if (r->moe) {
        double feat[PF_COUNT], f, b;
        profile_moe_shape(T, r->experts, r->active, r->local, r->inter, h, r->moe_in_b, r->moe_w_b, feat, &f, &b);
        *ratio = profile_extrapolation(r->moe, feat, which);
        return profile_op_time(r->moe, feat, f, b);
    }
    double a = T * r->active * r->local / r->experts;
    double u = r->local * (1 - pow(1 - r->active / r->experts, T));
    if (u > a) u = a;
    if (u < 1) u = 1;
    double rows = a / u, r1 = 1, r2 = 1;
    int w1 = PF_NONE, w2 = PF_NONE;
    double mats_up = r->cfg.model.gated_mlp ? 2.0 : 1.0;
    double t = u * (cost_roof_gemm_one(r->gemm, rows, mats_up * r->inter, h, r->moe_in_b, r->moe_w_b, &r1, &w1) +
                    cost_roof_gemm_one(r->gemm, rows, h, r->inter, r->moe_in_b, r->moe_w_b, &r2, &w2));
    *ratio = r1 > r2 ? r1 : r2;
    *which = r1 > r2 ? w1 : w2;
    return t;
}

/* The memoised expert time for m tokens of this replica. */
static double cost_roof_moe_memo(Roofline *r, uint64_t m, double *ratio, int *which)
{
    if (m >= 1 && m <= ROOF_CACHE && !isnan(r->moe_t[m - 1])) {
        *ratio = r->moe_r[m - 1];
        *which = (int)r->moe_r[ROOF_CACHE + m - 1];
        return r->moe_t[m - 1];
    }
    double t = cost_roof_moe_time(r, (double)m * r->adp, ratio, which);
    if (m >= 1 && m <= ROOF_CACHE) {
        r->moe_t[m - 1] = t;
        r->moe_r[m - 1] = *ratio;
        r->moe_r[ROOF_CACHE + m - 1] = *which;
    }
    return t;
}

/* Dispatch or combine of one MoE layer across the attention replicas: every
 * GPU gathers the tokens of all adp x tp GPUs' replicas (msg = T hidden
 * act_bytes per GPU), priced by the all-to-all class or, without one, by
 * the link: latency + (g - 1)/g msg / bandwidth. */
static double cost_roof_a2a_one(Roofline *r, double T, double *ratio, int *which)
{
    double g = r->adp * r->cfg.tp, msg = T * r->cfg.model.hidden * r->cfg.act_bytes;
    *ratio = 1;
    *which = PF_NONE;
    if (r->a2a) {
        double feat[PF_COUNT], f, b;
        profile_a2a_shape(msg, g, feat, &f, &b);
        *ratio = profile_extrapolation(r->a2a, feat, which);
        return profile_op_time(r->a2a, feat, f, b);
    }
    const HwDesc *h = &r->cfg.hw;
    return h->link_latency_s + (g - 1) / g * msg / h->link_bw_bytes_per_s;
}

static ProfSeq *cost_roof_seq(Roofline *r, uint32_t n)
{
    if (n > r->seq_cap) {
        r->seq_cap = n > 2 * r->seq_cap ? n : 2 * r->seq_cap;
        r->seq = xrealloc(r->seq, r->seq_cap * sizeof *r->seq);
    }
    return r->seq;
}

/* MLA's GEMMs that depend on the kind of row: the decompression of K and V
 * (kv_b) for prefill rows, the absorbed per-head BMMs for decode rows; every
 * layer. */
static double cost_roof_mla_extra(Roofline *r, const BatchItem *items, uint32_t n, double *worst)
{
    double pre = 0, dec = 0, t = 0, ratio = 1;
    int which = PF_NONE;
    for (uint32_t i = 0; i < n; i++) {
        if (items[i].kind == ITEM_DECODE) dec += items[i].c;
        else pre += items[i].c;
    }
    if (pre > 0) t += cost_roof_gemm_one(r->gemm, pre, r->mla_kvb.n, r->mla_kvb.k, r->in_b, r->w_b, &ratio, &which);
    cost_roof_note(r, r->gemm, "MLA kv_b GEMM", which, ratio, worst);
    if (dec > 0) {
        double r1 = 1, r2 = 1;
        int w1 = PF_NONE, w2 = PF_NONE;
        t += cost_roof_gemm_one(r->gemm, dec, r->mla_bmm_pre.n, r->mla_bmm_pre.k, r->in_b, r->w_b, &r1, &w1) +
             cost_roof_gemm_one(r->gemm, dec, r->mla_bmm_post.n, r->mla_bmm_post.k, r->in_b, r->w_b, &r2, &w2);
        cost_roof_note(r, r->gemm, "MLA BMMs", r1 > r2 ? w1 : w2, r1 > r2 ? r1 : r2, worst);
    }
    return r->cfg.model.layers * t;
}

/* Attention of every layer kind: MLA (its classes, or the GQA classes at
 * its launch shape), full layers, and sliding-window layers whose sequences
 * see at most `window` keys (a prefill chunk longer than the window as
 * window-long pieces). */
static double cost_roof_attn_kinds(Roofline *r, const BatchItem *items, uint32_t n, double *worst)
{
    double total = 0, ratio;
    int which;
    for (int pass = 0; pass < 2; pass++) {
        double layers = pass == 0 ? r->n_full : r->n_slide;
        if (!(layers > 0)) continue;
        double W = r->window;
        for (int dec = 0; dec < 2; dec++) {
            uint32_t cnt = 0;
            for (uint32_t i = 0; i < n; i++) {
                if ((items[i].kind == ITEM_DECODE) != dec) continue;
                double c = items[i].c;
                if (pass == 1 && !dec && c > W) {
                    cnt += (uint32_t)ceil(c / W);
                } else {
                    cnt++;
                }
            }
            if (!cnt) continue;
            ProfSeq *s = cost_roof_seq(r, cnt);
            uint32_t k = 0;
            for (uint32_t i = 0; i < n; i++) {
                if ((items[i].kind == ITEM_DECODE) != dec) continue;
                double c = items[i].c, h = items[i].h;
                if (pass == 1) {
                    if (!dec && c > W) {
                        /* pieces of W new tokens, each over the W before it */
                        double left = c;
                        int first = 1;
                        while (left > 0) {
                            double piece = left < W ? left : W;
                            s[k++] = (ProfSeq){piece, first ? (h < W ? h : W) : W};
                            left -= piece;
                            first = 0;
                        }
                        continue;
                    }
                    if (h > W) h = W;
                }
                s[k++] = (ProfSeq){c, h};
            }
            double t;
            if (r->mla && dec)
                t = profile_attn_time(r->mla_dec, s, k, r->mla_dec_qh, r->mla_dec_kvh, r->mla_dec_hd, 2,
                                      r->mla_dec_kvb, &ratio, &which);
            else if (r->mla)
                t = profile_attn_time(r->mla_pre, s, k, r->mla_pre_qh, r->mla_pre_kvh, r->mla_pre_hd, 2,
                                      r->mla_pre_kvb, &ratio, &which);
            else
                t = profile_attn_time(dec ? r->dec : r->pre, s, k, r->qh, r->kvh, r->hd, 2, r->kv_b, &ratio, &which);
            const ProfOp *op = r->mla ? (dec ? r->mla_dec : r->mla_pre) : (dec ? r->dec : r->pre);
            cost_roof_note(r, op, dec ? "decode attention" : "prefill attention", which, ratio, worst);
            total += layers * t;
        }
    }
    return total;
}

/* n all-reduces of the replica's hidden states over its TP group (the
 * profile's class, or the ring over the link). */
static double cost_roof_allreduce(Roofline *r, double tokens, double n, double *worst)
{
    const double tp = r->cfg.tp, payload = tokens * r->cfg.model.hidden * r->cfg.act_bytes;
    if (!r->ar) {
        const HwDesc *h = &r->cfg.hw;
        return n * (h->link_latency_s + 2.0 * (tp - 1) / tp * payload / h->link_bw_bytes_per_s);
    }
    double feat[PF_COUNT], f, b;
    profile_comm_shape(payload, tp, feat, &f, &b);
    int w;
    double x = profile_extrapolation(r->ar, feat, &w);
    cost_roof_note(r, r->ar, "all-reduce", w, x, worst);
    return n * profile_op_time(r->ar, feat, f, b);
}

/* A step TensorRT-LLM runs as a CUDA graph: generation requests only, as
 * many as a captured batch size -- CudaGraphConfig's defaults capture
 * 1 .. 32, 64 and 128 sequences (max_batch_size 128, no padding;
 * tensorrt_llm/llmapi/llm_args.py _generate_cuda_graph_batch_sizes), and
 * a batch of another size runs eagerly. */
static int cost_roof_graph_step(const BatchItem *items, uint32_t n)
{
    if (n == 0 || !(n <= 32 || n == 64 || n == 128)) return 0;
    for (uint32_t i = 0; i < n; i++)
        if (items[i].kind != ITEM_DECODE) return 0;
    return 1;
}

/* One MoE layer's shared-expert GEMMs at m rows (as cost_roof_layer_gemm
 * prices them). */
static double cost_roof_shared_gemm(Roofline *r, double m)
{
    double t = 0;
    for (int i = r->shared_gi; i < r->shared_gi + 2; i++) {
        double r1 = 1;
        int w1 = PF_NONE;
        double t1 = cost_roof_gemm_one(r->gemm, m, r->g[i].n, r->g[i].k, r->in_b, r->w_b, &r1, &w1);
        if (r->gemm_static) {
            double t2 = cost_roof_gemm_one(r->gemm_static, m, r->g[i].n, r->g[i].k, r->in_b, r->w_b, &r1, &w1);
            if (t2 < t1) t1 = t2;
        }
        t += t1;
    }
    return t;
}

/* The LM head at `samples` rows (memoised for up to ROOF_CACHE rows). */
static double cost_roof_head(Roofline *r, double samples, double *ratio, int *which)
{
    uint64_t ms = (uint64_t)samples;
    if (ms >= 1 && ms <= ROOF_CACHE && !isnan(r->head_t[ms - 1])) {
        *ratio = r->head_r[ms - 1];
        *which = (int)r->head_r[ROOF_CACHE + ms - 1];
        return r->head_t[ms - 1];
    }
    *ratio = 1;
    *which = PF_NONE;
    double t = cost_roof_gemm_one(r->head, samples, r->head_n, r->cfg.model.hidden, r->head_in_b, r->head_w_b, ratio,
                                  which);
    if (ms >= 1 && ms <= ROOF_CACHE) {
        r->head_t[ms - 1] = t;
        r->head_r[ms - 1] = *ratio;
        r->head_r[ROOF_CACHE + ms - 1] = *which;
    }
    return t;
}

/* profile_attn_time of the one prefill sequence s (the usual mixed step:
 * one chunk beside the decodes), kept by (c, h): a trace's prompt lengths
 * recur, and the launch's time is a function of them alone. */
static double cost_roof_prefill1(Roofline *r, ProfSeq s, double *ratio, int *which)
{
    RoofPre1 *e = &r->pre1[((uint32_t)s.c * 2654435761u ^ (uint32_t)s.h * 40503u) & (ROOF_PRE1 - 1)];
    if (e->used && e->c == s.c && e->h == s.h) {
        *ratio = e->ratio;
        *which = e->which;
        return e->t;
    }
    double t = profile_attn_time(r->pre, &s, 1, r->qh, r->kvh, r->hd, 2, r->kv_b, ratio, which);
    *e = (RoofPre1){.c = s.c, .h = s.h, .t = t, .ratio = *ratio, .which = *which, .used = 1};
    return t;
}

/* Profile-driven times of the GEMM, attention, LM-head and all-reduce
 * classes; fills out's times (not FLOPs/bytes). */
static void cost_roof_profile_time(Roofline *r, const BatchItem *items, uint32_t n, double tokens, double samples,
                              CostBreakdown *out)
{
    const double layers = r->cfg.model.layers;
    double worst = 1, ratio;
    int which;
    out->gemm_s = (r->moe_on ? 1 : layers) * cost_roof_layer_gemm(r, (uint64_t)tokens, &ratio, &which);
    cost_roof_note(r, r->gemm, "layer GEMMs", which, ratio, &worst);
    if (r->mla) out->gemm_s += cost_roof_mla_extra(r, items, n, &worst);
    /* group_tokens (cost.h): > 0 the step's MoE tokens, < 0 this rank's x
     * attn_dp; either way a repricing of a step the engine has counted */
    const double gt = r->cfg.group_tokens ? *r->cfg.group_tokens : 0, group = gt > 0 ? gt : 0;
    if (r->moe_on && tokens > 0) {
        double routed = group > 0 ? cost_roof_moe_time(r, group, &ratio, &which)
                                  : cost_roof_moe_memo(r, (uint64_t)tokens, &ratio, &which);
        out->gemm_s += r->moe_layers * routed;
        if (r->shared_gi >= 0 && r->cfg.moe_shared_overlap && cost_roof_graph_step(items, n)) {
            /* the shared experts run beside the routed ones (cost.h
             * moe_shared_overlap): each MoE layer takes the longer of the two */
            double sh = cost_roof_shared_gemm(r, tokens);
            out->gemm_s -= r->moe_layers * (sh < routed ? sh : routed);
        }
        cost_roof_note(r, r->moe ? r->moe : r->gemm, "MoE experts", which, ratio, &worst);
    }
    if (r->fallback) worst = HUGE_VAL; /* every query priced by another class (ex.fallback) */
    if (samples > 0) {
        out->lm_head_s = cost_roof_head(r, samples, &ratio, &which);
        cost_roof_note(r, r->head, "LM head", which, ratio, &worst);
    }
    /* Prefill chunks and speculative verify rows run in one varlen
     * FlashAttention launch per layer; single-token decodes in one paged
     * decode launch. */
    if (r->mla || r->n_slide > 0) {
        out->attn_s = cost_roof_attn_kinds(r, items, n, &worst);
    } else {
    ProfSeq *s = cost_roof_seq(r, n);
    uint32_t np = 0;
    for (uint32_t i = 0; i < n; i++)
        if (items[i].kind != ITEM_DECODE) s[np++] = (ProfSeq){items[i].c, items[i].h};
    double attn = 0;
    if (np) {
        attn += np == 1 ? cost_roof_prefill1(r, s[0], &ratio, &which)
                        : profile_attn_time(r->pre, s, np, r->qh, r->kvh, r->hd, 2, r->kv_b, &ratio, &which);
        cost_roof_note(r, r->pre, "prefill attention", which, ratio, &worst);
    }
    uint32_t nd = 0;
    for (uint32_t i = 0; !r->agg && i < n; i++)
        if (items[i].kind == ITEM_DECODE) s[nd++] = (ProfSeq){items[i].c, items[i].h};
    if (r->agg) {
        /* roofline_decode: priced from the sums (profile_attn_decode_sums) */
        attn += r->agg_attn;
        cost_roof_note(r, r->dec, "decode attention", r->agg_which, r->agg_ratio, &worst);
    } else if (nd) {
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
    }
    }
    if (r->cfg.model.n_linear) {
        const ModelDesc *m = &r->cfg.model;
        const HwDesc *h = &r->cfg.hw;
        double f = m->linear_flops_per_token * tokens / r->cfg.tp, b = 2.0 * n * m->linear_state_bytes / r->cfg.tp;
        out->attn_s += roof(f, r->peak * h->attn_compute_eff, b, h->mem_bw_bytes_per_s * h->attn_mem_eff);
    }
    if (r->moe_on && r->adp > 1) {
        /* attention data parallelism: one all-reduce per layer inside the
         * replica's TP group (after attention), and each MoE layer's
         * dispatch and combine across every GPU */
        if (r->cfg.tp > 1) out->comm_s = cost_roof_allreduce(r, tokens, layers, &worst);
        out->comm_s += 2.0 * r->moe_layers * cost_roof_a2a_one(r, group > 0 ? group : tokens * r->adp, &ratio, &which);
        if (r->a2a) cost_roof_note(r, r->a2a, "all-to-all", which, ratio, &worst);
    } else if (r->cfg.tp > 1 && r->ar) {
        double feat[PF_COUNT], f, b;
        profile_comm_shape(tokens * r->cfg.model.hidden * r->cfg.act_bytes, r->cfg.tp, feat, &f, &b);
        out->comm_s = 2.0 * layers * profile_op_time(r->ar, feat, f, b);
        int w;
        double x = profile_extrapolation(r->ar, feat, &w);
        cost_roof_note(r, r->ar, "all-reduce", w, x, &worst);
    }
    if (gt != 0) return;
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
    if (r->agg) {
        /* roofline_decode: the loop's sums for agg's decode items of c = 1
         * (first in the batch), then the items' own */
        const double an = r->agg->n, hc = (double)r->agg->sum_h + an;
        tokens = samples = an;
        dp = hc;
        dec_read = hc * k;
        dec_write = an * k;
    }
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
    if (n == 0 && !r->agg) return 0;
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
    if (r->cfg.tp > 1 && !(r->prof && (r->ar || (r->moe_on && r->adp > 1)))) {
        /* Ring all-reduce of the step's hidden states, twice per layer:
         * 2 (tp-1)/tp of the payload crosses each link. */
        double payload = tokens * m->hidden * r->cfg.act_bytes;
        double one = h->link_latency_s + 2.0 * (tp - 1) / tp * payload / h->link_bw_bytes_per_s;
        out->comm_s = 2.0 * m->layers * one;
    }
    out->overhead_s = h->iter_overhead_s;
    out->t_s = out->gemm_s + out->attn_s + out->lm_head_s + out->comm_s + out->overhead_s;
    out->flops = (f_gemm + f_pre + f_dec + f_head) * tp;
    /* the weights the step reads: a MoE layer reads only the experts its
     * tokens touch (the MoE layers see every attention-DP rank's tokens),
     * as its time prices them -- all experts here put MBU above 100% */
    double w_layers = r->layer_w_bytes * tp;
    if (m->experts > 0 && tokens > 0)
        w_layers -= m->weights_read_bytes - model_weights_read_bytes_tokens(m, tokens * (r->adp > 1 ? r->adp : 1));
    out->bytes = w_layers + (samples > 0 ? r->head_w_bytes * tp : 0) + pre_read + pre_write + dec_read + dec_write;
    return 0;
}

/* What a decode-only batch of n sequences costs apart from its attention
 * (roofline_decode_plain), by the statements roofline_time and
 * cost_roof_profile_time evaluate for it. */
static void roofline_decode_size(Roofline *r, uint32_t n)
{
    const ModelDesc *m = &r->cfg.model;
    const HwDesc *h = &r->cfg.hw;
    const double tp = r->cfg.tp, layers = m->layers, tokens = n, samples = n;
    r->dn_gemm_s = layers * cost_roof_layer_gemm(r, (uint64_t)tokens, &r->dn_gemm_ratio, &r->dn_gemm_which);
    r->dn_head_s = cost_roof_head(r, samples, &r->dn_head_ratio, &r->dn_head_which);
    r->dn_comm_s = 0;
    if (r->cfg.tp > 1 && r->ar) {
        double feat[PF_COUNT], f, b;
        profile_comm_shape(tokens * r->cfg.model.hidden * r->cfg.act_bytes, r->cfg.tp, feat, &f, &b);
        r->dn_comm_s = 2.0 * layers * profile_op_time(r->ar, feat, f, b);
        r->dn_ar_ratio = profile_extrapolation(r->ar, feat, &r->dn_ar_which);
    } else if (r->cfg.tp > 1) {
        /* roofline_time's ring */
        double payload = tokens * m->hidden * r->cfg.act_bytes;
        double one = h->link_latency_s + 2.0 * (tp - 1) / tp * payload / h->link_bw_bytes_per_s;
        r->dn_comm_s = 2.0 * m->layers * one;
    }
    r->dn_f_gemm = m->flops_per_token * tokens / tp;
    r->dn_f_pre = m->flops_per_pair * 0.0 / tp;
    r->dn_f_head = m->lm_head_flops * samples / tp;
    r->dn_w_bytes = r->layer_w_bytes * tp + (samples > 0 ? r->head_w_bytes * tp : 0);
    r->dn_n = n;
}

/* roofline_time of agg's batch without prefill items, for a dense model
 * priced by the profile (dec_plain), agg's attention already priced
 * (profile_attn_decode_sums): roofline_time's and cost_roof_profile_time's
 * statements for n = 0 items, in their order, with what depends on the
 * batch size alone kept for the last size.  Keep it in step with them:
 * tests/test_fast.c compares every field and the extrapolation counters
 * with the items priced one by one. */
static void roofline_decode_plain(Roofline *r, const CostDecodeAgg *agg, CostBreakdown *out)
{
    const ModelDesc *m = &r->cfg.model;
    const double tp = r->cfg.tp, k = r->cfg.kv_bytes_per_token;
    const double an = agg->n, hc = (double)agg->sum_h + an;
    const double pre_read = 0, pre_write = 0, dp = hc, dec_read = hc * k, dec_write = an * k;
    if (r->dn_n != agg->n) roofline_decode_size(r, agg->n);
    *out = (CostBreakdown){0};
    const double f_dec = m->flops_per_pair * dp / tp;
    /* cost_roof_profile_time */
    double worst = 1;
    out->gemm_s = r->dn_gemm_s;
    cost_roof_note(r, r->gemm, "layer GEMMs", r->dn_gemm_which, r->dn_gemm_ratio, &worst);
    const double gt = r->cfg.group_tokens ? *r->cfg.group_tokens : 0;
    if (r->fallback) worst = HUGE_VAL;
    out->lm_head_s = r->dn_head_s;
    cost_roof_note(r, r->head, "LM head", r->dn_head_which, r->dn_head_ratio, &worst);
    double attn = 0;
    attn += r->agg_attn;
    cost_roof_note(r, r->dec, "decode attention", r->agg_which, r->agg_ratio, &worst);
    out->attn_s = m->layers * attn;
    if (r->cfg.tp > 1 && r->ar) {
        out->comm_s = r->dn_comm_s;
        cost_roof_note(r, r->ar, "all-reduce", r->dn_ar_which, r->dn_ar_ratio, &worst);
    }
    if (gt == 0) {
        r->ex.queries++;
        if (worst > 1 + 1e-9) r->ex.outside++;
    }
    /* roofline_time after it */
    if (r->cfg.tp > 1 && !r->ar) out->comm_s = r->dn_comm_s;
    out->overhead_s = r->cfg.hw.iter_overhead_s;
    out->t_s = out->gemm_s + out->attn_s + out->lm_head_s + out->comm_s + out->overhead_s;
    out->flops = (r->dn_f_gemm + r->dn_f_pre + f_dec + r->dn_f_head) * tp;
    out->bytes = r->dn_w_bytes + pre_read + pre_write + dec_read + dec_write;
}

/* roofline_time of the decode-only batch agg, from its sums: the same
 * numbers as the item loop wherever that loop's sums are exact (integer
 * terms: a whole number of KV bytes per token, totals below 2^53) and the
 * attention is priced launch-wide; otherwise 1 (not priced). */
static int roofline_decode(void *ctx, const CostDecodeAgg *agg, const BatchItem *items, uint32_t n,
                           CostBreakdown *out)
{
    Roofline *r = ctx;
    const double k = r->cfg.kv_bytes_per_token;
    double hc = (double)agg->sum_h + agg->n;
    for (uint32_t i = 0; i < n; i++) {
        if (items[i].kind != ITEM_PREFILL) return 1;
        hc += (double)items[i].h + items[i].c;
    }
    /* the model's part of the test once (cost_roof_decode_setup) */
    if (agg->n == 0 || !r->dec_sums || !(hc * k < 9007199254740992.0)) return 1;
    if (r->prof && (!r->dec_prepared ||
                    profile_attn_decode_eval(&r->agg_memo, agg->n, (double)agg->sum_h, agg->min_h, agg->max_h,
                                             &r->agg_attn, &r->agg_ratio, &r->agg_which) != 0))
        return 1;
    if (n == 0 && r->dec_plain) {
        roofline_decode_plain(r, agg, out);
        return 0;
    }
    r->agg = agg;
    int rc = roofline_time(ctx, items, n, out);
    r->agg = NULL;
    return rc;
}

static void cost_roofline_free(void *ctx)
{
    Roofline *r = ctx;
    free(r->gemm_t);
    free(r->gemm_r);
    free(r->head_t);
    free(r->head_r);
    free(r->seq);
    free(r->pre1);
    free(r->moe_t);
    free(r->moe_r);
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

/* The MoE layout: on when the scenario gives one (ep, moe_tp, attn_dp) or
 * the profile has a fused-MoE class for the experts' dtype; otherwise the
 * old pricing (experts as GEMMs split by TP) stays, byte for byte. */
static int cost_roof_moe_setup(Roofline *r, Err *e)
{
    const RooflineCfg *c = &r->cfg;
    const ModelDesc *m = &c->model;
    const Profile *p = &c->hw.profile;
    /* the experts' own format when the checkpoint ships them apart (gpt-oss:
     * MXFP4 experts, BF16 elsewhere), else the compute dtype */
    const Dtype xd = m->expert_dtype != m->weight_dtype ? m->expert_dtype : c->compute_dtype;
    int mk = profile_moe_op(xd);
    const ProfOp *moe = mk >= 0 && p->op[mk].present ? &p->op[mk] : NULL;
    if (!c->ep && !c->moe_tp && !c->attn_dp && !moe) return 0;
    double tp = c->tp, ep = c->ep ? c->ep : 1, adp = c->attn_dp ? c->attn_dp : 1;
    double mtp = c->moe_tp ? c->moe_tp : tp * adp / ep;
    if (ep * mtp != tp * adp)
        return err_set(e, "parallel: ep %g x moe_tp %g must equal tp %g x attention_dp %g (the GPUs the experts "
                          "are spread over)", ep, mtp, tp, adp);
    if (fmod(m->experts, ep) != 0)
        return err_set(e, "parallel: ep %g does not divide the %d experts of %s", ep, m->experts, m->name);
    r->moe_on = 1;
    r->moe = moe;
    r->a2a = p->op[PROF_ALLTOALL].present ? &p->op[PROF_ALLTOALL] : NULL;
    r->ep = ep;
    r->moe_tp = mtp;
    r->adp = adp;
    r->experts = m->experts;
    r->active = m->active_experts;
    r->local = m->experts / ep;
    r->inter = m->expert_ffn / mtp;
    r->moe_layers = m->moe_layers;
    profile_moe_bytes(xd, &r->moe_in_b, &r->moe_w_b);
    r->moe_t = xmalloc(ROOF_CACHE * sizeof *r->moe_t);
    r->moe_r = xmalloc(2 * ROOF_CACHE * sizeof *r->moe_r);
    for (int i = 0; i < ROOF_CACHE; i++) r->moe_t[i] = NAN;
    return 0;
}

int cost_moe_layer(const CostModel *cm, double tokens, double *expert_s, double *a2a_s)
{
    if (!cm || cm->iter_time != roofline_time || !cm->ctx) return -1;
    Roofline *r = cm->ctx;
    if (!r->moe_on) return -1;
    double ratio;
    int which;
    *expert_s = cost_roof_moe_time(r, tokens, &ratio, &which);
    *a2a_s = r->adp > 1 ? 2 * cost_roof_a2a_one(r, tokens, &ratio, &which) : 0;
    return 0;
}

/* MLA and sliding-window attention: which classes and launch shapes. */
static void cost_roof_kinds_setup(Roofline *r, int fp8kv)
{
    const Profile *p = &r->cfg.hw.profile;
    const ModelDesc *m = &r->cfg.model;
    r->n_full = m->n_full;
    r->n_slide = m->n_sliding;
    r->window = m->sliding_window > 0 ? m->sliding_window : 1;
    if (m->attn != MODEL_ATTN_MLA) return;
    r->mla = 1;
    int kp = fp8kv ? PROF_MLA_PREFILL_FP8KV : PROF_MLA_PREFILL, kd = fp8kv ? PROF_MLA_DECODE_FP8KV : PROF_MLA_DECODE;
    if (!p->op[kp].present) kp = PROF_MLA_PREFILL;
    if (!p->op[kd].present) kd = PROF_MLA_DECODE;
    r->mla_pre = p->op[kp].present ? &p->op[kp] : r->pre;
    r->mla_dec = p->op[kd].present ? &p->op[kd] : r->dec;
    const double heads = r->qh;
    profile_mla_dims(0, heads, m->kv_lora_rank, m->qk_rope_dim, m->qk_nope_dim, r->kv_b, &r->mla_pre_qh,
                     &r->mla_pre_kvh, &r->mla_pre_hd, &r->mla_pre_kvb);
    profile_mla_dims(1, heads, m->kv_lora_rank, m->qk_rope_dim, m->qk_nope_dim, r->kv_b, &r->mla_dec_qh,
                     &r->mla_dec_kvh, &r->mla_dec_hd, &r->mla_dec_kvb);
    r->mla_kvb = (RoofGemm){heads * (m->qk_nope_dim + m->v_head_dim), m->kv_lora_rank, 0, 0};
    r->mla_bmm_pre = (RoofGemm){heads * m->kv_lora_rank, m->qk_nope_dim, 0, 0};
    r->mla_bmm_post = (RoofGemm){heads * m->v_head_dim, m->kv_lora_rank, 0, 0};
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
     * in a plain model); MLA caches kv_lora_rank + rope values per layer */
    const double kv_b = m->attn == MODEL_ATTN_MLA
                            ? r->cfg.kv_bytes_per_token / ((double)m->n_full * (m->kv_lora_rank + m->qk_rope_dim))
                            : r->cfg.kv_bytes_per_token /
                                  (2.0 * (m->n_full > 0 ? m->n_full : m->layers) * m->kv_heads * m->head_dim);
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
    r->gemm_static = (gk == PROF_GEMM_FP8 || gk == PROF_GEMM_NVFP4) && p->op[PROF_GEMM_BF16].present ? &p->op[PROF_GEMM_BF16] : NULL;
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
    r->g[g++] = (RoofGemm){(r->qh + 2 * r->kvh) * hd, h, 0, 0}; /* QKV */
    r->g[g++] = (RoofGemm){h, r->qh * hd, 0, 0};                /* O */
    r->shared_gi = -1;
    if (m->experts > 0 && cost_roof_moe_setup(r, e) < 0) return -1;
    if (m->attn == MODEL_ATTN_MLA || m->n_sliding > 0) cost_roof_kinds_setup(r, fp8kv);
    if (r->moe_on) {
        /* every layer's attention projections, the MoE layers' router and
         * shared experts, the dense layers' MLP; the routed experts:
         * cost_roof_moe_time */
        const double L = m->layers, ml = m->moe_layers, dl = m->layers - m->moe_layers;
        g = 0;
        if (m->attn == MODEL_ATTN_MLA) {
            double qk = m->qk_nope_dim + m->qk_rope_dim;
            if (m->q_lora_rank > 0) {
                /* fused q_a + kv_a (one GEMM, not split by TP), then q_b */
                r->g[g++] = (RoofGemm){m->q_lora_rank + m->kv_lora_rank + m->qk_rope_dim, h, 0, L};
                r->g[g++] = (RoofGemm){r->qh * qk, m->q_lora_rank, 0, L};
            } else {
                r->g[g++] = (RoofGemm){r->qh * qk + m->kv_lora_rank + m->qk_rope_dim, h, 0, L};
            }
            r->g[g++] = (RoofGemm){h, r->qh * m->v_head_dim, 0, L}; /* o */
        } else {
            r->g[g++] = (RoofGemm){(r->qh + 2 * r->kvh) * hd, h, 0, L}; /* QKV */
            r->g[g++] = (RoofGemm){h, r->qh * hd, 0, L};                /* O */
        }
        r->g[g++] = (RoofGemm){m->experts, h, 0, ml}; /* router */
        if (m->shared_experts > 0) {
            double sf = (double)m->shared_experts * m->shared_expert_ffn / tp;
            r->shared_gi = g;
            r->g[g++] = (RoofGemm){mats_up * sf, h, 0, ml};
            r->g[g++] = (RoofGemm){h, sf, 0, ml};
        }
        if (dl > 0) {
            r->g[g++] = (RoofGemm){mats_up * m->ffn / tp, h, 0, dl};
            r->g[g++] = (RoofGemm){h, m->ffn / tp, 0, dl};
        }
    } else if (m->experts > 0) {
        r->experts = m->experts;
        r->active = m->active_experts;
        r->g[g++] = (RoofGemm){m->experts, h, 0, 0};                     /* router */
        r->g[g++] = (RoofGemm){mats_up * m->expert_ffn / tp, h, 1, 0};   /* expert gate/up */
        r->g[g++] = (RoofGemm){h, m->expert_ffn / tp, 1, 0};             /* expert down */
    } else {
        r->g[g++] = (RoofGemm){mats_up * m->ffn / tp, h, 0, 0}; /* gate/up */
        r->g[g++] = (RoofGemm){h, m->ffn / tp, 0, 0};           /* down */
    }
    r->n_gemm = g;
    r->gemm_t = xmalloc(ROOF_CACHE * sizeof *r->gemm_t);
    r->gemm_r = xmalloc(2 * ROOF_CACHE * sizeof *r->gemm_r);
    r->head_t = xmalloc(ROOF_CACHE * sizeof *r->head_t);
    r->head_r = xmalloc(2 * ROOF_CACHE * sizeof *r->head_r);
    for (int i = 0; i < ROOF_CACHE; i++) r->gemm_t[i] = r->head_t[i] = NAN;
    r->pre1 = xcalloc(ROOF_PRE1, sizeof *r->pre1);
    r->ex.worst_ratio = 1;
    r->prof = 1;
    return 0;
}

/* roofline_decode's test of the model and layout, which do not change:
 * not a hybrid or MLA model, a whole number of KV bytes per token (so that
 * the sums are exact), nor a step whose MoE layers overlap the shared
 * experts when it runs in a CUDA graph (moe_shared_overlap: decided by the
 * batch's item count, which the sums do not carry). */
static void cost_roof_decode_setup(Roofline *r)
{
    const ModelDesc *m = &r->cfg.model;
    const double k = r->cfg.kv_bytes_per_token;
    r->dec_sums = !(m->n_sliding > 0 || m->n_linear > 0 || m->attn == MODEL_ATTN_MLA || r->mla || r->n_slide > 0 ||
                    k != floor(k) || (r->shared_gi >= 0 && r->cfg.moe_shared_overlap));
    r->dec_plain = r->dec_sums && r->prof && !r->moe_on && m->experts == 0;
    r->dec_prepared = r->prof && profile_attn_decode_prepare(&r->agg_memo, r->dec, r->qh, r->kvh, r->hd, 2, r->kv_b) == 0;
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
    cost_roof_decode_setup(r);
    *out = (CostModel){.name = "roofline", .ctx = r, .iter_time = roofline_time, .destroy = cost_roofline_free,
                       .decode_time = roofline_decode};
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
