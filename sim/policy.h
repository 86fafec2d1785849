/*
 * policy.h -- the plug-in interfaces: scheduler, KV policy, cost model.
 *
 * Each plug-in is a table of function pointers plus a context pointer (the
 * ggml backend pattern), so a Lua-backed policy plugs in exactly like a C
 * one.  The engine owns the requests and the queues; a scheduler sees them
 * through the eng_* calls below and builds a BatchPlan, one item per request
 * in the next iteration.
 *
 * Optional entries may be NULL; each says so.
 */
#ifndef SERVESIM_POLICY_H
#define SERVESIM_POLICY_H

#include <stdint.h>

#include "common.h"
#include "request.h"

typedef struct Engine Engine;

/* ---------------------------------------------------------------- batch */

typedef enum {
    ITEM_PREFILL = 0, /* a chunk of the prompt (or of a recompute) */
    ITEM_DECODE,      /* one fed token */
    ITEM_VERIFY       /* speculative verify: m+1 fed tokens (speculation issue) */
} ItemKind;

/* One request's share of an iteration.  pairs(c, h) = c*h + c(c+1)/2. */
typedef struct BatchItem {
    uint32_t req;      /* request index */
    uint32_t c;        /* new tokens fed this iteration */
    uint32_t h;        /* tokens already cached before it */
    uint8_t kind;      /* ItemKind */
    uint8_t samples;   /* 1 if the item ends with a sampled position (emits a token) */
} BatchItem;

typedef struct BatchPlan {
    BatchItem *items;
    uint32_t n, cap;
    uint64_t new_tokens; /* sum of c */
    uint32_t n_prefill, n_decode;
} BatchPlan;

static inline double batch_pairs(uint32_t c, uint32_t h)
{
    return (double)c * (double)h + (double)c * ((double)c + 1.0) / 2.0;
}

/* ------------------------------------------------------------ scheduler */

typedef struct Scheduler {
    const char *name;
    void *ctx;
    /* Builds the next iteration's batch into the engine's plan using the
     * eng_* calls.  An empty plan means "nothing to run now". */
    int (*schedule)(void *ctx, Engine *eng, Err *e);
    /* Optional: called when a request arrives (already QUEUED); may call
     * eng_reject (admission control). */
    void (*on_arrival)(void *ctx, Engine *eng, uint32_t req);
    /* Optional. */
    void (*destroy)(void *ctx);
    /* 1: schedule() is a pure function of the queues, the running requests
     * and the pool, whose admissions only get harder as free blocks drop:
     * after it built a pure continuation (every running request one decode
     * token, in running order; nothing admitted, rejected or preempted), it
     * builds the same again while no request arrives or leaves with one
     * waiting and free blocks do not grow.  The engine's decode fast path
     * (issue 16) then advances such iterations without calling it. */
    int steady;
    /* Optional (issue 16's decode group): schedule() without its first
     * step, when that step would give each of the n_group decoding running
     * requests one decode token first (the engine accounts for them): plans
     * the rest (prefill chunks, admissions) with the budget they leave.
     * 1 = it cannot (the group is larger than the budget; nothing done). */
    int (*schedule_rest)(void *ctx, Engine *eng, uint32_t n_group, Err *e);
} Scheduler;

/* --------------------------------------------------------------- KV */

typedef enum { KV_RESERVE_MAX = 0, KV_RESERVE_FINAL, KV_RESERVE_ON_DEMAND } KvReserve;

typedef struct KvStats {
    uint64_t lookup_tokens;   /* prompt tokens looked up in the prefix cache (first admissions) */
    uint64_t hit_tokens;      /* of those, found cached and not recomputed */
    uint64_t evictions;       /* cached blocks dropped to make room */
    uint64_t cow_copies;      /* shared partial blocks copied before a branch appended */
    uint64_t cached_blocks;   /* blocks holding reusable content now */
} KvStats;

typedef struct KvPolicy {
    const char *name;
    void *ctx;
    /* Reserves what admission requires (per the reservation mode) for r,
     * whose first chunk feeds first_chunk tokens.  A prefix cache may set
     * r->kv_len to the prompt tokens it already holds (the prefill then
     * skips them).  1 = reserved, 0 = does not fit now (nothing changed). */
    int (*admit)(void *ctx, Request *r, uint32_t first_chunk);
    /* Makes room for kv_len tokens (on-demand growth; a no-op for
     * reservation modes).  1 = ok, 0 = pool exhausted. */
    int (*grow)(void *ctx, Request *r, uint32_t kv_len);
    /* Optional: r's kv_len advanced at the end of an iteration; the blocks
     * it completed become reusable now, not before. */
    void (*commit)(void *ctx, Request *r);
    /* Returns everything r holds to the pool. */
    void (*release)(void *ctx, Request *r);
    /* Blocks r holds in this pool (each pool keeps its own count; the
     * engine mirrors it into Request.kv_blocks for views and reports). */
    uint32_t (*blocks_of)(void *ctx, const Request *r);
    /* Blocks r needs at its largest (the reservation, or for on-demand the
     * final length) -- more than the pool's total means it can never
     * complete, and the engine rejects it on arrival. */
    uint64_t (*need_blocks)(void *ctx, const Request *r);
    /* Blocks referenced by requests now (cached-but-unused ones excluded). */
    uint64_t (*used_blocks)(void *ctx);
    uint64_t (*total_blocks)(void *ctx);
    /* Optional: child starts from parent's KV (parallel sampling).  A
     * sharing policy references parent's blocks (copy-on-write later); a
     * counting pool takes a copy.  1 = done, 0 = no room. */
    int (*fork)(void *ctx, Request *parent, Request *child);
    /* Optional: a sticky failure of a plug-in inside the policy (a Lua
     * eviction rule), checked by the engine at every boundary; "" = none. */
    const char *(*error)(void *ctx);
    /* Optional. */
    void (*stats)(void *ctx, KvStats *out);
    void (*destroy)(void *ctx);
    /* Optional (0 = unknown): grow(r, len) takes one block exactly when
     * len - 1 is a multiple of this and changes nothing else, and commit is
     * NULL -- a plain counting pool; the engine's decode fast path then grows
     * only the requests crossing a block boundary. */
    uint32_t grow_block_tokens;
} KvPolicy;

/* ----------------------------------------------------------- cost model */

typedef struct CostBreakdown {
    double t_s;          /* iteration duration */
    double gemm_s;       /* dense projections + MLP */
    double attn_s;       /* attention (prefill and decode) */
    double lm_head_s;
    double comm_s;       /* tensor-parallel all-reduce */
    double overhead_s;   /* fixed per-iteration engine overhead */
    double flops;        /* total FLOPs of the iteration */
    double bytes;        /* total bytes moved to/from device memory */
} CostBreakdown;

/* A decode-only batch by its sums (issue 16's fast path): n items of one
 * new token each (ITEM_DECODE, c = 1, samples = 1) over sum_h cached tokens
 * in all, min_h and max_h the shortest and longest. */
typedef struct CostDecodeAgg {
    uint32_t n;
    uint64_t sum_h;
    uint32_t min_h, max_h;
} CostDecodeAgg;

typedef struct CostModel {
    const char *name;
    void *ctx;
    int (*iter_time)(void *ctx, const BatchItem *items, uint32_t n, CostBreakdown *out);
    void (*destroy)(void *ctx);
    /* Optional: iter_time of the batch made of the decode items agg
     * describes followed by items[0 .. n) (prefill chunks only), identical
     * to the last bit (and with the same side effects: extrapolation
     * counters) to iter_time over any such batch.  0 = priced, 1 = this
     * model cannot price it from sums exactly (the engine prices the items),
     * -1 = error. */
    int (*decode_time)(void *ctx, const CostDecodeAgg *agg, const BatchItem *items, uint32_t n, CostBreakdown *out);
} CostModel;

/* ---------------------------------------------------------- metrics sink */

/* Observes the run as it happens (per-iteration CSV, trace events, live
 * plots).  Every entry is optional; the engine calls them in simulated-time
 * order.  A sink must not change engine state. */
struct IterRecord;
typedef struct MetricsSink {
    void *ctx;
    /* An iteration of replica `replica` was priced and starts now (t_ns);
     * plan is its batch. */
    void (*on_iteration)(void *ctx, uint32_t replica, int64_t t_ns, int64_t dur_ns, const BatchPlan *plan,
                         const CostBreakdown *cb, uint64_t kv_used_blocks);
    /* Request r emitted its k-th token (0-based) at t_ns. */
    void (*on_token)(void *ctx, const Request *r, uint32_t k, int64_t t_ns);
    /* Request r left the system (finished or rejected). */
    void (*on_done)(void *ctx, const Request *r);
    /* 1: on_iteration reads only plan's counts (n, n_prefill, n_decode,
     * new_tokens), never its items -- during the engine's decode fast path
     * the items' h lag.  With 0 an on_iteration sink turns the fast path off. */
    int plan_counts_only;
    /* Optional: each iteration's record (engine.h IterRecord), as
     * report.iterations keeps it, made whether or not the engine keeps
     * them (a streamed run writes --iterations-csv from it). */
    void (*on_record)(void *ctx, const struct IterRecord *it);
} MetricsSink;

/* --------------------------------------------- interfaces of later parts */

/* Speculative decoding (SPEC section 6): per round, how many draft tokens a
 * request proposes, how many the verifier accepts, and what drafting costs.
 * A speculating request's step becomes an ITEM_VERIFY of draft_len + 1 fed
 * tokens; KV is written for all and rolled back to the accepted length. */
typedef struct SpecPolicy {
    void *ctx;
    /* Draft tokens r proposes this round (0: a plain decode), given the
     * requests running now. */
    uint32_t (*draft_len)(void *ctx, const Request *r, uint32_t running);
    /* Draft tokens accepted in r's round of m (0..m); the round emits that
     * many + 1, capped by the tokens r still has to produce. */
    uint32_t (*accepted)(void *ctx, Request *r, uint32_t m);
    /* Time the iteration spends drafting (host lookups, draft forwards,
     * index builds) on top of the target model's cost. */
    double (*draft_cost_s)(void *ctx, const BatchPlan *plan, const Request *reqs);
    void (*destroy)(void *ctx);
} SpecPolicy;

/* Cluster routing: picks the replica for an arriving request from the
 * replicas' load (outstanding requests and tokens).  The cluster owns one
 * Engine per replica. */
typedef struct ReplicaLoad {
    uint32_t running, waiting;
    uint64_t outstanding_tokens;
    uint64_t kv_used_blocks, kv_total_blocks;
} ReplicaLoad;

typedef struct Router {
    void *ctx;
    uint32_t (*route)(void *ctx, const Request *r, const ReplicaLoad *loads, uint32_t n_replicas);
    void (*destroy)(void *ctx);
} Router;

/* ---------------------------------------------------------- batch hooks */

/* Resources beside the KV pool that gate admissions and add time to an
 * iteration: LoRA adapters on the GPU (lora.h), layer weights streamed from
 * host memory (offload.h).  Their counters, summed over replicas. */
typedef struct HookStats {
    int has_lora, has_offload;
    uint64_t adapter_lookups;   /* requests that reached their first iteration with an adapter */
    uint64_t adapter_hits;      /* of those, whose adapter was already on the GPU */
    uint64_t adapter_loads;     /* adapters copied over the host link */
    uint64_t adapter_deferred;  /* admissions refused by the cap on distinct adapters */
    double adapter_load_s;      /* time the loads added to iterations */
    double adapter_gemm_s;      /* time of the grouped low-rank GEMMs */
    uint64_t offload_iters;     /* iterations that streamed weights */
    uint64_t offload_link_bound;/* of those, longer than their compute alone */
    double offload_wait_s;      /* time iterations waited for the link */
    double offload_bytes;       /* bytes streamed over the host link */
} HookStats;

typedef struct BatchHook {
    const char *name;
    void *ctx;
    /* Optional: may waiting request r be admitted now (beside the KV
     * policy's own check)?  0 = not now; the scheduler stops as when the
     * KV pool refuses. */
    int (*admit_ok)(void *ctx, Engine *eng, const Request *r);
    /* Optional: the iteration `plan` was priced (cb); adds its own time
     * (loads, extra GEMMs, waits for a link) to cb and counts into st. */
    void (*adjust)(void *ctx, const BatchPlan *plan, const Request *reqs, CostBreakdown *cb, HookStats *st);
    /* Optional: before the scheduler runs, a new order of the waiting
     * queue (its request indices, all of them, into out); returns 0 to
     * leave it as it is.  Lets requests the hook would refuse step aside
     * (vLLM skips a request whose adapter would exceed max_loras). */
    int (*order)(void *ctx, Engine *eng, uint32_t *out);
    void (*destroy)(void *ctx);
} BatchHook;

#define ENGINE_HOOKS_MAX 4

static inline void hookstats_add(HookStats *a, const HookStats *x)
{
    a->has_lora |= x->has_lora;
    a->has_offload |= x->has_offload;
    a->adapter_lookups += x->adapter_lookups;
    a->adapter_hits += x->adapter_hits;
    a->adapter_loads += x->adapter_loads;
    a->adapter_deferred += x->adapter_deferred;
    a->adapter_load_s += x->adapter_load_s;
    a->adapter_gemm_s += x->adapter_gemm_s;
    a->offload_iters += x->offload_iters;
    a->offload_link_bound += x->offload_link_bound;
    a->offload_wait_s += x->offload_wait_s;
    a->offload_bytes += x->offload_bytes;
}

/* ------------------------------------------ what a scheduler may call */

int64_t eng_now_ns(const Engine *eng);
Request *eng_req(Engine *eng, uint32_t idx);
/* Arrived, not admitted, FCFS (preempted requests go to the front). */
uint32_t eng_waiting_count(const Engine *eng);
uint32_t eng_waiting_at(const Engine *eng, uint32_t pos);
/* Admitted, in admission order. */
uint32_t eng_running_count(const Engine *eng);
uint32_t eng_running_at(const Engine *eng, uint32_t pos);
/* The first position >= pos in the running list whose request is still
 * prefilling (!request_decoding), or eng_running_count: with the decode
 * group formed, without reading the decoding requests (issue 16). */
uint32_t eng_running_next_prefilling(const Engine *eng, uint32_t pos);

/* Admits waiting[pos] if the KV policy can reserve for a first chunk of
 * `first_chunk` tokens: 1 = admitted (now the last running request), 0 =
 * does not fit (nothing changed). */
int eng_admit(Engine *eng, uint32_t pos, uint32_t first_chunk);

/* Adds a prefill chunk of up to c tokens (clamped to the remaining
 * prefill) or, when c == 0, one decode token for request idx.  Grows
 * on-demand KV first, preempting the most recently admitted running
 * requests when the pool is exhausted.  Returns the tokens added (1 for a
 * decode), 0 if nothing was added (the request itself had to be preempted,
 * or it was already planned). */
int eng_plan_add(Engine *eng, uint32_t idx, uint32_t c);

/* Preempts a running request (recompute): frees its KV, removes it from
 * the plan and the running list, puts it at the front of the queue. */
void eng_preempt(Engine *eng, uint32_t idx);
/* Rejects a queued request (admission control). */
void eng_reject(Engine *eng, uint32_t idx, RejectReason why);

const BatchPlan *eng_plan(const Engine *eng);

/* KV pool state for admission policies (watermarks). */
uint64_t eng_kv_free_blocks(const Engine *eng);
uint64_t eng_kv_total_blocks(const Engine *eng);
uint32_t eng_kv_block_tokens(const Engine *eng);
/* The cost model's time for a hypothetical batch (admission control's
 * predictions); 0 on failure. */
double eng_estimate_s(const Engine *eng, const BatchItem *items, uint32_t n);

#endif
