/*
 * sched.h -- the built-in schedulers of SPEC section 3.
 *
 *   static      request-level batching: when nothing runs, admit up to
 *               max_running FCFS, prefill them together, decode every
 *               unfinished member each iteration; the next batch forms
 *               only when all members are done.  max_running = 1 is the
 *               serial schedule.
 *   continuous  iteration-level (Orca): one decode token for every running
 *               request, then admit FCFS while fewer than max_running run
 *               and KV allows; each newcomer's whole prefill joins this
 *               iteration.
 *   chunked     Sarathi-Serve with a token budget B per iteration: decode
 *               tokens first (they count against B), then prefill chunks of
 *               admitted requests in admission order, each min(remaining
 *               prompt, remaining budget), then admit FCFS while fewer than
 *               max_running run and budget remains, each taking a chunk.
 */
#ifndef SERVESIM_SCHED_H
#define SERVESIM_SCHED_H

#include "policy.h"

typedef enum { SCHED_STATIC = 0, SCHED_CONTINUOUS, SCHED_CHUNKED, SCHED_KIND_COUNT } SchedKind;

typedef struct SchedConfig {
    SchedKind kind;
    uint32_t max_running;  /* requests admitted at once */
    uint32_t token_budget; /* chunked: new tokens per iteration */
} SchedConfig;

int sched_new(const SchedConfig *cfg, Scheduler *out, Err *e);
const char *sched_kind_name(SchedKind k);
extern const char *const sched_kind_names[];

#endif
