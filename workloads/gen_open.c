/*
 * gen_open.c -- open-loop arrival processes (see gen_open.h).
 *
 * Streams: arrivals draw from RNG_STREAM_ARRIVALS, thinning acceptances
 * from WL_STREAM_THIN, ON/OFF period lengths from WL_STREAM_ONOFF, prompt
 * and output lengths from RNG_STREAM_PROMPT / RNG_STREAM_OUTPUT (one draw
 * each per request, in that order), mixes from WL_STREAM_MIX.  The Poisson
 * generator's draws are the same as before the other kinds existed.
 * Times are seconds (double) while generating, rounded to integer ns once
 * per request.
 */
#include "gen_open.h"

#include <gsl/gsl_randist.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_attr.h"
#include "gen_dist.h"
#include "jsonio.h"
#include "rng.h"

#define GEN_OPEN_MAX 100000000u /* requests: beyond this a workload does not fit in memory */
#define GEN_OPEN_TWO_PI 6.28318530717958647692

typedef enum { ARR_POISSON = 0, ARR_GAMMA, ARR_CONSTANT, ARR_PIECEWISE, ARR_DIURNAL, ARR_ONOFF } ArrKind;

static const char *const open_kinds[] = {"poisson", "gamma", "constant", "piecewise", "diurnal", "onoff", NULL};

typedef struct Arrivals {
    int kind;
    double start_s, t_s;        /* absolute seconds */
    double rate_per_s, cv;
    double *pt_s, *pr;          /* piecewise: breakpoints and their rates */
    uint32_t n_pts, seg;
    double rmax;                /* thinning: the peak rate */
    double amp, period_s, phase_s;
    double on_s, off_s;         /* ON/OFF mean lengths */
    int on_exp;                 /* 1: exponential lengths, 0: fixed */
    double on_end_s;
    uint64_t i;
    gsl_rng *ra, *rt, *ro;
} Arrivals;

static void arrivals_free(Arrivals *a)
{
    free(a->pt_s);
    free(a->pr);
    if (a->ra) gsl_rng_free(a->ra);
    if (a->rt) gsl_rng_free(a->rt);
    if (a->ro) gsl_rng_free(a->ro);
}

static double rate_at(Arrivals *a, double rel_s)
{
    if (a->kind == ARR_DIURNAL)
        return a->rate_per_s * (1 + a->amp * sin(GEN_OPEN_TWO_PI * (rel_s - a->phase_s) / a->period_s));
    while (a->seg + 1 < a->n_pts && a->pt_s[a->seg + 1] <= rel_s) a->seg++;
    return a->pr[a->seg];
}

static double period_len(Arrivals *a, double mean_s)
{
    return a->on_exp ? gsl_ran_exponential(a->ro, mean_s) : mean_s;
}

/* The next arrival time (absolute s); 0 when the process has ended (a
 * piecewise rate that stays 0). */
static int arrivals_next(Arrivals *a, double *t_s)
{
    switch (a->kind) {
    case ARR_POISSON: a->t_s += gsl_ran_exponential(a->ra, 1.0 / a->rate_per_s); break;
    case ARR_GAMMA:
        a->t_s += gsl_ran_gamma(a->ra, 1.0 / (a->cv * a->cv), a->cv * a->cv / a->rate_per_s);
        break;
    case ARR_CONSTANT: a->t_s = a->start_s + (double)a->i++ / a->rate_per_s; break;
    case ARR_PIECEWISE:
    case ARR_DIURNAL:
        for (;;) {
            a->t_s += gsl_ran_exponential(a->ra, 1.0 / a->rmax);
            double rel = a->t_s - a->start_s;
            double r = rate_at(a, rel);
            if (a->kind == ARR_PIECEWISE && a->seg + 1 == a->n_pts && r <= 0) return 0;
            if (gsl_rng_uniform(a->rt) * a->rmax < r) break;
        }
        break;
    default: /* ARR_ONOFF: exponential gaps are memoryless, so a gap that
              * crosses the end of an ON period restarts at the next one */
        for (;;) {
            double gap = gsl_ran_exponential(a->ra, 1.0 / a->rate_per_s);
            if (a->t_s + gap < a->on_end_s) {
                a->t_s += gap;
                break;
            }
            a->t_s = a->on_end_s + period_len(a, a->off_s);
            a->on_end_s = a->t_s + period_len(a, a->on_s);
        }
        break;
    }
    *t_s = a->t_s;
    return 1;
}

static int parse_piecewise(const cJSON *wj, const char *where, Arrivals *a, Err *e)
{
    char p[512], ip[560];
    const cJSON *rates = cJSON_GetObjectItemCaseSensitive(wj, "rates");
    jsonio_path(p, sizeof p, where, "rates");
    if (!rates) return err_set(e, "%s: missing key \"rates\" ([[t_s, rate_per_s], ...])", where);
    if (jsonio_expect_array(rates, p, e) < 0) return -1;
    int n = cJSON_GetArraySize(rates);
    if (n < 1) return err_set(e, "%s: empty; expected [[0, rate], [t_s, rate], ...]", p);
    a->pt_s = xmalloc((size_t)n * sizeof *a->pt_s);
    a->pr = xmalloc((size_t)n * sizeof *a->pr);
    const cJSON *it;
    cJSON_ArrayForEach(it, rates) {
        uint32_t i = a->n_pts;
        jsonio_index(ip, sizeof ip, p, (int)i);
        if (!cJSON_IsArray(it) || cJSON_GetArraySize(it) != 2 || !cJSON_IsNumber(it->child) ||
            !cJSON_IsNumber(it->child->next))
            return err_set(e, "%s: expected [t_s, rate_per_s]", ip);
        double t = it->child->valuedouble, r = it->child->next->valuedouble;
        if (i == 0 && t != 0) return err_set(e, "%s: got t_s %g, expected the first breakpoint at 0", ip, t);
        if (i > 0 && !(t > a->pt_s[i - 1]))
            return err_set(e, "%s: got t_s %g, expected more than the previous %g", ip, t, a->pt_s[i - 1]);
        if (!(r >= 0) || r > 1e9) return err_set(e, "%s: got rate %g, expected a rate in [0, 1e9] req/s", ip, r);
        a->pt_s[i] = t;
        a->pr[i] = r;
        a->n_pts++;
        if (r > a->rmax) a->rmax = r;
    }
    if (!(a->rmax > 0)) return err_set(e, "%s: every rate is 0; expected at least one positive rate", p);
    return 0;
}

static int parse_arrivals(const cJSON *wj, const char *where, int kind, Arrivals *a, Err *e)
{
    static const char *const periods[] = {"fixed", "exponential", NULL};
    a->kind = kind;
    if (kind == ARR_PIECEWISE) return parse_piecewise(wj, where, a, e);
    if (jsonio_num(wj, "rate_per_s", where, 1, 1e-9, 1e9, &a->rate_per_s, e) < 0) return -1;
    switch (kind) {
    case ARR_GAMMA:
        if (jsonio_num(wj, "cv", where, 1, 1e-3, 100, &a->cv, e) < 0) return -1;
        break;
    case ARR_DIURNAL:
        if (jsonio_num(wj, "amplitude", where, 1, 0, 1, &a->amp, e) < 0) return -1;
        if (jsonio_num(wj, "period_s", where, 1, 1e-6, 1e9, &a->period_s, e) < 0) return -1;
        if (jsonio_num(wj, "phase_s", where, 0, -1e9, 1e9, &a->phase_s, e) < 0) return -1;
        a->rmax = a->rate_per_s * (1 + a->amp);
        break;
    case ARR_ONOFF:
        if (jsonio_num(wj, "on_s", where, 1, 1e-9, 1e9, &a->on_s, e) < 0) return -1;
        if (jsonio_num(wj, "off_s", where, 1, 0, 1e9, &a->off_s, e) < 0) return -1;
        if (jsonio_enum(wj, "periods", where, 0, periods, &a->on_exp, e) < 0) return -1;
        break;
    default: break;
    }
    return 0;
}

int gen_open_build(const cJSON *wj, const char *where, const char *base_dir, uint64_t seed, Workload *w, Err *e)
{
    static const char *const common[] = {"kind", "count", "duration_s", "start_ms", "prompt_tokens", "output_tokens"};
    static const char *const k_rate[] = {"rate_per_s", NULL};
    static const char *const k_gamma[] = {"rate_per_s", "cv", NULL};
    static const char *const k_piece[] = {"rates", NULL};
    static const char *const k_diurnal[] = {"rate_per_s", "amplitude", "period_s", "phase_s", NULL};
    static const char *const k_onoff[] = {"rate_per_s", "on_s", "off_s", "periods", NULL};
    const char *const *own[] = {k_rate, k_gamma, k_rate, k_piece, k_diurnal, k_onoff};
    int kind;
    if (jsonio_enum(wj, "kind", where, 1, open_kinds, &kind, e) < 0) return -1;
    const char *keys[24];
    size_t nk = 0;
    for (size_t k = 0; k < sizeof common / sizeof *common; k++) keys[nk++] = common[k];
    for (size_t k = 0; own[kind][k]; k++) keys[nk++] = own[kind][k];
    keys[nk] = NULL;
    if (gen_attr_check_keys(wj, where, keys, e) < 0) return -1;

    int64_t count = 0;
    double duration_s = 0, start_ms = 0;
    if (jsonio_int(wj, "count", where, 0, 1, GEN_OPEN_MAX, &count, e) < 0) return -1;
    if (jsonio_num(wj, "duration_s", where, 0, 1e-9, 1e9, &duration_s, e) < 0) return -1;
    if (!count && !(duration_s > 0))
        return err_set(e, "%s: expected \"count\" (requests) or \"duration_s\" (seconds), or both", where);
    if (jsonio_num(wj, "start_ms", where, 0, 0, 1e12, &start_ms, e) < 0) return -1;

    Arrivals a = {0};
    LengthDist pd = {0}, od = {0};
    GenAttrs attrs = {0};
    int rc = -1;
    if (parse_arrivals(wj, where, kind, &a, e) < 0) goto out;
    if (gen_dist_len_key(wj, "prompt_tokens", where, base_dir, 1, &pd, e) < 0) goto out;
    if (gen_dist_len_key(wj, "output_tokens", where, base_dir, 1, &od, e) < 0) goto out;
    if (gen_attr_parse(wj, where, base_dir, seed, 1, w, &attrs, e) < 0) goto out;
    a.start_s = a.t_s = start_ms / 1e3;
    a.on_end_s = a.start_s + a.on_s;
    a.ra = rng_stream(seed, RNG_STREAM_ARRIVALS);
    a.rt = rng_stream(seed, WL_STREAM_THIN);
    a.ro = rng_stream(seed, WL_STREAM_ONOFF);
    if (kind == ARR_ONOFF && a.on_exp) a.on_end_s = a.start_s + gsl_ran_exponential(a.ro, a.on_s);
    gsl_rng *rp = rng_stream(seed, RNG_STREAM_PROMPT);
    gsl_rng *ro = rng_stream(seed, RNG_STREAM_OUTPUT);
    rc = 0;
    for (;;) {
        if (count && w->n >= (uint64_t)count) break;
        if (w->n >= GEN_OPEN_MAX) {
            rc = err_set(e, "%s: more than %u requests; lower the rate or the duration", where, GEN_OPEN_MAX);
            break;
        }
        double t_s;
        if (!arrivals_next(&a, &t_s)) break;
        if (duration_s > 0 && t_s - a.start_s > duration_s) break;
        const GenMix *m = gen_attr_pick(&attrs);
        Request *r = workload_push(w);
        r->t_arrive_ns = llround(t_s * 1e9);
        r->prompt_tokens = gen_dist_len_draw(m && m->has_prompt ? &m->prompt : &pd, rp);
        r->output_tokens = gen_dist_len_draw(m && m->has_output ? &m->output : &od, ro);
        gen_attr_apply(&attrs, m, w, w->n - 1);
    }
    gsl_rng_free(rp);
    gsl_rng_free(ro);
    if (rc == 0) {
        char rate[96];
        if (kind == ARR_PIECEWISE) snprintf(rate, sizeof rate, "%u breakpoints, peak %g req/s", a.n_pts, a.rmax);
        else if (kind == ARR_GAMMA) snprintf(rate, sizeof rate, "%g req/s, cv %g", a.rate_per_s, a.cv);
        else snprintf(rate, sizeof rate, "%g req/s", a.rate_per_s);
        snprintf(w->source, sizeof w->source, "%s, %s, %u requests", open_kinds[kind], rate, w->n);
    }
out:
    arrivals_free(&a);
    gen_dist_len_free(&pd);
    gen_dist_len_free(&od);
    gen_attr_free(&attrs);
    return rc;
}
