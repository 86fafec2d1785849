/*
 * timeline.c -- trace-event recording and writing (see timeline.h).
 *
 * Recording appends to two growable arrays (iterations, and the items of
 * each); nothing is allocated per token.  Writing builds the cJSON tree.
 */
#include "timeline.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

typedef struct TlIter {
    int64_t t_ns, dur_ns;
    uint32_t replica;
    uint32_t first_item, n_items;
    uint32_t n_prefill, n_decode;
    uint64_t new_tokens;
    uint64_t kv_used;
} TlIter;

struct Timeline {
    TlIter *iters;
    size_t n_iters, cap_iters;
    BatchItem *items;
    size_t n_items, cap_items;
    MetricsSink tail;
    uint32_t n_replicas;
};

static void tl_on_iteration(void *ctx, uint32_t replica, int64_t t_ns, int64_t dur_ns, const BatchPlan *plan,
                            const CostBreakdown *cb, uint64_t kv_used)
{
    Timeline *tl = ctx;
    if (tl->n_iters == tl->cap_iters) {
        tl->cap_iters = tl->cap_iters ? tl->cap_iters * 2 : 1024;
        tl->iters = xrealloc(tl->iters, tl->cap_iters * sizeof *tl->iters);
    }
    while (tl->n_items + plan->n > tl->cap_items) {
        tl->cap_items = tl->cap_items ? tl->cap_items * 2 : 4096;
        tl->items = xrealloc(tl->items, tl->cap_items * sizeof *tl->items);
    }
    memcpy(tl->items + tl->n_items, plan->items, plan->n * sizeof *plan->items);
    tl->iters[tl->n_iters++] = (TlIter){t_ns, dur_ns, replica, (uint32_t)tl->n_items, plan->n, plan->n_prefill,
                                        plan->n_decode, plan->new_tokens, kv_used};
    if (replica + 1 > tl->n_replicas) tl->n_replicas = replica + 1;
    tl->n_items += plan->n;
    if (tl->tail.on_iteration) tl->tail.on_iteration(tl->tail.ctx, replica, t_ns, dur_ns, plan, cb, kv_used);
}

static void tl_on_token(void *ctx, const Request *r, uint32_t k, int64_t t)
{
    Timeline *tl = ctx;
    if (tl->tail.on_token) tl->tail.on_token(tl->tail.ctx, r, k, t);
}

static void tl_on_done(void *ctx, const Request *r)
{
    Timeline *tl = ctx;
    if (tl->tail.on_done) tl->tail.on_done(tl->tail.ctx, r);
}

Timeline *timeline_new(void)
{
    return xcalloc(1, sizeof(Timeline));
}

MetricsSink timeline_sink(Timeline *tl)
{
    return (MetricsSink){.ctx = tl, .on_iteration = tl_on_iteration, .on_token = tl_on_token, .on_done = tl_on_done};
}

void timeline_chain(Timeline *tl, const MetricsSink *tail)
{
    if (tail) tl->tail = *tail;
}

void timeline_free(Timeline *tl)
{
    if (!tl) return;
    free(tl->iters);
    free(tl->items);
    free(tl);
}

static double us(int64_t ns)
{
    return (double)ns / 1e3;
}

static cJSON *event(cJSON *arr, const char *name, const char *cat, const char *ph, int64_t ts_ns, int pid, uint32_t tid)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", name);
    if (cat) cJSON_AddStringToObject(o, "cat", cat);
    cJSON_AddStringToObject(o, "ph", ph);
    cJSON_AddNumberToObject(o, "ts", us(ts_ns));
    cJSON_AddNumberToObject(o, "pid", pid);
    cJSON_AddNumberToObject(o, "tid", tid);
    cJSON_AddItemToArray(arr, o);
    return o;
}

static void meta(cJSON *arr, const char *what, int pid, uint32_t tid, const char *name)
{
    cJSON *o = event(arr, what, NULL, "M", 0, pid, tid);
    cJSON_AddItemToObject(o, "args", cJSON_CreateObject());
    cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(o, "args"), "name", name);
}

int timeline_write(const Timeline *tl, const char *path, const Request *reqs, uint32_t n, Err *e)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *ev = cJSON_AddArrayToObject(root, "traceEvents");
    cJSON_AddStringToObject(root, "displayTimeUnit", "ms");
    meta(ev, "process_name", 1, 0, "engine");
    for (uint32_t k = 0; k < (tl->n_replicas ? tl->n_replicas : 1); k++) {
        char name[32];
        snprintf(name, sizeof name, "replica %u iterations", k);
        meta(ev, "thread_name", 1, k + 1, name);
    }
    meta(ev, "process_name", 2, 0, "requests");
    for (uint32_t i = 0; i < n; i++) meta(ev, "thread_name", 2, i + 1, reqs[i].id);
    for (size_t k = 0; k < tl->n_iters; k++) {
        const TlIter *it = &tl->iters[k];
        cJSON *o = event(ev, "iteration", "engine", "X", it->t_ns, 1, it->replica + 1);
        cJSON_AddNumberToObject(o, "dur", us(it->dur_ns));
        cJSON *a = cJSON_AddObjectToObject(o, "args");
        cJSON_AddNumberToObject(a, "prefill_requests", it->n_prefill);
        cJSON_AddNumberToObject(a, "decode_requests", it->n_decode);
        cJSON_AddNumberToObject(a, "new_tokens", (double)it->new_tokens);
        cJSON_AddNumberToObject(a, "kv_used_blocks", (double)it->kv_used);
        for (uint32_t j = 0; j < it->n_items; j++) {
            const BatchItem *b = &tl->items[it->first_item + j];
            const char *name = b->kind == ITEM_PREFILL ? "prefill" : b->kind == ITEM_VERIFY ? "verify" : "decode";
            cJSON *x = event(ev, name, name, "X", it->t_ns, 2, b->req + 1);
            cJSON_AddNumberToObject(x, "dur", us(it->dur_ns));
            cJSON *xa = cJSON_AddObjectToObject(x, "args");
            cJSON_AddNumberToObject(xa, "new_tokens", b->c);
            cJSON_AddNumberToObject(xa, "cached_tokens", b->h);
            cJSON_AddBoolToObject(xa, "emits_token", b->samples);
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        const Request *r = &reqs[i];
        if (r->state == REQ_PENDING) continue;
        if (r->t_first_sched_ns > r->t_arrive_ns) {
            cJSON *q = event(ev, "queued", "queue", "X", r->t_arrive_ns, 2, i + 1);
            cJSON_AddNumberToObject(q, "dur", us(r->t_first_sched_ns - r->t_arrive_ns));
        }
        if (r->state == REQ_REJECTED) {
            cJSON *x = event(ev, "rejected", "reject", "i", r->t_finish_ns, 2, i + 1);
            cJSON_AddStringToObject(x, "s", "t");
        }
    }
    char *txt = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    FILE *f = fopen(path, "w");
    if (!f) {
        cJSON_free(txt);
        return err_set(e, "%s: cannot write: %s", path, strerror(errno));
    }
    int bad = fputs(txt, f) < 0 || fputc('\n', f) == EOF;
    bad |= fclose(f) != 0;
    cJSON_free(txt);
    return bad ? err_set(e, "%s: write error", path) : 0;
}
