/*
 * slots.c -- a streamed run's pool of request records (see slots.h).
 */
#include "slots.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


struct Slots {
    Request *reqs;
    uint32_t n;                    /* slots allocated */
    char **ids;                    /* each slot's id: the stream's (a trace's own), or its position */
    uint32_t *id_cap;              /* ... its buffer's size (grown, never shrunk) */
    /* report.token_times: each slot's own token times (tt[k][0 ..
     * generated)), grown to the request's output_tokens when it is pulled
     * and reused by the next request of that slot */
    int64_t **tt;
    uint32_t *tt_cap;
    /* a request's prefix-cache content, copied from the stream (whose
     * buffers last until its next request) into its slot */
    uint32_t **tok;
    uint64_t **hash;
    uint32_t *tok_cap, *hash_cap;
    uint32_t *free_slots, n_free;  /* popped from the end: the lowest slot first */
    SlotsPull pull;
    void *pull_ctx;
    SlotsFollow follow;            /* chains (slots_set_follow): the source sets seq */
    SlotsPullFollow pull_follow;
    SlotsBranch branch;            /* parallel sampling (slots_set_branch) */
    SlotsRetire retire;
    void *retire_ctx;
    SlotsArrive arrive;            /* optional (slots_set_arrive) */
    void *arrive_ctx;
    int keep_tt;
    int done, failed;
    Err err;
    uint64_t pulled;               /* requests made: pulled, follow-ups and branches */
    uint64_t heads;                /* pulled by slots_pull: the next one's position (without follow) */
    uint32_t reserved;             /* free slots kept for branches not yet made */
    int64_t last_pulled_ns;
    uint32_t live, peak_live;
    uint8_t *held;                 /* per slot: retired, kept until its cancel event comes */
};

/* Doubles the pool (the first call makes 1024 slots). */
static void grow(Slots *p)
{
    uint32_t old = p->n, cap = old ? old * 2 : 1024;
    p->reqs = xrealloc(p->reqs, cap * sizeof *p->reqs);
    memset(p->reqs + old, 0, (cap - old) * sizeof *p->reqs);
    p->ids = xrealloc(p->ids, cap * sizeof *p->ids);
    p->id_cap = xrealloc(p->id_cap, cap * sizeof *p->id_cap);
    memset(p->ids + old, 0, (cap - old) * sizeof *p->ids);
    memset(p->id_cap + old, 0, (cap - old) * sizeof *p->id_cap);
    p->free_slots = xrealloc(p->free_slots, cap * sizeof *p->free_slots);
    p->held = xrealloc(p->held, cap);
    memset(p->held + old, 0, cap - old);
    if (p->keep_tt) {
        p->tt = xrealloc(p->tt, cap * sizeof *p->tt);
        p->tt_cap = xrealloc(p->tt_cap, cap * sizeof *p->tt_cap);
        memset(p->tt + old, 0, (cap - old) * sizeof *p->tt);
        memset(p->tt_cap + old, 0, (cap - old) * sizeof *p->tt_cap);
    }
    p->tok = xrealloc(p->tok, cap * sizeof *p->tok);
    p->hash = xrealloc(p->hash, cap * sizeof *p->hash);
    p->tok_cap = xrealloc(p->tok_cap, cap * sizeof *p->tok_cap);
    p->hash_cap = xrealloc(p->hash_cap, cap * sizeof *p->hash_cap);
    memset(p->tok + old, 0, (cap - old) * sizeof *p->tok);
    memset(p->hash + old, 0, (cap - old) * sizeof *p->hash);
    memset(p->tok_cap + old, 0, (cap - old) * sizeof *p->tok_cap);
    memset(p->hash_cap + old, 0, (cap - old) * sizeof *p->hash_cap);
    for (uint32_t k = cap; k > old; k--) p->free_slots[p->n_free++] = k - 1;
    p->n = cap;
}

Slots *slots_new(SlotsPull pull, void *pull_ctx, SlotsRetire retire, void *retire_ctx, int keep_tt)
{
    Slots *p = xcalloc(1, sizeof *p);
    p->pull = pull;
    p->pull_ctx = pull_ctx;
    p->retire = retire;
    p->retire_ctx = retire_ctx;
    p->keep_tt = keep_tt;
    grow(p);
    return p;
}

void slots_free(Slots *p)
{
    if (!p) return;
    for (uint32_t k = 0; p->tt && k < p->n; k++) free(p->tt[k]);
    for (uint32_t k = 0; k < p->n; k++) {
        free(p->tok[k]);
        free(p->hash[k]);
    }
    free(p->reqs);
    for (uint32_t k = 0; k < p->n; k++) free(p->ids[k]);
    free(p->ids);
    free(p->id_cap);
    free(p->tt);
    free(p->tt_cap);
    free(p->tok);
    free(p->hash);
    free(p->tok_cap);
    free(p->hash_cap);
    free(p->free_slots);
    free(p->held);
    free(p);
}

/* n elements of src into a slot's own buffer (grown, never shrunk). */
static void *slot_copy(void *buf, uint32_t *cap, const void *src, uint32_t n, size_t size)
{
    if (*cap < n) {
        buf = xrealloc(buf, (size_t)n * size);
        *cap = n;
    }
    memcpy(buf, src, (size_t)n * size);
    return buf;
}

void slots_set_follow(Slots *p, SlotsFollow follow, SlotsPullFollow pull_follow)
{
    p->follow = follow;
    p->pull_follow = pull_follow;
}

void slots_set_branch(Slots *p, SlotsBranch branch)
{
    p->branch = branch;
}

void slots_set_arrive(Slots *p, SlotsArrive arrive, void *ctx)
{
    p->arrive = arrive;
    p->arrive_ctx = ctx;
}

void slots_arrive(Slots *p, uint32_t k)
{
    if (p->arrive) p->arrive(p->arrive_ctx, &p->reqs[k]);
}

int slots_follow(Slots *p, const Request *pred, int64_t *think_ns)
{
    if (!p->follow || pred->chain == REQ_NONE) return 0;
    return p->follow(p->pull_ctx, pred, think_ns);
}

/* Slot k's copies of the stream's buffers, its run-time fields reset, seq
 * its position in the workload (its id when the source gives none). */
static void slot_fill(Slots *p, uint32_t k, Request *r, uint64_t seq)
{
    char num[24];
    const char *id = r->id;
    if (!id) {
        snprintf(num, sizeof num, "%llu", (unsigned long long)seq);
        id = num;
    }
    r->id = p->ids[k] = slot_copy(p->ids[k], &p->id_cap[k], id, (uint32_t)strlen(id) + 1, 1);
    if (r->token_ids && r->n_token_ids)
        r->token_ids = p->tok[k] = slot_copy(p->tok[k], &p->tok_cap[k], r->token_ids, r->n_token_ids,
                                             sizeof *r->token_ids);
    if (r->hash_ids && r->n_hash_ids)
        r->hash_ids = p->hash[k] = slot_copy(p->hash[k], &p->hash_cap[k], r->hash_ids, r->n_hash_ids,
                                             sizeof *r->hash_ids);
    /* a request with branches keeps the first one's seq in next_branch
     * until the engine makes them (Request.next_branch) */
    if (r->n_samples <= 1) r->next_branch = REQ_NONE;
    r->next_req = r->branch_of = REQ_NONE;
    request_reset(r, k, 0);
    r->seq = seq;
    if (p->tt && p->tt_cap[k] < r->output_tokens) {
        uint32_t c = p->tt_cap[k] ? p->tt_cap[k] : 16;
        while (c < r->output_tokens) c = c > UINT32_MAX / 2 ? r->output_tokens : c * 2;
        p->tt[k] = xrealloc(p->tt[k], (size_t)c * sizeof **p->tt);
        p->tt_cap[k] = c;
    }
    p->pulled++;
    if (++p->live > p->peak_live) p->peak_live = p->live;
    if (r->n_samples > 1) p->reserved += r->n_samples - 1u;
}

/* Free slots for every branch still to be made (the caller of a pull
 * follows the pool's growth; slots_branch may not). */
static void keep_reserve(Slots *p)
{
    while (p->n_free < p->reserved) grow(p);
}

int slots_pull_follow(Slots *p, uint32_t chain, int64_t t_ns, uint32_t *slot)
{
    if (p->failed) return 0;
    if (p->n_free == 0) grow(p);
    uint32_t k = p->free_slots[--p->n_free];
    Request *r = &p->reqs[k];
    if (p->pull_follow(p->pull_ctx, chain, r, &p->err) <= 0) {
        p->free_slots[p->n_free++] = k;
        p->done = p->failed = 1;
        return 0;
    }
    slot_fill(p, k, r, r->seq);
    r->triggered = 1;
    r->t_arrive_ns = t_ns;
    if (r->deadline_after_ns >= 0) r->deadline_ns = t_ns + r->deadline_after_ns;
    slots_arrive(p, k);
    keep_reserve(p);
    *slot = k;
    return 1;
}

int slots_branch(Slots *p, uint32_t parent, uint32_t k, uint32_t *slot)
{
    if (p->failed) return 0;
    if (NEVER(!p->branch || p->n_free == 0 || p->reserved == 0)) {
        err_set(&p->err, "internal: no slot kept for branch %u of request %s", k, p->reqs[parent].id);
        p->done = p->failed = 1;
        return 0;
    }
    uint32_t b = p->free_slots[--p->n_free];
    p->reserved--;
    Request *r = &p->reqs[b];
    if (p->branch(p->pull_ctx, &p->reqs[parent], k, r, &p->err) <= 0) {
        p->free_slots[p->n_free++] = b;
        p->done = p->failed = 1;
        return 0;
    }
    r->n_samples = 1;
    slot_fill(p, b, r, r->seq);
    r->triggered = 1;
    *slot = b;
    return 1;
}

int slots_pull(Slots *p, uint32_t *slot)
{
    if (p->done) return 0;
    if (p->n_free == 0) grow(p);
    uint32_t k = p->free_slots[--p->n_free];
    Request *r = &p->reqs[k];
    int got = p->pull(p->pull_ctx, r, &p->err);
    if (got > 0 && p->heads > 0 && r->t_arrive_ns < p->last_pulled_ns) {
        /* NEVER: sorted sources (a trace reader refuses a timestamp
         * going backwards) */
        err_set(&p->err, "internal: streamed request %llu arrives at %.9f s, before the previous one (%.9f s): a "
                         "stream must be sorted by arrival", (unsigned long long)p->heads,
                   (double)r->t_arrive_ns / 1e9, (double)p->last_pulled_ns / 1e9);
        got = -1;
    }
    if (got <= 0) {
        p->free_slots[p->n_free++] = k;
        p->done = 1;
        p->failed = got < 0;
        return 0;
    }
    r->triggered = 0;
    slot_fill(p, k, r, p->follow ? r->seq : p->heads);
    p->heads++;
    p->last_pulled_ns = r->t_arrive_ns;
    keep_reserve(p);
    *slot = k;
    return 1;
}

void slots_retire(Slots *p, uint32_t k)
{
    Request *r = &p->reqs[k];
    const int64_t *tt = p->tt ? p->tt[k] : NULL;
    if (p->retire) p->retire(p->retire_ctx, r, tt);
    r->state = REQ_PENDING;
    if (r->cancel_queued) {
        p->held[k] = 1;
        return;
    }
    p->free_slots[p->n_free++] = k;
    p->live--;
}

int slots_cancel_event(Slots *p, uint32_t k)
{
    p->reqs[k].cancel_queued = 0;
    if (!p->held[k]) return 0;
    p->held[k] = 0;
    p->free_slots[p->n_free++] = k;
    p->live--;
    return 1;
}

int slots_error(const Slots *p, Err *e)
{
    if (!p->failed) return 0;
    *e = p->err;
    return -1;
}

Request *slots_reqs(Slots *p) { return p->reqs; }
uint32_t slots_cap(const Slots *p) { return p->n; }
int64_t **slots_tt(Slots *p) { return p->tt; }
uint64_t slots_pulled(const Slots *p) { return p->pulled; }
uint32_t slots_live(const Slots *p) { return p->live; }
uint32_t slots_peak(const Slots *p) { return p->peak_live; }
