/*
 * engine_int.h -- what engine.c (the event loop's steps, the decode group
 * and fast path) and engine_life.c (creation, the run, accessors, the
 * end-of-run checks) share: the replica's state.  Not part of the API:
 * nothing outside the engine's files includes it, and they include it
 * after engine.h (its types; engine.h is not included here, so that the
 * two engine modules do not include each other).
 */
#ifndef SERVESIM_ENGINE_INT_H
#define SERVESIM_ENGINE_INT_H

#include "evq.h"
#include "reqarray.h"
#include "slots.h"

#define NO_POS UINT32_MAX

struct Engine {
    EngineConfig cfg;
    Request *reqs;         /* the pool's records (slots_reqs), indexed by slot */
    uint32_t n_reqs;       /* slots: every per-slot array's size */

    EventQueue own_evq;    /* used when running alone */
    EventQueue *evq;       /* the queue this replica's iteration ends go to */
    uint32_t replica;      /* this replica's id in EV_ITER_END events */
    int64_t now_ns;
    int busy;
    /* the serial front end (EngineConfig.fe_serial_ns): when it is free
     * of the work queued so far, the last send it took, and the decode
     * tokens counted then (the tokens streamed since are its work too) */
    int64_t fe_free_ns, fe_last_ns;
    uint64_t fe_tokens;

    uint32_t *waiting; /* ring of request indices */
    uint32_t w_head, w_len;
    uint32_t *running;
    uint32_t n_running;

    BatchPlan plan;
    double extra_s;        /* swap transfers to add to the next iteration */
    uint32_t livelocked;   /* a request over ENGINE_MAX_PREEMPTIONS (index + 1), or 0 */
    uint8_t livelock_wide; /* ... stopped by the engine-wide rule (ENGINE_PREEMPTIONS_PER_PROGRESS) */
    uint32_t *plan_pos;
    uint64_t admit_counter;
    uint32_t *order_tmp;   /* a batch hook's new waiting order (sized once, only with hooks) */

    StatAcc *itl_acc;      /* optional: inter-token gaps streamed as emitted */
    /* The requests: reqs[] are the slots of a pool (slots.h), this
     * engine's own or its cluster's; the per-slot arrays below (waiting,
     * running, plan, plan_pos, retiring) follow its size
     * (engine_stream_sync). */
    Slots *slots;
    int own_slots;         /* engine_new_stream: freed with the engine */
    ReqArray *array;       /* engine_new: the caller's array it runs (owned; its pool is slots) ... */
    Request *array_reqs;   /* ... the array, checked whole at the end */
    uint32_t array_n;
    int64_t **slot_tt;     /* report.token_times: the pool's per-slot token times, or NULL */
    uint32_t *retiring, n_retiring; /* slots whose requests left, retired at the next safe point */
    IterRecord *iters;
    uint64_t n_iters, cap_iters;
    EngineStats st;
    uint32_t *parked;      /* cancelled requests whose blocks the in-flight iteration reads */
    uint32_t n_cancel_pending; /* requests with cancel_pending set (never below the true count):
                                * the iteration end scans for them only when there are some */
    uint32_t n_parked;
    /* decode fast path (engine_set_fast_path) */
    int fast_off;          /* off for this engine */
    int fast_unsupported;  /* the cost model cannot price a decode batch from its sums */
    uint32_t *fb_idx;      /* running requests by block phase (fast_run), sized with running[] */
    uint32_t fb_cap;
    uint32_t *fb_start, *fb_cnt; /* per phase: first index in fb_idx, live requests */
    /* decode group (issue 16, chunked scheduler: Scheduler.schedule_rest):
     * every decoding running request is a member whose state advances
     * lazily -- a member's kv_len and generated are its values at group
     * step g_base[idx]; after g_S steps it has g_S - g_base[idx] more. */
    int g_on;              /* the group is formed */
    int g_planned;         /* its step g_S + 1 is in the plan being built or in flight */
    int g_dirty;           /* queue, running set or group changed since schedule_rest ran */
    int g_reform;          /* something the group does not follow happened: dissolve at the boundary */
    int g_mm_dirty;        /* g_min_off / g_max_off to take again */
    uint64_t g_S;          /* group steps done */
    uint32_t g_n;          /* members */
    uint32_t g_step_n;     /* members in the iteration in flight (0: none) */
    int64_t g_dur;         /* that iteration's duration */
    int64_t g_tlast;       /* the end of step g_S */
    int64_t g_sum_off, g_min_off, g_max_off; /* over members: kv_len - base */
    uint32_t g_cap;        /* per-slot arrays' size */
    uint8_t *g_mem;        /* per slot: a member */
    uint64_t *g_base, *g_fin; /* per slot: base step, the step of its last token */
    uint32_t *g_bpos;      /* per slot: position in its block-phase bucket */
    uint32_t *g_heap, g_heap_n; /* members by (g_fin, admit_seq): the next to finish first */
    uint32_t *g_gone, g_n_gone; /* running requests that finished since the last iteration end */
    uint8_t *g_gone_f;     /* per slot: in g_gone */
    uint32_t **g_bk, *g_bk_n, *g_bk_cap; /* per block phase: members needing a block when g_S % B is it */
    struct GStep { uint64_t step; int64_t dur; } *g_dq; /* step durations, decreasing: range maxima */
    uint32_t g_dq_head, g_dq_n, g_dq_cap;
    int defer_end;         /* engine_defer_end: a launched iteration's end is pushed by engine_end_at */
    int64_t pending_ns;    /* its own duration, until then */
};


#endif
