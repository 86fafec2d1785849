/*
 * timeline.h -- Chrome trace-event export (opens in Perfetto and
 * chrome://tracing).
 *
 * {"traceEvents": [...], "displayTimeUnit": "ms"}: process 1 is the
 * engine with one lane per replica (one complete "X" event per iteration),
 * process 2 holds one lane per request with its queueing span (arrival to
 * first admission), one event per prefill chunk or decode step it took
 * part in, and an instant event when it was rejected or cancelled.  ts and
 * dur are microseconds.  The engine process also carries counter tracks:
 * "KV blocks used" and "tokens per iteration" (prefill, decode) sampled at
 * every iteration, and "requests" (running, waiting) at every change.
 * Within a lane no two events overlap: iterations never overlap, and a
 * request's queueing ends where its first iteration starts.
 *
 * A run's trace is written as the run goes (issue 36), in memory bounded
 * by the requests in flight: each iteration's events go to a temporary
 * file as it is priced (a MetricsSink), each request's lane name and
 * events to ordered writers (ordw.h) as it leaves, and its running/waiting
 * steps to a sort on disk (extsort.h); timeline_write puts the file
 * together in the order of the format.
 */
#ifndef SERVESIM_TIMELINE_H
#define SERVESIM_TIMELINE_H

#include "policy.h"
#include "slots.h"

typedef struct Timeline Timeline;

/* What a trace shows (for large runs): spans that meet [w0_ns, w1_ns]
 * (has_window), request lanes for the first max_requests requests (0:
 * all), for the requests at the workload positions lanes[0 .. n_lanes)
 * (sorted; NULL: all), or none (engine_only). */
typedef struct TimelineOpts {
    int has_window;
    int64_t w0_ns, w1_ns;
    uint32_t max_requests;
    const uint64_t *lanes;
    uint32_t n_lanes;
    int engine_only;
} TimelineOpts;

/* replicas: the deployment's (with more than one the counter tracks are
 * per replica).  mem_limit: the ordered writers' and the sort's memory
 * before they spill (0: their defaults).  NULL + e when a temporary file
 * cannot be made. */
Timeline *timeline_new(const TimelineOpts *o, uint32_t replicas, size_t mem_limit, Err *e);
/* The pool of request records the engines' plan items index (slots.h),
 * before the run. */
void timeline_set_pool(Timeline *tl, Slots *pool);
/* One iteration of replica `replica` (MetricsSink.on_iteration; the plan
 * lists every item: not plan_counts_only). */
void timeline_iteration(Timeline *tl, uint32_t replica, int64_t t_ns, int64_t dur_ns, const BatchPlan *plan,
                        uint64_t kv_used);
/* A request that left (finished, rejected or cancelled), as it is retired. */
void timeline_retire(Timeline *tl, const Request *r);
/* Writes the trace to path atomically; n_requests: the run's (every
 * workload position 0 .. n - 1 retired once). */
int timeline_write(Timeline *tl, const char *path, uint64_t n_requests, Err *e);
void timeline_free(Timeline *tl);

/* The trace of a replayed schedule, which has no iterations: no engine
 * process, one lane per request (process 2, "requests") with a "to first
 * token" span from arrival to token 0, a "token K" span from token K-1 to
 * token K, and a "rejected" instant (at its time, or its arrival when the
 * schedule gives none) for a rejected request.  token_times is the
 * replay's array (reqs[i].token_off indexes it). */
int timeline_write_replay(const char *path, const Request *reqs, uint32_t n, const int64_t *token_times, Err *e);

#endif
