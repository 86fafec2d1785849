/*
 * mcfg.c -- metrics configuration readers (see mcfg.h).
 */
#include "mcfg.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonio.h"

/* The one form of an SLO (README "SLO verdict"):
 *   {"ttft_ms": 500, "tpot_ms": 50, "percentile": 90, "attainment": 0.99}
 * Thresholds per request (the goodput gates), one percentile at which the
 * verdict judges every latency threshold, and a target share of good
 * requests.  Other spellings people reach for -- "ttft_p90_ms", "p90_ttft_ms",
 * {"ttft": {"p90_ms": 500}} -- are rejected with this form in the message. */
#define SLO_FORM "{\"ttft_ms\": 500, \"tpot_ms\": 50, \"percentile\": 90, \"attainment\": 0.99}"

static int slo_metric_key(const char *k, size_t len)
{
    static const char *const m[] = {"ttft", "tpot", "itl", "itl_max", "e2e", "e2el", NULL};
    for (int i = 0; m[i]; i++)
        if (strlen(m[i]) == len && !strncmp(k, m[i], len)) return 1;
    return 0;
}

/* "ttft", "ttft_p90_ms", "p90_ttft_ms", "ttft_p99", ...: a percentile SLO
 * written in a form this reader does not take; fills *pct ("90") when the
 * key names one. */
static int slo_other_form(const char *k, char *pct, size_t n)
{
    pct[0] = '\0';
    size_t len = strlen(k);
    if (slo_metric_key(k, len)) return 1;
    const char *p = NULL;
    if (k[0] == 'p' && k[1] >= '0' && k[1] <= '9') p = k;
    else if ((p = strstr(k, "_p")) && p[2] >= '0' && p[2] <= '9') p++;
    else return 0;
    size_t d = 1;
    while (p[d] >= '0' && p[d] <= '9') d++;
    snprintf(pct, n, "%.*s", (int)(d - 1 < 8 ? d - 1 : 8), p + 1);
    return 1;
}

static int slo_fields(const cJSON *v, const char *where, Slo *slo, int allow_classes, Err *e)
{
    static const char *const keys[] = {"ttft_ms", "tpot_ms", "itl_max_ms", "e2e_ms", "percentile", "attainment",
                                       "classes", NULL};
    if (jsonio_expect_object(v, where, e) < 0) return -1;
    const cJSON *it;
    cJSON_ArrayForEach(it, v) {
        char pct[16];
        if (!slo_other_form(it->string, pct, sizeof pct)) continue;
        return err_set(e, "%s.%s: SLOs are written as per-request thresholds and one percentile for the verdict, "
                          "e.g. \"slo\": %s (%s%s%sthe share of good requests in \"attainment\")",
                       where, it->string, SLO_FORM, pct[0] ? "p" : "", pct, pct[0] ? " in \"percentile\", " : "");
    }
    if (!allow_classes && cJSON_GetObjectItemCaseSensitive(v, "classes"))
        return err_set(e, "%s.classes: classes are given once, at the top of \"slo\"", where);
    if (jsonio_check_keys(v, where, keys, e) < 0) return -1;
    const char *k[4] = {"ttft_ms", "tpot_ms", "itl_max_ms", "e2e_ms"};
    double *dst[4] = {&slo->ttft_s, &slo->tpot_s, &slo->itl_max_s, &slo->e2e_s};
    for (int i = 0; i < 4; i++) {
        double ms = -1;
        if (jsonio_num(v, k[i], where, 0, 1e-6, 1e9, &ms, e) < 0) return -1;
        if (ms > 0) *dst[i] = ms * 1e-3;
    }
    /* a percentile of 0 or 100 is not a percentile target: 100 is the
     * maximum, which one straggler decides; use e2e_ms with attainment 1 */
    if (jsonio_num(v, "percentile", where, 0, 1, 99.999, &slo->percentile, e) < 0) return -1;
    if (jsonio_num(v, "attainment", where, 0, 1e-6, 1, &slo->attainment, e) < 0) return -1;
    return 0;
}

int mcfg_parse_slo(const cJSON *v, const char *where, Slo *dflt, SloClasses *cls, Err *e)
{
    memset(dflt, 0, sizeof *dflt);
    memset(cls, 0, sizeof *cls);
    if (slo_fields(v, where, dflt, 1, e) < 0) return -1;
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(v, "classes");
    if (!c) return 0;
    char p[256], cp[320];
    jsonio_path(p, sizeof p, where, "classes");
    if (jsonio_expect_object(c, p, e) < 0) return -1;
    const cJSON *it;
    cJSON_ArrayForEach(it, c) {
        if (cls->n >= MCFG_CLASSES_MAX) return err_set(e, "%s: more than %d classes", p, MCFG_CLASSES_MAX);
        if (strlen(it->string) >= sizeof cls->name[0])
            return err_set(e, "%s: class name \"%.40s...\" longer than %zu characters", p, it->string,
                           sizeof cls->name[0] - 1);
        jsonio_path(cp, sizeof cp, p, it->string);
        Slo *s = &cls->slo[cls->n];
        *s = *dflt;
        if (slo_fields(it, cp, s, 0, e) < 0) return -1;
        snprintf(cls->name[cls->n], sizeof cls->name[0], "%s", it->string);
        cls->n++;
    }
    return 0;
}

int mcfg_parse_price(const cJSON *v, const char *where, int allow_gpus, Price *p, Err *e)
{
    static const char *const keys[] = {"usd_per_gpu_hour", "billing", "increment_s", "reserved_s", "gpus", NULL};
    if (jsonio_expect_object(v, where, e) < 0) return -1;
    if (allow_gpus) {
        if (jsonio_check_keys(v, where, keys, e) < 0) return -1;
    } else {
        const cJSON *g = cJSON_GetObjectItemCaseSensitive(v, "gpus");
        if (g) return err_set(e, "%s.gpus: not allowed in a scenario (the GPU count is tp)", where);
        if (jsonio_check_keys(v, where, keys, e) < 0) return -1;
    }
    if (jsonio_num(v, "usd_per_gpu_hour", where, 0, 0, 1e6, &p->usd_per_gpu_hour, e) < 0) return -1;
    if (allow_gpus && jsonio_num(v, "gpus", where, 0, 1e-9, 1e6, &p->gpus, e) < 0) return -1;
    int b = (int)p->billing;
    if (jsonio_enum(v, "billing", where, 0, metrics_billing_names, &b, e) < 0) return -1;
    p->billing = (Billing)b;
    int has_inc = jsonio_num(v, "increment_s", where, 0, 1e-9, 1e9, &p->increment_s, e);
    int has_res = jsonio_num(v, "reserved_s", where, 0, 1e-9, 1e12, &p->reserved_s, e);
    if (has_inc < 0 || has_res < 0) return -1;
    if (p->billing == BILL_INCREMENT && !(p->increment_s > 0))
        return err_set(e, "%s: billing \"increment\" needs increment_s (seconds, > 0)", where);
    if (p->billing == BILL_RESERVED && !(p->reserved_s > 0))
        return err_set(e, "%s: billing \"reserved\" needs reserved_s (the reserved period in seconds)", where);
    return 0;
}

static int set_window(MetricsCfg *m, double t0_ms, double t1_ms, const char *where, Err *e)
{
    if (!(t0_ms >= 0) || !(t1_ms > t0_ms) || t1_ms > 1e12)
        return err_set(e, "%s: got [%g, %g] ms, expected 0 <= t0 < t1", where, t0_ms, t1_ms);
    m->has_window = 1;
    m->window_t0_ns = llround(t0_ms * 1e6);
    m->window_t1_ns = llround(t1_ms * 1e6);
    return 0;
}

int mcfg_parse_metrics(const cJSON *v, const char *where, MetricsCfg *m, Err *e)
{
    static const char *const keys[] = {"window_ms", "warmup_s", "cooldown_s", "warmup_requests", "cooldown_requests",
                                       NULL};
    if (jsonio_expect_object(v, where, e) < 0 || jsonio_check_keys(v, where, keys, e) < 0) return -1;
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(v, "window_ms");
    char p[256];
    if (w) {
        jsonio_path(p, sizeof p, where, "window_ms");
        if (!cJSON_IsArray(w) || cJSON_GetArraySize(w) != 2 || !cJSON_IsNumber(cJSON_GetArrayItem(w, 0)) ||
            !cJSON_IsNumber(cJSON_GetArrayItem(w, 1)))
            return err_set(e, "%s: expected [t0_ms, t1_ms]", p);
        if (set_window(m, cJSON_GetArrayItem(w, 0)->valuedouble, cJSON_GetArrayItem(w, 1)->valuedouble, p, e) < 0)
            return -1;
    }
    int64_t wr = 0, cr = 0;
    if (jsonio_num(v, "warmup_s", where, 0, 0, 1e9, &m->warmup_s, e) < 0 ||
        jsonio_num(v, "cooldown_s", where, 0, 0, 1e9, &m->cooldown_s, e) < 0 ||
        jsonio_int(v, "warmup_requests", where, 0, 0, 100000000, &wr, e) < 0 ||
        jsonio_int(v, "cooldown_requests", where, 0, 0, 100000000, &cr, e) < 0)
        return -1;
    m->warmup_requests = (uint32_t)wr;
    m->cooldown_requests = (uint32_t)cr;
    return 0;
}

int mcfg_parse_window_arg(const char *arg, MetricsCfg *m, Err *e)
{
    char *end;
    double a = strtod(arg, &end);
    if (end == arg || *end != ',') return err_set(e, "--window-ms: got \"%s\", expected T0,T1 in ms", arg);
    const char *s2 = end + 1;
    double b = strtod(s2, &end);
    if (end == s2 || *end) return err_set(e, "--window-ms: got \"%s\", expected T0,T1 in ms", arg);
    return set_window(m, a, b, "--window-ms", e);
}

void mcfg_resolve_classes(const SloClasses *cls, const Slo *dflt, const char *const *names, uint32_t n_names,
                          Slo *slo_table)
{
    for (uint32_t k = 0; k < n_names; k++) {
        slo_table[k] = *dflt;
        for (uint32_t j = 0; j < cls->n; j++)
            if (names[k] && !strcmp(names[k], cls->name[j])) slo_table[k] = cls->slo[j];
    }
}
