/*
 * gen_dist.h -- the distributions generators draw from: token lengths and
 * think times.
 *
 * A length is an integer or an object:
 *   {"dist": "fixed", "value": n}
 *   {"dist": "uniform", "min": a, "max": b}            integers in [a, b]
 *   {"dist": "normal", "mean": m, "std": s, "min", "max"}
 *   {"dist": "lognormal", "median": m, "sigma": s, "min", "max"}
 *   {"dist": "empirical", "trace": PATH, "format": F, "field": "prompt"|"output", "min", "max"}
 * rounded to integers and clipped to [min, max] (default [1, 1e7]).  The
 * empirical distribution draws a record of the trace uniformly (its zeros
 * become min).
 *
 * A think time (ms) is a number or an object:
 *   {"dist": "fixed", "value": ms}   {"dist": "uniform", "min": a, "max": b}
 *   {"dist": "exponential", "mean": ms}   {"dist": "lognormal", "median": ms, "sigma": s}
 */
#ifndef SERVESIM_GEN_DIST_H
#define SERVESIM_GEN_DIST_H

#include <cjson/cJSON.h>
#include <gsl/gsl_rng.h>

#include "common.h"

typedef enum { GEN_LEN_FIXED = 0, GEN_LEN_UNIFORM, GEN_LEN_NORMAL, GEN_LEN_LOGNORMAL, GEN_LEN_EMPIRICAL } GenLenKind;

typedef struct LengthDist {
    int kind;            /* GenLenKind */
    double a, b;         /* value | min,max | mean,std | median,sigma */
    double lo, hi;       /* clip */
    uint32_t *values;    /* empirical: the trace's values (owned) */
    uint32_t n_values;
} LengthDist;

/* base_dir resolves an empirical trace's relative path (see workload.h). */
int gen_dist_len_parse(const cJSON *v, const char *where, const char *base_dir, LengthDist *d, Err *e);
/* The key `key` of obj as a length (an error names it when required and missing). */
int gen_dist_len_key(const cJSON *obj, const char *key, const char *where, const char *base_dir, int required,
                     LengthDist *d, Err *e);
uint32_t gen_dist_len_draw(const LengthDist *d, gsl_rng *r);
void gen_dist_len_free(LengthDist *d);

typedef enum { GEN_TIME_FIXED = 0, GEN_TIME_UNIFORM, GEN_TIME_EXPONENTIAL, GEN_TIME_LOGNORMAL } GenTimeKind;

typedef struct TimeDist {
    int kind;            /* GenTimeKind */
    double a, b;         /* ms: value | min,max | mean | median,sigma */
} TimeDist;

/* Absent key: fixed 0. */
int gen_dist_time_key(const cJSON *obj, const char *key, const char *where, TimeDist *d, Err *e);
/* Draws nothing for a fixed time. */
int64_t gen_dist_time_draw_ns(const TimeDist *d, gsl_rng *r);

#endif
