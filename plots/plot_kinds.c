/*
 * plot_kinds.c -- the readers behind each plot kind: they check their
 * inputs (naming the file, the key and the bad value) and write the data
 * files and params that plots/<kind>.gp reads.
 *
 * Units in the data files: times of day in seconds (kv, batch) or
 * milliseconds (timeline), latencies in ms except E2E in s, rates in
 * requests per second, costs in USD.  Each file opens with a comment
 * naming its columns and where its numbers come from.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "calib_fit.h"
#include "calib_meas.h"
#include "extsort.h"
#include "jsonio.h"
#include "plot.h"
#include "plot_kind.h"
#include "profile.h"

#define PLOT_NAME_MAX 256

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static const cJSON *get(const cJSON *o, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(o, key);
}

/* root.requests as an array, or an error saying what the file should be. */
static const cJSON *plot_requests(const cJSON *root, const char *path, const char *expected, Err *e)
{
    const cJSON *r = cJSON_IsObject(root) ? get(root, "requests") : NULL;
    if (!cJSON_IsArray(r)) {
        err_set(e, "%s: requests: %s; expected %s", path, r ? "not an array" : "missing", expected);
        return NULL;
    }
    return r;
}

/* ------------------------------------------------------------------ cdf */

static const char *const cdf_keys[3] = {"ttft_s", "tpot_s", "e2e_s"};
static const char *const cdf_names[3] = {"ttft", "tpot", "e2e"};
static const double cdf_scale[3] = {1e3, 1e3, 1}; /* to ms, ms, s */
static const char *const cdf_units[3] = {"ms", "ms", "s"};

/* One value of a CDF, sorted on disk by its key: the value's bits made
 * to order as signed integers (extsort.h). */
typedef struct CdfRec {
    int64_t key;
    double v;
} CdfRec;

static int64_t cdf_key(double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    u = (u >> 63) ? ~u : u | (1ull << 63);
    return (int64_t)(u ^ (1ull << 63));
}

/* A report's requests as they are read (jsonio_stream_array): each
 * metric's values to its sort, the first bad one of each kept for the
 * message (the metrics are checked in order, as three passes would). */
typedef struct CdfRead {
    ExtSort *v[3];
    uint64_t bad_at[3];
    Err sort_err;
    int sort_failed;
} CdfRead;

static int cdf_each(void *ctx, const cJSON *r, uint64_t j, Err *e)
{
    (void)e;
    CdfRead *c = ctx;
    for (int m = 0; m < 3; m++) {
        const cJSON *x = get(r, cdf_keys[m]);
        if (x && !cJSON_IsNumber(x) && !cJSON_IsNull(x)) {
            if (c->bad_at[m] == UINT64_MAX) c->bad_at[m] = j;
            continue;
        }
        if (!cJSON_IsNumber(x) || c->sort_failed) continue;
        CdfRec rec = {0, x->valuedouble * cdf_scale[m]};
        rec.key = cdf_key(rec.v);
        if (extsort_add(c->v[m], &rec, &c->sort_err) < 0) c->sort_failed = 1;
    }
    return 0;
}

/* Each report's requests are read a piece at a time and each metric's
 * values sorted on disk (a run's report lists every request: issue 36),
 * so the CDFs of any run are drawn in bounded memory. */
static int kind_cdf(PlotCtx *c, Err *e)
{
    int have_slo = 0;
    fprintf(c->params, "n_inputs = %d\n", c->job->n_inputs);
    for (int i = 0; i < c->job->n_inputs; i++) {
        const char *path = c->job->inputs[i];
        CdfRead rd = {.bad_at = {UINT64_MAX, UINT64_MAX, UINT64_MAX}};
        for (int m = 0; m < 3; m++) rd.v[m] = extsort_new(sizeof(CdfRec), 4u << 20);
        cJSON *root = jsonio_stream_array(path, "requests", cdf_each, &rd, e);
        int rc = root ? 0 : -1;
        const cJSON *reqs = NULL;
        if (rc == 0) {
            /* the requests were read from the file: whether they were an array */
            reqs = plot_requests(root, path, "a run report (servesim run --json)", e);
            if (!reqs) rc = -1;
            else if (!cJSON_IsObject(get(root, "summary")))
                rc = err_set(e, "%s: summary: missing; expected a run report (servesim run --json)", path);
        }
        if (rc == 0 && rd.sort_failed) {
            *e = rd.sort_err;
            rc = -1;
        }
        for (int m = 0; rc == 0 && m < 3; m++) {
            if (rd.bad_at[m] != UINT64_MAX) {
                rc = err_set(e, "%s: requests[%d].%s: expected a number or null", path, (int)rd.bad_at[m],
                             cdf_keys[m]);
                break;
            }
            int k = (int)extsort_count(rd.v[m]);
            if (m == 0 && k == 0) {
                rc = err_set(e, "%s: requests[].ttft_s: no request has one (no finished requests to plot)", path);
                break;
            }
            char name[64];
            snprintf(name, sizeof name, "cdf_%s_%d.dat", cdf_names[m], i + 1);
            PlotBuf b = {0};
            if (plotbuf_open_file(c, &b, name, e) < 0 || extsort_rewind(rd.v[m], e) < 0) {
                if (b.f) plotbuf_discard(&b);
                rc = -1;
                break;
            }
            fprintf(b.f, "# %s (%s) and the fraction of requests at or below it: empirical CDF of %s\n"
                         "# requests[].%s, %d requests with a value (the first row starts the step at 0)\n",
                    cdf_names[m], cdf_units[m], path, cdf_keys[m], k);
            CdfRec rec;
            double last = 0;
            int got;
            for (int q = 0; (got = extsort_next(rd.v[m], &rec, e)) > 0; q++) {
                if (q == 0) fprintf(b.f, "%.6f 0\n", rec.v);
                fprintf(b.f, "%.6f %.6f\n", rec.v, (double)(q + 1) / k);
                last = rec.v;
            }
            if (!k) fputs("NaN NaN\n", b.f);
            if (got < 0 || plotbuf_commit(c, &b, name, e) < 0) {
                if (got < 0) plotbuf_discard(&b);
                rc = -1;
                break;
            }
            char pn[64];
            snprintf(pn, sizeof pn, "count_%s_%d", cdf_names[m], i + 1);
            fprintf(c->params, "%s = %d\n", pn, k);
            snprintf(pn, sizeof pn, "max_%s_%d", cdf_names[m], i + 1);
            plot_param_num(c->params, pn, k ? last : 0); /* the panel's x range reaches it */
        }
        for (int m = 0; m < 3; m++) extsort_free(rd.v[m]);
        if (rc < 0) {
            cJSON_Delete(root);
            return -1;
        }
        char pn[32];
        snprintf(pn, sizeof pn, "label_%d", i + 1);
        plot_param_str(c->params, pn, plot_label(path));
        /* the SLO targets of the first report that has them */
        const cJSON *slo = get(get(get(root, "summary"), "goodput"), "slo");
        if (!have_slo && cJSON_IsObject(slo)) {
            for (int m = 0; m < 3; m++) {
                const cJSON *t = get(slo, cdf_keys[m]);
                if (cJSON_IsNumber(t)) {
                    snprintf(pn, sizeof pn, "slo_%s", cdf_names[m]);
                    plot_param_num(c->params, pn, t->valuedouble * cdf_scale[m]);
                    have_slo = 1;
                }
            }
        }
        cJSON_Delete(root);
    }
    return 0;
}

/* The tail view: the same data, 1 - CDF on a log scale (cdf.gp's tail). */
static int kind_ccdf(PlotCtx *c, Err *e)
{
    if (kind_cdf(c, e) < 0) return -1;
    fputs("tail = 1\n", c->params);
    return 0;
}

/* ------------------------------------------------------------- timeline */

enum { SPAN_QUEUE = 0, SPAN_PREFILL = 1, SPAN_DECODE = 2, SPAN_TO_FIRST = 3 };

typedef struct Lanes {
    PlotBuf data;
    char *names[PLOT_MAX_LANES];
    int n;
    double t_max_ms;
    int kinds_seen[4];
} Lanes;

static void lane_span(Lanes *l, int lane, double t0_ms, double t1_ms, int kind)
{
    if (!(t1_ms > t0_ms)) return;
    fprintf(l->data.f, "%d %.6f %.6f %d\n", lane, t0_ms, t1_ms, kind);
    if (t1_ms > l->t_max_ms) l->t_max_ms = t1_ms;
    l->kinds_seen[kind] = 1;
}

/* A run report (times in s, queue_s known) or a replay schedule (times in
 * ms, no queueing information): spans from the token times. */
static int timeline_requests(Lanes *l, const cJSON *reqs, const char *path, int run_report, int *dropped, Err *e)
{
    const char *tk = run_report ? "token_times_s" : "token_times_ms";
    const char *ak = run_report ? "arrival_s" : "arrival_ms";
    double to_ms = run_report ? 1e3 : 1;
    int j = 0;
    const cJSON *r;
    cJSON_ArrayForEach(r, reqs) {
        char where[PLOT_NAME_MAX];
        snprintf(where, sizeof where, "%s: requests[%d]", path, j);
        if (j >= PLOT_MAX_LANES) {
            (*dropped)++;
            j++;
            continue;
        }
        const cJSON *id = get(r, "id"), *arr = get(r, ak), *tt = get(r, tk), *st = get(r, "status");
        if (!cJSON_IsNumber(arr)) return err_set(e, "%s.%s: %s; expected a number", where, ak, arr ? "not a number" : "missing");
        int rejected = cJSON_IsString(st) && !strcmp(st->valuestring, "rejected");
        if (!rejected && !cJSON_IsArray(tt))
            return err_set(e, "%s.%s: %s; expected the request's token times%s", where, tk,
                           tt ? "not an array" : "missing",
                           run_report ? " (keep report.token_times, the default)" : "");
        char idbuf[32];
        snprintf(idbuf, sizeof idbuf, "%d", j);
        l->names[l->n++] = xstrdup(cJSON_IsString(id) ? id->valuestring : idbuf);
        double a = arr->valuedouble * to_ms, prev = a;
        const cJSON *q = get(r, "queue_s");
        int k = 0;
        const cJSON *t;
        if (run_report && cJSON_IsNumber(q)) {
            lane_span(l, j, a, a + q->valuedouble * 1e3, SPAN_QUEUE);
            prev = a + q->valuedouble * 1e3;
        }
        if (!rejected)
            cJSON_ArrayForEach(t, tt) {
                if (!cJSON_IsNumber(t))
                    return err_set(e, "%s.%s[%d]: expected a number", where, tk, k);
                double x = t->valuedouble * to_ms;
                if (x < prev - 1e-9)
                    return err_set(e, "%s.%s[%d]: got %g ms, expected a time not before %g ms", where, tk, k, x, prev);
                lane_span(l, j, prev, x, k ? SPAN_DECODE : run_report && cJSON_IsNumber(q) ? SPAN_PREFILL
                                                                                               : SPAN_TO_FIRST);
                prev = x;
                k++;
            }
        j++;
    }
    return 0;
}

/* A trace-event file (run --trace-events): process 2 holds one lane per
 * request with its queued, prefill (one per chunk) and decode events. */
static int timeline_trace(Lanes *l, const cJSON *ev, const char *path, int *dropped, Err *e)
{
    const cJSON *x;
    int max_tid = 0;
    cJSON_ArrayForEach(x, ev) {
        const cJSON *ph = get(x, "ph"), *pid = get(x, "pid"), *tid = get(x, "tid"), *name = get(x, "name");
        if (!cJSON_IsString(ph) || !cJSON_IsNumber(pid) || !cJSON_IsNumber(tid) || !cJSON_IsString(name))
            return err_set(e, "%s: traceEvents[]: an event without ph, pid, tid or name; expected a servesim "
                              "trace (run --trace-events)", path);
        if (pid->valueint != 2) continue;
        int lane = tid->valueint - 1;
        if (lane < 0) continue;
        if (lane >= PLOT_MAX_LANES) {
            if (!strcmp(ph->valuestring, "M")) (*dropped)++;
            continue;
        }
        if (lane + 1 > max_tid) max_tid = lane + 1;
        if (!strcmp(ph->valuestring, "M") && !strcmp(name->valuestring, "thread_name")) {
            const cJSON *nm = get(get(x, "args"), "name");
            if (cJSON_IsString(nm) && !l->names[lane]) l->names[lane] = xstrdup(nm->valuestring);
            continue;
        }
        if (strcmp(ph->valuestring, "X")) continue;
        const cJSON *ts = get(x, "ts"), *dur = get(x, "dur");
        if (!cJSON_IsNumber(ts) || !cJSON_IsNumber(dur))
            return err_set(e, "%s: traceEvents[]: a complete event without numeric ts and dur", path);
        const char *nm = name->valuestring;
        int kind = !strcmp(nm, "queued")           ? SPAN_QUEUE
                   : !strcmp(nm, "prefill")        ? SPAN_PREFILL
                   : !strcmp(nm, "to first token") ? SPAN_TO_FIRST /* a replay's trace */
                                                   : SPAN_DECODE;
        lane_span(l, lane, ts->valuedouble / 1e3, (ts->valuedouble + dur->valuedouble) / 1e3, kind);
    }
    for (int k = 0; k < max_tid; k++)
        if (!l->names[k]) {
            char b[16];
            snprintf(b, sizeof b, "%d", k);
            l->names[k] = xstrdup(b);
        }
    l->n = max_tid;
    return 0;
}

static int kind_timeline(PlotCtx *c, Err *e)
{
    fprintf(c->params, "n_panels = %d\n", c->job->n_inputs);
    int kinds_all[4] = {0};
    for (int i = 0; i < c->job->n_inputs; i++) {
        const char *path = c->job->inputs[i];
        cJSON *root = jsonio_parse_file(path, e);
        if (!root) return -1;
        Lanes l = {0};
        plotbuf_open(&l.data);
        fprintf(l.data.f, "# lane start_ms end_ms kind (0 queued, 1 prefill, 2 decode step, 3 arrival to first "
                          "token) -- from %s\n", path);
        int dropped = 0, rc;
        const cJSON *ev = cJSON_IsObject(root) ? get(root, "traceEvents") : NULL;
        const cJSON *reqs = cJSON_IsObject(root) ? get(root, "requests") : NULL;
        const cJSON *r0 = cJSON_IsArray(reqs) ? cJSON_GetArrayItem(reqs, 0) : NULL;
        if (cJSON_IsArray(ev)) {
            rc = timeline_trace(&l, ev, path, &dropped, e);
        } else if (cJSON_IsArray(reqs) && (!r0 || get(r0, "arrival_s"))) {
            rc = timeline_requests(&l, reqs, path, 1, &dropped, e);
        } else if (cJSON_IsArray(reqs) && get(r0, "arrival_ms")) {
            rc = timeline_requests(&l, reqs, path, 0, &dropped, e);
        } else {
            rc = err_set(e, "%s: expected a run report (requests[] with arrival_s and token_times_s), a replay "
                            "schedule (requests[] with arrival_ms and token_times_ms) or a trace (traceEvents)",
                         path);
        }
        cJSON_Delete(root);
        if (rc == 0 && l.n == 0) rc = err_set(e, "%s: no requests to draw", path);
        if (rc == 0 && dropped)
            fprintf(stderr, "servesim plot timeline: %s: drew the first %d requests of %d (a timeline is for small "
                            "runs; narrow a trace with --trace-requests)\n", path, PLOT_MAX_LANES,
                    PLOT_MAX_LANES + dropped);
        if (rc == 0) {
            char name[64];
            snprintf(name, sizeof name, "timeline_%d.dat", i + 1);
            rc = plotbuf_commit(c, &l.data, name, e);
        } else {
            plotbuf_discard(&l.data);
        }
        if (rc == 0) {
            fprintf(c->params, "lanes_%d = %d\n", i + 1, l.n);
            fprintf(c->params, "t_max_%d = %.6f\n", i + 1, l.t_max_ms);
            /* one string per lane, quoted as every string (plot_param_str);
             * timeline.gp adds them as tic labels one by one */
            for (int k = 0; k < l.n; k++) {
                char tn[48];
                snprintf(tn, sizeof tn, "ytic_%d_%d", i + 1, k);
                plot_param_str(c->params, tn, l.names[k]);
            }
            char pn[32];
            snprintf(pn, sizeof pn, "label_%d", i + 1);
            plot_param_str(c->params, pn, plot_label(path));
            for (int k = 0; k < 4; k++) kinds_all[k] |= l.kinds_seen[k];
        }
        for (int k = 0; k < l.n; k++) free(l.names[k]);
        if (rc < 0) return -1;
    }
    for (int k = 0; k < 4; k++) fprintf(c->params, "has_kind_%d = %d\n", k, kinds_all[k]);
    return 0;
}

/* ------------------------------------------------------ iterations CSV */

/* Column indexes of an iterations CSV (run --iterations-csv). */
enum { IC_START, IC_DUR, IC_PREFILL, IC_DECODE, IC_KV, IC_RUN, IC_WAIT, IC_COUNT };
static const char *const ic_names[IC_COUNT] = {"start_s", "duration_s", "prefill_tokens", "decode_tokens",
                                               "kv_used_blocks", "running", "waiting"};

/* An iterations CSV read a line at a time (a run's has a row per
 * iteration: issue 36), as read_file and strtok would split it: the
 * checks and the file-size cap of read_file, empty lines skipped (and not
 * counted), a NUL byte ending the text. */
typedef struct IterCsv {
    const char *path;
    FILE *f;
    char *line;
    size_t cap;
    int col[IC_COUNT], ncol, lineno, done;
    size_t bytes;
} IterCsv;

/* strsep without _DEFAULT_SOURCE: the next comma-separated field of *p. */
static char *csv_field(char **p)
{
    char *s = *p;
    if (!s) return NULL;
    char *comma = strchr(s, ',');
    if (comma) {
        *comma = '\0';
        *p = comma + 1;
    } else {
        *p = NULL;
    }
    return s;
}

/* The next non-empty line (its newline cut), or NULL at the end (or on an
 * error: *e set, *bad 1). */
static char *ic_line(IterCsv *r, int *bad, Err *e)
{
    ssize_t len;
    while (!r->done && (len = getline(&r->line, &r->cap, r->f)) > 0) {
        r->bytes += (size_t)len;
        if (r->bytes > common_max_file_bytes()) {
            err_set(e, "%s: larger than %zu bytes (the file-size cap; %s)", r->path, common_max_file_bytes(),
                    COMMON_FILE_CAP_HINT);
            *bad = 1;
            return NULL;
        }
        /* the text ends at a NUL (read_file's string did) */
        if (strlen(r->line) < (size_t)len) {
            r->done = 1;
            len = (ssize_t)strlen(r->line);
        }
        if (len > 0 && r->line[len - 1] == '\n') r->line[--len] = '\0';
        if (len > 0) return r->line;
    }
    if (ferror(r->f)) {
        err_set(e, "%s: read error", r->path);
        *bad = 1;
    }
    return NULL;
}

/* Opens path and reads its header (the column of each field). */
static int ic_open(IterCsv *r, const char *path, Err *e)
{
    memset(r, 0, sizeof *r);
    r->path = path;
    if (common_read_check(path, e) < 0) return -1;
    if (!(r->f = fopen(path, "rb"))) return err_set(e, "%s: cannot open: %s", path, strerror(errno));
    common_note_input(r->f, path);
    for (int k = 0; k < IC_COUNT; k++) r->col[k] = -1;
    int bad = 0;
    char *line = ic_line(r, &bad, e);
    if (bad) return -1;
    if (!line) return err_set(e, "%s: empty; expected an iterations CSV (servesim run --iterations-csv)", path);
    r->lineno = 1;
    for (char *p = line, *tok; (tok = csv_field(&p));) {
        tok[strcspn(tok, "\r")] = '\0';
        for (int k = 0; k < IC_COUNT; k++)
            if (!strcmp(tok, ic_names[k])) r->col[k] = r->ncol;
        r->ncol++;
    }
    for (int k = 0; k < IC_COUNT; k++)
        if (r->col[k] < 0)
            return err_set(e, "%s: line 1: no column \"%s\"; expected an iterations CSV header (servesim run "
                              "--iterations-csv: iteration,start_s,duration_s,...)", path, ic_names[k]);
    return 0;
}

/* The next row into row[IC_COUNT]: 1, 0 at the end, -1 + e. */
static int ic_next(IterCsv *r, double *row, Err *e)
{
    int bad = 0;
    char *line = ic_line(r, &bad, e);
    if (!line) return bad ? -1 : 0;
    r->lineno++;
    int c = 0;
    for (char *p = line, *tok; (tok = csv_field(&p)); c++) {
        tok[strcspn(tok, "\r")] = '\0';
        for (int k = 0; k < IC_COUNT; k++)
            if (r->col[k] == c && (common_parse_decimal(tok, &row[k]) < 0 || row[k] < 0))
                return err_set(e, "%s: line %d, column %s: got \"%s\", expected a non-negative number", r->path,
                               r->lineno, ic_names[k], tok);
    }
    if (c != r->ncol)
        return err_set(e, "%s: line %d: %d fields, expected %d as in the header", r->path, r->lineno, c, r->ncol);
    return 1;
}

static void ic_close(IterCsv *r)
{
    if (r->f) fclose(r->f);
    free(r->line);
    r->f = NULL;
    r->line = NULL;
}

/* A first pass over an iterations CSV: it is checked, its rows counted
 * (data files name the count at their top), the last row and the
 * columns' peaks and sums kept. */
typedef struct IcSums {
    size_t n;
    double last[IC_COUNT], peak[IC_COUNT], sum[IC_COUNT];
} IcSums;

static int ic_pass(const char *path, IcSums *s, Err *e)
{
    IterCsv r;
    memset(s, 0, sizeof *s);
    int rc = ic_open(&r, path, e);
    double row[IC_COUNT];
    while (rc == 0 && (rc = ic_next(&r, row, e)) > 0) {
        for (int k = 0; k < IC_COUNT; k++) {
            if (row[k] > s->peak[k]) s->peak[k] = row[k];
            s->sum[k] += row[k];
        }
        memcpy(s->last, row, sizeof row);
        s->n++;
        rc = 0;
    }
    ic_close(&r);
    if (rc < 0) return -1;
    if (!s->n) return err_set(e, "%s: no iterations (only a header)", path);
    return 0;
}

static int kind_kv(PlotCtx *c, Err *e)
{
    const char *path = c->job->inputs[0];
    IcSums sm;
    if (ic_pass(path, &sm, e) < 0) return -1;
    PlotBuf b = {0};
    IterCsv r;
    if (plotbuf_open_file(c, &b, "kv.dat", e) < 0) return -1;
    int rc = ic_open(&r, path, e);
    fprintf(b.f, "# t_s kv_used_blocks running waiting -- at each iteration's start, from %s (%zu iterations;\n"
                 "# the last row repeats the last values at the end of the last iteration)\n", path, sm.n);
    double row[IC_COUNT];
    while (rc == 0 && (rc = ic_next(&r, row, e)) > 0) {
        fprintf(b.f, "%.9f %.0f %.0f %.0f\n", row[IC_START], row[IC_KV], row[IC_RUN], row[IC_WAIT]);
        rc = 0;
    }
    ic_close(&r);
    if (rc < 0) {
        plotbuf_discard(&b);
        return -1;
    }
    const double *last = sm.last;
    fprintf(b.f, "%.9f %.0f %.0f %.0f\n", last[IC_START] + last[IC_DUR], last[IC_KV], last[IC_RUN], last[IC_WAIT]);
    plot_param_num(c->params, "peak_kv_blocks", sm.peak[IC_KV]);
    return plotbuf_commit(c, &b, "kv.dat", e);
}

static int kind_batch(PlotCtx *c, Err *e)
{
    const char *path = c->job->inputs[0];
    IcSums sm;
    if (ic_pass(path, &sm, e) < 0) return -1;
    PlotBuf b = {0};
    IterCsv r;
    if (plotbuf_open_file(c, &b, "batch.dat", e) < 0) return -1;
    int rc = ic_open(&r, path, e);
    fprintf(b.f, "# t_s prefill_tokens decode_tokens duration_ms end_s -- one row per iteration, from %s\n", path);
    double row[IC_COUNT];
    while (rc == 0 && (rc = ic_next(&r, row, e)) > 0) {
        fprintf(b.f, "%.9f %.0f %.0f %.6f %.9f\n", row[IC_START], row[IC_PREFILL], row[IC_DECODE], row[IC_DUR] * 1e3,
                row[IC_START] + row[IC_DUR]);
        rc = 0;
    }
    ic_close(&r);
    if (rc < 0) {
        plotbuf_discard(&b);
        return -1;
    }
    double pre = sm.sum[IC_PREFILL], dec = sm.sum[IC_DECODE];
    plot_param_num(c->params, "prefill_share", pre + dec > 0 ? pre / (pre + dec) : 0);
    fprintf(c->params, "n_iterations = %zu\n", sm.n);
    return plotbuf_commit(c, &b, "batch.dat", e);
}

/* ----------------------------------------------------------------- rate */

typedef struct RatePoint {
    double rate, v[6]; /* completion mean, ci; goodput mean, ci; attainment mean, ci */
} RatePoint;

static int cmp_rate(const void *a, const void *b)
{
    return cmp_double(&((const RatePoint *)a)->rate, &((const RatePoint *)b)->rate);
}

static int mean_ci(const cJSON *p, const char *key, const char *where, double *mean, double *ci, Err *e)
{
    const cJSON *o = get(p, key);
    const cJSON *m = get(o, "mean"), *c = get(o, "ci95");
    if (!cJSON_IsNumber(m) || !(cJSON_IsNumber(c) || cJSON_IsNull(c)))
        return err_set(e, "%s.%s: %s; expected {\"mean\": number, \"ci95\": number}", where, key,
                       o ? "malformed" : "missing");
    *mean = m->valuedouble;
    *ci = cJSON_IsNumber(c) ? c->valuedouble : 0;
    return 0;
}

static int kind_rate(PlotCtx *c, Err *e)
{
    const char *path = c->job->inputs[0];
    cJSON *root = jsonio_parse_file(path, e);
    if (!root) return -1;
    const cJSON *pts = cJSON_IsObject(root) ? get(root, "points") : NULL;
    int n = cJSON_GetArraySize(pts);
    if (!cJSON_IsArray(pts) || n == 0) {
        cJSON_Delete(root);
        return err_set(e, "%s: points: %s; expected a sweep report (servesim sweep --json) with points[]", path,
                       !pts ? "missing" : cJSON_IsArray(pts) ? "empty" : "not an array");
    }
    RatePoint *rp = xcalloc((size_t)n, sizeof *rp);
    static const char *const keys[3] = {"completion_rps", "goodput_rps", "slo_attainment"};
    int i = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, pts) {
        char where[PLOT_NAME_MAX];
        snprintf(where, sizeof where, "%s: points[%d]", path, i);
        const cJSON *r = get(p, "rate_per_s");
        if (!cJSON_IsNumber(r) || !(r->valuedouble > 0)) {
            err_set(e, "%s.rate_per_s: %s; expected a positive number", where, r ? "not a positive number" : "missing");
            goto fail;
        }
        rp[i].rate = r->valuedouble;
        for (int k = 0; k < 3; k++)
            if (mean_ci(p, keys[k], where, &rp[i].v[2 * k], &rp[i].v[2 * k + 1], e) < 0) goto fail;
        i++;
    }
    qsort(rp, (size_t)n, sizeof *rp, cmp_rate);
    PlotBuf b;
    plotbuf_open(&b);
    fprintf(b.f, "# rate_per_s completion_rps ci95 goodput_rps ci95 slo_attainment ci95 -- points[] of %s\n"
                 "# (mean over seeds and the half-width of its 95%% confidence interval), then the bands as drawn,\n"
                 "# clipped to what can be: completion_lo completion_hi (>= 0), goodput_lo goodput_hi (0 ..\n"
                 "# completion), attainment_lo attainment_hi (0 .. 1)\n", path);
    for (int k = 0; k < n; k++) {
        const double *v = rp[k].v;
        double c_lo = fmax(0, v[0] - v[1]), c_hi = v[0] + v[1];
        double g_lo = fmax(0, v[2] - v[3]), g_hi = fmin(v[2] + v[3], v[0]);
        double a_lo = fmax(0, v[4] - v[5]), a_hi = fmin(1, v[4] + v[5]);
        fprintf(b.f, "%.9g %.9g %.9g %.9g %.9g %.9g %.9g %.9g %.9g %.9g %.9g %.9g %.9g\n", rp[k].rate, v[0], v[1], v[2],
                v[3], v[4], v[5], c_lo, c_hi, g_lo, fmax(g_lo, g_hi), a_lo, a_hi);
    }
    fprintf(c->params, "logx = %d\n", rp[n - 1].rate / rp[0].rate >= 8);
    free(rp);
    const cJSON *knee = get(root, "knee");
    const cJSON *kg = get(knee, "max_goodput_rate_per_s"), *kt = get(knee, "max_rate_meeting_target_per_s");
    const cJSON *at = get(knee, "attainment_target");
    if (!at) at = get(root, "attainment_target");
    if (cJSON_IsNumber(kg)) plot_param_num(c->params, "knee_goodput_rate", kg->valuedouble);
    if (cJSON_IsNumber(kt)) plot_param_num(c->params, "knee_target_rate", kt->valuedouble);
    if (cJSON_IsNumber(at)) plot_param_num(c->params, "attainment_target", at->valuedouble);
    /* the knee searches' rates, drawn as points of their own */
    PlotBuf sb;
    plotbuf_open(&sb);
    fputs("# rate_per_s goodput_rps -- the rates the knee searches evaluated (knee.goodput_search, "
          "knee.target_search)\n", sb.f);
    int n_search = 0;
    static const char *const searches[2] = {"goodput_search", "target_search"};
    for (int s = 0; s < 2; s++) {
        const cJSON *q;
        cJSON_ArrayForEach(q, get(knee, searches[s])) {
            const cJSON *r = get(q, "rate_per_s"), *g = get(get(q, "goodput_rps"), "mean");
            if (!cJSON_IsNumber(r) || !cJSON_IsNumber(g)) continue;
            fprintf(sb.f, "%.9g %.9g\n", r->valuedouble, g->valuedouble);
            n_search++;
        }
    }
    fprintf(c->params, "n_search = %d\n", n_search);
    /* the title: the scenario, then its SLO and the seeds, unless --title */
    if (!c->job->title) {
        char t[600];
        const cJSON *nm = get(root, "name"), *slo = get(root, "slo");
        int used = snprintf(t, sizeof t, "%s", cJSON_IsString(nm) ? nm->valuestring : plot_label(path));
        static const char *const sk[4] = {"ttft_ms", "tpot_ms", "itl_max_ms", "e2e_ms"};
        static const char *const sn[4] = {"TTFT", "TPOT", "max ITL", "E2E"};
        int any = 0;
        for (int k = 0; k < 4 && used < (int)sizeof t; k++) {
            const cJSON *x = get(slo, sk[k]);
            if (!cJSON_IsNumber(x)) continue;
            used += snprintf(t + used, sizeof t - (size_t)used, "%s%s <= %g ms", any ? ", " : "\nSLO ", sn[k],
                             x->valuedouble);
            any = 1;
        }
        const cJSON *pc = get(slo, "percentile");
        if (any && cJSON_IsNumber(pc) && used < (int)sizeof t)
            used += snprintf(t + used, sizeof t - (size_t)used, " (p%g)", pc->valuedouble);
        int ns = cJSON_GetArraySize(get(root, "seeds"));
        if (used < (int)sizeof t)
            snprintf(t + used, sizeof t - (size_t)used, "%s%d seed%s", any ? "; " : "\n", ns, ns == 1 ? "" : "s");
        plot_param_str(c->params, "plot_title", t);
    }
    cJSON_Delete(root);
    if (plotbuf_commit(c, &sb, "rate_search.dat", e) < 0) {
        plotbuf_discard(&b);
        return -1;
    }
    return plotbuf_commit(c, &b, "rate.dat", e);
fail:
    free(rp);
    cJSON_Delete(root);
    return -1;
}

/* --------------------------------------------------------------- pareto */

typedef struct ParetoPt {
    double lat_ms, usd_per_1m, usd_per_h;
    const char *name;
    int front;
} ParetoPt;

static int cmp_pareto(const void *a, const void *b)
{
    const ParetoPt *x = a, *y = b;
    if (x->lat_ms != y->lat_ms) return x->lat_ms < y->lat_ms ? -1 : 1;
    return strcmp(x->name, y->name);
}

static void gp_quoted(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++)
        if (*s != '"' && *s != '\n') fputc(*s, f);
    fputc('"', f);
}

/* A label character's width as a fraction of the data's x range: 9 px of
 * the 1200 px picture's ~1100 px plot, which spans 1.2 x the range (pareto.gp's
 * offsets). */
#define PARETO_CHAR_X (9.0 / 1100.0 * 1.2)

static int kind_pareto(PlotCtx *c, Err *e)
{
    const char *path = c->job->inputs[0];
    cJSON *root = jsonio_parse_file(path, e);
    if (!root) return -1;
    const cJSON *cands = cJSON_IsObject(root) ? get(root, "candidates") : NULL;
    int n = cJSON_GetArraySize(cands);
    if (!cJSON_IsArray(cands) || n == 0) {
        cJSON_Delete(root);
        return err_set(e, "%s: candidates: %s; expected a plan report (servesim plan --json) with candidates[]",
                       path, !cands ? "missing" : cJSON_IsArray(cands) ? "empty" : "not an array");
    }
    const char *lat = "ttft";
    const cJSON *pl = get(root, "pareto_latency");
    if (cJSON_IsString(pl)) lat = pl->valuestring;
    if (strcmp(lat, "ttft") && strcmp(lat, "tpot") && strcmp(lat, "e2e")) {
        err_set(e, "%s: pareto_latency: got \"%s\", expected ttft, tpot or e2e", path, lat);
        cJSON_Delete(root);
        return -1;
    }
    char latkey[32];
    snprintf(latkey, sizeof latkey, "%s_p99_s", lat);
    const cJSON *front = get(root, "pareto");
    ParetoPt *pts = xcalloc((size_t)n, sizeof *pts);
    int np = 0, i = 0;
    PlotBuf skipped;
    plotbuf_open(&skipped);
    const cJSON *x;
    cJSON_ArrayForEach(x, cands) {
        char where[PLOT_NAME_MAX];
        snprintf(where, sizeof where, "%s: candidates[%d]", path, i++);
        const cJSON *nm = get(x, "name"), *fe = get(x, "feasible");
        if (!cJSON_IsString(nm) || !cJSON_IsBool(fe)) {
            err_set(e, "%s: expected a string name and a boolean feasible", where);
            plotbuf_discard(&skipped);
            free(pts);
            cJSON_Delete(root);
            return -1;
        }
        const cJSON *u = get(x, "usd_per_1m_good_tokens"), *h = get(x, "usd_per_hour");
        const cJSON *l = get(get(x, "fleet"), latkey);
        if (!l) l = get(x, latkey);
        if (!cJSON_IsTrue(fe) || !cJSON_IsNumber(u) || !cJSON_IsNumber(l)) {
            const cJSON *why = get(x, "reason");
            fprintf(skipped.f, "%s%s (%s)", ftell(skipped.f) ? "; " : "", nm->valuestring,
                    cJSON_IsTrue(fe) ? "no cost or latency" : "infeasible");
            (void)why;
            continue;
        }
        ParetoPt *q = &pts[np++];
        q->name = nm->valuestring;
        q->lat_ms = l->valuedouble * 1e3;
        q->usd_per_1m = u->valuedouble;
        q->usd_per_h = cJSON_IsNumber(h) ? h->valuedouble : NAN;
        const cJSON *fn;
        cJSON_ArrayForEach(fn, front) if (cJSON_IsString(fn) && !strcmp(fn->valuestring, q->name)) q->front = 1;
    }
    fclose(skipped.f);
    skipped.f = NULL;
    if (np == 0) {
        err_set(e, "%s: no feasible candidate with usd_per_1m_good_tokens and fleet.%s to plot (%s)", path, latkey,
                skipped.text ? skipped.text : "");
        free(skipped.text);
        free(pts);
        cJSON_Delete(root);
        return -1;
    }
    plot_param_str(c->params, "not_plotted", skipped.text ? skipped.text : "");
    free(skipped.text);
    qsort(pts, (size_t)np, sizeof *pts, cmp_pareto);
    PlotBuf all, fr;
    plotbuf_open(&all);
    plotbuf_open(&fr);
    const char *hdr = "# p99_%s_ms usd_per_1m_good_tokens usd_per_hour name -- %s candidates[] (fleet.%s, "
                      "usd_per_1m_good_tokens); %s\n";
    fprintf(all.f, hdr, lat, path, latkey, "every feasible candidate");
    fprintf(fr.f, hdr, lat, path, latkey, "the Pareto frontier (pareto[]), by latency");
    int nf = 0;
    for (int k = 0; k < np; k++) {
        fprintf(all.f, "%.6f %.9g %.9g ", pts[k].lat_ms, pts[k].usd_per_1m, pts[k].usd_per_h);
        gp_quoted(all.f, pts[k].name);
        fputc('\n', all.f);
        if (pts[k].front) {
            fprintf(fr.f, "%.6f %.9g %.9g ", pts[k].lat_ms, pts[k].usd_per_1m, pts[k].usd_per_h);
            gp_quoted(fr.f, pts[k].name);
            fputc('\n', fr.f);
            nf++;
        }
    }
    if (!nf) fputs("NaN NaN NaN \"\"\n", fr.f);
    /* label positions that do not collide (issue 37): in latency order, a
     * label whose text (written right of its point; about 1% of the x range
     * a character at 1200 px, the offsets included) overlaps one already
     * placed within 5% of the y range moves up, then down, farther each
     * time, in steps of 5% of the y range */
    double x0 = pts[0].lat_ms, x1 = x0, y0 = pts[0].usd_per_1m, y1 = y0;
    for (int k = 1; k < np; k++) {
        x0 = fmin(x0, pts[k].lat_ms), x1 = fmax(x1, pts[k].lat_ms);
        y0 = fmin(y0, pts[k].usd_per_1m), y1 = fmax(y1, pts[k].usd_per_1m);
    }
    double xr = x1 > x0 ? x1 - x0 : 1, yr = y1 > y0 ? y1 - y0 : fmax(fabs(y0), 1);
    double *ly = xmalloc((size_t)np * sizeof *ly);
    PlotBuf lab;
    plotbuf_open(&lab);
    fputs("# label_x label_y point_y name -- where each candidate's name is written (moved off its neighbours';\n"
          "# a thin line joins a moved one to its point)\n", lab.f);
    for (int k = 0; k < np; k++) {
        ly[k] = pts[k].usd_per_1m;
        for (int tries = 1; tries <= 16; tries++) {
            int hit = 0;
            for (int j = 0; j < k && !hit; j++) {
                double wj = PARETO_CHAR_X * xr * (double)(strlen(pts[j].name) + 2);
                hit = pts[k].lat_ms - pts[j].lat_ms < wj && fabs(ly[k] - ly[j]) < 0.05 * yr;
            }
            if (!hit) break;
            /* +1, -1, +2, -2, ... steps of 5% */
            double step = 0.05 * yr * (double)((tries + 1) / 2) * (tries % 2 ? 1 : -1);
            ly[k] = pts[k].usd_per_1m + step;
        }
        fprintf(lab.f, "%.6f %.9g %.9g ", pts[k].lat_ms, ly[k], pts[k].usd_per_1m);
        gp_quoted(lab.f, pts[k].name);
        fputc('\n', lab.f);
    }
    free(ly);
    free(pts);
    if (plotbuf_commit(c, &lab, "labels.dat", e) < 0) {
        plotbuf_discard(&all);
        plotbuf_discard(&fr);
        cJSON_Delete(root);
        return -1;
    }
    plot_param_str(c->params, "latency_name", lat);
    const cJSON *rec = get(root, "recommended");
    plot_param_str(c->params, "recommended", cJSON_IsString(rec) ? rec->valuestring : "");
    cJSON_Delete(root);
    if (plotbuf_commit(c, &all, "pareto.dat", e) < 0) {
        plotbuf_discard(&fr);
        return -1;
    }
    return plotbuf_commit(c, &fr, "frontier.dat", e);
}

/* -------------------------------------------------------------- scatter */

#define SCATTER_MAX_SLICES 64

static const char *const scatter_metric[2] = {"ttft", "tpot"};

/* validate --json: measured against predicted mean TTFT and TPOT, one data
 * file per slice and metric, the slices in order of first appearance.  Rows
 * not modelled, failed (null prediction) or not positive (log axes) are
 * left out and counted. */
static int kind_scatter(PlotCtx *c, Err *e)
{
    const char *path = c->job->inputs[0];
    cJSON *root = jsonio_parse_file(path, e);
    if (!root) return -1;
    const cJSON *rows = cJSON_IsObject(root) ? get(root, "rows") : NULL;
    if (!cJSON_IsArray(rows)) {
        cJSON_Delete(root);
        return err_set(e, "%s: rows: %s; expected a validate report (servesim validate --json) with rows[]", path,
                       rows ? "not an array" : "missing");
    }
    const char *slices[SCATTER_MAX_SLICES];
    int n_slices = 0, i = 0;
    const cJSON *r;
    cJSON_ArrayForEach(r, rows) {
        const cJSON *sl = get(r, "slice");
        if (!cJSON_IsString(sl)) {
            cJSON_Delete(root);
            return err_set(e, "%s: rows[%d].slice: %s; expected a string (model | GPU | ...)", path, i,
                           sl ? "not a string" : "missing");
        }
        /* a slice none of whose rows has a prediction (all not modelled)
         * has nothing to draw and no place in the key */
        int drawable = 0;
        for (int m = 0; m < 2; m++) {
            char mk[32], pk[32];
            snprintf(mk, sizeof mk, "measured_%s_ms", scatter_metric[m]);
            snprintf(pk, sizeof pk, "predicted_%s_ms", scatter_metric[m]);
            const cJSON *x = get(r, mk), *y = get(r, pk);
            drawable |= cJSON_IsNumber(x) && cJSON_IsNumber(y) && x->valuedouble > 0 && y->valuedouble > 0;
        }
        int k = 0;
        while (k < n_slices && strcmp(slices[k], sl->valuestring)) k++;
        if (k == n_slices && drawable) {
            if (n_slices == SCATTER_MAX_SLICES) {
                cJSON_Delete(root);
                return err_set(e, "%s: more than %d slices; narrow the rows (validate --filter KEY=VALUE)", path,
                               SCATTER_MAX_SLICES);
            }
            slices[n_slices++] = sl->valuestring;
        }
        i++;
    }
    int drawn = 0, left_out = 0;
    for (int m = 0; m < 2; m++) {
        char mk[32], pk[32];
        snprintf(mk, sizeof mk, "measured_%s_ms", scatter_metric[m]);
        snprintf(pk, sizeof pk, "predicted_%s_ms", scatter_metric[m]);
        double lo = INFINITY, hi = 0;
        for (int s = 0; s < n_slices; s++) {
            PlotBuf b;
            plotbuf_open(&b);
            fprintf(b.f, "# %s %s id -- rows[] of %s with slice \"%s\" (ms)\n", mk, pk, path, slices[s]);
            int n = 0;
            i = 0;
            cJSON_ArrayForEach(r, rows) {
                int at = i++;
                if (strcmp(get(r, "slice")->valuestring, slices[s])) continue;
                const cJSON *x = get(r, mk), *y = get(r, pk), *id = get(r, "id");
                if ((x && !cJSON_IsNumber(x) && !cJSON_IsNull(x)) || (y && !cJSON_IsNumber(y) && !cJSON_IsNull(y))) {
                    plotbuf_discard(&b);
                    cJSON_Delete(root);
                    return err_set(e, "%s: rows[%d]: %s and %s: expected numbers or null", path, at, mk, pk);
                }
                if (!cJSON_IsNumber(x) || !cJSON_IsNumber(y) || !(x->valuedouble > 0) || !(y->valuedouble > 0))
                    continue;
                fprintf(b.f, "%.9g %.9g ", x->valuedouble, y->valuedouble);
                gp_quoted(b.f, cJSON_IsString(id) ? id->valuestring : "");
                fputc('\n', b.f);
                lo = fmin(lo, fmin(x->valuedouble, y->valuedouble));
                hi = fmax(hi, fmax(x->valuedouble, y->valuedouble));
                n++;
            }
            if (!n) fputs("NaN NaN \"\"\n", b.f);
            drawn += m == 0 ? n : 0;
            char name[64];
            snprintf(name, sizeof name, "scatter_%s_%d.dat", scatter_metric[m], s + 1);
            if (plotbuf_commit(c, &b, name, e) < 0) {
                cJSON_Delete(root);
                return -1;
            }
        }
        if (m == 0) left_out = cJSON_GetArraySize(rows) - drawn;
        if (!(hi > 0)) {
            cJSON_Delete(root);
            return err_set(e, "%s: no row has positive %s and %s to plot (%d rows not modelled or failed)", path, mk,
                           pk, left_out);
        }
        /* the same range on both axes, so y = x is the diagonal */
        char pn[32];
        snprintf(pn, sizeof pn, "lo_%s", scatter_metric[m]);
        plot_param_num(c->params, pn, lo / 1.25);
        snprintf(pn, sizeof pn, "hi_%s", scatter_metric[m]);
        plot_param_num(c->params, pn, hi * 1.25);
        /* under two decades gnuplot labels too few ticks: 1-2-5 ones (1-2-3-5-7
         * under one) */
        fprintf(c->params, "tics_%s = '", scatter_metric[m]); /* numbers only, quoted as every string */
        if (hi / lo < 100) {
            static const double steps[2][5] = {{1, 2, 5, 0, 0}, {1, 2, 3, 5, 7}};
            const double *st = steps[hi / lo < 10];
            int first = 1;
            for (double dec = pow(10, floor(log10(lo / 1.25))); dec <= hi * 1.25; dec *= 10)
                for (int q = 0; q < 5 && st[q] > 0; q++) {
                    double t = dec * st[q];
                    if (t < lo / 1.25 || t > hi * 1.25) continue;
                    fprintf(c->params, "%s%g", first ? "(" : ", ", t);
                    first = 0;
                }
            if (!first) fputc(')', c->params);
        }
        fputs("'\n", c->params);
    }
    fprintf(c->params, "n_slices = %d\nrows_drawn = %d\nrows_left_out = %d\n", n_slices, drawn, left_out);
    for (int s = 0; s < n_slices; s++) {
        char pn[32];
        snprintf(pn, sizeof pn, "slice_%d", s + 1);
        plot_param_str(c->params, pn, slices[s]);
    }
    cJSON_Delete(root);
    return 0;
}

/* ------------------------------------------------------------- roofline */

static int kind_roofline(PlotCtx *c, Err *e)
{
    const PlotJob *j = c->job;
    /* the profile is the input that is not a CSV (the last one by convention) */
    const char *prof = NULL;
    MeasSet ms;
    calib_meas_init(&ms);
    for (int i = 0; i < j->n_inputs; i++) {
        const char *in = j->inputs[i];
        size_t len = strlen(in);
        int is_json = len > 5 && !strcmp(in + len - 5, ".json");
        int is_csv = len > 4 && !strcmp(in + len - 4, ".csv");
        if (!is_csv && (is_json || !strchr(in, '/'))) {
            if (prof) {
                calib_meas_free(&ms);
                return err_set(e, "plot roofline: two profiles given (%s and %s); expected measurement CSVs and one "
                                  "profile", prof, in);
            }
            prof = in;
        } else if (calib_meas_import(&ms, in, e) < 0) {
            calib_meas_free(&ms);
            return -1;
        }
    }
    if (!prof || ms.n == 0) {
        calib_meas_free(&ms);
        return err_set(e, "plot roofline: expected measurement CSVs (servesim calib run) and a profile (a name in "
                          "models/profiles/ or a .json path); got %s", prof ? "no measurements" : "no profile");
    }
    Profile *p = xcalloc(1, sizeof *p);
    if (profile_load(prof, p, e) < 0) {
        free(p);
        calib_meas_free(&ms);
        return -1;
    }
    PlotBuf bufs[PROF_OP_COUNT];
    int used[PROF_OP_COUNT] = {0}, missing[PROF_OP_COUNT] = {0};
    double xlo[PROF_OP_COUNT], xhi[PROF_OP_COUNT];
    for (size_t i = 0; i < ms.n; i++) {
        const Meas *r = &ms.rows[i];
        int op = calib_meas_prof_op(r);
        if (op < 0 || !(profile_op_is_gemm(op) || profile_op_is_attn(op)) || !(r->flops > 0) || !(r->bytes > 0))
            continue;
        double pred_s = calib_fit_predict(p, r);
        if (!(pred_s > 0)) {
            missing[op]++;
            continue;
        }
        if (!used[op]) {
            plotbuf_open(&bufs[op]);
            fprintf(bufs[op].f, "# intensity_flop_per_byte measured_tflops fitted_tflops measured_ms fitted_ms -- "
                                "%s rows of %s against profile %s\n", profile_op_name(op), ms.sources, p->name);
        }
        double ai = r->flops / r->bytes;
        if (!used[op] || ai < xlo[op]) xlo[op] = ai;
        if (!used[op] || ai > xhi[op]) xhi[op] = ai;
        used[op]++;
        double ms_meas = r->latency_ms;
        fprintf(bufs[op].f, "%.6g %.6g %.6g %.6g %.6g\n", r->flops / r->bytes, r->flops / (ms_meas * 1e-3) / 1e12,
                r->flops / pred_s / 1e12, ms_meas, pred_s * 1e3);
    }
    int n_ops = 0, rc = 0;
    for (int op = 0; op < PROF_OP_COUNT; op++) {
        if (missing[op])
            fprintf(stderr, "servesim plot roofline: %d %s rows not drawn: profile %s has no model for them\n",
                    missing[op], profile_op_name(op), p->name);
        if (!used[op]) continue;
        char name[64], pn[64];
        snprintf(name, sizeof name, "roofline_%s.dat", profile_op_name(op));
        if (rc == 0) rc = plotbuf_commit(c, &bufs[op], name, e);
        else plotbuf_discard(&bufs[op]);
        n_ops++;
        snprintf(pn, sizeof pn, "op_%d", n_ops);
        plot_param_str(c->params, pn, profile_op_name(op));
        snprintf(pn, sizeof pn, "peak_tflops_%d", n_ops);
        plot_param_num(c->params, pn, p->op[op].peak_flops / 1e12);
        snprintf(pn, sizeof pn, "bw_tbs_%d", n_ops);
        plot_param_num(c->params, pn, p->op[op].bw_bytes_per_s / 1e12);
        snprintf(pn, sizeof pn, "xlo_%d", n_ops);
        plot_param_num(c->params, pn, xlo[op]);
        snprintf(pn, sizeof pn, "xhi_%d", n_ops);
        plot_param_num(c->params, pn, xhi[op]);
    }
    fprintf(c->params, "n_ops = %d\n", n_ops);
    plot_param_str(c->params, "profile_name", p->name);
    free(p);
    calib_meas_free(&ms);
    if (rc == 0 && n_ops == 0)
        rc = err_set(e, "plot roofline: no GEMM or attention rows the profile %s prices", prof);
    return rc;
}

/* ---------------------------------------------------------------- table */

const PlotKind plot_kind_table[] = {
    {"cdf", "cdf", 1, PLOT_MAX_INPUTS, kind_cdf, "latency CDFs"},
    {"ccdf", "cdf", 1, PLOT_MAX_INPUTS, kind_ccdf, "latency tails: 1 - CDF, log scale"},
    {"timeline", "timeline", 1, 4, kind_timeline, "per-request lanes"},
    {"kv", "kv", 1, 1, kind_kv, "KV blocks and queues over time"},
    {"batch", "batch", 1, 1, kind_batch, "tokens per iteration and iteration time"},
    {"roofline", "roofline", 2, PLOT_MAX_INPUTS, kind_roofline, "measurements against the fitted roofline"},
    {"rate", "rate", 1, 1, kind_rate, "goodput and throughput vs arrival rate"},
    {"pareto", "pareto", 1, 1, kind_pareto, "cost vs p99 latency"},
    {"scatter", "scatter", 1, 1, kind_scatter, "measured vs predicted TTFT and TPOT"},
};
const int plot_kind_count = (int)(sizeof plot_kind_table / sizeof plot_kind_table[0]);
