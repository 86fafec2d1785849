/*
 * gen_closed.h -- a closed loop: N clients, each sending its next request
 * when its previous one finishes (plus a think time); how concurrency
 * benchmarks (--max-concurrency, aiperf --concurrency) run.
 *
 *   {"kind": "closed_loop", "clients": 8, "count": 400, "think_ms": 0 | {dist},
 *    "start_ms": 0, "prompt_tokens": ..., "output_tokens": ..., tenant/class/mix}
 *
 * count is the total; request i belongs to client i mod clients (round
 * robin).  Each client's first request arrives at start_ms, each later one
 * is triggered by the client's previous request (Request.triggered,
 * next_req, think_ns).
 */
#ifndef SERVESIM_GEN_CLOSED_H
#define SERVESIM_GEN_CLOSED_H

#include "workload.h"

int gen_closed_build(const cJSON *wj, const char *where, const char *base_dir, uint64_t seed, Workload *w, Err *e);

#endif
