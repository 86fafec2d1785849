/*
 * calib_report.c -- calibration quality and measured-vs-fitted reports
 * (see calib_report.h).
 *
 * Owns: where the shared measured tables live, the acceptance
 * checks on them, and the Vidur cross-source comparison.  Errors are
 * |pred - meas| / meas; statistics are GSL quantiles, as in calib_fit.c.
 */
#include "calib_report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#include "paths.h"

const char *calib_data_dir(char *buf, size_t n)
{
    const char *env = getenv("SERVESIM_SHARED_DATA");
    if (env && *env) {
        snprintf(buf, n, "%s", env);
        return buf;
    }
    /* <repo>/models -> <repo>/../shared/data */
    snprintf(buf, n, "%s/../../shared/data", paths_models_dir());
    return buf;
}

void calib_opts_from_hw(CalibFitOpts *o, const HwDesc *h)
{
    o->peak_flops_bf16 = h->peak_flops[DTYPE_BF16];
    o->peak_flops_fp8 = h->peak_flops[DTYPE_FP8];
    o->peak_flops_fp8_block = h->peak_flops[DTYPE_FP8_BLOCK];
    o->peak_flops_nvfp4 = h->peak_flops[DTYPE_NVFP4];
    o->mem_bw_bytes_per_s = h->mem_bw_bytes_per_s;
    o->link_bw_bytes_per_s = h->link_bw_bytes_per_s;
}

static void calib_report_q(double *v, size_t n, double *median, double *p90)
{
    *median = *p90 = NAN;
    if (!n) return;
    gsl_sort(v, 1, n);
    *median = gsl_stats_quantile_from_sorted_data(v, 1, n, 0.5);
    *p90 = gsl_stats_quantile_from_sorted_data(v, 1, n, 0.9);
}

int calib_crosscheck(const Profile *p, const MeasSet *vidur, int tp, CalibCross *out, Err *e)
{
    memset(out, 0, sizeof *out);
    out->layer_median = out->layer_p90 = out->op_median = out->op_p90 = NAN;
    if (!p->op[PROF_GEMM_BF16].present) return err_set(e, "profile %s: no gemm_bf16 model to cross-check", p->name);
    char suffix[32];
    snprintf(suffix, sizeof suffix, "@tp%d", tp);
    /* Per token count, the sum of its projections (a count measured twice
     * sums both runs on both sides, which averages them). */
    size_t cap = 2 * vidur->n + 1;
    double *tok = xmalloc(cap * sizeof *tok), *meas = xcalloc(cap, sizeof *meas), *pred = xcalloc(cap, sizeof *pred);
    int *parts = xcalloc(cap, sizeof *parts);
    double *op_err = xmalloc(cap * sizeof *op_err);
    size_t nt = 0, no = 0;
    for (size_t i = 0; i < vidur->n; i++) {
        const Meas *r = &vidur->rows[i];
        const char *at = strstr(r->tag, "@tp");
        if (r->op != MEAS_GEMM || strncmp(r->tag, "vidur:", 6) != 0 || !at || strcmp(at, suffix) != 0) continue;
        double t = calib_fit_predict(p, r) * 1e3;
        op_err[no++] = fabs(t / r->latency_ms - 1);
        size_t j = 0;
        while (j < nt && tok[j] != r->m) j++;
        if (j == nt) tok[nt++] = r->m;
        meas[j] += r->latency_ms;
        pred[j] += t;
        parts[j]++;
    }
    size_t nl = 0;
    for (size_t j = 0; j < nt; j++)
        if (parts[j] % 4 == 0) op_err[no + nl++] = fabs(pred[j] / meas[j] - 1); /* after the per-op errors */
    calib_report_q(op_err + no, nl, &out->layer_median, &out->layer_p90);
    calib_report_q(op_err, no, &out->op_median, &out->op_p90);
    out->layer_n = nl;
    out->op_n = no;
    free(tok);
    free(meas);
    free(pred);
    free(parts);
    free(op_err);
    if (!nl) return err_set(e, "no Vidur mlp.csv rows at TP %d with all four projections", tp);
    return 0;
}

static int calib_quality_gpu(const char *data, const char *dir, const char *hwname, CalibQualityGpu *g, Err *e)
{
    memset(g, 0, sizeof *g);
    snprintf(g->dir, sizeof g->dir, "%s", dir);
    HwDesc *h = xmalloc(sizeof *h);
    MeasSet ms;
    calib_meas_init(&ms);
    Profile *p = xmalloc(sizeof *p);
    char path[4096];
    snprintf(path, sizeof path, "%s/kernels/aiconfigurator/%s", data, dir);
    int rc = -1;
    if (hw_load(hwname, h, e) < 0 || calib_meas_import(&ms, path, e) < 0) goto out;
    CalibFitOpts o;
    calib_fit_opts_default(&o);
    calib_opts_from_hw(&o, h);
    o.validate_only = 1;
    o.op_mask = 1u << PROF_GEMM_BF16 | 1u << PROF_ATTN_PREFILL | 1u << PROF_ATTN_DECODE;
    o.name = dir;
    if (calib_fit_profile(&ms, &o, p, e) < 0) goto out;
    g->gemm = p->op[PROF_GEMM_BF16].fit;
    g->prefill = p->op[PROF_ATTN_PREFILL].fit;
    g->decode = p->op[PROF_ATTN_DECODE].fit;
    rc = 0;
out:
    free(p);
    free(h);
    calib_meas_free(&ms);
    return rc;
}

int calib_quality(const char *data, CalibQuality *q, Err *e)
{
    memset(q, 0, sizeof *q);
    if (calib_quality_gpu(data, "h100_sxm", "h100-sxm", &q->gpu[0], e) < 0 ||
        calib_quality_gpu(data, "h200_sxm", "h200-sxm", &q->gpu[1], e) < 0)
        return -1;
    /* Cross-source: the H100 GEMM model fitted on every NVIDIA shape
     * predicts Vidur's independently measured Llama-2-7B projections. */
    HwDesc *h = xmalloc(sizeof *h);
    Profile *p = xmalloc(sizeof *p);
    MeasSet ms, vd;
    calib_meas_init(&ms);
    calib_meas_init(&vd);
    char path[4096], vpath[4096];
    snprintf(path, sizeof path, "%s/kernels/aiconfigurator/h100_sxm/gemm_perf.csv", data);
    snprintf(vpath, sizeof vpath, "%s/kernels/vidur/compute/h100/meta-llama/Llama-2-7b-hf/mlp.csv", data);
    int rc = -1;
    if (hw_load("h100-sxm", h, e) < 0 || calib_meas_import(&ms, path, e) < 0 || calib_meas_import(&vd, vpath, e) < 0)
        goto out;
    CalibFitOpts o;
    calib_fit_opts_default(&o);
    calib_opts_from_hw(&o, h);
    o.op_mask = 1u << PROF_GEMM_BF16;
    o.holdout = 0;
    o.name = "h100_sxm";
    if (calib_fit_profile(&ms, &o, p, e) < 0) goto out;
    rc = calib_crosscheck(p, &vd, 1, &q->cross, e);
out:
    calib_meas_free(&ms);
    calib_meas_free(&vd);
    free(p);
    free(h);
    return rc;
}

int calib_quality_ok(const CalibQuality *q)
{
    for (int i = 0; i < 2; i++) {
        const CalibQualityGpu *g = &q->gpu[i];
        if (!(g->gemm.held_median <= CALIB_GEMM_MEDIAN_MAX) || !(g->gemm.held_p90 <= CALIB_GEMM_P90_MAX) ||
            !(g->prefill.held_median <= CALIB_ATTN_MEDIAN_MAX) || !(g->decode.held_median <= CALIB_ATTN_MEDIAN_MAX))
            return 0;
    }
    return q->cross.layer_median <= CALIB_CROSS_MEDIAN_MAX;
}

static const char *calib_report_mark(double v, double max)
{
    return v <= max ? "met" : "MISSED";
}

void calib_quality_print(FILE *f, const CalibQuality *q)
{
    fprintf(f, "calibration quality: fits to NVIDIA's aiconfigurator tables, one fifth of the shapes held out\n");
    fprintf(f, "  %-9s %-13s %7s %9s %9s   target\n", "gpu", "operator", "held", "median", "p90");
    for (int i = 0; i < 2; i++) {
        const CalibQualityGpu *g = &q->gpu[i];
        const ProfFitStats *s[3] = {&g->gemm, &g->prefill, &g->decode};
        const char *names[3] = {"gemm bf16", "attn prefill", "attn decode"};
        for (int k = 0; k < 3; k++) {
            char target[96];
            if (k == 0)
                snprintf(target, sizeof target, "median <= %.0f%% %s, p90 <= %.0f%% %s", 100 * CALIB_GEMM_MEDIAN_MAX,
                         calib_report_mark(s[k]->held_median, CALIB_GEMM_MEDIAN_MAX), 100 * CALIB_GEMM_P90_MAX,
                         calib_report_mark(s[k]->held_p90, CALIB_GEMM_P90_MAX));
            else
                snprintf(target, sizeof target, "median <= %.0f%% %s", 100 * CALIB_ATTN_MEDIAN_MAX,
                         calib_report_mark(s[k]->held_median, CALIB_ATTN_MEDIAN_MAX));
            fprintf(f, "  %-9s %-13s %7d %8.1f%% %8.1f%%   %s\n", g->dir, names[k], s[k]->held_out_rows,
                    100 * s[k]->held_median, 100 * s[k]->held_p90, target);
        }
    }
    const CalibCross *x = &q->cross;
    fprintf(f, "cross-source: Vidur H100 Llama-2-7B mlp.csv (TP 1, 1..4096 tokens) predicted by the H100 GEMM fit\n");
    fprintf(f, "  per layer (QKV + O + gate/up + down): %zu token counts, median %.1f%%, p90 %.1f%%   target median "
               "<= %.0f%% %s\n",
            x->layer_n, 100 * x->layer_median, 100 * x->layer_p90, 100 * CALIB_CROSS_MEDIAN_MAX,
            calib_report_mark(x->layer_median, CALIB_CROSS_MEDIAN_MAX));
    fprintf(f, "  per projection: %zu GEMMs, median %.1f%%, p90 %.1f%%\n", x->op_n, 100 * x->op_median,
            100 * x->op_p90);
}

int calib_quality_profiles_print(FILE *f)
{
    static const char *const hws[] = {"h100-sxm", "h200-sxm", "b200", "a100-sxm-80gb", NULL};
    static const char *const engines[] = {"trtllm", "vllm", "sglang", NULL};
    fprintf(f, "per-engine profiles (models/profiles/<hw>-<engine>.json): each class's fit, one fifth of the shapes "
               "held out\n");
    fprintf(f, "  %-22s %-19s %7s %9s %9s %9s %9s\n", "profile", "operator", "shapes", "held p50", "held p90",
            "all p50", "all p90");
    Profile *p = xmalloc(sizeof *p);
    int printed = 0;
    for (int h = 0; hws[h]; h++)
        for (int g = 0; engines[g]; g++) {
            char name[64];
            snprintf(name, sizeof name, "%s-%s", hws[h], engines[g]);
            Err e = {0};
            if (profile_load(name, p, &e) < 0) {
                fprintf(f, "  %-22s not loaded: %s\n", name, e.msg);
                continue;
            }
            for (int k = 0; k < PROF_OP_COUNT; k++) {
                const ProfFitStats *st = &p->op[k].fit;
                if (!p->op[k].present || st->rows <= 0) continue;
                fprintf(f, "  %-22s %-19s %7d %8.1f%% %8.1f%% %8.1f%% %8.1f%%\n", name, profile_op_name(k), st->rows,
                        100 * st->held_median, 100 * st->held_p90, 100 * st->train_median, 100 * st->train_p90);
            }
            printed++;
        }
    free(p);
    return printed;
}

/* ------------------------------------------------------------- measured */

typedef struct RepRow {
    double meas, pred;
    const Meas *r;
} RepRow;

static int calib_report_cmp(const void *a, const void *b)
{
    const RepRow *x = a, *y = b;
    return x->meas < y->meas ? -1 : x->meas > y->meas;
}

int calib_report_measured(FILE *f, const Profile *p, const MeasSet *ms)
{
    int classes = 0;
    fprintf(f, "measured vs fitted (profile %s), |pred - meas| / meas per operator class:\n", p->name);
    for (int k = 0; k < PROF_OP_COUNT; k++) {
        size_t n = 0;
        for (size_t i = 0; i < ms->n; i++) n += calib_fit_selects(&ms->rows[i], k);
        if (!n) continue;
        if (!p->op[k].present) {
            fprintf(f, "  %-13s %zu rows, but the profile has no model for it\n", profile_op_name(k), n);
            continue;
        }
        RepRow *rows = xmalloc(n * sizeof *rows);
        double *err = xmalloc(n * sizeof *err), *sgn = xmalloc(n * sizeof *sgn);
        size_t j = 0;
        for (size_t i = 0; i < ms->n; i++) {
            if (!calib_fit_selects(&ms->rows[i], k)) continue;
            rows[j] = (RepRow){ms->rows[i].latency_ms, calib_fit_predict(p, &ms->rows[i]) * 1e3, &ms->rows[i]};
            err[j] = fabs(rows[j].pred / rows[j].meas - 1);
            sgn[j] = rows[j].pred / rows[j].meas - 1;
            j++;
        }
        double med, p90, bias, dummy;
        calib_report_q(err, n, &med, &p90);
        calib_report_q(sgn, n, &bias, &dummy);
        fprintf(f, "  %-13s %6zu rows: median %5.1f%%, p90 %5.1f%%, median signed %+5.1f%%\n", profile_op_name(k), n,
                100 * med, 100 * p90, 100 * bias);
        /* A handful of rows spread over the latency range. */
        qsort(rows, n, sizeof *rows, calib_report_cmp);
        size_t show = n < 6 ? n : 6;
        for (size_t s = 0; s < show; s++) {
            const RepRow *r = &rows[show > 1 ? s * (n - 1) / (show - 1) : 0];
            char shape[160];
            calib_meas_shape_str(r->r, shape, sizeof shape);
            fprintf(f, "      %-44s measured %10.4f ms  fitted %10.4f ms  %+6.1f%%\n", shape, r->meas, r->pred,
                    100 * (r->pred / r->meas - 1));
        }
        free(rows);
        free(err);
        free(sgn);
        classes++;
    }
    return classes;
}
