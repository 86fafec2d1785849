/*
 * trace_record.h -- one request as read from a trace or a request list,
 * before it becomes a Request: what the reader (trace_reader.c), the format
 * parsers (trace_azure.c, trace_mooncake.c, trace_csv.c, trace_json.c) and
 * the workload source (trace_load.c) pass between them.  Includes none of
 * them.
 */
#ifndef SERVESIM_TRACE_RECORD_H
#define SERVESIM_TRACE_RECORD_H

#include <stdint.h>

#define TRACE_LEN_MAX 10000000 /* tokens per request: beyond any context we model */

/* One request as read.  Strings and arrays point into the reader (or the
 * parsed JSON and its TraceIdBuf) and are valid until the next record is
 * read. */
typedef struct TraceRecord {
    uint64_t line;              /* line in the file (1-based); 0 when read from a whole document */
    uint64_t ordinal;           /* 0-based index among the file's valid records */
    int has_arrival;            /* 0: a triggered request ("after") */
    int64_t t_ns;               /* arrival (see trace_reader.h for each format's) */
    int64_t prompt_tokens;      /* >= 0 as read (0 is possible in third-party traces) */
    int64_t output_tokens;      /* >= 0 as read */
    int64_t max_output_tokens;  /* 0 = not given */
    const char *id, *tenant, *cls, *session, *after; /* NULL = not given */
    uint32_t shared_prefix_tokens;
    int32_t priority;
    int64_t deadline_ns;        /* relative to the arrival, -1 = none */
    int8_t correct;             /* -1 unknown, 0, 1 */
    int64_t think_ns;           /* with "after": the delay after the predecessor leaves */
    int64_t cancel_after_ns;    /* the client cancels this long after the arrival; 0 = never */
    const uint32_t *token_ids;
    uint32_t n_token_ids;
    const uint64_t *hash_ids;
    uint32_t n_hash_ids;
    uint32_t hash_block_tokens;
    uint32_t n_samples;         /* parallel sampling branches (1 = none) */
    uint32_t adapter;           /* LoRA adapter id, 0 = none given (the base model) */
} TraceRecord;

/* Reusable id buffers of the JSON-based parsers (amortised growth); the
 * record's token_ids / hash_ids point into them. */
typedef struct TraceIdBuf {
    uint32_t *tok;
    uint32_t tok_cap;
    uint64_t *hash;
    uint32_t hash_cap;
} TraceIdBuf;

/* A record's defaults: arrival given, no deadline, correctness unknown,
 * 512-token hash blocks, one sample. */
void trace_record_defaults(TraceRecord *rec, uint64_t line);
void trace_record_idbuf_free(TraceIdBuf *b);

#endif
