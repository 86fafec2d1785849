/*
 * costwrap.h -- engine effects layered on any cost model.
 *
 *  - Execution-shape padding: with captured batch sizes (CUDA graphs), a
 *    decode-only iteration of n rows runs as the smallest captured size
 *    >= n; the padded rows are charged as decode rows over a one-token
 *    context.  Batches larger than the largest size, or containing a
 *    prefill, run eagerly (unpadded), as in vLLM.
 *  - KV format conversion: a quantised KV cache (q8_0, q4_0, fp8) may cost
 *    a dequantisation per token read; conversion_s_per_token x the tokens
 *    read in the iteration is added.
 *  - Host time of a serving engine (engprof.h): host_base_s + host_per_seq_s
 *    x the batch's sequences, added to the GPU time, or with overlap the
 *    iteration takes max(GPU, host) (the host prepared it during the
 *    previous one).  With mixed_graphs, mixed batches are padded too.
 *  - Exposed large all-reduces (engprof.h "large_allreduce"): an iteration
 *    of more than ar_above_tokens tokens (new tokens: prompt chunks and
 *    decode rows) adds ar_s_per_token x its tokens to the communication
 *    time.
 */
#ifndef SERVESIM_COSTWRAP_H
#define SERVESIM_COSTWRAP_H

#include "policy.h"

#define COSTWRAP_SIZES_MAX 512

typedef struct CostWrapCfg {
    uint32_t graph_sizes[COSTWRAP_SIZES_MAX]; /* ascending */
    uint32_t n_sizes;
    double conversion_s_per_token;
    int mixed_graphs;       /* pad mixed prefill + decode batches as well (by their decode rows) */
    int has_host;           /* host_* below apply */
    double host_base_s;     /* per iteration (with the TP group's share already in) */
    double host_per_seq_s;  /* per sequence in the batch */
    int overlap;            /* iteration = max(GPU, host) instead of GPU + host */
    double ar_above_tokens; /* exposed all-reduce: above this many tokens ... */
    double ar_s_per_token;  /* ... this much per token (0: none) */
} CostWrapCfg;

/* Wraps inner (taking ownership of it). */
int costwrap_new(const CostWrapCfg *cfg, CostModel inner, CostModel *out, Err *e);
/* The padded size for n decode rows (n itself when no size fits). */
uint32_t costwrap_padded(const CostWrapCfg *cfg, uint32_t n);

#endif
