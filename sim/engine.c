/*
 * engine.c -- one replica's discrete-event loop (see engine.h).
 *
 * Invariants:
 *  - running[] holds the admitted requests in admission order, so the most
 *    recently admitted (the preemption victim) is last;
 *  - waiting is a ring buffer in FCFS order; a preempted request re-enters at
 *    the front;
 *  - the plan holds at most one item per request; plan_pos[r] is its index
 *    or UINT32_MAX;
 *  - every per-request array follows the pool of request records
 *    (engine_stream_sync: it grows only when a request is pulled), so the
 *    hot loop allocates only when the optional iteration log grows
 *    (amortised);
 *  - a cancelled request is in no list but parked[] while the iteration
 *    launched at its cancel still reads its blocks (cancel_lag); parked[]
 *    empties at the next iteration end, or at once when none was launched.
 */
#include "engine.h"
#include "engine_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "evq.h"
#include "offload.h"

static int g_is(const Engine *eng, uint32_t idx);

uint32_t eng_running_next_prefilling(const Engine *eng, uint32_t pos)
{
    /* group members decode; every other running request was checked when
     * the group formed or joined it when its prefill ended */
    if (eng->g_on) {
        /* the n_running - g_n prefilling ones were admitted last: the
         * first of them is found from the end */
        uint32_t left = eng->n_running - eng->g_n, first = eng->n_running;
        for (uint32_t i = eng->n_running; i > 0 && left > 0; i--)
            if (!g_is(eng, eng->running[i - 1])) {
                first = i - 1;
                left--;
            }
        if (pos < first) pos = first;
        while (pos < eng->n_running && g_is(eng, eng->running[pos])) pos++;
        return pos;
    }
    while (pos < eng->n_running && request_decoding(&eng->reqs[eng->running[pos]])) pos++;
    return pos;
}
const BatchPlan *eng_plan(const Engine *eng) { return &eng->plan; }
const KvPolicy *engine_kv(const Engine *eng) { return &eng->cfg.kv; }

uint64_t eng_kv_total_blocks(const Engine *eng) { return eng->cfg.kv.total_blocks(eng->cfg.kv.ctx); }
uint32_t eng_kv_block_tokens(const Engine *eng) { return eng->cfg.block_tokens ? eng->cfg.block_tokens : 16; }

uint64_t eng_kv_free_blocks(const Engine *eng)
{
    uint64_t t = eng->cfg.kv.total_blocks(eng->cfg.kv.ctx), u = eng->cfg.kv.used_blocks(eng->cfg.kv.ctx);
    return t > u ? t - u : 0;
}

/* ------------------------------------------------------------ decode group */

static void finish_request(Engine *eng, Request *r);

/* The block phase of a member with kv_len - base = off: it needs a block
 * at the launch of step g_S + 1 when g_S % B equals it. */
static uint32_t g_phase(const Engine *eng, int64_t off)
{
    const int64_t B = eng->cfg.kv.grow_block_tokens, q = (-off) % B;
    return (uint32_t)(q < 0 ? q + B : q);
}

static int g_is(const Engine *eng, uint32_t idx)
{
    return idx < eng->g_cap && eng->g_mem[idx];
}

static int g_less(const Engine *eng, uint32_t a, uint32_t b)
{
    return eng->g_fin[a] < eng->g_fin[b] ||
           (eng->g_fin[a] == eng->g_fin[b] && eng->reqs[a].admit_seq < eng->reqs[b].admit_seq);
}

static void g_heap_push(Engine *eng, uint32_t idx)
{
    uint32_t *h = eng->g_heap, i = eng->g_heap_n++;
    while (i > 0 && g_less(eng, idx, h[(i - 1) / 2])) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = idx;
}

static uint32_t g_heap_pop(Engine *eng)
{
    uint32_t *h = eng->g_heap, top = h[0], last = h[--eng->g_heap_n], n = eng->g_heap_n, i = 0;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && g_less(eng, h[c + 1], h[c])) c++;
        if (!g_less(eng, h[c], last)) break;
        h[i] = h[c];
        i = c;
    }
    if (n > 0) h[i] = last;
    return top;
}

/* The longest step in (base, g_S]: the first kept step after base (the
 * kept durations decrease). */
static int64_t g_range_max(const Engine *eng, uint64_t base)
{
    uint32_t lo = eng->g_dq_head, hi = eng->g_dq_head + eng->g_dq_n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (eng->g_dq[mid].step > base) hi = mid;
        else lo = mid + 1;
    }
    return lo < eng->g_dq_head + eng->g_dq_n ? eng->g_dq[lo].dur : 0;
}

/* A member's fields brought up to step g_S (it stays a member). */
static void g_materialise(Engine *eng, uint32_t idx)
{
    Request *r = &eng->reqs[idx];
    uint64_t k = eng->g_S - eng->g_base[idx];
    if (!k) return;
    r->kv_len += (uint32_t)k;
    r->generated += (uint32_t)k;
    r->t_last_token_ns = eng->g_tlast;
    int64_t m = g_range_max(eng, eng->g_base[idx]);
    if (m > r->itl_max_ns) r->itl_max_ns = m;
    eng->g_base[idx] = eng->g_S;
}

static void g_ensure(Engine *eng)
{
    if (eng->g_cap >= eng->n_reqs) return;
    uint32_t old = eng->g_cap, cap = eng->n_reqs;
    eng->g_mem = xrealloc(eng->g_mem, cap * sizeof *eng->g_mem);
    memset(eng->g_mem + old, 0, (cap - old) * sizeof *eng->g_mem);
    eng->g_base = xrealloc(eng->g_base, cap * sizeof *eng->g_base);
    eng->g_fin = xrealloc(eng->g_fin, cap * sizeof *eng->g_fin);
    eng->g_bpos = xrealloc(eng->g_bpos, cap * sizeof *eng->g_bpos);
    eng->g_heap = xrealloc(eng->g_heap, cap * sizeof *eng->g_heap);
    eng->g_gone = xrealloc(eng->g_gone, cap * sizeof *eng->g_gone);
    eng->g_gone_f = xrealloc(eng->g_gone_f, cap * sizeof *eng->g_gone_f);
    memset(eng->g_gone_f + old, 0, (cap - old) * sizeof *eng->g_gone_f);
    if (!eng->g_bk) {
        uint32_t B = eng->cfg.kv.grow_block_tokens;
        eng->g_bk = xcalloc(B, sizeof *eng->g_bk);
        eng->g_bk_n = xcalloc(B, sizeof *eng->g_bk_n);
        eng->g_bk_cap = xcalloc(B, sizeof *eng->g_bk_cap);
    }
    eng->g_cap = cap;
}

static void g_join(Engine *eng, uint32_t idx)
{
    g_ensure(eng);
    const Request *r = &eng->reqs[idx];
    const int64_t off = (int64_t)r->kv_len - (int64_t)eng->g_S;
    eng->g_mem[idx] = 1;
    eng->g_base[idx] = eng->g_S;
    eng->g_fin[idx] = eng->g_S + (r->output_tokens - r->generated);
    g_heap_push(eng, idx);
    uint32_t q = g_phase(eng, off);
    if (eng->g_bk_n[q] == eng->g_bk_cap[q]) {
        eng->g_bk_cap[q] = eng->g_bk_cap[q] ? 2 * eng->g_bk_cap[q] : 16;
        eng->g_bk[q] = xrealloc(eng->g_bk[q], eng->g_bk_cap[q] * sizeof *eng->g_bk[q]);
    }
    eng->g_bpos[idx] = eng->g_bk_n[q];
    eng->g_bk[q][eng->g_bk_n[q]++] = idx;
    eng->g_sum_off += off;
    if (eng->g_n == 0 || off < eng->g_min_off) eng->g_min_off = off;
    if (eng->g_n == 0 || off > eng->g_max_off) eng->g_max_off = off;
    eng->g_n++;
    eng->g_dirty = 1;
}

/* A finished member leaves (it was popped from the heap). */
static void g_leave(Engine *eng, uint32_t idx)
{
    const Request *r = &eng->reqs[idx];
    const int64_t off = (int64_t)r->kv_len - (int64_t)eng->g_base[idx];
    uint32_t q = g_phase(eng, off), p = eng->g_bpos[idx], last = eng->g_bk[q][--eng->g_bk_n[q]];
    eng->g_bk[q][p] = last;
    eng->g_bpos[last] = p;
    eng->g_mem[idx] = 0;
    eng->g_sum_off -= off;
    eng->g_n--;
    /* the extremes are taken again only when one of them may have left */
    if (off == eng->g_min_off || off == eng->g_max_off) eng->g_mm_dirty = 1;
    eng->g_dirty = 1;
}

/* Every member's fields up to g_S and the group gone; a step already
 * planned (or in flight) becomes explicit decode items at the front of
 * the plan, in running order, as the scheduler's step 1 had put them. */
static void g_dissolve(Engine *eng)
{
    if (!eng->g_on) return;
    uint32_t n = 0;
    for (uint32_t i = 0; i < eng->n_running; i++) {
        uint32_t idx = eng->running[i];
        if (idx < eng->g_cap && eng->g_mem[idx]) {
            g_materialise(eng, idx);
            n++;
        }
    }
    if (eng->g_planned && n > 0) {
        BatchPlan *pl = &eng->plan;
        memmove(&pl->items[n], &pl->items[0], pl->n * sizeof *pl->items);
        uint32_t k = 0;
        for (uint32_t i = 0; i < eng->n_running; i++) {
            uint32_t idx = eng->running[i];
            if (!g_is(eng, idx)) continue;
            pl->items[k++] = (BatchItem){.req = idx, .c = 1, .h = eng->reqs[idx].kv_len, .kind = ITEM_DECODE,
                                         .samples = 1};
        }
        pl->n += n;
        pl->n_decode += n;
        pl->new_tokens += n;
        for (uint32_t i = 0; i < pl->n; i++) eng->plan_pos[pl->items[i].req] = i;
    }
    for (uint32_t i = 0; i < eng->n_running; i++) {
        uint32_t idx = eng->running[i];
        if (idx < eng->g_cap) eng->g_mem[idx] = 0;
    }
    uint32_t B = eng->cfg.kv.grow_block_tokens;
    for (uint32_t q = 0; eng->g_bk_n && q < B; q++) eng->g_bk_n[q] = 0;
    eng->g_heap_n = 0;
    eng->g_dq_head = eng->g_dq_n = 0;
    eng->g_n = eng->g_step_n = 0;
    eng->g_sum_off = 0;
    eng->g_on = eng->g_planned = eng->g_reform = eng->g_mm_dirty = 0;
}

/* The group can run: the engine's configuration leaves no per-token or
 * per-item observer, and the scheduler plans around it. */
static int g_static_ok(const Engine *eng)
{
    const EngineConfig *c = &eng->cfg;
    return !eng->fast_off && !eng->fast_unsupported && c->sched.schedule_rest && c->sched.steady &&
           c->cost.decode_time && c->kv.grow_block_tokens && c->kv.grow_block_tokens <= 4096 && !c->kv.commit &&
           !c->has_spec && !c->n_hooks && !c->prefill_only && !c->sink.on_token &&
           (!c->sink.on_iteration || c->sink.plan_counts_only) && !eng->slot_tt;
}

/* Forms the group of every decoding running request at a boundary: each
 * emitted its last token now (so each gap of the group is an iteration's
 * duration).  0 when one did not. */
static int g_form(Engine *eng)
{
    if (eng->n_parked || eng->n_cancel_pending || eng->extra_s != 0 || eng->livelocked) return 0;
    uint32_t n = 0;
    for (uint32_t i = 0; i < eng->n_running; i++) {
        const Request *r = &eng->reqs[eng->running[i]];
        if (!request_decoding(r)) continue;
        if (r->t_last_token_ns != eng->now_ns || r->blocked || r->cancel_pending || r->generated == 0 ||
            r->generated >= r->output_tokens || r->state != REQ_RUNNING)
            return 0;
        n++;
    }
    if (n == 0) return 0;
    eng->g_S = 0;
    eng->g_n = 0;
    eng->g_on = 1;
    for (uint32_t i = 0; i < eng->n_running; i++)
        if (request_decoding(&eng->reqs[eng->running[i]])) g_join(eng, eng->running[i]);
    eng->g_dirty = 1;
    return 1;
}

/* The end of the group's step: every member emits a token, the gap the
 * step's duration; the members with their last token finish, in running
 * order (the order of the scheduler's decode items). */
static void g_step_end(Engine *eng)
{
    const int64_t d = eng->g_dur;
    const uint32_t n = eng->g_step_n;
    eng->g_S++;
    eng->g_tlast = eng->now_ns;
    while (eng->g_dq_n > 0 && eng->g_dq[eng->g_dq_head + eng->g_dq_n - 1].dur <= d) eng->g_dq_n--;
    if (eng->g_dq_head + eng->g_dq_n == eng->g_dq_cap) {
        if (eng->g_dq_head > eng->g_dq_cap / 2) {
            memmove(eng->g_dq, eng->g_dq + eng->g_dq_head, eng->g_dq_n * sizeof *eng->g_dq);
            eng->g_dq_head = 0;
        } else {
            eng->g_dq_cap = eng->g_dq_cap ? 2 * eng->g_dq_cap : 256;
            eng->g_dq = xrealloc(eng->g_dq, eng->g_dq_cap * sizeof *eng->g_dq);
        }
    }
    eng->g_dq[eng->g_dq_head + eng->g_dq_n++] = (struct GStep){eng->g_S, d};
    if (eng->itl_acc) statacc_add_ns_n(eng->itl_acc, d, n);
    eng->st.decode_tokens += n;
    eng->g_step_n = 0;
    eng->g_planned = 0;
    while (eng->g_heap_n > 0 && eng->g_fin[eng->g_heap[0]] == eng->g_S) {
        uint32_t idx = g_heap_pop(eng);
        g_materialise(eng, idx);
        g_leave(eng, idx);
        finish_request(eng, &eng->reqs[idx]);
    }
    if (eng->g_dq_n > 4096) {
        /* long-lived members keep many steps: bring everyone to g_S and
         * forget them */
        for (uint32_t i = 0; i < eng->n_running; i++)
            if (g_is(eng, eng->running[i])) g_materialise(eng, eng->running[i]);
        eng->g_dq_head = eng->g_dq_n = 0;
    }
}

/* ---------------------------------------------------------------- queues */

/* Sort key of a queued request under the queue order: smaller goes first. */
static int queue_before(const Engine *eng, const Request *a, const Request *b)
{
    switch (eng->cfg.queue_order) {
    case QUEUE_PRIORITY: return a->priority > b->priority;
    case QUEUE_EDF: {
        int64_t da = a->deadline_ns < 0 ? INT64_MAX : a->deadline_ns;
        int64_t db = b->deadline_ns < 0 ? INT64_MAX : b->deadline_ns;
        return da < db;
    }
    default: return 0;
    }
}

static void waiting_push_back(Engine *eng, uint32_t idx)
{
    uint32_t n = eng->n_reqs, pos = eng->w_len;
    /* Under a priority or EDF order the newcomer moves ahead of every
     * request it sorts before (stable: equals keep arrival order). */
    if (eng->cfg.queue_order != QUEUE_FCFS)
        while (pos > 0 && queue_before(eng, &eng->reqs[idx], &eng->reqs[eng->waiting[(eng->w_head + pos - 1) % n]])) {
            eng->waiting[(eng->w_head + pos) % n] = eng->waiting[(eng->w_head + pos - 1) % n];
            pos--;
        }
    eng->waiting[(eng->w_head + pos) % n] = idx;
    eng->w_len++;
}

static void waiting_push_front(Engine *eng, uint32_t idx)
{
    eng->w_head = (eng->w_head + eng->n_reqs - 1) % eng->n_reqs;
    eng->waiting[eng->w_head] = idx;
    eng->w_len++;
}

static void waiting_remove(Engine *eng, uint32_t pos)
{
    if (pos == 0) {
        eng->w_head = (eng->w_head + 1) % eng->n_reqs;
    } else {
        for (uint32_t i = pos; i + 1 < eng->w_len; i++)
            eng->waiting[(eng->w_head + i) % eng->n_reqs] = eng->waiting[(eng->w_head + i + 1) % eng->n_reqs];
    }
    eng->w_len--;
}

static void running_remove(Engine *eng, uint32_t idx)
{
    uint32_t j = 0;
    for (uint32_t i = 0; i < eng->n_running; i++)
        if (eng->running[i] != idx) eng->running[j++] = eng->running[i];
    eng->n_running = j;
}

/* ------------------------------------------------------- scheduler calls */

/* One direction of a swap: r's KV over the host link, compressed when the
 * scenario asks for it and it wins (offload.h). */
static double swap_s(const Engine *eng, const Request *r)
{
    double bytes = (double)r->kv_len * eng->cfg.kv_bytes_per_token;
    return offload_kv_transfer_s(bytes, eng->cfg.swap_bw_bytes_per_s, eng->cfg.kv_xfer_ratio,
                                 eng->cfg.kv_xfer_dec_bytes_per_s, NULL);
}

int eng_admit(Engine *eng, uint32_t pos, uint32_t first_chunk)
{
    if (pos >= eng->w_len) return 0;
    uint32_t idx = eng_waiting_at(eng, pos);
    Request *r = &eng->reqs[idx];
    for (uint32_t k = 0; k < eng->cfg.n_hooks; k++) {
        const BatchHook *h = &eng->cfg.hooks[k];
        if (h->admit_ok && !h->admit_ok(h->ctx, eng, r)) return 0;
    }
    if (!eng->cfg.kv.admit(eng->cfg.kv.ctx, r, first_chunk)) return 0;
    r->kv_blocks = eng->cfg.kv.blocks_of(eng->cfg.kv.ctx, r);
    waiting_remove(eng, pos);
    if (r->swapped) {
        /* its KV comes back from host memory before this iteration runs */
        eng->extra_s += swap_s(eng, r);
        r->swapped = 0;
    }
    r->state = REQ_RUNNING;
    r->admit_seq = ++eng->admit_counter;
    if (r->t_first_sched_ns < 0) r->t_first_sched_ns = eng->now_ns;
    eng->running[eng->n_running++] = idx;
    if (r->incoming) {
        /* blocks reserved on both sides now; the transfer starts */
        r->incoming = 0;
        r->blocked = 1;
        if (eng->cfg.on_incoming_admit) eng->cfg.on_incoming_admit(eng->cfg.incoming_ctx, idx, eng->now_ns);
    }
    return 1;
}

/* Engine-wide progress for the livelock guard: tokens decoded, prompt
 * tokens fed and kept (fed minus those a preemption threw away), requests
 * finished, rejected or cancelled. */
static uint64_t engine_progress(const Engine *eng)
{
    const EngineStats *st = &eng->st;
    uint64_t kept = st->prefill_tokens > st->recomputed_tokens ? st->prefill_tokens - st->recomputed_tokens : 0;
    return st->decode_tokens + kept + st->finished + st->rejected + st->cancelled;
}

static void plan_remove(Engine *eng, uint32_t idx)
{
    uint32_t p = eng->plan_pos[idx];
    if (p == NO_POS) return;
    BatchPlan *pl = &eng->plan;
    BatchItem *it = &pl->items[p];
    pl->new_tokens -= it->c;
    if (it->kind == ITEM_PREFILL) pl->n_prefill--; else pl->n_decode--;
    memmove(&pl->items[p], &pl->items[p + 1], (pl->n - p - 1) * sizeof *it);
    pl->n--;
    eng->plan_pos[idx] = NO_POS;
    for (uint32_t i = p; i < pl->n; i++) eng->plan_pos[pl->items[i].req] = i;
}

void eng_preempt(Engine *eng, uint32_t idx)
{
    Request *r = &eng->reqs[idx];
    if (r->state != REQ_RUNNING) return;
    if (eng->g_on) {
        /* blocks come back: the scheduler may admit again; a member
         * leaves the group's arithmetic, so the group dissolves */
        eng->g_dirty = 1;
        if (idx < eng->g_cap && eng->g_mem[idx]) g_dissolve(eng);
    }
    plan_remove(eng, idx);
    running_remove(eng, idx);
    eng->cfg.kv.release(eng->cfg.kv.ctx, r);
    r->kv_blocks = 0;
    if (eng->cfg.preempt_swap && r->kv_len > 0) {
        /* swap: the KV moves to host memory over the link and keeps its
         * length; the copy out delays the current iteration */
        eng->extra_s += swap_s(eng, r);
        r->swapped = 1;
        eng->st.swapped_tokens += r->kv_len;
    } else {
        r->recomputed_tokens += r->kv_len;
        eng->st.recomputed_tokens += r->kv_len;
        r->kv_len = 0;
        r->prefill_target = r->prompt_tokens + r->generated;
    }
    r->preemptions++;
    eng->st.preemptions++;
    if (!eng->livelocked) {
        if (r->preemptions >= ENGINE_MAX_PREEMPTIONS) eng->livelocked = idx + 1;
        else if (eng->st.preemptions > ENGINE_MAX_PREEMPTIONS + ENGINE_PREEMPTIONS_PER_PROGRESS * engine_progress(eng)) {
            eng->livelocked = idx + 1;
            eng->livelock_wide = 1;
        }
    }
    r->state = REQ_QUEUED;
    waiting_push_front(eng, idx);
}

static void trigger_next(Engine *eng, const Request *r);

/* Parallel sampling: r's n_samples - 1 branches made into slots (kept
 * free for them since r was pulled) and linked by next_branch (slot
 * indices), as a workload links its branch records; nothing when r has
 * none to make (or made them before). */
static void make_branches(Engine *eng, Request *r)
{
    if (r->n_samples <= 1) return;
    uint32_t *link = &r->next_branch, parent = r->idx, n = r->n_samples;
    *link = REQ_NONE;
    r->n_samples = 1;
    for (uint32_t k = 1; k < n; k++) {
        uint32_t b;
        if (!slots_branch(eng->slots, parent, k, &b)) break; /* the run stops: slots_error */
        Request *x = &eng->reqs[b];
        x->branch_of = parent;
        x->replica = eng->reqs[parent].replica;
        x->arrive_rank = eng->reqs[parent].arrive_rank; /* its rank's group: the parent's arrival */
        *link = b;
        link = &x->next_branch;
    }
}

/* A request's branches have all been resolved: they are not followed
 * again (their slots are reused once they leave). */
static void unlink_branches(Request *r)
{
    r->next_branch = REQ_NONE;
}

static void finish_rejected(Engine *eng, Request *r, RejectReason why)
{
    r->state = REQ_REJECTED;
    r->reject_reason = (uint8_t)why;
    r->t_finish_ns = eng->now_ns;
    eng->st.rejected++;
    if (eng->cfg.sink.on_done) eng->cfg.sink.on_done(eng->cfg.sink.ctx, r);
    eng->retiring[eng->n_retiring++] = r->idx;
    trigger_next(eng, r);
    /* branches of a rejected request never start */
    make_branches(eng, r);
    for (uint32_t b = r->next_branch; b != REQ_NONE; b = eng->reqs[b].next_branch)
        if (eng->reqs[b].state == REQ_PENDING) {
            Request *x = &eng->reqs[b];
            x->t_arrive_ns = r->t_arrive_ns;
            x->state = REQ_REJECTED;
            x->reject_reason = r->reject_reason;
            x->t_finish_ns = eng->now_ns;
            eng->st.rejected++;
            eng->retiring[eng->n_retiring++] = b;
        }
    unlink_branches(r);
}

void eng_reject(Engine *eng, uint32_t idx, RejectReason why)
{
    Request *r = &eng->reqs[idx];
    if (r->state != REQ_QUEUED) return;
    for (uint32_t i = 0; i < eng->w_len; i++)
        if (eng_waiting_at(eng, i) == idx) {
            waiting_remove(eng, i);
            break;
        }
    finish_rejected(eng, r, why);
}

int eng_plan_add(Engine *eng, uint32_t idx, uint32_t c)
{
    Request *r = &eng->reqs[idx];
    if (r->state != REQ_RUNNING || eng->plan_pos[idx] != NO_POS || r->blocked) return 0;
    uint8_t kind = ITEM_PREFILL, samples;
    uint32_t new_len;
    if (c == 0) {
        kind = ITEM_DECODE;
        c = 1;
        samples = 1;
        if (eng->cfg.has_spec) {
            /* a speculative round: m drafts verified with the fed token;
             * never propose past the tokens still to produce */
            uint32_t m = eng->cfg.spec.draft_len(eng->cfg.spec.ctx, r, eng->n_running);
            uint32_t left = r->output_tokens > r->generated ? r->output_tokens - r->generated : 1;
            if (m > left - 1) m = left - 1;
            if (m > 0) {
                kind = ITEM_VERIFY;
                c = m + 1;
            }
        }
    } else {
        uint32_t left = request_prefill_left(r);
            if (c > left) c = left;
        if (c == 0) return 0;
        samples = r->kv_len + c == r->prefill_target;
    }
    new_len = r->kv_len + c;
    while (!eng->cfg.kv.grow(eng->cfg.kv.ctx, r, new_len)) {
        /* Pool exhausted: preempt the most recently admitted request.  If
         * that is this one, it yields its own blocks and waits. */
        uint32_t victim = eng->running[eng->n_running - 1];
        eng_preempt(eng, victim);
        if (victim == idx) return 0;
    }
    r->kv_blocks = eng->cfg.kv.blocks_of(eng->cfg.kv.ctx, r);
    BatchPlan *pl = &eng->plan;
    eng->plan_pos[idx] = pl->n;
    pl->items[pl->n++] = (BatchItem){.req = idx, .c = c, .h = r->kv_len, .kind = kind, .samples = samples};
    pl->new_tokens += c;
    if (kind == ITEM_PREFILL) pl->n_prefill++; else pl->n_decode++;
    return (int)c;
}

/* ---------------------------------------------------------------- loop */

/* r left the system: the request its chain goes on with (the next turn of
 * a session, the next request of a closed-loop client) arrives after its
 * think time; the source makes it then (ENGINE_EV_FOLLOW). */
static void follow_up(Engine *eng, const Request *r)
{
    int64_t think;
    if (slots_follow(eng->slots, r, &think))
        evq_push(eng->evq, eng->now_ns + think + eng->cfg.trigger_delay_ns, ENGINE_EV_FOLLOW, r->chain);
}

static void trigger_next(Engine *eng, const Request *r)
{
    EngineBarrier *b = eng->cfg.barrier;
    /* a barrier's waiters are chains of their own */
    if (r->barrier_member && b && b->left > 0 && --b->left == 0)
        for (uint32_t i = 0; i < b->n_waiters; i++) follow_up(eng, &(Request){.chain = b->waiters[i]});
    follow_up(eng, r);
}

/* A serial front end takes request idx, sent now: it waits for the work
 * queued before it -- earlier requests, and the tokens the replica emitted
 * since the last send (taken as queued from that send on) -- and reaches
 * the scheduler fe_serial_ns after its turn comes (ENGINE_EV_FRONT; its
 * t_arrive_ns stays the send).  Sends come in time order (events), so this
 * is the FIFO server's recursion; the tokens between two sends are its one
 * approximation. */
static void front_end_take(Engine *eng, uint32_t idx, int64_t now_ns)
{
    Request *r = &eng->reqs[idx];
    uint64_t tok = eng->st.decode_tokens - eng->fe_tokens;
    eng->fe_tokens = eng->st.decode_tokens;
    int64_t f = MAX(eng->fe_free_ns, eng->fe_last_ns) + llround((double)tok * eng->cfg.fe_token_ns);
    eng->fe_last_ns = now_ns;
    int64_t start = MAX(f, now_ns);
    r->fe_passed = 1;
    eng->fe_free_ns = start + eng->cfg.fe_serial_ns + llround((double)r->prompt_tokens * eng->cfg.fe_prompt_token_ns);
    r->fe_wait_ns = eng->fe_free_ns - now_ns;
    evq_push(eng->evq, eng->fe_free_ns, ENGINE_EV_FRONT, idx);
}

void engine_enqueue(Engine *eng, uint32_t idx, int64_t now_ns)
{
    Request *r = &eng->reqs[idx];
    if (eng->cfg.fe_serial && !r->fe_passed) {
        front_end_take(eng, idx, now_ns);
        return;
    }
    eng->now_ns = now_ns;
    eng->st.t_last_event_ns = now_ns;
    r->state = REQ_QUEUED;
    if (eng->cfg.max_context && (uint64_t)r->prompt_tokens + r->output_tokens - 1 > eng->cfg.max_context) {
        finish_rejected(eng, r, REJECT_CONTEXT);
        return;
    }
    if (eng->cfg.kv.need_blocks(eng->cfg.kv.ctx, r) > eng->cfg.kv.total_blocks(eng->cfg.kv.ctx)) {
        finish_rejected(eng, r, REJECT_KV_TOO_SMALL);
        return;
    }
    if (r->cancel_after_ns > 0 && !r->incoming) {
        evq_push(eng->evq, MAX(now_ns, r->t_arrive_ns + r->cancel_after_ns), ENGINE_EV_CANCEL, idx);
        r->cancel_queued = 1;
    }
    waiting_push_back(eng, idx);
    eng->g_dirty = 1;
    if (eng->w_len > eng->st.peak_waiting) eng->st.peak_waiting = eng->w_len;
    if (eng->cfg.sched.on_arrival) eng->cfg.sched.on_arrival(eng->cfg.sched.ctx, eng, idx);
}

static void emit_token(Engine *eng, Request *r)
{
    int64_t t = eng->now_ns;
    if (eng->slot_tt) eng->slot_tt[r->idx][r->generated] = t;
    if (r->generated == 0) r->t_first_token_ns = t;
    else {
        if (t - r->t_last_token_ns > r->itl_max_ns) r->itl_max_ns = t - r->t_last_token_ns;
        if (eng->itl_acc) statacc_add_ns(eng->itl_acc, t - r->t_last_token_ns);
    }
    r->t_last_token_ns = t;
    if (eng->cfg.sink.on_token) eng->cfg.sink.on_token(eng->cfg.sink.ctx, r, r->generated, t);
    r->generated++;
}

/* r emitted its last token: it leaves, frees its KV, and may trigger the
 * next request of its client or session. */
static void finish_request(Engine *eng, Request *r)
{
    if (eng->g_on) {
        g_ensure(eng);
        eng->g_gone[eng->g_n_gone++] = r->idx; /* for the running list's compaction */
        eng->g_gone_f[r->idx] = 1;
    }
    r->state = REQ_FINISHED;
    r->t_finish_ns = eng->now_ns;
    eng->cfg.kv.release(eng->cfg.kv.ctx, r);
    r->kv_blocks = 0;
    eng->st.finished++;
    if (eng->cfg.sink.on_done) eng->cfg.sink.on_done(eng->cfg.sink.ctx, r);
    eng->retiring[eng->n_retiring++] = r->idx;
    trigger_next(eng, r);
}

/* Parallel sampling: the parent's prefill is done; every branch starts
 * from its KV (shared where the policy can), samples its first token from
 * the same logits now, and decodes on its own.  A branch the pool cannot
 * hold waits in the queue and prefills itself. */
static void fork_branches(Engine *eng, uint32_t parent)
{
    Request *p = &eng->reqs[parent];
    if (eng->g_on) eng->g_reform = 1; /* branches decode outside the group: it dissolves at the boundary */
    make_branches(eng, p);
    for (uint32_t b = p->next_branch; b != REQ_NONE; b = eng->reqs[b].next_branch) {
        Request *r = &eng->reqs[b];
        if (r->state != REQ_PENDING) continue;
        r->t_arrive_ns = p->t_arrive_ns;
        r->t_first_sched_ns = p->t_first_sched_ns;
        r->prefill_target = r->prompt_tokens;
        if (eng->cfg.kv.fork && eng->cfg.kv.fork(eng->cfg.kv.ctx, p, r)) {
            r->kv_len = p->kv_len;
            r->kv_blocks = eng->cfg.kv.blocks_of(eng->cfg.kv.ctx, r);
            r->state = REQ_RUNNING;
            r->admit_seq = ++eng->admit_counter;
            eng->running[eng->n_running++] = b;
            emit_token(eng, r);
            if (r->generated >= r->output_tokens) finish_request(eng, r);
        } else {
            r->kv_len = 0;
            r->state = REQ_QUEUED;
            waiting_push_back(eng, b);
        }
    }
    unlink_branches(p);
}

/* ---------------------------------------------------------- cancellation */

static void cancel_release(Engine *eng, Request *r)
{
    eng->cfg.kv.release(eng->cfg.kv.ctx, r);
    r->kv_blocks = 0;
    r->t_finish_ns = eng->now_ns;
    if (eng->cfg.sink.on_done) eng->cfg.sink.on_done(eng->cfg.sink.ctx, r);
    eng->retiring[eng->n_retiring++] = r->idx;
}

/* The iteration that read the parked requests' blocks has ended. */
static void release_parked(Engine *eng)
{
    for (uint32_t i = 0; i < eng->n_parked; i++) cancel_release(eng, &eng->reqs[eng->parked[i]]);
    eng->n_parked = 0;
}

/* r's cancel takes effect now (a boundary, or an idle replica): the
 * client's call returns, r stops, its blocks go back now or (may_lag with
 * cancel_lag: the iteration launched at this boundary reads them) when the
 * next iteration ends.  The caller takes r off the running list. */
static void cancel_leave(Engine *eng, Request *r, int may_lag)
{
    if (r->cancel_pending && eng->n_cancel_pending > 0) eng->n_cancel_pending--;
    r->cancel_pending = 0;
    r->state = REQ_CANCELLED;
    r->t_cancel_ns = eng->now_ns;
    r->cancel_blocks = r->kv_blocks;
    eng->st.cancelled++;
    make_branches(eng, r);
    for (uint32_t b = r->next_branch; b != REQ_NONE; b = eng->reqs[b].next_branch)
        if (eng->reqs[b].state == REQ_PENDING) {
            Request *x = &eng->reqs[b];
            x->t_arrive_ns = r->t_arrive_ns;
            x->state = REQ_CANCELLED;
            x->t_cancel_ns = x->t_finish_ns = eng->now_ns;
            eng->st.cancelled++;
            eng->retiring[eng->n_retiring++] = b;
        }
    unlink_branches(r);
    if (may_lag && eng->cfg.cancel_lag && r->kv_blocks > 0) eng->parked[eng->n_parked++] = r->idx;
    else cancel_release(eng, r);
    trigger_next(eng, r);
}

void engine_cancel(Engine *eng, uint32_t idx, int64_t now_ns)
{
    Request *r = &eng->reqs[idx];
    if (r->state != REQ_QUEUED && r->state != REQ_RUNNING) return; /* it already left */
    g_dissolve(eng); /* a cancel is rare: every running request as the slow path keeps it */
    if (now_ns > eng->now_ns) eng->now_ns = now_ns;
    eng->st.t_last_event_ns = eng->now_ns;
    if (r->state == REQ_QUEUED) {
        for (uint32_t i = 0; i < eng->w_len; i++)
            if (eng_waiting_at(eng, i) == idx) {
                waiting_remove(eng, i);
                break;
            }
        r->swapped = 0; /* a swapped-out copy in host memory is dropped */
        cancel_leave(eng, r, 0);
    } else if (r->state == REQ_RUNNING) {
        /* an in-flight iteration or KV transfer still uses its blocks: the
         * boundary after it (or the transfer's end) acts */
        if (!r->cancel_pending) eng->n_cancel_pending++;
        r->cancel_pending = 1;
        if (eng->busy || r->blocked) return;
        running_remove(eng, idx);
        cancel_leave(eng, r, 0);
    }
}

/* The end of an iteration: every item advances. */
void engine_iter_end(Engine *eng, int64_t now_ns)
{
    eng->now_ns = now_ns;
    eng->st.t_last_event_ns = now_ns;
    release_parked(eng);
    const uint64_t left0f = eng->st.finished, left0c = eng->st.cancelled;
    for (uint32_t g = 0; g < eng->g_n_gone; g++) eng->g_gone_f[eng->g_gone[g]] = 0;
    eng->g_n_gone = 0;
    if (eng->g_step_n) g_step_end(eng); /* the group's decode items came first in the plan */
    BatchPlan *pl = &eng->plan;
    for (uint32_t i = 0; i < pl->n; i++) {
        const BatchItem *it = &pl->items[i];
        Request *r = &eng->reqs[it->req];
        eng->plan_pos[it->req] = NO_POS;
        if (r->cancel_pending) continue; /* cancelled meanwhile: its work is discarded */
        uint32_t emit = 1;
        if (it->kind == ITEM_VERIFY) {
            /* KV was written for every verified position; it rolls back to
             * the accepted drafts plus the token the target model adds */
            uint32_t m = it->c - 1, k = eng->cfg.spec.accepted(eng->cfg.spec.ctx, r, m);
            uint32_t left = r->output_tokens - r->generated;
            emit = k + 1 < left ? k + 1 : left;
            r->kv_len += emit;
            r->spec_rounds++;
            r->spec_drafted += m;
            r->spec_accepted += emit - 1;
            eng->st.spec_rounds++;
            eng->st.spec_drafted += m;
            eng->st.spec_accepted += emit - 1;
            eng->st.spec_emitted += emit;
        } else {
            r->kv_len += it->c;
        }
        if (eng->cfg.kv.commit) eng->cfg.kv.commit(eng->cfg.kv.ctx, r);
        if (it->kind == ITEM_PREFILL) eng->st.prefill_tokens += it->c;
        else eng->st.decode_tokens += it->c;
        if (!it->samples) continue;
        if (r->generated == 0 && r->n_samples > 1) fork_branches(eng, it->req);
        for (uint32_t k = 1; k < emit; k++) emit_token(eng, r);
        emit_token(eng, r);
        if (eng->cfg.prefill_only && r->generated < r->output_tokens) {
            /* prefill done: hand over to a decode replica; keep the KV
             * until the transfer completes */
            r->state = REQ_TRANSFER;
            if (eng->cfg.handoff) eng->cfg.handoff(eng->cfg.handoff_ctx, it->req, eng->now_ns);
            continue;
        }
        if (r->generated >= r->output_tokens) finish_request(eng, r);
        else if (eng->g_on && r->state == REQ_RUNNING && request_decoding(r)) g_join(eng, it->req);
    }
    /* The boundary sees the cancels that came during the iteration. */
    for (uint32_t i = 0; eng->n_cancel_pending > 0 && i < eng->n_running; i++) {
        Request *r = &eng->reqs[eng->running[i]];
        if (r->state == REQ_RUNNING && r->cancel_pending && !r->blocked) cancel_leave(eng, r, 1);
    }
    /* Finished requests leave the running list, order preserved (with the
     * group formed only finishes and cancels leave it). */
    if (eng->g_on && eng->st.cancelled == left0c && eng->st.finished - left0f == eng->g_n_gone) {
        /* only the finished ones recorded leave: found without reading
         * every running request */
        if (eng->g_n_gone > 0) {
            uint32_t j = 0, k = 0, i = 0;
            for (; i < eng->n_running && k < eng->g_n_gone; i++) {
                uint32_t idx = eng->running[i];
                if (eng->g_gone_f[idx]) k++;
                else eng->running[j++] = idx;
            }
            /* past the last one gone the rest only moves down */
            memmove(&eng->running[j], &eng->running[i], (eng->n_running - i) * sizeof *eng->running);
            eng->n_running = j + (eng->n_running - i);
        }
    } else {
        uint32_t j = 0;
        for (uint32_t i = 0; i < eng->n_running; i++)
            if (eng->reqs[eng->running[i]].state == REQ_RUNNING) eng->running[j++] = eng->running[i];
        eng->n_running = j;
    }
    for (uint32_t g = 0; g < eng->g_n_gone; g++) eng->g_gone_f[eng->g_gone[g]] = 0;
    eng->g_n_gone = 0;
    pl->n = 0;
    pl->new_tokens = 0;
    pl->n_prefill = pl->n_decode = 0;
    eng->busy = 0;
}

static void record_iteration(Engine *eng, int64_t dur_ns, const CostBreakdown *cb)
{
    EngineStats *st = &eng->st;
    const BatchPlan *pl = &eng->plan;
    /* the group's decode items are counted, not listed (plan_counts_only) */
    const uint32_t gn = eng->g_step_n;
    BatchPlan view;
    if (gn) {
        view = *pl;
        view.n += gn;
        view.n_decode += gn;
        view.new_tokens += gn;
    }
    uint64_t used = eng->cfg.kv.used_blocks(eng->cfg.kv.ctx);
    st->iterations++;
    st->batch_items += pl->n + gn;
    st->busy_ns += dur_ns;
    st->kv_block_ns += (double)used * (double)dur_ns;
    st->running_ns += (double)eng->n_running * (double)dur_ns;
    st->waiting_ns += (double)eng->w_len * (double)dur_ns;
    if (used > st->kv_peak_used_blocks) st->kv_peak_used_blocks = used;
    if (eng->n_running > st->peak_running) st->peak_running = eng->n_running;
    st->flops += cb->flops;
    st->bytes += cb->bytes;
    st->t_gemm_s += cb->gemm_s;
    st->t_attn_s += cb->attn_s;
    st->t_lm_head_s += cb->lm_head_s;
    st->t_comm_s += cb->comm_s;
    st->t_overhead_s += cb->overhead_s;
    if (eng->cfg.sink.on_iteration)
        eng->cfg.sink.on_iteration(eng->cfg.sink.ctx, eng->replica, eng->now_ns, dur_ns, gn ? &view : pl, cb, used);
    if (!eng->cfg.keep_iterations && !eng->cfg.sink.on_record) return;
    uint64_t pre = 0;
    for (uint32_t i = 0; i < pl->n; i++)
        if (pl->items[i].kind == ITEM_PREFILL) pre += pl->items[i].c;
    IterRecord rec = {.t_start_ns = eng->now_ns, .dur_ns = dur_ns, .n_prefill = pl->n_prefill,
                      .n_decode = pl->n_decode + gn, .new_tokens = pl->new_tokens + gn, .prefill_tokens = pre,
                      .kv_used_blocks = used, .running = eng->n_running, .waiting = eng->w_len, .flops = cb->flops,
                      .bytes = cb->bytes};
    /* NEVER with a deferred end (a cluster's group step, engine_end_at,
     * which lengthens the kept record): streamed records are of one replica */
    if (eng->cfg.sink.on_record) eng->cfg.sink.on_record(eng->cfg.sink.ctx, &rec);
    if (!eng->cfg.keep_iterations) return;
    if (eng->n_iters == eng->cap_iters) {
        eng->cap_iters = eng->cap_iters ? eng->cap_iters * 2 : 1024;
        eng->iters = xrealloc(eng->iters, eng->cap_iters * sizeof *eng->iters);
    }
    eng->iters[eng->n_iters++] = rec;
}

/* Batch hooks that reorder the waiting queue (policy.h BatchHook.order). */
static void hooks_order(Engine *eng)
{
    for (uint32_t k = 0; k < eng->cfg.n_hooks && eng->w_len > 1; k++) {
        const BatchHook *h = &eng->cfg.hooks[k];
        if (!h->order || !h->order(h->ctx, eng, eng->order_tmp)) continue;
        for (uint32_t i = 0; i < eng->w_len; i++) eng->waiting[(eng->w_head + i) % eng->n_reqs] = eng->order_tmp[i];
    }
}

static int fast_ok(const Engine *eng, uint64_t admits, uint64_t rejected, uint64_t preemptions);
static int fast_run(Engine *eng, int64_t dur_ns, Err *e);
static int launch_plan(Engine *eng, uint64_t admits0, uint64_t rejected0, uint64_t preempt0, Err *e);

static int livelock_error(Engine *eng, Err *e)
{
    const Request *v = &eng->reqs[eng->livelocked - 1];
    if (eng->livelock_wide)
        return err_set(e, "scheduler %s preempted %llu times for %llu units of progress (at %.6f s; %llu "
                          "tokens decoded, %llu requests done): it preempts and re-admits requests without "
                          "progress; the engine stops a run past %u preemptions + %u per unit (a decoded "
                          "token, a prompt token kept, a request done)",
                       eng->cfg.sched.name, (unsigned long long)eng->st.preemptions,
                       (unsigned long long)engine_progress(eng), (double)eng->now_ns * 1e-9,
                       (unsigned long long)eng->st.decode_tokens,
                       (unsigned long long)(eng->st.finished + eng->st.rejected + eng->st.cancelled),
                       ENGINE_MAX_PREEMPTIONS, ENGINE_PREEMPTIONS_PER_PROGRESS);
    return err_set(e, "request %s was preempted %u times without finishing (at %.6f s, %llu tokens "
                      "generated): scheduler %s preempts and re-admits it without progress; the "
                      "engine stops a run at %u preemptions of one request",
                   v->id, v->preemptions, (double)eng->now_ns * 1e-9,
                   (unsigned long long)v->generated, eng->cfg.sched.name, ENGINE_MAX_PREEMPTIONS);
}

/* The swap-in time the scheduler charged to this iteration (eng->extra_s)
 * added to its price; the iteration's duration, at least 1 ns. */
static int64_t add_swap_time(Engine *eng, CostBreakdown *cb, int64_t dur_ns)
{
    if (eng->extra_s > 0) {
        cb->t_s += eng->extra_s;
        cb->comm_s += eng->extra_s;
        eng->st.swap_s += eng->extra_s;
        dur_ns = (int64_t)(cb->t_s * 1e9 + 0.5);
        eng->extra_s = 0;
    }
    return dur_ns < 1 ? 1 : dur_ns;
}

/* The boundary with the decode group: its step's blocks, the scheduler's
 * rest (Scheduler.schedule_rest), the batch priced from the group's sums
 * and the other items (CostModel.decode_time).  2: the group cannot take
 * this boundary (dissolved, nothing done the slow path would not redo). */
static int g_boundary(Engine *eng, Err *e)
{
    if (eng->g_reform) g_dissolve(eng);
    if (!eng->g_on && !g_form(eng)) return 2;
    if (eng->g_n == 0) {
        g_dissolve(eng);
        return 2;
    }
    const uint32_t B = eng->cfg.kv.grow_block_tokens, q = (uint32_t)(eng->g_S % B);
    if (eng->g_bk_n[q] > eng_kv_free_blocks(eng)) {
        /* the pool could run short: the scheduler preempts */
        g_dissolve(eng);
        return 2;
    }
    /* the scheduler's step 1: one token each, a block where it crosses */
    for (uint32_t k = 0; k < eng->g_bk_n[q]; k++) {
        Request *r = &eng->reqs[eng->g_bk[q][k]];
        uint64_t len = (uint64_t)((int64_t)r->kv_len - (int64_t)eng->g_base[r->idx]) + eng->g_S + 1;
        if (NEVER(!eng->cfg.kv.grow(eng->cfg.kv.ctx, r, (uint32_t)len)))
            return err_set(e, "internal: the decode group found the KV pool short");
        r->kv_blocks = eng->cfg.kv.blocks_of(eng->cfg.kv.ctx, r);
    }
    const uint64_t admits0 = eng->admit_counter, rejected0 = eng->st.rejected, preempt0 = eng->st.preemptions;
    eng->g_planned = 1;
    if (eng->n_running > eng->g_n || (eng->w_len > 0 && eng->g_dirty)) {
        int rc = eng->cfg.sched.schedule_rest(eng->cfg.sched.ctx, eng, eng->g_n, e);
        if (rc < 0) return -1;
        if (rc > 0) {
            /* the scheduler's own step 1 (its blocks are taken: growing
             * again is a no-op) */
            eng->g_planned = 0;
            g_dissolve(eng);
            return 2;
        }
        eng->g_dirty = 0;
        if (eng->livelocked) return livelock_error(eng, e);
    }
    if (!eng->g_on) return launch_plan(eng, admits0, rejected0, preempt0, e); /* a member was preempted */
    for (uint32_t i = 0; i < eng->plan.n; i++)
        if (eng->plan.items[i].kind != ITEM_PREFILL) {
            /* a request admitted decoding (swapped back in) */
            g_dissolve(eng);
            return launch_plan(eng, admits0, rejected0, preempt0, e);
        }
    if (eng->g_mm_dirty) {
        eng->g_mm_dirty = 0;
        int first = 1;
        for (uint32_t i = 0; i < eng->n_running; i++) {
            uint32_t idx = eng->running[i];
            if (!g_is(eng, idx)) continue;
            int64_t off = (int64_t)eng->reqs[idx].kv_len - (int64_t)eng->g_base[idx];
            if (first || off < eng->g_min_off) eng->g_min_off = off;
            if (first || off > eng->g_max_off) eng->g_max_off = off;
            first = 0;
        }
    }
    const int64_t S = (int64_t)eng->g_S;
    CostDecodeAgg ag = {.n = eng->g_n, .sum_h = (uint64_t)(eng->g_sum_off + (int64_t)eng->g_n * S),
                        .min_h = (uint32_t)(eng->g_min_off + S), .max_h = (uint32_t)(eng->g_max_off + S)};
    CostBreakdown cb;
    int rc = eng->cfg.cost.decode_time(eng->cfg.cost.ctx, &ag, eng->plan.items, eng->plan.n, &cb);
    if (rc < 0) return err_set(e, "cost model %s failed", eng->cfg.cost.name);
    if (rc > 0) {
        eng->fast_unsupported = 1;
        g_dissolve(eng);
        return launch_plan(eng, admits0, rejected0, preempt0, e);
    }
    if (!(cb.t_s >= 0) || cb.t_s > 1e6)
        return err_set(e, "cost model %s returned an iteration time of %g s", eng->cfg.cost.name, cb.t_s);
    int64_t dur_ns = (int64_t)(cb.t_s * 1e9 + 0.5);
    dur_ns = add_swap_time(eng, &cb, dur_ns);
    eng->g_step_n = eng->g_n;
    eng->g_dur = dur_ns;
    record_iteration(eng, dur_ns, &cb);
    eng->st.fast_iterations++;
    eng->busy = 1;
    evq_push(eng->evq, eng->now_ns + dur_ns, ENGINE_EV_ITER_END, eng->replica);
    return 0;
}

/* An iteration boundary while the replica is free.  1: the decode fast
 * path ran iterations and stopped at a boundary that runs now. */
static int boundary_once(Engine *eng, Err *e)
{
    if (g_static_ok(eng)) {
        int rc = g_boundary(eng, e);
        if (rc != 2) return rc;
    } else if (eng->g_on) {
        g_dissolve(eng);
    }
    const uint64_t admits0 = eng->admit_counter, rejected0 = eng->st.rejected, preempt0 = eng->st.preemptions;
    if (eng->cfg.kv.error) {
        const char *m = eng->cfg.kv.error(eng->cfg.kv.ctx);
        if (m && *m) return err_set(e, "KV policy %s: %s", eng->cfg.kv.name, m);
    }
    if (eng->order_tmp) hooks_order(eng);
    for (;;) {
        if (eng->cfg.sched.schedule(eng->cfg.sched.ctx, eng, e) != 0) return -1;
        if (eng->livelocked) return livelock_error(eng, e);
        if (eng->plan.n > 0) break;
        /* the iteration launched with the requests cancelled at this
         * boundary (cancel_lag) runs even if nothing else does */
        if (eng->n_parked > 0) break;
        uint32_t blocked = 0;
        for (uint32_t i = 0; i < eng->n_running; i++) blocked += eng->reqs[eng->running[i]].blocked;
        if (eng->n_running > 0 && blocked == eng->n_running) return 0; /* idle until their KV lands */
        if (eng->n_running > 0)
            return err_set(e, "scheduler %s built an empty batch while %u requests run",
                           eng->cfg.sched.name, eng->n_running);
        if (eng->w_len == 0) return 0; /* idle until the next arrival */
        /* Nothing runs and the head of the queue was not admitted: if it
         * can never fit, reject it; otherwise the scheduler is stuck. */
        uint32_t head = eng_waiting_at(eng, 0);
        Request *r = &eng->reqs[head];
        /* blocks still held by requests that left the running list (a
         * disaggregated prefill replica's KV in transfer): wait for them */
        if (eng->cfg.kv.used_blocks(eng->cfg.kv.ctx) > 0) return 0;
        uint64_t need = eng->cfg.kv.need_blocks(eng->cfg.kv.ctx, r);
        if (need <= eng->cfg.kv.total_blocks(eng->cfg.kv.ctx))
            return err_set(e, "scheduler %s admitted nothing from an idle replica (request %s needs %llu "
                              "of %llu KV blocks)", eng->cfg.sched.name, r->id,
                           (unsigned long long)need,
                           (unsigned long long)eng->cfg.kv.total_blocks(eng->cfg.kv.ctx));
        waiting_remove(eng, 0);
        finish_rejected(eng, r, REJECT_KV_TOO_SMALL);
    }
    return launch_plan(eng, admits0, rejected0, preempt0, e);
}

/* Prices the plan built and launches it. */
static int launch_plan(Engine *eng, uint64_t admits0, uint64_t rejected0, uint64_t preempt0, Err *e)
{
    /* Priced with a decode row for each request cancelled at this boundary
     * (cancel_lag): the host had prepared this iteration with them.  The
     * rows sit past plan.n, so nothing advances them. */
    uint32_t n_items = eng->plan.n;
    for (uint32_t k = 0; k < eng->n_parked; k++) {
        const Request *g = &eng->reqs[eng->parked[k]];
        eng->plan.items[n_items++] =
            (BatchItem){.req = g->idx, .c = 1, .h = g->kv_len, .kind = ITEM_DECODE, .samples = 1};
    }
    CostBreakdown cb;
    if (eng->cfg.cost.iter_time(eng->cfg.cost.ctx, eng->plan.items, n_items, &cb) != 0)
        return err_set(e, "cost model %s failed", eng->cfg.cost.name);
    if (!(cb.t_s >= 0) || cb.t_s > 1e6)
        return err_set(e, "cost model %s returned an iteration time of %g s", eng->cfg.cost.name, cb.t_s);
    int64_t dur_ns = (int64_t)(cb.t_s * 1e9 + 0.5);
    if (eng->cfg.has_spec) {
        int verify = 0;
        for (uint32_t i = 0; i < eng->plan.n && !verify; i++) verify = eng->plan.items[i].kind == ITEM_VERIFY;
        if (verify) eng->st.spec_verify_s += cb.t_s;
        double d = eng->cfg.spec.draft_cost_s(eng->cfg.spec.ctx, &eng->plan, eng->reqs);
        if (d > 0) {
            cb.t_s += d;
            cb.overhead_s += d;
            eng->st.spec_draft_s += d;
            dur_ns = (int64_t)(cb.t_s * 1e9 + 0.5);
        }
    }
    for (uint32_t k = 0; k < eng->cfg.n_hooks; k++) {
        const BatchHook *h = &eng->cfg.hooks[k];
        if (!h->adjust) continue;
        h->adjust(h->ctx, &eng->plan, eng->reqs, &cb, &eng->st.hooks);
        dur_ns = (int64_t)(cb.t_s * 1e9 + 0.5);
    }
    dur_ns = add_swap_time(eng, &cb, dur_ns);
    record_iteration(eng, dur_ns, &cb);
    eng->busy = 1;
    if (!eng->defer_end && fast_ok(eng, admits0, rejected0, preempt0)) return fast_run(eng, dur_ns, e);
    if (eng->defer_end) eng->pending_ns = dur_ns;
    else evq_push(eng->evq, eng->now_ns + dur_ns, ENGINE_EV_ITER_END, eng->replica);
    return 0;
}

static int boundary(Engine *eng, Err *e)
{
    int rc;
    while ((rc = boundary_once(eng, e)) == 1) {}
    return rc;
}

/* ------------------------------------------------------ decode fast path */

/* The plan just launched is a pure continuation that the scheduler would
 * build again, and nothing needs single tokens or iterations. */
static int fast_ok(const Engine *eng, uint64_t admits, uint64_t rejected, uint64_t preemptions)
{
    const EngineConfig *c = &eng->cfg;
    const BatchPlan *pl = &eng->plan;
    if (eng->fast_off || eng->fast_unsupported || !c->cost.decode_time || !c->sched.steady ||
        !c->kv.grow_block_tokens || c->kv.grow_block_tokens > 4096 || c->kv.commit || c->has_spec ||
        c->n_hooks || c->prefill_only || c->sink.on_token || (c->sink.on_iteration && !c->sink.plan_counts_only) ||
        eng->slot_tt || eng->n_parked || eng->n_cancel_pending || eng->extra_s != 0 ||
        eng->livelocked)
        return 0;
    if (eng->admit_counter != admits || eng->st.rejected != rejected || eng->st.preemptions != preemptions)
        return 0;
    if (pl->n == 0 || pl->n != eng->n_running || pl->n_prefill) return 0;
    for (uint32_t i = 0; i < pl->n; i++) {
        const BatchItem *it = &pl->items[i];
        if (it->req != eng->running[i] || it->kind != ITEM_DECODE || it->c != 1 || !it->samples) return 0;
        const Request *r = &eng->reqs[it->req];
        /* every gap of the run is then an iteration's duration */
        if (r->t_last_token_ns != eng->now_ns || r->blocked || r->cancel_pending || r->generated == 0 ||
            r->generated >= r->output_tokens || it->h != r->kv_len)
            return 0;
    }
    return 1;
}

/* Brings the running requests (running[0 .. n0), finished ones skipped)
 * up to date after `steps` iteration ends, the last at t_last with the
 * run's longest gap runmax, and compacts the running list.  in_flight:
 * the next iteration is under way (its plan rebuilt); else the replica is
 * free at a boundary. */
static void fast_materialise(Engine *eng, uint32_t n0, uint64_t steps, int64_t t_last, int64_t runmax,
                             int in_flight)
{
    BatchPlan *pl = &eng->plan;
    uint32_t j = 0;
    for (uint32_t i = 0; i < n0; i++) {
        uint32_t idx = eng->running[i];
        eng->plan_pos[idx] = NO_POS;
        Request *r = &eng->reqs[idx];
        if (r->state != REQ_RUNNING) continue;
        if (steps > 0) {
            r->kv_len += (uint32_t)steps;
            r->generated += (uint32_t)steps;
            r->t_last_token_ns = t_last;
            if (runmax > r->itl_max_ns) r->itl_max_ns = runmax;
        }
        eng->running[j++] = idx;
    }
    eng->n_running = j;
    pl->n = pl->n_prefill = pl->n_decode = 0;
    pl->new_tokens = 0;
    if (!in_flight) {
        eng->busy = 0;
        return;
    }
    for (uint32_t i = 0; i < j; i++) {
        const Request *r = &eng->reqs[eng->running[i]];
        eng->plan_pos[r->idx] = i;
        pl->items[i] = (BatchItem){.req = r->idx, .c = 1, .h = r->kv_len, .kind = ITEM_DECODE, .samples = 1};
    }
    pl->n = pl->n_decode = j;
    pl->new_tokens = j;
}

/* Advances the pure continuation just launched (its duration dur_ns) by
 * whole iterations: 0 = stopped with an iteration in flight (its end on
 * the queue), 1 = stopped at a boundary that runs now, -1 = error.  The
 * requests keep their state from the run's start; after s ends each has
 * s more tokens (kv_len and generated) and its last at the s-th end. */
static int fast_run(Engine *eng, int64_t dur_ns, Err *e)
{
    const uint32_t n0 = eng->n_running, B = eng->cfg.kv.grow_block_tokens;
    BatchPlan *pl = &eng->plan;
    if (eng->fb_cap < n0 || !eng->fb_start) {
        eng->fb_cap = n0 > 2 * eng->fb_cap ? n0 : 2 * eng->fb_cap;
        eng->fb_idx = xrealloc(eng->fb_idx, (eng->fb_cap ? eng->fb_cap : 1) * sizeof *eng->fb_idx);
        if (!eng->fb_start) {
            eng->fb_start = xmalloc((B + 1) * sizeof *eng->fb_start);
            eng->fb_cnt = xmalloc(B * sizeof *eng->fb_cnt);
        }
    }
    /* Request i needs a block at the launch of iteration s + 1 (s ends
     * done) when (kv_len + s) % B == 0: phase (B - kv_len % B) % B. */
    memset(eng->fb_cnt, 0, B * sizeof *eng->fb_cnt);
    uint64_t sum_h = 0, next_fin = UINT64_MAX;
    uint32_t min_h = UINT32_MAX, max_h = 0;
    for (uint32_t i = 0; i < n0; i++) {
        const Request *r = &eng->reqs[eng->running[i]];
        uint32_t h = r->kv_len, f = r->output_tokens - r->generated;
        eng->fb_cnt[(B - h % B) % B]++;
        sum_h += h;
        min_h = h < min_h ? h : min_h;
        max_h = h > max_h ? h : max_h;
        if (f < next_fin) next_fin = f;
    }
    eng->fb_start[0] = 0;
    for (uint32_t q = 0; q < B; q++) eng->fb_start[q + 1] = eng->fb_start[q] + eng->fb_cnt[q];
    for (uint32_t i = 0; i < n0; i++) {
        uint32_t q = (B - eng->reqs[eng->running[i]].kv_len % B) % B;
        eng->fb_idx[eng->fb_start[q + 1] - eng->fb_cnt[q]--] = eng->running[i];
    }
    for (uint32_t q = 0; q < B; q++) eng->fb_cnt[q] = eng->fb_start[q + 1] - eng->fb_start[q];
    uint32_t n_act = n0;
    int64_t t_launch = eng->now_ns, d = dur_ns, runmax = 0;
    for (uint64_t s = 1;; s++) {
        const int64_t t_end = t_launch + d;
        if (evq_peek_time(eng->evq) <= t_end) {
            /* an event at or before this end: the loop takes it from here */
            fast_materialise(eng, n0, s - 1, t_launch, runmax, 1);
            evq_push(eng->evq, t_end, ENGINE_EV_ITER_END, eng->replica);
            return 0;
        }
        /* the end of iteration s: every running request emits a token,
         * each gap d (engine_iter_end, emit_token) */
        eng->now_ns = t_end;
        eng->st.t_last_event_ns = t_end;
        if (d > runmax) runmax = d;
        if (eng->itl_acc) statacc_add_ns_n(eng->itl_acc, d, n_act);
        eng->st.decode_tokens += n_act;
        int left = 0;
        if (s == next_fin) {
            /* the requests with their last token now finish, in running
             * order; the others' sums and extremes are taken again */
            next_fin = UINT64_MAX;
            sum_h = 0;
            min_h = UINT32_MAX;
            max_h = 0;
            for (uint32_t i = 0; i < n0; i++) {
                Request *r = &eng->reqs[eng->running[i]];
                if (r->state != REQ_RUNNING) continue;
                uint32_t h = r->kv_len, f = r->output_tokens - r->generated;
                if (f == s) {
                    eng->fb_cnt[(B - h % B) % B]--;
                    r->kv_len += (uint32_t)s;
                    r->generated += (uint32_t)s;
                    r->t_last_token_ns = t_end;
                    if (runmax > r->itl_max_ns) r->itl_max_ns = runmax;
                    finish_request(eng, r);
                    n_act--;
                    left = 1;
                    continue;
                }
                sum_h += h;
                min_h = h < min_h ? h : min_h;
                max_h = h > max_h ? h : max_h;
                if (f < next_fin) next_fin = f;
            }
            eng->n_running = n_act;
        }
        /* the boundary at t_end: what the scheduler would do differently
         * (a freed slot or blocks with requests waiting, an event now) */
        if (n_act == 0 || (left && eng->w_len > 0)) {
            fast_materialise(eng, n0, s, t_end, runmax, 0);
            return 1;
        }
        if (evq_peek_time(eng->evq) <= t_end) {
            /* a request triggered to arrive now: it joins this boundary */
            fast_materialise(eng, n0, s, t_end, runmax, 0);
            return 0;
        }
        const uint32_t q = (uint32_t)(s % B);
        if (eng->fb_cnt[q] > 0 && eng_kv_free_blocks(eng) < eng->fb_cnt[q]) {
            /* the pool could run short: the scheduler preempts */
            fast_materialise(eng, n0, s, t_end, runmax, 0);
            return 1;
        }
        /* iteration s + 1, priced from the sums */
        CostDecodeAgg ag = {.n = n_act, .sum_h = sum_h + s * n_act, .min_h = min_h + (uint32_t)s,
                            .max_h = max_h + (uint32_t)s};
        CostBreakdown cb;
        int rc = eng->cfg.cost.decode_time(eng->cfg.cost.ctx, &ag, NULL, 0, &cb);
        if (rc < 0) return err_set(e, "cost model %s failed", eng->cfg.cost.name);
        if (rc > 0) {
            eng->fast_unsupported = 1;
            fast_materialise(eng, n0, s, t_end, runmax, 0);
            return 1;
        }
        if (!(cb.t_s >= 0) || cb.t_s > 1e6)
            return err_set(e, "cost model %s returned an iteration time of %g s", eng->cfg.cost.name, cb.t_s);
        for (uint32_t k = eng->fb_start[q]; eng->fb_cnt[q] > 0 && k < eng->fb_start[q + 1]; k++) {
            Request *r = &eng->reqs[eng->fb_idx[k]];
            if (r->state != REQ_RUNNING) continue;
            if (NEVER(!eng->cfg.kv.grow(eng->cfg.kv.ctx, r, r->kv_len + (uint32_t)s + 1))) {
                fast_materialise(eng, n0, s, t_end, runmax, 0);
                return err_set(e, "internal: the decode fast path found the KV pool short");
            }
            r->kv_blocks = eng->cfg.kv.blocks_of(eng->cfg.kv.ctx, r);
        }
        int64_t dn = (int64_t)(cb.t_s * 1e9 + 0.5);
        if (dn < 1) dn = 1;
        pl->n = pl->n_decode = n_act;
        pl->new_tokens = n_act;
        record_iteration(eng, dn, &cb);
        eng->st.fast_iterations++;
        t_launch = t_end;
        d = dn;
    }
}

/* Lock-stepped replicas (cluster.c, attention data parallelism). */
void engine_defer_end(Engine *eng, int on)
{
    eng->defer_end = on;
    eng->pending_ns = 0;
}

int64_t engine_pending_ns(const Engine *eng) { return eng->busy && eng->defer_end ? eng->pending_ns : 0; }

void engine_end_at(Engine *eng, int64_t t_end_ns)
{
    int64_t dur = t_end_ns - eng->now_ns;
    if (dur < 1) dur = 1;
    /* the replica is held for the whole group step */
    eng->st.busy_ns += dur - eng->pending_ns;
    if (eng->cfg.keep_iterations && eng->n_iters) eng->iters[eng->n_iters - 1].dur_ns = dur;
    eng->pending_ns = 0;
    evq_push(eng->evq, eng->now_ns + dur, ENGINE_EV_ITER_END, eng->replica);
}

int engine_poll(Engine *eng, int64_t now_ns, Err *e)
{
    if (eng->busy) return 0;
    /* an idle replica's clock stands where its last event left it; another
     * replica's event (a KV transfer landing) may give it work now */
    if (now_ns > eng->now_ns) eng->now_ns = now_ns;
    if (boundary(eng, e) != 0) return -1;
    if (eng->busy || eng->n_parked == 0) return 0;
    /* no iteration was launched: nothing reads the parked blocks */
    release_parked(eng);
    return boundary(eng, e);
}

int engine_busy(const Engine *eng)
{
    return eng->busy;
}

void engine_load(const Engine *eng, ReplicaLoad *out)
{
    uint64_t tokens = 0;
    for (uint32_t i = 0; i < eng->n_running; i++) {
        const Request *r = &eng->reqs[eng->running[i]];
        tokens += (uint64_t)request_prefill_left(r) + (r->output_tokens - r->generated);
        /* a group member has produced g_S - base more than its fields say */
        if (eng->g_on && r->idx < eng->g_cap && eng->g_mem[r->idx]) tokens -= eng->g_S - eng->g_base[r->idx];
    }
    for (uint32_t i = 0; i < eng->w_len; i++) {
        const Request *r = &eng->reqs[eng_waiting_at(eng, i)];
        tokens += (uint64_t)request_prefill_left(r) + (r->output_tokens - r->generated);
    }
    *out = (ReplicaLoad){.running = eng->n_running, .waiting = eng->w_len, .outstanding_tokens = tokens,
                         .kv_used_blocks = eng->cfg.kv.used_blocks(eng->cfg.kv.ctx),
                         .kv_total_blocks = eng->cfg.kv.total_blocks(eng->cfg.kv.ctx)};
}

void engine_set_handoff(Engine *eng, void (*fn)(void *ctx, uint32_t req, int64_t now_ns), void *ctx)
{
    eng->cfg.prefill_only = 1;
    eng->cfg.handoff = fn;
    eng->cfg.handoff_ctx = ctx;
}

void engine_set_incoming(Engine *eng, void (*fn)(void *ctx, uint32_t req, int64_t now_ns), void *ctx)
{
    eng->cfg.on_incoming_admit = fn;
    eng->cfg.incoming_ctx = ctx;
}

void engine_set_itl_acc(Engine *eng, StatAcc *acc)
{
    eng->itl_acc = acc;
}

void engine_unblock(Engine *eng, uint32_t idx)
{
    eng->reqs[idx].blocked = 0;
}

void engine_release_handoff(Engine *eng, uint32_t idx)
{
    Request *r = &eng->reqs[idx];
    eng->cfg.kv.release(eng->cfg.kv.ctx, r);
}

void engine_attach(Engine *eng, EventQueue *q, uint32_t replica)
{
    eng->evq = q;
    eng->replica = replica;
}
