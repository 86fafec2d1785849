/*
 * reqarray.c -- a request array as the streamed engine's source (see
 * reqarray.h).
 */
#include "reqarray.h"

#include <stdlib.h>
#include <string.h>

struct ReqArray {
    Request *reqs;
    uint32_t n;
    uint32_t next;      /* the next array index the pull looks at */
    int64_t *tt;        /* token times by token_off (keep_tt), or NULL */
    Slots *slots;
};

uint32_t reqarray_waiter(uint32_t n, uint32_t w) { return n + w; }

/* Request j of the array into r, as the source gives it: seq its index,
 * chain its own when a link follows it; a record that names samples but
 * no branch record has none to fork. */
static void fill(const ReqArray *a, uint32_t j, Request *r)
{
    *r = a->reqs[j];
    r->seq = j;
    r->chain = a->reqs[j].next_req != REQ_NONE ? j : REQ_NONE;
    if (r->next_branch == REQ_NONE) r->n_samples = 1;
}

static int ra_pull(void *ctx, Request *r, Err *e)
{
    (void)e;
    ReqArray *a = ctx;
    while (a->next < a->n && a->reqs[a->next].triggered) a->next++;
    if (a->next >= a->n) return 0;
    fill(a, a->next++, r);
    return 1;
}

/* The request chain c makes: the link after request c, or waiter c - n;
 * REQ_NONE when there is none to make (a link that is not triggered
 * arrives on its own). */
static uint32_t made_by(const ReqArray *a, uint32_t c)
{
    uint32_t j = c < a->n ? a->reqs[c].next_req : c - a->n;
    return j < a->n && a->reqs[j].triggered ? j : REQ_NONE;
}

static int ra_follow(void *ctx, const Request *pred, int64_t *think_ns)
{
    const ReqArray *a = ctx;
    uint32_t j = pred->chain == REQ_NONE ? REQ_NONE : made_by(a, pred->chain);
    if (j == REQ_NONE) return 0;
    *think_ns = a->reqs[j].think_ns;
    return 1;
}

static int ra_pull_follow(void *ctx, uint32_t chain, Request *r, Err *e)
{
    const ReqArray *a = ctx;
    uint32_t j = made_by(a, chain);
    if (NEVER(j == REQ_NONE)) return err_set(e, "internal: request array: chain %u makes no request", chain);
    fill(a, j, r);
    return 1;
}

static int ra_branch(void *ctx, const Request *parent, uint32_t k, Request *r, Err *e)
{
    const ReqArray *a = ctx;
    uint32_t b = parent->seq < a->n ? a->reqs[parent->seq].next_branch : REQ_NONE;
    for (uint32_t j = 1; j < k && b < a->n; j++) b = a->reqs[b].next_branch;
    if (NEVER(b >= a->n)) return err_set(e, "internal: request %s of an array has no branch %u", parent->id, k);
    fill(a, b, r);
    return 1;
}

/* The request that left, back into its place: the run's fields over the
 * array's record, whose identity (id, content, links, samples, token_off)
 * stays; its token times into the array's record of them. */
static void ra_retire(void *ctx, const Request *r, const int64_t *tt)
{
    ReqArray *a = ctx;
    uint32_t i = (uint32_t)r->seq;
    if (NEVER(r->seq >= a->n)) return;
    Request keep = a->reqs[i], *x = &a->reqs[i];
    *x = *r;
    x->id = keep.id;
    x->token_ids = keep.token_ids;
    x->hash_ids = keep.hash_ids;
    x->next_req = keep.next_req;
    x->branch_of = keep.branch_of;
    x->next_branch = keep.next_branch;
    x->n_samples = keep.n_samples;
    x->triggered = keep.triggered;
    x->chain = keep.chain;
    x->task = keep.task;
    x->task_link = keep.task_link;
    x->task_last = keep.task_last;
    x->idx = i;
    x->token_off = keep.token_off;
    if (a->tt && tt && r->generated) memcpy(a->tt + keep.token_off, tt, r->generated * sizeof *tt);
}

ReqArray *reqarray_new(Request *reqs, uint32_t n, int keep_tt, Err *e)
{
    int64_t last = INT64_MIN;
    const char *last_id = "";
    for (uint32_t i = 0; i < n; i++) {
        if (reqs[i].triggered) continue;
        if (reqs[i].t_arrive_ns < last) {
            err_set(e, "engine: requests not sorted by arrival (%s before %s)", last_id, reqs[i].id);
            return NULL;
        }
        last = reqs[i].t_arrive_ns;
        last_id = reqs[i].id;
    }
    ReqArray *a = xcalloc(1, sizeof *a);
    a->reqs = reqs;
    a->n = n;
    uint64_t tokens = 0;
    for (uint32_t i = 0; i < n; i++) {
        request_reset(&reqs[i], i, tokens);
        reqs[i].seq = i;
        tokens += reqs[i].output_tokens;
    }
    if (keep_tt) a->tt = xmalloc((tokens ? tokens : 1) * sizeof *a->tt);
    a->slots = slots_new(ra_pull, a, ra_retire, a, keep_tt);
    slots_set_follow(a->slots, ra_follow, ra_pull_follow);
    slots_set_branch(a->slots, ra_branch);
    return a;
}

void reqarray_free(ReqArray *a)
{
    if (!a) return;
    slots_free(a->slots);
    free(a->tt);
    free(a);
}

Slots *reqarray_slots(ReqArray *a) { return a->slots; }
int64_t *reqarray_token_times(ReqArray *a) { return a->tt; }
