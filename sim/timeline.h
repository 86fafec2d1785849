/*
 * timeline.h -- Chrome trace-event export (opens in Perfetto and
 * chrome://tracing).
 *
 * A MetricsSink that records every iteration and the requests in it, then
 * writes {"traceEvents": [...], "displayTimeUnit": "ms"}: process 1 is the
 * engine with one lane per replica (one complete "X" event per iteration), process 2
 * holds one lane per request with its queueing span (arrival to first
 * admission), one event per prefill chunk or decode step it took part in,
 * and an instant event when it was rejected.  ts and dur are microseconds.
 * The engine process also carries counter tracks: "KV blocks used" and
 * "tokens per iteration" (prefill, decode) sampled at every iteration, and
 * "requests" (running, waiting) at every change.
 * Within a lane no two events overlap: iterations never overlap, and a
 * request's queueing ends where its first iteration starts.
 */
#ifndef SERVESIM_TIMELINE_H
#define SERVESIM_TIMELINE_H

#include "policy.h"

typedef struct Timeline Timeline;

Timeline *timeline_new(void);
MetricsSink timeline_sink(Timeline *tl);
/* tail, when not NULL, is a sink the timeline passes every call on to. */
void timeline_chain(Timeline *tl, const MetricsSink *tail);
/* Narrowing (for large runs): only spans that meet [t0_ns, t1_ns], and
 * request lanes for the first n requests only (0 = all). */
void timeline_set_window(Timeline *tl, int64_t t0_ns, int64_t t1_ns);
void timeline_set_max_requests(Timeline *tl, uint32_t n);
/* Request lanes for the requests named in `ids` (comma-separated request
 * ids of reqs[0..n)) only; an id no request has, or an empty list, is an
 * error that names it. */
int timeline_set_ids(Timeline *tl, const char *ids, const Request *reqs, uint32_t n, Err *e);
/* No request lanes at all: the engine's iterations and the counter tracks. */
void timeline_set_engine_only(Timeline *tl);
/* Streams the trace to path (atomically: a temporary file, then rename). */
int timeline_write(const Timeline *tl, const char *path, const Request *reqs, uint32_t n, Err *e);
/* The trace of a replayed schedule, which has no iterations: no engine
 * process, one lane per request (process 2, "requests") with a "to first
 * token" span from arrival to token 0, a "token K" span from token K-1 to
 * token K, and a "rejected" instant (at its time, or its arrival when the
 * schedule gives none) for a rejected request.  token_times is the
 * replay's array (reqs[i].token_off indexes it). */
int timeline_write_replay(const char *path, const Request *reqs, uint32_t n, const int64_t *token_times, Err *e);
void timeline_free(Timeline *tl);

#endif
