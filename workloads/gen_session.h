/*
 * gen_session.h -- multi-turn conversations and agent loops.
 *
 *   {"kind": "sessions", "sessions": 100, "turns": 5 | {dist},
 *    "rate_per_s": 0.5, "start_ms": 0,
 *    "first_prompt_tokens": ..., "new_tokens_per_turn": ..., "output_tokens": ...,
 *    "think_ms": 2000 | {dist}, "system_prompt_tokens": 0, "max_prompt_tokens": N,
 *    tenant/class/priority/deadline_ms/mix (one pick per session)}
 *
 * Sessions start as a Poisson process.  Turn 1's prompt is the system
 * prompt plus first_prompt_tokens; turn k's prompt is turn k-1's prompt +
 * its answer + new_tokens_per_turn, and turn k arrives think_ms after turn
 * k-1 finishes (triggered).  A session ends after its turns, or before a
 * turn whose prompt would pass max_prompt_tokens.  Token ids come from the
 * session (workload.h): turn k's ids start with turn k-1's prompt ids and
 * answer ids, and the system prompt's ids are shared by every session.
 */
#ifndef SERVESIM_GEN_SESSION_H
#define SERVESIM_GEN_SESSION_H

#include "workload.h"

int gen_session_build(const cJSON *wj, const char *where, const char *base_dir, uint64_t seed, Workload *w, Err *e);

#endif
