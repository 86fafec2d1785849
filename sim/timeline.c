/*
 * timeline.c -- trace-event recording and writing (see timeline.h).
 *
 * The file's sections, in order: the engine's metadata (process, one lane
 * per replica, known at the end), the request lanes' names (by workload
 * position), every iteration in the window with its counter samples and
 * its items' events (in the order they ran), the running/waiting counter
 * (by time, from every request's record), then the lanes' queueing,
 * rejection and cancellation events (by workload position).  The run
 * produces the second and last sections as requests leave (ordered
 * writers), the third as iterations are priced (a temporary file), the
 * fourth as steps sorted on disk; nothing is allocated per token, and
 * memory follows the requests in flight.  Every event after the first is
 * preceded by ",\n", so the sections are copied as they are.
 */
#include "timeline.h"
#include "extsort.h"
#include "ordw.h"
#include "outfile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One change of the running/waiting counts (the sort's record: the key
 * first). */
typedef struct TlStep {
    int64_t t_ns;
    int32_t d_wait, d_run;
} TlStep;

struct Timeline {
    TimelineOpts o;
    uint64_t *lanes;         /* o.lanes, owned */
    Slots *pool;             /* the records plan items index */
    int multi;               /* several replicas: a counter track per replica */
    uint32_t n_replicas;     /* replicas seen iterating (the highest + 1) */
    FILE *iters;             /* the iterations' section */
    Ordw names_w, lanes_w;   /* lane names and lane events, by workload position ... */
    FILE *names_f, *lanes_f; /* ... into these */
    ExtSort *steps;          /* the running/waiting steps */
    FILE *ms;                /* one record's text */
    char *ms_buf;
    size_t ms_len;
    uint8_t *in_iter;        /* per slot: its request was in an iteration inside the window */
    uint32_t n_in_iter;
    Err err;                 /* the first error of a section (retire returns none) */
    int failed;
};

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


static void tl_fail(Timeline *tl, const Err *e)
{
    if (!tl->failed) tl->err = *e;
    tl->failed = 1;
}

Timeline *timeline_new(const TimelineOpts *o, uint32_t replicas, size_t mem_limit, Err *e)
{
    Timeline *tl = xcalloc(1, sizeof *tl);
    tl->o = *o;
    if (o->lanes) {
        tl->lanes = xmalloc((o->n_lanes ? o->n_lanes : 1) * sizeof *tl->lanes);
        memcpy(tl->lanes, o->lanes, o->n_lanes * sizeof *tl->lanes);
        tl->o.lanes = tl->lanes;
    }
    tl->multi = replicas > 1;
    tl->iters = tmpfile();
    tl->names_f = tmpfile();
    tl->lanes_f = tmpfile();
    tl->ms = open_memstream(&tl->ms_buf, &tl->ms_len);
    if (!tl->iters || !tl->names_f || !tl->lanes_f || !tl->ms) {
        err_set(e, "--trace-events: cannot create a temporary file: %s", strerror(errno));
        timeline_free(tl);
        return NULL;
    }
    ordw_init(&tl->names_w, tl->names_f, "", mem_limit);
    ordw_init(&tl->lanes_w, tl->lanes_f, "", mem_limit);
    tl->steps = extsort_new(sizeof(TlStep), mem_limit);
    return tl;
}

void timeline_set_pool(Timeline *tl, Slots *pool)
{
    tl->pool = pool;
}

void timeline_free(Timeline *tl)
{
    if (!tl) return;
    ordw_free(&tl->names_w);
    ordw_free(&tl->lanes_w);
    if (tl->iters) fclose(tl->iters);
    if (tl->names_f) fclose(tl->names_f);
    if (tl->lanes_f) fclose(tl->lanes_f);
    if (tl->ms) fclose(tl->ms);
    free(tl->ms_buf);
    extsort_free(tl->steps);
    free(tl->in_iter);
    free(tl->lanes);
    free(tl);
}

/* The request at workload position seq has a lane (whatever the window). */
static int tl_lane(const Timeline *tl, uint64_t seq)
{
    if (tl->o.engine_only || (tl->o.max_requests && seq >= tl->o.max_requests)) return 0;
    if (!tl->o.lanes) return 1;
    uint32_t lo = 0, hi = tl->o.n_lanes;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (tl->o.lanes[mid] < seq) lo = mid + 1;
        else hi = mid;
    }
    return lo < tl->o.n_lanes && tl->o.lanes[lo] == seq;
}

/* [t, t + dur] meets the window (every span does without one). */
static int tl_in(const Timeline *tl, int64_t t, int64_t dur)
{
    return !tl->o.has_window || (t + dur >= tl->o.w0_ns && t <= tl->o.w1_ns);
}

void timeline_iteration(Timeline *tl, uint32_t replica, int64_t t_ns, int64_t dur_ns, const BatchPlan *plan,
                        uint64_t kv_used)
{
    if (replica + 1 > tl->n_replicas) tl->n_replicas = replica + 1;
    if (!tl_in(tl, t_ns, dur_ns)) return;
    FILE *f = tl->iters;
    int first = 0;
    uint64_t pre_tok = 0, dec_tok = 0;
    for (uint32_t j = 0; j < plan->n; j++) {
        if (plan->items[j].kind == ITEM_PREFILL) pre_tok += plan->items[j].c;
        else dec_tok += plan->items[j].c;
    }
    tl_ev(f, &first, "iteration", "engine", "X", t_ns, 1, replica + 1);
    fprintf(f, ",\"dur\":%.3f,\"args\":{\"prefill_requests\":%u,\"decode_requests\":%u,\"new_tokens\":%llu,"
               "\"kv_used_blocks\":%llu}}", (double)dur_ns / 1e3, plan->n_prefill, plan->n_decode,
            (unsigned long long)plan->new_tokens, (unsigned long long)kv_used);
    /* counter tracks: one sample per iteration, per replica (named so
     * when the deployment has several: timeline_write renames them if
     * only one ever ran) */
    char cname[48];
    snprintf(cname, sizeof cname, tl->multi ? "KV blocks used (replica %u)" : "KV blocks used", replica);
    tl_ev(f, &first, cname, NULL, "C", t_ns, 1, 0);
    fprintf(f, ",\"args\":{\"blocks\":%llu}}", (unsigned long long)kv_used);
    snprintf(cname, sizeof cname, tl->multi ? "tokens per iteration (replica %u)" : "tokens per iteration", replica);
    tl_ev(f, &first, cname, NULL, "C", t_ns, 1, 0);
    fprintf(f, ",\"args\":{\"prefill\":%llu,\"decode\":%llu}}", (unsigned long long)pre_tok,
            (unsigned long long)dec_tok);
    const Request *reqs = tl->pool ? slots_reqs(tl->pool) : NULL;
    for (uint32_t j = 0; reqs && j < plan->n; j++) {
        const BatchItem *b = &plan->items[j];
        uint64_t seq = reqs[b->req].seq;
        if (!tl_lane(tl, seq)) continue;
        if (b->req >= tl->n_in_iter) {
            uint32_t n = slots_cap(tl->pool);
            tl->in_iter = xrealloc(tl->in_iter, n);
            memset(tl->in_iter + tl->n_in_iter, 0, n - tl->n_in_iter);
            tl->n_in_iter = n;
        }
        tl->in_iter[b->req] = 1;
        const char *name = b->kind == ITEM_PREFILL ? "prefill" : b->kind == ITEM_VERIFY ? "verify" : "decode";
        tl_ev(f, &first, name, NULL, "X", t_ns, 2, (uint32_t)(seq + 1));
        fprintf(f, ",\"dur\":%.3f,\"args\":{\"new_tokens\":%u,\"cached_tokens\":%u,\"emits_token\":%s}}",
                (double)dur_ns / 1e3, b->c, b->h, b->samples ? "true" : "false");
    }
}

static void tl_step(Timeline *tl, int64_t t, int d_wait, int d_run)
{
    Err e = {0};
    TlStep st = {t, d_wait, d_run};
    if (!tl->failed && extsort_add(tl->steps, &st, &e) < 0) tl_fail(tl, &e);
}

/* One section's record of the request at seq: the text in tl->ms. */
static void tl_ordered(Timeline *tl, Ordw *w, uint64_t seq)
{
    Err e = {0};
    fflush(tl->ms);
    if (!tl->failed && ordw_add(w, seq, tl->ms_buf, tl->ms_len, &e) < 0) tl_fail(tl, &e);
}

void timeline_retire(Timeline *tl, const Request *r)
{
    if (r->state == REQ_PENDING) return; /* NEVER: a request leaves once it has arrived */
    /* Running / waiting requests over time, from the request's record:
     * waiting from arrival to first admission (or rejection), running
     * from first admission to the last token.  A preempted request that
     * waits again is still counted as running (the record keeps its
     * first admission only). */
    int admitted = r->t_first_sched_ns >= 0 && r->state != REQ_REJECTED;
    tl_step(tl, r->t_arrive_ns, +1, 0);
    if (admitted) tl_step(tl, r->t_first_sched_ns, -1, 0);
    else if ((r->state == REQ_REJECTED || r->state == REQ_CANCELLED) && r->t_finish_ns >= 0)
        tl_step(tl, r->t_finish_ns, -1, 0);
    if (admitted) {
        tl_step(tl, r->t_first_sched_ns, 0, +1);
        /* a cancelled request runs until the boundary that saw its cancel */
        int64_t end = r->state == REQ_CANCELLED ? r->t_cancel_ns : r->t_finish_ns;
        if ((r->state == REQ_FINISHED || r->state == REQ_CANCELLED) && end >= r->t_first_sched_ns)
            tl_step(tl, end, 0, -1);
    }
    /* its lane is shown when it took part in an iteration in the window,
     * or its queueing meets it */
    const uint64_t seq = r->seq;
    const uint32_t tid = (uint32_t)(seq + 1);
    int in_iter = r->idx < tl->n_in_iter && tl->in_iter[r->idx];
    if (in_iter) tl->in_iter[r->idx] = 0;
    int shown = tl_lane(tl, seq) && (in_iter || tl_in(tl, r->t_arrive_ns, MAX(r->t_first_sched_ns - r->t_arrive_ns, 0)));
    FILE *f = tl->ms;
    int first = 0;
    rewind(f);
    if (shown) tl_meta(f, &first, "thread_name", 2, tid, r->id ? r->id : "?");
    tl_ordered(tl, &tl->names_w, seq);
    rewind(f);
    if (shown) {
        if (r->t_first_sched_ns > r->t_arrive_ns) {
            tl_ev(f, &first, "queued", "queue", "X", r->t_arrive_ns, 2, tid);
            fprintf(f, ",\"dur\":%.3f}", (double)(r->t_first_sched_ns - r->t_arrive_ns) / 1e3);
        }
        if (r->state == REQ_REJECTED && tl_in(tl, r->t_finish_ns, 0)) {
            tl_ev(f, &first, "rejected", "reject", "i", r->t_finish_ns, 2, tid);
            fputs(",\"s\":\"t\"}", f);
        }
        if (r->state == REQ_CANCELLED) {
            /* cancelled while it waited: the wait ends at the cancel */
            if (r->t_first_sched_ns < 0 && r->t_cancel_ns > r->t_arrive_ns) {
                tl_ev(f, &first, "queued", "queue", "X", r->t_arrive_ns, 2, tid);
                fprintf(f, ",\"dur\":%.3f}", (double)(r->t_cancel_ns - r->t_arrive_ns) / 1e3);
            }
            if (tl_in(tl, r->t_cancel_ns, 0)) {
                tl_ev(f, &first, "cancelled", "cancel", "i", r->t_cancel_ns, 2, tid);
                fprintf(f, ",\"s\":\"t\",\"args\":{\"kv_released_ms\":%.6f,\"blocks\":%u}}",
                        (double)r->t_finish_ns / 1e6, r->cancel_blocks);
            }
        }
    }
    tl_ordered(tl, &tl->lanes_w, seq);
}

/* src (a temporary file) appended to f; with `rename`, the counter
 * tracks named per replica lose their " (replica 0)" (several replicas,
 * of which only the first ever ran).  1 when reading failed. */
static int tl_copy(FILE *f, FILE *src, int rename)
{
    rewind(src);
    if (!rename) {
        char buf[65536];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, src)) > 0) fwrite(buf, 1, n, f);
        return ferror(src) != 0;
    }
    static const char *const names[2] = {"{\"name\":\"KV blocks used (replica 0)\"",
                                         "{\"name\":\"tokens per iteration (replica 0)\""};
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, src)) > 0) {
        size_t skip = 0;
        for (int k = 0; k < 2 && !skip; k++)
            if (!strncmp(line, names[k], strlen(names[k]))) skip = strlen(names[k]) - strlen(" (replica 0)\"");
        if (!skip) {
            fwrite(line, 1, (size_t)len, f);
            continue;
        }
        /* the name without its replica, then the rest of the line */
        fwrite(line, 1, skip, f);
        fputs(line + skip + strlen(" (replica 0)"), f);
    }
    free(line);
    return ferror(src) != 0;
}

/* The running/waiting counter: the steps by time, one sample per instant
 * (inside the window, plus the last value before it, so the counter starts
 * at the right level). */
static int tl_counters(Timeline *tl, FILE *f, Err *e)
{
    if (extsort_rewind(tl->steps, e) < 0) return -1;
    TlStep cur, nx;
    int have = extsort_next(tl->steps, &cur, e), wait = 0, run = 0, first = 0;
    while (have > 0) {
        int64_t t = cur.t_ns;
        wait += cur.d_wait;
        run += cur.d_run;
        int more;
        while ((more = extsort_next(tl->steps, &nx, e)) > 0 && nx.t_ns == t) {
            wait += nx.d_wait;
            run += nx.d_run;
        }
        if (more < 0) return -1;
        if (tl->o.has_window && t > tl->o.w1_ns) break;
        if (!(tl->o.has_window && t < tl->o.w0_ns && more > 0 && nx.t_ns < tl->o.w0_ns)) {
            int64_t ts = tl->o.has_window && t < tl->o.w0_ns ? tl->o.w0_ns : t;
            tl_ev(f, &first, "requests", NULL, "C", ts, 1, 0);
            fprintf(f, ",\"args\":{\"running\":%d,\"waiting\":%d}}", run, wait);
        }
        cur = nx;
        have = more;
    }
    return have < 0 ? -1 : 0;
}

int timeline_write(Timeline *tl, const char *path, uint64_t n_requests, Err *e)
{
    if (tl->failed) {
        *e = tl->err;
        return -1;
    }
    if (ordw_finish(&tl->names_w, n_requests, e) < 0 || ordw_finish(&tl->lanes_w, n_requests, e) < 0) return -1;
    OutFile o;
    FILE *f = outfile_open(&o, path, e);
    if (!f) return -1;
    int first = 1;
    fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[", f);
    tl_meta(f, &first, "process_name", 1, 0, "engine");
    for (uint32_t k = 0; k < (tl->n_replicas ? tl->n_replicas : 1); k++) {
        char name[32];
        snprintf(name, sizeof name, "replica %u iterations", k);
        tl_meta(f, &first, "thread_name", 1, k + 1, name);
    }
    if (!tl->o.engine_only) tl_meta(f, &first, "process_name", 2, 0, "requests");
    int bad = tl_copy(f, tl->names_f, 0);
    bad |= tl_copy(f, tl->iters, tl->multi && tl->n_replicas <= 1);
    if (tl_counters(tl, f, e) < 0) {
        outfile_abort(&o);
        return -1;
    }
    bad |= tl_copy(f, tl->lanes_f, 0);
    fputs("\n]}\n", f);
    if (bad) {
        outfile_abort(&o);
        return err_set(e, "%s: cannot read back the trace's temporary files", path);
    }
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
