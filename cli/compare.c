/*
 * compare.c -- simulated versus measured statistics (see compare.h).
 */
#include "compare.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonio.h"
#include "metrics.h"

static const char *const metric_names[CMP_METRICS] = {"ttft", "tpot", "itl", "e2e"};
static const char *const stat_names[CMP_STATS] = {"mean", "p50", "p90", "p99"};

/* Every number compare reads: absent or null is "not reported" (NaN, shown
 * as n/a); anything else must be a number in [0, hi] (issue 15: strings,
 * negative and absurd values printed nan or nonsense). */
#define CMP_LAT_MAX_S 1e7      /* ~4 months: no latency is longer */
#define CMP_RATE_MAX 1e12      /* per second */
#define CMP_COUNT_MAX 1e15     /* requests or tokens */
#define CMP_LEN_MAX 1e8        /* tokens in one request */

static int num(const cJSON *o, const char *k, const char *where, double hi, double *out, Err *e)
{
    const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
    *out = NAN;
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0 && v->valuedouble <= hi)) {
        char got[64];
        if (cJSON_IsNumber(v)) snprintf(got, sizeof got, "%g", v->valuedouble);
        else snprintf(got, sizeof got, "a %s", cJSON_IsString(v) ? "string" : cJSON_IsArray(v) ? "list"
                                                 : cJSON_IsObject(v) ? "object" : "boolean");
        return err_set(e, "%s: \"%s\": got %s, expected a number in [0, %g]", where, k, got, hi);
    }
    *out = v->valuedouble;
    return 0;
}

/* An element of a per-request list: a number in [0, hi]. */
static int elem(const cJSON *x, const char *where, const char *list, int i, double hi, Err *e)
{
    if (cJSON_IsNumber(x) && x->valuedouble >= 0 && x->valuedouble <= hi) return 0;
    if (cJSON_IsNumber(x))
        return err_set(e, "%s: %s[%d]: got %g, expected a number in [0, %g]", where, list, i, x->valuedouble, hi);
    return err_set(e, "%s: %s[%d]: expected a number in [0, %g]", where, list, i, hi);
}

static void from_dist(double *dst, const Dist *d)
{
    dst[CMP_MEAN] = d->mean;
    dst[CMP_P50] = d->p50;
    dst[CMP_P90] = d->p90;
    dst[CMP_P99] = d->p99;
}

static int from_ours(const cJSON *su, const char *name, CmpSide *out, Err *e)
{
    static const char *const keys[CMP_METRICS] = {"ttft_s", "tpot_s", "itl_s", "e2e_s"};
    char w[600];
    for (int m = 0; m < CMP_METRICS; m++) {
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(su, keys[m]);
        snprintf(w, sizeof w, "%s: summary.%s", name, keys[m]);
        for (int s = 0; s < CMP_STATS; s++)
            if (num(d, stat_names[s], w, CMP_LAT_MAX_S, &out->lat[m][s], e) < 0) return -1;
    }
    const cJSON *th = cJSON_GetObjectItemCaseSensitive(su, "throughput");
    snprintf(w, sizeof w, "%s: summary.throughput", name);
    double done, win, otok, tot;
    if (num(th, "output_tokens_per_s", w, CMP_RATE_MAX, &out->output_tokens_per_s, e) < 0 ||
        num(th, "requests_per_s", w, CMP_RATE_MAX, &out->requests_per_s, e) < 0 ||
        num(th, "completed", w, CMP_COUNT_MAX, &done, e) < 0 || num(th, "window_s", w, CMP_LAT_MAX_S, &win, e) < 0 ||
        num(th, "output_tokens", w, CMP_COUNT_MAX, &otok, e) < 0 ||
        num(th, "total_tokens_per_s", w, CMP_RATE_MAX, &tot, e) < 0)
        return -1;
    /* input tokens come out of the total and output rates over the window */
    out->completed = done;
    out->mean_output_tokens = done > 0 ? otok / done : NAN;
    out->mean_input_tokens = done > 0 ? (tot - out->output_tokens_per_s) * win / done : NAN;
    strcpy(out->format, "servesim");
    return 0;
}

static int from_vllm_arrays(const cJSON *root, const char *name, CmpSide *out, Err *e)
{
    const cJSON *ttfts = cJSON_GetObjectItemCaseSensitive(root, "ttfts");
    const cJSON *itls = cJSON_GetObjectItemCaseSensitive(root, "itls");
    const cJSON *olens = cJSON_GetObjectItemCaseSensitive(root, "output_lens");
    int n = cJSON_GetArraySize(ttfts);
    if (!cJSON_IsArray(itls) || cJSON_GetArraySize(itls) != n || !cJSON_IsArray(olens) ||
        cJSON_GetArraySize(olens) != n)
        return err_set(e, "%s: ttfts, itls and output_lens must be arrays of the same length (%d)", name, n);
    size_t n_itl = 0;
    for (int i = 0; i < n; i++) n_itl += (size_t)cJSON_GetArraySize(cJSON_GetArrayItem(itls, i));
    double *v[4];
    for (int m = 0; m < 4; m++) v[m] = xmalloc(((m == CMP_ITL ? n_itl : (size_t)n) + 1) * sizeof(double));
    uint32_t cnt[4] = {0};
    const cJSON *ilens = cJSON_GetObjectItemCaseSensitive(root, "input_lens");
    double in_sum = 0, out_sum = 0;
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        const cJSON *t = cJSON_GetArrayItem(ttfts, i), *il = cJSON_GetArrayItem(itls, i);
        const cJSON *ol = cJSON_GetArrayItem(olens, i);
        if (!cJSON_IsNumber(t) || !cJSON_IsArray(il) || !cJSON_IsNumber(ol)) {
            rc = err_set(e, "%s: request %d: expected a number in ttfts, an array in itls, a number in output_lens",
                         name, i);
            break;
        }
        if (elem(t, name, "ttfts", i, CMP_LAT_MAX_S, e) < 0 || elem(ol, name, "output_lens", i, CMP_LEN_MAX, e) < 0) {
            rc = -1;
            break;
        }
        if (t->valuedouble <= 0) continue; /* vLLM records failed requests with ttft 0 */
        const cJSON *il_n = cJSON_GetArrayItem(ilens, i);
        if (il_n && elem(il_n, name, "input_lens", i, CMP_LEN_MAX, e) < 0) {
            rc = -1;
            break;
        }
        in_sum += il_n ? il_n->valuedouble : NAN;
        out_sum += ol->valuedouble;
        double sum = 0;
        const cJSON *x;
        cJSON_ArrayForEach(x, il) {
            if (elem(x, name, "itls[]", i, CMP_LAT_MAX_S, e) < 0) {
                rc = -1;
                break;
            }
            sum += x->valuedouble;
            v[CMP_ITL][cnt[CMP_ITL]++] = x->valuedouble;
        }
        v[CMP_TTFT][cnt[CMP_TTFT]++] = t->valuedouble;
        v[CMP_E2E][cnt[CMP_E2E]++] = t->valuedouble + sum;
        if (ol->valuedouble > 1) v[CMP_TPOT][cnt[CMP_TPOT]++] = sum / (ol->valuedouble - 1);
    }
    if (rc < 0) {
        for (int m = 0; m < 4; m++) free(v[m]);
        return -1;
    }
    out->completed = cnt[CMP_TTFT];
    out->mean_input_tokens = cnt[CMP_TTFT] && cJSON_IsArray(ilens) ? in_sum / cnt[CMP_TTFT] : NAN;
    out->mean_output_tokens = cnt[CMP_TTFT] ? out_sum / cnt[CMP_TTFT] : NAN;
    for (int m = 0; m < 4; m++) {
        Dist d;
        metrics_dist(v[m], cnt[m], &d);
        from_dist(out->lat[m], &d);
        free(v[m]);
    }
    return 0;
}

static int from_vllm(const cJSON *root, const char *name, CmpSide *out, Err *e)
{
    strcpy(out->format, "vllm");
    double tin, tout;
    if (num(root, "output_throughput", name, CMP_RATE_MAX, &out->output_tokens_per_s, e) < 0 ||
        num(root, "request_throughput", name, CMP_RATE_MAX, &out->requests_per_s, e) < 0 ||
        num(root, "completed", name, CMP_COUNT_MAX, &out->completed, e) < 0 ||
        num(root, "total_input_tokens", name, CMP_COUNT_MAX, &tin, e) < 0 ||
        num(root, "total_output_tokens", name, CMP_COUNT_MAX, &tout, e) < 0)
        return -1;
    out->mean_input_tokens = out->completed > 0 ? tin / out->completed : NAN;
    out->mean_output_tokens = out->completed > 0 ? tout / out->completed : NAN;
    if (cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(root, "ttfts")) &&
        cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(root, "ttfts")) > 0)
        return from_vllm_arrays(root, name, out, e);
    static const char *const vk[CMP_METRICS] = {"ttft", "tpot", "itl", "e2el"};
    static const char *const vs[CMP_STATS] = {"mean", "median", "p90", "p99"};
    char k[64];
    for (int m = 0; m < CMP_METRICS; m++)
        for (int s = 0; s < CMP_STATS; s++) {
            snprintf(k, sizeof k, "%s_%s_ms", vs[s], vk[m]);
            if (num(root, k, name, CMP_LAT_MAX_S * 1e3, &out->lat[m][s], e) < 0) return -1;
            out->lat[m][s] /= 1e3;
        }
    return 0;
}

int compare_from_json(const cJSON *root, const char *name, CmpSide *out, Err *e)
{
    memset(out, 0, sizeof *out);
    if (!cJSON_IsObject(root)) return err_set(e, "%s: expected a JSON object", name);
    const cJSON *su = cJSON_GetObjectItemCaseSensitive(root, "summary");
    if (cJSON_IsObject(su)) return from_ours(su, name, out, e);
    if (cJSON_GetObjectItemCaseSensitive(root, "ttfts") || cJSON_GetObjectItemCaseSensitive(root, "mean_ttft_ms"))
        return from_vllm(root, name, out, e);
    return err_set(e, "%s: neither a servesim report (no \"summary\") nor a vLLM benchmark result (no \"ttfts\" "
                      "or \"mean_ttft_ms\")", name);
}

int compare_load(const char *path, CmpSide *out, Err *e)
{
    cJSON *root = jsonio_parse_file(path, e);
    if (!root) return -1;
    int rc = compare_from_json(root, path, out, e);
    cJSON_Delete(root);
    return rc;
}

static double rel(double sim, double meas)
{
    if (isnan(sim) || isnan(meas) || meas == 0) return NAN;
    return (sim - meas) / meas;
}

static void add(cJSON *rows, const char *metric, const char *stat, double s, double m, double *sum, int *n)
{
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "metric", metric);
    cJSON_AddStringToObject(r, "stat", stat);
    double x = rel(s, m);
    if (isnan(s)) cJSON_AddNullToObject(r, "sim"); else jsonio_add_num(r, "sim", s);
    if (isnan(m)) cJSON_AddNullToObject(r, "measured"); else jsonio_add_num(r, "measured", m);
    if (isnan(x)) cJSON_AddNullToObject(r, "rel_error");
    else {
        jsonio_add_num(r, "rel_error", x);
        *sum += fabs(x);
        (*n)++;
    }
    cJSON_AddItemToArray(rows, r);
}

int compare_workload_diff(const CmpSide *a, const CmpSide *b, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = 0;
    if (a->completed == a->completed && b->completed == b->completed && a->completed != b->completed)
        used += (size_t)snprintf(buf + used, n - used, "%s%.0f vs %.0f completed requests", used ? "; " : "",
                                 a->completed, b->completed);
    const double la[2] = {a->mean_input_tokens, a->mean_output_tokens}, lb[2] = {b->mean_input_tokens, b->mean_output_tokens};
    const char *what[2] = {"input", "output"};
    for (int k = 0; k < 2 && used < n; k++)
        if (la[k] == la[k] && lb[k] == lb[k] && fabs(la[k] - lb[k]) > 0.01 * fmax(la[k], lb[k]))
            used += (size_t)snprintf(buf + used, n - used, "%smean %s length %.1f vs %.1f tokens", used ? "; " : "",
                                     what[k], la[k], lb[k]);
    return used > 0;
}

cJSON *compare_json(const CmpSide *sim, const CmpSide *meas)
{
    cJSON *o = cJSON_CreateObject();
    char diff[512];
    if (compare_workload_diff(sim, meas, diff, sizeof diff)) cJSON_AddStringToObject(o, "workload_warning", diff);
    cJSON_AddStringToObject(o, "sim_format", sim->format);
    cJSON_AddStringToObject(o, "measured_format", meas->format);
    cJSON *rows = cJSON_AddArrayToObject(o, "rows");
    double sum = 0;
    int n = 0;
    char name[32];
    for (int m = 0; m < CMP_METRICS; m++)
        for (int s = 0; s < CMP_STATS; s++) {
            snprintf(name, sizeof name, "%s_s", metric_names[m]);
            add(rows, name, stat_names[s], sim->lat[m][s], meas->lat[m][s], &sum, &n);
        }
    add(rows, "output_tokens_per_s", "value", sim->output_tokens_per_s, meas->output_tokens_per_s, &sum, &n);
    add(rows, "requests_per_s", "value", sim->requests_per_s, meas->requests_per_s, &sum, &n);
    cJSON_AddNumberToObject(o, "compared", n);
    if (n) jsonio_add_num(o, "mean_abs_rel_error", sum / n);
    else cJSON_AddNullToObject(o, "mean_abs_rel_error");
    return o;
}

/* One value column: "n/a" where a side lacks the statistic (a summary-only
 * vLLM file has no percentiles), never "nan" (issue 15). */
static void print_value(double v)
{
    if (isnan(v)) printf(" %14s", "n/a");
    else printf(" %14.3f", v);
}

void compare_print(const CmpSide *sim, const CmpSide *meas)
{
    printf("  %-22s %14s %14s %9s\n", "metric", "simulated", "measured", "error");
    double sum = 0;
    int n = 0;
    for (int m = 0; m < CMP_METRICS; m++)
        for (int s = 0; s < CMP_STATS; s++) {
            double a = sim->lat[m][s], b = meas->lat[m][s], x = rel(a, b);
            if (isnan(a) && isnan(b)) continue;
            char label[40];
            snprintf(label, sizeof label, "%s %s (ms)", metric_names[m], stat_names[s]);
            printf("  %-22s", label);
            print_value(a * 1e3);
            print_value(b * 1e3);
            printf(" ");
            if (isnan(x)) printf("%9s\n", "n/a");
            else {
                printf("%+8.1f%%\n", x * 100);
                sum += fabs(x);
                n++;
            }
        }
    const char *tn[2] = {"output tok/s", "requests/s"};
    double ts[2] = {sim->output_tokens_per_s, sim->requests_per_s}, tm[2] = {meas->output_tokens_per_s, meas->requests_per_s};
    for (int k = 0; k < 2; k++) {
        double x = rel(ts[k], tm[k]);
        printf("  %-22s", tn[k]);
        print_value(ts[k]);
        print_value(tm[k]);
        printf(" ");
        if (isnan(x)) printf("%9s\n", "n/a");
        else {
            printf("%+8.1f%%\n", x * 100);
            sum += fabs(x);
            n++;
        }
    }
    if (n) printf("  mean absolute relative error over %d rows: %.1f%%\n", n, sum / n * 100);
}
