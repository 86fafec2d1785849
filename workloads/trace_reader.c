/*
 * trace_reader.c -- the streaming trace iterator (see trace_reader.h):
 * reads a line at a time with getline, hands it to the format's parser,
 * checks arrival order, prefixes messages with "FILE:LINE: " and applies
 * the stop/skip policy.
 *
 * Invariants: at most one line and one parsed JSON tree are held at a time;
 * an azure record's absolute time becomes an offset from the first valid
 * record's; line numbers count every physical line, blank ones included.
 */
#include "trace_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "jsonio.h"

const char *const trace_reader_format_names[] = {"azure", "mooncake", "csv", "json", NULL};

#define AZURE_HEADER "TIMESTAMP,ContextTokens,GeneratedTokens"

int trace_reader_format_parse(const char *name)
{
    for (int k = 0; trace_reader_format_names[k]; k++)
        if (!strcmp(name, trace_reader_format_names[k])) return k;
    return -1;
}

int trace_reader_parse_i64(const char *s, int64_t *out)
{
    if (!*s) return -1;
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (*end || errno) return -1;
    *out = v;
    return 0;
}

int trace_reader_parse_f64(const char *s, double *out)
{
    if (!*s) return -1;
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (*end || errno || v != v) return -1;
    *out = v;
    return 0;
}

const char *trace_reader_excerpt(const char *line, char *buf, size_t n)
{
    size_t len = strlen(line);
    if (len < n) {
        memcpy(buf, line, len + 1);
    } else {
        memcpy(buf, line, n - 4);
        memcpy(buf + n - 4, "...", 4);
    }
    /* a binary file must not put control bytes into a terminal */
    for (char *p = buf; *p; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f) *p = '?';
    return buf;
}

/* Drops the newline, a '\r' and trailing blanks; 1 if anything is left. */
static int trim_line(char *s, ssize_t len)
{
    while (len > 0 && (s[len - 1] == '\n' || s[len - 1] == '\r' || s[len - 1] == ' ' || s[len - 1] == '\t'))
        s[--len] = '\0';
    const char *p = s;
    while (*p == ' ' || *p == '\t') p++;
    return *p != '\0';
}

static const char *first_text(char *s)
{
    while (*s == ' ' || *s == '\t') s++;
    return s;
}

/* The first non-blank line of an open file (the file is rewound after). */
static int peek_line(FILE *f, char **line, size_t *cap, int skip)
{
    ssize_t len;
    int found = 0;
    while ((len = getline(line, cap, f)) >= 0)
        if (trim_line(*line, len) && skip-- == 0) {
            found = 1;
            break;
        }
    rewind(f);
    return found;
}

int trace_reader_format_guess(const char *path, Err *e)
{
    const char *dot = strrchr(path, '.');
    const char *ext = dot && !strchr(dot, '/') ? dot + 1 : "";
    if (!strcmp(ext, "json")) return TRACE_JSON;
    if (strcmp(ext, "csv") && strcmp(ext, "jsonl"))
        return err_set(e, "%s: cannot tell the trace format from the extension \"%s\"; expected .csv (azure or "
                          "csv), .jsonl (mooncake or json lines) or .json, or give the format (azure, mooncake, "
                          "csv, json)", path, ext);
    FILE *f = fopen(path, "r");
    if (!f) return err_set(e, "%s: cannot open: %s", path, strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    int found = peek_line(f, &line, &cap, 0);
    fclose(f);
    int fmt;
    if (!strcmp(ext, "csv")) fmt = found && !strncmp(first_text(line), AZURE_HEADER, strlen(AZURE_HEADER)) ? TRACE_AZURE
                                                                                                     : TRACE_CSV;
    else fmt = found && strstr(line, "\"input_length\"") ? TRACE_MOONCAKE : TRACE_JSON;
    free(line);
    return fmt;
}

/* A pretty-printed JSON document (a lone "{" or "[" then "{" line) cannot be
 * read a line at a time: it is parsed whole. */
static int open_doc(TraceReader *tr, Err *e)
{
    if (!peek_line(tr->f, &tr->line, &tr->line_cap, 0)) return 0;
    const char *t = first_text(tr->line);
    int whole = !strcmp(t, "{");
    if (!strcmp(t, "[") && peek_line(tr->f, &tr->line, &tr->line_cap, 1)) whole = !strcmp(first_text(tr->line), "{");
    if (!whole) return 0;
    char *text = read_file(tr->path, NULL, e);
    if (!text) return -1;
    tr->doc = jsonio_parse(text, tr->path, e);
    free(text);
    if (!tr->doc) return -1;
    const cJSON *arr = tr->doc;
    if (cJSON_IsObject(tr->doc)) {
        static const char *const keys[] = {"requests", NULL};
        if (jsonio_check_keys(tr->doc, tr->path, keys, e) < 0) return -1;
        arr = cJSON_GetObjectItemCaseSensitive(tr->doc, "requests");
        if (!arr) return err_set(e, "%s: missing key \"requests\"", tr->path);
    }
    if (jsonio_expect_array(arr, cJSON_IsObject(tr->doc) ? "requests" : tr->path, e) < 0)
        return err_prefix(e, "%s", tr->path);
    tr->doc_item = arr->child;
    return 0;
}

TraceReader *trace_reader_open(const char *path, TraceFormat fmt, int skip_bad, Err *e)
{
    if ((int)fmt < 0 || fmt >= TRACE_FORMAT_COUNT) {
        err_set(e, "%s: unknown trace format %d", path, (int)fmt);
        return NULL;
    }
    FILE *f = fopen(path, "r");
    if (!f) {
        err_set(e, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    TraceReader *tr = xcalloc(1, sizeof *tr);
    tr->f = f;
    snprintf(tr->path, sizeof tr->path, "%s", path);
    tr->fmt = fmt;
    tr->skip_bad = skip_bad;
    for (int k = 0; k < TRACE_CSV_NCOLS; k++) tr->col[k] = -1;
    if (fmt == TRACE_JSON && open_doc(tr, e) < 0) {
        trace_reader_close(tr);
        return NULL;
    }
    return tr;
}

void trace_reader_close(TraceReader *tr)
{
    if (!tr) return;
    if (tr->f) fclose(tr->f);
    free(tr->line);
    cJSON_Delete(tr->cur);
    cJSON_Delete(tr->doc);
    trace_json_idbuf_free(&tr->ids);
    free(tr);
}

uint64_t trace_reader_skipped(const TraceReader *tr) { return tr->skipped; }
const char *trace_reader_first_skip(const TraceReader *tr) { return tr->first_skip; }
int trace_reader_sorted(const TraceReader *tr) { return tr->fmt != TRACE_JSON; }

void trace_reader_record_defaults(TraceRecord *rec, uint64_t line)
{
    memset(rec, 0, sizeof *rec);
    rec->line = line;
    rec->has_arrival = 1;
    rec->deadline_ns = -1;
    rec->correct = -1;
    rec->hash_block_tokens = 512;
    rec->n_samples = 1;
}

/* A malformed record: fail, or count it and keep its message if first. */
static int bad_record(TraceReader *tr, Err *le, Err *e)
{
    if (!tr->skip_bad) {
        *e = *le;
        return -1;
    }
    if (!tr->skipped++) {
        /* the first message, cut to fit */
        size_t len = strlen(le->msg);
        if (len >= sizeof tr->first_skip) len = sizeof tr->first_skip - 1;
        memcpy(tr->first_skip, le->msg, len);
        tr->first_skip[len] = '\0';
    }
    return 0;
}

static int doc_next(TraceReader *tr, TraceRecord *rec, Err *e)
{
    while (tr->doc_item) {
        const cJSON *it = tr->doc_item;
        tr->doc_item = it->next;
        int i = tr->doc_index++;
        char base[1100];
        snprintf(base, sizeof base, "%s: requests", tr->path);
        jsonio_index(tr->where, sizeof tr->where, base, i);
        trace_reader_record_defaults(rec, 0);
        Err le = {{0}};
        if (trace_json_record(it, tr->where, &tr->ids, rec, &le) < 0) {
            if (bad_record(tr, &le, e) < 0) return -1;
            continue;
        }
        rec->ordinal = tr->ordinal++;
        return 1;
    }
    return 0;
}

int trace_reader_next(TraceReader *tr, TraceRecord *rec, Err *e)
{
    if (tr->doc) return doc_next(tr, rec, e);
    ssize_t len;
    while ((len = getline(&tr->line, &tr->line_cap, tr->f)) >= 0) {
        tr->lineno++;
        if (!trim_line(tr->line, len)) continue;
        Err le = {{0}};
        if (!tr->n_cols && (tr->fmt == TRACE_AZURE || tr->fmt == TRACE_CSV)) {
            int rc = tr->fmt == TRACE_AZURE ? trace_azure_header(tr, tr->line, &le)
                                            : trace_csv_header(tr, tr->line, &le);
            if (rc < 0) return err_set(e, "%s:%llu: %s", tr->path, (unsigned long long)tr->lineno, le.msg);
            continue;
        }
        trace_reader_record_defaults(rec, tr->lineno);
        int rc;
        switch (tr->fmt) {
        case TRACE_AZURE: rc = trace_azure_parse(tr, tr->line, rec, &le); break;
        case TRACE_MOONCAKE: rc = trace_mooncake_parse(tr, tr->line, rec, &le); break;
        case TRACE_CSV: rc = trace_csv_parse(tr, tr->line, rec, &le); break;
        default: rc = trace_json_parse(tr, tr->line, rec, &le); break;
        }
        if (rc == 0 && tr->fmt == TRACE_JSON) continue; /* list punctuation */
        if (rc >= 0 && trace_reader_sorted(tr) && tr->have_last && rec->t_ns < tr->last_t_ns) {
            err_set(&le, "timestamp goes backwards: %.6f s is %.6f s before line %llu's (a trace must be in arrival "
                         "order)", (double)(rec->t_ns - (tr->have_t0 ? tr->t0_ns : 0)) / 1e9,
                    (double)(tr->last_t_ns - rec->t_ns) / 1e9, (unsigned long long)tr->last_line);
            rc = -1;
        }
        if (rc < 0) {
            Err full;
            err_set(&full, "%s:%llu: %s", tr->path, (unsigned long long)tr->lineno, le.msg);
            if (bad_record(tr, &full, e) < 0) return -1;
            continue;
        }
        if (trace_reader_sorted(tr)) {
            tr->have_last = 1;
            tr->last_t_ns = rec->t_ns;
            tr->last_line = tr->lineno;
        }
        if (tr->fmt == TRACE_AZURE) {
            if (!tr->have_t0) {
                tr->have_t0 = 1;
                tr->t0_ns = rec->t_ns;
            }
            rec->t_ns -= tr->t0_ns;
        }
        rec->ordinal = tr->ordinal++;
        return 1;
    }
    if (ferror(tr->f)) return err_set(e, "%s:%llu: read error: %s", tr->path, (unsigned long long)tr->lineno + 1,
                                      strerror(errno));
    if (!tr->n_cols && (tr->fmt == TRACE_AZURE || tr->fmt == TRACE_CSV))
        return err_set(e, "%s: empty file; expected a header line%s", tr->path,
                       tr->fmt == TRACE_AZURE ? " " AZURE_HEADER : "");
    return 0;
}
