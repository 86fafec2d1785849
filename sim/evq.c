/*
 * evq.c -- binary heap keyed by (t_ns, seq); see evq.h for the invariant.
 */
#include "evq.h"

#include <stdlib.h>

#include "common.h"

void evq_init(EventQueue *q)
{
    q->n = 0;
    q->cap = 64;
    q->heap = xmalloc(q->cap * sizeof *q->heap);
    q->next_seq = 0;
}

void evq_free(EventQueue *q)
{
    free(q->heap);
    q->heap = NULL;
    q->n = q->cap = 0;
}

static inline int ev_less(const Event *a, const Event *b)
{
    return a->t_ns < b->t_ns || (a->t_ns == b->t_ns && a->seq < b->seq);
}

void evq_push(EventQueue *q, int64_t t_ns, uint32_t kind, uint32_t arg)
{
    if (q->n == q->cap) {
        q->cap *= 2;
        q->heap = xrealloc(q->heap, q->cap * sizeof *q->heap);
    }
    Event ev = {t_ns, q->next_seq++, kind, arg};
    uint32_t i = q->n++;
    while (i > 0) {
        uint32_t parent = (i - 1) / 2;
        if (!ev_less(&ev, &q->heap[parent])) break;
        q->heap[i] = q->heap[parent];
        i = parent;
    }
    q->heap[i] = ev;
}

int evq_pop(EventQueue *q, Event *out)
{
    if (q->n == 0) return 0;
    *out = q->heap[0];
    Event last = q->heap[--q->n];
    uint32_t i = 0, n = q->n;
    for (;;) {
        uint32_t l = 2 * i + 1, r = l + 1, m = i;
        const Event *best = &last;
        if (l < n && ev_less(&q->heap[l], best)) { m = l; best = &q->heap[l]; }
        if (r < n && ev_less(&q->heap[r], best)) { m = r; }
        if (m == i) break;
        q->heap[i] = q->heap[m];
        i = m;
    }
    if (n > 0) q->heap[i] = last;
    return 1;
}

int64_t evq_peek_time(const EventQueue *q)
{
    return q->n ? q->heap[0].t_ns : INT64_MAX;
}
