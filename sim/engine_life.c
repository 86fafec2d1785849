/*
 * engine_life.c -- a replica's creation and release, its run (requests
 * pulled into a pool of slots as simulated time reaches them and retired
 * when they leave: the one engine path; engine_new feeds a caller's array
 * through it, reqarray.h), the read-only accessors, and the end-of-run
 * checks (every request left, every clock in order).  The steps of the
 * event loop are engine.c; both share engine_int.h.
 */
#include "engine.h"
#include "engine_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"

static int fast_default_off;

void engine_fast_path_default(int on) { fast_default_off = !on; }
void engine_set_fast_path(Engine *eng, int on) { eng->fast_off = !on; }

/* ------------------------------------------------------------ accessors */

int64_t eng_now_ns(const Engine *eng) { return eng->now_ns; }
Request *eng_req(Engine *eng, uint32_t idx) { return &eng->reqs[idx]; }
uint32_t eng_waiting_count(const Engine *eng) { return eng->w_len; }
uint32_t eng_running_count(const Engine *eng) { return eng->n_running; }
uint32_t eng_running_at(const Engine *eng, uint32_t pos) { return eng->running[pos]; }

double eng_estimate_s(const Engine *eng, const BatchItem *items, uint32_t n)
{
    CostBreakdown cb;
    if (eng->cfg.cost.iter_time(eng->cfg.cost.ctx, items, n, &cb) != 0) return 0;
    return cb.t_s;
}
const EngineStats *engine_stats(const Engine *eng) { return &eng->st; }
const int64_t *engine_token_times(const Engine *eng) { return eng->array ? reqarray_token_times(eng->array) : NULL; }

const IterRecord *engine_iterations(const Engine *eng, uint64_t *n)
{
    *n = eng->n_iters;
    return eng->iters;
}

uint32_t eng_waiting_at(const Engine *eng, uint32_t pos)
{
    return eng->waiting[(eng->w_head + pos) % eng->n_reqs];
}

/* ------------------------------------------------------------ checks */

int engine_check_drained(Engine *eng, Err *e)
{
    /* the plug-ins' own counters join the run's statistics */
    CostExtrap x;
    if (eng->cfg.profile_cost.ctx && cost_extrapolation(&eng->cfg.profile_cost, &x) == 0) {
        eng->st.cost_queries = x.queries;
        eng->st.cost_outside = x.outside;
        eng->st.cost_worst_ratio = x.worst_ratio;
        memcpy(eng->st.cost_worst, x.worst, sizeof eng->st.cost_worst);
    }
    if (eng->cfg.kv.stats) {
        eng->st.has_kv_stats = 1;
        eng->cfg.kv.stats(eng->cfg.kv.ctx, &eng->st.kv);
    }
    /* Every request has left and returned its blocks: anything else is a
     * bookkeeping bug, reported rather than hidden in the numbers. */
    uint64_t used = eng->cfg.kv.used_blocks(eng->cfg.kv.ctx);
    if (used != 0 || eng->n_running != 0)
        return err_set(e, "internal: the run ended with %llu KV blocks in use and %u requests running",
                       (unsigned long long)used, eng->n_running);
    return 0;
}

static int invariant(Err *e, const Request *r, int64_t t_ns, const char *what)
{
    return err_set(e, "internal: invariant violated: request %s at t = %.9f s: %s", r->id ? r->id : "?",
                   (double)t_ns / 1e9, what);
}

int engine_check_invariants(const Request *reqs, uint32_t n, const int64_t *token_times, const EngineStats *st,
                            Err *e)
{
    uint64_t fin = 0, rej = 0, can = 0;
    for (uint32_t i = 0; i < n; i++) {
        const Request *r = &reqs[i];
        if (r->state == REQ_FINISHED) fin++;
        else if (r->state == REQ_REJECTED) rej++;
        else if (r->state == REQ_CANCELLED) can++;
        if (r->generated > r->output_tokens)
            return invariant(e, r, r->t_last_token_ns, "emitted more tokens than its output_tokens");
        if (r->state == REQ_PENDING) continue;
        if (r->t_first_sched_ns >= 0 && r->t_first_sched_ns < r->t_arrive_ns)
            return invariant(e, r, r->t_first_sched_ns, "scheduled before it arrived (clock not monotonic)");
        if (r->state == REQ_FINISHED && r->generated != r->output_tokens)
            return invariant(e, r, r->t_finish_ns, "finished without all its output tokens");
        if (r->t_finish_ns >= 0 && r->t_finish_ns < r->t_arrive_ns)
            return invariant(e, r, r->t_finish_ns, "finished before it arrived (clock not monotonic)");
        if (!token_times) continue;
        int64_t prev = r->t_arrive_ns;
        for (uint32_t k = 0; k < r->generated; k++) {
            int64_t t = token_times[r->token_off + k];
            if (t < prev) return invariant(e, r, t, "a token before the previous one or the arrival (clock not monotonic)");
            prev = t;
        }
        if (r->state == REQ_FINISHED && r->t_finish_ns < prev)
            return invariant(e, r, r->t_finish_ns, "finished before its last token (clock not monotonic)");
    }
    if (st && can != st->cancelled)
        return err_set(e, "internal: invariant violated: requests not conserved: %llu cancelled by state, %llu "
                          "counted", (unsigned long long)can, (unsigned long long)st->cancelled);
    if (st && (fin != st->finished || rej != st->rejected)) {
        return err_set(e, "internal: invariant violated: requests not conserved: %llu finished and %llu rejected "
                          "by state, %llu and %llu counted", (unsigned long long)fin, (unsigned long long)rej,
                       (unsigned long long)st->finished, (unsigned long long)st->rejected);
    }
    return 0;
}

/* -------------------------------------------------------------- lifetime */

/* The plug-ins the engine took from its configuration. */
static void engine_free_plugins(Engine *eng)
{
    if (eng->cfg.sched.destroy) eng->cfg.sched.destroy(eng->cfg.sched.ctx);
    if (eng->cfg.kv.destroy) eng->cfg.kv.destroy(eng->cfg.kv.ctx);
    if (eng->cfg.cost.destroy) eng->cfg.cost.destroy(eng->cfg.cost.ctx);
    if (eng->cfg.has_spec && eng->cfg.spec.destroy) eng->cfg.spec.destroy(eng->cfg.spec.ctx);
    for (uint32_t k = 0; k < eng->cfg.n_hooks; k++)
        if (eng->cfg.hooks[k].destroy) eng->cfg.hooks[k].destroy(eng->cfg.hooks[k].ctx);
}

void engine_free(Engine *eng)
{
    if (!eng) return;
    engine_free_plugins(eng);
    evq_free(&eng->own_evq);
    free(eng->waiting);
    free(eng->running);
    free(eng->plan.items);
    free(eng->plan_pos);
    free(eng->order_tmp);
    free(eng->parked);
    free(eng->iters);
    if (eng->own_slots) slots_free(eng->slots);
    reqarray_free(eng->array);
    free(eng->retiring);
    free(eng->fb_idx);
    free(eng->fb_start);
    free(eng->fb_cnt);
    free(eng->g_mem);
    free(eng->g_base);
    free(eng->g_fin);
    free(eng->g_bpos);
    free(eng->g_heap);
    free(eng->g_gone);
    free(eng->g_gone_f);
    for (uint32_t q = 0; eng->g_bk && q < eng->cfg.kv.grow_block_tokens; q++) free(eng->g_bk[q]);
    free(eng->g_bk);
    free(eng->g_bk_n);
    free(eng->g_bk_cap);
    free(eng->g_dq);
    free(eng);
}

/* ------------------------------------------------------------- streaming */

void engine_stream_sync(Engine *eng)
{
    uint32_t old = eng->n_reqs, cap = slots_cap(eng->slots);
    eng->reqs = slots_reqs(eng->slots);
    eng->slot_tt = eng->cfg.keep_token_times ? slots_tt(eng->slots) : NULL;
    if (cap == old) return;
    /* the waiting ring is unrolled into the larger one */
    uint32_t *w = xmalloc(cap * sizeof *w);
    for (uint32_t i = 0; i < eng->w_len; i++) w[i] = eng->waiting[(eng->w_head + i) % (old ? old : 1)];
    free(eng->waiting);
    eng->waiting = w;
    eng->w_head = 0;
    eng->running = xrealloc(eng->running, cap * sizeof *eng->running);
    eng->plan.items = xrealloc(eng->plan.items, cap * sizeof *eng->plan.items);
    eng->plan.cap = cap;
    eng->plan_pos = xrealloc(eng->plan_pos, cap * sizeof *eng->plan_pos);
    for (uint32_t k = old; k < cap; k++) eng->plan_pos[k] = NO_POS;
    eng->retiring = xrealloc(eng->retiring, cap * sizeof *eng->retiring);
    eng->parked = xrealloc(eng->parked, cap * sizeof *eng->parked); /* cancelled, blocks still read */
    for (uint32_t k = 0; k < eng->cfg.n_hooks; k++)
        if (eng->cfg.hooks[k].order) {
            eng->order_tmp = xrealloc(eng->order_tmp, cap * sizeof *eng->order_tmp);
            break;
        }
    eng->n_reqs = cap;
}

/* The next request from the stream into a free slot, its arrival on the
 * queue; 0 at the end of the stream (or on an error, kept for the run). */
static int stream_pull(Engine *eng)
{
    uint32_t k;
    if (!slots_pull(eng->slots, &k)) return 0;
    engine_stream_sync(eng);
    evq_push(eng->evq, eng->reqs[k].t_arrive_ns, ENGINE_EV_ARRIVAL, k);
    return 1;
}

int engine_stream_retire(Engine *eng, Err *e)
{
    int64_t **tt = slots_tt(eng->slots);
    for (uint32_t i = 0; i < eng->n_retiring; i++) {
        uint32_t k = eng->retiring[i];
        if (engine_check_invariants(&eng->reqs[k], 1, tt ? tt[k] : NULL, NULL, e) != 0) return -1;
        slots_retire(eng->slots, k);
    }
    eng->n_retiring = 0;
    return 0;
}

/* One replica alone: its own queue holds the next arrival (the pool pulls
 * one ahead) and its iteration end, follow-ups and cancels. */
int engine_run(Engine *eng, Err *e)
{
    stream_pull(eng);
    /* a run with no requests has no first arrival (0) */
    eng->st.t_first_arrival_ns = evq_peek_time(eng->evq) == INT64_MAX ? 0 : evq_peek_time(eng->evq);
    Event ev;
    while (evq_pop(eng->evq, &ev)) {
        do {
            if (ev.kind == ENGINE_EV_ARRIVAL) {
                slots_arrive(eng->slots, ev.arg);
                stream_pull(eng);
                engine_enqueue(eng, ev.arg, ev.t_ns);
            } else if (ev.kind == ENGINE_EV_FOLLOW) {
                uint32_t k;
                if (slots_pull_follow(eng->slots, ev.arg, ev.t_ns, &k)) {
                    engine_stream_sync(eng);
                    engine_enqueue(eng, k, ev.t_ns);
                }
            } else if (ev.kind == ENGINE_EV_FRONT) {
                engine_enqueue(eng, ev.arg, ev.t_ns);
            } else if (ev.kind == ENGINE_EV_CANCEL) {
                if (!slots_cancel_event(eng->slots, ev.arg)) engine_cancel(eng, ev.arg, ev.t_ns);
            } else {
                engine_iter_end(eng, ev.t_ns);
            }
        } while (evq_peek_time(eng->evq) == ev.t_ns && evq_pop(eng->evq, &ev));
        if (engine_poll(eng, ev.t_ns, e) != 0) return -1;
        if (engine_stream_retire(eng, e) != 0) return -1;
    }
    if (slots_error(eng->slots, e) != 0) return -1;
    if (engine_check_drained(eng, e) != 0) return -1;
    uint64_t pulled = slots_pulled(eng->slots);
    uint32_t live = slots_live(eng->slots);
    if (live != 0 || eng->st.finished + eng->st.rejected + eng->st.cancelled != pulled)
        return err_set(e, "internal: invariant violated: requests not conserved: %llu pulled, %llu finished, %llu "
                          "rejected, %llu cancelled, %u still held", (unsigned long long)pulled,
                       (unsigned long long)eng->st.finished, (unsigned long long)eng->st.rejected,
                       (unsigned long long)eng->st.cancelled, live);
    /* an array's requests, each written back as it left: every one
     * accounted for (a request that never arrived is still pending) */
    if (eng->array)
        return engine_check_invariants(eng->array_reqs, eng->array_n, reqarray_token_times(eng->array), &eng->st, e);
    return 0;
}

Engine *engine_new_shared(EngineConfig *cfg, Slots *slots, Err *e)
{
    (void)e;
    Engine *eng = xcalloc(1, sizeof *eng);
    eng->cfg = *cfg;
    eng->slots = slots;
    evq_init(&eng->own_evq);
    eng->evq = &eng->own_evq;
    engine_stream_sync(eng);
    eng->st.kv_total_blocks = cfg->kv.total_blocks(cfg->kv.ctx);
    eng->fast_off = cfg->no_fast_path || fast_default_off;
    return eng;
}

Engine *engine_new_stream(EngineConfig *cfg, SlotsPull pull, void *pull_ctx, SlotsRetire retire, void *retire_ctx,
                          Err *e)
{
    Slots *p = slots_new(pull, pull_ctx, retire, retire_ctx, cfg->keep_token_times);
    Engine *eng = engine_new_shared(cfg, p, e);
    eng->own_slots = 1;
    return eng;
}

Engine *engine_new(Request *reqs, uint32_t n, EngineConfig *cfg, Err *e)
{
    ReqArray *a = reqarray_new(reqs, n, cfg->keep_token_times, e);
    if (!a) {
        /* the engine owns the plug-ins from here, as engine_free would */
        Engine tmp = {.cfg = *cfg};
        engine_free_plugins(&tmp);
        return NULL;
    }
    Engine *eng = engine_new_shared(cfg, reqarray_slots(a), e);
    eng->array = a;
    eng->array_reqs = reqs;
    eng->array_n = n;
    return eng;
}

uint64_t engine_stream_pulled(const Engine *eng) { return slots_pulled(eng->slots); }
uint32_t engine_live_peak(const Engine *eng) { return slots_peak(eng->slots); }
uint32_t engine_live(const Engine *eng) { return slots_live(eng->slots); }
uint32_t engine_slots(const Engine *eng) { return slots_cap(eng->slots); }
Slots *engine_stream_slots(Engine *eng) { return eng->slots; }
