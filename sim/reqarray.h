/*
 * reqarray.h -- a request array run on the streamed engine (issue 36).
 *
 * The engine has one path: it takes its requests from a source into a
 * pool of slots (slots.h) and hands each back when it leaves.  A caller
 * that holds every request in an array -- engine_new's, a workload loaded
 * whole (the tests, `servesim workload`) -- gives it to a ReqArray, the
 * source over it: the untriggered requests are pulled in array order, an
 * "after" chain's next link (next_req) and a warm-up barrier's waiter are
 * made when the engine follows them, a parallel-sampling branch
 * (next_branch) when the engine forks it; each request is written back
 * into its place as it is retired (its run-time fields; its identity,
 * links and token_off stay the array's), its token times at token_off of
 * the array's own record of them when they are kept.  Memory is the
 * array's, as the caller's own; the engine's follows the requests in
 * flight.
 *
 * Chains are named by their source (Request.chain): request i's follow-up
 * is chain i; barrier waiter w is chain n + w (reqarray_waiter).
 */
#ifndef SERVESIM_REQARRAY_H
#define SERVESIM_REQARRAY_H

#include <stdint.h>

#include "common.h"
#include "request.h"
#include "slots.h"

typedef struct ReqArray ReqArray;

/* reqs[0 .. n): its untriggered requests sorted by arrival (ties keep
 * their order); every record's run-time fields are reset now (a request
 * that never arrives stays as it is after request_reset) and token_off set
 * (its first token's place in reqarray_token_times).  keep_tt: record
 * every token's time.  NULL + e when the requests are not sorted. */
ReqArray *reqarray_new(Request *reqs, uint32_t n, int keep_tt, Err *e);
void reqarray_free(ReqArray *a);
/* The pool an engine (or a cluster's replicas) pulls from; owned by a. */
Slots *reqarray_slots(ReqArray *a);
/* Every token's emission time by Request.token_off, filled as requests
 * are retired; NULL without keep_tt. */
int64_t *reqarray_token_times(ReqArray *a);
/* The chain that makes barrier waiter w (an EngineBarrier's waiters[]). */
uint32_t reqarray_waiter(uint32_t n, uint32_t w);

#endif
