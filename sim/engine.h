/*
 * engine.h -- one replica's iteration loop (SPEC section 2).
 *
 * The engine owns the requests' run-time state, the waiting queue, the
 * running list, the event queue and the iteration plan.  It never knows
 * which scheduler, KV policy or cost model it runs: those are the
 * interfaces of policy.h.
 *
 * Loop: pop the earliest event and every other event at the same
 * nanosecond (arrivals and the end of an iteration at one instant are all
 * visible to the boundary); if the replica is not busy, run a boundary:
 * the scheduler builds the batch, the cost model prices it, and the end of
 * the iteration is scheduled.  At the end every item advances: prefill
 * chunks add to kv_len, an item that samples emits a token at that instant,
 * a request with all its tokens finishes and frees its KV.
 */
#ifndef SERVESIM_ENGINE_H
#define SERVESIM_ENGINE_H

#include "evq.h"
#include "policy.h"
#include "qsketch.h"
#include "slots.h"

typedef enum { QUEUE_FCFS = 0, QUEUE_PRIORITY, QUEUE_EDF } EngineQueueOrder;

/* Event kinds on the queue: arg is the request (arrival) or the replica
 * (iteration end). */
enum {
    ENGINE_EV_ARRIVAL = 1,
    ENGINE_EV_ITER_END = 2,
    ENGINE_EV_CANCEL = 4, /* arg: the request */
    ENGINE_EV_FRONT = 8,  /* arg: the request; a serial front end hands it to the scheduler */
    ENGINE_EV_FOLLOW = 16 /* arg: a streamed chain (slots.h); its next request arrives */
};

/* A benchmark client's warm-up barrier (aiperf, vLLM's benchmark): the
 * measured phase starts when every warm-up response has arrived.  Requests
 * with barrier_member set count `left` down as they finish or are
 * rejected; when it reaches 0, every request in waiters[] arrives (its
 * think_ns later).  One barrier is shared by all replicas of a cluster. */
/* A request preempted this many times stops the run with an error: a
 * scheduler (a Lua policy, typically) that preempts and re-admits the same
 * request at every boundary would otherwise keep the engine going forever
 * (fuzz/hangs/lua_preempt_livelock: 232,843 preemptions in 4 s of wall
 * time).  The built-in schedulers preempt a request only when the KV pool
 * is exhausted, and each re-admission makes progress (tests/hostile's
 * sc_vllm_swap_tiny.json once spun inside the vllm scheduler's own loop,
 * fixed in sim/sched.c); about 2 s of wall time at the livelock's rate. */
#define ENGINE_MAX_PREEMPTIONS 100000u
/* The same engine-wide (issue 35): a policy that preempts everything and
 * re-admits a different request each time keeps every request under the
 * cap above (about 10^9 boundaries for 10^4 requests).  A run stops once
 * its preemptions pass ENGINE_MAX_PREEMPTIONS + this many per unit of
 * progress (engine.c engine_progress: a token decoded, a prompt token fed
 * and kept, a request done).  The built-in schedulers preempt at most a
 * few times per token they emit under the tightest KV pool of the tests. */
#define ENGINE_PREEMPTIONS_PER_PROGRESS 1000u

typedef struct EngineBarrier {
    uint32_t left;
    const uint32_t *waiters;
    uint32_t n_waiters;
} EngineBarrier;

typedef struct EngineConfig {
    Scheduler sched;      /* the engine takes ownership of all three */
    KvPolicy kv;
    CostModel cost;
    MetricsSink sink;     /* optional observers (all entries may be NULL) */
    SpecPolicy spec;      /* speculative decoding (the engine owns it) */
    CostModel profile_cost; /* not owned: the unwrapped roofline, asked how often it extrapolated */
    int has_spec;
    uint32_t block_tokens;/* the KV pool's block size (schedulers' watermark arithmetic) */
    double kv_bytes_per_token;
    int preempt_swap;     /* 1: preemption moves KV to host memory instead of dropping it */
    double swap_bw_bytes_per_s; /* host link, per direction */
    int queue_order;      /* EngineQueueOrder: how arrivals are placed in the waiting queue */
    /* Disaggregated prefill: when a request's prefill completes, the engine
     * emits its first token and hands it to handoff() instead of decoding;
     * it keeps the KV until the cluster calls engine_release_handoff. */
    int prefill_only;
    void (*handoff)(void *ctx, uint32_t req, int64_t now_ns);
    void *handoff_ctx;
    /* Disaggregated decode replica: an incoming request was admitted (its
     * blocks reserved here); the transfer may start. */
    void (*on_incoming_admit)(void *ctx, uint32_t req, int64_t now_ns);
    void *incoming_ctx;
    uint32_t max_context; /* reject requests longer than this (0 = no limit) */
    int keep_token_times; /* record every token's emission time (per slot, slots.h) */
    int keep_iterations;  /* record one IterRecord per iteration (grows with the run: for an array's) */
    EngineBarrier *barrier; /* optional, not owned (shared by a cluster's replicas) */
    int64_t trigger_delay_ns; /* added to every triggered request's think time (client overheads) */
    /* A serial front end (engine profile "front_end"): every arriving
     * request first passes one server, in order of arrival, for
     * fe_serial_ns (HTTP, tokenisation: the serving process's one event
     * loop); each decode token the replica emits costs that server
     * fe_token_ns (detokenisation, streaming), which delays the requests
     * behind it but not the token.  fe_serial 0: none. */
    int fe_serial;
    int64_t fe_serial_ns;
    double fe_token_ns;
    double fe_prompt_token_ns;  /* the turn's time per prompt token (tokenisation) */
    BatchHook hooks[ENGINE_HOOKS_MAX]; /* LoRA adapters, weight offload (owned; applied in order) */
    uint32_t n_hooks;
    /* Compressed KV transfers (swap): fraction of the bytes sent and the
     * decompression rate; 0 = off (offload.h offload_kv_transfer_s) */
    double kv_xfer_ratio, kv_xfer_dec_bytes_per_s;
    /* The host prepares iteration n + 1 while the GPU runs n (the engine
     * profile's overlap_scheduler): a request cancelled at a boundary was
     * already in the iteration launched there, so its blocks return to the
     * pool only when that iteration ends (engine_cancel). */
    int cancel_lag;
    int no_fast_path;     /* 1: every iteration through the scheduler (the decode fast path off) */
} EngineConfig;

typedef struct IterRecord {
    int64_t t_start_ns;
    int64_t dur_ns;
    uint32_t n_prefill, n_decode;
    uint64_t new_tokens;
    uint64_t prefill_tokens;     /* of new_tokens, those in prefill chunks */
    uint64_t kv_used_blocks;
    uint32_t running, waiting;
    double flops, bytes;
} IterRecord;

typedef struct EngineStats {
    uint64_t iterations;
    uint64_t batch_items;        /* request-iterations: the sum of the batch sizes */
    int64_t busy_ns;             /* sum of iteration durations */
    int64_t t_first_arrival_ns;
    int64_t t_last_event_ns;
    uint32_t peak_running;
    uint32_t peak_waiting;
    uint64_t kv_total_blocks;
    uint64_t kv_peak_used_blocks;
    double kv_block_ns;          /* integral of used blocks over busy time */
    double running_ns, waiting_ns; /* integrals of the running and waiting counts over busy time */
    uint64_t preemptions;
    uint64_t recomputed_tokens;
    uint64_t swapped_tokens;     /* KV tokens moved to host memory by swap preemption */
    uint64_t spec_rounds, spec_drafted, spec_accepted, spec_emitted;
    double spec_draft_s;         /* time added for drafting */
    double spec_verify_s;        /* duration of iterations with verify rows (drafting excluded) */
    uint32_t replicas;           /* aggregated statistics: how many engines (0 or 1 = one) */
    double swap_s;               /* transfer time added to iterations by swapping */
    uint64_t prefill_tokens;     /* fed in prefill chunks (recomputes included) */
    uint64_t decode_tokens;
    uint64_t finished, rejected;
    uint64_t cancelled;          /* requests the client cancelled (engine_cancel) */
    double flops, bytes;         /* totals from the cost model */
    double t_gemm_s, t_attn_s, t_lm_head_s, t_comm_s, t_overhead_s;
    uint64_t cost_queries, cost_outside; /* profile extrapolation (cost_extrapolation) */
    double cost_worst_ratio;
    char cost_worst[160];
    int has_kv_stats;            /* the KV policy reports prefix-cache statistics */
    KvStats kv;                  /* filled at the end of the run */
    HookStats hooks;             /* adapters and weight offload (policy.h BatchHook) */
    uint64_t fast_iterations;    /* of iterations, those the decode fast path advanced (engine_set_fast_path) */
} EngineStats;

/* The engine has one path (issue 36): it pulls each request from a source
 * when the previous one arrives, so only the requests in flight are held;
 * a request that has left (finished, rejected or cancelled) is checked
 * (engine_check_invariants), handed to retire at the next event boundary,
 * and its slot reused.  Memory is proportional to the peak of requests in
 * flight, not to the stream's length.
 *
 * engine_new runs a caller's array (reqarray.h): reqs sorted by arrival
 * (ties keep their order; triggered requests, branches and barrier
 * waiters anywhere), their run-time fields reset now and each written back
 * as it leaves (token times, with cfg->keep_token_times, in
 * engine_token_times by Request.token_off).  The engine keeps a pointer:
 * reqs must outlive it. */
Engine *engine_new(Request *reqs, uint32_t n, EngineConfig *cfg, Err *e);
/* A stream (issue 16): pull (1 = one in *r, request_init()ed and filled;
 * 0 = no more; -1 = an error in *e) and retire are the pool's (slots.h).
 * Requests must come sorted by arrival and stand alone (no triggers,
 * branches or barrier); an id pull leaves in r->id (up to 63 characters)
 * is copied, else the id is the position in the stream ("0", "1", ...),
 * as a materialised workload's; r->seq is that position.  With
 * cfg->keep_token_times each slot keeps its request's token times, handed
 * to retire as tt[0 .. generated) (else tt is NULL; ITL:
 * engine_set_itl_acc); memory follows the tokens of the requests in
 * flight. */
Engine *engine_new_stream(EngineConfig *cfg, SlotsPull pull, void *pull_ctx, SlotsRetire retire, void *retire_ctx,
                          Err *e);
/* A streaming replica of a cluster: its requests live in slots, the pool
 * its cluster shares among its replicas and pulls from (slots.h; not
 * owned).  The cluster calls engine_stream_sync on every replica after each
 * slots_pull (the pool may have grown) and engine_stream_retire at each
 * event boundary (the requests this replica finished or rejected go back
 * to the pool). */
Engine *engine_new_shared(EngineConfig *cfg, Slots *slots, Err *e);
void engine_stream_sync(Engine *eng);
int engine_stream_retire(Engine *eng, Err *e);
uint64_t engine_stream_pulled(const Engine *eng); /* requests taken from the stream */
uint32_t engine_live(const Engine *eng);          /* request records held now */
uint32_t engine_live_peak(const Engine *eng);     /* their peak over the run */
Slots *engine_stream_slots(Engine *eng);           /* a streaming engine's pool (slots.h) */
uint32_t engine_slots(const Engine *eng);         /* slots allocated (>= the peak, < 2x it + 1024) */
void engine_free(Engine *eng);
int engine_run(Engine *eng, Err *e);

/* Several replicas on one clock (a cluster): each engine is attached to the
 * cluster's queue; the cluster pops events, routes arrivals with a Router
 * and engine_enqueue, passes ENGINE_EV_ITER_END to engine_iter_end of the
 * replica in ev.arg, and after draining all events of one instant calls
 * engine_poll(now) on every replica.  engine_run is exactly that loop for one
 * replica and its own pool. */
void engine_attach(Engine *eng, EventQueue *q, uint32_t replica);
void engine_enqueue(Engine *eng, uint32_t req, int64_t now_ns);
void engine_iter_end(Engine *eng, int64_t now_ns);
int engine_poll(Engine *eng, int64_t now_ns, Err *e);
int engine_busy(const Engine *eng);
/* At the end of a run: gathers the plug-ins' counters (prefix cache, cost
 * extrapolation) into the statistics, and fails unless every block went
 * back to the pool and nothing runs (called by every engine_run). */
int engine_check_drained(Engine *eng, Err *e);
/* The invariants every run must end with (issue 15), checked by engine_run
 * and cluster_run: requests conserved (the finished and rejected counts
 * match the requests' states, every other one unfinished or never
 * arrived), no request emitted more tokens than asked, and each request's
 * clock monotonic (arrival <= first scheduling <= token times, in order,
 * <= finish).  token_times may be NULL (not kept).  A violation fails
 * naming the request, the time and the invariant. */
int engine_check_invariants(const Request *reqs, uint32_t n, const int64_t *token_times, const EngineStats *st,
                            Err *e);
const KvPolicy *engine_kv(const Engine *eng);
/* The cluster's side of a disaggregated handoff: the KV transfer is done,
 * the prefill replica frees its copy. */
void engine_release_handoff(Engine *eng, uint32_t req);
/* Makes this a disaggregated prefill replica. */
void engine_set_handoff(Engine *eng, void (*fn)(void *ctx, uint32_t req, int64_t now_ns), void *ctx);
/* Makes this a disaggregated decode replica: fn runs when an incoming
 * request is admitted; engine_unblock lets it run once its KV landed. */
void engine_set_incoming(Engine *eng, void (*fn)(void *ctx, uint32_t req, int64_t now_ns), void *ctx);
void engine_unblock(Engine *eng, uint32_t req);
/* Streams every inter-token gap (ns) into acc as tokens are emitted (not
 * owned; a cluster's replicas share one): ITL statistics without a
 * per-token record.  NULL stops it. */
void engine_set_itl_acc(Engine *eng, StatAcc *acc);
/* Lock-stepped replicas (an attention-DP group, cluster.c): with defer on,
 * an iteration engine_poll launches does not schedule its own end;
 * engine_pending_ns is its own duration (0 when none was launched) and
 * engine_end_at ends it at t_end_ns instead (the group's step), the
 * replica counted busy until then. */
void engine_defer_end(Engine *eng, int on);
int64_t engine_pending_ns(const Engine *eng);
void engine_end_at(Engine *eng, int64_t t_end_ns);
/* The client cancels request req at now_ns (an ENGINE_EV_CANCEL event,
 * pushed when the request arrives with cancel_after_ns > 0).  Queued: it
 * leaves the queue now.  Running while an iteration is in flight: the
 * engine sees the cancel at the next boundary (the iteration's end), when
 * the client's call returns (t_cancel_ns) and the request stops producing
 * tokens; its blocks go back to the pool at that boundary, or with
 * cancel_lag at the end of the iteration launched there (which still reads
 * them).  Running on an idle replica: at once.  A finished or rejected
 * request ignores it.  Its pending parallel-sampling branches are cancelled
 * with it; the request it triggers (next turn, next closed-loop request)
 * arrives as after a completion. */
void engine_cancel(Engine *eng, uint32_t req, int64_t now_ns);
/* The decode fast path (issue 16): when the scheduler's plan is a pure
 * continuation (every running request one decode token; the scheduler
 * says it would build the same plan again: Scheduler.steady) and nothing
 * observes single tokens, the engine advances iterations without calling
 * the scheduler or touching each request: each is priced from the batch's
 * sums (CostModel.decode_time), its gaps go to the ITL accumulator at
 * once, and only requests crossing a KV block boundary or finishing are
 * touched; request state is brought up to date when the run ends.  A run
 * ends before the next event (arrival, cancel), when a request finishes
 * with others waiting, when the pool could run short, or when nothing
 * runs.  The results are the slow path's, bit for bit (tests/test_fast.c).
 * on = 0 turns it off for this engine (a cluster of several replicas, or
 * --no-fast-path); engine_fast_path_default sets it for engines created
 * later in this process. */
void engine_set_fast_path(Engine *eng, int on);
void engine_fast_path_default(int on);
void engine_load(const Engine *eng, ReplicaLoad *out);

const EngineStats *engine_stats(const Engine *eng);
/* engine_new's: every token's emission time, indexed by Request.token_off
 * + k; NULL when keep_token_times was 0 (or for a stream: its retire gets
 * them). */
const int64_t *engine_token_times(const Engine *eng);
const IterRecord *engine_iterations(const Engine *eng, uint64_t *n);

#endif
