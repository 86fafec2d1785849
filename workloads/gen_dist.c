/*
 * gen_dist.c -- length and think-time distributions (see gen_dist.h).
 *
 * Draws are deterministic in the stream they are given: a fixed value
 * draws nothing, every other kind draws exactly one variate per call, so a
 * generator's streams stay aligned whatever the values.
 */
#include "gen_dist.h"

#include <gsl/gsl_randist.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonio.h"
#include "trace_reader.h"
#include "workload.h"

static const char *const len_names[] = {"fixed", "uniform", "normal", "lognormal", "empirical", NULL};

/* Reads one column of a trace into d->values. */
static int load_empirical(const cJSON *v, const char *where, const char *base_dir, LengthDist *d, Err *e)
{
    static const char *const fields[] = {"prompt", "output", NULL};
    const char *path = NULL, *fmt_name = NULL;
    int field = 0;
    if (jsonio_str(v, "trace", where, 1, &path, e) < 0) return -1;
    if (jsonio_str(v, "format", where, 0, &fmt_name, e) < 0) return -1;
    if (jsonio_enum(v, "field", where, 1, fields, &field, e) < 0) return -1;
    char p[256], file[1024];
    jsonio_path(p, sizeof p, where, "trace");
    if (workload_resolve(base_dir, path, p, file, sizeof file, e) < 0) return -1;
    int fmt = fmt_name ? trace_reader_format_parse(fmt_name) : trace_reader_format_guess(file, e);
    if (fmt_name && fmt < 0)
        return err_set(e, "%s.format: got \"%s\", expected azure, mooncake, csv or json", where, fmt_name);
    if (fmt < 0) return err_prefix(e, "%s", where);
    TraceReader *tr = trace_reader_open(file, (TraceFormat)fmt, 0, e);
    if (!tr) return err_prefix(e, "%s", where);
    TraceRecord rec;
    int rc;
    uint32_t cap = 0;
    while ((rc = trace_reader_next(tr, &rec, e)) > 0) {
        if (d->n_values == cap) {
            cap = cap ? cap * 2 : 4096;
            d->values = xrealloc(d->values, cap * sizeof *d->values);
        }
        d->values[d->n_values++] = (uint32_t)(field ? rec.output_tokens : rec.prompt_tokens);
    }
    trace_reader_close(tr);
    if (rc < 0) return err_prefix(e, "%s", where);
    if (!d->n_values) return err_set(e, "%s: trace %s holds no records", where, file);
    return 0;
}

int gen_dist_len_parse(const cJSON *v, const char *where, const char *base_dir, LengthDist *d, Err *e)
{
    memset(d, 0, sizeof *d);
    d->lo = 1;
    d->hi = WL_LEN_MAX;
    if (cJSON_IsNumber(v)) {
        double x = v->valuedouble;
        if (x != floor(x) || x < 1 || x > WL_LEN_MAX)
            return err_set(e, "%s: got %g, expected an integer token count in [1, %u] or a distribution "
                              "object", where, x, WL_LEN_MAX);
        d->kind = GEN_LEN_FIXED;
        d->a = x;
        return 0;
    }
    if (!cJSON_IsObject(v))
        return err_set(e, "%s: expected an integer or a distribution object like "
                          "{\"dist\": \"uniform\", \"min\": 128, \"max\": 512}", where);
    if (jsonio_enum(v, "dist", where, 1, len_names, &d->kind, e) < 0) return -1;
    static const char *const k_fixed[] = {"dist", "value", NULL};
    static const char *const k_uniform[] = {"dist", "min", "max", NULL};
    static const char *const k_normal[] = {"dist", "mean", "std", "min", "max", NULL};
    static const char *const k_lognormal[] = {"dist", "median", "sigma", "min", "max", NULL};
    static const char *const k_empirical[] = {"dist", "trace", "format", "field", "min", "max", NULL};
    const char *const *keys[] = {k_fixed, k_uniform, k_normal, k_lognormal, k_empirical};
    if (jsonio_check_keys(v, where, keys[d->kind], e) < 0) return -1;
    int64_t lo = 1, hi = WL_LEN_MAX;
    if (jsonio_int(v, "min", where, d->kind == GEN_LEN_UNIFORM, 1, WL_LEN_MAX, &lo, e) < 0) return -1;
    if (jsonio_int(v, "max", where, d->kind == GEN_LEN_UNIFORM, 1, WL_LEN_MAX, &hi, e) < 0) return -1;
    if (lo > hi) return err_set(e, "%s: min %lld > max %lld", where, (long long)lo, (long long)hi);
    d->lo = (double)lo;
    d->hi = (double)hi;
    switch (d->kind) {
    case GEN_LEN_FIXED: {
        int64_t x;
        if (jsonio_int(v, "value", where, 1, 1, WL_LEN_MAX, &x, e) < 0) return -1;
        d->a = (double)x;
        break;
    }
    case GEN_LEN_UNIFORM: d->a = d->lo; d->b = d->hi; break;
    case GEN_LEN_NORMAL:
        if (jsonio_num(v, "mean", where, 1, 1, WL_LEN_MAX, &d->a, e) < 0) return -1;
        if (jsonio_num(v, "std", where, 1, 0, WL_LEN_MAX, &d->b, e) < 0) return -1;
        break;
    case GEN_LEN_LOGNORMAL:
        if (jsonio_num(v, "median", where, 1, 1, WL_LEN_MAX, &d->a, e) < 0) return -1;
        if (jsonio_num(v, "sigma", where, 1, 0, 10, &d->b, e) < 0) return -1;
        break;
    default:
        if (load_empirical(v, where, base_dir, d, e) < 0) {
            gen_dist_len_free(d);
            return -1;
        }
        break;
    }
    return 0;
}

int gen_dist_len_key(const cJSON *obj, const char *key, const char *where, const char *base_dir, int required,
                     LengthDist *d, Err *e)
{
    memset(d, 0, sizeof *d);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) return required ? err_set(e, "%s: missing key \"%s\"", where, key) : 0;
    char p[512];
    jsonio_path(p, sizeof p, where, key);
    return gen_dist_len_parse(v, p, base_dir, d, e) < 0 ? -1 : 1;
}

uint32_t gen_dist_len_draw(const LengthDist *d, gsl_rng *r)
{
    double x = d->a;
    switch (d->kind) {
    case GEN_LEN_UNIFORM: x = d->a + (double)gsl_rng_uniform_int(r, (unsigned long)(d->b - d->a + 1)); break;
    case GEN_LEN_NORMAL: x = d->a + gsl_ran_gaussian(r, d->b); break;
    case GEN_LEN_LOGNORMAL: x = gsl_ran_lognormal(r, log(d->a), d->b); break;
    case GEN_LEN_EMPIRICAL: x = d->values[gsl_rng_uniform_int(r, d->n_values)]; break;
    default: break;
    }
    x = floor(x + 0.5);
    if (x < d->lo) x = d->lo;
    if (x > d->hi) x = d->hi;
    return (uint32_t)x;
}

void gen_dist_len_free(LengthDist *d)
{
    free(d->values);
    d->values = NULL;
    d->n_values = 0;
}

/* ---------------------------------------------------------- think time */

static const char *const time_names[] = {"fixed", "uniform", "exponential", "lognormal", NULL};

int gen_dist_time_key(const cJSON *obj, const char *key, const char *where, TimeDist *d, Err *e)
{
    memset(d, 0, sizeof *d);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) return 0;
    char p[512];
    jsonio_path(p, sizeof p, where, key);
    if (cJSON_IsNumber(v)) {
        if (!(v->valuedouble >= 0) || v->valuedouble > 1e9)
            return err_set(e, "%s: got %g, expected a time in ms in [0, 1e9] or a distribution object", p,
                           v->valuedouble);
        d->a = v->valuedouble;
        return 1;
    }
    if (!cJSON_IsObject(v))
        return err_set(e, "%s: expected a time in ms or an object like {\"dist\": \"exponential\", \"mean\": 1000}",
                       p);
    if (jsonio_enum(v, "dist", p, 1, time_names, &d->kind, e) < 0) return -1;
    static const char *const k_fixed[] = {"dist", "value", NULL};
    static const char *const k_uniform[] = {"dist", "min", "max", NULL};
    static const char *const k_exp[] = {"dist", "mean", NULL};
    static const char *const k_lognormal[] = {"dist", "median", "sigma", NULL};
    const char *const *keys[] = {k_fixed, k_uniform, k_exp, k_lognormal};
    if (jsonio_check_keys(v, p, keys[d->kind], e) < 0) return -1;
    switch (d->kind) {
    case GEN_TIME_FIXED:
        if (jsonio_num(v, "value", p, 1, 0, 1e9, &d->a, e) < 0) return -1;
        break;
    case GEN_TIME_UNIFORM:
        if (jsonio_num(v, "min", p, 1, 0, 1e9, &d->a, e) < 0) return -1;
        if (jsonio_num(v, "max", p, 1, 0, 1e9, &d->b, e) < 0) return -1;
        if (d->a > d->b) return err_set(e, "%s: min %g > max %g", p, d->a, d->b);
        break;
    case GEN_TIME_EXPONENTIAL:
        if (jsonio_num(v, "mean", p, 1, 0, 1e9, &d->a, e) < 0) return -1;
        break;
    default:
        if (jsonio_num(v, "median", p, 1, 1e-6, 1e9, &d->a, e) < 0) return -1;
        if (jsonio_num(v, "sigma", p, 1, 0, 10, &d->b, e) < 0) return -1;
        break;
    }
    return 1;
}

int64_t gen_dist_time_draw_ns(const TimeDist *d, gsl_rng *r)
{
    double ms = d->a;
    switch (d->kind) {
    case GEN_TIME_UNIFORM: ms = d->a + (d->b - d->a) * gsl_rng_uniform(r); break;
    case GEN_TIME_EXPONENTIAL: ms = gsl_ran_exponential(r, d->a); break;
    case GEN_TIME_LOGNORMAL: ms = gsl_ran_lognormal(r, log(d->a), d->b); break;
    default: break;
    }
    if (ms > 1e12) ms = 1e12;
    return llround(ms * 1e6);
}
