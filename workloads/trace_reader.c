/*
 * trace_reader.c -- the streaming trace iterator (see trace_reader.h):
 * reads a line at a time with getline, hands it to the format's parser
 * (one entry of `formats`, trace_fmt.h), checks arrival order, prefixes
 * messages with "FILE:LINE: " and applies the stop/skip policy.
 *
 * Invariants: at most one line is held here and at most one parsed JSON
 * tree in the format's state at a time; a rebasing format's absolute time
 * becomes an offset from the first valid record's; line numbers count
 * every physical line, blank ones included.  This file knows no format by
 * name: what differs between formats is in their table entries.
 */
#include "trace_reader.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "trace_fmt.h"
#include "trace_text.h"

/* Indexed by TraceFormat. */
static const TraceFormatOps *const formats[TRACE_FORMAT_COUNT] = {
    [TRACE_AZURE] = &trace_fmt_azure,
    [TRACE_MOONCAKE] = &trace_fmt_mooncake,
    [TRACE_CSV] = &trace_fmt_csv,
    [TRACE_JSON] = &trace_fmt_json,
};

struct TraceReader {
    FILE *f;
    char path[1024];
    const TraceFormatOps *ops;
    void *st;                   /* the format's state (NULL when it keeps none) */
    int skip_bad;
    int whole_doc;              /* the format reads the document through next_doc */
    int have_header;
    char *line;
    size_t line_cap;
    uint64_t lineno;
    uint64_t ordinal;
    uint64_t skipped;
    char first_skip[256];
    /* order check */
    int have_last;
    int64_t last_t_ns;
    uint64_t last_line;
    /* rebasing formats: the first valid record's absolute time */
    int have_t0;
    int64_t t0_ns;
    size_t max_line;            /* common_max_line_bytes when opened */
};

int trace_reader_format_parse(const char *name)
{
    for (int k = 0; k < TRACE_FORMAT_COUNT; k++)
        if (!strcmp(name, formats[k]->name)) return k;
    return -1;
}

const char *trace_reader_format_name(TraceFormat fmt)
{
    return (int)fmt >= 0 && fmt < TRACE_FORMAT_COUNT ? formats[fmt]->name : "?";
}

static int has_ext(const TraceFormatOps *ops, const char *ext)
{
    for (const char *const *x = ops->exts; x && *x; x++)
        if (!strcmp(*x, ext)) return 1;
    return 0;
}

/* The formats with this extension, in table order, each with a sniff
 * until a fallback: the first whose sniff accepts the first line, else
 * the fallback.  A lone fallback needs no look into the file. */
int trace_reader_format_guess(const char *path, Err *e)
{
    const char *dot = strrchr(path, '.');
    const char *ext = dot && !strchr(dot, '/') ? dot + 1 : "";
    int first = -1;
    for (int k = 0; k < TRACE_FORMAT_COUNT && first < 0; k++)
        if (has_ext(formats[k], ext)) first = k;
    if (first < 0)
        return err_set(e, "%s: cannot tell the trace format from the extension \"%s\"; expected .csv (azure or "
                          "csv), .jsonl (mooncake or json lines) or .json, or give the format (azure, mooncake, "
                          "csv, json)", path, ext);
    if (!formats[first]->sniff) return first;
    FILE *f = common_open_input(path, "r", e);
    if (!f) return -1;
    char *line = NULL;
    size_t cap = 0;
    int found = trace_text_peek_line(f, &line, &cap, 0);
    fclose(f);
    int fmt = -1;
    for (int k = first; k < TRACE_FORMAT_COUNT && fmt < 0; k++) {
        if (!has_ext(formats[k], ext)) continue;
        if (!formats[k]->sniff || (found && formats[k]->sniff(line))) fmt = k;
    }
    free(line);
    if (fmt < 0) return err_set(e, "%s: cannot tell the trace format from the first line; give the format (azure, "
                                   "mooncake, csv, json)", path);
    return fmt;
}

TraceReader *trace_reader_open(const char *path, TraceFormat fmt, int skip_bad, Err *e)
{
    if ((int)fmt < 0 || fmt >= TRACE_FORMAT_COUNT) {
        err_set(e, "%s: unknown trace format %d", path, (int)fmt);
        return NULL;
    }
    FILE *f = common_open_input(path, "r", e);
    if (!f) return NULL;
    TraceReader *tr = xcalloc(1, sizeof *tr);
    tr->f = f;
    tr->max_line = common_max_line_bytes();
    snprintf(tr->path, sizeof tr->path, "%s", path);
    tr->ops = formats[fmt];
    tr->skip_bad = skip_bad;
    if (tr->ops->state_new) tr->st = tr->ops->state_new(tr->path);
    if (tr->ops->open) {
        int rc = tr->ops->open(tr->st, tr->f, e);
        if (rc < 0) {
            trace_reader_close(tr);
            return NULL;
        }
        tr->whole_doc = rc;
    }
    return tr;
}

void trace_reader_close(TraceReader *tr)
{
    if (!tr) return;
    if (tr->f) fclose(tr->f);
    free(tr->line);
    if (tr->ops->state_free) tr->ops->state_free(tr->st);
    free(tr);
}

uint64_t trace_reader_skipped(const TraceReader *tr) { return tr->skipped; }
const char *trace_reader_first_skip(const TraceReader *tr) { return tr->first_skip; }
int trace_reader_sorted(const TraceReader *tr) { return tr->ops->sorted; }

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
    for (;;) {
        trace_record_defaults(rec, 0);
        Err le = {0};
        int rc = tr->ops->next_doc(tr->st, rec, &le);
        if (rc == 0) return 0;
        if (rc < 0) {
            if (bad_record(tr, &le, e) < 0) return -1;
            continue;
        }
        rec->ordinal = tr->ordinal++;
        return 1;
    }
}

int trace_reader_next(TraceReader *tr, TraceRecord *rec, Err *e)
{
    if (tr->whole_doc) return doc_next(tr, rec, e);
    const TraceFormatOps *ops = tr->ops;
    long len;
    for (;;) {
        len = common_read_line_at(tr->f, &tr->line, &tr->line_cap, tr->max_line, tr->path,
                                  (unsigned long long)tr->lineno + 1, e);
        if (len == -2) return -1;
        if (len < 0) break;
        tr->lineno++;
        if (!trace_text_trim(tr->line, (size_t)len)) continue;
        Err le; /* an empty message: a parser that fails fills it */
        le.msg[0] = '\0';
        if (ops->header && !tr->have_header) {
            if (ops->header(tr->st, tr->line, &le) < 0)
                return err_set(e, "%s:%llu: %s", tr->path, (unsigned long long)tr->lineno, le.msg);
            tr->have_header = 1;
            continue;
        }
        trace_record_defaults(rec, tr->lineno);
        int rc = ops->parse(tr->st, tr->line, rec, &le);
        if (rc == 0) continue; /* no record on this line (list punctuation) */
        if (rc > 0 && ops->sorted && tr->have_last && rec->t_ns < tr->last_t_ns) {
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
        if (ops->sorted) {
            tr->have_last = 1;
            tr->last_t_ns = rec->t_ns;
            tr->last_line = tr->lineno;
        }
        if (ops->rebase) {
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
    if (ops->header && !tr->have_header)
        return err_set(e, "%s: empty file; expected a header line%s", tr->path, ops->header_hint);
    if (ops->finish && ops->finish(tr->st, e) < 0) return -1;
    return 0;
}
