/*
 * cluster.c -- routing, replicas and disaggregated handoffs on one event
 * queue (see cluster.h).
 */
#include "cluster.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "evq.h"
#include "offload.h"
#include "plugin.h"
#include "policy.h"
#include "prefix.h"
#include "reqarray.h"

enum { CLUSTER_EV_TRANSFER = 3 };

struct Cluster {
    Scenario *s;
    Engine **eng;
    uint32_t n;            /* replicas in all */
    uint32_t n_prefill;    /* disagg: engines [0, n_prefill) prefill, the rest decode */
    EventQueue q;
    int64_t *tt;           /* a workload held whole: every token's time by token_off (the array's), or NULL */
    uint32_t rr_next[2];   /* round-robin cursors per pool */
    EngineStats st;        /* aggregated over replicas */
    Router plugin_router;  /* ROUTER_PLUGIN */
    const PluginProvider *router_provider;
    ReplicaLoad *loads;    /* what it sees of the replicas */
    /* The report's per-replica rows and the cluster's total (metrics.h
     * RunReplicas, ReplicaRow): requests each replica served, and the peaks
     * of the sums over replicas, sampled as each engine samples its own --
     * waiting when a request joins a queue, running and KV blocks of the
     * busy replicas once every replica has started its iteration -- so the
     * largest replica peak <= the cluster peak <= the sum of the peaks. */
    uint32_t *served;
    const EngineStats **rst;
    uint32_t sum_peak_running, sum_peak_waiting;
    uint64_t sum_peak_kv;
    uint32_t *adapter_home;  /* ROUTER_ADAPTER_AFFINITY: per pool and adapter id, its replica + 1 (0 = none yet) */
    uint32_t group;        /* attention DP: ranks per lock-stepped group (consecutive replicas), or 0 */
    int has_itl;           /* no per-token record: ITL streamed into itl by the engines */
    StatAcc itl;
    /* The replicas' shared request records, pulled one arrival ahead (from
     * the scenario's stream, or its workload held whole: arr); a request
     * keeps its slot from its arrival to its retirement, whichever replica
     * holds it, so arrival, front-end, handoff and transfer events name
     * the slot. */
    Slots *slots;
    ReqArray *arr;
};

/* The request in slot idx. */
static Request *req(const Cluster *c, uint32_t idx)
{
    return &slots_reqs(c->slots)[idx];
}

uint32_t cluster_replicas(const Cluster *c) { return c->n; }
const Engine *cluster_engine(const Cluster *c, uint32_t i) { return c->eng[i]; }
const EngineStats *cluster_stats(const Cluster *c) { return &c->st; }
uint64_t cluster_stream_pulled(const Cluster *c) { return slots_pulled(c->slots); }
uint32_t cluster_live_peak(const Cluster *c) { return slots_peak(c->slots); }
Slots *cluster_stream_slots(Cluster *c) { return c->slots; }

static void handoff(void *ctx, uint32_t req, int64_t now_ns);
static void incoming_admitted(void *ctx, uint32_t req, int64_t now_ns);

Cluster *cluster_new(Scenario *s, const MetricsSink *sink, Err *e)
{
    Cluster *c = xcalloc(1, sizeof *c);
    c->s = s;
    for (uint32_t p = 0; p < s->n_pools; p++) c->n += s->pools[p].replicas;
    c->n_prefill = s->disagg ? s->pools[0].replicas : 0;
    c->eng = xcalloc(c->n, sizeof *c->eng);
    c->loads = xcalloc(c->n, sizeof *c->loads);
    c->served = xcalloc(c->n, sizeof *c->served);
    c->rst = xcalloc(c->n, sizeof *c->rst);
    if (s->router == ROUTER_PLUGIN) {
        char where[700], dir[512];
        snprintf(where, sizeof where, "%s: cluster.router", s->source);
        workload_base_dir(s->source, dir, sizeof dir);
        c->router_provider = plugin_for(s->plugin_router);
        if (c->router_provider->new_router(s->plugin_router, where, dir, &c->plugin_router, e) < 0) {
            cluster_free(c);
            return NULL;
        }
    }
    if (s->router == ROUTER_ADAPTER_AFFINITY) c->adapter_home = xcalloc(2 * ((size_t)s->lora.adapters + 1), sizeof *c->adapter_home);
    s->barrier.left = s->barrier_members; /* a scenario may run more than once */
    evq_init(&c->q);
    /* token times, if kept, are per slot (a stream's are taken as they are
     * retired, sim/streamrun.c; a workload held whole gets them back in
     * its array's record, reqarray.h) */
    if (s->wl_stream) {
        c->slots = scenario_stream_slots(s);
    } else {
        if (!(c->arr = reqarray_new(s->wl.reqs, s->wl.n, s->keep_token_times, e))) {
            cluster_free(c);
            return NULL;
        }
        c->slots = reqarray_slots(c->arr);
        c->tt = reqarray_token_times(c->arr);
    }
    c->has_itl = !s->keep_token_times;
    statacc_init(&c->itl, s->metrics.exact_stats ? UINT64_MAX : METRICS_EXACT_MAX);
    if (s->attn_dp > 1 && !s->disagg && c->n % (uint32_t)s->attn_dp == 0) c->group = (uint32_t)s->attn_dp;
    uint32_t k = 0;
    for (uint32_t p = 0; p < s->n_pools; p++)
        for (uint32_t r = 0; r < s->pools[p].replicas; r++, k++) {
            /* one replica alone keeps the engine's own record of
             * iterations; the sink observes every replica */
            Pool pool = s->pools[p];
            c->eng[k] = scenario_pool_engine(s, &pool, sink, c->slots, e);
            if (!c->eng[k]) {
                cluster_free(c);
                return NULL;
            }
            engine_attach(c->eng[k], &c->q, k);
            /* the decode fast path advances one replica alone: with several
             * every instant polls them all */
            if (c->n > 1) engine_set_fast_path(c->eng[k], 0);
            if (c->has_itl) engine_set_itl_acc(c->eng[k], &c->itl);
            if (c->group) engine_defer_end(c->eng[k], 1);
            c->rst[k] = engine_stats(c->eng[k]);
            if (s->disagg && p == 0) engine_set_handoff(c->eng[k], handoff, c);
            if (s->disagg && p == 1) engine_set_incoming(c->eng[k], incoming_admitted, c);
        }
    return c;
}

void cluster_free(Cluster *c)
{
    if (!c) return;
    for (uint32_t i = 0; i < c->n; i++) engine_free(c->eng[i]);
    free(c->eng);
    free(c->loads);
    free(c->served);
    free(c->rst);
    free(c->adapter_home);
    statacc_free(&c->itl);
    if (c->plugin_router.destroy) c->plugin_router.destroy(c->plugin_router.ctx);
    evq_free(&c->q);
    if (c->arr) reqarray_free(c->arr); /* with its pool */
    else slots_free(c->slots);
    free(c);
}

/* ---------------------------------------------------------------- routing */

/* Adapter affinity (bounded load): an adapter's first request goes to the
 * least loaded replica, which becomes its home; later ones go home while the
 * home's running + waiting count stays within twice the least loaded
 * replica's + 2, so its adapter cache keeps hitting, and otherwise to the
 * least loaded one.  Base-model requests go to the least loaded. */
static uint32_t route_adapter(Cluster *c, const Request *r, uint32_t lo, uint32_t n, int pool)
{
    uint32_t best = lo;
    uint64_t best_v = UINT64_MAX;
    for (uint32_t i = lo; i < lo + n; i++) {
        ReplicaLoad l;
        engine_load(c->eng[i], &l);
        uint64_t v = (uint64_t)l.running + l.waiting;
        if (v < best_v) {
            best_v = v;
            best = i;
        }
    }
    uint32_t a = r->adapter;
    if (!a || a > c->s->lora.adapters) return best;
    uint32_t *homes = c->adapter_home + (size_t)(pool ? 1 : 0) * (c->s->lora.adapters + 1);
    uint32_t home = homes[a];
    if (home && home - 1 >= lo && home - 1 < lo + n) {
        ReplicaLoad l;
        engine_load(c->eng[home - 1], &l);
        if ((uint64_t)l.running + l.waiting <= 2 * best_v + 2) return home - 1;
        return best;
    }
    homes[a] = best + 1;
    return best;
}

static uint32_t route(Cluster *c, const Request *r, uint32_t lo, uint32_t n, int pool)
{
    if (n == 1) return lo;
    RouterKind kind = c->s->router;
    if (kind == ROUTER_ROUND_ROBIN) return lo + (c->rr_next[pool]++ % n);
    if (kind == ROUTER_ADAPTER_AFFINITY) return route_adapter(c, r, lo, n, pool);
    if (kind == ROUTER_PLUGIN) {
        for (uint32_t i = 0; i < n; i++) engine_load(c->eng[lo + i], &c->loads[i]);
        return lo + c->plugin_router.route(c->plugin_router.ctx, r, c->loads, n);
    }
    uint32_t best = lo;
    uint64_t best_v = UINT64_MAX;
    uint32_t best_hit = 0;
    for (uint32_t i = lo; i < lo + n; i++) {
        ReplicaLoad l;
        engine_load(c->eng[i], &l);
        uint64_t v = kind == ROUTER_LEAST_TOKENS ? l.outstanding_tokens : (uint64_t)l.running + l.waiting;
        if (kind == ROUTER_PREFIX_AFFINITY) {
            /* the longest cached prefix wins; load breaks ties */
            uint32_t hit = prefix_probe(engine_kv(c->eng[i]), r);
            if (hit > best_hit || (hit == best_hit && v < best_v)) {
                best_hit = hit;
                best_v = v;
                best = i;
            }
            continue;
        }
        if (v < best_v) {
            best_v = v;
            best = i;
        }
    }
    return best;
}

/* The cluster's waiting count, when a request has just joined a queue. */
static void sample_waiting(Cluster *c)
{
    uint32_t w = 0;
    for (uint32_t i = 0; i < c->n; i++) w += eng_waiting_count(c->eng[i]);
    if (w > c->sum_peak_waiting) c->sum_peak_waiting = w;
}

/* Running requests and KV blocks of the busy replicas, once each has
 * started its iteration (an engine counts them at its iteration's start,
 * and only while busy). */
static void sample_busy(Cluster *c)
{
    uint32_t run = 0;
    uint64_t kv = 0;
    for (uint32_t i = 0; i < c->n; i++) {
        if (!engine_busy(c->eng[i])) continue;
        const KvPolicy *k = engine_kv(c->eng[i]);
        run += eng_running_count(c->eng[i]);
        kv += k->used_blocks(k->ctx);
    }
    if (run > c->sum_peak_running) c->sum_peak_running = run;
    if (kv > c->sum_peak_kv) c->sum_peak_kv = kv;
}

/* The next request into a slot, its arrival on the queue (the pool may
 * grow: every replica follows it before it runs). */
static void push_next_arrival(Cluster *c)
{
    uint32_t k;
    if (!slots_pull(c->slots, &k)) return;
    for (uint32_t i = 0; i < c->n; i++) engine_stream_sync(c->eng[i]);
    evq_push(&c->q, slots_reqs(c->slots)[k].t_arrive_ns, ENGINE_EV_ARRIVAL, k);
}

static void arrive(Cluster *c, uint32_t idx, int64_t now)
{
    Request *r = req(c, idx);
    uint32_t lo = 0, n = c->s->pools[0].replicas;
    r->replica = route(c, r, lo, n, 0);
    c->served[r->replica]++;
    engine_enqueue(c->eng[r->replica], idx, now);
    if (c->n > 1) sample_waiting(c);
}

/* A prefill replica finished a prefill: the request queues at a decode
 * replica, which must reserve its KV before the transfer starts; until the
 * transfer ends both sides hold it. */
static void handoff(void *ctx, uint32_t idx, int64_t now_ns)
{
    Cluster *c = ctx;
    Request *r = req(c, idx);
    r->src_replica = r->replica;
    r->incoming = 1;
    uint32_t n = c->s->pools[1].replicas;
    r->replica = route(c, r, c->n_prefill, n, 1);
    c->served[r->replica]++;
    engine_enqueue(c->eng[r->replica], idx, now_ns);
    sample_waiting(c);
    if (r->state == REQ_REJECTED) {
        /* the decode side can never hold it: the prefill side lets go */
        engine_release_handoff(c->eng[r->src_replica], idx);
    }
}

/* The decode replica admitted it: send the KV. */
static void incoming_admitted(void *ctx, uint32_t idx, int64_t now_ns)
{
    Cluster *c = ctx;
    const Request *r = req(c, idx);
    double bytes = (double)r->kv_len * c->s->kv.bytes_per_token;
    /* compressed when the scenario asks and decompression keeps up (offload.h) */
    double send_s = offload_kv_transfer_s(bytes, c->s->link_bw_bytes_per_s, c->s->kv_xfer_ratio,
                                          c->s->kv_xfer_dec_bytes_per_s, NULL);
    int64_t dt = (int64_t)((send_s + c->s->link_latency_s) * 1e9 + 0.5);
    evq_push(&c->q, now_ns + dt, CLUSTER_EV_TRANSFER, idx);
}

static void transfer_done(Cluster *c, uint32_t idx, int64_t now)
{
    Request *r = req(c, idx);
    /* the prefill side frees its copy; each pool keeps its own count */
    engine_release_handoff(c->eng[r->src_replica], idx);
    if (c->s->first_token_on_decode) {
        /* the first token reaches the client only from the decode side */
        if (slots_tt(c->slots)) slots_tt(c->slots)[idx][0] = now;
        r->t_first_token_ns = r->t_last_token_ns = now;
    }
    engine_unblock(c->eng[r->replica], idx);
    /* cancelled while its KV was in flight: it leaves now that it landed */
    if (r->cancel_pending) engine_cancel(c->eng[r->replica], idx, now);
}

/* The client cancels: at the replica holding the request.  Queued at a
 * decode replica with its KV still on the prefill side (no transfer yet):
 * the prefill side lets go too. */
static void cancel(Cluster *c, uint32_t idx, int64_t now)
{
    Request *r = req(c, idx);
    if (r->state == REQ_QUEUED && r->incoming) {
        engine_release_handoff(c->eng[r->src_replica], idx);
        r->incoming = 0;
    }
    engine_cancel(c->eng[r->replica], idx, now);
}

/* An attention-DP group (TensorRT-LLM's attention data parallelism): its
 * ranks run in lock-step, because every MoE layer's dispatch and combine
 * is a collective over all of them -- a rank with nothing to do runs an
 * empty step to take part (enable_balance is off by default, so context
 * requests are scheduled as they come).  The group steps when all its ranks
 * are free: each builds its own batch; the step's MoE layers carry the
 * tokens of every rank (the cost model prices them at that total instead
 * of this rank's x attention_dp), and the step lasts as long as its
 * slowest rank (its attention, GEMMs, plus the shared MoE and all-to-all);
 * every rank's iteration ends then.  A request that arrives at an idle rank
 * meanwhile waits for the step's end. */
static int poll_group(Cluster *c, uint32_t lo, int64_t now, Err *e)
{
    const uint32_t g = c->group;
    for (uint32_t i = lo; i < lo + g; i++)
        if (engine_busy(c->eng[i])) return 0;
    double T = 0;
    int any = 0;
    for (uint32_t i = lo; i < lo + g; i++) {
        if (engine_poll(c->eng[i], now, e) != 0) return err_prefix(e, "replica %u", i);
        if (engine_busy(c->eng[i])) {
            T += (double)eng_plan(c->eng[i])->new_tokens;
            any = 1;
        }
    }
    if (!any) return 0;
    int64_t D = 1;
    for (uint32_t i = lo; i < lo + g; i++) {
        if (!engine_busy(c->eng[i])) continue;
        const BatchPlan *pl = eng_plan(c->eng[i]);
        /* the rank's own time with the MoE at the group's tokens: its
         * duration (hooks, swaps included) less the symmetric MoE price,
         * plus the group's */
        c->s->adp_step_tokens = -1;
        double own = eng_estimate_s(c->eng[i], pl->items, pl->n);
        c->s->adp_step_tokens = T;
        double grp = eng_estimate_s(c->eng[i], pl->items, pl->n);
        c->s->adp_step_tokens = 0;
        int64_t d = engine_pending_ns(c->eng[i]) + (int64_t)llround((grp - own) * 1e9);
        if (d > D) D = d;
    }
    for (uint32_t i = lo; i < lo + g; i++)
        if (engine_busy(c->eng[i])) engine_end_at(c->eng[i], now + D);
    return 0;
}

int cluster_run(Cluster *c, Err *e)
{
    const Workload *w = &c->s->wl;
    push_next_arrival(c);
    /* a run with no requests has no first arrival (0) */
    int64_t first = evq_peek_time(&c->q) == INT64_MAX ? 0 : evq_peek_time(&c->q);
    Event ev;
    while (evq_pop(&c->q, &ev)) {
        do {
            if (ev.kind == ENGINE_EV_ARRIVAL) {
                slots_arrive(c->slots, ev.arg);
                if (!req(c, ev.arg)->triggered) push_next_arrival(c);
                arrive(c, ev.arg, ev.t_ns);
            } else if (ev.kind == ENGINE_EV_FOLLOW) {
                /* a streamed chain's next request: into a slot (the pool
                 * may grow: every replica follows it), then routed */
                uint32_t k;
                if (slots_pull_follow(c->slots, ev.arg, ev.t_ns, &k)) {
                    for (uint32_t i = 0; i < c->n; i++) engine_stream_sync(c->eng[i]);
                    arrive(c, k, ev.t_ns);
                }
            } else if (ev.kind == ENGINE_EV_ITER_END) {
                engine_iter_end(c->eng[ev.arg], ev.t_ns);
            } else if (ev.kind == ENGINE_EV_FRONT) {
                /* its replica's front end is done with it */
                engine_enqueue(c->eng[req(c, ev.arg)->replica], ev.arg, ev.t_ns);
            } else if (ev.kind == ENGINE_EV_CANCEL) {
                /* a slot kept for its retired request's event is freed */
                if (!slots_cancel_event(c->slots, ev.arg)) cancel(c, ev.arg, ev.t_ns);
            } else {
                transfer_done(c, ev.arg, ev.t_ns);
            }
        } while (evq_peek_time(&c->q) == ev.t_ns && evq_pop(&c->q, &ev));
        if (c->router_provider && c->router_provider->check_router &&
            c->router_provider->check_router(&c->plugin_router, e) < 0)
            return -1;
        if (c->group) {
            for (uint32_t i = 0; i < c->n; i += c->group)
                if (poll_group(c, i, ev.t_ns, e) != 0) return -1;
        } else {
            for (uint32_t i = 0; i < c->n; i++)
                if (engine_poll(c->eng[i], ev.t_ns, e) != 0) return err_prefix(e, "replica %u", i);
        }
        if (c->n > 1) sample_busy(c);
        /* the requests that left go back to the pool */
        for (uint32_t i = 0; i < c->n; i++)
            if (engine_stream_retire(c->eng[i], e) != 0) return -1;
    }
    if (slots_error(c->slots, e) != 0) return -1;
    /* aggregate: sums; peaks of the sum (one replica: its own) */
    EngineStats *a = &c->st;
    memset(a, 0, sizeof *a);
    a->t_first_arrival_ns = first;
    for (uint32_t i = 0; i < c->n; i++) {
        if (engine_check_drained(c->eng[i], e) != 0) return err_prefix(e, "replica %u", i);
        const EngineStats *x = engine_stats(c->eng[i]);
        a->iterations += x->iterations;
        a->batch_items += x->batch_items;
        a->fast_iterations += x->fast_iterations;
        a->busy_ns += x->busy_ns;
        if (x->t_last_event_ns > a->t_last_event_ns) a->t_last_event_ns = x->t_last_event_ns;
        a->peak_running = MAX(a->peak_running, x->peak_running);
        a->peak_waiting = MAX(a->peak_waiting, x->peak_waiting);
        a->kv_total_blocks += x->kv_total_blocks;
        a->kv_peak_used_blocks = MAX(a->kv_peak_used_blocks, x->kv_peak_used_blocks);
        a->kv_block_ns += x->kv_block_ns;
        a->running_ns += x->running_ns;
        a->waiting_ns += x->waiting_ns;
        a->preemptions += x->preemptions;
        a->recomputed_tokens += x->recomputed_tokens;
        a->swapped_tokens += x->swapped_tokens;
        a->swap_s += x->swap_s;
        a->cost_queries += x->cost_queries;
        a->cost_outside += x->cost_outside;
        if (x->cost_worst_ratio > a->cost_worst_ratio) {
            a->cost_worst_ratio = x->cost_worst_ratio;
            memcpy(a->cost_worst, x->cost_worst, sizeof a->cost_worst);
        }
        a->spec_rounds += x->spec_rounds;
        a->spec_drafted += x->spec_drafted;
        a->spec_accepted += x->spec_accepted;
        a->spec_emitted += x->spec_emitted;
        a->spec_draft_s += x->spec_draft_s;
        a->spec_verify_s += x->spec_verify_s;
        a->prefill_tokens += x->prefill_tokens;
        a->decode_tokens += x->decode_tokens;
        a->finished += x->finished;
        a->rejected += x->rejected;
        a->cancelled += x->cancelled;
        a->flops += x->flops;
        a->bytes += x->bytes;
        a->t_gemm_s += x->t_gemm_s;
        a->t_attn_s += x->t_attn_s;
        a->t_lm_head_s += x->t_lm_head_s;
        a->t_comm_s += x->t_comm_s;
        a->t_overhead_s += x->t_overhead_s;
        hookstats_add(&a->hooks, &x->hooks);
        if (x->has_kv_stats) {
            a->has_kv_stats = 1;
            a->kv.lookup_tokens += x->kv.lookup_tokens;
            a->kv.hit_tokens += x->kv.hit_tokens;
            a->kv.evictions += x->kv.evictions;
            a->kv.cow_copies += x->kv.cow_copies;
            a->kv.cached_blocks += x->kv.cached_blocks;
        }
    }
    if (c->n > 1) {
        /* the sampled sums; never below the largest replica's own peak */
        a->peak_running = MAX(a->peak_running, c->sum_peak_running);
        a->peak_waiting = MAX(a->peak_waiting, c->sum_peak_waiting);
        a->kv_peak_used_blocks = MAX(a->kv_peak_used_blocks, c->sum_peak_kv);
    }
    /* busy time per replica on average, so that GPUs x busy is GPU time */
    a->busy_ns /= c->n;
    a->replicas = c->n;
    /* each request was checked as it was retired */
    uint64_t pulled = slots_pulled(c->slots);
    uint32_t live = slots_live(c->slots);
    if (live != 0 || a->finished + a->rejected + a->cancelled != pulled)
        return err_set(e, "internal: invariant violated: requests not conserved: %llu pulled, %llu finished, %llu "
                          "rejected, %llu cancelled, %u still held", (unsigned long long)pulled,
                       (unsigned long long)a->finished, (unsigned long long)a->rejected,
                       (unsigned long long)a->cancelled, live);
    /* a workload held whole, each request written back as it left */
    if (c->arr) return engine_check_invariants(w->reqs, w->n, c->tt, a, e);
    return 0;
}

void cluster_rundata(const Cluster *c, RunData *rd)
{
    *rd = (RunData){.reqs = c->s->wl.reqs, .n = c->s->wl.n, .token_times = c->tt, .st = &c->st};
    if (!c->arr) {
        /* streamed: the requests were folded as they left */
        rd->reqs = NULL;
        rd->n = 0;
    }
    if (c->n == 1) rd->iters = engine_iterations(c->eng[0], &rd->n_iters);
    if (c->has_itl) rd->itl = &c->itl;
    rd->replicas = (RunReplicas){.n = c->n, .n_prefill = c->n_prefill, .st = c->rst, .requests = c->served};
    const Scenario *s = c->s;
    for (uint32_t p = 0; p < s->n_pools && p < 2; p++) {
        rd->replicas.kv_bytes_per_gpu[p] = s->pools[p].kv.capacity_bytes / s->pools[p].tp;
        rd->replicas.kv_total_bytes += s->pools[p].replicas * s->pools[p].kv.capacity_bytes;
    }
    if (s->kv.unbounded) rd->replicas.kv_total_bytes = 0;
}

void cluster_summarize(const Cluster *c, const Scenario *s, Slo *slo_table, MetricsCfg *mc, RunData *rd,
                       Summary *sum)
{
    scenario_metrics_cfg(s, mc, slo_table, METRICS_CLS_MAX);
    cluster_rundata(c, rd);
    metrics_summarize(mc, rd, sum);
}
