/*
 * spec.h -- speculative decoding (SPEC section 6): acceptance models, the
 * verifiers, the planning arithmetic, and the SpecPolicy the engine uses.
 *
 * A round proposes m draft tokens; the target model verifies all m + 1
 * positions in one iteration (an ITEM_VERIFY of m + 1 fed tokens); the
 * first rejected position ends the round, so with per-position acceptance
 * rates a_1..a_m the round emits N = 1 + (accepted drafts) tokens and
 * E[N] = 1 + a_1 + a_1 a_2 + ... + a_1...a_m (a single rate a: 1 + a + ...
 * + a^m).  KV is written for the m + 1 positions and rolled back to the
 * accepted length.  Draft methods and their costs:
 *   lookup       n-gram / context lookup on the host: draft_ms per
 *                iteration with verify rows, index_build_ms once per request
 *   parallel     one draft forward producing m tokens: draft_ms per iteration
 *   draft_model  a second model on the same GPU: m serial decode forwards per
 *                round and a prefill of every prompt, priced by the roofline;
 *                its KV shares the pool (bytes per token add up)
 */
#ifndef SERVESIM_SPEC_H
#define SERVESIM_SPEC_H

#include <gsl/gsl_rng.h>

#include "cost.h"
#include "policy.h"

#define SPEC_M_MAX 64

typedef enum { SPEC_LOOKUP = 0, SPEC_PARALLEL, SPEC_DRAFT_MODEL } SpecMethod;
extern const char *const spec_method_names[];

typedef struct SpecCfg {
    int enabled;
    SpecMethod method;
    uint32_t draft_len;              /* m */
    uint32_t n_rates;                /* 0: use counts; 1: one rate for every position; else per position */
    double rates[SPEC_M_MAX];
    uint32_t n_counts;               /* an empirical distribution of accepted drafts, P(k), k = 0.. */
    double counts[SPEC_M_MAX + 1];
    double draft_s;                  /* per iteration with verify rows (lookup, parallel) */
    double index_build_s;            /* lookup: once per request */
    int expectation;                 /* emit E[N] per round (fractions carried) instead of sampling */
    uint32_t max_running;            /* no speculation while more requests run (0 = always) */
} SpecCfg;

/* E[N] = expected tokens per round for draft length m. */
double spec_expected_tokens(const SpecCfg *c, uint32_t m);
/* Samples the accepted draft count (0..m) of one round. */
uint32_t spec_sample_accepted(const SpecCfg *c, uint32_t m, gsl_rng *r);
/* ms per output token for a round costing verify_s + draft_s. */
double spec_time_per_token(const SpecCfg *c, uint32_t m, double round_s);

/* The verifiers over a k-symbol vocabulary.  Exact rejection sampling:
 * propose x ~ q, accept with min(1, p(x)/q(x)), else draw from
 * normalize(max(p - q, 0)); the output follows p exactly.  The "resample-p"
 * rule (on rejection draw from p itself) is the classic mistake, kept to
 * show the bias.  *accepted says whether the proposal survived, *proposed
 * (may be NULL) which symbol the draft proposed. */
size_t spec_verify_exact(const double *p, const double *q, size_t k, gsl_rng *r, int *accepted, size_t *proposed);
size_t spec_verify_resample_p(const double *p, const double *q, size_t k, gsl_rng *r, int *accepted,
                              size_t *proposed);
/* Greedy verification: the accepted prefix length of draft against the
 * target's argmax tokens (first mismatch stops). */
uint32_t spec_verify_greedy(const uint32_t *draft, const uint32_t *target, uint32_t m);
/* The residual distribution normalize(max(p - q, 0)) into out; returns its
 * mass before normalising (0: p == q, accept always). */
double spec_residual(const double *p, const double *q, size_t k, double *out);

/* The engine-side policy: draft length per request, accepted counts, draft
 * costs.  draft (optional) prices a draft model's forwards. */
typedef struct SpecEngineCfg {
    SpecCfg dflt;
    const SpecCfg *by_cls;           /* optional, indexed by Request.cls */
    uint32_t n_cls;
    uint64_t seed;
    CostModel draft;                 /* draft_model method: a roofline of the draft model (owned) */
    int has_draft;
} SpecEngineCfg;

int spec_policy_new(const SpecEngineCfg *cfg, SpecPolicy *out, Err *e);

#endif
