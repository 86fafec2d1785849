/*
 * compare.h -- a simulated report against a measured benchmark.
 *
 * Either side may be our JSON report ("summary" with ttft_s, tpot_s, itl_s,
 * e2e_s, throughput) or a vLLM benchmark result file: per-request arrays
 * ttfts and itls (seconds), input_lens, output_lens -- from which TTFT,
 * TPOT = sum(itls) / (output_len - 1) and E2E = TTFT + sum(itls) are
 * recomputed with the same GSL statistics -- or, without arrays, its
 * {mean,median,p90,p99}_{ttft,tpot,itl,e2el}_ms keys and
 * output_throughput / request_throughput.
 * Relative error = (sim - measured) / measured.
 */
#ifndef SERVESIM_COMPARE_H
#define SERVESIM_COMPARE_H

#include <cjson/cJSON.h>

#include "common.h"

enum { CMP_TTFT = 0, CMP_TPOT, CMP_ITL, CMP_E2E, CMP_METRICS };
enum { CMP_MEAN = 0, CMP_P50, CMP_P90, CMP_P99, CMP_STATS };

typedef struct CmpSide {
    char format[16];                          /* "servesim" or "vllm" */
    double lat[CMP_METRICS][CMP_STATS];       /* seconds; NaN = not given */
    double output_tokens_per_s, requests_per_s;
    /* the workload measured: completed requests and their mean lengths
     * (NaN = the file does not say) */
    double completed, mean_input_tokens, mean_output_tokens;
} CmpSide;

int compare_load(const char *path, CmpSide *out, Err *e);
int compare_from_json(const cJSON *root, const char *name, CmpSide *out, Err *e);
/* The comparison as JSON: rows of {metric, stat, sim, measured, rel_error}
 * and the mean absolute relative error over the rows both sides give. */
cJSON *compare_json(const CmpSide *sim, const CmpSide *meas);
void compare_print(const CmpSide *sim, const CmpSide *meas);
/* Says how the two workloads differ (request counts, mean input or output
 * length off by more than 1%) into buf; returns 0 when they agree as far
 * as both files tell. */
int compare_workload_diff(const CmpSide *a, const CmpSide *b, char *buf, size_t n);

#endif
