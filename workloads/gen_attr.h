/*
 * gen_attr.h -- the tenant, SLO class, priority and deadline a workload
 * source gives its requests, fixed or drawn from a weighted mix:
 *
 *   "tenant": "acme", "class": "chat", "priority": 1, "deadline_ms": 5000,
 *   "mix": [{"weight": 3, "class": "chat"},
 *           {"weight": 1, "class": "batch", "tenant": "b", "priority": -1,
 *            "deadline_ms": 60000, "prompt_tokens": ..., "output_tokens": ...}]
 *
 * A mix entry inherits what it leaves out from the top level; its
 * prompt_tokens/output_tokens (generators only) replace the generator's.
 * The pick draws from its own stream (WL_STREAM_MIX), so adding a mix
 * never moves arrivals or lengths.
 *
 * LoRA adapters (lora.h): "adapter": 3 gives every request adapter 3;
 * "adapters": {"count": 100, "zipf_s": 1.0} draws one per request (per
 * session for sessions) with P(k) proportional to 1 / k^s over 1 .. count,
 * from its own stream (WL_STREAM_ADAPTER); "base_share": f sends a
 * fraction f to the base model (adapter 0).
 *
 *   "cancel": {"fraction": 0.1, "after_ms": 500 | {dist}}
 *
 * makes each request, with probability fraction, carry cancel_after_ns
 * (the client cancels that long after the arrival; engine.h
 * engine_cancel); the coin and the delay draw from WL_STREAM_CANCEL.
 */
#ifndef SERVESIM_GEN_ATTR_H
#define SERVESIM_GEN_ATTR_H

#include <cjson/cJSON.h>
#include <gsl/gsl_randist.h>

#include "gen_dist.h"
#include "workload.h"

typedef struct GenMix {
    double weight;
    uint32_t tenant, cls;
    int32_t priority;
    int64_t deadline_ns;        /* after the arrival, -1 = none */
    int has_prompt, has_output;
    LengthDist prompt, output;
} GenMix;

typedef struct GenAttrs {
    uint32_t tenant, cls;       /* 0 = "default" */
    int32_t priority;
    int64_t deadline_ns;        /* -1 = none */
    GenMix *mix;
    uint32_t n_mix;
    gsl_ran_discrete_t *table;
    gsl_rng *r;
    uint32_t adapter;           /* fixed adapter, or the one drawn by the last pick */
    uint32_t n_adapters;        /* Zipf draw over 1 .. n_adapters (0 = none) */
    double base_share;          /* fraction of requests on the base model */
    gsl_ran_discrete_t *adapter_table;
    gsl_rng *ra;
    double cancel_fraction;     /* 0 = no "cancel" */
    TimeDist cancel_after;
    gsl_rng *rc;                /* WL_STREAM_CANCEL */
} GenAttrs;

/* jsonio_check_keys over the source's own keys plus tenant, class,
 * priority, deadline_ms, mix and cancel. */
int gen_attr_check_keys(const cJSON *obj, const char *where, const char *const *own, Err *e);
/* allow_lengths: mix entries may carry prompt_tokens/output_tokens. */
int gen_attr_parse(const cJSON *obj, const char *where, const char *base_dir, uint64_t seed, int allow_lengths,
                   Workload *w, GenAttrs *a, Err *e);
/* One mix entry (one draw), or NULL without a mix. */
const GenMix *gen_attr_pick(GenAttrs *a);
/* Sets request idx's tenant, class, priority and deadline from m (or the
 * top level when m is NULL), and draws its cancellation. */
/* "cancel": the next request's cancel delay (ns; its draws from
 * WL_STREAM_CANCEL, one request at a time in workload order), 0 = none. */
int64_t gen_attr_cancel(const GenAttrs *a);
void gen_attr_apply(const GenAttrs *a, const GenMix *m, Workload *w, uint32_t idx);
void gen_attr_free(GenAttrs *a);

#endif
