/*
 * request.h -- one request's record and state machine.
 *
 *   PENDING --arrival--> QUEUED --admit--> RUNNING --last token--> FINISHED
 *                          ^  |               |
 *                          |  +--reject-------+--> REJECTED
 *                          +----preempt-------+
 *   QUEUED or RUNNING --cancel (cancel_after_ns)--> CANCELLED
 *
 * KV bookkeeping: kv_len is the number of tokens whose K/V exist.  The
 * request is "prefilling" while kv_len < prefill_target; the iteration whose
 * chunk brings kv_len to prefill_target emits a token.  Initially
 * prefill_target = prompt_tokens; a recompute preemption resets kv_len to 0
 * and sets prefill_target = prompt_tokens + generated (every token emitted so
 * far is fed again, the last one included, so the redo emits the next
 * token).  A decode step feeds one token over h = kv_len cached tokens; while
 * decoding kv_len == prompt_tokens + generated - 1.
 *
 * Plain data: schedulers and metrics read it directly.  Times are integer
 * nanoseconds of simulated time; -1 means "not yet".
 */
#ifndef SERVESIM_REQUEST_H
#define SERVESIM_REQUEST_H

#include <stdint.h>

#include "rng.h"

typedef enum {
    REQ_PENDING = 0, /* not yet arrived */
    REQ_QUEUED,      /* arrived, waiting for admission */
    REQ_RUNNING,     /* admitted: holds KV, gets prefill chunks or decodes */
    REQ_TRANSFER,    /* disaggregated: prefill done, KV moving to a decode replica */
    REQ_FINISHED,
    REQ_REJECTED,
    REQ_CANCELLED    /* the client cancelled it (cancel_after_ns) before its last token */
} ReqState;

typedef enum {
    REJECT_NONE = 0,
    REJECT_KV_TOO_SMALL, /* its reservation can never fit the pool */
    REJECT_CONTEXT,      /* prompt + output exceeds the model's context */
    REJECT_ADMISSION     /* refused by an admission-control policy */
} RejectReason;

typedef struct Request {
    const char *id;            /* owned by the workload's string arena */
    int64_t t_arrive_ns;
    uint32_t prompt_tokens;
    uint32_t output_tokens;    /* tokens the request will actually generate */
    uint32_t max_output_tokens;/* what the client asked for (reserve=max uses it) */
    uint32_t cls;              /* SLO class index (0 = default) */
    uint32_t tenant;           /* isolation boundary for the prefix cache (0 = default) */
    uint32_t adapter;          /* LoRA adapter id (lora.h): 0 = the base model, else 1 .. adapters */
    int32_t priority;          /* larger = more important (0 = default) */
    int8_t correct;            /* -1 unknown, 0 wrong, 1 correct (goodput's Q_i) */
    int64_t deadline_ns;       /* absolute completion deadline, -1 = none */
    int64_t deadline_after_ns; /* triggered requests: deadline after its arrival, -1 = none */
    /* Content for prefix caching, owned by the workload: token ids, or
     * block hashes of hash_block_tokens tokens each (Mooncake hash_ids). */
    const uint32_t *token_ids;
    uint32_t n_token_ids;
    /* Or synthetic ids (sessions, workloads/wl_build.c): with token_ids
     * NULL and synth_key != 0, id p < n_token_ids is request_token_id(r, p),
     * derived from (session, position) when asked and never stored; the
     * first synth_shared positions are the shared system prompt's. */
    uint32_t synth_shared;
    uint64_t synth_key;
    const uint64_t *hash_ids;
    uint32_t n_hash_ids;
    uint32_t hash_block_tokens;
    /* Closed loops and sessions: a request may arrive only when another
     * finishes.  A triggered request's t_arrive_ns is set by the engine to
     * its predecessor's completion (or rejection) + think_ns. */
    uint8_t triggered;         /* 1: arrival set by a predecessor (or a parallel-sampling branch) */
    uint16_t n_samples;        /* parallel sampling: n branches over one prompt (input; 0 or 1 = one) */
    uint32_t branch_of;        /* a branch: the request whose prefill it shares, or REQ_NONE */
    uint32_t next_branch;      /* the next branch of the same parent, or REQ_NONE; a streamed parent's
                                  first branch's seq until its branches are made (slots.h slots_branch;
                                  its branches' seqs follow it) */
    uint32_t next_req;         /* index of the request this one triggers, or REQ_NONE */
    int64_t think_ns;          /* for a triggered request: delay after the predecessor */
    /* A streamed chain (slots.h follow-ups: a session's turns, a closed-loop
     * client's requests): chain is the source's handle for what comes
     * next (REQ_NONE: nothing follows), task the chain's index among the
     * run's tasks (tasks.h; REQ_NONE: not a chain), task_link its position in it and task_last 1 on
     * its last link.  A materialised workload links by next_req instead. */
    uint32_t chain;
    uint32_t task;
    uint32_t task_link;        /* its position in the chain (0: the first) */
    uint8_t task_last;
    /* A benchmark's warm-up barrier (engine.h EngineBarrier): a member
     * counts the barrier down when it leaves; a waiter is a triggered
     * request with no predecessor that arrives think_ns after the last
     * member left. */
    uint8_t barrier_member;
    uint8_t barrier_waiter;
    /* Cancellation (engine.h engine_cancel): the client cancels
     * cancel_after_ns after the arrival (0 = never: a zeroed
     * record cancels nothing).  A queued request
     * leaves the queue at once; a running one at the next iteration
     * boundary (t_cancel_ns, when the client's cancel call returns), its
     * blocks going back to the pool when the iteration still reading them
     * ends (t_finish_ns). */
    int64_t cancel_after_ns;

    /* ---- engine state ---- (ordered by size: the record is 5 cache lines) */
    uint32_t idx;              /* this record's index in the engine's array */
    uint32_t prefix_hit_tokens;/* prompt tokens found in the prefix cache at first admission */
    uint64_t seq;              /* its position in the workload (a stream's pull order) */
    uint64_t arrive_rank;      /* a streamed chain's: requests arrived before its arrival time (metrics.h) */
    uint32_t spec_rounds;      /* speculative rounds verified */
    uint32_t spec_drafted;     /* draft tokens proposed */
    uint32_t spec_accepted;    /* draft tokens accepted */
    uint32_t replica;          /* the replica serving it (clusters) */
    double spec_credit;        /* expectation mode: fractional tokens carried between rounds */
    uint32_t src_replica;      /* disaggregated: the prefill replica holding the KV being sent */
    uint32_t kv_len;           /* tokens with K/V computed */
    uint32_t prefill_target;   /* kv_len at which the prefill phase ends */
    uint32_t generated;        /* output tokens emitted */
    uint32_t kv_blocks;        /* blocks held in its replica's KV pool (the engine's mirror of the
                                  policy's own count) */
    uint32_t preemptions;
    uint64_t admit_seq;        /* increasing admission counter (preemption picks the largest) */
    uint64_t recomputed_tokens;/* prefill tokens redone after preemption */

    int64_t t_first_sched_ns;  /* first admitted (queueing delay ends) */
    int64_t t_first_token_ns;
    int64_t t_last_token_ns;
    int64_t itl_max_ns;        /* largest gap between consecutive tokens */
    int64_t t_finish_ns;       /* last token, or rejection time */
    uint64_t token_off;        /* index of token 0's time in the engine's token-time array */
    int64_t t_cancel_ns;       /* cancelled: when the client's cancel call returned, else -1 */
    int64_t fe_wait_ns;        /* a serial front end held it this long after t_arrive_ns, its turn included
                                  (so in its TTFT, E2E and queueing time) */
    uint32_t cancel_blocks;    /* cancelled: KV blocks it held (freed at t_finish_ns) */
    uint8_t state;             /* ReqState */
    uint8_t reject_reason;     /* RejectReason */
    uint8_t swapped;           /* preempted by swapping: its KV waits in host memory */
    uint8_t incoming;          /* disaggregated: queued on a decode replica, its KV still on the prefill side */
    uint8_t blocked;           /* admitted, but its KV is in flight: not plannable until it lands */
    uint8_t cancel_pending;    /* the cancel came while an iteration was in flight */
    uint8_t fe_passed;         /* a serial front end (EngineConfig.fe_serial_ns) has taken it (fe_wait_ns) */
    uint8_t cancel_queued;     /* its ENGINE_EV_CANCEL is in the queue (a streamed slot waits for it) */
} Request;

#define REQ_NONE UINT32_MAX

/* Input defaults for a fresh record: no deadline, correctness unknown, no
 * successor.  Workload readers call it before filling a request. */
static inline void request_init(Request *r)
{
    *r = (Request){0};
    r->deadline_ns = -1;
    r->deadline_after_ns = -1;
    r->correct = -1;
    r->next_req = REQ_NONE;
    r->branch_of = REQ_NONE;
    r->next_branch = REQ_NONE;
    r->chain = REQ_NONE;
    r->task = REQ_NONE;
}

/* A request's run-time fields before it arrives (engine_new, slots_pull):
 * token_off is its first entry in a run's per-token record. */
static inline void request_reset(Request *r, uint32_t idx, uint64_t token_off)
{
    r->state = REQ_PENDING;
    r->reject_reason = REJECT_NONE;
    r->kv_len = 0;
    r->prefill_target = r->prompt_tokens;
    r->generated = 0;
    r->kv_blocks = 0;
    r->preemptions = 0;
    r->admit_seq = 0;
    r->recomputed_tokens = 0;
    r->t_first_sched_ns = r->t_first_token_ns = r->t_last_token_ns = r->t_finish_ns = -1;
    r->itl_max_ns = 0;
    r->token_off = token_off;
    r->idx = idx;
    r->prefix_hit_tokens = 0;
    r->spec_rounds = r->spec_drafted = r->spec_accepted = 0;
    r->spec_credit = 0;
    r->t_cancel_ns = -1;
    r->cancel_blocks = 0;
    r->cancel_pending = 0;
    r->fe_passed = 0;
    r->fe_wait_ns = 0;
    r->cancel_queued = 0;
}

/* The system prompt's key (every session's first synth_shared ids). */
#define REQ_SYNTH_SHARED_KEY 0x5EC0A7E5ULL

/* The request has token ids (stored or synthetic). */
static inline int request_has_ids(const Request *r)
{
    return (r->token_ids || r->synth_key) && r->n_token_ids;
}

/* Token id p (< n_token_ids) of a request with ids.  Synthetic: 31 bits of
 * a splitmix64 mix of the key and the position (rng_mix, sim/rng.c), so
 * different sessions share no prefix and one session's turns share theirs
 * exactly. */
static inline uint32_t request_token_id(const Request *r, uint32_t p)
{
    if (r->token_ids) return r->token_ids[p];
    return (uint32_t)(rng_mix(p < r->synth_shared ? REQ_SYNTH_SHARED_KEY : r->synth_key, p) >> 33);
}

/* Prompt (or recompute) tokens still to prefill; 0 once decoding, also for
 * a request swapped back in with its KV past the prompt. */
static inline uint32_t request_prefill_left(const Request *r)
{
    return r->kv_len >= r->prefill_target ? 0 : r->prefill_target - r->kv_len;
}

static inline int request_decoding(const Request *r)
{
    return r->kv_len >= r->prefill_target && r->generated > 0;
}

#endif
