/*
 * trace_fmt.h -- the table entry each trace format registers with the
 * reader (trace_reader.c): a function table with optional entries marked,
 * plus a per-reader state the format owns.  Not for other modules: they
 * use trace_reader.h.
 *
 * The reader owns the file, the line buffer, line numbers, the arrival
 * order check, the azure-style rebasing of absolute times and the
 * stop/skip policy; a format owns the parsing of one line (or of a whole
 * document) and whatever it keeps between lines.  A parser gets one line
 * (NUL-terminated, newline and '\r' stripped, not blank, rec->line its
 * 1-based number, the rest of rec at trace_record_defaults) and returns
 * 1 with the record filled, 0 when the line holds no record, or -1 with a
 * message that names the column or key, the value and what was expected
 * -- without the "FILE:LINE: " prefix, which the reader adds.
 *
 * Formats: trace_fmt_azure (trace_azure.c), trace_fmt_mooncake
 * (trace_mooncake.c), trace_fmt_csv (trace_csv.c), trace_fmt_json
 * (trace_json.c).
 */
#ifndef SERVESIM_TRACE_FMT_H
#define SERVESIM_TRACE_FMT_H

#include <stdio.h>

#include "common.h"
#include "trace_record.h"

typedef struct TraceFormatOps {
    const char *name;           /* as in a scenario's "format" and --format */
    const char *const *exts;    /* NULL-terminated file extensions the format may have ("csv") */
    /* optional: 1 when a file's first non-blank line is this format's; a
     * format without it is the fallback for its extensions */
    int (*sniff)(const char *first_line);
    int sorted;                 /* 1: records must come in arrival order (checked by the reader) */
    int rebase;                 /* 1: times are absolute; the reader makes them offsets from the
                                 * first valid record's */
    /* optional: per-reader state (NULL when the format keeps none) */
    void *(*state_new)(const char *path);
    void (*state_free)(void *st);
    /* optional: called once the file is open; 1 = the format reads the
     * whole document through next_doc, 0 = line by line, -1 = error (e) */
    int (*open)(void *st, FILE *f, Err *e);
    /* optional: parses the first non-blank line as a header; 0 or -1 */
    int (*header)(void *st, char *line, Err *e);
    const char *header_hint;    /* with header: appended to "expected a header line" ("" = nothing) */
    int (*parse)(void *st, char *line, TraceRecord *rec, Err *e);
    /* with open: the next record of the document: 1, 0 at its end, or -1
     * with a complete message for one malformed record (it is passed) */
    int (*next_doc)(void *st, TraceRecord *rec, Err *e);
    /* optional, line by line: called at the end of the file; 0, or -1 with
     * a complete message (a request list never closed: a truncated file) */
    int (*finish)(void *st, Err *e);
} TraceFormatOps;

extern const TraceFormatOps trace_fmt_azure;
extern const TraceFormatOps trace_fmt_mooncake;
extern const TraceFormatOps trace_fmt_csv;
extern const TraceFormatOps trace_fmt_json;

#endif
