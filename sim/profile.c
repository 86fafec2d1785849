/*
 * profile.c -- calibrated operator profiles: evaluation and JSON (see
 * profile.h for the latency form).
 *
 * Owns: the feature vector of every operator shape (the fitter and the
 * roofline both build it here, so they cannot disagree), the curve
 * evaluation, the extrapolation measure, and reading/writing
 * models/profiles/<name>.json.
 *
 * Invariants after profile_from_json: every present op has a reference
 * peak (> 0 when it has a compute curve or FLOPs can occur) and bandwidth
 * > 0, t0 >= 0, per_unit >= 0; curves have 1..PROF_KNOTS knots with
 * strictly ascending x > 0 and efficiencies in (0, 4] (above 1 only where a
 * measurement beat the reference peak, which a fit reports rather than
 * hides); grid bounds satisfy 0 < lo <= hi.
 */
#include "profile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonio.h"
#include "paths.h"

static const char *const profile_feat_names[PF_COUNT + 1] = {
    "m",      "n",     "k",     "nk",    "mn",   "tiles", "batch", "chunk", "kv_mean",
    "kv_len", "group", "units", "qrows", "ctas", "bytes", "gpus",  "ring",  "head_dim", "peer_bytes", NULL,
};

static const char *const profile_op_names[PROF_OP_COUNT + 1] = {
    "gemm_bf16", "gemm_fp8", "attn_prefill", "attn_decode", "allreduce", "mem_read", "mem_copy", "launch",
    "gemm_fp8_block", "gemm_nvfp4", "attn_prefill_fp8kv", "attn_decode_fp8kv", "moe_bf16", "moe_fp8",
    "moe_fp8_block", "alltoall", "mla_prefill", "mla_decode", "mla_prefill_fp8kv", "mla_decode_fp8kv", "moe_w4a16", NULL,
};

const char *profile_feat_name(int f)
{
    return f >= 0 && f < PF_COUNT ? profile_feat_names[f] : "none";
}

int profile_feat_parse(const char *name)
{
    for (int i = 0; name && i < PF_COUNT; i++)
        if (!strcmp(name, profile_feat_names[i])) return i;
    return -1;
}

const char *profile_op_name(int op)
{
    return op >= 0 && op < PROF_OP_COUNT ? profile_op_names[op] : "?";
}

int profile_op_parse(const char *name)
{
    for (int i = 0; name && i < PROF_OP_COUNT; i++)
        if (!strcmp(name, profile_op_names[i])) return i;
    return -1;
}

int profile_op_is_gemm(int op)
{
    return op == PROF_GEMM_BF16 || op == PROF_GEMM_FP8 || op == PROF_GEMM_FP8_BLOCK || op == PROF_GEMM_NVFP4;
}

int profile_op_is_attn(int op)
{
    return op == PROF_ATTN_PREFILL || op == PROF_ATTN_DECODE || op == PROF_ATTN_PREFILL_FP8KV ||
           op == PROF_ATTN_DECODE_FP8KV || op == PROF_MLA_PREFILL || op == PROF_MLA_DECODE ||
           op == PROF_MLA_PREFILL_FP8KV || op == PROF_MLA_DECODE_FP8KV;
}

void profile_mla_dims(int decode, double heads, double kv_lora, double rope, double nope, double kv_b,
                      double *qh, double *kvh, double *hd, double *kv_b_eff)
{
    *qh = heads;
    if (decode) {
        *kvh = 1;
        *hd = kv_lora + rope;
        *kv_b_eff = kv_b / 2;
    } else {
        *kvh = heads;
        *hd = nope + rope;
        *kv_b_eff = kv_b;
    }
}

int profile_op_is_moe(int op)
{
    return op == PROF_MOE_BF16 || op == PROF_MOE_FP8 || op == PROF_MOE_FP8_BLOCK || op == PROF_MOE_W4A16;
}

void profile_moe_bytes(Dtype t, double *in_b, double *w_b)
{
    double out_b;
    if (t == DTYPE_MXFP4) {
        *in_b = 2;
        *w_b = dtype_bytes(DTYPE_MXFP4, 32) / 32;
        return;
    }
    int g = profile_gemm_op(t);
    profile_gemm_bytes(g >= 0 ? g : PROF_GEMM_BF16, in_b, w_b, &out_b);
}

int profile_moe_op(Dtype t)
{
    switch (t) {
    case DTYPE_BF16:
    case DTYPE_FP16: return PROF_MOE_BF16;
    case DTYPE_FP8: return PROF_MOE_FP8;
    case DTYPE_FP8_BLOCK: return PROF_MOE_FP8_BLOCK;
    case DTYPE_MXFP4: return PROF_MOE_W4A16;
    default: return -1;
    }
}

int profile_gemm_op(Dtype t)
{
    switch (t) {
    case DTYPE_BF16:
    case DTYPE_FP16:
    case DTYPE_FP32: return PROF_GEMM_BF16;
    case DTYPE_FP8: return PROF_GEMM_FP8;
    case DTYPE_FP8_BLOCK: return PROF_GEMM_FP8_BLOCK;
    case DTYPE_NVFP4: return PROF_GEMM_NVFP4;
    default: return -1;
    }
}

void profile_gemm_bytes(int op, double *in_b, double *w_b, double *out_b)
{
    /* Every low-precision GEMM here writes BF16. */
    *out_b = 2;
    switch (op) {
    case PROF_GEMM_FP8: *in_b = *w_b = 1; return;
    case PROF_GEMM_FP8_BLOCK:
        *in_b = dtype_act_bytes(DTYPE_FP8_BLOCK);
        *w_b = dtype_bytes(DTYPE_FP8_BLOCK, 1);
        return;
    case PROF_GEMM_NVFP4:
        *in_b = dtype_act_bytes(DTYPE_NVFP4);
        *w_b = dtype_bytes(DTYPE_NVFP4, 16) / 16;
        return;
    default: *in_b = *w_b = 2; return;
    }
}

/* ------------------------------------------------------------ evaluation */

/* ln(eff) of curve c at x.  *hint is the knot interval the caller's last
 * evaluation of this curve fell in: checked first and kept up to date, so
 * that a feature that moves a little between calls (a decode batch's
 * bytes) skips the bisection -- the interval is the same one, so the
 * number is too. */
static double profile_curve_le_hint(const ProfCurve *c, double x, int *hint)
{
    if (c->n <= 0) return 0;
    /* A feature of 0 (e.g. no cached context) sits below every knot. */
    double lx = x > 0 ? log2(x) : -HUGE_VAL;
    if (c->n == 1 || !(lx > c->lx[0])) return c->le[0];
    if (lx >= c->lx[c->n - 1]) return c->le[c->n - 1];
    /* the first knot i >= 1 with lx[i] >= lx (at most n - 1): knots
     * ascend strictly, so a bisection finds the linear scan's i, and so
     * does the hint when lx[i - 1] < lx <= lx[i] */
    int i = *hint;
    if (!(i >= 1 && i < c->n && c->lx[i - 1] < lx && lx <= c->lx[i])) {
        int lo = 1, hi = c->n - 1;
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (c->lx[mid] < lx) lo = mid + 1;
            else hi = mid;
        }
        i = *hint = lo;
    }
    double t = (lx - c->lx[i - 1]) / (c->lx[i] - c->lx[i - 1]);
    return c->le[i - 1] + t * (c->le[i] - c->le[i - 1]);
}

static double profile_curve_le(const ProfCurve *c, double x)
{
    int hint = 0;
    return profile_curve_le_hint(c, x, &hint);
}

double profile_eff(const ProfCurve *c, int n, const double *feat)
{
    double le = 0;
    for (int i = 0; i < n; i++) le += profile_curve_le(&c[i], feat[c[i].feat]);
    return exp(le);
}

double profile_op_time(const ProfOp *op, const double *feat, double flops, double bytes)
{
    double t = op->t0_s;
    if (op->unit_feat >= 0) t += op->unit_s * feat[op->unit_feat];
    double tc = flops > 0 && op->peak_flops > 0 ? flops / (op->peak_flops * profile_eff(op->ec, op->n_ec, feat)) : 0;
    double tm = bytes > 0 ? bytes / (op->bw_bytes_per_s * profile_eff(op->em, op->n_em, feat)) : 0;
    return t + (tc > tm ? tc : tm);
}

double profile_extrapolation(const ProfOp *op, const double *feat, int *which)
{
    double worst = 1.0;
    int w = PF_NONE;
    for (int i = 0; i < op->n_grid; i++) {
        double x = feat[op->grid_feat[i]], r = 1.0;
        if (x > op->grid_hi[i]) r = x / op->grid_hi[i];
        else if (x < op->grid_lo[i]) r = x > 0 ? op->grid_lo[i] / x : HUGE_VAL;
        if (r > worst) {
            worst = r;
            w = op->grid_feat[i];
        }
    }
    if (which) *which = w;
    return worst;
}

static void profile_feat_zero(double *feat)
{
    for (int i = 0; i < PF_COUNT; i++) feat[i] = 0;
}

void profile_gemm_shape(double m, double n, double k, double in_b, double w_b, double out_b, double *feat,
                        double *flops, double *bytes)
{
    profile_feat_zero(feat);
    feat[PF_M] = m;
    feat[PF_N] = n;
    feat[PF_K] = k;
    feat[PF_NK] = n * k;
    feat[PF_MN] = m * n;
    feat[PF_TILES] = ceil(m / 128) * ceil(n / 128);
    *flops = 2.0 * m * n * k;
    *bytes = w_b * n * k + in_b * m * k + out_b * m * n;
    feat[PF_BYTES] = *bytes;
}

void profile_attn_shape(double batch, double c, double h, double qh, double kvh, double hd, double act_b,
                        double kv_b, double *feat, double *flops, double *bytes)
{
    profile_feat_zero(feat);
    double pairs = c * h + c * (c + 1) / 2;
    double kvt = 2 * kvh * hd * kv_b;
    feat[PF_BATCH] = batch;
    feat[PF_CHUNK] = c;
    feat[PF_KV_MEAN] = c > 0 ? pairs / c : 0;
    feat[PF_KV_LEN] = h + c;
    feat[PF_GROUP] = kvh > 0 ? qh / kvh : 0;
    feat[PF_UNITS] = batch * kvh;
    feat[PF_QROWS] = c * feat[PF_GROUP];
    feat[PF_CTAS] = feat[PF_UNITS] * ceil(feat[PF_QROWS] / 128);
    feat[PF_HEAD_DIM] = hd;
    *flops = 4.0 * qh * hd * pairs * batch;
    *bytes = batch * (2.0 * c * qh * hd * act_b + (h + c) * kvt + c * kvt);
    feat[PF_BYTES] = *bytes;
}

void profile_comm_shape(double msg_bytes, double gpus, double *feat, double *flops, double *bytes)
{
    profile_feat_zero(feat);
    feat[PF_BYTES] = msg_bytes;
    feat[PF_GPUS] = gpus;
    feat[PF_RING] = 2 * (gpus - 1);
    feat[PF_PEER_BYTES] = msg_bytes * (gpus - 1);
    *flops = 0;
    *bytes = gpus > 1 ? 2.0 * (gpus - 1) / gpus * msg_bytes : 0;
}

void profile_moe_shape(double tokens, double experts, double topk, double local, double inter, double hidden,
                       double in_b, double w_b, double *feat, double *flops, double *bytes)
{
    profile_feat_zero(feat);
    double share = local / experts;
    double a = tokens * topk * share;
    double touched = local * (1 - pow(1 - topk / experts, tokens));
    if (touched < 1) touched = 1;
    if (touched > a) touched = a;
    feat[PF_M] = a / touched;
    feat[PF_N] = inter;
    feat[PF_K] = hidden;
    feat[PF_BATCH] = touched;
    feat[PF_MN] = a * inter;
    *flops = 2.0 * a * 3 * inter * hidden;
    *bytes = touched * 3 * inter * hidden * w_b + a * hidden * (in_b + 2);
    feat[PF_BYTES] = *bytes;
}

void profile_a2a_shape(double msg_bytes, double gpus, double *feat, double *flops, double *bytes)
{
    profile_comm_shape(msg_bytes, gpus, feat, flops, bytes);
    *bytes = gpus > 1 ? (gpus - 1) / gpus * msg_bytes : 0;
}

void profile_mem_shape(double buf_bytes, double *feat, double *flops, double *bytes)
{
    profile_feat_zero(feat);
    feat[PF_BYTES] = buf_bytes;
    *flops = 0;
    *bytes = buf_bytes;
}

/* Features that describe the whole launch rather than one sequence (the
 * GQA group is the model's, the same for every sequence). */
static int profile_feat_launch_wide(int f)
{
    return f == PF_BATCH || f == PF_UNITS || f == PF_CTAS || f == PF_BYTES || f == PF_GROUP || f == PF_HEAD_DIM;
}

static int profile_curves_per_seq(const ProfCurve *c, int n)
{
    for (int i = 0; i < n; i++)
        if (!profile_feat_launch_wide(c[i].feat)) return 1;
    return 0;
}

/* Fitted on single-sequence launches only (see profile.h). */
static int profile_attn_single_only(const ProfOp *op)
{
    for (int i = 0; i < op->n_grid; i++)
        if (op->grid_feat[i] == PF_BATCH) return op->grid_hi[i] <= 1;
    return 0;
}

/* The launch-wide part of profile_attn_time from its sums: the batch's
 * pairs, new tokens, cached + new tokens, CTAs and the per-sequence feature
 * ranges.  seq is read only when a curve is per sequence. */
static double profile_attn_tail(const ProfOp *op, const ProfSeq *seq, size_t n, double pairs, double sum_c,
                                double sum_len, double ctas, const double *lo, const double *hi, double qh,
                                double kvh, double hd, double act_b, double kv_b, double *ratio, int *which)
{
    double group = qh / kvh, kvt = 2 * kvh * hd * kv_b;
    double flops = 4.0 * qh * hd * pairs;
    double bytes = 2.0 * sum_c * qh * hd * act_b + sum_len * kvt + sum_c * kvt;
    double wide[PF_COUNT] = {0};
    wide[PF_BATCH] = (double)n;
    wide[PF_UNITS] = (double)n * kvh;
    wide[PF_CTAS] = ctas;
    wide[PF_BYTES] = bytes;
    wide[PF_GROUP] = group;
    wide[PF_HEAD_DIM] = hd;
    double t = op->t0_s + (op->unit_feat >= 0 ? op->unit_s * wide[op->unit_feat] : 0);
    double tc = 0, tm = 0;
    if (profile_curves_per_seq(op->ec, op->n_ec) || profile_curves_per_seq(op->em, op->n_em)) {
        for (size_t i = 0; i < n; i++) {
            double feat[PF_COUNT], f, b;
            profile_attn_shape(1, seq[i].c, seq[i].h, qh, kvh, hd, act_b, kv_b, feat, &f, &b);
            for (int k = 0; k < PF_COUNT; k++)
                if (profile_feat_launch_wide(k)) feat[k] = wide[k];
            if (f > 0 && op->peak_flops > 0) tc += f / (op->peak_flops * profile_eff(op->ec, op->n_ec, feat));
            if (b > 0) tm += b / (op->bw_bytes_per_s * profile_eff(op->em, op->n_em, feat));
        }
    } else {
        /* Every curve is launch-wide: one evaluation serves the batch. */
        if (flops > 0 && op->peak_flops > 0) tc = flops / (op->peak_flops * profile_eff(op->ec, op->n_ec, wide));
        if (bytes > 0) tm = bytes / (op->bw_bytes_per_s * profile_eff(op->em, op->n_em, wide));
    }
    if (ratio) {
        /* Each grid bound concerns one feature, so the extremes decide:
         * profile_extrapolation at the low and at the high ends, feature
         * by feature as it reads them */
        double rl = 1.0, rh = 1.0;
        int wl = PF_NONE, wh = PF_NONE;
        for (int i = 0; i < op->n_grid; i++) {
            const int f = op->grid_feat[i];
            const double xl = lo[f] <= hi[f] ? lo[f] : wide[f], xh = lo[f] <= hi[f] ? hi[f] : wide[f];
            double r = 1.0;
            if (xl > op->grid_hi[i]) r = xl / op->grid_hi[i];
            else if (xl < op->grid_lo[i]) r = xl > 0 ? op->grid_lo[i] / xl : HUGE_VAL;
            if (r > rl) {
                rl = r;
                wl = f;
            }
            r = 1.0;
            if (xh > op->grid_hi[i]) r = xh / op->grid_hi[i];
            else if (xh < op->grid_lo[i]) r = xh > 0 ? op->grid_lo[i] / xh : HUGE_VAL;
            if (r > rh) {
                rh = r;
                wh = f;
            }
        }
        *ratio = rl > rh ? rl : rh;
        if (which) *which = rl > rh ? wl : wh;
    }
    return t + (tc > tm ? tc : tm);
}

double profile_attn_time(const ProfOp *op, const ProfSeq *seq, size_t n, double qh, double kvh, double hd,
                         double act_b, double kv_b, double *ratio, int *which)
{
    if (ratio) *ratio = 1;
    if (which) *which = PF_NONE;
    if (n == 0) return 0;
    if (profile_attn_single_only(op)) {
        /* One launch's t0; everything else per sequence, as measured. */
        double t = op->t0_s, worst = 1;
        int w = PF_NONE;
        for (size_t i = 0; i < n; i++) {
            double feat[PF_COUNT], f, b;
            profile_attn_shape(1, seq[i].c, seq[i].h, qh, kvh, hd, act_b, kv_b, feat, &f, &b);
            t += profile_op_time(op, feat, f, b) - op->t0_s;
            int wi;
            double x = profile_extrapolation(op, feat, &wi);
            if (x > worst) {
                worst = x;
                w = wi;
            }
        }
        if (ratio) *ratio = worst;
        if (which) *which = w;
        return t;
    }
    /* One pass for the launch-wide sums (the same arithmetic as
     * profile_attn_shape, summed) and the ranges of the per-sequence
     * features that a curve or a grid bound looks at. */
    unsigned need = 0;
    for (int i = 0; i < op->n_ec; i++) need |= 1u << op->ec[i].feat;
    for (int i = 0; i < op->n_em; i++) need |= 1u << op->em[i].feat;
    for (int i = 0; i < op->n_grid; i++) need |= 1u << op->grid_feat[i];
    const int want_ctas = (need >> PF_CTAS) & 1, want_range = (need & (1u << PF_CHUNK | 1u << PF_KV_MEAN |
                                                                         1u << PF_KV_LEN | 1u << PF_QROWS)) != 0;
    double group = qh / kvh;
    double pairs = 0, sum_c = 0, sum_len = 0, ctas = 0;
    double lo[PF_COUNT], hi[PF_COUNT];
    for (int k = 0; k < PF_COUNT; k++) {
        lo[k] = HUGE_VAL;
        hi[k] = -HUGE_VAL;
    }
    double c_lo = HUGE_VAL, c_hi = -HUGE_VAL, len_lo = HUGE_VAL, len_hi = -HUGE_VAL, m_lo = HUGE_VAL, m_hi = -HUGE_VAL;
    for (size_t i = 0; i < n; i++) {
        double c = seq[i].c, h = seq[i].h, p = c * h + c * (c + 1) / 2;
        pairs += p;
        sum_c += c;
        sum_len += h + c;
        if (want_ctas) ctas += kvh * ceil(c * group / 128);
        if (want_range) {
            /* comparisons, not fmin/fmax: this loop runs per sequence per
             * iteration, and the values are never NaN */
            double mean = c > 0 ? p / c : 0, len = h + c;
            c_lo = c < c_lo ? c : c_lo;
            c_hi = c > c_hi ? c : c_hi;
            len_lo = len < len_lo ? len : len_lo;
            len_hi = len > len_hi ? len : len_hi;
            m_lo = mean < m_lo ? mean : m_lo;
            m_hi = mean > m_hi ? mean : m_hi;
        }
    }
    if (want_range) {
        lo[PF_CHUNK] = c_lo;
        hi[PF_CHUNK] = c_hi;
        lo[PF_KV_LEN] = len_lo;
        hi[PF_KV_LEN] = len_hi;
        lo[PF_KV_MEAN] = m_lo;
        hi[PF_KV_MEAN] = m_hi;
        lo[PF_QROWS] = c_lo * group;
        hi[PF_QROWS] = c_hi * group;
    }
    return profile_attn_tail(op, seq, n, pairs, sum_c, sum_len, ctas, lo, hi, qh, kvh, hd, act_b, kv_b, ratio, which);
}

/* Where profile_attn_decode_sums reads a feature: profile_attn_tail's
 * launch-wide values (every other feature is 0 there), then, for grid
 * bounds only, the per-sequence ranges of n decodes (chunk 1, kv_len and
 * kv_mean h + 1, qrows the group). */
enum {
    PROF_DSRC_ZERO = 0, PROF_DSRC_BATCH, PROF_DSRC_UNITS, PROF_DSRC_CTAS, PROF_DSRC_BYTES, PROF_DSRC_GROUP,
    PROF_DSRC_HEAD_DIM, PROF_DSRC_WIDE, /* launch-wide values above, ranges below */
    PROF_DSRC_CHUNK = PROF_DSRC_WIDE, PROF_DSRC_KV, PROF_DSRC_QROWS
};

static int profile_dsrc_wide(int f)
{
    switch (f) {
    case PF_BATCH: return PROF_DSRC_BATCH;
    case PF_UNITS: return PROF_DSRC_UNITS;
    case PF_CTAS: return PROF_DSRC_CTAS;
    case PF_BYTES: return PROF_DSRC_BYTES;
    case PF_GROUP: return PROF_DSRC_GROUP;
    case PF_HEAD_DIM: return PROF_DSRC_HEAD_DIM;
    default: return PROF_DSRC_ZERO;
    }
}

/* profile_extrapolation's ratio of grid bound i at x. */
static double profile_grid_ratio(const ProfOp *op, int i, double x)
{
    double r = 1.0;
    if (x > op->grid_hi[i]) r = x / op->grid_hi[i];
    else if (x < op->grid_lo[i]) r = x > 0 ? op->grid_lo[i] / x : HUGE_VAL;
    return r;
}

/* The op's flags and the shape's constants, each by the expression
 * profile_attn_tail and profile_attn_decode_sums evaluate per call. */
static void profile_decode_memo_setup(ProfAttnMemo *memo, const ProfOp *op, double qh, double kvh, double hd,
                                      double act_b, double kv_b)
{
    memset(memo, 0, sizeof *memo);
    memo->op = op;
    memo->qh = qh;
    memo->kvh = kvh;
    memo->hd = hd;
    memo->act_b = act_b;
    memo->kv_b = kv_b;
    memo->per_seq = profile_attn_single_only(op) || profile_curves_per_seq(op->ec, op->n_ec) ||
                    profile_curves_per_seq(op->em, op->n_em);
    unsigned need = 0;
    for (int i = 0; i < op->n_ec; i++) need |= 1u << op->ec[i].feat;
    for (int i = 0; i < op->n_em; i++) need |= 1u << op->em[i].feat;
    for (int i = 0; i < op->n_grid; i++) need |= 1u << op->grid_feat[i];
    memo->want_ctas = (need >> PF_CTAS) & 1;
    memo->want_range = (need & (1u << PF_CHUNK | 1u << PF_KV_MEAN | 1u << PF_KV_LEN | 1u << PF_QROWS)) != 0;
    memo->group = qh / kvh;
    memo->one_ctas = kvh * ceil(memo->group / 128);
    memo->no_sums = memo->want_ctas && memo->one_ctas != floor(memo->one_ctas);
    memo->kvt = 2 * kvh * hd * kv_b;
    memo->flops_per_pair = 4.0 * qh * hd; /* 4.0 * qh * hd * pairs, left to right */
    memo->unit_src = op->unit_feat >= 0 ? profile_dsrc_wide(op->unit_feat) : -1;
    for (int i = 0; i < op->n_ec; i++) memo->src[0][i] = profile_dsrc_wide(op->ec[i].feat);
    for (int i = 0; i < op->n_em; i++) memo->src[1][i] = profile_dsrc_wide(op->em[i].feat);
    for (int i = 0; i < op->n_grid; i++) {
        const int f = op->grid_feat[i];
        /* a grid over a per-sequence feature sets want_range */
        memo->grid_src[i] = f == PF_CHUNK                      ? PROF_DSRC_CHUNK
                            : f == PF_KV_LEN || f == PF_KV_MEAN ? PROF_DSRC_KV
                            : f == PF_QROWS                     ? PROF_DSRC_QROWS
                                                                : profile_dsrc_wide(f);
        /* the same value at both ends, the same every call: chunk 1 and
         * qrows (lo = hi), the group, the head size and the features that
         * are 0 */
        double x;
        switch (memo->grid_src[i]) {
        case PROF_DSRC_ZERO: x = 0; break;
        case PROF_DSRC_GROUP: x = memo->group; break;
        case PROF_DSRC_HEAD_DIM: x = hd; break;
        case PROF_DSRC_CHUNK: x = 1; break;
        case PROF_DSRC_QROWS: x = memo->group <= memo->group ? memo->group : 0; break;
        default: continue;
        }
        memo->grid_src[i] = PROF_DSRC_ZERO;
        memo->grid_r[i] = profile_grid_ratio(op, i, x);
    }
    /* a constant bound inside the grid (ratio <= 1) never moves the worst,
     * which starts at 1 and only grows: left out */
    memo->n_grid_live = 0;
    for (int i = 0; i < op->n_grid; i++)
        if (memo->grid_src[i] != PROF_DSRC_ZERO || memo->grid_r[i] > 1.0) memo->grid_live[memo->n_grid_live++] = i;
    for (int k = 0; k < 2; k++) {
        const ProfCurve *c = k ? op->em : op->ec;
        const int n = k ? op->n_em : op->n_ec;
        memo->side_const[k] = 1;
        for (int i = 0; i < n; i++) {
            const int s = memo->src[k][i];
            if (s != PROF_DSRC_ZERO && s != PROF_DSRC_GROUP && s != PROF_DSRC_HEAD_DIM) memo->side_const[k] = 0;
        }
        if (!memo->side_const[k]) continue;
        /* profile_decode_eff's sum, once */
        double le = 0;
        for (int i = 0; i < n; i++) {
            const int s = memo->src[k][i];
            le += profile_curve_le(&c[i], s == PROF_DSRC_GROUP ? memo->group : s == PROF_DSRC_HEAD_DIM ? hd : 0);
        }
        memo->eff[k] = exp(le);
    }
}

/* profile_eff of side k's curves over the values v (PROF_DSRC_*), each
 * curve's last value kept: the same terms summed in the same order. */
static double profile_decode_eff(const ProfCurve *c, int n, const double *v, ProfAttnMemo *m, int k)
{
    if (m->side_const[k]) return m->eff[k];
    double le = 0;
    for (int i = 0; i < n; i++) {
        double x = v[m->src[k][i]];
        if (!m->ok[k][i] || m->x[k][i] != x) {
            m->x[k][i] = x;
            m->le[k][i] = profile_curve_le_hint(&c[i], x, &m->hint[k][i]);
            m->ok[k][i] = 1;
        }
        le += m->le[k][i];
    }
    if (!m->has_eff[k] || m->sum_le[k] != le) {
        m->sum_le[k] = le;
        m->eff[k] = exp(le);
        m->has_eff[k] = 1;
    }
    return m->eff[k];
}

int profile_attn_decode_prepare(ProfAttnMemo *memo, const ProfOp *op, double qh, double kvh, double hd, double act_b,
                                double kv_b)
{
    /* != is false for a NaN: set up again, and nothing is kept */
    if (memo->op != op || !(memo->qh == qh && memo->kvh == kvh && memo->hd == hd && memo->act_b == act_b &&
                            memo->kv_b == kv_b))
        profile_decode_memo_setup(memo, op, qh, kvh, hd, act_b, kv_b);
    return memo->per_seq || memo->no_sums ? -1 : 0;
}

int profile_attn_decode_eval(ProfAttnMemo *memo, size_t n, double sum_h, double min_h, double max_h, double *t,
                             double *ratio, int *which)
{
    const ProfOp *op = memo->op;
    /* profile_attn_time's sums for n sequences of c = 1: each adds h + 1
     * pairs and h + 1 tokens (integers, so every partial sum is exact below
     * 2^53 and the order does not matter), and the same CTA count */
    const double dn = (double)n, pairs = sum_h + dn;
    if (!(pairs < 9007199254740992.0)) return -1;
    /* profile_attn_tail (sum_c = n, sum_len = pairs), its arithmetic
     * unchanged; the launch-wide features by source, not in a PF_COUNT
     * array */
    const double qh = memo->qh, kvh = memo->kvh, hd = memo->hd, act_b = memo->act_b;
    const double group = memo->group, kvt = memo->kvt;
    const double flops = memo->flops_per_pair * pairs;
    const double bytes = 2.0 * dn * qh * hd * act_b + pairs * kvt + dn * kvt;
    const double v[PROF_DSRC_WIDE] = {0, dn, dn * kvh, memo->want_ctas ? dn * memo->one_ctas : 0, bytes, group, hd};
    double tt = op->t0_s + (memo->unit_src >= 0 ? op->unit_s * v[memo->unit_src] : 0);
    double tc = 0, tm = 0;
    if (flops > 0 && op->peak_flops > 0) tc = flops / (op->peak_flops * profile_decode_eff(op->ec, op->n_ec, v, memo, 0));
    if (bytes > 0) tm = bytes / (op->bw_bytes_per_s * profile_decode_eff(op->em, op->n_em, v, memo, 1));
    if (ratio) {
        /* profile_attn_tail's extremes: a range where the sums set one
         * (lo <= hi), else the launch-wide value; the bounds that can
         * move the worst (profile_decode_memo_setup) */
        double rl = 1.0, rh = 1.0;
        int wl = PF_NONE, wh = PF_NONE;
        for (int j = 0; j < memo->n_grid_live; j++) {
            const int i = memo->grid_live[j], s = memo->grid_src[i];
            double r_lo, r_hi;
            if (s == PROF_DSRC_ZERO) {
                /* a constant value */
                r_lo = r_hi = memo->grid_r[i];
            } else if (s == PROF_DSRC_KV) {
                /* kv_len and kv_mean: h + 1 over the batch (want_range) */
                const double lo = min_h + 1, hi = max_h + 1;
                r_lo = profile_grid_ratio(op, i, lo <= hi ? lo : 0);
                r_hi = profile_grid_ratio(op, i, lo <= hi ? hi : 0);
            } else {
                r_lo = r_hi = profile_grid_ratio(op, i, v[s]);
            }
            if (r_lo > rl) {
                rl = r_lo;
                wl = op->grid_feat[i];
            }
            if (r_hi > rh) {
                rh = r_hi;
                wh = op->grid_feat[i];
            }
        }
        *ratio = rl > rh ? rl : rh;
        if (which) *which = rl > rh ? wl : wh;
    } else if (which) {
        *which = PF_NONE;
    }
    *t = tt + (tc > tm ? tc : tm);
    return 0;
}

int profile_attn_decode_sums(const ProfOp *op, size_t n, double sum_h, double min_h, double max_h, double qh,
                             double kvh, double hd, double act_b, double kv_b, ProfAttnMemo *memo, double *t,
                             double *ratio, int *which)
{
    if (ratio) *ratio = 1;
    if (which) *which = PF_NONE;
    if (n == 0) {
        *t = 0;
        return 0;
    }
    ProfAttnMemo local;
    if (!memo) {
        memset(&local, 0, sizeof local);
        memo = &local;
    }
    if (profile_attn_decode_prepare(memo, op, qh, kvh, hd, act_b, kv_b) < 0) return -1;
    return profile_attn_decode_eval(memo, n, sum_h, min_h, max_h, t, ratio, which);
}

double profile_gemm_time(const Profile *p, int gemm_op, double m, double n, double k, double *ratio)
{
    if (!profile_op_is_gemm(gemm_op)) return -1;
    const ProfOp *op = &p->op[gemm_op];
    if (!p->present || !op->present) return -1;
    double feat[PF_COUNT], f, b, in_b, w_b, out_b;
    profile_gemm_bytes(gemm_op, &in_b, &w_b, &out_b);
    profile_gemm_shape(m, n, k, in_b, w_b, out_b, feat, &f, &b);
    if (ratio) *ratio = profile_extrapolation(op, feat, NULL);
    return profile_op_time(op, feat, f, b);
}

/* ------------------------------------------------------------------ read */

static const char *const profile_keys[] = {"name", "hardware", "source", "form", "iter_overhead_us", "ops", NULL};
static const char *const profile_op_keys[] = {"peak_flops", "mem_bw_bytes_per_s", "t0_us", "per_unit_us", "unit",
                                              "e_compute", "e_mem", "grid", "fit", NULL};
static const char *const profile_curve_keys[] = {"over", "x", "eff", NULL};
static const char *const profile_fit_keys[] = {"rows", "train_rows", "held_out_rows", "outliers",
                                               "train_median_rel_err", "train_p90_rel_err",
                                               "held_out_median_rel_err", "held_out_p90_rel_err", "data", NULL};

#define PROFILE_EFF_MAX 1e3

static int profile_numbers(const cJSON *arr, const char *where, double *out, int max, int *n, Err *e)
{
    if (jsonio_expect_array(arr, where, e) < 0) return -1;
    int cnt = cJSON_GetArraySize(arr);
    if (cnt < 1 || cnt > max) return err_set(e, "%s: got %d values, expected 1 to %d", where, cnt, max);
    int i = 0;
    for (const cJSON *v = arr->child; v; v = v->next, i++) {
        if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) {
            char iw[700];
            return err_set(e, "%s: expected a number", jsonio_index(iw, sizeof iw, where, i));
        }
        out[i] = v->valuedouble;
    }
    *n = cnt;
    return 0;
}

static int profile_curve_from_json(const cJSON *v, const char *where, ProfCurve *c, Err *e)
{
    memset(c, 0, sizeof *c);
    if (jsonio_expect_object(v, where, e) < 0 || jsonio_check_keys(v, where, profile_curve_keys, e) < 0) return -1;
    int f;
    if (jsonio_enum(v, "over", where, 1, profile_feat_names, &f, e) < 0) return -1;
    c->feat = f;
    char xw[600], ew[600];
    jsonio_path(xw, sizeof xw, where, "x");
    jsonio_path(ew, sizeof ew, where, "eff");
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(v, "x"), *ef = cJSON_GetObjectItemCaseSensitive(v, "eff");
    if (!x) return err_set(e, "%s: missing key \"x\"", where);
    if (!ef) return err_set(e, "%s: missing key \"eff\"", where);
    double xs[PROF_KNOTS], es[PROF_KNOTS];
    int nx, ne;
    if (profile_numbers(x, xw, xs, PROF_KNOTS, &nx, e) < 0 || profile_numbers(ef, ew, es, PROF_KNOTS, &ne, e) < 0)
        return -1;
    if (nx != ne) return err_set(e, "%s: got %d values, expected %d (one per entry of x)", ew, ne, nx);
    for (int i = 0; i < nx; i++) {
        char iw[700];
        if (!(xs[i] > 0) || (i > 0 && !(xs[i] > xs[i - 1])))
            return err_set(e, "%s: got %.12g, expected numbers > 0 in strictly ascending order",
                           jsonio_index(iw, sizeof iw, xw, i), xs[i]);
        if (!(es[i] > 0 && es[i] <= PROFILE_EFF_MAX))
            return err_set(e, "%s: got %.12g, expected an efficiency in (0, %g]", jsonio_index(iw, sizeof iw, ew, i),
                           es[i], PROFILE_EFF_MAX);
        c->lx[i] = log2(xs[i]);
        c->le[i] = log(es[i]);
    }
    c->n = nx;
    return 0;
}

static int profile_curves_from_json(const cJSON *op, const char *key, const char *where, ProfCurve *c, int *n,
                                    Err *e)
{
    *n = 0;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(op, key);
    if (!v) return 0;
    char w[600];
    jsonio_path(w, sizeof w, where, key);
    if (jsonio_expect_array(v, w, e) < 0) return -1;
    int cnt = cJSON_GetArraySize(v);
    if (cnt > PROF_CURVES) return err_set(e, "%s: got %d curves, expected at most %d", w, cnt, PROF_CURVES);
    int i = 0;
    for (const cJSON *it = v->child; it; it = it->next, i++) {
        char iw[700];
        if (profile_curve_from_json(it, jsonio_index(iw, sizeof iw, w, i), &c[i], e) < 0) return -1;
    }
    *n = cnt;
    return 0;
}

static int profile_grid_from_json(const cJSON *v, const char *where, ProfOp *op, Err *e)
{
    if (jsonio_expect_object(v, where, e) < 0) return -1;
    op->n_grid = 0;
    for (const cJSON *it = v->child; it; it = it->next) {
        char w[700];
        jsonio_path(w, sizeof w, where, it->string);
        int f = profile_feat_parse(it->string);
        if (f < 0) {
            char names[400] = "";
            for (int i = 0; i < PF_COUNT; i++) {
                strncat(names, profile_feat_names[i], sizeof names - strlen(names) - 1);
                if (i + 1 < PF_COUNT) strncat(names, ", ", sizeof names - strlen(names) - 1);
            }
            return err_set(e, "%s: unknown feature \"%s\"; expected one of %s", where, it->string, names);
        }
        if (op->n_grid >= PROF_GRID) return err_set(e, "%s: more than %d features", where, PROF_GRID);
        double lh[2];
        int n;
        if (profile_numbers(it, w, lh, 2, &n, e) < 0) return -1;
        if (n != 2 || !(lh[0] > 0) || !(lh[1] >= lh[0]))
            return err_set(e, "%s: expected [lo, hi] with 0 < lo <= hi", w);
        op->grid_feat[op->n_grid] = f;
        op->grid_lo[op->n_grid] = lh[0];
        op->grid_hi[op->n_grid] = lh[1];
        op->n_grid++;
    }
    return 0;
}

static int profile_fit_from_json(const cJSON *v, const char *where, ProfFitStats *s, Err *e)
{
    if (jsonio_expect_object(v, where, e) < 0 || jsonio_check_keys(v, where, profile_fit_keys, e) < 0) return -1;
    int64_t rows = 0, tr = 0, ho = 0, out = 0;
    if (jsonio_int(v, "rows", where, 0, 0, 1 << 30, &rows, e) < 0 ||
        jsonio_int(v, "train_rows", where, 0, 0, 1 << 30, &tr, e) < 0 ||
        jsonio_int(v, "held_out_rows", where, 0, 0, 1 << 30, &ho, e) < 0 ||
        jsonio_int(v, "outliers", where, 0, 0, 1 << 30, &out, e) < 0)
        return -1;
    s->rows = (int)rows;
    s->train_rows = (int)tr;
    s->held_out_rows = (int)ho;
    s->outliers = (int)out;
    s->train_median = s->train_p90 = s->held_median = s->held_p90 = NAN;
    if (jsonio_num(v, "train_median_rel_err", where, 0, 0, 1e9, &s->train_median, e) < 0 ||
        jsonio_num(v, "train_p90_rel_err", where, 0, 0, 1e9, &s->train_p90, e) < 0 ||
        jsonio_num(v, "held_out_median_rel_err", where, 0, 0, 1e9, &s->held_median, e) < 0 ||
        jsonio_num(v, "held_out_p90_rel_err", where, 0, 0, 1e9, &s->held_p90, e) < 0)
        return -1;
    const char *d = "";
    if (jsonio_str(v, "data", where, 0, &d, e) < 0) return -1;
    snprintf(s->data, sizeof s->data, "%s", d);
    return 0;
}

static int profile_op_from_json(const cJSON *v, const char *where, ProfOp *op, Err *e)
{
    memset(op, 0, sizeof *op);
    op->unit_feat = PF_NONE;
    if (jsonio_expect_object(v, where, e) < 0 || jsonio_check_keys(v, where, profile_op_keys, e) < 0) return -1;
    double t0_us = 0, pu_us = 0;
    if (jsonio_num(v, "peak_flops", where, 0, 1e6, 1e18, &op->peak_flops, e) < 0 ||
        jsonio_num(v, "mem_bw_bytes_per_s", where, 1, 1e6, 1e15, &op->bw_bytes_per_s, e) < 0 ||
        jsonio_num(v, "t0_us", where, 1, 0, 1e7, &t0_us, e) < 0 ||
        jsonio_num(v, "per_unit_us", where, 0, 0, 1e7, &pu_us, e) < 0)
        return -1;
    op->t0_s = t0_us * 1e-6;
    op->unit_s = pu_us * 1e-6;
    if (cJSON_GetObjectItemCaseSensitive(v, "unit")) {
        int f;
        if (jsonio_enum(v, "unit", where, 1, profile_feat_names, &f, e) < 0) return -1;
        op->unit_feat = f;
    } else if (pu_us > 0) {
        return err_set(e, "%s: per_unit_us %.6g needs \"unit\" (the feature it counts)", where, pu_us);
    }
    if (profile_curves_from_json(v, "e_compute", where, op->ec, &op->n_ec, e) < 0 ||
        profile_curves_from_json(v, "e_mem", where, op->em, &op->n_em, e) < 0)
        return -1;
    if (op->n_ec > 0 && !(op->peak_flops > 0))
        return err_set(e, "%s: e_compute needs \"peak_flops\" (the FLOP/s it is a fraction of)", where);
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(v, "grid");
    if (g) {
        char w[600];
        if (profile_grid_from_json(g, jsonio_path(w, sizeof w, where, "grid"), op, e) < 0) return -1;
    }
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(v, "fit");
    if (f) {
        char w[600];
        if (profile_fit_from_json(f, jsonio_path(w, sizeof w, where, "fit"), &op->fit, e) < 0) return -1;
    } else {
        op->fit.train_median = op->fit.train_p90 = op->fit.held_median = op->fit.held_p90 = NAN;
    }
    op->present = 1;
    return 0;
}

int profile_from_json(const cJSON *obj, const char *where, Profile *p, Err *e)
{
    memset(p, 0, sizeof *p);
    p->iter_overhead_s = -1;
    if (jsonio_expect_object(obj, where, e) < 0 || jsonio_check_keys(obj, where, profile_keys, e) < 0) return -1;
    const char *s = NULL;
    if (jsonio_str(obj, "name", where, 1, &s, e) < 0) return -1;
    if (!*s || strlen(s) >= sizeof p->name) {
        char w[600];
        return err_set(e, "%s: expected 1 to %zu characters", jsonio_path(w, sizeof w, where, "name"),
                       sizeof p->name - 1);
    }
    snprintf(p->name, sizeof p->name, "%s", s);
    s = "";
    if (jsonio_str(obj, "hardware", where, 0, &s, e) < 0) return -1;
    snprintf(p->hardware, sizeof p->hardware, "%s", s);
    s = "";
    if (jsonio_str(obj, "source", where, 0, &s, e) < 0) return -1;
    snprintf(p->source, sizeof p->source, "%s", s);
    if (jsonio_str(obj, "form", where, 0, &s, e) < 0) return -1;
    double us = -1;
    if (jsonio_num(obj, "iter_overhead_us", where, 0, 0, 1e7, &us, e) < 0) return -1;
    p->iter_overhead_s = us >= 0 ? us * 1e-6 : -1;
    const cJSON *ops = cJSON_GetObjectItemCaseSensitive(obj, "ops");
    char ow[600];
    jsonio_path(ow, sizeof ow, where, "ops");
    if (!ops) return err_set(e, "%s: missing key \"ops\"", where);
    if (jsonio_expect_object(ops, ow, e) < 0 || jsonio_check_keys(ops, ow, profile_op_names, e) < 0) return -1;
    int n = 0;
    for (const cJSON *it = ops->child; it; it = it->next) {
        char w[700];
        int k = profile_op_parse(it->string);
        if (k < 0) continue; /* NEVER: check_keys refused it */
        if (profile_op_from_json(it, jsonio_path(w, sizeof w, ow, it->string), &p->op[k], e) < 0) return -1;
        n++;
    }
    if (n == 0) return err_set(e, "%s: expected at least one operator (%s, ...)", ow, profile_op_names[0]);
    p->present = 1;
    return 0;
}

int profile_bundled_path(const char *name, char *buf, size_t n)
{
    if (!name || !*name || strchr(name, '/')) return 0;
    paths_data_file(buf, n, "profiles/", name);
    FILE *f = fopen(buf, "rb");
    if (!f) return 0;
    fclose(f);
    return 1;
}

int profile_load(const char *name_or_path, Profile *p, Err *e)
{
    char path[4096];
    if (!paths_resolve(path, sizeof path, "profile", "profiles/", name_or_path, e)) return -1;
    cJSON *root = jsonio_parse_file(path, e);
    if (!root) return -1;
    int r = profile_from_json(root, path, p, e);
    cJSON_Delete(root);
    return r;
}

/* ----------------------------------------------------------------- write */

/* Efficiencies to 6 significant digits: finer than any measurement.
 * Knot positions and grid bounds (whole numbers, 2^k) to 12, so that they
 * stay exact. */
static cJSON *profile_num_sig(double v, int sig)
{
    char buf[40];
    snprintf(buf, sizeof buf, "%.*g", sig, v);
    return cJSON_CreateNumber(strtod(buf, NULL));
}

static cJSON *profile_num6(double v)
{
    return profile_num_sig(v, 6);
}

static void profile_curves_to_json(cJSON *op, const char *key, const ProfCurve *c, int n)
{
    if (n <= 0) return;
    cJSON *arr = cJSON_AddArrayToObject(op, key);
    for (int i = 0; arr && i < n; i++) {
        cJSON *o = cJSON_CreateObject();
        if (!o) return;
        cJSON_AddItemToArray(arr, o);
        cJSON_AddStringToObject(o, "over", profile_feat_name(c[i].feat));
        cJSON *x = cJSON_AddArrayToObject(o, "x"), *ef = cJSON_AddArrayToObject(o, "eff");
        for (int j = 0; x && ef && j < c[i].n; j++) {
            cJSON_AddItemToArray(x, profile_num_sig(exp2(c[i].lx[j]), 12));
            cJSON_AddItemToArray(ef, profile_num6(exp(c[i].le[j])));
        }
    }
}

static void profile_fit_to_json(cJSON *op, const ProfFitStats *s)
{
    if (s->rows <= 0) return;
    cJSON *f = cJSON_AddObjectToObject(op, "fit");
    if (!f) return;
    cJSON_AddNumberToObject(f, "rows", s->rows);
    cJSON_AddNumberToObject(f, "train_rows", s->train_rows);
    cJSON_AddNumberToObject(f, "held_out_rows", s->held_out_rows);
    cJSON_AddNumberToObject(f, "outliers", s->outliers);
    const double v[4] = {s->train_median, s->train_p90, s->held_median, s->held_p90};
    const char *const k[4] = {"train_median_rel_err", "train_p90_rel_err", "held_out_median_rel_err",
                              "held_out_p90_rel_err"};
    for (int i = 0; i < 4; i++)
        if (isfinite(v[i])) cJSON_AddItemToObject(f, k[i], profile_num6(v[i]));
    if (s->data[0]) cJSON_AddStringToObject(f, "data", s->data);
}

cJSON *profile_to_json(const Profile *p)
{
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    cJSON_AddStringToObject(o, "name", p->name);
    if (p->hardware[0]) cJSON_AddStringToObject(o, "hardware", p->hardware);
    if (p->source[0]) cJSON_AddStringToObject(o, "source", p->source);
    cJSON_AddStringToObject(o, "form",
                            "t = t0 + per_unit * unit + max(flops / (peak_flops * e_compute), bytes / "
                            "(mem_bw_bytes_per_s * e_mem)); e_* = product of curves, ln(eff) piecewise linear in "
                            "log2(over) between knots x, constant beyond; grid = measured range per feature");
    if (p->iter_overhead_s >= 0) jsonio_add_num(o, "iter_overhead_us", p->iter_overhead_s * 1e6);
    cJSON *ops = cJSON_AddObjectToObject(o, "ops");
    for (int k = 0; ops && k < PROF_OP_COUNT; k++) {
        const ProfOp *op = &p->op[k];
        if (!op->present) continue;
        cJSON *j = cJSON_AddObjectToObject(ops, profile_op_names[k]);
        if (!j) break;
        if (op->peak_flops > 0) jsonio_add_num(j, "peak_flops", op->peak_flops);
        jsonio_add_num(j, "mem_bw_bytes_per_s", op->bw_bytes_per_s);
        cJSON_AddItemToObject(j, "t0_us", profile_num6(op->t0_s * 1e6));
        if (op->unit_feat >= 0) {
            cJSON_AddItemToObject(j, "per_unit_us", profile_num6(op->unit_s * 1e6));
            cJSON_AddStringToObject(j, "unit", profile_feat_name(op->unit_feat));
        }
        profile_curves_to_json(j, "e_compute", op->ec, op->n_ec);
        profile_curves_to_json(j, "e_mem", op->em, op->n_em);
        if (op->n_grid > 0) {
            cJSON *g = cJSON_AddObjectToObject(j, "grid");
            for (int i = 0; g && i < op->n_grid; i++) {
                cJSON *a = cJSON_AddArrayToObject(g, profile_feat_name(op->grid_feat[i]));
                if (!a) break;
                cJSON_AddItemToArray(a, profile_num_sig(op->grid_lo[i], 12));
                cJSON_AddItemToArray(a, profile_num_sig(op->grid_hi[i], 12));
            }
        }
        profile_fit_to_json(j, &op->fit);
    }
    return o;
}

int profile_normalize(Profile *p, Err *e)
{
    cJSON *j = profile_to_json(p);
    if (!j) return err_set(e, "profile %s: out of memory writing JSON", p->name);
    /* Through text, exactly as a file would hold it. */
    char *txt = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (!txt) return err_set(e, "profile %s: out of memory writing JSON", p->name);
    cJSON *back = jsonio_parse(txt, p->name, e);
    cJSON_free(txt);
    if (!back) return -1;
    Profile q;
    int r = profile_from_json(back, p->name, &q, e);
    cJSON_Delete(back);
    if (r == 0) *p = q;
    return r;
}
