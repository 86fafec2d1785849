/*
 * streamrun.h -- a run of a scenario (issues 16, 36): `servesim run`,
 * `servesim bench`, each run of a sweep or a plan (planner/sweep.c
 * sweep_run_text), validate's, reproduce's and Lua's.  The workload (a
 * generator, sessions, a closed loop, a trace, a list) is pulled as simulated
 * time reaches it; every request is folded into the metrics accumulators
 * as it leaves, its CSV row, token rows and JSON element handed to an
 * ordered writer (sim/ordw.h: written in workload order, held back in
 * bounded memory and spilled to disk), and its record reused: memory
 * follows the requests in flight, not the workload's length.
 */
#ifndef SERVESIM_STREAMRUN_H
#define SERVESIM_STREAMRUN_H

#include <cjson/cJSON.h>

#include "cluster.h"
#include "metrics.h"
#include "ordw.h"
#include "outfile.h"
#include "report.h"
#include "scenario.h"
#include "tasks.h"
#include "timeline.h"

/* What a streamed run writes as requests leave (every entry optional). */
typedef struct StreamOutputs {
    const char *csv;        /* per-request rows (report_requests_csv's file) */
    const char *tokens_csv; /* every token's time (report_tokens_csv's file) */
    const char *iter_csv;   /* every iteration (report_iterations_csv's file; one replica) */
    int iter_keep;          /* the same rows kept for streamrun_write_iterations (html.h's
                             * DIR/iterations.csv), where a run of one replica keeps its iterations */
    int vllm;               /* keep the vLLM file's per-request arrays for streamrun_write_vllm */
    int json_requests;      /* keep the JSON "requests" array for streamrun_write_json */
    size_t mem_limit;       /* the ordered writers' memory before a spill (0: ORDW_MEM_DEFAULT) */
    const char *window;     /* --window-ms T0,T1 (mcfg_parse_window_arg), or NULL */
    const char *trace;      /* --trace-events FILE (timeline.h), written as the run goes ... */
    TimelineOpts trace_opts;/* ... narrowed (its lanes: trace_ids) */
    const char *trace_ids;  /* --trace-ids ID[,ID...]: lanes for those requests only (found by a first pass) */
    /* called with the loaded scenario before anything is built from it (a
     * caller's override: reproduce's cost model); may be NULL */
    void (*adjust)(Scenario *s, void *ctx);
    void *adjust_ctx;
} StreamOutputs;

typedef struct StreamRun {
    Scenario s;
    Slo slo_table[METRICS_CLS_MAX];
    MetricsCfg mc;
    MetricsAcc acc;
    StatAcc itl;
    Summary sum;
    Engine *eng;                 /* one replica, or NULL ... */
    Cluster *cl;                 /* ... several (cluster.h): the router takes the stream */
    OutFile csv_o, tok_o, iter_o;
    FILE *iter;                  /* --iterations-csv, written as iterations end (NULL: not written) */
    FILE *iter_kept;             /* StreamOutputs.iter_keep: the same rows in a temporary file (NULL: none) */
    Ordw vl_w[REPORT_VLLM_ARRAYS];  /* the vLLM file's per-request arrays, in workload order ... */
    FILE *vl_body[REPORT_VLLM_ARRAYS]; /* ... into temporary files (NULL: not kept) */
    uint64_t n_iter_rows;
    Ordw csv_w, tok_w, json_w;
    FILE *csv, *tok, *json_body; /* NULL: not written */
    FILE *ms;                    /* one record's text (open_memstream) */
    char *ms_buf;
    size_t ms_len;
    Err werr;                    /* the first error of a writer (retire cannot return one) */
    int wfailed;
    uint64_t requests;           /* pulled from the stream */
    uint32_t peak_live;          /* most request records held at once */
    const EngineStats *rst[1];   /* the report's one replica row */
    StatAcc mfu, mbu;            /* per iteration, as metrics_summarize takes them from iteration records */
    uint32_t served;
    uint64_t rejected_kv;        /* requests rejected as longer than the whole KV pool */
    /* With per-token times kept, a materialised run takes ITL from them in
     * workload order (metrics.c): the gaps of requests retired ahead of an
     * earlier one wait here (by seq - itl_base in a ring) so that r->itl
     * takes them in that order and the sketch's sums round alike. */
    struct StreamGaps *gaps;
    uint64_t itl_base;
    uint32_t gaps_cap;
    int itl_ordered;
    TaskAcc tasks;               /* chains (sessions): tasks folded in order as their links leave */
    int chains;
    FILE *tasks_body;            /* the JSON "tasks" rows (with json_requests), in task order */
    uint64_t n_task_rows;
    Timeline *tl;                /* --trace-events, or NULL */
} StreamRun;

/* Loads (path, or text when path is NULL; name for messages), runs and
 * summarises; o may be NULL (no outputs).  0, or -1 with a message; r must
 * be freed with streamrun_free either way. */
int streamrun(StreamRun *r, const char *path, const char *text, const char *name, int has_seed, uint64_t seed,
              int exact_stats, const StreamOutputs *o, Err *e);
void streamrun_free(StreamRun *r);
/* The RunData a report needs from a finished streamed run: no requests,
 * the engine's (or cluster's) statistics, the replicas' rows and the KV
 * capacity. */
void streamrun_rundata(const StreamRun *r, RunData *rd);
/* Writes root (a report_json tree) to path with the run's requests as its
 * "requests" array, where root holds the raw placeholder
 * STREAMRUN_REQUESTS_RAW under that key: the same bytes as the
 * materialised report. */
#define STREAMRUN_REQUESTS_RAW "@"
/* ... and "tasks" (chains: summary.tasks.has_tasks) under this one. */
#define STREAMRUN_TASKS_RAW "@t"
int streamrun_write_json(StreamRun *r, const cJSON *root, const char *path, Err *e);
/* The report tree `servesim run --json` writes: the run's report_json, the
 * requests' (and tasks') placeholders when with_requests, band's error band
 * (NULL: none) and the scenario, in that order. */
cJSON *streamrun_report(const StreamRun *r, const ErrBand *band, int with_requests);
/* The same report as a tree (for a caller that hands it on whole: Lua's
 * servesim.run, reproduce); NULL + e. */
cJSON *streamrun_json(StreamRun *r, const cJSON *root, Err *e);
/* Writes the vLLM benchmark file (report_vllm_json's bytes) of a run made
 * with StreamOutputs.vllm. */
int streamrun_write_vllm(StreamRun *r, const char *path, Err *e);
/* Writes the iterations kept (StreamOutputs.iter_keep; r->iter_kept not
 * NULL) to path: report_iterations_csv's bytes. */
int streamrun_write_iterations(StreamRun *r, const char *path, Err *e);

/* One run's summary, no outputs: what a sweep, a plan, validate,
 * reproduce, bench and Lua's servesim.run take.  s, mc, rd and sum are
 * the run's, valid until run_summary_free (which frees it either way). */
typedef struct RunSummary {
    const Scenario *s;
    const MetricsCfg *mc;
    RunData rd;
    const Summary *sum;
    uint64_t rejected_kv;        /* requests rejected as longer than the whole KV pool */
    StreamRun *sr;               /* the run */
} RunSummary;
int run_summary(RunSummary *o, const char *path, const char *text, const char *name, int has_seed, uint64_t seed,
                int exact_stats, Err *e);
void run_summary_free(RunSummary *o);

#endif
