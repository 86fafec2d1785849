/*
 * trace_load.c -- request lists and trace files as workloads, with the
 * trace transforms (the sources wl_source_list and wl_source_trace):
 *
 *   {"requests": [...], ...transforms}                    inline list (strict)
 *   {"trace": PATH, "format": "azure"|"mooncake"|"csv"|"json",
 *    "on_error": "stop"|"skip", ...transforms}
 *
 * Transforms, applied in this order while streaming:
 *   "window_s": [t0, t1]   keep arrivals in [t0, t1) s of the trace and
 *                          shift them so t0 becomes 0
 *   "sample": f            keep each record with probability f (one uniform
 *                          per record in the window, stream WL_STREAM_SAMPLE)
 *   "limit": N             keep the first N records that pass the above
 * then per request:
 *   zero lengths           a prompt or output of 0 tokens becomes 1 (counted)
 *   "max_context": C       prompt + output > C: the output is cut to C - 1 if
 *                          longer, then the prompt to C - output (counted)
 *   "tenant", "class", "priority", "deadline_ms", "mix"   for records that
 *                          do not carry their own (gen_attr.h)
 * and after reading:
 *   "time_scale": x        every arrival times x (0.5 = twice the rate), or
 *   "rate_per_s": r        the factor that makes (n - 1) / (last - first) = r
 *   "bootstrap_block_s": B first, a block bootstrap (issue 37): the trace's
 *                          span cut into blocks of B s of its own time, each
 *                          slot of the same span
 *                          filled with a block drawn with replacement (stream
 *                          WL_STREAM_BOOTSTRAP), so each seed is another
 *                          plausible trace with the same burstiness; ids get
 *                          "@slot".  Not with links or sessions, not streamed.
 *
 * Streaming: records are filtered as they are read and only the kept ones
 * are stored; a sorted trace (azure, mooncake, csv) stops being read at the
 * end of the window or at the limit.  Ids, names and token/hash arrays are
 * copied into the workload's arena, nothing is allocated per record
 * otherwise.
 */
#include "workload.h"

#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_attr.h"
#include "jsonio.h"
#include "rng.h"
#include "trace_json.h"
#include "trace_reader.h"
#include "wl_source.h"

typedef enum { XF_KEEP = 0, XF_DROP, XF_STOP } XfAction;

typedef struct Xform {
    int has_window;
    int64_t t0_ns, t1_ns;     /* [t0, t1) of the trace's time */
    uint64_t limit;           /* 0 = all */
    double sample;            /* keep fraction, 1 = all */
    double time_scale;        /* 0 = none */
    double rate_per_s;        /* 0 = none */
    uint32_t max_context;     /* 0 = no clipping */
    double block_s;           /* bootstrap_block_s (0 = none) */
    uint64_t seed;
    GenAttrs attrs;
    gsl_rng *rs;              /* sampling stream */
    uint64_t kept;
} Xform;

static const char *const xform_keys[] = {"window_s", "limit", "sample", "time_scale", "rate_per_s", "max_context",
                                         "bootstrap_block_s"};
#define N_XFORM_KEYS (sizeof xform_keys / sizeof *xform_keys)

static void xform_free(Xform *x)
{
    gen_attr_free(&x->attrs);
    if (x->rs) gsl_rng_free(x->rs);
}

static int xform_parse(const cJSON *wj, const char *where, const char *base_dir, uint64_t seed, Workload *w, Xform *x,
                       Err *e)
{
    memset(x, 0, sizeof *x);
    x->sample = 1;
    char p[512];
    const cJSON *win = cJSON_GetObjectItemCaseSensitive(wj, "window_s");
    if (win) {
        jsonio_path(p, sizeof p, where, "window_s");
        if (!cJSON_IsArray(win) || cJSON_GetArraySize(win) != 2 || !cJSON_IsNumber(win->child) ||
            !cJSON_IsNumber(win->child->next))
            return err_set(e, "%s: expected [t0, t1] in seconds", p);
        double t0 = win->child->valuedouble, t1 = win->child->next->valuedouble;
        if (!(t0 >= 0) || !(t1 > t0) || t1 > 1e9)
            return err_set(e, "%s: got [%g, %g], expected 0 <= t0 < t1 <= 1e9 seconds", p, t0, t1);
        x->has_window = 1;
        x->t0_ns = llround(t0 * 1e9);
        x->t1_ns = llround(t1 * 1e9);
    }
    int64_t limit = 0, mc = 0;
    if (jsonio_int(wj, "limit", where, 0, 1, 100000000, &limit, e) < 0) return -1;
    x->limit = (uint64_t)limit;
    if (jsonio_num(wj, "sample", where, 0, 1e-9, 1, &x->sample, e) < 0) return -1;
    if (jsonio_num(wj, "time_scale", where, 0, 1e-9, 1e9, &x->time_scale, e) < 0) return -1;
    if (jsonio_num(wj, "rate_per_s", where, 0, 1e-9, 1e9, &x->rate_per_s, e) < 0) return -1;
    if (x->time_scale > 0 && x->rate_per_s > 0)
        return err_set(e, "%s: \"time_scale\" and \"rate_per_s\" exclude each other (both set the speed)", where);
    if (jsonio_int(wj, "max_context", where, 0, 2, WL_LEN_MAX, &mc, e) < 0) return -1;
    x->max_context = (uint32_t)mc;
    if (jsonio_num(wj, "bootstrap_block_s", where, 0, 1e-3, 1e9, &x->block_s, e) < 0) return -1;
    x->seed = seed;
    if (gen_attr_parse(wj, where, base_dir, seed, 0, w, &x->attrs, e) < 0) return -1;
    if (x->sample < 1) x->rs = rng_stream(seed, WL_STREAM_SAMPLE);
    return 0;
}

static int xform_drops(const Xform *x)
{
    return x->has_window || x->limit || x->sample < 1;
}

static XfAction xform_filter(Xform *x, TraceRecord *rec, int sorted, WlCounts *c)
{
    if (rec->has_arrival && x->has_window) {
        if (rec->t_ns >= x->t1_ns) {
            if (sorted) return XF_STOP;
            c->out_of_window++;
            return XF_DROP;
        }
        if (rec->t_ns < x->t0_ns) {
            c->out_of_window++;
            return XF_DROP;
        }
        rec->t_ns -= x->t0_ns;
    }
    if (x->rs && gsl_rng_uniform(x->rs) >= x->sample) {
        c->sampled_out++;
        return XF_DROP;
    }
    if (x->limit && x->kept >= x->limit) return XF_STOP;
    return XF_KEEP;
}

/* Appends one kept record. */
static int add_record(Workload *w, Xform *x, const TraceRecord *rec, const char *where, Err *e)
{
    if (w->n >= workload_max_requests())
        return err_set(e, "%s: more than %u requests; narrow it with \"limit\" or a window, or %s", where,
                       workload_max_requests(), WL_MAX_REQUESTS_HINT);
    uint32_t prompt = (uint32_t)rec->prompt_tokens, out = (uint32_t)rec->output_tokens;
    uint32_t maxo = (uint32_t)rec->max_output_tokens;
    if (!prompt) {
        prompt = 1;
        w->counts.zero_prompt++;
    }
    if (!out) {
        out = 1;
        w->counts.zero_output++;
    }
    if (x->max_context && (uint64_t)prompt + out > x->max_context) {
        if (out > x->max_context - 1) out = x->max_context - 1;
        if (prompt > x->max_context - out) prompt = x->max_context - out;
        if (maxo && maxo > x->max_context - prompt) maxo = x->max_context - prompt;
        w->counts.clipped++;
    }
    if (maxo && maxo < out) maxo = out;
    const GenMix *m = gen_attr_pick(&x->attrs);
    Request *r = workload_push(w);
    uint32_t idx = w->n - 1;
    r->t_arrive_ns = rec->has_arrival ? rec->t_ns : -1;
    r->prompt_tokens = prompt;
    r->output_tokens = out;
    r->max_output_tokens = maxo;
    r->correct = rec->correct;
    r->n_samples = (uint16_t)rec->n_samples;
    if (rec->id) r->id = workload_str(w, rec->id);
    else workload_set_id(w, idx, "%llu", (unsigned long long)rec->ordinal);
    gen_attr_apply(&x->attrs, m, w, idx);
    r = &w->reqs[idx];
    if (rec->tenant) r->tenant = workload_tenant(w, rec->tenant);
    if (rec->cls) r->cls = workload_class(w, rec->cls);
    if (rec->priority) r->priority = rec->priority;
    if (rec->adapter) r->adapter = rec->adapter;
    if (rec->deadline_ns >= 0) workload_set_deadline(w, idx, rec->deadline_ns);
    if (rec->cancel_after_ns > 0) r->cancel_after_ns = rec->cancel_after_ns;
    if (rec->token_ids) {
        uint32_t n = rec->n_token_ids < prompt ? rec->n_token_ids : prompt;
        uint32_t *ids = workload_alloc(w, n * sizeof *ids);
        memcpy(ids, rec->token_ids, n * sizeof *ids);
        r->token_ids = ids;
        r->n_token_ids = n;
    }
    if (rec->hash_ids) {
        uint32_t blocks = (prompt + rec->hash_block_tokens - 1) / rec->hash_block_tokens;
        uint32_t n = rec->n_hash_ids < blocks ? rec->n_hash_ids : blocks;
        uint64_t *ids = workload_alloc(w, n * sizeof *ids);
        memcpy(ids, rec->hash_ids, n * sizeof *ids);
        r->hash_ids = ids;
        r->n_hash_ids = n;
        r->hash_block_tokens = rec->hash_block_tokens;
    }
    if (rec->session && workload_set_session(w, idx, rec->session, rec->shared_prefix_tokens, where, e) < 0)
        return -1;
    if (rec->after) workload_after(w, idx, rec->after, rec->think_ns);
    x->kept++;
    return 0;
}

/* time_scale or rate_per_s over the untriggered arrivals. */
static int xform_speed(Workload *w, const Xform *x, const char *where, Err *e)
{
    double f = x->time_scale;
    if (x->rate_per_s > 0) {
        int64_t lo = INT64_MAX, hi = INT64_MIN;
        uint32_t n = 0;
        for (uint32_t i = 0; i < w->n; i++) {
            if (w->reqs[i].triggered) continue;
            n++;
            lo = MIN(lo, w->reqs[i].t_arrive_ns);
            hi = MAX(hi, w->reqs[i].t_arrive_ns);
        }
        if (n < 2 || hi <= lo)
            return err_set(e, "%s.rate_per_s: needs at least two requests at different times (got %u)", where, n);
        f = (double)(n - 1) / ((double)(hi - lo) / 1e9) / x->rate_per_s;
    }
    if (!(f > 0)) return 0;
    for (uint32_t i = 0; i < w->n; i++)
        if (!w->reqs[i].triggered) w->reqs[i].t_arrive_ns = llround((double)w->reqs[i].t_arrive_ns * f);
    return 0;
}

/* bootstrap_block_s: the workload rebuilt from blocks drawn with
 * replacement, in the trace's own time (before time_scale / rate_per_s,
 * so a rate asked for is the rate played). */
static int xform_bootstrap(Workload *w, const Xform *x, const char *where, Err *e)
{
    if (!(x->block_s > 0) || w->n == 0) return 0;
    if (w->session_of || w->n_sessions)
        return err_set(e, "%s.bootstrap_block_s: a trace with sessions cannot be resampled by blocks", where);
    for (uint32_t i = 0; i < w->n; i++)
        if (w->reqs[i].triggered || w->reqs[i].next_req != REQ_NONE || w->reqs[i].n_samples > 1)
            return err_set(e, "%s.bootstrap_block_s: request %s is linked (\"after\" or parallel samples); a block "
                              "bootstrap would cut the chain", where, w->reqs[i].id);
    int64_t lo = INT64_MAX, hi = INT64_MIN, B = llround(x->block_s * 1e9);
    for (uint32_t i = 0; i < w->n; i++) {
        lo = MIN(lo, w->reqs[i].t_arrive_ns);
        hi = MAX(hi, w->reqs[i].t_arrive_ns);
    }
    uint64_t nb = (uint64_t)((hi - lo) / B) + 1;
    if (nb > w->n) nb = w->n; /* more blocks than requests: B is below the gaps */
    if (nb < 2)
        return err_set(e, "%s.bootstrap_block_s: %g s leaves one block of a %.3f s trace; give a shorter block", where,
                       x->block_s, (double)(hi - lo) / 1e9);
    B = (hi - lo) / (int64_t)nb + 1;
    /* the requests by block (counting sort, arrival order kept) */
    uint32_t n = w->n, *start = xcalloc(nb + 1, sizeof *start), *pos = xmalloc((size_t)n * sizeof *pos);
    for (uint32_t i = 0; i < n; i++) start[(w->reqs[i].t_arrive_ns - lo) / B + 1]++;
    for (uint64_t b = 0; b < nb; b++) start[b + 1] += start[b];
    uint32_t *fill = xmalloc((nb + 1) * sizeof *fill);
    memcpy(fill, start, (nb + 1) * sizeof *fill);
    for (uint32_t i = 0; i < n; i++) pos[fill[(w->reqs[i].t_arrive_ns - lo) / B]++] = i;
    free(fill);
    Request *old = xmalloc((size_t)n * sizeof *old);
    memcpy(old, w->reqs, (size_t)n * sizeof *old);
    int64_t *old_dl = NULL;
    if (w->deadline_rel_ns) {
        old_dl = xmalloc((size_t)n * sizeof *old_dl);
        memcpy(old_dl, w->deadline_rel_ns, (size_t)n * sizeof *old_dl);
    }
    gsl_rng *r = rng_stream(x->seed, WL_STREAM_BOOTSTRAP);
    w->n = 0;
    int rc = 0;
    for (uint64_t j = 0; j < nb && rc == 0; j++) {
        uint64_t b = gsl_rng_uniform_int(r, (unsigned long)nb);
        for (uint32_t k = start[b]; k < start[b + 1]; k++) {
            if (w->n >= workload_max_requests()) {
                rc = err_set(e, "%s.bootstrap_block_s: more than %u requests; %s", where, workload_max_requests(),
                             WL_MAX_REQUESTS_HINT);
                break;
            }
            const Request *q = &old[pos[k]];
            Request *nr = workload_push(w);
            uint32_t idx = w->n - 1;
            *nr = *q;
            nr->t_arrive_ns = lo + (int64_t)j * B + (q->t_arrive_ns - lo - (int64_t)b * B);
            workload_set_id(w, idx, "%s@%llu", q->id, (unsigned long long)j);
            if (old_dl) workload_set_deadline(w, idx, old_dl[pos[k]]);
        }
    }
    gsl_rng_free(r);
    free(old);
    free(old_dl);
    free(start);
    free(pos);
    if (rc == 0 && w->n == 0)
        return err_set(e, "%s.bootstrap_block_s: every drawn block was empty; give a longer block", where);
    return rc;
}

static void describe(Workload *w, const Xform *x, const char *head)
{
    size_t n = sizeof w->source, off = (size_t)snprintf(w->source, n, "%s", head);
#define ADD(...) do { if (off < n) off += (size_t)snprintf(w->source + off, n - off, __VA_ARGS__); } while (0)
    if (x->has_window) ADD(", window [%g, %g) s", (double)x->t0_ns / 1e9, (double)x->t1_ns / 1e9);
    if (x->sample < 1) ADD(", sample %g", x->sample);
    if (x->limit) ADD(", limit %llu", (unsigned long long)x->limit);
    if (x->max_context) ADD(", max_context %u", x->max_context);
    if (x->time_scale > 0) ADD(", time_scale %g", x->time_scale);
    if (x->rate_per_s > 0) ADD(", rate %g req/s", x->rate_per_s);
    if (x->block_s > 0) ADD(", block bootstrap of %g s blocks", x->block_s);
#undef ADD
}

/* The transforms' keys plus the source's own. */
static int check_keys(const cJSON *wj, const char *where, const char *const *own, Err *e)
{
    const char *keys[24];
    size_t n = 0;
    for (; own[n]; n++) keys[n] = own[n];
    for (size_t k = 0; k < N_XFORM_KEYS; k++) keys[n++] = xform_keys[k];
    keys[n] = NULL;
    return gen_attr_check_keys(wj, where, keys, e);
}

static int links_vs_drops(const Xform *x, const TraceRecord *rec, const char *where, Err *e)
{
    if (rec->after && xform_drops(x))
        return err_set(e, "%s: \"after\" links cannot be combined with window_s, sample or limit, which could drop "
                          "a predecessor and break its chain", where);
    return 0;
}

static int trace_load_list(const cJSON *wj, const char *where, const char *base_dir, uint64_t seed, Workload *w,
                           Err *e)
{
    static const char *const own[] = {"requests", NULL};
    if (check_keys(wj, where, own, e) < 0) return -1;
    char path[512], rp[600];
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(wj, "requests");
    jsonio_path(path, sizeof path, where, "requests");
    if (jsonio_expect_array(arr, path, e) < 0) return -1;
    if (cJSON_GetArraySize(arr) < 1) return err_set(e, "%s: empty; expected at least one request", path);
    Xform x;
    if (xform_parse(wj, where, base_dir, seed, w, &x, e) < 0) {
        xform_free(&x);
        return -1;
    }
    TraceIdBuf buf = {0};
    TraceRecord rec;
    int rc = 0, i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, arr) {
        jsonio_index(rp, sizeof rp, path, i);
        trace_record_defaults(&rec, 0);
        rec.ordinal = (uint64_t)i++;
        if (trace_json_record(it, rp, &buf, &rec, e) < 0 || links_vs_drops(&x, &rec, rp, e) < 0) {
            rc = -1;
            break;
        }
        XfAction act = xform_filter(&x, &rec, 0, &w->counts);
        if (act == XF_STOP) break;
        if (act == XF_DROP) continue;
        if ((rc = add_record(w, &x, &rec, rp, e)) < 0) break;
    }
    if (rc == 0) rc = xform_bootstrap(w, &x, where, e);
    if (rc == 0) rc = xform_speed(w, &x, where, e);
    describe(w, &x, "request list");
    trace_record_idbuf_free(&buf);
    xform_free(&x);
    return rc;
}

static int trace_load_file(const cJSON *wj, const char *where, const char *base_dir, uint64_t seed, Workload *w,
                           Err *e)
{
    static const char *const own[] = {"trace", "format", "on_error", NULL};
    static const char *const on_error[] = {"stop", "skip", NULL};
    if (check_keys(wj, where, own, e) < 0) return -1;
    const char *path = NULL, *fmt_name = NULL;
    int skip = 0;
    if (jsonio_str(wj, "trace", where, 1, &path, e) < 0) return -1;
    if (jsonio_str(wj, "format", where, 0, &fmt_name, e) < 0) return -1;
    if (jsonio_enum(wj, "on_error", where, 0, on_error, &skip, e) < 0) return -1;
    char p[512], file[1024];
    jsonio_path(p, sizeof p, where, "trace");
    if (workload_resolve(base_dir, path, p, file, sizeof file, e) < 0) return -1;
    int fmt;
    if (fmt_name) {
        if ((fmt = trace_reader_format_parse(fmt_name)) < 0)
            return err_set(e, "%s.format: got \"%s\", expected azure, mooncake, csv or json", where, fmt_name);
    } else if ((fmt = trace_reader_format_guess(file, e)) < 0) {
        return err_prefix(e, "%s", p);
    }
    Xform x;
    if (xform_parse(wj, where, base_dir, seed, w, &x, e) < 0) {
        xform_free(&x);
        return -1;
    }
    TraceReader *tr = trace_reader_open(file, (TraceFormat)fmt, skip, e);
    if (!tr) {
        xform_free(&x);
        return -1;
    }
    int sorted = trace_reader_sorted(tr), rc;
    TraceRecord rec;
    char rw[1100];
    while ((rc = trace_reader_next(tr, &rec, e)) > 0) {
        w->counts.records++;
        if (rec.line) snprintf(rw, sizeof rw, "%s:%llu", file, (unsigned long long)rec.line);
        else snprintf(rw, sizeof rw, "%s: record %llu", file, (unsigned long long)rec.ordinal);
        if ((rc = links_vs_drops(&x, &rec, rw, e)) < 0) break;
        XfAction act = xform_filter(&x, &rec, sorted, &w->counts);
        if (act == XF_STOP) break;
        if (act == XF_DROP) continue;
        if ((rc = add_record(w, &x, &rec, rw, e)) < 0) break;
    }
    w->counts.skipped = trace_reader_skipped(tr);
    snprintf(w->counts.first_skip, sizeof w->counts.first_skip, "%s", trace_reader_first_skip(tr));
    trace_reader_close(tr);
    if (rc == 0) rc = xform_bootstrap(w, &x, where, e);
    if (rc == 0) rc = xform_speed(w, &x, where, e);
    char head[1200];
    snprintf(head, sizeof head, "trace %s %s", trace_reader_format_name((TraceFormat)fmt), file);
    describe(w, &x, head);
    xform_free(&x);
    return rc;
}

/* ------------------------------------------------------------ streaming */

/* A trace file read a record at a time for a streamed run (issue 16):
 * the same filter and per-request transforms as trace_load_file, written
 * into the engine's record instead of appended.  Only what is per record
 * streams: a sorted format (azure, mooncake, csv; a CSV's sessions too), no
 * links or parallel sampling; rate_per_s and a CSV's tenant and class names
 * by a first pass (trace_stream_first_pass). */
struct TraceStream {
    Xform x;
    TraceReader *tr;
    Workload *names;
    char file[1024];
    char num[24];      /* a record's ordinal, as its id when it has none */
    uint64_t n;
    double speed;      /* the arrival factor: time_scale, or rate_per_s's from the first pass */
};

int trace_stream_may_cancel(const TraceStream *ts) { return ts->x.attrs.rc != NULL; }

/* A first pass over the file with a second reader and filter of its own
 * (the same sample draws), memory one record: rate_per_s (xform_speed's
 * factor over the kept arrivals: their count, first and last arrival), and,
 * with names, the kept records' tenant and class names registered in
 * names in record order, as the materialised load registers them (the
 * metrics' class table is made before the run). */
static int trace_stream_first_pass(TraceStream *ts, const cJSON *wj, const char *where, const char *base_dir,
                                   uint64_t seed, TraceFormat fmt, int skip, Workload *names, Err *e)
{
    Workload scratch;
    workload_init(&scratch, "trace");
    Xform px;
    TraceReader *pr = NULL;
    int rc = xform_parse(wj, where, base_dir, seed, &scratch, &px, e);
    if (rc == 0 && !(pr = trace_reader_open(ts->file, fmt, skip, e))) rc = -1;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    uint64_t n = 0;
    TraceRecord rec;
    WlCounts c = {0};
    int got;
    while (rc == 0 && (got = trace_reader_next(pr, &rec, e)) != 0) {
        if (got < 0 || !rec.has_arrival || rec.n_samples > 1) {
            rc = got < 0 ? -1 : 0; /* a record the stream refuses: it says so when it reaches it */
            break;
        }
        XfAction act = xform_filter(&px, &rec, 1, &c);
        if (act == XF_STOP) break;
        if (act == XF_DROP) continue;
        px.kept++; /* as the loads count it (the limit) */
        n++;
        lo = MIN(lo, rec.t_ns);
        hi = MAX(hi, rec.t_ns);
        if (names && rec.tenant) workload_tenant(names, rec.tenant);
        if (names && rec.cls) workload_class(names, rec.cls);
    }
    if (pr) trace_reader_close(pr);
    xform_free(&px);
    workload_free(&scratch);
    if (rc < 0) return -1;
    if (!(ts->x.rate_per_s > 0)) return 0;
    if (n < 2 || hi <= lo)
        return err_set(e, "%s.rate_per_s: needs at least two requests at different times (got %llu)", where,
                       (unsigned long long)n);
    ts->speed = (double)(n - 1) / ((double)(hi - lo) / 1e9) / ts->x.rate_per_s;
    return 0;
}

void trace_stream_free(TraceStream *ts)
{
    if (!ts) return;
    if (ts->tr) trace_reader_close(ts->tr);
    xform_free(&ts->x);
    free(ts);
}

TraceStream *trace_stream_open(const cJSON *wj, const char *where, const char *base_dir, uint64_t seed,
                               Workload *names, int *whole, Err *e)
{
    *whole = 0;
    static const char *const own[] = {"trace", "format", "on_error", NULL};
    static const char *const on_error[] = {"stop", "skip", NULL};
    if (check_keys(wj, where, own, e) < 0) return NULL;
    const char *path = NULL, *fmt_name = NULL;
    int skip = 0, fmt;
    if (jsonio_str(wj, "trace", where, 1, &path, e) < 0) return NULL;
    if (jsonio_str(wj, "format", where, 0, &fmt_name, e) < 0) return NULL;
    if (jsonio_enum(wj, "on_error", where, 0, on_error, &skip, e) < 0) return NULL;
    TraceStream *ts = xcalloc(1, sizeof *ts);
    ts->names = names;
    char p[512];
    jsonio_path(p, sizeof p, where, "trace");
    if (workload_resolve(base_dir, path, p, ts->file, sizeof ts->file, e) < 0) goto fail;
    if (fmt_name) {
        if ((fmt = trace_reader_format_parse(fmt_name)) < 0) {
            err_set(e, "%s.format: got \"%s\", expected azure, mooncake, csv or json", where, fmt_name);
            goto fail;
        }
    } else if ((fmt = trace_reader_format_guess(ts->file, e)) < 0) {
        err_prefix(e, "%s", p);
        goto fail;
    }
    if (xform_parse(wj, where, base_dir, seed, names, &ts->x, e) < 0) goto fail;
    if (ts->x.block_s > 0) {
        *whole = 1; /* a block bootstrap rebuilds the whole trace */
        goto fail;
    }
    ts->speed = ts->x.time_scale;
    /* a CSV may name tenants and classes (azure and mooncake records do not) */
    if ((ts->x.rate_per_s > 0 || fmt == TRACE_CSV) &&
        trace_stream_first_pass(ts, wj, where, base_dir, seed, (TraceFormat)fmt, skip,
                                fmt == TRACE_CSV ? names : NULL, e) < 0)
        goto fail;
    if (!(ts->tr = trace_reader_open(ts->file, (TraceFormat)fmt, skip, e))) goto fail;
    if (!trace_reader_sorted(ts->tr)) {
        *whole = 1; /* only its whole reading orders it (azure, mooncake and csv are sorted) */
        goto fail;
    }
    return ts;
fail:
    trace_stream_free(ts);
    return NULL;
}

/* snprintf(buf, n, "%llu", v) for a buffer that holds any 64-bit number
 * (n >= 21): per record, where snprintf's parsing of its format was the
 * most of the time an id took. */
static void trace_load_decimal(char *buf, size_t n, uint64_t v)
{
    char tmp[24];
    size_t k = 0;
    do {
        tmp[k++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    size_t m = k + 1 > n ? n - 1 : k; /* snprintf's truncation (the callers' buffers hold 20 digits) */
    for (size_t i = 0; i < m; i++) buf[i] = tmp[k - 1 - i];
    buf[m] = '\0';
}

int trace_stream_next(TraceStream *ts, Request *r, Err *e)
{
    Xform *x = &ts->x;
    TraceRecord rec;
    char rw[1100];
    int rc;
    WlCounts c = {0};
    while ((rc = trace_reader_next(ts->tr, &rec, e)) > 0) {
        /* NEVER: a sorted format has neither (the line's name only then:
         * no per-line formatting that only errors use) */
        if (NEVER(!rec.has_arrival || rec.n_samples > 1)) {
            if (rec.line) snprintf(rw, sizeof rw, "%s:%llu", ts->file, (unsigned long long)rec.line);
            else snprintf(rw, sizeof rw, "%s: record %llu", ts->file, (unsigned long long)rec.ordinal);
            return err_set(e, "internal: %s: \"after\" links and parallel sampling in a sorted trace", rw);
        }
        XfAction act = xform_filter(x, &rec, 1, &c);
        if (act == XF_STOP) return 0;
        if (act == XF_DROP) continue;
        break;
    }
    if (rc <= 0) return rc;
    /* add_record's per-request transforms, into r */
    uint32_t prompt = (uint32_t)rec.prompt_tokens, out = (uint32_t)rec.output_tokens;
    uint32_t maxo = (uint32_t)rec.max_output_tokens;
    if (!prompt) prompt = 1;
    if (!out) out = 1;
    if (x->max_context && (uint64_t)prompt + out > x->max_context) {
        if (out > x->max_context - 1) out = x->max_context - 1;
        if (prompt > x->max_context - out) prompt = x->max_context - out;
        if (maxo && maxo > x->max_context - prompt) maxo = x->max_context - prompt;
    }
    if (maxo && maxo < out) maxo = out;
    const GenMix *m = gen_attr_pick(&x->attrs);
    request_init(r);
    r->t_arrive_ns = ts->speed > 0 ? llround((double)rec.t_ns * ts->speed) : rec.t_ns;
    r->prompt_tokens = prompt;
    r->output_tokens = out;
    r->max_output_tokens = maxo;
    r->correct = rec.correct;
    /* the reader's id lasts until its next record, as r->id must (the
     * engine copies it into the request's slot) */
    if (!rec.id) trace_load_decimal(ts->num, sizeof ts->num, rec.ordinal);
    r->id = rec.id ? rec.id : ts->num;
    r->tenant = m ? m->tenant : x->attrs.tenant;
    r->cls = m ? m->cls : x->attrs.cls;
    r->priority = m ? m->priority : x->attrs.priority;
    int64_t d = m ? m->deadline_ns : x->attrs.deadline_ns;
    if (rec.tenant) r->tenant = workload_tenant(ts->names, rec.tenant);
    if (rec.cls) r->cls = workload_class(ts->names, rec.cls);
    if (rec.priority) r->priority = rec.priority;
    if (rec.deadline_ns >= 0) d = rec.deadline_ns;
    if (d >= 0) r->deadline_ns = r->t_arrive_ns + d;
    r->adapter = rec.adapter ? rec.adapter : x->attrs.adapter;
    /* as the materialised load: the "cancel" draw, then the record's own */
    r->cancel_after_ns = gen_attr_cancel(&x->attrs);
    if (rec.cancel_after_ns > 0) r->cancel_after_ns = rec.cancel_after_ns;
    /* content for a prefix cache: the reader's, valid until the next
     * record (the engine copies it into the request's slot) */
    if (rec.token_ids) {
        r->token_ids = rec.token_ids;
        r->n_token_ids = rec.n_token_ids < prompt ? rec.n_token_ids : prompt;
    }
    if (rec.hash_ids) {
        uint32_t blocks = (prompt + rec.hash_block_tokens - 1) / rec.hash_block_tokens;
        r->hash_ids = rec.hash_ids;
        r->n_hash_ids = rec.n_hash_ids < blocks ? rec.n_hash_ids : blocks;
        r->hash_block_tokens = rec.hash_block_tokens;
    }
    /* a session's turns share synthetic ids keyed by its name, as the
     * materialised load gives them (wl_build.c finish_sessions); a sorted
     * format carries no shared_prefix_tokens to check across records */
    if (rec.session && !r->token_ids) {
        r->synth_key = workload_synth_key(rec.session);
        r->synth_shared = rec.shared_prefix_tokens;
        r->n_token_ids = prompt;
    }
    x->kept++;
    ts->n++;
    return 1;
}

const WlSource wl_source_list = {.key = "requests", .key_hint = "[...]", .build = trace_load_list};
const WlSource wl_source_trace = {.key = "trace", .key_hint = "PATH", .build = trace_load_file};
