/*
 * streamrun.h -- a streamed run (issue 16): `servesim run --stream` and
 * `servesim bench`.  The workload (an open-loop generator or a sorted
 * trace file) is pulled as
 * simulated time reaches it, every request is folded into the metrics
 * accumulators (and written to the CSV, if asked) as it leaves, and then
 * freed: memory follows the requests in flight, not the workload's length.
 */
#ifndef SERVESIM_STREAMRUN_H
#define SERVESIM_STREAMRUN_H

#include "metrics.h"
#include "outfile.h"
#include "scenario.h"

typedef struct StreamRun {
    Scenario s;
    Slo slo_table[METRICS_CLS_MAX];
    MetricsCfg mc;
    MetricsAcc acc;
    StatAcc itl;
    Summary sum;
    Engine *eng;
    OutFile csv_o;
    FILE *csv;                 /* per-request rows, written as requests leave (NULL: none) */
    uint64_t requests;         /* pulled from the stream */
    uint32_t peak_live;        /* most request records held at once */
    const EngineStats *rst[1]; /* the report's one replica row */
    StatAcc mfu, mbu;          /* per iteration, as metrics_summarize takes them from iteration records */
    uint32_t served;
} StreamRun;

/* Loads (path, or text when path is NULL; name for messages), runs and
 * summarises; csv_path may be NULL.  0, or -1 with a message; r must be
 * freed with streamrun_free either way. */
int streamrun(StreamRun *r, const char *path, const char *text, const char *name, int has_seed, uint64_t seed,
              int exact_stats, const char *csv_path, Err *e);
void streamrun_free(StreamRun *r);
/* The RunData a report needs from a finished streamed run: no requests,
 * the engine's statistics and the KV capacity. */
void streamrun_rundata(const StreamRun *r, RunData *rd);

#endif
