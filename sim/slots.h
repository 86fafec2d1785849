/*
 * slots.h -- a streamed run's request records (issues 16, 36): a pool of
 * slots that requests are pulled into from a source as simulated time
 * reaches them and that they give back once they have left and been
 * retired.  One engine owns its pool (engine_new_stream); a cluster's
 * replicas share one (engine_new_shared), so that a request keeps its slot
 * from its arrival to its retirement whichever replica holds it -- a
 * disaggregated handoff moves only the slot index.
 *
 * Invariants: a slot is free or holds exactly one request (pulled, not yet
 * retired); the pool grows by doubling, only inside slots_pull, when no
 * Request pointer is held (every reference is by slot index), so an engine
 * sharing the pool refreshes its per-slot arrays after each pull
 * (engine_stream_sync).  Memory follows the requests in flight.
 */
#ifndef SERVESIM_SLOTS_H
#define SERVESIM_SLOTS_H

#include <stdint.h>

#include "common.h"
#include "request.h"

typedef struct Slots Slots;

/* pull: 1 = one request in *r (request_init()ed and filled), 0 = the end,
 * -1 = an error in *e; retire: a request that left, with its token times
 * tt[0 .. generated) when keep_tt (else NULL). */
typedef int (*SlotsPull)(void *ctx, Request *r, Err *e);
typedef void (*SlotsRetire)(void *ctx, const Request *r, const int64_t *tt);

Slots *slots_new(SlotsPull pull, void *pull_ctx, SlotsRetire retire, void *retire_ctx, int keep_tt);

/* Chains (sessions, closed loops): a request whose Request.chain is not
 * REQ_NONE is followed by another once it leaves.  follow (at the leave:
 * no slot is taken, so no Request pointer moves) says whether one comes
 * and its think time; pull_follow fills it in when its arrival comes (an
 * event: the pool may grow then).  With them the source sets Request.seq
 * (its position in the materialised workload) and ids itself. */
typedef int (*SlotsFollow)(void *ctx, const Request *pred, int64_t *think_ns);
typedef int (*SlotsPullFollow)(void *ctx, uint32_t chain, Request *r, Err *e);
void slots_set_follow(Slots *p, SlotsFollow follow, SlotsPullFollow pull_follow);
/* 1 and the follow-up's think time when pred's chain continues (the
 * engine schedules its arrival), else 0. */
int slots_follow(Slots *p, const Request *pred, int64_t *think_ns);
/* The follow-up of chain into a free slot (*slot), arriving at t_ns; 1, or
 * 0 on an error (slots_error). */
int slots_pull_follow(Slots *p, uint32_t chain, int64_t t_ns, uint32_t *slot);
void slots_free(Slots *p);
/* Parallel sampling (Request.n_samples > 1): when such a request's prefill
 * ends (or it is rejected or cancelled before), the engine makes its
 * n_samples - 1 branches with slots_branch, which asks the source for
 * branch k (1 ..) of parent into *r: its record as the materialised
 * workload has it (workload.c expand_samples), seq its index there.  The
 * pool keeps a free slot for every branch not yet made from the moment
 * its parent is pulled, so slots_branch never grows it (the engine holds
 * Request pointers then). */
typedef int (*SlotsBranch)(void *ctx, const Request *parent, uint32_t k, Request *r, Err *e);
void slots_set_branch(Slots *p, SlotsBranch branch);
/* Branch k of the request in slot parent into a free slot (*slot); 1, or
 * 0 on an error (slots_error). */
int slots_branch(Slots *p, uint32_t parent, uint32_t k, uint32_t *slot);
/* Arrivals (a streamed run's metrics rank requests by them): arrive is
 * handed each request as it arrives, in simulated-time order -- a pulled
 * one when its arrival event comes (the engine or cluster calls
 * slots_arrive), a follow-up as slots_pull_follow makes it. */
typedef void (*SlotsArrive)(void *ctx, Request *r);
void slots_set_arrive(Slots *p, SlotsArrive arrive, void *ctx);
void slots_arrive(Slots *p, uint32_t k);
/* The next request into a free slot (*slot): its id copied (the source's,
 * up to 63 characters, or its position in the stream), its prefix-cache
 * content copied, its run-time fields reset, seq its position.  1, or 0 at
 * the end of the stream or on an error (slots_error). */
int slots_pull(Slots *p, uint32_t *slot);
/* The request in slot k has left (its clocks checked by the engine that
 * held it): it is handed to retire and its slot is free again -- or, with
 * its cancel event still queued (Request.cancel_queued), once that comes
 * (slots_cancel_event), so that the event never meets another request. */
void slots_retire(Slots *p, uint32_t k);
/* A request's ENGINE_EV_CANCEL for slot k came: 1 when the slot was
 * kept for it (its request retired before; the slot is free now), 0 when
 * the request is still held (the engine cancels it). */
int slots_cancel_event(Slots *p, uint32_t k);
/* -1 with the stream's error in *e when pulling failed, else 0. */
int slots_error(const Slots *p, Err *e);

Request *slots_reqs(Slots *p);        /* the records, valid until the next slots_pull */
uint32_t slots_cap(const Slots *p);   /* slots allocated */
int64_t **slots_tt(Slots *p);         /* per slot: its token times (NULL without keep_tt) */
uint64_t slots_pulled(const Slots *p);
uint32_t slots_live(const Slots *p);  /* requests held now */
uint32_t slots_peak(const Slots *p);  /* their peak over the run */

#endif
