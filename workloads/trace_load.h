/*
 * trace_load.h -- request lists and trace files as workloads, with the
 * trace transforms:
 *
 *   {"requests": [...], ...transforms}                    inline list (strict)
 *   {"trace": PATH, "format": "azure"|"mooncake"|"csv"|"json",
 *    "on_error": "stop"|"skip", ...transforms}
 *
 * Transforms, applied in this order while streaming:
 *   "window_s": [t0, t1]   keep arrivals in [t0, t1) s of the trace and
 *                          shift them so t0 becomes 0
 *   "sample": f            keep each record with probability f (one uniform
 *                          per record in the window, stream WL_STREAM_SAMPLE)
 *   "limit": N             keep the first N records that pass the above
 * then per request:
 *   zero lengths           a prompt or output of 0 tokens becomes 1 (counted)
 *   "max_context": C       prompt + output > C: the output is cut to C - 1 if
 *                          longer, then the prompt to C - output (counted)
 *   "tenant", "class", "priority", "deadline_ms", "mix"   for records that
 *                          do not carry their own (gen_attr.h)
 * and after reading:
 *   "time_scale": x        every arrival times x (0.5 = twice the rate), or
 *   "rate_per_s": r        the factor that makes (n - 1) / (last - first) = r
 */
#ifndef SERVESIM_TRACE_LOAD_H
#define SERVESIM_TRACE_LOAD_H

#include "workload.h"

/* Both append to an initialised workload (workload_init); the caller
 * finishes it. */
int trace_load_list(const cJSON *wj, const char *where, const char *base_dir, uint64_t seed, Workload *w, Err *e);
int trace_load_file(const cJSON *wj, const char *where, const char *base_dir, uint64_t seed, Workload *w, Err *e);

#endif
