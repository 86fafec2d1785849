/*
 * sched.c -- static, continuous and chunked schedulers (see sched.h).
 *
 * Each walks the running list by position and re-reads its length on every
 * step: eng_plan_add may preempt the most recently admitted request (the
 * last one), which only ever shortens the list past the current position.
 */
#include "sched.h"

#include <stdlib.h>

const char *const sched_kind_names[] = {"static", "continuous", "chunked", "vllm", NULL};

typedef struct Sched {
    SchedConfig c;
    BatchItem *scratch; /* prediction batches (admission control only) */
    uint32_t cap;
} Sched;

const char *sched_kind_name(SchedKind k)
{
    return k < SCHED_KIND_COUNT ? sched_kind_names[k] : "?";
}

static uint32_t prefill_left(const Request *r)
{
    return request_prefill_left(r);
}

/* Plans one step for every running request: the rest of its prefill, or
 * one decode token. */
static void plan_all_running(Engine *eng)
{
    for (uint32_t i = 0; i < eng_running_count(eng); i++) {
        uint32_t idx = eng_running_at(eng, i);
        Request *r = eng_req(eng, idx);
        eng_plan_add(eng, idx, request_decoding(r) ? 0 : prefill_left(r));
    }
}

static void admission_sweep(Sched *sc, Engine *eng);

static int static_schedule(void *ctx, Engine *eng, Err *e)
{
    Sched *sc = ctx;
    const SchedConfig *c = &sc->c;
    admission_sweep(sc, eng);
    (void)e;
    if (eng_running_count(eng) == 0) {
        while (eng_running_count(eng) < c->max_running && eng_waiting_count(eng) > 0) {
            Request *r = eng_req(eng, eng_waiting_at(eng, 0));
            if (!eng_admit(eng, 0, prefill_left(r))) break;
        }
    }
    plan_all_running(eng);
    return 0;
}

static int continuous_schedule(void *ctx, Engine *eng, Err *e)
{
    Sched *sc = ctx;
    const SchedConfig *c = &sc->c;
    admission_sweep(sc, eng);
    (void)e;
    plan_all_running(eng);
    while (eng_running_count(eng) < c->max_running && eng_waiting_count(eng) > 0) {
        uint32_t idx = eng_waiting_at(eng, 0);
        Request *r = eng_req(eng, idx);
        /* max_num_tokens (sched.h): the first prompt always joins */
        const BatchPlan *pl = eng_plan(eng);
        if (c->max_num_tokens && pl->n_prefill > 0 && pl->new_tokens + prefill_left(r) > c->max_num_tokens) break;
        if (c->max_partial_prefills && pl->n_prefill >= c->max_partial_prefills) break;
        if (!eng_admit(eng, 0, prefill_left(r))) break;
        /* 0: it preempted itself to grow (back at the queue's head) */
        if (eng_plan_add(eng, idx, prefill_left(r)) <= 0) break;
    }
    return 0;
}

/* continuous_schedule when every running request decodes (the engine's
 * decode group of n_group: plan_all_running's items, first in the plan):
 * only the admissions, whose token cap counts the group's tokens. */
static int continuous_schedule_rest(void *ctx, Engine *eng, uint32_t n_group, Err *e)
{
    Sched *sc = ctx;
    const SchedConfig *c = &sc->c;
    (void)e;
    if (eng_running_count(eng) != n_group) return 1; /* a prefill would sit among the decodes */
    admission_sweep(sc, eng);
    while (eng_running_count(eng) < c->max_running && eng_waiting_count(eng) > 0) {
        uint32_t idx = eng_waiting_at(eng, 0);
        Request *r = eng_req(eng, idx);
        const BatchPlan *pl = eng_plan(eng);
        if (c->max_num_tokens && pl->n_prefill > 0 && pl->new_tokens + n_group + prefill_left(r) > c->max_num_tokens)
            break;
        if (c->max_partial_prefills && pl->n_prefill >= c->max_partial_prefills) break;
        if (!eng_admit(eng, 0, prefill_left(r))) break;
        if (eng_plan_add(eng, idx, prefill_left(r)) <= 0) break;
    }
    return 0;
}

static uint32_t chunk_cap(const SchedConfig *c, uint32_t left, uint32_t budget)
{
    uint32_t x = MIN(left, budget);
    if (c->long_prefill_threshold && x > c->long_prefill_threshold) x = c->long_prefill_threshold;
    return x;
}

static void chunked_prefills(const SchedConfig *c, Engine *eng, uint32_t budget);

/* "mixed": false (sched.h): a prefill iteration whenever one can be
 * planned, else a decode iteration over every running request, with no
 * token budget.  Whether a prefill can be planned is the prefill pass's
 * own outcome: it plans nothing only when no running request prefills and
 * the queue's head cannot be admitted (or the queue is empty). */
static void chunked_apart(const SchedConfig *c, Engine *eng)
{
    chunked_prefills(c, eng, c->token_budget);
    if (eng_plan(eng)->n > 0) return;
    for (uint32_t i = 0; i < eng_running_count(eng); i++) {
        uint32_t idx = eng_running_at(eng, i);
        if (request_decoding(eng_req(eng, idx))) eng_plan_add(eng, idx, 0);
    }
}

static int chunked_schedule(void *ctx, Engine *eng, Err *e)
{
    Sched *sc = ctx;
    const SchedConfig *c = &sc->c;
    (void)e;
    admission_sweep(sc, eng);
    if (c->prefill_apart) {
        chunked_apart(c, eng);
        return 0;
    }
    uint32_t budget = c->token_budget;
    /* 1. one decode token per request that has its first token */
    for (uint32_t i = 0; i < eng_running_count(eng) && budget > 0; i++) {
        uint32_t idx = eng_running_at(eng, i);
        if (!request_decoding(eng_req(eng, idx))) continue;
        /* a speculative round feeds its drafts too */
        uint32_t fed = (uint32_t)eng_plan_add(eng, idx, 0);
        budget = fed >= budget ? 0 : budget - fed;
    }
    chunked_prefills(c, eng, budget);
    return 0;
}

/* chunked_schedule after its step 1, which the engine's decode group took:
 * n_group decode tokens (Scheduler.schedule_rest). */
static int chunked_schedule_rest(void *ctx, Engine *eng, uint32_t n_group, Err *e)
{
    Sched *sc = ctx;
    const SchedConfig *c = &sc->c;
    (void)e;
    /* step 1 gives every decoding request a token only while the budget
     * lasts */
    if (n_group > c->token_budget) return 1;
    admission_sweep(sc, eng);
    chunked_prefills(c, eng, c->token_budget - n_group);
    return 0;
}

/* Steps 2 and 3 of chunked_schedule with the budget step 1 left (with
 * prefill_apart, the whole budget: a prefill iteration, no decodes). */
static void chunked_prefills(const SchedConfig *c, Engine *eng, uint32_t budget)
{
    uint32_t partial = 0;
    const uint32_t max_partial = c->max_partial_prefills ? c->max_partial_prefills : UINT32_MAX;
    int self_preempted = 0;
    /* 2. chunks for admitted requests still prefilling, admission order */
    for (uint32_t i = eng_running_next_prefilling(eng, 0); i < eng_running_count(eng) && budget > 0 &&
                                                           partial < max_partial;
         i = eng_running_next_prefilling(eng, i + 1)) {
        uint32_t idx = eng_running_at(eng, i);
        Request *r = eng_req(eng, idx);
        int added = eng_plan_add(eng, idx, chunk_cap(c, prefill_left(r), budget));
        budget -= (uint32_t)added;
        partial += added > 0;
        self_preempted |= r->state != REQ_RUNNING;
    }
    /* With prefill_apart, a request whose chunk found the pool short and
     * preempted itself (back at the queue's head) is not admitted again in
     * this pass: its first chunk would fit in the blocks it just freed, the
     * next would not, and as no decode runs beside it nothing would ever
     * free more -- the decode iteration that follows lets the running
     * requests progress (mixed, they run in every iteration). */
    if (c->prefill_apart && self_preempted) return;
    /* 3. admit in queue order, each taking a chunk */
    while (budget > 0 && partial < max_partial && eng_running_count(eng) < c->max_running &&
           eng_waiting_count(eng) > 0) {
        uint32_t idx = eng_waiting_at(eng, 0);
        Request *r = eng_req(eng, idx);
        if (!eng_admit(eng, 0, chunk_cap(c, prefill_left(r), budget))) break;
        /* a prefix-cache hit may have shortened the prefill; a request
         * handed over with its KV (disaggregation) decodes at once -- in a
         * prefill iteration (prefill_apart) it waits for the next decode
         * iteration, as SGLang's decode batch takes it */
        if (c->prefill_apart && request_decoding(r)) continue;
        int added = eng_plan_add(eng, idx, request_decoding(r) ? 0 : chunk_cap(c, prefill_left(r), budget));
        if (!added) break;
        budget -= (uint32_t)added;
        partial += !request_decoding(r);
    }
}

static int vllm_schedule(void *ctx, Engine *eng, Err *e)
{
    Sched *sc = ctx;
    const SchedConfig *c = &sc->c;
    (void)e;
    admission_sweep(sc, eng);
    uint32_t budget = c->token_budget, B = eng_kv_block_tokens(eng);
    uint64_t keep_free = (uint64_t)(c->watermark * (double)eng_kv_total_blocks(eng));
    /* prefill-first: admit whole prompts while they fit every limit */
    while (eng_running_count(eng) < c->max_running && eng_waiting_count(eng) > 0) {
        uint32_t idx = eng_waiting_at(eng, 0);
        Request *r = eng_req(eng, idx);
        uint32_t need = prefill_left(r);
        if (need > c->token_budget) {
            /* vLLM refuses a prompt longer than max_num_batched_tokens */
            eng_reject(eng, idx, REJECT_CONTEXT);
            continue;
        }
        if (need > budget) break;
        /* a request that decodes at once (swapped back in, handed over)
         * writes one more token's KV this step */
        uint64_t blocks = (r->kv_len + (need ? need : 1) + B - 1) / B;
        if (eng_kv_free_blocks(eng) < blocks + keep_free) break;
        if (!eng_admit(eng, 0, need)) break;
        int added = eng_plan_add(eng, idx, request_decoding(r) ? 0 : prefill_left(r));
        /* 0: growing its KV preempted the request itself (it is back at the
         * head of the queue); admitting it again would repeat that forever */
        if (added <= 0) break;
        budget -= (uint32_t)added;
    }
    if (eng_plan(eng)->n > 0) return 0;
    /* otherwise a decode iteration over every running request */
    for (uint32_t i = 0; i < eng_running_count(eng); i++) {
        uint32_t idx = eng_running_at(eng, i);
        Request *r = eng_req(eng, idx);
        eng_plan_add(eng, idx, request_decoding(r) ? 0 : prefill_left(r));
    }
    return 0;
}

/* ---------------------------------------------------- admission control */

static BatchItem *scratch(Sched *sc, uint32_t n)
{
    if (n > sc->cap) {
        sc->cap = n * 2;
        sc->scratch = xrealloc(sc->scratch, sc->cap * sizeof *sc->scratch);
    }
    return sc->scratch;
}

/* Predicted time until r's first token: the prefills of everything ahead of
 * it in the queue (its own included) and the unfinished prefills of running
 * requests, each priced alone by the cost model. */
static double predict_ttft_s(Sched *sc, Engine *eng, uint32_t idx)
{
    double t = 0;
    BatchItem *it = scratch(sc, 1);
    for (uint32_t i = 0; i < eng_running_count(eng); i++) {
        const Request *q = eng_req(eng, eng_running_at(eng, i));
        if (request_decoding(q)) continue;
        *it = (BatchItem){.c = prefill_left(q), .h = q->kv_len, .kind = ITEM_PREFILL, .samples = 1};
        t += eng_estimate_s(eng, it, 1);
    }
    for (uint32_t i = 0; i < eng_waiting_count(eng); i++) {
        uint32_t w = eng_waiting_at(eng, i);
        const Request *q = eng_req(eng, w);
        *it = (BatchItem){.c = prefill_left(q) ? prefill_left(q) : 1, .h = q->kv_len, .kind = ITEM_PREFILL,
                          .samples = 1};
        t += eng_estimate_s(eng, it, 1);
        if (w == idx) break;
    }
    return t;
}

/* Predicted decode time of r once running: its remaining tokens, each an
 * iteration that also decodes everything running now. */
static double predict_decode_s(Sched *sc, Engine *eng, const Request *r)
{
    uint32_t left = r->output_tokens - (r->generated ? r->generated : 1);
    if (left == 0) return 0;
    uint32_t n = eng_running_count(eng);
    BatchItem *it = scratch(sc, n + 1);
    for (uint32_t i = 0; i < n; i++) {
        const Request *q = eng_req(eng, eng_running_at(eng, i));
        it[i] = (BatchItem){.c = 1, .h = q->kv_len, .kind = ITEM_DECODE, .samples = 1};
    }
    it[n] = (BatchItem){.c = 1, .h = r->prompt_tokens + r->output_tokens / 2, .kind = ITEM_DECODE, .samples = 1};
    return left * eng_estimate_s(eng, it, n + 1);
}

static void sched_on_arrival(void *ctx, Engine *eng, uint32_t idx)
{
    Sched *sc = ctx;
    const SchedConfig *c = &sc->c;
    Request *r = eng_req(eng, idx);
    if (c->max_queue && eng_waiting_count(eng) > c->max_queue) {
        eng_reject(eng, idx, REJECT_ADMISSION);
        return;
    }
    if (!c->max_ttft_s && !(c->deadline_aware && r->deadline_ns >= 0)) return;
    double ttft = predict_ttft_s(sc, eng, idx);
    if (c->max_ttft_s && ttft > c->max_ttft_s) {
        eng_reject(eng, idx, REJECT_ADMISSION);
        return;
    }
    if (c->deadline_aware && r->deadline_ns >= 0 &&
        eng_now_ns(eng) + (int64_t)((ttft + predict_decode_s(sc, eng, r)) * 1e9) > r->deadline_ns)
        eng_reject(eng, idx, REJECT_ADMISSION);
}

/* At a boundary: a queued request that would miss its deadline even if it
 * started now is rejected now, not left to fail late. */
static void admission_sweep(Sched *sc, Engine *eng)
{
    if (!sc->c.deadline_aware) return;
    BatchItem one;
    for (uint32_t i = 0; i < eng_waiting_count(eng);) {
        uint32_t idx = eng_waiting_at(eng, i);
        Request *r = eng_req(eng, idx);
        if (r->deadline_ns < 0) {
            i++;
            continue;
        }
        one = (BatchItem){.c = prefill_left(r) ? prefill_left(r) : 1, .h = r->kv_len, .kind = ITEM_PREFILL,
                          .samples = 1};
        double best = eng_estimate_s(eng, &one, 1) + predict_decode_s(sc, eng, r);
        if (eng_now_ns(eng) + (int64_t)(best * 1e9) > r->deadline_ns) eng_reject(eng, idx, REJECT_ADMISSION);
        else i++;
    }
}

static void sched_destroy(void *ctx)
{
    Sched *sc = ctx;
    free(sc->scratch);
    free(sc);
}

int sched_new(const SchedConfig *cfg, Scheduler *out, Err *e)
{
    if (cfg->max_running < 1) return err_set(e, "scheduler.max_running: got %u, expected >= 1", cfg->max_running);
    if (cfg->kind == SCHED_CHUNKED && cfg->token_budget < 1)
        return err_set(e, "scheduler.token_budget: got %u, expected >= 1", cfg->token_budget);
    if (cfg->kind == SCHED_VLLM && cfg->token_budget < 1)
        return err_set(e, "scheduler.max_num_batched_tokens: got %u, expected >= 1", cfg->token_budget);
    if (!(cfg->watermark >= 0 && cfg->watermark < 1))
        return err_set(e, "scheduler.watermark: got %g, expected a fraction in [0, 1)", cfg->watermark);
    int (*fn)(void *, Engine *, Err *) = NULL;
    switch (cfg->kind) {
    case SCHED_STATIC: fn = static_schedule; break;
    case SCHED_CONTINUOUS: fn = continuous_schedule; break;
    case SCHED_CHUNKED: fn = chunked_schedule; break;
    case SCHED_VLLM: fn = vllm_schedule; break;
    default: return err_set(e, "scheduler.kind: unknown kind %d", (int)cfg->kind);
    }
    Sched *sc = xcalloc(1, sizeof *sc);
    sc->c = *cfg;
    int admission = cfg->max_queue || cfg->max_ttft_s > 0 || cfg->deadline_aware;
    *out = (Scheduler){.name = sched_kind_name(cfg->kind), .ctx = sc, .schedule = fn,
                       .on_arrival = admission ? sched_on_arrival : NULL, .destroy = sched_destroy,
                       /* the admission sweep reads the clock: not steady */
                       .steady = !cfg->deadline_aware,
                       /* the decode group decodes every member each step;
                        * with prefill_apart a prefill iteration holds none,
                        * and the group's step 1 would already have grown
                        * their KV (Scheduler.schedule_rest): no group, only
                        * the pure-decode fast path (steady) */
                       .schedule_rest = cfg->kind == SCHED_CHUNKED && !cfg->prefill_apart ? chunked_schedule_rest
                                        : cfg->kind == SCHED_CONTINUOUS                 ? continuous_schedule_rest
                                                                                        : NULL};
    return 0;
}
