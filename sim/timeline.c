/*
 * timeline.c -- trace-event recording and writing (see timeline.h).
 *
 * Recording appends to two growable arrays (iterations, and the items of
 * each); nothing is allocated per token.  Writing streams the JSON out with
 * fprintf (no tree in memory) to a temporary file that is renamed over the
 * path once complete.  A window and a request limit narrow what is written;
 * counter tracks ("C" events on the engine process) carry KV blocks used
 * and tokens per iteration (prefill, decode) per iteration, and running /
 * waiting requests from the request records.
 */
#include "timeline.h"
#include "outfile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>
#include <unistd.h>

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
    int has_window;          /* write only spans meeting [w0_ns, w1_ns] */
    int64_t w0_ns, w1_ns;
    uint32_t max_requests;   /* request lanes for the first N requests only; 0 = all */
    uint8_t *lanes;          /* when not NULL, request lanes only where lanes[i] (i < n_lanes) */
    uint32_t n_lanes;
    int engine_only;         /* no request lanes */
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
    free(tl->lanes);
    free(tl);
}

/* ------------------------------------------------------------ writing */

void timeline_set_window(Timeline *tl, int64_t t0_ns, int64_t t1_ns)
{
    tl->has_window = 1;
    tl->w0_ns = t0_ns;
    tl->w1_ns = t1_ns;
}

void timeline_set_max_requests(Timeline *tl, uint32_t n)
{
    tl->max_requests = n;
}

void timeline_set_engine_only(Timeline *tl)
{
    tl->engine_only = 1;
}

int timeline_set_ids(Timeline *tl, const char *ids, const Request *reqs, uint32_t n, Err *e)
{
    free(tl->lanes);
    tl->lanes = xcalloc(n ? n : 1, 1);
    tl->n_lanes = n;
    for (const char *p = ids;; p++) {
        size_t len = strcspn(p, ",");
        if (len == 0) return err_set(e, "--trace-ids %s: an empty id; expected ID[,ID...]", ids);
        uint32_t i = 0;
        while (i < n && !(reqs[i].id && strlen(reqs[i].id) == len && !strncmp(reqs[i].id, p, len))) i++;
        if (i == n) return err_set(e, "--trace-ids: no request has the id \"%.*s\"", (int)len, p);
        tl->lanes[i] = 1;
        p += len;
        if (!*p) return 0;
    }
}

/* Request i has a lane (whatever the window). */
static int tl_lane(const Timeline *tl, uint32_t i, uint32_t nreq)
{
    return !tl->engine_only && i < nreq && (!tl->lanes || (i < tl->n_lanes && tl->lanes[i]));
}

/* [t, t + dur] meets the window (every span does without one). */
static int tl_in(const Timeline *tl, int64_t t, int64_t dur)
{
    return !tl->has_window || (t + dur >= tl->w0_ns && t <= tl->w1_ns);
}

/* Trace timestamps are microseconds; three decimals keep the nanoseconds. */
static void tl_ev(FILE *f, int *first, const char *name, const char *cat, const char *ph, int64_t ts_ns, int pid,
                  uint32_t tid)
{
    fprintf(f, "%s\n{\"name\":\"%s\",", *first ? "" : ",", name);
    if (cat) fprintf(f, "\"cat\":\"%s\",", cat);
    fprintf(f, "\"ph\":\"%s\",\"ts\":%.3f,\"pid\":%d,\"tid\":%u", ph, (double)ts_ns / 1e3, pid, tid);
    *first = 0;
}

static void tl_json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', f);
        if ((unsigned char)*s < 0x20) fprintf(f, "\\u%04x", (unsigned char)*s);
        else fputc(*s, f);
    }
    fputc('"', f);
}

static void tl_meta(FILE *f, int *first, const char *what, int pid, uint32_t tid, const char *name)
{
    tl_ev(f, first, what, NULL, "M", 0, pid, tid);
    fputs(",\"args\":{\"name\":", f);
    tl_json_str(f, name);
    fputs("}}", f);
}

/* Running / waiting requests over time, from the request records: waiting
 * from arrival to first admission (or rejection), running from first
 * admission to the last token.  A preempted request that waits again is
 * still counted as running (the records keep its first admission only). */
typedef struct TlStep {
    int64_t t_ns;
    int d_wait, d_run;
} TlStep;

static int tl_step_cmp(const void *a, const void *b)
{
    const TlStep *x = a, *y = b;
    return x->t_ns < y->t_ns ? -1 : x->t_ns > y->t_ns;
}

static void tl_queue_counters(const Timeline *tl, FILE *f, int *first, const Request *reqs, uint32_t n)
{
    TlStep *st = xmalloc((size_t)(n ? n : 1) * 4 * sizeof *st);
    size_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        const Request *r = &reqs[i];
        if (r->state == REQ_PENDING) continue;
        int admitted = r->t_first_sched_ns >= 0 && r->state != REQ_REJECTED;
        st[k++] = (TlStep){r->t_arrive_ns, +1, 0};
        if (admitted) st[k++] = (TlStep){r->t_first_sched_ns, -1, 0};
        else if ((r->state == REQ_REJECTED || r->state == REQ_CANCELLED) && r->t_finish_ns >= 0)
            st[k++] = (TlStep){r->t_finish_ns, -1, 0};
        if (admitted) {
            st[k++] = (TlStep){r->t_first_sched_ns, 0, +1};
            /* a cancelled request runs until the boundary that saw its cancel */
            int64_t end = r->state == REQ_CANCELLED ? r->t_cancel_ns : r->t_finish_ns;
            if ((r->state == REQ_FINISHED || r->state == REQ_CANCELLED) && end >= r->t_first_sched_ns)
                st[k++] = (TlStep){end, 0, -1};
        }
    }
    qsort(st, k, sizeof *st, tl_step_cmp);
    int wait = 0, run = 0;
    for (size_t i = 0; i < k;) {
        int64_t t = st[i].t_ns;
        for (; i < k && st[i].t_ns == t; i++) {
            wait += st[i].d_wait;
            run += st[i].d_run;
        }
        if (tl->has_window && t > tl->w1_ns) break;
        /* inside the window, plus the last value before it (so the
         * counter starts at the right level) */
        if (tl->has_window && t < tl->w0_ns && (i < k && st[i].t_ns < tl->w0_ns)) continue;
        int64_t ts = tl->has_window && t < tl->w0_ns ? tl->w0_ns : t;
        tl_ev(f, first, "requests", NULL, "C", ts, 1, 0);
        fprintf(f, ",\"args\":{\"running\":%d,\"waiting\":%d}}", run, wait);
    }
    free(st);
}

int timeline_write(const Timeline *tl, const char *path, const Request *reqs, uint32_t n, Err *e)
{
    OutFile o;
    FILE *f = outfile_open(&o, path, e);
    if (!f) return -1;
    uint32_t nreq = tl->max_requests && tl->max_requests < n ? tl->max_requests : n;
    /* which request lanes have something to show */
    uint8_t *shown = xcalloc(nreq ? nreq : 1, 1);
    for (size_t k = 0; k < tl->n_iters; k++) {
        const TlIter *it = &tl->iters[k];
        if (!tl_in(tl, it->t_ns, it->dur_ns)) continue;
        for (uint32_t j = 0; j < it->n_items; j++)
            if (tl_lane(tl, tl->items[it->first_item + j].req, nreq)) shown[tl->items[it->first_item + j].req] = 1;
    }
    for (uint32_t i = 0; i < nreq; i++) {
        const Request *r = &reqs[i];
        if (tl_lane(tl, i, nreq) && r->state != REQ_PENDING &&
            tl_in(tl, r->t_arrive_ns, MAX(r->t_first_sched_ns - r->t_arrive_ns, 0)))
            shown[i] = 1;
    }

    int first = 1;
    fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[", f);
    tl_meta(f, &first, "process_name", 1, 0, "engine");
    for (uint32_t k = 0; k < (tl->n_replicas ? tl->n_replicas : 1); k++) {
        char name[32];
        snprintf(name, sizeof name, "replica %u iterations", k);
        tl_meta(f, &first, "thread_name", 1, k + 1, name);
    }
    if (!tl->engine_only) tl_meta(f, &first, "process_name", 2, 0, "requests");
    for (uint32_t i = 0; i < nreq; i++)
        if (shown[i]) tl_meta(f, &first, "thread_name", 2, i + 1, reqs[i].id);
    for (size_t k = 0; k < tl->n_iters; k++) {
        const TlIter *it = &tl->iters[k];
        if (!tl_in(tl, it->t_ns, it->dur_ns)) continue;
        uint64_t pre_tok = 0, dec_tok = 0;
        for (uint32_t j = 0; j < it->n_items; j++) {
            const BatchItem *b = &tl->items[it->first_item + j];
            if (b->kind == ITEM_PREFILL) pre_tok += b->c;
            else dec_tok += b->c;
        }
        tl_ev(f, &first, "iteration", "engine", "X", it->t_ns, 1, it->replica + 1);
        fprintf(f, ",\"dur\":%.3f,\"args\":{\"prefill_requests\":%u,\"decode_requests\":%u,\"new_tokens\":%llu,"
                   "\"kv_used_blocks\":%llu}}", (double)it->dur_ns / 1e3, it->n_prefill, it->n_decode,
                (unsigned long long)it->new_tokens, (unsigned long long)it->kv_used);
        /* counter tracks: one sample per iteration, per replica */
        char cname[48];
        snprintf(cname, sizeof cname, tl->n_replicas > 1 ? "KV blocks used (replica %u)" : "KV blocks used",
                 it->replica);
        tl_ev(f, &first, cname, NULL, "C", it->t_ns, 1, 0);
        fprintf(f, ",\"args\":{\"blocks\":%llu}}", (unsigned long long)it->kv_used);
        snprintf(cname, sizeof cname, tl->n_replicas > 1 ? "tokens per iteration (replica %u)"
                                                         : "tokens per iteration", it->replica);
        tl_ev(f, &first, cname, NULL, "C", it->t_ns, 1, 0);
        fprintf(f, ",\"args\":{\"prefill\":%llu,\"decode\":%llu}}", (unsigned long long)pre_tok,
                (unsigned long long)dec_tok);
        for (uint32_t j = 0; j < it->n_items; j++) {
            const BatchItem *b = &tl->items[it->first_item + j];
            if (!tl_lane(tl, b->req, nreq)) continue;
            const char *name = b->kind == ITEM_PREFILL ? "prefill" : b->kind == ITEM_VERIFY ? "verify" : "decode";
            tl_ev(f, &first, name, NULL, "X", it->t_ns, 2, b->req + 1);
            fprintf(f, ",\"dur\":%.3f,\"args\":{\"new_tokens\":%u,\"cached_tokens\":%u,\"emits_token\":%s}}",
                    (double)it->dur_ns / 1e3, b->c, b->h, b->samples ? "true" : "false");
        }
    }
    tl_queue_counters(tl, f, &first, reqs, n);
    for (uint32_t i = 0; i < nreq; i++) {
        const Request *r = &reqs[i];
        if (r->state == REQ_PENDING || !shown[i]) continue;
        if (r->t_first_sched_ns > r->t_arrive_ns) {
            tl_ev(f, &first, "queued", "queue", "X", r->t_arrive_ns, 2, i + 1);
            fprintf(f, ",\"dur\":%.3f}", (double)(r->t_first_sched_ns - r->t_arrive_ns) / 1e3);
        }
        if (r->state == REQ_REJECTED && tl_in(tl, r->t_finish_ns, 0)) {
            tl_ev(f, &first, "rejected", "reject", "i", r->t_finish_ns, 2, i + 1);
            fputs(",\"s\":\"t\"}", f);
        }
        if (r->state == REQ_CANCELLED) {
            /* cancelled while it waited: the wait ends at the cancel */
            if (r->t_first_sched_ns < 0 && r->t_cancel_ns > r->t_arrive_ns) {
                tl_ev(f, &first, "queued", "queue", "X", r->t_arrive_ns, 2, i + 1);
                fprintf(f, ",\"dur\":%.3f}", (double)(r->t_cancel_ns - r->t_arrive_ns) / 1e3);
            }
            if (tl_in(tl, r->t_cancel_ns, 0)) {
                tl_ev(f, &first, "cancelled", "cancel", "i", r->t_cancel_ns, 2, i + 1);
                fprintf(f, ",\"s\":\"t\",\"args\":{\"kv_released_ms\":%.6f,\"blocks\":%u}}",
                        (double)r->t_finish_ns / 1e6, r->cancel_blocks);
            }
        }
    }
    fputs("\n]}\n", f);
    free(shown);
    return outfile_commit(&o, e);
}

int timeline_write_replay(const char *path, const Request *reqs, uint32_t n, const int64_t *token_times, Err *e)
{
    OutFile o;
    FILE *f = outfile_open(&o, path, e);
    if (!f) return -1;
    int first = 1;
    fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[", f);
    tl_meta(f, &first, "process_name", 2, 0, "requests (replayed schedule: no iterations)");
    for (uint32_t i = 0; i < n; i++) tl_meta(f, &first, "thread_name", 2, i + 1, reqs[i].id);
    for (uint32_t i = 0; i < n; i++) {
        const Request *r = &reqs[i];
        if (r->state == REQ_REJECTED) {
            tl_ev(f, &first, "rejected", "reject", "i", r->t_finish_ns >= 0 ? r->t_finish_ns : r->t_arrive_ns, 2,
                  i + 1);
            fputs(",\"s\":\"t\"}", f);
            continue;
        }
        int64_t prev = r->t_arrive_ns;
        for (uint32_t k = 0; k < r->generated; k++) {
            int64_t t = token_times[r->token_off + k];
            char name[32];
            if (k) snprintf(name, sizeof name, "token %u", k);
            tl_ev(f, &first, k ? name : "to first token", k ? "decode" : "queue+prefill", "X", prev, 2, i + 1);
            fprintf(f, ",\"dur\":%.3f,\"args\":{\"token\":%u}}", (double)(t - prev) / 1e3, k);
            prev = t;
        }
        if (r->state == REQ_CANCELLED) {
            tl_ev(f, &first, "cancelled", "cancel", "i", r->t_cancel_ns, 2, i + 1);
            fputs(",\"s\":\"t\"}", f);
        }
    }
    fputs("\n]}\n", f);
    return outfile_commit(&o, e);
}
