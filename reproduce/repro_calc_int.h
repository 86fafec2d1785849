/*
 * repro_calc_int.h -- inside `servesim reproduce`'s computations: the
 * calculators a `calc` input file names by its "kind" (repro_calc.c's
 * table dispatches to them) and the helpers they share.  Each calculator
 * reads only its own keys from `in` (unknown keys are errors naming the
 * file `w` and the key), calls the simulator's modules and fills `out`;
 * 0, or -1 with e set.
 *
 *   repro_mem.c     KV pool, paged blocks, prefix cache, formats, model
 *                   sizes, snapshots, LoRA, offload, cache values
 *   repro_cost.c    step times, FLOPs and bytes, CUDA-graph padding, the
 *                   design board
 *   repro_decode.c  speculation, verification, the softmax merge, Amdahl
 */
#ifndef SERVESIM_REPRO_CALC_INT_H
#define SERVESIM_REPRO_CALC_INT_H

#include <cJSON.h>

#include "common.h"
#include "model.h"

#define CALC_LIST_MAX 64

typedef int (*CalcFn)(const cJSON *in, const char *w, cJSON *out, Err *e);

typedef struct Calc {
    const char *kind;
    CalcFn fn;
} Calc;

/* A JSON array of numbers at key into out (at most max); *n its length.
 * 1 when present, 0 when absent and not required, -1 with e set. */
int get_nums(const cJSON *in, const char *key, const char *w, int required, double *out, int max, int *n, Err *e);
/* "model" (default qwen3-8b) and "kv_dtype" (default bf16) of in. */
int load_model(const cJSON *in, const char *w, ModelDesc *m, Dtype *kv, Err *e);
/* How many requests of `prompt` tokens, the first `shared` of them common,
 * a prefix cache of cap_bytes (k bytes per token, blocks of `block`)
 * admits under the final reservation, at most limit (repro_mem.c; the
 * design board's prefix-shared option uses it too). */
int shared_admit_count(double cap_bytes, uint32_t block, double k, uint32_t prompt, uint32_t output, uint32_t shared,
                       int limit, Err *e);

int calc_kv_capacity(const cJSON *in, const char *w, cJSON *out, Err *e);
int calc_paged(const cJSON *in, const char *w, cJSON *out, Err *e);
int calc_branches(const cJSON *in, const char *w, cJSON *out, Err *e);
int calc_prefix_reuse(const cJSON *in, const char *w, cJSON *out, Err *e);
int calc_kv_format(const cJSON *in, const char *w, cJSON *out, Err *e);
int calc_model_size(const cJSON *in, const char *w, cJSON *out, Err *e);
int calc_snapshots(const cJSON *in, const char *w, cJSON *out, Err *e);
int calc_lora(const cJSON *in, const char *w, cJSON *out, Err *e);
int calc_offload(const cJSON *in, const char *w, cJSON *out, Err *e);
int calc_cache_value(const cJSON *in, const char *w, cJSON *out, Err *e);
int calc_read_per_token(const cJSON *in, const char *w, cJSON *out, Err *e);
int calc_step(const cJSON *in, const char *w, cJSON *out, Err *e);
int calc_flops(const cJSON *in, const char *w, cJSON *out, Err *e);
int calc_board(const cJSON *in, const char *w, cJSON *out, Err *e);
int calc_graph_pad(const cJSON *in, const char *w, cJSON *out, Err *e);
int calc_spec_plan(const cJSON *in, const char *w, cJSON *out, Err *e);
int calc_spec_verify(const cJSON *in, const char *w, cJSON *out, Err *e);
int calc_greedy(const cJSON *in, const char *w, cJSON *out, Err *e);
int calc_merge(const cJSON *in, const char *w, cJSON *out, Err *e);
int calc_amdahl(const cJSON *in, const char *w, cJSON *out, Err *e);

#endif
