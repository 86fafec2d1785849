/*
 * trace_json.h -- one request object of our request-list format, shared by
 * the json trace format (trace_json.c) and a scenario's inline list
 * (trace_load.c).  The keys are listed in trace_json.c.
 */
#ifndef SERVESIM_TRACE_JSON_H
#define SERVESIM_TRACE_JSON_H

#include <cjson/cJSON.h>

#include "common.h"
#include "trace_record.h"

/* Fills rec (at trace_record_defaults) from obj and returns 1, or -1 with
 * a message: `where` names the object ("s.json: workload.requests[3]" or
 * "f.json:7").  Id arrays go to buf, which the caller frees with
 * trace_record_idbuf_free. */
int trace_json_record(const cJSON *obj, const char *where, TraceIdBuf *buf, TraceRecord *rec, Err *e);

#endif
