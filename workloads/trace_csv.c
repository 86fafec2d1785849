/*
 * trace_csv.c -- a plain CSV trace whose header names its columns.
 *
 *   arrival_ms,prompt_tokens,output_tokens,tenant,class
 *   0,512,128,acme,chat
 *
 * Columns: exactly one of arrival_ms / arrival_s; prompt_tokens and
 * output_tokens; optional id, max_output_tokens, tenant, class, session,
 * priority, deadline_ms (after the arrival), correct (1/0/true/false),
 * cancel_after_ms (the client cancels that long after the arrival).  An
 * empty optional field means "not given".  Unknown or repeated columns are
 * header errors.  No quoting of commas: a field may be wrapped in double
 * quotes, which are dropped.  The state is the header: which field holds
 * each column.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_fmt.h"
#include "trace_text.h"

enum {
    CSV_ID = 0, CSV_ARRIVAL_MS, CSV_ARRIVAL_S, CSV_PROMPT, CSV_OUTPUT, CSV_MAX_OUTPUT, CSV_TENANT, CSV_CLASS,
    CSV_SESSION, CSV_PRIORITY, CSV_DEADLINE_MS, CSV_CORRECT, CSV_ADAPTER, CSV_CANCEL_MS, CSV_NCOLS
};

#define CSV_MAX_FIELDS 64

typedef struct CsvState {
    int col[CSV_NCOLS];         /* field of each column, -1 = absent */
    int n_cols;                 /* the header's field count */
    char header[512];           /* for messages */
} CsvState;

static const char *const col_names[CSV_NCOLS] = {
    "id", "arrival_ms", "arrival_s", "prompt_tokens", "output_tokens", "max_output_tokens",
    "tenant", "class", "session", "priority", "deadline_ms", "correct", "adapter", "cancel_after_ms"};

static const char *col_list(char *buf, size_t n)
{
    size_t off = 0;
    buf[0] = '\0';
    for (int k = 0; k < CSV_NCOLS && off < n; k++)
        off += (size_t)snprintf(buf + off, n - off, "%s%s", k ? ", " : "", col_names[k]);
    return buf;
}

static int csv_header(void *st, char *line, Err *e)
{
    CsvState *cs = st;
    snprintf(cs->header, sizeof cs->header, "%s", line);
    char *f[CSV_MAX_FIELDS + 1], list[256];
    int n = trace_text_csv_split(line, f, CSV_MAX_FIELDS);
    if (n > CSV_MAX_FIELDS) return err_set(e, "header: more than %d columns", CSV_MAX_FIELDS);
    for (int i = 0; i < n; i++) {
        int k = 0;
        while (k < CSV_NCOLS && strcmp(f[i], col_names[k])) k++;
        if (k == CSV_NCOLS)
            return err_set(e, "header: unknown column \"%s\"; expected columns from: %s", f[i],
                           col_list(list, sizeof list));
        if (cs->col[k] >= 0) return err_set(e, "header: column \"%s\" appears twice", f[i]);
        cs->col[k] = i;
    }
    if ((cs->col[CSV_ARRIVAL_MS] >= 0) == (cs->col[CSV_ARRIVAL_S] >= 0))
        return err_set(e, "header: expected exactly one of the columns arrival_ms, arrival_s");
    if (cs->col[CSV_PROMPT] < 0) return err_set(e, "header: missing column prompt_tokens");
    if (cs->col[CSV_OUTPUT] < 0) return err_set(e, "header: missing column output_tokens");
    cs->n_cols = n;
    return 0;
}

/* The field of column k, or NULL when the header has no such column or the
 * field is empty. */
static const char *field(const CsvState *cs, char **f, int k)
{
    int c = cs->col[k];
    return c >= 0 && f[c][0] ? f[c] : NULL;
}

static int get_len(const char *v, const char *name, int64_t min, int64_t *out, Err *e)
{
    if (!v) return err_set(e, "%s: empty, expected an integer in [%lld, %d]", name, (long long)min, TRACE_LEN_MAX);
    if (trace_text_parse_i64(v, out) < 0 || *out < min || *out > TRACE_LEN_MAX)
        return err_set(e, "%s: got \"%s\", expected an integer in [%lld, %d]", name, v, (long long)min,
                       TRACE_LEN_MAX);
    return 0;
}

static int csv_parse(void *st, char *line, TraceRecord *rec, Err *e)
{
    const CsvState *cs = st;
    char ex[96];
    trace_text_excerpt(line, ex, sizeof ex);
    char *f[CSV_MAX_FIELDS + 1];
    int n = trace_text_csv_split(line, f, cs->n_cols);
    if (n != cs->n_cols)
        return err_set(e, "got %s%d column%s in \"%s\", expected %d (%s)", n > cs->n_cols ? "more than " : "",
                       n > cs->n_cols ? cs->n_cols : n, n == 1 ? "" : "s", ex, cs->n_cols, cs->header);
    int in_s = cs->col[CSV_ARRIVAL_S] >= 0;
    const char *aname = in_s ? "arrival_s" : "arrival_ms";
    const char *v = field(cs, f, in_s ? CSV_ARRIVAL_S : CSV_ARRIVAL_MS);
    double t;
    if (!v) return err_set(e, "%s: empty, expected a number >= 0", aname);
    if (trace_text_parse_f64(v, &t) < 0 || t < 0 || t > (in_s ? 1e9 : 1e12))
        return err_set(e, "%s: got \"%s\", expected a number in [0, %g]", aname, v, in_s ? 1e9 : 1e12);
    rec->t_ns = llround(t * (in_s ? 1e9 : 1e6));
    if (get_len(field(cs, f, CSV_PROMPT), "prompt_tokens", 0, &rec->prompt_tokens, e) < 0) return -1;
    if (get_len(field(cs, f, CSV_OUTPUT), "output_tokens", 0, &rec->output_tokens, e) < 0) return -1;
    if ((v = field(cs, f, CSV_MAX_OUTPUT)) && get_len(v, "max_output_tokens", 1, &rec->max_output_tokens, e) < 0)
        return -1;
    rec->id = field(cs, f, CSV_ID);
    rec->tenant = field(cs, f, CSV_TENANT);
    rec->cls = field(cs, f, CSV_CLASS);
    rec->session = field(cs, f, CSV_SESSION);
    if ((v = field(cs, f, CSV_PRIORITY))) {
        int64_t p;
        if (trace_text_parse_i64(v, &p) < 0 || p < -1000000 || p > 1000000)
            return err_set(e, "priority: got \"%s\", expected an integer in [-1000000, 1000000]", v);
        rec->priority = (int32_t)p;
    }
    if ((v = field(cs, f, CSV_DEADLINE_MS))) {
        double d;
        if (trace_text_parse_f64(v, &d) < 0 || !(d > 0) || d > 1e12)
            return err_set(e, "deadline_ms: got \"%s\", expected a number of ms after the arrival in (0, 1e12]", v);
        rec->deadline_ns = llround(d * 1e6);
    }
    if ((v = field(cs, f, CSV_ADAPTER))) {
        int64_t a;
        if (trace_text_parse_i64(v, &a) < 0 || a < 0 || a > 1000000)
            return err_set(e, "adapter: got \"%s\", expected a LoRA adapter id in [0, 1000000] (0 = the base model)", v);
        rec->adapter = (uint32_t)a;
    }
    if ((v = field(cs, f, CSV_CANCEL_MS))) {
        double d;
        if (trace_text_parse_f64(v, &d) < 0 || !(d > 0) || d > 1e12)
            return err_set(e, "cancel_after_ms: got \"%s\", expected a number of ms after the arrival in (0, 1e12]", v);
        rec->cancel_after_ns = llround(d * 1e6) > 0 ? llround(d * 1e6) : 1;
    }
    if ((v = field(cs, f, CSV_CORRECT))) {
        if (!strcmp(v, "1") || !strcmp(v, "true")) rec->correct = 1;
        else if (!strcmp(v, "0") || !strcmp(v, "false")) rec->correct = 0;
        else return err_set(e, "correct: got \"%s\", expected 1, 0, true, false or empty", v);
    }
    return 1;
}

static void *csv_state_new(const char *path)
{
    (void)path;
    CsvState *s = xcalloc(1, sizeof *s);
    for (int k = 0; k < CSV_NCOLS; k++) s->col[k] = -1;
    return s;
}

static void csv_state_free(void *st) { free(st); }

static const char *const csv_exts[] = {"csv", NULL};

const TraceFormatOps trace_fmt_csv = {
    .name = "csv",
    .exts = csv_exts,
    .sorted = 1,
    .state_new = csv_state_new,
    .state_free = csv_state_free,
    .header = csv_header,
    .header_hint = "",
    .parse = csv_parse,
};
