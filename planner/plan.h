/*
 * plan.h -- the capacity planner: which deployment serves this traffic
 * within these SLOs at the lowest cost per good token?
 *
 * A plan file (README "servesim plan"):
 *   {"name", "description",
 *    "base": {scenario keys every candidate starts from},
 *    "model": NAME (the same as base.model),
 *    "traffic": a scenario workload, optionally with "scale": k (a trace
 *               or list k times as fast; a generator's rate_per_s x k),
 *    "slo": {"ttft_ms", "tpot_ms", ..., "percentile", "attainment"},
 *    "candidates": [{"name", scenario keys: hardware, tp, engine,
 *                    scheduler, kv, speculation, disagg, price, ...}],
 *    "router": how a fleet routes (default least_requests),
 *    "search": {"seeds", "requests", "max_replicas", "tolerance"},
 *    "pareto_latency": "ttft" (default) | "tpot" | "e2e", "seed"}
 * A candidate's key replaces the base's whole; a candidate naming an
 * "engine" and no "scheduler" runs the engine's own scheduler.
 *
 * For each candidate, one par_map job (so candidates spread over cores or
 * MPI ranks): memory first (weights / tp + the runtime reserve must leave
 * room for KV on every GPU; if not it is infeasible and says why), then
 * the largest rate one replica sustains with the SLO verdict passing on
 * every seed (doubling or halving from the target rate to a bracket, then
 * bisection to `tolerance`, on the first `requests` requests of the
 * traffic), then replicas = ceil(target / that rate), confirmed by running
 * the whole fleet behind its router on the whole traffic: down while one
 * fewer still passes, up until one passes.  A disaggregated candidate's
 * "replica" is its whole prefill + decode group.
 *
 * The result ranks feasible candidates by $ per 1M good output tokens of
 * the confirmed fleet: the cheapest is recommended, every other says why
 * it lost, the Pareto frontier of that cost against p99 latency is
 * listed, and a candidate whose runs priced iterations outside its
 * calibrated profile's grid carries a warning.
 *
 * Each candidate's verdict carries its engine's measured error band
 * (errband.h): "passes" when every latency check of the confirmed fleet
 * still holds at the band's high end (value / max(1 + bias - mape, 0.05);
 * TTFT checks the TTFT band, TPOT and max ITL the TPOT band, E2E the larger
 * factor), "passes within the model's error" when it holds only at the
 * predicted value, "fails" when the candidate is infeasible.  The bands are
 * of mean TTFT and TPOT, so for a percentile this is an approximation; the
 * fleet is sized on the predicted values whatever the verdict.
 */
#ifndef SERVESIM_PLAN_H
#define SERVESIM_PLAN_H

#include <stdio.h>

#include <cjson/cJSON.h>

#include "par.h"

typedef struct PlanOpts {
    ParOpts par;
    double margin;               /* size every fleet for margin x the traffic (0 or 1: as given; plan --margin) */
    const char *emit_dir;        /* plan --emit DIR: each feasible candidate's scenario and launch commands */
    void (*phase)(void *ctx, const char *label);
    void *phase_ctx;
} PlanOpts;

/* {"plan", "name", "traffic", "slo", "candidates": [...], "recommended",
 * "pareto", ...}; NULL + e on bad input. */
cJSON *plan_run(const char *text, const char *name, const PlanOpts *o, Err *e);
void plan_print(FILE *f, const cJSON *out);

#endif
