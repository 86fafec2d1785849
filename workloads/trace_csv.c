/*
 * trace_csv.c -- a plain CSV trace whose header names its columns, and the
 * field splitter the azure reader shares.
 *
 *   arrival_ms,prompt_tokens,output_tokens,tenant,class
 *   0,512,128,acme,chat
 *
 * Columns: exactly one of arrival_ms / arrival_s; prompt_tokens and
 * output_tokens; optional id, max_output_tokens, tenant, class, session,
 * priority, deadline_ms (after the arrival), correct (1/0/true/false).  An
 * empty optional field means "not given".  Unknown or repeated columns are
 * header errors.  No quoting of commas: a field may be wrapped in double
 * quotes, which are dropped.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "trace_impl.h"

static const char *const col_names[TRACE_CSV_NCOLS] = {
    "id", "arrival_ms", "arrival_s", "prompt_tokens", "output_tokens", "max_output_tokens",
    "tenant", "class", "session", "priority", "deadline_ms", "correct"};

int trace_csv_split(char *line, char **fields, int max)
{
    int n = 0;
    char *p = line;
    for (;;) {
        char *comma = strchr(p, ',');
        if (comma) *comma = '\0';
        if (n == max) return max + 1;
        while (*p == ' ' || *p == '\t') p++;
        size_t len = strlen(p);
        while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t')) p[--len] = '\0';
        if (len >= 2 && p[0] == '"' && p[len - 1] == '"') {
            p[len - 1] = '\0';
            p++;
        }
        fields[n++] = p;
        if (!comma) return n;
        p = comma + 1;
    }
}

static const char *col_list(char *buf, size_t n)
{
    size_t off = 0;
    buf[0] = '\0';
    for (int k = 0; k < TRACE_CSV_NCOLS && off < n; k++)
        off += (size_t)snprintf(buf + off, n - off, "%s%s", k ? ", " : "", col_names[k]);
    return buf;
}

int trace_csv_header(TraceReader *tr, char *line, Err *e)
{
    snprintf(tr->header, sizeof tr->header, "%s", line);
    char *f[TRACE_CSV_MAX_FIELDS + 1], list[256];
    int n = trace_csv_split(line, f, TRACE_CSV_MAX_FIELDS);
    if (n > TRACE_CSV_MAX_FIELDS) return err_set(e, "header: more than %d columns", TRACE_CSV_MAX_FIELDS);
    for (int i = 0; i < n; i++) {
        int k = 0;
        while (k < TRACE_CSV_NCOLS && strcmp(f[i], col_names[k])) k++;
        if (k == TRACE_CSV_NCOLS)
            return err_set(e, "header: unknown column \"%s\"; expected columns from: %s", f[i],
                           col_list(list, sizeof list));
        if (tr->col[k] >= 0) return err_set(e, "header: column \"%s\" appears twice", f[i]);
        tr->col[k] = i;
    }
    if ((tr->col[TRACE_CSV_ARRIVAL_MS] >= 0) == (tr->col[TRACE_CSV_ARRIVAL_S] >= 0))
        return err_set(e, "header: expected exactly one of the columns arrival_ms, arrival_s");
    if (tr->col[TRACE_CSV_PROMPT] < 0) return err_set(e, "header: missing column prompt_tokens");
    if (tr->col[TRACE_CSV_OUTPUT] < 0) return err_set(e, "header: missing column output_tokens");
    tr->n_cols = n;
    return 0;
}

/* The field of column k, or NULL when the header has no such column or the
 * field is empty. */
static const char *field(const TraceReader *tr, char **f, int k)
{
    int c = tr->col[k];
    return c >= 0 && f[c][0] ? f[c] : NULL;
}

static int get_len(const char *v, const char *name, int64_t min, int64_t *out, Err *e)
{
    if (!v) return err_set(e, "%s: empty, expected an integer in [%lld, %d]", name, (long long)min, TRACE_LEN_MAX);
    if (trace_reader_parse_i64(v, out) < 0 || *out < min || *out > TRACE_LEN_MAX)
        return err_set(e, "%s: got \"%s\", expected an integer in [%lld, %d]", name, v, (long long)min,
                       TRACE_LEN_MAX);
    return 0;
}

int trace_csv_parse(TraceReader *tr, char *line, TraceRecord *rec, Err *e)
{
    char ex[96];
    trace_reader_excerpt(line, ex, sizeof ex);
    char *f[TRACE_CSV_MAX_FIELDS + 1];
    int n = trace_csv_split(line, f, tr->n_cols);
    if (n != tr->n_cols)
        return err_set(e, "got %s%d column%s in \"%s\", expected %d (%s)", n > tr->n_cols ? "more than " : "",
                       n > tr->n_cols ? tr->n_cols : n, n == 1 ? "" : "s", ex, tr->n_cols, tr->header);
    int in_s = tr->col[TRACE_CSV_ARRIVAL_S] >= 0;
    const char *aname = in_s ? "arrival_s" : "arrival_ms";
    const char *v = field(tr, f, in_s ? TRACE_CSV_ARRIVAL_S : TRACE_CSV_ARRIVAL_MS);
    double t;
    if (!v) return err_set(e, "%s: empty, expected a number >= 0", aname);
    if (trace_reader_parse_f64(v, &t) < 0 || t < 0 || t > (in_s ? 1e9 : 1e12))
        return err_set(e, "%s: got \"%s\", expected a number in [0, %g]", aname, v, in_s ? 1e9 : 1e12);
    rec->t_ns = llround(t * (in_s ? 1e9 : 1e6));
    if (get_len(field(tr, f, TRACE_CSV_PROMPT), "prompt_tokens", 0, &rec->prompt_tokens, e) < 0) return -1;
    if (get_len(field(tr, f, TRACE_CSV_OUTPUT), "output_tokens", 0, &rec->output_tokens, e) < 0) return -1;
    if ((v = field(tr, f, TRACE_CSV_MAX_OUTPUT)) && get_len(v, "max_output_tokens", 1, &rec->max_output_tokens, e) < 0)
        return -1;
    rec->id = field(tr, f, TRACE_CSV_ID);
    rec->tenant = field(tr, f, TRACE_CSV_TENANT);
    rec->cls = field(tr, f, TRACE_CSV_CLASS);
    rec->session = field(tr, f, TRACE_CSV_SESSION);
    if ((v = field(tr, f, TRACE_CSV_PRIORITY))) {
        int64_t p;
        if (trace_reader_parse_i64(v, &p) < 0 || p < -1000000 || p > 1000000)
            return err_set(e, "priority: got \"%s\", expected an integer in [-1000000, 1000000]", v);
        rec->priority = (int32_t)p;
    }
    if ((v = field(tr, f, TRACE_CSV_DEADLINE_MS))) {
        double d;
        if (trace_reader_parse_f64(v, &d) < 0 || !(d > 0) || d > 1e12)
            return err_set(e, "deadline_ms: got \"%s\", expected a number of ms after the arrival in (0, 1e12]", v);
        rec->deadline_ns = llround(d * 1e6);
    }
    if ((v = field(tr, f, TRACE_CSV_CORRECT))) {
        if (!strcmp(v, "1") || !strcmp(v, "true")) rec->correct = 1;
        else if (!strcmp(v, "0") || !strcmp(v, "false")) rec->correct = 0;
        else return err_set(e, "correct: got \"%s\", expected 1, 0, true, false or empty", v);
    }
    return 1;
}
