/*
 * workload.h -- the requests a scenario feeds the engine.
 *
 * A workload is either an explicit list ({"requests": [...]}) or a
 * generator ({"kind": "poisson", "rate_per_s", "count", "prompt_tokens",
 * "output_tokens"}).  A length is an integer or a distribution object:
 *   {"dist": "fixed", "value": n}
 *   {"dist": "uniform", "min": a, "max": b}            integers in [a, b]
 *   {"dist": "normal", "mean": m, "std": s, "min", "max"}
 *   {"dist": "lognormal", "median": m, "sigma": s, "min", "max"}
 * rounded to integers and clipped to [min, max] (default [1, 1e6]).
 * Arrivals, prompt lengths and output lengths draw from separate streams of
 * the scenario seed.  Requests come out sorted by arrival (stable).
 */
#ifndef SERVESIM_WORKLOAD_H
#define SERVESIM_WORKLOAD_H

#include <cjson/cJSON.h>

#include "common.h"
#include "request.h"

typedef struct Workload {
    Request *reqs;
    uint32_t n;
    char *names;        /* arena holding every request id */
    char kind[32];      /* "requests", "poisson" */
} Workload;

int workload_from_json(const cJSON *w, const char *where, uint64_t seed, Workload *out, Err *e);
void workload_free(Workload *w);

/* Length distributions, exposed for other generators. */
typedef struct LengthDist {
    int kind;           /* 0 fixed, 1 uniform, 2 normal, 3 lognormal */
    double a, b;        /* value | min,max | mean,std | median,sigma */
    double lo, hi;      /* clip */
} LengthDist;

int lengthdist_from_json(const cJSON *v, const char *where, LengthDist *d, Err *e);

#endif
