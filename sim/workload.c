/*
 * workload.c -- explicit request lists and the Poisson generator (see
 * workload.h).  Every value is checked with its key path before use.
 */
#include "workload.h"

#include <gsl/gsl_randist.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonio.h"
#include "rng.h"

#define LEN_MAX 10000000 /* tokens: longer than any context window we model */

void workload_free(Workload *w)
{
    free(w->reqs);
    free(w->names);
    memset(w, 0, sizeof *w);
}

static const char *const dist_names[] = {"fixed", "uniform", "normal", "lognormal", NULL};

int lengthdist_from_json(const cJSON *v, const char *where, LengthDist *d, Err *e)
{
    memset(d, 0, sizeof *d);
    d->lo = 1;
    d->hi = LEN_MAX;
    if (cJSON_IsNumber(v)) {
        double x = v->valuedouble;
        if (x != floor(x) || x < 1 || x > LEN_MAX)
            return err_set(e, "%s: got %g, expected an integer token count in [1, %d] or a distribution "
                              "object", where, x, LEN_MAX);
        d->kind = 0;
        d->a = x;
        return 0;
    }
    if (!cJSON_IsObject(v))
        return err_set(e, "%s: expected an integer or a distribution object like "
                          "{\"dist\": \"uniform\", \"min\": 128, \"max\": 512}", where);
    if (jsonio_enum(v, "dist", where, 1, dist_names, &d->kind, e) < 0) return -1;
    static const char *const k_fixed[] = {"dist", "value", NULL};
    static const char *const k_uniform[] = {"dist", "min", "max", NULL};
    static const char *const k_normal[] = {"dist", "mean", "std", "min", "max", NULL};
    static const char *const k_lognormal[] = {"dist", "median", "sigma", "min", "max", NULL};
    const char *const *keys[] = {k_fixed, k_uniform, k_normal, k_lognormal};
    if (jsonio_check_keys(v, where, keys[d->kind], e) < 0) return -1;
    int64_t lo = 1, hi = LEN_MAX;
    if (jsonio_int(v, "min", where, d->kind == 1, 1, LEN_MAX, &lo, e) < 0) return -1;
    if (jsonio_int(v, "max", where, d->kind == 1, 1, LEN_MAX, &hi, e) < 0) return -1;
    if (lo > hi) return err_set(e, "%s: min %lld > max %lld", where, (long long)lo, (long long)hi);
    d->lo = (double)lo;
    d->hi = (double)hi;
    switch (d->kind) {
    case 0: {
        int64_t x;
        if (jsonio_int(v, "value", where, 1, 1, LEN_MAX, &x, e) < 0) return -1;
        d->a = (double)x;
        break;
    }
    case 1: d->a = d->lo; d->b = d->hi; break;
    case 2:
        if (jsonio_num(v, "mean", where, 1, 1, LEN_MAX, &d->a, e) < 0) return -1;
        if (jsonio_num(v, "std", where, 1, 0, LEN_MAX, &d->b, e) < 0) return -1;
        break;
    case 3:
        if (jsonio_num(v, "median", where, 1, 1, LEN_MAX, &d->a, e) < 0) return -1;
        if (jsonio_num(v, "sigma", where, 1, 0, 10, &d->b, e) < 0) return -1;
        break;
    }
    return 0;
}

static uint32_t lengthdist_draw(const LengthDist *d, gsl_rng *r)
{
    double x = d->a;
    switch (d->kind) {
    case 1: x = d->a + (double)gsl_rng_uniform_int(r, (unsigned long)(d->b - d->a + 1)); break;
    case 2: x = d->a + gsl_ran_gaussian(r, d->b); break;
    case 3: x = gsl_ran_lognormal(r, log(d->a), d->b); break;
    default: break;
    }
    x = floor(x + 0.5);
    if (x < d->lo) x = d->lo;
    if (x > d->hi) x = d->hi;
    return (uint32_t)x;
}

/* ------------------------------------------------------------------ list */

static int cmp_arrival(const void *a, const void *b)
{
    const Request *x = a, *y = b;
    if (x->t_arrive_ns != y->t_arrive_ns) return x->t_arrive_ns < y->t_arrive_ns ? -1 : 1;
    /* token_off holds the input position until the engine resets it: a
     * stable sort. */
    return x->token_off < y->token_off ? -1 : x->token_off > y->token_off;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int parse_list(const cJSON *arr, const char *where, Workload *w, Err *e)
{
    char path[256], rp[320];
    jsonio_path(path, sizeof path, where, "requests");
    if (jsonio_expect_array(arr, path, e) < 0) return -1;
    int n = cJSON_GetArraySize(arr);
    if (n < 1) return err_set(e, "%s: empty; expected at least one request", path);
    w->n = (uint32_t)n;
    w->reqs = xcalloc((size_t)n, sizeof *w->reqs);
    size_t names_len = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, arr) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "id");
        names_len += (cJSON_IsString(id) ? strlen(id->valuestring) : 12) + 1;
    }
    w->names = xmalloc(names_len + 1);
    char *np = w->names;
    static const char *const keys[] = {"id", "arrival_ms", "prompt_tokens", "output_tokens",
                                       "max_output_tokens", NULL};
    int i = 0;
    cJSON_ArrayForEach(it, arr) {
        jsonio_index(rp, sizeof rp, path, i);
        if (jsonio_expect_object(it, rp, e) < 0 || jsonio_check_keys(it, rp, keys, e) < 0) return -1;
        Request *r = &w->reqs[i];
        request_init(r);
        const char *id = NULL;
        if (jsonio_str(it, "id", rp, 0, &id, e) < 0) return -1;
        if (id) strcpy(np, id);
        else sprintf(np, "%d", i);
        r->id = np;
        np += strlen(np) + 1;
        double ms = 0;
        int64_t p, o, mo = 0;
        if (jsonio_num(it, "arrival_ms", rp, 1, 0, 1e12, &ms, e) < 0) return -1;
        if (jsonio_int(it, "prompt_tokens", rp, 1, 1, LEN_MAX, &p, e) < 0) return -1;
        if (jsonio_int(it, "output_tokens", rp, 1, 1, LEN_MAX, &o, e) < 0) return -1;
        if (jsonio_int(it, "max_output_tokens", rp, 0, 1, LEN_MAX, &mo, e) < 0) return -1;
        if (mo && mo < o)
            return err_set(e, "%s.max_output_tokens: got %lld, expected >= output_tokens (%lld)", rp,
                           (long long)mo, (long long)o);
        r->t_arrive_ns = llround(ms * 1e6);
        r->prompt_tokens = (uint32_t)p;
        r->output_tokens = (uint32_t)o;
        r->max_output_tokens = (uint32_t)mo;
        r->token_off = (uint64_t)i;
        i++;
    }
    /* Ids must be unique: reports and replays refer to requests by id. */
    const char **ids = xmalloc(w->n * sizeof *ids);
    for (uint32_t k = 0; k < w->n; k++) ids[k] = w->reqs[k].id;
    qsort(ids, w->n, sizeof *ids, cmp_str);
    for (uint32_t k = 1; k < w->n; k++)
        if (!strcmp(ids[k], ids[k - 1])) {
            err_set(e, "%s: duplicate request id \"%s\"", path, ids[k]);
            free(ids);
            return -1;
        }
    free(ids);
    qsort(w->reqs, w->n, sizeof *w->reqs, cmp_arrival);
    strcpy(w->kind, "requests");
    return 0;
}

/* --------------------------------------------------------------- poisson */

static int parse_poisson(const cJSON *wj, const char *where, uint64_t seed, Workload *w, Err *e)
{
    static const char *const keys[] = {"kind", "rate_per_s", "count", "prompt_tokens", "output_tokens",
                                       "start_ms", NULL};
    if (jsonio_check_keys(wj, where, keys, e) < 0) return -1;
    double rate, start_ms = 0;
    int64_t count;
    char path[256];
    if (jsonio_num(wj, "rate_per_s", where, 1, 1e-9, 1e9, &rate, e) < 0) return -1;
    if (jsonio_int(wj, "count", where, 1, 1, 100000000, &count, e) < 0) return -1;
    if (jsonio_num(wj, "start_ms", where, 0, 0, 1e12, &start_ms, e) < 0) return -1;
    LengthDist pd, od;
    const char *lk[2] = {"prompt_tokens", "output_tokens"};
    LengthDist *ld[2] = {&pd, &od};
    for (int k = 0; k < 2; k++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(wj, lk[k]);
        jsonio_path(path, sizeof path, where, lk[k]);
        if (!v) return err_set(e, "%s: missing key \"%s\"", where, lk[k]);
        if (lengthdist_from_json(v, path, ld[k], e) < 0) return -1;
    }
    w->n = (uint32_t)count;
    w->reqs = xcalloc(w->n, sizeof *w->reqs);
    w->names = xmalloc((size_t)w->n * 12);
    gsl_rng *ra = rng_stream(seed, RNG_STREAM_ARRIVALS);
    gsl_rng *rp = rng_stream(seed, RNG_STREAM_PROMPT);
    gsl_rng *ro = rng_stream(seed, RNG_STREAM_OUTPUT);
    double t_s = start_ms / 1e3;
    for (uint32_t i = 0; i < w->n; i++) {
        Request *r = &w->reqs[i];
        request_init(r);
        t_s += gsl_ran_exponential(ra, 1.0 / rate);
        r->t_arrive_ns = llround(t_s * 1e9);
        r->prompt_tokens = lengthdist_draw(&pd, rp);
        r->output_tokens = lengthdist_draw(&od, ro);
        char *name = w->names + (size_t)i * 12;
        snprintf(name, 12, "%u", i);
        r->id = name;
    }
    gsl_rng_free(ra);
    gsl_rng_free(rp);
    gsl_rng_free(ro);
    strcpy(w->kind, "poisson");
    return 0;
}

int workload_from_json(const cJSON *wj, const char *where, uint64_t seed, Workload *out, Err *e)
{
    memset(out, 0, sizeof *out);
    if (jsonio_expect_object(wj, where, e) < 0) return -1;
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(wj, "requests");
    int rc;
    if (list) {
        static const char *const keys[] = {"requests", NULL};
        rc = jsonio_check_keys(wj, where, keys, e);
        if (rc == 0) rc = parse_list(list, where, out, e);
    } else {
        static const char *const kinds[] = {"poisson", NULL};
        int kind;
        if (jsonio_enum(wj, "kind", where, 1, kinds, &kind, e) < 0) return -1;
        rc = parse_poisson(wj, where, seed, out, e);
    }
    if (rc < 0) workload_free(out);
    return rc;
}
