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
 *             session, priority, deadline_ms, correct, max_output_tokens,
 *             cancel_after_ms
 *   json      our request list: {"requests": [ one object per line ]} as
 *             `servesim workload --out` writes it, or JSON lines; a
 *             pretty-printed document is read whole (the only non-streaming
 *             case)
 * Records of azure, mooncake and csv must come in arrival order: a
 * timestamp going backwards is a malformed line.  A malformed line is
 * reported as "FILE:LINE: what: got VALUE, expected WHAT"; with skip_bad it
 * is counted and skipped instead (the first message is kept).
 *
 * Each format is one entry of the reader's table (trace_fmt.h); records
 * are TraceRecords (trace_record.h).
 */
#ifndef SERVESIM_TRACE_READER_H
#define SERVESIM_TRACE_READER_H

#include <stdint.h>

#include "common.h"
#include "trace_record.h"

typedef enum { TRACE_AZURE = 0, TRACE_MOONCAKE, TRACE_CSV, TRACE_JSON, TRACE_FORMAT_COUNT } TraceFormat;

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

/* "azure" -> TRACE_AZURE; -1 when unknown. */
int trace_reader_format_parse(const char *name);
/* TRACE_AZURE -> "azure". */
const char *trace_reader_format_name(TraceFormat fmt);
/* By extension, and for .csv/.jsonl by the first line: -1 + message when
 * it cannot tell. */
int trace_reader_format_guess(const char *path, Err *e);

#endif
