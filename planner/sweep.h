/*
 * sweep.h -- a scenario over arrival rates and seeds: completion
 * throughput, goodput, SLO attainment and latency percentiles at each
 * rate, their mean and 95% confidence interval over seeds, and the knee.
 *
 * Rates: the scenario's workload is rescaled by rewriting its JSON -- a
 * trace or request list gets "rate_per_s" (the time scale that makes its
 * mean rate, (n - 1) / (last - first arrival), equal the rate), a
 * generator its "rate_per_s" (poisson, gamma, constant, diurnal: the
 * mean; onoff: the rate while ON; sessions: sessions per second).  A
 * closed loop has no arrival rate and a piecewise generator several: both
 * are refused.  Seeds: the scenario's seed, seed + 1, ... (--seeds N).
 *
 * Statistics over seeds: the mean, and the half-width of its 95%
 * confidence interval t(0.975, n - 1) x s / sqrt(n) (GSL's t
 * distribution; null for one seed).
 *
 * The knee: (1) the rate of maximum goodput -- the best grid rate, then a
 * golden-section search over its two neighbours (in log rate, 8 steps);
 * (2) the largest rate whose mean attainment stays >= the target -- the
 * last grid rate that meets it and the next one, which fails, narrowed by
 * bisection (geometric midpoints) until the two are within 1%.  Both
 * report the best rate evaluated, grid or search.
 *
 * The scenario's engine's measured error band (errband.h) rides along:
 * the TTFT and TPOT percentiles' means carry the interval it gives them.
 *
 * Every simulation is a job of par.h, so the output is the same bytes
 * however many processes ran it.
 */
#ifndef SERVESIM_SWEEP_H
#define SERVESIM_SWEEP_H

#include <stdio.h>

#include <cjson/cJSON.h>

#include "errband.h"
#include "par.h"

#define SWEEP_SEEDS_MAX 64
#define SWEEP_RATES_MAX 256
#define SWEEP_LAT_METRICS 4      /* the SLO's latency metrics, SLO_TTFT .. SLO_E2E (metrics.h) */

/* One simulation: the scenario at one rate and seed. */
typedef struct SweepRun {
    double rate_per_s;
    double seed;                 /* as a double: JSON carries it exactly up to 2^53 */
    uint32_t requests, finished, rejected, rejected_kv; /* rejected_kv: can never fit the KV pool */
    double window_s;
    double completion_rps, goodput_rps, attainment;
    double output_tps, good_output_tps;
    double ttft_s[3], tpot_s[3], e2e_s[3]; /* p50, p90, p99 (NaN: no value) */
    double usd;                  /* cost of the window */
    int verdict;                 /* the SLO verdict: 1 pass, 0 fail, -1 no target */
    char miss[200];              /* the first failed check in words ("" if none) */
    double cost_queries, cost_outside, cost_worst_ratio; /* the cost model's extrapolation */
    char cost_worst[160];
    /* The tightest latency check of each metric (SLO_TTFT, SLO_TPOT,
     * SLO_ITL_MAX, SLO_E2E): the one with the largest achieved / target
     * over the SLO classes (NaN target: no check of that metric; INFINITY
     * achieved: the percentile fell on unfinished requests).  The plan's
     * verdict scales them to the engine's error band. */
    double tight_achieved_s[SWEEP_LAT_METRICS], tight_target_s[SWEEP_LAT_METRICS], tight_pct[SWEEP_LAT_METRICS];
} SweepRun;

typedef struct SweepStat {
    double mean, ci95;           /* NaN when no value / fewer than two */
    uint32_t n;
} SweepStat;

/* One rate over every seed. */
typedef struct SweepAgg {
    double rate_per_s;
    uint32_t seeds, passes;      /* seeds whose verdict passed */
    SweepStat completion, goodput, attainment, output_tps, good_output_tps, usd, window_s;
    SweepStat ttft[3], tpot[3], e2e[3];
    SweepRun runs[SWEEP_SEEDS_MAX];
} SweepAgg;

/* The scenario a sweep (or a plan candidate) scales. */
typedef struct SweepBase {
    cJSON *root;                 /* owned */
    char name[512];              /* the file name in messages; relative paths resolve next to it */
    double seed0;
    double own_rate;             /* the workload's own mean arrival rate */
    double target;               /* slo.attainment (0: none) */
    int has_window;              /* metrics.window_ms: token times must be kept */
    ErrBand band;                /* the engine's measured error (errband.h; present = 0: none, and why) */
} SweepBase;

/* Parses and checks text (loading it once), and finds its own rate. */
int sweep_base_init(SweepBase *b, const char *text, const char *name, Err *e);
/* The same from a tree (taken over). */
int sweep_base_from_json(SweepBase *b, cJSON *root, const char *name, Err *e);
void sweep_base_free(SweepBase *b);

/* Sets workload w's arrival rate (see above); where names w. */
int sweep_set_rate(cJSON *w, const char *where, double rate_per_s, Err *e);
/* The scenario's text at a rate (rate <= 0: as given), with per-token
 * records off unless a fixed window needs them. */
char *sweep_text(const SweepBase *b, double rate_per_s, Err *e);
/* Runs one scenario text with a seed. */
int sweep_run_text(const char *text, const char *name, double seed, double rate_per_s, SweepRun *out, Err *e);

cJSON *sweep_run_to_json(const SweepRun *r);
int sweep_run_from_json(const cJSON *o, SweepRun *r, Err *e);
/* Mean and 95% CI of the finite values among v[0..n). */
void sweep_stat(const double *v, uint32_t n, SweepStat *s);
void sweep_aggregate(SweepAgg *a);   /* from a->runs[0..seeds) */
/* One rate's point; with a band (NULL: none), the TTFT and TPOT
 * percentiles' {mean, ci95} also carry band_low and band_high, the mean's
 * interval under the engine's measured error. */
cJSON *sweep_agg_json(const SweepAgg *a, const ErrBand *band);

/* Evaluates rates over seeds as par_map jobs and keeps every evaluation. */
typedef struct SweepEval {
    const SweepBase *base;
    uint32_t seeds;
    ParOpts par;
    void (*phase)(void *ctx, const char *label); /* optional: names the next batch of jobs */
    void *phase_ctx;
    SweepAgg *hist;              /* every rate evaluated, in order */
    uint32_t n_hist, cap_hist;
} SweepEval;

int sweep_eval(SweepEval *ev, const double *rates, uint32_t n, SweepAgg **out, Err *e);
void sweep_eval_free(SweepEval *ev);
/* Narrows [lo, hi] (lo meets pred, hi does not) by geometric bisection
 * until hi / lo <= 1 + tol or max_steps; *best = the largest rate found
 * that meets pred. */
typedef int (*SweepPred)(const SweepAgg *a, void *ctx);
int sweep_bisect(SweepEval *ev, double lo, double hi, double tol, int max_steps, SweepPred pred, void *pctx,
                 double *best, Err *e);

typedef struct SweepOpts {
    const double *rates;         /* the grid (or auto_rates) */
    uint32_t n_rates;
    int auto_rates;
    uint32_t seeds;              /* >= 1 */
    double target;               /* attainment target; 0: the SLO's, else 0.9 */
    ParOpts par;
    void (*phase)(void *ctx, const char *label);
    void *phase_ctx;
} SweepOpts;

/* The whole sweep: {"scenario", "name", "seeds", "attainment_target",
 * "points": [...], "knee": {...}} (README "servesim sweep"). */
cJSON *sweep_run(const char *text, const char *name, const SweepOpts *o, Err *e);
/* One row per rate evaluated (grid and searches), means and CIs. */
int sweep_write_csv(const cJSON *out, const char *path, Err *e);
void sweep_print(FILE *f, const cJSON *out);

#endif
