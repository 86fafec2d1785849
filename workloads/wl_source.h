/*
 * wl_source.h -- the table entry a workload source registers with the
 * dispatcher (workload.c): what selects it and how it builds.
 *
 * A source is selected by a key of the workload object ("requests",
 * "trace") or by a value of its "kind"; the dispatcher initialises the
 * workload with that key or kind as Workload.kind, calls build, then
 * finishes the workload.  build appends requests through the builder of
 * workload.h (wl_build.c) and returns 0, or -1 with a message naming the
 * key path, the bad value and what was expected.  It never calls back into
 * the dispatcher.
 *
 * Sources: wl_source_list and wl_source_trace (trace_load.c),
 * wl_source_open (gen_open.c), wl_source_closed (gen_closed.c),
 * wl_source_sessions (gen_session.c).
 */
#ifndef SERVESIM_WL_SOURCE_H
#define SERVESIM_WL_SOURCE_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "common.h"

/* Defined in workload.h.  Named, not included: this header is what the
 * dispatcher includes, and the sources include workload.h themselves. */
typedef struct Workload Workload;

typedef struct WlSource {
    const char *key;            /* selects the source when the object has this key; NULL: "kind" does */
    const char *key_hint;       /* what the key holds, for the message listing the forms ("PATH") */
    const char *const *kinds;   /* NULL-terminated "kind" values that select it; NULL with a key */
    /* Appends the source's requests to a workload_init()ed workload;
     * relative paths resolve against base_dir (see workload_resolve). */
    int (*build)(const cJSON *wj, const char *where, const char *base_dir, uint64_t seed, Workload *w, Err *e);
} WlSource;

/* A trace file streamed a request at a time (trace_load.c; workload.h's
 * workload_stream_open): r->id points into the stream until the next call.
 * NULL with *whole set and no error: only reading it whole orders it (an
 * unsorted format, a block bootstrap; gen_open.c ListStream). */
typedef struct TraceStream TraceStream;
typedef struct Request Request;
TraceStream *trace_stream_open(const cJSON *wj, const char *where, const char *base_dir, uint64_t seed,
                               Workload *names, int *whole, Err *e);
int trace_stream_next(TraceStream *ts, Request *r, Err *e);
int trace_stream_may_cancel(const TraceStream *ts);
void trace_stream_free(TraceStream *ts);

/* Sessions and agent tasks streamed (gen_session.c; workload.h's
 * workload_stream_follow): first turns in arrival order, each later turn
 * when its predecessor has left. */
typedef struct SessStream SessStream;
SessStream *sess_stream_open(const cJSON *wj, const char *where, const char *base_dir, uint64_t seed,
                             Workload *names, Err *e);
int sess_stream_next(SessStream *ss, Request *r, Err *e);
int sess_stream_follow(SessStream *ss, const Request *pred, int64_t *think_ns);
int sess_stream_pull_follow(SessStream *ss, uint32_t chain, Request *r, Err *e);
void sess_stream_flat(SessStream *ss);
void sess_stream_jitter(SessStream *ss, uint64_t seed, double jitter_s, double jitter_per_token_s);
void sess_stream_free(SessStream *ss);
int sess_stream_may_cancel(const SessStream *ss);

/* A closed loop streamed (gen_closed.c): the clients' first requests,
 * then each client's next one when its previous one has left. */
typedef struct ClosedStream ClosedStream;
ClosedStream *closed_stream_open(const cJSON *wj, const char *where, const char *base_dir, uint64_t seed,
                                 Workload *names, Err *e);
int closed_stream_next(ClosedStream *cs, Request *r, Err *e);
int closed_stream_follow(ClosedStream *cs, const Request *pred, int64_t *think_ns);
int closed_stream_pull_follow(ClosedStream *cs, uint32_t chain, Request *r, Err *e);
void closed_stream_flat(ClosedStream *cs);
void closed_stream_client(ClosedStream *cs, uint64_t seed, uint32_t end_spread, double jitter_s,
                          double jitter_per_token_s);
uint32_t closed_stream_barrier(const ClosedStream *cs, uint32_t *first_waiter, uint32_t *n_waiters);
void closed_stream_free(ClosedStream *cs);
int closed_stream_may_cancel(const ClosedStream *cs);

extern const WlSource wl_source_list;     /* {"requests": [...], ...transforms} */
extern const WlSource wl_source_trace;    /* {"trace": PATH, "format": F, ...transforms} */
extern const WlSource wl_source_open;     /* poisson, gamma, constant, piecewise, diurnal, onoff */
extern const WlSource wl_source_closed;   /* closed_loop */
extern const WlSource wl_source_sessions; /* sessions */

#endif
