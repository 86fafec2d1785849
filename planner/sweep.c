/*
 * sweep.c -- rates x seeds, statistics over seeds, and the knee (see
 * sweep.h).
 *
 * Invariants: every simulation is a par_map job whose result is the JSON
 * of a SweepRun, parsed back in the parent whichever process ran it; the
 * order of evaluations depends only on earlier results, never on timing,
 * so the same scenario, rates and seeds give the same bytes.
 */
#include "sweep.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_statistics_double.h>

#include "cluster.h"
#include "jsonio.h"
#include "metrics.h"
#include "outfile.h"
#include "scenario.h"
#include "streamrun.h"

/* golden-section steps for the goodput peak: the bracket (two grid
 * intervals) shrinks to 0.618^8 = 2.1% of its width */
#define SWEEP_GOLDEN_STEPS 8
/* bisection for the attainment target: until hi / lo <= 1.01 */
#define SWEEP_TARGET_TOL 0.01
#define SWEEP_TARGET_STEPS 16
/* the attainment target when neither --target nor slo.attainment gives
 * one: DistServe's 90% SLO attainment */
#define SWEEP_DEFAULT_TARGET 0.9
/* --auto: 9 rates own x 2^-4 .. 2^4, then at most 6 more doublings (or
 * halvings) while the peak sits at the top (or the target is missed at
 * the bottom) */
#define SWEEP_AUTO_SPAN 4
#define SWEEP_AUTO_EXTEND 6

/* ------------------------------------------------------------ the scenario */

int sweep_set_rate(cJSON *w, const char *where, double rate, Err *e)
{
    if (!cJSON_IsObject(w)) return err_set(e, "%s: expected a workload object", where);
    char p[600];
    jsonio_path(p, sizeof p, where, "kind");
    int listed = cJSON_GetObjectItemCaseSensitive(w, "requests") || cJSON_GetObjectItemCaseSensitive(w, "trace");
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(w, "kind");
    if (!listed) {
        static const char *const ok[] = {"poisson", "gamma", "constant", "diurnal", "onoff", "sessions", NULL};
        if (!cJSON_IsString(k))
            return err_set(e, "%s: expected a trace, a request list or a generator with \"kind\"", where);
        int found = 0;
        for (int i = 0; ok[i]; i++) found |= !strcmp(ok[i], k->valuestring);
        if (!strcmp(k->valuestring, "closed_loop"))
            return err_set(e, "%s: got \"closed_loop\", which has no arrival rate (each client waits for its answer); "
                              "sweep rates of an open-loop generator or a trace, or vary \"clients\" in a Lua script",
                           p);
        if (!strcmp(k->valuestring, "piecewise"))
            return err_set(e, "%s: got \"piecewise\", which has several rates; a sweep sets one: use \"poisson\", "
                              "\"diurnal\" (rate_per_s is its mean) or a trace", p);
        if (!found)
            return err_set(e, "%s: got \"%s\", expected a generator with a rate (poisson, gamma, constant, diurnal, "
                              "onoff, sessions) or a trace", p, k->valuestring);
    } else {
        /* "time_scale" and "rate_per_s" exclude each other */
        cJSON_DeleteItemFromObjectCaseSensitive(w, "time_scale");
    }
    cJSON *r = cJSON_CreateNumber(rate);
    if (cJSON_GetObjectItemCaseSensitive(w, "rate_per_s")) cJSON_ReplaceItemInObjectCaseSensitive(w, "rate_per_s", r);
    else cJSON_AddItemToObject(w, "rate_per_s", r);
    return 0;
}

static double own_rate(const Scenario *s, const cJSON *w)
{
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(w, "kind");
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(w, "rate_per_s");
    if (cJSON_IsString(k) && cJSON_IsNumber(r) && r->valuedouble > 0) return r->valuedouble;
    /* a trace or list: its mean rate, (n - 1) / (last - first arrival) */
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    uint32_t n = 0;
    for (uint32_t i = 0; i < s->wl.n; i++) {
        const Request *q = &s->wl.reqs[i];
        if (q->triggered) continue;
        n++;
        if (q->t_arrive_ns < lo) lo = q->t_arrive_ns;
        if (q->t_arrive_ns > hi) hi = q->t_arrive_ns;
    }
    return n > 1 && hi > lo ? (double)(n - 1) / ((double)(hi - lo) / 1e9) : 1.0;
}

int sweep_base_from_json(SweepBase *b, cJSON *root, const char *name, Err *e)
{
    memset(b, 0, sizeof *b);
    b->root = root;
    snprintf(b->name, sizeof b->name, "%s", name);
    cJSON *w = cJSON_GetObjectItemCaseSensitive(root, "workload");
    char where[600];
    jsonio_path(where, sizeof where, name, "workload");
    if (!cJSON_IsObject(root) || !w) {
        sweep_base_free(b);
        return err_set(e, "%s: missing key \"workload\"", name);
    }
    cJSON *probe = cJSON_Duplicate(w, 1);
    int rc = sweep_set_rate(probe, where, 1, e);
    cJSON_Delete(probe);
    char *text = rc == 0 ? cJSON_PrintUnformatted(root) : NULL;
    Scenario s;
    if (rc == 0 && scenario_load_text(text, name, 0, 0, &s, e) < 0) rc = -1;
    free(text);
    if (rc < 0) {
        sweep_base_free(b);
        return -1;
    }
    b->seed0 = (double)s.seed;
    b->own_rate = own_rate(&s, w);
    b->target = s.slo.attainment;
    b->has_window = s.metrics.has_window;
    rc = scenario_error_band(&s, &b->band, e);
    scenario_free(&s);
    if (rc < 0) sweep_base_free(b);
    return rc;
}

int sweep_base_init(SweepBase *b, const char *text, const char *name, Err *e)
{
    memset(b, 0, sizeof *b);
    cJSON *root = jsonio_parse(text, name, e);
    if (!root) return -1;
    return sweep_base_from_json(b, root, name, e);
}

void sweep_base_free(SweepBase *b)
{
    cJSON_Delete(b->root);
    b->root = NULL;
}

char *sweep_text(const SweepBase *b, double rate, Err *e)
{
    cJSON *root = cJSON_Duplicate(b->root, 1);
    if (rate > 0) {
        char where[600];
        jsonio_path(where, sizeof where, b->name, "workload");
        if (sweep_set_rate(cJSON_GetObjectItemCaseSensitive(root, "workload"), where, rate, e) < 0) {
            cJSON_Delete(root);
            return NULL;
        }
    }
    /* a sweep reads summaries only: no per-token or per-iteration records
     * (a fixed window counts tokens by emission time, so it keeps them) */
    cJSON *rep = cJSON_CreateObject();
    cJSON_AddBoolToObject(rep, "token_times", b->has_window);
    cJSON_AddBoolToObject(rep, "iterations", 0);
    if (cJSON_GetObjectItemCaseSensitive(root, "report")) cJSON_ReplaceItemInObjectCaseSensitive(root, "report", rep);
    else cJSON_AddItemToObject(root, "report", rep);
    char *t = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!t) err_set(e, "%s: cannot print the scenario", b->name);
    return t;
}

/* The tightest check of each latency metric: the largest achieved /
 * target over the classes. */
static void tightest(const Summary *m, SweepRun *out)
{
    for (int k = 0; k < SWEEP_LAT_METRICS; k++) out->tight_achieved_s[k] = out->tight_target_s[k] = out->tight_pct[k] = NAN;
    for (uint32_t i = 0; i < m->n_checks; i++) {
        const SloCheck *c = &m->checks[i];
        if (c->metric < 0 || c->metric >= SWEEP_LAT_METRICS || !(c->target > 0)) continue;
        int k = c->metric;
        if (!isnan(out->tight_target_s[k]) && !(c->achieved / c->target > out->tight_achieved_s[k] / out->tight_target_s[k]))
            continue;
        out->tight_achieved_s[k] = c->achieved;
        out->tight_target_s[k] = c->target;
        out->tight_pct[k] = c->percentile;
    }
}

/* The first failed check of the verdict, in words. */
static void first_miss(const MetricsCfg *mc, const Summary *m, char *out, size_t n)
{
    static const char *const label[] = {"TTFT", "TPOT", "max ITL", "E2E", "attainment"};
    out[0] = '\0';
    for (uint32_t k = 0; k < m->n_checks; k++) {
        const SloCheck *c = &m->checks[k];
        if (c->pass) continue;
        char cls[80] = "";
        if (m->verdict_per_class && mc->cls_names && c->cls < mc->n_cls)
            snprintf(cls, sizeof cls, "%s: ", mc->cls_names[c->cls]);
        if (c->metric == SLO_ATTAINMENT)
            snprintf(out, n, "%sattainment %.1f%% < %g%%", cls, c->achieved * 100, c->target * 100);
        else if (isinf(c->achieved))
            snprintf(out, n, "%sp%g %s: more than %g%% of requests unfinished", cls, c->percentile, label[c->metric],
                     100 - c->percentile);
        else
            snprintf(out, n, "%sp%g %s %.2f ms > %g ms", cls, c->percentile, label[c->metric], c->achieved * 1e3,
                     c->target * 1e3);
        return;
    }
}

/* One run's figures into out (rate and seed already there). */
static void sweep_fill(const MetricsCfg *mc, const Summary *m, uint64_t rejected_kv, SweepRun *out)
{
    out->requests = m->requests;
    out->finished = m->finished;
    out->rejected = m->rejected;
    out->rejected_kv = (uint32_t)rejected_kv;
    out->window_s = m->window_s;
    out->completion_rps = m->requests_per_s;
    out->goodput_rps = m->goodput_requests_per_s;
    out->attainment = m->slo_attainment;
    out->output_tps = m->output_tokens_per_s;
    out->good_output_tps = m->goodput_output_tokens_per_s;
    const Dist *d[3] = {&m->ttft_s, &m->tpot_s, &m->e2e_s};
    double *dst[3] = {out->ttft_s, out->tpot_s, out->e2e_s};
    for (int k = 0; k < 3; k++) {
        dst[k][0] = d[k]->p50;
        dst[k][1] = d[k]->p90;
        dst[k][2] = d[k]->p99;
    }
    out->usd = m->cost_usd;
    out->verdict = m->verdict;
    first_miss(mc, m, out->miss, sizeof out->miss);
    tightest(m, out);
    out->cost_queries = (double)m->cost_queries;
    out->cost_outside = (double)m->cost_outside;
    out->cost_worst_ratio = m->cost_worst_ratio;
    snprintf(out->cost_worst, sizeof out->cost_worst, "%s", m->cost_worst ? m->cost_worst : "");
}

/* A sweep's or a plan's run (sim/streamrun.h: memory follows the requests
 * in flight, and without per-token times the decode fast path runs). */
int sweep_run_text(const char *text, const char *name, double seed, double rate, SweepRun *out, Err *e)
{
    memset(out, 0, sizeof *out);
    out->rate_per_s = rate;
    out->seed = seed;
    RunSummary o;
    int rc = run_summary(&o, NULL, text, name, 1, (uint64_t)seed, 0, e);
    if (rc == 0) sweep_fill(o.mc, o.sum, o.rejected_kv, out);
    run_summary_free(&o);
    return rc;
}

/* ------------------------------------------------------ runs as JSON */

/* Full precision (cJSON prints the shortest text that reads back to the
 * same double), so a run read back is bit-identical to the run. */
static void putn(cJSON *o, const char *k, const double *v, int n)
{
    cJSON *a = cJSON_AddArrayToObject(o, k);
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
}

static void put3(cJSON *o, const char *k, const double *v)
{
    putn(o, k, v, 3);
}

cJSON *sweep_run_to_json(const SweepRun *r)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "rate_per_s", r->rate_per_s);
    cJSON_AddNumberToObject(o, "seed", r->seed);
    cJSON_AddNumberToObject(o, "requests", r->requests);
    cJSON_AddNumberToObject(o, "finished", r->finished);
    cJSON_AddNumberToObject(o, "rejected", r->rejected);
    cJSON_AddNumberToObject(o, "rejected_kv", r->rejected_kv);
    cJSON_AddNumberToObject(o, "window_s", r->window_s);
    cJSON_AddNumberToObject(o, "completion_rps", r->completion_rps);
    cJSON_AddNumberToObject(o, "goodput_rps", r->goodput_rps);
    cJSON_AddNumberToObject(o, "attainment", r->attainment);
    cJSON_AddNumberToObject(o, "output_tps", r->output_tps);
    cJSON_AddNumberToObject(o, "good_output_tps", r->good_output_tps);
    put3(o, "ttft_s", r->ttft_s);
    put3(o, "tpot_s", r->tpot_s);
    put3(o, "e2e_s", r->e2e_s);
    cJSON_AddNumberToObject(o, "usd", r->usd);
    cJSON_AddNumberToObject(o, "verdict", r->verdict);
    cJSON_AddStringToObject(o, "miss", r->miss);
    cJSON_AddNumberToObject(o, "cost_queries", r->cost_queries);
    cJSON_AddNumberToObject(o, "cost_outside", r->cost_outside);
    cJSON_AddNumberToObject(o, "cost_worst_ratio", r->cost_worst_ratio);
    cJSON_AddStringToObject(o, "cost_worst", r->cost_worst);
    putn(o, "tight_achieved_s", r->tight_achieved_s, SWEEP_LAT_METRICS);
    putn(o, "tight_target_s", r->tight_target_s, SWEEP_LAT_METRICS);
    putn(o, "tight_percentile", r->tight_pct, SWEEP_LAT_METRICS);
    return o;
}

static double get_num(const cJSON *o, const char *k, int *bad)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (cJSON_IsNull(v)) return NAN; /* cJSON writes NaN as null */
    if (!cJSON_IsNumber(v)) {
        *bad = 1;
        return NAN;
    }
    return v->valuedouble;
}

static void getn(const cJSON *o, const char *k, double *v, int n, int *bad)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != n) {
        *bad = 1;
        return;
    }
    for (int i = 0; i < n; i++) {
        const cJSON *x = cJSON_GetArrayItem(a, i);
        v[i] = cJSON_IsNumber(x) ? x->valuedouble : NAN;
    }
}

static void get3(const cJSON *o, const char *k, double *v, int *bad)
{
    getn(o, k, v, 3, bad);
}

static void get_str(const cJSON *o, const char *k, char *dst, size_t n, int *bad)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsString(v)) {
        *bad = 1;
        return;
    }
    snprintf(dst, n, "%s", v->valuestring);
}

int sweep_run_from_json(const cJSON *o, SweepRun *r, Err *e)
{
    memset(r, 0, sizeof *r);
    int bad = !cJSON_IsObject(o);
    r->rate_per_s = get_num(o, "rate_per_s", &bad);
    r->seed = get_num(o, "seed", &bad);
    r->requests = (uint32_t)get_num(o, "requests", &bad);
    r->finished = (uint32_t)get_num(o, "finished", &bad);
    r->rejected = (uint32_t)get_num(o, "rejected", &bad);
    r->rejected_kv = (uint32_t)get_num(o, "rejected_kv", &bad);
    r->window_s = get_num(o, "window_s", &bad);
    r->completion_rps = get_num(o, "completion_rps", &bad);
    r->goodput_rps = get_num(o, "goodput_rps", &bad);
    r->attainment = get_num(o, "attainment", &bad);
    r->output_tps = get_num(o, "output_tps", &bad);
    r->good_output_tps = get_num(o, "good_output_tps", &bad);
    get3(o, "ttft_s", r->ttft_s, &bad);
    get3(o, "tpot_s", r->tpot_s, &bad);
    get3(o, "e2e_s", r->e2e_s, &bad);
    r->usd = get_num(o, "usd", &bad);
    r->verdict = (int)get_num(o, "verdict", &bad);
    get_str(o, "miss", r->miss, sizeof r->miss, &bad);
    r->cost_queries = get_num(o, "cost_queries", &bad);
    r->cost_outside = get_num(o, "cost_outside", &bad);
    r->cost_worst_ratio = get_num(o, "cost_worst_ratio", &bad);
    get_str(o, "cost_worst", r->cost_worst, sizeof r->cost_worst, &bad);
    getn(o, "tight_achieved_s", r->tight_achieved_s, SWEEP_LAT_METRICS, &bad);
    getn(o, "tight_target_s", r->tight_target_s, SWEEP_LAT_METRICS, &bad);
    getn(o, "tight_percentile", r->tight_pct, SWEEP_LAT_METRICS, &bad);
    /* JSON has no infinity: a check with a target and no achieved value
     * was one whose percentile fell on unfinished requests */
    for (int k = 0; k < SWEEP_LAT_METRICS; k++)
        if (!isnan(r->tight_target_s[k]) && isnan(r->tight_achieved_s[k])) r->tight_achieved_s[k] = INFINITY;
    return bad ? err_set(e, "a worker's result is not a run record") : 0;
}

/* ------------------------------------------------------------- statistics */

void sweep_stat(const double *v, uint32_t n, SweepStat *s)
{
    double x[SWEEP_SEEDS_MAX];
    uint32_t k = 0;
    for (uint32_t i = 0; i < n && k < SWEEP_SEEDS_MAX; i++)
        if (isfinite(v[i])) x[k++] = v[i];
    s->n = k;
    s->mean = k ? gsl_stats_mean(x, 1, k) : NAN;
    s->ci95 = NAN;
    if (k >= 2) {
        double sd = gsl_stats_sd_m(x, 1, k, s->mean);
        s->ci95 = gsl_cdf_tdist_Pinv(0.975, (double)(k - 1)) * sd / sqrt((double)k);
    }
}

void sweep_aggregate(SweepAgg *a)
{
    double v[SWEEP_SEEDS_MAX] = {0};
    uint32_t n = a->seeds < SWEEP_SEEDS_MAX ? a->seeds : SWEEP_SEEDS_MAX;
#define STAT(dst, expr)                                  \
    do {                                                 \
        for (uint32_t i = 0; i < n; i++) {               \
            const SweepRun *r = &a->runs[i];             \
            v[i] = (expr);                               \
        }                                                \
        sweep_stat(v, n, &(dst));                        \
    } while (0)
    STAT(a->completion, r->completion_rps);
    STAT(a->goodput, r->goodput_rps);
    STAT(a->attainment, r->attainment);
    STAT(a->output_tps, r->output_tps);
    STAT(a->good_output_tps, r->good_output_tps);
    STAT(a->usd, r->usd);
    STAT(a->window_s, r->window_s);
    for (int q = 0; q < 3; q++) {
        STAT(a->ttft[q], r->ttft_s[q]);
        STAT(a->tpot[q], r->tpot_s[q]);
        STAT(a->e2e[q], r->e2e_s[q]);
    }
#undef STAT
    a->passes = 0;
    for (uint32_t i = 0; i < n; i++) a->passes += a->runs[i].verdict == 1;
}

static void add_stat(cJSON *o, const char *k, const SweepStat *s)
{
    cJSON *x = cJSON_AddObjectToObject(o, k);
    jsonio_add_num(x, "mean", s->mean);
    jsonio_add_num(x, "ci95", s->ci95);
}

/* A latency statistic with the interval of its mean under the band. */
static void add_stat_band(cJSON *o, const char *k, const SweepStat *s, const ErrBandMetric *m)
{
    add_stat(o, k, s);
    if (!m) return;
    cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);
    jsonio_add_num(x, "band_low", errband_low(m, s->mean));
    jsonio_add_num(x, "band_high", errband_high(m, s->mean));
}

cJSON *sweep_agg_json(const SweepAgg *a, const ErrBand *band)
{
    static const char *const q[3] = {"p50", "p90", "p99"};
    const int has = band && band->present;
    cJSON *o = cJSON_CreateObject();
    jsonio_add_num(o, "rate_per_s", a->rate_per_s);
    cJSON_AddNumberToObject(o, "seeds", a->seeds);
    add_stat(o, "completion_rps", &a->completion);
    add_stat(o, "goodput_rps", &a->goodput);
    add_stat(o, "slo_attainment", &a->attainment);
    char k[32];
    for (int i = 0; i < 3; i++) {
        snprintf(k, sizeof k, "ttft_%s_s", q[i]);
        add_stat_band(o, k, &a->ttft[i], has ? &band->fig.ttft : NULL);
    }
    for (int i = 0; i < 3; i++) {
        snprintf(k, sizeof k, "tpot_%s_s", q[i]);
        add_stat_band(o, k, &a->tpot[i], has ? &band->fig.tpot : NULL);
    }
    for (int i = 0; i < 3; i++) {
        snprintf(k, sizeof k, "e2e_%s_s", q[i]);
        add_stat(o, k, &a->e2e[i]);
    }
    add_stat(o, "output_tokens_per_s", &a->output_tps);
    add_stat(o, "goodput_output_tokens_per_s", &a->good_output_tps);
    cJSON_AddNumberToObject(o, "verdict_passes", a->passes);
    return o;
}

/* ------------------------------------------------------------ evaluation */

typedef struct EvalJobs {
    const SweepBase *base;
    const double *rates;
    uint32_t seeds;
} EvalJobs;

static char *eval_job(void *ctx, uint32_t j, Err *e)
{
    const EvalJobs *J = ctx;
    double rate = J->rates[j / J->seeds];
    double seed = J->base->seed0 + (double)(j % J->seeds);
    char *text = sweep_text(J->base, rate, e);
    if (!text) return NULL;
    SweepRun r;
    int rc = sweep_run_text(text, J->base->name, seed, rate, &r, e);
    free(text);
    if (rc < 0) return NULL;
    cJSON *o = sweep_run_to_json(&r);
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

int sweep_eval(SweepEval *ev, const double *rates, uint32_t n, SweepAgg **out, Err *e)
{
    uint32_t jobs = n * ev->seeds;
    char **res = xcalloc(jobs ? jobs : 1, sizeof *res);
    EvalJobs J = {.base = ev->base, .rates = rates, .seeds = ev->seeds};
    if (par_map(&ev->par, jobs, eval_job, &J, res, e) < 0) {
        free(res);
        return -1;
    }
    if (ev->n_hist + n > ev->cap_hist) {
        ev->cap_hist = (ev->n_hist + n) * 2;
        ev->hist = xrealloc(ev->hist, ev->cap_hist * sizeof *ev->hist);
    }
    int rc = 0;
    for (uint32_t i = 0; i < n; i++) {
        SweepAgg *a = &ev->hist[ev->n_hist + i];
        memset(a, 0, sizeof *a);
        a->rate_per_s = rates[i];
        a->seeds = ev->seeds;
        for (uint32_t k = 0; k < ev->seeds; k++) {
            uint32_t j = i * ev->seeds + k;
            cJSON *o = rc == 0 ? cJSON_Parse(res[j]) : NULL;
            if (rc == 0 && sweep_run_from_json(o, &a->runs[k], e) < 0) rc = -1;
            cJSON_Delete(o);
        }
        sweep_aggregate(a);
    }
    for (uint32_t j = 0; j < jobs; j++) free(res[j]);
    free(res);
    if (rc < 0) return -1;
    if (out) *out = &ev->hist[ev->n_hist];
    ev->n_hist += n;
    return 0;
}

void sweep_eval_free(SweepEval *ev)
{
    free(ev->hist);
    ev->hist = NULL;
    ev->n_hist = ev->cap_hist = 0;
}

static void phase(SweepEval *ev, const char *fmt, double a, double b)
{
    if (!ev->phase) return;
    char buf[160];
    snprintf(buf, sizeof buf, fmt, a, b);
    ev->phase(ev->phase_ctx, buf);
}

int sweep_bisect(SweepEval *ev, double lo, double hi, double tol, int max_steps, SweepPred pred, void *pctx,
                 double *best, Err *e)
{
    for (int k = 0; k < max_steps && hi / lo > 1 + tol; k++) {
        double mid = sqrt(lo * hi);
        phase(ev, "bisection between %.4g and %.4g req/s", lo, hi);
        SweepAgg *a;
        if (sweep_eval(ev, &mid, 1, &a, e) < 0) return -1;
        if (pred(a, pctx)) lo = mid;
        else hi = mid;
    }
    *best = lo;
    return 0;
}

/* ------------------------------------------------------------- the sweep */

static int meets_target(const SweepAgg *a, void *ctx)
{
    return a->attainment.mean >= *(const double *)ctx;
}

/* The history entry of the best mean goodput among [from, to) (ties: the
 * lower rate). */
static const SweepAgg *best_goodput(const SweepEval *ev, uint32_t from, uint32_t to, const SweepAgg *cur)
{
    for (uint32_t i = from; i < to; i++) {
        const SweepAgg *a = &ev->hist[i];
        if (!cur || a->goodput.mean > cur->goodput.mean ||
            (a->goodput.mean == cur->goodput.mean && a->rate_per_s < cur->rate_per_s))
            cur = a;
    }
    return cur;
}

static int cmp_agg_rate(const void *x, const void *y)
{
    double a = ((const SweepAgg *)x)->rate_per_s, b = ((const SweepAgg *)y)->rate_per_s;
    return a < b ? -1 : a > b;
}

/* The grid, sorted by rate, into *grid (a copy). */
static int run_grid(SweepEval *ev, const SweepOpts *o, double target, SweepAgg **grid, uint32_t *n_grid, Err *e)
{
    double rates[SWEEP_RATES_MAX];
    uint32_t n = 0;
    if (o->auto_rates) {
        double r0 = ev->base->own_rate;
        for (int k = -SWEEP_AUTO_SPAN; k <= SWEEP_AUTO_SPAN; k++) rates[n++] = r0 * pow(2, k);
    } else {
        for (uint32_t i = 0; i < o->n_rates && n < SWEEP_RATES_MAX; i++) rates[n++] = o->rates[i];
    }
    phase(ev, "%.0f rates x %.0f seeds", n, ev->seeds);
    if (sweep_eval(ev, rates, n, NULL, e) < 0) return -1;
    if (o->auto_rates) {
        /* extend while the goodput peak is the top rate, or the lowest
         * rate misses the target */
        for (int k = 0; k < SWEEP_AUTO_EXTEND; k++) {
            const SweepAgg *b = best_goodput(ev, 0, ev->n_hist, NULL);
            double top = 0;
            for (uint32_t i = 0; i < ev->n_hist; i++) top = fmax(top, ev->hist[i].rate_per_s);
            if (b->rate_per_s < top) break;
            double r = top * 2;
            phase(ev, "auto: the peak is at the top rate; trying %.4g req/s", r, 0);
            if (sweep_eval(ev, &r, 1, NULL, e) < 0) return -1;
        }
        for (int k = 0; k < SWEEP_AUTO_EXTEND; k++) {
            const SweepAgg *low = NULL;
            for (uint32_t i = 0; i < ev->n_hist; i++)
                if (!low || ev->hist[i].rate_per_s < low->rate_per_s) low = &ev->hist[i];
            if (low->attainment.mean >= target) break;
            double r = low->rate_per_s / 2;
            phase(ev, "auto: the lowest rate misses the target; trying %.4g req/s", r, 0);
            if (sweep_eval(ev, &r, 1, NULL, e) < 0) return -1;
        }
    }
    *n_grid = ev->n_hist;
    *grid = xmalloc(ev->n_hist * sizeof **grid);
    memcpy(*grid, ev->hist, ev->n_hist * sizeof **grid);
    qsort(*grid, *n_grid, sizeof **grid, cmp_agg_rate);
    return 0;
}

static cJSON *points_json(const SweepEval *ev, uint32_t from, uint32_t to)
{
    cJSON *a = cJSON_CreateArray();
    for (uint32_t i = from; i < to; i++) cJSON_AddItemToArray(a, sweep_agg_json(&ev->hist[i], &ev->base->band));
    return a;
}

cJSON *sweep_run(const char *text, const char *name, const SweepOpts *o, Err *e)
{
    if (o->seeds < 1 || o->seeds > SWEEP_SEEDS_MAX) {
        err_set(e, "--seeds: got %u, expected 1 to %d", o->seeds, SWEEP_SEEDS_MAX);
        return NULL;
    }
    if (!o->auto_rates && o->n_rates == 0) {
        err_set(e, "give the rates (--rates R1,R2,...) or --auto");
        return NULL;
    }
    SweepBase base;
    if (sweep_base_init(&base, text, name, e) < 0) return NULL;
    double target = o->target > 0 ? o->target : base.target > 0 ? base.target : SWEEP_DEFAULT_TARGET;
    SweepEval ev = {.base = &base, .seeds = o->seeds, .par = o->par, .phase = o->phase, .phase_ctx = o->phase_ctx};
    SweepAgg *grid = NULL;
    uint32_t n_grid = 0;
    cJSON *out = NULL;
    if (run_grid(&ev, o, target, &grid, &n_grid, e) < 0) goto done;

    /* (1) the goodput peak: golden-section search (log rate) between the
     * best grid rate's neighbours */
    uint32_t ib = 0;
    for (uint32_t i = 1; i < n_grid; i++)
        if (grid[i].goodput.mean > grid[ib].goodput.mean) ib = i;
    double glo = grid[ib > 0 ? ib - 1 : 0].rate_per_s, ghi = grid[ib + 1 < n_grid ? ib + 1 : ib].rate_per_s;
    uint32_t g_from = ev.n_hist;
    if (ghi > glo) {
        const double gr = (sqrt(5.0) - 1) / 2;
        double a = log(glo), b = log(ghi);
        double x[2] = {exp(b - gr * (b - a)), exp(a + gr * (b - a))};
        SweepAgg *fx;
        phase(&ev, "goodput peak: golden section in [%.4g, %.4g] req/s", glo, ghi);
        if (sweep_eval(&ev, x, 2, &fx, e) < 0) goto done;
        double fc = fx[0].goodput.mean, fd = fx[1].goodput.mean, c = log(x[0]), d = log(x[1]);
        for (int k = 0; k < SWEEP_GOLDEN_STEPS; k++) {
            double r;
            int left = fc >= fd;
            if (left) {
                b = d;
                d = c;
                fd = fc;
                c = b - gr * (b - a);
                r = exp(c);
            } else {
                a = c;
                c = d;
                fc = fd;
                d = a + gr * (b - a);
                r = exp(d);
            }
            phase(&ev, "goodput peak: golden section in [%.4g, %.4g] req/s", exp(a), exp(b));
            if (sweep_eval(&ev, &r, 1, &fx, e) < 0) goto done;
            if (left) fc = fx[0].goodput.mean;
            else fd = fx[0].goodput.mean;
        }
    }
    uint32_t g_to = ev.n_hist;
    const SweepAgg *peak = best_goodput(&ev, g_from, g_to, &grid[ib]);
    SweepAgg peak_copy = *peak;

    /* (2) the largest rate meeting the attainment target: the last grid
     * rate that meets it and the next one, by bisection */
    int it = -1;
    for (uint32_t i = 0; i < n_grid; i++)
        if (meets_target(&grid[i], &target)) it = (int)i;
    double best = NAN, tlo = NAN, thi = NAN;
    const char *note = NULL;
    uint32_t t_from = ev.n_hist;
    if (it < 0) {
        note = "no rate meets the attainment target: lower the rates";
    } else if ((uint32_t)it + 1 == n_grid) {
        best = grid[it].rate_per_s;
        note = "every rate from the last one that met the target up meets it: the largest rate is a lower bound; raise "
               "the rates";
    } else {
        tlo = grid[it].rate_per_s;
        thi = grid[it + 1].rate_per_s;
        if (sweep_bisect(&ev, tlo, thi, SWEEP_TARGET_TOL, SWEEP_TARGET_STEPS, meets_target, &target, &best, e) < 0)
            goto done;
    }
    uint32_t t_to = ev.n_hist;

    out = cJSON_CreateObject();
    cJSON_AddStringToObject(out, "scenario", name);
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(base.root, "name");
    cJSON_AddStringToObject(out, "name", cJSON_IsString(nm) ? nm->valuestring : name);
    cJSON *seeds = cJSON_AddArrayToObject(out, "seeds");
    for (uint32_t k = 0; k < o->seeds; k++) cJSON_AddItemToArray(seeds, cJSON_CreateNumber(base.seed0 + k));
    jsonio_add_num(out, "attainment_target", target);
    const cJSON *slo = cJSON_GetObjectItemCaseSensitive(base.root, "slo");
    if (slo) cJSON_AddItemToObject(out, "slo", cJSON_Duplicate(slo, 1)); /* the plot's title says it */
    cJSON_AddStringToObject(out, "ci", "95% confidence interval of the mean over seeds: t(0.975, n - 1) s / sqrt(n)");
    errband_add_json(out, &base.band);
    cJSON *band = cJSON_GetObjectItemCaseSensitive(out, "error_band");
    if (cJSON_IsObject(band))
        cJSON_AddStringToObject(band, "applied_to", "each TTFT and TPOT percentile's mean over seeds (band_low, "
                                                    "band_high): the band is of mean TTFT and TPOT, so for a "
                                                    "percentile it is an approximation");
    cJSON *pts = cJSON_AddArrayToObject(out, "points");
    for (uint32_t i = 0; i < n_grid; i++) cJSON_AddItemToArray(pts, sweep_agg_json(&grid[i], &base.band));
    if (o->seeds > 1) {
        /* whether the seeds changed anything (a trace replayed as it is
         * draws nothing from them): say so rather than print +- 0 */
        int vary = 0;
        for (uint32_t i = 0; i < n_grid && !vary; i++)
            for (uint32_t k = 1; k < grid[i].seeds && !vary; k++) {
                const SweepRun *a = &grid[i].runs[0], *b = &grid[i].runs[k];
                vary = a->completion_rps != b->completion_rps || a->goodput_rps != b->goodput_rps ||
                       a->attainment != b->attainment || a->finished != b->finished;
                for (int q = 0; q < 3 && !vary; q++)
                    vary = !(a->ttft_s[q] == b->ttft_s[q] || (isnan(a->ttft_s[q]) && isnan(b->ttft_s[q]))) ||
                           !(a->tpot_s[q] == b->tpot_s[q] || (isnan(a->tpot_s[q]) && isnan(b->tpot_s[q])));
            }
        cJSON_AddBoolToObject(out, "seeds_vary", vary);
    }
    cJSON *knee = cJSON_AddObjectToObject(out, "knee");
    jsonio_add_num(knee, "max_goodput_rate_per_s", peak_copy.rate_per_s);
    add_stat(knee, "max_goodput_rps", &peak_copy.goodput);
    cJSON *gb = cJSON_AddArrayToObject(knee, "goodput_bracket_per_s");
    cJSON_AddItemToArray(gb, cJSON_CreateNumber(glo));
    cJSON_AddItemToArray(gb, cJSON_CreateNumber(ghi));
    jsonio_add_num(knee, "attainment_target", target);
    jsonio_add_num(knee, "max_rate_meeting_target_per_s", best);
    if (!isnan(tlo)) {
        cJSON *tb = cJSON_AddArrayToObject(knee, "target_bracket_per_s");
        cJSON_AddItemToArray(tb, cJSON_CreateNumber(tlo));
        cJSON_AddItemToArray(tb, cJSON_CreateNumber(thi));
    }
    if (note) cJSON_AddStringToObject(knee, "note", note);
    cJSON_AddItemToObject(knee, "goodput_search", points_json(&ev, g_from, g_to));
    cJSON_AddItemToObject(knee, "target_search", points_json(&ev, t_from, t_to));
done:
    free(grid);
    sweep_eval_free(&ev);
    sweep_base_free(&base);
    return out;
}

/* -------------------------------------------------------------- outputs */

static double stat_of(const cJSON *p, const char *k, const char *which)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(p, k), which);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static double num_of(const cJSON *p, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(p, k);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static void csv_cell(char **buf, size_t *len, size_t *cap, double v)
{
    char t[40] = "";
    if (isfinite(v)) snprintf(t, sizeof t, "%.10g", v);
    size_t n = strlen(t) + 1;
    if (*len + n + 1 > *cap) {
        *cap = (*len + n + 1) * 2;
        *buf = xrealloc(*buf, *cap);
    }
    memcpy(*buf + *len, ",", 1);
    memcpy(*buf + *len + 1, t, n - 1);
    *len += n;
    (*buf)[*len] = '\0';
}

static void csv_text(char **buf, size_t *len, size_t *cap, const char *t)
{
    size_t n = strlen(t);
    if (*len + n + 1 > *cap) {
        *cap = (*len + n + 1) * 2;
        *buf = xrealloc(*buf, *cap);
    }
    memcpy(*buf + *len, t, n + 1);
    *len += n;
}

int sweep_write_csv(const cJSON *out, const char *path, Err *e)
{
    static const char *const stats[] = {"completion_rps", "goodput_rps", "slo_attainment", "ttft_p50_s",
                                        "ttft_p90_s", "ttft_p99_s", "tpot_p50_s", "tpot_p90_s", "tpot_p99_s",
                                        "e2e_p50_s", "e2e_p90_s", "e2e_p99_s", "output_tokens_per_s",
                                        "goodput_output_tokens_per_s", NULL};
    size_t cap = 4096, len = 0;
    char *buf = xmalloc(cap);
    buf[0] = '\0';
    csv_text(&buf, &len, &cap, "rate_per_s,phase,seeds");
    for (int k = 0; stats[k]; k++) {
        char h[96];
        snprintf(h, sizeof h, ",%s,%s_ci95", stats[k], stats[k]);
        csv_text(&buf, &len, &cap, h);
    }
    /* the band of each p99's mean (empty: the engine has none) */
    static const char *const banded[] = {"ttft_p99_s", "tpot_p99_s", NULL};
    csv_text(&buf, &len, &cap, ",verdict_passes,ttft_p99_band_low_s,ttft_p99_band_high_s,tpot_p99_band_low_s,"
                               "tpot_p99_band_high_s\n");
    const cJSON *knee = cJSON_GetObjectItemCaseSensitive(out, "knee");
    const cJSON *lists[3] = {cJSON_GetObjectItemCaseSensitive(out, "points"),
                             cJSON_GetObjectItemCaseSensitive(knee, "goodput_search"),
                             cJSON_GetObjectItemCaseSensitive(knee, "target_search")};
    static const char *const phase_name[3] = {"grid", "goodput_search", "target_search"};
    for (int l = 0; l < 3; l++) {
        const cJSON *p;
        cJSON_ArrayForEach(p, lists[l]) {
            char lead[96];
            snprintf(lead, sizeof lead, "%.10g,%s,%.0f", num_of(p, "rate_per_s"), phase_name[l], num_of(p, "seeds"));
            csv_text(&buf, &len, &cap, lead);
            for (int k = 0; stats[k]; k++) {
                csv_cell(&buf, &len, &cap, stat_of(p, stats[k], "mean"));
                csv_cell(&buf, &len, &cap, stat_of(p, stats[k], "ci95"));
            }
            csv_cell(&buf, &len, &cap, num_of(p, "verdict_passes"));
            for (int k = 0; banded[k]; k++) {
                csv_cell(&buf, &len, &cap, stat_of(p, banded[k], "band_low"));
                csv_cell(&buf, &len, &cap, stat_of(p, banded[k], "band_high"));
            }
            csv_text(&buf, &len, &cap, "\n");
        }
    }
    int rc = outfile_write(path, buf, e);
    free(buf);
    return rc;
}

static int pm_same; /* sweep_print: the seeds gave identical runs (no interval to show) */

static void pm(FILE *f, const cJSON *p, const char *k, double scale, int prec, int width)
{
    double m = stat_of(p, k, "mean") * scale, c = pm_same ? NAN : stat_of(p, k, "ci95") * scale;
    char t[64];
    if (isnan(m)) snprintf(t, sizeof t, "n/a");
    else if (isnan(c)) snprintf(t, sizeof t, "%.*f", prec, m);
    else snprintf(t, sizeof t, "%.*f +- %.*f", prec, m, prec, c);
    fprintf(f, " %*s", width, t);
}

/* "low .. high" ms of a latency statistic's mean under the band. */
static void band_cell(FILE *f, const cJSON *p, const char *k, int prec, int width)
{
    double lo = stat_of(p, k, "band_low") * 1e3, hi = stat_of(p, k, "band_high") * 1e3;
    char t[64];
    if (isnan(lo) || isnan(hi)) snprintf(t, sizeof t, "n/a");
    else snprintf(t, sizeof t, "%.*f .. %.*f", prec, lo, prec, hi);
    fprintf(f, " %*s", width, t);
}

void sweep_print(FILE *f, const cJSON *out)
{
    const cJSON *seeds = cJSON_GetObjectItemCaseSensitive(out, "seeds");
    int ns = cJSON_GetArraySize(seeds);
    fprintf(f, "servesim sweep: %s\n", cJSON_GetObjectItemCaseSensitive(out, "name")->valuestring);
    fprintf(f, "  %d seed%s (%.0f", ns, ns == 1 ? "" : "s", cJSON_GetArrayItem(seeds, 0)->valuedouble);
    if (ns > 1) fprintf(f, " .. %.0f", cJSON_GetArrayItem(seeds, ns - 1)->valuedouble);
    pm_same = cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(out, "seeds_vary"));
    fprintf(f, ")%s; attainment target %g%%\n",
            pm_same ? ": every seed gave the same run (nothing in the scenario draws on the seed -- a trace "
                      "replayed as it is), so there is no interval to show"
            : ns > 1 ? ", mean +- 95% CI over seeds (t distribution)" : "",
            num_of(out, "attainment_target") * 100);
    /* the engine's measured error: a line, and with a band the range of
     * each p99 beside it */
    const cJSON *band = cJSON_GetObjectItemCaseSensitive(out, "error_band");
    const cJSON *band_note = cJSON_GetObjectItemCaseSensitive(out, "error_band_note");
    int banded = cJSON_IsObject(band);
    if (banded)
        fprintf(f, "  model error: %s; the band of mean TTFT and TPOT, applied to each p99 (for a percentile, an "
                   "approximation)\n", cJSON_GetObjectItemCaseSensitive(band, "description")->valuestring);
    else if (cJSON_IsString(band_note))
        fprintf(f, "  model error: %s\n", band_note->valuestring);
    fprintf(f, "\n  %9s %19s %19s %17s %19s", "rate/s", "completion/s", "goodput/s", "attainment %", "p99 TTFT ms");
    if (banded) fprintf(f, " %19s", "model error ms");
    fprintf(f, " %19s", "p99 TPOT ms");
    if (banded) fprintf(f, " %17s", "model error ms");
    fprintf(f, " %17s\n", "p99 E2E s");
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(out, "points")) {
        fprintf(f, "  %9.4g", num_of(p, "rate_per_s"));
        pm(f, p, "completion_rps", 1, 2, 19);
        pm(f, p, "goodput_rps", 1, 2, 19);
        pm(f, p, "slo_attainment", 100, 1, 17);
        pm(f, p, "ttft_p99_s", 1e3, 1, 19);
        if (banded) band_cell(f, p, "ttft_p99_s", 1, 19);
        pm(f, p, "tpot_p99_s", 1e3, 2, 19);
        if (banded) band_cell(f, p, "tpot_p99_s", 2, 17);
        pm(f, p, "e2e_p99_s", 1, 2, 17);
        fputc('\n', f);
    }
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(out, "knee");
    const cJSON *gb = cJSON_GetObjectItemCaseSensitive(k, "goodput_bracket_per_s");
    double mg = stat_of(k, "max_goodput_rps", "mean"), mc = stat_of(k, "max_goodput_rps", "ci95");
    fprintf(f, "\n  knee: goodput peaks at %.3f", mg);
    if (!isnan(mc) && !pm_same) fprintf(f, " +- %.3f", mc);
    fprintf(f, " req/s at %.4g req/s (golden-section search in [%.4g, %.4g], %d rates)\n",
            num_of(k, "max_goodput_rate_per_s"), cJSON_GetArrayItem(gb, 0)->valuedouble,
            cJSON_GetArrayItem(gb, 1)->valuedouble,
            cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(k, "goodput_search")));
    double mr = num_of(k, "max_rate_meeting_target_per_s");
    const cJSON *tb = cJSON_GetObjectItemCaseSensitive(k, "target_bracket_per_s");
    fprintf(f, "        largest rate with mean attainment >= %g%%: ", num_of(k, "attainment_target") * 100);
    if (isnan(mr)) fprintf(f, "none");
    else fprintf(f, "%.4g req/s", mr);
    if (tb)
        fprintf(f, " (bisection in [%.4g, %.4g], %d rates)", cJSON_GetArrayItem(tb, 0)->valuedouble,
                cJSON_GetArrayItem(tb, 1)->valuedouble,
                cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(k, "target_search")));
    fputc('\n', f);
    const cJSON *note = cJSON_GetObjectItemCaseSensitive(k, "note");
    if (cJSON_IsString(note)) fprintf(f, "        (%s)\n", note->valuestring);
}
