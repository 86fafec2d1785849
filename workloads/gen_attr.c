/*
 * gen_attr.c -- tenants, classes, priorities and deadlines of generated
 * and traced requests (see gen_attr.h).  Names are interned in the
 * workload when parsed, so a class named in a mix exists even if no
 * request draws it.
 */
#include "gen_attr.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonio.h"
#include "rng.h"

#define KEYS_MAX 48

static const char *const attr_keys[] = {"tenant", "class", "priority", "deadline_ms", "mix", "adapter", "adapters",
                                        "cancel", NULL};

int gen_attr_check_keys(const cJSON *obj, const char *where, const char *const *own, Err *e)
{
    const char *all[KEYS_MAX];
    int n = 0;
    for (int k = 0; own[k] && n < KEYS_MAX - 8; k++) all[n++] = own[k];
    for (int k = 0; attr_keys[k]; k++) all[n++] = attr_keys[k];
    all[n] = NULL;
    return jsonio_check_keys(obj, where, all, e);
}

/* tenant, class, priority, deadline_ms of one object over the defaults in
 * *out. */
static int parse_plain(const cJSON *o, const char *where, Workload *w, uint32_t *tenant, uint32_t *cls,
                       int32_t *priority, int64_t *deadline_ns, Err *e)
{
    const char *s = NULL;
    if (jsonio_str(o, "tenant", where, 0, &s, e) < 0) return -1;
    if (s) *tenant = workload_tenant(w, s);
    s = NULL;
    if (jsonio_str(o, "class", where, 0, &s, e) < 0) return -1;
    if (s) *cls = workload_class(w, s);
    int64_t p = *priority;
    if (jsonio_int(o, "priority", where, 0, -1000000, 1000000, &p, e) < 0) return -1;
    *priority = (int32_t)p;
    double ms = -1;
    if (jsonio_num(o, "deadline_ms", where, 0, 1e-6, 1e12, &ms, e) < 0) return -1;
    if (ms > 0) *deadline_ns = llround(ms * 1e6);
    return 0;
}

/* "adapter" (fixed) or "adapters" (a Zipf draw), see gen_attr.h. */
static int parse_adapters(const cJSON *obj, const char *where, uint64_t seed, GenAttrs *a, Err *e)
{
    int64_t fixed = 0;
    if (jsonio_int(obj, "adapter", where, 0, 0, 1000000, &fixed, e) < 0) return -1;
    a->adapter = (uint32_t)fixed;
    const cJSON *z = cJSON_GetObjectItemCaseSensitive(obj, "adapters");
    if (!z) return 0;
    char p[512];
    jsonio_path(p, sizeof p, where, "adapters");
    if (fixed) return err_set(e, "%s: give \"adapter\" or \"adapters\", not both", where);
    static const char *const keys[] = {"count", "zipf_s", "base_share", NULL};
    if (jsonio_expect_object(z, p, e) < 0 || jsonio_check_keys(z, p, keys, e) < 0) return -1;
    int64_t n = 0;
    double s = 1.0, base = 0;
    if (jsonio_int(z, "count", p, 1, 1, 1000000, &n, e) < 0) return -1;
    if (jsonio_num(z, "zipf_s", p, 0, 0, 100, &s, e) < 0) return -1;
    if (jsonio_num(z, "base_share", p, 0, 0, 1, &base, e) < 0) return -1;
    if (base >= 1) return err_set(e, "%s.base_share: got %g, expected a fraction in [0, 1)", p, base);
    double *wts = xmalloc((size_t)n * sizeof *wts);
    for (int64_t k = 0; k < n; k++) wts[k] = pow((double)(k + 1), -s);
    a->adapter_table = gsl_ran_discrete_preproc((size_t)n, wts);
    free(wts);
    if (!a->adapter_table) return err_set(e, "%s: the Zipf weights do not form a distribution", p);
    a->n_adapters = (uint32_t)n;
    a->base_share = base;
    a->ra = rng_stream(seed, WL_STREAM_ADAPTER);
    return 0;
}

/* "cancel": {"fraction": f, "after_ms": t | {dist}} */
static int parse_cancel(const cJSON *obj, const char *where, uint64_t seed, GenAttrs *a, Err *e)
{
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(obj, "cancel");
    if (!c) return 0;
    char p[512];
    jsonio_path(p, sizeof p, where, "cancel");
    static const char *const keys[] = {"fraction", "after_ms", NULL};
    if (jsonio_expect_object(c, p, e) < 0 || jsonio_check_keys(c, p, keys, e) < 0) return -1;
    if (jsonio_num(c, "fraction", p, 1, 0, 1, &a->cancel_fraction, e) < 0) return -1;
    int has = gen_dist_time_key(c, "after_ms", p, &a->cancel_after, e);
    if (has < 0) return -1;
    if (!has) return err_set(e, "%s: missing key \"after_ms\" (the delay after the arrival, ms or a distribution)", p);
    a->rc = rng_stream(seed, WL_STREAM_CANCEL);
    return 0;
}

int gen_attr_parse(const cJSON *obj, const char *where, const char *base_dir, uint64_t seed, int allow_lengths,
                   Workload *w, GenAttrs *a, Err *e)
{
    memset(a, 0, sizeof *a);
    a->deadline_ns = -1;
    if (parse_plain(obj, where, w, &a->tenant, &a->cls, &a->priority, &a->deadline_ns, e) < 0) return -1;
    if (parse_adapters(obj, where, seed, a, e) < 0) return -1;
    const cJSON *mix = cJSON_GetObjectItemCaseSensitive(obj, "mix");
    if (!mix) {
        int rc0 = parse_cancel(obj, where, seed, a, e);
        if (rc0 < 0) gen_attr_free(a);
        return rc0;
    }
    char p[512], ep[560];
    jsonio_path(p, sizeof p, where, "mix");
    if (jsonio_expect_array(mix, p, e) < 0) return -1;
    int n = cJSON_GetArraySize(mix);
    if (n < 1) return err_set(e, "%s: empty; expected at least one {\"weight\": w, ...}", p);
    a->mix = xcalloc((size_t)n, sizeof *a->mix);
    a->n_mix = (uint32_t)n;
    double *weights = xmalloc((size_t)n * sizeof *weights);
    static const char *const k_len[] = {"weight", "tenant", "class", "priority", "deadline_ms", "prompt_tokens",
                                        "output_tokens", NULL};
    static const char *const k_plain[] = {"weight", "tenant", "class", "priority", "deadline_ms", NULL};
    int i = 0, rc = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, mix) {
        GenMix *m = &a->mix[i];
        jsonio_index(ep, sizeof ep, p, i);
        *m = (GenMix){.tenant = a->tenant, .cls = a->cls, .priority = a->priority, .deadline_ns = a->deadline_ns};
        if (jsonio_expect_object(it, ep, e) < 0 || jsonio_check_keys(it, ep, allow_lengths ? k_len : k_plain, e) < 0 ||
            jsonio_num(it, "weight", ep, 1, 1e-12, 1e12, &m->weight, e) < 0 ||
            parse_plain(it, ep, w, &m->tenant, &m->cls, &m->priority, &m->deadline_ns, e) < 0) {
            rc = -1;
            break;
        }
        if (allow_lengths) {
            int r1 = gen_dist_len_key(it, "prompt_tokens", ep, base_dir, 0, &m->prompt, e);
            int r2 = r1 < 0 ? -1 : gen_dist_len_key(it, "output_tokens", ep, base_dir, 0, &m->output, e);
            if (r1 < 0 || r2 < 0) {
                rc = -1;
                break;
            }
            m->has_prompt = r1 > 0;
            m->has_output = r2 > 0;
        }
        weights[i++] = m->weight;
    }
    if (rc == 0) {
        a->table = gsl_ran_discrete_preproc((size_t)n, weights);
        if (!a->table) rc = err_set(e, "%s: weights do not form a distribution", p);
        a->r = rng_stream(seed, WL_STREAM_MIX);
    }
    free(weights);
    if (rc == 0) rc = parse_cancel(obj, where, seed, a, e);
    if (rc < 0) gen_attr_free(a);
    return rc;
}

const GenMix *gen_attr_pick(GenAttrs *a)
{
    if (a->n_adapters) {
        /* two draws per pick always, so base_share never moves the ranks */
        double u = gsl_rng_uniform(a->ra);
        uint32_t k = 1 + (uint32_t)gsl_ran_discrete(a->ra, a->adapter_table);
        a->adapter = u < a->base_share ? 0 : k;
    }
    if (!a->n_mix) return NULL;
    return &a->mix[gsl_ran_discrete(a->r, a->table)];
}

void gen_attr_apply(const GenAttrs *a, const GenMix *m, Workload *w, uint32_t idx)
{
    Request *r = &w->reqs[idx];
    r->tenant = m ? m->tenant : a->tenant;
    r->cls = m ? m->cls : a->cls;
    r->priority = m ? m->priority : a->priority;
    r->adapter = a->adapter;
    int64_t d = m ? m->deadline_ns : a->deadline_ns;
    if (d >= 0) workload_set_deadline(w, idx, d);
    int64_t c = gen_attr_cancel(a);
    if (c) w->reqs[idx].cancel_after_ns = c;
}

int64_t gen_attr_cancel(const GenAttrs *a)
{
    if (!a->rc || !(gsl_rng_uniform(a->rc) < a->cancel_fraction)) return 0;
    int64_t t = gen_dist_time_draw_ns(&a->cancel_after, a->rc);
    return t > 0 ? t : 1; /* 0 would mean "never" */
}

void gen_attr_free(GenAttrs *a)
{
    for (uint32_t i = 0; i < a->n_mix; i++) {
        gen_dist_len_free(&a->mix[i].prompt);
        gen_dist_len_free(&a->mix[i].output);
    }
    free(a->mix);
    if (a->table) gsl_ran_discrete_free(a->table);
    if (a->r) gsl_rng_free(a->r);
    if (a->adapter_table) gsl_ran_discrete_free(a->adapter_table);
    if (a->ra) gsl_rng_free(a->ra);
    if (a->rc) gsl_rng_free(a->rc);
    memset(a, 0, sizeof *a);
}
