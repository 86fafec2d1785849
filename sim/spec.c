/*
 * spec.c -- speculative decoding arithmetic, verifiers and the engine-side
 * policy (see spec.h).  Randomness: GSL's discrete sampler and uniform
 * streams; the engine policy draws from one stream seeded from the run's
 * seed, in the engine's deterministic order.
 */
#include "spec.h"

#include <gsl/gsl_randist.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"

const char *const spec_method_names[] = {"lookup", "parallel", "draft_model", NULL};

enum { RNG_STREAM_SPEC = 40 };

static double rate_at(const SpecCfg *c, uint32_t i)
{
    if (c->n_rates == 0) return 0;
    return c->rates[i < c->n_rates ? i : c->n_rates - 1];
}

double spec_expected_tokens(const SpecCfg *c, uint32_t m)
{
    if (c->n_counts) {
        /* empirical: E[min(K, m)] + 1 over the given distribution */
        double tot = 0, ex = 0;
        for (uint32_t k = 0; k < c->n_counts; k++) {
            tot += c->counts[k];
            ex += c->counts[k] * (k < m ? k : m);
        }
        return tot > 0 ? 1 + ex / tot : 1;
    }
    double e = 1, run = 1;
    for (uint32_t i = 0; i < m; i++) {
        run *= rate_at(c, i);
        e += run;
    }
    return e;
}

uint32_t spec_sample_accepted(const SpecCfg *c, uint32_t m, gsl_rng *r)
{
    if (c->n_counts) {
        double tot = 0;
        for (uint32_t k = 0; k < c->n_counts; k++) tot += c->counts[k];
        double u = gsl_rng_uniform(r) * tot, acc = 0;
        uint32_t k = 0;
        for (; k + 1 < c->n_counts; k++) {
            acc += c->counts[k];
            if (u < acc) break;
        }
        return k < m ? k : m;
    }
    uint32_t k = 0;
    while (k < m && gsl_rng_uniform(r) < rate_at(c, k)) k++;
    return k;
}

double spec_time_per_token(const SpecCfg *c, uint32_t m, double round_s)
{
    return round_s / spec_expected_tokens(c, m);
}

double spec_residual(const double *p, const double *q, size_t k, double *out)
{
    double z = 0;
    for (size_t i = 0; i < k; i++) {
        out[i] = p[i] > q[i] ? p[i] - q[i] : 0;
        z += out[i];
    }
    if (z > 0)
        for (size_t i = 0; i < k; i++) out[i] /= z;
    return z;
}

static size_t draw(const double *w, size_t k, gsl_rng *r)
{
    double tot = 0;
    for (size_t i = 0; i < k; i++) tot += w[i];
    double u = gsl_rng_uniform(r) * tot, acc = 0;
    for (size_t i = 0; i + 1 < k; i++) {
        acc += w[i];
        if (u < acc) return i;
    }
    return k - 1;
}

static size_t verify(const double *p, const double *q, size_t k, gsl_rng *r, int *accepted, size_t *proposed,
                     int exact)
{
    size_t x = draw(q, k, r);
    if (proposed) *proposed = x;
    double a = q[x] > 0 ? p[x] / q[x] : 1;
    if (gsl_rng_uniform(r) < (a < 1 ? a : 1)) {
        *accepted = 1;
        return x;
    }
    *accepted = 0;
    if (!exact) return draw(p, k, r);
    double res[256];
    double *buf = k <= 256 ? res : xmalloc(k * sizeof *buf);
    double z = spec_residual(p, q, k, buf);
    size_t y = z > 0 ? draw(buf, k, r) : x;
    if (buf != res) free(buf);
    return y;
}

size_t spec_verify_exact(const double *p, const double *q, size_t k, gsl_rng *r, int *accepted, size_t *proposed)
{
    return verify(p, q, k, r, accepted, proposed, 1);
}

size_t spec_verify_resample_p(const double *p, const double *q, size_t k, gsl_rng *r, int *accepted,
                              size_t *proposed)
{
    return verify(p, q, k, r, accepted, proposed, 0);
}

uint32_t spec_verify_greedy(const uint32_t *draft, const uint32_t *target, uint32_t m)
{
    uint32_t i = 0;
    while (i < m && draft[i] == target[i]) i++;
    return i;
}

/* ---------------------------------------------------------- engine policy */

typedef struct SpecEng {
    SpecEngineCfg cfg;
    gsl_rng *rng;
    BatchItem *buf;
    uint32_t cap;
} SpecEng;

static const SpecCfg *cfg_for(const SpecEng *s, const Request *r)
{
    if (s->cfg.by_cls && r->cls < s->cfg.n_cls) return &s->cfg.by_cls[r->cls];
    return &s->cfg.dflt;
}

static uint32_t se_draft_len(void *ctx, const Request *r, uint32_t running)
{
    const SpecCfg *c = cfg_for(ctx, r);
    if (!c->enabled || (c->max_running && running > c->max_running)) return 0;
    return c->draft_len;
}

static uint32_t se_accepted(void *ctx, Request *r, uint32_t m)
{
    SpecEng *s = ctx;
    const SpecCfg *c = cfg_for(s, r);
    if (!c->expectation) return spec_sample_accepted(c, m, s->rng);
    /* the expectation: E[N] tokens per round on average, whole tokens
     * emitted, the fraction carried to the next round */
    r->spec_credit += spec_expected_tokens(c, m);
    uint32_t n = (uint32_t)floor(r->spec_credit + 1e-9);
    if (n < 1) n = 1;
    if (n > m + 1) n = m + 1;
    r->spec_credit -= n;
    return n - 1;
}

static double se_draft_cost(void *ctx, const BatchPlan *plan, const Request *reqs)
{
    SpecEng *s = ctx;
    double t = 0;
    int any_verify = 0;
    uint32_t nv = 0;
    double fixed = 0;
    for (uint32_t i = 0; i < plan->n; i++) {
        const BatchItem *it = &plan->items[i];
        const Request *r = &reqs[it->req];
        const SpecCfg *c = cfg_for(s, r);
        if (it->kind != ITEM_VERIFY) continue;
        any_verify = 1;
        nv++;
        if (c->draft_s > fixed) fixed = c->draft_s;
        if (c->method == SPEC_LOOKUP && r->spec_rounds == 0) t += c->index_build_s;
    }
    if (any_verify) t += fixed;
    if (!s->cfg.has_draft) return t;
    /* the draft model: every prefill also runs on it; a round is m serial
     * single-token forwards over every speculating request */
    uint32_t need = plan->n > nv ? plan->n : nv;
    if (need > s->cap) {
        s->cap = need * 2;
        s->buf = xrealloc(s->buf, s->cap * sizeof *s->buf);
    }
    uint32_t np = 0, m_max = 0;
    for (uint32_t i = 0; i < plan->n; i++)
        if (plan->items[i].kind == ITEM_PREFILL) s->buf[np++] = plan->items[i];
    CostBreakdown cb;
    if (np && s->cfg.draft.iter_time(s->cfg.draft.ctx, s->buf, np, &cb) == 0) t += cb.t_s;
    uint32_t nd = 0;
    for (uint32_t i = 0; i < plan->n; i++) {
        const BatchItem *it = &plan->items[i];
        if (it->kind != ITEM_VERIFY) continue;
        s->buf[nd++] = (BatchItem){.req = it->req, .c = 1, .h = it->h, .kind = ITEM_DECODE, .samples = 1};
        if (it->c - 1 > m_max) m_max = it->c - 1;
    }
    if (nd && s->cfg.draft.iter_time(s->cfg.draft.ctx, s->buf, nd, &cb) == 0) t += m_max * cb.t_s;
    return t;
}

static void se_destroy(void *ctx)
{
    SpecEng *s = ctx;
    gsl_rng_free(s->rng);
    if (s->cfg.has_draft && s->cfg.draft.destroy) s->cfg.draft.destroy(s->cfg.draft.ctx);
    free(s->buf);
    free(s);
}

int spec_policy_new(const SpecEngineCfg *cfg, SpecPolicy *out, Err *e)
{
    const SpecCfg *list[2] = {&cfg->dflt, NULL};
    for (int i = 0; list[i]; i++)
        if (list[i]->enabled && (list[i]->draft_len < 1 || list[i]->draft_len > SPEC_M_MAX))
            return err_set(e, "speculation.draft_len: got %u, expected 1..%d", list[i]->draft_len, SPEC_M_MAX);
    SpecEng *s = xcalloc(1, sizeof *s);
    s->cfg = *cfg;
    s->rng = rng_stream(cfg->seed, RNG_STREAM_SPEC);
    *out = (SpecPolicy){.ctx = s, .draft_len = se_draft_len, .accepted = se_accepted, .draft_cost_s = se_draft_cost,
                        .destroy = se_destroy};
    return 0;
}
