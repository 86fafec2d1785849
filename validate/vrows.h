/*
 * vrows.h -- the rows of a measured-runs file as scenarios to simulate
 * (`servesim validate`, validate/README.md).
 *
 * Formats (the header tells which, or --format):
 *   silicon    aiconfigurator's silicon sample (../shared/data/e2e/
 *              silicon_visible*.csv): id, backend, model_path (a Hugging
 *              Face id), system, mode, isl, osl, gemm_quant_mode,
 *              batch_size (concurrent clients), tp_size, pp_size,
 *              silicon_ttft_ms, silicon_tpot_ms.  Simulated as the
 *              benchmark client ran it: c clients, 20 c measured requests
 *              after 2 c warm-up ones behind a barrier, fixed lengths.
 *   splitwise  splitwise-sim's perf_model.csv: model, hardware,
 *              prompt_size, batch_size, token_size, prompt_time,
 *              token_time, tensor_parallel.  A static batch of batch_size
 *              requests: prompt_time against the simulated TTFT (the
 *              batch's prefill), token_time against the simulated TPOT.
 */
#ifndef SERVESIM_VROWS_H
#define SERVESIM_VROWS_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"

typedef enum { VFMT_AUTO = -1, VFMT_SILICON = 0, VFMT_SPLITWISE } VFormat;

/* Engine constants that kernel tables do not hold (engprof.h): host time
 * per iteration and per sequence, the per-request overhead, the spread of
 * closed-loop responses' ends, and the exposed all-reduce of large
 * iterations (ar_link_fraction 0: none). */
typedef struct VTheta {
    double base_us, per_seq_us, per_gpu_us, before_us, jitter_us, jitter_per_token_us;
    double ar_above_tokens, ar_link_fraction;
    double end_spread_tokens;   /* request_overhead.end_spread_tokens (a whole number) */
    double fe_per_token_us;     /* front_end.per_token_us: the serial front end's time per streamed token
                                   (0: no front end) */
    double fe_per_prompt_token_us; /* front_end.per_prompt_token_us: its turn's time per prompt token */
    int form;                   /* the three host terms are: 0 in the engine file's form
                                   (iter_overhead.per_layer), 1 per step, 2 per layer */
} VTheta;

typedef struct VRow {
    uint32_t line;              /* in the file (1-based) */
    char id[160];
    char slice[160];            /* "model | gpu | engine | precision" */
    char skip[256];             /* non-empty: why this row cannot be modelled */
    VFormat fmt;
    char model[64], hw[64], engine[32], dtype[16];
    int online_q;               /* the engine quantised a BF16 checkpoint at load: KV in the model's BF16 */
    char version[24];           /* backend_version as written (silicon; may be empty) */
    int tp;
    int ep, moe_tp, adp;        /* MoE layout (vrows_silicon's decoding); 0 = dense, none given */
    int isl, osl, conc;         /* conc: clients (silicon) or the static batch (splitwise) */
    double gpu_mem_bytes;       /* the GPU's memory (models/hardware/), for engine rules that depend on it */
    double kv_fraction;         /* the KV memory fraction the harness deployed (0: the engine file's) */
    int extra_clients;          /* what-if (validate --extra-clients): closed-loop clients beyond the
                                   concurrency the server's max_batch_size was set to */
    double meas_ttft_ms, meas_tpot_ms;
    /* results */
    double pred_ttft_ms, pred_tpot_ms, mean_running;
    double host_scale;          /* what the engine's host constants are multiplied by: the model's
                                   layers with "per_layer" (engprof.h), else 1 */
    int per_layer;              /* the row ran with its host constants per layer */
    char err[200];              /* a failed simulation's message */
} VRow;

typedef struct VFilter {
    char key[64];
    char value[128];
} VFilter;

/* Reads every row of path (filters: KEY=VALUE on the file's columns, all
 * must match).  Rows it cannot model get `skip` set, never dropped.
 * *rows is malloc'd. */
int vrows_read(const char *path, VFormat fmt, const VFilter *filters, int n_filters, VRow **rows, uint32_t *n,
               VFormat *fmt_out, Err *e);

/* The scenario JSON of a row (theta NULL: the engine file's own
 * constants), malloc'd. */
char *vrows_scenario(const VRow *r, const VTheta *theta);

/* Simulates one row: fills pred_* and mean_running, or err. */
void vrows_simulate(VRow *r, const VTheta *theta);


#endif
