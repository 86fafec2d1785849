/*
 * trace_impl.h -- the reader's state shared by trace_reader.c and the
 * per-format line parsers (trace_azure.c, trace_mooncake.c, trace_csv.c,
 * trace_json.c).  Not for other modules: they use trace_reader.h.
 *
 * A parser gets one line (NUL-terminated, newline and '\r' stripped, not
 * blank), fills the record and returns 0, or returns -1 with a message that
 * names the column or key, the value and what was expected -- without the
 * "FILE:LINE: " prefix, which the reader adds.
 */
#ifndef SERVESIM_TRACE_IMPL_H
#define SERVESIM_TRACE_IMPL_H

#include <cjson/cJSON.h>
#include <stdio.h>

#include "trace_reader.h"

enum {
    TRACE_CSV_ID = 0, TRACE_CSV_ARRIVAL_MS, TRACE_CSV_ARRIVAL_S, TRACE_CSV_PROMPT, TRACE_CSV_OUTPUT,
    TRACE_CSV_MAX_OUTPUT, TRACE_CSV_TENANT, TRACE_CSV_CLASS, TRACE_CSV_SESSION, TRACE_CSV_PRIORITY,
    TRACE_CSV_DEADLINE_MS, TRACE_CSV_CORRECT, TRACE_CSV_NCOLS
};

#define TRACE_CSV_MAX_FIELDS 64
#define TRACE_LEN_MAX 10000000 /* tokens per request: beyond any context we model */

/* Reusable id buffers of the JSON-based parsers (amortised growth). */
typedef struct TraceIdBuf {
    uint32_t *tok;
    uint32_t tok_cap;
    uint64_t *hash;
    uint32_t hash_cap;
} TraceIdBuf;

struct TraceReader {
    FILE *f;
    char path[1024];
    TraceFormat fmt;
    int skip_bad;
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
    /* azure: the first valid record's absolute time */
    int have_t0;
    int64_t t0_ns;
    /* csv: column of each field (-1 = absent), the header's column count */
    int col[TRACE_CSV_NCOLS];
    int n_cols;
    char header[512];
    /* json and mooncake: the current line's tree (freed on the next line) */
    cJSON *cur;
    TraceIdBuf ids;
    /* json read as a whole document (pretty-printed files) */
    cJSON *doc;
    const cJSON *doc_item;
    int doc_index;
    char where[1200];           /* scratch for key paths */
};

int trace_azure_header(TraceReader *tr, char *line, Err *e);
int trace_azure_parse(TraceReader *tr, char *line, TraceRecord *rec, Err *e);
int trace_mooncake_parse(TraceReader *tr, char *line, TraceRecord *rec, Err *e);
/* Splits a CSV line in place at commas (no quoted commas), trimming blanks
 * and surrounding double quotes; returns the field count (at most max; one
 * more than max means "too many"). */
int trace_csv_split(char *line, char **fields, int max);
int trace_csv_header(TraceReader *tr, char *line, Err *e);
int trace_csv_parse(TraceReader *tr, char *line, TraceRecord *rec, Err *e);
/* Line layout: 1 = a record was parsed, 0 = the line is list punctuation
 * ("{"requests": [", "]}", ...), -1 = malformed. */
int trace_json_parse(TraceReader *tr, char *line, TraceRecord *rec, Err *e);
/* One request object of our list format, also used for a scenario's inline
 * list: `where` names it ("s.json: workload.requests[3]" or "f.json:7"). */
int trace_json_record(const cJSON *obj, const char *where, TraceIdBuf *buf, TraceRecord *rec, Err *e);
void trace_json_idbuf_free(TraceIdBuf *b);

/* A line cut to a readable length for messages. */
const char *trace_reader_excerpt(const char *line, char *buf, size_t n);
/* Strict number parsing of a whole field: 0 ok, -1 not a number. */
int trace_reader_parse_i64(const char *s, int64_t *out);
int trace_reader_parse_f64(const char *s, double *out);

#endif
