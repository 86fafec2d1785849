/*
 * report.h -- what a run produces for people and tools.
 *
 *  - the JSON report: {"scenario": ..., "summary": ..., "requests": [...]}.
 *    Contract (keys may be added, never renamed): requests[] with id,
 *    arrival_s, token_times_s, ttft_s, tpot_s (null for one-token outputs),
 *    e2e_s, status, preemptions; summary with ttft_s, tpot_s, e2e_s as
 *    {count, mean, std, p50, p90, p95, p99, max}, throughput {window_s,
 *    output_tokens_per_s, requests_per_s}, goodput {requests_per_s,
 *    slo_attainment}, peak_running, kv {total_blocks, peak_used_blocks},
 *    iterations, cost {usd, usd_per_1k_output_tokens}; error_band (a run's
 *    engine's measured error, or null with error_band_note: errband.h);
 *  - the readable table;
 *  - per-request and per-iteration CSV;
 *  - a summary with the key names of vLLM's benchmark result files.
 */
#ifndef SERVESIM_REPORT_H
#define SERVESIM_REPORT_H

#include <stdio.h>

#include "metrics.h"
#include "scenario.h"

/* {"summary": ..., "requests": [...]} (requests only when with_requests). */
cJSON *report_json(const MetricsCfg *cfg, const RunData *rd, const Summary *sum, int with_requests);
/* The table; s may be NULL (a replay). */
void report_print(FILE *f, const Scenario *s, const MetricsCfg *cfg, const Summary *sum);
/* The same with the engine's measured error band after the metric table:
 * the mean TTFT and TPOT and the range the measured values likely fall in
 * (errband.h); band NULL: none shown. */
void report_print_band(FILE *f, const Scenario *s, const MetricsCfg *cfg, const Summary *sum, const ErrBand *band);
/* summary.error_band of a report_json tree: the band with the run's mean
 * TTFT and TPOT bounded, or null beside summary.error_band_note. */
void report_band_json(cJSON *root, const ErrBand *band, const Summary *sum);
const char *report_status_name(const Request *r);

int report_requests_csv(const char *path, const MetricsCfg *cfg, const RunData *rd, Err *e);
/* The same file a row at a time (a streamed run writes each request as it
 * leaves, put back in workload order by sim/ordw.h). */
void report_csv_header(FILE *f);
void report_csv_row(FILE *f, const MetricsCfg *cfg, const Request *r);
/* Every token's emission time, one row per token (id,token,time_s), in
 * request order; fails when the run kept no per-token times. */
int report_tokens_csv(const char *path, const RunData *rd, Err *e);
/* One request's rows of that file; tt: its times (tt[0 .. generated)). */
void report_tokens_rows(FILE *f, const Request *r, const int64_t *tt);
/* One element of report_json's "requests" array, as that prints it
 * (indented for its place; tt: the request's token times from its first,
 * or NULL): a malloc'd string in *text, its length returned. */
size_t report_request_json_text(const MetricsCfg *cfg, const Request *r, const int64_t *tt, char **text);
/* The same for one row of report_json's "tasks" array (tasks.h). */
size_t report_task_json_text(const TaskRow *t, const char *first_id, char **text);
int report_iterations_csv(const char *path, const MetricsCfg *cfg, const RunData *rd, Err *e);
/* Its header and its row k, for a writer that has the records one at a
 * time (a streamed run, sim/streamrun.c). */
void report_iterations_header(FILE *f);
void report_iteration_row(FILE *f, const MetricsCfg *cfg, uint64_t k, const IterRecord *it);
/* vLLM benchmark_serving result keys: duration, completed, total_input_tokens,
 * total_output_tokens, request_throughput, request_goodput, output_throughput,
 * total_token_throughput, {mean,median,std,p90,p95,p99}_{ttft,tpot,itl,e2el}_ms,
 * and the per-request input_lens, output_lens, ttfts, itls. */
cJSON *report_vllm_json(const MetricsCfg *cfg, const RunData *rd, const Summary *sum);
/* The same for a writer that has the requests one at a time (a streamed
 * run): the object without the per-request arrays, their keys in order,
 * and a finished request's element of each (as printed inside the file;
 * tt: its token times, or NULL; each text freed by the caller). */
#define REPORT_VLLM_ARRAYS 4
extern const char *const report_vllm_arrays[REPORT_VLLM_ARRAYS];
cJSON *report_vllm_head(const MetricsCfg *cfg, const Summary *sum);
void report_vllm_texts(const MetricsCfg *cfg, const Request *r, const int64_t *tt, char *text[REPORT_VLLM_ARRAYS],
                       size_t n[REPORT_VLLM_ARRAYS]);

#endif
