/*
 * trace_record.c -- a trace record's defaults and its id buffers (see
 * trace_record.h).
 */
#include "trace_record.h"

#include <stdlib.h>
#include <string.h>

void trace_record_defaults(TraceRecord *rec, uint64_t line)
{
    memset(rec, 0, sizeof *rec);
    rec->line = line;
    rec->has_arrival = 1;
    rec->deadline_ns = -1;
    rec->correct = -1;
    rec->hash_block_tokens = 512;
    rec->n_samples = 1;
}

void trace_record_idbuf_free(TraceIdBuf *b)
{
    free(b->tok);
    free(b->hash);
    memset(b, 0, sizeof *b);
}
