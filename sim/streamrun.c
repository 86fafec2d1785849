/*
 * streamrun.c -- a streamed run (see streamrun.h).
 */
#include "streamrun.h"

#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "mcfg.h"
#include "report.h"

/* One request's text from the memstream to an ordered writer. */
static void ordered(StreamRun *r, Ordw *w, uint64_t seq)
{
    fflush(r->ms);
    if (r->wfailed) return;
    if (ordw_add(w, seq, r->ms_buf, r->ms_len, &r->werr) < 0) r->wfailed = 1;
}

/* One retired request's inter-token gaps, waiting for an earlier one. */
typedef struct StreamGaps {
    int64_t *ns;
    uint32_t n, cap;
    uint8_t present;
} StreamGaps;

static void itl_take(StreamRun *r, const int64_t *ns, uint32_t n)
{
    for (uint32_t k = 0; k < n; k++) statacc_add(&r->itl, (double)ns[k] / 1e9);
}

/* q's gaps into r->itl in workload order (as metrics_summarize adds them
 * from the token times: the included finished requests'; metrics_acc_add
 * has just decided q). */
static void itl_ordered(StreamRun *r, const Request *q, const int64_t *tt)
{
    uint32_t n = q->state == REQ_FINISHED && tt && q->generated > 1 && r->acc.last_in
                     ? q->generated - 1 : 0;
    if (q->seq == r->itl_base) {
        for (uint32_t k = 0; k < n; k++) statacc_add(&r->itl, (double)(tt[k + 1] - tt[k]) / 1e9);
        r->itl_base++;
        /* then every one held that now follows */
        while (r->gaps_cap && r->gaps[r->itl_base % r->gaps_cap].present) {
            StreamGaps *g = &r->gaps[r->itl_base % r->gaps_cap];
            itl_take(r, g->ns, g->n);
            g->present = 0;
            r->itl_base++;
        }
        return;
    }
    uint64_t off = q->seq - r->itl_base;
    if (off >= r->gaps_cap) {
        uint32_t cap = r->gaps_cap ? r->gaps_cap : 64;
        while (off >= cap) cap *= 2;
        StreamGaps *ng = xcalloc(cap, sizeof *ng);
        for (uint32_t k = 0; k < r->gaps_cap; k++) {
            StreamGaps *g = &r->gaps[k];
            if (!g->present && !g->ns) continue;
            /* a held entry keeps its seq: base + its ring distance */
            uint64_t seq = r->itl_base + (k + r->gaps_cap - r->itl_base % r->gaps_cap) % r->gaps_cap;
            if (g->present) ng[seq % cap] = *g;
            else free(g->ns);
        }
        free(r->gaps);
        r->gaps = ng;
        r->gaps_cap = cap;
    }
    StreamGaps *g = &r->gaps[q->seq % r->gaps_cap];
    if (g->cap < n) {
        g->ns = xrealloc(g->ns, n * sizeof *g->ns);
        g->cap = n;
    }
    for (uint32_t k = 0; k < n; k++) g->ns[k] = tt[k + 1] - tt[k];
    g->n = n;
    g->present = 1;
}

/* A task row in task order: its JSON element after the previous one. */
static void task_row(void *ctx, const TaskRow *t, const char *first_id)
{
    StreamRun *r = ctx;
    if (!r->tasks_body) return;
    char *text;
    size_t n = report_task_json_text(t, first_id, &text);
    if (r->n_task_rows++) fputs(", ", r->tasks_body);
    fwrite(text, 1, n, r->tasks_body);
    free(text);
}

static void arrive(void *ctx, Request *q)
{
    metrics_acc_arrive(&((StreamRun *)ctx)->acc, q);
}

static void retire(void *ctx, const Request *q, const int64_t *tt)
{
    StreamRun *r = ctx;
    metrics_acc_add(&r->acc, q, tt);
    if (r->tl) timeline_retire(r->tl, q);
    r->rejected_kv += q->state == REQ_REJECTED && q->reject_reason == REJECT_KV_TOO_SMALL;
    if (r->itl_ordered) itl_ordered(r, q, tt);
    if (r->chains) tasks_acc_add(&r->tasks, q);
    if (r->csv) {
        rewind(r->ms);
        report_csv_row(r->ms, &r->mc, q);
        ordered(r, &r->csv_w, q->seq);
    }
    if (r->tok) {
        rewind(r->ms);
        report_tokens_rows(r->ms, q, tt);
        ordered(r, &r->tok_w, q->seq);
    }
    if (r->vl_body[0] && !r->wfailed) {
        char *text[REPORT_VLLM_ARRAYS] = {0};
        size_t n[REPORT_VLLM_ARRAYS] = {0};
        /* the arrays list finished requests: another's records are empty */
        if (q->state == REQ_FINISHED) report_vllm_texts(&r->mc, q, r->s.keep_token_times ? tt : NULL, text, n);
        for (int a = 0; a < REPORT_VLLM_ARRAYS; a++) {
            if (!r->wfailed && ordw_add(&r->vl_w[a], q->seq, text[a] ? text[a] : "", n[a], &r->werr) < 0)
                r->wfailed = 1;
            free(text[a]);
        }
    }
    if (r->json_body && !r->wfailed) {
        char *text;
        size_t n = report_request_json_text(&r->mc, q, r->s.keep_token_times ? tt : NULL, &text);
        if (ordw_add(&r->json_w, q->seq, text, n, &r->werr) < 0) r->wfailed = 1;
        free(text);
    }
}

/* Each iteration's MFU and MBU, as utilisation() in metrics.c computes
 * them from the iteration records a streamed run does not keep. */
static void on_iteration(void *ctx, uint32_t replica, int64_t t_ns, int64_t dur_ns, const BatchPlan *plan,
                         const CostBreakdown *cb, uint64_t kv_used)
{
    StreamRun *r = ctx;
    if (r->tl) timeline_iteration(r->tl, replica, t_ns, dur_ns, plan, kv_used);
    metrics_acc_iteration(&r->acc, t_ns, dur_ns, eng_running_count(r->eng), eng_waiting_count(r->eng), kv_used);
    /* the summary has MFU and MBU only where a materialised run keeps the
     * iteration records they come from */
    if (!r->s.keep_iterations) return;
    double gpus = r->mc.price.gpus > 0 ? r->mc.price.gpus : 1, dur_s = (double)dur_ns / 1e9;
    if (r->mc.peak_flops_per_gpu > 0) statacc_add(&r->mfu, cb->flops / (r->mc.peak_flops_per_gpu * gpus * dur_s));
    if (r->mc.mem_bw_per_gpu > 0) statacc_add(&r->mbu, cb->bytes / (r->mc.mem_bw_per_gpu * gpus * dur_s));
}

/* A cluster's iteration: the trace's (the summary takes nothing from
 * the iterations of several replicas). */
static void on_iteration_cluster(void *ctx, uint32_t replica, int64_t t_ns, int64_t dur_ns, const BatchPlan *plan,
                                 const CostBreakdown *cb, uint64_t kv_used)
{
    (void)cb;
    timeline_iteration(((StreamRun *)ctx)->tl, replica, t_ns, dur_ns, plan, kv_used);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* One id of --trace-ids: its text and the first workload position that
 * has it (UINT64_MAX: none yet). */
typedef struct TraceId {
    const char *p;
    size_t len;
    uint64_t seq;
} TraceId;

static int cmp_trace_id(const void *a, const void *b)
{
    const TraceId *x = a, *y = b;
    if (x->len != y->len) return x->len < y->len ? -1 : 1;
    return memcmp(x->p, y->p, x->len);
}

/* --trace-ids: the workload positions of the ids (each its first, in
 * workload order), from a pass over a second copy of the workload; an
 * empty id, or one no request has, is an error naming it (the first in
 * the list's order).  *lanes sorted, to free. */
static int trace_lanes(const Scenario *s, const char *ids, uint64_t **lanes, uint32_t *n_lanes, Err *e)
{
    uint32_t n = 1;
    for (const char *p = ids; *p; p++) n += *p == ',';
    TraceId *t = xmalloc(n * sizeof *t), *sorted = xmalloc(n * sizeof *sorted);
    const char *p = ids;
    for (uint32_t k = 0; k < n; k++) {
        size_t len = strcspn(p, ",");
        t[k] = (TraceId){p, len, UINT64_MAX};
        p += len + (p[len] == ',');
    }
    memcpy(sorted, t, n * sizeof *t);
    qsort(sorted, n, sizeof *sorted, cmp_trace_id);
    Workload names;
    workload_init(&names, s->wl.kind);
    WlStream *pre = scenario_stream_reopen(s, &names, e);
    Request q;
    int got = pre ? 1 : -1;
    while (got > 0)
        if ((got = workload_stream_next(pre, &q, e)) > 0) {
            char num[24];
            if (!q.id) snprintf(num, sizeof num, "%llu", (unsigned long long)q.seq);
            TraceId key = {q.id ? q.id : num, strlen(q.id ? q.id : num), 0};
            TraceId *hit = bsearch(&key, sorted, n, sizeof *sorted, cmp_trace_id);
            /* equal ids sort together: the first of them holds the seq */
            while (hit && hit > sorted && !cmp_trace_id(hit - 1, &key)) hit--;
            if (hit && q.seq < hit->seq) hit->seq = q.seq;
        }
    workload_free(&names);
    workload_stream_free(pre);
    int rc = got < 0 ? -1 : 0;
    *lanes = xmalloc(n * sizeof **lanes);
    *n_lanes = 0;
    for (uint32_t k = 0; rc == 0 && k < n; k++) {
        if (!t[k].len) {
            rc = err_set(e, "--trace-ids %s: an empty id; expected ID[,ID...]", ids);
            break;
        }
        TraceId *hit = bsearch(&t[k], sorted, n, sizeof *sorted, cmp_trace_id);
        while (hit && hit > sorted && !cmp_trace_id(hit - 1, &t[k])) hit--;
        if (!hit || hit->seq == UINT64_MAX) {
            rc = err_set(e, "--trace-ids: no request has the id \"%.*s\"", (int)t[k].len, t[k].p);
            break;
        }
        (*lanes)[(*n_lanes)++] = hit->seq;
    }
    qsort(*lanes, *n_lanes, sizeof **lanes, cmp_u64);
    free(t);
    free(sorted);
    return rc;
}

/* One iteration's row of --iterations-csv, as it is priced (the records
 * come in iteration order: one replica). */
static void on_record(void *ctx, const IterRecord *it)
{
    StreamRun *r = ctx;
    if (r->iter) report_iteration_row(r->iter, &r->mc, r->n_iter_rows, it);
    if (r->iter_kept) report_iteration_row(r->iter_kept, &r->mc, r->n_iter_rows, it);
    r->n_iter_rows++;
}

/* An ordered output file: opened, its header written. */
static FILE *open_ordered(OutFile *o, Ordw *w, const char *path, const char *header, size_t mem, Err *e)
{
    FILE *f = outfile_open(o, path, e);
    if (!f) return NULL;
    fputs(header, f);
    ordw_init(w, f, "", mem);
    return f;
}

static int commit_ordered(FILE **f, OutFile *o, Ordw *w, uint64_t n, Err *e)
{
    if (!*f) return 0;
    if (ordw_finish(w, n, e) < 0) return -1;
    *f = NULL;
    return outfile_commit(o, e);
}

static int streamrun_pass(StreamRun *r, const char *path, const char *text, const char *name, int has_seed,
                          uint64_t seed, int exact_stats, const StreamOutputs *o, int first_run, Err *e);

int streamrun(StreamRun *r, const char *path, const char *text, const char *name, int has_seed, uint64_t seed,
              int exact_stats, const StreamOutputs *o, Err *e)
{
    return streamrun_pass(r, path, text, name, has_seed, seed, exact_stats, o, 0, e);
}

/* first_run: the run that finds a chain's last arrival (MetricsCfg
 * stream_need_hi) for a cool-down by time: the same simulation (the
 * metrics never steer it), without the cool-down and without outputs. */
static int streamrun_pass(StreamRun *r, const char *path, const char *text, const char *name, int has_seed,
                          uint64_t seed, int exact_stats, const StreamOutputs *o, int first_run, Err *e)
{
    static const StreamOutputs none = {0};
    if (!o) o = &none;
    memset(r, 0, sizeof *r);
    int rc = path ? scenario_load_file_stream(path, has_seed, seed, &r->s, e)
                  : scenario_load_text_stream(text, name, has_seed, seed, &r->s, e);
    if (rc < 0) {
        memset(&r->s, 0, sizeof r->s); /* the loader freed it */
        return -1;
    }
    Scenario *s = &r->s;
    if (o->adjust) o->adjust(s, o->adjust_ctx);
    if (s->metrics.stream_need_hi && first_run) {
        s->metrics.cooldown_s = 0;
        s->metrics.stream_need_hi = 0;
    } else if (s->metrics.stream_need_hi) {
        StreamRun *f = xmalloc(sizeof *f);
        StreamOutputs fo = {.adjust = o->adjust, .adjust_ctx = o->adjust_ctx};
        int frc = streamrun_pass(f, path, text, name, has_seed, seed, exact_stats, &fo, 1, e);
        int64_t hi = f->acc.n_arr ? f->acc.hi_ns : INT64_MIN;
        streamrun_free(f);
        free(f);
        if (frc < 0) return -1;
        s->metrics.stream_hi_ns = hi;
        s->metrics.stream_need_hi = 0;
    }
    /* per-token times only where an output shows them: the summary's ITL
     * is streamed from the engine either way, and without them the decode
     * fast path runs */
    if (o->window && mcfg_parse_window_arg(o->window, &s->metrics, e) < 0) return -1;
    if ((s->metrics.has_window || o->tokens_csv) && s->token_times_auto) s->keep_token_times = 1;
    if (o->tokens_csv && !s->keep_token_times)
        return err_set(e, "%s: --tokens-csv writes every token's time; remove report.token_times: false", s->source);
    if (s->metrics.has_window && !s->keep_token_times)
        return err_set(e, "%s: a fixed throughput window counts tokens by emission time; remove report.token_times: "
                          "false", s->source);
    /* ... or where the summary needs them: a fixed window counts the
     * tokens inside it from their times, and with cancellations or a
     * warm-up or cool-down the materialised summary takes ITL from the
     * included finished requests' token times while the gaps streamed as
     * emitted are every request's */
    const MetricsCfg *m = &s->metrics;
    int excludes = m->warmup_s > 0 || m->cooldown_s > 0 || m->warmup_requests || m->cooldown_requests;
    if (!o->tokens_csv && !o->json_requests && !o->vllm && !m->has_window && !s->stream_cancels && !excludes)
        s->keep_token_times = 0;
    /* A materialised run takes ITL from the token times in workload order
     * when it keeps them: so does this one (itl_ordered), not from the
     * gaps as emitted, whose sketch sums round differently past 2^52 */
    r->itl_ordered = s->keep_token_times;
    s->metrics.exact_stats = exact_stats;
    scenario_metrics_cfg(s, &r->mc, r->slo_table, METRICS_CLS_MAX);
    statacc_init(&r->itl, exact_stats ? UINT64_MAX : METRICS_EXACT_MAX);
    statacc_init(&r->mfu, exact_stats ? UINT64_MAX : METRICS_EXACT_MAX);
    statacc_init(&r->mbu, exact_stats ? UINT64_MAX : METRICS_EXACT_MAX);
    if (metrics_acc_init(&r->acc, &r->mc, &r->sum, e) < 0) return -1;
    if (o->csv || o->tokens_csv) r->ms = open_memstream(&r->ms_buf, &r->ms_len);
    if ((o->csv || o->tokens_csv) && !r->ms) return err_set(e, "cannot open a memory stream");
    if (o->csv) {
        OutFile tmp;
        if (!(r->csv = outfile_open(&tmp, o->csv, e))) return -1;
        r->csv_o = tmp;
        report_csv_header(r->csv);
        ordw_init(&r->csv_w, r->csv, "", o->mem_limit);
    }
    if (o->tokens_csv && !(r->tok = open_ordered(&r->tok_o, &r->tok_w, o->tokens_csv, "id,token,time_s\n",
                                                 o->mem_limit, e)))
        return -1;
    if (o->json_requests) {
        if (!(r->json_body = tmpfile())) return err_set(e, "cannot create a temporary file for the JSON requests");
        ordw_init(&r->json_w, r->json_body, ", ", o->mem_limit);
    }
    uint32_t reps = 0;
    for (uint32_t p = 0; p < s->n_pools; p++) reps += s->pools[p].replicas;
    /* the materialised run's messages, before anything runs */
    if ((o->iter_csv || o->trace) && !s->keep_iterations)
        return err_set(e, "%s: --iterations-csv and --trace-events need report.iterations (it is false)", s->source);
    if (o->iter_csv) {
        if (reps > 1)
            return err_set(e, "--iterations-csv: per-iteration records are kept for a single replica; this run has "
                              "%u (use --trace-events for every replica's iterations)", reps);
        OutFile tmp;
        if (!(r->iter = outfile_open(&tmp, o->iter_csv, e))) return -1;
        r->iter_o = tmp;
        report_iterations_header(r->iter);
    }
    if (o->iter_keep && s->keep_iterations && reps == 1) {
        if (!(r->iter_kept = tmpfile())) return err_set(e, "cannot create a temporary file for the iterations");
        report_iterations_header(r->iter_kept);
    }
    if (o->trace) {
        TimelineOpts to = o->trace_opts;
        uint64_t *lanes = NULL;
        if (o->trace_ids && trace_lanes(s, o->trace_ids, &lanes, &to.n_lanes, e) < 0) {
            free(lanes);
            return -1;
        }
        to.lanes = lanes;
        r->tl = timeline_new(&to, reps, o->mem_limit, e);
        free(lanes);
        if (!r->tl) return -1;
    }
    for (int a = 0; o->vllm && a < REPORT_VLLM_ARRAYS; a++) {
        if (!(r->vl_body[a] = tmpfile())) return err_set(e, "cannot create a temporary file for the vLLM arrays");
        ordw_init(&r->vl_w[a], r->vl_body[a], ", ", o->mem_limit);
    }
    s->stream_retire = retire;
    s->stream_retire_ctx = r;
    if (r->mc.stream_chains) {
        s->stream_arrive = arrive;
        s->stream_arrive_ctx = r;
    }
    tasks_acc_init(&r->tasks);
    r->chains = workload_stream_chains(s->wl_stream);
    if (r->chains && o->json_requests) {
        if (!(r->tasks_body = tmpfile())) return err_set(e, "cannot create a temporary file for the JSON tasks");
        r->tasks.on_row = task_row;
        r->tasks.ctx = r;
    }
    if (s->n_pools == 1 && s->pools[0].replicas == 1 && !s->disagg) {
        /* a trace lists every iteration's items (the decode fast path steps aside) */
        MetricsSink sink = {.ctx = r, .on_iteration = on_iteration, .plan_counts_only = !r->tl,
                            .on_record = r->iter || r->iter_kept ? on_record : NULL};
        /* a materialised run of one replica keeps its iterations, and its
         * means over a window that leaves requests out come from them */
        r->acc.windowed = (r->mc.stream_known || r->mc.has_window || s->stream_cancels) && s->keep_iterations;
        if (!(r->eng = scenario_engine(s, &sink, e))) return -1;
        if (r->tl) timeline_set_pool(r->tl, engine_stream_slots(r->eng));
        if (!r->itl_ordered) engine_set_itl_acc(r->eng, &r->itl);
        if (engine_run(r->eng, e) < 0) return -1;
        r->requests = engine_stream_pulled(r->eng);
        r->peak_live = engine_live_peak(r->eng);
        r->rst[0] = engine_stats(r->eng);
        r->served = (uint32_t)r->requests;
    } else {
        /* several replicas: the router takes the stream; the report has
         * no MFU or MBU (as a materialised cluster's, which keeps no
         * iteration records) */
        MetricsSink sink = {.ctx = r, .on_iteration = r->tl ? on_iteration_cluster : NULL, .plan_counts_only = !r->tl};
        if (!(r->cl = cluster_new(s, &sink, e))) return -1;
        if (r->tl) timeline_set_pool(r->tl, cluster_stream_slots(r->cl));
        if (cluster_run(r->cl, e) < 0) return -1;
        r->requests = cluster_stream_pulled(r->cl);
        r->peak_live = cluster_live_peak(r->cl);
    }
    if (r->wfailed) {
        *e = r->werr;
        return -1;
    }
    RunData rd;
    streamrun_rundata(r, &rd);
    if (r->itl_ordered && r->itl_base != r->requests)
        return err_set(e, "internal: %llu of %llu requests' gaps taken in order", (unsigned long long)r->itl_base,
                       (unsigned long long)r->requests);
    if (metrics_acc_check(&r->acc, e) < 0) return -1;
    metrics_acc_finish(&r->acc, rd.st, r->itl_ordered ? &r->itl : rd.itl);
    /* from the token times, the finished requests' gaps whatever else
     * left, as metrics_summarize takes them */
    if (r->itl_ordered) metrics_dist_acc(&r->itl, &r->sum.itl_s);
    r->sum.per_replica = rd.replicas;
    /* NEVER: a task that never finished, or a link added twice */
    if (r->chains && tasks_acc_finish(&r->tasks, &r->sum.tasks) < 0)
        return err_set(e, "%s: internal: the streamed tasks do not add up", s->source);
    /* a cost model that gives no FLOPs (linear) has no MFU or MBU */
    if (r->eng && engine_stats(r->eng)->flops > 0 && s->keep_iterations) {
        metrics_dist_acc(&r->mfu, &r->sum.mfu);
        metrics_dist_acc(&r->mbu, &r->sum.mbu);
    }
    if (r->iter) {
        r->iter = NULL;
        if (outfile_commit(&r->iter_o, e) < 0) return -1;
    }

    if (r->tl && timeline_write(r->tl, o->trace, r->requests, e) < 0) return -1;
    if (commit_ordered(&r->csv, &r->csv_o, &r->csv_w, r->requests, e) < 0) return -1;
    if (commit_ordered(&r->tok, &r->tok_o, &r->tok_w, r->requests, e) < 0) return -1;
    if (r->json_body && ordw_finish(&r->json_w, r->requests, e) < 0) return -1;
    for (int a = 0; a < REPORT_VLLM_ARRAYS; a++)
        if (r->vl_body[a] && ordw_finish(&r->vl_w[a], r->requests, e) < 0) return -1;
    return 0;
}

/* The raw placeholder ph as a value: cJSON writes a tab only as
 * formatting (one inside a string is escaped), and after one only a value,
 * which a comma or a newline ends. */
static char *placeholder(char *text, const char *ph)
{
    size_t n = strlen(ph);
    for (char *at = strchr(text, '\t'); at; at = strchr(at + 1, '\t'))
        if (!strncmp(at + 1, ph, n) && (at[1 + n] == ',' || at[1 + n] == '\n')) return at;
    return NULL;
}

/* Copies body (a temporary file) into f as a JSON array; 1 if reading failed. */
static int copy_array(FILE *f, FILE *body)
{
    fputc('[', f);
    rewind(body);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, body)) > 0) fwrite(buf, 1, n, f);
    fputc(']', f);
    return ferror(body) != 0;
}

/* root printed into f with each raw placeholder ph[k] (in the text's
 * order) replaced by the array in body[k]; where and what name the output
 * and the bodies in messages.  1 when reading a body failed. */
static int splice(const cJSON *root, FILE *f, const char *const *ph, FILE *const *body, int n, const char *where,
                  const char *what, Err *e)
{
    char *text = cJSON_Print(root), *at[REPORT_VLLM_ARRAYS];
    if (!text) return err_set(e, "%s: cannot render JSON", where);
    for (int k = 0; k < n; k++)
        if (!(at[k] = placeholder(text, ph[k])) || (k && at[k] < at[k - 1])) {
            cJSON_free(text);
            return err_set(e, "internal: %s: no placeholder for the %s", where, what);
        }
    const char *rest = text;
    int bad = 0;
    for (int k = 0; k < n; k++) {
        fwrite(rest, 1, (size_t)(at[k] + 1 - rest), f);
        bad |= copy_array(f, body[k]);
        rest = at[k] + 1 + strlen(ph[k]);
    }
    fputs(rest, f);
    fputc('\n', f);
    cJSON_free(text);
    if (bad) return err_set(e, "%s: cannot read back the %s' temporary files", where, what);
    return 0;
}

/* splice into the file at path, atomically */
static int write_spliced(const cJSON *root, const char *path, const char *const *ph, FILE *const *body, int n,
                         const char *what, Err *e)
{
    OutFile o;
    FILE *f = outfile_open(&o, path, e);
    if (!f) return -1;
    if (splice(root, f, ph, body, n, path, what, e) < 0) {
        outfile_abort(&o);
        return -1;
    }
    return outfile_commit(&o, e);
}

int streamrun_write_json(StreamRun *r, const cJSON *root, const char *path, Err *e)
{
    static const char *const ph[2] = {STREAMRUN_REQUESTS_RAW, STREAMRUN_TASKS_RAW};
    if (!r->json_body) return err_set(e, "internal: %s: the run kept no requests", path);
    FILE *body[2] = {r->json_body, r->tasks_body};
    int tasks = r->tasks_body && r->sum.tasks.has_tasks;
    return write_spliced(root, path, ph, body, tasks ? 2 : 1, "requests (or tasks)", e);
}

cJSON *streamrun_json(StreamRun *r, const cJSON *root, Err *e)
{
    static const char *const ph[2] = {STREAMRUN_REQUESTS_RAW, STREAMRUN_TASKS_RAW};
    if (!r->json_body) {
        err_set(e, "internal: the run kept no requests");
        return NULL;
    }
    FILE *body[2] = {r->json_body, r->tasks_body};
    int tasks = r->tasks_body && r->sum.tasks.has_tasks;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) {
        err_set(e, "cannot open a memory stream");
        return NULL;
    }
    int rc = splice(root, f, ph, body, tasks ? 2 : 1, "the report", "requests (or tasks)", e);
    fclose(f);
    cJSON *full = rc == 0 ? cJSON_ParseWithLength(text, len) : NULL;
    if (rc == 0 && !full) err_set(e, "internal: the report with its requests does not parse back");
    free(text);
    return full;
}

int streamrun_write_vllm(StreamRun *r, const char *path, Err *e)
{
    static const char *const ph[REPORT_VLLM_ARRAYS] = {"@v0", "@v1", "@v2", "@v3"};
    if (!r->vl_body[0]) return err_set(e, "internal: %s: the run kept no vLLM arrays", path);
    cJSON *root = report_vllm_head(&r->mc, &r->sum);
    for (int a = 0; a < REPORT_VLLM_ARRAYS; a++) cJSON_AddRawToObject(root, report_vllm_arrays[a], ph[a]);
    int rc = write_spliced(root, path, ph, r->vl_body, REPORT_VLLM_ARRAYS, "vLLM arrays", e);
    cJSON_Delete(root);
    return rc;
}

int streamrun_write_iterations(StreamRun *r, const char *path, Err *e)
{
    if (!r->iter_kept) return err_set(e, "internal: %s: the run kept no iterations", path);
    OutFile o;
    FILE *f = outfile_open(&o, path, e);
    if (!f) return -1;
    rewind(r->iter_kept);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, r->iter_kept)) > 0) fwrite(buf, 1, n, f);
    if (ferror(r->iter_kept)) {
        outfile_abort(&o);
        return err_set(e, "%s: cannot read back the iterations' temporary file", path);
    }
    return outfile_commit(&o, e);
}

void streamrun_free(StreamRun *r)
{
    if (r->csv) outfile_abort(&r->csv_o);
    if (r->tok) outfile_abort(&r->tok_o);
    if (r->iter) outfile_abort(&r->iter_o);
    r->csv = r->tok = r->iter = NULL;
    if (r->iter_kept) fclose(r->iter_kept);
    r->iter_kept = NULL;
    ordw_free(&r->csv_w);
    ordw_free(&r->tok_w);
    ordw_free(&r->json_w);
    if (r->json_body) fclose(r->json_body);
    r->json_body = NULL;
    for (int a = 0; a < REPORT_VLLM_ARRAYS; a++) {
        ordw_free(&r->vl_w[a]);
        if (r->vl_body[a]) fclose(r->vl_body[a]);
        r->vl_body[a] = NULL;
    }
    if (r->tasks_body) fclose(r->tasks_body);
    r->tasks_body = NULL;
    tasks_acc_free(&r->tasks);
    timeline_free(r->tl);
    r->tl = NULL;
    for (uint32_t k = 0; k < r->gaps_cap; k++) free(r->gaps[k].ns);
    free(r->gaps);
    r->gaps = NULL;
    r->gaps_cap = 0;
    if (r->ms) fclose(r->ms);
    r->ms = NULL;
    free(r->ms_buf);
    r->ms_buf = NULL;
    engine_free(r->eng);
    r->eng = NULL;
    cluster_free(r->cl);
    r->cl = NULL;
    metrics_acc_free(&r->acc);
    statacc_free(&r->itl);
    statacc_free(&r->mfu);
    statacc_free(&r->mbu);
    scenario_free(&r->s);
}

void streamrun_rundata(const StreamRun *r, RunData *rd)
{
    if (r->cl) {
        cluster_rundata(r->cl, rd);
        return;
    }
    const Scenario *s = &r->s;
    *rd = (RunData){.st = engine_stats(r->eng), .itl = &r->itl};
    rd->replicas.n = 1;
    rd->replicas.st = r->rst;
    rd->replicas.requests = &r->served;
    rd->replicas.kv_bytes_per_gpu[0] = s->pools[0].kv.capacity_bytes / s->pools[0].tp;
    rd->replicas.kv_total_bytes = s->kv.unbounded ? 0 : s->pools[0].replicas * s->pools[0].kv.capacity_bytes;
}

cJSON *streamrun_report(const StreamRun *r, const ErrBand *band, int with_requests)
{
    RunData rd;
    streamrun_rundata(r, &rd);
    cJSON *root = report_json(&r->mc, &rd, &r->sum, 0);
    if (with_requests) {
        cJSON_AddRawToObject(root, "requests", STREAMRUN_REQUESTS_RAW);
        if (r->sum.tasks.has_tasks) cJSON_AddRawToObject(root, "tasks", STREAMRUN_TASKS_RAW);
    }
    if (band) report_band_json(root, band, &r->sum);
    cJSON *sc = cJSON_CreateObject();
    scenario_to_json(&r->s, sc);
    cJSON_AddItemToObject(root, "scenario", sc);
    return root;
}

int run_summary(RunSummary *o, const char *path, const char *text, const char *name, int has_seed, uint64_t seed,
                int exact_stats, Err *e)
{
    memset(o, 0, sizeof *o);
    o->sr = xmalloc(sizeof *o->sr);
    if (streamrun(o->sr, path, text, name, has_seed, seed, exact_stats, NULL, e) < 0) return -1;
    o->s = &o->sr->s;
    o->mc = &o->sr->mc;
    o->sum = &o->sr->sum;
    o->rejected_kv = o->sr->rejected_kv;
    streamrun_rundata(o->sr, &o->rd);
    return 0;
}

void run_summary_free(RunSummary *o)
{
    if (o->sr) {
        streamrun_free(o->sr);
        free(o->sr);
    }
    memset(o, 0, sizeof *o);
}
