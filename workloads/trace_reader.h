/*
 * trace_reader.h -- streaming readers of request traces: one record at a
 * time, constant memory in the trace's length (getline over the file; only
 * the current line and its parsed values are held).
 *
 * Formats:
 *   azure     Azure LLM inference 2023 CSV: header TIMESTAMP,ContextTokens,
 *             GeneratedTokens; absolute timestamps "2023-11-16 18:15:46.6805900";
 *             the arrival is the offset from the first record's timestamp
 *   mooncake  JSON lines {"timestamp": ms, "input_length", "output_length",
 *             "hash_ids": [...]} (one hash per 512-token prefix block);
 *             other keys are ignored (the format is someone else's)
 *   csv       a header naming the columns: arrival_ms or arrival_s,
 *             prompt_tokens, output_tokens; optional id, tenant, class,
 *             session, priority, deadline_ms, correct, max_output_tokens
 *   json      our request list: {"requests": [ one object per line ]} as
 *             `servesim workload --out` writes it, or JSON lines; a
 *             pretty-printed document is read whole (the only non-streaming
 *             case)
 * Records of azure, mooncake and csv must come in arrival order: a
 * timestamp going backwards is a malformed line.  A malformed line is
 * reported as "FILE:LINE: what: got VALUE, expected WHAT"; with skip_bad it
 * is counted and skipped instead (the first message is kept).
 */
#ifndef SERVESIM_TRACE_READER_H
#define SERVESIM_TRACE_READER_H

#include <stdint.h>

#include "common.h"

typedef enum { TRACE_AZURE = 0, TRACE_MOONCAKE, TRACE_CSV, TRACE_JSON, TRACE_FORMAT_COUNT } TraceFormat;

extern const char *const trace_reader_format_names[]; /* NULL-terminated, indexed by TraceFormat */

/* One request as read.  Strings and arrays point into the reader and are
 * valid until the next trace_reader_next call. */
typedef struct TraceRecord {
    uint64_t line;              /* line in the file (1-based); 0 when read from a whole document */
    uint64_t ordinal;           /* 0-based index among the file's valid records */
    int has_arrival;            /* 0: a triggered request ("after") */
    int64_t t_ns;               /* arrival (see the formats above) */
    int64_t prompt_tokens;      /* >= 0 as read (0 is possible in third-party traces) */
    int64_t output_tokens;      /* >= 0 as read */
    int64_t max_output_tokens;  /* 0 = not given */
    const char *id, *tenant, *cls, *session, *after; /* NULL = not given */
    uint32_t shared_prefix_tokens;
    int32_t priority;
    int64_t deadline_ns;        /* relative to the arrival, -1 = none */
    int8_t correct;             /* -1 unknown, 0, 1 */
    int64_t think_ns;           /* with "after": the delay after the predecessor leaves */
    const uint32_t *token_ids;
    uint32_t n_token_ids;
    const uint64_t *hash_ids;
    uint32_t n_hash_ids;
    uint32_t hash_block_tokens;
    uint32_t n_samples;         /* parallel sampling branches (1 = none) */
} TraceRecord;

typedef struct TraceReader TraceReader;

/* Opens path (already resolved).  skip_bad: skip malformed lines and count
 * them instead of failing. */
TraceReader *trace_reader_open(const char *path, TraceFormat fmt, int skip_bad, Err *e);
/* 1: *rec holds the next record; 0: end of file; -1: error (e says where). */
int trace_reader_next(TraceReader *tr, TraceRecord *rec, Err *e);
void trace_reader_close(TraceReader *tr);

uint64_t trace_reader_skipped(const TraceReader *tr);
/* The first skipped line's message ("" when none). */
const char *trace_reader_first_skip(const TraceReader *tr);
/* 1 when the format guarantees arrival order (a window may stop early). */
int trace_reader_sorted(const TraceReader *tr);

/* A record's defaults: arrival given, no deadline, correctness unknown,
 * 512-token hash blocks. */
void trace_reader_record_defaults(TraceRecord *rec, uint64_t line);

/* "azure" -> TRACE_AZURE; -1 when unknown. */
int trace_reader_format_parse(const char *name);
/* By extension, and for .csv/.jsonl by the first line: -1 + message when
 * it cannot tell. */
int trace_reader_format_guess(const char *path, Err *e);

#endif
