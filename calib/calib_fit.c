/*
 * calib_fit.c -- least-squares fits of profile operators to measurements
 * (see calib_fit.h for the objective and the validation scheme).
 *
 * Owns: which shape features each operator class's curves and grid are
 * over (calib_fit_specs), the knot placement, the GSL multilarge
 * nonlinear least-squares problem (its Jacobian is sparse -- each shape
 * touches t0, per_unit and two knots per curve -- so J^T J is accumulated
 * row by row instead of through a dense N x p matrix), outlier handling,
 * and the error statistics.
 *
 * Invariants: fitted ops are evaluated only through profile.c, after a
 * JSON round trip, so the statistics describe exactly what a profile file
 * predicts.  The fold of a shape depends only on the shape (a hash), so
 * the held-out set is the same on every run and machine.
 */
#include "calib_fit.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_multilarge_nlinear.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

/* What each class's curves and grid are over.  The efficiencies follow
 * the hardware: a GEMM's compute rate depends on how well the output (m n)
 * fills tiles and SMs, on the length of its K loop and on n (the tile
 * shape cuBLAS picks); its streaming rate on the bytes it moves and on how
 * many independent tiles move them (a 32-column GEMM with k = 65536 runs
 * on one or two SMs).  FlashAttention's rate depends on the keys each
 * query attends (its inner loop), on the query rows a GQA-packed tile holds
 * and on how many blocks the launch has; a decode kernel's bandwidth on the
 * bytes and the (sequence, KV head) blocks streaming them.  The selection
 * was made by held-out error on NVIDIA's tables (calib/README.md). */
typedef struct FitSpec {
    int unit_feat;
    int n_ec, ec_feat[PROF_CURVES];
    int n_em, em_feat[PROF_CURVES];
    int n_grid, grid_feat[PROF_GRID];
    int min_rows;
    int pin_ends;  /* 1: later curves are pinned at both ends (see calib_fit_setup) */
} FitSpec;

static const FitSpec calib_fit_specs[PROF_OP_COUNT] = {
    [PROF_GEMM_BF16] = {PF_NONE, 3, {PF_MN, PF_K, PF_N}, 3, {PF_BYTES, PF_MN, PF_K}, 3, {PF_M, PF_N, PF_K}, 4},
    [PROF_GEMM_FP8] = {PF_NONE, 3, {PF_MN, PF_K, PF_N}, 3, {PF_BYTES, PF_MN, PF_K}, 3, {PF_M, PF_N, PF_K}, 4},
    [PROF_ATTN_PREFILL] = {PF_UNITS, 4, {PF_KV_MEAN, PF_QROWS, PF_CTAS, PF_HEAD_DIM}, 3, {PF_BYTES, PF_UNITS, PF_HEAD_DIM}, 5,
                           {PF_BATCH, PF_CHUNK, PF_KV_LEN, PF_GROUP, PF_HEAD_DIM}, 4},
    [PROF_ATTN_DECODE] = {PF_UNITS, 2, {PF_GROUP, PF_HEAD_DIM}, 3, {PF_BYTES, PF_UNITS, PF_GROUP}, 4, {PF_BATCH, PF_KV_LEN, PF_GROUP, PF_HEAD_DIM}, 4},
    [PROF_ALLREDUCE] = {PF_RING, 0, {0}, 3, {PF_BYTES, PF_GPUS, PF_PEER_BYTES}, 2, {PF_BYTES, PF_GPUS}, 4, 1},
    [PROF_MEM_READ] = {PF_NONE, 0, {0}, 1, {PF_BYTES}, 1, {PF_BYTES}, 3},
    [PROF_MEM_COPY] = {PF_NONE, 0, {0}, 1, {PF_BYTES}, 1, {PF_BYTES}, 3},
    [PROF_LAUNCH] = {PF_NONE, 0, {0}, 0, {0}, 0, {0}, 1},
    [PROF_GEMM_FP8_BLOCK] = {PF_NONE, 3, {PF_MN, PF_K, PF_N}, 3, {PF_BYTES, PF_MN, PF_K}, 3, {PF_M, PF_N, PF_K}, 4},
    [PROF_GEMM_NVFP4] = {PF_NONE, 3, {PF_MN, PF_K, PF_N}, 3, {PF_BYTES, PF_MN, PF_K}, 3, {PF_M, PF_N, PF_K}, 4},
    [PROF_ATTN_PREFILL_FP8KV] = {PF_UNITS, 4, {PF_KV_MEAN, PF_QROWS, PF_CTAS, PF_HEAD_DIM}, 3, {PF_BYTES, PF_UNITS, PF_HEAD_DIM}, 5,
                           {PF_BATCH, PF_CHUNK, PF_KV_LEN, PF_GROUP, PF_HEAD_DIM}, 4},
    [PROF_ATTN_DECODE_FP8KV] = {PF_UNITS, 2, {PF_GROUP, PF_HEAD_DIM}, 3, {PF_BYTES, PF_UNITS, PF_GROUP}, 4, {PF_BATCH, PF_KV_LEN, PF_GROUP, PF_HEAD_DIM}, 4},
    /* A fused MoE layer: a grouped GEMM whose rate depends on the rows each
     * touched expert gets (m), the total output (mn) and the expert slice's
     * width (n); per touched expert a fixed cost (its tile scheduling). */
    [PROF_MOE_BF16] = {PF_BATCH, 3, {PF_M, PF_MN, PF_N}, 2, {PF_BYTES, PF_M}, 5, {PF_M, PF_N, PF_K, PF_BATCH, PF_MN}, 8},
    [PROF_MOE_FP8] = {PF_BATCH, 3, {PF_M, PF_MN, PF_N}, 2, {PF_BYTES, PF_M}, 5, {PF_M, PF_N, PF_K, PF_BATCH, PF_MN}, 8},
    [PROF_MOE_FP8_BLOCK] = {PF_BATCH, 3, {PF_M, PF_MN, PF_N}, 2, {PF_BYTES, PF_M}, 5, {PF_M, PF_N, PF_K, PF_BATCH, PF_MN}, 8},
    [PROF_MOE_W4A16] = {PF_BATCH, 3, {PF_M, PF_MN, PF_N}, 2, {PF_BYTES, PF_M}, 5, {PF_M, PF_N, PF_K, PF_BATCH, PF_MN}, 8},
    [PROF_ALLTOALL] = {PF_GPUS, 0, {0}, 3, {PF_BYTES, PF_GPUS, PF_PEER_BYTES}, 2, {PF_BYTES, PF_GPUS}, 4, 1},
    /* MLA: the attention classes' features (one head_dim per class, so that
     * curve is left out) */
    [PROF_MLA_PREFILL] = {PF_UNITS, 3, {PF_KV_MEAN, PF_QROWS, PF_CTAS}, 2, {PF_BYTES, PF_UNITS}, 4,
                          {PF_BATCH, PF_CHUNK, PF_KV_LEN, PF_GROUP}, 4},
    [PROF_MLA_DECODE] = {PF_UNITS, 1, {PF_GROUP}, 3, {PF_BYTES, PF_UNITS, PF_GROUP}, 3, {PF_BATCH, PF_KV_LEN, PF_GROUP}, 4},
    [PROF_MLA_PREFILL_FP8KV] = {PF_UNITS, 3, {PF_KV_MEAN, PF_QROWS, PF_CTAS}, 2, {PF_BYTES, PF_UNITS}, 4,
                                {PF_BATCH, PF_CHUNK, PF_KV_LEN, PF_GROUP}, 4},
    [PROF_MLA_DECODE_FP8KV] = {PF_UNITS, 1, {PF_GROUP}, 3, {PF_BYTES, PF_UNITS, PF_GROUP}, 3, {PF_BATCH, PF_KV_LEN, PF_GROUP}, 4},
};

#define FIT_REG 0.02        /* second-difference penalty, per sqrt(row) */
#define FIT_RIDGE 1e-3      /* pull of each knot towards its start, per sqrt(row) */
#define FIT_OUTLIER 0.6931471805599453 /* ln 2: a shape predicted 2x off */
#define FIT_OUTLIER_MAX 0.05 /* drop at most this share as outliers */
#define FIT_SHIP_MAX 0.25   /* a class whose in-sample median error exceeds this is not shipped */

void calib_fit_opts_default(CalibFitOpts *o)
{
    memset(o, 0, sizeof *o);
    o->holdout = 0.2;
    o->ship_max = FIT_SHIP_MAX;
}

int calib_fit_selects(const Meas *r, int op)
{
    if (calib_meas_prof_op(r) != op) return 0;
    /* The 16-bit-KV classes take Q of the KV's type (the CPU's FP32 rows
     * included); FP8-KV rows go to their own classes (calib_meas_prof_op). */
    if ((op == PROF_ATTN_PREFILL || op == PROF_ATTN_DECODE) &&
        calib_meas_elem_bytes(r->kv_dtype) != calib_meas_elem_bytes(r->dtype))
        return 0;
    return 1;
}

/* A selected row as its class counts it.  FP8-KV attention: Q in and O out
 * at 2 B, as the roofline prices them; of an FP8-Q (TensorRT-LLM's FP8
 * context FMHA) and a BF16-Q measurement of the same shape the faster is
 * kept, as the engine would pick.  All-reduce: BF16 and FP16 messages are
 * the same bytes, so a custom all-reduce and NCCL measurement of one size
 * compete, and the faster is kept: what an engine that falls back to NCCL
 * beyond its custom kernel's range runs. */
static void calib_fit_canon(Meas *r, int op)
{
    if ((op == PROF_ATTN_PREFILL_FP8KV || op == PROF_ATTN_DECODE_FP8KV) && r->dtype == DTYPE_FP8)
        r->dtype = DTYPE_BF16;
    if ((op == PROF_ALLREDUCE || op == PROF_ALLTOALL) && r->dtype == DTYPE_FP16) r->dtype = r->kv_dtype = DTYPE_BF16;
}

/* ------------------------------------------------------------ fit rows */

typedef struct FitRow {
    double feat[PF_COUNT];
    double flops, bytes;
    double y; /* measured seconds */
    int fold; /* 0..4 */
} FitRow;

static int calib_fit_shape_cmp(const void *a, const void *b)
{
    const Meas *x = a, *y = b;
    const double kx[] = {x->dtype, x->kv_dtype, x->m, x->n, x->k, x->batch, x->chunk, x->ctx, x->q_heads,
                         x->kv_heads, x->head_dim, x->size_bytes, x->latency_ms};
    const double ky[] = {y->dtype, y->kv_dtype, y->m, y->n, y->k, y->batch, y->chunk, y->ctx, y->q_heads,
                         y->kv_heads, y->head_dim, y->size_bytes, y->latency_ms};
    for (size_t i = 0; i < sizeof kx / sizeof kx[0]; i++)
        if (kx[i] != ky[i]) return kx[i] < ky[i] ? -1 : 1;
    return 0;
}

static int calib_fit_same_shape(const Meas *x, const Meas *y)
{
    return x->dtype == y->dtype && x->kv_dtype == y->kv_dtype && x->m == y->m && x->n == y->n && x->k == y->k &&
           x->batch == y->batch && x->chunk == y->chunk && x->ctx == y->ctx && x->q_heads == y->q_heads &&
           x->kv_heads == y->kv_heads && x->head_dim == y->head_dim && x->size_bytes == y->size_bytes;
}

static uint64_t calib_fit_mix(uint64_t h, double v)
{
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    h ^= b + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    /* splitmix64 finaliser */
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebULL;
    h ^= h >> 31;
    return h;
}

/* Rows of ms for `op`, one per shape (the fastest: when several kernels
 * measured a shape, the engine would pick that one). */
static FitRow *calib_fit_rows(const MeasSet *ms, int op, size_t *n_out)
{
    size_t n = 0;
    for (size_t i = 0; i < ms->n; i++) n += calib_fit_selects(&ms->rows[i], op);
    *n_out = 0;
    if (!n) return NULL;
    Meas *sel = xmalloc(n * sizeof *sel);
    n = 0;
    for (size_t i = 0; i < ms->n; i++)
        if (calib_fit_selects(&ms->rows[i], op)) {
            sel[n] = ms->rows[i];
            calib_fit_canon(&sel[n++], op);
        }
    qsort(sel, n, sizeof *sel, calib_fit_shape_cmp);
    FitRow *rows = xmalloc(n * sizeof *rows);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && calib_fit_same_shape(&sel[i], &sel[i - 1])) continue; /* sorted: the first is fastest */
        FitRow *r = &rows[k++];
        calib_meas_features(&sel[i], r->feat, &r->flops, &r->bytes);
        r->y = sel[i].latency_ms * 1e-3;
        const double key[] = {sel[i].dtype, sel[i].m, sel[i].n, sel[i].k, sel[i].batch, sel[i].chunk, sel[i].ctx,
                              sel[i].q_heads, sel[i].kv_heads, sel[i].head_dim, sel[i].size_bytes};
        uint64_t h = 0x5eed;
        for (size_t j = 0; j < sizeof key / sizeof key[0]; j++) h = calib_fit_mix(h, key[j]);
        r->fold = (int)(h % 5);
    }
    free(sel);
    *n_out = k;
    return rows;
}

/* ------------------------------------------------------- the LSQ problem */

#define FIT_MAXC (2 * PROF_CURVES)

typedef struct FitProblem {
    const FitSpec *sp;
    int nc;                           /* curves: ec first, then em */
    int is_em[FIT_MAXC];
    ProfCurve curve[FIT_MAXC];        /* knots; le filled from x */
    int pidx[FIT_MAXC][PROF_KNOTS];   /* parameter of each knot, -1 = pinned at 0 */
    int has_unit;
    int p;
    double *x0;                       /* flat start (and ridge target) */
    double *x1;                       /* envelope start */
    const FitRow *rows;
    const size_t *use;                /* rows in the fit */
    size_t n;
    int *seg;                         /* n * nc: knot index of each row on each curve */
    double *frac;                     /* n * nc: position between knot seg and seg+1 */
    double peak, bw;
    double reg_w, ridge_w;
    size_t nreg;                      /* penalty residuals */
} FitProblem;

static void calib_fit_knots(ProfCurve *c, int feat, const FitRow *rows, const size_t *use, size_t n)
{
    double lo = HUGE_VAL, hi = -HUGE_VAL;
    for (size_t i = 0; i < n; i++) {
        double v = rows[use[i]].feat[feat];
        if (v > 0) {
            lo = fmin(lo, log2(v));
            hi = fmax(hi, log2(v));
        }
    }
    memset(c, 0, sizeof *c);
    c->feat = feat;
    if (!(lo <= hi)) {
        c->n = 1;
        return;
    }
    double a = floor(lo + 1e-9), b = ceil(hi - 1e-9);
    double step = 1;
    while ((b - a) / step + 1 > PROF_KNOTS - 1) step += 1;
    int n_k = 0;
    for (double v = a; v <= b + 1e-9 && n_k < PROF_KNOTS; v += step) c->lx[n_k++] = v;
    if (c->lx[n_k - 1] < hi - 1e-9 && n_k < PROF_KNOTS) c->lx[n_k++] = b;
    c->n = n_k;
}

static void calib_fit_locate(const ProfCurve *c, double v, int *seg, double *frac)
{
    double lx = v > 0 ? log2(v) : -HUGE_VAL;
    if (c->n == 1 || !(lx > c->lx[0])) {
        *seg = 0;
        *frac = 0;
        return;
    }
    if (lx >= c->lx[c->n - 1]) {
        *seg = c->n - 1;
        *frac = 0;
        return;
    }
    int i = 1;
    while (i < c->n - 1 && c->lx[i] < lx) i++;
    *seg = i - 1;
    *frac = (lx - c->lx[i - 1]) / (c->lx[i] - c->lx[i - 1]);
}

/* Loads the knot values of every curve from the parameter vector. */
static void calib_fit_unpack(FitProblem *fp, const gsl_vector *x)
{
    for (int c = 0; c < fp->nc; c++)
        for (int j = 0; j < fp->curve[c].n; j++)
            fp->curve[c].le[j] = fp->pidx[c][j] >= 0 ? gsl_vector_get(x, (size_t)fp->pidx[c][j]) : 0.0;
}

typedef struct FitEval {
    double pred, tc, tm, t0, tu;
} FitEval;

static double calib_fit_le(const FitProblem *fp, size_t r, int c)
{
    const ProfCurve *cv = &fp->curve[c];
    int s = fp->seg[r * (size_t)fp->nc + (size_t)c];
    double t = fp->frac[r * (size_t)fp->nc + (size_t)c];
    return t > 0 ? cv->le[s] + t * (cv->le[s + 1] - cv->le[s]) : cv->le[s];
}

static FitEval calib_fit_eval_row(const FitProblem *fp, const gsl_vector *x, size_t r)
{
    const FitRow *row = &fp->rows[fp->use[r]];
    FitEval ev;
    ev.t0 = exp(gsl_vector_get(x, 0));
    ev.tu = fp->has_unit ? exp(gsl_vector_get(x, 1)) * row->feat[fp->sp->unit_feat] : 0;
    double lec = 0, lem = 0;
    for (int c = 0; c < fp->nc; c++) {
        if (fp->is_em[c]) lem += calib_fit_le(fp, r, c);
        else lec += calib_fit_le(fp, r, c);
    }
    ev.tc = row->flops > 0 && fp->peak > 0 ? row->flops / (fp->peak * exp(lec)) : 0;
    ev.tm = row->bytes > 0 ? row->bytes / (fp->bw * exp(lem)) : 0;
    ev.pred = ev.t0 + ev.tu + (ev.tc > ev.tm ? ev.tc : ev.tm);
    return ev;
}

/* Nonzeros of one row of the Jacobian of ln(pred) - ln(y). */
static int calib_fit_grad_row(const FitProblem *fp, const gsl_vector *x, size_t r, int *idx, double *val)
{
    FitEval ev = calib_fit_eval_row(fp, x, r);
    int k = 0;
    idx[k] = 0;
    val[k++] = ev.t0 / ev.pred;
    if (fp->has_unit) {
        idx[k] = 1;
        val[k++] = ev.tu / ev.pred;
    }
    int em_side = ev.tm > ev.tc;
    double side = em_side ? ev.tm : ev.tc;
    if (side <= 0) return k;
    for (int c = 0; c < fp->nc; c++) {
        if (fp->is_em[c] != em_side) continue;
        int s = fp->seg[r * (size_t)fp->nc + (size_t)c];
        double t = fp->frac[r * (size_t)fp->nc + (size_t)c];
        /* d ln(pred) / d le = -side * weight / pred */
        if (fp->pidx[c][s] >= 0) {
            idx[k] = fp->pidx[c][s];
            val[k++] = -side * (1 - t) / ev.pred;
        }
        if (t > 0 && fp->pidx[c][s + 1] >= 0) {
            idx[k] = fp->pidx[c][s + 1];
            val[k++] = -side * t / ev.pred;
        }
    }
    return k;
}

static int calib_fit_f(const gsl_vector *x, void *params, gsl_vector *f)
{
    FitProblem *fp = params;
    calib_fit_unpack(fp, x);
    for (size_t r = 0; r < fp->n; r++) {
        FitEval ev = calib_fit_eval_row(fp, x, r);
        gsl_vector_set(f, r, log(ev.pred / fp->rows[fp->use[r]].y));
    }
    size_t q = fp->n;
    for (int c = 0; c < fp->nc; c++)
        for (int j = 1; j + 1 < fp->curve[c].n; j++)
            gsl_vector_set(f, q++,
                           fp->reg_w * (fp->curve[c].le[j - 1] - 2 * fp->curve[c].le[j] + fp->curve[c].le[j + 1]));
    for (int j = fp->has_unit ? 2 : 1; j < fp->p; j++)
        gsl_vector_set(f, q++, fp->ridge_w * (gsl_vector_get(x, (size_t)j) - fp->x0[j]));
    return GSL_SUCCESS;
}

/* Penalty rows: (index, value) pairs, at most 3 per row. */
static int calib_fit_pen_row(const FitProblem *fp, size_t q, int *idx, double *val)
{
    size_t k = 0;
    for (int c = 0; c < fp->nc; c++)
        for (int j = 1; j + 1 < fp->curve[c].n; j++, k++)
            if (k == q) {
                int m = 0;
                const double w[3] = {1, -2, 1};
                for (int d = 0; d < 3; d++)
                    if (fp->pidx[c][j - 1 + d] >= 0) {
                        idx[m] = fp->pidx[c][j - 1 + d];
                        val[m++] = fp->reg_w * w[d];
                    }
                return m;
            }
    int j = (int)(q - k) + (fp->has_unit ? 2 : 1);
    idx[0] = j;
    val[0] = fp->ridge_w;
    return 1;
}

static int calib_fit_df(CBLAS_TRANSPOSE_t trans, const gsl_vector *x, const gsl_vector *u, void *params,
                        gsl_vector *v, gsl_matrix *jtj)
{
    FitProblem *fp = params;
    calib_fit_unpack(fp, x);
    if (v) gsl_vector_set_zero(v);
    if (jtj) gsl_matrix_set_zero(jtj);
    int idx[2 + 2 * FIT_MAXC];
    double val[2 + 2 * FIT_MAXC];
    size_t total = fp->n + fp->nreg;
    for (size_t r = 0; r < total; r++) {
        int k = r < fp->n ? calib_fit_grad_row(fp, x, r, idx, val) : calib_fit_pen_row(fp, r - fp->n, idx, val);
        if (v && u) {
            if (trans == CblasNoTrans) {
                double s = 0;
                for (int a = 0; a < k; a++) s += val[a] * gsl_vector_get(u, (size_t)idx[a]);
                gsl_vector_set(v, r, s);
            } else {
                double ur = gsl_vector_get(u, r);
                for (int a = 0; a < k; a++) *gsl_vector_ptr(v, (size_t)idx[a]) += val[a] * ur;
            }
        }
        if (jtj)
            for (int a = 0; a < k; a++)
                for (int b = 0; b < k; b++) *gsl_matrix_ptr(jtj, (size_t)idx[a], (size_t)idx[b]) += val[a] * val[b];
    }
    return GSL_SUCCESS;
}

static void calib_fit_setup(FitProblem *fp, const FitSpec *sp, const FitRow *rows, const size_t *use, size_t n,
                            double peak, double bw, double ridge)
{
    memset(fp, 0, sizeof *fp);
    fp->sp = sp;
    fp->rows = rows;
    fp->use = use;
    fp->n = n;
    fp->peak = peak;
    fp->bw = bw;
    fp->has_unit = sp->unit_feat >= 0;
    int p = fp->has_unit ? 2 : 1;
    for (int c = 0; c < sp->n_ec + sp->n_em; c++) {
        int em = c >= sp->n_ec;
        int feat = em ? sp->em_feat[c - sp->n_ec] : sp->ec_feat[c];
        ProfCurve *cv = &fp->curve[fp->nc];
        calib_fit_knots(cv, feat, rows, use, n);
        /* The first curve of a product carries the level; the others are
         * pinned to 1 at their last knot, or the product is not unique. */
        int first = em ? c == sp->n_ec : c == 0;
        /* With pin_ends the first knot is pinned too: an all-reduce's
         * peer_bytes is bytes x (gpus - 1), so a slope in log2 could move
         * from the bytes curve to the peer_bytes curve, the gpus curve
         * absorbing the difference, and drift without bound. */
        for (int j = 0; j < cv->n; j++)
            fp->pidx[fp->nc][j] = (!first && (j == cv->n - 1 || (sp->pin_ends && j == 0 && cv->n > 2))) ? -1 : p++;
        if (!first && cv->n == 1) continue; /* a constant 1: no curve at all */
        fp->is_em[fp->nc] = em;
        fp->nc++;
    }
    fp->p = p;
    fp->seg = xmalloc((n ? n : 1) * (size_t)(fp->nc ? fp->nc : 1) * sizeof *fp->seg);
    fp->frac = xmalloc((n ? n : 1) * (size_t)(fp->nc ? fp->nc : 1) * sizeof *fp->frac);
    for (size_t r = 0; r < n; r++)
        for (int c = 0; c < fp->nc; c++)
            calib_fit_locate(&fp->curve[c], rows[use[r]].feat[fp->curve[c].feat],
                             &fp->seg[r * (size_t)fp->nc + (size_t)c], &fp->frac[r * (size_t)fp->nc + (size_t)c]);
    fp->nreg = 0;
    for (int c = 0; c < fp->nc; c++) fp->nreg += fp->curve[c].n > 2 ? (size_t)(fp->curve[c].n - 2) : 0;
    fp->nreg += (size_t)(fp->p - (fp->has_unit ? 2 : 1));
    double sq = sqrt((double)(n ? n : 1));
    fp->reg_w = FIT_REG * sq;
    fp->ridge_w = ridge * sq;
    /* Start: t0 at half the fastest shape, per-unit small, compute at 50%
     * and bandwidth at 70% of the references. */
    fp->x0 = xcalloc((size_t)fp->p, sizeof *fp->x0);
    double ymin = HUGE_VAL;
    for (size_t r = 0; r < n; r++) ymin = fmin(ymin, rows[use[r]].y);
    fp->x0[0] = log(0.5 * ymin);
    if (fp->has_unit) fp->x0[1] = log(0.01 * ymin);
    for (int c = 0; c < fp->nc; c++)
        for (int j = 0; j < fp->curve[c].n; j++)
            if (fp->pidx[c][j] >= 0) {
                int first = fp->pidx[c][fp->curve[c].n - 1] >= 0;
                fp->x0[fp->pidx[c][j]] = first ? log(fp->is_em[c] ? 0.7 : 0.5) : 0.0;
            }
    /* Second start: the first curve of each product at the best rate
     * achieved near each knot (every shape takes at least as long as
     * either term, so that envelope is a lower bound that is tight where
     * the term binds). */
    fp->x1 = xmalloc((size_t)fp->p * sizeof *fp->x1);
    memcpy(fp->x1, fp->x0, (size_t)fp->p * sizeof *fp->x1);
    for (int c = 0; c < fp->nc; c++) {
        const ProfCurve *cv = &fp->curve[c];
        if (fp->pidx[c][cv->n - 1] < 0) continue; /* not a first curve */
        double best[PROF_KNOTS];
        for (int j = 0; j < cv->n; j++) best[j] = 0;
        for (size_t r = 0; r < n; r++) {
            const FitRow *row = &rows[use[r]];
            double work = fp->is_em[c] ? row->bytes : row->flops;
            double ref = fp->is_em[c] ? bw : peak;
            double v = row->feat[cv->feat];
            if (!(work > 0) || !(ref > 0) || !(v > 0)) continue;
            int j = 0;
            for (int q = 1; q < cv->n; q++)
                if (fabs(cv->lx[q] - log2(v)) < fabs(cv->lx[j] - log2(v))) j = q;
            best[j] = fmax(best[j], work / (ref * row->y));
        }
        double last = 0;
        for (int j = 0; j < cv->n; j++) last = best[j] > 0 ? best[j] : last;
        for (int j = cv->n - 1; j >= 0; j--) {
            if (best[j] > 0) last = best[j];
            else best[j] = last;
        }
        for (int j = 0; j < cv->n; j++)
            if (best[j] > 0) fp->x1[fp->pidx[c][j]] = log(fmin(fmax(best[j], 1e-4), 1.0));
    }
}

/* Sum of squared residuals at x. */
static double calib_fit_cost(FitProblem *fp, const double *x)
{
    size_t n = fp->n + fp->nreg;
    gsl_vector *xv = gsl_vector_alloc((size_t)fp->p), *f = gsl_vector_alloc(n);
    for (int j = 0; j < fp->p; j++) gsl_vector_set(xv, (size_t)j, x[j]);
    calib_fit_f(xv, fp, f);
    double s = 0;
    for (size_t i = 0; i < n; i++) s += gsl_vector_get(f, i) * gsl_vector_get(f, i);
    gsl_vector_free(xv);
    gsl_vector_free(f);
    return isfinite(s) ? s : HUGE_VAL;
}

static void calib_fit_free(FitProblem *fp)
{
    free(fp->seg);
    free(fp->frac);
    free(fp->x0);
    free(fp->x1);
}

/* Runs the solver from fp->x0 (or from `start` when given); x receives
 * the solution. */
static int calib_fit_solve(FitProblem *fp, const double *start, double *x, Err *e)
{
    gsl_multilarge_nlinear_fdf fdf;
    memset(&fdf, 0, sizeof fdf);
    fdf.f = calib_fit_f;
    fdf.df = calib_fit_df;
    fdf.n = fp->n + fp->nreg;
    fdf.p = (size_t)fp->p;
    fdf.params = fp;
    if (fdf.n < fdf.p) return err_set(e, "%zu residuals for %zu parameters", fdf.n, fdf.p);
    gsl_multilarge_nlinear_parameters par = gsl_multilarge_nlinear_default_parameters();
    par.trs = gsl_multilarge_nlinear_trs_lm;
    par.solver = gsl_multilarge_nlinear_solver_cholesky;
    gsl_multilarge_nlinear_workspace *w = gsl_multilarge_nlinear_alloc(gsl_multilarge_nlinear_trust, &par, fdf.n,
                                                                       fdf.p);
    if (!w) return err_set(e, "GSL could not allocate the least-squares workspace (%zu x %zu)", fdf.n, fdf.p);
    gsl_vector *x0 = gsl_vector_alloc(fdf.p);
    for (size_t j = 0; j < fdf.p; j++) gsl_vector_set(x0, j, start ? start[j] : fp->x0[j]);
    int info = 0;
    int st = gsl_multilarge_nlinear_init(x0, &fdf, w);
    if (st == GSL_SUCCESS) st = gsl_multilarge_nlinear_driver(300, 1e-9, 1e-9, 1e-12, NULL, NULL, &info, w);
    /* Running out of iterations still leaves the best point found. */
    if (st != GSL_SUCCESS && st != GSL_EMAXITER && st != GSL_ENOPROG) {
        gsl_vector_free(x0);
        gsl_multilarge_nlinear_free(w);
        return err_set(e, "GSL least squares failed: %s", gsl_strerror(st));
    }
    const gsl_vector *sol = gsl_multilarge_nlinear_position(w);
    int finite = 1;
    for (size_t j = 0; j < fdf.p; j++) {
        x[j] = gsl_vector_get(sol, j);
        finite &= isfinite(x[j]);
    }
    gsl_vector_free(x0);
    gsl_multilarge_nlinear_free(w);
    /* A finite parameter can still be absurd: ln t0 = 6e7 overflows exp()
     * (seen on CPU timings disturbed by other processes). */
    if (!finite || !(calib_fit_cost(fp, x) < HUGE_VAL))
        return err_set(e, "least squares diverged (a parameter or the cost became non-finite)");
    return 0;
}

/* Writes the solution x into op.  The product of curves is unchanged by
 * moving a constant from one curve to another; the stored form keeps each
 * later curve's largest factor at 1 (a penalty for its feature) and gives
 * the level to the first, so every knot reads as an efficiency.  Returns the
 * knots that had to be clamped into [1e-9, 1e3]: a solution that drifted
 * along a direction the data do not pin down (two curves over features that
 * move together trading a slope), which the clamp no longer reproduces. */
static int calib_fit_store(const FitProblem *fp, const double *x, ProfOp *op)
{
    op->t0_s = exp(x[0]);
    op->unit_feat = fp->has_unit ? fp->sp->unit_feat : PF_NONE;
    op->unit_s = fp->has_unit ? exp(x[1]) : 0;
    op->n_ec = op->n_em = 0;
    for (int side = 0; side < 2; side++) {
        ProfCurve *first = NULL;
        for (int c = 0; c < fp->nc; c++) {
            if (fp->is_em[c] != side) continue;
            ProfCurve *dst = side ? &op->em[op->n_em++] : &op->ec[op->n_ec++];
            *dst = fp->curve[c];
            double top = -HUGE_VAL;
            for (int j = 0; j < dst->n; j++) {
                dst->le[j] = fp->pidx[c][j] >= 0 ? x[fp->pidx[c][j]] : 0.0;
                top = fmax(top, dst->le[j]);
            }
            if (!first) {
                first = dst;
                continue;
            }
            for (int j = 0; j < dst->n; j++) dst->le[j] -= top;
            for (int j = 0; j < first->n; j++) first->le[j] += top;
        }
    }
    int clamped = 0;
    for (int side = 0; side < 2; side++)
        for (int c = 0; c < (side ? op->n_em : op->n_ec); c++) {
            ProfCurve *cv = side ? &op->em[c] : &op->ec[c];
            for (int j = 0; j < cv->n; j++) {
                double v = fmin(fmax(cv->le[j], log(1e-9)), log(1e3));
                clamped += v != cv->le[j];
                cv->le[j] = v;
            }
        }
    return clamped;
}

/* ----------------------------------------------------------- statistics */

static void calib_fit_quantiles(double *err, size_t n, double *median, double *p90)
{
    if (n == 0) {
        *median = *p90 = NAN;
        return;
    }
    gsl_sort(err, 1, n);
    *median = gsl_stats_quantile_from_sorted_data(err, 1, n, 0.5);
    *p90 = gsl_stats_quantile_from_sorted_data(err, 1, n, 0.9);
}

static double calib_fit_row_pred(const ProfOp *op, const FitRow *r)
{
    return profile_op_time(op, r->feat, r->flops, r->bytes);
}

/* Normalises a lone op through the profile's JSON form. */
static int calib_fit_normalize_op(ProfOp *op, int kind, Err *e)
{
    Profile *tmp = xcalloc(1, sizeof *tmp);
    tmp->present = 1;
    tmp->iter_overhead_s = -1;
    snprintf(tmp->name, sizeof tmp->name, "fit");
    tmp->op[kind] = *op;
    tmp->op[kind].present = 1;
    int r = profile_normalize(tmp, e);
    if (r == 0) *op = tmp->op[kind];
    free(tmp);
    return r;
}

/* One fit of `kind` on rows[use[0..n)] with ridge weight `ridge`,
 * outliers dropped once; *n_out receives the outliers, *wild the knots
 * clamped (calib_fit_store). */
static int calib_fit_pass(int kind, const FitRow *rows, const size_t *use, size_t n, double peak, double bw,
                          double ridge, ProfOp *op, int *n_out, int *wild, Err *e)
{
    const FitSpec *sp = &calib_fit_specs[kind];
    FitProblem fp;
    calib_fit_setup(&fp, sp, rows, use, n, peak, bw, ridge);
    *wild = 0;
    double *x = xcalloc((size_t)fp.p, sizeof *x), *xb = xcalloc((size_t)fp.p, sizeof *xb);
    /* max() makes the problem multi-modal: solve from both starts and keep
     * the better end point. */
    int rc = calib_fit_solve(&fp, fp.x0, x, e);
    Err e2 = {0};
    if (calib_fit_solve(&fp, fp.x1, xb, &e2) == 0 && (rc < 0 || calib_fit_cost(&fp, xb) < calib_fit_cost(&fp, x))) {
        memcpy(x, xb, (size_t)fp.p * sizeof *x);
        rc = 0;
    }
    free(xb);
    *n_out = 0;
    if (rc == 0 && n >= 20) {
        /* Refit without shapes the first pass misses by more than 2x, when
         * they are few: a handful of bad measurements (a kernel that fell
         * off a fast path, a timing glitch) should not bend every curve. */
        *wild = calib_fit_store(&fp, x, op);
        op->peak_flops = peak;
        op->bw_bytes_per_s = bw;
        size_t *keep = xmalloc(n * sizeof *keep), k = 0;
        for (size_t i = 0; i < n; i++) {
            double r = log(calib_fit_row_pred(op, &rows[use[i]]) / rows[use[i]].y);
            if (fabs(r) <= FIT_OUTLIER) keep[k++] = use[i];
        }
        if (k < n && (double)(n - k) <= FIT_OUTLIER_MAX * (double)n) {
            *n_out = (int)(n - k);
            FitProblem f2;
            calib_fit_setup(&f2, sp, rows, keep, k, peak, bw, ridge);
            double *x2 = xcalloc((size_t)f2.p, sizeof *x2);
            /* Same knots unless the dropped rows set a range end. */
            int same = f2.p == fp.p;
            Err e3 = {0};
            /* A refit that diverges keeps the first pass (stored above). */
            if (calib_fit_solve(&f2, same ? x : NULL, x2, &e3) == 0) *wild = calib_fit_store(&f2, x2, op);
            else *n_out = 0;
            free(x2);
            calib_fit_free(&f2);
            free(keep);
            free(x);
            calib_fit_free(&fp);
            goto done;
        }
        free(keep);
    }
    if (rc == 0) *wild = calib_fit_store(&fp, x, op);
    free(x);
    calib_fit_free(&fp);
    if (rc < 0) return -1;
done:
    op->peak_flops = peak;
    op->bw_bytes_per_s = bw;
    op->present = 1;
    op->n_grid = sp->n_grid;
    for (int g = 0; g < sp->n_grid; g++) {
        int f = sp->grid_feat[g];
        double lo = HUGE_VAL, hi = 0;
        for (size_t i = 0; i < n; i++) {
            double v = rows[use[i]].feat[f];
            lo = fmin(lo, v);
            hi = fmax(hi, v);
        }
        op->grid_feat[g] = f;
        op->grid_lo[g] = lo > 0 ? lo : 1;
        op->grid_hi[g] = hi >= op->grid_lo[g] ? hi : op->grid_lo[g];
    }
    return calib_fit_normalize_op(op, kind, e);
}

/* Median |pred - meas| / meas of op over rows[use[0..n)]. */
static double calib_fit_median_err(const ProfOp *op, const FitRow *rows, const size_t *use, size_t n)
{
    double *err = xmalloc((n ? n : 1) * sizeof *err), med, p90;
    for (size_t i = 0; i < n; i++) err[i] = fabs(calib_fit_row_pred(op, &rows[use[i]]) / rows[use[i]].y - 1);
    calib_fit_quantiles(err, n, &med, &p90);
    free(err);
    return med;
}

/* A fit that drifted into the clamp is fitted again with a 100x ridge, and
 * the one that explains its shapes better is kept: the ridge pins the
 * directions the data leave free (each knot pulled towards its start) --
 * prefill tables of empty-cache prompts make kv_mean = (c + 1) / 2 and
 * qrows = c group move together, for one -- but it also pulls on knots the
 * data do determine. */
static int calib_fit_once(int kind, const FitRow *rows, const size_t *use, size_t n, double peak, double bw,
                          ProfOp *op, int *n_out, Err *e)
{
    int wild = 0;
    if (calib_fit_pass(kind, rows, use, n, peak, bw, FIT_RIDGE, op, n_out, &wild, e) < 0) return -1;
    if (!wild) return 0;
    ProfOp *again = xmalloc(sizeof *again);
    int out2 = 0;
    Err e2 = {0};
    if (calib_fit_pass(kind, rows, use, n, peak, bw, 100 * FIT_RIDGE, again, &out2, &wild, &e2) == 0 &&
        calib_fit_median_err(again, rows, use, n) < calib_fit_median_err(op, rows, use, n)) {
        *op = *again;
        *n_out = out2;
    }
    free(again);
    return 0;
}

/* Best achieved rates in the rows: the reference when none is given. */
static double calib_fit_best_rate(const FitRow *rows, size_t n, int flops)
{
    double best = 0;
    for (size_t i = 0; i < n; i++) best = fmax(best, (flops ? rows[i].flops : rows[i].bytes) / rows[i].y);
    return best;
}

static int calib_fit_op(const MeasSet *ms, int kind, const CalibFitOpts *o, double peak_default, double bw_default,
                        ProfOp *op, Err *e)
{
    memset(op, 0, sizeof *op);
    size_t n;
    FitRow *rows = calib_fit_rows(ms, kind, &n);
    if (n < (size_t)calib_fit_specs[kind].min_rows) {
        free(rows);
        return 0;
    }
    double peak = 0, bw = 0;
    const int computes = profile_op_is_gemm(kind) || profile_op_is_attn(kind) || profile_op_is_moe(kind);
    if (kind == PROF_GEMM_FP8 || kind == PROF_MOE_FP8) peak = o->peak_flops_fp8;
    else if (kind == PROF_GEMM_FP8_BLOCK || kind == PROF_MOE_FP8_BLOCK)
        peak = o->peak_flops_fp8_block > 0 ? o->peak_flops_fp8_block : o->peak_flops_fp8;
    else if (kind == PROF_GEMM_NVFP4) peak = o->peak_flops_nvfp4;
    else if (computes) peak = o->peak_flops_bf16; /* BF16 GEMMs; attention runs BF16 MMAs */
    bw = kind == PROF_ALLREDUCE || kind == PROF_ALLTOALL ? o->link_bw_bytes_per_s : o->mem_bw_bytes_per_s;
    /* Without a reference: the BF16 GEMMs' best rate for BF16 work, a
     * low-precision GEMM's own best rate for it. */
    if (!(peak > 0) && computes)
        peak = peak_default > 0 && (kind == PROF_GEMM_BF16 || profile_op_is_attn(kind)) ? peak_default
                                                                                        : calib_fit_best_rate(rows, n, 1);
    if (!(bw > 0))
        bw = kind != PROF_ALLREDUCE && kind != PROF_ALLTOALL && bw_default > 0 ? bw_default
                                                                                : calib_fit_best_rate(rows, n, 0);
    if (!(bw > 0)) bw = 1e9; /* launch probe: no bytes at all */
    if (!computes) peak = 0;

    size_t *use = xmalloc(n * sizeof *use);
    int outl = 0;
    ProfFitStats st = {0};
    st.rows = (int)n;
    st.held_median = st.held_p90 = NAN;
    double *err = xmalloc(n * sizeof *err);
    int rc = 0;
    /* Validation: fit on folds 1-4, predict fold 0. */
    size_t nt = 0, nh = 0;
    for (size_t i = 0; i < n; i++)
        if (o->holdout > 0 && rows[i].fold == 0) nh++;
        else use[nt++] = i;
    if (nh > 0 && nt >= (size_t)calib_fit_specs[kind].min_rows) {
        ProfOp v;
        memset(&v, 0, sizeof v);
        if (calib_fit_once(kind, rows, use, nt, peak, bw, &v, &outl, e) < 0) {
            rc = err_prefix(e, "%s (validation fit)", profile_op_name(kind));
            goto out;
        }
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            if (rows[i].fold == 0) err[k++] = fabs(calib_fit_row_pred(&v, &rows[i]) / rows[i].y - 1);
        calib_fit_quantiles(err, k, &st.held_median, &st.held_p90);
        st.held_out_rows = (int)k;
        if (o->validate_only) {
            *op = v;
            st.train_rows = (int)nt;
            st.outliers = outl;
            for (size_t i = 0; i < nt; i++) err[i] = fabs(calib_fit_row_pred(&v, &rows[use[i]]) / rows[use[i]].y - 1);
            calib_fit_quantiles(err, nt, &st.train_median, &st.train_p90);
            goto stats;
        }
    }
    for (size_t i = 0; i < n; i++) use[i] = i;
    if (calib_fit_once(kind, rows, use, n, peak, bw, op, &outl, e) < 0) {
        rc = err_prefix(e, "%s", profile_op_name(kind));
        goto out;
    }
    st.train_rows = (int)n;
    st.outliers = outl;
    for (size_t i = 0; i < n; i++) err[i] = fabs(calib_fit_row_pred(op, &rows[i]) / rows[i].y - 1);
    calib_fit_quantiles(err, n, &st.train_median, &st.train_p90);
stats:
    op->fit = st;
out:
    free(err);
    free(use);
    free(rows);
    return rc;
}

static void calib_fit_data_note(const MeasSet *ms, int kind, char *buf, size_t n)
{
    /* The tags of the rows used, each once. */
    buf[0] = '\0';
    char seen[8][40];
    int ns = 0;
    for (size_t i = 0; i < ms->n && ns < 8; i++) {
        if (!calib_fit_selects(&ms->rows[i], kind)) continue;
        char tag[40];
        snprintf(tag, sizeof tag, "%s", ms->rows[i].tag);
        char *at = strchr(tag, '@'); /* "vidur:qkv@tp2": the TP degree is a detail here */
        if (at) *at = '\0';
        int dup = 0;
        for (int j = 0; j < ns; j++) dup |= !strcmp(seen[j], tag);
        if (dup) continue;
        snprintf(seen[ns++], sizeof seen[0], "%s", tag);
        size_t len = strlen(buf);
        snprintf(buf + len, n - len, "%s%s", len ? ", " : "", tag);
    }
}

int calib_fit_profile(const MeasSet *ms, const CalibFitOpts *o, Profile *p, Err *e)
{
    memset(p, 0, sizeof *p);
    p->iter_overhead_s = -1;
    snprintf(p->name, sizeof p->name, "%s", o->name && *o->name ? o->name : "profile");
    snprintf(p->hardware, sizeof p->hardware, "%s", o->hardware ? o->hardware : "");
    snprintf(p->source, sizeof p->source, "%s", o->source ? o->source : "");
    /* Without given peaks, the GEMMs' best rate is the compute reference
     * of every class, and the memory kernel's best the bandwidth. */
    double peak_default = 0, bw_default = 0;
    size_t n;
    FitRow *rows = calib_fit_rows(ms, PROF_GEMM_BF16, &n);
    if (n) peak_default = calib_fit_best_rate(rows, n, 1);
    free(rows);
    rows = calib_fit_rows(ms, PROF_MEM_READ, &n);
    if (n) bw_default = calib_fit_best_rate(rows, n, 0);
    free(rows);
    int fitted = 0;
    for (int k = 0; k < PROF_OP_COUNT; k++) {
        if (o->op_mask && !(o->op_mask & (1u << k))) continue;
        if (calib_fit_op(ms, k, o, peak_default, bw_default, &p->op[k], e) < 0) return -1;
        /* A class whose shipped fit misses its own shapes by a median of
         * more than FIT_SHIP_MAX did not converge to anything the data
         * support; the roofline is better off with its fallback (an FP8-KV
         * class: the 16-bit one scaled by bytes). */
        const ProfFitStats *st = &p->op[k].fit;
        if (p->op[k].present && k != PROF_LAUNCH && !(st->train_median <= o->ship_max)) {
            if (o->log)
                fprintf(o->log, "calib fit: %s not shipped: in-sample median error %.1f%% > %.0f%% (%d shapes)\n",
                        profile_op_name(k), 100 * st->train_median, 100 * o->ship_max, st->rows);
            memset(&p->op[k], 0, sizeof p->op[k]);
        }
        if (p->op[k].present) {
            calib_fit_data_note(ms, k, p->op[k].fit.data, sizeof p->op[k].fit.data);
            fitted++;
        }
    }
    if (!fitted) return err_set(e, "no operator has enough measurements to fit (need 4 distinct shapes of a GEMM, "
                                   "attention, all-reduce or memory kernel)");
    p->present = 1;
    return profile_normalize(p, e);
}

/* -------------------------------------------------------------- reports */

double calib_fit_predict(const Profile *p, const Meas *r)
{
    int k = calib_meas_prof_op(r);
    if (k < 0 || !p->op[k].present) return -1;
    double feat[PF_COUNT], f, b;
    Meas c = *r;
    calib_fit_canon(&c, k);
    calib_meas_features(&c, feat, &f, &b);
    return profile_op_time(&p->op[k], feat, f, b);
}

int calib_fit_errors(const Profile *p, const MeasSet *ms, int op, double *median, double *p90, size_t *n)
{
    *median = *p90 = NAN;
    *n = 0;
    if (!p->op[op].present) return -1;
    size_t nr;
    FitRow *rows = calib_fit_rows(ms, op, &nr);
    if (!nr) return -1;
    double *err = xmalloc(nr * sizeof *err);
    for (size_t i = 0; i < nr; i++) err[i] = fabs(calib_fit_row_pred(&p->op[op], &rows[i]) / rows[i].y - 1);
    calib_fit_quantiles(err, nr, median, p90);
    *n = nr;
    free(err);
    free(rows);
    return 0;
}

void calib_fit_print(FILE *f, const Profile *p)
{
    fprintf(f, "  %-13s %7s %7s %8s %8s %8s %8s %8s  %s\n", "operator", "shapes", "outlier", "t0 us", "held p50",
            "held p90", "all p50", "all p90", "data");
    for (int k = 0; k < PROF_OP_COUNT; k++) {
        const ProfOp *op = &p->op[k];
        if (!op->present) continue;
        const ProfFitStats *s = &op->fit;
        fprintf(f, "  %-13s %7d %7d %8.2f %7.1f%% %7.1f%% %7.1f%% %7.1f%%  %s\n", profile_op_name(k), s->rows,
                s->outliers, op->t0_s * 1e6, 100 * s->held_median, 100 * s->held_p90, 100 * s->train_median,
                100 * s->train_p90, s->data);
    }
}
