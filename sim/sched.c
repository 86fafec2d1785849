/*
 * sched.c -- static, continuous and chunked schedulers (see sched.h).
 *
 * Each walks the running list by position and re-reads its length on every
 * step: eng_plan_add may preempt the most recently admitted request (the
 * last one), which only ever shortens the list past the current position.
 */
#include "sched.h"

#include <stdlib.h>

const char *const sched_kind_names[] = {"static", "continuous", "chunked", NULL};

const char *sched_kind_name(SchedKind k)
{
    return k < SCHED_KIND_COUNT ? sched_kind_names[k] : "?";
}

static uint32_t prefill_left(const Request *r)
{
    return r->prefill_target - r->kv_len;
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

static int static_schedule(void *ctx, Engine *eng, Err *e)
{
    const SchedConfig *c = ctx;
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
    const SchedConfig *c = ctx;
    (void)e;
    plan_all_running(eng);
    while (eng_running_count(eng) < c->max_running && eng_waiting_count(eng) > 0) {
        uint32_t idx = eng_waiting_at(eng, 0);
        Request *r = eng_req(eng, idx);
        if (!eng_admit(eng, 0, prefill_left(r))) break;
        eng_plan_add(eng, idx, prefill_left(r));
    }
    return 0;
}

static int chunked_schedule(void *ctx, Engine *eng, Err *e)
{
    const SchedConfig *c = ctx;
    (void)e;
    uint32_t budget = c->token_budget;
    /* 1. one decode token per request that has its first token */
    for (uint32_t i = 0; i < eng_running_count(eng) && budget > 0; i++) {
        uint32_t idx = eng_running_at(eng, i);
        if (request_decoding(eng_req(eng, idx)) && eng_plan_add(eng, idx, 0)) budget--;
    }
    /* 2. chunks for admitted requests still prefilling, admission order */
    for (uint32_t i = 0; i < eng_running_count(eng) && budget > 0; i++) {
        uint32_t idx = eng_running_at(eng, i);
        Request *r = eng_req(eng, idx);
        if (request_decoding(r)) continue;
        budget -= (uint32_t)eng_plan_add(eng, idx, MIN(prefill_left(r), budget));
    }
    /* 3. admit FCFS, each taking a chunk */
    while (budget > 0 && eng_running_count(eng) < c->max_running && eng_waiting_count(eng) > 0) {
        uint32_t idx = eng_waiting_at(eng, 0);
        Request *r = eng_req(eng, idx);
        if (!eng_admit(eng, 0, MIN(prefill_left(r), budget))) break;
        /* a prefix-cache hit may have shortened the prefill */
        int added = eng_plan_add(eng, idx, MIN(prefill_left(r), budget));
        if (!added) break;
        budget -= (uint32_t)added;
    }
    return 0;
}

int sched_new(const SchedConfig *cfg, Scheduler *out, Err *e)
{
    if (cfg->max_running < 1) return err_set(e, "scheduler.max_running: got %u, expected >= 1", cfg->max_running);
    if (cfg->kind == SCHED_CHUNKED && cfg->token_budget < 1)
        return err_set(e, "scheduler.token_budget: got %u, expected >= 1", cfg->token_budget);
    SchedConfig *c = xmalloc(sizeof *c);
    *c = *cfg;
    int (*fn)(void *, Engine *, Err *) = NULL;
    switch (cfg->kind) {
    case SCHED_STATIC: fn = static_schedule; break;
    case SCHED_CONTINUOUS: fn = continuous_schedule; break;
    case SCHED_CHUNKED: fn = chunked_schedule; break;
    default: free(c); return err_set(e, "scheduler.kind: unknown kind %d", (int)cfg->kind);
    }
    *out = (Scheduler){.name = sched_kind_name(cfg->kind), .ctx = c, .schedule = fn, .destroy = free};
    return 0;
}
