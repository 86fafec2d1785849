/*
 * report.h -- the JSON report and the readable table.
 *
 * JSON contract (keys may be added, never renamed): requests[] with id,
 * arrival_s, token_times_s, ttft_s, tpot_s (null for one-token outputs),
 * e2e_s, status, preemptions; summary with ttft_s, tpot_s, e2e_s as
 * {mean, p50, p90, p99}, throughput {window_s, output_tokens_per_s,
 * requests_per_s}, goodput {requests_per_s, slo_attainment}, peak_running,
 * kv {total_blocks, peak_used_blocks}, iterations.
 */
#ifndef SERVESIM_REPORT_H
#define SERVESIM_REPORT_H

#include <stdio.h>

#include "metrics.h"

cJSON *report_json(const Scenario *s, const Engine *eng, const Summary *sum, int with_requests);
void report_print(FILE *f, const Scenario *s, const Engine *eng, const Summary *sum);
const char *report_status_name(const Request *r);

#endif
