/*
 * tasks.c -- chains of requests as tasks and their time split (see
 * tasks.h).  Reads finished requests only; one pass over the chains.
 */
#include "tasks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

const char *const tasks_part_names[] = {"queue", "prefill", "decode", "tool"};

double tasks_amdahl(double f, double s)
{
    return 1.0 / ((1.0 - f) + f / s);
}

/* The chain starting at reqs[i]; NULL-safe on broken links (a link outside
 * the array ends the chain). */
static void task_row(const Request *reqs, uint32_t n, uint32_t i, TaskRow *t)
{
    memset(t, 0, sizeof *t);
    t->first = i;
    t->complete = 1;
    int64_t part[TASK_N_PARTS] = {0}, prev_end = -1, first_arrive = reqs[i].t_arrive_ns, last_end = -1;
    for (uint32_t k = i; k != REQ_NONE && k < n && t->turns <= n; k = reqs[k].next_req) {
        const Request *r = &reqs[k];
        t->turns++;
        if (r->state != REQ_FINISHED || r->t_first_sched_ns < 0 || r->t_first_token_ns < 0) {
            t->complete = 0;
            break;
        }
        if (prev_end >= 0) part[TASK_TOOL] += r->t_arrive_ns - prev_end;
        part[TASK_QUEUE] += r->t_first_sched_ns - r->t_arrive_ns;
        part[TASK_PREFILL] += r->t_first_token_ns - r->t_first_sched_ns;
        part[TASK_DECODE] += r->t_finish_ns - r->t_first_token_ns;
        prev_end = last_end = r->t_finish_ns;
    }
    if (!t->complete) return;
    t->total_s = (double)(last_end - first_arrive) / 1e9;
    for (int p = 0; p < TASK_N_PARTS; p++) t->part_s[p] = (double)part[p] / 1e9;
}

TaskRow *tasks_rows(const Request *reqs, uint32_t n, uint32_t *n_rows)
{
    /* a chain starts at a request no other one triggers (a barrier's
     * waiter is triggered but has no predecessor); branches are not links */
    *n_rows = 0;
    unsigned char *has_pred = xcalloc(n ? n : 1, 1);
    uint32_t linked = 0, m = 0;
    for (uint32_t i = 0; i < n; i++)
        if (reqs[i].next_req != REQ_NONE && reqs[i].next_req < n) {
            has_pred[reqs[i].next_req] = 1;
            linked = 1;
        }
    TaskRow *rows = NULL;
    if (linked) {
        rows = xmalloc(n * sizeof *rows);
        for (uint32_t i = 0; i < n; i++)
            if (!has_pred[i] && reqs[i].branch_of == REQ_NONE && reqs[i].state != REQ_PENDING)
                task_row(reqs, n, i, &rows[m++]);
        if (!m) {
            free(rows);
            rows = NULL;
        }
    }
    free(has_pred);
    *n_rows = m;
    return rows;
}

void tasks_summarize(const Request *reqs, uint32_t n, TaskSummary *out)
{
    memset(out, 0, sizeof *out);
    uint32_t m;
    TaskRow *rows = tasks_rows(reqs, n, &m);
    if (!rows) return;
    out->has_tasks = 1;
    out->tasks = m;
    for (uint32_t i = 0; i < m; i++) {
        if (!rows[i].complete) continue;
        out->complete++;
        out->turns += rows[i].turns;
        out->mean_total_s += rows[i].total_s;
        for (int p = 0; p < TASK_N_PARTS; p++) out->mean_part_s[p] += rows[i].part_s[p];
    }
    if (out->complete) {
        out->mean_total_s /= out->complete;
        for (int p = 0; p < TASK_N_PARTS; p++) out->mean_part_s[p] /= out->complete;
    }
    free(rows);
}

/* ------------------------------------------------------------ streamed */

/* What the fold reads of one link. */
typedef struct TaskLink {
    int64_t t_arrive_ns, t_first_sched_ns, t_first_token_ns, t_finish_ns;
    uint64_t seq;
    uint32_t link;
    uint8_t state, last;
    char id[64];
} TaskLink;

struct TaskOpen {
    TaskRow row;
    int64_t part[TASK_N_PARTS], prev_end, first_arrive, last_end;
    uint32_t links;              /* links added so far */
    uint8_t used, done, broken;  /* broken: a link did not finish; the rest are not counted */
    char first_id[64];
    /* links that left before an earlier one of the task was retired (a
     * follow-up rejected at once on another replica): held until it is */
    TaskLink *early;
    uint32_t n_early, cap_early;
};

void tasks_acc_init(TaskAcc *a)
{
    memset(a, 0, sizeof *a);
}

void tasks_acc_free(TaskAcc *a)
{
    for (uint32_t k = 0; k < a->cap; k++) free(a->ring[k].early);
    free(a->ring);
    memset(a, 0, sizeof *a);
}

/* Task t's entry, the ring grown to hold every task from base to t. */
static TaskOpen *acc_open(TaskAcc *a, uint64_t t)
{
    if (t - a->base >= a->cap) {
        uint32_t cap = a->cap ? a->cap : 64;
        while (t - a->base >= cap) cap *= 2;
        TaskOpen *ring = xcalloc(cap, sizeof *ring);
        for (uint64_t k = a->base; k < a->top; k++) ring[k % cap] = a->ring[k % a->cap];
        free(a->ring);
        a->ring = ring;
        a->cap = cap;
    }
    if (t >= a->top) a->top = t + 1;
    return &a->ring[t % a->cap];
}

static void acc_fold(TaskAcc *a)
{
    while (a->base < a->top && a->ring[a->base % a->cap].done) {
        TaskOpen *o = &a->ring[a->base % a->cap];
        TaskRow *t = &o->row;
        if (t->complete) {
            t->total_s = (double)(o->last_end - o->first_arrive) / 1e9;
            for (int p = 0; p < TASK_N_PARTS; p++) t->part_s[p] = (double)o->part[p] / 1e9;
        }
        if (a->on_row) a->on_row(a->ctx, t, o->first_id);
        a->sum.tasks++;
        if (t->complete) {
            a->sum.complete++;
            a->sum.turns += t->turns;
            a->sum.mean_total_s += t->total_s;
            for (int p = 0; p < TASK_N_PARTS; p++) a->sum.mean_part_s[p] += t->part_s[p];
        }
        free(o->early);
        memset(o, 0, sizeof *o);
        a->base++;
    }
}

/* Link l of task o, the next in chain order. */
static void acc_link(TaskAcc *a, TaskOpen *o, const TaskLink *l)
{
    if (l->link > 0) a->linked = 1;
    if (!o->used) {
        o->used = 1;
        o->row.first = (uint32_t)l->seq;
        o->row.complete = 1;
        o->first_arrive = l->t_arrive_ns;
        o->prev_end = o->last_end = -1;
        memcpy(o->first_id, l->id, sizeof o->first_id);
    }
    o->links++;
    if (!o->broken) {
        /* as task_row: count up to the first link that did not finish */
        o->row.turns++;
        if (l->state != REQ_FINISHED || l->t_first_sched_ns < 0 || l->t_first_token_ns < 0) {
            o->row.complete = 0;
            o->broken = 1;
        } else {
            if (o->prev_end >= 0) o->part[TASK_TOOL] += l->t_arrive_ns - o->prev_end;
            o->part[TASK_QUEUE] += l->t_first_sched_ns - l->t_arrive_ns;
            o->part[TASK_PREFILL] += l->t_first_token_ns - l->t_first_sched_ns;
            o->part[TASK_DECODE] += l->t_finish_ns - l->t_first_token_ns;
            o->prev_end = o->last_end = l->t_finish_ns;
        }
    }
    if (l->last) o->done = 1;
}

void tasks_acc_add(TaskAcc *a, const Request *r)
{
    if (r->task == REQ_NONE || r->task < a->base) {
        a->out_of_order |= r->task != REQ_NONE;
        return;
    }
    TaskOpen *o = acc_open(a, r->task);
    TaskLink l = {.t_arrive_ns = r->t_arrive_ns, .t_first_sched_ns = r->t_first_sched_ns,
                  .t_first_token_ns = r->t_first_token_ns, .t_finish_ns = r->t_finish_ns, .seq = r->seq,
                  .link = r->task_link, .state = r->state, .last = r->task_last};
    if (l.link == 0) snprintf(l.id, sizeof l.id, "%s", r->id ? r->id : "?"); /* the row's "first" */
    if (l.link < o->links || o->done) {
        a->out_of_order = 1;
        return;
    }
    if (l.link > o->links) {
        if (o->n_early == o->cap_early) {
            o->cap_early = o->cap_early ? 2 * o->cap_early : 4;
            o->early = xrealloc(o->early, o->cap_early * sizeof *o->early);
        }
        o->early[o->n_early++] = l;
        a->held++;
        return;
    }
    acc_link(a, o, &l);
    /* the links held for this one, in chain order */
    for (uint32_t k = 0; k < o->n_early;) {
        if (o->early[k].link != o->links) {
            k++;
            continue;
        }
        TaskLink x = o->early[k];
        o->early[k] = o->early[--o->n_early];
        acc_link(a, o, &x);
        k = 0;
    }
    if (o->done) acc_fold(a);
}

int tasks_acc_finish(TaskAcc *a, TaskSummary *out)
{
    memset(out, 0, sizeof *out);
    int bad = a->out_of_order || a->base != a->top; /* a link twice, or tasks never finished */
    TaskSummary *m = &a->sum;
    if (m->complete) {
        m->mean_total_s /= m->complete;
        for (int p = 0; p < TASK_N_PARTS; p++) m->mean_part_s[p] /= m->complete;
    }
    if (a->linked && m->tasks) {
        *out = *m;
        out->has_tasks = 1;
    }
    return bad ? -1 : 0;
}
