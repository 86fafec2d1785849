/*
 * metrics.h -- per-request metrics and the run's summary (SPEC section 8).
 *
 * TTFT = first token - arrival; TPOT = (last - first) / (n_out - 1),
 * undefined (NaN here, null in JSON) when n_out = 1; E2E = last token -
 * arrival; queueing delay = first admission - arrival.  Statistics come from
 * GSL (mean, sd, quantiles with linear interpolation between order
 * statistics).  Throughput is over the drain window: first arrival to last
 * completion.  Goodput counts the requests that met every SLO that applies;
 * rejected requests count as misses.
 */
#ifndef SERVESIM_METRICS_H
#define SERVESIM_METRICS_H

#include "engine.h"
#include "scenario.h"

typedef struct Dist {
    uint32_t n;       /* requests the statistic covers */
    double mean, std, p50, p90, p95, p99, max;
} Dist;

typedef struct Summary {
    uint32_t requests, finished, rejected;
    Dist ttft_s, tpot_s, e2e_s, queue_s, itl_max_s;
    double window_s, t0_s, t1_s;
    uint64_t output_tokens, prompt_tokens;
    double output_tokens_per_s, total_tokens_per_s, requests_per_s;
    uint32_t good;
    double goodput_requests_per_s, goodput_output_tokens_per_s;
    double slo_attainment, ttft_attainment, tpot_attainment, e2e_attainment;
    uint32_t peak_running;
    uint64_t kv_total_blocks, kv_peak_used_blocks;
    double kv_mean_used_blocks;  /* time-weighted over busy time */
    uint64_t iterations, preemptions;
    double busy_s;
    double gpus, cost_usd, usd_per_1k_output_tokens, usd_per_good_request;
} Summary;

double metrics_tpot_s(const Request *r);  /* NaN when undefined */
/* 1 if r met every SLO that applies. */
int metrics_good(const Request *r, const Slo *slo);
void metrics_dist(double *v, uint32_t n, Dist *d); /* sorts v in place */
void metrics_summarize(const Scenario *s, const Engine *eng, Summary *out);

#endif
